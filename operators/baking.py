"""Running a wig over a frame range and writing the result: shared by the Bake operator and
``scripts/bake.py``. Reads the scene frame by frame, lets the core step, writes once at the end,
so a failure anywhere before the write leaves the scene as it was."""

from __future__ import annotations

import time

from ..hair_wig import BakeCache, FrameInput, HairWigError, Wig
from . import blender_io
from .properties import head_of


def is_wig(ob) -> bool:
    return ob is not None and ob.type in blender_io.HAIR_TYPES and ob.hair_wig.enabled


def wigs_in(scene) -> list:
    return [ob for ob in scene.objects if is_wig(ob)]


def frame_range(scene, ob, first=None, last=None) -> tuple[int, int]:
    """The range to bake: explicit, else the wig's own, else the scene's."""
    s = ob.hair_wig
    if first is None:
        first = scene.frame_start if s.use_scene_range else s.frame_start
    if last is None:
        last = scene.frame_end if s.use_scene_range else s.frame_end
    if int(last) < int(first):
        raise HairWigError(f"'{ob.name}': frame range {first}..{last} is empty (end before start)")
    return int(first), int(last)


def compute(context, ob, first: int, last: int, progress=None) -> BakeCache:
    """Step the wig of ``ob`` over ``first..last`` and return the cache, writing nothing.

    ``progress(done, total)`` is called after every frame; it may raise to cancel. The scene's
    current frame is restored whatever happens.
    """
    if not is_wig(ob):
        raise HairWigError(f"'{ob.name}' has no hair_wig settings (enable Wig on it first)")
    head = head_of(ob)
    if head is None:
        raise HairWigError(f"'{ob.name}' has no head: set a head mesh or give the hair a surface")
    blender_io.check_bakeable(ob)
    scene = context.scene
    depsgraph = context.evaluated_depsgraph_get()
    frame, subframe = scene.frame_current, scene.frame_subframe
    try:
        scene.frame_set(ob.hair_wig.rest_frame)
        source = blender_io.read_source(ob, ob.hair_wig.selection_attribute, depsgraph)
        wig = Wig(source.hair, source.matrix, blender_io.evaluated_matrix(head, depsgraph))
        cache = BakeCache(source.hair, first, last)
        state = None
        for done, f in enumerate(cache.frames, start=1):
            scene.frame_set(f)
            inp = FrameInput(blender_io.evaluated_matrix(ob, depsgraph),
                             blender_io.evaluated_matrix(head, depsgraph))
            _, state = wig.step(inp, state, out=cache.frame(f))
            cache.check_finite(f)
            if progress is not None:
                progress(done, cache.num_frames)
    finally:
        scene.frame_set(frame, subframe=subframe)
    return cache


def bake(context, ob, first=None, last=None, progress=None) -> BakeCache:
    """Compute and write the bake of one wig; replaces an earlier bake only once it succeeded."""
    first, last = frame_range(context.scene, ob, first, last)
    cache = compute(context, ob, first, last, progress)
    blender_io.write_bake(ob, cache)
    return cache


class Rate:
    """Frames per second of a running bake, for progress lines."""

    def __init__(self):
        self.start = time.perf_counter()

    def fps(self, frames: int) -> float:
        return frames / max(time.perf_counter() - self.start, 1e-9)
