"""A collider that deforms (a breathing body, shape keys, a jiggle) without Blender: within its
give of the rest pose its field is the rest field refitted (``MeshField.refit``: the grid and its
lists kept, their bounds widened by how far the mesh moved, the triangles measured where they
are), beyond it a field of the frame's own. The refitted field answers as a new build of the
deformed mesh does — exact distances and sides against brute force, the grid within its stated
error, the screens below the distance — on a closed head, on shells that cross, and on a head
with an ear whose sides the winding number decides; no point is sent to a search of every
triangle; a frame's field does not depend on the frames before it; hair lying on a breathing
body is walked alike either way and ends outside it."""

import numpy as np
import pytest

from hair_wig import FrameInput, HairSet, Magnet, Wig, WigSettings
from hair_wig.collision import Collider, ColliderMesh, MeshField, exact_signed_distance
from test_collision import bound_rounding, box, grid_rounding, sphere
from tolerance import FOLLOW, magnitude, rounding

# Exact distances are float64 on both sides (the field's near the surface, brute force): 1e-9 is
# a million ulps above their rounding and far below a wrong closest triangle (1e-4 and more).
EXACT = 1e-9


def _bulge(v, at, size, height):
    """``v`` pushed out along its radius by a smooth bump of ``height`` about ``at``: every
    vertex moves at most ``height``."""
    r = np.linalg.norm(v - at, axis=1)
    out = v / np.linalg.norm(v, axis=1, keepdims=True)
    return v + height * np.exp(-(r / size) ** 2)[:, None] * out


def _answers_as_the_deformed_mesh(field, v, t, p):
    """``field`` of the mesh ``v, t`` measured at points ``p`` (N, 3) against brute force:
    exact near the surface, every side right, the grid within its error, the screens below."""
    exact = exact_signed_distance(p, v, t)
    # the lists' own promise: where a point's list finds a triangle within the list's reach, it
    # found the nearest (the lists of the rest pose, taking in the give)
    sd, _, _, known, cell = field.index.exact_listed(p)
    claimed = known & (np.abs(sd) <= field.list_reach[cell])
    assert claimed.sum() > len(p) // 4
    np.testing.assert_allclose(sd[claimed], exact[claimed], atol=EXACT)
    got = field.signed_distance(p)
    near = np.abs(exact) < 0.5 * field.exact_reach          # the grid decides who is near: with margin
    np.testing.assert_allclose(got[near], exact[near], atol=EXACT)
    side = np.abs(exact) > 1e-6
    assert np.array_equal(np.sign(got[side]), np.sign(exact[side]))
    err = field.error_at(p)
    bounded = np.isfinite(err)
    d, _ = field.lookup(p)
    inside_grid = np.isfinite(d)
    ok = (np.abs(d - exact) <= err + grid_rounding(p))[bounded & inside_grid]
    assert ok.all()
    lower = field.lower_bound(np.ascontiguousarray(p.T, np.float32))
    assert (lower <= exact + bound_rounding(p)).all()
    return exact


def test_a_refitted_head_measures_its_bulge_as_a_new_build_would():
    v, t = sphere(1.0, 32, 64)
    rest = MeshField(v, t, give=0.05)
    w = _bulge(v, np.array([0.0, 0.6, 0.8]), 0.35, 0.045)
    field = rest.refit(w)
    assert field is not None and 0.04 < field.moved_by <= 0.045
    assert field.grid.list_tri is rest.grid.list_tri                   # the lists are not built again
    rng = np.random.default_rng(1)
    d = rng.normal(size=(6000, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    p = d * rng.uniform(0.0, 1.25, (6000, 1))
    band = rest.exact_reach
    p[:4000] = d[:4000] * (1 + rng.uniform(-1.5 * band, 1.5 * band + 0.045, (4000, 1)))   # the band, the bulge too
    exact = _answers_as_the_deformed_mesh(field, w, t, p)
    new = MeshField(w, t, cell=rest.cell)
    near = np.abs(exact) < 0.5 * field.exact_reach
    np.testing.assert_allclose(field.signed_distance(p)[near], new.signed_distance(p)[near], atol=EXACT)
    # and the push out of it: exactly onto the deformed surface's offset
    lim = np.full(len(p), 0.01)
    moved_to, moved = field.project(p, lim)
    want, want_moved = new.project(p, lim)
    close = np.isin(moved, np.flatnonzero(near))
    assert np.array_equal(moved[close], want_moved[np.isin(want_moved, np.flatnonzero(near))])
    np.testing.assert_allclose(moved_to[close], want[np.isin(want_moved, np.flatnonzero(near))], atol=EXACT)


def test_a_slab_s_top_lifted_by_its_give_is_found_by_the_lists_up_to_their_reach():
    """The lists' give at its edge: a closed slab whose top is lifted by 0.95 of its give, points
    above and under the top up to the lists' reach. Its height is such that a row of list cells
    starts just beyond the rest top's band: lists made for the rest slab alone hold none of the
    top's triangles there (checked). Every point is measured exactly: its height over the lifted
    top."""
    v, t = box((1.0, 1.0, 0.404), n=20)
    cell = MeshField(v, t).cell
    rest = MeshField(v, t, cell=cell, give=cell)
    assert rest.grid.seam_cells == 0
    lift = 0.95 * rest.grid.give
    w = v.copy()
    w[v[:, 2] > 0, 2] += lift
    top = 0.404 + lift
    rng = np.random.default_rng(7)
    h = rng.uniform(-1.0, 1.0, 3000) * float(rest.grid.list_reach.min())
    p = np.stack([rng.uniform(-0.8, 0.8, 3000), rng.uniform(-0.8, 0.8, 3000), top + h], 1)
    # the premise: without the give, lists would miss the lifted top for some of these points
    bare = MeshField(v, t, cell=cell)
    held = bare.index.exact_listed(p)[3]
    assert (~held).sum() > 100
    field = rest.refit(w)
    assert field is not None
    sd, _, _, known, at = field.index.exact_listed(p)
    assert known.all() and (np.abs(sd) <= field.list_reach[at]).all()
    np.testing.assert_allclose(sd, h, atol=EXACT)
    np.testing.assert_allclose(field.signed_distance(p), h, atol=EXACT)
    # the fast distance the substeps read (the grid's trilinear value) is the lifted top's where
    # hair touches it: its nodes there were measured again (the rest grid's would read ~0.95
    # cell more); a plane's distance interpolates exactly, to float32 rounding of the node values
    touch = np.abs(h) < 0.25 * cell
    d, _ = field.lookup(p[touch])
    assert np.abs(d - h[touch]).max() < rounding(1.0, 40)


def test_a_refit_beyond_the_give_is_refused():
    v, t = sphere(1.0, 16, 32)
    rest = MeshField(v, t, give=0.02)
    assert rest.refit(_bulge(v, np.array([0.0, 0.0, 1.0]), 0.4, 0.03)) is None
    assert rest.refit(v[:-1]) is None
    squashed = v.copy()
    squashed[t[0]] = squashed[t[0, 0]]                                   # a triangle of no area
    assert MeshField(v, t, give=10.0).refit(squashed) is None


def test_shells_that_cross_keep_their_seams_in_doubt_as_the_eye_moves():
    """Suzanne's eyes sink into her head: behind them the grid cannot tell the side (a seam).
    The eye moved within the give: every point is still measured right, seams and all."""
    hv, ht = sphere(1.0, 16, 32)
    ev, et = sphere(0.35, 12, 24)
    ev = ev + (0.0, -0.85, 0.3)
    v, t = np.concatenate([hv, ev]), np.concatenate([ht, et + len(hv)])
    rest = MeshField(v, t, resolution=40, give=0.04)
    assert rest.grid.seam_cells > 0
    w = v.copy()
    w[len(hv):] += (0.02, -0.025, 0.015)                                 # 0.035 of 0.04
    field = rest.refit(w)
    assert field is not None
    rng = np.random.default_rng(11)
    p = rng.uniform((-0.5, -1.0, -0.2), (0.5, 0.0, 0.8), (2500, 3))
    _answers_as_the_deformed_mesh(field, w, t, p)


def _head_and_ear():
    """A head with an ear that crosses it (a flattened ball half sunk into its side): the solid
    drops the ear's part inside the head, and beside the open edges that leaves the winding
    number decides the side."""
    hv, ht = sphere(1.0, 24, 48)
    ev, et = sphere(0.4, 12, 24)
    ev = ev * (0.5, 1.0, 1.0) + (1.0, 0.0, 0.0)
    return np.concatenate([hv, ev]), np.concatenate([ht, et + len(hv)]), len(hv)


def test_an_ear_that_moves_is_refitted_and_its_sides_are_the_winding_numbers():
    """The ear of a head it crosses moves 0.3 and 0.95 of the give three ways: the refitted
    field measures the deformed solid as a build of it does (the collider's own: the rest
    solid's triangles, the winding number of the deformed mesh) — exact distances near the
    surface, every side, the grid within its error, the lower bound below the distance."""
    v, t, head = _head_and_ear()
    c = Collider(ColliderMesh("Head", v, t), np.eye(4), 0.0)
    assert c.bound_field.index.boundary.any()              # open edges: the winding number decides
    cell = c.bound_field.cell
    rng = np.random.default_rng(0)
    for share in (0.3, 0.95):
        for way in ((0.0, 0.0, 1.0), (-1.0, 0.0, 0.0), (1.0, 0.0, 0.0)):
            w = v.copy()
            w[head:] += np.array(way) * share * Collider.GIVE * cell
            c.set_frame(None, w)
            assert c.field.moved_by > 0
            s = c.solid.vertices(w)
            built = MeshField(s, c.bound_field.triangles, cell=cell, margin=c.margin, winding=c.solid.winding(s))
            p = rng.uniform((0.5, -0.6, -0.6), (1.5, 0.6, 0.6), (6000, 3))
            exact = built.index.exact_every(p)[0]
            got = c.field.signed_distance(p)
            near = np.abs(exact) < 0.5 * c.field.exact_reach
            np.testing.assert_allclose(got[near], exact[near], atol=EXACT)
            side = np.abs(exact) > 1e-6
            assert np.array_equal(np.sign(got[side]), np.sign(exact[side]))
            d, _ = c.field.lookup(p)
            err = c.field.error_at(p)
            bounded = np.isfinite(err) & np.isfinite(d)
            assert (np.abs(d - exact) <= err + grid_rounding(p))[bounded].all()
            lower = c.field.lower_bound(np.ascontiguousarray(p.T, np.float32))
            assert (lower <= exact + bound_rounding(p)).all()


def test_a_refitted_field_sends_no_point_to_a_search_of_every_triangle(monkeypatch):
    """A refit's bounds are twice its move wider; its lists are exact that much farther, so a
    point the grid cannot clear finds its nearest triangle in its own list, as in a build —
    none is sent to the search of every triangle (once 6 000 to 16 000 of 20 000 points 1.5–3
    cells out of a head moved by 0.5–0.9 of the give: 50–170 µs a point)."""
    v, t = sphere(1.0, 32, 64)
    cell = MeshField(v, t).cell
    rest = MeshField(v, t, cell=cell, give=cell)
    searched = []
    every = type(rest.index).exact_every

    def counted(index, p):
        searched.append(len(p))
        return every(index, p)

    monkeypatch.setattr(type(rest.index), "exact_every", counted)
    rng = np.random.default_rng(3)
    d = rng.normal(size=(20000, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    for share in (0.5, 0.9):
        w = _bulge(v, np.array([0.0, 0.0, 1.0]), 0.8, share * cell)
        field = rest.refit(w)
        p = d * (np.linalg.norm(w, axis=1).max() + rng.uniform(1.5, 3.0, (20000, 1)) * cell)
        p[::2] = d[::2] * (1 - rng.uniform(1.5, 3.0, (10000, 1)) * cell)
        field.signed_distance(p)
        field.project(p, np.zeros(len(p)))
    assert sum(searched) == 0


def test_a_still_mesh_refits_to_its_rest_grid_and_no_give_builds():
    """A refit that moved nothing reads the rest grid's bits (the contacts' limits were read on
    it); a refitted field is not refitted again; with no give every deformed frame is built."""
    v, t = sphere(1.0, 16, 32)
    c = Collider(ColliderMesh("Head", v, t), np.eye(4), 0.0)
    still = c._deforming_field().refit(c._deforming.vertices)
    assert still.moved_by == 0
    assert np.array_equal(still.grid.distance_grid, c.bound_field.grid.distance_grid)
    assert still.refit(c._deforming.vertices) is None
    w = _bulge(v, np.array([0.0, 0.0, 1.0]), 0.4, 0.1 * c.bound_field.cell)
    try:
        Collider.GIVE, was = 0.0, Collider.GIVE
        c.set_frame(None, w)
    finally:
        Collider.GIVE = was
    assert c.field.moved_by == 0 and c.field.grid.list_tri is not c._deforming.grid.list_tri


def test_a_frames_field_is_its_mesh_s_own_whatever_came_before():
    v, t = sphere(1.0, 24, 48)
    c = Collider(ColliderMesh("Body", v, t), np.eye(4), 0.01)
    give = Collider.GIVE * c.bound_field.cell
    small = _bulge(v, np.array([0.0, 1.0, 0.0]), 0.4, 0.5 * give)
    large = _bulge(v, np.array([0.0, 1.0, 0.0]), 0.4, 3.0 * give)

    def view(vertices):
        c.set_frame(None, vertices)
        return c.kernel_view(), c.field

    first, refit = view(small)
    assert refit.moved_by > 0 and refit.grid.list_tri is c._deforming.grid.list_tri
    _, built = view(large)
    # a field for one frame and one that refits list per two cells (cheaper to build), the field
    # bound once per cell (``DistanceGrid.list_cell``)
    assert built.grid.list_cell == refit.grid.list_cell == 2 and c.bound_field.grid.list_cell == 1
    assert built.moved_by == 0 and built.grid.list_tri is not c._deforming.grid.list_tri
    again, _ = view(small)
    _same(first, again)
    _, rest = view(v)
    assert rest is c.bound_field


def _same(a, b):
    """Two kernel views hold the same bits."""
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    else:
        assert a == b or (a != a and b != b)


def _long_hair_on(body_top, n=80, k=14, seed=5):
    """Strands from a unit sphere head falling onto a body below it and lying on it."""
    rng = np.random.default_rng(seed)
    phi = rng.uniform(0, 2 * np.pi, n)
    root = np.stack([0.3 * np.cos(phi), 0.3 * np.sin(phi), np.full(n, -0.95)], 1)
    root /= np.linalg.norm(root, axis=1, keepdims=True)
    pts = np.empty((n, k, 3))
    pts[:, 0] = root
    for j in range(1, k):
        q = pts[:, j - 1] + (0.0, 0.0, -0.08)
        q[:, :2] += 0.05 * root[:, :2] / np.linalg.norm(root[:, :2], axis=1, keepdims=True)
        q[:, 2] = np.maximum(q[:, 2], body_top + 0.004)
        pts[:, j] = q
    return HairSet(pts.reshape(-1, 3).astype(np.float32), [k] * n, name="Hair")


def _breathe(monkeypatch, give):
    """Hair lying on a body (a flattened sphere under the head) that breathes up to 0.8 of the
    give, 8 frames, the body collider's ``GIVE`` being ``give``: the hair each frame, and the
    body as it was."""
    monkeypatch.setattr(Collider, "GIVE", give)
    bv, bt = sphere(1.0, 24, 48)
    centre = np.array([0.0, 0.0, -1.9])
    bv = bv * (1.4, 1.4, 0.5)
    wig = Wig(_long_hair_on(-1.4), np.eye(4), np.eye(4), [Magnet("M", np.eye(4), radius=0.01)], WigSettings(),
              head_mesh=sphere(1.0, 24, 48), colliders=[ColliderMesh("Body", bv + centre, bt)])
    body = wig.colliders[-1]
    state, frames = None, []
    for f in range(8):
        lift = 0.8 * Collider.GIVE * body.bound_field.cell * np.sin(np.pi * f / 4) ** 2
        w = _bulge(bv, np.array([0.0, 0.0, 0.5]), 0.6, lift) + centre
        inp = FrameInput(np.eye(4), np.eye(4), np.array([np.eye(4)]), time=f / 24,
                         collider_matrices=np.array([np.eye(4)]), collider_vertices=[None, w])
        out, state = wig.step(inp, state, keep_state=True)
        frames.append((np.array(out), w, body.field.moved_by))
    return frames, bt


def test_hair_on_a_breathing_body_stays_out_of_it_walked_alike_refitted_or_built(monkeypatch):
    """The body's field refitted each frame walks the hair as one built each frame does (every
    point the walk met lay within the exact band: met by exact distances either way, the same
    triangles, the same bits), and the hair ends outside the deformed body by brute force."""
    refitted, bt = _breathe(monkeypatch, Collider.GIVE)
    built, _ = _breathe(monkeypatch, 0.0)
    assert sum(m > 0 for _, _, m in refitted) >= 6 and all(m == 0 for _, _, m in built)
    for (a, w, _), (b, _, _) in zip(refitted, built):
        assert np.array_equal(a, b)
        d = exact_signed_distance(a.astype(np.float64), w, bt)
        assert d.min() >= -rounding(magnitude(a), FOLLOW)
