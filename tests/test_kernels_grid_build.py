"""The collision grid's build kernels (``hair_wig.kernels.grid_build``) against plain numpy
references: the cell lists against every (cell, triangle) pair tested alike, the band's closest
points against every triangle measured, the sweep and the signs against the numpy sweep they
replace (the same float32 operations in the same order: the same bits), and the whole build the
same bits on one and two threads."""

import numba
import numpy as np
import pytest
from test_collision import sphere
from test_kernels_pairs import assert_same_bits, both_thread_counts

from hair_wig.collision import MeshField, closest_on_triangles
from hair_wig.collision.solid import Solid
from hair_wig.kernels import grid_build

F32 = float(np.finfo(np.float32).eps)


def bumpy(seed=0):
    """A sphere with a rough skin, crossed by a smaller one (open mesh: a hole cut in it): folds,
    seams, open edges, faces of every slant."""
    rng = np.random.default_rng(seed)
    v, t = sphere(1.0, 18, 36)
    v = v * (1 + 0.08 * rng.random((len(v), 1)))
    w, u = sphere(0.45, 10, 20)
    u = u[~(w[u].mean(axis=1)[:, 2] > 0.3)]          # a hole in its top
    return np.concatenate([v, w + [0.8, 0.1, 0.2]]), np.concatenate([t, u + len(v)])


@pytest.fixture(scope="module")
def field():
    v, t = bumpy()
    return MeshField.of_solid(v, t, margin=0.3, name="bumpy")


def test_the_cell_lists_are_every_triangle_whose_box_and_plane_come_near():
    """``plane_lists`` against every (cell, triangle) pair of the triangle's box tested in numpy
    float64, in the kernel's order of operations: the same sets, each in triangle order; a
    triangle of no area is listed nowhere."""
    f = MeshField.of_solid(*bumpy(1), margin=0.2)
    g, tris = f.grid, f.index
    h, grow = g.cell * g.list_cell, g.LIST_BAND * g.cell
    reach = grow + 0.5 * np.sqrt(3.0) * h
    faces = g._faces.copy()
    faces[5] = np.nan                                       # no area
    start, listed = grid_build.plane_lists(tris.corners, faces, g.list_dims, h, grow, reach)
    c = tris.corners.astype(np.float64)
    nd = g.list_dims
    want = [[] for _ in range(int(nd.prod()))]
    for t in range(len(c)):
        n = faces[t].astype(np.float64)
        lo = np.clip(np.floor((c[t].min(axis=0) - grow) * (1 / h)).astype(int), 0, nd - 1)
        hi = np.clip(np.floor((c[t].max(axis=0) + grow) * (1 / h)).astype(int), 0, nd - 1)
        i, j, k = np.meshgrid(*(np.arange(a, b + 1) for a, b in zip(lo, hi)), indexing="ij")
        side = n[0] * ((i + 0.5) * h - c[t, 0, 0])
        side = side + n[1] * ((j + 0.5) * h - c[t, 0, 1])
        side = side + n[2] * ((k + 0.5) * h - c[t, 0, 2])
        for cell in ((i * nd[1] + j) * nd[2] + k)[np.abs(side) <= reach]:
            want[cell].append(t)
    got = [listed[start[x]:start[x + 1]].tolist() for x in range(len(start) - 1)]
    assert got == want
    assert 5 not in set(listed.tolist()) and len(listed) > 10 * len(c)


def test_each_cells_error_says_whether_its_triangles_fold():
    """``list_errors``: the fold error where the listed unit normals sum to less than the
    coherence times their count (summed in order, as the kernel sums), else the sheet error."""
    g = MeshField.of_solid(*bumpy(2), margin=0.2).grid
    start, listed = g.list_start, g.list_tri
    out = np.empty(len(start) - 1, np.float32)
    grid_build.list_errors(start, listed, g._faces, g.COHERENT, np.float32(1), np.float32(2), out)
    want = np.ones(len(out), np.float32)
    for c in range(len(out)):
        s = [0.0, 0.0, 0.0]
        for t in listed[start[c]:start[c + 1]]:
            s = [s[k] + float(g._faces[t, k]) for k in range(3)]
        n = start[c + 1] - start[c]
        if n and np.sqrt(s[0] ** 2 + s[1] ** 2 + s[2] ** 2) < g.COHERENT * n:
            want[c] = 2
    assert np.array_equal(out, want)
    assert (out == 2).sum() > 0 and (out == 1).sum() > 0


def test_the_band_holds_each_nodes_nearest_triangle_within_one_cell(field):
    """``band_nodes`` against every triangle measured at every node (float64 closest points): a
    node within the band (less float32 rounding of the grid's coordinates) holds its nearest
    distance, to that rounding; one beyond it holds nothing."""
    g, tris = field.grid, field.index
    total = int(np.prod(g.dims))
    cp = np.full((3, total), 1e18, np.float32)
    src = np.full(total, -1, np.int32)
    feat = np.zeros(total, np.int8)
    band = g.NODE_BAND * g.cell
    grid_build.band_nodes(tris.corners, g._faces, tris._tri_cols, g.dims, float(g.cell), band, cp, src, feat)
    ijk = np.stack(np.unravel_index(np.arange(total), tuple(g.dims)), axis=1)
    x = ijk * g.cell
    rel = tris.vertices - tris.origin
    tri = tris.triangles
    # nearest distance by brute force, for the nodes within 2 cells of some vertex's box
    near = np.zeros(total, bool)
    lo, hi = rel.min(axis=0) - 2 * band, rel.max(axis=0) + 2 * band
    near[np.all((x >= lo) & (x <= hi), axis=1)] = True
    # half of them in the band the kernel found, half anywhere near (a brute force of every node
    # would take minutes)
    rng = np.random.default_rng(5)
    idx = np.union1d(rng.choice(np.flatnonzero(near & (src >= 0)), 2000, replace=False),
                     rng.choice(np.flatnonzero(near), 2000, replace=False))
    best = np.full(len(idx), np.inf)
    for s in range(0, len(tri), 256):
        tt = tri[s:s + 256]
        a, b, c = (np.broadcast_to(rel[tt[:, k]], (len(idx), len(tt), 3)).reshape(-1, 3) for k in range(3))
        p = np.repeat(x[idx], len(tt), axis=0)
        bary, _ = closest_on_triangles(p, a, b, c)
        q = bary[:, :1] * a + bary[:, 1:2] * b + bary[:, 2:] * c
        best = np.minimum(best, np.linalg.norm(p - q, axis=1).reshape(len(idx), len(tt)).min(axis=1))
    # the kernel's points are rounded to float32 once: off by an ulp of the grid's coordinates
    tol = 4 * F32 * float(np.abs(x).max())
    have = src[idx] >= 0
    assert np.all(have[best <= band - tol]) and not np.any(have[best > band + tol])
    got = np.linalg.norm(x[idx[have]] - cp[:, idx[have]].T.astype(np.float64), axis=1)
    assert np.abs(got - best[have]).max() <= tol
    assert have.sum() > 1000 and (~have).sum() > 1000 and np.all(src[~near] < 0)


def reference_sweep(cp, src, h, rounds=2):
    """The numpy sweep the kernel replaces: each slice along an axis takes its neighbour's
    closest point where that is nearer (float32, squared distances summed x, y, z), one axis
    at a time, forwards then backwards."""
    dims = src.shape
    coords = [np.arange(d, dtype=np.float32) * np.float32(h) for d in dims]
    for axis in list(range(3)) * rounds:
        c = [np.ascontiguousarray(np.moveaxis(cp[k], axis, 0)) for k in range(3)]
        s = np.ascontiguousarray(np.moveaxis(src, axis, 0))
        oth = [k for k in range(3) if k != axis]
        fixed = {oth[0]: coords[oth[0]][:, None], oth[1]: coords[oth[1]][None, :]}

        def dist2(i, j):
            out = np.zeros(s.shape[1:], np.float32)
            for k in range(3):
                x = coords[axis][i] if k == axis else fixed[k]
                out += np.subtract(x, c[k][j]) ** 2
            return out

        for order, step in ((range(1, s.shape[0]), -1), (range(s.shape[0] - 2, -1, -1), 1)):
            for i in order:
                dd = dist2(i, i + step)
                better = (dd < dist2(i, i)) & (s[i + step] >= 0)
                better |= (s[i] < 0) & (s[i + step] >= 0)
                for k in range(3):
                    np.copyto(c[k][i], c[k][i + step], where=better)
                np.copyto(s[i], s[i + step], where=better)
        for k in range(3):
            cp[k] = np.moveaxis(c[k], 0, axis)
        src[...] = np.moveaxis(s, 0, axis)


def test_the_sweep_and_the_signs_are_the_numpy_codes_bits(field):
    """``sweep`` and ``signed_nodes`` against the numpy sweep and sign on the band's closest
    points: the same bits, and every node reached."""
    g, tris = field.grid, field.index
    dims = tuple(int(d) for d in g.dims)
    total = int(np.prod(dims))
    cp = np.full((3, total), 1e18, np.float32)
    src = np.full(total, -1, np.int32)
    feat = np.zeros(total, np.int8)
    grid_build.band_nodes(tris.corners, g._faces, tris._tri_cols, g.dims, float(g.cell), g.cell, cp, src, feat)
    # the reference carries the node a closest point came from; the kernel its triangle and feature
    band = np.flatnonzero(src >= 0)
    where = np.full(total, -1, np.int32)
    where[band] = band
    ref_cp = cp.reshape(3, *dims).copy()
    ref_src = where.reshape(dims).copy()
    reference_sweep(ref_cp, ref_src, g.cell)
    src0, feat0 = src.copy(), feat.copy()
    grid_build.sweep(cp, src, feat, g.dims, float(g.cell), 2)
    assert cp.tobytes() == ref_cp.reshape(3, -1).tobytes()
    came = ref_src.ravel()
    assert np.all(came >= 0)
    assert np.array_equal(src, src0[came]) and np.array_equal(feat, feat0[came])
    out = np.empty(total, np.float32)
    grid_build.signed_nodes(cp, src, feat, tris.normals, g.dims, float(g.cell), out)
    x = [(np.arange(n, dtype=np.float32) * np.float32(g.cell)) for n in dims]
    d = [(x[k].reshape([-1 if a == k else 1 for a in range(3)]) - cp[k].reshape(dims)) for k in range(3)]
    dist = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).ravel()
    n = tris.normals[src, feat]
    side = d[0].ravel() * n[:, 0] + d[1].ravel() * n[:, 1] + d[2].ravel() * n[:, 2]
    assert out.tobytes() == np.where(side < 0, -dist, dist).tobytes()


def test_the_wide_lists_are_every_triangle_whose_sphere_comes_within_reach():
    """``sphere_lists`` and ``merge_lists`` against the boxes and bounding spheres tested in numpy:
    a wide cell lists exactly the triangles whose box grown by ``grow`` meets it and whose sphere
    comes within its reach of its box; every other cell keeps its list."""
    f = MeshField.of_solid(*bumpy(3), margin=0.2)
    g, tris = f.grid, f.index
    rng = np.random.default_rng(0)
    cells = len(g.list_start) - 1
    wide = rng.random(cells) < 0.1
    reach = (rng.random(cells) * 3 * g.cell).astype(np.float32)
    h = g.cell * g.list_cell
    grow = 3 * g.cell
    start, listed = grid_build.sphere_lists(tris.corners, tris.centres, tris.radii, g.list_dims, h, grow, wide, reach)
    merged_start, merged = grid_build.merge_lists(g.list_start, g.list_tri, start, listed, wide)
    nd = g.list_dims
    centre = tris.centres.T.astype(np.float64)
    corners = tris.corners.astype(np.float64)
    lo = np.clip(np.floor((corners.min(axis=1) - grow) * (1 / h)).astype(int), 0, nd - 1)
    hi = np.clip(np.floor((corners.max(axis=1) + grow) * (1 / h)).astype(int), 0, nd - 1)
    for c in np.flatnonzero(wide)[:400]:
        ijk = np.array(np.unravel_index(c, tuple(nd)))
        gap = np.maximum(np.abs((ijk + 0.5) * h - centre) - 0.5 * h, 0.0)
        near = np.sqrt((gap ** 2).sum(axis=1)) - tris.radii.astype(np.float64) <= np.float64(reach[c]) * (1 + 1e-5)
        want = np.flatnonzero(near & np.all((lo <= ijk) & (ijk <= hi), axis=1))
        assert listed[start[c]:start[c + 1]].tolist() == want.tolist()
        assert merged[merged_start[c]:merged_start[c + 1]].tolist() == want.tolist()
    for c in np.flatnonzero(~wide):
        assert start[c] == start[c + 1]
        assert merged[merged_start[c]:merged_start[c + 1]].tolist() == g.list_tri[g.list_start[c]:g.list_start[c + 1]].tolist()


def test_a_field_is_built_to_the_same_bits_on_one_and_two_threads():
    """The whole build (lists, band, sweep, signs, seams, wide lists) on an open mesh with shells
    that cross: the same bits with one thread and two."""
    v, t = bumpy(4)
    solid = Solid(v, t)

    def build():
        f = MeshField.of_solid(v, t, solid, margin=0.3)
        g, i = f.grid, f.index
        return (g.distance_grid, g.list_start, g.list_tri, g.grid_error, g.list_reach, i._tri_cols, i.corners,
                i.centres, i.radii, i._k_planes, i.normals)

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one thread only")
    assert_same_bits(*both_thread_counts(build))


def test_the_grid_is_the_exact_distance_at_the_band_and_on_its_side_beyond(field):
    """The built grid against the field's exact distance (every triangle, float64) at its nodes:
    within float32 rounding at the nodes of the band, and on the exact distance's side at every
    node farther than two cells that touches no seam's cell (where the grid keeps −|d|)."""
    g = field.grid
    dims = tuple(int(d) for d in g.dims)
    rng = np.random.default_rng(1)
    nodes = rng.choice(int(np.prod(dims)), 20000, replace=False)
    x = np.stack(np.unravel_index(nodes, dims), axis=1) * g.cell + g.origin
    exact = field.exact(x, every=True)[0]
    grid = g.distance_grid[nodes].astype(np.float64)
    seam = np.zeros(dims, bool)
    if g.untrusted is not None:
        u = g.untrusted.reshape(dims)
        for a in (0, 1):
            for b in (0, 1):
                for c in (0, 1):
                    seam[a:, b:, c:] |= u[:dims[0] - a, :dims[1] - b, :dims[2] - c]
    ok = ~seam.ravel()[nodes]
    assert ok.sum() > 0.9 * len(nodes)
    tol = 8 * F32 * float(np.abs(x).max() + field.size)
    in_band = ok & (np.abs(exact) <= g.NODE_BAND * g.cell - tol)
    assert in_band.sum() > 200
    assert np.abs(grid[in_band] - exact[in_band]).max() <= tol
    far = ok & (np.abs(exact) > 2 * g.cell)
    assert np.array_equal(grid[far] < 0, exact[far] < 0)


def test_a_triangle_without_a_plane_holds_no_node(field):
    """``band_nodes`` with one triangle's plane NaN (as a triangle of no area has it): no node
    takes it, where it was the nearest of many."""
    g, tris = field.grid, field.index
    total = int(np.prod(g.dims))

    def band(faces):
        cp = np.full((3, total), 1e18, np.float32)
        src = np.full(total, -1, np.int32)
        grid_build.band_nodes(tris.corners, faces, tris._tri_cols, g.dims, float(g.cell), g.cell, cp, src,
                              np.zeros(total, np.int8))
        return src

    before = band(g._faces)
    t = int(np.bincount(before[before >= 0]).argmax())
    faces = g._faces.copy()
    faces[t] = np.nan
    after = band(faces)
    assert np.sum(before == t) > 10 and not np.any(after == t)


def test_two_meshes_of_one_shape_keep_their_own_edges():
    """``edges`` keeps each mesh's edges by its triangles' bytes: two triangle lists of one
    shape (a closed tetrahedron, the same with one face turned into an open fan) do not share
    them, and what it keeps cannot be written."""
    from hair_wig.collision.triangles import edges, is_closed

    closed = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    opened = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 4]])
    assert is_closed(closed) and not is_closed(opened)
    inverse, count = edges(opened)
    assert sorted(count.tolist()) == [1, 1, 1, 1, 2, 2, 2, 2]
    assert not inverse.flags.writeable and not count.flags.writeable
    assert np.all(edges(closed)[1] == 2)


def test_carried_nodes_are_the_numpy_reference_on_one_and_two_threads():
    """``carry_nodes`` (a deforming collider's refit: each node near the surface less its
    closest point's move along the distance's growth) against its numpy form (``collision.grid.
    carried``) on a sphere's rest field with give, deformed by a wobble: equal to one float32
    rounding of the carried amount and one of the result (the float64 sums round in another
    order, far below a float32 ulp, but can tip one rounding), and the same bits on one and two
    threads."""
    from hair_wig.collision.grid import carried

    v, t = sphere(1.0, 24, 48)
    cell = MeshField(v, t).cell
    rest = MeshField(v, t, cell=cell, give=cell)
    shift = 0.5 * cell * np.sin(3 * v[:, [1, 2, 0]])
    skin = rest.grid._skin
    tri = np.ascontiguousarray(rest.triangles, np.int64)

    def run():
        d = rest.grid.distance_grid.copy()
        grid_build.carry_nodes(d, *skin, tri, shift)
        return (d,)

    one, two = both_thread_counts(run)
    assert_same_bits(one, two)
    want = carried(rest.grid.distance_grid, skin, tri, shift)
    moved = np.abs(want - rest.grid.distance_grid)
    assert moved.max() > 0.1 * cell                                  # the nodes were carried
    size = np.maximum(np.abs(want), moved)
    assert (np.abs(one[0] - want) <= 2 * F32 * size).all()


def _within(got, want, tol):
    """``got`` equals ``want`` within ``tol`` (broadcast), NaN where ``want`` is NaN."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert (np.abs(got - want)[~nan] <= np.broadcast_to(tol, want.shape)[~nan]).all()


def _ulps32(x):
    """One float32 rounding of each of ``x`` (its ulp), as float64."""
    x = np.abs(np.asarray(x, np.float32))
    return (np.nextafter(x, np.float32(np.inf)) - x).astype(np.float64)


def test_a_triangles_numbers_are_the_numpy_references():
    """``triangle_numbers`` (one kernel for what the exact queries read of each triangle) against
    the numpy it replaces, on an open mesh with crossing shells and a triangle of no area: the
    rows (``triangle_rows``) within a few float64 roundings of their terms (the dot products'
    inverses where the triangle is not a sliver), the corners, bounding spheres and side planes
    (``side_planes``) within one float32 rounding, the planes of the flat triangle NaN alike."""
    from hair_wig.collision.triangles import side_planes, triangle_rows

    v, t = bumpy(2)
    t = np.concatenate([t, [[0, 1, 1]]])                       # no area
    rel = v - v.min(axis=0) + 0.05
    nt = len(t)
    rows, corners = np.empty((nt, 19)), np.empty((nt, 3, 3), np.float32)
    centres, radii, planes = np.empty((3, nt), np.float32), np.empty(nt, np.float32), np.empty((nt, 16), np.float32)
    grid_build.triangle_numbers(rel, t, rows, corners, centres, radii, planes)
    want = triangle_rows(*(np.ascontiguousarray(rel[t[:, k]].T) for k in range(3))).T
    eps, scale = float(np.finfo(np.float64).eps), float(np.abs(rel).max())
    _within(rows[:, :12], want[:, :12], 4 * eps * scale)
    _within(rows[:, 12:15], want[:, 12:15], 8 * eps * scale ** 2)
    d00, d01, d11 = want[:, 12], want[:, 13], want[:, 14]
    plain = np.abs(d00 * d11 - d01 * d01) > 1e-3 * d00 * d11              # not a sliver
    _within(rows[plain, 15], want[plain, 15], 1e-9 * np.abs(want[plain, 15]))
    _within(rows[:, 16:], want[:, 16:], 8 * eps * np.abs(want[:, 16:]))
    c = rel[t]
    centre = c.mean(axis=1)
    _within(corners, c.astype(np.float32), _ulps32(c))
    _within(centres, centre.T.astype(np.float32), _ulps32(centre.T))
    r = np.linalg.norm(c - centre[:, None], axis=2).max(axis=1)
    _within(radii, r.astype(np.float32), _ulps32(r))
    with np.errstate(invalid="ignore", divide="ignore"):
        sp = side_planes(rel, t)
    assert np.isnan(planes[-1, :4]).all() and np.isnan(sp[-1, :4]).all()
    _within(planes, sp, 2 * _ulps32(np.where(np.isnan(sp), 0, sp)))


def test_pseudo_normals_are_the_numpy_reference():
    """``pseudo_normals`` by its kernel against the numpy it replaces (``pseudo_normals_plain``)
    on an open mesh with crossing shells: the faces' and edges' normals (sums of unit normals in
    the same order) within a few float64 roundings, the corners' (angle-weighted: an angle's
    rounding grows as 1 / sin of it) within a thousand, and an open edge's its one face's."""
    from hair_wig.collision.triangles import edges, pseudo_normals, pseudo_normals_plain

    v, t = bumpy(3)
    got, want = pseudo_normals(v, t), pseudo_normals_plain(v, t)
    eps = float(np.finfo(np.float64).eps)
    _within(got[:, [0, 4, 5, 6]], want[:, [0, 4, 5, 6]], 8 * eps)
    _within(got[:, 1:4], want[:, 1:4], 1000 * eps)
    inverse, count = edges(t)
    one = (count[inverse] == 1).reshape(-1, 3)
    assert one.any()
    tri, k = np.nonzero(one)
    assert np.array_equal(got[tri, 4 + k], got[tri, 0])


def test_cluster_shapes_are_the_numpy_reference():
    """The winding number's clusters measured by ``cluster_shapes`` against the numpy it replaces
    (``solid._cluster_shapes``): centres, summed normals and radii within a few float64
    roundings, at both levels, on a mesh with a cluster of no area (its plain centre)."""
    from hair_wig.collision.solid import _cluster_shapes, clusters

    v, t = bumpy(5)
    far = len(v)
    v = np.concatenate([v, [[4.0, 0, 0], [4.1, 0, 0], [4.2, 0, 0]]])      # on a line, far from the rest
    t = np.concatenate([t, [[far, far + 1, far + 2], [far + 1, far + 2, far]]])    # no area, a leaf alone
    parts, order = clusters(v, t)
    s, starts, centres, normals, radii, groups = parts
    leaf_of = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    leaf_group = np.searchsorted(groups, len(groups) - 1 + np.arange(len(starts) - 1), side="right") - 1
    a, b, c = v[s[:, 0]], v[s[:, 1]], v[s[:, 2]]
    mid, n = (a + b + c) / 3.0, 0.5 * np.cross(b - a, c - a)
    want = [np.concatenate([g, l]) for g, l in zip(_cluster_shapes(leaf_group[leaf_of], a, b, c, mid, n),
                                                   _cluster_shapes(leaf_of, a, b, c, mid, n))]
    eps, scale = float(np.finfo(np.float64).eps), float(np.abs(v).max())
    for got, w in zip((centres, normals, radii), want):
        _within(got, w, 64 * eps * scale * scale)
    flat = np.zeros(len(starts) - 1 + len(groups) - 1, bool)
    alone = np.bincount(leaf_of, np.linalg.norm(n, axis=1)) == 0
    assert alone.any()                                         # the flat triangles' own leaf
    flat[len(groups) - 1:] = alone
    assert np.isfinite(centres[flat]).all()


def test_a_face_whose_corner_is_not_a_vertex_is_refused_by_name():
    """The kernels read a collider's faces unchecked: a face naming a vertex the mesh does not
    have (a broken import) is refused with the collider's name before any of them runs."""
    from hair_wig.collision.triangles import usable_triangles
    from hair_wig.errors import HairWigError

    v, t = sphere(1.0, 6, 12)
    for bad in (len(v), -1):
        broken = t.copy()
        broken[3, 1] = bad
        with pytest.raises(HairWigError, match="'Helmet' has faces whose corners are not among its"):
            usable_triangles(v, broken, "Helmet")


def test_doubled_areas_are_the_numpy_reference():
    """``doubled_areas`` (what ``usable_triangles`` drops faces of no area by) against numpy's
    ``|(b − a) × (c − a)|``: within a few float64 roundings of the products it sums, and zero
    for a face whose corners lie on a line."""
    v, t = bumpy(6)
    far = len(v)
    v = np.concatenate([v, [[4.0, 0, 0], [4.1, 0, 0], [4.2, 0, 0]]])
    t = np.concatenate([t, [[far, far + 1, far + 2]]])
    got = np.empty(len(t))
    grid_build.doubled_areas(v, t, got)
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    want = np.linalg.norm(np.cross(b - a, c - a), axis=1)
    eps, scale = float(np.finfo(np.float64).eps), float(np.abs(v).max())
    _within(got, want, 16 * eps * scale * scale)
    assert got[-1] == 0.0
