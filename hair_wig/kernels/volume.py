"""Hair–hair interaction through a volume (Petrovic, Henne, Anderson 2005, *Volumetric Methods
for Simulation and Rendering of Hair*, Pixar Technical Memo 06-08, §3): the points are counted
into a uniform grid, each grid node gathers the trilinear-weighted density and momentum of the
points around it, and each point reads back the grid's smoothed velocity (hair–hair friction)
and the density's gradient (hair pushed out of where it is packed tighter than in the groom).

Points are rows ``(3, P)`` float64 in grid units (``fx = q / cell − origin``, so a node is at
integer coordinates); cells and nodes are numbered x-major, ``(i · ny + j) · nz + k``. Every
grid quantity is *gathered*: a node sums the points of its eight cells, cell by cell, each
cell's points in point order (a counting sort, in one serial pass), so a result is the same bit
for bit with 1 or N threads and run to run — no atomics, no scattered sums.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(cache=True)
def _place(fx, p):
    """Point ``p``'s cell ``(i, j, k)`` and its place ``(a, b, d)`` in it, each in [0, 1)."""
    ci = int(math.floor(fx[0, p]))
    cj = int(math.floor(fx[1, p]))
    ck = int(math.floor(fx[2, p]))
    return ci, cj, ck, fx[0, p] - ci, fx[1, p] - cj, fx[2, p] - ck


@njit(cache=True, parallel=True)
def grid_coords(q, scale, origin, fx):
    """Points ``q`` (3, P) → grid coordinates ``fx`` (3, P): ``q · scale − origin`` (``scale``
    1 / cell, ``origin`` (3,) whole numbers as floats: subtracting a whole number from a value
    of its size is exact, so where the grid starts changes no point's place within its cell)."""
    p = q.shape[1]
    for i in prange(p):
        for k in range(3):
            fx[k, i] = q[k, i] * scale - origin[k]


@njit(cache=True)
def bin_points(fx, nx, ny, nz, start, order):
    """Counting sort of the points by cell: ``start`` (C + 1,) each cell's first entry in
    ``order`` (P,), a cell's points in point order. One serial pass (a parallel count would need
    atomics or an order that depends on the threads)."""
    p = fx.shape[1]
    cells = nx * ny * nz
    for c in range(cells + 1):
        start[c] = 0
    for i in range(p):
        c = (int(math.floor(fx[0, i])) * ny + int(math.floor(fx[1, i]))) * nz + int(math.floor(fx[2, i]))
        start[c + 1] += 1
    for c in range(cells):
        start[c + 1] += start[c]
    fill = start[:-1].copy()
    for i in range(p):
        c = (int(math.floor(fx[0, i])) * ny + int(math.floor(fx[1, i]))) * nz + int(math.floor(fx[2, i]))
        order[fill[c]] = i
        fill[c] += 1


@njit(cache=True, parallel=True)
def gather_nodes(fx, vel, start, order, nx, ny, nz, rho, mom):
    """Each node's density ``rho`` (N,) and velocity ``mom`` (3, N) (N = (nx+1)(ny+1)(nz+1)):
    ``ρ_n = Σ_p w_np``, the momentum ``M_n = Σ_p w_np v_p`` and the velocity ``V_n = M_n / ρ_n``
    (0 where no point reaches), ``w_np`` the trilinear weight of point ``p`` at node ``n`` (unit
    masses; Petrovic et al. 2005 §3, the hair's density and velocity fields). ``vel`` (3, P), or
    (3, 0): density only.

    A column of nodes ``(i, j, ·)`` is gathered at once from the four columns of cells around
    it — a column's cells are one run of ``order`` — in the order ``(ci, cj)``, then the cells
    up the column, each cell's points in point order: a fixed order, whatever the threads. A
    column of nodes no point reaches is skipped and left as it was (no point reads it): most of
    a head's box is empty."""
    with_v = vel.shape[1] > 0
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
                mom[0, base + k] = 0.0
                mom[1, base + k] = 0.0
                mom[2, base + k] = 0.0
        for ci in range(max(ni - 1, 0), min(ni, nx - 1) + 1):
            for cj in range(max(nj - 1, 0), min(nj, ny - 1) + 1):
                c0 = (ci * ny + cj) * nz
                for e in range(start[c0], start[c0 + nz]):
                    p = order[e]
                    a = fx[0, p] - ci
                    b = fx[1, p] - cj
                    ck = int(math.floor(fx[2, p]))
                    d = fx[2, p] - ck
                    wxy = (a if ni > ci else 1.0 - a) * (b if nj > cj else 1.0 - b)
                    for dk in range(2):
                        w = wxy * (d if dk else 1.0 - d)
                        n = base + ck + dk
                        rho[n] += w
                        if with_v:
                            mom[0, n] += w * vel[0, p]
                            mom[1, n] += w * vel[1, p]
                            mom[2, n] += w * vel[2, p]
        if with_v:
            # once a node, not once for each of the points that read it
            for k in range(mz):
                r = rho[base + k]
                if r > 0.0:
                    for c in range(3):
                        mom[c, base + k] /= r


@njit(cache=True, parallel=True)
def sample_density(fx, rho, ny, nz, out):
    """The density at each point (P,): the nodes' ``rho`` interpolated trilinearly."""
    mz = nz + 1
    my = ny + 1
    for p in prange(fx.shape[1]):
        ci, cj, ck, a, b, d = _place(fx, p)
        s = 0.0
        for di in range(2):
            wx = a if di else 1.0 - a
            for dj in range(2):
                wy = b if dj else 1.0 - b
                for dk in range(2):
                    wz = d if dk else 1.0 - d
                    s += wx * wy * wz * rho[((ci + di) * my + cj + dj) * mz + ck + dk]
        out[p] = s


@njit(cache=True, parallel=True)
def volume_accel(fx, vel, rest_rho, rho, mom, order, ny, nz, cell, push, share, h, band, turn, out):
    """Each point's hair–hair acceleration ``out`` (3, P) (world; ``turn`` (3, 3) the grid's
    axes → the world's):

    * friction (Petrovic et al. 2005 §3, hair–hair friction as the filtered velocity field):
      over a substep ``h`` the point's velocity goes ``share`` of the way to the grid's,
      ``v' = (1 − share) v + share · V(x)`` with ``V(x) = Σ_n w_n M_n / ρ_n``; as an
      acceleration held over the substep, ``share · (V(x) − v) / h``. With unit masses
      ``Σ_p V(x_p) = Σ_n (M_n / ρ_n) Σ_p w_np = Σ_n M_n = Σ_p v_p``: the exchange keeps the
      hair's momentum.
    * repulsion (§3's density field, pushed down its gradient above a threshold as production
      tools do): where the density ``ρ(x)`` exceeds the point's groom density ``ρ₀`` by more
      than ``band``, ``a = −push · cell · e · g / max(|g|, 1)`` with the excess
      ``e = ρ / ρ₀ − 1 − band`` and ``g = cell ∇ρ / ρ`` — an overlap of ``e`` cells pushed as
      the strand pairs push one of that depth.

    ``vel`` (3, P) world; ``rest_rho`` (P,); ``rho``, ``mom`` the nodes' density and velocity
    (``gather_nodes``);
    the points taken in cell ``order`` (neighbours read the same nodes), each written once."""
    mz = nz + 1
    my = ny + 1
    for e in prange(fx.shape[1]):
        p = order[e]
        ci, cj, ck, a, b, d = _place(fx, p)
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
                    v0 += w * mom[0, n]
                    v1 += w * mom[1, n]
                    v2 += w * mom[2, n]
        f = share / h
        o0 = f * (v0 - vel[0, p])
        o1 = f * (v1 - vel[1, p])
        o2 = f * (v2 - vel[2, p])
        r0 = rest_rho[p]
        e = r / r0 - 1.0 - band
        if push > 0.0 and e > 0.0:
            # g0..g2 are ∂ρ/∂fx: already the gradient times the cell
            gn = math.sqrt(g0 * g0 + g1 * g1 + g2 * g2) / r
            k = -push * cell * e / (r * max(gn, 1.0))
            l0, l1, l2 = k * g0, k * g1, k * g2
            o0 += turn[0, 0] * l0 + turn[0, 1] * l1 + turn[0, 2] * l2
            o1 += turn[1, 0] * l0 + turn[1, 1] * l1 + turn[1, 2] * l2
            o2 += turn[2, 0] * l0 + turn[2, 1] * l1 + turn[2, 2] * l2
        out[0, p] = o0
        out[1, p] = o1
        out[2, p] = o2


def _as_called():
    """Every kernel with the argument types ``interaction.Volume`` passes (float64 rows, int64
    counts and lists)."""
    q = np.array([[0.02, 0.08], [0.03, 0.07], [0.04, 0.06]])
    fx = np.empty((3, 2))
    grid_coords(q, 10.0, np.zeros(3), fx)
    start, order = np.empty(2, np.int64), np.empty(2, np.int64)
    bin_points(fx, 1, 1, 1, start, order)
    rho, mom = np.empty(8), np.empty((3, 8))
    for vel in (np.zeros((3, 2)), np.zeros((3, 0))):
        gather_nodes(fx, vel, start, order, 1, 1, 1, rho, mom)
    dens = np.empty(2)
    sample_density(fx, rho, 1, 1, dens)
    volume_accel(fx, np.zeros((3, 2)), np.ones(2), rho, mom, order, 1, 1, 0.1, 1.0, 0.5, 0.01, 0.01, np.eye(3),
                 np.empty((3, 2)))


# (what an artist reads while it runs, the call that compiles it as the core calls it)
WARM_UPS = (("hair volume", _as_called),)
