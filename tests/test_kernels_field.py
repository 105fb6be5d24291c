"""The collision field's query kernels (hair_wig/kernels/field.py) against plain references on
random meshes and points: the grid's lookups against numpy written out here (the code they
replaced, bit for bit), the exact queries against the numpy search over every triangle (the same
arithmetic: bit for bit where a cell's list holds the closest triangle) and against brute force
(``exact_signed_distance``, other arithmetic: to a derived tolerance), and every kernel the same
bits with one and two threads."""

import numba
import numpy as np
import pytest

from hair_wig import kernels
from hair_wig.collision import ColliderMesh, Collider, MeshField, exact_signed_distance
from hair_wig.kernels import field as kf
from hair_wig.kernels import grid_build
from hair_wig.collision.solid import boundary_features
from hair_wig.collision.triangles import TriangleIndex
from tolerance import EPS64, magnitude, rounding


def icosphere(radius=1.0, subdivisions=2):
    """A subdivided icosahedron (closed, outward)."""
    t = (1 + 5 ** 0.5) / 2
    v = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t),
         (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2),
         (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11),
         (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    v = [np.array(x, float) / np.linalg.norm(x) for x in v]
    for _ in range(subdivisions):
        mid, g = {}, []

        def half(a, b):
            key = (min(a, b), max(a, b))
            if key not in mid:
                m = v[a] + v[b]
                v.append(m / np.linalg.norm(m))
                mid[key] = len(v) - 1
            return mid[key]

        for a, b, c in f:
            ab, bc, ca = half(a, b), half(b, c), half(c, a)
            g += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        f = g
    return radius * np.array(v), np.array(f)


def bumpy(seed):
    """A random closed mesh: an icosphere with each vertex moved in or out by up to 25 %."""
    v, f = icosphere(1.0, 2)
    return v * np.random.default_rng(seed).uniform(0.75, 1.25, (len(v), 1)), f


def crossing():
    """Two closed shells that cross (seams: the sign of the closest feature flips inside)."""
    v1, f1 = icosphere(1.0, 2)
    v2, f2 = icosphere(0.45, 1)
    return np.concatenate([v1, v2 + (0.0, 0.7, 0.6)]), np.concatenate([f1, f2 + len(v1)])


def patch(seed):
    """An open, one-sided mesh: a rumpled square sheet."""
    rng = np.random.default_rng(seed)
    n = 8
    x, y = np.meshgrid(np.linspace(-1, 1, n + 1), np.linspace(-1, 1, n + 1), indexing="ij")
    v = np.stack([x, y, 0.15 * rng.normal(size=x.shape)], -1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    a = (i * (n + 1) + j).ravel()
    return v, np.concatenate([np.stack([a, a + n + 1, a + 1], 1), np.stack([a + 1, a + n + 1, a + n + 2], 1)])


MESHES = {"icosphere": lambda: icosphere(1.0, 3), "bumpy": lambda: bumpy(4), "crossing": crossing,
          "patch": lambda: patch(2)}
_FIELDS = {}


def field(name) -> MeshField:
    if name not in _FIELDS:
        _FIELDS[name] = MeshField(*MESHES[name](), margin=0.05, name=name)
    return _FIELDS[name]


def points(f: MeshField, n=6000, seed=0):
    """Random points (N, 3) float64: in and beyond the grid's box, and near the surface (within a
    few cells, both sides)."""
    rng = np.random.default_rng(seed)
    top = f.origin + f.cell * (f.dims - 1)
    far = rng.uniform(f.origin - 0.3, top + 0.3, (n, 3))
    tri = f.vertices[f.triangles[rng.integers(0, len(f.triangles), n)]]
    w = rng.dirichlet((1, 1, 1), n)
    near = np.einsum("nk,nkd->nd", w, tri) + rng.normal(0, 1.5 * f.cell, (n, 3))
    return np.concatenate([far, near])


def same_bits(a, b) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


# ---------------------------------------------------------------- plain references
def ref_node_values(f: MeshField, x, clamp):
    """``MeshField._node_values`` as numpy (the code the kernel replaced)."""
    g = np.multiply(x, f.grid._inv_cell)
    g += f.grid._shift_col
    if clamp:
        np.minimum(g, f.grid._clamp_col, out=g)
        np.maximum(g, 0, out=g)
    with np.errstate(invalid="ignore"):
        gi = g.astype(np.int32)
    node = gi[0] * f.grid._stride[0] + gi[1] * f.grid._stride[1] + gi[2]
    return np.take(f.grid.distance_grid, node, mode="clip")


def ref_trilinear(f: MeshField, base, fx, fy, fz):
    D = f.grid.distance_grid
    s0, s1 = int(f.grid._stride[0]), int(f.grid._stride[1])
    c = [D[base + (ox * s0 + oy * s1 + oz)] for ox in (0, 1) for oy in (0, 1) for oz in (0, 1)]
    c00 = c[0] + (c[4] - c[0]) * fx
    c01 = c[1] + (c[5] - c[1]) * fx
    c10 = c[2] + (c[6] - c[2]) * fx
    c11 = c[3] + (c[7] - c[3]) * fx
    c0 = c00 + (c10 - c00) * fy
    c1 = c01 + (c11 - c01) * fy
    return c, (c00, c01, c10, c11, c0, c1), c0 + (c1 - c0) * fz


def ref_distance_rows(f: MeshField, x):
    """``MeshField.distance_rows`` as numpy: float32 trilinear, and the list cell's error."""
    g = x - f.grid._origin_col
    g *= f.grid._inv_cell
    i = np.floor(g)
    inside = ((i >= 0) & (i <= f.grid._top_col - 1)).all(axis=0)
    ii = np.clip(i, 0, f.grid._top_col - 1).astype(np.int64)
    base = ii[0] * int(f.grid._stride[0]) + ii[1] * int(f.grid._stride[1]) + ii[2]
    d = ref_trilinear(f, base, *(g - i))[2]
    d[~inside] = np.inf
    ii //= f.grid.list_cell
    err = f.grid.grid_error[(ii[0] * int(f.grid.list_dims[1]) + ii[1]) * int(f.grid.list_dims[2]) + ii[2]]
    if f.grid.untrusted is not None:
        err[f.grid.untrusted[base]] = np.inf
    return d, err


def ref_cells(f: MeshField, p):
    """Each point's grid cell (clipped, flat) and float32 fractions, and whether it is inside."""
    g = (p - f.origin) / f.cell
    inside = np.all((g >= 0) & (g <= f.dims - 1), axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        i = np.clip(np.floor(g).astype(np.int64), 0, f.dims - 2)
        fraction = (g - i).astype(np.float32)
    base = (i[:, 0] * int(f.dims[1]) + i[:, 1]) * int(f.dims[2]) + i[:, 2]
    return base, fraction, inside


def ref_lookup(f: MeshField, p):
    """``MeshField.lookup`` as numpy."""
    base, fr, inside = ref_cells(f, p)
    fx, fy, fz = fr.T
    c, (c00, c01, c10, c11, c0, c1), d = ref_trilinear(f, base, fx, fy, fz)
    gx0 = (c[4] - c[0]) + ((c[6] - c[2]) - (c[4] - c[0])) * fy
    gx1 = (c[5] - c[1]) + ((c[7] - c[3]) - (c[5] - c[1])) * fy
    gy = (c10 - c00) + ((c11 - c01) - (c10 - c00)) * fz
    grad = np.stack([gx0 + (gx1 - gx0) * fz, gy, c1 - c0], 1) / np.float32(f.cell)
    return np.where(inside, d, np.inf), grad


def ref_list_cell(f: MeshField, p):
    with np.errstate(invalid="ignore"):
        ci = np.floor((p - f.origin) / (f.cell * f.grid.list_cell)).astype(np.int64)
    ci = np.clip(ci, 0, f.grid.list_dims - 1)
    return (ci[:, 0] * int(f.grid.list_dims[1]) + ci[:, 1]) * int(f.grid.list_dims[2]) + ci[:, 2]


def ref_error(f: MeshField, p):
    err = f.grid.grid_error[ref_list_cell(f, p)]
    if f.grid.untrusted is not None:
        err[f.grid.untrusted[ref_cells(f, p)[0]]] = np.inf
    return err


def ref_signed_distance(f: MeshField, p):
    """``MeshField.signed_distance`` from the references and the numpy search of every triangle:
    where a point is within its list's reach the list holds its closest triangle (``exact``
    from the lists is then the search's, bit for bit), and beyond it the list's distance is no
    nearer than the reach either."""
    d = ref_lookup(f, p)[0]
    beyond = ~np.isfinite(d)
    lo, hi = f.box
    gap = np.maximum(np.maximum(lo - p[beyond], p[beyond] - hi), 0)
    d[beyond] = np.sqrt((gap * gap).sum(axis=1))
    err = ref_error(f, p)
    near = np.flatnonzero(np.abs(d) < f.exact_reach + err)
    sd, _, _, known = f.exact(p[near], every=True)
    reach = f.list_reach[ref_list_cell(f, p[near])]
    ok = known & (np.abs(sd) <= reach)
    redo = known & ~ok & (np.abs(d[near]) <= err[near]) & (err[near] > reach)
    d[near[ok | redo]] = sd[ok | redo]
    return d


# ---------------------------------------------------------------- the grid
@pytest.mark.parametrize("name", list(MESHES))
def test_node_values_screen_and_lower_bound_are_the_numpy_gather(name):
    f = field(name)
    p = points(f, seed=1)
    x = np.ascontiguousarray(p.T, np.float32)
    x[:, :3] = ((np.nan, 0, 0), (3e9, -3e9, 0), (1e30, 0, -1e30))      # NaN and beyond int32: a corner
    reach = np.random.default_rng(2).uniform(-0.1, 0.3, x.shape[1]).astype(np.float32)
    for clamp in (False, True):
        assert same_bits(f._node_values(x, clamp), ref_node_values(f, x, clamp))
    assert same_bits(f.screen(x, reach), np.flatnonzero(ref_node_values(f, x, False) < reach))
    assert same_bits(f.lower_bound(x), ref_node_values(f, x, True) - f.slack)


@pytest.mark.parametrize("name", list(MESHES))
def test_trilinear_rows_and_their_error_are_the_numpy_interpolation(name):
    f = field(name)
    x = np.ascontiguousarray(points(f, seed=3).T, np.float32)
    d, err = f.distance_rows(x)
    rd, rerr = ref_distance_rows(f, x)
    assert same_bits(d, rd) and same_bits(err, rerr)
    assert same_bits(f.trilinear_rows(x), rd)
    assert np.isinf(d).any() and np.isfinite(d).any()        # both sides of the grid's edge were met


@pytest.mark.parametrize("name", list(MESHES))
def test_lookup_gradient_and_errors_are_the_numpy_ones(name):
    f = field(name)
    p = points(f, seed=4)
    d, g = f.lookup(p)
    rd, rg = ref_lookup(f, p)
    assert same_bits(d, rd) and same_bits(g, rg)
    assert same_bits(f.error_at(p), ref_error(f, p))
    assert same_bits(f._list_cell(p), ref_list_cell(f, p))
    with np.errstate(invalid="ignore"):
        q = np.array([[np.nan, 0.0, 0.0], [1e300, -1e300, 0.0]])
        assert same_bits(f.lookup(q)[0], ref_lookup(f, q)[0])          # beyond: +inf, no stray read


# ---------------------------------------------------------------- exact distances
@pytest.mark.parametrize("name", list(MESHES))
def test_exact_from_the_lists_is_the_search_of_every_triangle(name):
    """Within its list's reach a point's closest triangle is listed: the kernel's exact query is
    then the numpy search over every triangle bit for bit (the same arithmetic, the first of
    equally near triangles); beyond it, never nearer than the truth."""
    f = field(name)
    p = points(f, seed=5)
    sd, cp, out, known = f.exact(p)
    esd, ecp, eout, eknown = f.exact(p, every=True)
    reach = f.list_reach[ref_list_cell(f, p)]
    within = known & (np.abs(sd) <= reach)
    assert within.sum() > 1000
    assert same_bits(sd[within], esd[within]) and same_bits(cp[within], ecp[within])
    assert same_bits(out[within], eout[within])
    # beyond the reach: an upper bound of the distance, from a listed triangle
    tol = rounding(magnitude(p, f.origin, at_least=f.size), 64, EPS64)
    assert np.all(np.abs(sd[known]) >= np.abs(esd[known]) - tol)
    assert not known[~np.isfinite(sd)].any() and np.all(cp[~known] == 0) and np.all(out[~known] == 0)


@pytest.mark.parametrize("name", list(MESHES))
def test_the_sub_cells_shorter_lists_pick_what_the_whole_list_picks(name):
    """A kept field's list cells cut into sub-cells, each listing the triangles that may be
    nearest to its points (``grid_build.sub_lists``): an exact query reading them gives the bits
    of the same query reading its cell's whole list, at points near the surface and far, on the
    cells' faces and corners (where a point's sub-cell is decided by one rounding), clipped at
    the grid's side, and NaN. The sub-cells are used, and list fewer triangles."""
    f = MeshField(*MESHES[name](), margin=0.05, name=name)
    whole = f._k_tris
    assert whole[16].size == 0                       # none until hair is there
    rng = np.random.default_rng(13)
    p = points(f, seed=13)
    f.index.use_sub_lists(np.ascontiguousarray(p[6000:].T, np.float32))     # where the near points are
    tris = f._k_tris
    first, start, listed, n, h, dims = tris[16:22]
    assert first.size and n == 2
    # points on the list cells' and sub-cells' faces and corners, nudged by an ulp either way
    grid = np.round((p[:2000] - f.origin) / (h / n)) * (h / n) + f.origin
    on = np.concatenate([grid, np.nextafter(grid, np.inf), np.nextafter(grid, -np.inf)])
    p = np.concatenate([p, on, np.full((5, 3), np.nan)])
    p[rng.integers(0, len(p), 300), rng.integers(0, 3, 300)] += 50 * f.size      # beyond the grid
    rows = np.ascontiguousarray(p.T, np.float64)
    got, want = [], []
    for t, out in ((tris, got), (whole, want)):
        m = rows.shape[1]
        sd, closest, outward = np.empty(m), np.empty((m, 3)), np.empty((m, 3))
        known, cell = np.empty(m, bool), np.empty(m, np.int64)
        kf.exact_listed(rows, f.grid._k_grid64, f.grid._k_errors, t, sd, closest, outward, known, cell)
        out += [sd, closest, outward, known, cell]
    for a, b in zip(got, want):
        assert same_bits(a, b)
    near = slice(6000, 12000)                        # ``points``' near half
    cells = got[4][near][got[3][near]]
    assert (first[cells] >= 0).mean() > 0.9
    assert np.diff(start).mean() < 0.8 * np.diff(tris[0])[first >= 0].mean()


def fine_field(name, seed=14):
    """A kept field of ``name`` with the sub-cells and fine nodes where ``points``' near half is
    (as ``Collider.bind`` gives them where the hair is at rest), and those points."""
    f = MeshField(*MESHES[name](), margin=0.05, name=name)
    p = points(f, seed=seed)
    f.index.use_sub_lists(np.ascontiguousarray(p[6000:].T, np.float32))
    return f, p


def fine_rows(f, p):
    rows = np.ascontiguousarray(p.T, np.float64)
    ok, lo, hi = np.empty(len(p), bool), np.empty(len(p)), np.empty(len(p))
    kf.fine_rows(rows, f.grid._k_grid64, f.grid._k_errors, f._k_tris, ok, lo, hi)
    return ok, lo, hi


def ref_fine_rows(f, p):
    """``kernels.field.fine_rows`` as numpy: each point's fine cell in its list cell's brick,
    ``max(f − r)`` and ``min(f + r)`` over its eight nodes (NaN nodes: no bounds)."""
    brick, values, n = f._k_tris[22:25]
    h = f.cell * f.grid.list_cell
    step = h / n
    cell = ref_list_cell(f, p)
    ijk = np.stack(np.unravel_index(cell, tuple(int(x) for x in f.grid.list_dims)), axis=1)
    q = p - f.origin
    with np.errstate(invalid="ignore"):
        fine = np.floor(q / step - ijk * n)
    ok = (brick[cell] >= 0) & np.all((fine >= 0) & (fine < n), axis=1)
    lo, hi = np.full(len(p), -np.inf), np.full(len(p), np.inf)
    m1 = n + 1
    a = np.where(ok[:, None], fine, 0).astype(np.int64)
    for da in (0, 1):
        for db in (0, 1):
            for de in (0, 1):
                d = np.array([da, db, de])
                at = brick[cell].astype(np.int64) * m1 ** 3 + ((a[:, 0] + da) * m1 + a[:, 1] + db) * m1 + a[:, 2] + de
                v = values[np.where(ok, at, 0)].astype(np.float64)
                node = ijk * h + (a + d) * step
                r = np.sqrt(((q - node) ** 2).sum(axis=1))
                ok &= ~np.isnan(v)
                lo = np.maximum(lo, v - r)
                hi = np.minimum(hi, v + r)
    return ok, np.where(ok, lo, 0.0), np.where(ok, hi, 0.0)


@pytest.mark.parametrize("n", [1, TriangleIndex.FINE_NODES, 5])
@pytest.mark.parametrize("name", list(MESHES))
def test_the_fine_nodes_bound_the_exact_distance(name, n, monkeypatch):
    """Where hair is, a kept field's list cells keep the exact signed distance at FINE_NODES + 1
    nodes a side (``grid_build.fine_nodes``), and a point's eight nodes bound its distance without
    a query (``fine_bounds``: the signed distance is 1-Lipschitz). The nodes hold the exact
    query's value; the bounds are numpy's written out here, bit for bit, and hold the exact
    distance wherever it is within the list's reach — on a sphere, a bumpy mesh, shells that
    cross (no brick listing both: inside one, the other's side is outside) and an open sheet (none
    beside its rim) — to the prune's slack; they are close (within a fine cell's diagonal) and the
    bricks cover many near points. The build gives the same bits on one and two threads. For
    the nodes a side the add-on keeps, and for coarser and finer ones."""
    monkeypatch.setattr(TriangleIndex, "FINE_NODES", n)
    f, p = fine_field(name)
    brick, values, kept = f._k_tris[22:25]
    assert kept == n and brick.size
    # the nodes are the exact query's values
    h = f.cell * f.grid.list_cell
    cells = np.flatnonzero(brick >= 0)
    assert cells.size
    pick = cells[:: max(1, cells.size // 40)]
    ijk = np.stack(np.unravel_index(pick, tuple(int(x) for x in f.grid.list_dims)), axis=1)
    m1 = n + 1
    abc = np.stack(np.meshgrid(*[np.arange(m1)] * 3, indexing="ij"), -1).reshape(-1, 3)
    nodes = (ijk[:, None, :] * h + abc[None] * (h / n)).reshape(-1, 3)
    sd, _, _, known, cell = f.index.exact_listed(nodes + f.origin)
    stored = values[(brick[pick].astype(np.int64)[:, None] * m1 ** 3 + np.arange(m1 ** 3)[None]).ravel()]
    # (a node on a cell's high face is queried in the next cell's list: compared where its own)
    mine = cell == np.repeat(pick, m1 ** 3)
    exact = mine & known & (np.abs(sd) <= f.list_reach[np.repeat(pick, m1 ** 3)])
    assert mine.mean() > 0.5 * (n / m1) ** 3 and exact.sum() > 0.4 * mine.sum()
    assert same_bits(stored[exact], sd[exact].astype(np.float32)) and np.isnan(stored[mine & ~exact]).all()
    # the bounds
    rng = np.random.default_rng(15)
    near = p[6000:]
    on = np.round((near[:1000] - f.origin) / (h / n)) * (h / n) + f.origin        # on the fine cells' faces
    q = np.concatenate([p, on, np.nextafter(on, np.inf), np.nextafter(on, -np.inf), np.full((3, 3), np.nan)])
    q[rng.integers(0, len(q), 100), rng.integers(0, 3, 100)] += 50 * f.size
    ok, lo, hi = fine_rows(f, q)
    rok, rlo, rhi = ref_fine_rows(f, q)
    assert same_bits(ok, rok) and same_bits(lo[ok], rlo[ok]) and same_bits(hi[ok], rhi[ok])
    sd, _, _, known, cell = f.index.exact_listed(q)
    within = ok & known & (np.abs(sd) <= f.list_reach[cell])
    slack = f._k_tris[5]
    assert within[6000:12000].mean() > (0.4 if n > 1 else 0.25) if name != "patch" else within.sum() > 100
    assert np.all(lo[within] - slack <= sd[within]) and np.all(sd[within] <= hi[within] + slack)
    assert np.all(hi[ok] - lo[ok] <= 2 * np.sqrt(3.0) * h / n + 1e-12)
    if name == "crossing":                    # no brick whose list holds both shells
        assert f.grid.seam_cells and (brick[f.grid.doubt < 0] < 0).all()
        start, listed = f._k_tris[0], f._k_tris[1]
        part = f.index.parts()
        assert part.max() == 1
        for c in np.flatnonzero(brick >= 0):
            assert np.unique(part[listed[start[c]:start[c + 1]]]).size == 1
    if name == "patch":                       # no brick whose list holds a triangle of the rim
        start, listed = f._k_tris[0], f._k_tris[1]
        rim = boundary_features(f.index.triangles).any(axis=1)
        assert rim.any() and same_bits(f.index.parts() < 0, rim)
        for c in np.flatnonzero(brick >= 0):
            assert not rim[listed[start[c]:start[c + 1]]].any()
    # one and two threads
    built = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            t = f._k_tris
            built.append(grid_build.fine_nodes(t[:22] + t[22:], pick.astype(np.int64), n, f.list_reach, f.grid.doubt,
                                               f.index.parts()))
            built.append(fine_rows(f, q))
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert all(same_bits(a, b) for x, y in zip(built[:2], built[2:]) for a, b in zip(x, y))


@pytest.mark.parametrize("name", list(MESHES))
def test_the_fine_nodes_clear_only_points_the_exact_query_finds_outside(name):
    """Held depth (``MeshField._depths``) with the fine nodes leaves out points they prove
    outside their limits: every depth it measures is the bits it measured without them, every
    point it leaves out has a depth ≤ 0 without them (what is reported is the same), and on the
    closed meshes it leaves out many that would have been measured."""
    f, p = fine_field(name, seed=16)
    x = np.ascontiguousarray(p.T, np.float32)
    limit = np.random.default_rng(17).uniform(-0.05, 0.1, x.shape[1]).astype(np.float32)
    with_fine = f._depths(x, limit)
    t = f._k_tris
    f.index._k_tris = t[:22] + (np.zeros(0, np.int32), np.zeros(0, np.float32), 1)
    try:
        without = f._depths(x, limit)
    finally:
        f.index._k_tris = t
    measured = np.isfinite(with_fine)
    assert same_bits(with_fine[measured], without[measured])
    assert np.all(without[~measured] <= 0)
    cleared = np.isfinite(without) & ~measured
    assert cleared.sum() > (100 if name != "patch" else 0)


@pytest.mark.parametrize("name", list(MESHES))
def test_a_field_kept_over_frames_lists_per_cell_and_measures_what_coarser_lists_measure(name):
    """A field bound once and queried every frame lists triangles per grid cell; one built for a
    single frame (a deforming collider's, ``kept=False``), one that refits (``give``) and one too
    large for that many lists, per two. Where both lists reach, the exact distance is the same
    bits: both list the nearest triangle, and the least squared distance over the triangles
    measured does not depend on their order."""
    f = field(name)
    v, t = MESHES[name]()
    one_frame = MeshField(v, t, margin=0.05, name=name, kept=False)
    assert f.grid.list_cell == 1 and one_frame.grid.list_cell == 2
    assert MeshField(v, t, margin=0.05, name=name, give=0.01).grid.list_cell == 2
    assert np.array_equal(f.grid.distance_grid, one_frame.grid.distance_grid)
    p = points(f, seed=8)
    sd, _, _, known = f.exact(p)
    sd2, _, _, known2 = one_frame.exact(p)
    within = (known & known2 & (np.abs(sd) <= f.list_reach[ref_list_cell(f, p)])
              & (np.abs(sd2) <= one_frame.list_reach[ref_list_cell(one_frame, p)]))
    assert within.sum() > 1000
    assert same_bits(sd[within], sd2[within])


def test_a_field_too_large_for_lists_per_cell_keeps_coarser_ones(monkeypatch):
    from hair_wig.collision.grid import DistanceGrid

    monkeypatch.setattr(DistanceGrid, "KEPT_LISTS", 1000)
    assert MeshField(*MESHES["bumpy"](), margin=0.05).grid.list_cell == 2


@pytest.mark.parametrize("name", ["icosphere", "bumpy"])
def test_exact_distances_are_brute_force_ones(name):
    """Against brute force over every triangle (``exact_signed_distance``: absolute coordinates,
    another order of operations): the same distance to rounding — float64 closest points of
    coordinates up to M (the points and the grid's origin, which the kernels measure from) pass
    through ~64 roundings (the edge's foot, its clamp, the products and sums of the distance) —
    and the same side wherever the point is farther from the surface than that."""
    f = field(name)
    p = points(f, n=1500, seed=6)
    sd, _, _, known = f.exact(p)
    reach = f.list_reach[ref_list_cell(f, p)]
    within = np.flatnonzero(known & (np.abs(sd) <= reach))
    brute = exact_signed_distance(p[within], f.vertices, f.triangles)
    tol = rounding(magnitude(p, f.origin, at_least=f.size), 64, EPS64)
    assert np.all(np.abs(np.abs(sd[within]) - np.abs(brute)) <= tol)
    clear = np.abs(brute) > tol
    assert np.array_equal(np.sign(sd[within][clear]), np.sign(brute[clear]))


@pytest.mark.parametrize("name", list(MESHES))
def test_signed_distance_is_the_numpy_rule(name):
    """The grid's value, the box's distance beyond the grid, and exact near the surface —
    searched over every triangle where the lists cannot decide (a seam's cells)."""
    f = field(name)
    p = points(f, seed=7)
    d = f.signed_distance(p)
    assert d.dtype == np.float32
    assert same_bits(d, ref_signed_distance(f, p))


@pytest.mark.parametrize("name", list(MESHES))
def test_held_depth_is_screen_bound_and_exact_distance(name):
    """``MeshField._depths`` (the kernel of ``Collider.held_depth``) per point: where the nearest
    node's screen and the trilinear bound let a point through, ``limit − signed_distance`` bit for
    bit — or −inf where the lists' lower bound proves it outside its limit, which its exact depth
    confirms (≤ 0). ``Collider.held_depth``, their max and 0, is the numpy rule's."""
    f = field(name)
    p = points(f, seed=8)
    x = np.ascontiguousarray(p.T, np.float32)
    limit = np.random.default_rng(9).uniform(-0.05, 0.1, x.shape[1]).astype(np.float32)
    depth = f._depths(x, limit)
    pick = np.flatnonzero(ref_node_values(f, x, False) < limit + f.slack)
    d, err = ref_distance_rows(f, x[:, pick])
    pick = pick[d < limit[pick] + err]
    want = np.full(x.shape[1], -np.inf, np.float32)
    want[pick] = limit[pick] - ref_signed_distance(f, x[:, pick].T.astype(np.float64))
    measured = np.isfinite(depth)
    assert same_bits(depth[measured], want[measured])
    assert np.all(want[~measured] <= 0)
    assert measured.sum() > 100 and np.isfinite(want[~measured]).sum() > 100      # both ways were taken
    ruled_out = np.setdiff1d(np.arange(x.shape[1]), pick)
    assert f.grid.seam_cells or np.all(limit[ruled_out] - f.signed_distance(x[:, ruled_out].T.astype(np.float64)) <= 0)

    c = Collider(ColliderMesh(name, f.vertices, f.triangles, offset=0.05), np.eye(4), 0.05)
    c.field = c.bound_field = f
    c.limit = limit
    assert c.held_depth(x, np.arange(x.shape[1])) == max(float(want.max()), 0.0)


def test_pushes_use_the_kernels_and_keep_their_meaning():
    """``project`` (exact near the surface, the gradient beyond) moves only points nearer than
    their limit, and a point decided exactly goes to its closest point plus the limit along the
    outward direction there (``exact``'s, bit for bit)."""
    f = field("bumpy")
    p = points(f, n=2000, seed=10)
    limit = np.full(len(p), 0.03)
    new, moved, along = f.project(p, limit, direction=True)
    assert moved.size > 100
    assert np.all(f.signed_distance(p[moved]) < 0.03 + f.error_at(p[moved]))
    sd, cp, out, known = f.exact(p[moved])
    exact = known & (np.abs(sd) <= f.list_reach[ref_list_cell(f, p[moved])])
    assert exact.sum() > 100
    assert same_bits(new[exact], cp[exact] + out[exact] * 0.03) and same_bits(along[exact], out[exact])
    assert np.allclose(np.linalg.norm(along, axis=1), 1.0)


# ---------------------------------------------------------------- threads
def test_every_kernel_gives_the_same_bits_on_one_and_two_threads():
    f = field("crossing")
    p = points(f, seed=11)
    x = np.ascontiguousarray(p.T, np.float32)
    limit = np.full(x.shape[1], 0.02, np.float32)

    def run():
        return [f._node_values(x, False), f._node_values(x, True), *f.distance_rows(x), *f.lookup(p),
                *f._cells(p), *f.exact(p), f.signed_distance(p), f._depths(x, limit)]

    results = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            results.append(run())
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert all(same_bits(a, b) for a, b in zip(*results))


def test_after_warm_up_the_field_queries_compile_nothing():
    """``prepare.warm_up`` compiles (or loads) every field kernel for the types ``MeshField``
    passes: a field's queries after it add no compiled version."""
    from hair_wig import prepare

    list(prepare.warm_up())
    names = ("node_values", "trilinear_rows", "lookup", "grid_cells", "exact_listed", "signed_distances",
             "held_depths")
    before = {n: len(getattr(kf, n).signatures) for n in names}
    assert all(before.values())
    f = field("crossing")
    p = points(f, n=200, seed=12)
    x = np.ascontiguousarray(p.T, np.float32)
    f.screen(x, np.zeros(x.shape[1], np.float32))
    f.lower_bound(x[:, ::2])
    f.distance_rows(x)
    f.trilinear_rows(p.T)
    f.lookup(p)
    f.error_at(p)
    f.exact(p)
    f.signed_distance(np.asfortranarray(p))
    f._depths(x, np.zeros(x.shape[1]))
    c = Collider(ColliderMesh("c", f.vertices, f.triangles, offset=0.01), np.eye(4), 0.01)
    c.bind(x)
    c.fast_distance(p.T, direction=True)
    c.held_depth(x, np.arange(x.shape[1]))
    c.bind(x, 8)
    c.set_frame(None)
    q = np.ascontiguousarray(x.reshape(3, 50, 8).transpose(0, 2, 1))
    for margin in (np.full(50, -np.inf, np.float32), np.full(50, np.inf, np.float32)):
        c.near_step(q[:, 3], 3, slice(0, 50), np.arange(50) * 8 + 3, margin, np.full(50, 0.01, np.float32))
    assert {n: len(getattr(kf, n).signatures) for n in names} == before
