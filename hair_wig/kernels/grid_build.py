"""Building the collision field's grid (SPEC §6.3; ``hair_wig.collision.grid.DistanceGrid`` says
what each part means): the triangles listed per list cell (``plane_lists``, ``sphere_lists``,
``merge_lists``), how far the grid may be off in each list cell (``list_errors``), the exact
closest point at every node near the surface (``band_nodes``), those closest points carried to
every other node (``sweep``) and each node's signed distance (``signed_nodes``).

A deforming collider (a head on an armature, a breathing body) builds its field every frame, so
the build is kernels, not numpy passes. Every kernel gives the same bits on any thread count:
the triangle loops visit triangles in order (a cell's list is in triangle order; a node keeps the
first nearest triangle), and each parallel iteration writes only its own slab's, line's or
node's values. Coordinates are relative to the grid's origin; node (i, j, k) lies at
(i, j, k) × cell.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .field import _exact_point, cell_ijk, closest_on_row


@njit(cache=True)
def _box(lo, hi, grow, inv, top, upward):
    """The cells (or nodes) of one axis that a triangle's extent [lo, hi] grown by ``grow``
    meets: floor of both ends (``upward``: the low end's ceiling — nodes, not cells), clipped to
    [0, top]."""
    a = (lo - grow) * inv
    i0 = int(math.ceil(a)) if upward else int(math.floor(a))
    i1 = int(math.floor((hi + grow) * inv))
    return min(max(i0, 0), top), min(max(i1, 0), top)


@njit(cache=True)
def _extent(corners, t, k):
    c = corners[t]
    return min(c[0, k], c[1, k], c[2, k]), max(c[0, k], c[1, k], c[2, k])


@njit(cache=True)
def _cells_of(corners, t, grow, inv, dims, upward):
    """The cells (or nodes: ``upward``) per axis that triangle ``t``'s box grown by ``grow``
    meets, clipped to ``dims``: i0, i1, j0, j1, k0, k1."""
    lo, hi = _extent(corners, t, 0)
    i0, i1 = _box(lo, hi, grow, inv, dims[0] - 1, upward)
    lo, hi = _extent(corners, t, 1)
    j0, j1 = _box(lo, hi, grow, inv, dims[1] - 1, upward)
    lo, hi = _extent(corners, t, 2)
    k0, k1 = _box(lo, hi, grow, inv, dims[2] - 1, upward)
    return i0, i1, j0, j1, k0, k1


@njit(cache=True)
def _open_lists(count):
    """After a counting pass (``count[c + 1]``: cell ``c``'s entries), its starts in place (CSR)
    and the lists to fill: the entries (int32) and where each cell's next one goes."""
    cells = count.shape[0] - 1
    for c in range(cells):
        count[c + 1] += count[c]
    return np.empty(count[cells], np.int32), count[:-1].copy()


@njit(cache=True)
def _list(sweep, count, listed, at, c, t):
    """Triangle ``t`` in cell ``c``'s list: counted on the first pass, written on the second."""
    if sweep == 0:
        count[c + 1] += 1
    else:
        listed[at[c]] = t
        at[c] += 1


@njit(cache=True)
def plane_lists(corners, faces, list_dims, h, grow, reach):
    """Triangles per list cell, as CSR (starts (C + 1,) int64, triangles int32, each cell's in
    triangle order): those whose box grown by ``grow`` meets the cell (side ``h``) and whose
    plane passes within ``reach`` of the cell's centre. ``corners`` (T, 3, 3) float32, ``faces``
    (T, 3) unit normals (NaN: a triangle of no area, listed nowhere)."""
    nx, ny, nz = list_dims[0], list_dims[1], list_dims[2]
    count = np.zeros(nx * ny * nz + 1, np.int64)
    inv = 1.0 / h
    listed, at = np.empty(0, np.int32), np.empty(0, np.int64)
    for sweep in range(2):
        if sweep == 1:
            listed, at = _open_lists(count)
        for t in range(corners.shape[0]):
            fx, fy, fz = np.float64(faces[t, 0]), np.float64(faces[t, 1]), np.float64(faces[t, 2])
            if not (fx == fx and fy == fy and fz == fz):
                continue
            ax, ay, az = np.float64(corners[t, 0, 0]), np.float64(corners[t, 0, 1]), np.float64(corners[t, 0, 2])
            i0, i1, j0, j1, k0, k1 = _cells_of(corners, t, grow, inv, list_dims, False)
            for i in range(i0, i1 + 1):
                sx = fx * ((i + 0.5) * h - ax)
                for j in range(j0, j1 + 1):
                    sy = sx + fy * ((j + 0.5) * h - ay)
                    for k in range(k0, k1 + 1):
                        if abs(sy + fz * ((k + 0.5) * h - az)) <= reach:
                            _list(sweep, count, listed, at, (i * ny + j) * nz + k, t)
    return count, listed


@njit(cache=True)
def sphere_lists(corners, centres, radii, list_dims, h, grow, wide, reach):
    """Triangles per ``wide`` list cell (others list none), as CSR like ``plane_lists``: those
    whose box grown by ``grow`` meets the cell and whose bounding sphere (``centres`` (3, T),
    ``radii`` (T,)) comes within the cell's ``reach`` of its box (grown 1e-5 for rounding)."""
    nx, ny, nz = list_dims[0], list_dims[1], list_dims[2]
    count = np.zeros(nx * ny * nz + 1, np.int64)
    inv = 1.0 / h
    half = 0.5 * h
    listed, at = np.empty(0, np.int32), np.empty(0, np.int64)
    for sweep in range(2):
        if sweep == 1:
            listed, at = _open_lists(count)
        for t in range(radii.shape[0]):
            cx, cy, cz, r = np.float64(centres[0, t]), np.float64(centres[1, t]), np.float64(centres[2, t]), radii[t]
            i0, i1, j0, j1, k0, k1 = _cells_of(corners, t, grow, inv, list_dims, False)
            for i in range(i0, i1 + 1):
                gx = max(abs((i + 0.5) * h - cx) - half, 0.0)
                for j in range(j0, j1 + 1):
                    gy = max(abs((j + 0.5) * h - cy) - half, 0.0)
                    for k in range(k0, k1 + 1):
                        c = (i * ny + j) * nz + k
                        if not wide[c]:
                            continue
                        gz = max(abs((k + 0.5) * h - cz) - half, 0.0)
                        if math.sqrt(gx * gx + gy * gy + gz * gz) - r <= reach[c] * (1 + 1e-5):
                            _list(sweep, count, listed, at, c, t)
    return count, listed


@njit(cache=True)
def merge_lists(start, listed, wide_start, wide_listed, wide):
    """The lists ``start, listed`` with each ``wide`` cell's list replaced by its list in
    ``wide_start, wide_listed`` (CSR, like ``plane_lists``)."""
    cells = start.shape[0] - 1
    out = np.zeros(cells + 1, np.int64)
    for c in range(cells):
        n = wide_start[c + 1] - wide_start[c] if wide[c] else start[c + 1] - start[c]
        out[c + 1] = out[c] + n
    merged = np.empty(out[cells], np.int32)
    for c in range(cells):
        if wide[c]:
            merged[out[c]:out[c + 1]] = wide_listed[wide_start[c]:wide_start[c + 1]]
        else:
            merged[out[c]:out[c + 1]] = listed[start[c]:start[c + 1]]
    return out, merged


@njit(cache=True, parallel=True)
def list_errors(start, listed, faces, coherent, sheet, fold, out):
    """How far the grid may be off in each list cell (``out`` (C,) float32): ``fold`` where its
    triangles' unit normals (``faces`` (T, 3)) sum to less than ``coherent`` per triangle (the
    surface folds within its reach), else ``sheet``."""
    for c in prange(start.shape[0] - 1):
        sx = sy = sz = 0.0
        for m in range(start[c], start[c + 1]):
            t = listed[m]
            sx += faces[t, 0]
            sy += faces[t, 1]
            sz += faces[t, 2]
        n = start[c + 1] - start[c]
        folded = n > 0 and math.sqrt(sx * sx + sy * sy + sz * sz) < coherent * n
        out[c] = fold if folded else sheet


SLABS = 16        # the band's nodes are measured in this many slabs across x, in parallel


@njit(cache=True, parallel=True)
def band_nodes(corners, faces, rows, dims, h, band, cp, src, feature):
    """The exact closest point (``cp`` (3, N) float32, ``src`` its triangle (N,) int32,
    ``feature`` its feature (N,) int8) at every node within ``band`` of the surface, in place
    (others are left as they are): each triangle measures the nodes of its box grown by
    ``band`` whose distance to its plane is within ``band``; a node keeps the first nearest
    triangle. ``rows`` (T, 19) float64 (``collision.triangles.triangle_rows`` transposed). Each
    slab of nodes across x is one ``prange`` iteration visiting the triangles in order."""
    nx, ny, nz = dims[0], dims[1], dims[2]
    best = np.full(nx * ny * nz, np.inf)
    inv = 1.0 / h
    hh = np.float32(h)             # a node where the sweep and the signs have it: float32(i) float32(h)
    band2 = band * band
    slabs = min(SLABS, nx)
    for slab in prange(slabs):
        s0, s1 = slab * nx // slabs, (slab + 1) * nx // slabs - 1
        for t in range(corners.shape[0]):
            i0, i1, j0, j1, k0, k1 = _cells_of(corners, t, band, inv, dims, True)
            i0, i1 = max(i0, s0), min(i1, s1)
            if i0 > i1:
                continue
            fx, fy, fz = np.float64(faces[t, 0]), np.float64(faces[t, 1]), np.float64(faces[t, 2])
            ax, ay, az = rows[t, 0], rows[t, 1], rows[t, 2]
            for i in range(i0, i1 + 1):
                x = np.float64(np.float32(i) * hh)
                for j in range(j0, j1 + 1):
                    y = np.float64(np.float32(j) * hh)
                    for k in range(k0, k1 + 1):
                        z = np.float64(np.float32(k) * hh)
                        # a triangle of no area (NaN plane) has no plane: its neighbours stand for it
                        if not (abs(fx * (x - ax) + fy * (y - ay) + fz * (z - az)) <= band):
                            continue
                        px, py, pz, f = closest_on_row(x, y, z, rows, t)
                        dx, dy, dz = x - px, y - py, z - pz
                        d2 = dx * dx + dy * dy + dz * dz
                        node = (i * ny + j) * nz + k
                        if d2 <= band2 and d2 < best[node]:
                            best[node] = d2
                            cp[0, node], cp[1, node], cp[2, node] = np.float32(px), np.float32(py), np.float32(pz)
                            src[node] = t
                            feature[node] = f


@njit(cache=True, inline="always")
def _d2(x, y, z, cp, node):
    dx = x - cp[0, node]
    dy = y - cp[1, node]
    dz = z - cp[2, node]
    return dx * dx + dy * dy + dz * dz


@njit(cache=True, parallel=True)
def sweep(cp, src, feature, dims, h, rounds):
    """Carry closest points from node to node along each axis, both ways, in place (a
    fast-sweeping closest-point transform): each node keeps the nearer of its own and its
    neighbour's closest point, with its triangle and feature. ``rounds`` sweeps of the three
    axes; each line of an axis is one ``prange`` iteration."""
    n = (dims[0], dims[1], dims[2])
    stride = (dims[1] * dims[2], dims[2], 1)
    hh = np.float32(h)
    for _ in range(rounds):
        for axis in range(3):
            a, b = (axis + 1) % 3, (axis + 2) % 3
            nb, count = n[b], n[axis]
            sa, sb, step = stride[a], stride[b], stride[axis]
            for line in prange(n[a] * nb):
                ia, ib = line // nb, line % nb
                base = ia * sa + ib * sb
                pa, pb = np.float32(ia) * hh, np.float32(ib) * hh
                for direction in range(2):
                    if direction == 0:
                        first, last, by = 1, count, -1
                    else:
                        first, last, by = count - 2, -1, 1
                    for i in range(first, last, -by):
                        node = base + i * step
                        other = node + by * step
                        if src[other] < 0:
                            continue
                        pi = np.float32(i) * hh
                        if axis == 0:
                            x, y, z = pi, pa, pb
                        elif axis == 1:
                            x, y, z = pb, pi, pa
                        else:
                            x, y, z = pa, pb, pi
                        if src[node] < 0 or _d2(x, y, z, cp, other) < _d2(x, y, z, cp, node):
                            cp[0, node], cp[1, node], cp[2, node] = cp[0, other], cp[1, other], cp[2, other]
                            src[node] = src[other]
                            feature[node] = feature[other]


@njit(cache=True, parallel=True)
def signed_nodes(cp, src, feature, normals, dims, h, out):
    """Each node's signed distance (``out`` (N,) float32): to its closest point, negative where
    it lies behind the pseudo-normal (``normals`` (T, 7, 3) float32) of that point's feature
    (where no closest point reached, ``cp``'s placeholder far away, positive)."""
    ny, nz = dims[1], dims[2]
    hh = np.float32(h)
    for i in prange(dims[0]):
        x = np.float32(i) * hh
        for j in range(ny):
            y = np.float32(j) * hh
            for k in range(nz):
                node = (i * ny + j) * nz + k
                dx, dy, dz = x - cp[0, node], y - cp[1, node], np.float32(k) * hh - cp[2, node]
                d = np.sqrt(dx * dx + dy * dy + dz * dz)
                t = src[node]
                if t >= 0:
                    nn = normals[t, feature[node]]
                    if dx * nn[0] + dy * nn[1] + dz * nn[2] < 0:
                        d = -d
                out[node] = d


@njit(cache=True, parallel=True)
def carry_nodes(dist, nodes, tri_of, bary, grow, value, triangles, shift):
    """The nodes ``nodes`` of the grid ``dist`` (N,) float32 carried with a deforming mesh, in
    place (``collision.grid.DistanceGrid.deformed``): each one's ``value`` less its closest
    point's move along ``grow`` (n, 3) float32 — the move of triangle ``tri_of`` at its
    barycentric weights ``bary`` (n, 3) float32, from its corners' ``shift`` (V, 3) float64
    (``triangles`` (T, 3) int64) — in float64, rounded to float32 once, subtracted in float32.
    Each node is written by its own iteration: the same bits on any number of threads."""
    for k in prange(nodes.shape[0]):
        t = tri_of[k]
        a, b, c = triangles[t, 0], triangles[t, 1], triangles[t, 2]
        wa, wb, wc = np.float64(bary[k, 0]), np.float64(bary[k, 1]), np.float64(bary[k, 2])
        mx = wa * shift[a, 0] + wb * shift[b, 0] + wc * shift[c, 0]
        my = wa * shift[a, 1] + wb * shift[b, 1] + wc * shift[c, 1]
        mz = wa * shift[a, 2] + wb * shift[b, 2] + wc * shift[c, 2]
        along = np.float64(grow[k, 0]) * mx + np.float64(grow[k, 1]) * my + np.float64(grow[k, 2]) * mz
        dist[nodes[k]] = value[k] - np.float32(along)


@njit(cache=True, parallel=True)
def pseudo_normals(v, tri, edge_of, edges, out):
    """Angle-weighted pseudo-normals (T, 7, 3) float64 of every triangle's features into ``out``
    (``collision.triangles.pseudo_normals``, its plain reference): the unit face normal, each
    corner's sum of the faces round it weighted by their angles there, each edge's sum of its
    faces (Bærentzen & Aanæs 2005). ``v`` (V, 3) float64, ``tri`` (T, 3) int64, ``edge_of`` (3T,)
    which of the mesh's ``edges`` each triangle's edge ab, bc, ca is (``triangles.edges``). Each
    triangle's normal and angles are its own iteration; the sums over triangles are added on one
    thread in triangle order, as numpy's ``bincount`` adds them: the same bits on any thread
    count."""
    nt = tri.shape[0]
    face = np.empty((nt, 3))
    angle = np.empty((nt, 3))
    for t in prange(nt):
        a, b, c = tri[t, 0], tri[t, 1], tri[t, 2]
        ux, uy, uz = v[b, 0] - v[a, 0], v[b, 1] - v[a, 1], v[b, 2] - v[a, 2]
        wx, wy, wz = v[c, 0] - v[a, 0], v[c, 1] - v[a, 1], v[c, 2] - v[a, 2]
        nx, ny, nz = uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx
        norm = max(math.sqrt(nx * nx + ny * ny + nz * nz), 1e-300)
        face[t, 0], face[t, 1], face[t, 2] = nx / norm, ny / norm, nz / norm
        for k in range(3):
            p, q, r = tri[t, k], tri[t, (k + 1) % 3], tri[t, (k + 2) % 3]
            ex, ey, ez = v[q, 0] - v[p, 0], v[q, 1] - v[p, 1], v[q, 2] - v[p, 2]
            fx, fy, fz = v[r, 0] - v[p, 0], v[r, 1] - v[p, 1], v[r, 2] - v[p, 2]
            lengths = math.sqrt(ex * ex + ey * ey + ez * ez) * math.sqrt(fx * fx + fy * fy + fz * fz)
            cos = (ex * fx + ey * fy + ez * fz) / max(lengths, 1e-300)
            angle[t, k] = math.acos(min(max(cos, -1.0), 1.0))
    vn = np.zeros((v.shape[0], 3))
    en = np.zeros((edges, 3))
    for t in range(nt):
        for k in range(3):
            p, e = tri[t, k], edge_of[3 * t + k]
            for j in range(3):
                vn[p, j] += face[t, j] * angle[t, k]
                en[e, j] += face[t, j]
    for t in prange(nt):
        for j in range(3):
            out[t, 0, j] = face[t, j]
            for k in range(3):
                out[t, 1 + k, j] = vn[tri[t, k], j]
                out[t, 4 + k, j] = en[edge_of[3 * t + k], j]


@njit(cache=True, parallel=True)
def doubled_areas(v, tri, out):
    """Twice each triangle's area (T,) float64 into ``out``: the length of (b − a) × (c − a)
    (``collision.triangles.usable_triangles``' test for faces of no area). Each triangle its own
    iteration."""
    for t in prange(tri.shape[0]):
        a, b, c = tri[t, 0], tri[t, 1], tri[t, 2]
        ux, uy, uz = v[b, 0] - v[a, 0], v[b, 1] - v[a, 1], v[b, 2] - v[a, 2]
        wx, wy, wz = v[c, 0] - v[a, 0], v[c, 1] - v[a, 1], v[c, 2] - v[a, 2]
        nx, ny, nz = uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx
        out[t] = math.sqrt(nx * nx + ny * ny + nz * nz)


@njit(cache=True, parallel=True)
def triangle_numbers(rel, tri, rows, corners, centres, radii, planes):
    """Each triangle's numbers as the queries read them, from its corners ``rel`` (V, 3) float64
    relative to the grid's origin (``collision.triangles.TriangleIndex``; the plain references
    are ``triangle_rows``, ``side_planes`` and the numpy lines beside them there):
    ``rows`` (T, 19) float64 — a, ab, ac, bc and their dot products (``triangles._gram``);
    ``corners`` (T, 3, 3) float32; ``centres`` (3, T) float32, the corners' mean, and ``radii``
    (T,) float32, the farthest corner from it; ``planes`` (T, 16) float32 — the unit normal n and
    n·a, then per edge (a→b, b→c, c→a) its unit outward normal in the plane, (end − start) × n,
    and that times the start. Each triangle its own iteration."""
    for t in prange(tri.shape[0]):
        a, b, c = tri[t, 0], tri[t, 1], tri[t, 2]
        ax, ay, az = rel[a, 0], rel[a, 1], rel[a, 2]
        bx, by, bz = rel[b, 0], rel[b, 1], rel[b, 2]
        cx, cy, cz = rel[c, 0], rel[c, 1], rel[c, 2]
        abx, aby, abz = bx - ax, by - ay, bz - az
        acx, acy, acz = cx - ax, cy - ay, cz - az
        bcx, bcy, bcz = cx - bx, cy - by, cz - bz
        d00 = abx * abx + aby * aby + abz * abz
        d01 = abx * acx + aby * acy + abz * acz
        d11 = acx * acx + acy * acy + acz * acz
        ll = bcx * bcx + bcy * bcy + bcz * bcz
        den = d00 * d11 - d01 * d01
        r = rows[t]
        r[0], r[1], r[2], r[3], r[4], r[5] = ax, ay, az, abx, aby, abz
        r[6], r[7], r[8], r[9], r[10], r[11] = acx, acy, acz, bcx, bcy, bcz
        r[12], r[13], r[14] = d00, d01, d11
        r[15] = 1.0 / den if den != 0 else 1.0
        r[16] = 1.0 / d00 if d00 != 0 else 1.0
        r[17] = 1.0 / d11 if d11 != 0 else 1.0
        r[18] = 1.0 / ll if ll != 0 else 1.0
        mx, my, mz = (ax + bx + cx) / 3.0, (ay + by + cy) / 3.0, (az + bz + cz) / 3.0
        far = 0.0
        for k in range(3):
            x, y, z = rel[tri[t, k], 0], rel[tri[t, k], 1], rel[tri[t, k], 2]
            corners[t, k, 0], corners[t, k, 1], corners[t, k, 2] = x, y, z
            far = max(far, math.sqrt((x - mx) ** 2 + (y - my) ** 2 + (z - mz) ** 2))
        centres[0, t], centres[1, t], centres[2, t] = mx, my, mz
        radii[t] = far
        nx, ny, nz = aby * acz - abz * acy, abz * acx - abx * acz, abx * acy - aby * acx
        norm = math.sqrt(nx * nx + ny * ny + nz * nz)       # no area: NaN, which fails every test
        nx, ny, nz = nx / norm, ny / norm, nz / norm
        p = planes[t]
        p[0], p[1], p[2], p[3] = nx, ny, nz, nx * ax + ny * ay + nz * az
        for k in range(3):
            s, e = tri[t, k], tri[t, (k + 1) % 3]
            sx, sy, sz = rel[s, 0], rel[s, 1], rel[s, 2]
            ex, ey, ez = rel[e, 0] - sx, rel[e, 1] - sy, rel[e, 2] - sz
            ox, oy, oz = ey * nz - ez * ny, ez * nx - ex * nz, ex * ny - ey * nx
            norm = max(math.sqrt(ox * ox + oy * oy + oz * oz), 1e-300)
            ox, oy, oz = ox / norm, oy / norm, oz / norm
            p[4 + 4 * k], p[5 + 4 * k], p[6 + 4 * k] = ox, oy, oz
            p[7 + 4 * k] = ox * sx + oy * sy + oz * sz


@njit(cache=True)
def cluster_shapes(v, t, member, clusters, centres, normals, radii):
    """Each cluster's area-weighted centre (K, 3) (the plain mean where it has no area), summed
    halved normal (K, 3) and the radius (K,) of a ball about the centre holding its triangles'
    corners, triangle ``i`` of ``t`` (T, 3) at vertices ``v`` in cluster ``member[i]``
    (``collision.solid._cluster_shapes``, its plain reference, for the winding number's
    clusters). One thread, triangles in order: the sums are added as numpy's ``bincount`` adds
    them."""
    count = np.zeros(clusters)
    weight = np.zeros(clusters)
    at = np.zeros((clusters, 3))
    plain = np.zeros((clusters, 3))
    normals[:] = 0.0
    radii[:] = 0.0
    for i in range(t.shape[0]):
        a, b, c = t[i, 0], t[i, 1], t[i, 2]
        ux, uy, uz = v[b, 0] - v[a, 0], v[b, 1] - v[a, 1], v[b, 2] - v[a, 2]
        wx, wy, wz = v[c, 0] - v[a, 0], v[c, 1] - v[a, 1], v[c, 2] - v[a, 2]
        nx, ny, nz = 0.5 * (uy * wz - uz * wy), 0.5 * (uz * wx - ux * wz), 0.5 * (ux * wy - uy * wx)
        area = math.sqrt(nx * nx + ny * ny + nz * nz)
        k = member[i]
        count[k] += 1.0
        weight[k] += area
        for j in range(3):
            mid = (v[a, j] + v[b, j] + v[c, j]) / 3.0
            at[k, j] += area * mid
            plain[k, j] += mid
        normals[k, 0] += nx
        normals[k, 1] += ny
        normals[k, 2] += nz
    for k in range(clusters):
        for j in range(3):
            centres[k, j] = at[k, j] / max(weight[k], 1e-300) if weight[k] > 0 else plain[k, j] / count[k]
    for i in range(t.shape[0]):
        k = member[i]
        for m in range(3):
            x = t[i, m]
            d = math.sqrt((v[x, 0] - centres[k, 0]) ** 2 + (v[x, 1] - centres[k, 1]) ** 2
                          + (v[x, 2] - centres[k, 2]) ** 2)
            radii[k] = max(radii[k], d)


def _as_called():
    """The argument types ``collision.grid.DistanceGrid`` passes: a tetrahedron's grid."""
    v = np.array([[0.1, 0.1, 0.1], [1, 0.1, 0.1], [0.1, 1, 0.1], [0.1, 0.1, 1]], np.float64)
    t = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], np.int64)
    corners = v[t].astype(np.float32)
    fn = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    faces = (fn / np.linalg.norm(fn, axis=1, keepdims=True)).astype(np.float32)
    ab, ac = v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]]
    rows = np.ascontiguousarray(np.concatenate([v[t[:, 0]], ab, ac, ac - ab, np.ones((4, 7))], axis=1))
    dims = np.array([6, 6, 6], np.int64)
    ld = np.array([3, 3, 3], np.int64)
    start, listed = plane_lists(corners, faces, ld, 0.5, 0.3, 1.0)
    err = np.empty(len(start) - 1, np.float32)
    list_errors(start, listed, faces, 0.8, np.float32(0.25), np.float32(0.5), err)
    wide = np.ones(len(start) - 1, np.bool_)
    s2, l2 = sphere_lists(corners, np.ascontiguousarray(corners.mean(axis=1).T), np.ones(4, np.float32), ld, 0.5, 0.6,
                          wide, np.full(len(wide), 0.5, np.float32))
    merge_lists(start, listed, s2, l2, wide)
    cp = np.full((3, 216), 1e18, np.float32)
    src = np.full(216, -1, np.int32)
    feature = np.zeros(216, np.int8)
    band_nodes(corners, faces, rows, dims, 0.2, 0.2, cp, src, feature)
    sweep(cp, src, feature, dims, 0.2, 2)
    out = np.empty(216, np.float32)
    signed_nodes(cp, src, feature, np.ones((4, 7, 3), np.float32), dims, 0.2, out)
    normals = np.empty((4, 7, 3))
    edge_of = np.array([0, 1, 2, 0, 3, 4, 0, 5, 1, 2, 4, 5], np.int64)
    edge_of.setflags(write=False)                     # as ``collision.triangles.edges`` keeps them
    pseudo_normals(v, t, edge_of, 6, normals)
    triangle_numbers(v, t, np.empty((4, 19)), np.empty((4, 3, 3), np.float32), np.empty((3, 4), np.float32),
                     np.empty(4, np.float32), np.empty((4, 16), np.float32))
    cluster_shapes(v, t, np.array([0, 0, 1, 1], np.int64), 2, np.empty((2, 3)), np.empty((2, 3)), np.empty(2))
    doubled_areas(v, t, np.empty(4))
    for index in (np.int32, np.int64):                # nodes as a small grid or a large one has them
        carry_nodes(out, np.arange(3, dtype=index), np.zeros(3, np.int32), np.ones((3, 3), np.float32),
                    np.ones((3, 3), np.float32), np.zeros(3, np.float32), t, np.zeros((4, 3)))


WARM_UPS = (("collision build", _as_called),)


# ---------------------------------------------------------------- sub-cell candidate lists
@njit(cache=True, inline="always")
def _sub_candidates(start, listed, rows, dims, h, s, slack, c, sub, d, out, at):
    """The triangles of list cell ``c``'s list that may be nearest to a point of its sub-cell
    ``sub`` (``sub_lists``), in the list's order: written from ``out[at]`` when ``out`` has room
    (a counting pass passes none); returns how many."""
    i, j, k = cell_ijk(c, dims)
    a, b, e = sub // (s * s), (sub // s) % s, sub % s
    cx, cy, cz = (i + (a + 0.5) / s) * h, (j + (b + 0.5) / s) * h, (k + (e + 0.5) / s) * h
    r = 0.5 * math.sqrt(3.0) * h / s + slack
    n = start[c + 1] - start[c]
    best = np.inf
    for m in range(n):
        px, py, pz, _ = closest_on_row(cx, cy, cz, rows, listed[start[c] + m])
        d[m] = math.sqrt((cx - px) * (cx - px) + (cy - py) * (cy - py) + (cz - pz) * (cz - pz))
        if d[m] < best:
            best = d[m]
    count = 0
    for m in range(n):
        if not (d[m] - r > best + r + slack):
            if out.shape[0]:
                out[at + count] = listed[start[c] + m]
            count += 1
    return count


@njit(cache=True, parallel=True)
def sub_lists(start, listed, rows, dims, h, s, slack, cells):
    """The list cells ``cells`` (int64, ascending, each once) cut into ``s``³ sub-cells, and per
    sub-cell the triangles of the cell's list that may be nearest to any of its points, in the
    list's order: ``first`` (C,) int32 each list cell's first sub-cell (−1: none — an empty list,
    or a cell not asked for), ``sub_start`` (N + 1,) and ``sub_tri`` (CSR). A listed triangle is left
    out where, from the sub-cell's centre, it is farther than the nearest one by more than the
    sub-cell's diagonal (distances change no faster than a point moves, so within the sub-cell
    it is farther than the nearest by more than ``slack``, far above float64's rounding of the
    squared distances a pick compares). ``rows`` relative to the grid's origin, the list cells
    ``h`` wide from there (``kernels.field._list_cell``)."""
    first = np.full(start.shape[0] - 1, -1, np.int32)          # 4 bytes a list cell, every cell
    owner = np.empty(cells.shape[0], np.int64)
    n = 0
    widest = 0
    for o in range(cells.shape[0]):
        c = cells[o]
        if start[c + 1] > start[c]:
            first[c] = np.int32(n * s * s * s)
            owner[n] = c
            n += 1
            widest = max(widest, start[c + 1] - start[c])
    subs = n * s * s * s
    counts = np.zeros(subs + 1, np.int64)
    none = np.zeros(0, np.int32)
    for o in prange(n):
        d = np.empty(widest)
        c = owner[o]
        for sub in range(s * s * s):
            counts[first[c] + sub + 1] = _sub_candidates(start, listed, rows, dims, h, s, slack, c, sub, d, none, 0)
    for q in range(subs):
        counts[q + 1] += counts[q]
    out = np.empty(counts[subs], np.int32)
    for o in prange(n):
        d = np.empty(widest)
        c = owner[o]
        for sub in range(s * s * s):
            _sub_candidates(start, listed, rows, dims, h, s, slack, c, sub, d, out, counts[first[c] + sub])
    return first, counts, out


@njit(cache=True, parallel=True)
def fine_nodes(tris, cells, n, reach, doubt, part):
    """The signed distance at ``n + 1`` nodes a side of each list cell of ``cells`` (int64,
    ascending, each once) — the exact query's (``field._exact_point``), NaN at a node beyond its
    cell's ``reach`` (where the list is not exact) — for ``field.fine_bounds``' certificate:
    ``first`` (C,) int32 each list cell's brick (−1: none) and the bricks' values (B·(n + 1)³,)
    float32, x-major within a brick.

    The certificate takes the signed distance to be 1-Lipschitz within the cell. It is where the
    cell's list holds triangles of one closed shell only: a point whose distance is within the
    cell's reach has its nearest triangle in the list, so its distance is that shell's, signed by
    its pseudo-normals — continuous on a closed surface. ``part`` (T,) int64 is each triangle's
    shell, −1 for one touching an edge that is not between two faces (past an open edge the side
    is the winding number's or, with none, the pseudo-normal's, and either jumps there). Where
    two shells are listed, a point inside one may be nearer the other, which signs it outside
    (shells that cross or nest; a solid's cut where they cross leaves open edges). So a cell gets
    no brick with a triangle of no shell or of two, with part of a seam (``doubt`` −1), with an
    empty list, or with two neighbouring nodes whose distances differ by more than their spacing
    (a jump none of these saw)."""
    start, listed, slack = tris[0], tris[1], tris[5]
    h, dims = tris[20], tris[21]
    first = np.full(start.shape[0] - 1, -1, np.int32)
    owner = np.empty(cells.shape[0], np.int64)
    b = 0
    for o in range(cells.shape[0]):
        c = cells[o]
        if start[c + 1] <= start[c] or doubt[c] < 0:
            continue
        one = part[listed[start[c]]]
        ok = one >= 0
        for m in range(start[c], start[c + 1]):
            if part[listed[m]] != one:
                ok = False
        if ok:
            first[c] = np.int32(b)
            owner[b] = c
            b += 1
    m1 = n + 1
    per = m1 * m1 * m1
    values = np.empty(b * per, np.float32)
    good = np.ones(b, np.bool_)
    step = h / n
    for o in prange(b):
        c = owner[o]
        i, j, k = cell_ijk(c, dims)
        r = reach[c]
        at = o * per
        for q in range(per):
            x = i * h + (q // (m1 * m1)) * step
            y = j * h + ((q // m1) % m1) * step
            z = k * h + (q % m1) * step
            known, sd, _, _, _, _, _, _ = _exact_point(x, y, z, c, tris)
            values[at + q] = np.float32(sd) if known and abs(sd) <= r else np.float32(np.nan)
        # neighbouring nodes no farther apart in distance than in space (and the float32
        # rounding of values within the reach, far inside the slack)
        most = step + slack
        for q in range(per):
            v = values[at + q]
            a, bb, e = q // (m1 * m1), (q // m1) % m1, q % m1
            for axis in range(3):
                if (axis == 0 and a == n) or (axis == 1 and bb == n) or (axis == 2 and e == n):
                    continue
                w = values[at + q + (m1 * m1 if axis == 0 else (m1 if axis == 1 else 1))]
                if abs(np.float64(w) - np.float64(v)) > most:       # NaN: no jump seen
                    good[o] = False
    for o in range(b):
        if not good[o]:
            first[owner[o]] = -1
    return first, values
