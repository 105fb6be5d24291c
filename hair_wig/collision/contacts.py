"""Contacts inside a solver's substeps (SPEC §6, §8): the one pass that meets every collider with
a group of strands — points and segments, by the colliders' fast distances — and says how far
each point moved, for the solver's own response (``strands.VerletStrands.collide``, the Rods'
angles). Strands and Rods both meet their colliders here.
"""

from __future__ import annotations

import numpy as np

from ..kernels import contacts as contact_kernels
from ..kernels.field import launch
from ..kernels.response import met_rows
from ..spaces import transform_rows
from .colliders import groom_limits, kernel_colliders
from .field import MeshField
from .rows import _dot, _take_rows


class SurfaceContacts:
    """The colliders as the strand solvers meet them inside their substeps (Strands, Rods) (SPEC §6, §8), segment
    against surface: every point, and every segment at the deepest of its middle and quarter
    points, is pushed out to its collision surface — so no segment passes through a feature
    thicker than a quarter of it (an ear's rim, a finger) with both its ends outside. A
    segment's push moves both its ends so that its deepest point moves by it (position-based
    dynamics' split by the ends' shares ``(1 − t, t)``).

    Distances are the collider's fast ones (``Collider.fast_distance``: the grid's trilinear
    value; exact where the grid cannot see a collider that moves relative to the head, with
    ``carry``), read at every substep; the frame's refinement after the layer places the points
    by exact distances. Each point's and each segment's surface is ``min(offset, rest
    clearance)`` by the same fast distance at rest (the groom is sacred). ``carry``: a collider
    that moved relative to the head since the frame before is met on its way through the
    substeps (``contact_maps``).

    ``colliders``: the wig's ``Collider`` objects (head-local); ``index`` (n, S): the group's
    wig points; ``fixed``: how many points from the root the constraints hold (pinned root, and
    the root's direction). ``move`` sets, every frame, where the head was and is: the
    colliders move with it through the substeps as the goal does (linearly), so a turning head
    sweeps through the hair a substep at a time, not a frame's turn at once.

    A call is one kernel (``kernels.contacts.surface_contacts``) where every collider is a
    ``MeshField``'s and the points are float64; else (a RAY collider) the numpy code,
    ``_call_numpy``, which is also the kernel's reference. ``every``: look at every point at
    every substep (the skipping off); ``looked``: the points and segments looked at, all calls."""

    SAMPLES = contact_kernels.SAMPLES    # where a segment is met: (0.5, 0.25, 0.75), the middle first
    LIPSCHITZ = 2.0                      # the fast distance's slope at most (√3 for exact nodes)

    def __init__(self, colliders, index: np.ndarray, fixed: int, carry: bool = True):
        self.colliders = list(colliders)
        self.carry = bool(carry)         # carry moving colliders through the substeps (``contact_maps``)
        self.index = index
        self.fixed = int(fixed)
        self._head = (np.eye(4), np.zeros((4, 4)))     # local → world at the last frame, and its change
        self._now = (np.eye(4), np.eye(4))               # world → head-local at this frame, and back
        self._limits = {}                # collider → (the rest rows it was bound on, limits)
        self._seen = {}                  # (collider, kind) → where each was last looked at, its room
        movable = (np.arange(index.shape[0]) >= self.fixed).astype(np.float64)
        self.w_a, self.w_b = movable[:-1, None], movable[1:, None]          # (n − 1, 1)
        self.touched = 0                 # points and segments pushed in the last call
        self.looked = 0                  # points and segments looked at, all calls
        self.every = False
        # the kernel's: its colliders (the fields and maps they were made of) and limits, and
        # per collider where each point and segment was last looked at, and its room then
        self._kernel_cols = (None, None)
        self._kernel_limits = (None, None, None)
        self._records = None
        self._buffers = None
        self._fresh = True

    def deepest(self, a: np.ndarray, b: np.ndarray, distance, first=None):
        """The deepest of the sample points of segments ``a → b`` (3, K): ``t`` (K,) and its
        distance (K,) by ``distance(points)``; ``first``: the middle's, if known."""
        ab = b - a
        best_t, best_d = None, None
        for t0 in self.SAMPLES:
            d = first if (best_d is None and first is not None) else distance(a + t0 * ab)
            if best_d is None:
                best_t, best_d = np.full(len(d), t0), d
            else:
                lower = d < best_d
                best_t[lower], best_d[lower] = t0, d[lower]
        return best_t, best_d

    def _limits_of(self, c):
        """Each free point's (n − fixed, S) and each segment's (n − 1, S) collision surface
        (``collision.groom_limits``), their rest clearances read by the fast distance the contacts
        collide by, so a groom at rest meets no contact."""
        rest = c.rest_rows
        known = self._limits.get(id(c))
        if known is None or known[0] is not rest:
            at = rest[:, self.index].astype(np.float64)

            def distance(p):
                return c.fast_distance(p, rest=True)

            d_points = distance(at[:, self.fixed:].reshape(3, -1))
            _, d_seg = self.deepest(at[:, :-1].reshape(3, -1), at[:, 1:].reshape(3, -1), distance)
            known = self._limits[id(c)] = (rest, groom_limits(d_points, c.offset), groom_limits(d_seg, c.offset))
        return known[1], known[2]

    def move(self, was: np.ndarray, now: np.ndarray) -> None:
        """The head's world → head-local maps at the last frame and at this one."""
        h0, h1 = np.linalg.inv(was), np.linalg.inv(now)
        self._head = (h0, h1 - h0)
        self._now = (np.asarray(now, np.float64), h1)

    def _head_at(self, f: float):
        """World → head-local at the fraction ``f`` of the frame, and its inverse: the head's
        local → world map blended linearly, as the goal's points move (so hair riding on the
        head keeps its clearance through the substeps)."""
        if f >= 1:
            return self._now
        h0, dh = self._head
        h = h0 + f * dh
        return np.linalg.inv(h), h

    def begin(self) -> None:
        """A new frame: where the points were at the last look is forgotten (each frame starts
        by looking at every point, so a resumed bake meets the same contacts)."""
        self._seen = {}
        self._fresh = True

    def _look(self, c, key, now: np.ndarray, spread: np.ndarray | None = None) -> np.ndarray:
        """Which of the points ``now`` (3, K) head-local — free points, or segments' middles with
        ``spread`` (K,) their half lengths — must be looked at this substep: those that moved
        (and grew) since their last look by as much as their room then. The fast distance
        changes by at most LIPSCHITZ times a point's travel (a trilinear interpolant of exact
        node distances: each partial derivative is at most 1), so the others cannot have reached
        their surface."""
        seen = self._seen.get(key)
        if seen is None or self.every or (self.carry and c.swept_from is not None):
            return np.arange(now.shape[1])
        ref, ref_spread, room = seen
        step = now - ref
        reach = self.LIPSCHITZ * np.sqrt(_dot(step, step))
        if spread is not None:
            reach += spread - ref_spread
        return np.flatnonzero(reach >= room)

    def _saw(self, key, now, look, room, spread=None) -> None:
        """Record the points ``look`` as seen at ``now`` with ``room`` (their own) to spare."""
        seen = self._seen.get(key)
        if seen is None:            # the frame's first look is at every point: keep them as they are
            self._seen[key] = (now.copy(), np.zeros(now.shape[1]) if spread is None else spread.copy(), room)
            return
        ref, ref_spread, all_room = seen
        ref[:, look] = _take_rows(now, look)
        if spread is not None:
            ref_spread[look] = spread.take(look)
        all_room[look] = room

    def __call__(self, x: np.ndarray, f: float = 1.0):
        """How far (3, n, S) world the colliders push the points ``x`` (3, n, S) world out at the
        fraction ``f`` of the frame, or None where nothing touches: ``_call_numpy``'s result by
        one kernel (``kernels.contacts``), the points taken into head-local space and the push
        back into the world as there."""
        if not self.colliders:
            return None
        if x.dtype != np.float64 or not all(isinstance(c.field, MeshField) for c in self.colliders):
            return self._call_numpy(x, f)
        shape = x.shape
        n, num = shape[1], shape[2]
        m, back = self._head_at(f)
        q, push, touched, looked = self._scratch(shape)
        transform_rows(m, x.reshape(3, -1), q.reshape(3, -1))                          # head-local
        cols, lim_p, lim_s = self._kernel_colliders()
        seen = self._kernel_records(lim_p.shape, lim_s.shape)
        fmaps, moving = self._maps_at(f)
        contact_kernels.meet(q, self.fixed, cols, fmaps, moving, lim_p, lim_s, *self._shares(n), self._fresh,
                             self.every, self.LIPSCHITZ, seen, push, touched, looked)
        self._fresh = False
        self.touched = int(touched.sum())
        self.looked += int(looked.sum())
        if not self.touched:
            return None
        return transform_rows(back, push.reshape(3, -1), np.empty((3, n * num)), translate=False).reshape(shape)

    def substep_parts(self, shape: tuple, substeps: int):
        """What a solver's substep kernel needs to meet the colliders itself inside a frame's
        ``substeps`` substeps of points shaped ``shape`` (3, n, S) float64 (``kernels.verlet.
        verlet_substeps_met``), or None where only ``__call__`` can (a RAY collider): the head's
        world → head-local maps and back at each substep's end (``_head_at``), scratch, and the
        kernel's colliders, limits and the segments' ends' shares. ``launch_parts`` adds a
        launch's own."""
        if not self.colliders or not all(isinstance(c.field, MeshField) for c in self.colliders):
            return None
        maps, backs = np.empty((substeps, 4, 4)), np.empty((substeps, 4, 4))
        cmaps = np.empty((substeps, len(self.colliders), 2, 4, 4))
        for i in range(substeps):
            maps[i], backs[i] = self._head_at((i + 1) / substeps)
            cmaps[i], moving = self._maps_at((i + 1) / substeps)
        q, push, _, _ = self._scratch(shape)
        cols, lim_p, lim_s = self._kernel_colliders()
        return (maps, backs, q, push, self.fixed, cols, cmaps, moving, lim_p, lim_s, *self._shares(shape[1]))

    def launch_parts(self, parts: tuple) -> tuple:
        """``substep_parts`` and a launch's own: whether it is the frame's first look, the
        skipping's rule, the records of the last looks and the counts' arrays (``counted``
        reads them after it)."""
        touched, looked = self._scratch(parts[2].shape)[2:]
        seen = self._kernel_records(parts[8].shape, parts[9].shape)
        fresh, self._fresh = self._fresh, False
        return (*parts, fresh, self.every, self.LIPSCHITZ, *seen, touched, looked)

    def counted(self) -> None:
        """A substep kernel's launch done: its counts kept as a call's are."""
        touched, looked = self._buffers[2:]
        self.touched = int(touched.sum())
        self.looked += int(looked.sum())

    def _scratch(self, shape: tuple):
        """The points head-local and their push (3, n, S), and each strand's counts (S,): kept
        from call to call (fresh memory a call costs its pages' first touches)."""
        if self._buffers is None or self._buffers[0].shape != shape:
            num = shape[2]
            self._buffers = (np.empty(shape), np.empty(shape), np.empty(num, np.int64), np.empty(num, np.int64))
        return self._buffers

    def _maps_at(self, f: float):
        """Each collider's maps at the fraction ``f`` of the frame and how it moves
        (``contact_maps``)."""
        return contact_maps(self.colliders, f, self.carry)

    def _at(self, f: float):
        """The fraction ``Collider.fast_distance`` reads a collider at: ``f``, or None (where it
        ends the frame, by its grid) without ``carry``."""
        return f if self.carry else None

    def _shares(self, n: int):
        """Each segment's ends' shares of its push (n − 1,) each, as the numpy code broadcasts
        them."""
        return tuple(np.ascontiguousarray(np.broadcast_to(w, (n - 1, 1))[:, 0], np.float64)
                     for w in (self.w_a, self.w_b))

    def _kernel_colliders(self):
        """The kernel's colliders (``colliders.kernel_colliders``), made again when a
        collider's field or map changed, and their limits (C, (n − fixed) S), (C, (n − 1) S)."""
        now = [(c.field, c.to_field) for c in self.colliders]
        made, cols = self._kernel_cols
        if made is None or any(a is not b or t is not u for (a, t), (b, u) in zip(made, now)):
            cols = kernel_colliders(self.colliders)
            self._kernel_cols = (now, cols)
        limits = [self._limits_of(c) for c in self.colliders]
        known, lim_p, lim_s = self._kernel_limits
        if known is None or any(a is not b for pair, was in zip(limits, known) for a, b in zip(pair, was)):
            lim_p = np.stack([p for p, _ in limits])
            lim_s = np.stack([s for _, s in limits])
            self._kernel_limits = (limits, lim_p, lim_s)
        return cols, lim_p, lim_s

    def _kernel_records(self, points: tuple, segments: tuple):
        """The kernel's records of the last looks (``_look``): each free point's place and room
        (C, 3, K), (C, K), each segment's middle, half length and room; filled at the frame's
        first call (``begin``)."""
        r = self._records
        if r is None or r[1].shape != points or r[4].shape != segments:
            c, k = points
            _, m = segments
            r = self._records = (np.empty((c, 3, k)), np.empty(points), np.empty((c, 3, m)), np.empty(segments),
                                 np.empty(segments))
            self._fresh = True
        return r

    def _call_numpy(self, x: np.ndarray, f: float = 1.0):
        """``__call__`` in numpy, collider by collider: RAY colliders' path, and the plain
        reference the kernel is tested against (tests/test_kernels_contacts.py)."""
        if not self.colliders:
            return None
        shape = x.shape
        n, num = shape[1], shape[2]
        m, back = self._head_at(f)
        q = transform_rows(m, x.reshape(3, -1), np.empty((3, n * num))).reshape(shape)   # head-local
        start = q.copy()
        touched = 0
        for c in self.colliders:
            lim_points, lim_seg = self._limits_of(c)
            tol = c.tolerance
            free = q[:, self.fixed:].reshape(3, -1)
            look = self._look(c, (id(c), "points"), free)
            self.looked += look.size
            if look.size:
                at = _take_rows(free, look)
                room = c.fast_distance(at, at=self._at(f)) - lim_points.take(look)
                self._saw((id(c), "points"), free, look, room)
                inside = np.flatnonzero(room < -tol)
                if inside.size:
                    d, g = c.fast_distance(_take_rows(at, inside), direction=True, at=self._at(f))
                    k = look.take(inside)
                    free[:, k] += g * (lim_points.take(k) - d)
                    q[:, self.fixed:] = free.reshape(3, n - self.fixed, num)
                    touched += k.size
            a, b = q[:, :-1].reshape(3, -1), q[:, 1:].reshape(3, -1)
            mid = 0.5 * (a + b)
            ab = b - a
            half = 0.5 * np.sqrt(_dot(ab, ab))
            look = self._look(c, (id(c), "segments"), mid, half)
            self.looked += look.size
            if look.size == 0:
                continue
            # a middle farther than half the segment past its surface keeps the segment out
            d_mid = c.fast_distance(_take_rows(mid, look), at=self._at(f))
            room = d_mid - half.take(look) - lim_seg.take(look)
            self._saw((id(c), "segments"), mid, look, room, half)
            keep = np.flatnonzero(room < 0)
            near, d_mid = look.take(keep), d_mid.take(keep)
            if near.size == 0:
                continue
            t, d = self.deepest(_take_rows(a, near), _take_rows(b, near), lambda p: c.fast_distance(p, at=self._at(f)), d_mid)
            inside = np.flatnonzero(d < lim_seg.take(near) - tol)
            if inside.size == 0:
                continue
            k, t = near.take(inside), t.take(inside)
            p = _take_rows(a, k) + t * _take_rows(ab, k)
            d, g = c.fast_distance(p, direction=True, at=self._at(f))
            push = g * (lim_seg.take(k) - d)
            wa = np.broadcast_to(self.w_a, (n - 1, num)).ravel().take(k)
            wb = np.broadcast_to(self.w_b, (n - 1, num)).ravel().take(k)
            # the point at t moves by the push: (1 − t) Δa + t Δb = push (an end takes at most
            # twice it: a lone movable end far from the point moves it less, and the next
            # substep goes on)
            denom = np.maximum(wa * (1 - t) ** 2 + wb * t * t, 0.25)
            ends_a, ends_b = np.zeros_like(a), np.zeros_like(b)
            ends_a[:, k] = push * (wa * (1 - t) / denom)
            ends_b[:, k] = push * (wb * t / denom)
            q[:, :-1] += ends_a.reshape(3, n - 1, num)
            q[:, 1:] += ends_b.reshape(3, n - 1, num)
            touched += k.size
        self.touched = touched
        if not touched:
            return None
        q -= start
        return transform_rows(back, q.reshape(3, -1), np.empty((3, n * num)), translate=False).reshape(shape)


def moving_kinds(colliders) -> np.ndarray:
    """How each collider moves relative to the head (C,) int8 (``kernels.contacts.MAPPED``,
    ``SWEPT``, 0: not), as the contacts' kernels read it."""
    return np.array([contact_kernels.SWEPT if c.swept_from is not None else
                     contact_kernels.MAPPED if c.sweeping else 0 for c in colliders], np.int8)


def contact_maps(colliders, f: float, carry: bool = True):
    """Each collider's head-local -> field map and back (C, 2, 4, 4) at the fraction ``f`` of the
    frame and how it moves relative to the head (C,) int8, as the contacts' kernels read them.
    With ``carry`` (the Strands substeps) a collider that moved since the frame before is carried
    through the substeps from where it was (``Collider.maps_at``), as the head is, and SWEPT: every
    point looked at, exactly where its grid is in doubt. Without (Rods, which meet their colliders
    once a substep where the frame ends; Wisps) it is met where it ends the frame, by its grid, as
    one that keeps still (MAPPED) — measured for the Wisps: against a plate swept through hanging
    hair they went through it alike, and on Suzanne's fast turn with her sockets filled, carried
    shoulders left their tips swinging 63 cm a frame ten frames after the stop (13 cm)."""
    kinds = moving_kinds(colliders)
    if not carry:
        return (np.ascontiguousarray(np.stack([c.maps_at(1.0) for c in colliders])),
                np.minimum(kinds, contact_kernels.MAPPED))
    return np.ascontiguousarray(np.stack([c.maps_at(f) for c in colliders])), kinds


def respond(pos: np.ndarray, prev: np.ndarray, delta: np.ndarray, friction: float) -> None:
    """A contact's push ``delta`` (3, n, S) on positions ``pos`` with last positions ``prev``
    (both in place): the points move by it, and their motion since ``prev`` meets the
    contact (``kernels.response.met``: the part that went into the push taken out, no
    bounce, and Coulomb friction taking ``friction · |that part|`` off the sliding part, no
    more than it has), so a strand pressed on the scalp by gravity slides as ``friction · g``
    slows it, whatever the substeps. Points not pushed keep their state exactly."""
    r2 = np.einsum("kns,kns->ns", delta, delta)
    at = np.flatnonzero(r2 > 0)
    if at.size == 0:
        return
    # only the pushed points, as rows (3, K): a contact touches few of them
    flat_pos, flat_prev = pos.reshape(3, -1), prev.reshape(3, -1)
    x, push = flat_pos[:, at], delta.reshape(3, -1)[:, at]
    moved = x - flat_prev[:, at]
    launch(met_rows, at.size, moved, push / np.sqrt(r2.ravel()[at]), float(friction), moved)    # few: one thread
    x += push
    flat_pos[:, at] = x
    flat_prev[:, at] = x - moved
