"""The collision field's per-point queries (SPEC §6.3; ``hair_wig.collision.MeshField`` holds the
field and says what each query means): the nearest node's distance (``node_values``), the grid's
trilinear distance and how far it may be off (``trilinear_rows``), the trilinear distance and its
gradient in float64 coordinates (``lookup``), each point's cells (``grid_cells``), the exact
closest point on the triangles listed for a point's list cell, signed by the pseudo-normal of its
feature (``exact_listed``), and what the frame asks of every point: the collider's signed
distance (``signed_distances``) and how far points lie inside their collision surface
(``held_depths``).

Every kernel is a ``prange`` over points, each iteration writing only its own point's outputs,
and does the numpy code's elementwise float32 / float64 operations in its order (numba does not
fuse multiply-adds without fastmath), so a query gives the numpy code's bits on any thread count
(tests/test_kernels_field.py). Two things differ, neither in a result: an exact query measures
fewer triangles (those the numpy code measured and then passed over cannot be the nearest; the
first nearest in the list is picked alike), and ``held_depths`` leaves out points it proves are
not inside their limit (−inf where the numpy code had a depth ≤ 0; what is reported,
``max(depth, 0)``, is the same). Where an exact query's list of triangles leaves a point's
distance in doubt (a seam's cell, beyond its list's reach) the kernels say so (``redo``) and the
caller searches every triangle with the numpy code. Small calls run on one thread (``launch``).

The field is passed as tuples built once at bind (``collision.grid.DistanceGrid._kernel_tuples``, the
triangles' from ``collision.triangles.TriangleIndex.use_lists``):

``nodes``  (distances (N,) f32, 1 / cell f32, shift (3,) f32, clamp (3,) f32, stride x, stride y)
``grid32`` (distances (N,) f32, origin (3,) f32, 1 / cell f32, last cell (3,) f32, stride x, stride y)
``grid64`` (distances (N,) f32, origin (3,) f64, cell f64, nodes per axis (3,) i64, cell f32)
``errors`` (error per list cell f32, untrusted per node bool (or empty), grid cells per list cell,
           list cells per axis (3,) i64, list cell size f64, list reach per list cell f32, how near
           each list cell lies to one where the grid is in doubt (``DistanceGrid._doubt_cells``) i16)
``tris``   (list starts i64, listed triangles i32, triangles (T, 19) f64 (``collision.triangles.triangle_rows``
           transposed: a triangle's numbers side by side), bounding spheres (T, 4) f32 (centre,
           radius), pseudo-normals (T, 7, 3) f32, prune slack f64, closest-point floor f64, then
           what decides the side beside an open edge (``collision.triangles.TriangleIndex.wind``,
           its items side by side — a tuple in a tuple cannot enter a parallel loop: which
           features are open (T, 7) bool — empty: none asks — and the whole mesh's triangles in
           clusters for ``kernels.winding.winding_point``, relative to the origin), then ``planes``
           (below), which rule a listed triangle out before it is measured, then the sub-cells'
           lists side by side (``kernels.grid_build.sub_lists``: each list cell's first sub-cell
           i32 — empty: none —, their starts i64 and triangles i32, sub-cells per side, the list
           cells' size f64 and count per axis (3,) i64), then the fine nodes' bricks
           (``kernels.grid_build.fine_nodes``: each list cell's brick i32 — empty: none —, the
           bricks' exact distances f32, fine cells per side))
``box``    (mesh box low (3,) f64, high (3,) f64, exact reach f32)
``planes`` (T, 16) f32: each triangle's plane and its edges' side planes (``_lower``)
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange

from .winding import winding_point

# Feature codes of a closest point on a triangle (a, b, c), as collision.py numbers them.
FACE = 0
# feature of an edge's clamped foot: [edge (ab, bc, ca)] × [t ≤ 0, inside, t ≥ 1]
_EDGE_FEATURES = np.array([1, 4, 2, 2, 5, 3, 1, 6, 3], np.int8)
_PRUNE = 1 + 1e-5                  # a triangle farther than this times the nearest one's distance goes

_F0 = np.float32(0.0)
_INF32 = np.float32(np.inf)
_INT32_MIN = -2147483648
_INT64_MIN = np.iinfo(np.int64).min


@njit(cache=True)
def _as_int32(g):
    """``float → int32`` as numpy's ``astype`` does on x86: truncation, and the 'integer
    indefinite' ``−2³¹`` for NaN and values beyond int32 (numba's own conversion leaves those
    undefined)."""
    if g >= -2147483648.0 and g < 2147483648.0:
        return int(g)
    return _INT32_MIN


@njit(cache=True)
def _as_int64(g):
    """``float → int64`` as numpy's ``astype`` does on x86 (see ``_as_int32``)."""
    if g >= -9.223372036854775808e18 and g < 9.223372036854775808e18:
        return int(g)
    return _INT64_MIN


@njit(cache=True)
def _wrap32(v):
    """An int64 ``v`` wrapped to int32, as numpy's int32 arithmetic overflows."""
    return ((v + 2147483648) & 0xFFFFFFFF) - 2147483648


@njit(cache=True)
def _clip01(x):
    """``np.clip(x, 0, 1)`` of a float64: NaN stays NaN."""
    if x != x:
        return x
    x = x if x > 0.0 else 0.0
    return x if x < 1.0 else 1.0


@njit(cache=True)
def _clip_int(i, lo, hi):
    return min(max(i, lo), hi)


# ---------------------------------------------------------------- the grid
@njit(cache=True)
def _node_axis(c, inv_cell, shift, top, clamp):
    """A float32 coordinate's nearest node along one axis, as int32 (``MeshField._node_values``:
    ``c / cell + shift``, truncated)."""
    g = c * inv_cell
    g = g + shift
    if clamp:
        if g > top:                            # np.minimum: NaN stays
            g = top
        if g < _F0:
            g = _F0
    return _as_int32(g)


@njit(cache=True, inline="always")
def _node_value(x, y, z, nodes, clamp):
    """The distance at the grid node nearest the float32 point (x, y, z) (``MeshField.
    _node_values``: int32 arithmetic, the flat index clipped by the gather)."""
    grid, inv_cell, shift, top, s0, s1 = nodes
    node = (_node_axis(x, inv_cell, shift[0], top[0], clamp) * s0
            + _node_axis(y, inv_cell, shift[1], top[1], clamp) * s1
            + _node_axis(z, inv_cell, shift[2], top[2], clamp))
    return grid[_clip_int(_wrap32(node), 0, grid.shape[0] - 1)]


@njit(cache=True)
def _corners(grid, base, s0, s1):
    """The 8 node values round the cell whose low corner is ``base``, in the order
    ``(ox, oy, oz)`` = 000, 001, 010, 011, 100, 101, 110, 111."""
    return (grid[base], grid[base + 1], grid[base + s1], grid[base + s1 + 1],
            grid[base + s0], grid[base + s0 + 1], grid[base + s0 + s1], grid[base + s0 + s1 + 1])


@njit(cache=True)
def _interpolate(c, fx, fy, fz):
    """The trilinear value at fractions (fx, fy, fz) of corners ``c`` — along x, then y, then z —
    and its partial interpolants."""
    c00 = c[0] + (c[4] - c[0]) * fx
    c01 = c[1] + (c[5] - c[1]) * fx
    c10 = c[2] + (c[6] - c[2]) * fx
    c11 = c[3] + (c[7] - c[3]) * fx
    c0 = c00 + (c10 - c00) * fy
    c1 = c01 + (c11 - c01) * fy
    return c0 + (c1 - c0) * fz, c00, c01, c10, c11, c0, c1


@njit(cache=True)
def _axis32(c, origin, inv_cell, last):
    """One float32 coordinate's cell (clipped; NaN: the first), its fraction and whether it
    lies within the grid (``MeshField.trilinear_rows``)."""
    g = c - origin
    g = g * inv_cell
    i = np.floor(g)
    inside = i >= _F0 and i <= last
    if not (i >= _F0):
        cell = 0
    elif i > last:
        cell = int(last)
    else:
        cell = int(i)
    return cell, g - i, inside


@njit(cache=True, inline="always")
def _trilinear32(x, y, z, grid32):
    """``MeshField.trilinear_rows`` at the float32 point (x, y, z): the distance (+inf beyond
    the grid), the clipped cell (i, j, k) and its flat index."""
    grid, origin, inv_cell, last, s0, s1 = grid32
    i, fx, in_x = _axis32(x, origin[0], inv_cell, last[0])
    j, fy, in_y = _axis32(y, origin[1], inv_cell, last[1])
    k, fz, in_z = _axis32(z, origin[2], inv_cell, last[2])
    base = i * s0 + j * s1 + k
    d = _interpolate(_corners(grid, base, s0, s1), fx, fy, fz)[0]
    if not (in_x and in_y and in_z):
        d = _INF32
    return d, i, j, k, base


@njit(cache=True, inline="always")
def _grid_error(i, j, k, base, errors):
    """How far the grid's distance may be off in grid cell (i, j, k) (flat ``base``): its list
    cell's error, inf where the cell is untrusted (``MeshField.distance_rows``)."""
    grid_error, untrusted, per, list_dims, _, _, _ = errors
    cell = ((i // per) * list_dims[1] + j // per) * list_dims[2] + k // per
    if untrusted.shape[0] and untrusted[base]:
        return _INF32
    return grid_error[cell]


@njit(cache=True)
def _axis64(c, origin, cell, n):
    """One float64 coordinate's cell (clipped), its fraction (float32) and whether it lies within
    the grid of ``n`` nodes (``MeshField.lookup``)."""
    g = (c - origin) / cell
    i = _clip_int(_as_int64(np.floor(g)), 0, n - 2)
    return i, np.float32(g - i), g >= 0.0 and g <= n - 1


@njit(cache=True, inline="always")
def _lookup64(x, y, z, grid64):
    """``MeshField.lookup`` at the float64 point (x, y, z): the trilinear distance (float32, +inf
    beyond the grid), its gradient (float32) and the clipped cell's flat index."""
    grid, origin, cell, dims, cell32 = grid64
    i, fx, in_x = _axis64(x, origin[0], cell, dims[0])
    j, fy, in_y = _axis64(y, origin[1], cell, dims[1])
    k, fz, in_z = _axis64(z, origin[2], cell, dims[2])
    base = (i * dims[1] + j) * dims[2] + k
    s0, s1 = dims[1] * dims[2], dims[2]
    c = _corners(grid, base, s0, s1)
    d, c00, c01, c10, c11, c0, c1 = _interpolate(c, fx, fy, fz)
    gx0 = (c[4] - c[0]) + ((c[6] - c[2]) - (c[4] - c[0])) * fy
    gx1 = (c[5] - c[1]) + ((c[7] - c[3]) - (c[5] - c[1])) * fy
    gx = gx0 + (gx1 - gx0) * fz
    gy0 = c10 - c00
    gy1 = c11 - c01
    gy = gy0 + (gy1 - gy0) * fz
    gz = c1 - c0
    if not (in_x and in_y and in_z):
        d = _INF32
    return d, gx / cell32, gy / cell32, gz / cell32, base


@njit(cache=True, inline="always")
def _list_cell(x, y, z, origin, errors):
    """The list cell (flat) holding the float64 point (x, y, z) (``MeshField._list_cell``)."""
    list_dims, h = errors[3], errors[4]
    i = _clip_int(_as_int64(np.floor((x - origin[0]) / h)), 0, list_dims[0] - 1)
    j = _clip_int(_as_int64(np.floor((y - origin[1]) / h)), 0, list_dims[1] - 1)
    k = _clip_int(_as_int64(np.floor((z - origin[2]) / h)), 0, list_dims[2] - 1)
    return (i * list_dims[1] + j) * list_dims[2] + k


@njit(cache=True, inline="always")
def cell_ijk(c, dims):
    """The flat cell ``c`` (x-major over ``dims`` (3,) cells) as its (i, j, k)."""
    return c // (dims[1] * dims[2]), (c // dims[2]) % dims[1], c % dims[2]


# ---------------------------------------------------------------- exact distances
@njit(cache=True)
def closest_on_row(qx, qy, qz, tri, t):
    """The closest point on triangle ``t`` of ``tri`` (T, 19) (``collision.triangles.triangle_rows``
    transposed, float64, relative to the grid's origin) to (qx, qy, qz) (``collision.
    closest_feet``: the plane's foot inside the triangle, else the nearest edge's clamped foot):
    the point and its feature."""
    ax, ay, az = tri[t, 0], tri[t, 1], tri[t, 2]
    abx, aby, abz = tri[t, 3], tri[t, 4], tri[t, 5]
    acx, acy, acz = tri[t, 6], tri[t, 7], tri[t, 8]
    bcx, bcy, bcz = tri[t, 9], tri[t, 10], tri[t, 11]
    d00, d01, d11 = tri[t, 12], tri[t, 13], tri[t, 14]
    inv_den, inv_d00, inv_d11, inv_ll = tri[t, 15], tri[t, 16], tri[t, 17], tri[t, 18]
    apx, apy, apz = qx - ax, qy - ay, qz - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    v = (d11 * d1 - d01 * d2) * inv_den
    w = (d00 * d2 - d01 * d1) * inv_den
    if v >= 0.0 and w >= 0.0 and v + w <= 1.0:      # the plane's foot (the edges' are not read)
        cx = ax + v * abx
        cy = ay + v * aby
        cz = az + v * abz
        return cx + w * acx, cy + w * acy, cz + w * acz, FACE
    t_ab = _clip01(d1 * inv_d00)
    t_ca = _clip01(d2 * inv_d11)
    bpx, bpy, bpz = apx - abx, apy - aby, apz - abz
    t_bc = _clip01((bcx * bpx + bcy * bpy + bcz * bpz) * inv_ll)
    ex, ey, ez = apx - t_ab * abx, apy - t_ab * aby, apz - t_ab * abz
    dist_ab = ex * ex + ey * ey + ez * ez
    ex, ey, ez = apx - t_ca * acx, apy - t_ca * acy, apz - t_ca * acz
    dist_ca = ex * ex + ey * ey + ez * ez
    ex, ey, ez = bpx - t_bc * bcx, bpy - t_bc * bcy, bpz - t_bc * bcz
    dist_bc = ex * ex + ey * ey + ez * ez
    on_bc = dist_bc < dist_ab
    least = dist_ab if (dist_ab != dist_ab or dist_ab <= dist_bc) else dist_bc    # np.minimum
    if dist_bc != dist_bc:
        least = dist_bc
    on_ca = dist_ca < least
    on_bc = on_bc and not on_ca
    if on_ca:
        s, ub, uc = t_ca, 0.0, t_ca
    elif on_bc:
        s, ub, uc = t_bc, 1 - t_bc, t_bc
    else:
        s, ub, uc = t_ab, t_ab, 0.0
    feature = _EDGE_FEATURES[3 * on_bc + 6 * on_ca + (s > 0.0) + (s >= 1.0)]
    cx = ax + ub * abx
    cy = ay + ub * aby
    cz = az + ub * abz
    return cx + uc * acx, cy + uc * acy, cz + uc * acz, feature


@njit(cache=True, inline="always")
def signed_closest(qx, qy, qz, best, bx, by, bz, normal, floor):
    """The signed distance of (qx, qy, qz) whose closest point on the mesh is (bx, by, bz), at
    squared distance ``best``, on a feature of pseudo-normal ``normal`` (3,) float32 — its side
    of that feature — and the outward direction there (the pseudo-normal itself where the point
    lies on the surface, within ``floor``)."""
    nx, ny, nz = np.float64(normal[0]), np.float64(normal[1]), np.float64(normal[2])
    dx, dy, dz = qx - bx, qy - by, qz - bz
    side = dx * nx + dy * ny + dz * nz
    sign = -1.0 if side < 0.0 else 1.0
    dist = math.sqrt(best)
    if dist > floor:
        w = sign / dist
        return sign * dist, dx * w, dy * w, dz * w
    nn = max(math.sqrt(nx * nx + ny * ny + nz * nz), 1e-300)      # on the surface
    return sign * dist, nx / nn, ny / nn, nz / nn


@njit(cache=True)
def _exact_point(qx, qy, qz, cell, tris):
    """``MeshField.exact`` for one point (qx, qy, qz) relative to the grid's origin, from the
    triangles listed for its list cell ``cell``: the first triangle whose bounding sphere's centre
    is nearest is measured first and bounds the distance; every listed triangle whose bounding
    sphere may come that near is measured exactly and the first nearest in the list kept — the
    numpy code's pick, so its bits (its few points measured more of them: it bounded the distance
    by the spheres' far sides). Its float32 spheres round by ~1e-7 of the coordinates, far inside
    the prune's slack (1e-5 of the mesh's size and of the distance). A triangle whose sphere
    passes is measured only where its plane and edges (``_lower``, less the same slack) do not
    rule it out too: hair lies within a triangle's size of the surface, where nearly every listed
    sphere passes — 6.5 of a list's 14 triangles were measured a point, on the bench's walked
    points — and the plane's bound is tight; the pick is the same (a triangle left out is
    farther than the first), and the query takes 9.0 against 14.7 ms at those 80 000 points.
    Returns whether any was listed, the signed distance, the closest point (relative), and the
    outward direction there.

    In a field queried over many frames, a list cell's sub-cell lists the triangles that may be
    nearest to its points (``tris[16:22]``, ``grid_build.sub_lists``), in the list's order, and the
    query reads that shorter list: the pick is the list's first nearest either way (every
    triangle left out is farther than the nearest), so the bits are the same, and on the bench's
    hair about 4 triangles are looked at instead of 16. A point outside its cell's box (a list
    cell clipped at the grid's side) reads the whole list."""
    start, listed, rows, spheres, normals, slack, floor = tris[:7]
    opened, planes = tris[7], tris[15]
    s, e = start[cell], start[cell + 1]
    if e <= s:
        return False, np.inf, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    sub = tris[16]
    if sub.shape[0] and sub[cell] >= 0:
        n, h = tris[19], tris[20]
        i, j, k = cell_ijk(cell, tris[21])
        fa = np.floor((qx / h - i) * n)
        fb = np.floor((qy / h - j) * n)
        fc = np.floor((qz / h - k) * n)
        if 0.0 <= fa < n and 0.0 <= fb < n and 0.0 <= fc < n:      # NaN reads the whole list
            q = sub[cell] + (int(fa) * n + int(fb)) * n + int(fc)
            s, e, listed = tris[17][q], tris[17][q + 1], tris[18]
    x32, y32, z32 = np.float32(qx), np.float32(qy), np.float32(qz)
    # squared distances: no root per listed triangle (the nearest is measured whichever centre
    # comes first, and the pick below is the first nearest in list order either way)
    near, first = _INF32, s
    for m in range(s, e):
        t = listed[m]
        dx, dy, dz = x32 - spheres[t, 0], y32 - spheres[t, 1], z32 - spheres[t, 2]
        dc = dx * dx + dy * dy + dz * dz
        if dc < near:
            near, first = dc, m
    fx, fy, fz, ff = closest_on_row(qx, qy, qz, rows, listed[first])
    dx, dy, dz = qx - fx, qy - fy, qz - fz
    first_d2 = dx * dx + dy * dy + dz * dz
    upper = math.sqrt(first_d2) * _PRUNE + slack
    best, pick, feat = np.inf, -1, 0
    bx = by = bz = 0.0
    for m in range(s, e):
        t = listed[m]
        if m == first:                        # measured already
            cx, cy, cz, f, d2 = fx, fy, fz, ff, first_d2
        else:
            dx32, dy32, dz32 = x32 - spheres[t, 0], y32 - spheres[t, 1], z32 - spheres[t, 2]
            # |centre − q| − r ≤ upper, squared (both sides ≥ 0); its float32 rounding is far
            # inside the prune's slack, as the root's was
            reach = np.float64(spheres[t, 3]) + upper
            if not (np.float64(dx32 * dx32 + dy32 * dy32 + dz32 * dz32) <= reach * reach):
                continue
            if np.float64(_lower(x32, y32, z32, planes, t)) - slack > upper:
                continue
            cx, cy, cz, f = closest_on_row(qx, qy, qz, rows, t)
            dx, dy, dz = qx - cx, qy - cy, qz - cz
            d2 = dx * dx + dy * dy + dz * dz
        if d2 < best or pick < 0:
            best, pick, feat, bx, by, bz = d2, t, f, cx, cy, cz
    sd, ox, oy, oz = signed_closest(qx, qy, qz, best, bx, by, bz, normals[pick, feat], floor)
    if opened.shape[0] and opened[pick, feat] and math.sqrt(best) > floor:
        # beside an open edge the pseudo-normal has no side: the whole mesh's winding number
        w = winding_point(qx, qy, qz, tris[8], tris[9], tris[10], tris[11], tris[12], tris[13], tris[14], -1)
        if (w > 0.5) != (sd < 0.0):
            sd, ox, oy, oz = -sd, -ox, -oy, -oz
    return True, sd, bx, by, bz, ox, oy, oz


@njit(cache=True, inline="always")
def fine_bounds(qx, qy, qz, cell, tris):
    """Bounds of the exact signed distance at (qx, qy, qz), relative to the grid's origin, in list
    cell ``cell``, without measuring a triangle: from the eight nodes of its fine cell in the
    cell's brick (``tris[22:25]``, ``grid_build.fine_nodes``), each node's distance ``f`` less
    and plus its distance ``r`` to the point — the signed distance is 1-Lipschitz within a brick,
    so it lies within ``[max(f − r), min(f + r)]``. Returns (whether there are bounds, lower,
    upper): none without a brick, beyond the cell's box, for NaN, or beside a node beyond the
    list's reach. The lower bound is within ~h/(2n)·(1 − cos) of the distance (the node most in
    line with the surface's normal): on the bench's hair it clears two thirds of the points an
    exact query would otherwise measure, at the cost of eight gathers."""
    first = tris[22]
    if not first.shape[0]:
        return False, 0.0, 0.0
    b = first[cell]
    if b < 0:
        return False, 0.0, 0.0
    n, h = tris[24], tris[20]
    i, j, k = cell_ijk(cell, tris[21])
    step = h / n
    fa = np.floor(qx / step - i * n)
    fb = np.floor(qy / step - j * n)
    fc = np.floor(qz / step - k * n)
    if not (0.0 <= fa < n and 0.0 <= fb < n and 0.0 <= fc < n):
        return False, 0.0, 0.0
    a, bb, e = int(fa), int(fb), int(fc)
    values = tris[23]
    m1 = n + 1
    at = b * m1 * m1 * m1
    lo, hi = -np.inf, np.inf
    for corner in range(8):
        da, db, de = corner >> 2, (corner >> 1) & 1, corner & 1
        f = np.float64(values[at + ((a + da) * m1 + bb + db) * m1 + e + de])
        if f != f:
            return False, 0.0, 0.0
        dx = qx - (i * h + (a + da) * step)
        dy = qy - (j * h + (bb + db) * step)
        dz = qz - (k * h + (e + de) * step)
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        if f - r > lo:
            lo = f - r
        if f + r < hi:
            hi = f + r
    return True, lo, hi


@njit(cache=True, inline="always")
def clear_of(qx, qy, qz, cell, lim, reach, tris):
    """Whether the exact signed distance at (qx, qy, qz) (float64, relative to the grid's origin,
    in list cell ``cell``) is proven at least ``lim`` and the exact query's within ``±reach``
    (where the callers take its value, not the grid's) — by ``fine_bounds``, each bound less the
    prune's slack (1e-5 of the mesh's size, far above the rounding of the nodes' float32 values
    and of the exact query itself). A point so cleared would be measured and found not inside:
    the callers' answers are the same, without the measurement."""
    ok, lo, hi = fine_bounds(qx, qy, qz, cell, tris)
    slack = tris[5]
    return ok and lo - slack >= max(lim, -reach) and hi + slack <= reach


@njit(cache=True, inline="always")
def box_distance(x, y, z, lo, hi):
    """The distance (float64; NaN for a NaN point) from the float64 point (x, y, z) to the box
    ``lo``–``hi`` (3,) (0 inside it): a lower bound of the distance to the mesh it holds."""
    acc = 0.0
    for k in range(3):
        c = x if k == 0 else (y if k == 1 else z)
        a, b = lo[k] - c, c - hi[k]
        g = a if (a != a or a >= b) else b
        g = g if (g != g or g >= 0.0) else 0.0
        acc += g * g
    return math.sqrt(acc)


@njit(cache=True, inline="always")
def _signed_point(x, y, z, grid64, errors, tris, box):
    """``MeshField.signed_distance`` for one float64 point: float32 (the grid's value, the
    distance to the mesh's box beyond the grid, the exact one where the lists say so) and
    whether every triangle must be searched (``MeshField._exact_in_band``'s ``redo``)."""
    origin = grid64[1]
    lo, hi, reach = box
    d, _, _, _, base = _lookup64(x, y, z, grid64)
    if not np.isfinite(d):                    # beyond the grid: the distance to the box
        d = np.float32(box_distance(x, y, z, lo, hi))
    grid_error, untrusted, per, list_dims, _, list_reach, _ = errors
    cell = _list_cell(x, y, z, origin, errors)
    err = grid_error[cell]
    if untrusted.shape[0] and untrusted[base]:
        err = _INF32
    if not (abs(d) < reach + err):
        return d, False
    known, sd, _, _, _, _, _, _ = _exact_point(x - origin[0], y - origin[1], z - origin[2], cell, tris)
    if known and abs(sd) <= list_reach[cell]:
        return np.float32(sd), False
    return d, abs(d) <= err and err > list_reach[cell]


@njit(cache=True, inline="always")
def in_doubt(x, y, z, d, cell, grid64, errors, tris):
    """Where the grid cannot be trusted to see the surface near the float64 field-space point
    (x, y, z) of list cell ``cell``, whose grid distance is ``d``: in a list cell that holds part of
    a seam, or a folded one (a part thinner than a cell) where ``|d|`` is within its error. There
    the exact signed distance and the outward direction from the cell's list, where it reaches:
    (True, sd, ox, oy, oz); elsewhere (False, d, 0, 0, 0) (``MeshField.contact_rows``)."""
    grid_error, list_reach, doubt = errors[0], errors[5], errors[6]
    k = doubt[cell]
    if k > 0 or (k == 0 and not abs(d) < grid_error[cell]):
        return False, d, 0.0, 0.0, 0.0
    origin = grid64[1]
    known, sd, _, _, _, ox, oy, oz = _exact_point(x - origin[0], y - origin[1], z - origin[2], cell, tris)
    if known and abs(sd) <= list_reach[cell]:
        return True, sd, ox, oy, oz
    return False, d, 0.0, 0.0, 0.0


@njit(cache=True, parallel=True)
def contact_rows(p, grid32, grid64, errors, tris, direction, d, g):
    """``MeshField.contact_rows``: at float64 field-space points ``p`` (3, N), the grid's
    distance (the trilinear one at the float32 point; with ``direction``, the float64 lookup's and
    its gradient into ``g`` (3, N)), exact where the grid is in doubt (``in_doubt``), into ``d``
    (N,) float64."""
    for n in prange(p.shape[1]):
        x, y, z = p[0, n], p[1, n], p[2, n]
        if direction:
            v, gx, gy, gz, _ = _lookup64(x, y, z, grid64)
            dist = np.float64(v)
            g[0, n], g[1, n], g[2, n] = np.float64(gx), np.float64(gy), np.float64(gz)
        else:
            dist = np.float64(_trilinear32(np.float32(x), np.float32(y), np.float32(z), grid32)[0])
        cell = _list_cell(x, y, z, grid64[1], errors)
        exact, sd, ox, oy, oz = in_doubt(x, y, z, dist, cell, grid64, errors, tris)
        if exact:
            dist = sd
            if direction:
                g[0, n], g[1, n], g[2, n] = ox, oy, oz
        d[n] = dist


# ---------------------------------------------------------------- the kernels
@njit(cache=True, parallel=True)
def node_values(x, nodes, clamp, out):
    """The distance (S,) float32 at the grid node nearest each point ``x`` (3, S) float32 rows,
    field space (``MeshField._node_values``), into ``out``; ``clamp``: coordinates beyond the
    grid first moved onto its box."""
    for p in prange(x.shape[1]):
        out[p] = _node_value(x[0, p], x[1, p], x[2, p], nodes, clamp)


@njit(cache=True, parallel=True)
def trilinear_rows(x, grid32, errors, want_error, d, err):
    """The trilinear distance (S,) float32 of points ``x`` (3, S) float32 rows, field space
    (+inf beyond the grid), into ``d``, and with ``want_error`` how far it may be off, into
    ``err`` (``MeshField.distance_rows``)."""
    for p in prange(x.shape[1]):
        v, i, j, k, base = _trilinear32(x[0, p], x[1, p], x[2, p], grid32)
        d[p] = v
        if want_error:
            err[p] = _grid_error(i, j, k, base, errors)


@njit(cache=True, parallel=True)
def lookup(p, grid64, d, grad):
    """The trilinear distance (N,) float32 and its gradient (3, N) float32 at points ``p``
    (3, N) float64 rows, field space (``MeshField.lookup``; +inf beyond the grid)."""
    for n in prange(p.shape[1]):
        v, gx, gy, gz, _ = _lookup64(p[0, n], p[1, n], p[2, n], grid64)
        d[n] = v
        grad[0, n] = gx
        grad[1, n] = gy
        grad[2, n] = gz


@njit(cache=True, parallel=True)
def grid_cells(p, grid64, errors, cell, base):
    """Each float64 point's (``p`` (3, N) rows) list cell and grid cell (flat, clipped)."""
    origin, size, dims = grid64[1], grid64[2], grid64[3]
    for n in prange(p.shape[1]):
        cell[n] = _list_cell(p[0, n], p[1, n], p[2, n], origin, errors)
        i = _axis64(p[0, n], origin[0], size, dims[0])[0]
        j = _axis64(p[1, n], origin[1], size, dims[1])[0]
        k = _axis64(p[2, n], origin[2], size, dims[2])[0]
        base[n] = (i * dims[1] + j) * dims[2] + k


@njit(cache=True, parallel=True)
def exact_listed(p, grid64, errors, tris, sd, closest, outward, known, cell):
    """``MeshField.exact`` from the listed triangles at points ``p`` (3, N) float64 rows, field
    space: signed distance (N,), closest point (N, 3) and outward direction (N, 3) float64,
    whether any triangle was listed (N,) and the list cell (N,)."""
    origin = grid64[1]
    for n in prange(p.shape[1]):
        x, y, z = p[0, n], p[1, n], p[2, n]
        c = _list_cell(x, y, z, origin, errors)
        cell[n] = c
        ok, s, cx, cy, cz, ox, oy, oz = _exact_point(x - origin[0], y - origin[1], z - origin[2], c, tris)
        known[n] = ok
        sd[n] = s
        if ok:
            closest[n, 0] = cx + origin[0]
            closest[n, 1] = cy + origin[1]
            closest[n, 2] = cz + origin[2]
        else:
            closest[n, 0] = closest[n, 1] = closest[n, 2] = 0.0
        outward[n, 0] = ox
        outward[n, 1] = oy
        outward[n, 2] = oz


@njit(cache=True, parallel=True)
def fine_rows(p, grid64, errors, tris, ok, lo, hi):
    """``fine_bounds`` at points ``p`` (3, N) float64 rows, field space: whether each has bounds
    (N,), and the lower and upper bounds (N,) float64 of its exact signed distance."""
    origin = grid64[1]
    for n in prange(p.shape[1]):
        x, y, z = p[0, n], p[1, n], p[2, n]
        c = _list_cell(x, y, z, origin, errors)
        ok[n], lo[n], hi[n] = fine_bounds(x - origin[0], y - origin[1], z - origin[2], c, tris)


@njit(cache=True, parallel=True)
def signed_distances(p, grid64, errors, tris, box, d, redo):
    """``MeshField.signed_distance`` at points ``p`` (3, N) float64 rows, field space: into ``d``
    (N,) float32, and ``redo`` (N,) where every triangle must be searched."""
    for n in prange(p.shape[1]):
        d[n], redo[n] = _signed_point(p[0, n], p[1, n], p[2, n], grid64, errors, tris, box)


@njit(cache=True, inline="always")
def _lower(x, y, z, planes, t):
    """A lower bound (float32) of the distance from the float32 point (x, y, z), relative to the
    grid's origin, to triangle ``t``: ``√(h² + s²)``, ``h`` its distance to the triangle's plane
    and ``s`` how far its foot there lies beyond the farthest of the triangle's edges (within the
    plane the triangle is at least that far). ``planes`` (T, 16) float32: the plane's unit normal
    and offset, then each edge's outward unit normal within the plane and offset
    (``collision.triangles.side_planes``)."""
    h = plane_offset(x, y, z, planes, t, 0)
    out = _F0
    for k in range(4, 16, 4):
        o = plane_offset(x, y, z, planes, t, k)
        if o > out:
            out = o
    return np.sqrt(h * h + out * out)


@njit(cache=True, inline="always")
def plane_offset(x, y, z, planes, t, k):
    """The float32 point (x, y, z)'s signed offset from plane ``k`` (0: the triangle's own, 4, 8,
    12: its edges' side planes) of triangle ``t`` of ``planes`` (``_lower``'s)."""
    return x * planes[t, k] + y * planes[t, k + 1] + z * planes[t, k + 2] - planes[t, k + 3]


@njit(cache=True, inline="always")
def _outside(x, y, z, below, lim, cell, errors, tris, planes):
    """Whether a point — (x, y, z) float32 relative to the grid's origin, in list cell ``cell``,
    whose grid distance is at least ``below`` (the trilinear value less its error) — is no nearer
    than ``lim`` on the outside, without measuring it exactly: every triangle within its cell's
    reach is listed, so it is at least ``low`` = the nearest listed triangle's lower bound
    (``_lower``; at most the reach) from the surface; when the grid's bound rules out the inside
    at that depth (``below > −low``), it is outside by ``low``, and when that is ``lim`` or more it
    is not inside its limit. ``low`` is less the prune's slack (1e-5 of the mesh's size), far
    above ``_lower``'s float32 rounding (~10 roundings of coordinates of ~the mesh's size)."""
    start, listed, slack = tris[0], tris[1], tris[5]
    low = np.float64(errors[5][cell])
    for m in range(start[cell], start[cell + 1]):
        b = np.float64(_lower(x, y, z, planes, listed[m]))
        if b < low:
            low = b
    low -= slack
    return low >= lim and below > -low


@njit(cache=True, parallel=True)
def held_depths(x, limit, nodes, slack, grid32, grid64, errors, tris, box, planes, depth, redo):
    """``Collider.held_depth`` per point of ``x`` (3, S) float32 rows, field space, with limits
    ``limit`` (S,) float32: ``limit − signed distance`` (float32) into ``depth`` where the point
    may be inside its limit, −inf where it is not (its depth would be ≤ 0: what ``held_depth``
    reports, ``max(depth, 0)``, is the same). Not inside: the grid's screen and its trilinear
    bound say so (``d ≥ limit + err``), or ``_outside``. ``redo``: where every triangle must be
    searched (``depth`` then holds the grid's). ``_outside`` and ``_signed_point`` are inlined:
    a call passing the field's arrays counts references to each, atomically, on every thread at
    every point (``walk.threads_colliders``; measured at 5000 × 16, 42 -> 36 ms on two threads)."""
    origin = grid64[1]
    for p in prange(x.shape[1]):
        depth[p] = -_INF32
        redo[p] = False
        px, py, pz = x[0, p], x[1, p], x[2, p]
        lim = limit[p]
        if not (_node_value(px, py, pz, nodes, False) < lim + slack):
            continue
        v, i, j, k, base = _trilinear32(px, py, pz, grid32)
        err = _grid_error(i, j, k, base, errors)
        if not (v < lim + err):
            continue
        x64, y64, z64 = np.float64(px), np.float64(py), np.float64(pz)
        cell = _list_cell(x64, y64, z64, origin, errors)
        if clear_of(x64 - origin[0], y64 - origin[1], z64 - origin[2], cell, np.float64(lim),
                    min(np.float64(errors[5][cell]), np.float64(box[2])), tris):
            continue
        if _outside(px - np.float32(origin[0]), py - np.float32(origin[1]), pz - np.float32(origin[2]),
                    v - err, lim, cell, errors, tris, planes):
            continue
        sd, again = _signed_point(np.float64(px), np.float64(py), np.float64(pz), grid64, errors, tris, box)
        depth[p] = lim - sd
        redo[p] = again


# ---------------------------------------------------------------- launching
# Below this many points (weighed by what a point costs) a kernel runs on the calling thread
# alone: waking the others costs more than they would save (measured on 2 cores: a launch of a
# 100-point kernel took 190 µs on two threads, 15 on one), and the walk calls the grid's kernels
# on a row of points per step. The results are the same bits either way.
SERIAL_POINTS = 1 << 15            # the grid's kernels: a few gathers a point
SERIAL_EXACT = 1 << 9              # kernels that may measure triangles: ~0.5 µs a point


def launch(kernel, points: int, *args, serial: int = SERIAL_POINTS) -> None:
    """``kernel(*args)``, on one thread when ``points`` is below ``serial``."""
    if points >= serial:
        kernel(*args)
        return
    was = numba.get_num_threads()
    if was == 1:
        kernel(*args)
        return
    numba.set_num_threads(1)           # this thread's setting only (numba's is per thread)
    try:
        kernel(*args)
    finally:
        numba.set_num_threads(was)
