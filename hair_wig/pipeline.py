"""The wig: bind once against the rest pose, then step frame by frame (seed 000, FIG. 1 and
FIG. 2: primary movement, secondary movement, refinement).

The wig system's inputs are the surface model, the hairs and the pose controllers (magnets); its
output is the deformed hairs. Everything is done in the head's local space (SPEC §2), so a rigid
head motion moves the hair rigidly and costs nothing; springs run in world space (SPEC §4, §5).
"""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass, field, replace

import numpy as np

from .dynamics import DynamicMagnets, ForceField
from .dynamics_layer import HairModel, LayerFrame
from .layers import layer_for
from .errors import HairWigError
from .hairset import HairSet
from .magnets import FollowReach, Magnet, MagnetWeights
from .profiles import Profile
from .chain import SETTLING, least_motion, settled
from .children import Children, neighbourhood, sag, transplant, turns
from .collision import Collider, ColliderMesh
from .refinement import LengthControl, compensate_compression_rows, compression_vectors
from .scalp import ScalpSpace
from .spaces import as_matrix, rotation_of, scale_of, transform_points, transform_rows



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
    # the dynamics layer's own named arrays (``DynamicsLayer.initial_state``)
    layer: dict | None = None

    def copy(self) -> "WigState":
        layer = None if self.layer is None else {k: v.copy() for k, v in self.layer.items()}
        return WigState(*(None if a is None else a.copy() for a in self._arrays()), layer=layer)

    def _arrays(self):
        return (self.magnet_pos, self.magnet_vel, self.magnet_target, self.magnet_shown, self.magnet_history)

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
    head_centre : (3,) or None
        The centre ``l`` of compression and of the collision rays (head-local); default: the
        centre of the head mesh's bounding box, else the head's origin.
    scalp : ScalpSpace or None
        Root frames on the surface (head-local); frames then carry the surface's current
        ``surface_positions`` and ``surface_normals``.
    threads : int
        Blocks of strands are independent after the dynamic magnets; with more than one thread
        they run in parallel (numpy releases the GIL in its array passes). Results do not depend
        on it, bit for bit.
    """

    def __init__(self, hair: HairSet, hair_matrix, head_matrix, magnets=(), settings=None,
                 head_mesh=None, head_centre=None, scalp: ScalpSpace | None = None, threads: int = 1,
                 head_name: str | None = None, colliders=(), children=None):
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
        # refinement's walk meets a head-on contact as the wig's dynamics layer does: where the
        # Strands layer's chain gives (``VerletStrands._give``), the walk lifts the chain too
        # (``_lift_steep``), so the two agree and what the walk did is no new motion to the layer;
        # Rods meet contacts in their angles and Springs not at all, and keep the walk's swing
        self._lifts = self.layer is not None and self.layer.LIFTS
        counts = hair.counts
        # strands of one point count under per-segment length: collision walks them point-major
        self._uniform = int(counts[0]) if (settings.use_length and settings.length_mode == "SEGMENT"
                                           and np.all(counts == counts[0])) else 0
        self.children = None          # (K, 3, S) float32: each guide's children's roots (children.py)
        self._children_note = None
        self._children_turn = None    # (K, 3, 3, S) float32: their turns (Follow Surface Normal)
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
            for mesh in meshes:
                c = Collider(mesh, head_inv @ mesh.matrix, mesh.offset / scale)
                c.bind(self.rest_rows, self._uniform)
                self.colliders.append(c)
            if children is not None and len(children.roots) and settings.child_samples:
                self._bind_neighbourhood(children, head_mesh is not None)
            for c in self.colliders:
                self._bind_children(c, self.rest_rows)
            if self.layer is not None:             # a layer may meet them inside its substeps
                self.layer.bind_colliders(self.colliders)
        self.residual = 0.0          # the deepest point left inside a collision surface, last frame
        self.alpha = None if settings.compression is None else settings.compression(t)
        self.length = LengthControl(hair, settings.elasticity, settings.length_mode) if settings.use_length else None
        self.not_root = t > 0
        self.scalp = scalp
        self.strand_of_point = hair.strand_of_point()
        self.attachment = settings.attachment(t).astype(np.float32)
        self.compression_bound = None
        if self.alpha is not None:
            self.compression_bound = compression_vectors(self.rest_rows, self.centre, self.alpha)
        self._pool = None
        self._keyed_rest = None
        self._layered = None
        self.keyed = None             # set by the caller: a keyed style (seed 002) whose pose(frame) is each frame's rest
        self.threads = threads        # also plans the blocks

    @property
    def head_scale(self) -> float:
        """World units per head-local unit (the head's rest scale)."""
        return scale_of(self.head_rest)

    @property
    def penetration(self) -> float:
        """The deepest any point was left inside its collision surface in the last step, in
        world units (SPEC §6.4: measured, not assumed)."""
        return self.residual * self.head_scale

    # Blocks of whole strands, each run through the whole pipeline. Before collision they were
    # cache-sized (2^15 points); the root-to-tip walk of length and collision makes a few dozen
    # numpy calls per point of a strand, whose overhead is per block, so blocks are longer now
    # (measured on the project machine, 1.6M points, one thread, collision + length per frame:
    # 300 ms at 2^15, 143 at 2^17, 96 at 2^18, 86 at 2^19; the other phases did not slow).
    BLOCK_POINTS = 1 << 18
    THREAD_BLOCK_POINTS = 1 << 17

    @property
    def threads(self) -> int:
        return self._threads

    @threads.setter
    def threads(self, n: int) -> None:
        self._threads = max(1, int(n))
        self.blocks = self._blocks()

    @property
    def blocks(self) -> list[tuple[slice, int]]:
        return self._block_list

    @blocks.setter
    def blocks(self, blocks) -> None:
        """Plan the blocks, and the scratch buffers each thread reuses for them (nothing of a
        block's size is allocated per frame)."""
        self._block_list = blocks
        size = max(s.stop - s.start for s, _ in blocks)
        self._workspaces = queue.SimpleQueue()
        for _ in range(self._threads):
            self._workspaces.put(_Workspace(size, self.weights.TILE))

    def _blocks(self) -> list[tuple[slice, int]]:
        """Point ranges of whole strands (and each one's first strand) processed one at a time.

        Every stage after the dynamic magnets is independent from strand to strand, so each block
        runs the whole pipeline while its rows are in cache. Strand-length control of strands
        with different point counts, or per segment, works on the whole set: one block then.
        """
        counts = self.hair.counts
        lo, hi = getattr(self, "strand_range", (0, self.hair.num_strands))
        if self.length is not None and not self.length.blockable:
            return [(slice(0, self.hair.num_points), 0)]
        size = self.BLOCK_POINTS if self._threads == 1 else self.THREAD_BLOCK_POINTS
        per = max(1, size // int(counts.max()))
        starts = np.arange(lo, hi, per)
        off = self.hair.offsets
        return [(slice(int(off[a]), int(off[min(a + per, hi)])), int(a)) for a in starts]

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
        self.blocks = self._blocks()

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
        if self._children_note:
            out.append(self._children_note)
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

    def step(self, inp: FrameInput, state: WigState | None = None, out: np.ndarray | None = None,
             keep_state: bool = True, timings: dict | None = None):
        """Deformed positions for one frame, and the state for the next.

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
            collision, output (measure with one thread; with several, the sum over threads is
            approximate).

        Returns
        -------
        positions : (P, 3) float32 in the hair object's current local space
        state : WigState for the next frame
        """
        name = self.hair.name
        head = as_matrix(inp.head_matrix, f"'{name}' head matrix") @ self._shift
        hair_now = as_matrix(inp.hair_matrix, f"'{name}' matrix")
        head_inv = np.linalg.inv(head)
        first = state is None
        state = self.initial_state(inp) if first else (state.copy() if keep_state else state)
        if out is None:
            out = np.empty_like(self.hair.points)

        # Scalp space: the rest pose carried by the deforming surface (each block carries its own).
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
        to_object = np.linalg.solve(hair_now, head)       # head-local -> hair object now: H_f⁻¹ · L_f
        if np.allclose(to_object, np.eye(4), rtol=0.0, atol=1e-9):
            to_object = None

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
                self._bind_children(c, rest)

        self._set_colliders(inp, head)
        self._residuals = []

        layered = None
        if self.layer is not None:
            # The whole wig's goal first (the strands interact), then the layer, then refinement;
            # its buffers are the wig's, reused frame after frame
            if self._layered is None:
                self._layered = _Layered(self.hair.num_points)
            layered = self._layered
            layered.phase, layered.shown = "goal", None

        def run(block):
            span, first_strand = block
            self._step_block(span, first_strand, scalp, motions, head, head_inv, inp.dt, state,
                             first, to_object, out, timings, rest, follow, layered)

        self._run_blocks(run)
        if layered is not None:
            frame = LayerFrame(inp.dt, inp.time, np.asarray(inp.gravity, np.float64), inp.forces, head, head_inv,
                               self.head_rest, self._points())
            self._step_layer(layered, frame, state, first, timings)
            layered.phase = "refine"
            self._run_blocks(run)
            self._layer_feels_refinement(layered, frame, state)
        self.residual = max(self._residuals, default=0.0)
        return out, state

    def _run_blocks(self, run) -> None:
        if self.threads > 1 and len(self.blocks) > 1:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="hair_wig")
            list(self._pool.map(run, self.blocks))
        else:
            for block in self.blocks:
                run(block)

    def _points(self) -> slice:
        """The wig's points this wig steps (all, or a split bake's part: ``restrict``)."""
        lo, hi = getattr(self, "strand_range", (0, self.hair.num_strands))
        return slice(int(self.hair.offsets[lo]), int(self.hair.offsets[hi]))

    def _step_layer(self, layered: "_Layered", frame: LayerFrame, state: WigState, first: bool,
                    timings: dict | None) -> None:
        """The dynamics layer on the whole wig's goal (head-local rows), into the same rows; the
        first frame starts at rest on the goal and shows it as it is."""
        clock = _Clock(timings)
        if first or state.layer is None:
            state.layer = self.layer.initial_state(layered.goal, frame)
            clock.lap("dynamics")
            return
        self.layer.step(state.layer, layered.goal, frame, layered.goal)
        layered.shown = True
        clock.lap("dynamics")

    def _layer_feels_refinement(self, layered: "_Layered", frame: LayerFrame, state: WigState) -> None:
        """Where refinement moved the layer's pose — collision pushed a point out of a collider,
        length set it back on its segment — the layer's own state moves with it, so it feels the
        head (SPEC §8: the layer reads the same colliders)."""
        if not layered.shown or state.layer is None or not self.layer.ABSORBS:
            return
        # in head-local rows; float32 rounding (a length pass re-placing every point) is no contact
        moved = (layered.refined - layered.goal).astype(np.float64)
        moved[:, np.einsum("kp,kp->p", moved, moved) <= self._contact_tolerance] = 0.0
        self.layer.absorb(state.layer, moved, frame)

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

    def _step_block(self, span, first_strand, scalp, motions, head, head_inv, dt, state, first,
                    to_object, out, timings=None, rest=None, follow=None, layered=None):
        """The pipeline after the dynamic magnets, for the strands of one block. ``scalp``: this
        frame's root frames when the surface is deformed; ``rest``: this frame's rest pose as rows
        (3, P) when it is not the bound one; ``follow``: the following magnets' centres and trail
        motions this frame. ``layered``: a dynamics layer that steps the whole wig sits between
        primary movement and refinement — its first pass keeps each block's goal (and rest pose)
        there, the second refines what the layer made of them."""
        ws = self._workspaces.get()
        try:
            clock = _Clock(timings)
            bound_rest = rest is None or rest is self.rest_rows
            c = span.stop - span.start
            p, work, spare, row = ws.rows(0, c), ws.rows(1, c), ws.rows(2, c), ws.row[:c]
            if layered is not None and layered.phase == "refine":
                base = layered.base[:, span]
                np.copyto(p, layered.goal[:, span])
            else:
                base = (self.rest_rows if rest is None else rest)[:, span]
                if scalp is not None:
                    base = self.scalp.apply_rows(base, self.strand_of_point[span], self.attachment[span],
                                                 scalp, ws.rows(3, c))
                np.copyto(p, base)
                # Primary movement: magnets' motion from rest, in head-local space.
                if motions is not None:
                    self.weights.displace_rows(base, motions, p, span, ws.blend)
                if follow is not None:
                    self.follow.apply_rows(base, p, span, *follow)
                clock.lap("primary")
                if layered is not None:
                    layered.goal[:, span] = p
                    layered.base[:, span] = base
                    return
            self.refine(p, base, span, first_strand, scalp is None and bound_rest, clock, ws)
            if layered is not None:
                layered.refined[:, span] = p           # what refinement made of the layer's pose
            block = out[span]
            # Column by column: four times faster than one transposing copy.
            if to_object is None:
                for k in range(3):
                    block[:, k] = p[k]
            else:
                linear = transform_rows(to_object, p, work, translate=False)
                shift = to_object[:3, 3].astype(np.float32)
                for k in range(3):
                    np.add(linear[k], shift[k], out=block[:, k])
            clock.lap("output")
            if self.colliders:
                self._residuals.append(self._held_depth(block, span, to_object))
            clock.lap("collision")
        finally:
            self._workspaces.put(ws)

    def _held_depth(self, block: np.ndarray, span: slice, to_object: np.ndarray | None) -> float:
        """How deep any point of ``block`` (C, 3) float32 — the wig's points ``span`` as written,
        in the hair object's space (``to_object``: head-local → there, None for the identity) —
        lies inside its collision surface (head-local units): what the bake reports is measured
        on what it holds, every point but the roots, for every solver (SPEC §6.4: measured, not
        assumed). Refinement's own tally left out every point it did not push, and the points
        its screen passed over (``Collider.held_depth``): 44 mm inside Suzanne's brow was
        reported as 6e-7."""
        at = np.flatnonzero(self.not_root[span])
        q = np.ascontiguousarray(block[at].T)
        if to_object is not None:
            q = transform_rows(np.linalg.inv(to_object), q, np.empty_like(q))
        at += span.start
        return max(c.held_depth(q, at) for c in self.colliders)

    def refine(self, p: np.ndarray, base: np.ndarray, span: slice = slice(None),
               first_strand: int = 0, at_rest: bool = False, clock=None, ws=None) -> np.ndarray:
        """Refinement in head-local space, in the seed's order (SPEC §6): compression (of the
        displacement from ``base``, this frame's rest pose), length, then collision and length
        together on the strands the collision touched (``_collide_and_keep_length``). Points as rows
        (3, P) — or the block ``span`` of them, starting at strand ``first_strand`` — in place.
        ``at_rest``: ``base`` is the bound rest pose, whose compression vectors were kept.
        ``ws``: the thread's scratch buffers."""
        clock = clock or _Clock(None)
        c = p.shape[1]
        work, row = (ws.rows(1, c), ws.row[:c]) if ws is not None else (None, None)
        if self.alpha is not None:
            bound = None
            if at_rest:
                bound = (self.compression_bound[0][:, span], self.compression_bound[1][span])
            compensate_compression_rows(base, p, self.centre, self.alpha[span], bound, work, row)
        clock.lap("compression")
        if self.length is not None and not (self.colliders and self._walks):
            self.length.apply_rows(p, None, first_strand, work, row, base)
        clock.lap("length")
        if self.colliders:
            self._collide_and_keep_length(p, base, span, first_strand, work, row)
        clock.lap("collision")
        return p

    @property
    def _walks(self) -> bool:
        """Whether length and collision are one root-to-tip walk (per-segment length on strands
        of one point count)."""
        return self.length is not None and self.length.mode == "SEGMENT" and bool(self.length.uniform)

    def _collide_and_keep_length(self, p, base, span, first_strand, work, row) -> None:
        """Collision and length as constraints together (SPEC §6.4). Per segment: one walk of
        every strand from root to tip, each point placed at its segment's length from the one
        before (follow-the-leader) and out of every collider, so collision never stretches hair.
        With the whole-strand length mode, length (the strand's scale) and collision alternate
        instead, ending on length. What is left inside a collision surface is measured on the
        points as written (``_held_depth``). ``base``: this frame's rest pose of the block (3, C)."""
        length = self.length
        if self._walks:
            self._walk(p, base, span, first_strand)
        else:
            not_root = self.not_root[span]
            strand = self.strand_of_point[span] - first_strand
            moved = self._collide(p, span, not_root)
            if moved.size == 0:
                return
            touched = np.unique(strand[moved])
            hit = np.zeros(int(strand[-1]) + 1, dtype=bool)
            hit[touched] = True
            mask = hit[strand] & not_root
            if length is not None:
                for _ in range(max(1, self.settings.collision_iterations)):
                    length.apply_rows(p, touched, first_strand, base=base)
                    moved = self._collide(p, span, mask)
                    if moved.size == 0:
                        break
                else:
                    length.apply_rows(p, touched, first_strand, base=base)

    def _walk(self, p, base, span, first_strand) -> None:
        """Follow-the-leader with collision, root to tip, on every strand of the block (one point
        count; SPEC §6.4): each point placed its segment's length from the one before
        (``LengthControl.steps``: towards where it was asked to be, turned towards the segment
        as it came in where that is squashed or turns back, and towards the rest segment of
        ``base`` (3, C) where that is zero too); then the points the grid says may be within
        their limit are pushed out of every collider and set back on their segment's length, ``collision_iterations`` times. The
        block is turned point-major once, so each step is one pass over contiguous rows. What is
        left inside is measured on the points as written (``_held_depth``)."""
        length = self.length
        n = length.uniform
        count = p.shape[1] // n
        view = p.reshape(3, count, n)
        q = np.ascontiguousarray(view.transpose(0, 2, 1))                      # (3, n, S)
        rest = length.rest_columns(first_strand, count)
        index = span.start + np.arange(count, dtype=np.int64) * n              # each strand's root
        strands = slice(first_strand, first_strand + count)
        # per collider, a lower bound of each strand's last point's distance (near_step)
        margins = [np.full(count, -np.inf, np.float32) for _ in self.colliders]
        seg = np.empty(count, np.float32) if length.elasticity else None
        for j in length.steps(q, rest, base.reshape(3, count, n)):
            if seg is not None:      # elastic: the segment is not its rest length
                d = q[:, j] - q[:, j - 1]
                np.sqrt(np.einsum("ks,ks->s", d, d), out=seg)
            at_j = index + j
            near = [c.near_step(q[:, j], j, strands, at_j, m, rest[j] if seg is None else seg)
                    for c, m in zip(self.colliders, margins)]
            at = near[0] if len(near) == 1 else np.unique(np.concatenate(near))
            if len(margins) > 1 and at.size:
                for m in margins:            # moved by one collider: no bound for the others
                    m[at] = -np.inf
            for _ in range(max(1, self.settings.collision_iterations)):
                if at.size == 0:
                    break
                at = self._push_round(q, j, at, at_j)
            if self.children is not None:
                kept = self._keep_children_out(q, j, strands)
                if kept.size:
                    for m in margins:            # moved: no bound for the next point
                        m[kept] = -np.inf
                    # the guide's own point, checked again where its children moved it
                    at = np.union1d(at, self._push_round(q, j, kept, at_j))
            if at.size:
                # still unresolved after the last tangent-plane step (a crease or a pocket)
                self._swing_out(q, j, at_j, at)
        view[...] = q.transpose(0, 2, 1)

    def _push_round(self, q: np.ndarray, j: int, at: np.ndarray, at_j: np.ndarray, lift: bool = True) -> np.ndarray:
        """One round of contacts for points j of the walked strands ``q`` (3, n, S), those of
        the strands ``at`` (wig points ``at_j[at]``): each pushed out of every collider, then set
        back on its segment's length on the contact's tangent plane (``_onto_circle``) — or,
        with ``lift`` and the Strands layer, the chain lifted where that meets it head-on
        (``_lift_steep``). Returns the strands pushed."""
        qa = q[:, j, at]
        pushed = np.zeros(len(at), bool)
        normal = np.zeros((3, len(at)))
        for c in self.colliders:
            pushed[c.project_at(qa, at_j[at], normal)] = True
        at = at[pushed]
        if at.size:
            before = q[:, j, at]
            after, n = qa[:, pushed], normal[:, pushed]
            swung = _onto_circle(q[:, j - 1, at], before, after, n)
            q[:, j, at] = swung
            if j >= 2 and lift and self._lifts:
                self._lift_steep(q, j, at, before, after, n, swung, at_j)
        return at

    def _lift_steep(self, q, j, at, before, after, n, swung, at_j) -> None:
        """Where a contact meets its segment head-on, the chain gives instead of the segment
        (with the Strands layer, whose substeps give alike: ``self._lifts``).

        Set back on its length on the tangent plane (``_onto_circle``), a point whose segment is
        within a few degrees of the surface's normal swings sideways by ``√(2 L δ)`` for a push
        ``δ``: hair hanging onto a shoulder that rises 1 mm slid 8 mm in a frame (issue 34 part
        3). A hanging strand pushed at its end lifts instead: ``chain.least_motion`` (Gauss's
        principle of least constraint), points 1…j moved as little as keeps every segment's
        length and puts point j on its contact's plane. Points ``before`` (3, K) were pushed to
        ``after`` along ``n`` and swung to ``swung``; ``at``: their strands, ``at_j`` the wig's
        points j.

        Looked at only where the swing moved the point more than twice its push (hair lying
        along a surface is swung by about its push and keeps it) and the push is resting
        contact settling (under ``SETTLING`` of the segment). Taken where it is a give to take
        (``chain.settled``: the lengths kept, the strand moved no more than the swing moved its
        point) and leaves no point it moved a tenth of the push inside: a point it would take
        inside becomes a contact of the chain too, sliding along its surface, and the chain is
        solved again (three times at most); what is left inside by a micron (a point that slid
        along the curved scalp it lies on) the walk sets out again from there. Elsewhere the
        swing stands."""
        d2 = np.einsum("ks,ks->s", swung - before, swung - before)
        p2 = np.einsum("ks,ks->s", after - before, after - before)
        seg = before - q[:, j - 1, at]
        steep = np.flatnonzero((d2 > 4 * p2) & (p2 < SETTLING ** 2 * np.einsum("ks,ks->s", seg, seg)))
        if steep.size == 0:
            return
        who = at[steep]
        k = len(who)
        x0 = q[:, :j + 1, who].astype(np.float64)                       # (3, j + 1, K), before the swing
        x0[:, j] = before[:, steep]
        seg = np.diff(x0, axis=1)
        length = np.sqrt(np.einsum("kis,kis->is", seg, seg))            # (j, K): kept as they are
        # contacts of points 0…j (the root's held, never one): where each must reach along its
        # normal — only j's at first; a point the lift would take inside its surface is added,
        # and the chain solved again
        normal = np.zeros((3, j + 1, k))
        reach = np.zeros((j + 1, k))
        normal[:, j] = n[:, steep]
        reach[j] = np.einsum("ks,ks->s", n[:, steep], after[:, steep])
        where = (at_j[who][None, :] - (j - np.arange(1, j))[:, None]).ravel()  # wig points 1…j − 1
        for _ in range(3):
            x = least_motion(x0, 1, length, normal, reach)
            lifted = np.ascontiguousarray(x[:, 1:j].reshape(3, -1), np.float32)
            depth = self._depth(lifted, where).reshape(j - 1, k)
            inside = depth > 0
            if not inside.any():
                break
            # the points the lift took inside: on their surfaces too, sliding along them
            out = lifted.copy()
            push = np.zeros((3, out.shape[1]))
            for c in self.colliders:
                c.project_at(out, where, push)
            hit = inside & np.isclose(np.einsum("kp,kp->p", push, push), 1.0).reshape(j - 1, k)
            normal[:, 1:j] = np.where(hit[None], push.reshape(3, j - 1, k), normal[:, 1:j])
            reach[1:j] = np.where(hit, np.einsum("kp,kp->p", push, out.astype(np.float64)).reshape(j - 1, k),
                                  reach[1:j])
        # what is still inside after three rounds: a point slid along the surface it lay on (a
        # micron into a curved scalp) the walk below sets out again; one a tenth of the push
        # inside is no lift
        inside = (depth > 0.1 * np.sqrt(p2[steep])).any(axis=0)
        # contacts that cannot all hold with the lengths (two surfaces closing on a segment) are
        # met only in the least-squares sense, and a chain nearly straight along the normal does
        # not converge: such a lift would stretch hair or throw it, and is not taken (``settled``)
        take = ~inside & settled(x0, x, length, np.sqrt(d2[steep]))
        if not take.any():
            return
        cols = who[take]
        q[:, 1:j + 1, cols] = x[:, 1:, take].astype(np.float32)
        # the walk again from the first point the lift left inside (a micron into the curved
        # scalp it slid along), as it placed them the first time: each on its length from the
        # one before (the lift's own, to float32) and out of every collider
        deep = depth[:, take] > 0                                        # (j − 1, K')
        again = np.flatnonzero(deep.any(axis=0))
        if again.size == 0:
            return
        first = np.argmax(deep[:, again], axis=0) + 1                   # points 1…j − 1
        rest = length[:, take][:, again].astype(np.float32)
        for i in range(int(first.min()), j + 1):
            on = np.flatnonzero(first <= i)
            c = cols[again[on]]
            here = q[:, i, c]
            self.length.follow(q[:, i - 1, c], here, rest[i - 1, on], here - q[:, i - 1, c])
            q[:, i, c] = here
            self._push_round(q, i, c, at_j - (j - i), lift=False)

    def _bind_neighbourhood(self, children: Children, on_head: bool) -> None:
        """Each guide's samples of the children it leads (children.py): their roots' offsets
        (head-local) and, where Interpolate Hair Curves follows the surface normal, the turn
        from the guide's root normal to theirs (the head's normals where they are rooted)."""
        s = self.settings
        if not self._uniform:
            self._children_note = (
                f"the {len(children.roots)} curves grown from its strands (children) are not kept out of "
                f"the colliders: that needs Keep Length per segment and strands of one point count "
                f"(these have {'Whole Strand' if s.length_mode != 'SEGMENT' else 'several counts'}); "
                f"raise Head Offset if they show inside")
            return
        roots = self.rest_rows[:, self.hair.offsets[:-1]].astype(np.float64)           # (3, G)
        kids = transform_points(np.asarray(children.roots, np.float64), self.to_local)
        offsets, which = neighbourhood(roots.T, kids, s.child_samples)
        self.children = offsets.astype(np.float32)
        self._children_turn = None
        if children.follow_normal and on_head:
            head = self.colliders[0]
            up = head.outward_at(roots.astype(np.float32))                               # (3, G)
            there = kids[np.maximum(which, 0)]                                            # (K, G, 3)
            k, g = which.shape
            kid_up = head.outward_at(np.ascontiguousarray(there.reshape(-1, 3).T, np.float32))
            kid_up = kid_up.reshape(3, k, g).transpose(1, 0, 2)
            kid_up = np.where((which >= 0)[:, None, :], kid_up, up[None])
            self._children_turn = turns(up, kid_up).astype(np.float32)
        self._children_margin = sag(self.children)

    def _bind_children(self, c: Collider, rest: np.ndarray) -> None:
        if self.children is not None:
            c.bind_children(rest, self.children, self._children_turn, self._uniform, self._children_margin)

    def _keep_children_out(self, q: np.ndarray, j: int, strands: slice) -> np.ndarray:
        """Points j of the walked strands ``q`` (3, n, S) moved so that each guide's shape,
        moved onto its children's roots (``self.children``), is outside every collider there
        (children.py): each round the largest push any of a guide's samples needs moves the
        guide's point, set back on its segment's length on that contact's tangent plane
        (``_onto_circle``), as a guide's own contact is. Returns the strands moved."""
        off = self.children[:, :, strands]                                  # (K, 3, S)
        turn = None if self._children_turn is None else self._children_turn[..., strands]
        k, _, count = off.shape
        moved = np.zeros(count, bool)
        cols = np.arange(count)
        for _ in range(max(1, self.settings.collision_iterations)):
            v = transplant(q[:, j], q[:, 0], off, turn).transpose(1, 0, 2).reshape(3, k * count)
            before = v.copy()
            normal = np.zeros((3, k * count), np.float32)
            for c in self.colliders:
                c.push_to(v, c.child_limit[:, j, strands].reshape(k * count), normal)
            push = (v - before).reshape(3, k, count)
            size = np.einsum("aks,aks->ks", push, push)
            best = np.argmax(size, axis=0)
            hit = np.flatnonzero(size[best, cols] > 0)
            if hit.size == 0:
                break
            moved[hit] = True
            pick = best[hit]
            d = push[:, pick, hit]
            n = normal.reshape(3, k, count)[:, pick, hit]
            if turn is not None:             # back into the guide's own frame: Rᵀ
                r = turn[pick, :, :, hit]                                   # (H, 3, 3)
                d = np.einsum("hab,ah->bh", r, d)
                n = np.einsum("hab,ah->bh", r, n)
            here = q[:, j, hit]
            q[:, j, hit] = _onto_circle(q[:, j - 1, hit], here, here + d, n)
        return np.flatnonzero(moved)

    def _depth(self, q: np.ndarray, index: np.ndarray) -> np.ndarray:
        """How far each point ``q`` (3, S) — wig points ``index`` — is inside its collision
        surface, over every collider (0 outside)."""
        depth = np.zeros(q.shape[1])
        for c in self.colliders:
            pick, d = c.depth_at(q, index)
            if pick.size:
                np.maximum.at(depth, pick, d - c.tolerance)
        return depth

    def _swing_out(self, q: np.ndarray, j: int, index: np.ndarray, among: np.ndarray, rounds: int = 7) -> None:
        """Points j (of the walked strands ``q`` (3, n, S)) still inside after the tangent-plane
        steps (a crease — an ear against the head — bends the surface away from the plane):
        swing each round point j − 1, at its segment's length, from where it is (inside)
        towards a direction that is outside, and keep the first outside point on the way
        (found to 1e-7 of the arc, float32's own: ``rounds`` scans of nine samples — a coarser
        search made where the point lands a step function of rounding, 1e-3 of a segment on
        a scene moved or turned). Every candidate of a scan is measured in one call."""
        deep = among[self._depth(q[:, j, among], index[among]) > 0]
        if deep.size == 0:
            return
        k = len(deep)
        at = index[deep]
        inside = np.ascontiguousarray(q[:, j, deep])
        c = q[:, j - 1, deep]
        pushed = inside.copy()
        for col in self.colliders:
            col.project_at(pushed, at)
        out = _unit(pushed - inside)
        seg = inside - c
        length = np.sqrt(np.einsum("ks,ks->s", seg, seg))
        lo = seg / np.maximum(length, 1e-30)
        # Where "out" is: the surface's outward direction at the contact, else on along the
        # strand's previous segment, else away from the collider at j − 1 (a pocket under an
        # ear can close the first way); the first that is outside. Failing all, a pocket
        # (between an eye and a brow, under an ear): the outside direction nearest to where
        # the point is, among 128 round point j − 1.
        ways = [out]
        if j > 1:
            ways.append(_unit(c - q[:, j - 2, deep]))
        ways.extend(col.outward_at(c) for col in self.colliders)
        free = self._outside(c[None] + np.stack(ways) * length, at)        # (ways, K)
        # failing every way, the point stays where it is (inside, and measured so), never on its
        # leader
        hi = np.where(np.sum(out * out, axis=0) > 0.25, out, lo)
        found = np.zeros(k, bool)
        for w, way in enumerate(ways):
            # a way of no length (a push that could not move the point: pushed − inside = 0)
            # points nowhere: c + 0 is the leader itself, outside, and the point sat on it
            take = ~found & free[w] & (np.sum(way * way, axis=0) > 0.25)
            hi[:, take] = way[:, take]
            found |= take
        if not found.all():
            # directions spread evenly over the sphere, in a frame of the point's own (its
            # segment, the push's direction): they turn with the scene, so where the search
            # lands does not depend on how the scene's axes lie
            rest = np.flatnonzero(~found)
            frame = _frame(lo[:, rest], out[:, rest])                       # (3, 3, R)
            around = np.einsum("ak,kir->air", _AROUND, frame)               # (A, 3, R)
            free = self._outside(c[None, :, rest] + around * length[rest], at[rest])
            score = np.where(free, _AROUND[:, :1], -np.inf)                 # (A, R): along the segment
            best = np.argmax(score, axis=0)
            some = np.flatnonzero(np.isfinite(score.max(axis=0)))
            hi[:, rest[some]] = around[best[some], :, some].T
        s = (np.arange(1, 10) / 10.0)[:, None, None]
        cols = np.arange(k)
        for _ in range(rounds):
            mid = _arc(lo, hi, s, out)                                    # (9, 3, K), lo to hi
            ok = self._outside(c[None] + mid * length, at)
            some = ok.any(axis=0)
            first = np.argmax(ok, axis=0)
            before = np.where(first > 0, first - 1, 0)
            new_lo = np.where(some & (first > 0), mid[before, :, cols].T, lo)
            lo = np.where(some, new_lo, mid[-1])
            hi = np.where(some, mid[first, :, cols].T, hi)
        q[:, j, deep] = c + hi * length

    def _outside(self, x: np.ndarray, at: np.ndarray) -> np.ndarray:
        """Whether candidate points ``x`` (M, 3, K) for the wig points ``at`` (K,) are outside
        every collision surface: (M, K), measured in one call."""
        m, _, k = x.shape
        rows = np.ascontiguousarray(x.transpose(1, 0, 2).reshape(3, m * k), np.float32)
        return (self._depth(rows, np.tile(at, m)) <= 0).reshape(m, k)

    def _collide(self, p, span, mask) -> np.ndarray:
        moved = [c.project_rows(p, span, mask) for c in self.colliders]
        return moved[0] if len(moved) == 1 else np.unique(np.concatenate(moved))


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


def _spread(n: int) -> np.ndarray:
    """``n`` unit directions (n, 3) spread evenly over the sphere (a Fibonacci spiral from +x,
    the first axis, to −x): about 18° apart at 128."""
    k = np.arange(n) + 0.5
    x = 1 - 2 * k / n
    r = np.sqrt(1 - x * x)
    turn = np.pi * (3 - np.sqrt(5)) * k
    return np.stack([x, r * np.cos(turn), r * np.sin(turn)], axis=1)


_AROUND = _spread(128)


def _arc(lo: np.ndarray, hi: np.ndarray, s: np.ndarray, across: np.ndarray) -> np.ndarray:
    """Unit directions (len(s), 3, K) on the great circle from ``lo`` to ``hi`` (3, K, unit) at
    the fractions ``s`` (len(s), 1, 1) of the angle between them; where ``hi`` is opposite
    ``lo`` (no plane of their own), the circle turns towards ``across`` (3, K). A straight blend
    of the two, normalised, passes through zero there — a point set its segment's length along
    that direction sat on its leader, and the strand's tail collapsed onto it."""
    cos = np.clip(np.sum(lo * hi, axis=0), -1.0, 1.0)
    w = hi - lo * cos
    sin = np.sqrt(np.sum(w * w, axis=0))
    weak = sin <= 1e-6
    if weak.any():
        w[:, weak] = _frame(lo[:, weak], across[:, weak])[1]
    w = np.where(weak[None], w, w / np.maximum(sin, 1e-300))
    angle = np.arctan2(sin, cos) * s                                  # (len(s), 1, K)
    return np.cos(angle) * lo[None] + np.sin(angle) * w[None]


def _frame(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Orthonormal frames (3 axes, 3, K): the first along ``a`` (3, K, unit), the second
    along the part of ``b`` (3, K) across it — or, where ``b`` has none, across ``a`` towards
    its smallest coordinate — the third their cross product."""
    b = b - a * np.sum(a * b, axis=0)
    n = np.sqrt(np.sum(b * b, axis=0))
    weak = n <= 1e-6
    if weak.any():
        k = np.argmin(np.abs(a[:, weak]), axis=0)
        e = np.zeros((3, int(weak.sum())))
        e[k, np.arange(e.shape[1])] = 1.0
        e -= a[:, weak] * np.sum(a[:, weak] * e, axis=0)
        b[:, weak] = e
    b = _unit(b)
    return np.stack([a, b, np.cross(a, b, axis=0)])


def _unit(v: np.ndarray, axis: int = 0) -> np.ndarray:
    """``v`` scaled to unit length along ``axis`` (a zero vector stays zero)."""
    n = np.sqrt(np.sum(v * v, axis=axis, keepdims=True))
    return v / np.maximum(n, 1e-30)


def _onto_circle(c: np.ndarray, before: np.ndarray, after: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Where a point ``before`` (3, S), at its segment's length from ``c``, goes when a
    collider pushed it to ``after`` along ``n`` (3, S, unit): the point at that same distance
    from ``c`` that lies on the collision surface's tangent plane there, nearest ``before`` —
    the circle where the segment's sphere meets the plane. Where the sphere misses the plane,
    the point is set on the segment's length along ``after − c`` instead (follow-the-leader).
    The plane's normal is the collider's own, not ``after − before``: a push of a rounding
    (a point left a hair inside by the step before) has no direction of its own to the digit."""
    seg = before - c
    length2 = np.einsum("ks,ks->s", seg, seg)
    hc = np.einsum("ks,ks->s", n, c - after)           # height of c above the plane
    rho2 = length2 - hc * hc
    m = c - hc * n
    w = before - m
    w -= np.einsum("ks,ks->s", n, w) * n
    wn = np.sqrt(np.einsum("ks,ks->s", w, w))
    out = m + w * (np.sqrt(np.maximum(rho2, 0)) / np.maximum(wn, 1e-30))
    fallback = (rho2 < 0) | (wn <= 1e-12 * np.sqrt(length2))
    if fallback.any():
        d = after[:, fallback] - c[:, fallback]
        dn = np.sqrt(np.einsum("ks,ks->s", d, d))
        out[:, fallback] = c[:, fallback] + d * (np.sqrt(length2[fallback]) / np.maximum(dn, 1e-30))
    return out


class _Workspace:
    """One thread's scratch: four (3, C) point buffers and a (C,) row for blocks of up to
    ``points`` points, and the magnet blend's buffer. Views of flat arrays, so that every
    block's view is C-contiguous whatever its size (BLAS writes only into those)."""

    def __init__(self, points: int, tile: int):
        self._flat = [np.empty(3 * points, dtype=np.float32) for _ in range(4)]
        self.row = np.empty(points, dtype=np.float32)
        self.blend = np.empty(13 * tile, dtype=np.float32)

    def rows(self, i: int, c: int) -> np.ndarray:
        return self._flat[i][:3 * c].reshape(3, c)


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


class _Layered:
    """Between the two passes of a frame with a whole-wig dynamics layer: each block's goal (the
    pose after scalp space and magnets, head-local rows (3, P)), replaced by what the layer made
    of it, and each block's rest pose for refinement."""

    def __init__(self, points: int):
        self.phase = "goal"
        self.goal = np.empty((3, points), np.float32)
        self.base = np.empty((3, points), np.float32)
        self.refined = np.empty((3, points), np.float32)
        self.shown = None            # whether ``goal`` holds the layer's pose (None: the first frame's goal)
