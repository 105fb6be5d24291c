"""Angular rods (seed 003, Kim, Lee, Ko, "angular dynamics"; SPEC §7 "003" and §8): strands as
chains of rigid segments whose bend angles are the state.

Each segment's direction is its parent's turned by a rotation vector ``α`` (2 numbers: its parts
along the parent frame's two normals ``e₁, e₂``; the root segment's parent is the root's frame).
Forward kinematics builds the strand root to tip, so lengths are exact at every step. The angles
move by the seed's central-difference update (with damping so the hair settles):

    α^{n+1} = α^n + (1 − c_i Δt)(α^n − α^{n−1}) + Δt² β_i (F_i − k_i (α^n − ϑ_i)),
    c_i = c + 2 ζ √(β_i k_i)   (the air's damping and each joint's own wobble's),

``F_i`` the moment about joint ``i`` of the loads on the rest of the strand (gravity and forces
per unit length, levers from the strand's present shape), taken along ``e₁, e₂``; ``k_i`` the
bending stiffness and ``β_i`` the inverse inertia, growing root to tip. Stable while
``Δt √(β k) < 2``: every frame is split into substeps so that ``Δt √(β k)`` stays at or below
``courant`` (1 by default, half the limit: the stiffest joint's period is then 4 % short of
``2π / √(β k)``; 0.25 brings it within 0.3 %).

Rest angles keep the style (seed 003, eq. 6): ``ϑ = α_goal − F(goal) / k``, so the goal's shape
under its own loads is the equilibrium and the hair does not sag when the animation starts.

Arrays are strand-major: points (S, n, 3), angles (S, m, 2) with ``m = n − 1``. A strand's
state is its angles now and a substep ago, and the root frame's normal ``e₁``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .collision.contacts import SurfaceContacts, respond
from .dynamics_layer import FRICTION, DynamicsLayer, HairModel, LayerFrame, profile, setting
from .errors import FROM_ZERO, HairWigError
from .kernels import rod_angles, rod_build, rod_moments, rod_substeps
from .kernels.field import launch
from .kernels.response import slowed_rows
from .profiles import Profile
from .spaces import rotation_of, transform_rows


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-300)


def root_normal(direction: np.ndarray) -> np.ndarray:
    """A unit normal (S, 3) square to each root ``direction`` (S, 3): the root frame's ``e₁``."""
    d = _unit(direction)
    pick = np.eye(3)[np.argmin(np.abs(d), axis=1)]
    return _unit(np.cross(d, pick))


def angles_of(points: np.ndarray, root_dir: np.ndarray, e1: np.ndarray) -> np.ndarray:
    """The bend angles (S, m, 2) of strands ``points`` (S, n, 3) whose root frame is
    ``root_dir``, ``e1`` (S, 3): inverse kinematics, each segment against its parent
    (``kernels.rod_angles``)."""
    points = _f64(points)
    out = np.empty((points.shape[0], points.shape[1] - 1, 2))
    rod_angles(points, _f64(root_dir), _f64(e1), out)
    return out


def _no_faster(last: np.ndarray, angles: np.ndarray, turned: np.ndarray) -> np.ndarray:
    """How far each joint turned over the last substep, ``angles − last`` (S, m, 2), after a
    contact, no faster than it turned before it, ``turned`` (S, m, 2) (seed 003, eq. 4: a
    joint's kinetic energy is its rate squared over β, the joints' inertias independent): a
    contact takes motion away and gives none. Velocities met point by point
    (``collision.contacts.respond``) and read back by inverse kinematics would: stopping one point
    of a strand that swings as a whole turns the two joints beside it against each other by
    the swing times the lever over a segment. Measured on long hair over Suzanne (Rods
    defaults, the head still after a turn): refinement's push absorbed so multiplied the touched
    strands' joint energy by 1.75 (median; up to 70) every frame, joints turning 1.8 rad a
    substep that had turned 0.3, so the damping never let the hair come to rest."""
    after = angles - last
    fast = np.einsum("smk,smk->sm", after, after)
    slow = np.einsum("smk,smk->sm", turned, turned)
    scale = np.sqrt(np.divide(slow, fast, out=np.ones_like(fast), where=fast > slow))
    return after * scale[..., None]


def _relength(pos: np.ndarray, seg: np.ndarray, guide: np.ndarray, rest: np.ndarray) -> None:
    """Every segment of strands ``pos`` (3, n, K) set back to its length ``seg`` (K, n − 1), root to
    tip, in place, by the one follow-the-leader (``leader.follow_the_leader``; a dynamics layer's
    rule, no fold test), guided by the segments ``guide`` (3, n − 1, K) and, where those are
    (nearly) zero, ``rest`` (3, n − 1, K)."""
    from .leader import follow_the_leader

    for j in range(1, pos.shape[1]):
        pos[:, j] = follow_the_leader(pos[:, j - 1], pos[:, j], seg[:, j - 1], guide[:, j - 1], rest[:, j - 1],
                                      turn_back=False)


def _per_segment(seg: np.ndarray, m: int) -> np.ndarray:
    """Segment lengths (S,) (one per strand) or (S, m) as (S, m)."""
    seg = np.asarray(seg, np.float64)
    return np.broadcast_to(seg[:, None] if seg.ndim == 1 else seg, (len(seg), m))


def build(roots: np.ndarray, root_dir: np.ndarray, e1: np.ndarray, angles: np.ndarray, seg: np.ndarray):
    """Forward kinematics: points (S, n, 3) of strands from ``roots`` (S, 3) with bend
    ``angles`` (S, m, 2) and segment lengths ``seg`` ((S,) or (S, m)); also each joint's parent frame
    ``e₁``, ``e₂`` (S, m, 3) each (the axes the angles turn about): ``kernels.rod_build``.

    The turn ``r = α₁ a + α₂ b`` lies in the frame's normal plane, so its cross products with
    the frame are the frame again (``a × t = −b``, ``b × t = a``, ``b × a = −t``): every joint is
    a few scaled sums, no cross product."""
    num, m = angles.shape[:2]
    pts, ax1, ax2 = np.empty((num, m + 1, 3)), np.empty((num, m, 3)), np.empty((num, m, 3))
    rod_build(_f64(roots), _f64(root_dir), _f64(e1), _f64(angles), _f64(_per_segment(seg, m)), pts, ax1, ax2)
    return pts, ax1, ax2


def moments(points: np.ndarray, load: np.ndarray, seg: np.ndarray, ax1: np.ndarray, ax2: np.ndarray):
    """The generalised forces (S, m, 2): about each joint, the moment of the loads per unit
    length ``load`` ((3,), (S, 3) or (S, m, 3)) on the segments beyond it, levers from the
    present ``points`` (S, n, 3), along the joint's axes ``ax1``, ``ax2``; ``seg`` the segment
    lengths ((S,) or (S, m)): ``kernels.rod_moments``."""
    num, n = points.shape[:2]
    out = np.empty((num, n - 1, 2))
    rod_moments(_f64(points), _loads(load, num, n - 1), _f64(_per_segment(seg, n - 1)), _f64(ax1), _f64(ax2), out)
    return out


def _f64(a) -> np.ndarray:
    """``a`` as a C-contiguous float64 array (the kernels' one layout: no copy when it is one)."""
    return np.ascontiguousarray(a, np.float64)


def _loads(load, num: int, m: int) -> np.ndarray:
    """Loads per unit length ((3,), (S, 3) or (S, m, 3)) as (S, m, 3)."""
    f = np.asarray(load, np.float64)
    return _f64(np.broadcast_to(f[:, None, :] if f.ndim == 2 else f, (num, m, 3)))


@dataclass
class RodSettings:
    """``stiffness``: the strand's bending stiffness (a joint's ``k`` is it times the strand's
    segments, so a strand bends alike at any resolution), ``beta`` β root value,
    times ``beta_profile`` root (0) to tip (1) (the seed's β growing to the tip) and
    ``stiffness_profile``; ``damping`` c (1/s); ``wobble`` ζ: each joint's own velocity is
    damped by ``2 ζ √(β k)`` besides (ours, not the seed's: the seed's joints are oscillators of
    their own at √(β k), coupled only through the loads, so after a jolt stiff hair buzzes at
    that frequency — 35 Hz at the defaults on 49 points — long after the move; ζ 0.25 lets it
    overshoot once and settle within a few frames); ``courant``: the largest ``Δt √(β k)`` of a
    substep; ``max_substeps``: beyond it the stiffness is clamped (``clamped`` says so) — the
    update stays stable, but the rod is then softer than asked and may not hold its style.

    The style is a stable equilibrium only while the stiffness outweighs what the load's moment
    gains as the strand bends (about ``|load| L²`` for a strand of length ``L``): softer rods
    held up against gravity flop over, as a strand would."""
    stiffness: float = field(default=10.0, metadata=setting(
        "rods_stiffness", "Stiffness", "How firmly each strand bends back to its style (as Rod Stiffness "
        "Along Strand draws it, root to tip): lower swings and droops more in a move; too low and upswept "
        "hair cannot hold itself up. Key it to let a style loose for a move", keyed=True, min=1e-4,
        max=1e5, soft_min=0.1, soft_max=1000.0))
    beta: float = field(default=100.0, metadata=setting(
        "rods_response", "Response", "How quickly strands answer a load (the rods' inverse inertia, the "
        "seed's β, growing to the tip): higher is lighter, quicker hair; with Stiffness it sets how many "
        "steps a frame takes", min=1e-3, max=1e6, soft_min=1.0, soft_max=10000.0))
    beta_profile: Profile | None = None
    stiffness_profile: Profile | None = field(default=None, metadata=profile(
        "rods_stiffness", "Rod Stiffness Along Strand", "How stiff Rods bend, root (left) to tip (right), "
        "times Stiffness", "HOLD"))
    damping: float = field(default=4.0, metadata=setting(
        "rods_damping", "Settle", "How quickly strands stop swinging (per second)", min=0.0, max=1e4,
        soft_max=50.0))
    wobble: float = field(default=0.25, metadata=setting(
        "rods_wobble", "Damp Wiggles", "How quickly each joint's own quick wiggle dies, as a share of what "
        "stops it without overshoot: 0 lets stiff hair buzz after a jolt, higher bends it smoothly under "
        "the head's moves", min=0.0, max=1.0, subtype="FACTOR"))
    courant: float = 1.0
    max_substeps: int = field(default=64, metadata=setting(
        "rods_max_substeps", "Steps Limit", "The most steps a frame may take: the steps needed grow with "
        "√(Stiffness × Response); past the limit the stiffness is softened (the bake says so) so it stays "
        "stable", min=1, max=1024))
    # as a wig's dynamics layer: how much of the rods' motion shows (0: the goal exactly), and
    # the Coulomb friction of their contacts (``kernels.response``)
    dynablend: float = field(default=1.0, metadata=setting(
        "rods_dynablend", "Dynablend", "How much of the rods' own motion shows: 0 none (exactly the "
        "magnets' pose), 1 all of it. Key it per shot", keyed=True, min=0.0, max=1.0, subtype="FACTOR"))
    friction: float = field(default=0.3, metadata=FRICTION)

    def __post_init__(self):
        for name in ("stiffness", "beta", "courant"):
            v = getattr(self, name)
            if not np.isfinite(v) or v <= 0:
                raise HairWigError(f"Rods: {name} must be > 0, got {v}")
        for name in ("damping", "wobble"):
            v = getattr(self, name)
            if not np.isfinite(v) or v < 0:
                raise HairWigError(f"Rods: {name} must be >= 0, got {v}")
        for name in ("dynablend", "friction"):
            v = getattr(self, name)
            if not 0 <= v <= 1:
                raise HairWigError(f"Rods: {name} must be in 0..1, got {v}")
        if int(self.max_substeps) < 1:
            raise HairWigError(f"Rods: max substeps must be at least 1, got {self.max_substeps}")
        if self.courant >= 2:
            raise HairWigError(f"Rods: courant must stay below 2 (the update's stability), got {self.courant}")


class AngularRods:
    """Strands of ``n`` points as angular chains (seed 003): bind once on the goal's shape at
    rest (``rest`` (S, n, 3)), then ``step`` frame by frame toward each frame's goal. The state
    is a dict of named arrays (``angles``, ``last``, ``e1``): copy it to resume, compare it to
    check a bake."""

    def __init__(self, rest: np.ndarray, settings: RodSettings, strands: np.ndarray | None = None):
        """``strands``: each rest strand's number in messages (default: its row)."""
        rest = np.asarray(rest, np.float64)
        if rest.ndim != 3 or rest.shape[1] < 2 or rest.shape[2] != 3:
            raise HairWigError(f"Rods: strands must be (strands, points >= 2, 3), got {rest.shape}")
        self.settings = settings
        self.num, self.n = rest.shape[:2]
        m = self.n - 1
        seg = np.linalg.norm(np.diff(rest, axis=1), axis=2)
        if np.any(seg <= 0):
            bad = int(np.flatnonzero((seg <= 0).any(axis=1))[0])
            raise HairWigError(f"Rods: strand {bad if strands is None else int(strands[bad])} has a segment of "
                               f"no length; resample the hair or remove its doubled points{FROM_ZERO}")
        self.seg = seg                     # (S, m): each segment keeps its rest length exactly
        t = (np.arange(m) + 0.5) / m
        beta = settings.beta * (np.ones(m) if settings.beta_profile is None else settings.beta_profile(t))
        # per joint: the strand's stiffness times its segments, so the strand as a whole bends
        # alike however finely it is cut (joints in a row are springs in series)
        k = settings.stiffness * m * (np.ones(m) if settings.stiffness_profile is None
                                      else settings.stiffness_profile(t))
        if np.any(beta <= 0) or np.any(k <= 0):
            raise HairWigError("Rods: the stiffness and inertia profiles must stay above 0 along the strand")
        self.beta = np.asarray(beta, np.float64)[None, :, None]
        self.k = np.asarray(k, np.float64)[None, :, None]
        self._k_per_unit = self.k / settings.stiffness       # the profile times the segments
        self.clamped = False

    def set_stiffness(self, stiffness: float) -> None:
        """A new strand stiffness (keyed): every joint's ``k`` scales with it."""
        if not np.isfinite(stiffness) or stiffness <= 0:
            raise HairWigError(f"Rods: stiffness must be > 0, got {stiffness}")
        self.k = self._k_per_unit * float(stiffness)

    def substeps(self, dt: float) -> tuple[int, np.ndarray]:
        """Substeps for a frame of ``dt`` seconds so that ``Δt √(β k) ≤ courant``, and the
        stiffness used (clamped where even ``max_substeps`` would not do)."""
        s = self.settings
        omega = float(np.sqrt((self.beta * self.k).max()))
        count = max(1, int(np.ceil(dt * omega / s.courant - 1e-12)))
        if count <= s.max_substeps:
            self.clamped = False
            return count, self.k
        self.clamped = True
        count = s.max_substeps
        ceiling = (s.courant * count / dt) ** 2 / self.beta
        return count, np.minimum(self.k, ceiling)

    def rest_angles(self, goal: np.ndarray, root_dir: np.ndarray, e1: np.ndarray, load, k=None):
        """``ϑ`` (S, m, 2) (seed 003, eq. 6): the goal's angles less its loads' moments over
        the stiffness, so the goal is the equilibrium under those loads."""
        k = self.k if k is None else k
        angles = angles_of(goal, root_dir, e1)
        pts, ax1, ax2 = build(goal[:, 0], root_dir, e1, angles, self.seg)
        return angles - moments(pts, load, self.seg, ax1, ax2) / k

    def initial_state(self, goal: np.ndarray) -> dict:
        """At rest on ``goal`` (S, n, 3): angles from it, not moving."""
        goal = np.asarray(goal, np.float64)
        root_dir = goal[:, 1] - goal[:, 0]
        e1 = root_normal(root_dir)
        angles = angles_of(goal, root_dir, e1)
        return {"angles": angles, "last": angles.copy(), "e1": e1}

    def step(self, state: dict, goal: np.ndarray, dt: float, load, hold=None, contact=None,
             friction: float = 0.0, style=None) -> np.ndarray:
        """One frame of ``dt`` seconds toward ``goal`` (S, n, 3) (its roots and root
        directions carry the strands; its shape is the style, through eq. 6's rest angles)
        under ``load`` (per unit length: gravity and forces; (3,), (S, 3) or (S, m, 3)); a
        moving head's swing comes in as a load too: minus the roots' acceleration. ``hold``:
        the load the style is the equilibrium under (eq. 6; default ``load``) — gravity as the
        groom knew it, so wind and swing move the hair and do not become its style.
        ``contact(points)``: how far the colliders push points (S, n, 3) out, (S, n, 3) or
        None, met after every substep (``meet``) with Coulomb ``friction``.
        Updates ``state``; returns the points (S, n, 3)."""
        goal = np.asarray(goal, np.float64)
        count, k = self.substeps(dt)
        h = dt / count
        # the velocity kept each substep: the air's damping, and each joint's own wobble damped at
        # the ratio ``wobble`` of its own frequency √(β k) (internal friction: fast wiggles die
        # within a few of their periods, the strand's slow swing keeps most of its)
        c = np.maximum(0.0, 1.0 - h * (self.settings.damping
                                       + 2.0 * self.settings.wobble * np.sqrt(self.beta * k)))
        root_dir = goal[:, 1] - goal[:, 0]
        # the root frame turns with the goal's root segment, carrying e₁ (no twist)
        e1 = state["e1"] - np.einsum("sk,sk->s", state["e1"], _unit(root_dir))[:, None] * _unit(root_dir)
        e1 = _unit(np.where(np.linalg.norm(e1, axis=1, keepdims=True) > 1e-6, e1, root_normal(root_dir)))
        rest = _f64(self.rest_angles(goal if style is None else style, root_dir, e1, load if hold is None else hold, k))
        a, last = _f64(state["angles"]).copy(), _f64(state["last"]).copy()
        m = self.n - 1
        per_joint = [_f64(np.broadcast_to(x, (1, m, 1)).reshape(m)) for x in (k, c, h * h * self.beta)]
        roots, root_dir, e1 = _f64(goal[:, 0]), _f64(root_dir), _f64(e1)
        loads, seg = _loads(load, self.num, m), _f64(self.seg)
        pts, ax1, ax2 = build(roots, root_dir, e1, a, seg)
        # the substeps as one kernel; with contacts, one substep a launch, each met after it
        for _ in range(1 if contact is None else count):
            rod_substeps(a, last, rest, *per_joint, loads, seg, roots, root_dir, e1,
                         count if contact is None else 1, pts, ax1, ax2)
            if contact is not None:
                push = contact(pts)
                if push is not None:
                    a, last = self.meet(push, pts, ax1, ax2, a, last, goal, root_dir, e1, friction)
                    a, last = _f64(a), _f64(last)
        state["angles"], state["last"], state["e1"] = a, last, e1
        return pts

    def meet(self, push, pts, ax1, ax2, angles, last, goal, root_dir, e1, friction: float):
        """A contact inside a substep (the colliders as the Strands layer meets them): the
        points move by ``push`` (S, n, 3), less, on each pushed point, the substep's slide
        along the surface up to ``friction`` times the push (``kernels.response``'s Coulomb
        law in positions, the push its pressure: a strand pressed on a collider slides only where
        its pull along the surface beats friction times its pressure); each segment is set back to its length root to tip by the
        one follow-the-leader (``_relength``, guided by where the segment was a
        substep ago, as in the Strands layer's substeps), and inverse kinematics turns the
        points back into angles.

        The contact is inelastic in the rods' own coordinates: a strand it touches stops
        turning (its last angles are its angles). Turning kept through a contact goes straight
        back into it — from a standstill a joint's spring moves it 80 % of the way to its rest
        angle in one substep at the default Courant number and its wobble carries it over a
        third past, against a collider the groom lies 5 mm over — and a contact's push read back as
        turning by inverse kinematics is not the strand's turning at all (``_no_faster``).
        Measured on long hair over Suzanne after a head turn, contacts that kept turning (even
        no faster) left strands buzzing along the head at tips 60 m/s in the substeps, 60–300 mm
        a frame, as long as the head stood still. From the contact on, the strand moves as its
        loads and springs pull it, and turns again where it leaves the collider.

        Only the strands pushed are touched; ``pts``, ``ax1``, ``ax2`` (this substep's build)
        are rebuilt for them in place. Returns the angles and the last angles (S, m, 2), new
        arrays where changed."""
        hit = np.flatnonzero(np.abs(push).max(axis=(1, 2)) > 0)
        if hit.size == 0:
            return angles, last
        seg = self.seg[hit]
        roots, rd, frame = goal[hit, 0], root_dir[hit], e1[hit]
        pos = np.ascontiguousarray(pts[hit].transpose(2, 1, 0))                               # (3, n, K)
        prev = build(roots, rd, frame, last[hit], seg)[0].transpose(2, 1, 0)
        was = np.diff(prev, axis=1)                       # each segment a substep ago: the guide
        along = np.diff(goal[hit], axis=1).transpose(2, 1, 0)   # the goal's: where that is zero
        push = push[hit].transpose(2, 1, 0)
        r2 = np.einsum("kns,kns->ns", push, push)
        normal = push / np.sqrt(np.where(r2 > 0, r2, 1.0))
        slid = pos - prev                                 # the substep's move, along the surface
        slid -= np.einsum("kns,kns->ns", slid, normal) * normal
        kept = slid.reshape(3, -1).copy()
        launch(slowed_rows, kept.shape[1], kept, np.sqrt(r2).ravel(), float(friction))   # the slide friction leaves
        pos += push
        pos -= slid - kept.reshape(slid.shape)
        _relength(pos, seg, was, along)
        now = angles_of(pos.transpose(2, 1, 0), rd, frame)
        angles, last = angles.copy(), last.copy()
        angles[hit] = last[hit] = now
        pts[hit], ax1[hit], ax2[hit] = build(roots, rd, frame, now, seg)
        return angles, last


class RodLayer(DynamicsLayer):
    """The Rods dynamics layer of a wig (SPEC §8, seed 003): its strands grouped by point count,
    one ``AngularRods`` per group, stepped on the whole wig toward the wig's pose (the goal).
    Rows (3, P) cross in and out in the wig's point order, world space — the same interface as
    the Strands layer (``strands.StrandLayer``), so the wig runs either.

    What moves the rods besides the goal: gravity and the scene's force fields (evaluated once
    a frame at each segment's middle), and the head's motion as a load — the rods' angles are
    measured in the head's moving frame, so each segment feels minus that frame's acceleration
    where it is (``(H_f − 2 H_{f−1} + H_{f−2}) / Δt²`` applied to its head-local point: the
    head's linear and angular acceleration and the centripetal part of its turn; the Coriolis
    part, which needs the hair's own speed in the frame, is left out). Hair lags when the head
    starts or turns and overshoots when it stops. The style the rods keep is the goal's shape
    under gravity as the groom knew it: the rest gravity turned with the head (eq. 6 with
    ``hold``), so a tilted head lets hair fall, a still one keeps every strand where it is —
    the goal walked out of the colliders where a magnet or key pose lays it inside (``_style``).

    The colliders are met as the Strands layer meets them: inside every substep
    (``bind_colliders``: ``collision.contacts.SurfaceContacts``, the same fast distances and the groom's
    clearances, then ``AngularRods.meet``), so a joint's spring, which settles within a
    substep or two, cannot swing a strand a frame's way into a head or a shoulder between
    contacts; the wig's refinement after the layer places the points by exact distances, and
    ``absorb`` carries what it did back into the angles (a contact, as ``collision.contacts.respond``
    treats it, setting no joint turning faster), so strands resting on the scalp stay on it and
    slide with friction."""

    KEY = "RODS"
    LABEL = "Rods"
    DESCRIPTION = ("Each strand is a chain of stiff segments that bend at their joints and spring back to "
                   "the style (Kim, Lee and Ko's angular rods): styled, curled or upswept hair that must "
                   "keep its shape while it moves")
    SETTINGS = RodSettings
    KEYED = ("dynablend", "stiffness")
    KERNELS = ("angular rods", "collision contacts")

    def __init__(self, model: HairModel, settings: RodSettings):
        super().__init__(model, settings)
        offsets = model.offsets
        counts = np.diff(offsets)
        rest_rows = model.world_rest()
        self.friction = settings.friction
        self.dynablend = settings.dynablend
        self.groups = []
        for n in np.unique(counts):
            strands = np.flatnonzero(counts == n)
            index = offsets[strands][None, :] + np.arange(n)[:, None]          # (n, S) into P
            if n < 2:
                continue                   # a lone point has nothing to bend: it shows the goal
            rest = rest_rows[:, index].transpose(2, 1, 0)                       # (S, n, 3)
            self.groups.append((int(n), index, AngularRods(rest, settings, strands)))
        self._stepped = False              # whether a step has run: ``absorb`` has a state to move
        self.contacts = None

    def bind_colliders(self, colliders) -> None:
        """Meet ``colliders`` (the wig's ``Collider`` objects, head-local) inside the substeps:
        one ``collision.contacts.SurfaceContacts`` per group, the root alone held (the root
        segment turns on its joint)."""
        self.contacts = None
        if colliders:
            self.contacts = [SurfaceContacts(colliders, index, 1, carry=False) for _, index, _ in self.groups]

    @property
    def clamped(self) -> bool:
        """Whether the last step softened a stiffness to stay within ``max_substeps``."""
        return any(rods.clamped for _, _, rods in self.groups)

    def warnings(self) -> list[str]:
        if not self.clamped:
            return []
        return [f"Rods Stiffness × Response needs more steps a frame than the Steps Limit "
                f"({self.settings.max_substeps}): it was softened to stay stable, so the hair may not hold "
                f"its style; raise Steps Limit or lower Stiffness or Response"]

    def key(self, values: dict) -> None:
        if values.get("dynablend") is not None:
            self.set_dynablend(values["dynablend"])
        if values.get("stiffness") is not None:
            self.set_goal_stiffness(values["stiffness"])

    def initial_state(self, goal: np.ndarray, frame: LayerFrame) -> dict:
        return self._initial_world(frame.world(goal), frame.gravity, rotation_of(frame.head_rest), frame.head_inv)

    def step(self, state: dict, goal: np.ndarray, frame: LayerFrame, out: np.ndarray) -> None:
        shown = self._step_world(state, frame.world(goal), frame.dt, frame.gravity, frame.head_turn(),
                                 frame.accel(), head_inv=frame.head_inv)
        transform_rows(frame.head_inv, shown, out)

    def absorb(self, state: dict, moved: np.ndarray, frame: LayerFrame) -> None:
        self._absorb_world(state, frame.world_moves(moved),
                           self.settings.friction)

    def set_dynablend(self, dynablend: float) -> None:
        self.dynablend = float(np.clip(dynablend, 0.0, 1.0))

    def set_goal_stiffness(self, stiffness: float) -> None:
        """The keyed Stiffness: how firmly the rods spring back to the goal's style (SPEC §8's
        goal stiffness; each joint's ``k`` scales with it, its substeps follow)."""
        for _, _, rods in self.groups:
            rods.set_stiffness(stiffness)

    def _initial_world(self, goal_rows: np.ndarray, gravity, head_turn, head_inv=None) -> dict:
        """Every group at rest on the goal (``head_turn``: the head's rotation at rest;
        ``head_inv``: world → head-local now): ``'<n>:angles'``, ``'<n>:last'``, ``'<n>:e1'``, its
        roots and root directions (``'<n>:root'``, ``'<n>:root_dir'``); ``'turn'`` the head's
        rotation now, ``'head'`` its matrix now and a frame ago (2, 4, 4) and ``'hold'`` the
        gravity the style was groomed under, in the head's frame."""
        rest = np.asarray(head_turn, np.float64)
        turn = rest if head_inv is None else rotation_of(np.linalg.inv(np.asarray(head_inv, np.float64)))
        head = np.eye(4) if head_inv is None else np.linalg.inv(np.asarray(head_inv, np.float64))
        state = {"turn": turn.copy(), "hold": rest.T @ np.asarray(gravity, np.float64),
                 "head": np.stack([head, head])}
        for n, index, rods in self.groups:
            goal = goal_rows[:, index].transpose(2, 1, 0)
            for name, a in rods.initial_state(goal).items():
                state[f"{n}:{name}"] = a
            state[f"{n}:root"] = goal[:, 0].copy()
            state[f"{n}:root_dir"] = goal[:, 1] - goal[:, 0]
        return state

    def _step_world(self, state: dict, goal_rows: np.ndarray, dt: float, gravity, head_turn, accel=None,
                    out: np.ndarray | None = None, head_inv=None) -> np.ndarray:
        """One frame of every group toward ``goal_rows`` (3, P) world; the shown rows (3, P).
        ``accel(x, v)``: the force fields' acceleration at rows ``x`` moving at ``v`` (3, ...)."""
        out = np.array(goal_rows, np.float64) if out is None else out
        head = state["head"][1] if head_inv is None else np.linalg.inv(np.asarray(head_inv, np.float64))
        # the head frame's acceleration at a world point x: frame[:3, :3] x + frame[:3, 3]
        frame_accel = (head - 2 * state["head"][1] + state["head"][0]) @ np.linalg.inv(head) / (dt * dt)
        turn = np.asarray(head_turn, np.float64)
        spin = turn @ state["turn"].T                  # how the head turned since the last frame
        hold = turn @ state["hold"]
        gravity = np.asarray(gravity, np.float64)
        blend = self.dynablend
        now = None if head_inv is None else np.asarray(head_inv, np.float64)
        self._stepped = True
        for g, (n, index, rods) in enumerate(self.groups):
            goal = goal_rows[:, index].transpose(2, 1, 0)
            root, was = goal[:, 0], state[f"{n}:root"]
            mid = 0.5 * (goal[:, 1:] + goal[:, :-1])
            load = gravity - (mid @ frame_accel[:3, :3].T + frame_accel[:3, 3])   # (S, m, 3)
            e1 = state[f"{n}:e1"] @ spin.T
            if accel is not None:
                load += self._field_load(rods, state, n, goal, e1, root - was, dt, accel)
            part = {"angles": state[f"{n}:angles"], "last": state[f"{n}:last"], "e1": e1}
            style = goal if not self.contacts else self._style(g, np.eye(4) if now is None else now, goal, rods.seg)
            shown = rods.step(part, goal, dt, load, hold, self._contact(g, now), self.friction, style=style)
            for name in ("angles", "last", "e1"):
                state[f"{n}:{name}"] = part[name]
            state[f"{n}:root"] = root.copy()
            state[f"{n}:root_dir"] = goal[:, 1] - goal[:, 0]
            if blend < 1:
                shown = goal + blend * (shown - goal)
            out[:, index] = shown.transpose(2, 1, 0)
        state["turn"] = turn.copy()
        state["head"] = np.stack([state["head"][1], head])
        return out

    STYLE_ROUNDS = 4                       # pushes and length passes that walk the style out

    def _style(self, g: int, head_inv, goal: np.ndarray, seg: np.ndarray) -> np.ndarray:
        """Group ``g``'s style (S, n, 3): the ``goal`` walked out of the colliders as the
        substeps meet them (their push, then every segment set back to its length ``seg`` root
        to tip along the goal's own), ``STYLE_ROUNDS`` times at most — the goal itself where
        nothing touches, so a groom at rest keeps its style exactly.

        A magnet or a key pose may lay the goal through the head (measured on long hair over
        Suzanne, Rods, after a 90° head turn: a head-parented magnet held one strand's goal
        6-12 mm inside the upper lip). A joint's spring turns its strand most of the way to its
        rest angle in one substep, so a style inside the lip drove the strand 20-44 mm into it
        every substep, and the contact pushed it out to whichever side of the lip was nearer,
        alternately: its tail flipped between two places 19 mm apart every frame, the head
        standing still. A style outside is an equilibrium the strand can reach. (Walked out to
        the surface on the strand's own side instead — which depends on where the strand is —
        the style and the strand chased each other: tips cycled 86-117 mm a frame.)"""
        contacts = self.contacts[g]
        contacts.move(head_inv, head_inv)
        contacts.begin()
        p = goal
        along = np.diff(goal, axis=1).transpose(2, 1, 0)
        for _ in range(self.STYLE_ROUNDS):
            push = contacts(np.ascontiguousarray(p.transpose(2, 1, 0)), 1.0)
            if push is None:
                break
            pos = np.ascontiguousarray(p.transpose(2, 1, 0) + push)
            _relength(pos, seg, along, along)
            p = np.ascontiguousarray(pos.transpose(2, 1, 0))
        contacts.begin()
        return p

    def _contact(self, g: int, head_inv):
        """Group ``g``'s contacts as ``AngularRods.step`` calls them — points (S, n, 3) world in,
        the push (S, n, 3) out — or None without colliders. The rods are stepped in the head's
        frame of this frame (their roots and root frames are the goal's now), so the colliders
        are met where they are now, through every substep (``head_inv``: world → head-local)."""
        if not self.contacts:
            return None
        contacts = self.contacts[g]
        now = np.eye(4) if head_inv is None else head_inv
        contacts.move(now, now)
        contacts.begin()

        def push_out(points):
            push = contacts(np.ascontiguousarray(points.transpose(2, 1, 0)), 1.0)
            return None if push is None else push.transpose(2, 1, 0)
        return push_out

    @staticmethod
    def _field_load(rods: AngularRods, state: dict, n: int, goal, e1, root_moved, dt, accel):
        """The force fields' load (S, m, 3) on each segment's middle where the rods are now,
        moving as the last substep moved them plus the root's motion."""
        root_dir = goal[:, 1] - goal[:, 0]
        h = dt / rods.substeps(dt)[0]
        now = build(goal[:, 0], root_dir, e1, state[f"{n}:angles"], rods.seg)[0]
        before = build(goal[:, 0], root_dir, e1, state[f"{n}:last"], rods.seg)[0]
        mid = 0.5 * (now[:, 1:] + now[:, :-1])
        vel = 0.5 * ((now - before)[:, 1:] + (now - before)[:, :-1]) / h + root_moved[:, None, :] / dt
        a = accel(np.ascontiguousarray(mid.transpose(2, 1, 0)), np.ascontiguousarray(vel.transpose(2, 1, 0)))
        return np.asarray(a, np.float64).transpose(2, 1, 0)

    def _absorb_world(self, state: dict, delta_rows: np.ndarray, friction: float) -> None:
        """Carry what refinement did to the shown pose (``delta_rows`` (3, P) world: a
        collider's push) into the rods: the touched strands' points now and a substep ago, as
        built from their angles, meet the push as a contact (``collision.contacts.respond``: no
        bounce, Coulomb friction), and inverse kinematics turns both back into angles (lengths
        stay exact: only directions are read), no joint turning faster than it did
        (``_no_faster``). Strands not touched keep their state exactly."""
        if not self._stepped:
            return
        for n, index, rods in self.groups:
            delta = delta_rows[:, index].transpose(2, 1, 0)                     # (S, n, 3)
            hit = np.flatnonzero(np.abs(delta).max(axis=(1, 2)) > 0)
            if hit.size == 0:
                continue
            e1 = state[f"{n}:e1"][hit]
            root = state[f"{n}:root"][hit]
            angles, last = state[f"{n}:angles"][hit], state[f"{n}:last"][hit]
            seg = rods.seg[hit]
            root_dir = state[f"{n}:root_dir"][hit]          # the root frame the last step had
            now = build(root, root_dir, e1, angles, seg)[0]
            before = build(root, root_dir, e1, last, seg)[0]
            pos, prev = now.transpose(2, 1, 0).copy(), before.transpose(2, 1, 0).copy()
            respond(pos, prev, delta[hit].transpose(2, 1, 0).copy(), friction)
            now = angles_of(pos.transpose(2, 1, 0), root_dir, e1)
            state[f"{n}:angles"][hit] = now
            state[f"{n}:last"][hit] = now - _no_faster(angles_of(prev.transpose(2, 1, 0), root_dir, e1), now,
                                                       angles - last)

