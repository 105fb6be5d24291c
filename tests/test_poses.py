"""Hair that is placed rather than moved meets the colliders through one pass
(``collision.PoseContacts``): key poses' in-betweens, Style Hair and Draw Hair. No Blender."""

import numpy as np

from hair_wig.collision import MeshField, PoseContacts, SurfaceCollide, exact_signed_distance
from test_keyposes import sphere
from tolerance import AFFINE, EPS64, magnitude, rounding

# roundings of a point's closest point on a triangle and the limit along its outward direction,
# in float64 (the feet on the triangle's plane and edges: differences, dot products of 3 terms,
# a division, a product and sum back, the unit outward scaled and added)
CLOSEST = 20


def _deep_and_shallow(seed=3):
    """Points inside the unit sphere at every depth — by its centre, far beyond the exact band,
    where a push goes along the grid's gradient and lands near the surface — and points outside
    it, each with a limit of a few centimetres."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(400, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    r = np.r_[rng.uniform(0.05, 0.99, 300), rng.uniform(1.2, 1.6, 100)]
    return d * r[:, None], rng.uniform(0.0, 0.05, 400)


def test_every_pushed_point_lands_on_its_limit_exactly_and_the_others_keep_their_bits():
    """A point by the sphere's centre is far outside the field's exact band: one push along the
    grid's gradient lands it near the surface, the next exactly on its limit (its closest point
    on the mesh plus the limit along the outward direction). Every pushed point ends at its
    limit by the mesh's own exact distance, to the float64 roundings of that closest-point step;
    points already farther than their limit come back bit for bit, unreported."""
    v, tri = sphere()
    field = MeshField(v, tri)
    x, limit = _deep_and_shallow()
    new, hit = PoseContacts([field]).push(x, [limit])
    inside = exact_signed_distance(x, v, tri) < limit
    assert np.array_equal(hit, inside)
    assert inside[:300].all() and not inside[300:].any()
    d = exact_signed_distance(new[hit], v, tri)
    # the last push is exact, in float64: the closest point on a triangle and the limit along its
    # outward (CLOSEST roundings of the coordinates, ≈ 1), then the check's own distance (as many)
    np.testing.assert_allclose(d, limit[hit], rtol=0, atol=rounding(magnitude(new), 2 * CLOSEST, EPS64))
    assert np.array_equal(new[~hit], x[~hit])


def test_one_push_along_the_grid_alone_carries_deep_points_past_their_limit():
    """What the pass adds: a single ``MeshField.project`` of the same points, its far pushes not
    stopped short, carries some past their limit by the grid's error (millimetres) — so the
    test above can fail."""
    v, tri = sphere()
    field = MeshField(v, tri)
    x, limit = _deep_and_shallow()
    once, moved = field.project(x, limit)
    off = np.abs(exact_signed_distance(once, v, tri) - limit[moved])
    assert off.max() > 1e-6


def test_a_pose_in_another_space_is_pushed_in_the_fields_space_and_brought_back():
    """``to_field``: the pose's space into the field's. The unit sphere's field seen from a space
    scaled by ½ and moved: a pose there is pushed out to the same places as the field's own
    points, mapped back (a rigid map and a scale, in float64)."""
    v, tri = sphere()
    field = MeshField(v, tri)
    x, limit = _deep_and_shallow()
    to_field = np.diag([2.0, 2.0, 2.0, 1.0])
    to_field[:3, 3] = (0.3, -0.2, 0.1)
    pose = (x - to_field[:3, 3]) / 2.0
    new, hit = PoseContacts([field], to_field).push(pose, [limit])
    direct, hit_direct = PoseContacts([field]).push(x, [limit])
    assert np.array_equal(hit, hit_direct)
    # the two differ by the roundings of the pose's own making (3), of the maps there and back
    # (AFFINE each) and of the closest-point step, which carries its input's difference along
    # the surface (1-Lipschitz) (CLOSEST)
    bound = rounding(magnitude(x, to_field[:3, 3]) * 2.0, 3 + 2 * AFFINE + CLOSEST, EPS64)
    np.testing.assert_allclose(new * 2.0 + to_field[:3, 3], direct, rtol=0, atol=bound)


def test_style_hairs_collider_keeps_each_strands_limit_for_the_strands_it_is_asked():
    """``SurfaceCollide`` pushes strand ``s``'s points to ``limit[s]``; ``for_rows`` keeps the
    limits of the strands picked, in their order, and a call that pushes nothing returns the
    points given."""
    v, tri = sphere()
    field = MeshField(v, tri)
    limit = np.array([0.01, 0.04, 0.02])
    collide = SurfaceCollide(field, limit)
    x = np.array([[0.0, 0.0, 0.9], [0.0, 0.95, 0.0], [0.97, 0.0, 0.0]])
    pushed = collide(x, 1)
    np.testing.assert_allclose(exact_signed_distance(pushed, v, tri), limit, rtol=0,
                               atol=rounding(1.0, 2 * CLOSEST, EPS64))
    picked = collide.for_rows(np.array([2, 0]))
    np.testing.assert_array_equal(picked.limit, limit[[2, 0]])
    np.testing.assert_array_equal(picked(x[[2, 0]], 1), pushed[[2, 0]])
    far = x * 2.0
    assert collide(far, 1) is far
