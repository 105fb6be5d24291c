"""The Springs dynamics layer (SPEC §5, seed 000 "Secondary Movement"): every point lags behind
the magnets' pose on its own damped spring and settles back — light, for fur and short hair.

The springs live in the world's axes with their origin where the wig was at rest (a frame that
does not move is as inertial as the world's, and float32 positions there keep the hair's digits
wherever the scene places it); each frame's goal, carried there by the head, is the springs'
target, and the point is shown at ``goal + dynablend · s(t) · (spring − target)`` (``dynamics.
SecondarySprings``). The scene's force fields push every spring (SPEC §8: every layer feels them).
Strands are independent of one another: a bake may be split by strands.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .dynamics import SecondarySprings
from .dynamics_layer import DynamicsLayer, HairModel, LayerFrame, profile, setting
from .kernels import spring_follow
from .kernels.field import launch
from .kernels.response import met_rows
from .profiles import Profile
from .spaces import transform_rows


@dataclass
class SpringSettings:
    """The Springs layer's settings (SPEC §5)."""

    stiffness: float = field(default=120.0, metadata=setting(
        "secondary_stiffness", "Stiffness", "How quickly the strands catch up with the motion: lower is "
        "looser, floppier hair", min=0.0, max=1e4, soft_max=1000.0))
    damping: float = field(default=8.0, metadata=setting(
        "secondary_damping", "Damping", "How quickly the strands stop swinging", min=0.0, max=1e4,
        soft_max=100.0))
    mass: float = 1.0
    random: float = field(default=0.2, metadata=setting(
        "secondary_random", "Variation", "How differently strands move: each gets its own stiffness and "
        "damping, up to this fraction off the settings", min=0.0, max=0.95, subtype="FACTOR"))
    seed: int = field(default=0, metadata=setting(
        "secondary_seed", "Seed", "Seed of the per-strand variation (the same seed gives the same bake)",
        min=0))
    dynablend: float = field(default=1.0, metadata=setting(
        "secondary_dynablend", "Dynablend", "How much of the strands' lag shows: 0 none (the hair sits "
        "exactly on the magnets' pose), 1 all of it. Key it per shot", keyed=True, min=0.0, max=1.0,
        subtype="FACTOR"))
    stiffness_profile: Profile | None = None
    # pinned at the root, full lag from a fifth of the strand on (the patent's dynablend is uniform)
    blend_profile: Profile = field(default_factory=lambda: Profile.pinned_root(0.2, "secondary blend"),
                                   metadata=profile("secondary_blend", "Secondary Blend",
                                                    "How much each vertex lags, root to tip", "PINNED"))


def spring_frame(head: np.ndarray, head_rest: np.ndarray) -> np.ndarray:
    """Head-local → the springs' space: world axes, its origin where the wig was at rest."""
    m = np.array(head, np.float64)
    m[:3, 3] -= head_rest[:3, 3]
    return m


class SpringLayer(DynamicsLayer):
    """Per-point damped springs toward the goal (SPEC §5). State: ``'pos'``, ``'vel'`` (3, P)
    float32, the springs' space (``spring_frame``)."""

    KEY = "SPRINGS"
    LABEL = "Springs"
    DESCRIPTION = "Every point lags on its own spring and settles back: light, good for fur and short hair"
    SETTINGS = SpringSettings
    KEYED = ("dynablend",)
    KERNELS = ("springs",)
    SPLITS = True
    ABSORBS = True        # where a collider pushed a point, its spring is moved out with it (``absorb``)
    CONTACTS_ONLY = True  # a length pass's set-back is not the spring's: its lag stretches
    BLEND_FLOOR = 0.05    # a point shown with less of its spring than this is where its goal puts it

    def __init__(self, model: HairModel, settings: SpringSettings):
        super().__init__(model, settings)
        s = settings
        self.springs = SecondarySprings(
            model.strand_of_point(), model.num_strands, model.vertex_t(), s.stiffness, s.damping, s.mass,
            s.random, s.seed, s.stiffness_profile, s.blend_profile, s.dynablend)

    def key(self, values: dict) -> None:
        if values.get("dynablend") is not None:
            self.springs.set_dynablend(values["dynablend"])

    def initial_state(self, goal: np.ndarray, frame: LayerFrame) -> dict:
        pos = transform_rows(spring_frame(frame.head, frame.head_rest), goal, np.empty_like(goal))
        return {"pos": pos, "vel": np.zeros_like(goal)}

    def step(self, state: dict, goal: np.ndarray, frame: LayerFrame, out: np.ndarray) -> None:
        """One frame of every spring (``kernels.spring_follow``, one pass over the points: the
        exact step of ``SecondarySprings.follow``, its numpy reference)."""
        span = frame.points
        lo, hi = span.indices(out.shape[1])[:2]
        if out is not goal:
            np.copyto(out[:, lo:hi], goal[:, lo:hi])
        springs = self.springs
        coef = springs.coefficients(frame.dt)
        pos, vel = state["pos"], state["vel"]
        accel = self._field_accel(pos[:, lo:hi], vel[:, lo:hi], frame)
        spring_follow(pos, vel, out, spring_frame(frame.head, frame.head_rest)[:3].astype(np.float32),
                      np.ascontiguousarray(frame.head_inv[:3, :3], np.float32), *coef, springs.blend,
                      np.zeros((3, 0), np.float32) if accel is None else accel, springs._forced, lo, hi)

    def _field_accel(self, pos: np.ndarray, vel: np.ndarray, frame: LayerFrame) -> np.ndarray | None:
        """The force fields' acceleration (3, C) float32 on the springs where they are, as they
        move, held over the frame (``SecondarySprings.follow``)."""
        accel = frame.accel()
        if accel is None:
            return None
        at = pos.astype(np.float64) + frame.head_rest[:3, 3:]       # the springs' space → world
        return np.ascontiguousarray(accel(at, vel.astype(np.float64)) / self.springs.mass, dtype=np.float32)

    def absorb(self, state: dict, moved: np.ndarray, frame: LayerFrame) -> None:
        """Where a collider pushed a shown point out by ``moved`` (3, P) head-local (zero
        elsewhere), its spring moves with it and keeps none of its speed into the surface: the
        point is shown at ``goal + blend · (spring − target)``, so the spring moves by the push
        over its blend (in the springs' axes), and the next frame starts the spring where the
        hair was shown. Left in the head, a spring lags on through it: on Suzanne's fast turn
        points 12 to 23 of a strand under the ear were shown 30 cm up and back in one frame,
        the walk folding the strand each frame onto wherever its springs passed through the
        head. (Seed 000 leaves secondary movement to refinement; SPEC §8 has every layer feel
        the colliders.) Points shown with less than ``BLEND_FLOOR`` of their spring (the roots'
        pinned fifth) are where their goal puts them: nothing of the spring to move."""
        at = np.flatnonzero(np.einsum("kp,kp->p", moved, moved) > 0)
        blend = self.springs.blend
        at = at[blend[at] >= self.BLEND_FLOOR]
        if at.size == 0:
            return
        turn = np.asarray(frame.head, np.float64)[:3, :3]               # head-local → the springs' axes
        push = turn @ moved[:, at]
        size = np.sqrt(np.einsum("kp,kp->p", push, push))
        pos, vel = state["pos"], state["vel"]
        pos[:, at] += (push / blend[at]).astype(np.float32)
        # its velocity meets the push as a contact does, without friction: a spring keeps its slide
        v = vel[:, at].astype(np.float64)
        launch(met_rows, at.size, v, push / size, 0.0, v)
        vel[:, at] = v.astype(np.float32)
