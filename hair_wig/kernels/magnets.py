"""Primary movement's blend (SPEC §3, seed 000 "Displacement"; ``hair_wig.magnets.MagnetWeights.
displace_rows``) as one kernel: each point's blended motion ``G = Σ_k W_k (M_k − I)`` over the
magnets in its tile's reach, applied, ``out += G p``. Weights are the block-sparse tiles
``MagnetWeights`` binds (each tile's points × its magnets, point-major); a ``prange`` iteration
takes a run of points inside one tile and writes only those.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

RUN = 2048                        # points a kernel iteration takes (within one tile)


@njit(cache=True, parallel=True)
def magnet_blend(values, tile_start, tile_offset, active, active_start, table, points, out, lo, hi):
    """``out[:, i − lo] += G_i p_i`` for the bound points ``lo … hi − 1`` (``points``, ``out``
    (3, hi − lo) float32 rows of just those).

    Parameters
    ----------
    values : (V,) float32
        Every tile's weights, point-major: tile ``t``'s (n_t, m_t) from ``tile_offset[t]``.
    tile_start : (T + 1,) int64
        Each tile's first point (and the end).
    active, active_start : int64
        Tile ``t``'s magnets in reach: ``active[active_start[t]:active_start[t + 1]]``.
    table : (12, M) float32
        Each magnet's ``M_k − I`` (its top three rows), zero for a magnet that does not move.
    """
    tiles = tile_start.shape[0] - 1
    # the runs of points to do: (tile, first point) for every run inside [lo, hi)
    first_tile = np.searchsorted(tile_start, lo, side="right") - 1
    runs = 0
    for t in range(first_tile, tiles):
        a, b = max(lo, tile_start[t]), min(hi, tile_start[t + 1])
        if a >= hi:
            break
        if b > a:
            runs += (b - a + RUN - 1) // RUN
    run_tile = np.empty(runs, np.int64)
    run_start = np.empty(runs, np.int64)
    r = 0
    for t in range(first_tile, tiles):
        a, b = max(lo, tile_start[t]), min(hi, tile_start[t + 1])
        if a >= hi:
            break
        s = a
        while s < b:
            run_tile[r], run_start[r] = t, s
            r += 1
            s += RUN
    for r in prange(runs):
        t = run_tile[r]
        t0 = tile_start[t]
        m0, m1 = active_start[t], active_start[t + 1]
        mt = m1 - m0
        start = run_start[r]
        stop = min(start + RUN, tile_start[t + 1], hi)
        g = np.zeros(12, np.float32)
        for i in range(start, stop):
            base = tile_offset[t] + (i - t0) * mt
            for e in range(12):
                g[e] = 0.0
            for c in range(mt):
                w = values[base + c]
                if w != 0.0:
                    k = active[m0 + c]
                    for e in range(12):
                        g[e] += w * table[e, k]
            j = i - lo
            x0, x1, x2 = points[0, j], points[1, j], points[2, j]
            for axis in range(3):
                e = 4 * axis
                out[axis, j] += g[e] * x0 + g[e + 1] * x1 + g[e + 2] * x2 + g[e + 3]


def _as_called():
    """``magnet_blend`` with the argument types ``MagnetWeights.displace_rows`` passes: float32
    weights and rows (a block's contiguous rows, or views of them), int64 tables."""
    f = np.float32
    values = np.ones(4, f)
    starts, offsets = np.array([0, 4], np.int64), np.array([0, 4], np.int64)
    active, active_start = np.array([0], np.int64), np.array([0, 1], np.int64)
    table = np.zeros((12, 1), f)
    rows = np.zeros((3, 4), f)
    magnet_blend(values, starts, offsets, active, active_start, table, rows, rows.copy(), 0, 4)
    big = np.zeros((3, 8), f)
    magnet_blend(values, starts, offsets, active, active_start, table, big[:, :4], rows.copy(), 0, 4)


# (what an artist reads while it runs, the call that compiles it as the core calls it)
WARM_UPS = (("magnets", _as_called),)
