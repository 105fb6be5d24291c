"""Hair–hair interaction's kernels (seed 004, SPEC §7 "004"; ``hair_wig.interaction`` is their
client and has the rules): the search for pairs of segments of different strands closer than a
threshold, the exact closest points of two segments, the repulsion summed per segment and the
static links' springs summed per point.

Segments come as rows ``(3, M)`` of float64 (``a`` their starts, ``b`` their ends) and are
measured as rows ``(M, 6)`` (``segment_ends``: a segment in one cache line). The search (the
seed's sort-and-sweep over bounding boxes, in columns): each segment's box, grown by half the
threshold, goes into the column of its low corner on a grid over two axes, a cell as wide as the
widest box there, so two boxes that overlap are in columns at most one apart; each column is
sorted along the third axis by where its boxes start. An entry then meets its candidates in its
own column after it, and in the 4 columns after its own in the 3 × 3 block around it, walking
each only over the boxes that start within reach of its own — every pair once. A candidate is
measured exactly (``closest``) only when its boxes overlap and the lines through the two
segments are not clearly too far apart.

Same bits with any thread count: the search works in blocks of columns fixed by the data
(``blocks_of``), each writing its pairs into its own room, and the pairs are then sorted by
``(i, j)`` (a counting sort and each segment's own row) — the order is the data's, whatever the
threads did. The repulsion is measured per pair, then each segment sums its own pairs in that
order (a list by ``i`` and one by ``j``); a strand's points sum their own links — nothing is
ever added into memory another iteration writes.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

_TINY = 1e-300
# The grid has at most this many cells along an axis (the cell grows for a spread that would
# need more; a wider cell finds the same pairs among more candidates): cell keys stay in int64.
_MOST_CELLS = 1 << 20


@njit(cache=True, inline="always")
def _clip01(x):
    return min(max(x, 0.0), 1.0)


@njit(cache=True)
def closest(p0x, p0y, p0z, p1x, p1y, p1z, q0x, q0y, q0z, q1x, q1y, q1z):
    """Closest points of segments ``p0 p1`` and ``q0 q1``: ``(s, t, vx, vy, vz)``, ``s, t`` in
    [0, 1] and ``v = q(t) − p(s)`` (Ericson, *Real-Time Collision Detection* §5.1.9; the
    operations of ``interaction.segment_closest`` one pair at a time, in its order)."""
    d1x, d1y, d1z = p1x - p0x, p1y - p0y, p1z - p0z
    d2x, d2y, d2z = q1x - q0x, q1y - q0y, q1z - q0z
    rx, ry, rz = p0x - q0x, p0y - q0y, p0z - q0z
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    c = d1x * rx + d1y * ry + d1z * rz
    b = d1x * d2x + d1y * d2y + d1z * d2z
    denom = a * e - b * b
    # s on the infinite lines, clamped (parallel segments: any s, take 0)
    if denom > 1e-12 * max(a * e, _TINY):
        s = _clip01((b * f - c * e) / max(denom, _TINY))
    else:
        s = 0.0
    t = (b * s + f) / max(e, _TINY)
    # t outside [0, 1]: clamp it and recompute s for that t
    if t < 0.0:
        t = 0.0
        s = _clip01(-c / max(a, _TINY))
    elif t > 1.0:
        t = 1.0
        s = _clip01((b - c) / max(a, _TINY))
    # a segment that is a point: the other's closest point to it
    if e <= 1e-30:
        s = _clip01(-c / max(a, _TINY))
        t = 0.0
    if a <= 1e-30:
        t = _clip01(f / max(e, _TINY))
        s = 0.0
    vx = (q0x + d2x * t) - (p0x + d1x * s)
    vy = (q0y + d2y * t) - (p0y + d1y * s)
    vz = (q0z + d2z * t) - (p0z + d1z * s)
    return s, t, vx, vy, vz


@njit(cache=True, inline="always")
def _closest_of(ends, i, j):
    """``closest`` of segments ``i`` and ``j`` of ``ends`` (M, 6) (``segment_ends``)."""
    return closest(ends[i, 0], ends[i, 1], ends[i, 2], ends[i, 3], ends[i, 4], ends[i, 5],
                   ends[j, 0], ends[j, 1], ends[j, 2], ends[j, 3], ends[j, 4], ends[j, 5])


@njit(cache=True, parallel=True)
def closest_rows(p0, p1, q0, q1, s, t, vec):
    """``closest`` pairwise over rows (3, K): ``s, t`` (K,) and ``vec`` (3, K) written."""
    for k in prange(p0.shape[1]):
        sk, tk, vx, vy, vz = closest(p0[0, k], p0[1, k], p0[2, k], p1[0, k], p1[1, k], p1[2, k],
                                     q0[0, k], q0[1, k], q0[2, k], q1[0, k], q1[1, k], q1[2, k])
        s[k], t[k] = sk, tk
        vec[0, k], vec[1, k], vec[2, k] = vx, vy, vz


@njit(cache=True)
def segment_ends(a, b):
    """Segments ``a b`` (3, M) as rows ``(M, 6)``: start, end (one cache line a segment)."""
    m = a.shape[1]
    ends = np.empty((m, 6))
    for i in range(m):
        for k in range(3):
            ends[i, k] = a[k, i]
            ends[i, 3 + k] = b[k, i]
    return ends


@njit(cache=True, parallel=True)
def segment_grid(ends, strand, half, work):
    """The columns of segments ``ends`` (M, 6) (``segment_ends``) of strands ``strand`` (M,)
    whose boxes are grown by ``half``: a grid over two axes (a cell as wide as the widest box
    there), each segment in the column of its
    box's low corner, sorted along the third axis — the sweep — by where its box starts.
    Returns ``(order, boxes, ends, strands, cols, runs, back)``: the segments sorted by
    ``(column, start, segment)``, then in that order their boxes ``(M, 6)`` (low corner, high
    corner, the sweep's axis third), ends ``(M, 6)``, strands and columns ``(M, 2)``; where each
    occupied column's entries start (``runs`` (C + 1,)); and how far before a box's start
    another's may start and still overlap it (the tallest box, and room for rounding). A segment
    with a coordinate that is not finite is in no column (sorted first, in no run: never a
    candidate).

    Each segment's row is read once, in column order (``ends`` and ``strand``); its box and
    column are computed again from that row, the same bits, and a column is sorted in place:
    read through the sort's order at every step, a column's rows (anywhere in the input) missed
    the cache, and that took most of the time. ``work``: ``search_work``'s arrays, written and
    returned: a kernel that searches at every substep keeps them (fresh ones cost a search of
    75 000 segments 2300 page faults, 15 % of its time)."""
    m = ends.shape[0]
    keys, order, sorted_keys, boxes, ends_e, strands, cols = work
    good = np.ones(m, np.bool_)
    for i in prange(m):
        for k in range(3):
            x0, x1 = ends[i, k], ends[i, 3 + k]
            if not (math.isfinite(min(x0, x1) - half) and math.isfinite(max(x0, x1) + half)):
                good[i] = False
    origin = np.full(3, np.inf)
    top = np.full(3, -np.inf)
    width = np.zeros(3)
    total = np.zeros(3)
    for i in range(m):
        if good[i]:
            for k in range(3):
                x0, x1 = ends[i, k], ends[i, 3 + k]
                lo, hi = min(x0, x1) - half, max(x0, x1) + half
                origin[k] = min(origin[k], lo)
                top[k] = max(top[k], lo)
                width[k] = max(width[k], hi - lo)
                total[k] += hi - lo
    # the sweep along the axis that leaves an entry the fewest candidates, the columns across
    # the other two: it meets those of a block of columns a widest box across, over the tallest
    # box and its own along the sweep. (Hair combed out and down: boxes flat along the vertical,
    # swept along it 20 % fewer candidates than along the largest spread, and half the time.)
    sweep = 0
    best = np.inf
    for k in range(3):
        across = max(width[(k + 1) % 3], width[(k + 2) % 3])
        cost = across * across * (width[k] + total[k] / max(m, 1))
        if cost < best:
            sweep, best = k, cost
    ax = np.empty(3, np.int64)
    n = 0
    for k in range(3):
        if k != sweep:
            ax[n] = k
            n += 1
    ax[2] = sweep
    cell = max(max(width[ax[0]], width[ax[1]]), 1e-12)
    for k in range(2):
        if top[ax[k]] > origin[ax[k]]:
            cell = max(cell, (top[ax[k]] - origin[ax[k]]) / (_MOST_CELLS - 2))
    # the columns (the last low corner's is the last column: floor keeps the order)
    last = np.zeros(2, np.int64)
    for k in range(2):
        if top[ax[k]] >= origin[ax[k]]:
            last[k] = int(math.floor((top[ax[k]] - origin[ax[k]]) / cell))
    size = last[1] + 2
    for i in prange(m):
        keys[i] = -1
        if good[i]:
            c0 = int(math.floor((min(ends[i, ax[0]], ends[i, 3 + ax[0]]) - half - origin[ax[0]]) / cell))
            c1 = int(math.floor((min(ends[i, ax[1]], ends[i, 3 + ax[1]]) - half - origin[ax[1]]) / cell))
            keys[i] = c0 * size + c1
    _by_key(keys, (last[0] + 2) * size, order, sorted_keys)
    n_runs = 0
    for e in range(m):
        if sorted_keys[e] >= 0 and (e == 0 or sorted_keys[e] != sorted_keys[e - 1]):
            n_runs += 1
    runs = np.empty(n_runs + 1, np.int64)
    r = 0
    for e in range(m):
        if sorted_keys[e] >= 0 and (e == 0 or sorted_keys[e] != sorted_keys[e - 1]):
            runs[r] = e
            r += 1
    runs[n_runs] = m
    for e in prange(m):
        i = order[e]
        for k in range(6):
            ends_e[e, k] = ends[i, k]
        strands[e] = strand[i]
        for k in range(3):
            x0, x1 = ends_e[e, ax[k]], ends_e[e, 3 + ax[k]]
            boxes[e, k] = min(x0, x1) - half
            boxes[e, 3 + k] = max(x0, x1) + half
        if e >= runs[0]:
            for k in range(2):
                cols[e, k] = int(math.floor((boxes[e, k] - origin[ax[k]]) / cell))
        else:
            cols[e, 0], cols[e, 1] = 0, 0
    # each column by its boxes' starts (stably: then by segment)
    for r in prange(n_runs):
        _by_start(runs[r], runs[r + 1], order, boxes, ends_e, strands, cols)
    back = width[sweep]
    if n_runs:
        back += 1e-9 * (abs(origin[sweep]) + abs(top[sweep]) + width[sweep])
    return order, boxes, ends_e, strands, cols, runs, back


@njit(cache=True)
def _by_key(keys, most, order, sorted_keys):
    """The indices of ``keys`` (−1 or in ``[0, most)``) sorted stably by key into ``order``, and
    the keys in that order into ``sorted_keys``: a counting sort where the keys' range is not
    much more than their number, else a merge sort."""
    m = keys.shape[0]
    if most > 4 * m + 1024:
        order[:] = np.argsort(keys, kind="mergesort")
        for i in range(m):
            sorted_keys[i] = keys[order[i]]
        return
    at = np.zeros(most + 2, np.int64)
    for i in range(m):
        at[keys[i] + 2] += 1
    for x in range(most + 1):
        at[x + 1] += at[x]
    for i in range(m):
        order[at[keys[i] + 1]] = i
        sorted_keys[at[keys[i] + 1]] = keys[i]
        at[keys[i] + 1] += 1


@njit(cache=True)
def search_work(m):
    """The arrays a search of ``m`` segments sorts them into (``segment_grid``): their keys,
    order and keys in order (M,) int64, boxes and ends (M, 6), strands (M,) and columns (M, 2)."""
    return (np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64), np.empty((m, 6)),
            np.empty((m, 6)), np.empty(m, np.int64), np.empty((m, 2), np.int64))


@njit(cache=True)
def _by_start(first, last, order, boxes, ends, strands, cols):
    """Entries ``first:last`` (one column's, rows of every array) sorted stably by their
    boxes' starts along the sweep (``boxes[:, 2]``), in place: insertion for a short run, merge
    sort for a long one."""
    n = last - first
    starts = boxes[first:last, 2].copy()
    if n <= 64:
        by = np.arange(n)
        for q in range(1, n):
            v, x = by[q], starts[q]
            p = q
            while p > 0 and starts[p - 1] > x:
                by[p], starts[p] = by[p - 1], starts[p - 1]
                p -= 1
            by[p], starts[p] = v, x
    else:
        by = np.argsort(starts, kind="mergesort")
    sorted_already = True
    for q in range(n):
        if by[q] != q:
            sorted_already = False
            break
    if sorted_already:
        return
    o, b, en = order[first:last].copy(), boxes[first:last].copy(), ends[first:last].copy()
    s, c = strands[first:last].copy(), cols[first:last].copy()
    for q in range(n):
        f = by[q]
        order[first + q] = o[f]
        strands[first + q] = s[f]
        for k in range(6):
            boxes[first + q, k] = b[f, k]
            ends[first + q, k] = en[f, k]
        cols[first + q, 0], cols[first + q, 1] = c[f, 0], c[f, 1]


@njit(cache=True)
def _later_columns(cols, runs, r):
    """The runs of the columns after run ``r``'s in its 3 × 3 block (the next column on the
    first axis, every one on the second; this one, the next on the second): ``(4,)`` indices
    into ``runs``, −1 for a column with no entries. Columns are sorted, so each is a binary
    search among the runs."""
    out = np.full(4, -1, np.int64)
    c0, c1 = cols[runs[r], 0], cols[runs[r], 1]
    n_runs = runs.shape[0] - 1
    for n in range(4):
        w0, w1 = (c0 + 1, c1 + n - 1) if n < 3 else (c0, c1 + 1)
        lo, hi = 0, n_runs
        while lo < hi:
            mid = (lo + hi) >> 1
            e = runs[mid]
            if cols[e, 0] < w0 or (cols[e, 0] == w0 and cols[e, 1] < w1):
                lo = mid + 1
            else:
                hi = mid
        if lo < n_runs and cols[runs[lo], 0] == w0 and cols[runs[lo], 1] == w1:
            out[n] = lo
    return out


@njit(cache=True, inline="always")
def _overlap(boxes, strands, e, f):
    """Whether entries ``e`` and ``f`` — ``f`` starting along the sweep before ``e`` ends — are
    of different strands with overlapping boxes (without branches: most candidates fail, at
    random)."""
    return ((boxes[f, 0] <= boxes[e, 3]) & (boxes[e, 0] <= boxes[f, 3]) & (boxes[f, 1] <= boxes[e, 4])
            & (boxes[e, 1] <= boxes[f, 4]) & (boxes[e, 2] <= boxes[f, 5]) & (strands[f] != strands[e]))


@njit(cache=True, inline="always")
def _apart_lines(ends, e, f, reach2):
    """Whether the lines through segments ``e`` and ``f`` (rows of ``ends``) are ``√reach2`` or
    more apart (so the segments are too), clearly: lines within a millirad of parallel, and
    distances within a millionth of ``√reach2``, are left to ``closest``. No division."""
    d1x, d1y, d1z = ends[e, 3] - ends[e, 0], ends[e, 4] - ends[e, 1], ends[e, 5] - ends[e, 2]
    d2x, d2y, d2z = ends[f, 3] - ends[f, 0], ends[f, 4] - ends[f, 1], ends[f, 5] - ends[f, 2]
    nx, ny, nz = d1y * d2z - d1z * d2y, d1z * d2x - d1x * d2z, d1x * d2y - d1y * d2x
    n2 = nx * nx + ny * ny + nz * nz
    if n2 <= 1e-6 * (d1x * d1x + d1y * d1y + d1z * d1z) * (d2x * d2x + d2y * d2y + d2z * d2z):
        return False
    q = (ends[f, 0] - ends[e, 0]) * nx + (ends[f, 1] - ends[e, 1]) * ny + (ends[f, 2] - ends[e, 2]) * nz
    return q * q > reach2 * n2 * (1 + 1e-6)


@njit(cache=True)
def _sweep(reach2, order, boxes, ends, strands, cols, runs, r, back, slot_i, slot_j, w, limit):
    """The pairs of column run ``r``'s entries closer than ``√reach2``: with the entries after
    each in its own column and with those of the 4 columns after it (``_later_columns``) whose
    boxes overlap its own — every pair of segments once, from the entry before in its column or
    from the column before — written as segments ``slot_i < slot_j`` from ``w`` on, as far as
    ``limit``. Returns how many there are (written or not). A later column's entries that start
    more than ``back`` before an entry's box are passed over for good: the entries' starts only
    grow."""
    later = _later_columns(cols, runs, r)
    ptr = np.zeros(4, np.int64)
    end = np.zeros(4, np.int64)
    for n in range(4):
        if later[n] >= 0:
            ptr[n], end[n] = runs[later[n]], runs[later[n] + 1]
    stop = runs[r + 1]
    found = 0
    for e in range(runs[r], stop):
        lo_e, hi_e = boxes[e, 2], boxes[e, 5]
        for n in range(5):
            if n < 4:
                while ptr[n] < end[n] and boxes[ptr[n], 2] < lo_e - back:
                    ptr[n] += 1
                f0, f1 = ptr[n], end[n]
            else:
                f0, f1 = e + 1, stop
            for f in range(f0, f1):
                if boxes[f, 2] > hi_e:
                    break
                if not _overlap(boxes, strands, e, f) or _apart_lines(ends, e, f, reach2):
                    continue
                # measured from the lower segment, as the pair is listed
                i, j = order[e], order[f]
                _, _, vx, vy, vz = _closest_of(ends, e, f) if i < j else _closest_of(ends, f, e)
                if vx * vx + vy * vy + vz * vz < reach2:
                    if w + found < limit:
                        slot_i[w + found], slot_j[w + found] = min(i, j), max(i, j)
                    found += 1
    return found


@njit(cache=True)
def blocks_of(runs, count):
    """The column runs cut into ``count`` blocks of about as many entries each: ``(B + 1,)``
    run indices (a block is the unit of work and of output: the same whatever the threads)."""
    n_runs = runs.shape[0] - 1
    out = np.empty(count + 1, np.int64)
    out[0] = 0
    total = runs[n_runs] - runs[0]
    r = 0
    for bk in range(1, count):
        want = runs[0] + (total * bk) // count
        while r < n_runs and runs[r] < want:
            r += 1
        out[bk] = r
    out[count] = n_runs
    return out


@njit(cache=True, parallel=True)
def near_pairs(reach, order, boxes, ends, strands, cols, runs, back, blocks, room, slot_i, slot_j, redo):
    """The pairs of segments of different strands closer than ``reach`` (each once), block after
    block of column runs (``blocks_of``): block ``b``'s written as ``slot_i < slot_j`` from
    ``room[b]`` on, as far as ``room[b + 1]``; only the blocks ``redo`` marks. Returns how many
    pairs each block has (B,), written or not: a block with more than its room is done again
    with room for them all."""
    n_blocks = blocks.shape[0] - 1
    found = np.zeros(n_blocks, np.int64)
    for bk in prange(n_blocks):
        if not redo[bk]:
            continue
        n = 0
        for r in range(blocks[bk], blocks[bk + 1]):
            n += _sweep(reach * reach, order, boxes, ends, strands, cols, runs, r, back, slot_i, slot_j,
                        room[bk] + n, room[bk + 1])
        found[bk] = n
    return found


@njit(cache=True)
def sort_pairs(slot_i, slot_j, room, found, m):
    """The pairs ``near_pairs`` wrote (block ``b``'s ``found[b]`` from ``room[b]`` on) of ``m``
    segments, sorted by ``(i, j)``: a stable counting sort by ``i`` (serial), then each
    segment's own row by ``j`` (in parallel, ``_sort_rows``). Returns ``(i, j, at)``, segment
    ``x``'s pairs at ``at[x]:at[x + 1]``."""
    at = np.zeros(m + 1, np.int64)
    for bk in range(found.shape[0]):
        for q in range(room[bk], room[bk] + found[bk]):
            at[slot_i[q] + 1] += 1
    for x in range(m):
        at[x + 1] += at[x]
    si, sj = np.empty(at[m], np.int64), np.empty(at[m], np.int64)
    w = at[:m].copy()
    for bk in range(found.shape[0]):
        for q in range(room[bk], room[bk] + found[bk]):
            x = slot_i[q]
            si[w[x]], sj[w[x]] = x, slot_j[q]
            w[x] += 1
    return si, sj, at


@njit(cache=True, parallel=True)
def _sort_rows(sj, at):
    for x in prange(at.shape[0] - 1):
        for q in range(at[x] + 1, at[x + 1]):
            v = sj[q]
            p = q
            while p > at[x] and sj[p - 1] > v:
                sj[p] = sj[p - 1]
                p -= 1
            sj[p] = v


@njit(cache=True, parallel=True)
def closest_pairs(ends, pi, pj, ps, pt, pvec):
    """``closest`` of each pair ``(pi, pj)`` of segments ``ends`` (M, 6): ``ps, pt`` (K,) and
    ``pvec`` (3, K) written."""
    for k in prange(pi.shape[0]):
        s, t, vx, vy, vz = _closest_of(ends, pi[k], pj[k])
        ps[k], pt[k] = s, t
        pvec[0, k], pvec[1, k], pvec[2, k] = vx, vy, vz


@njit(cache=True, parallel=True)
def measure_pairs(ends, pi, pj, threshold, rest_ends, rest, stiffness, rec):
    """Each candidate pair ``(pi, pj)`` of segments ``ends`` (M, 6) measured: where closer than
    ``threshold`` — and, with ``rest``, than ``(1 − 1e-6)`` of the distance the groom's segments
    ``rest_ends`` have — its closest parameters ``s, t`` and the push on ``pj``,
    ``stiffness · (reach − d)`` along the shortest vector, as ``rec[k] = (s, t, push)``
    (K, 5); returns whether each acts (K,) bool."""
    k_pairs = pi.shape[0]
    acts = np.zeros(k_pairs, np.bool_)
    thr2 = threshold * threshold
    for k in prange(k_pairs):
        i, j = pi[k], pj[k]
        s, t, vx, vy, vz = _closest_of(ends, i, j)
        d2 = vx * vx + vy * vy + vz * vz
        if not d2 < thr2:
            continue
        d = math.sqrt(d2)
        reach = threshold
        if rest:
            _, _, wx, wy, wz = _closest_of(rest_ends, i, j)
            reach = min(reach, math.sqrt(wx * wx + wy * wy + wz * wz) * (1 - 1e-6))
            if not d < reach:
                continue
        g = max(d, _TINY)
        m = stiffness * (reach - d)
        acts[k] = True
        rec[k, 0], rec[k, 1] = s, t
        rec[k, 2] = (vx / g) * m
        rec[k, 3] = (vy / g) * m
        rec[k, 4] = (vz / g) * m
    return acts


@njit(cache=True)
def pair_lists(pi, pj, acts, m):
    """The acting pairs listed per segment, in pair order: ``(by_i, at_i, by_j, at_j)`` — segment
    ``x``'s pairs as ``i`` are ``by_i[at_i[x]:at_i[x + 1]]``, as ``j`` ``by_j[at_j[x]:at_j[x + 1]]``
    (a stable counting sort, one pass: serial, so the order is the pairs')."""
    at_i = np.zeros(m + 1, np.int64)
    at_j = np.zeros(m + 1, np.int64)
    for k in range(pi.shape[0]):
        if acts[k]:
            at_i[pi[k] + 1] += 1
            at_j[pj[k] + 1] += 1
    for x in range(m):
        at_i[x + 1] += at_i[x]
        at_j[x + 1] += at_j[x]
    by_i = np.empty(at_i[m], np.int64)
    by_j = np.empty(at_j[m], np.int64)
    wi = at_i[:m].copy()
    wj = at_j[:m].copy()
    for k in range(pi.shape[0]):
        if acts[k]:
            by_i[wi[pi[k]]] = k
            wi[pi[k]] += 1
            by_j[wj[pj[k]]] = k
            wj[pj[k]] += 1
    return by_i, at_i, by_j, at_j


@njit(cache=True, inline="always")
def _shares(by, first, last, rec, where):
    """The pushes of pairs ``by[first:last]`` (``rec`` as ``measure_pairs`` writes it) summed in
    that order, shared between a segment's start and end by the closest point's place along it
    (``rec[:, where]``): ``(on start (3), on end (3))``."""
    a0 = a1 = a2 = b0 = b1 = b2 = 0.0
    for q in range(first, last):
        k = by[q]
        u = rec[k, where]
        a0 += rec[k, 2] * (1 - u)
        a1 += rec[k, 3] * (1 - u)
        a2 += rec[k, 4] * (1 - u)
        b0 += rec[k, 2] * u
        b1 += rec[k, 3] * u
        b2 += rec[k, 4] * u
    return a0, a1, a2, b0, b1, b2


@njit(cache=True, parallel=True)
def gather_repulsion(by_i, at_i, by_j, at_j, rec, on_a, on_b):
    """Each segment sums its own pairs' pushes (``pair_lists``' order; ``rec`` as
    ``measure_pairs`` writes it), shared between its ends by where the closest points lie: as
    ``i`` it is pushed by ``−push``, as ``j`` by ``push``. ``on_a, on_b`` (3, M) written: the
    accelerations on the segments' starts and ends."""
    for x in prange(on_a.shape[1]):
        ia0, ia1, ia2, ib0, ib1, ib2 = _shares(by_i, at_i[x], at_i[x + 1], rec, 0)
        ja0, ja1, ja2, jb0, jb1, jb2 = _shares(by_j, at_j[x], at_j[x + 1], rec, 1)
        on_a[0, x], on_a[1, x], on_a[2, x] = (0.0 - ia0) + ja0, (0.0 - ia1) + ja1, (0.0 - ia2) + ja2
        on_b[0, x], on_b[1, x], on_b[2, x] = (0.0 - ib0) + jb0, (0.0 - ib1) + jb1, (0.0 - ib2) + jb2


@njit(cache=True)
def link_lists(link_a, link_b, strands):
    """The links listed per strand, in link order: ``(by_a, at_a, by_b, at_b)`` as
    ``pair_lists``."""
    ones = np.ones(link_a.shape[0], np.bool_)
    return pair_lists(link_a, link_b, ones, strands)


@njit(cache=True, parallel=True)
def gather_links(pos, link_a, link_b, rest, stiffness, by_a, at_a, by_b, at_b, out):
    """Each strand's points sum their own links' springs: link ``l`` joins point ``p`` of strands
    ``link_a[l]`` and ``link_b[l]`` with ``stiffness (|d| − rest[p, l])`` along
    ``d = pos[:, p, link_b] − pos[:, p, link_a]``, pulling ``a`` by it and ``b`` against it.
    ``pos, out`` (3, n, S): ``out`` written."""
    for x in prange(pos.shape[2]):
        for p in range(pos.shape[1]):
            sa0 = sa1 = sa2 = sb0 = sb1 = sb2 = 0.0
            for q in range(at_a[x], at_a[x + 1]):
                f0, f1, f2 = _link(pos, link_a, link_b, rest, stiffness, by_a[q], p)
                sa0 += f0
                sa1 += f1
                sa2 += f2
            for q in range(at_b[x], at_b[x + 1]):
                f0, f1, f2 = _link(pos, link_a, link_b, rest, stiffness, by_b[q], p)
                sb0 += f0
                sb1 += f1
                sb2 += f2
            out[0, p, x] = sa0 - sb0
            out[1, p, x] = sa1 - sb1
            out[2, p, x] = sa2 - sb2


@njit(cache=True, inline="always")
def _link(pos, link_a, link_b, rest, stiffness, l, p):
    u, v = link_a[l], link_b[l]
    dx = pos[0, p, v] - pos[0, p, u]
    dy = pos[1, p, v] - pos[1, p, u]
    dz = pos[2, p, v] - pos[2, p, u]
    r = math.sqrt(dx * dx + dy * dy + dz * dz)
    w = stiffness * (r - rest[p, l]) / max(r, _TINY)
    return dx * w, dy * w, dz * w


@njit(cache=True)
def most_moved(x, y):
    """The largest squared distance between matching points of ``x`` and ``y`` (3, P)."""
    top = 0.0
    for i in range(x.shape[1]):
        dx, dy, dz = x[0, i] - y[0, i], x[1, i] - y[1, i], x[2, i] - y[2, i]
        d2 = dx * dx + dy * dy + dz * dz
        if not d2 <= top:
            top = d2 if d2 > top else np.inf          # a point not finite: as if moved without bound
    return top


@njit(cache=True)
def list_serves(moved, skin, margin, served):
    """A Verlet list's rule (``interaction.Contacts``, whose docstring says why): whether the
    list kept with ``skin`` serves points that moved at most ``√moved`` since its search (it has
    served ``served`` calls), and the skin the next search takes — the margin again once the
    points moved less than a sixth of it in a call, none after a list that served fewer than
    three. ``Contacts`` and the Strands substeps' one launch (``verlet.hair_hair``) both ask it."""
    if skin > 0 and moved <= (0.5 * skin) ** 2:
        return True, skin
    if skin == 0:
        if moved <= (margin / 6) ** 2:
            skin = margin
    elif served < 3:
        skin = 0.0
    return False, skin


BLOCKS = 64                 # blocks of column runs a search is cut into (work and output units)


def find_pairs(a, b, strand, reach, closest_points=True, per_segment=4.0):
    """Pairs ``(i, j)`` (i < j) of segments ``a b`` (3, M) float64 of different strands
    (``strand`` (M,) int64) closer than ``reach``, sorted by ``(i, j)``, with (``closest_points``)
    their closest parameters and shortest vector: ``(i, j, s, t, vec)`` (``pairs_within``)."""
    m = a.shape[1]
    if m < 2:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0), np.zeros(0), np.zeros((3, 0))
    ends = segment_ends(a, b)
    pi, pj = pairs_within(ends, strand, float(reach), float(per_segment), search_work(m))
    k = len(pi)
    ps, pt, pvec = np.empty(k), np.empty(k), np.empty((3, k))
    if closest_points:
        closest_pairs(ends, pi, pj, ps, pt, pvec)
    return pi, pj, ps, pt, pvec


@njit(cache=True)
def pairs_within(ends, strand, reach, per_segment, work):
    """The search (module docstring): pairs ``(i, j)`` (i < j) of segments ``ends`` (M, 6) of
    different strands (``strand`` (M,) int64) closer than ``reach``, sorted by ``(i, j)``.
    ``per_segment``: how many pairs a segment is expected to have (room is made for that many
    first; a block with more is searched again with room for all — the result is the same).
    One call for a substep kernel, which searches between its own parallel passes; ``work``:
    ``search_work``'s arrays for ``M`` segments, which it keeps from one search to the next."""
    m = ends.shape[0]
    if m < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order, boxes, ends_e, strands, cols, runs, back = segment_grid(ends, strand, 0.5 * reach, work)
    blocks = blocks_of(runs, max(min(BLOCKS, runs.shape[0] - 1), 1))
    n_blocks = blocks.shape[0] - 1
    room = np.zeros(n_blocks + 1, np.int64)
    for bk in range(n_blocks):
        size = runs[blocks[bk + 1]] - runs[blocks[bk]] if runs.shape[0] > 1 else 0
        room[bk + 1] = room[bk] + np.int64(math.ceil(size * per_segment)) + 16
    redo = np.ones(n_blocks, np.bool_)
    slot_i, slot_j = np.empty(room[n_blocks], np.int64), np.empty(room[n_blocks], np.int64)
    found = near_pairs(reach, order, boxes, ends_e, strands, cols, runs, back, blocks, room, slot_i, slot_j, redo)
    again = False
    for bk in range(n_blocks):
        redo[bk] = found[bk] > room[bk + 1] - room[bk]
        again = again or redo[bk]
    if again:
        # room for every pair the crowded blocks found, and those blocks searched again
        old = room.copy()
        for bk in range(n_blocks):
            room[bk + 1] = room[bk] + (found[bk] if redo[bk] else old[bk + 1] - old[bk])
        new_i, new_j = np.empty(room[n_blocks], np.int64), np.empty(room[n_blocks], np.int64)
        for bk in range(n_blocks):
            if not redo[bk]:
                new_i[room[bk]:room[bk] + found[bk]] = slot_i[old[bk]:old[bk] + found[bk]]
                new_j[room[bk]:room[bk] + found[bk]] = slot_j[old[bk]:old[bk] + found[bk]]
        slot_i, slot_j = new_i, new_j
        more = near_pairs(reach, order, boxes, ends_e, strands, cols, runs, back, blocks, room, slot_i, slot_j, redo)
        for bk in range(n_blocks):
            if redo[bk]:
                found[bk] = more[bk]
    pi, pj, at = sort_pairs(slot_i, slot_j, room, found, m)
    _sort_rows(pj, at)
    return pi, pj
