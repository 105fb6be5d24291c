"""The wig: bind once against the rest pose, then step frame by frame (seed 000, FIG. 1 and
FIG. 2: primary movement, secondary movement, refinement).

The wig system's inputs are the surface model, the hairs and the pose controllers (magnets); its
output is the deformed hairs. Everything is done in the head's local space (SPEC §2), so a rigid
head motion moves the hair rigidly and costs nothing; springs run in world space (SPEC §4, §5).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from . import blas
from .dynamics import DynamicMagnets, ForceField
from .dynamics_layer import HairModel, LayerFrame
from .kernels import rows_copy_to_points, rows_to_points
from .layers import layer_for
from .errors import HairWigError
from .hairset import HairSet
from .magnets import FollowReach, Magnet, MagnetWeights
from .profiles import Profile
from .collision import Collider, ColliderMesh
from .walk import SEGMENT_TURN, CollisionWalk
from .refinement import LengthControl, compensate_compression_rows, compression_vectors
from .scalp import ScalpSpace
from .spaces import as_matrix, scale_of, transform_points, transform_rows

# The pushes a layer that feels only its contacts (Springs) takes back: all of a push out by this
# share of the point's segment or more (a spring carried through the head in a fast turn), none
# under half of it (resting contact), a share between (``Wig._contacts_only``)
DEEP_PUSH = 0.5


@dataclass
class WigSettings:
    """Everything a wig binds with besides the hair, the magnets and the head."""

    normalisation: str = "cap"
    attachment: Profile = field(default_factory=lambda: Profile.constant(1.0, "attachment"))
    # Roots stay on the scalp, tips follow fully (seed 000, FIG. 9A).
    flex: Profile = field(default_factory=lambda: Profile.linear(0.0, 1.0, "flex"))
    length_profile: Profile = field(default_factory=lambda: Profile.constant(1.0, "length"))
    # the dynamics layer's settings (SPEC §8): which layer steps the wig is the settings' type,
    # one of ``layers.LAYERS`` (SpringSettings, StrandSettings, RodSettings); None: no dynamics
    # besides the dynamic magnets
    dynamics: object | None = None
    compression: Profile | None = None       # α(t); None: no compensation
    use_length: bool = True
    elasticity: float = 0.0
    # Per segment by default: the whole-strand scale keeps a strand's length while single
    # segments stretch under dynamics and collision (SPEC §6.4).
    length_mode: str = "SEGMENT"
    use_collision: bool = True
    collision_offset: float = 0.0            # world units, kept from the head
    collision_method: str = "FIELD"          # FIELD (SPEC §6.3) or RAY (the patent's ray test)
    collision_iterations: int = 3            # at most, per point: collision then length again
    # guides keep room for the children grown from them (children.py): their roots' samples
    child_samples: int = 16


@dataclass
class FrameInput:
    """What changes from frame to frame. Matrices are world matrices (4, 4)."""

    hair_matrix: np.ndarray
    head_matrix: np.ndarray
    magnet_matrices: np.ndarray | None = None       # (M, 4, 4)
    dt: float = 1.0 / 24.0
    time: float = 0.0
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    forces: list[ForceField] = field(default_factory=list)
    magnet_strength: np.ndarray | None = None       # (M,) keyed weight / bound weight per magnet
    magnet_dynablend: np.ndarray | None = None      # (D,) keyed dynablend of each dynamic magnet
    keyed: dict | None = None                       # the dynamics layer's keyed settings at this frame,
                                                    # by its settings' names (``DynamicsLayer.KEYED``)
    surface_positions: np.ndarray | None = None     # (V, 3) head-local, for scalp space
    surface_normals: np.ndarray | None = None       # (C, 3) face-corner normals, head-local
    rest_points: np.ndarray | None = None           # (P, 3) this frame's rest pose (a keyed style), hair space
    collider_matrices: np.ndarray | None = None     # (K, 4, 4) world matrices of the extra colliders
    collider_vertices: list | None = None           # per collider (head first when it collides): its
                                                    # deformed vertices in its own space, or None


@dataclass
class WigState:
    """Dynamics state carried from frame to frame (SPEC §4, §8): the dynamic magnets' spring
    positions, velocities and last keyed targets (D, 3) (world, float64), and the dynamics
    layer's own named arrays. Copy it to save; compare with ``==``."""

    magnet_pos: np.ndarray
    magnet_vel: np.ndarray
    magnet_target: np.ndarray
    magnet_shown: np.ndarray | None = None      # (D, 3) where each dynamic magnet acted this frame
    # (H, J, 4, 4) head-local matrices of the magnets whose reach follows them, oldest first,
    # this frame last: their trails (FollowReach)
    magnet_history: np.ndarray | None = None
    # continuous contact (``walk.CollisionWalk.cross``): where each point ended the frame (3, P)
    # float32, head-local, and each collider's head-local -> field map then (K, 4, 4)
    contact_last: np.ndarray | None = None
    contact_maps: np.ndarray | None = None
    # the dynamics layer's own named arrays (``DynamicsLayer.initial_state``)
    layer: dict | None = None

    def copy(self) -> "WigState":
        layer = None if self.layer is None else {k: v.copy() for k, v in self.layer.items()}
        return WigState(*(None if a is None else a.copy() for a in self._arrays()), layer=layer)

    def _arrays(self):
        return (self.magnet_pos, self.magnet_vel, self.magnet_target, self.magnet_shown, self.magnet_history,
                self.contact_last, self.contact_maps)

    def __eq__(self, other) -> bool:
        if not isinstance(other, WigState) or (self.layer is None) != (other.layer is None):
            return False
        if self.layer is not None and (self.layer.keys() != other.layer.keys() or not all(
                np.array_equal(v, other.layer[k]) for k, v in self.layer.items())):
            return False
        return all((a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
                   for a, b in zip(self._arrays(), other._arrays()))


class Wig:
    """A hair set bound to its head and magnets at rest.

    Parameters
    ----------
    hair : HairSet
        Rest hair, points in the hair object's local space.
    hair_matrix, head_matrix : (4, 4) float64
        World matrices of the hair object (``H_0``) and the head (``L_0``) at rest.
    magnets : list of Magnet
        Rest matrices in head-local space.
    head_mesh : ((V, 3), (T, 3)) or None
        The head's vertices (head-local) and triangles, for collision.
    colliders : list of ColliderMesh
        Other meshes the hair collides with (body, shoulders, a ground plane); their matrices
        are world matrices at rest, and each frame's come in ``FrameInput.collider_matrices``.
    head_name : str or None
        The head's name, for messages.
    children : Children or None
        The hair grown from these strands as guides (Blender's Interpolate Hair Curves): its
        roots in the hair object's space at rest, and whether it follows the surface normal;
        collision keeps each guide's shape out of the head on its children's roots too
        (``children.py``).
    keyed : KeyedStyle or None
        A keyframed hairstyle (seed 002): its ``pose(frame)`` is each frame's rest pose (the
        caller passes it as ``FrameInput.rest_points``).
    head_centre : (3,) or None
        The centre ``l`` of compression and of the collision rays (head-local); default: the
        centre of the head mesh's bounding box, else the head's origin.
    scalp : ScalpSpace or None
        Root frames on the surface (head-local); frames then carry the surface's current
        ``surface_positions`` and ``surface_normals``.
    threads : int
        Accepted for its callers (the operators, scripts and tests pass it), and kept as
        ``self.threads``; it plans nothing. The wig steps all its points in one pass, whose hot
        loops are kernels parallel over strands (``prange``): what parallelises them is numba's
        thread count (``numba.set_num_threads``, set by the caller). Results do not depend on
        either, bit for bit.
    """

    @blas.one_thread
    def __init__(self, hair: HairSet, hair_matrix, head_matrix, magnets=(), settings=None,
                 head_mesh=None, head_centre=None, scalp: ScalpSpace | None = None, threads: int = 1,
                 head_name: str | None = None, colliders=(), children=None, keyed=None):
        self.hair = hair
        self.settings = settings = settings or WigSettings()
        self.hair_rest = as_matrix(hair_matrix, f"'{hair.name}' rest matrix")
        head_given = as_matrix(head_matrix, f"'{hair.name}' head rest matrix")
        # Head-local space, moved to an origin among the hair where the hair lies far from the
        # head's own (mesh data far out in a set): float32 keeps its digits for the hair, not for
        # the distance to the origin (SPEC §6.4, precision). ``head_rest`` and every head matrix
        # below carry the shift; what comes in head-local (magnets, centre, surface) is moved.
        self.origin = exact_origin(transform_points(hair.points, np.linalg.solve(head_given, self.hair_rest)))
        self._shift = np.eye(4)
        self._shift[:3, 3] = self.origin
        self.head_rest = head_given @ self._shift
        self.to_local = to_local = np.linalg.solve(self.head_rest, self.hair_rest)
        rest_local = transform_points(hair.points, to_local)
        if self.origin.any():
            magnets = [replace(m, rest_matrix=_shifted(m.rest_matrix, self.origin)) for m in magnets]
        self.magnets: list[Magnet] = list(magnets)
        self.mi_inv = np.array([np.linalg.inv(as_matrix(m.rest_matrix, f"magnet '{m.name}' rest matrix"))
                                for m in self.magnets]).reshape(-1, 4, 4)
        self.weights = MagnetWeights(hair, rest_local, self.magnets, settings.flex,
                                     settings.length_profile, settings.normalisation)
        self.follow = None
        if any(m.follow for m in self.magnets):
            self.follow = FollowReach(hair, self.magnets, settings.flex, settings.length_profile,
                                      self.weights.total, settings.normalisation)
        self.dynamic_index = [i for i, m in enumerate(self.magnets) if m.dynamic is not None]
        self.dynamics = DynamicMagnets([self.magnets[i].name for i in self.dynamic_index],
                                       [self.magnets[i].dynamic for i in self.dynamic_index])
        t = hair.vertex_t()
        if head_centre is not None:
            centre = np.asarray(head_centre, dtype=np.float64)
        elif head_mesh is not None:
            v = np.asarray(head_mesh[0], np.float64)
            centre = (v.min(axis=0) + v.max(axis=0)) / 2
        else:
            centre = np.zeros(3)
        self.centre = centre - self.origin
        self.colliders: list[Collider] = []
        self.extra_colliders = 0
        # The hot path keeps points as rows (3, P): every pass is over contiguous memory.
        self.rest_rows = np.ascontiguousarray(rest_local.T)
        # the dynamics layer (SPEC §8) that steps the whole wig between primary movement and
        # refinement, bound on the hair at rest in head-local space
        self.layer = None
        if settings.dynamics is not None:
            try:
                self.layer = layer_for(settings.dynamics)(
                    HairModel(hair.name, self.rest_rows, hair.offsets, self.head_rest), settings.dynamics)
            except HairWigError as err:             # the layer's own words, with the wig named
                raise HairWigError(f"'{hair.name}': {err}") from None
        # refinement moves below this (squared, head-local) are float32 rounding, not contact
        self._contact_tolerance = (1e-5 * float(np.ptp(self.rest_rows, axis=1).max())) ** 2
        counts = hair.counts
        # strands of one point count under per-segment length: collision walks them point-major
        self._uniform = int(counts[0]) if (settings.use_length and settings.length_mode == "SEGMENT"
                                           and np.all(counts == counts[0])) else 0
        self.not_root = t > 0
        self.strand_of_point = hair.strand_of_point()
        self.length = LengthControl(hair, settings.elasticity, settings.length_mode) if settings.use_length else None
        # refinement's collision-and-length walk, on the colliders bound below
        # It meets a head-on contact as the wig's dynamics layer does: where the Strands layer's
        # chain gives (``VerletStrands._give``), the walk lifts the chain too (``_lift_steep``),
        # so the two agree and what the walk did is no new motion to the layer; Rods meet
        # contacts in their angles and Springs not at all, and keep the walk's swing.
        self.walk = CollisionWalk(self.colliders, self.length, settings.collision_iterations,
                                  self.layer is not None and self.layer.LIFTS, self.not_root,
                                  self.strand_of_point, self._uniform)
        if self.layer is not None:
            # a layer carries what a swing leaves to the next step: a segment turns by a little a
            # step instead of jumping round a part it cut (``kernels.walk._turn_at_most``)
            self.walk.turn = SEGMENT_TURN
        friction = getattr(settings.dynamics, "friction", None)      # the layer's, where it has one
        if friction is not None:
            self.walk.friction = float(friction)
        if settings.use_collision:
            # Offsets are world distances; refinement works in head-local units.
            scale = self.head_scale
            meshes = []
            if head_mesh is not None:
                meshes.append(ColliderMesh(head_name or f"{hair.name}'s head", head_mesh[0], head_mesh[1],
                                           head_given, settings.collision_offset,
                                           settings.collision_method, centre))
            meshes += list(colliders)
            self.extra_colliders = len(colliders)
            head_inv = np.linalg.inv(self.head_rest)
            for k, mesh in enumerate(meshes):
                # the hair rides its head: its grid covers wherever the hair can reach (``Collider``)
                rides = (self.rest_rows, hair.offsets) if head_mesh is not None and k == 0 else None
                c = Collider(mesh, head_inv @ mesh.matrix, mesh.offset / scale, rides)
                c.bind(self.rest_rows, self._uniform)
                self.colliders.append(c)
            if children is not None and len(children.roots) and settings.child_samples:
                self.walk.bind_neighbourhood(children, head_mesh is not None, self.rest_rows, hair.offsets,
                                             self.to_local, settings.child_samples, settings.length_mode)
            for c in self.colliders:
                self.walk.bind_children(c)
            if self.layer is not None:             # a layer may meet them inside its substeps
                self.layer.bind_colliders(self.colliders)
        self.residual = 0.0          # the deepest point left inside a collision surface, last frame
        self.alpha = None if settings.compression is None else settings.compression(t)
        self.scalp = scalp
        self.attachment = settings.attachment(t).astype(np.float32)
        self.compression_bound = None
        if self.alpha is not None:
            self.compression_bound = compression_vectors(self.rest_rows, self.centre, self.alpha)
        self._keyed_rest = None
        self._rows = None             # the scratch rows of the points it steps, made at the first step
        self.keyed = keyed            # a keyed style (seed 002) whose pose(frame) is each frame's rest
        self.threads = max(1, int(threads))      # numba's threads parallelise (see the docstring)
        self.strand_range = (0, hair.num_strands)     # the strands it steps (``restrict``)

    @property
    def head_scale(self) -> float:
        """World units per head-local unit (the head's rest scale)."""
        return scale_of(self.head_rest)

    @property
    def penetration(self) -> float | None:
        """The deepest any point was left inside its collision surface in the last step, in
        world units (SPEC §6.4: measured, not assumed); None where that step did not measure it
        (``step(measure=False)``)."""
        return None if self.residual is None else self.residual * self.head_scale

    def penetration_of(self, out: np.ndarray, inp: FrameInput) -> float:
        """``penetration`` of the positions ``out`` (P, 3) float32 that a step of this wig wrote
        for the frame ``inp`` (``step(measure=False)``: a frame played live, taken by a bake),
        measured as that step would have: the colliders set where they were then, the same
        points, the same field — the same figure, bit for bit."""
        if not self.colliders:
            return 0.0
        head, to_object = self._placement(inp)
        self._frame_rest(inp)
        self._set_colliders(inp, head)
        if self._rows is None:
            self._rows = _Rows(self)
        return self._held_depth(out, to_object) * self.head_scale

    def restrict(self, start: int, stop: int) -> None:
        """Step only the strands ``start..stop − 1`` (a part of a split bake): every stage after
        the dynamic magnets works strand by strand, so a part's points come out bit for bit as
        the whole wig's would; the others are not computed. Refused, naming why, where strands
        depend on each other — a dynamics layer that steps the whole wig (Strands, Rods),
        strand-length control over the whole set (strands of different point counts) — or on
        the whole set's keyed hairstyle: split such a bake by object."""
        name = self.hair.name
        if not 0 <= start < stop <= self.hair.num_strands:
            raise HairWigError(f"'{name}': strands {start}:{stop} are not a part of its 0:{self.hair.num_strands}")
        if self.layer is not None and not self.layer.SPLITS:
            raise HairWigError(f"'{name}': its {self.layer.LABEL} dynamics layer steps the whole wig at once; "
                               "split this bake by object, not by strands")
        if self.length is not None and not self.length.blockable:
            raise HairWigError(f"'{name}': its strand-length control works on all its strands together "
                               "(its strands have different point counts); split this bake by object, not by "
                               "strands")
        if self.keyed is not None:
            raise HairWigError(f"'{name}': its keyed hairstyle is in-betweened over all its strands; split "
                               "this bake by object, not by strands")
        self.strand_range = (int(start), int(stop))
        self._rows = None             # made again for the part at the next step

    def warnings(self) -> list[str]:
        """What the artist should know about this binding, though it bakes: magnets whose radius
        reaches no hair, what the head's shape keeps the ray-test collision from doing, children
        the collision cannot keep out."""
        out = [f"magnet '{m.name}' reaches no hair at its rest pose (radius {m.radius:g}), where the hair "
               f"it moves is picked up; move its rest pose closer to the hair or widen it"
               for m, n in zip(self.magnets, self.weights.reached) if n == 0 and not m.follow]
        for c in self.colliders:
            if c.mesh.method == "RAY":
                out += c.field.map.warnings()
        if self.walk.note:
            out.append(self.walk.note)
        return out

    @property
    def has_dynamics(self) -> bool:
        """Whether frames depend on earlier frames (and must be stepped in order)."""
        return bool(self.dynamic_index) or self.layer is not None

    def initial_state(self, inp: FrameInput) -> WigState:
        """The state of a first frame: at rest on its targets."""
        targets = self._magnet_targets(inp)
        d = len(self.dynamic_index)
        return WigState(targets.copy(), np.zeros((d, 3)), targets.copy(), magnet_shown=targets.copy())

    def _magnet_targets(self, inp: FrameInput) -> np.ndarray:
        if not self.dynamic_index:
            return np.zeros((0, 3))
        return np.asarray(inp.magnet_matrices, dtype=np.float64)[self.dynamic_index, :3, 3].copy()

    def head_up(self, head: np.ndarray, gravity) -> np.ndarray:
        """The head's up axis ``u`` now, in world space, for the gravity tilt (SPEC §4): the world's
        up (against ``gravity``) as it was in the head's rest pose, turned with the head since.

        The tilt is measured from the head's rest orientation, not from its local Z axis: a head
        modelled Y-up, or rotated at rest, is upright at rest, and its dynamic magnets do not sag
        until it tilts away from that pose.
        """
        g = np.asarray(gravity, dtype=np.float64)
        norm = np.linalg.norm(g)
        if norm == 0:
            return np.array([0.0, 0.0, 1.0])
        up_in_rest_head = np.linalg.solve(self.head_rest[:3, :3], -g / norm)
        return head[:3, :3] @ up_in_rest_head

    @blas.one_thread        # numpy's BLAS workers would spin on the kernels' cores (``blas``)
    def step(self, inp: FrameInput, state: WigState | None = None, out: np.ndarray | None = None,
             keep_state: bool = True, timings: dict | None = None, measure: bool = True):
        """Deformed positions for one frame, and the state for the next.

        The wig orchestrates, in one pass over the points it steps (seed 000, FIG. 2): the
        dynamic magnets (a few points, once), primary movement (``_primary``), the dynamics
        layer (``_step_layer``), refinement (``refine``), what refinement moved carried back
        into the layer (``_layer_feels_refinement``), the output (``_write``) and the depth it
        holds inside the colliders (``_held_depth``). Each pass is over all those points; its
        hot loops are kernels parallel over strands.

        Parameters
        ----------
        inp : FrameInput
        state : WigState or None
            The previous frame's state; ``None`` starts at rest (the first frame of a bake).
        out : (P, 3) float32, optional
            Where to write the result (a frame of a ``BakeCache``, say).
        keep_state : bool
            True: ``state`` is left as it was and a new one returned. False: it is advanced in
            place (a bake that walks forward needs no copy of two (3, P) arrays per frame).
        timings : dict, optional
            Seconds per phase are added to it: primary, dynamics, compression, length,
            collision, output (wall-clock, whatever numba's thread count).
        measure : bool
            Measure how deep the result is held inside the colliders (``penetration``). False:
            not now (``penetration`` is None) — live playback, which shows the hair and never the
            figure, and spends a quarter of a frame on a groom combed close over the head on it;
            ``penetration_of`` measures such a frame when a bake takes it.

        Returns
        -------
        positions : (P, 3) float32 in the hair object's current local space
        state : WigState for the next frame
        """
        name = self.hair.name
        head, to_object = self._placement(inp)
        head_inv = np.linalg.inv(head)
        first = state is None
        state = self.initial_state(inp) if first else (state.copy() if keep_state else state)
        if out is None:
            out = np.empty_like(self.hair.points)

        # Scalp space: the surface's root frames this frame (``_primary`` carries the rest pose).
        scalp = None
        if (self.scalp is not None and inp.surface_positions is not None
                and not self.scalp.at_rest(inp.surface_positions, inp.surface_normals)):
            rot, o0, o1 = self.scalp.transforms(inp.surface_positions, inp.surface_normals)
            scalp = tuple(a.astype(np.float32) for a in (rot, o0 - self.origin, o1 - self.origin))
        # Dynamic magnets (a few points in world space) step once for the whole wig.
        motions = None
        follow = None
        if self.magnets:
            mats = np.asarray(inp.magnet_matrices, dtype=np.float64)
            if mats.shape != (len(self.magnets), 4, 4):
                raise HairWigError(f"'{name}': expected {len(self.magnets)} magnet matrices, got {mats.shape}")
            mats = mats.copy()
            if self.dynamic_index:
                target = self._magnet_targets(inp)
                if not first:
                    shown = self.dynamics.step(
                        state.magnet_pos, state.magnet_vel, state.magnet_target, target, inp.dt,
                        inp.gravity, self.head_up(head, inp.gravity), inp.forces, inp.time,
                        inp.magnet_dynablend)
                    mats[self.dynamic_index, :3, 3] = shown
                    state.magnet_shown = shown
                state.magnet_target = target
            motions = head_inv[None] @ mats @ self.mi_inv
            if self.follow is not None:
                follow = self._follow_motions(head_inv @ mats[self.follow.index], state, first)
                motions[self.follow.index] = np.eye(4)
            if inp.magnet_strength is not None:
                # A keyed weight scales the magnet's whole pull: W_k (M_k − I) · strength.
                eye = np.eye(4)
                strength = np.asarray(inp.magnet_strength, np.float64)
                motions = eye + (motions - eye) * strength[:, None, None]
                if follow is not None:
                    centres, trail = follow
                    follow = centres, eye + (trail - eye) * strength[self.follow.index, None, None]
        if self.layer is not None and inp.keyed:
            self.layer.key(inp.keyed)

        rest = self._frame_rest(inp)
        self._set_colliders(inp, head)
        was = state.contact_maps
        for k, c in enumerate(self.colliders):
            # where each was the frame before, for the layer's substeps (its state's, so a resumed
            # bake meets the same)
            c.sweep_from(None if was is None or len(was) != len(self.colliders) else was[k])
        if self._rows is None:
            self._rows = _Rows(self)
        span, first_strand = self._points(), self.strand_range[0]
        clock = _Clock(timings)
        p, base = self._primary(rest, scalp, motions, follow)
        clock.lap("primary")
        layer_shown = False
        if self.layer is not None:
            frame = LayerFrame(inp.dt, inp.time, np.asarray(inp.gravity, np.float64), inp.forces, head, head_inv,
                               self.head_rest, span)
            layer_shown = self._step_layer(p, frame, state, first)
            clock.lap("dynamics")
        self.refine(p, base, span, first_strand, scalp is None and rest is self.rest_rows, clock,
                    self._rows.work, self._rows.row, state)
        if layer_shown:
            self._layer_feels_refinement(p, frame, state)
            clock.lap("dynamics")
        self._write(p, to_object, out)
        clock.lap("output")
        self.residual = None
        if measure:
            self.residual = self._held_depth(out, to_object) if self.colliders else 0.0
        clock.lap("collision")
        return out, state

    @property
    def crossed(self) -> int:
        """Points continuous contact held back or swung round a collider, last frame."""
        return self.walk.crossed

    def _points(self) -> slice:
        """The wig's points this wig steps (all, or a split bake's part: ``restrict``)."""
        lo, hi = self.strand_range
        return slice(int(self.hair.offsets[lo]), int(self.hair.offsets[hi]))

    def _primary(self, rest: np.ndarray, scalp, motions, follow) -> tuple[np.ndarray, np.ndarray]:
        """Primary movement (seed 000, FIG. 2) of the points this wig steps, in head-local space:
        this frame's rest pose ``rest`` (3, P) carried by the deformed surface (SPEC §2; ``scalp``:
        this frame's root frames, None where the surface is at rest), then pulled by the magnets
        (SPEC §3; ``motions`` (M, 4, 4), None without magnets) and by the magnets whose reach
        follows them (``follow``: their centres and trail motions this frame, or None).

        Returns the goal (3, C), in the wig's reused rows, and ``base`` (3, C): the pose before
        the magnets, refinement's rest pose this frame (a view of ``rest`` where the surface is
        at rest)."""
        span, rows = self._points(), self._rows
        base = rest[:, span]
        if scalp is not None:
            base = self.scalp.apply_rows(base, self.strand_of_point[span], self.attachment[span], scalp,
                                         rows.carried)
        goal = rows.pose
        np.copyto(goal, base)
        if motions is not None:
            self.weights.displace_rows(base, motions, goal, span)
        if follow is not None:
            self.follow.apply_rows(base, goal, span, *follow)
        return goal, base

    def _step_layer(self, p: np.ndarray, frame: LayerFrame, state: WigState, first: bool) -> bool:
        """The dynamics layer (SPEC §8) on the goal ``p`` (3, C) — the wig's points
        ``frame.points``, head-local — in place; the first frame starts at rest on the goal and
        shows it as it is. A layer steps the wig's rows (3, P): a split bake's part goes through
        the wig-sized ``_Rows.goal``. Returns whether ``p`` now holds the layer's pose (and, for
        a layer that absorbs refinement, ``_Rows.shown`` a copy of it)."""
        rows = self._rows
        goal = p if rows.goal is None else rows.goal
        if goal is not p:
            goal[:, frame.points] = p
        if first or state.layer is None:
            state.layer = self.layer.initial_state(goal, frame)
            return False
        self.layer.step(state.layer, goal, frame, goal)
        if goal is not p:
            np.copyto(p, goal[:, frame.points])
        if rows.shown is not None:
            np.copyto(rows.shown, p)
        return True

    def _layer_feels_refinement(self, p: np.ndarray, frame: LayerFrame, state: WigState) -> None:
        """Where refinement moved the layer's pose — collision pushed a point out of a collider,
        length set it back on its segment — the layer's own state moves with it, so it feels the
        head (SPEC §8: the layer reads the same colliders). ``p`` (3, C): the refined rows of the
        wig's points ``frame.points``, whose pose before refinement ``_Rows.shown`` kept."""
        rows = self._rows
        if state.layer is None or rows.shown is None:
            return
        # in head-local rows, zero outside the points stepped; float32 rounding (a length pass
        # re-placing every point) is no contact
        moved = rows.moved
        moved[:, frame.points] = np.subtract(p, rows.shown, out=rows.work)
        moved[:, np.einsum("kp,kp->p", moved, moved) <= self._contact_tolerance] = 0.0
        if self.layer.CONTACTS_ONLY:
            self._contacts_only(moved[:, frame.points])
        self.layer.absorb(state.layer, moved, frame)

    def _contacts_only(self, moved: np.ndarray) -> None:
        """What refinement moved ``moved`` (3, C) the wig's points by, cut in place to the
        colliders' deep pushes (a layer that feels only its contacts: Springs): at each point a
        contact pushed, its move along that push's direction (``CollisionWalk.pushes``), outward
        — all of it from ``DEEP_PUSH`` of the point's segment, none under half that, a share
        growing with it between (a push growing through a line would throw the spring at once);
        zero elsewhere. Resting contact, a length pass's set-backs and a point its leader carried
        out stay the shown pose's own: taking those back too kept more of the springs' swing
        after a fast turn, and tips snapped more."""
        pushes = self.walk.pushes if self.colliders else None
        if pushes is None:
            moved[...] = 0.0
            return
        out = np.einsum("kp,kp->p", moved, pushes)
        at = np.flatnonzero(out > 0.0)
        start = self._points().start
        seg = self.rest_rows[:, at + start] - self.rest_rows[:, at + start - 1]
        reach = DEEP_PUSH * np.sqrt(np.einsum("kp,kp->p", seg, seg))
        share = out[at] * np.clip(2.0 * out[at] / np.maximum(reach, 1e-30) - 1.0, 0.0, 1.0)
        moved[...] = 0.0
        moved[:, at] = pushes[:, at] * share

    def _write(self, p: np.ndarray, to_object: np.ndarray | None, out: np.ndarray) -> None:
        """The refined rows ``p`` (3, C), head-local, into the points this wig steps of ``out``
        (P, 3) float32, in the hair object's current space (``to_object``: head-local → there,
        None for the identity): ``kernels.rows_to_points``."""
        block = out[self._points()]
        if to_object is None:
            rows_copy_to_points(p, block)
        else:
            rows_to_points(p, np.ascontiguousarray(to_object[:3], np.float32), block)

    def _placement(self, inp: FrameInput) -> tuple[np.ndarray, np.ndarray | None]:
        """This frame's head-local → world map (the head's, the wig's shift applied) and
        head-local → the hair object now, ``H_f⁻¹ · L_f`` (None where that is the identity)."""
        name = self.hair.name
        head = as_matrix(inp.head_matrix, f"'{name}' head matrix") @ self._shift
        to_object = np.linalg.solve(as_matrix(inp.hair_matrix, f"'{name}' matrix"), head)
        if np.allclose(to_object, np.eye(4), rtol=0.0, atol=1e-9):
            to_object = None
        return head, to_object

    def _frame_rest(self, inp: FrameInput) -> np.ndarray:
        """This frame's rest pose, head-local rows (3, P): the bound groom's, or — a keyframed
        hairstyle — the frame's in-between (seed 002 under seed 000), to which length and the
        colliders' limits are then bound: this frame's hairstyle is the groom to keep."""
        name = self.hair.name
        rest = self.rest_rows
        if inp.rest_points is not None:
            # A keyframed hairstyle: this frame's in-between is the pose the wig deforms (seed 002
            # under seed 000); magnet weights stay those bound on the first key pose.
            if np.shape(inp.rest_points) != self.hair.points.shape:
                raise HairWigError(f"'{name}': this frame's rest pose has {len(inp.rest_points)} points, "
                                   f"the wig {self.hair.num_points}")
            if self._keyed_rest is None:
                self._keyed_rest = np.empty_like(self.rest_rows)
            rest = transform_rows(self.to_local, np.asarray(inp.rest_points, np.float32).T, self._keyed_rest)
            if self.length is not None:
                self.length.set_rest_rows(rest)
            for c in self.colliders:          # this frame's hairstyle is the groom to keep
                c.bind(rest, self._uniform)
                self.walk.bind_children(c)
        return rest

    def _set_colliders(self, inp: FrameInput, head: np.ndarray) -> None:
        """Where each collider is this frame, relative to the head (SPEC §6.3): the head's own
        field never moves in head-local space; another collider's map is
        ``L_0⁻¹ C_0 C_f⁻¹ L_f``; a deforming one's field is rebuilt on its vertices."""
        if not self.colliders:
            return
        verts = inp.collider_vertices or [None] * len(self.colliders)
        if len(verts) != len(self.colliders):
            raise HairWigError(f"'{self.hair.name}': expected {len(self.colliders)} collider shapes, got {len(verts)}")
        mats = inp.collider_matrices
        extra = self.extra_colliders
        if extra and (mats is None or np.shape(mats) != (extra, 4, 4)):
            raise HairWigError(f"'{self.hair.name}': expected {extra} collider matrices, got "
                               f"{None if mats is None else np.shape(mats)}")
        first = len(self.colliders) - extra
        head_rest_inv = np.linalg.inv(self.head_rest)
        for k, c in enumerate(self.colliders):
            to_field = None
            if k >= first:
                now = as_matrix(mats[k - first], f"collider '{c.name}' matrix")
                to_field = head_rest_inv @ c.mesh.matrix @ np.linalg.solve(now, head)
            c.set_frame(to_field, verts[k])

    def _follow_motions(self, local: np.ndarray, state: WigState, first: bool):
        """This frame's centres (J, 3) and trail motions ``A_j = F_j(t) · F_j(t − trail)⁻¹``
        (J, 4, 4) of the magnets whose reach follows them, from their head-local matrices
        ``local`` (J, 4, 4) now; the state keeps their last frames (at the first frame they are
        taken to have been still before it)."""
        history = state.magnet_history
        if first or history is None:
            history = state.magnet_history = np.repeat(local[None], self.follow.history, axis=0)
        else:
            history[:-1] = history[1:]
            history[-1] = local
        before = history[-1 - self.follow.trail, np.arange(len(self.follow))]
        return local[:, :3, 3].copy(), local @ np.linalg.inv(before)

    def _held_depth(self, out: np.ndarray, to_object: np.ndarray | None) -> float:
        """How deep any point this wig steps of ``out`` (P, 3) float32 — as written, in the hair
        object's space (``to_object``: head-local → there, None for the identity) — lies inside
        its collision surface (head-local units): what the bake reports is measured on what it
        holds, every point but the roots, for every solver (SPEC §6.4: measured, not assumed).
        Refinement's own tally left out every point it did not push, and the points its screen
        passed over (``Collider.held_depth``): 44 mm inside Suzanne's brow was reported as 6e-7.
        Gathered into the wig's scratch rows: refinement and the output are done with them."""
        rows = self._rows
        at = rows.held
        q = rows.first(rows.work, len(at))
        for k in range(3):           # column by column: one strided gather each, no temporaries
            np.take(out[:, k], at, out=q[k], mode="clip")
        if to_object is not None:
            q = transform_rows(np.linalg.inv(to_object), q, rows.first(rows.pose, len(at)))
        return max(c.held_depth(q, at) for c in self.colliders)

    def refine(self, p: np.ndarray, base: np.ndarray, span: slice = slice(None),
               first_strand: int = 0, at_rest: bool = False, clock=None, work: np.ndarray | None = None,
               row: np.ndarray | None = None, state: WigState | None = None) -> np.ndarray:
        """Refinement in head-local space, in the seed's order (SPEC §6): compression (of the
        displacement from ``base``, this frame's rest pose), length, then collision and length
        together on the strands the collision touched (``walk.CollisionWalk``). Points as rows
        (3, P) — or the wig's points ``span`` of them, starting at strand ``first_strand`` — in
        place. ``at_rest``: ``base`` is the bound rest pose, whose compression vectors were kept.
        ``work`` (3, C) and ``row`` (C,): scratch, reused when given. ``state``: the wig's state,
        whose record of where each point ended the last frame continuous contact reads (each
        point's path from there, ``walk.CollisionWalk.cross``) and this frame's then replaces."""
        clock = clock or _Clock(None)
        if self.alpha is not None:
            bound = None
            if at_rest:
                bound = (self.compression_bound[0][:, span], self.compression_bound[1][span])
            compensate_compression_rows(base, p, self.centre, self.alpha[span], bound, work, row)
        clock.lap("compression")
        if self.length is not None and not (self.colliders and self.walk.walks):
            self.length.apply_rows(p, None, first_strand, work, row, base)
        clock.lap("length")
        if self.colliders:
            last = None if state is None else state.contact_last
            self.walk.run(p, base, span, first_strand, last, None if last is None else state.contact_maps)
            if state is not None:
                if state.contact_last is None:
                    state.contact_last = np.zeros((3, self.hair.num_points), np.float32)
                state.contact_last[:, span] = p
                state.contact_maps = self.walk.maps()
        clock.lap("collision")
        return p


def exact_origin(rows: np.ndarray) -> np.ndarray:
    """An origin (3,) for head-local space among points ``rows`` (P, 3): per axis, 0 where the
    points come near the head's own origin (their range is a quarter of their distance from it
    or more: little to gain), else a float32 value inside their range — so that every
    ``x − o`` is exact in float32 (Sterbenz: ``o / 2 ≤ x ≤ 2 o``) and a point that does not move
    comes back bit for bit."""
    o = np.zeros(3)
    if len(rows) == 0:
        return o
    lo = np.asarray(rows, np.float32).min(axis=0).astype(np.float64)
    hi = np.asarray(rows, np.float32).max(axis=0).astype(np.float64)
    for k in range(3):
        if (lo[k] > 0 and hi[k] - lo[k] <= lo[k] / 4) or (hi[k] < 0 and hi[k] - lo[k] <= -hi[k] / 4):
            o[k] = float(np.float32((lo[k] + hi[k]) / 2))
    return o


def _shifted(m: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """A head-local matrix ``m`` in head-local space moved to ``origin``: ``T(−o) m``."""
    m = np.array(m, np.float64)
    m[:3, 3] -= origin
    return m


class _Rows:
    """The scratch rows of the points a wig steps (``Wig._points``, C of its P), made at its
    first step and reused frame after frame (bind once, step many: no (3, P) buffer is made per
    frame).

    pose : (3, C) float32
        The goal, then what the dynamics layer and refinement make of it.
    work, row : (3, C), (C,) float32
        Compression's and length's scratch; then the held depth's.
    carried : (3, C) float32 or None
        The rest pose carried by the deformed surface (a wig with a scalp).
    goal : (3, P) float32 or None
        The dynamics layer's rows where the wig steps a part of its points (a layer steps the
        wig's rows); None without a layer or where it steps them all (``pose`` is those rows).
    shown, moved : (3, C) float32, (3, P) float64, or None
        For a layer that absorbs refinement: its pose before refinement, and what refinement
        moved (zero outside the points stepped).
    held : (K,) int
        The wig points whose depth is measured: all it steps but the roots.
    """

    def __init__(self, wig: Wig):
        span = wig._points()
        c, total = span.stop - span.start, wig.hair.num_points
        self.pose = np.empty((3, c), np.float32)
        self.work = np.empty((3, c), np.float32)
        self.row = np.empty(c, np.float32)
        self.carried = None if wig.scalp is None else np.empty((3, c), np.float32)
        layer = wig.layer
        self.goal = np.zeros((3, total), np.float32) if layer is not None and c < total else None
        absorbs = layer is not None and layer.ABSORBS
        self.shown = np.empty((3, c), np.float32) if absorbs else None
        self.moved = np.zeros((3, total)) if absorbs else None
        self.held = np.flatnonzero(wig.not_root[span]) + span.start

    @staticmethod
    def first(rows: np.ndarray, k: int) -> np.ndarray:
        """The first ``3 k`` values of the C-contiguous ``rows`` as rows (3, k), C-contiguous
        too (BLAS writes only into those)."""
        return rows.reshape(-1)[:3 * k].reshape(3, k)


class _Clock:
    """Adds the seconds since the previous lap to ``timings[phase]`` (nothing without timings)."""

    def __init__(self, timings):
        self.timings = timings
        self.last = time.perf_counter() if timings is not None else 0.0

    def lap(self, phase: str) -> None:
        if self.timings is not None:
            now = time.perf_counter()
            self.timings[phase] = self.timings.get(phase, 0.0) + now - self.last
            self.last = now

