"""The collision layer without Blender (SPEC §6.3): distances against analytic answers and an
exact closest-triangle check that does not use the field; one-sided open meshes; the groom is
sacred; length and collision together."""

import numpy as np

from hair_wig import FrameInput, HairSet, Magnet, Wig, WigSettings
from hair_wig.collision import MeshField, closest_on_triangles, exact_signed_distance
from tolerance import EPS64, FOLLOW, NORM, SEGMENT, magnitude, rounding

# The exact distances (MeshField near the surface, exact_signed_distance, the analytic ones)
# are float64 on both sides: 1e-9 there is a million ulps above their rounding and far below a
# wrong closest triangle (1e-4 and more), so it stays.


def sphere(radius=1.0, rings=48, segments=96):
    th = np.linspace(0, np.pi, rings + 1)[1:-1]
    ph = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    v = np.concatenate([[[0, 0, radius]],
                        radius * np.stack([np.outer(np.sin(th), np.cos(ph)), np.outer(np.sin(th), np.sin(ph)),
                                           np.outer(np.cos(th), np.ones_like(ph))], -1).reshape(-1, 3),
                        [[0, 0, -radius]]])
    tris = [(0, 1 + (j + 1) % segments, 1 + j) for j in range(segments)]
    for i in range(rings - 2):
        for j in range(segments):
            a, b = 1 + i * segments + j, 1 + i * segments + (j + 1) % segments
            tris += [(a, b, a + segments), (b, b + segments, a + segments)]
    last = len(v) - 1
    base = 1 + (rings - 2) * segments
    tris += [(base + j, base + (j + 1) % segments, last) for j in range(segments)]
    return v, np.array(tris)[:, ::-1]          # outward normals


def box(half=(1.0, 0.6, 0.4), n=8):
    """A closed box, each face a grid of n × n quads."""
    verts, tris = [], []
    h = np.asarray(half)
    s = np.linspace(-1, 1, n + 1)
    for axis in range(3):
        for sign in (-1, 1):
            u, v = [k for k in range(3) if k != axis]
            base = len(verts)
            for a in s:
                for b in s:
                    p = np.zeros(3)
                    p[axis], p[u], p[v] = sign, a, b
                    verts.append(p * h)
            for i in range(n):
                for j in range(n):
                    q = base + i * (n + 1) + j
                    quad = (q, q + n + 1, q + n + 2, q + 1)
                    t1, t2 = (quad[0], quad[1], quad[2]), (quad[0], quad[2], quad[3])
                    if (sign > 0) != ((u, v) == ((axis + 1) % 3, (axis + 2) % 3)):
                        t1, t2 = t1[::-1], t2[::-1]
                    tris += [t1, t2]
    return np.array(verts), np.array(tris)


def box_distance(p, half):
    q = np.abs(p) - half
    return np.linalg.norm(np.maximum(q, 0), axis=1) + np.minimum(q.max(axis=1), 0)


def test_closest_point_is_no_farther_than_any_point_of_the_triangle():
    rng = np.random.default_rng(1)
    n = 3000
    a, b, c = (rng.normal(size=(n, 3)) for _ in range(3))
    p = rng.normal(size=(n, 3)) * 2
    bary, _ = closest_on_triangles(p, a, b, c)
    d = np.linalg.norm(p - (bary[:, :1] * a + bary[:, 1:2] * b + bary[:, 2:] * c), axis=1)
    s = np.linspace(0, 1, 31)
    u, v = np.meshgrid(s, s)
    keep = u + v <= 1
    u, v = u[keep], v[keep]
    # float64: the closest point (~20 roundings of the feet; where its errors move it along the
    # triangle the distance changes only to second order), p minus it (6) and its norm (4); a
    # sample's point and norm (10): 40 roundings of coordinates up to the largest |x|. A wrong
    # Voronoi region is farther by a good part of a sample spacing.
    for i in range(0, n, 15):
        samples = a[i] + u[:, None] * (b[i] - a[i]) + v[:, None] * (c[i] - a[i])
        tol = rounding(magnitude(p[i], a[i], b[i], c[i]), 40, eps=EPS64)
        assert d[i] <= np.linalg.norm(samples - p[i], axis=1).min() + tol
    np.testing.assert_allclose(bary.sum(axis=1), 1.0)
    assert (bary >= -rounding(1.0, 4, eps=EPS64)).all()     # 1 − ub − uc on an edge (float64)


def test_sphere_distances_exact_near_the_surface_and_signed_everywhere():
    v, t = sphere()
    field = MeshField(v, t)
    assert field.index.closed and not field.index.flipped
    # a smooth closed head has no seam: every cell's grid value is trusted (a false seam sends
    # points to the exact search every frame — it once made the live preview 7x slower)
    assert field.grid.seam_cells == 0 and MeshField(*sphere(1.0, 32, 64)).grid.seam_cells == 0
    rng = np.random.default_rng(0)
    d = rng.normal(size=(4000, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    p = d * rng.uniform(0.0, 1.3, (4000, 1))
    got = field.signed_distance(p)
    exact = exact_signed_distance(p, v, t)
    near = np.abs(exact) < 0.5 * field.exact_reach        # the grid decides who is near: with margin
    np.testing.assert_allclose(got[near], exact[near], atol=1e-9)
    assert np.array_equal(np.sign(got), np.sign(exact))
    # the faceted sphere against the analytic one: within the facets' sag
    sag = 1 - np.cos(np.pi / 48)
    assert np.abs(got[near] - (np.linalg.norm(p[near], axis=1) - 1)).max() < sag + 1e-9


def test_ellipsoid_and_box_against_exact_distances():
    v, t = sphere()
    v = v * (1.0, 0.7, 1.3)
    field = MeshField(v, t)
    rng = np.random.default_rng(2)
    p = rng.uniform(-1.4, 1.4, (3000, 3)) * (1.0, 0.7, 1.3)
    exact = exact_signed_distance(p, v, t)
    near = np.abs(exact) < 0.5 * field.exact_reach        # the grid decides who is near: with margin
    np.testing.assert_allclose(field.signed_distance(p)[near], exact[near], atol=1e-9)
    half = np.array([1.0, 0.6, 0.4])
    bv, bt = box(half)
    field = MeshField(bv, bt)
    p = rng.uniform(-1.3, 1.3, (3000, 3)) * half
    got = field.signed_distance(p)
    analytic = box_distance(p, half)
    near = np.abs(analytic) < 0.5 * field.exact_reach
    np.testing.assert_allclose(got[near], analytic[near], atol=1e-9)
    assert np.array_equal(np.sign(got[np.abs(analytic) > 1e-6]), np.sign(analytic[np.abs(analytic) > 1e-6]))


def test_the_screen_never_passes_over_a_point_within_reach_of_the_surface():
    """The one-gather screen is a lower bound: every point whose exact distance is below
    ``reach − slack`` is kept, also points beyond the grid (their index wraps) and a NaN."""
    v, t = sphere(1.0, 24, 48)
    v = v * (1.0, 0.7, 1.3)
    field = MeshField(v, t, margin=0.05)
    rng = np.random.default_rng(5)
    p = rng.uniform(-2.5, 2.5, (4000, 3))
    p[:50] = np.nan
    exact = exact_signed_distance(np.nan_to_num(p[50:]), v, t)
    for limit in (0.0, 0.05, -0.02):
        reach = np.full(len(p), limit + field.slack, np.float32)
        kept = np.zeros(len(p), bool)
        kept[field.screen(np.ascontiguousarray(p.T, np.float32), reach)] = True
        assert kept[50:][exact < limit].all()
        assert kept[50:].mean() < 0.5                    # and it does screen
        d, err = field.distance_rows(np.ascontiguousarray(p[50:].T, np.float32))
        assert (d - err <= exact + grid_rounding(p[50:]))[np.abs(exact) < 3 * field.cell].all()
    # the walk's margins start from lower_bound: below the exact distance everywhere, also far
    # beyond the grid (its box is clamped, not its flat index)
    far = rng.uniform(-40, 40, (2000, 3))
    q = np.concatenate([np.nan_to_num(p[50:]), far])
    lower = field.lower_bound(np.ascontiguousarray(q.T, np.float32))
    assert (lower <= exact_signed_distance(q, v, t) + bound_rounding(q)).all()


def grid_rounding(p):
    """How far the float32 grid's trilinear distance (and its error bound) can round, per point
    ``p`` (N, 3): its node values are differences of float32 coordinates of the size of the
    point's (differences, a norm: 10), the fractions in the cell are float32 (1 each, the
    distance's slope is 1), the interpolation's 7 lerps (3 each: 21) and ``d − err`` (1): 34
    roundings of |x|. A bound that does not hold is off by a fraction of a cell (5e-2)."""
    return rounding(np.abs(p).max(axis=1), 34)


def bound_rounding(p):
    """The same for ``lower_bound`` at points ``p`` (N, 3): the nearest node's value (10), the
    slack taken off (1) and, beyond the grid, the distance to its clamped box (differences and
    a norm: 5): 16 roundings of |x|, per point (some lie 40 units out)."""
    return rounding(np.abs(p).max(axis=1), 16)


def test_an_open_plane_is_one_sided_its_normal_says_where_outside_is():
    s = np.linspace(-1, 1, 9)
    x, y = np.meshgrid(s, s)
    v = np.stack([x.ravel(), y.ravel(), np.zeros(x.size)], 1)
    t = []
    for i in range(8):
        for j in range(8):
            q = i * 9 + j
            t += [(q, q + 1, q + 10), (q, q + 10, q + 9)]          # normals up (+z)
    field = MeshField(v, np.array(t))
    assert not field.index.closed
    p = np.array([[0.1, 0.2, 0.05], [0.1, 0.2, -0.05], [-0.3, 0.4, -0.02]])
    np.testing.assert_allclose(field.signed_distance(p), [0.05, -0.05, -0.02], atol=1e-9)
    new, moved = field.project(p, np.zeros(3))
    assert list(moved) == [1, 2]
    np.testing.assert_allclose(new, [[0.1, 0.2, 0.0], [-0.3, 0.4, 0.0]], atol=1e-9)


def _hair_on_sphere(n=60, k=12, lift=0.004, length=0.6, seed=3):
    """Strands lying close over the unit sphere (each ``lift`` above it), combed down."""
    rng = np.random.default_rng(seed)
    z = rng.uniform(0.3, 0.95, n)
    phi = rng.uniform(0, 2 * np.pi, n)
    theta = np.arccos(z)
    s = np.linspace(0, length, k)
    th = theta[:, None] + s[None, :]                       # down the sphere, along the meridian
    r = 1 + lift * (s[None, :] > 0)
    pts = np.stack([r * np.sin(th) * np.cos(phi)[:, None], r * np.sin(th) * np.sin(phi)[:, None],
                    r * np.cos(th)], -1)
    return HairSet(pts.reshape(-1, 3).astype(np.float32), [k] * n, name="Hair")


def _wig(hair, scale=1.0, shift=(0, 0, 0)):
    v, t = sphere(1.0, 32, 64)
    m = np.eye(4)
    m[:3, :3] *= scale
    m[:3, 3] = shift
    magnet = Magnet("M", m @ np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1.5], [0, 0, 0, 1.0]]), radius=3.0 * scale)
    return Wig(hair, m, m, [magnet], WigSettings(), head_mesh=(v, t)), magnet, m


def test_the_groom_does_not_move_at_rest_and_a_pulled_groom_keeps_length_and_stays_out():
    hair = _hair_on_sphere()
    v, t = sphere(1.0, 32, 64)
    wig, magnet, m = _wig(hair)
    rest, _ = wig.step(FrameInput(m, m, np.array([magnet.rest_matrix])))
    # nothing moves but the length walk re-placing each point (carried root to tip over 12)
    assert np.abs(rest - hair.points).max() <= rounding(magnitude(hair.points), FOLLOW * 12)
    pull = magnet.rest_matrix.copy()
    pull[:3, 3] += (0.3, 0.0, -1.2)                        # into the head
    p, _ = wig.step(FrameInput(m, m, np.array([pull])))
    assert np.abs(p - hair.points).max() > 0.1
    seg = np.linalg.norm(np.diff(p.reshape(60, 12, 3), axis=1), axis=2)
    seg0 = np.linalg.norm(np.diff(hair.points.reshape(60, 12, 3), axis=1), axis=2)
    assert np.abs(seg / seg0 - 1).max() < kept_length(p, seg0)
    d = exact_signed_distance(p, v, t)
    d0 = exact_signed_distance(hair.points, v, t)
    # what the bake may leave inside, by design (reported as the residual): 1 mm x head size 2
    assert (d >= np.minimum(0, d0) - 1e-3 * 2.0).all()
    assert wig.residual <= 1e-3 * 2.0


def kept_length(p, seg0):
    """How far, relative to the shortest segment ``seg0``, a segment's length can round when
    the walk placed its end (a follow step: SEGMENT roundings of coordinates) and a push set it back
    on its segment's sphere (onto the circle: its foot, the swing and the sum, 5 of coordinates;
    sqrt(L² − h²) and its ratio, 8 of L), then it is measured here (the ends' difference, 2 of
    coordinates; a norm, 4 of L). A length control that fails is off by percents."""
    return rounding(magnitude(p) / seg0.min(), SEGMENT + 5 + 2) + rounding(1.0, 8 + NORM)


def _arches():
    rng = np.random.default_rng(11)
    n, k = 40, 16
    u = rng.normal(size=(n, 3)) * (1, 1, 0.3) + (0, 0, 1.5)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    t = np.cross(u, rng.normal(size=(n, 3)))
    t /= np.linalg.norm(t, axis=1, keepdims=True)
    s = np.linspace(0, 1, k)[None, :, None]
    r = 1 + 0.5 * np.sin(np.pi * s) + 0.004 * (s > 0)              # out, over, back down
    pts = (u[:, None] * np.cos(0.9 * s) + t[:, None] * np.sin(0.9 * s)) * r
    return HairSet(pts.reshape(-1, 3).astype(np.float32), [k] * n, name="Arches"), pts


def _numpy_walk(monkeypatch):
    """The walk's numpy form (``CollisionWalk._walk``, the children's) in place of its kernel."""
    from hair_wig.walk import CollisionWalk

    monkeypatch.setattr(CollisionWalk, "_walk_kernel",
                        lambda self, p, base, span, first, *last: self._walk(p, base, span, first, *last))


def test_the_walk_looks_up_only_points_a_push_could_reach(monkeypatch):
    """Along a strand, a point is at least its previous point's distance minus the segment
    from the surface, so the walk skips lookups while that margin lasts. Arches that leave the
    head and land back on it, pulled into it: every point out, every segment its length
    (elastic or not), lookups skipped — by the kernel (counted) and by the numpy walk (with and
    without the margins, the same bits) — and the two walks agree to float32 rounding of the
    pushes (a few ulp of the head's size: the kernel's arithmetic is float64 throughout)."""
    from hair_wig import collision

    hair, pts = _arches()
    n, k = 40, 16
    v, tri = sphere(1.0, 32, 64)
    looked = []
    lower_bound = collision.MeshField.lower_bound

    def counting(self, x):
        looked.append(x.shape[1])
        return lower_bound(self, x)

    pull = np.eye(4)
    pull[:3, 3] = (0.1, 0.0, -0.5)                       # down into the head
    inp = FrameInput(np.eye(4), np.eye(4), np.array([pull]))
    for e in (0.0, 0.3):
        def wig():
            return Wig(hair, np.eye(4), np.eye(4), [Magnet("M", np.eye(4), radius=3.0)],
                       WigSettings(elasticity=e), head_mesh=(v, tri))
        kernel = wig()
        walked, _ = kernel.step(inp)
        assert 0 < kernel.walk.looked < 0.8 * n * (k - 1)
        with monkeypatch.context() as m:
            _numpy_walk(m)
            m.setattr(collision.MeshField, "lower_bound", counting)
            numpy_wig = wig()
            looked.clear()
            with_margins, _ = numpy_wig.step(inp)
            assert 0 < sum(looked) < 0.8 * n * (k - 1)
            near_step = collision.Collider.near_step
            m.setattr(collision.Collider, "near_step",
                      lambda self, q, j, strands, index, margin=None, seg=None: near_step(self, q, j, strands, index))
            without, _ = numpy_wig.step(inp)
        assert np.array_equal(with_margins, without)
        # the numpy walk rounds in float32 what the kernel does in float64: per point a follow
        # (FOLLOW roundings of the coordinates) and its rounds of contacts (a push, the set-back
        # on the tangent plane: ~10 each, three rounds), carried on along the strand's k points;
        # coordinates up to ~2 (the arches over the unit head)
        assert np.abs(walked - with_margins).max() <= rounding(2.0, k * (FOLLOW + 3 * 10))
        for out in (walked, with_margins):
            d = exact_signed_distance(out, v, tri)
            assert d.min() >= -1e-3 * 2.0 and np.abs(out - hair.points).max() > 0.2
            seg = np.linalg.norm(np.diff(out.reshape(n, k, 3), axis=1), axis=2)
            seg0 = np.linalg.norm(np.diff(pts, axis=1), axis=2)
            if e == 0:
                assert np.abs(seg / seg0 - 1).max() < kept_length(out, seg0)


def test_shells_that_cross_are_measured_exactly_where_the_grid_cannot_tell_the_side():
    """An eye sunk into a head (Suzanne's are): behind the eye, inside the head, the closest
    feature changes side — the eye's back says outside, the skull's inside says inside — and the
    grid's trilinear value across that seam reads about 0 at any depth. On subdivided Suzanne
    this let a hair end 6 % of the head inside it while the bake reported 1e-7. Every distance
    agrees with brute force in sign, and within the grid's stated error (or exactly) in value."""
    hv, ht = sphere(1.0, 16, 32)
    ev, et = sphere(0.35, 12, 24)
    ev = ev + (0.0, -0.85, 0.3)
    v, t = np.concatenate([hv, ev]), np.concatenate([ht, et + len(hv)])
    field = MeshField(v, t, resolution=40)
    assert field.grid.seam_cells > 0
    rng = np.random.default_rng(11)
    p = rng.uniform((-0.5, -1.0, -0.2), (0.5, 0.0, 0.8), (1500, 3))
    exact = exact_signed_distance(p, v, t)
    got = field.signed_distance(p)
    err = field.error_at(p)
    side = np.abs(exact) > 1e-6
    assert np.array_equal(np.sign(got[side]), np.sign(exact[side]))
    bounded = np.isfinite(err)
    assert (np.abs(got - exact)[bounded] <= err[bounded] + grid_rounding(p[bounded])).all()
    np.testing.assert_allclose(got[~bounded], exact[~bounded], atol=1e-9)
    # the screen and the walk's margins stay below the distance, seams and all
    lower = field.lower_bound(np.ascontiguousarray(p.T, np.float32))
    assert (lower <= exact + bound_rounding(p)).all()
    d, e = field.distance_rows(np.ascontiguousarray(p.T, np.float32))
    beyond = np.abs(exact) > field.exact_reach              # where the grid alone decides
    assert (d - e <= exact + grid_rounding(p))[beyond].all()


def test_groom_limits_keep_the_offset_where_the_groom_has_room_and_the_groom_where_not():
    """SPEC §6.3, the groom is sacred: ``min(offset + margin, d0)`` in the clearance's own float
    type (the offset rounded to it), so a limit compares with the distance it was measured by."""
    from hair_wig.collision import groom_limits

    d0 = np.array([-0.01, 0.0, 0.005, 0.02, np.inf], np.float32)
    limit = groom_limits(d0, 0.01)
    assert limit.dtype == np.float32
    assert np.array_equal(limit, np.array([-0.01, 0.0, 0.005, np.float32(0.01), np.float32(0.01)], np.float32))
    wide = groom_limits(d0.astype(np.float64), 0.1, np.array([0.0, 0.0, 0.0, -0.09, 0.05]))
    assert wide.dtype == np.float64
    assert np.array_equal(wide, np.minimum(0.1 + np.array([0.0, 0.0, 0.0, -0.09, 0.05]), d0.astype(np.float64)))
    assert np.all(groom_limits(d0, 0.3) <= d0)                      # a groom at rest is never inside
