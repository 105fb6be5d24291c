"""Hair–hair interaction (seed 004, Barnes after Chang, Jin, Yu; SPEC §7 "004"): segments of
different strands closer than a hair's diameter repel with ``k (threshold − d)`` along the
shortest vector between them, and static links between neighbouring strands hold a style's
volume.

The broadphase is a hashed uniform grid over the segments' boxes (grown by half the threshold):
a cell at least as wide as the widest box, so a box meets at most 2 × 2 × 2 cells; the pairs that
share a cell are the candidates, each counted once, in the cell that holds the corner where
their boxes start to overlap. The narrow phase is the exact distance between two segments.
"""

from __future__ import annotations

import numpy as np

from .collision import span_index


def segment_closest(p0, p1, q0, q1):
    """Closest points of segments ``p0 p1`` and ``q0 q1`` (rows (3, K)), pairwise: parameters
    ``s, t`` (K,) in [0, 1] and the shortest vector ``q(t) − p(s)`` (3, K) (Ericson, *Real-Time
    Collision Detection* §5.1.9)."""
    d1, d2 = p1 - p0, q1 - q0
    r = p0 - q0
    a = np.einsum("kn,kn->n", d1, d1)
    e = np.einsum("kn,kn->n", d2, d2)
    f = np.einsum("kn,kn->n", d2, r)
    c = np.einsum("kn,kn->n", d1, r)
    b = np.einsum("kn,kn->n", d1, d2)
    denom = a * e - b * b
    tiny = 1e-300
    # s on the infinite lines, clamped (parallel segments: any s, take 0)
    s = np.where(denom > 1e-12 * np.maximum(a * e, tiny), (b * f - c * e) / np.maximum(denom, tiny), 0.0)
    s = np.clip(s, 0.0, 1.0)
    t = (b * s + f) / np.maximum(e, tiny)
    # t outside [0, 1]: clamp it and recompute s for that t
    low, high = t < 0, t > 1
    t = np.clip(t, 0.0, 1.0)
    s = np.where(low, np.clip(-c / np.maximum(a, tiny), 0, 1), s)
    s = np.where(high, np.clip((b - c) / np.maximum(a, tiny), 0, 1), s)
    # a segment that is a point: the other's closest point to it
    q_point, p_point = e <= 1e-30, a <= 1e-30
    s = np.where(q_point, np.clip(-c / np.maximum(a, tiny), 0, 1), s)
    t = np.where(q_point, 0.0, t)
    t = np.where(p_point, np.clip(f / np.maximum(e, tiny), 0, 1), t)
    s = np.where(p_point, 0.0, s)
    vec = (q0 + d2 * t) - (p0 + d1 * s)
    return s, t, vec


def segment_pairs(a: np.ndarray, b: np.ndarray, strand: np.ndarray, threshold: float):
    """Pairs ``(i, j)`` (i < j) of segments ``a[:, k] b[:, k]`` (rows (3, M)) of different
    strands (``strand`` (M,)) closer than ``threshold``, with their closest parameters ``s, t``
    and shortest vector (3, K). Sorted by ``(i, j)``."""
    m = a.shape[1]
    empty = np.zeros(0, np.int64)
    if m < 2:
        return empty, empty, np.zeros(0), np.zeros(0), np.zeros((3, 0))
    half = 0.5 * float(threshold)
    lo = np.minimum(a, b) - half
    hi = np.maximum(a, b) + half
    lo, hi = np.ascontiguousarray(lo), np.ascontiguousarray(hi)
    cell = max(float((hi - lo).max()), 1e-12)
    origin = lo.min(axis=1, keepdims=True)
    c0 = np.floor((lo - origin) / cell).astype(np.int64)              # (3, M)
    c1 = np.floor((hi - origin) / cell).astype(np.int64)              # at most c0 + 1
    dims = c1.max(axis=1) + 2
    # every (segment, cell) its box meets: the 8 corners' cells, repeats dropped
    off = np.array([(x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)]).T   # (3, 8)
    cc = c0[:, :, None] + off[:, None, :]                              # (3, M, 8)
    meets = (cc <= c1[:, :, None]).all(axis=0)                         # (M, 8)
    seg = np.broadcast_to(np.arange(m)[:, None], meets.shape)[meets]
    key = ((cc[0][meets] * dims[1] + cc[1][meets]) * dims[2] + cc[2][meets])
    order = np.lexsort((seg, key))
    key, seg = key[order], seg[order]
    # all pairs inside each cell's run, a chunk of entries at a time (bounded scratch)
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    count = np.diff(np.r_[starts, len(key)])
    pos_in = np.arange(len(key)) - np.repeat(starts, count)
    later = np.repeat(count, count) - pos_in - 1                       # entries after each one
    cum = np.cumsum(later)
    # each chunk's candidates are measured before the next: only the pairs found are kept, so
    # memory follows them, not the candidates (dense roots make many more)
    found = []
    e0 = 0
    while e0 < len(key):
        base = int(cum[e0 - 1]) if e0 else 0
        e1 = max(int(np.searchsorted(cum, base + PAIR_BUDGET, side="right")), e0 + 1)
        i, j = _cell_pairs(np.arange(e0, e1), later[e0:e1], key, seg, strand, lo, hi, origin, cell, dims)
        s, t, vec = segment_closest(a[:, i], b[:, i], a[:, j], b[:, j])
        near = np.flatnonzero(np.einsum("kn,kn->n", vec, vec) < float(threshold) ** 2)
        found.append((i[near], j[near], s[near], t[near], vec[:, near]))
        e0 = e1
    i, j, s, t = (np.concatenate([f[k] for f in found]) for k in range(4))
    vec = np.concatenate([f[4] for f in found], axis=1)
    order = np.lexsort((j, i))
    return i[order], j[order], s[order], t[order], vec[:, order]


PAIR_BUDGET = 1 << 22       # candidate pairs looked at in one go


def _cell_pairs(entries, later, key, seg, strand, lo, hi, origin, cell, dims):
    """The candidate pairs of sorted grid ``entries`` with the ``later`` entries of their cell:
    of different strands, with overlapping boxes, counted in their home cell only; ``(i, j)``,
    i < j."""
    first = np.repeat(entries, later)
    second = span_index(entries + 1, later)
    i, j = seg[first], seg[second]
    pair_key = key[first]
    keep = np.flatnonzero(strand[i] != strand[j])
    i, j, pair_key = i[keep], j[keep], pair_key[keep]
    # boxes overlap (an axis at a time: most pairs fail on the first), and this cell holds the
    # corner where the overlap starts, so each pair is counted once
    home = np.zeros(len(i), np.int64)
    for k in range(3):
        lo_i, lo_j = lo[k].take(i), lo[k].take(j)
        corner = np.maximum(lo_i, lo_j)
        keep = np.flatnonzero(corner <= np.minimum(hi[k].take(i), hi[k].take(j)))
        i, j, pair_key, home = i[keep], j[keep], pair_key[keep], home[keep]
        home = home * dims[k] + np.floor((corner[keep] - origin[k, 0]) / cell).astype(np.int64)
    keep = home == pair_key
    i, j = i[keep], j[keep]
    return np.minimum(i, j), np.maximum(i, j)


def repulsion(a: np.ndarray, b: np.ndarray, strand: np.ndarray, threshold: float, stiffness: float,
              candidates=None, rest=None):
    """Accelerations (3, M) on segment start points and (3, M) on end points: every pair of
    segments of different strands closer than ``threshold`` is pushed apart by
    ``stiffness · (threshold − d)`` along its shortest vector, shared between each segment's
    ends by where the closest points lie. ``candidates`` ``(i, j)``: pairs known to hold every
    pair closer than ``threshold`` (a ``Contacts`` broadphase), measured instead of searched.
    ``rest`` ``(a0, b0)``: the same segments in the groom — a pair the groom has closer than
    ``threshold`` is pushed apart only once closer than it lies there (less a millionth, so
    the rounding of a groom carried by the head pushes nothing): the groom at rest is an
    equilibrium, where hair lying on hair was pushed 13 cm off a still head (issue 34).
    Returns ``(on_a, on_b, pairs)``."""
    if candidates is None:
        i, j, s, t, vec = segment_pairs(a, b, strand, threshold)
    else:
        i, j = candidates
        s, t, vec = segment_closest(a[:, i], b[:, i], a[:, j], b[:, j])
        near = np.einsum("kn,kn->n", vec, vec) < float(threshold) ** 2
        i, j, s, t, vec = i[near], j[near], s[near], t[near], vec[:, near]
    m = a.shape[1]
    on_a, on_b = np.zeros((3, m)), np.zeros((3, m))
    if i.size == 0:
        return on_a, on_b, 0
    d = np.sqrt(np.einsum("kn,kn->n", vec, vec))
    reach = np.full(len(d), float(threshold))
    if rest is not None:
        a0, b0 = rest
        _, _, vec0 = segment_closest(a0[:, i], b0[:, i], a0[:, j], b0[:, j])
        np.minimum(reach, np.sqrt(np.einsum("kn,kn->n", vec0, vec0)) * (1 - 1e-6), out=reach)
        near = np.flatnonzero(d < reach)
        i, j, s, t, vec, d, reach = i[near], j[near], s[near], t[near], vec[:, near], d[near], reach[near]
        if i.size == 0:
            return on_a, on_b, 0
    unit = vec / np.maximum(d, 1e-300)
    push = unit * (float(stiffness) * (reach - d))                     # on j, away from i
    for k in range(3):
        on_a[k] -= np.bincount(i, push[k] * (1 - s), m)
        on_b[k] -= np.bincount(i, push[k] * s, m)
        on_a[k] += np.bincount(j, push[k] * (1 - t), m)
        on_b[k] += np.bincount(j, push[k] * t, m)
    return on_a, on_b, int(i.size)


class Contacts:
    """The broadphase kept across substeps: the pairs closer than ``threshold + margin`` where
    the points were when it last searched. While no point has moved more than ``margin / 2``
    since, two segments' distance has changed by less than ``margin``, so every pair now closer
    than ``threshold`` is among them — exactly the pairs a new search would find; once a point
    has moved farther, it searches again."""

    def __init__(self, strand: np.ndarray, threshold: float, margin: float):
        self.strand, self.threshold, self.margin = strand, float(threshold), float(margin)
        self.at = None
        self.pairs = None
        self.searches = 0

    def candidates(self, points: np.ndarray, a: np.ndarray, b: np.ndarray):
        """The candidate pairs for segments ``a b`` (3, M) of ``points`` (3, …) now."""
        if self.at is not None:
            d = points - self.at
            if np.einsum("k...,k...->...", d, d).max() <= (0.5 * self.margin) ** 2:
                return self.pairs
        i, j, _, _, _ = segment_pairs(a, b, self.strand, self.threshold + self.margin)
        self.at, self.pairs = points.copy(), (i, j)
        self.searches += 1
        return self.pairs


def static_links(roots: np.ndarray, neighbours: int = 2, reach: float | None = None):
    """Static links (seed 004's guide strips, defined here): each strand is linked to its
    ``neighbours`` nearest strands whose roots lie within ``reach`` of its own (default: 2.5 ×
    the median distance from a root to its nearest neighbour). Returns the linked strand pairs
    ``(i, j)`` (L,), i < j, each once. ``roots`` (3, S)."""
    num = roots.shape[1]
    empty = np.zeros(0, np.int64)
    if num < 2 or neighbours < 1:
        return empty, empty
    ids = np.arange(num)
    if reach is None:
        # nearest-neighbour spacing from a first pass at a generous reach (the roots' spread)
        span = float((roots.max(axis=1) - roots.min(axis=1)).max())
        guess = span / max(num ** (1 / 2), 1.0) * 2.0
        i, j, _, _, vec = segment_pairs(roots, roots, ids, max(guess, 1e-12))
        if i.size == 0:
            return empty, empty
        d = np.sqrt(np.einsum("kn,kn->n", vec, vec))
        nearest = np.full(num, np.inf)
        np.minimum.at(nearest, i, d)
        np.minimum.at(nearest, j, d)
        reach = 2.5 * float(np.median(nearest[np.isfinite(nearest)]))
    i, j, _, _, vec = segment_pairs(roots, roots, ids, float(reach))
    d = np.sqrt(np.einsum("kn,kn->n", vec, vec))
    # each strand keeps its nearest few, from either end of a pair
    owner = np.r_[i, j]
    other = np.r_[j, i]
    dist = np.r_[d, d]
    order = np.lexsort((other, dist, owner))
    owner, other = owner[order], other[order]
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    rank = np.arange(len(owner)) - np.repeat(starts, np.diff(np.r_[starts, len(owner)]))
    keep = rank < neighbours
    a, b = np.minimum(owner[keep], other[keep]), np.maximum(owner[keep], other[keep])
    key = np.unique(a * num + b)
    return key // num, key % num


def link_forces(pos: np.ndarray, link_a: np.ndarray, link_b: np.ndarray, rest: np.ndarray,
                stiffness: float) -> np.ndarray:
    """Accelerations (3, n, S) of springs joining point ``j`` of strand ``link_a`` to point
    ``j`` of strand ``link_b`` at their groom distance ``rest`` (n, L): ``k (|d| − rest)``
    along ``d``, equal and opposite. ``pos`` (3, n, S)."""
    out = np.zeros_like(pos)
    if link_a.size == 0:
        return out
    d = pos[:, :, link_b] - pos[:, :, link_a]                          # (3, n, L)
    r = np.sqrt(np.einsum("knl,knl->nl", d, d))
    f = d * (float(stiffness) * (r - rest) / np.maximum(r, 1e-300))
    n, num = pos.shape[1], pos.shape[2]
    flat_a = (np.arange(n)[:, None] * num + link_a[None, :]).ravel()
    flat_b = (np.arange(n)[:, None] * num + link_b[None, :]).ravel()
    size = n * num
    for k in range(3):
        fk = f[k].ravel()
        out[k] += (np.bincount(flat_a, fk, size) - np.bincount(flat_b, fk, size)).reshape(n, num)
    return out
