"""Refinement's collision-and-length walk (SPEC §6.4): length and collision as constraints
together, so collision never stretches hair. Per segment, on strands of one point count: one walk
of every strand from root to tip, each point placed at its segment's length from the one before
(follow-the-leader) and out of every collider — set back on its length on the contact's tangent
plane, lifted with its chain where a contact meets it head-on (with a layer whose substeps give
alike), swung out of creases, and kept where the children grown from a guide are outside too.
Otherwise (the whole-strand length, mixed point counts) collision and length alternate, ending on
length. The wig calls ``run`` on the strands it steps after compression and length.
"""

from __future__ import annotations

import math

import numpy as np

from .chain import KEPT, RIDGE, ROUNDS, SETTLING, least_motion, settled
from .children import Children, neighbourhood, sag, transplant, turns
from .collision import Collider, MeshField, kernel_colliders
from .kernels.field import launch
from .kernels.response import held_rows
from .kernels.walk import (CROSS_FRICTION, CROSS_STEPS, CROSS_TURN, NO_KIDS, PULL_REACH, PULL_ROUNDS, THROUGH_TURN,
                           WRAP_HALVINGS, SEGMENT_AT, SEGMENT_ROUNDS, SEGMENT_TURN, cross_paths, walk_strands)
from .spaces import transform_points


class CollisionWalk:
    """The walk of a wig's strands against its colliders.

    Parameters
    ----------
    colliders : list of Collider
        The wig's colliders (head-local), the list the wig keeps (shared).
    length : LengthControl or None
        The wig's length control (None: collision alone).
    iterations : int
        Rounds of contacts per point, at most (``collision_iterations``).
    lifts : bool
        Lift a chain that meets a contact head-on (``_lift_steep``): the dynamics layer's substeps
        give alike (``DynamicsLayer.LIFTS``).
    not_root, strand_of_point : (P,)
        Per point: not a root; its strand.
    uniform : int
        The strands' one point count under per-segment length (0: none).
    """

    def __init__(self, colliders: list, length, iterations: int, lifts: bool, not_root: np.ndarray,
                 strand_of_point: np.ndarray, uniform: int):
        self.colliders = colliders
        self.length = length
        self.iterations = iterations
        self.lifts = lifts
        self.not_root = not_root
        self.strand_of_point = strand_of_point
        self.uniform = uniform
        self.children = None          # (K, 3, S) float32: each guide's children's roots (children.py)
        self._children_note = None
        self._children_turn = None    # (K, 3, 3, S) float32: their turns (Follow Surface Normal)
        self._children_margin = None
        # points the walk kernel's running bounds could not clear (looked up), and the chains it
        # lifted (with a layer that lifts), since set to 0
        self.looked = self.stops = 0
        self.crossed = 0              # points continuous contact held back, last run
        # (3, C) float32, last run: at each point a contact pushed, the unit direction of its
        # last push (zero elsewhere) — what a layer that feels only its contacts takes back
        # (``Wig._contacts_only``)
        self.pushes = None
        self._start = 0
        # Coulomb friction of continuous contact's hold (the layer's Friction where it has one)
        self.friction = CROSS_FRICTION
        # how far meeting its samples may turn a segment a step (``_turn_at_most``): π, all the
        # way, unless a dynamics layer carries what is left on to the next step
        self.turn = math.pi
        self._previous = None         # (3, P) float32: where the points ended the last step (run)

    @property
    def note(self) -> str | None:
        """Why the children grown from the strands are not kept out, if they are not."""
        return self._children_note

    def bind_neighbourhood(self, children: Children, on_head: bool, rest_rows: np.ndarray, offsets: np.ndarray,
                           to_local: np.ndarray, samples: int, length_mode: str) -> None:
        """Each guide's samples of the children it leads (children.py): their roots' offsets
        (head-local) and, where Interpolate Hair Curves follows the surface normal, the turn
        from the guide's root normal to theirs (the head's normals where they are rooted)."""
        if not self.uniform:
            self._children_note = (
                f"the {len(children.roots)} curves grown from its strands (children) are not kept out of "
                f"the colliders: that needs Keep Length per segment and strands of one point count "
                f"(these have {'Whole Strand' if length_mode != 'SEGMENT' else 'several counts'}); "
                f"raise Head Offset if they show inside")
            return
        roots = rest_rows[:, offsets[:-1]].astype(np.float64)           # (3, G)
        kids = transform_points(np.asarray(children.roots, np.float64), to_local)
        near, which = neighbourhood(roots.T, kids, samples)
        self.children = near.astype(np.float32)
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

    def bind_children(self, c: Collider) -> None:
        """The children's limits on collider ``c``, from the rest pose it was bound to."""
        if self.children is not None:
            c.bind_children(self.children, self._children_turn, self.uniform, self._children_margin)

    @property
    def walks(self) -> bool:
        """Whether length and collision are one root-to-tip walk (per-segment length on strands
        of one point count)."""
        return self.length is not None and self.length.mode == "SEGMENT" and bool(self.length.uniform)

    def maps(self) -> np.ndarray:
        """Each collider's head-local -> field map this frame (K, 4, 4) float64: what continuous
        contact (``cross``) needs of this frame at the next."""
        return np.stack([np.eye(4) if c.to_field is None else np.asarray(c.to_field, np.float64)
                         for c in self.colliders])

    def sweeps(self, maps) -> np.ndarray:
        """Which colliders (K,) bool moved relative to the head since the frame whose maps were
        ``maps`` (``maps()`` then; None: none). Continuous contact meets those alone: a collider
        sweeping through where the hair was (a hand, a plate, a hat's brim). Hair a solver moves
        through a collider that keeps still relative to the head (the head itself, in a turn the
        hair lags) is the solver's own contacts' and refinement's push to meet: held back there
        by a contact the solver does not feel, it tore away from its held place later (a 27 cm
        pop of Springs hair after Suzanne's fast turn)."""
        if maps is None or len(maps) != len(self.colliders):
            return np.zeros(len(self.colliders), bool)
        return np.array([not np.array_equal(a, b) for a, b in zip(maps, self.maps())])

    def cross(self, p, span, last, maps, sweeps) -> int:
        """Continuous contact (``kernels.walk.cross_paths``, SPEC §6.3): the points ``p`` (3, C),
        the wig's ``span``, whose path from where they ended the last frame (``last`` (3, P)
        head-local, ``maps``: ``maps()`` then) crossed a collider, slid from where they met it,
        in place, before the walk places them. Returns how many slid. Colliders of the patent's
        rays (not a mesh's field) have no distance to advance by: ``run`` passes none here."""
        rows = p if p.flags.c_contiguous else np.ascontiguousarray(p)
        moved = np.empty(rows.shape[1], np.int64)
        cross_paths(rows, span.start or 0, last, maps, sweeps, self.not_root, kernel_colliders(self.colliders),
                    self.colliders[0].rest_rows, float(self.friction), moved)
        if rows is not p:
            p[...] = rows
        return int(moved.sum())

    def run(self, p, base, span, first_strand, last=None, maps=None) -> None:
        """Collision and length as constraints together (SPEC §6.4). Per segment: one walk of
        every strand from root to tip, each point placed at its segment's length from the one
        before (follow-the-leader) and out of every collider, so collision never stretches hair.
        With the whole-strand length mode, length (the strand's scale) and collision alternate
        instead, ending on length. What is left inside a collision surface is measured on the
        points as written (``Wig._held_depth``). ``base``: this frame's rest pose of those points (3, C).
        ``last``, ``maps``: where the points ended the last frame and the colliders' maps then
        (``maps()``), for continuous contact (None: the first frame) — in the walk as it places
        each point, else before the points are collided (``cross``)."""
        length = self.length
        self.crossed = 0
        self.pushes = np.zeros((3, p.shape[1]), np.float32)
        self._start = span.start or 0
        self._previous = last         # where each point ended the last step (``_turn_at_most``)
        try:
            sweeps = self.sweeps(maps)
            fields = all(isinstance(c.field, MeshField) for c in self.colliders)
            if not sweeps.any() or not fields:
                last = maps = None       # nothing moved relative to the head, or no distance to advance by
            if self.walks and fields:
                self._walk_kernel(p, base, span, first_strand, last, maps, sweeps)
                return
            if self.walks:
                self._walk(p, base, span, first_strand, last, maps, sweeps)
            else:
                if last is not None:
                    self.crossed = self.cross(p, span, last, maps, sweeps)
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
                    for _ in range(max(1, self.iterations)):
                        length.apply_rows(p, touched, first_strand, base=base)
                        moved = self._collide(p, span, mask)
                        if moved.size == 0:
                            break
                    else:
                        length.apply_rows(p, touched, first_strand, base=base)
        finally:
            self._previous = None      # not kept past the step: the state owns it

    def _walk(self, p, base, span, first_strand, last=None, maps=None, sweeps=None) -> None:
        """Follow-the-leader with collision, root to tip, on every strand stepped (one point
        count; SPEC §6.4): each point placed its segment's length from the one before
        (``LengthControl.steps``: towards where it was asked to be, turned towards the segment
        as it came in where that is squashed or turns back, and towards the rest segment of
        ``base`` (3, C) where that is zero too); then the points the grid says may be within
        their limit are pushed out of every collider and set back on their segment's length, ``collision_iterations`` times. The
        points are turned point-major once, so each step is one pass over contiguous rows. What is
        left inside is measured on the points as written (``Wig._held_depth``). ``last``,
        ``maps``: continuous contact's (``run``), done on each point as it is placed
        (``_cross_column``)."""
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
            if last is not None:
                pulled = []
                self.crossed += self._cross_column(q, j, at_j, last, maps, sweeps, pulled)
                for m in margins:            # the points before moved: no bound carried from them
                    m[pulled] = -np.inf
            near = [c.near_step(q[:, j], j, strands, at_j, m, rest[j] if seg is None else seg)
                    for c, m in zip(self.colliders, margins)]
            at = near[0] if len(near) == 1 else np.unique(np.concatenate(near))
            if len(margins) > 1 and at.size:
                for m in margins:            # moved by one collider: no bound for the others
                    m[at] = -np.inf
            for _ in range(max(1, self.iterations)):
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
            cut = self._segments_out(q, j, at_j, sweeps if last is not None else None)
            if cut.size:
                for m in margins:            # moved: no bound for the next point
                    m[cut] = -np.inf
                self._swing_out(q, j, at_j, cut)
        view[...] = q.transpose(0, 2, 1)

    def _segments_out(self, q: np.ndarray, j: int, at_j: np.ndarray, sweeps=None) -> np.ndarray:
        """Segment collision for points j of the walked strands ``q`` (3, n, S) — wig points
        ``at_j`` — after the points themselves are out (``kernels.walk._segment_against`` says
        what and why): each segment from point j − 1 met at ``SEGMENT_AT`` of its length against
        its samples' limits (``Collider.segment_bounds``), a sample deeper than its limit pushed
        out by swinging the segment about point j − 1, collider by collider and sample by
        sample, ``SEGMENT_ROUNDS`` rounds at most, then kept within ``self.turn`` of where it
        pointed before or at the end of the last step (``_turn_at_most``); not against a collider that ``sweeps`` (K,)
        through the hair this frame (continuous contact wraps its cuts). Returns the strands whose
        point moved."""
        cols = [c for k, c in enumerate(self.colliders) if getattr(c, "segment_bounds", None) is not None
                and c.segment_bounds.shape[1] and (sweeps is None or not sweeps[k])]
        count = q.shape[2]
        moved = np.zeros(count, bool)
        lead = q[:, j - 1].astype(np.float64)            # the leaders stay where they are
        was = q[:, j].astype(np.float64)
        bounds = [c.segment_bounds[:, at_j] for c in cols]
        for _ in range(SEGMENT_ROUNDS if cols else 0):
            got = np.zeros(count, bool)
            for c, bounds_c in zip(cols, bounds):
                for row, t in enumerate(SEGMENT_AT):
                    p = q[:, j].astype(np.float64)
                    met = (lead + t * (p - lead)).astype(np.float32)
                    out = met.copy()
                    normal = np.zeros((3, count))
                    pick = c.push_to(out, bounds_c[row], normal)
                    if pick.size == 0:
                        continue
                    a = lead[:, pick]
                    d = p[:, pick] + (out[:, pick].astype(np.float64) - met[:, pick].astype(np.float64)) / t - a
                    length = np.sqrt(((p[:, pick] - a) ** 2).sum(axis=0))
                    size = np.sqrt((d * d).sum(axis=0))
                    ok = (length != 0) & (size != 0)
                    pick, a, d = pick[ok], a[:, ok], d[:, ok]
                    q[:, j, pick] = (a + d * (length[ok] / size[ok])).astype(np.float32)
                    self.pushes[:, at_j[pick] - self._start] = normal[:, pick]
                    got[pick] = True
            if not got.any():
                break
            moved |= got
        cut = np.flatnonzero(moved)
        if cut.size:
            before = None
            if self._previous is not None and self.turn < math.pi and self._previous.shape[1] > at_j[cut].max():
                before = (self._previous[:, at_j[cut]].astype(np.float64)
                          - self._previous[:, at_j[cut] - 1].astype(np.float64))
            q[:, j, cut] = _turn_at_most(lead[:, cut], was[:, cut], q[:, j, cut], self.turn, before)
        return cut

    def _cross_column(self, q, j, at_j, last, maps, sweeps, pulled: list) -> int:
        """Continuous contact in numpy (``kernels.walk._cross_way`` says what and why): point
        ``j`` of every strand (``q`` (3, n, S), the wig's points ``at_j``), just placed, against
        each collider that sweeps in turn: along its path from where it ended the last frame —
        where it crossed, held on the plane its limit off where it met the surface (``_held``)
        at its segment's length — then along its segment from the point before — where that
        cuts through the collider, swung round it (``_wrap``). Where a held point's leader lies
        farther behind the plane than its segment reaches, or the swing took it across, its
        chain is pulled back to where it is held instead (``_pull_back``; those strands are
        added to ``pulled``). How many crossed or were swung."""
        count = 0
        for c, m, moved in zip(self.colliders, maps, sweeps):
            if not moved:
                continue
            a = self._where_it_was(c, last, m, at_j)
            at, plane, ne, _, _ = self._meets(c, a, q[:, j].astype(np.float64), at_j)
            count += at.size
            if at.size:
                b = q[:, j, at].astype(np.float64)
                beyond, held = _held(b, plane, ne, self.friction)
                at, b, plane, ne, held = at[beyond], b[:, beyond], plane[:, beyond], ne[:, beyond], held[:, beyond]
                lead = q[:, j - 1, at].astype(np.float64)
                if j >= 2:
                    # a leader farther behind the plane than the segment reaches: the chain
                    # pulled back to where the point is held, or else to where it met the surface
                    seg = np.sqrt(np.sum((b - lead) ** 2, axis=0))
                    back = np.zeros(at.size, bool)
                    for k in np.flatnonzero(np.sum((plane - lead) * ne, axis=0) > seg):
                        back[k] = any(self._pull_back(c, q, j, at[k], h, seg[k], at_j[at[k]], last, m)
                                      for h in (held[:, k], plane[:, k]))
                    pulled.extend(at[back])
                    keep = ~back
                    at, b, plane, ne, held, lead = at[keep], b[:, keep], plane[:, keep], ne[:, keep], held[:, keep], lead[:, keep]
                # at its segment's length from its leader, then on the circle where that sphere
                # meets the plane, nearest it
                held = lead + (held - lead) * np.sqrt(np.sum((b - lead) ** 2, axis=0)
                                                      / np.maximum(np.sum((held - lead) ** 2, axis=0), 1e-300))
                q[:, j, at] = _onto_circle(lead, held, plane, ne).astype(np.float32)
            at = self._meets(c, q[:, j - 1].astype(np.float64), q[:, j].astype(np.float64), at_j)[0]
            count += at.size
            if at.size:
                held = q[:, j, at].astype(np.float64)
                seg = np.sqrt(np.sum((held - q[:, j - 1, at].astype(np.float64)) ** 2, axis=0))
                across = self._wrap(c, q, j, at, at_j[at])
                if j >= 2:
                    for k in np.flatnonzero(across):
                        if self._pull_back(c, q, j, at[k], held[:, k], seg[k], at_j[at[k]], last, m):
                            pulled.append(at[k])
        return count

    @staticmethod
    def _where_it_was(c: Collider, last: np.ndarray, m: np.ndarray, index) -> np.ndarray:
        """Where the wig's points ``index`` ended the last frame (``last`` (3, P)), carried by
        ``m`` (that frame's head-local → this frame's, as collider ``c`` moved) and, where ``c``
        is mapped, back from its field space: (3, K) float64, head-local, as ``_meets`` takes a
        way's start."""
        a = last[:, index].astype(np.float64)
        a = m[:3, :3] @ a + m[:3, 3:4]
        if c.to_field is not None:
            a = c.from_field[:3, :3] @ a + c.from_field[:3, 3:4]
        return a

    def _meets(self, c: Collider, a, b, index, strict: bool = False, corner=None):
        """Which of the straight ways from ``a`` to ``b`` (3, K) head-local go through collider
        ``c`` (``kernels.walk._cross_way``; ``index`` (K,): the wig's points ``b`` are): those
        (A,), the plane each is held on (a point of it (3, A): its limit off where the way met
        the surface), its normal (3, A), and where each met and left the surface (3, A).
        ``strict``: ways that graze the surface too near to tell count too; ``corner`` (K,): a
        way that clips an edge within it is not counted (``_cross_way``'s)."""
        d = b - a
        travel = np.sqrt(np.sum(d * d, axis=0))
        tol = c.tolerance / float(c.stretch)
        at = np.flatnonzero(travel > 0)
        met, e, short = self._advance(c, a[:, at], d[:, at], travel[at], tol, start_inside=False)
        grazes = at[short] if strict else at[:0]
        at, e = at[met], e[:, met]
        if at.size == 0:
            return grazes, e, e, e, e
        # back from b to where the way leaves the surface (b itself where b is inside)
        left, x, _ = self._advance(c, b[:, at], -d[:, at], travel[at], tol, start_inside=True)
        ne = c.outward_at(e.astype(np.float32))
        nx = c.outward_at(x.astype(np.float32))
        turn = np.sum(ne * nx, axis=0)
        hit = left & (turn < CROSS_TURN)
        if corner is not None:
            hit &= (turn < THROUGH_TURN) | (np.sum((x - e) ** 2, axis=0) >= corner[at] ** 2)
        at, e, ne, x = at[hit], e[:, hit], ne[:, hit], x[:, hit]
        if grazes.size:                      # ``strict``: only which, no planes
            return np.union1d(at, grazes), None, None, None, None
        return at, e + ne * (c.limit[index[at]].astype(np.float64) / float(c.stretch)), ne, e, x

    def _wrap(self, c: Collider, q, j, at, index) -> np.ndarray:
        """``kernels.walk._wrap`` for point ``j`` of strands ``at`` (``q`` (3, n, S); ``index``:
        their wig points): each segment that cuts through ``c`` swung about its leader to the
        nearest way that does not cut it and keeps its point on the side it was held on — the
        first of ``_AROUND`` in the segment's own frame, then where the arc to it stops cutting
        (``WRAP_HALVINGS`` halvings); where no way keeps that side, the nearest that does not
        cut it (the strand slips over the edge after its leader). Which of ``at`` were swung
        across so (A,) bool."""
        lead = q[:, j - 1, at].astype(np.float64)
        seg = q[:, j, at].astype(np.float64) - lead
        length = np.sqrt(np.sum(seg * seg, axis=0))

        held = lead + seg

        def clear(d, pick, side):
            cand = lead[:, pick] + d * length[pick]
            out = np.ones(pick.size, bool)
            out[self._meets(c, lead[:, pick], cand, index[pick], strict=True)[0]] = False
            on = np.flatnonzero(side)
            if on.size:
                out[on[self._meets(c, held[:, pick[on]], cand[:, on], index[pick[on]])[0]]] = False
            return out

        pick = np.flatnonzero(length > 0)
        lo = seg[:, pick] / length[pick]
        axes = _frame(lo, lo)
        hi = np.zeros_like(lo)
        found = np.zeros(pick.size, bool)
        side = np.ones(pick.size, bool)
        for keep in (True, False):
            side[~found] = keep
            for u, v, t in _AROUND:
                looking = np.flatnonzero(~found)
                if looking.size == 0:
                    break
                d = u * axes[0][:, looking] + v * axes[1][:, looking] + t * axes[2][:, looking]
                ok = clear(d, pick[looking], side[looking])
                hi[:, looking[ok]] = d[:, ok]
                found[looking[ok]] = True
        across = np.zeros(at.size, bool)
        pick, lo, hi, side = pick[found], lo[:, found], hi[:, found], side[found]
        if pick.size == 0:
            return across
        cut, free = np.zeros(pick.size), np.ones(pick.size)     # fractions of each arc
        for _ in range(WRAP_HALVINGS):
            t = 0.5 * (cut + free)
            ok = clear(_arc(lo, hi, t[None, None, :], hi)[0], pick, side)
            free = np.where(ok, t, free)
            cut = np.where(ok, cut, t)
        hi = _arc(lo, hi, free[None, None, :], hi)[0]
        q[:, j, at[pick]] = (lead[:, pick] + hi * length[pick]).astype(np.float32)
        across[pick[~side]] = True
        return across

    def _pull_back(self, c: Collider, q, j: int, s: int, held, seg: float, w: int, last, m) -> bool:
        """``kernels.walk._pull_back`` for strand ``s`` of ``q`` (3, n, S), whose point ``j``
        (the wig's point ``w``, its segment ``seg`` long) is held at ``held`` (3,) out of its
        leader's reach: points ``0 … j`` reaching from the root to ``held`` by forward and backward
        reaching, each segment swung round ``c`` where it would cut it (``_follow``); taken where
        the chain reaches it, nothing ends inside a collider or went through ``c`` since the last
        frame (``last``, ``m``), and the point is on ``held``'s side. One strand: only the few a
        moving collider drags off its edge come here. Whether it was taken."""
        x = q[:, :j + 1, s].copy()
        lng = np.r_[0.0, np.sqrt(np.sum(np.diff(x[:, :j].astype(np.float64), axis=1) ** 2, axis=0)), seg]
        index = w - j + np.arange(j + 1)
        reached = False
        for _ in range(PULL_ROUNDS):
            x[:, j] = held.astype(np.float32)
            for k in range(j - 1, -1, -1):
                self._follow(c, x, k, k + 1, lng[k + 1], index[k])
            x[:, 0] = q[:, 0, s]
            for k in range(1, j + 1):
                self._follow(c, x, k, k - 1, lng[k], index[k])
            if np.sum((x[:, j].astype(np.float64) - held) ** 2) <= (PULL_REACH * lng[j]) ** 2:
                reached = True
                break
        if not reached or (self._depth(x[:, 1:], index[1:]) > 0).any():
            return False
        a = self._where_it_was(c, last, m, index[1:])
        if self._meets(c, a, x[:, 1:].astype(np.float64), index[1:], corner=PULL_REACH * lng[1:])[0].size:
            return False
        if self._meets(c, held[:, None], x[:, j:].astype(np.float64), index[j:])[0].size:
            return False
        q[:, 1:j + 1, s] = x[:, 1:]
        return True

    def _follow(self, c: Collider, x, k: int, a: int, length: float, w: int) -> None:
        """``kernels.walk._follow``: point ``k`` of ``x`` (3, m) set ``length`` from point ``a``
        towards where it is, swung round ``c`` (``_wrap``) where that segment cuts it, pushed
        out of ``c`` and set back on its length on the contact's tangent plane where it is
        inside."""
        d = x[:, k].astype(np.float64) - x[:, a].astype(np.float64)
        norm = np.sqrt(np.sum(d * d))
        if norm > 0:
            x[:, k] = (x[:, a].astype(np.float64) + d * (length / norm)).astype(np.float32)
        pair = np.stack([x[:, a], x[:, k]], axis=1)[:, :, None]            # (3, 2, 1): a, then k
        if self._meets(c, pair[:, 0].astype(np.float64), pair[:, 1].astype(np.float64), np.array([w]))[0].size:
            self._wrap(c, pair, 1, np.array([0]), np.array([w]))
            x[:, k] = pair[:, 1, 0]
        before = x[:, k:k + 1].copy()
        after, normal = before.copy(), np.zeros((3, 1))
        if c.push_to(after, c.limit[[w]], normal).size:
            x[:, k] = _onto_circle(x[:, a:a + 1], before, after, normal)[:, 0]

    def _advance(self, c: Collider, o, d, travel, tol, start_inside: bool):
        """Conservative advancement from ``o`` (3, K) along ``d`` (3, K, of length ``travel``)
        by the clearance, ``CROSS_STEPS`` steps at most: whether each path meets the surface
        (within ``tol``), and where (3, K). A path that starts inside meets it at once where
        ``start_inside``, else never; and which ran out of steps short of their end."""
        s = np.zeros(o.shape[1])
        x = o.copy()
        room = self._clearance(c, x)
        go = np.ones(o.shape[1], bool) if start_inside else room >= -tol
        met = np.zeros(o.shape[1], bool)
        for _ in range(CROSS_STEPS):
            met |= go & (room <= tol)
            go &= ~met
            s = np.where(go, s + room, s)
            go &= s < travel
            if not go.any():
                break
            x = np.where(go, o + d * (s / np.where(travel > 0, travel, 1.0)), x)
            room = np.where(go, self._clearance(c, x), room)
        else:
            # out of steps: where a way still goes on, it grazes the surface too near to tell
            return met, x, go & ~met
        return met, x, np.zeros(o.shape[1], bool)

    @staticmethod
    def _clearance(c: Collider, x: np.ndarray) -> np.ndarray:
        """``kernels.walk._clearance`` of head-local points ``x`` (3, K) float64: a lower bound of
        the collider's signed distance, head-local units — exact where the lists reach, the
        grid's less its error beyond, the distance to the box beyond the grid; exact from every
        triangle where that bound is within the tolerance but not exact."""
        f = np.ascontiguousarray(x.T)
        if c.to_field is not None:
            f = f @ c.to_field[:3, :3].T + c.to_field[:3, 3]
        field = c.field
        d, _ = field.lookup(f)
        d = d.astype(np.float64)
        beyond = ~np.isfinite(d)
        err = field.error_at(f).astype(np.float64)
        room = d - err
        exact = np.zeros(len(d), bool)
        band = np.flatnonzero(~beyond & (np.abs(d) < field.exact_reach + err))
        if band.size:
            sd, _, _, ok = field._exact_in_band(f[band], d[band])
            room[band[ok]] = sd[ok]
            exact[band[ok]] = True
        if beyond.any():
            room[beyond] = field.signed_distance(f[beyond])
        doubt = np.flatnonzero(~exact & (room <= c.tolerance))
        if doubt.size:
            sd, _, _, ok = field.exact(f[doubt], every=True)
            room[doubt[ok]] = sd[ok]
        return room / float(c.stretch)

    def _walk_kernel(self, p, base, span, first_strand, last=None, maps=None, sweeps=None) -> None:
        """``_walk`` as one kernel (``kernels.walk.walk_strands``): every strand walked root to
        tip on its own thread, a chain lifted where a contact meets it head-on with a layer that
        lifts as ``_lift_steep`` lifts it (``kernels.walk._lift``). (The patent's rays stay with
        ``_walk``.)"""
        n = self.length.uniform
        count = p.shape[1] // n
        rows = p if p.flags.c_contiguous else np.ascontiguousarray(p)
        base = np.ascontiguousarray(base, np.float32)
        length = self.length.rest_segments32[span]
        cols = kernel_colliders(self.colliders)
        margins = np.full((len(self.colliders), count), -np.inf, np.float32)
        came = rows[:, ::n].astype(np.float64)
        rest = self.colliders[0].rest_rows
        looked = np.zeros(count, np.int64)
        crossed = np.zeros(count, np.int64)
        lifted = np.zeros(count, np.int64)
        if last is None:
            last, maps = _NO_LAST, np.zeros((len(self.colliders), 4, 4))
            sweeps = np.zeros(len(self.colliders), bool)
        kids = NO_KIDS
        if self.children is not None:
            kids = (self.children, NO_KIDS[1] if self._children_turn is None else self._children_turn)
        walk_strands(rows, base, n, span.start, first_strand, length, float(self.length.elasticity), max(1, self.iterations),
                     bool(self.lifts), _LIFT_RULES, cols, kids, rest, margins, came, lifted, _AROUND, 7, looked, last,
                     maps, sweeps, float(self.friction), crossed, self.pushes, float(self.turn),
                     _NO_LAST if self._previous is None else self._previous)
        if rows is not p:
            p[...] = rows
        self.looked += int(looked.sum())
        self.crossed = int(crossed.sum())
        self.stops += int(lifted.sum())

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
            self.pushes[:, at_j[at] - self._start] = n
            swung = _onto_circle(q[:, j - 1, at], before, after, n)
            q[:, j, at] = swung
            if j >= 2 and lift and self.lifts:
                self._lift_steep(q, j, at, before, after, n, swung, at_j)
        return at

    def _lift_steep(self, q, j, at, before, after, n, swung, at_j) -> None:
        """Where a contact meets its segment head-on, the chain gives instead of the segment
        (with the Strands layer, whose substeps give alike: ``self.lifts``).

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
        self.stops += cols.size
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
        for _ in range(max(1, self.iterations)):
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
        moved = [c.project_rows(p, span, mask, self.pushes) for c in self.colliders]
        return moved[0] if len(moved) == 1 else np.unique(np.concatenate(moved))



def _spread(n: int) -> np.ndarray:
    """``n`` unit directions (n, 3) spread evenly over the sphere (a Fibonacci spiral from +x,
    the first axis, to −x): about 18° apart at 128."""
    k = np.arange(n) + 0.5
    x = 1 - 2 * k / n
    r = np.sqrt(1 - x * x)
    turn = np.pi * (3 - np.sqrt(5)) * k
    return np.stack([x, r * np.cos(turn), r * np.sin(turn)], axis=1)


_AROUND = _spread(128)
# the walk kernel's lift (``kernels.walk._lift``): the settling share and least motion's rules
_LIFT_RULES = np.array([SETTLING, ROUNDS, RIDGE, KEPT], np.float64)


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


def _held(b: np.ndarray, e: np.ndarray, n: np.ndarray, friction: float):
    """``kernels.response.held`` of points ``b`` (3, K) against planes through ``e`` (3, K) of
    normals ``n`` (3, K): whether each was beyond its plane, and where it is held."""
    beyond, out = np.empty(b.shape[1], np.bool_), np.empty(b.shape)
    launch(held_rows, b.shape[1], *(np.ascontiguousarray(a, np.float64) for a in (b, e, n)), float(friction),
           beyond, out)
    return beyond, out


def _toward(u: np.ndarray, d: np.ndarray, c: np.ndarray, most: float) -> np.ndarray:
    """``kernels.walk._toward`` of unit columns ``u``, ``d`` (3, S), ``c`` = u · d below cos most."""
    v = d - c * u
    vl = np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    sm = math.sin(most) / np.where(vl <= 1e-12, 1.0, vl)
    out = math.cos(most) * u + sm * v
    return np.where(vl <= 1e-12, u, out)


def _turn_at_most(lead: np.ndarray, was: np.ndarray, now, most: float, before=None) -> np.ndarray:
    """Points ``now`` (3, S, float32), swung about their leaders ``lead`` (3, S) by meeting their
    segments' samples from where they ``was`` (3, S), kept within ``most`` radians of where their
    segments pointed before the swing or, ``before`` (3, S; None: none), at the end of the last
    step (``kernels.walk._turn_at_most`` says how and why); float32."""
    out = now.copy()
    if most >= math.pi:
        return out
    e = was - lead
    length = np.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
    d = now.astype(np.float64) - lead
    dl = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    at = np.flatnonzero((length != 0.0) & (dl != 0.0))
    u = e[:, at] / length[at]
    d = d[:, at] / dl[at]
    limit = math.cos(most)
    c = u[0] * d[0] + u[1] * d[1] + u[2] * d[2]
    far = ~(c >= limit)                               # as the kernel's: NaN is not within reach
    at, u, d, c = at[far], u[:, far], d[:, far], c[far]
    b = _toward(u, d, c, most)
    if before is not None and at.size:
        q = before[:, at].astype(np.float64)
        ql = np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2])
        has = ql > 0.0
        q = q / np.where(has, ql, 1.0)
        cq = q[0] * d[0] + q[1] * d[1] + q[2] * d[2]
        near = has & (cq >= limit)                    # within reach of where it ended: as swung
        o = _toward(q, d, cq, most)
        take = has & ~near & ((o[0] * d[0] + o[1] * d[1] + o[2] * d[2]) > (b[0] * d[0] + b[1] * d[1] + b[2] * d[2]))
        b[:, take] = o[:, take]
        at, b = at[~near], b[:, ~near]
    out[:, at] = (lead[:, at] + length[at] * b).astype(np.float32)
    return out


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

# continuous contact's record of the last frame, on the first frame: none
_NO_LAST = np.zeros((3, 0), np.float32)
