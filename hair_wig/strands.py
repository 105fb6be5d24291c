"""Verlet strands (seed 004, Barnes after Chang, Jin, Yu; SPEC §7 "004" and §8): the *Strands*
dynamics layer.

Each strand is a chain of particles stepped by position Verlet at a fixed number of substeps per
frame, ``x ← x + (x − x_prev) + a h²`` (exact for constant acceleration), under gravity, air drag,
the scene's force fields and a goal force towards the wig's pose (SPEC §8: the pose after scalp
space and magnets is the goal). The goal's spring is taken implicitly and the damping exactly
over each substep, so no stiffness or damping can make a strand blow up. Segments keep their length by follow-the-leader with velocity
correction (Müller, Kim, Chentanez 2012, "Fast simulation of inextensible hair and fur", eq. 9) or,
as the seed does, by Jakobsen's iterated relaxation.

**The style is the equilibrium** (seed 003, eq. 6, generalised to particles): the groom hangs as
the artist combed it, not as gravity would pull it. At bind the layer keeps, in the head's frame,
the acceleration that cancels gravity at the rest pose (``hold``); it turns with the head. With
nothing moving the forces on every particle sum to exactly zero, so the first frame is the groom
and it stays there — no sag, no settling pass — while a head that tilts or turns feels gravity's
change against the style.

Arrays are point-major, ``(3, n, S)``: coordinate, point along the strand, strand (every strand
of a layer has ``n`` points), so each step along the strands is one pass over contiguous rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .collision import _dot
from .collision.contacts import SurfaceContacts, respond
from .chain import GIVE, HEAD_ON, KEPT, RIDGE, ROUNDS, SETTLING, give
from .dynamics_layer import FRICTION, DynamicsLayer, HairModel, LayerFrame, profile, setting
from .errors import HairWigError
from .interaction import Contacts, Volume, link_forces, repulsion, segment_rows, static_links
from .kernels import pairs as pairs_kernels
from .kernels import verlet_substeps, verlet_substeps_met
from .kernels.verlet import NO_FIELDS, frame_moves, frame_shown, verlet_substeps_met_pairs, verlet_substeps_pairs
from .leader import follow_the_leader
from .profiles import Profile
from .spaces import rotation_of, transform_rows

METHODS = ("FTL", "JAKOBSEN")
HAIR_HAIR_METHODS = ("PAIRS", "VOLUME")


# no volume (``kernels.verlet.hair_hair``'s ``vol`` with a cell of 0, the types it takes)
_NO_VOLUME = (0.0, 0.0, 0.0, 0.0, 0.0, np.eye(3), np.zeros(0), np.zeros((3, 0)), np.zeros(0, np.int64),
              np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((3, 0)), np.zeros(5))
_NO_GRIDS = (np.zeros(1, np.int64), np.zeros(1), np.zeros((1, 3)))


@dataclass
class StrandSettings:
    """How the strands move. Rates are per second; stiffness is an acceleration per unit of
    distance from the goal (1/s²)."""

    substeps: int = field(default=8, metadata=setting(
        "strands_substeps", "Substeps", "Steps per frame: more follow fast motion more faithfully and cost more",
        min=1, max=64))
    goal_stiffness: float = field(default=400.0, metadata=setting(
        "strands_stiffness", "Hold", "How strongly each strand is pulled back to the groomed, magnet-posed "
        "shape (along the strand as Hold Along Strand draws it): lower swings more freely and takes longer "
        "to come back (below about 100, long hair stays off its groom for seconds after a move); higher "
        "follows the head more stiffly. Key it to let hair loose for a move", keyed=True, default=150.0,
        min=0.0, max=1e6, soft_max=2000.0))
    # how the goal's pull varies root (left) to tip (right): held at the root, free-er at the tip
    goal_profile: Profile = field(default_factory=lambda: Profile.linear(1.0, 0.25, "goal stiffness"),
                                  metadata=profile("hold", "Hold Along Strand", "How strongly Strands pull "
                                                   "each point back to the groom, root (left) to tip (right), "
                                                   "times Hold", "HOLD"))
    # damps motion relative to the goal (not following it)
    goal_damping: float = field(default=10.0, metadata=setting(
        "strands_goal_damping", "Settle", "How quickly strands stop swinging about the groomed shape (does "
        "not slow them following the head)", min=0.0, max=1e4, soft_max=50.0))
    # bending stiffness: each segment is pulled towards the goal's bend from the one before it
    # (its direction turned as the segment before turned), so strands keep their groomed curve
    # along their length however far they swing
    bend: float = field(default=1000.0, metadata=setting(
        "strands_bend", "Keep Curve", "How firmly each strand keeps its groomed curve along its length "
        "while it swings: keeps kinks out of fast moves; 0 lets every joint fold freely", min=0.0, max=1e6,
        soft_max=20000.0))
    # air drag on the motion itself
    drag: float = field(default=0.5, metadata=setting(
        "strands_drag", "Air Drag", "How much the air slows every motion of the hair", min=0.0, max=1e4,
        soft_max=10.0))
    # 0: exactly the goal, 1: the strands' own motion
    dynablend: float = field(default=1.0, metadata=setting(
        "strands_dynablend", "Dynablend", "How much of the strands' own motion shows: 0 none (exactly the "
        "magnets' pose), 1 all of it. Key it per shot", keyed=True, min=0.0, max=1.0, subtype="FACTOR"))
    # FTL (follow-the-leader) or JAKOBSEN (the seed's)
    method: str = field(default="FTL", metadata=setting(
        "strands_method", "Keep Length", "How each strand keeps its segments at their groomed length",
        items=[("FTL", "Follow the Leader", "Root to tip in one pass, every segment exactly its length "
                                            "(fast, the default)"),
               ("JAKOBSEN", "Relaxation", "Every segment nudged towards its length a number of times, as "
                                          "the strand paper does; softer, less exact with few iterations")]))
    # Jakobsen's relaxation rounds per substep
    iterations: int = field(default=20, metadata=setting(
        "strands_iterations", "Iterations", "Relaxation rounds per step (Relaxation only): more keep lengths "
        "closer", when=("method", "JAKOBSEN"), min=1, max=500))
    # Müller et al.'s s_damping: how much of each point's length correction is taken off its
    # leader's velocity. 1 keeps a chain's energy from growing (measured: without it a swinging
    # chain gains energy from the corrections, 0.9 still overshoots its start by 7 %)
    ftl_damping: float = 1.0
    pinned: bool = True                  # roots ride on the goal's roots
    root_direction: bool = True          # the first segment points where the goal's does
    hold_style: bool = True              # the groom is the equilibrium under gravity
    # Coulomb friction against the colliders: a contact's sliding speed loses friction times the
    # speed it had into the surface
    friction: float = field(default=0.3, metadata=FRICTION)
    # hair–hair (seed 004): segments of different strands closer than a hair's diameter repel
    # with repulsion · (diameter − d); static links join each strand to its nearest neighbours
    hair_hair: bool = field(default=False, metadata=setting(
        "strands_hair_hair", "Hair Against Hair", "Strands closer than the hair diameter push each other "
        "apart (Strand Pairs is costly with many strands: use Volume for dense hair)"))
    # PAIRS: seed 004's segment pairs, exact; VOLUME: a density and velocity grid (Petrovic,
    # Henne, Anderson 2005), whose cost does not grow with how many strands touch
    hair_hair_method: str = field(default="PAIRS", metadata=setting(
        "strands_hair_hair_method", "Hair Against Hair By", "How strands feel each other: strand by strand "
        "for guides and sparse hair, or as a volume for dense hair (thousands of strands)",
        when=("hair_hair", True),
        items=[("PAIRS", "Strand Pairs", "Every two strands closer than the diameter push apart: exact, for "
                                         "guides and sparse hair; slow on dense hair"),
               ("VOLUME", "Volume", "Hair is felt as a volume: strands are pushed out of where hair is packed "
                                    "tighter than in the groom and drag their neighbours along (Hair "
                                    "Friction). Fast on dense hair; no single strand is kept off another")]))
    diameter: float = field(default=0.005, metadata=setting(
        "strands_diameter", "Diameter", "How close two strands may come before they push apart; with Volume, "
        "the size of the cells hair is counted in (never less than a segment's length)",
        when=("hair_hair", True), min=0.0, max=1.0, soft_max=0.05, subtype="DISTANCE"))
    repulsion: float = field(default=2000.0, metadata=setting(
        "strands_repulsion", "Push", "How hard strands push apart once closer than the diameter (with Volume: "
        "once packed tighter than in the groom)",
        when=("hair_hair", True), min=0.0, max=1e6, soft_max=10000.0))
    # Petrovic et al.'s hair-hair friction: the share of a point's velocity difference to the
    # volume's smoothed velocity taken off over each 1/24 s
    hair_friction: float = field(default=0.1, metadata=setting(
        "strands_hair_friction", "Hair Friction", "How much neighbouring strands drag each other along "
        "(Volume only): 0 they slide freely past each other, 1 hair moves in clumps as one",
        when=("hair_hair_method", "VOLUME"), min=0.0, max=1.0, subtype="FACTOR"))
    # neighbours each strand is linked to (0: none)
    links: int = field(default=0, metadata=setting(
        "strands_links", "Links", "Each strand is tied to this many of its nearest neighbours (by their "
        "roots), point to point, which holds a hairstyle's volume; 0: none", min=0, max=8))
    link_stiffness: float = field(default=50.0, metadata=setting(
        "strands_link_stiffness", "Link Stiffness", "How firmly linked strands keep their groomed distance",
        when=("links", True), min=0.0, max=1e5, soft_max=1000.0))

    def check(self) -> None:
        if int(self.substeps) < 1:
            raise HairWigError(f"strand dynamics: substeps must be at least 1, got {self.substeps}")
        for what in ("goal_stiffness", "goal_damping", "bend", "drag", "ftl_damping", "diameter", "repulsion",
                     "link_stiffness", "friction"):
            v = getattr(self, what)
            if not np.isfinite(v) or v < 0:
                raise HairWigError(f"strand dynamics: {what.replace('_', ' ')} must be >= 0, got {v}")
        if not 0 <= self.dynablend <= 1:
            raise HairWigError(f"strand dynamics: dynablend must be in 0..1, got {self.dynablend}")
        if self.method not in METHODS:
            raise HairWigError(f"strand dynamics: method must be one of {METHODS}, got {self.method!r}")
        if int(self.iterations) < 1:
            raise HairWigError(f"strand dynamics: iterations must be at least 1, got {self.iterations}")
        if self.friction > 1:
            raise HairWigError(f"strand dynamics: friction must be in 0..1, got {self.friction}")
        if self.hair_hair_method not in HAIR_HAIR_METHODS:
            raise HairWigError(f"strand dynamics: hair against hair method must be one of {HAIR_HAIR_METHODS}, "
                               f"got {self.hair_hair_method!r}")
        if not 0 <= self.hair_friction <= 1:
            raise HairWigError(f"strand dynamics: hair friction must be in 0..1, got {self.hair_friction}")
        if int(self.links) < 0:
            raise HairWigError(f"strand dynamics: links must be 0 or more, got {self.links}")


def to_layout(points: np.ndarray, n: int) -> np.ndarray:
    """Strand-major points (S·n, 3) → point-major rows (3, n, S), float64."""
    p = np.asarray(points, np.float64)
    return np.ascontiguousarray(p.reshape(-1, n, 3).transpose(2, 1, 0))


def from_layout(rows: np.ndarray) -> np.ndarray:
    """Point-major rows (3, n, S) → strand-major points (S·n, 3)."""
    return np.ascontiguousarray(rows.transpose(2, 1, 0)).reshape(-1, 3)


class VerletStrands:
    """The strands of one point count ``n``, bound to their groom ``rest`` (3, n, S).

    State (``initial_state``) is a dict of named arrays — ``pos`` and ``prev`` (3, n, S), the
    last frame's ``goal`` (3, n, S), and ``hold`` (3,) in the head's frame — so a bake can copy,
    compare and resume it."""

    # hair against hair (by pairs or as a volume) and the static links inside the substeps' one
    # launch (``kernels.verlet.hair_hair``); False: a launch a substep, their accelerations
    # computed between in numpy — the reference the one launch is tested against, bit for bit
    HAIR_IN_LAUNCH = True

    def __init__(self, rest: np.ndarray, settings: StrandSettings | None = None,
                 rest_frame: np.ndarray | None = None):
        """``rest_frame`` (4, 4): rigid, world → the head's frame at rest (``step``'s ``frame``
        as the groom was bound), where a hair-hair Volume measures the groom's density."""
        self.settings = s = settings or StrandSettings()
        s.check()
        rest = np.asarray(rest, np.float64)
        if rest.ndim != 3 or rest.shape[0] != 3 or rest.shape[1] < 2:
            raise HairWigError(f"strand dynamics needs strands of 2 points or more, got shape {rest.shape}")
        self.n = rest.shape[1]
        seg = np.diff(rest, axis=1)
        self.length = np.sqrt(np.einsum("knj,knj->nj", seg, seg))                # (n − 1, S)
        t = np.cumsum(np.r_[np.zeros((1, rest.shape[2])), self.length], axis=0)
        t /= np.maximum(t[-1], 1e-300)
        self.t = t                                                               # (n, S) along the strand
        self._profile = s.goal_profile(t)                                   # (n, S) root to tip
        self.stiffness = self.goal_stiffness = None
        self.set_goal_stiffness(s.goal_stiffness)
        self._free = (t > 0) if s.pinned else np.ones(t.shape, bool)       # roots stay on the goal's
        self.dynablend = None
        self.set_dynablend(s.dynablend)
        num = rest.shape[2]
        self.segment_strand = np.tile(np.arange(num), self.n - 1)         # point-major segments
        self.link_a = self.link_b = np.zeros(0, np.int64)
        if s.links:
            self.link_a, self.link_b = static_links(rest[:, 0], int(s.links))
        d = rest[:, :, self.link_b] - rest[:, :, self.link_a]
        self.link_rest = np.sqrt(np.einsum("knl,knl->nl", d, d))
        self.pairs = 0                                                   # hair–hair pairs, last step
        # the broadphase kept while no point has moved half a diameter, given up for a search
        # at every substep while the hair moves faster than that (``Contacts``)
        volume = s.hair_hair and s.hair_hair_method == "VOLUME"
        self.contacts = Contacts(self.segment_strand, s.diameter, s.diameter) if s.hair_hair and not volume else None
        self.volume = None
        if volume:
            # cells no shorter than a segment: finer, a strand's points leave gaps in its own
            # density and each point would feel its own sampling
            rest_q = self._in_frame(rest, rest_frame).reshape(3, -1)
            self.volume = Volume(rest_q, max(float(s.diameter), float(np.median(self.length))))
        # the groom's segments (point-major, as the pairs number them): contacts are measured
        # against the distances the groom has (``repulsion``)
        self._rest_segments = segment_rows(rest[:, :-1].reshape(3, -1), rest[:, 1:].reshape(3, -1))
        self._h = None                                                   # the last substep (s)
        self._hair_scratch = None                                        # ``_hair_parts``

    def set_dynablend(self, dynablend: float) -> None:
        """How much of the strands' own motion is shown (keyable): the state is unchanged."""
        if not 0 <= dynablend <= 1:
            raise HairWigError(f"strand dynamics: dynablend must be in 0..1, got {dynablend}")
        if dynablend != self.dynablend:
            self.dynablend = float(dynablend)
            self.blend = np.where(self._free, self.dynablend, 0.0)

    def set_goal_stiffness(self, stiffness: float) -> None:
        """The goal's pull, times the goal profile along the strand (keyable): the state is unchanged."""
        if not np.isfinite(stiffness) or stiffness < 0:
            raise HairWigError(f"strand dynamics: goal stiffness (Hold) must be >= 0, got {stiffness}")
        if stiffness != self.goal_stiffness:
            self.goal_stiffness = float(stiffness)
            self.stiffness = self.goal_stiffness * self._profile

    def initial_state(self, goal: np.ndarray, gravity, head_turn=None) -> dict:
        """At rest on the goal (3, n, S); ``head_turn`` (3, 3): the head's rotation at rest."""
        goal = np.asarray(goal, np.float64)
        turn = np.eye(3) if head_turn is None else np.asarray(head_turn, np.float64)
        hold = -turn.T @ np.asarray(gravity, np.float64) if self.settings.hold_style else np.zeros(3)
        return {"pos": goal.copy(), "prev": goal.copy(), "goal": goal.copy(), "hold": hold}

    def step(self, state: dict, goal: np.ndarray, dt: float, gravity, head_turn=None,
             accel=None, contact=None, frame=None) -> np.ndarray:
        """Advance ``state`` (in place) over a frame of ``dt`` seconds towards this frame's
        ``goal`` (3, n, S), world space; returns the positions shown (3, n, S):
        ``goal + dynablend · (pos − goal)``, roots on the goal's.

        ``gravity`` (3,); ``head_turn`` (3, 3) the head's rotation now (the style's ``hold``
        turns with it); ``accel(x, v)`` → (3, n, S): the scene's force fields as accelerations;
        ``contact(x, f)`` → (3, n, S) or None: how far the colliders push the points ``x`` out
        at the fraction ``f`` of the frame (``SurfaceContacts``), taken after the lengths at
        every substep with ``collision.contacts.respond``;
        ``frame`` (4, 4): a rigid map from the world into the head's frame now, where the
        hair–hair broadphase measures how far points moved (a head turning carries every pair
        along unchanged).
        The goal moves linearly from the last frame's over the substeps."""
        s = self.settings
        goal = np.ascontiguousarray(goal, np.float64)
        m = int(s.substeps)
        h = self._h = float(dt) / m
        g0 = state["goal"]
        # the goal's move a substep, and the goal kept as the next frame's start: one pass
        step, kept = np.empty_like(goal), np.empty_like(goal)
        frame_moves(goal, g0, float(m), step, kept)
        turn = np.eye(3) if head_turn is None else np.asarray(head_turn, np.float64)
        base = np.asarray(gravity, np.float64) + turn @ state["hold"]          # (3,)
        pos, prev = state["pos"], state["prev"]
        kh2 = self.stiffness * (h * h)
        bend = s.bend * (h * h) / (1 + s.bend * (h * h))
        # damping, exactly over a substep: dv/dt = −c_g (v − v_goal) − c_d v relaxes v towards
        # v_eq = c_g v_goal / (c_g + c_d) by e^{−(c_g + c_d) h}, stable however strong
        rate = s.goal_damping + s.drag
        keep = np.exp(-rate * h)
        toward = s.goal_damping / rate if rate > 0 else 0.0
        substeps = self._substeps if s.method == "FTL" else self._substeps_numpy
        substeps(pos, prev, g0, step, m, h, keep, toward, base, kh2, bend, accel, contact, frame)
        state["goal"] = kept
        out = np.empty_like(goal)
        frame_shown(goal, pos, self.blend, out)
        return out

    def _substeps_numpy(self, pos, prev, g0, step, m, h, keep, toward, base, kh2, bend, accel, contact, frame):
        """The frame's substeps in numpy, row by row (``step``): Jakobsen's relaxation, and the
        plain reference ``_substeps``' kernel is tested against (tests/test_kernels_verlet.py)."""
        s = self.settings
        v_goal = step / h                                   # the goal's velocity this frame
        for i in range(1, m + 1):
            target = g0 + step * i
            v = (pos - prev) / h
            v *= keep
            v += (1 - keep) * toward * v_goal
            a = np.broadcast_to(base[:, None, None], pos.shape).copy()
            if accel is not None:
                a += accel(pos, v)
            if s.hair_hair or self.link_a.size:
                a += self.interaction(pos, frame, prev)
            # the goal's spring implicitly: x' = x + v h + (a + k (target − x')) h², stable
            # for any stiffness, and exactly x at rest on the goal
            new = pos + v * h + a * (h * h) + kh2 * target
            new /= 1 + kh2
            prev[...] = pos
            if bend:
                # the bend on the predicted strand, b h² / (1 + b h²) of the way, and its last
                # position with it: the shape is restored without setting the point moving (a
                # kick through the velocity would feed the kinks it removes); a strand moving or
                # turning as a whole is not touched
                self._bend(new, prev, target, bend)
            self._constrain(new, prev, target)
            self._meet(contact, new, prev, i / m)
            pos[...] = new

    def _meet(self, contact, new, prev, f: float) -> bool:
        """The colliders' contacts at the fraction ``f`` of the frame on the substep's positions
        ``new`` (with ``prev``, in place): pushed out (``collision.contacts.respond``), the chain given where a
        push meets it head-on (``_give``). Whether anything was pushed."""
        if contact is None:
            return False
        push = contact(new, f)
        if push is None:
            return False
        respond(new, prev, push, self.settings.friction)
        self._give(new, prev, push)
        return True

    def _substeps(self, pos, prev, g0, step, m, h, keep, toward, base, kh2, bend, accel, contact, frame):
        """The frame's substeps by the one kernel (``kernels.verlet_substeps``: the prediction, the
        bend and follow-the-leader, strand by strand; ``verlet_substeps_met`` meets the colliders
        inside it, as ``_meet`` does): all ``m`` in one launch — the scene's force fields taken
        inside it, point by point, and hair against hair (by pairs or as a volume) and the links
        in passes of their own at each substep (``verlet_substeps_pairs``,
        ``verlet_substeps_met_pairs``); else one a launch, with force fields given as a plain
        function (and hair against hair, ``HAIR_IN_LAUNCH`` off) before it, and the colliders'
        contacts after it where the kernel cannot meet them (``SurfaceContacts.substep_parts``)."""
        s = self.settings
        new = np.empty_like(pos)
        length = self.length
        tiny = 4 * float(np.finfo(np.float64).eps)
        parts = contact.substep_parts(pos.shape, m) if isinstance(contact, SurfaceContacts) else None
        between = bool(s.hair_hair or self.link_a.size)
        # the scene's force fields as the kernel reads them (``LayerFrame.accel``'s): taken inside
        # it, each point's own; a plain function of every point (a test's) between launches
        packed = getattr(accel, "packed", None)
        # every substep in one launch where the kernel can take all a substep needs: hair against
        # hair too (``kernels.verlet.hair_hair``); a plain function's force fields between
        # one-substep launches
        whole = (accel is None or packed is not None) and (contact is None or parts is not None) and (
            not between or self.HAIR_IN_LAUNCH)
        if between and whole:
            self._hair_launch(pos, prev, new, g0, step, m, h, keep, toward, base, kh2, bend, tiny, packed, contact,
                              parts, frame)
            return
        if between:                  # the force fields as the plain function, between launches
            packed = None
        none = np.zeros((0, 0, 0))
        fields = NO_FIELDS if packed is None else packed
        scratch = none if packed is None else np.empty_like(pos)      # the kernel writes the fields' into it
        gives = (1 + bool(s.pinned and s.root_direction), GIVE, SETTLING, HEAD_ON, ROUNDS, RIDGE, KEPT)
        # the goal's velocity this frame, where a plain function's force fields read it
        v_goal = step / h if packed is None and accel is not None else None
        for i in ([1] if whole else range(1, m + 1)):
            extra = scratch
            if packed is None and (accel is not None or between):
                extra = np.broadcast_to(base[:, None, None], pos.shape).copy()
                if accel is not None:
                    v = (pos - prev) / h
                    v *= keep
                    v += (1 - keep) * toward * v_goal
                    extra += accel(pos, v)
                if s.hair_hair or self.link_a.size:
                    extra += self.interaction(pos, frame, prev)
            verlet = (pos, prev, new, g0, step, i, m if whole else 1, h, keep, toward, base, extra, kh2, bend, length,
                      bool(s.pinned), bool(s.root_direction), float(s.ftl_damping), tiny, *fields)
            if parts is not None:
                verlet_substeps_met(*verlet, *contact.launch_parts(parts), float(s.friction), *gives)
                contact.counted()
                continue
            verlet_substeps(*verlet)
            if self._meet(contact, new, prev, i / m):
                pos[...] = new

    def _hair_launch(self, pos, prev, new, g0, step, m, h, keep, toward, base, kh2, bend, tiny, packed, contact,
                     parts, frame) -> None:
        """The frame's ``m`` substeps with hair against hair (by pairs or as a volume) and the
        links in one launch (``_substeps``), meeting the colliders inside it where ``parts``."""
        s = self.settings
        verlet = (pos, prev, new, g0, step, 1, m, h, keep, toward, base, np.empty_like(pos), kh2, bend, self.length,
                  bool(s.pinned), bool(s.root_direction), float(s.ftl_damping), tiny,
                  *(NO_FIELDS if packed is None else packed))
        hair = self._hair_parts(pos, frame)
        vol, grids = _NO_VOLUME, _NO_GRIDS
        if self.volume is not None:
            share = 1.0 - (1.0 - float(s.hair_friction)) ** (24.0 * h)      # as ``_volume_accel``
            vol, grids = self.volume.launch_parts(pos[0].size, s.repulsion, share,
                                                  None if frame is None else np.asarray(frame, np.float64)[:3, :3].T)
        if parts is not None:
            gives = (1 + bool(s.pinned and s.root_direction), GIVE, SETTLING, HEAD_ON, ROUNDS, RIDGE, KEPT)
            got = verlet_substeps_met_pairs(*verlet, *contact.launch_parts(parts), float(s.friction), *gives, hair,
                                            vol, grids)
            contact.counted()
        else:
            got = verlet_substeps_pairs(*verlet, hair, vol, grids)
        self._hair_kept(hair, got[:2])
        if self.volume is not None:
            self.volume.launch_kept(vol, got[2:])

    def _hair_parts(self, pos: np.ndarray, frame: np.ndarray | None) -> tuple:
        """Hair against hair as ``kernels.verlet.hair_hair`` takes it: the repulsion's and the
        links' settings and lists, and the broadphase's Verlet list (``Contacts``) and scratch."""
        s = self.settings
        n, num = pos.shape[1], pos.shape[2]
        if self._hair_scratch is None:
            link_a, link_b = (np.ascontiguousarray(x, np.int64) for x in (self.link_a, self.link_b))
            self._hair_scratch = (link_a, link_b, np.ascontiguousarray(self.link_rest, np.float64),
                                  *pairs_kernels.link_lists(link_a, link_b, num), np.empty((3, n * num)),
                                  np.empty(((n - 1) * num, 6)), np.empty(pos.shape),
                                  pairs_kernels.search_work((n - 1) * num))
        link_a, link_b, link_rest, by_a, at_a, by_b, at_b, now, ends, out, work = self._hair_scratch
        track = np.eye(4) if frame is None else np.ascontiguousarray(frame, np.float64)
        none = np.zeros(0, np.int64)
        c = self.contacts
        if c is None:                            # the links alone: no repulsion (threshold 0), no list
            return (track, self.segment_strand, 0.0, 0.0, 0.0, self._rest_segments, link_a, link_b, link_rest,
                    float(s.link_stiffness), by_a, at_a, by_b, at_b, now, np.zeros(4, np.int64), np.zeros(1), now,
                    ends, out, work, none, none)
        if c.at is None:
            c.at = np.empty((3, n * num))
            c.pairs = (none, none)
        state = np.array([c.searches > 0, c.served, c.searches, 0], np.int64)
        skin = np.array([c.skin], np.float64)
        return (track, self.segment_strand, float(s.diameter), float(c.margin), float(s.repulsion),
                self._rest_segments, link_a, link_b, link_rest, float(s.link_stiffness), by_a, at_a, by_b, at_b,
                c.at, state, skin, now, ends, out, work, *c.pairs)

    def _hair_kept(self, hair: tuple, got: tuple) -> None:
        """The Verlet list's state as the launch left it (``_hair_parts``)."""
        c = self.contacts
        if c is None:
            return
        state, skin = hair[15], hair[16]
        c.served, c.searches, c.skin = int(state[1]), int(state[2]), float(skin[0])
        c.pairs = got
        self.pairs = int(state[3])

    def absorb(self, state: dict, delta: np.ndarray, friction: float) -> None:
        """Move the strands' state by ``delta`` (3, n, S), what refinement did to the shown pose
        (a collider's push, a length set back), as a contact does (``collision.contacts.respond``)."""
        respond(state["pos"], state["prev"], delta, friction)

    def _give(self, x: np.ndarray, prev: np.ndarray, push: np.ndarray) -> None:
        """Where a contact's push ``push`` (3, n, S) left a segment of ``x`` short — it met the
        surface head-on — the strand gives as a chain (``chain.give``): the least motion of its
        free points that sets every segment back on its length with each pushed point on its
        contact's plane. The next substep's follow-the-leader then has nothing to set back: left
        to it, the short segment's end swung sideways by ``√(2 L δ)`` against a leader that
        stays, and its correction's velocity kick swung it back, two positions 4 mm apart
        substep after substep on a breathing shoulder (issue 34 part 3). ``prev`` moves alike:
        the chain is set, not thrown. An unpinned root is held too."""
        s = self.settings
        at, moved = give(x, self.length, push, 1 + bool(s.pinned and s.root_direction))
        if at.size:
            prev[:, :, at] += moved

    def interaction(self, pos: np.ndarray, frame: np.ndarray | None = None,
                    prev: np.ndarray | None = None) -> np.ndarray:
        """Hair–hair accelerations (3, n, S) at positions ``pos``: repulsion between segments of
        different strands closer than the diameter (or the Volume's friction and repulsion), and
        the static links' springs. ``frame`` (4, 4): rigid, world → the frame the broadphase
        tracks motion in (``step``); ``prev`` (3, n, S): the positions a substep before (the
        Volume's friction reads the velocity ``(pos − prev) / h``)."""
        s = self.settings
        out = link_forces(pos, self.link_a, self.link_b, self.link_rest, s.link_stiffness)
        if self.volume is not None:
            out += self._volume_accel(pos, frame, prev)
        elif s.hair_hair:
            n, num = self.n, pos.shape[2]
            a, b = pos[:, :-1].reshape(3, -1), pos[:, 1:].reshape(3, -1)
            on_a, on_b, self.pairs = repulsion(a, b, self.segment_strand, s.diameter, s.repulsion,
                                               self.contacts.candidates(self._in_frame(pos, frame), a, b),
                                               self._rest_segments)
            out[:, :-1] += on_a.reshape(3, n - 1, num)
            out[:, 1:] += on_b.reshape(3, n - 1, num)
        return out

    def _volume_accel(self, pos: np.ndarray, frame: np.ndarray | None, prev: np.ndarray | None) -> np.ndarray:
        """The Volume's accelerations (3, n, S) (``interaction.Volume``), the grid in the head's
        frame (a groom carried by the head keeps its density). Friction as Petrovic et al. (2005,
        §3) blend velocities, ``v ← (1 − F) v + F V_grid``, with ``F = 1 − (1 − Hair Friction)^(24 h)``
        over a substep ``h`` (the setting's share a 1/24 s, whatever the substeps), held over the
        substep as the acceleration ``F (V_grid − v) / h`` (``kernels.volume.volume_accel``)."""
        s = self.settings
        h = self._h
        q = self._in_frame(pos, frame).reshape(3, -1)
        if prev is None or not h:
            vel, share, h = np.zeros(q.shape), 0.0, 1.0
        else:
            vel = (pos - prev).reshape(3, -1) / h
            share = 1.0 - (1.0 - float(s.hair_friction)) ** (24.0 * h)
        turn = None if frame is None else np.asarray(frame, np.float64)[:3, :3].T
        return self.volume.accel(q, vel, s.repulsion, share, h, turn).reshape(pos.shape)

    def _bend(self, x: np.ndarray, prev: np.ndarray, goal: np.ndarray, share: float) -> None:
        """Bend the predicted points ``x`` (3, n, S), root to tip, ``share`` of the way towards
        where each would be if its segment bent from the one before it as the goal's does: the
        goal's segment ``j`` turned by the least rotation that takes the goal's segment
        ``j − 1`` (unit ``u``) onto the strand's (unit ``w``), laid from point ``j − 1`` as
        already bent. That rotation, without a cross product:
        ``R d = d − (s·d)/(1 + u·w) s + 2 (u·d) w`` with ``s = u + w``.

        The segment turns and keeps its length, and every point after it moves with its end
        (the tail rides along), so the bend changes no length: follow-the-leader's velocity
        correction sees none of it. ``prev`` moves alike, so the shape comes back without
        setting anything moving. (Measured on the swing demo: moving the point alone changed
        lengths that the correction turned into velocity kicks, and a stiff bend grew kinks
        without bound.) A strand moving or turning as a whole is not touched; a kink is."""
        g = np.diff(goal, axis=1)                                     # (3, n − 1, S)
        u = g[:, :-1] / np.sqrt(np.maximum(np.einsum("kjs,kjs->js", g[:, :-1], g[:, :-1]), 1e-300))
        d = g[:, 1:]
        ud = np.einsum("kjs,kjs->js", u, d)
        carry = np.zeros(x.shape[::2])                                # (3, S): how far the tail moved
        for j in range(2, self.n):
            i = j - 2
            x[:, j] += carry
            prev[:, j] += carry
            w = x[:, j - 1] - x[:, j - 2]
            w /= np.sqrt(np.maximum(_dot(w, w), 1e-300))
            uj, dj = u[:, i], d[:, i]
            coef = (ud[i] + _dot(w, dj)) / np.maximum(1 + _dot(uj, w), 1e-6)
            seg = x[:, j] - x[:, j - 1]
            length = np.sqrt(_dot(seg, seg))
            turned = dj - coef * (uj + w)
            turned += (2 * ud[i]) * w
            turned -= seg
            turned *= share
            turned += seg                               # share of the way, then its own length
            turned *= length / np.sqrt(np.maximum(_dot(turned, turned), 1e-300))
            fix = turned - seg
            x[:, j] += fix
            prev[:, j] += fix
            carry += fix

    @staticmethod
    def _in_frame(pos: np.ndarray, frame: np.ndarray | None) -> np.ndarray:
        """``pos`` (3, n, S) through the rigid map ``frame`` (4, 4), as products and sums in
        ``kernels.verlet.hair_hair``'s order: the same bits as the substeps' launch, whatever
        the machine's matrix product does."""
        if frame is None:
            return pos
        m = np.asarray(frame, np.float64)
        x, y, z = pos.reshape(3, -1)
        out = np.empty((3, x.size))
        for k in range(3):
            out[k] = m[k, 0] * x + m[k, 1] * y + m[k, 2] * z + m[k, 3]
        return out.reshape(pos.shape)

    def _constrain(self, x: np.ndarray, prev: np.ndarray, target: np.ndarray) -> None:
        """Roots and lengths on the predicted positions ``x`` (3, n, S), in place. FTL moves each
        point ``j`` by ``d_j`` onto its segment's length from its (already placed) leader and
        corrects the leader's velocity by ``−s_damping d_j / h`` through ``prev`` (Müller et al.,
        eq. 9); Jakobsen relaxes every segment towards its length, ``iterations`` rounds, even and
        odd segments in turn (each half moves no point twice)."""
        s = self.settings
        L = self.length
        first = 1                                   # the first point the constraints may move
        if s.pinned:
            x[:, 0] = target[:, 0]
            prev[:, 0] = x[:, 0]                    # a root moves with the goal, not on its own
            if s.root_direction:
                d = target[:, 1] - target[:, 0]
                r = np.sqrt(np.einsum("ks,ks->s", d, d))
                x[:, 1] = x[:, 0] + d * (L[0] / np.maximum(r, 1e-300))
                first = 2
        if s.method == "FTL":
            start = max(first, 1)
            for j in range(start, self.n):
                # guided by where the segment was before this substep (it cannot turn back within
                # one), then by the goal's segment (leader.follow_the_leader)
                placed = follow_the_leader(x[:, j - 1], x[:, j], L[j - 1], prev[:, j] - prev[:, j - 1],
                                           lambda: target[:, j] - target[:, j - 1], turn_back=False)
                if j >= 2 and s.ftl_damping:
                    prev[:, j - 1] += s.ftl_damping * (placed - x[:, j])
                x[:, j] = placed
            return
        moves = np.ones(self.n)
        moves[:first if s.pinned else 0] = 0.0
        wa, wb = moves[:-1], moves[1:]
        total = wa + wb
        wa = np.divide(wa, total, out=np.zeros_like(wa), where=total > 0)[:, None]
        wb = np.divide(wb, total, out=np.zeros_like(wb), where=total > 0)[:, None]
        for _ in range(int(s.iterations)):
            for parity in (0, 1):
                seg = slice(parity, self.n - 1, 2)
                a, b = x[:, parity:self.n - 1:2], x[:, parity + 1::2]
                k = min(a.shape[1], b.shape[1])
                a, b = a[:, :k], b[:, :k]
                d = b - a
                r = np.sqrt(np.einsum("knj,knj->nj", d, d))
                c = d * ((r - L[seg][:k]) / np.maximum(r, 1e-300))
                a += c * wa[seg][:k]
                b -= c * wb[seg][:k]


class StrandLayer(DynamicsLayer):
    """The Strands dynamics layer of a wig (SPEC §8): its strands grouped by point count, one
    ``VerletStrands`` per group, stepped on the whole wig at once (hair–hair needs every strand),
    in the world. State: each group's named arrays ``'<n>:<name>'`` and ``'head_inv'`` (4, 4):
    world → head-local at the last frame, where the colliders were."""

    KEY = "STRANDS"
    LABEL = "Strands"
    DESCRIPTION = ("Each strand is a chain that keeps its length, swings under gravity and wind and comes "
                   "back to the groom; strands can push each other apart: long hair")
    SETTINGS = StrandSettings
    KEYED = ("dynablend", "goal_stiffness")
    KERNELS = ("strands", "collision contacts", "strands meeting colliders", "hair against hair",
               "strands against strands", "hair volume")
    LIFTS = True          # refinement's walk lifts a chain at a head-on contact as ``_give`` does

    def __init__(self, model: HairModel, settings: StrandSettings):
        super().__init__(model, settings)
        rest_rows, offsets = model.world_rest(), model.offsets
        counts = np.diff(offsets)
        # world → the head's frame at rest, without its scale (as ``LayerFrame.rigid`` at rest)
        turn = rotation_of(model.head_rest)
        rest_frame = np.eye(4)
        rest_frame[:3, :3] = turn.T
        rest_frame[:3, 3] = -turn.T @ np.asarray(model.head_rest, np.float64)[:3, 3]
        self.groups = []
        for n in np.unique(counts):
            strands = np.flatnonzero(counts == n)
            index = offsets[strands][None, :] + np.arange(n)[:, None]          # (n, S) into P
            rest = np.asarray(rest_rows, np.float64)[:, index]
            self.groups.append((int(n), index, VerletStrands(rest, settings, rest_frame)))
        self.contacts = None

    def bind_colliders(self, colliders) -> None:
        """Meet ``colliders`` (the wig's, head-local) inside the substeps (``SurfaceContacts``)."""
        self.contacts = None
        if colliders:
            s = self.groups[0][2].settings
            fixed = (1 + bool(s.root_direction)) if s.pinned else 0
            self.contacts = [SurfaceContacts(colliders, index, fixed) for _, index, _ in self.groups]

    @property
    def touched(self) -> int:
        """Points and midpoints the colliders pushed in the last substep."""
        return sum(c.touched for c in self.contacts) if self.contacts else 0

    def key(self, values: dict) -> None:
        for name, call in (("dynablend", "set_dynablend"), ("goal_stiffness", "set_goal_stiffness")):
            if values.get(name) is not None:
                for _, _, layer in self.groups:
                    getattr(layer, call)(values[name])

    def absorb(self, state: dict, moved: np.ndarray, frame: LayerFrame) -> None:
        """``VerletStrands.absorb`` on every group: refinement's moves, in the world."""
        delta_rows = frame.world_moves(moved)
        for n, index, layer in self.groups:
            if layer._h is None:
                continue
            part = {name: state[f"{n}:{name}"] for name in ("pos", "prev")}
            layer.absorb(part, delta_rows[:, index], self.settings.friction)

    def initial_state(self, goal: np.ndarray, frame: LayerFrame) -> dict:
        """Every group at rest on the goal, the style held as the head was at rest."""
        goal_rows = frame.world(goal)
        state = {"head_inv": np.array(frame.head_inv, np.float64)}
        for n, index, layer in self.groups:
            for name, a in layer.initial_state(goal_rows[:, index], frame.gravity,
                                               rotation_of(frame.head_rest)).items():
                state[f"{n}:{name}"] = a
        return state

    def step(self, state: dict, goal: np.ndarray, frame: LayerFrame, out: np.ndarray) -> None:
        """One frame of every group toward the goal (``VerletStrands.step``); the colliders are
        where the head is now (``head_inv``), moved from where they were."""
        goal_rows = frame.world(goal)
        shown = np.empty(goal_rows.shape, np.float64)
        now = np.asarray(frame.head_inv, np.float64)
        was = state.get("head_inv", now)
        turn, accel, rigid = frame.head_turn(), frame.accel(), frame.rigid()
        for k, (n, index, layer) in enumerate(self.groups):
            part = {name: state[f"{n}:{name}"] for name in ("pos", "prev", "goal", "hold")}
            contact = None
            if self.contacts:
                contact = self.contacts[k]
                contact.move(was, now)
                contact.begin()
            shown[:, index] = layer.step(part, goal_rows[:, index], frame.dt, frame.gravity, turn, accel,
                                         contact, rigid)
            state[f"{n}:goal"] = part["goal"]
        state["head_inv"] = now.copy()
        transform_rows(frame.head_inv, shown, out)

