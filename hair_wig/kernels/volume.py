"""Hair–hair interaction through a volume (Petrovic, Henne, Anderson 2005, *Volumetric Methods
for Simulation and Rendering of Hair*, Pixar Technical Memo 06-08, §3): the points are counted
into a uniform grid, each grid node gathers the trilinear-weighted density and momentum of the
points around it, and each point reads back the grid's smoothed velocity (hair–hair friction)
and the density's gradient (hair pushed out of where it is packed tighter than in the groom).

Points come as rows ``(3, P)`` float64 and are taken in grid units (``x = q / cell − origin``,
so a node is at integer coordinates); cells and nodes are numbered x-major,
``(i · ny + j) · nz + k``. The points are sorted by cell (a counting sort, each cell's points in
point order) and copied in that order, ``(P, 3)``, so a cell's points are one contiguous run.
Every grid quantity is *gathered*: a node sums the points of its eight cells in a fixed order,
so a result is the same bit for bit with 1 or N threads and run to run — no atomics, no
scattered sums.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True)
def cell_ids(q, scale, origin, ny, nz, cell_of):
    """Each point's cell (P,): ``floor(q · scale − origin)`` numbered x-major (``scale``
    1 / cell, ``origin`` (3,) whole numbers as floats: subtracting a whole number from a value
    of its size is exact, so where the grid starts changes no point's place within its cell)."""
    for p in prange(q.shape[1]):
        i = int(math.floor(q[0, p] * scale - origin[0]))
        j = int(math.floor(q[1, p] * scale - origin[1]))
        k = int(math.floor(q[2, p] * scale - origin[2]))
        cell_of[p] = (i * ny + j) * nz + k


@njit(cache=True)
def count_sort(cell_of, cells, start, order):
    """Counting sort of the points by cell: ``start`` (cells + 1,) each cell's first entry in
    ``order`` (P,), a cell's points in point order. Serial (a parallel count would need atomics
    or an order that depends on the threads); two passes over ``cell_of``."""
    for c in range(cells + 1):
        start[c] = 0
    for p in range(cell_of.size):
        start[cell_of[p] + 1] += 1
    for c in range(cells):
        start[c + 1] += start[c]
    fill = start[:-1].copy()
    for p in range(cell_of.size):
        c = cell_of[p]
        order[fill[c]] = p
        fill[c] += 1


@njit(cache=True, parallel=True)
def sort_points(q, vel, scale, origin, order, xs, vs):
    """The points in cell ``order``: grid coordinates ``xs`` (P, 3) (``q · scale − origin``,
    as ``cell_ids`` has them) and velocities ``vs`` (P, 3) (``vel`` (3, P), or (3, 0): none)."""
    with_v = vel.shape[1] > 0
    for e in prange(order.size):
        p = order[e]
        for k in range(3):
            xs[e, k] = q[k, p] * scale - origin[k]
            if with_v:
                vs[e, k] = vel[k, p]


@njit(cache=True, parallel=True)
def gather_nodes(xs, vs, start, nx, ny, nz, rho, mom):
    """Each node's density ``rho`` (N,) and velocity ``mom`` (N, 3) (N = (nx+1)(ny+1)(nz+1)):
    ``ρ_n = Σ_p w_np``, the momentum ``M_n = Σ_p w_np v_p`` and the velocity ``V_n = M_n / ρ_n``
    (0 where no point reaches), ``w_np`` the trilinear weight of point ``p`` at node ``n`` (unit
    masses; Petrovic et al. 2005 §3, the hair's density and velocity fields). ``xs``, ``vs``
    (P, 3) the points in cell order (``sort_points``; ``vs`` (P, 0): density only).

    A column of nodes ``(i, j, ·)`` is gathered at once from the four columns of cells around
    it — a column's cells are one run of the sorted points — in the order ``(ci, cj)``, then the
    cells up the column, each cell's points in point order: a fixed order, whatever the threads.
    A column of nodes no point reaches is skipped and left as it was (no point reads it): most
    of a head's box is empty."""
    with_v = vs.shape[1] > 0
    my, mz = ny + 1, nz + 1
    for col in prange((nx + 1) * my):
        ni = col // my
        nj = col % my
        reached = False
        for ci in range(max(ni - 1, 0), min(ni, nx - 1) + 1):
            for cj in range(max(nj - 1, 0), min(nj, ny - 1) + 1):
                c0 = (ci * ny + cj) * nz
                if start[c0 + nz] > start[c0]:
                    reached = True
        if not reached:
            continue
        base = col * mz
        for k in range(mz):
            rho[base + k] = 0.0
            if with_v:
                mom[base + k, 0] = 0.0
                mom[base + k, 1] = 0.0
                mom[base + k, 2] = 0.0
        for ci in range(max(ni - 1, 0), min(ni, nx - 1) + 1):
            for cj in range(max(nj - 1, 0), min(nj, ny - 1) + 1):
                c0 = (ci * ny + cj) * nz
                for e in range(start[c0], start[c0 + nz]):
                    a = xs[e, 0] - ci
                    b = xs[e, 1] - cj
                    ck = int(math.floor(xs[e, 2]))
                    d = xs[e, 2] - ck
                    wxy = (a if ni > ci else 1.0 - a) * (b if nj > cj else 1.0 - b)
                    for dk in range(2):
                        w = wxy * (d if dk else 1.0 - d)
                        n = base + ck + dk
                        rho[n] += w
                        if with_v:
                            mom[n, 0] += w * vs[e, 0]
                            mom[n, 1] += w * vs[e, 1]
                            mom[n, 2] += w * vs[e, 2]
        if with_v:
            # once a node, not once for each of the points that read it
            for k in range(mz):
                r = rho[base + k]
                if r > 0.0:
                    for c in range(3):
                        mom[base + k, c] /= r


@njit(cache=True)
def _place(xs, e):
    """Sorted point ``e``'s cell ``(i, j, k)`` and its place ``(a, b, d)`` in it, each in [0, 1)."""
    ci = int(math.floor(xs[e, 0]))
    cj = int(math.floor(xs[e, 1]))
    ck = int(math.floor(xs[e, 2]))
    return ci, cj, ck, xs[e, 0] - ci, xs[e, 1] - cj, xs[e, 2] - ck


@njit(cache=True, parallel=True)
def sample_density(xs, order, rho, ny, nz, out):
    """The density at each point (P,): the nodes' ``rho`` interpolated trilinearly."""
    mz = nz + 1
    my = ny + 1
    for e in prange(xs.shape[0]):
        ci, cj, ck, a, b, d = _place(xs, e)
        s = 0.0
        for di in range(2):
            wx = a if di else 1.0 - a
            for dj in range(2):
                wy = b if dj else 1.0 - b
                for dk in range(2):
                    wz = d if dk else 1.0 - d
                    s += wx * wy * wz * rho[((ci + di) * my + cj + dj) * mz + ck + dk]
        out[order[e]] = s


@njit(cache=True, parallel=True)
def volume_accel(xs, vs, order, rest_rho, rho, mom, ny, nz, cell, push, share, h, band, turn, out):
    """Each point's hair–hair acceleration ``out`` (3, P) (world; ``turn`` (3, 3) the grid's
    axes → the world's), the points taken sorted (``xs``, ``vs`` (P, 3), point ``order[e]``):

    * friction (Petrovic et al. 2005 §3, hair–hair friction as the filtered velocity field):
      over a substep ``h`` the point's velocity goes ``share`` of the way to the grid's,
      ``v' = (1 − share) v + share · V(x)`` with ``V(x) = Σ_n w_n V_n``; as an acceleration
      held over the substep, ``share · (V(x) − v) / h``. With unit masses
      ``Σ_p V(x_p) = Σ_n V_n Σ_p w_np = Σ_n M_n = Σ_p v_p``: the exchange keeps the hair's
      momentum.
    * repulsion (§3's density field, pushed down its gradient above a threshold as production
      tools do): where the density ``ρ(x)`` exceeds the point's groom density ``ρ₀`` by more
      than ``band``, ``a = −push · cell · e · g / max(|g|, 1)`` with the excess
      ``e = ρ / ρ₀ − 1 − band`` and ``g = cell ∇ρ / ρ`` — an overlap of ``e`` cells pushed as
      the strand pairs push one of that depth.

    ``rest_rho`` (P,) in point order; ``rho``, ``mom`` the nodes' density and velocity
    (``gather_nodes``)."""
    mz = nz + 1
    my = ny + 1
    f = share / h
    for e in prange(xs.shape[0]):
        ci, cj, ck, a, b, d = _place(xs, e)
        r = 0.0
        g0 = 0.0
        g1 = 0.0
        g2 = 0.0
        v0 = 0.0
        v1 = 0.0
        v2 = 0.0
        for di in range(2):
            wx = a if di else 1.0 - a
            sx = 1.0 if di else -1.0
            for dj in range(2):
                wy = b if dj else 1.0 - b
                sy = 1.0 if dj else -1.0
                for dk in range(2):
                    wz = d if dk else 1.0 - d
                    sz = 1.0 if dk else -1.0
                    n = ((ci + di) * my + cj + dj) * mz + ck + dk
                    rn = rho[n]
                    w = wx * wy * wz
                    r += w * rn
                    g0 += sx * wy * wz * rn
                    g1 += wx * sy * wz * rn
                    g2 += wx * wy * sz * rn
                    v0 += w * mom[n, 0]
                    v1 += w * mom[n, 1]
                    v2 += w * mom[n, 2]
        o0 = f * (v0 - vs[e, 0])
        o1 = f * (v1 - vs[e, 1])
        o2 = f * (v2 - vs[e, 2])
        p = order[e]
        ex = r / rest_rho[p] - 1.0 - band
        if push > 0.0 and ex > 0.0:
            # g0..g2 are ∂ρ/∂x in grid units: already the gradient times the cell
            gn = math.sqrt(g0 * g0 + g1 * g1 + g2 * g2) / r
            k = -push * cell * ex / (r * max(gn, 1.0))
            l0, l1, l2 = k * g0, k * g1, k * g2
            o0 += turn[0, 0] * l0 + turn[0, 1] * l1 + turn[0, 2] * l2
            o1 += turn[1, 0] * l0 + turn[1, 1] * l1 + turn[1, 2] * l2
            o2 += turn[2, 0] * l0 + turn[2, 1] * l1 + turn[2, 2] * l2
        out[0, p] = o0
        out[1, p] = o1
        out[2, p] = o2


@njit(cache=True, parallel=True)
def strands_volume(pos, prev, q, h, vol, start, rho, mom):
    """``interaction.Volume.accel`` inside a kernel (the Strands substeps' one launch,
    ``kernels.verlet.hair_hair``), with the numpy code's operations in its order: the points
    ``pos`` (3, n, S) at ``q`` (3, nS) in the head's frame, point-major as ``pos.reshape(3, -1)``,
    moving at ``(pos − prev) / h``; the grid over their box in cells of ``vol``'s ``cell``, one
    cell's margin each side (``Volume._grid``), then ``cell_ids``, ``count_sort``,
    ``sort_points``, ``gather_nodes`` and ``volume_accel`` into ``vol``'s ``acc`` (3, nS), world.

    ``vol`` = ``(cell, share, push, band, max_cells, turn, rest_rho, vel, cell_of, order, xs, vs,
    acc, grid)``: the settings as ``Volume.accel`` passes them, the grid's limit on its cells,
    the groom's density at each point and scratch the size of the points; ``grid`` (5,) float64
    written: the grid's cells along x, y, z, its nodes, and 0 — or 1 where the grid would be
    larger than ``max_cells`` (nothing else is done: the caller refuses it by name, as
    ``Volume._grid`` does), 2 where a point is not finite. ``start``, ``rho``, ``mom``: the
    grid's lists and nodes, scratch its caller keeps, replaced by larger ones when the grid
    outgrows them. Returns ``(ok, start, rho, mom)``."""
    (cell, share, push, band, max_cells, turn, rest_rho, vel, cell_of, order, xs, vs, acc, grid) = vol
    n, num = pos.shape[1], pos.shape[2]
    count = q.shape[1]
    for p in prange(count):
        j, s = p // num, p % num
        for c in range(3):
            vel[c, p] = (pos[c, j, s] - prev[c, j, s]) / h
    # the box: each chunk's least and greatest, then theirs (a minimum is exact in any order)
    chunks = (count + 4095) // 4096
    part = np.empty((chunks, 7))
    for k in prange(chunks):
        lo, hi = k * 4096, min((k + 1) * 4096, count)
        finite = 1.0
        for c in range(3):
            a = b = q[c, lo]
            for p in range(lo, hi):
                x = q[c, p]
                if not (abs(x) < np.inf):
                    finite = 0.0
                a = min(a, x)
                b = max(b, x)
            part[k, c], part[k, 3 + c] = a, b
        part[k, 6] = finite
    scale = 1.0 / cell
    dims = np.empty(3)
    origin = np.empty(3)
    for c in range(3):
        a, b = part[0, c], part[0, 3 + c]
        for k in range(1, chunks):
            a = min(a, part[k, c])
            b = max(b, part[k, 3 + c])
        origin[c] = math.floor(a * scale) - 1.0
        dims[c] = math.floor(b * scale) - origin[c] + 2
    grid[4] = 0.0
    for k in range(chunks):
        if part[k, 6] == 0.0:
            grid[4] = 2.0
    if grid[4] == 0.0 and dims[0] * dims[1] * dims[2] > max_cells:
        grid[4] = 1.0
    grid[0], grid[1], grid[2] = dims[0], dims[1], dims[2]
    if grid[4] != 0.0:
        return False, start, rho, mom
    nx, ny, nz = int(dims[0]), int(dims[1]), int(dims[2])
    cells, nodes = nx * ny * nz, (nx + 1) * (ny + 1) * (nz + 1)
    grid[3] = nodes
    if start.size < cells + 1:
        start = np.empty(cells + 1, np.int64)
    if rho.shape[0] < nodes:
        rho, mom = np.empty(nodes), np.empty((nodes, 3))
    cell_ids(q, scale, origin, ny, nz, cell_of)
    count_sort(cell_of, cells, start[:cells + 1], order)
    sort_points(q, vel, scale, origin, order, xs, vs)
    gather_nodes(xs, vs, start[:cells + 1], nx, ny, nz, rho[:nodes], mom[:nodes])
    volume_accel(xs, vs, order, rest_rho, rho[:nodes], mom[:nodes], ny, nz, cell, push, share, h, band, turn, acc)
    return True, start, rho, mom


def _as_called():
    """Every kernel with the argument types ``interaction.Volume`` passes (float64 rows and
    sorted copies, int64 ids and lists)."""
    q = np.array([[0.02, 0.08], [0.03, 0.07], [0.04, 0.06]])
    scale, origin = 10.0, np.zeros(3)
    cell_of, start, order = np.empty(2, np.int64), np.empty(2, np.int64), np.empty(2, np.int64)
    cell_ids(q, scale, origin, 1, 1, cell_of)
    count_sort(cell_of, 1, start, order)
    xs = np.empty((2, 3))
    rho, mom = np.empty(8), np.empty((8, 3))
    for vel, vs in ((np.zeros((3, 2)), np.empty((2, 3))), (np.zeros((3, 0)), np.empty((2, 0)))):
        sort_points(q, vel, scale, origin, order, xs, vs)
        gather_nodes(xs, vs, start, 1, 1, 1, rho, mom)
    dens = np.empty(2)
    sample_density(xs, order, rho, 1, 1, dens)
    vs = np.zeros((2, 3))
    gather_nodes(xs, vs, start, 1, 1, 1, rho, mom)
    volume_accel(xs, vs, order, np.ones(2), rho, mom, 1, 1, 0.1, 1.0, 0.5, 0.01, 0.01, np.eye(3),
                 np.empty((3, 2)))


# (what an artist reads while it runs, the call that compiles it as the core calls it)
WARM_UPS = (("hair volume", _as_called),)
