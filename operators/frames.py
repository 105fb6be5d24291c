"""One frame of a wig, stepped as a bake steps it: the step a bake (``baking``) and live dynamics
(``live``) share, so a frame played live equals the same frame baked, bit for bit."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from . import scene_reader


@dataclass
class FrameRecord:
    """What a bake keeps of one frame besides its positions: how deep the hair is held inside the
    colliders (None: not measured, a frame played live), the skin's motion for a stack that
    carries the hair (None: at rest, or no such stack), the magnets scaled to nothing, the dynamics layer's warnings, each dynamic magnet's
    shown place, and a digest of what the frame read from the scene (``input_digest``)."""
    penetration: float | None
    skin: tuple | None
    flat: list
    notes: list
    magnet_shown: np.ndarray | None
    digest: int = 0


# A FrameInput's keyed settings: their keys are sampled (``live.fcurve_samples``) and a setting
# without keys is a setting (``live.signature``); a value typed over an animated one without a key
# is gone at the next frame, as Blender's animation has it, and changes no frame played
KEYED_INPUTS = ("keyed", "magnet_strength", "magnet_dynablend")


def input_digest(inp) -> int:
    """A checksum of what a ``FrameInput`` carries from the scene but its keyed settings
    (``KEYED_INPUTS``): matrices, time, gravity, force fields, the skin, the colliders' shapes."""
    crc = 0
    for name, value in vars(inp).items():
        if name in KEYED_INPUTS:
            continue
        if value is None:
            crc = zlib.crc32(b"-", crc)
        elif isinstance(value, np.ndarray):
            crc = zlib.crc32(np.ascontiguousarray(value).tobytes(), crc)
        elif isinstance(value, (list, tuple)):
            for item in value:
                crc = zlib.crc32(np.ascontiguousarray(item).tobytes() if isinstance(item, np.ndarray)
                                 else repr(item).encode(), crc)
        else:
            crc = zlib.crc32(repr(value).encode(), crc)
    return crc


def step_frame(context, ob, bound, f: int, state, out, skin: bool = False, keep_state: bool = False,
               digest: bool = False, measure: bool = True):
    """Step the wig ``bound`` of ``ob`` at frame ``f`` (set and evaluated) from ``state`` (None:
    from rest) into ``out``. ``skin``: record the skin's motion; ``keep_state``: leave ``state``
    as it was (live dynamics keeps every frame's); ``digest``: checksum the frame's input;
    ``measure``: measure how deep the hair is held inside the colliders (live dynamics does not:
    the record's ``penetration`` is None, and a bake that takes the frame measures it then,
    ``Wig.penetration_of``). Returns the state after the frame and its ``FrameRecord``."""
    wig = bound.wig
    inp = scene_reader.frame_input(context, ob, bound, f)
    _, state = wig.step(inp, state, out=out, keep_state=keep_state, measure=measure)
    motion = None
    if skin and not wig.scalp.at_rest(inp.surface_positions, inp.surface_normals):
        rot, o0, o1 = wig.scalp.transforms(inp.surface_positions, inp.surface_normals)
        motion = (rot.astype(np.float32), o0, o1, np.linalg.solve(inp.head_matrix, inp.hair_matrix))
    shown = None if state.magnet_shown is None else np.array(state.magnet_shown, copy=True)
    notes = list(wig.layer.warnings()) if wig.layer is not None else []
    return state, FrameRecord(wig.penetration, motion, scene_reader.flat_magnets(bound.empties, inp), notes,
                              shown, input_digest(inp) if digest else 0)
