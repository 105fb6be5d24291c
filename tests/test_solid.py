"""A collider's solid without Blender (SPEC §6.3, inside or outside): the generalized winding
number kernels against a plain reference and the analytic 1 / 0 of a closed sphere, the same bits
on any thread count, and what ``collision.solid.Solid`` keeps of meshes whose answer is known —
two spheres pushed into each other, a sphere with a hole, a hemisphere, a ground plane."""

import numba
import numpy as np
import pytest
from test_collision import sphere

from hair_wig.collision import Collider, ColliderMesh, MeshField
from hair_wig.collision.solid import DIVISIONS, FILL, Solid, boundary_loops, clusters, crossing, winding_numbers
from hair_wig.kernels import winding as kernels

# The solid angles are float64 sums over T triangles of terms below 2π: their rounding is a few
# ulps of 2π each, so T · 4π · 2⁻⁵² bounds the exact sum's error (1e-11 for these meshes).
EPS64 = float(np.finfo(np.float64).eps)


def reference(q, v, t):
    """The winding number by numpy, triangle by triangle (Van Oosterom & Strackee)."""
    out = []
    for x in q:
        a, b, c = v[t[:, 0]] - x, v[t[:, 1]] - x, v[t[:, 2]] - x
        la, lb, lc = (np.linalg.norm(y, axis=1) for y in (a, b, c))
        det = np.einsum("ij,ij->i", a, np.cross(b, c))
        den = la * lb * lc + np.einsum("ij,ij->i", a, b) * lc + np.einsum("ij,ij->i", b, c) * la \
            + np.einsum("ij,ij->i", c, a) * lb
        out.append(2 * np.arctan2(det, den).sum() / (4 * np.pi))
    return np.array(out)


def without(v, t, keep):
    """The mesh ``(v, t)`` with only the triangles ``keep`` (bool (T,))."""
    return v, t[keep]


def test_the_winding_number_of_a_closed_sphere_is_one_inside_and_zero_outside_and_the_kernels_agree():
    v, t = sphere(1.0, 16, 32)
    rng = np.random.default_rng(1)
    d = rng.normal(size=(300, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    r = rng.uniform(0.0, 3.0, 300)
    r = r[np.abs(r - 1) > 0.05]                      # off the faceted surface (its sag is < 0.02)
    q = d[:len(r)] * r[:, None]
    exact = np.empty(len(q))
    kernels.winding_exact(q, v, t.astype(np.int64), exact)
    tol = len(t) * 4 * np.pi * EPS64 * 8
    assert np.abs(exact - reference(q, v, t)).max() < tol
    assert np.abs(exact - (r < 1)).max() < 1e-9
    fast = winding_numbers(q, v, t)
    # the dipoles of far clusters: a few hundredths at worst (Barill et al. 2018), and never
    # across ½ away from the surface
    assert np.abs(fast - exact).max() < 0.05
    assert np.array_equal(fast > 0.5, r < 1)


def test_the_winding_numbers_are_the_same_bits_on_one_and_two_threads():
    v, t = sphere(1.0, 24, 48)
    q = np.random.default_rng(2).uniform(-1.5, 1.5, (500, 3))
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            runs.append(winding_numbers(q, v, t))
    finally:
        numba.set_num_threads(was)
    assert np.array_equal(runs[0], runs[1])


def test_clusters_hold_every_triangle_once_in_a_ball_about_their_centre():
    v, t = sphere(1.0, 24, 48)
    (sorted_t, starts, centres, normals, radii, groups), order = clusters(v, t.astype(np.int64))
    assert np.array_equal(np.sort(order), np.arange(len(t)))
    assert np.array_equal(sorted_t, t[order])
    assert starts[0] == 0 and starts[-1] == len(t) and np.all(np.diff(starts) > 0)
    top = len(groups) - 1
    leaves = len(starts) - 1
    assert top >= 2 and len(radii) == top + leaves
    # the groups take every leaf once, in order
    assert groups[0] == top and groups[-1] == top + leaves and np.all(np.diff(groups) > 0)
    for g in range(top):
        held = sorted_t[starts[groups[g] - top]:starts[groups[g + 1] - top]]
        corners = v[held].reshape(-1, 3)
        assert np.linalg.norm(corners - centres[g], axis=1).max() <= radii[g] * (1 + 1e-12)
    for k in range(leaves):
        corners = v[sorted_t[starts[k]:starts[k + 1]]].reshape(-1, 3)
        assert np.linalg.norm(corners - centres[top + k], axis=1).max() <= radii[top + k] * (1 + 1e-12)
    # a cluster's normal is its triangles' area-weighted normals summed
    a, b, c = (v[sorted_t[:, i]] for i in range(3))
    halves = 0.5 * np.cross(b - a, c - a)
    np.testing.assert_allclose(normals[top:], np.add.reduceat(halves, starts[:-1]), atol=1e-12)
    # the area-weighted normals of a closed surface sum to nothing
    assert np.abs(normals.sum(axis=0)).max() < 1e-12 * len(t)


def test_clusters_kept_from_another_pose_hold_their_triangles_and_wind_alike():
    """A deforming mesh keeps its rest pose's grouping (``clusters(..., keep=...)``): the same
    triangles in the same order and leaves, every cluster's ball about its new centre holding
    its triangles where they are now, and the winding numbers those clusters give agree with a
    grouping made on the new pose to within the clusters' far-field error (both are sums of the
    same triangles' solid angles; their dipoles differ only in which triangles they lump)."""
    v, t = sphere(1.0, 24, 48)
    t = t.astype(np.int64)
    rest = clusters(v, t)
    w = v * (1.0 + 0.05 * np.sin(3 * v[:, :1]))                    # a wobble of 5 %
    (sorted_t, starts, centres, normals, radii, groups), order = clusters(w, t, keep=rest)
    assert np.array_equal(order, rest[1]) and np.array_equal(sorted_t, rest[0][0])
    assert np.array_equal(starts, rest[0][1]) and np.array_equal(groups, rest[0][5])
    top = len(groups) - 1
    for g in range(top):
        held = sorted_t[starts[groups[g] - top]:starts[groups[g + 1] - top]]
        assert np.linalg.norm(w[held].reshape(-1, 3) - centres[g], axis=1).max() <= radii[g] * (1 + 1e-12)
    for k in range(len(starts) - 1):
        corners = w[sorted_t[starts[k]:starts[k + 1]]].reshape(-1, 3)
        assert np.linalg.norm(corners - centres[top + k], axis=1).max() <= radii[top + k] * (1 + 1e-12)
    from hair_wig.kernels.winding import winding_numbers as wind

    q = np.random.default_rng(5).uniform(-1.3, 1.3, (2000, 3))
    kept, fresh = np.empty(len(q)), np.empty(len(q))
    wind(q, w, sorted_t, starts, centres, normals, radii, groups, np.zeros(0, np.int64), kept)
    wind(q, w, *clusters(w, t)[0], np.zeros(0, np.int64), fresh)
    assert np.abs(kept - fresh).max() < 0.05
    assert np.array_equal(kept > 0.5, fresh > 0.5)


def test_two_spheres_pushed_into_each_other_keep_only_the_surface_of_their_union():
    a, ta = sphere(1.0, 24, 48)
    b = a + [1.2, 0.0, 0.0]
    v = np.concatenate([a, b])
    t = np.concatenate([ta, ta + len(a)]).astype(np.int64)
    s = Solid(v, t)
    assert s.closed == 0 and s.triangles.shape[1] == 3 and s.split > 0
    corners = s.vertices(v)[s.triangles]                          # (K, 3, 3): kept triangles and pieces
    centres = np.array([[0.0, 0.0, 0.0], [1.2, 0.0, 0.0]])
    mid = corners.mean(axis=1)
    own = np.argmin(np.abs(np.linalg.norm(mid[:, None] - centres[None], axis=2) - 1.0), axis=1)
    other = centres[1 - own]
    # nothing kept reaches into the other sphere by more than a piece: a triangle the other
    # crosses is judged in DIVISIONS² pieces, so only a piece the crossing runs through is kept
    # with a part inside (whole, a crossed triangle reached a whole edge in: 0.066 here)
    edge = np.linalg.norm(a[ta[:, 1]] - a[ta[:, 0]], axis=1).max()
    sag = 1.0 - np.linalg.norm(a[ta].mean(axis=1), axis=1).max()
    depth = 1.0 - np.linalg.norm(corners - other[:, None], axis=2).min(axis=1)
    assert depth.max() <= edge / DIVISIONS + sag
    # and nothing outside it is left out: the kept area is the union's, the mesh's own sphere's
    # area less the cap the other covers (height 0.4: 0.8π of 4π), to the band of pieces along
    # the crossing (its circle of radius 0.8, a piece wide, on both spheres)
    area = 0.5 * np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1).sum()
    mesh = 0.5 * np.linalg.norm(np.cross(a[ta[:, 1]] - a[ta[:, 0]], a[ta[:, 2]] - a[ta[:, 0]]), axis=1).sum()
    band = 2 * (2 * np.pi * 0.8) * (edge / DIVISIONS)
    assert abs(area - 2 * mesh * (1 - 0.8 / 4)) < 0.25 * band
    # pieces' corners on a triangle's edge are shared with the neighbour's (split or made a fan
    # to meet them): no crack opens but along the crossing itself, one on each sphere
    assert len(boundary_loops(s.triangles)) == 2
    # each new corner a blend of its triangle's corners in DIVISIONS-ths (a piece's), or a fan's
    # centre (a third each): where the pieces tile their triangle, wherever it moves
    blend = s._weights * DIVISIONS
    fan = np.all(np.abs(s._weights - 1 / 3) < 1e-15, axis=1)
    assert fan.any() and (~fan).any()
    assert np.array_equal(blend[~fan], np.round(blend[~fan])) and (s._weights >= 0).all()
    assert np.abs(s._weights.sum(axis=1) - 1.0).max() < 1e-15
    # the union's field: a point in the overlap is inside, with no surface at it to say so
    f = MeshField(s.vertices(v), s.triangles)
    assert f.signed_distance(np.array([[0.6, 0.0, 0.0]]))[0] < -0.5
    raw = MeshField(v, t)
    assert raw.signed_distance(np.array([[0.6, 0.0, 0.0]]))[0] > -0.5     # the nearest shell's answer


def test_an_eye_through_the_fan_closing_its_socket_is_cut_where_it_crosses_the_fan():
    """An open socket (a cap cut from the head) closed by a fan, an eye pushed through the fan:
    the fan's triangles are cut too, their pieces' corners blending the fan's centre (a vertex
    ``vertices`` adds), and the pieces move with the head."""
    h, th = sphere(1.0, 48, 96)
    th = th[h[th].mean(axis=1)[:, 0] < 0.97]                        # a socket at +x
    e, te = sphere(0.25, 8, 16)
    v = np.concatenate([h, e + [0.98, 0.0, 0.0]])
    t = np.concatenate([th, te + len(h)]).astype(np.int64)
    s = Solid(v, t)
    assert s.closed == 1 and s.split > 0
    centre = len(v)                                                 # the fan's centre
    assert (s._rows == centre).any()                                # pieces of the fan
    f = MeshField.of_solid(v, t, s)
    rng = np.random.default_rng(7)
    q = rng.uniform([0.75, -0.35, -0.35], [1.25, 0.35, 0.35], size=(20000, 3))
    exact = np.empty(len(q))
    kernels.winding_exact(q, s.vertices(v), s.whole, exact)
    d = f.signed_distance(q)
    wrong = (d < 0) != (exact > 0.5)
    # a piece the crossing runs through is kept or left out whole: a point takes the wrong side
    # only within its reach past the crossing, a piece's width at most (the fan's long triangles,
    # centre to rim, make the widest)
    w = s.vertices(v)[s.whole[crossing(s.vertices(v), s.whole)]]
    piece = max(np.linalg.norm(w[:, i] - w[:, (i + 1) % 3], axis=1).max() for i in range(3)) / DIVISIONS
    assert wrong.sum() <= 1e-3 * len(q) and np.abs(d[wrong]).max(initial=0.0) <= piece
    # moved whole, every corner with it
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    assert np.abs(s.vertices(v @ turn.T + 5.0) - (s.vertices(v) @ turn.T + 5.0)).max() < 1e-13


def test_an_eye_through_the_head_signs_hair_beside_it_as_the_winding_number_does():
    """A coarse eyeball pushed halfway through a fine head: the eyeball's large triangles cross
    the head's surface. Kept whole by their centres, their parts inside the head were surface,
    and hair just inside the head beside the eye read as outside (24 mm deep on this 1 m head,
    129 of these points; the Quick Fur head's eye socket showed it, 7 mm). Split where they
    cross, the field's sign is the winding number's but within a piece's reach of the crossing."""
    h, th = sphere(1.0, 48, 96)
    e, te = sphere(0.3, 6, 12)
    v = np.concatenate([h, e + [1.0, 0.0, 0.0]])
    t = np.concatenate([th, te + len(h)]).astype(np.int64)
    f = MeshField.of_solid(v, t)
    s = f.solid
    assert s.split > 0
    rng = np.random.default_rng(3)
    n = 20000
    # about the circle where the eye meets the head (x 0.955, radius 0.297), 8 cm either way
    g = rng.normal(size=(n, 2))
    g /= np.linalg.norm(g, axis=1)[:, None]
    q = np.c_[np.full(n, 0.955), 0.297 * g] + rng.uniform(-0.08, 0.08, size=(n, 3))
    exact = np.empty(n)
    kernels.winding_exact(q, s.vertices(v), s.whole, exact)
    d = f.signed_distance(q)
    wrong = (d < 0) != (exact > 0.5)
    piece = np.linalg.norm(e[te[:, 1]] - e[te[:, 0]], axis=1).max() / DIVISIONS
    assert 0.2 * n < (exact > 0.5).sum() < 0.9 * n
    # a piece the crossing runs through is kept or left out whole: its part across the crossing,
    # half a piece at most, at the sine of the crossing (the eye meets the head at about 80°)
    assert wrong.sum() <= 1e-3 * n
    assert np.abs(d[wrong]).max(initial=0.0) <= piece / 4


def test_a_small_hole_is_closed_facing_out_and_its_inside_is_inside():
    v, t = sphere(1.0, 24, 48)
    mid = v[t].mean(axis=1)
    t = t[mid[:, 2] < 0.93].astype(np.int64)         # a cap of 22.5° off the top: the rim at z 0.924
    loops = boundary_loops(t)
    assert len(loops) == 1
    s = Solid(v, t)
    assert s.closed == 1 and s.dropped == 0
    q = np.array([[0.0, 0.0, 0.9], [0.0, 0.0, 0.95], [0.0, 0.0, 0.0]])
    exact = np.empty(3)
    kernels.winding_exact(q, s.vertices(v), s.triangles, exact)
    assert np.allclose(exact, [1.0, 0.0, 1.0], atol=1e-9)          # closed: 1 or 0 to rounding
    assert np.abs(winding_numbers(q, s.vertices(v), s.triangles) - exact).max() < 0.05
    f = MeshField(s.vertices(v), s.triangles)
    d = f.signed_distance(np.array([[0.0, 0.0, 0.85], [0.0, 0.0, 1.0]]))
    assert d[0] < 0 and d[1] > 0


def test_a_hemisphere_is_closed_and_a_ground_plane_stays_one_sided():
    v, t = sphere(1.0, 24, 48)
    t = t[v[t].mean(axis=1)[:, 2] > 0].astype(np.int64)
    assert Solid(v, t).closed == 1                   # its rim disc is half its area: under FILL
    n = 10
    g = np.linspace(-1, 1, n + 1)
    x, y = np.meshgrid(g, g, indexing="ij")
    pv = np.stack([x.ravel(), y.ravel(), np.zeros(x.size)], 1)
    quads = [(i * (n + 1) + j, (i + 1) * (n + 1) + j, (i + 1) * (n + 1) + j + 1, i * (n + 1) + j + 1)
             for i in range(n) for j in range(n)]
    pt = np.array([(a, b, c) for a, b, c, d in quads] + [(a, c, d) for a, b, c, d in quads], np.int64)
    s = Solid(pv, pt)
    assert FILL <= 1.0 and s.closed == 0 and s.dropped == 0 and np.array_equal(s.triangles, pt)
    # as a collider it is the plane it was: one-sided, under it inside
    c = Collider(ColliderMesh("ground", pv, pt), np.eye(4), 0.0)
    assert c.field.signed_distance(np.array([[0.2, 0.1, -0.05], [0.2, 0.1, 0.05]])).tolist() == pytest.approx(
        [-0.05, 0.05], abs=1e-6)
