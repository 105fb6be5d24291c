"""Hair drawn by sketching (seed 002 ch. 3; numpy only, no bpy): SPEC §7 "002"'s testable list —
samples on the drawing plane, root on the surface, no loop in a straight stroke, exactly one in
a circle, curl ends fixed, distances to the axis kept, the curl's out-of-plane extent, a concave
loop rejected — and a curve through every sample."""

import numpy as np
import pytest

from hair_wig.collision import MeshField
from hair_wig.errors import HairWigError
from hair_wig.sketch import (SketchSettings, catmull_rom, convex, crossings, curl_loop, drawing_plane, even_in_time,
                             find_loops, keep_outside, ray_hit, resample, sketch_strand)
from test_wig_core import sphere_mesh
from tolerance import EPS64, NORM, SEGMENT, magnitude, rounding

# The sketching core is float64 throughout: its 1e-9 and 1e-6 checks of exact geometry sit far
# above float64's rounding and far below a wrong construction (centimetres).

VIEW = np.array([0.0, -1.0, 0.0])              # the camera looks along −y from y = 5


def rays(xz, eye_y=5.0, perspective=False):
    """View rays through the screen points ``xz`` (K, 2) (x right, z up)."""
    xz = np.asarray(xz, np.float64)
    o = np.stack([xz[:, 0], np.full(len(xz), eye_y), xz[:, 1]], axis=1)
    if perspective:                            # from one eye point toward the points at y = 0.5
        eye = np.array([0.0, eye_y, 0.0])
        d = np.stack([xz[:, 0], np.full(len(xz), 0.5), xz[:, 1]], axis=1) - eye
        return np.repeat(eye[None], len(xz), axis=0), d / np.linalg.norm(d, axis=1, keepdims=True)
    return o, np.repeat(VIEW[None], len(xz), axis=0)


def circle_stroke(k=60, start=(0.2, 0.4), loop=0.2, drift=0.06):
    """A stroke from the sphere's front going right with one round loop in it (a prolate
    cycloid x = a θ − b sin θ, z = −b cos θ over one turn: a cursive 'e')."""
    th = np.linspace(-np.pi, np.pi, k)
    return np.stack([start[0] + loop + drift * (th + np.pi) - loop * np.sin(th), start[1] - loop * np.cos(th) - loop],
                    axis=1)


def test_ray_hits_the_nearest_triangle_and_the_root_lies_on_the_surface():
    v, t = sphere_mesh(1.0)
    o, d = rays([[0.3, 0.4]])
    t_hit, tri, bary = ray_hit(o[0], d[0], v, t)
    root = o[0] + t_hit * d[0]
    # on that triangle: the ray-triangle hit (~30 roundings, float64), o + t d (2) and bary @ v
    # (5), of coordinates up to the eye's 5 units away
    np.testing.assert_allclose(bary @ v[t[tri]], root, atol=rounding(magnitude(o, root), 40, eps=EPS64))
    assert root[1] > 0 and abs(np.linalg.norm(root) - 1) < 0.01              # the front, on the sphere
    assert ray_hit([3.0, 5.0, 0.0], VIEW, v, t) is None                      # past the side: a miss


@pytest.mark.parametrize("perspective", [False, True])
def test_samples_lie_on_the_drawing_plane_through_the_root(perspective):
    v, t = sphere_mesh(1.0)
    xz = np.stack([np.linspace(0.2, 1.4, 30), 0.4 - 0.5 * np.linspace(0, 1, 30) ** 2], axis=1)
    o, d = rays(xz, perspective=perspective)
    view = d[0] if perspective else VIEW
    out = sketch_strand(o, d, np.arange(30) / 60, view, v, t, SketchSettings(points=20, curls=False))
    root = out.controls[0]
    normal = drawing_plane(root, view)[0]
    assert np.abs((out.controls - root) @ normal).max() < 1e-6
    assert np.abs((out.points - root) @ normal).max() < 1e-6                 # and the strand made of them
    np.testing.assert_allclose(out.points[0], root)
    assert abs(np.linalg.norm(root) - 1) < 0.01 and out.points.shape == (20, 3)


def test_the_curve_passes_through_every_sample_and_its_ends_are_extrapolated():
    rng = np.random.default_rng(1)
    c = np.cumsum(rng.normal(size=(9, 3)), axis=0)
    dense = catmull_rom(c, per_segment=8)
    # at a knot the basis weights are 0 and 1: 4 products and 3 sums of the points, float64
    np.testing.assert_allclose(dense[::8], c, atol=rounding(2 * magnitude(c), 7, eps=EPS64))
    # with C_0 = 2 C_1 − C_2 the first span starts along C_2 − C_1 (its tangent is (C_2 − C_0) / 2)
    tangent = (dense[1] - dense[0]) * 8
    np.testing.assert_allclose(tangent / np.linalg.norm(tangent), (c[1] - c[0]) / np.linalg.norm(c[1] - c[0]),
                               atol=0.05)


def test_samples_are_taken_at_even_time_steps():
    """A pen moving steadily, its events arriving unevenly: evenly spaced samples; a pen that
    slows leaves them closer (the thesis' uniform time steps)."""
    t = np.sort(np.r_[0.0, np.random.default_rng(2).uniform(0, 1, 40), 1.0])
    p = np.stack([t, 2 * t, np.zeros_like(t)], axis=1)
    even = even_in_time(p, t, 0.05)
    assert len(even) == 21
    # each sample interpolated between two events (the time's fraction, a difference, a product
    # and a sum: 8) and two of them differenced: 16 roundings of the positions (<= 2), float64
    np.testing.assert_allclose(np.diff(even, axis=0), [[0.05, 0.1, 0.0]] * 20,
                               atol=rounding(magnitude(p), 16, eps=EPS64))
    slow = even_in_time(np.stack([np.sqrt(t), 0 * t, 0 * t], axis=1), t, 0.05)
    gaps = np.diff(slow[:, 0])
    assert gaps[-1] < gaps[0] / 3


def test_a_straight_stroke_has_no_loop_and_a_circle_exactly_one():
    line = np.stack([np.linspace(0, 1, 50), np.linspace(0, 0.3, 50)], axis=1)
    assert find_loops(line) == []
    assert len(find_loops(circle_stroke())) == 1
    wavy = np.stack([np.linspace(0, 3, 80), 0.2 * np.sin(np.linspace(0, 12, 80))], axis=1)
    assert find_loops(wavy) == []                                     # waves cross nothing


def test_a_concave_loop_is_no_curl():
    """The round loop of ``circle_stroke`` dented in at its top (a kidney) still crosses itself,
    but its polygon is not convex: rejected, where the round one is kept."""
    xy = circle_stroke()
    (n, m), = find_loops(xy)
    centre = xy[n + 1:m + 1].mean(axis=0)
    r = xy[n + 1:m + 1] - centre
    top = np.abs(np.arctan2(r[:, 0], r[:, 1])) < np.pi / 5              # within 36° of straight up
    dented = xy.copy()
    dented[n + 1:m + 1][top] = centre + 0.3 * r[top]
    assert len(crossings(dented)[0]) >= 1                               # it still crosses itself
    assert not convex(dented[n:m + 2]) and find_loops(dented) == []


def test_a_loop_becomes_a_curl_ends_fixed_axis_distances_kept_and_out_of_the_plane():
    xy = circle_stroke()
    controls = np.stack([xy[:, 0], np.zeros(len(xy)), xy[:, 1]], axis=1)      # the plane y = 0
    (n, m), = find_loops(xy)
    curled = curl_loop(controls, n, m)
    np.testing.assert_array_equal(curled[:n + 1], controls[:n + 1])          # the loop's ends and
    np.testing.assert_array_equal(curled[m + 1:], controls[m + 1:])          # all outside it stay
    mid = 0.5 * (controls[n:m + 1] + controls[n + 1:m + 2])
    focal = mid.mean(axis=0)
    axis = (controls[m + 1] - controls[n]) / np.linalg.norm(controls[m + 1] - controls[n])

    def to_axis(p):
        r = p - focal
        return np.linalg.norm(r - (r @ axis)[:, None] * axis, axis=1)

    # float64: the turn about the axis (its sine and cosine — whose last bits depend on the
    # CPU's SIMD path — and Rodrigues' sums: ~20) and the distance to the axis measured on each
    # side (~10 each): 40 roundings of coordinates up to |x|
    np.testing.assert_allclose(to_axis(curled[n + 1:m + 1]), to_axis(controls[n + 1:m + 1]),
                               atol=rounding(magnitude(controls), 40, eps=EPS64))
    radius = np.linalg.norm(controls[n + 1:m + 1] - focal, axis=1).mean()
    assert np.abs(curled[:, 1]).max() > 0.5 * radius                          # lifted into a helix
    assert np.abs(curled[n + 1:m + 1, 1]).max() > 0.5 * radius


def test_a_stroke_with_a_loop_makes_a_curled_strand_and_a_miss_is_refused_by_name():
    v, t = sphere_mesh(1.0)
    xy = circle_stroke()
    o, d = rays(xy)
    out = sketch_strand(o, d, np.arange(len(xy)) / 60, VIEW, v, t, SketchSettings(points=48))
    assert len(out.loops) == 1 and out.points.shape == (48, 3)
    assert np.abs(out.points[:, 1] - out.points[0, 1]).max() > 0.05          # out of the drawing plane
    flat = sketch_strand(o, d, np.arange(len(xy)) / 60, VIEW, v, t, SketchSettings(points=48, curls=False))
    assert flat.loops == [] and np.abs(flat.points[:, 1] - flat.points[0, 1]).max() < 1e-9
    o2, d2 = rays(np.array([[2.0, 2.0], [2.5, 2.0]]))
    with pytest.raises(HairWigError, match="stroke 7 does not start on the scalp"):
        sketch_strand(o2, d2, [0.0, 0.1], VIEW, v, t, name="stroke 7")
    with pytest.raises(HairWigError, match="points per strand must be at least 2"):
        SketchSettings(points=1)


@pytest.mark.parametrize("perspective", [False, True])
def test_a_two_sample_stroke_is_as_long_as_drawn_and_a_tap_is_refused_by_name(perspective):
    """Issue 34 (part 12). A stroke of two samples makes the straight strand it spans on the
    drawing plane, as long as the same stroke drawn in 20 samples (measured in Draw Hair's test
    scene: a 2-point Grease Pencil stroke 10.5 cm long on its own plane makes a 14.5 cm strand —
    its length on the drawing plane through the root, farther from the eye — and so does the
    same stroke in 3, 5 or 20 points: nothing shorter or longer for 2). A tap — a
    press and release where it was pressed, two samples on one ray — made a strand of no length
    (every point on the root) without a word; it is refused by name."""
    from hair_wig.sketch import NoLength, StrokeRefused

    v, t = sphere_mesh(1.0)
    ends = np.array([[0.2, 0.4], [0.6, 0.1]])
    o, d = rays(ends, perspective=perspective)
    view = d[0] if perspective else VIEW
    two = sketch_strand(o, d, [0.0, 0.2], view, v, t, SketchSettings(points=16))
    o20, d20 = rays(ends[0] + np.linspace(0, 1, 20)[:, None] * (ends[1] - ends[0]), perspective=perspective)
    twenty = sketch_strand(o20, d20, np.linspace(0, 0.2, 20), view, v, t, SketchSettings(points=16))
    drawn = np.linalg.norm(two.controls[-1] - two.controls[0])               # on the drawing plane
    length = np.linalg.norm(np.diff(two.points, axis=0), axis=1).sum()
    # a straight line resampled in float64, coordinates up to 5 from the eye: each of the 16
    # points placed by a ray meeting the drawing plane and the arc-length resampling (about 8
    # roundings of those coordinates each), the length summed over its 15 segments
    tol = rounding(magnitude(o, two.points), 16 * 8, eps=EPS64)
    assert length == pytest.approx(drawn, abs=tol)
    assert np.linalg.norm(np.diff(twenty.points, axis=0), axis=1).sum() == pytest.approx(length, abs=tol)
    np.testing.assert_allclose(twenty.points, two.points, rtol=0, atol=tol)
    tap_o, tap_d = np.repeat(o[:1], 2, axis=0), np.repeat(d[:1], 2, axis=0)
    with pytest.raises(NoLength, match="stroke 3 has no length on its drawing plane") as refused:
        sketch_strand(tap_o, tap_d, [0.0, 0.2], view, v, t, name="stroke 3")
    assert isinstance(refused.value, StrokeRefused) and refused.value.why == "has no length (a tap)"


def test_keep_outside_lifts_drawn_hair_off_the_head_at_its_lengths():
    v, t = sphere_mesh(1.0)
    field = MeshField(v, t, margin=0.3)
    s = np.linspace(0, 1, 12)
    strand = np.stack([0.1 + 1.2 * s, np.full(12, 0.95), 0.3 - 0.2 * s], axis=1)   # drawn through the sphere
    strand[0] = [0.1, np.sqrt(1 - 0.1 ** 2 - 0.3 ** 2), 0.3]
    out = keep_outside(strand[None], field, 0.01)[0]
    d = field.signed_distance(out[1:])
    assert d.min() > 0.0
    # lengths kept to float64 rounding: relative to the shortest segment, a follow step (8) and
    # a push onto the field's surface (5) of coordinates, the ends' difference (2); the norms (8)
    seg = np.linalg.norm(np.diff(strand, axis=0), axis=1)
    kept = rounding(magnitude(out) / seg.min(), SEGMENT + 5 + 2, eps=EPS64) + rounding(1.0, 2 * NORM, eps=EPS64)
    np.testing.assert_allclose(np.linalg.norm(np.diff(out, axis=0), axis=1), seg, rtol=kept)
    np.testing.assert_array_equal(out[0], strand[0])
