"""The one interface every dynamics layer implements (SPEC §8; ../shared/DESIGN.md, "The core's
shape"): what a layer binds on, what one frame gives it, and the methods the wig calls between
primary movement and refinement. The registry of layers is ``hair_wig.layers``.

A frame of a wig with a layer (``pipeline.Wig.step``): primary movement makes the goal (the
magnets' pose, head-local rows); the layer makes the shown pose of it (``step``); refinement
keeps lengths and keeps the hair out of the colliders; what refinement moved goes back to the
layer (``absorb``), so its state is where the hair was shown. Everything a layer keeps from frame
to frame is named arrays in the state dict it returns from ``initial_state``: the wig saves,
restores and compares it without knowing what is in it.

Layers say in their settings' field metadata (``setting``, ``profile``) which of their settings
an artist sets and how the panel names them; the add-on's properties, panel and scene reader are
made from that, so a new layer needs no code of its own in Blender's side.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields

import numpy as np

from .dynamics import pack_fields
from .hairset import strand_of_point, vertex_t
from .kernels import field_accel
from .spaces import rotation_of, transform_rows


def setting(prop: str, name: str, description: str, *, keyed: bool = False, when: tuple | None = None,
            reads: str | None = None, **limits) -> dict:
    """Field metadata of a layer setting an artist sets in the Dynamics panel: ``prop`` the wig
    property's name in Blender (kept across versions: saved files hold it), ``name`` and
    ``description`` what the panel shows, ``keyed`` whether an animator can key it (the layer reads
    it each frame, ``DynamicsLayer.key``), ``when`` ``(other field, value)`` — shown active only
    then (``value`` ``True``: while the other is on or non-zero) — and Blender's property limits
    (``min``, ``max``, ``soft_min``, ``soft_max``, ``subtype``, ``items`` for a choice). A text
    setting with ``reads`` names an integer curve attribute of the hair: the scene reader reads
    it (one value a strand, or None where the hair has none) into the settings' field ``reads``."""
    return {"prop": prop, "ui": dict(name=name, description=description, **limits), "keyed": keyed,
            "when": when, "reads": reads}


def profile(name: str, label: str, description: str, preset: str) -> dict:
    """Field metadata of a layer setting an artist draws as a profile curve: ``name`` the curve's
    name in Blender (kept across versions), ``label`` and ``description`` what the panel shows,
    ``preset`` the curve it starts as (``operators/profile_curves``: LINEAR, CONSTANT, PINNED, HOLD,
    CURL)."""
    return {"profile": name, "ui": dict(name=label, description=description, preset=preset)}


# Coulomb friction against the colliders: one setting of the wig's that every layer meeting
# contacts shares
FRICTION = setting("strands_friction", "Friction", "How much hair sliding over the head or a collider is "
                   "slowed by pressing on it (Coulomb friction): 0 slides freely, higher stops it sooner",
                   min=0.0, max=1.0, subtype="FACTOR")


def settings_fields(settings_type) -> list:
    """The fields of a layer's settings an artist sets (``setting``) and draws (``profile``), in
    the panel's order."""
    return [f for f in fields(settings_type) if "prop" in f.metadata or "profile" in f.metadata]


def default_of(f):
    """A dataclass field's default value."""
    return f.default if f.default is not MISSING else f.default_factory()


@dataclass
class HairModel:
    """What a layer binds on: the wig's strands at rest.

    Parameters
    ----------
    name : str
        The hair's name, for messages.
    rest_rows : (3, P) float32
        Rest points as rows, head-local (the wig's working space).
    offsets : (S + 1,) int
        Each strand's first point; strands of any point counts.
    head_rest : (4, 4) float64
        Head-local → world at rest.
    """

    name: str
    rest_rows: np.ndarray
    offsets: np.ndarray
    head_rest: np.ndarray = field(default_factory=lambda: np.eye(4))

    @property
    def num_points(self) -> int:
        return self.rest_rows.shape[1]

    @property
    def num_strands(self) -> int:
        return len(self.offsets) - 1

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    def strand_of_point(self) -> np.ndarray:
        """(P,) int32: the strand of each point."""
        return strand_of_point(self.counts)

    def vertex_t(self) -> np.ndarray:
        """(P,) float32: ``t = j / (n − 1)``, 0 at the root and 1 at the tip (SPEC §1)."""
        return vertex_t(self.offsets)

    def world_rest(self) -> np.ndarray:
        """Rest points as rows (3, P) float64 in the world."""
        return transform_rows(self.head_rest, self.rest_rows.astype(np.float64), np.empty(self.rest_rows.shape))


@dataclass
class LayerFrame:
    """What one frame gives a layer.

    Parameters
    ----------
    dt, time : float
        The frame's length and its time (s).
    gravity : (3,) float64
        The scene's gravity, world.
    forces : list of ForceField
        The scene's force fields (world).
    head, head_inv : (4, 4) float64
        Head-local → world now, and back.
    head_rest : (4, 4) float64
        Head-local → world at rest.
    points : slice
        The wig's points being stepped (a part of a split bake; only layers whose strands are
        independent, ``DynamicsLayer.SPLITS``, are given less than all).
    """

    dt: float
    time: float
    gravity: np.ndarray
    forces: list
    head: np.ndarray
    head_inv: np.ndarray
    head_rest: np.ndarray
    points: slice = field(default_factory=lambda: slice(None))

    def accel(self):
        """The force fields' acceleration ``accel(x, v, out=None)`` at world rows ``x`` (3, ...)
        moving at ``v`` (3, ...) (None: no drag), float64 (3, ...) — into ``out`` (C-contiguous
        float64) where given —, or None when the scene has none. The fields are packed here, once
        a frame however many substeps call it, and summed by one kernel
        (``kernels.fields.field_accel``; ``ForceField.force`` is its numpy reference, SPEC §4)."""
        if not self.forces:
            return None
        packed = pack_fields(self.forces, self.time)
        still = np.zeros((3, 0))

        def accel(x, v, out=None):
            x = np.ascontiguousarray(x, dtype=np.float64)
            rows = x.reshape(3, -1)
            vel = still if v is None else np.ascontiguousarray(v, dtype=np.float64).reshape(3, -1)
            res = np.empty(x.shape) if out is None else out
            field_accel(rows, vel, res.reshape(3, -1), *packed)
            return res
        accel.packed = packed             # for a kernel that takes the fields point by point
        return accel

    def world(self, rows: np.ndarray) -> np.ndarray:
        """Head-local rows (3, P) into the world, float64."""
        return transform_rows(self.head, rows.astype(np.float64), np.empty(rows.shape))

    def world_moves(self, moves: np.ndarray) -> np.ndarray:
        """Head-local displacements (3, P) into the world (the head's linear part), float64."""
        return transform_rows(self.head, moves, np.empty(moves.shape), translate=False)

    def head_turn(self) -> np.ndarray:
        """The head's rotation now (3, 3), without its scale."""
        return rotation_of(self.head)

    def rigid(self) -> np.ndarray:
        """World → the head's frame now without its scale (4, 4)."""
        turn = self.head_turn()
        m = np.eye(4)
        m[:3, :3] = turn.T
        m[:3, 3] = -turn.T @ self.head[:3, 3]
        return m


class DynamicsLayer:
    """The protocol of a dynamics layer. A layer is one file: its settings dataclass (with
    ``setting``/``profile`` metadata on what an artist sets) and a subclass of this, named in
    ``hair_wig.layers.LAYERS``.

    Goals, shown poses and moves cross as rows (3, P) float32 in head-local space — the wig's
    working space — whatever space the layer works in.
    """

    KEY = ""              # the wig's Dynamics setting (Blender's enum item), e.g. "STRANDS"
    LABEL = ""            # what the panel calls it
    DESCRIPTION = ""      # the panel's tooltip
    SETTINGS = None       # its settings dataclass
    KEYED = ()            # settings' fields an animator keys (read each frame; ``key``)
    KERNELS = ()          # the groups of kernels it needs besides every wig's (``hair_wig.prepare``)
    SPLITS = False        # strands move independently: a bake may be split by strands
    ABSORBS = True        # what refinement moved is carried back (``absorb``)
    CONTACTS_ONLY = False  # …only where a collider moved a point (a length pass's set-back is not)
    LIFTS = False         # refinement's walk lifts a chain that meets a head-on contact, as the
                          # layer's own substeps do (``walk.CollisionWalk._lift_steep``)

    def __init__(self, model: HairModel, settings):
        self.model = model
        self.settings = settings

    def bind_colliders(self, colliders) -> None:
        """Meet ``colliders`` (the wig's ``Collider`` objects, head-local) inside the steps."""

    def key(self, values: dict) -> None:
        """This frame's keyed settings (``KEYED`` names → values)."""

    def initial_state(self, goal: np.ndarray, frame: LayerFrame) -> dict:
        """The state of a first frame, at rest on ``goal`` (3, P): named arrays."""
        raise NotImplementedError

    def step(self, state: dict, goal: np.ndarray, frame: LayerFrame, out: np.ndarray) -> None:
        """One frame toward ``goal`` (3, P); the shown pose into ``out`` (3, P) float32 (may be
        ``goal`` itself). ``state`` is advanced in place."""
        raise NotImplementedError

    def absorb(self, state: dict, moved: np.ndarray, frame: LayerFrame) -> None:
        """Refinement moved the shown pose by ``moved`` (3, P) head-local (zero where it did not
        touch): carry it into ``state``."""

    def warnings(self) -> list[str]:
        """What the last step wants an artist to know (without the object's name)."""
        return []
