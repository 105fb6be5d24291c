"""The Wisps layer's kernels (hair_wig/kernels/wisps.py; seed 001, Plante, Cani, Poulin 2002;
SPEC §7 "001") against plain numpy references written here from their docstrings and the seed's
formulas, on random wisps — and the seed's physics with an answer: damping as a velocity
modification (§5.2) keeps momentum and never reverses a relative velocity however large ν·dt;
wisp–wisp interactions (§4.2) keep momentum (skeleton plus the envelope's radial momentum) and
leave an inelastic contact at rest relative to the segment it met, an interpenetrating one with
no relative velocity off the common plane and its in-plane part shrunk by
min(viscosity·density·dt, 1). The parallel kernels give the same bits on 1 and 2 threads.

Tolerances (tests/tolerance.py): everything here is float64, so each is
``rounding(magnitude, operations, eps=EPS64)``, the magnitude read from the data compared and the
operations counted beside each assertion: the roundings of one value in the kernel plus those of
the reference (they order their sums differently), carried on along a wisp root to tip as the
house counts a walk (n steps × the roundings of one), times the conditioning a step has (a
division by a short segment, a turn against the segment before). Comparisons the design makes
exact (1 vs 2 threads, a wisp resting on its goal, the broadphase's sets, untouched values) are
exact."""

import math

import numpy as np
import pytest

from hair_wig.kernels.wisps import (PARALLEL, SIN_PLANE, wisp_carry, wisp_frames, wisp_gather, wisp_interact,
                                    wisp_pairs, wisp_place, wisp_positions, wisp_velocities)
from test_wig_core import numba_threads
from tolerance import EPS64, magnitude, rounding

# Roundings of the steps the derivations below count, float64, each of values up to the
# magnitude named where it is used:
UNIT = 5          # a 3-vector made unit: 3 squares, 2 sums under a square root, a division (each coordinate)
DOT = 5           # a dot product of 3-vectors: 3 products, 2 sums
CROSS = 3         # one coordinate of a cross product: 2 products, 1 difference
# Least rotation of a unit vector between unit tangents (the kernel's ``d − (s·d)/(1+u·w) s + 2(u·d) w``
# or the reference's ``d cos + c × d + c (c·d)/(1+cos)``): a dozen products and sums of values up
# to |s|²/(1 + u·w) ≤ 4 for turns below 90°, so ~4 × 12.
TURN = 48


def _unit(v):
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.divide(v, n, out=np.zeros_like(v), where=n > 0)


def _dot(a, b):
    return np.einsum("...k,...k->...", a, b)


def _cross(a, b):
    return np.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                     a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)


def _least_rotation(a, b, d):
    """``d`` turned by the rotation taking unit ``a`` onto unit ``b`` about ``a × b`` (Rodrigues with
    the axis unnormalised, ``c = a × b``, ``|c| = sin θ``: ``d cos θ + c × d + c (c·d) / (1 + cos θ)``)."""
    c = _cross(a, b)
    cos = _dot(a, b)[..., None]
    return d * cos + _cross(c, d) + c * _dot(c, d)[..., None] / (1.0 + cos)


def _turned(rng, d, angle):
    """Unit rows ``d`` (W, 3) each turned by ``angle`` (W,) about a random axis square to it."""
    axis = _unit(_cross(d, rng.normal(size=d.shape)))
    return d * np.cos(angle)[:, None] + _cross(axis, d) * np.sin(angle)[:, None]


def _chains(rng, num, n, bend=np.radians(50.0), seg=(0.05, 0.2), spread=1.0):
    """``num`` random skeletons of ``n`` points (num, n, 3): roots in a box of half-size ``spread``,
    segment lengths in ``seg``, each segment turned from the one before by at most ``bend`` (the
    first from the anchor, returned too (num, 3))."""
    anchor = _unit(rng.normal(size=(num, 3)))
    x = np.empty((num, n, 3))
    x[:, 0] = rng.uniform(-spread, spread, (num, 3))
    d = anchor
    for i in range(1, n):
        d = _turned(rng, d, rng.uniform(0.0, bend, num))
        x[:, i] = x[:, i - 1] + rng.uniform(*seg, (num, 1)) * d
    return x, anchor


def _kernel_frames(x, anchor, e1_root):
    frames = np.empty(x.shape[:2] + (2, 3))
    tangent = np.empty(x.shape)
    wisp_frames(x, np.ascontiguousarray(anchor), np.ascontiguousarray(e1_root), frames, tangent)
    return frames, tangent


# ---------------------------------------------------------------------------------------------
# wisp_gather
# ---------------------------------------------------------------------------------------------

def ref_gather(points, wisp_of_strand, num_wisps, samp_a, samp_f, weight):
    """Each wisp's skeleton: the ``weight``-ed mean of its strands each sampled at the same arc
    fractions, a sample ``samp_f`` of the way from point ``samp_a`` to the next (seed 001 §3.2)."""
    p = np.asarray(points, np.float64)
    f = samp_f[..., None]
    sample = (1.0 - f) * p[samp_a] + f * p[samp_a + 1]                # (S, N, 3)
    out = np.zeros((num_wisps,) + sample.shape[1:])
    for w in range(num_wisps):
        mine = wisp_of_strand == w
        out[w] = np.sum(weight[mine, None, None] * sample[mine], axis=0)
    return out


def _gather_case(seed, num=60, num_wisps=7, n=6):
    rng = np.random.default_rng(seed)
    counts = rng.integers(2, 10, num)
    offsets = np.r_[0, np.cumsum(counts)]
    points = rng.normal(size=(offsets[-1], 3)) * 0.7 + rng.uniform(-2, 2, 3)
    wisp_of = np.r_[np.arange(num_wisps), rng.integers(0, num_wisps, num - num_wisps)]
    rng.shuffle(wisp_of)
    order = np.argsort(wisp_of, kind="stable").astype(np.int64)
    start = np.r_[0, np.cumsum(np.bincount(wisp_of, minlength=num_wisps))].astype(np.int64)
    samp_a = (offsets[:-1, None] + (rng.random((num, n)) * (counts[:, None] - 1)).astype(np.int64)).astype(np.int64)
    samp_f = rng.random((num, n))
    samp_f[rng.random((num, n)) < 0.1] = 1.0            # a sample on the next point
    samp_a[:, 0] = offsets[:-1]                         # the root sample: exactly the strand's first point
    samp_f[:, 0] = 0.0
    weight = 1.0 / np.bincount(wisp_of)[wisp_of]        # each strand's share of its wisp
    return points, wisp_of, order, start, samp_a, samp_f, weight


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gather_is_the_weighted_mean_of_the_strands_samples(dtype):
    """Tolerance: a sample ``c ((1 − f) p_a + f p_b)`` takes 5 roundings of values up to c·|p|
    (1 − f, two products, the sum, the weight), and summing a wisp's S_w samples S_w more of
    partial sums up to Σ c |p| = |p| (weights ≥ 0 summing to 1): 5 + S_w roundings of |p|, in the
    kernel and again, in another order, in the reference. float32 points are exact in float64."""
    points, wisp_of, order, start, samp_a, samp_f, weight = _gather_case(3)
    rows = np.ascontiguousarray(points.T.astype(dtype))        # the layer's rows (3, P); the kernel gets .T
    out = np.empty((len(start) - 1, samp_a.shape[1], 3))
    wisp_gather(rows.T, start, order, samp_a, samp_f, weight, out)
    ref = ref_gather(rows.T, wisp_of, len(start) - 1, samp_a, samp_f, weight)
    most = int(np.diff(start).max())
    np.testing.assert_allclose(out, ref, rtol=0, atol=rounding(magnitude(rows), 2 * (5 + most), eps=EPS64))
    # a wisp's root sample is the weighted mean of its strands' roots
    roots = np.array([np.sum(weight[wisp_of == w, None] * rows.T[samp_a[wisp_of == w, 0]], axis=0)
                      for w in range(len(start) - 1)])
    np.testing.assert_allclose(out[:, 0], roots, rtol=0, atol=rounding(magnitude(rows), 2 * (5 + most), eps=EPS64))


# ---------------------------------------------------------------------------------------------
# wisp_frames
# ---------------------------------------------------------------------------------------------

def ref_frames(x, anchor, e1_root):
    """Cross-section frames (W, N, 2, 3) and tangents (W, N, 3) (seed 001 §3.3): each tangent the
    bisector of the segments before and after the point (the root's 'before' the anchor, the
    tip's 'after' its last segment); ``e₁`` at the root ``e1_root`` made square to the tangent,
    then carried to each next cross-section by the least rotation between the tangents (the
    quaternion about their cross product: no twist), ``e₂ = t × e₁``."""
    seg = _unit(np.diff(x, axis=1))
    before = np.concatenate([anchor[:, None], seg], axis=1)
    after = np.concatenate([seg, seg[:, -1:]], axis=1)
    t = _unit(before + after)
    e1 = np.empty_like(t)
    e1[:, 0] = _unit(e1_root - _dot(e1_root, t[:, 0])[:, None] * t[:, 0])
    for i in range(1, x.shape[1]):
        e = _least_rotation(t[:, i - 1], t[:, i], e1[:, i - 1])
        e1[:, i] = _unit(e - _dot(e, t[:, i])[:, None] * t[:, i])
    return np.stack([e1, _cross(t, e1)], axis=2), t


# One cross-section's frame, in roundings of unit values, in the kernel or the reference: the
# segment's direction (UNIT), the tangent as the unit sum of two (1 + UNIT, the sum's norm at
# least 2 cos(bend / 2) ≥ 1.8 for the bends below 50° drawn here), the turn (TURN, and the
# tangents' own error twice through it), made square and unit again (DOT + 2 + UNIT), e₂ (CROSS).
FRAME_STEP = UNIT + (1 + UNIT) + TURN + 2 * (1 + 2 * UNIT) + DOT + 2 + UNIT + CROSS


def _frame_tolerance(n):
    """(n, 1, 1): a frame carries every turn before it (each an isometry, so their errors add):
    point i has i + 1 steps, in the kernel and in the reference."""
    return rounding(np.arange(n) + 1.0, 2 * FRAME_STEP, eps=EPS64)[:, None, None]


def test_frames_are_the_bisecting_least_rotation_frames():
    rng = np.random.default_rng(11)
    x, anchor = _chains(rng, 40, 9)
    # e₁ at the root: any length, partly along the tangent (the kernel makes it square and unit)
    e1_root = _unit(_cross(anchor, rng.normal(size=(40, 3)))) * rng.uniform(0.5, 3.0, (40, 1))
    e1_root += rng.uniform(-0.5, 0.5, (40, 1)) * anchor
    frames, tangent = _kernel_frames(x, anchor, e1_root)
    ref, ref_t = ref_frames(x, anchor, e1_root)
    tol = _frame_tolerance(x.shape[1])
    assert (np.abs(frames - ref).max(axis=(0, 3)) <= tol).all()
    # tangents carry nothing from the point before: two segments' directions (UNIT each), their sum
    # made unit (1 + UNIT, its norm ≥ 1.8), in both
    np.testing.assert_allclose(tangent, ref_t, rtol=0, atol=rounding(1.0, 2 * (3 * UNIT + 1), eps=EPS64))


def test_frames_are_orthonormal_and_right_handed():
    """Each frame is made square and unit where it is made: |e₁| − 1, e₁·t, e₂ = t × e₁ off by the
    last few roundings only (UNIT + DOT + 2 of unit values, and CROSS more for e₂), not carried."""
    rng = np.random.default_rng(12)
    x, anchor = _chains(rng, 60, 12, bend=np.radians(80.0))
    frames, t = _kernel_frames(x, anchor, rng.normal(size=(60, 3)))
    e1, e2 = frames[:, :, 0], frames[:, :, 1]
    tol = rounding(1.0, 2 * (UNIT + DOT + 2 + CROSS), eps=EPS64)
    for a, b, want in ((e1, e1, 1), (e2, e2, 1), (t, t, 1), (e1, e2, 0), (e1, t, 0), (e2, t, 0)):
        assert np.abs(_dot(a, b) - want).max() <= tol
    assert np.abs(_dot(_cross(e1, e2), t) - 1).max() <= tol          # right-handed: e₁ × e₂ = t


def test_a_straight_skeleton_has_constant_frames():
    """On a straight skeleton every tangent is the line's direction and nothing turns. Its points
    are rounded off the line by eps·|x|, so each segment's direction is off by up to
    2 eps |x| / L (conditioning |x| / L), and each frame turns by that against the one before:
    point i is off by i + 1 steps of (4 |x| / L + FRAME_STEP) roundings of unit values."""
    rng = np.random.default_rng(13)
    num, n = 30, 10
    d = _unit(rng.normal(size=(num, 3)))
    length = rng.uniform(0.02, 0.2, (num, 1, 1))
    x = rng.uniform(-3, 3, (num, 1, 3)) + length * np.arange(n)[None, :, None] * d[:, None, :]
    e1_root = rng.normal(size=(num, 3))
    frames, t = _kernel_frames(x, d, e1_root)
    cond = magnitude(x) / length.min()
    steps = (np.arange(n) + 1)[:, None]
    tol = rounding(steps, 4 * cond + FRAME_STEP, eps=EPS64)
    assert (np.abs(t - d[:, None, :]).max(axis=(0,)) <= tol).all()
    for ax in range(2):
        assert (np.abs(frames[:, :, ax] - frames[:, :1, ax]).max(axis=0) <= tol).all()


@pytest.mark.parametrize("root", ["in plane", "normal"])
def test_a_planar_bend_does_not_twist_its_frames(root):
    """A skeleton bending in one plane (a random one): its frames turn about the plane's normal
    only. e₁ starting in the plane stays there, square to each tangent, on the same side (the
    tangent turned +90° about the normal), and e₂ is the normal all along; e₁ starting on the
    normal stays the normal. Tolerance: as the straight skeleton's, the points rounded off the
    plane by eps·|x| turning each direction by up to 2 eps |x| / L."""
    rng = np.random.default_rng(14)
    num, n = 25, 9
    q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    a, b, normal = q[:, 0], q[:, 1], q[:, 2]
    angle = np.cumsum(rng.uniform(-np.radians(50), np.radians(50), (num, n)), axis=1)
    seg = np.cos(angle)[..., None] * a + np.sin(angle)[..., None] * b            # (num, n, 3): anchor, K segments
    length = rng.uniform(0.03, 0.2, (num, n - 1, 1))
    x = np.concatenate([np.zeros((num, 1, 3)), np.cumsum(length * seg[:, 1:], axis=1)], axis=1)
    x += rng.uniform(-2, 2, (num, 1, 1)) * a + rng.uniform(-2, 2, (num, 1, 1)) * b
    anchor = seg[:, 0]
    _, t_ref = ref_frames(x, anchor, np.tile(normal, (num, 1)))
    in_plane = _cross(normal, t_ref[:, 0])                    # square to the root's tangent, in the plane
    e1_root = in_plane if root == "in plane" else np.tile(normal, (num, 1))
    frames, t = _kernel_frames(x, anchor, e1_root)
    cond = magnitude(x) / length.min()
    tol = rounding((np.arange(n) + 1.0)[:, None], 4 * cond + FRAME_STEP, eps=EPS64)
    if root == "in plane":
        # e₁ = n × t, so e₂ = t × (n × t) = n (t·t) − t (t·n) = n
        want_e1, want_e2 = _cross(normal, t), np.broadcast_to(normal, t.shape)
    else:
        want_e1, want_e2 = np.broadcast_to(normal, t.shape), _cross(t, normal)
    assert (np.abs(frames[:, :, 0] - want_e1).max(axis=0) <= tol).all()
    assert (np.abs(frames[:, :, 1] - want_e2).max(axis=0) <= tol).all()
    assert (np.abs(_dot(t, normal)).max(axis=0) <= tol[:, 0]).all()


def test_a_folded_skeleton_still_has_orthonormal_frames():
    """A skeleton folding back exactly on itself (tangent undefined there: the kernel keeps the
    segment before) still gets finite, orthonormal frames."""
    x = np.array([[[0.0, 0.0, 0.0], [0.0, 0.0, -0.1], [0.0, 0.0, 0.0], [0.05, 0.0, 0.05]]])
    anchor = np.array([[0.0, 0.0, -1.0]])
    frames, t = _kernel_frames(x, anchor, np.array([[1.0, 1.0, 0.0]]))
    assert np.isfinite(frames).all() and np.isfinite(t).all()
    tol = rounding(1.0, 2 * (UNIT + DOT + 2 + CROSS), eps=EPS64)
    e1, e2 = frames[:, :, 0], frames[:, :, 1]
    for u, w, want in ((e1, e1, 1), (e2, e2, 1), (t, t, 1), (e1, e2, 0), (e1, t, 0), (e2, t, 0)):
        assert np.abs(_dot(u, w) - want).max() <= tol


# ---------------------------------------------------------------------------------------------
# wisp_place
# ---------------------------------------------------------------------------------------------

def ref_placed(x, frames, ratio, stretch, w, k, u, coords):
    """Strand points (P, 3) at fixed coordinates ``(k, u; a, b, c)`` in wisps (seed 001 §6): on
    segment k at u of it, plus a and b along the cross-sections' e₁, e₂ (blended between the two
    by u), each scaled by the envelope's ratio (now over rest) on its side (+e₁: 0, −e₁: 2, +e₂: 1,
    −e₂: 3), blended likewise, plus c along the segment scaled by its stretch."""
    a, b, c = coords[:, 0], coords[:, 1], coords[:, 2]
    u1 = u[:, None]
    u0 = 1.0 - u1
    side_a = np.where(a >= 0, 0, 2)
    side_b = np.where(b >= 0, 1, 3)
    sa = a * ((1.0 - u) * ratio[w, k, side_a] + u * ratio[w, k + 1, side_a])
    sb = b * ((1.0 - u) * ratio[w, k, side_b] + u * ratio[w, k + 1, side_b])
    along = _unit(x[w, k + 1] - x[w, k])
    e1 = u0 * frames[w, k, 0] + u1 * frames[w, k + 1, 0]
    e2 = u0 * frames[w, k, 1] + u1 * frames[w, k + 1, 1]
    return (u0 * x[w, k] + u1 * x[w, k + 1] + (c * stretch[w, k])[:, None] * along
            + sa[:, None] * e1 + sb[:, None] * e2)


def _place_case(seed, num_wisps=12, n=7, num=80):
    rng = np.random.default_rng(seed)
    gx, anchor = _chains(rng, num_wisps, n)
    e1_root = _unit(_cross(anchor, rng.normal(size=(num_wisps, 3))))
    x = gx + rng.normal(size=gx.shape) * 0.03
    x[:, 0] = gx[:, 0]
    frames, _ = _kernel_frames(x, anchor, e1_root)
    gframes, _ = _kernel_frames(gx, anchor, e1_root)
    ratio = rng.uniform(0.4, 2.0, (num_wisps, n, 4))
    rest = np.linalg.norm(np.diff(gx, axis=1), axis=2) * rng.uniform(0.9, 1.1, (num_wisps, n - 1))
    stretch = np.linalg.norm(np.diff(x, axis=1), axis=2) / rest
    gstretch = np.linalg.norm(np.diff(gx, axis=1), axis=2) / rest
    counts = rng.integers(2, 12, num)
    offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
    p = int(offsets[-1])
    strand = np.repeat(np.arange(num), counts)
    point_wisp = rng.integers(0, num_wisps, num)[strand].astype(np.int64)
    point_seg = rng.integers(0, n - 1, p).astype(np.int64)
    point_u = rng.random(p)
    point_u[rng.random(p) < 0.1] = 0.0
    point_u[rng.random(p) < 0.1] = 1.0
    coords = rng.normal(size=(p, 3)) * 0.05
    coords[rng.random((p, 3)) < 0.1] = 0.0            # on a side's border (a = 0 takes the + side)
    blend = rng.random(p)
    blend[offsets[:-1]] = 0.0                          # roots
    goal_rows = np.ascontiguousarray((rng.normal(size=(p, 3)) * 0.5 + 1.0).T)          # (3, P), as the layer's
    return dict(goal_rows=goal_rows, offsets=offsets, point_wisp=point_wisp, point_seg=point_seg,
                point_u=point_u, coords=coords, blend=blend, x=x, frames=frames, ratio=ratio, stretch=stretch,
                gx=gx, gframes=gframes, gstretch=gstretch, unit=np.ones_like(ratio), anchor=anchor,
                e1_root=e1_root)


def _place(c, goal_rows=None, dtype=np.float64, **over):
    c = dict(c, **over)
    goal_rows = c["goal_rows"] if goal_rows is None else goal_rows
    out_rows = np.empty(goal_rows.shape, dtype)
    wisp_place(goal_rows.T, out_rows.T, c["offsets"], c["point_wisp"], c["point_seg"], c["point_u"], c["coords"],
               c["blend"], c["x"], c["frames"], c["ratio"], c["stretch"], c["gx"], c["gframes"], c["gstretch"],
               c["unit"])
    return out_rows.T


# A placed point: the skeleton's blend (4 roundings of |x|), the unit axis (UNIT) times c·stretch
# (1) and its add (1), each envelope offset's ratio blend (4) times a, the frame blend (4), their
# product (1) and add (1): ~26 roundings of the largest |term|; twice (wisp and goal's wisp),
# their difference, the blend and the goal's add (3), in the kernel and the reference.
PLACE = 2 * (2 * 26 + 3)


def _place_magnitude(c):
    return (magnitude(c["goal_rows"]) + magnitude(c["x"], c["gx"])
            + magnitude(c["coords"][:, 2]) * magnitude(c["stretch"], c["gstretch"])
            + 2 * magnitude(c["coords"][:, :2]) * magnitude(c["ratio"], 1.0))


def test_place_is_the_goal_plus_the_wisps_displacement():
    c = _place_case(21)
    out = _place(c)
    w, k, u = c["point_wisp"], c["point_seg"], c["point_u"]
    sim = ref_placed(c["x"], c["frames"], c["ratio"], c["stretch"], w, k, u, c["coords"])
    goal = ref_placed(c["gx"], c["gframes"], c["unit"], c["gstretch"], w, k, u, c["coords"])
    ref = c["goal_rows"].T + c["blend"][:, None] * (sim - goal)
    np.testing.assert_allclose(out, ref, rtol=0, atol=rounding(_place_magnitude(c), PLACE, eps=EPS64))
    # blend 0 (the roots): the goal, exactly
    held = c["blend"] == 0
    assert np.array_equal(out[held], c["goal_rows"].T[held])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_wisp_resting_on_its_goal_places_the_goal_exactly(dtype):
    """Sim and goal wisps coincident (skeleton, frames, stretch; the envelope at rest, ratio 1):
    both placements are the same operations on the same numbers, their difference 0: the goal
    (float32 rows too, as Blender's) comes out bit for bit, whatever the blend."""
    c = _place_case(22)
    goal_rows = c["goal_rows"].astype(dtype)
    out = _place(c, goal_rows=goal_rows, dtype=dtype, x=c["gx"], frames=c["gframes"], stretch=c["gstretch"],
                 ratio=np.ones_like(c["ratio"]))
    assert np.array_equal(out, goal_rows.T)


def test_a_rigidly_moved_wisp_moves_its_strands_rigidly():
    """Strands lying where the goal's wisp places them (goal = placed(goal wisp)), the wisp moved
    by a rotation R and a translation (skeleton and frames turned, envelope at rest, no stretch):
    with blend 1 every point is its goal moved by the same motion. Tolerance: PLACE for the
    placements, and R applied to a point and to the frames (3 products, 2 sums: AFFINE-like, 6
    roundings of |x| each, three times)."""
    c = _place_case(23)
    rng = np.random.default_rng(24)
    rot = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    rot *= np.sign(np.linalg.det(rot))
    shift = rng.uniform(-1, 1, 3)
    w, k, u = c["point_wisp"], c["point_seg"], c["point_u"]
    goal_pts = ref_placed(c["gx"], c["gframes"], c["unit"], c["gstretch"], w, k, u, c["coords"])
    goal_rows = np.ascontiguousarray(goal_pts.T)
    out = _place(c, goal_rows=goal_rows, x=c["gx"] @ rot.T + shift, frames=c["gframes"] @ rot.T,
                 stretch=c["gstretch"], ratio=np.ones_like(c["ratio"]), blend=np.ones_like(c["blend"]))
    size = _place_magnitude(dict(c, goal_rows=goal_rows)) + magnitude(shift)
    np.testing.assert_allclose(out, goal_pts @ rot.T + shift, rtol=0,
                               atol=rounding(size, PLACE + 3 * 6, eps=EPS64))


@pytest.mark.parametrize("kernel", ["gather", "frames", "place"])
def test_the_geometry_kernels_give_the_same_bits_on_one_and_two_threads(kernel):
    runs = []
    for threads in (1, 2):
        with numba_threads(threads):
            if kernel == "gather":
                points, _, order, start, samp_a, samp_f, weight = _gather_case(5, num=600, num_wisps=150, n=9)
                out = np.empty((len(start) - 1, 9, 3))
                wisp_gather(points, start, order, samp_a, samp_f, weight, out)
                runs.append((out,))
            elif kernel == "frames":
                x, anchor = _chains(np.random.default_rng(6), 300, 12)
                runs.append(_kernel_frames(x, anchor, np.random.default_rng(7).normal(size=(300, 3))))
            else:
                c = _place_case(8, num_wisps=100, num=800)
                runs.append((_place(c),))
    assert all(np.array_equal(a, b) for a, b in zip(*runs))


# ---------------------------------------------------------------------------------------------
# wisp_pairs
# ---------------------------------------------------------------------------------------------

def ref_pairs(x, r):
    """Every pair of segments (seed 001 §4.1) whose boxes — the segment's two skeleton points each
    widened by its cross-section's largest envelope radius — meet (closed intervals on all three
    axes), but a wisp's segment and its neighbours (they share a point): brute force over all
    pairs, as a set of (lower, higher) segment numbers ``w·K + k``."""
    num, n = x.shape[:2]
    k_seg = n - 1
    reach = r.max(axis=2)[..., None]
    lo = np.minimum(x[:, :-1] - reach[:, :-1], x[:, 1:] - reach[:, 1:]).reshape(-1, 3)
    hi = np.maximum(x[:, :-1] + reach[:, :-1], x[:, 1:] + reach[:, 1:]).reshape(-1, 3)
    meet = np.all((lo[:, None] <= hi[None]) & (lo[None] <= hi[:, None]), axis=2)
    s = np.arange(num * k_seg)
    w, k = s // k_seg, s % k_seg
    meet &= ~((w[:, None] == w[None]) & (np.abs(k[:, None] - k[None]) < 2))
    a, b = np.nonzero(np.triu(meet, 1))
    return set(zip(a.tolist(), b.tolist()))


def _pairs_cases():
    """(name, x, r): random wisps sparse and dense, far from the origin and across it, zero
    radii, wisps curling onto themselves, all on one spot (every pair: the list grows), 1-segment
    wisps, one wisp."""
    rng = np.random.default_rng(31)
    cases = []
    x, _ = _chains(rng, 40, 7, spread=1.0)
    cases.append(("sparse", x, rng.uniform(0.0, 0.05, (40, 7, 4))))
    x, _ = _chains(rng, 40, 7, spread=0.3)
    cases.append(("dense", x, rng.uniform(0.02, 0.1, (40, 7, 4))))
    x, _ = _chains(rng, 30, 5, spread=0.5)
    cases.append(("far away", x + np.array([1e3, -2e3, 5e2]), rng.uniform(0.0, 0.08, (30, 5, 4))))
    x, _ = _chains(rng, 30, 6, spread=0.5)
    cases.append(("no envelope", x, np.zeros((30, 6, 4))))
    x, _ = _chains(rng, 12, 16, bend=np.radians(70), seg=(0.1, 0.2), spread=0.2)
    cases.append(("curling", x, rng.uniform(0.01, 0.06, (12, 16, 4))))
    cases.append(("one spot", np.zeros((12, 9, 3)) + 0.5, np.full((12, 9, 4), 0.1)))
    x, _ = _chains(rng, 80, 2, spread=0.4)
    cases.append(("one segment", x, rng.uniform(0.0, 0.1, (80, 2, 4))))
    x, _ = _chains(rng, 1, 30, bend=np.radians(80), seg=(0.05, 0.1), spread=0.0)
    cases.append(("one wisp", x, np.full((1, 30, 4), 0.05)))
    # one huge envelope among small ones: the cells are as large as the largest box
    x, _ = _chains(rng, 40, 6, spread=1.5)
    r = rng.uniform(0.0, 0.05, (40, 6, 4))
    r[3, 2, 1] = 0.9
    cases.append(("one huge", x, r))
    return cases


@pytest.mark.parametrize("case", _pairs_cases(), ids=lambda c: c[0])
def test_the_broadphase_finds_every_pair_a_brute_force_does_once(case):
    """The grid's pairs are the brute force's SET exactly (both compare the same float64 box
    corners, the same sums and min/max), each pair once, never a segment with itself or its
    wisp's neighbour, and in a fixed order run to run."""
    _, x, r = case
    k_seg = x.shape[1] - 1
    pairs = wisp_pairs(x, r, k_seg)
    assert pairs.ndim == 2 and pairs.shape[1] == 2
    unordered = {tuple(sorted(p)) for p in pairs.tolist()}
    assert len(unordered) == len(pairs)                           # each pair once
    assert (pairs[:, 0] != pairs[:, 1]).all()
    assert unordered == ref_pairs(x, r)
    assert np.array_equal(wisp_pairs(x, r, k_seg), pairs)


# ---------------------------------------------------------------------------------------------
# wisp_carry
# ---------------------------------------------------------------------------------------------

def ref_carry(x, v, push):
    """Penetration reaction (seed 001 §4.3.2), from the docstring: root to tip, a skeleton point
    pushed out by ``push`` is set at its segment's present length from the point before it,
    towards where the push takes it, and the whole rest of the wisp is translated as it moved
    (lengths kept); its velocity loses its part going against the push (into the surface)."""
    x, v = x.copy(), v.copy()
    for w in range(x.shape[0]):
        for i in range(1, x.shape[1]):
            p = push[w, i]
            if not p.any():
                continue
            length = np.linalg.norm(x[w, i] - x[w, i - 1])
            aim = x[w, i] + p - x[w, i - 1]
            moved = x[w, i - 1] + length * aim / np.linalg.norm(aim) - x[w, i]
            x[w, i:] += moved                                     # this point and all after it
            n = p / np.linalg.norm(p)
            into = v[w, i] @ n
            if into < 0:
                v[w, i] -= into * n
    return x, v


def _carry_case(seed):
    rng = np.random.default_rng(seed)
    x, _ = _chains(rng, 30, 9, spread=2.0)
    v = rng.normal(size=x.shape)
    push = rng.normal(size=x.shape) * 0.02
    push[rng.random(x.shape[:2]) < 0.6] = 0.0
    push[:, 0] = 0.0                                              # the root is held, never pushed
    push[0] = 0.0                                                 # a wisp not pushed at all
    push[1, 1:] = rng.normal(size=(8, 3)) * 0.05                  # one pushed at every point
    return x, v, push


def test_carry_is_the_penetration_reaction():
    """Tolerance: a pushed point is set from the point before it by its present length along the
    push's aim (the difference 1, the length UNIT, the aim 3 + UNIT, the product and add 2, the
    move 1 — ~17 roundings of |x|), and each point after it takes the sum of every move before it
    (one add a move): at most N pushed steps of 17 + 2 carried to the tip, in the kernel and the
    reference. A velocity changes by its part into the push: DOT + UNIT + 2 of |v|."""
    x, v, push = _carry_case(41)
    ref_x, ref_v = ref_carry(x, v, push)
    got_x, got_v = x.copy(), v.copy()
    wisp_carry(got_x, got_v, push, np.ones(x.shape[:2]))
    n = x.shape[1]
    np.testing.assert_allclose(got_x, ref_x, rtol=0, atol=rounding(magnitude(x, push) * n, 2 * 19, eps=EPS64))
    np.testing.assert_allclose(got_v, ref_v, rtol=0, atol=rounding(magnitude(v), 2 * (DOT + UNIT + 2), eps=EPS64))


def test_carry_keeps_lengths_and_leaves_what_is_not_pushed():
    """Lengths kept (to the carried roundings above, in the kernel alone); the root and every point
    before a wisp's first push exactly where they were; velocities of points not pushed exactly as
    they were; a pushed point's velocity no longer goes against its push (to DOT + UNIT + 2
    roundings of |v|), and went so only if it did before."""
    x, v, push = _carry_case(42)
    got_x, got_v = x.copy(), v.copy()
    wisp_carry(got_x, got_v, push, np.ones(x.shape[:2]))
    n = x.shape[1]
    length = np.linalg.norm(np.diff(x, axis=1), axis=2)
    np.testing.assert_allclose(np.linalg.norm(np.diff(got_x, axis=1), axis=2), length, rtol=0,
                               atol=rounding(magnitude(x, push) * n, 2 * 19 + UNIT, eps=EPS64))
    pushed = push.any(axis=2)
    before_first = np.cumsum(pushed, axis=1) == 0
    assert np.array_equal(got_x[before_first], x[before_first])
    assert np.array_equal(got_v[~pushed], v[~pushed])
    n_hat = _unit(push[pushed])
    into_after = _dot(got_v[pushed], n_hat)
    assert (into_after >= -rounding(magnitude(v), DOT + UNIT + 2, eps=EPS64)).all()
    kept = _dot(v[pushed], n_hat) >= 0
    assert np.array_equal(got_v[pushed][kept], v[pushed][kept])


# ---------------------------------------------------------------------------------------------
# wisp_velocities, wisp_positions: one substep
# ---------------------------------------------------------------------------------------------

def _half_lines(frames):
    """(W, N, 4, 3) the envelope's unit half-lines +e₁, +e₂, −e₁, −e₂."""
    return np.stack([frames[:, :, 0], frames[:, :, 1], -frames[:, :, 0], -frames[:, :, 1]], axis=2)


def ref_velocities(x, v, r, rd, frames, target, v_goal, ext, base, mass, inv_mass, rest_len, r0, h,
                   k_stretch, nu_stretch, k_bend, nu_bend, keep, toward, k_env, nu_env):
    """Items 1 and 3 of seed 001 §5.1 for one substep ``h``, from the kernel's docstring: returns
    the new ``v``, ``rd`` and the velocities before (``v_old``).

    Forces per unit of a skeleton point's mass: gravity with the style's hold ``base`` and the
    fields ``ext``; the envelope's springs (each radius to its rest, ``k_env (r0 − r)``, and each
    link to the two neighbouring half-lines, ``−k_env (L − L0) ∂L/∂r``, L = √(r_q² + r_nb²) for
    square half-lines), their reaction on the skeleton through envelope masses of 1/100; along
    each segment the linear spring ``k μ (L − r)`` (μ = 2 m₁m₂/(m₁ + m₂), so ``k`` is per reduced
    mass) and the angular spring ``k_bend μ (T − x_{k+1})`` towards T, where point k + 1 would be
    were the segment bent from the one before as the goal's is (the goal's segment turned by the
    least rotation from the goal's segment before onto the wisp's; the first segment's 'before' is
    the goal's own: no turn), equal and opposite on the two ends. Held points (inverse mass 0)
    take the goal's velocity. Then damping as velocity modifications (§5.2), root to tip: along
    each segment ``min(ν h, 1)`` of the relative velocity removed, split by inverse masses; across
    it, the same of the part of the relative velocity square to the segment beyond what turning
    with the segment before (ω = u × Δv / L) gives it. The goal's and the air's damping exactly:
    ``v ← keep v + (1 − keep) toward v_goal``. The envelope: each radial speed pushed by the loads
    less the skeleton's acceleration (none on a held point) and its springs, then loses
    ``min(ν_env h, 1)`` of itself."""
    v, rd = v.copy(), rd.copy()
    v_old = v.copy()
    held = inv_mass == 0
    axes = _half_lines(frames)
    env = k_env * (r0 - r)
    for turn in (-1, 1):                                    # the next half-line and the one before
        rn, rn0 = np.roll(r, turn, axis=2), np.roll(r0, turn, axis=2)
        link = np.sqrt(r * r + rn * rn)
        link0 = np.sqrt(r0 * r0 + rn0 * rn0)
        env -= k_env * (link - link0) * np.divide(r, link, out=np.zeros_like(r), where=link > 0)
    acc = base + ext - 0.01 * np.einsum("wnq,wnqd->wnd", env, axes)
    d = np.diff(x, axis=1)
    length = np.linalg.norm(d, axis=2)[..., None]
    u = d / length
    m0, m1 = mass[:, :-1, None], mass[:, 1:, None]
    mu = 2.0 * m0 * m1 / (m0 + m1)
    goal_dir = _unit(np.diff(target, axis=1))
    bent = goal_dir.copy()
    bent[:, 1:] = _least_rotation(goal_dir[:, :-1], u[:, :-1], goal_dir[:, 1:])
    pull = k_stretch * mu * (length - rest_len[..., None]) * u - k_bend * mu * (x[:, :-1] + length * bent - x[:, 1:])
    acc[:, :-1] += pull / m0                                    # on point k; its opposite on k + 1
    acc[:, 1:] -= pull / m1
    v = np.where(held[..., None], v_goal, v + h * acc)
    s_stretch, s_bend = min(nu_stretch * h, 1.0), min(nu_bend * h, 1.0)
    omega = np.zeros(v.shape[::2])
    for k in range(x.shape[1] - 1):
        wa, wb = inv_mass[:, k, None], inv_mass[:, k + 1, None]
        tot = wa + wb
        part = np.divide(1.0, tot, out=np.zeros_like(tot), where=tot > 0)
        uk, lk = u[:, k], length[:, k]
        rel = _dot(v[:, k + 1] - v[:, k], uk)[:, None] * uk
        v[:, k + 1] -= s_stretch * wb * part * rel
        v[:, k] += s_stretch * wa * part * rel
        if s_bend > 0:
            beyond = v[:, k + 1] - v[:, k] - _cross(omega, uk) * lk
            square = beyond - _dot(beyond, uk)[:, None] * uk
            v[:, k + 1] -= s_bend * wb * part * square
            v[:, k] += s_bend * wa * part * square
        omega = _cross(uk, v[:, k + 1] - v[:, k]) / lk
    v = np.where(held[..., None], v, keep * v + (1.0 - keep) * toward * v_goal)
    a_skel = (v - v_old) / h
    push = np.einsum("wnd,wnqd->wnq", base + ext - a_skel, axes)
    push[held] = 0.0
    rd = (rd + h * (push + env)) * (1.0 - min(nu_env * h, 1.0))
    return v, rd, v_old


def ref_positions(x, v, r, rd, target, inv_mass, rest_len, h, kh2, max_stretch):
    """Item 4 of seed 001 §5.1, from the kernel's docstring: each free point moves with the goal's
    spring taken implicitly, ``x' = (x + v h + k h² target) / (1 + k h²)``, its velocity what it
    moved over h; held points go to their target. Then, root to tip, a segment longer or shorter
    than ``max_stretch`` of its rest length is set on the limit by moving its far point along it,
    the rest of the wisp translated with it, and its far point's speed of stretching (shrinking)
    further taken off. Each envelope radius moves by its speed."""
    x, v, r = x.copy(), v.copy(), r + h * rd
    free = inv_mass > 0
    c = kh2[..., None]
    moved = (x + h * v + c * target) / (1.0 + c)
    v = np.where(free[..., None], (moved - x) / h, v)
    x = np.where(free[..., None], moved, target)
    for k in range(x.shape[1] - 1):
        d = x[:, k + 1] - x[:, k]
        length = np.linalg.norm(d, axis=1)
        u = d / length[:, None]
        lo, hi = rest_len[:, k] * (1.0 - max_stretch), rest_len[:, k] * (1.0 + max_stretch)
        to = np.where(length > hi, hi, np.where((length < lo) & (length > 0), lo, length))
        to = np.where(free[:, k + 1], to, length)
        x[:, k + 1:] += ((to - length)[:, None] * u)[:, None, :]
        rel = _dot(v[:, k + 1] - v[:, k], u)
        stop = ((to > length) & (rel < 0)) | ((to < length) & (rel > 0))
        v[:, k + 1] -= np.where(stop, rel, 0.0)[:, None] * u
    return x, v, r


PARAMS = {
    # the layer's defaults: 8 substeps at 24 fps, Stretch 4000 / 40, Bend 300 / 8, Volume 80 / 30,
    # Hold 60, Settle 4, Air Drag 0.5, Max Stretch 0.05
    "defaults": dict(h=1 / 192, k_stretch=4000.0, nu_stretch=40.0, k_bend=300.0, nu_bend=8.0, k_env=80.0, nu_env=30.0,
                     hold=60.0, settle=4.0, drag=0.5, max_stretch=0.05),
    # one step a frame, stiff, damping far past 1 / h (every share clamped to 1)
    "stiff, overdamped": dict(h=1 / 24, k_stretch=2e4, nu_stretch=1e4, k_bend=2e3, nu_bend=500.0, k_env=400.0,
                              nu_env=1e4, hold=500.0, settle=50.0, drag=5.0, max_stretch=0.02),
}


def _dynamics_case(seed, params, num=20, n=9):
    """Random wisps near their goal, moving: the layer's arrays (root held, masses from lengths,
    envelope 1/100), segments drawn 15 % off their rest so the stretch limit acts."""
    rng = np.random.default_rng(seed)
    p = params
    target, anchor = _chains(rng, num, n, bend=np.radians(40), seg=(0.08, 0.1))
    x = target + rng.normal(size=target.shape) * 0.01
    x[:, 0] = target[:, 0]
    rest_len = np.linalg.norm(np.diff(target, axis=1), axis=2) * rng.uniform(0.85, 1.15, (num, n - 1))
    mass = rng.uniform(0.7, 1.4, (num, n)) * 1e-3        # as the layer's: strands × length about a point
    inv_mass = 1.0 / mass
    inv_mass[:, 0] = 0.0
    r0 = rng.uniform(0.01, 0.04, (num, n, 4))
    h = p["h"]
    t = np.arange(n) / (n - 1)
    rate = p["settle"] + p["drag"]
    return dict(
        x=x, v=rng.normal(size=x.shape) * 0.5, r=r0 * rng.uniform(0.6, 1.4, r0.shape),
        rd=rng.normal(size=r0.shape) * 0.05,
        frames=_kernel_frames(x, anchor, rng.normal(size=(num, 3)))[0], target=target,
        v_goal=rng.normal(size=x.shape) * 0.2, ext=rng.normal(size=x.shape) * 2.0,
        base=np.array([0.0, 0.0, -9.81]) + rng.normal(size=3), mass=mass, inv_mass=inv_mass, rest_len=rest_len, r0=r0,
        h=h, k_stretch=p["k_stretch"], nu_stretch=p["nu_stretch"], k_bend=p["k_bend"], nu_bend=p["nu_bend"],
        kh2=np.broadcast_to(p["hold"] * (1 - 0.75 * t) * h * h, (num, n)).copy(),
        keep=math.exp(-rate * h), toward=p["settle"] / rate, k_env=p["k_env"], nu_env=p["nu_env"],
        max_stretch=p["max_stretch"])


def _kernel_velocities(c):
    v, rd, v_old = c["v"].copy(), c["rd"].copy(), np.empty_like(c["v"])
    wisp_velocities(c["x"], v, c["r"], rd, c["frames"], c["target"], c["v_goal"], c["ext"], c["base"], c["mass"],
                    c["inv_mass"], c["rest_len"], c["r0"], c["h"], c["k_stretch"], c["nu_stretch"], c["k_bend"],
                    c["nu_bend"], c["kh2"], c["keep"], c["toward"], c["k_env"], c["nu_env"], v_old)
    return v, rd, v_old


def _kernel_positions(c, v=None, rd=None):
    x, v, r = c["x"].copy(), (c["v"] if v is None else v).copy(), c["r"].copy()
    rd = c["rd"] if rd is None else rd
    wisp_positions(x, v, r, rd, c["target"], c["inv_mass"], c["rest_len"], c["h"], c["kh2"], c["max_stretch"])
    return x, v, r


def _ref_velocities(c):
    keys = ("x", "v", "r", "rd", "frames", "target", "v_goal", "ext", "base", "mass", "inv_mass", "rest_len", "r0",
            "h", "k_stretch", "nu_stretch", "k_bend", "nu_bend", "keep", "toward", "k_env", "nu_env")
    return ref_velocities(*(c[k] for k in keys))


def _ref_positions(c, v=None, rd=None):
    return ref_positions(c["x"], c["v"] if v is None else v, c["r"], c["rd"] if rd is None else rd, c["target"],
                         c["inv_mass"], c["rest_len"], c["h"], c["kh2"], c["max_stretch"])


# Roundings of one point's acceleration, in units of the largest force term A (below): the envelope's
# springs (r0 − r and its product 2; each of two links: 2 squares, a sum and a root for L and again
# for L0, L − L0, 3 products, the subtraction: 12 each) and their reaction (4 half-lines of a
# product, a sign and an add: 12): 38; a segment's stretch (L: UNIT; L − r, μ: 4, the product 2, along
# u: 1 + UNIT, over m and the add: 2): 20; its bend target (three unit directions 3 UNIT, the turn
# TURN, laid at length L from x_k: 2, T − x: 1, k μ: 2, over m and the add: 2): 70. A point takes two
# segments' stretch and bend, base + ext 2.
ACC = 38 + 2 * (20 + 70) + 2
# Roundings of a segment's damping pass in units of the largest velocity V₁: along it, the
# direction (UNIT) times a relative velocity up to 2 V₁, its dot (DOT) of 2 V₁, the share 2, the two
# updates 3 each: 2 (UNIT + DOT) + 8; across it, the turn of the segment before ω × u L (its ω: CROSS
# + 1 of 2 V₁ / L_{k−1}, carried by L_k: ρ = L_k / L_{k−1}; the product CROSS + 1), the difference 3,
# the square part DOT + 2 — each of values up to 2 (1 + ρ) V₁ — its share 3 and the updates 6.
DAMP_ALONG = 2 * (UNIT + DOT) + 8


def _damp_across(rho):
    return 2 * (1 + rho) * (2 * (CROSS + 1) + 3 + DOT + 2) + 9


def _velocity_tolerances(c):
    """(tol_v, tol_rd): the most the kernel's and the reference's v and rd can differ.

    A, the largest force term per unit mass: |base| + |ext|, the envelope's reaction 0.04 E with
    E = k_env R (2 + 4√2) (its spring and two links, R the largest radius), a stretch spring
    k μ/m (L + r) ≤ 2 k (2 L_max) and a bend spring k_bend μ/m (|T| + |x|) ≤ 2 k_bend (2 X + L_max);
    V₁ = |v| + h A bounds the velocities the damping acts on. ACC roundings of A times h, the add 2
    of V₁, then root to tip each segment's damping (DAMP_ALONG + ``_damp_across(ρ)``), the goal's
    and air's damping 3: counted once each, in the kernel and the reference (×2).

    What a rounding carries to the tip: damping along a segment is an orthogonal projection in the
    mass-weighted norm (|δ|_M = √Σ m δ², it removes a share ≤ 1 of one relative velocity by
    momentum-keeping impulses), so it never grows an error there; damping across it subtracts the
    segment before's turn, whose error (its two points', each up to |δ|_M / √m_min) reaches it
    multiplied by ρ and by the share s_bend, seen in that norm through the pair's reduced mass
    (≤ m_max): an error grows by at most Π_k (1 + 2 s_bend ρ_k √(m_max / m_min)) along a wisp, and
    by √(m_max / m_min) from the mass-weighted norm to a point's. Read from the data: the
    conditioning of the problem.

    rd: the envelope's push reads the skeleton's acceleration (v − v_old) / h, times h: the
    velocities' error once (×√3 over a dot with a unit half-line, so 2), and its own roundings
    (DOT + 4 of |base| + |ext| + 2 V₁/h, times h; the springs' 24 of E, times h; the add and the
    damping 4 of the new |rd|), ×2."""
    x, h = c["x"], c["h"]
    length = np.linalg.norm(np.diff(x, axis=1), axis=2)
    rho = length[:, 1:] / length[:, :-1]
    s_bend = min(c["nu_bend"] * h, 1.0)
    spread = math.sqrt(c["mass"].max() / c["mass"].min())
    gain = np.prod(1 + 2 * s_bend * rho * spread, axis=1).max() * spread
    big_x = magnitude(x, c["target"])
    loads = np.linalg.norm(c["base"]) + magnitude(np.linalg.norm(c["ext"], axis=2))
    env = c["k_env"] * magnitude(c["r"], c["r0"]) * (2 + 4 * math.sqrt(2))
    force = (loads + 0.04 * env + 2 * c["k_stretch"] * 2 * length.max()
             + 2 * c["k_bend"] * (2 * big_x + length.max()))
    v1 = magnitude(c["v"], c["v_goal"]) + h * force
    k = x.shape[1] - 1
    tol_v = gain * (rounding(h * force, 2 * ACC, eps=EPS64)
                    + rounding(v1, 2 * (2 + k * (DAMP_ALONG + _damp_across(rho.max())) + 3), eps=EPS64))
    rd_size = magnitude(c["rd"]) + h * (loads + env) + 2 * v1
    tol_rd = 2 * tol_v + rounding(h * (loads + 2 * v1 / h), 2 * (DOT + 4), eps=EPS64) \
        + rounding(h * env, 2 * 24, eps=EPS64) + rounding(rd_size, 2 * 4, eps=EPS64)
    return tol_v, tol_rd


def _position_tolerances(c, v, rd, tol_v_in=0.0, tol_rd_in=0.0):
    """(tol_x, tol_v, tol_r) of the positions pass on velocities ``v`` known to ``tol_v_in``.

    The implicit goal step ``(x + h v + c T) / (1 + c)``: 6 roundings of X + h V (the sums are up to
    (1 + c) times that, then divided by 1 + c), plus h tol_v_in; its velocity, the move over h:
    those over h, 2 more of V, plus tol_v_in. The stretch limit, root to tip, adds to each point
    the moves before it (1 each), and for a limited segment: the difference, its length and
    direction UNIT + 1, the limits 2, to − L 1, the move 1, the add 1 (13 roundings of X a segment;
    a direction's error times |to − L| stays below them); its velocity fix (DOT + UNIT + 3 of 2 V,
    and the direction's error 2 tol_x / L_min times 2 V). A velocity fix may pass an error on to the
    next segment's (δ'_{k+1} = P⊥ δ_{k+1} + (δ_k·u) u, of norm ≤ √2 max(δ)): ×√2 a segment. Radii:
    r + h rd, 2 roundings of R + h |rd|, and h tol_rd_in. Kernel and reference: ×2."""
    x, h = c["x"], c["h"]
    k = x.shape[1] - 1
    big_x = magnitude(x, c["target"])
    big_v = magnitude(v)
    size = big_x + h * big_v
    length = np.linalg.norm(np.diff(x, axis=1), axis=2).min() * (1 - c["max_stretch"])
    tol_x = rounding(size, 2 * (6 + 13 * k), eps=EPS64) + h * tol_v_in
    tol_v = (rounding(size, 2 * 6, eps=EPS64) / h + rounding(big_v, 2 * 2, eps=EPS64) + tol_v_in
             + k * (rounding(2 * big_v, 2 * (DOT + UNIT + 3), eps=EPS64) + 2 * big_v * 2 * tol_x / length))
    tol_v *= math.sqrt(2) ** k
    tol_r = rounding(magnitude(c["r"]) + h * magnitude(rd), 2 * 2, eps=EPS64) + h * tol_rd_in
    return tol_x, tol_v, tol_r


@pytest.mark.parametrize("params", PARAMS, ids=str)
def test_velocities_are_one_substeps_forces_and_damping(params):
    c = _dynamics_case(51, PARAMS[params])
    v, rd, v_old = _kernel_velocities(c)
    ref_v, ref_rd, _ = _ref_velocities(c)
    tol_v, tol_rd = _velocity_tolerances(c)
    assert np.array_equal(v_old, c["v"])                   # what the velocities were, exactly
    np.testing.assert_allclose(v, ref_v, rtol=0, atol=tol_v)
    np.testing.assert_allclose(rd, ref_rd, rtol=0, atol=tol_rd)
    held = c["inv_mass"] == 0
    assert np.array_equal(v[held], c["v_goal"][held])      # held points take the goal's velocity


@pytest.mark.parametrize("params", PARAMS, ids=str)
def test_positions_are_one_substeps_moves_and_stretch_limit(params):
    c = _dynamics_case(52, PARAMS[params])
    x, v, r = _kernel_positions(c)
    ref_x, ref_v, ref_r = _ref_positions(c)
    tol_x, tol_v, tol_r = _position_tolerances(c, c["v"], c["rd"])
    np.testing.assert_allclose(x, ref_x, rtol=0, atol=tol_x)
    np.testing.assert_allclose(v, ref_v, rtol=0, atol=tol_v)
    np.testing.assert_allclose(r, ref_r, rtol=0, atol=tol_r)
    held = c["inv_mass"] == 0
    assert np.array_equal(x[held], c["target"][held])
    # every free segment within the stretch limit (to tol_x of its ends)
    length = np.linalg.norm(np.diff(x, axis=1), axis=2)
    lim = c["max_stretch"] * c["rest_len"]
    assert (np.abs(length - c["rest_len"]) <= lim + 2 * tol_x).all()


@pytest.mark.parametrize("params", PARAMS, ids=str)
def test_one_substep_is_the_reference_substep(params):
    """Velocities then positions, as the layer runs them (interactions and colliders aside): the
    positions' tolerances take the velocities' as their inputs' error."""
    c = _dynamics_case(53, PARAMS[params])
    v, rd, _ = _kernel_velocities(c)
    x, v, r = _kernel_positions(c, v, rd)
    ref_v, ref_rd, _ = _ref_velocities(c)
    ref_x, ref_v, ref_r = _ref_positions(c, ref_v, ref_rd)
    tol_v_in, tol_rd_in = _velocity_tolerances(c)
    tol_x, tol_v, tol_r = _position_tolerances(c, ref_v, ref_rd, tol_v_in, tol_rd_in)
    np.testing.assert_allclose(x, ref_x, rtol=0, atol=tol_x)
    np.testing.assert_allclose(v, ref_v, rtol=0, atol=tol_v)
    np.testing.assert_allclose(r, ref_r, rtol=0, atol=tol_r)


def test_the_substep_gives_the_same_bits_on_one_and_two_threads():
    runs = []
    for threads in (1, 2):
        with numba_threads(threads):
            c = _dynamics_case(54, PARAMS["defaults"], num=200)
            x, v, r, rd = c["x"].copy(), c["v"].copy(), c["r"].copy(), c["rd"].copy()
            v_old = np.empty_like(v)
            for _ in range(4):
                wisp_velocities(x, v, r, rd, c["frames"], c["target"], c["v_goal"], c["ext"], c["base"], c["mass"],
                                c["inv_mass"], c["rest_len"], c["r0"], c["h"], c["k_stretch"], c["nu_stretch"],
                                c["k_bend"], c["nu_bend"], c["kh2"], c["keep"], c["toward"], c["k_env"], c["nu_env"],
                                v_old)
                wisp_positions(x, v, r, rd, c["target"], c["inv_mass"], c["rest_len"], c["h"], c["kh2"],
                               c["max_stretch"])
            runs.append((x, v, r, rd, v_old))
    assert all(np.array_equal(a, b) for a, b in zip(*runs))


# ---------------------------------------------------------------------------------------------
# Damping as a velocity modification (seed 001 §5.2)
# ---------------------------------------------------------------------------------------------

def _damping_only(x, v, mass, inv_mass, h, nu_stretch, nu_bend, v_goal=None):
    """One velocities pass with every spring, load and the goal's and air's damping off (the
    envelope's too): only the skeleton's damping as velocity modifications acts."""
    num, n = x.shape[:2]
    frames, _ = _kernel_frames(x, _unit(x[:, 1] - x[:, 0]), np.tile([0.3, 0.2, 0.9], (num, 1)))
    v = v.copy()
    r = np.full((num, n, 4), 0.02)
    rd = np.zeros_like(r)
    wisp_velocities(x, v, r, rd, frames, x, np.zeros_like(v) if v_goal is None else v_goal, np.zeros_like(v),
                    np.zeros(3), mass, inv_mass, np.linalg.norm(np.diff(x, axis=1), axis=2), r, h, 0.0, nu_stretch,
                    0.0, nu_bend, np.zeros((num, n)), 1.0, 0.0, 0.0, 0.0, np.empty_like(v))
    return v                 # (the envelope's radial speeds lag the skeleton's change: not looked at here)


DAMPINGS = {"ν dt < 1": (1 / 192, 40.0, 8.0), "ν dt ≫ 1": (1 / 24, 1e6, 1e6),
            "along only, ν dt ≫ 1": (1 / 24, 1e6, 0.0), "across only": (1 / 192, 0.0, 30.0)}


@pytest.mark.parametrize("damping", DAMPINGS, ids=str)
def test_damping_keeps_momentum(damping):
    """All points free (inverse mass 1/m everywhere): each modification is a pair of opposite
    impulses (§5.2: 'the action-reaction laws are still obeyed'), so Σ m v is kept — however
    large ν dt. Tolerance: each of a segment's two modifications changes two velocities (3
    roundings each of m|v|: the share's product, the add, m·(1/m) ≠ 1), 2 × 2 × 3 × 2 a segment
    with ω's roundings irrelevant (any impulse pair keeps momentum); the sums are exact
    (math.fsum) but for m·v, one rounding a point before and after: rounding(m |v|, 24 K + 2 N)."""
    h, nu_s, nu_b = DAMPINGS[damping]
    rng = np.random.default_rng(61)
    x, _ = _chains(rng, 40, 9, bend=np.radians(70))
    v = rng.normal(size=x.shape)
    mass = rng.uniform(0.2, 5.0, x.shape[:2])
    after = _damping_only(x, v, mass, 1.0 / mass, h, nu_s, nu_b)
    size = magnitude(mass[..., None] * v, mass[..., None] * after)
    n = x.shape[1]
    for w in range(x.shape[0]):
        for d in range(3):
            before_p = math.fsum(mass[w] * v[w, :, d])
            after_p = math.fsum(mass[w] * after[w, :, d])
            assert abs(after_p - before_p) <= rounding(size, 24 * (n - 1) + 2 * n, eps=EPS64)
    if nu_b == 0:
        # along each segment alone: a mass-weighted projection, it never adds kinetic energy
        # (roundings of m v², the same count, of the largest)
        ke0 = np.einsum("wn,wnd,wnd->w", mass, v, v)
        ke1 = np.einsum("wn,wnd,wnd->w", mass, after, after)
        assert (ke1 <= ke0 + rounding(magnitude(mass[..., None] * v * v, mass[..., None] * after * after),
                                      3 * (24 * (n - 1) + 2 * n), eps=EPS64)).all()


@pytest.mark.parametrize("held", [False, True])
@pytest.mark.parametrize("nu_dt", [0.0, 0.3, 0.999, 1.0, 3.0, 1e4])
def test_damping_shrinks_a_relative_velocity_and_never_reverses_it(nu_dt, held):
    """Two points on one segment (the bend damping's turn of the segment before is the anchor's:
    none): the relative velocity's part along the segment keeps 1 − min(ν dt, 1) of itself, its
    part across likewise (ν_bend dt the same), each point changed by the seed's
    Δv₁ = −min(ν dt, 1) m₂/(m₁ + m₂) ((v₁ − v₂)·u) u: it shrinks to zero and never reverses, even
    for ν dt = 10⁴ (a damping force would have reversed and grown it 10⁴ times). A held root (inverse
    mass 0) keeps its velocity and the free point takes it all. Tolerance: the pass's roundings of
    the relative velocity, 2 × (DAMP_ALONG + _damp_across(0)) of its |v|."""
    rng = np.random.default_rng(62)
    num = 200
    x = np.stack([rng.uniform(-1, 1, (num, 3)), np.zeros((num, 3))], axis=1)
    x[:, 1] = x[:, 0] + _unit(rng.normal(size=(num, 3))) * rng.uniform(0.05, 0.2, (num, 1))
    v = rng.normal(size=x.shape)
    mass = rng.uniform(0.2, 5.0, (num, 2))
    inv = 1.0 / mass
    if held:
        inv[:, 0] = 0.0
    h = 1 / 24
    after = _damping_only(x, v, mass, inv, h, nu_dt / h, nu_dt / h, v_goal=v)
    share = min(nu_dt, 1.0)
    u = _unit(x[:, 1] - x[:, 0])
    rel0, rel1 = v[:, 1] - v[:, 0], after[:, 1] - after[:, 0]
    along0, along1 = _dot(rel0, u), _dot(rel1, u)
    across0, across1 = rel0 - along0[:, None] * u, rel1 - along1[:, None] * u
    tol = rounding(magnitude(v, after), 2 * (DAMP_ALONG + _damp_across(0.0)), eps=EPS64)
    np.testing.assert_allclose(along1, (1 - share) * along0, rtol=0, atol=tol)
    np.testing.assert_allclose(across1, (1 - share) * across0, rtol=0, atol=tol)
    assert (along1 * along0 >= -tol * np.abs(along0)).all()              # never reversed
    assert (_dot(across1, across0) >= -tol * np.linalg.norm(across0, axis=1)).all()
    # each point's change, the seed's formula (with the part across alike)
    wa, wb = inv[:, 0, None], inv[:, 1, None]
    dv = share * (along0[:, None] * u + across0)
    np.testing.assert_allclose(after[:, 1], v[:, 1] - wb / (wa + wb) * dv, rtol=0, atol=tol)
    np.testing.assert_allclose(after[:, 0], v[:, 0] + wa / (wa + wb) * dv, rtol=0, atol=tol)


# ---------------------------------------------------------------------------------------------
# wisp_interact (seed 001 §4.1–4.2)
# ---------------------------------------------------------------------------------------------

def _meet_operations(cond):
    """Roundings of one meet, in units of the largest velocity V: the point's velocity (2 for an
    envelope point), the segment's at u (4), the relative velocity (1) — values up to 2 V —, its
    normal part (DOT) and the change (3), the share (3), the impulse (2), the updates (2 on the
    point, 3 on each end): ~25 of 2 V; and the plane's normal: σ_s's direction UNIT, the cross
    product CROSS, made unit UNIT — divided by |σ_p × σ_s| ≥ PARALLEL, or for parallel wisps by the
    offset |o| from a difference of points up to the segment's length and radius (``cond``, read
    per meet) — entering twice (vn and vn n) with 2 V."""
    return 2 * 25 + 2 * 2 * cond * (2 * UNIT + CROSS)


def ref_interact(x, v, r, rd, frames, tangent, mass, inv_mass, m_env, r0, viscosity, dt_c, pairs):
    """Wisp–wisp interactions as velocity modifications, from the docstrings (seed 001 §4.1–4.2),
    over the broadphase's pairs in its order: for each pair, the far cross-section of each segment
    against the other segment's volume (the space between its two cross-sections, discs of their
    envelopes' mean radii, blended along it), the skeleton point first, then its four envelope
    points (§5.1). A point inside: relative velocity within 25° of the plane the two wisps span
    (normal σ_p × σ_s, or for parallel ones σ_s × the point's offset from the axis): its normal
    part removed and viscous drag min(viscosity · density · dt_c, 1) on its in-plane part (density:
    rest area over area now); else the relative velocity removed (inelastic). The change Δ of the
    relative velocity is made by an impulse J on the point and −J on the segment's point at u (its
    ends take (1 − u) J and u J): J = Δ / (1/m_p + (1 − u)²/m_a + u²/m_b). A held skeleton point
    is not moved by others; an envelope point takes J's part along its half-line into its radial
    speed (mass m_env) and gives the rest to its skeleton point. Returns v, rd, counts (points
    inside, of them colliding, pairs) and the roundings the reference counts (``_meet_operations``
    summed over meets)."""
    v, rd = v.copy(), rd.copy()
    counts = np.zeros(3, np.int64)
    counts[2] = len(pairs)
    k_seg = x.shape[1] - 1
    ops = 0.0

    def meet(wa, c, wb, kb):
        nonlocal ops
        a, b = x[wb, kb], x[wb, kb + 1]
        axis = b - a
        sigma_s = axis / np.linalg.norm(axis)
        for q in (None, 0, 1, 2, 3):
            if q is None:
                e = np.zeros(3)
                p, vp = x[wa, c], v[wa, c]
            else:
                e = (1.0 if q < 2 else -1.0) * frames[wa, c, q % 2]
                p, vp = x[wa, c] + r[wa, c, q] * e, v[wa, c] + rd[wa, c, q] * e
            u = (p - a) @ axis / (axis @ axis)
            if not 0.0 <= u <= 1.0:
                continue
            o = p - a - u * axis
            rad = (1 - u) * r[wb, kb].mean() + u * r[wb, kb + 1].mean()
            if o @ o >= rad * rad or (q is None and inv_mass[wa, c] == 0):
                continue
            counts[0] += 1
            rel = vp - ((1 - u) * v[wb, kb] + u * v[wb, kb + 1])
            normal = np.cross(tangent[wa, c], sigma_s)
            cond = 1.0 / max(np.linalg.norm(normal), PARALLEL)
            if np.linalg.norm(normal) < PARALLEL:
                normal = np.cross(sigma_s, o)
                cond = (np.linalg.norm(axis) + rad) / max(np.linalg.norm(o), 1e-300)
            size = np.linalg.norm(normal)
            n = normal / size if size > 0 else normal
            vn = rel @ n
            if size == 0 or abs(vn) <= SIN_PLANE * np.linalg.norm(rel):
                rest = (1 - u) * r0[wb, kb].mean() + u * r0[wb, kb + 1].mean()
                drag = min(viscosity * (rest / rad) ** 2 * dt_c, 1.0)
                delta = -vn * n - drag * (rel - vn * n)
            else:
                counts[1] += 1
                delta = -rel
            m_p = mass[wa, c] if q is None else m_env[wa, c]
            impulse = delta / (1.0 / m_p + (1 - u) ** 2 * inv_mass[wb, kb] + u ** 2 * inv_mass[wb, kb + 1])
            if q is None:
                v[wa, c] += impulse / m_p
            else:
                radial = impulse @ e
                rd[wa, c, q] += radial / m_p
                v[wa, c] += (impulse - radial * e) * inv_mass[wa, c]
            v[wb, kb] -= (1 - u) * inv_mass[wb, kb] * impulse
            v[wb, kb + 1] -= u * inv_mass[wb, kb + 1] * impulse
            ops += _meet_operations(min(cond, 1e12))

    for s_a, s_b in pairs.tolist():
        wa, ka, wb, kb = s_a // k_seg, s_a % k_seg, s_b // k_seg, s_b % k_seg
        meet(wa, ka + 1, wb, kb)
        meet(wb, kb + 1, wa, ka)
    return v, rd, counts, ops


def _meeting_wisps(seed, count, kind, n=7):
    """``count`` wisps meeting about the origin: 'crossing' (random directions) or 'parallel'
    (within 4° of one direction, offsets under their radii, moving mostly along it); all points free
    (inverse mass 1/m everywhere, envelope masses 1/100), random velocities and radial speeds."""
    rng = np.random.default_rng(seed)
    base = _unit(rng.normal(size=3))
    if kind == "crossing":
        d = _unit(rng.normal(size=(count, 3)))
        offset = rng.normal(size=(count, 3)) * 0.03
    else:
        d = _turned(rng, np.tile(base, (count, 1)), rng.uniform(0, np.radians(4), count))
        offset = rng.normal(size=(count, 3)) * 0.03
    s = (np.arange(n) - (n - 1) / 2) * 0.1
    x = offset[:, None, :] + s[None, :, None] * d[:, None, :] + rng.normal(size=(count, n, 3)) * 0.005
    r = rng.uniform(0.03, 0.08, (count, n, 4))
    r0 = r * rng.uniform(0.8, 1.25, r.shape)
    mass = rng.uniform(0.7, 1.4, (count, n)) * 1e-3
    v = rng.normal(size=x.shape) * 0.5
    if kind == "parallel":
        v += rng.normal(size=(count, 1, 1)) * d[:, None, :]
    frames, tangent = _kernel_frames(x, d, rng.normal(size=(count, 3)))
    return dict(x=x, v=v, r=r, rd=rng.normal(size=r.shape) * 0.1, frames=frames, tangent=tangent, mass=mass,
                inv_mass=1.0 / mass, m_env=0.01 * mass, r0=r0)


MEETINGS = [(seed, count, kind) for kind in ("crossing", "parallel") for count in (2, 3) for seed in range(4)]


def _interact(c, viscosity, dt_c):
    v, rd, counts = c["v"].copy(), c["rd"].copy(), np.zeros(3, np.int64)
    wisp_interact(c["x"], v, c["r"], rd, c["frames"], c["tangent"], c["mass"], c["inv_mass"], c["m_env"], c["r0"],
                  viscosity, dt_c, counts)
    return v, rd, counts


@pytest.mark.parametrize("kind", ["crossing", "parallel"])
def test_interact_is_the_reference_interaction(kind):
    """Each meet against the reference's, in the broadphase's order (``wisp_pairs``, tested above
    as a set). Tolerance: the meets' roundings (``_meet_operations``, each with its conditioning)
    in the kernel and the reference, added over the meets as they carry on; a meet changes a
    point and a segment by momentum-keeping impulses — for a skeleton point the mass-weighted
    projection removing (a part of) their relative velocity, which does not grow an error in the
    mass-weighted norm — so a point's error is at most √(m_max / m_min) of that (radial speeds,
    of envelope masses: √(m_max / m_env,min))."""
    met = collided = 0
    for seed, count, k in MEETINGS:
        if k != kind:
            continue
        c = _meeting_wisps(seed, count, kind)
        v, rd, counts = _interact(c, 5.0, 1 / 192)
        pairs = wisp_pairs(c["x"], c["r"], c["x"].shape[1] - 1)
        ref_v, ref_rd, ref_counts, ops = ref_interact(c["x"], c["v"], c["r"], c["rd"], c["frames"], c["tangent"],
                                                      c["mass"], c["inv_mass"], c["m_env"], c["r0"], 5.0, 1 / 192,
                                                      pairs)
        assert np.array_equal(counts, ref_counts)
        size = magnitude(c["v"], v, ref_v) + magnitude(c["rd"], rd, ref_rd)
        tol = rounding(size, 2 * ops, eps=EPS64)
        np.testing.assert_allclose(v, ref_v, rtol=0, atol=tol * math.sqrt(c["mass"].max() / c["mass"].min()))
        np.testing.assert_allclose(rd, ref_rd, rtol=0, atol=tol * math.sqrt(c["mass"].max() / c["m_env"].min()))
        met += counts[0]
        collided += counts[1]
    assert met > 20 and 0 < collided < met           # the draws met, both ways


def _momentum(c, v, rd):
    """Σ m v of the skeletons plus Σ m_env rd e_q of the envelopes (their radial momentum along
    their half-lines), each coordinate summed exactly (math.fsum) from the rounded products."""
    axes = _half_lines(c["frames"])
    skel = c["mass"][..., None] * v
    env = (c["m_env"][..., None] * rd)[..., None] * axes
    return np.array([math.fsum(np.r_[skel[..., d].ravel(), env[..., d].ravel()]) for d in range(3)])


@pytest.mark.parametrize("viscosity", [5.0, 1e5])
@pytest.mark.parametrize("meeting", MEETINGS, ids=lambda m: f"{m[2]} {m[1]} wisps #{m[0]}")
def test_interact_keeps_momentum(meeting, viscosity):
    """All points free: every meet is an impulse J on the point and −J on the segment (shared
    (1 − u), u by its ends), an envelope point's J split between its radial speed (along e_q, mass
    m_env) and its skeleton point: Σ m v + Σ m_env rd e_q is kept. Tolerance: a meet rounds, per
    coordinate, the point's update (J / m_p and the add, or the radial part, its speed and the
    rest's update: 6) and each end's (3 each) — values up to m V, ~12 of 2 m V —, the momenta the
    products m v and m_env rd e (1 and 2 each, before and after), the sums exact."""
    seed, count, kind = meeting
    c = _meeting_wisps(seed, count, kind)
    v, rd, counts = _interact(c, viscosity, 1 / 192)
    assert counts[0] > 0
    size = magnitude(c["mass"]) * (magnitude(c["v"], v) + magnitude(c["rd"], rd))
    points = c["x"].shape[0] * c["x"].shape[1]
    tol = rounding(size, 2 * 12 * counts[0] + 2 * (points + 2 * 4 * points), eps=EPS64)
    np.testing.assert_allclose(_momentum(c, v, rd), _momentum(c, c["v"], c["rd"]), rtol=0, atol=tol)


def _frames_square_to(tangent, toward):
    """Frames (W, N, 2, 3): e₁ ``toward`` (3,) made square to each tangent, e₂ = t × e₁."""
    e1 = _unit(toward - _dot(toward, tangent)[..., None] * tangent)
    return np.stack([e1, _cross(tangent, e1)], axis=-2)


def _one_contact(kind, turn):
    """Two wisps (4 points each) meeting at exactly one point: A's skeleton point 2 halfway along
    B's segment 1 (u = 1/2), every other skeleton and envelope point of either outside the other's
    volume. 'crossing': A straight down the z axis, B through the origin 20° off the x axis, B thin
    (radius 0.02, rest 0.025: density 1.5625), A's envelope (0.06) turned 45° so it clears B.
    'parallel': B down the z axis (radius 0.05, rest 0.04), A a V whose point 2 is 0.03 off B's
    axis with its tangent (the bisector) along B: the parallel wisps' plane through both axes; A's
    envelope at point 2 long across (0.09) and 0.05 along, so it clears B, thin (0.01) elsewhere.
    All turned by ``turn`` (3, 3) and shifted; masses random, points free."""
    rng = np.random.default_rng(71)
    if kind == "crossing":
        d = np.array([math.cos(math.radians(20)), 0.0, math.sin(math.radians(20))])
        xa = np.array([[0, 0, 0.2], [0, 0, 0.1], [0, 0, 0.0], [0, 0, -0.1]])
        xb = np.array([-0.3, -0.1, 0.1, 0.3])[:, None] * d
        ra, rb, rb0 = np.full((4, 4), 0.06), np.full((4, 4), 0.02), np.full((4, 4), 0.025)
        ta, tb = np.tile([0.0, 0.0, -1.0], (4, 1)), np.tile(d, (4, 1))
        fa, fb = _frames_square_to(ta, np.array([1.0, 1.0, 0.0])), _frames_square_to(tb, np.array([0.0, 1.0, 0.0]))
    else:
        off = 0.03
        xa = np.array([[off + 0.2, 0, 0.2], [off + 0.1, 0, 0.1], [off, 0, 0.0], [off + 0.1, 0, -0.1]])
        xb = np.array([[0, 0, 0.6], [0, 0, 0.2], [0, 0, -0.2], [0, 0, -0.6]])
        ra = np.full((4, 4), 0.01)
        ra[2] = (0.09, 0.05, 0.09, 0.05)
        rb, rb0 = np.full((4, 4), 0.05), np.full((4, 4), 0.04)
        seg = _unit(np.diff(xa, axis=0))
        ta = _unit(np.stack([seg[0], seg[0] + seg[1], seg[1] + seg[2], seg[2]]))
        tb = np.tile([0.0, 0.0, -1.0], (4, 1))
        fa, fb = _frames_square_to(ta, np.array([1.0, 0.0, 0.0])), _frames_square_to(tb, np.array([1.0, 0.0, 0.0]))
    shift = rng.uniform(-1, 1, 3)
    x = np.stack([xa, xb]) @ turn.T + shift
    mass = rng.uniform(0.7, 1.4, (2, 4)) * 1e-3
    return dict(x=x, r=np.stack([ra, rb]), r0=np.stack([ra, rb0]), frames=np.stack([fa, fb]) @ turn.T,
                tangent=np.stack([ta, tb]) @ turn.T, mass=mass, inv_mass=1.0 / mass, m_env=0.01 * mass,
                rd=np.zeros((2, 4, 4)), v=rng.normal(size=(2, 4, 3)) * 0.3)


def _turns():
    rng = np.random.default_rng(72)
    out = [np.eye(3)]
    for _ in range(2):
        q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        out.append(q * np.sign(np.linalg.det(q)))
    return out


@pytest.mark.parametrize("viscosity", [5.0, 40.0, 1e5])
@pytest.mark.parametrize("way", ["off the plane", "in the plane"])
@pytest.mark.parametrize("kind", ["crossing", "parallel"])
def test_one_contact_is_inelastic_or_interpenetrates(kind, way, viscosity):
    """At A's skeleton point inside B's segment (the only point inside anything: counts say so),
    relative velocity v_A − v_B(u) set 'off the plane' (mostly along the plane's normal, 77° off the
    plane) or 'in the plane' (12° off it). Off: inelastic, the relative velocity there ~0 after.
    In: interpenetration, its normal part ~0 after, its in-plane part (1 − min(viscosity · density
    · dt, 1)) of what it was — shrunk, never reversed, 0 once viscosity · density · dt ≥ 1.

    Tolerance: the kernel's roundings of the meet (``_meet_operations`` with the plane's
    conditioning: 1/sin 70° crossing, (|segment| + radius) / offset parallel), of the largest
    velocity, and the relative velocity read back from three rounded velocities (4 more)."""
    dt = 1 / 192
    for turn in _turns():
        c = _one_contact(kind, turn)
        x, v = c["x"], c["v"]
        sigma_p, sigma_s = c["tangent"][0, 2], _unit(x[1, 2] - x[1, 1])
        u = (x[0, 2] - x[1, 1]) @ (x[1, 2] - x[1, 1]) / np.sum((x[1, 2] - x[1, 1]) ** 2)
        offset = x[0, 2] - x[1, 1] - u * (x[1, 2] - x[1, 1])
        normal = _cross(sigma_p, sigma_s)
        if kind == "parallel":
            assert np.linalg.norm(normal) < PARALLEL
            normal, cond = _cross(sigma_s, offset), (0.4 + 0.05) / np.linalg.norm(offset)
        else:
            cond = 1 / np.linalg.norm(normal)
        n = _unit(normal)
        in_plane = _unit(_cross(n, sigma_s) + 0.7 * sigma_s)
        if way == "off the plane":
            rel = 1.2 * (n + 0.23 * in_plane)                         # 77° off the plane
        else:
            rel = 0.8 * (in_plane + 0.21 * n)                         # 12° off it
        v[0, 2] = (1 - u) * v[1, 1] + u * v[1, 2] + rel
        after, rd, counts = _interact(c, viscosity, dt)
        assert counts[0] == 1 and counts[1] == (way == "off the plane")
        assert not rd.any()
        rel_after = after[0, 2] - ((1 - u) * after[1, 1] + u * after[1, 2])
        tol = rounding(magnitude(v, after), _meet_operations(cond) + 4, eps=EPS64)
        if way == "off the plane":
            np.testing.assert_allclose(rel_after, 0.0, rtol=0, atol=tol)
            continue
        rest = 0.025 if kind == "crossing" else 0.04
        rad = 0.02 if kind == "crossing" else 0.05
        drag = min(viscosity * (rest / rad) ** 2 * dt, 1.0)
        normal_part = rel @ n
        plane_before = rel - normal_part * n
        assert abs(rel_after @ n) <= tol
        plane_after = rel_after - (rel_after @ n) * n
        np.testing.assert_allclose(plane_after, (1 - drag) * plane_before, rtol=0, atol=tol)
        assert plane_after @ plane_before >= -tol * np.linalg.norm(plane_before)        # never reversed
