"""Children's room (issue 34 part 4): guides keep the hair Blender grows from them out of the
head — numpy core, no bpy."""

import numpy as np
import pytest

from hair_wig import FrameInput, HairSet, Magnet, Wig, WigSettings
from hair_wig.children import Children, nearest, neighbourhood, sag, transplant, transplant_as_walked, turns
from hair_wig.collision import exact_signed_distance
from test_collision import _hair_on_sphere, kept_length, sphere
from tolerance import AFFINE, EPS64, FOLLOW, magnitude, rounding


def test_nearest_and_the_neighbourhood_against_a_plain_reference():
    rng = np.random.default_rng(5)
    guides = rng.normal(size=(23, 3))
    kids = rng.normal(size=(400, 3))
    near = nearest(kids, guides, 4, budget=50)         # small chunks: the chunking is exercised
    d = np.linalg.norm(kids[:, None] - guides[None], axis=2)
    assert np.array_equal(near, np.argsort(d, axis=1, kind="stable")[:, :4])
    off, which = neighbourhood(guides, kids, samples=6, among=4)
    assert off.shape == (6, 3, 23)
    for g in range(23):
        mine = kids[(near == g).any(axis=1)] - guides[g]
        taken = off[:, :, g]
        if len(mine) == 0:
            assert not taken.any() and (which[:, g] == -1).all()
            continue
        assert np.array_equal(kids[which[:, g]] - guides[g], taken)
        # farthest-point sampling by a plain loop
        gap = (mine ** 2).sum(1)
        want = []
        for _ in range(6):
            i = int(np.argmax(gap))
            want.append(mine[i])
            gap = np.minimum(gap, ((mine - mine[i]) ** 2).sum(1))
        assert np.array_equal(taken, np.array(want))
    r = np.linalg.norm(off, axis=1).max(axis=0)
    assert np.allclose(sag(off), r * (1 - np.cos(np.pi / 6)), rtol=1e-12, atol=0)


def test_turns_are_the_shortest_rotations_from_the_guides_up_to_the_childrens():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(3, 30))
    a /= np.linalg.norm(a, axis=0)
    b = rng.normal(size=(4, 3, 30))
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    b[0, :, 0] = a[:, 0]                        # the same up: no turn
    b[1, :, 1] = -a[:, 1]                       # opposite: half a turn
    r = turns(a, b)
    # each entry of R: about 16 float64 roundings of values up to 2 (a · b, a × b, their outer
    # product, the sum), the (1 − c) / |a × b|² = 1 / (1 + c) part amplifying c's by 1 / (1 + c)
    # (the opposite pair takes the half turn's own branch); a product or determinant of R's
    # rows adds 3 entries' errors each and its own 8 roundings of 1
    c = np.einsum("ag,kag->kg", a, b)
    entry = rounding(2.0, 16, EPS64) / (1 + c[c > -1 + 1e-9]).min()
    tol = 6 * entry + rounding(1.0, 8, EPS64)
    eye = np.einsum("kabg,kcbg->kacg", r, r)
    assert np.abs(eye - np.eye(3)[None, :, :, None]).max() <= tol
    assert np.abs(np.linalg.det(r.transpose(0, 3, 1, 2)) - 1).max() <= tol
    assert np.abs(np.einsum("kabg,bg->kag", r, a) - b).max() <= tol
    # the same up: c = a · a is 1 to its 5 roundings, the cross product exactly 0
    assert np.abs(r[0, :, :, 0] - np.eye(3)).max() <= rounding(1.0, 5, EPS64)
    # shortest: the axis a × b is left where it is
    axis = np.cross(a[None], b, axis=1)
    keep = np.linalg.norm(axis, axis=1) > 1e-6
    turned = np.einsum("kabg,kbg->kag", r, axis)
    assert np.abs(np.where(keep[:, None], turned - axis, 0)).max() <= tol
    # transplanting turns the shape about the guide's root and moves it onto the child's
    pts, roots = rng.normal(size=(3, 30)), rng.normal(size=(3, 30))
    off = rng.normal(size=(4, 3, 30))
    moved = transplant(pts, roots, off, r)
    want = roots[None] + off + np.einsum("kabg,bg->kag", r, pts - roots)
    assert np.array_equal(moved, want)
    assert np.array_equal(transplant(pts, roots, off, None), pts[None] + off)


def _children_roots(hair: HairSet, per: int = 6, spread: float = 0.12, seed: int = 1) -> np.ndarray:
    """Roots on the unit sphere scattered round each strand's root."""
    rng = np.random.default_rng(seed)
    roots = hair.points[hair.offsets[:-1]].astype(np.float64)
    kids = np.repeat(roots, per, axis=0) + rng.normal(0, spread, (len(roots) * per, 3))
    return Children(kids / np.linalg.norm(kids, axis=1, keepdims=True))


def _pressed(children, follow=False):
    """Hair lying over the unit sphere, a magnet pulling it into the head; the wig and its pose."""
    hair = _hair_on_sphere(n=40, lift=0.004)
    v, t = sphere(1.0, 16, 32)
    m = np.eye(4)
    magnet = Magnet("M", np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1.5], [0, 0, 0, 1.0]]), radius=3.0)
    if children is not None:
        children = Children(children.roots, follow)
    wig = Wig(hair, m, m, [magnet], WigSettings(child_samples=6), head_mesh=(v, t), children=children)
    pull = magnet.rest_matrix.copy()
    pull[:3, 3] += (0.3, 0.0, -1.2)
    return wig, hair, (v, t), FrameInput(m, m, np.array([magnet.rest_matrix])), FrameInput(m, m, np.array([pull]))


@pytest.mark.parametrize("follow", [False, True])
def test_a_pressed_guide_keeps_its_childrens_shapes_out_and_the_groom_at_rest_stays(follow):
    """Each guide's shape moved onto its sampled children's roots ends at least its limit —
    min(head offset + the sag 0.134 r, its clearance at rest) — from the sphere (exact
    distances, where the groom has them near the surface), less rounding; without the children's
    room the same pull leaves them well short of it.
    At rest nothing moves; lengths are kept."""
    hair = _hair_on_sphere(n=40, lift=0.004)
    kids = _children_roots(hair)
    wig, hair, (v, t), rest_in, pull_in = _pressed(kids, follow)
    assert (wig.walk._children_turn is not None) == follow
    rest, _ = wig.step(rest_in)
    assert np.abs(rest - hair.points).max() <= rounding(magnitude(hair.points), FOLLOW * 12)
    p, _ = wig.step(pull_in)
    k = wig.walk.children.shape[0]
    n = 12
    pts = p.reshape(-1, n, 3).astype(np.float64)
    off = wig.walk.children.astype(np.float64)
    turn = None if wig.walk._children_turn is None else wig.walk._children_turn.astype(np.float64)

    def shapes(x):
        """Every guide's points (G, n, 3) moved onto its samples' roots: (K, G, n, 3)."""
        rows = x.transpose(2, 0, 1)                                        # (3, G, n)
        return np.stack([transplant(rows[:, :, j], rows[:, :, 0], off, turn) for j in range(n)],
                        -1).transpose(0, 2, 3, 1)

    moved = shapes(pts)
    rest_moved = shapes(hair.points.reshape(-1, n, 3).astype(np.float64))
    d = exact_signed_distance(moved.reshape(-1, 3), v, t).reshape(k, -1, n)
    d0 = exact_signed_distance(rest_moved.reshape(-1, 3), v, t).reshape(k, -1, n)
    limit = np.minimum(sag(wig.walk.children)[None, :, None], d0)
    # limits farther from the surface than the field's exact band (deep inside in the groom, or
    # a wide patch's sag) are kept by the grid's distance, not exactly: left out
    exact = np.abs(limit) < wig.colliders[0].field.exact_reach
    # while the head keeps still a sample is not looked at within half its room of where it
    # rested (measured where the walk's kernel puts it: the guide's float32 rest point moved
    # onto its child in float32), as a point is not: the walk's kernel skips those, and what it
    # then leaves must still end at its limit (below)
    c = wig.colliders[0]
    rest32 = c.rest_rows.reshape(3, -1, n)
    r = np.stack([transplant_as_walked(rest32[:, :, j], rest32[:, :, 0], wig.walk.children, wig.walk._children_turn)
                  for j in range(n)], -1).transpose(0, 2, 3, 1)                        # (K, G, n, 3) f32
    if turn is not None:                                 # the very places the kernel reaches
        ud = rest32[:, :, 3] - rest32[:, :, 0]
        rot = wig.walk._children_turn[1, :, :, 5]
        by_hand = (rest32[:, 5, 0] + wig.walk.children[1, :, 5]) + ((rot[:, 0] * ud[0, 5] + rot[:, 1] * ud[1, 5])
                                                                   + rot[:, 2] * ud[2, 5])
        assert np.array_equal(r[1, 5, 3], by_hand)
    assert np.abs(r - rest_moved).max() <= rounding(magnitude(rest_moved), 8)
    d32 = exact_signed_distance(r.reshape(-1, 3).astype(np.float64), v, t).reshape(k, -1, n)
    skip2 = c.child_bounds[1].transpose(0, 2, 1)                                     # (K, G, n)
    near = exact & (np.abs(d32) < c.field.exact_reach) & (np.abs(d0) < c.field.exact_reach)
    # from the kernel's place to where a push begins (the limit, measured exactly, less the
    # push's tolerance): half of it; never skipped where a rounding puts it inside by half that
    room = d32 - limit + c.tolerance
    fuzz = rounding(magnitude(d32), 8)
    assert (skip2[near & (room < 0.5 * c.tolerance - fuzz)] == -1).all()
    ok = near & (room > 0.5 * c.tolerance + fuzz)
    assert np.abs(np.sqrt(skip2[ok]) - 0.5 * room[ok]).max() <= fuzz
    # anywhere within its skip distance of there a sample is outside its limit: the exact push
    # moves none of them (a sample with no room is skipped only where it rested)
    rng = np.random.default_rng(7)
    way = rng.normal(size=r.shape)
    way /= np.linalg.norm(way, axis=-1, keepdims=True)
    rim = np.ascontiguousarray((r + way * np.sqrt(np.maximum(skip2, 0))[..., None] * (1 - 1e-6))
                               .astype(np.float32).reshape(-1, 3).T)
    within = ((rim.T - r.reshape(-1, 3)) ** 2).sum(axis=1) <= skip2.ravel()
    held = rim.copy()
    c.push_to(held, c.child_bounds[0].transpose(0, 2, 1).ravel().copy())
    assert within.mean() > 0.25 and np.array_equal(held[:, within], rim[:, within])
    short = np.where(exact, limit - d, -np.inf)[:, :, 1:]
    assert exact[:, :, 1:].mean() > 0.5
    # a sample is pushed to its limit to the collider's tolerance, then stands on its guide's
    # point, stored in float32: set back on its length on the tangent plane (5 roundings of the
    # coordinates), mapped to the object (AFFINE), and moved onto the child's root in float32
    # in the walk (a sum and a turn: 6) where this test moves it in float64
    tol = wig.colliders[0].tolerance + rounding(magnitude(moved), 5 + AFFINE + 6)
    assert short.max() <= tol, (short.max(), tol)
    seg = np.linalg.norm(np.diff(pts, axis=1), axis=2)
    seg0 = np.linalg.norm(np.diff(hair.points.reshape(-1, n, 3), axis=1), axis=2)
    assert np.abs(seg / seg0 - 1).max() < kept_length(p, seg0)
    # the same pull without the children's room leaves their shapes well short of it
    alone, *_, pull_alone = _pressed(None)
    q, _ = alone.step(pull_alone)
    qm = shapes(q.reshape(-1, n, 3).astype(np.float64))
    dq = exact_signed_distance(qm.reshape(-1, 3), v, t).reshape(k, -1, n)
    assert np.where(exact, limit - dq, -np.inf)[:, :, 1:].max() > 100 * tol


def test_hair_without_children_or_with_several_point_counts_says_so():
    hair = _hair_on_sphere(n=20)
    v, t = sphere(1.0, 32, 64)
    m = np.eye(4)
    assert Wig(hair, m, m, [], WigSettings(), head_mesh=(v, t)).walk.children is None
    kids = _children_roots(hair)
    whole = Wig(hair, m, m, [], WigSettings(length_mode="STRAND"), head_mesh=(v, t), children=kids)
    assert whole.walk.children is None
    assert any("children" in w and "Whole Strand" in w for w in whole.warnings())
