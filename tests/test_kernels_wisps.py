"""The Wisps layer's kernels (hair_wig/kernels/wisps.py; seed 001, Plante, Cani, Poulin 2002;
SPEC §7 "001") against plain numpy references written here from their docstrings and the seed's
formulas, on random wisps — and the seed's physics with an answer: damping as a velocity
modification (§5.2) keeps momentum and never reverses a relative velocity however large ν·dt;
wisp–wisp interactions (§4.1–4.2, and the axes' test the layer adds for thin wisps) keep momentum
(skeleton plus the envelope's radial momentum), leave an inelastic contact at rest relative to what
it met — never pushed apart, however deep a skeleton point lies in the other — an interpenetrating
one with no relative velocity off the common plane and its in-plane part shrunk by
min(viscosity·density·dt, 1), parallel wisps always interpenetrating;
an envelope point only loses what carries it deeper into the other wisp. The penetration reaction
(§4.3.2) sets a pushed point at its segment's length on the surface's side of the tangent plane.
The angular springs, a position modification (§5.1), keep every segment's length, change no
velocity, leave a wisp bent as its goal where it is, and feed no kinetic energy into a shaken wisp.
The kernels over strands (gather, place) give the same bits on 1 and 2 threads; so do the wisps'
own, serial ones (frames, the substep), which a return to ``prange`` must keep.

Tolerances (tests/tolerance.py): everything here is float64, so each is
``rounding(magnitude, operations, eps=EPS64)``, the magnitude read from the data compared and the
operations counted beside each assertion: the roundings of one value in the kernel plus those of
the reference (they order their sums differently), carried on along a wisp root to tip as the
house counts a walk (n steps × the roundings of one), times the conditioning a step has (a
division by a short segment, a turn against the segment before, a circle's radius near zero, two
nearly parallel axes' closest points), read from the data. Comparisons the design makes exact (1 vs
2 threads, a wisp resting on its goal, the broadphase's sets, untouched values, wisps at rest, the
velocities the bend leaves) are exact."""

import math

import numpy as np
import pytest

from hair_wig.kernels.wisps import (ENVELOPE_MASS, PARALLEL, SIN_PLANE, wisp_carry, wisp_frames, wisp_gather,
                                    wisp_colours, wisp_interact, wisp_pairs, wisp_place, wisp_positions,
                                    wisp_velocities)
# the interactions' two contact rules, called alone where a test needs one without the other
from hair_wig.kernels.wisps import _cross as kernel_cross, _meet as kernel_meet
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
    """Gather and place run ``prange`` over wisps and strands, each iteration writing only its own;
    the frames are a serial loop (the wisps are few) — the same bits however many threads, and
    should it run ``prange`` again."""
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
    s = np.arange(num * k_seg)
    out = set()
    for a0 in range(0, len(s), 400):          # in rows of 400 segments: all at once is (M, M, 3)
        a = s[a0:a0 + 400]
        meet = np.all((lo[a, None] <= hi[None]) & (lo[None] <= hi[a, None]), axis=2)
        meet &= ~((a[:, None] // k_seg == s[None] // k_seg) & (np.abs(a[:, None] % k_seg - s[None] % k_seg) < 2))
        meet &= s[None] > a[:, None]
        i, j = np.nonzero(meet)
        out |= set(zip(a[i].tolist(), j.tolist()))
    return out


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
    assert (np.diff(pairs[:, 0]) >= 0).all() and (pairs[:, 0] < pairs[:, 1]).all()   # the lower segment's first
    assert np.array_equal(wisp_pairs(x, r, k_seg), pairs)


def test_a_wisp_gone_to_nan_or_flung_far_keeps_the_broadphase_finite():
    """A wisp whose points are NaN (a blown-up step) and one flung a thousand times the others'
    size: the grid stays a few cells a box (no box spans more than ``CELLS_PER_BOX`` + 1 cells an
    axis, however large), the call returns, and the pairs among the other wisps are the brute
    force's."""
    rng = np.random.default_rng(5)
    x, _ = _chains(rng, 30, 6, spread=0.5)
    r = rng.uniform(0.0, 0.05, (30, 6, 4))
    x[4] = np.nan
    x[7] *= 1e3
    pairs = wisp_pairs(x, r, 5)
    finite = {tuple(sorted(p)) for p in pairs.tolist() if p[0] // 5 not in (4, 7) and p[1] // 5 not in (4, 7)}
    keep = np.array([w not in (4, 7) for w in range(30)])
    want = {(a, b) for a, b in ref_pairs(x, r) if keep[a // 5] and keep[b // 5]}
    assert finite == want


def test_a_broadphase_whose_boxes_crowd_a_few_cells_counts_its_pairs_then_finds_them():
    """A wisp flung a thousand times the others' size makes the cells as large as its boxes over
    ``CELLS_PER_BOX``: the others crowd one or two cells, and room for every bucket entry of a
    segment's cells would grow with the square of the segments (``MAX_ROOM`` is passed here). The
    pairs are then counted and found: still the brute force's among the others, each once, the
    lower segment's first."""
    from hair_wig.kernels import wisps as kw

    rng = np.random.default_rng(9)
    x, _ = _chains(rng, 1100, 9, spread=0.5)
    r = rng.uniform(0.0, 0.05, (1100, 9, 4))
    x[7] *= 1e3
    box = np.empty((1100 * 8, 6))
    kw._segment_boxes(x, r, box)
    span, mask, start, _, _ = kw._grid(box)
    assert sum(kw._listed(a, span, mask, start) for a in range(len(box))) > kw.MAX_ROOM
    pairs = wisp_pairs(x, r, 8)
    assert (np.diff(pairs[:, 0]) >= 0).all() and (pairs[:, 0] < pairs[:, 1]).all()
    assert len({tuple(p) for p in pairs.tolist()}) == len(pairs)
    keep = np.array([w != 7 for w in range(1100)])
    finite = {tuple(p) for p in pairs.tolist() if keep[p[0] // 8] and keep[p[1] // 8]}
    want = {(a, b) for a, b in ref_pairs(x, r) if keep[a // 8] and keep[b // 8]}
    assert finite == want


# ---------------------------------------------------------------------------------------------
# wisp_carry
# ---------------------------------------------------------------------------------------------

def ref_carry(x, v, push):
    """Penetration reaction (seed 001 §4.3.2), from the docstring: root to tip, a skeleton point
    pushed out by ``push`` (its depth along the surface's outward normal n) is set at its
    segment's present length L from the point before it b, on the surface's side of the plane
    through s = point + push square to n, at the nearest such place to s: the sphere of radius L
    about b cut by that half-space. Its nearest point to s is the sphere's own nearest point
    b + L (s − b)/|s − b| when that lies on the surface's side; else, where the plane cuts the
    sphere (b at a height h over the plane, |h| < L: a circle about o = b − h n of radius
    √(L² − h²), s in its plane), the circle's point towards s. Where the sphere lies wholly under
    the plane (h ≤ −L) the docstring names no place: the reference keeps the sphere's nearest point
    (the kernel's rule before, and now). The rest of the wisp is translated as the point moved
    (lengths kept); its velocity loses its part going against n (into the surface).

    Also returns, per point (W, N), the roundings that reach it in units of eps·|x| (``carried``)
    and those of its own step (``own``), with the step's conditioning read here: a pushed point's
    own step rounds s, b, L and the product and adds (~9), plus its direction's error — UNIT + 2
    roundings of |x| over |s − b| (or UNIT + 4 over |s − o| on the circle, where n, h and o take
    1 + UNIT + DOT + 3 more), multiplied by the length L it is laid at — and on the circle the
    radius's: L² − h² off by ~6 L eps |x|, the root dividing that by 2 √(L² − h²). The step is
    translation-equivariant (b, x and s move together), so an error in the point before passes on
    unamplified: ``carried`` is the sum of the steps' ``own`` along the wisp plus the carrying adds
    (2 a point). ``kind`` names each pushed point's case ('sphere', 'circle', 'circle, b under',
    'no place')."""
    x, v = x.copy(), v.copy()
    own = np.zeros(x.shape[:2])
    carried = np.zeros(x.shape[:2])
    kind = np.full(x.shape[:2], "", dtype=object)
    for w in range(x.shape[0]):
        for i in range(1, x.shape[1]):
            carried[w, i] = carried[w, i - 1] + 2
            p = push[w, i]
            if not p.any():
                continue
            n = p / np.linalg.norm(p)
            b = x[w, i - 1]
            length = np.linalg.norm(x[w, i] - b)
            s = x[w, i] + p
            aim = s - b
            place = b + length * aim / np.linalg.norm(aim)
            own[w, i] = 9 + (UNIT + 2) * length / np.linalg.norm(aim)
            h = (b - s) @ n
            kind[w, i] = "sphere"
            if (place - s) @ n < 0:
                if abs(h) < length:
                    o = b - h * n
                    rad = math.sqrt(length * length - h * h)
                    place = o + rad * (s - o) / np.linalg.norm(s - o)
                    kind[w, i] = "circle" if h >= 0 else "circle, b under"
                    own[w, i] += (1 + UNIT + DOT + 3 + (UNIT + 4) * length / np.linalg.norm(s - o)
                                  + 3 * length / rad)
                else:
                    kind[w, i] = "no place"
            carried[w, i] += own[w, i]
            x[w, i:] += place - x[w, i]                                 # this point and all after it
            into = v[w, i] @ n
            if into < 0:
                v[w, i] -= into * n
    return x, v, carried, own, kind


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
    """Random pushes (every case of the reference drawn: the sphere's nearest point, the circle
    with the point before over the plane and under it, no place). Tolerance: ``ref_carry``'s
    carried roundings of |x| (its conditioning read per step), in the kernel and the reference. A
    velocity changes by its part into the push: DOT + UNIT + 2 of |v|."""
    x, v, push = _carry_case(41)
    ref_x, ref_v, carried, _, kind = ref_carry(x, v, push)
    assert {"sphere", "circle", "circle, b under", "no place"} <= set(kind.ravel())
    got_x, got_v = x.copy(), v.copy()
    wisp_carry(got_x, got_v, push)
    tol = rounding(magnitude(x, push, ref_x) * carried, 2, eps=EPS64)[..., None]
    off = np.abs(got_x - ref_x)
    bad = np.argwhere((off > tol).any(axis=2))
    assert not len(bad), (
        f"{len(bad)} points off the docstring's place, first at wisp, point {tuple(bad[0])}: got "
        f"{got_x[tuple(bad[0])]}, want {ref_x[tuple(bad[0])]}; the first pushed point of each such wisp "
        f"off it is of kind {sorted({kind[w, i] for w, i in _first_off(off > tol, push)})}")
    np.testing.assert_allclose(got_v, ref_v, rtol=0, atol=rounding(magnitude(v), 2 * (DOT + UNIT + 2), eps=EPS64))


def _first_off(off, push):
    """(w, i) of each wisp's first pushed point from which on its points are off."""
    out = []
    for w in range(off.shape[0]):
        bad = np.flatnonzero(off[w].any(axis=-1) if off.ndim == 3 else off[w])
        if len(bad):
            pushed = np.flatnonzero(push[w, : bad[0] + 1].any(axis=1))
            out.append((w, int(pushed[-1])))
    return out


def test_carry_keeps_lengths_and_leaves_what_is_not_pushed():
    """Lengths kept: a segment's length is its far point's own step's (``ref_carry``'s ``own``,
    in the kernel alone; its ends' carried errors are one translation) and the carrying adds, 2 of
    each end. The root and every point before a wisp's first push exactly where they were;
    velocities of points not pushed exactly as they were; a pushed point's velocity no longer goes
    against its push (to DOT + UNIT + 2 roundings of |v|), and went so only if it did before."""
    x, v, push = _carry_case(42)
    got_x, got_v = x.copy(), v.copy()
    wisp_carry(got_x, got_v, push)
    _, _, _, own, _ = ref_carry(x, v, push)
    length = np.linalg.norm(np.diff(x, axis=1), axis=2)
    np.testing.assert_array_less(np.abs(np.linalg.norm(np.diff(got_x, axis=1), axis=2) - length),
                                 rounding(magnitude(x, push, got_x) * (own[:, 1:] + 4 + UNIT), 1, eps=EPS64))
    pushed = push.any(axis=2)
    before_first = np.cumsum(pushed, axis=1) == 0
    assert np.array_equal(got_x[before_first], x[before_first])
    assert np.array_equal(got_v[~pushed], v[~pushed])
    n_hat = _unit(push[pushed])
    into_after = _dot(got_v[pushed], n_hat)
    assert (into_after >= -rounding(magnitude(v), DOT + UNIT + 2, eps=EPS64)).all()
    kept = _dot(v[pushed], n_hat) >= 0
    assert np.array_equal(got_v[pushed][kept], v[pushed][kept])


def _pushed_segments(where, seed=43, num=200):
    """``num`` two-point wisps (root held, point 1 pushed out of a surface), and the surface's
    outward normal n at the pushed place s = point + push. 'over a floor': a random plane, the root
    0.005–0.1 over it, the point 0.001–0.03 under it, segments 0.02–0.12 long; the sphere of the
    segment's length about the root cut by the floor (the root is over it), the sphere's own
    nearest point to s on either side of it. 'root on a round head': a head of radius 0.1, each
    root on it and the point 0.1–0.6 rad about the centre from it, sunk 0.5–8 mm into the head,
    pushed out along the head's normal to its surface: the root lies under the tangent plane at s
    (a convex head lies under each tangent plane), within the segment's length of it."""
    rng = np.random.default_rng(seed)
    if where == "over a floor":
        n = _unit(rng.normal(size=(num, 3)))
        origin = rng.uniform(-1, 1, (num, 3))
        side = _unit(_cross(n, rng.normal(size=(num, 3))))
        root = origin + rng.uniform(0.005, 0.1, (num, 1)) * n
        depth = rng.uniform(0.001, 0.03, (num, 1))
        length = rng.uniform(0.02, 0.12, (num, 1))
        below = _dot(root - origin, n)[:, None] + depth                  # how far the point lies under the root
        reach = np.sqrt(np.maximum(length ** 2 - below ** 2, 0.0))
        ok = (length > below)[:, 0]
        point = root - below * n + reach * side
        root, point, n, depth = root[ok], point[ok], n[ok], depth[ok]
        push = depth * n
    else:
        radius = 0.1
        up = _unit(rng.normal(size=(num, 3)))
        root = radius * up
        toward = _unit(_cross(up, rng.normal(size=(num, 3))))
        angle = rng.uniform(0.1, 0.6, (num, 1))              # the point's angle about the centre from the root
        depth = rng.uniform(0.0005, 0.008, (num, 1))
        n = np.cos(angle) * up + np.sin(angle) * toward
        point = (radius - depth) * n
        push = depth * n
        assert (_dot(root - radius * n, n) < 0).all()             # the root under the tangent plane at s
    x = np.stack([root, point], axis=1)
    pushes = np.zeros_like(x)
    pushes[:, 1] = push
    return x, pushes, n


@pytest.mark.parametrize("where", ["over a floor", "root on a round head"])
def test_a_pushed_point_is_the_nearest_place_on_the_surfaces_side(where):
    """Whatever the formula, what the docstring asks of the place of a pushed point (§4.3.2, the
    seed's 'at the current length of the spring from the point before'): at its segment's length
    from the point before, on the surface's side of the tangent plane through where the push takes
    it, and no farther from there than any such place — 400 random ones on the sphere's part over
    the plane and 3600 on the circle it is cut along, every one of them feasible, so the nearest
    can only be nearer. Tolerance: ``ref_carry``'s ``own`` roundings of |x| (its conditioning),
    kernel alone, for the length and the side; the same plus the sampled places' own 2 · (UNIT + 4)
    for the nearness. On a round head the point before (the root, on the head) lies under the
    tangent plane at the pushed place whenever the point sank in: there the sphere's own nearest
    point to s dips under the plane (the chord from the root to s runs inside the head), and only
    the circle is on the surface's side."""
    x, push, n = _pushed_segments(where)
    got, v = x.copy(), np.zeros_like(x)
    wisp_carry(got, v, push)
    _, _, _, own, kind = ref_carry(x, np.zeros_like(x), push)
    tol = rounding(magnitude(x, push, got) * own[:, 1], 1, eps=EPS64)
    b, s = x[:, 0], x[:, 1] + push[:, 1]
    length = np.linalg.norm(x[:, 1] - b, axis=1)
    placed = got[:, 1]
    np.testing.assert_array_less(np.abs(np.linalg.norm(placed - b, axis=1) - length), tol + 1e-300)
    height = _dot(placed - s, n)
    under = np.flatnonzero(height < -tol)
    radius = 0.1
    assert not len(under), (
        f"{len(under)} of {len(x)} pushed points left under the tangent plane ({sorted(set(kind[under, 1]))}), "
        f"worst {-height.min():.3g} under it"
        + (f", {radius - np.linalg.norm(placed[under], axis=1).min():.3g} inside the head" if where != "over a floor"
           else "")
        + f"; e.g. root {b[under[0]].tolist()}, point {x[under[0], 1].tolist()}, push {push[under[0], 1].tolist()}:"
          f" got {placed[under[0]].tolist()}")
    # feasible places: random points of the sphere over the plane, and its circle on the plane
    rng = np.random.default_rng(44)
    best = np.full(len(x), np.inf)
    for i in range(len(x)):
        cand = b[i] + length[i] * _unit(rng.normal(size=(400, 3)))
        cand = cand[_dot(cand - s[i], n[i]) >= 0]
        h = (b[i] - s[i]) @ n[i]
        if abs(h) < length[i]:
            e1 = _unit(np.cross(n[i], rng.normal(size=3)))
            e2 = np.cross(n[i], e1)
            phi = np.linspace(0, 2 * np.pi, 3600, endpoint=False)[:, None]
            circle = b[i] - h * n[i] + math.sqrt(length[i] ** 2 - h * h) * (np.cos(phi) * e1 + np.sin(phi) * e2)
            cand = np.concatenate([cand, circle])
        if len(cand):
            best[i] = np.linalg.norm(cand - s[i], axis=1).min()
    dist = np.linalg.norm(placed - s, axis=1)
    far = np.flatnonzero(dist > best + tol + rounding(magnitude(x), 2 * (UNIT + 4), eps=EPS64))
    assert not len(far), f"{len(far)} pushed points farther from the surface than a place on its side"


# ---------------------------------------------------------------------------------------------
# wisp_velocities, wisp_positions: one substep
# ---------------------------------------------------------------------------------------------

def _half_lines(frames):
    """(W, N, 4, 3) the envelope's unit half-lines +e₁, +e₂, −e₁, −e₂."""
    return np.stack([frames[:, :, 0], frames[:, :, 1], -frames[:, :, 0], -frames[:, :, 1]], axis=2)


def ref_velocities(x, v, r, rd, frames, target, v_goal, ext, base, mass, inv_mass, rest_len, r0, h,
                   k_stretch, nu_stretch, nu_bend, keep, toward, k_env, nu_env):
    """Items 1 and 3 of seed 001 §5.1 for one substep ``h``, from the kernel's docstring: returns
    the new ``v``, ``rd`` and the velocities before (``v_old``).

    Forces per unit of a skeleton point's mass: gravity with the style's hold ``base`` and the
    fields ``ext``; the envelope's springs (each radius to its rest, ``k_env (r0 − r)``, and each
    link to the two neighbouring half-lines, ``−k_env (L − L0) ∂L/∂r``, L = √(r_q² + r_nb²) for
    square half-lines), their reaction on the skeleton each its envelope point's share of the
    cross-section's mass (the skeleton point's ``mass`` holds it and its four envelope points, each
    ENVELOPE_MASS of the skeleton's own: a share m_env / M = ENVELOPE_MASS / (1 + 4 ENVELOPE_MASS)); along
    each segment the linear spring ``k μ (L − r)`` (μ = 2 m₁m₂/(m₁ + m₂), so ``k`` is per reduced
    mass), equal and opposite on the two ends (the angular springs' elastic part is no force
    here: ``wisp_positions`` turns the segments). Held points (inverse mass 0) take the goal's
    velocity. Then damping as velocity modifications (§5.2), root to tip: along
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
    share = ENVELOPE_MASS / (1.0 + 4.0 * ENVELOPE_MASS)
    acc = base + ext - share * np.einsum("wnq,wnqd->wnd", env, axes)
    d = np.diff(x, axis=1)
    length = np.linalg.norm(d, axis=2)[..., None]
    u = d / length
    m0, m1 = mass[:, :-1, None], mass[:, 1:, None]
    mu = 2.0 * m0 * m1 / (m0 + m1)
    pull = k_stretch * mu * (length - rest_len[..., None]) * u
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


def ref_bend_target(x, target, k, length):
    """(W, 3) where point k + 1 would lie were segment k bent from the one before it as the goal's
    is (``_bend_target``'s docstring): the goal's segment k's direction, turned by the least
    rotation taking the goal's segment k − 1 onto the wisp's (the first segment's 'before' is the
    goal's own: no turn), laid from x_k at ``length`` (W,)."""
    goal = _unit(target[:, k + 1] - target[:, k])
    if k > 0:
        goal = _least_rotation(_unit(target[:, k] - target[:, k - 1]), _unit(x[:, k] - x[:, k - 1]), goal)
    return x[:, k] + length[:, None] * goal


def ref_bend(x, target, inv_mass, bend):
    """The angular springs as a position modification (``wisp_positions``' docstring), root to tip:
    each free point k + 1's segment turned ``bend`` of the way towards ``ref_bend_target`` at its
    present length L — new direction unit(seg + bend (T − x_{k+1})), the point set at L along it
    from x_k — and every point after it moved as it did; held points left (but moved with the
    points before them). Returns the new x and, per segment (W, K), |seg + bend (T − x_{k+1})| / L
    (how far from folding the blend of the two directions is: its conditioning)."""
    x = x.copy()
    blend = np.ones(x.shape[:2])[:, 1:]
    for k in range(x.shape[1] - 1):
        seg = x[:, k + 1] - x[:, k]
        length = np.linalg.norm(seg, axis=1)
        aim = seg + bend * (ref_bend_target(x, target, k, length) - x[:, k + 1])
        size = np.linalg.norm(aim, axis=1)
        blend[:, k] = size / np.maximum(length, 1e-300)
        free = (inv_mass[:, k + 1] > 0) & (size > 0)
        place = x[:, k] + length[:, None] * _unit(aim)
        move = np.where(free[:, None], place - x[:, k + 1], 0.0)
        x[:, k + 1:] += move[:, None, :]
    return x, blend


def ref_positions(x, v, r, rd, target, inv_mass, rest_len, h, kh2, bend, max_stretch):
    """Item 4 of seed 001 §5.1, from the kernel's docstring: each free point moves with the goal's
    spring taken implicitly, ``x' = (x + v h + k h² target) / (1 + k h²)``, its velocity what it
    moved over h; held points go to their target. Then the angular springs (``ref_bend``, if
    ``bend`` > 0: positions only). Then, root to tip, a segment longer or shorter than
    ``max_stretch`` of its rest length is set on the limit by moving its far point along it, the
    rest of the wisp translated with it, and its far point's speed of stretching (shrinking)
    further taken off. Each envelope radius moves by its speed."""
    x, v, r = x.copy(), v.copy(), r + h * rd
    free = inv_mass > 0
    c = kh2[..., None]
    moved = (x + h * v + c * target) / (1.0 + c)
    v = np.where(free[..., None], (moved - x) / h, v)
    x = np.where(free[..., None], moved, target)
    if bend > 0:
        x, _ = ref_bend(x, target, inv_mass, bend)
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
    # the layer's defaults: 8 substeps at 24 fps, Stretch 4000 / 40, Bend 1000 / 20, Volume 1000 / 100,
    # Hold 150, Settle 10, Air Drag 0.5, Max Stretch 0.05
    "defaults": dict(h=1 / 192, k_stretch=4000.0, nu_stretch=40.0, k_bend=1000.0, nu_bend=20.0, k_env=1000.0,
                     nu_env=100.0, hold=150.0, settle=10.0, drag=0.5, max_stretch=0.05),
    # one step a frame, stiff, damping far past 1 / h (every share clamped to 1), the bend's share 0.9
    "stiff, overdamped": dict(h=1 / 24, k_stretch=2e4, nu_stretch=1e4, k_bend=5184.0, nu_bend=500.0, k_env=400.0,
                              nu_env=1e4, hold=500.0, settle=50.0, drag=5.0, max_stretch=0.02),
}


def _dynamics_case(seed, params, num=20, n=9):
    """Random wisps near their goal, moving: the layer's arrays (root held, masses from lengths),
    segments drawn 15 % off their rest so the stretch limit acts."""
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
        h=h, k_stretch=p["k_stretch"], nu_stretch=p["nu_stretch"], nu_bend=p["nu_bend"],
        bend=p["k_bend"] * h * h / (1 + p["k_bend"] * h * h),            # the layer's share b h² / (1 + b h²)
        kh2=np.broadcast_to(p["hold"] * (1 - 0.75 * t) * h * h, (num, n)).copy(),
        keep=math.exp(-rate * h), toward=p["settle"] / rate, k_env=p["k_env"], nu_env=p["nu_env"],
        max_stretch=p["max_stretch"])


def _kernel_velocities(c):
    v, rd, v_old = c["v"].copy(), c["rd"].copy(), np.empty_like(c["v"])
    wisp_velocities(c["x"], v, c["r"], rd, c["frames"], c["target"], c["v_goal"], c["ext"], c["base"], c["mass"],
                    c["inv_mass"], c["rest_len"], c["r0"], c["h"], c["k_stretch"], c["nu_stretch"], c["nu_bend"],
                    c["keep"], c["toward"], c["k_env"], c["nu_env"], v_old)
    return v, rd, v_old


def _kernel_positions(c, v=None, rd=None):
    x, v, r = c["x"].copy(), (c["v"] if v is None else v).copy(), c["r"].copy()
    rd = c["rd"] if rd is None else rd
    wisp_positions(x, v, r, rd, c["target"], c["inv_mass"], c["rest_len"], c["h"], c["kh2"], c["bend"],
                   c["max_stretch"])
    return x, v, r


def _ref_velocities(c):
    keys = ("x", "v", "r", "rd", "frames", "target", "v_goal", "ext", "base", "mass", "inv_mass", "rest_len", "r0",
            "h", "k_stretch", "nu_stretch", "nu_bend", "keep", "toward", "k_env", "nu_env")
    return ref_velocities(*(c[k] for k in keys))


def _ref_positions(c, v=None, rd=None):
    return ref_positions(c["x"], c["v"] if v is None else v, c["r"], c["rd"] if rd is None else rd, c["target"],
                         c["inv_mass"], c["rest_len"], c["h"], c["kh2"], c["bend"], c["max_stretch"])


# Roundings of one point's acceleration, in units of the largest force term A (below): the envelope's
# springs (r0 − r and its product 2; each of two links: 2 squares, a sum and a root for L and again
# for L0, L − L0, 3 products, the subtraction: 12 each) and their reaction (4 half-lines of a
# product, a sign and an add: 12): 38; a segment's stretch (L: UNIT; L − r, μ: 4, the product 2, along
# u: 1 + UNIT, over m and the add: 2): 20. A point takes two segments' stretch, base + ext 2.
ACC = 38 + 2 * 20 + 2
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

    A, the largest force term per unit mass: |base| + |ext|, the envelope's reaction 4 s E (s its
    share, ENVELOPE_MASS / (1 + 4 ENVELOPE_MASS); four half-lines) with
    E = k_env R (2 + 4√2) (its spring and two links, R the largest radius), a stretch spring
    k μ/m (L + r) ≤ 2 k (2 L_max);
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
    loads = np.linalg.norm(c["base"]) + magnitude(np.linalg.norm(c["ext"], axis=2))
    env = c["k_env"] * magnitude(c["r"], c["r0"]) * (2 + 4 * math.sqrt(2))
    force = loads + 4 * ENVELOPE_MASS / (1 + 4 * ENVELOPE_MASS) * env + 2 * c["k_stretch"] * 2 * length.max()
    v1 = magnitude(c["v"], c["v_goal"]) + h * force
    k = x.shape[1] - 1
    tol_v = gain * (rounding(h * force, 2 * ACC, eps=EPS64)
                    + rounding(v1, 2 * (2 + k * (DAMP_ALONG + _damp_across(rho.max())) + 3), eps=EPS64))
    rd_size = magnitude(c["rd"]) + h * (loads + env) + 2 * v1
    tol_rd = 2 * tol_v + rounding(h * (loads + 2 * v1 / h), 2 * (DOT + 4), eps=EPS64) \
        + rounding(h * env, 2 * 24, eps=EPS64) + rounding(rd_size, 2 * 4, eps=EPS64)
    return tol_v, tol_rd


def _bend_own(bend, rho, blend):
    """Roundings (of the coordinates' size, eps) of one segment's bend step, kernel or reference:
    the carry's add and the segment's difference (2), its length (UNIT); the target — the goal's
    two unit directions and the turn (2 UNIT + TURN) laid at L ≤ |x|, the wisp's segment before's
    direction (UNIT + 1 of |x| over L_{k−1}, turned with a gain ≤ 2 for turns under 90°, laid at
    L_k: 2 (UNIT + 1) ρ), x_k + L ĝ, T − x_{k+1} and the share (4) — taken ``bend`` of, the sum with
    the segment (1), all divided by ``blend`` = |seg + bend (T − x)| / L in the new direction (UNIT),
    which is laid at L from x_k and added (L n̂, + x_k, − x_{k+1}, the add, the carry: 5)."""
    return (3 + UNIT + bend * (2 * UNIT + TURN + 2 * (UNIT + 1) * rho + 4)) / blend + UNIT + 5


def _bend_errors(x, target, inv_mass, bend, seg_in, big, sides=2):
    """(W, K) the most each segment vector can be off after the bend pass on ``x`` whose segments
    are known to ``seg_in``, coordinates (with the carried moves) up to ``big``: the recurrence
    ``_position_tolerances`` derives, s'_k = (1 + 1 / blend) seg_in + ``sides`` × the own roundings
    (``_bend_own``) + 2 bend ρ / blend s'_{k−1}; bend 0: the segments as they came."""
    lengths = np.linalg.norm(np.diff(x, axis=1), axis=2)
    seg = np.empty(lengths.shape)
    if bend <= 0:
        seg[:] = seg_in
        return seg
    _, blend = ref_bend(x, target, inv_mass, bend)
    prev = np.zeros(len(x))
    for j in range(lengths.shape[1]):
        rho = lengths[:, j] / lengths[:, j - 1] if j > 0 else np.zeros(len(x))
        prev = ((1 + 1 / blend[:, j]) * seg_in + rounding(big * _bend_own(bend, rho, blend[:, j]), sides, eps=EPS64)
                + 2 * bend * rho / blend[:, j] * prev)
        seg[:, j] = prev
    return seg


def _position_tolerances(c, v, rd, tol_v_in=0.0, tol_rd_in=0.0):
    """(tol_x, tol_v, tol_r) of the positions pass on velocities ``v`` known to ``tol_v_in``.

    The implicit goal step ``(x + h v + c T) / (1 + c)``: 6 roundings of X + h V (the sums are up to
    (1 + c) times that, then divided by 1 + c), plus h tol_v_in, a point; its velocity, the move
    over h: those over h, 2 more of V, plus tol_v_in.

    The two root-to-tip passes after it are counted per segment vector s_k = x_{k+1} − x_k (a point's
    error is the root's, exact for a held root, plus its segments' — the passes translate the rest
    of the wisp, which adds no error to a segment but the add's own rounding):
    the bend sets s'_k = L_k unit(s_k + bend (T_k − x_{k+1})), T_k depending on s_k's length and on
    the new s'_{k−1}'s direction; an error δ in s_k moves L by δ and the unit direction by
    (1 − bend + bend) δ / |m| (|m| = blend L), so s'_k by (1 + 1 / blend) δ; an error δ' in
    s'_{k−1} turns its direction by δ' / L_{k−1}, the goal's direction turned onto it by ≤ 2 that
    (turns under 90°), s'_k by 2 bend ρ / blend δ' (ρ = L_k / L_{k−1}) — the only way an error
    grows along the wisp, read from the data (``ref_bend``'s blend on the reference's step) —
    plus its own ``_bend_own`` roundings, of X grown by the carried moves (≤ 2 × the wisp's length).
    The stretch limit sets a limited s_k to its limit along it: the direction's error times
    to / L ≤ max(1, lo / L_min) and 13 roundings of X (the difference, its length and direction
    UNIT + 1, the limits 2, to − L 1, the move 1, the add 1, the carry 1; a direction's error times
    |to − L| stays below them). Kernel and reference: ×2 on each own rounding.

    Velocities: the stretch limit's velocity fix (DOT + UNIT + 3 of 2 V, and the direction's error
    2 tol_x / L_min times 2 V). A velocity fix may pass an error on to the next segment's
    (δ'_{k+1} = P⊥ δ_{k+1} + (δ_k·u) u, of norm ≤ √2 max(δ)): ×√2 a segment; the bend changes no
    velocity. Radii: r + h rd, 2 roundings of R + h |rd|, and h tol_rd_in."""
    x, h, target, bend = c["x"], c["h"], c["target"], c["bend"]
    k = x.shape[1] - 1
    big_x = magnitude(x, target)
    big_v = magnitude(v)
    size = big_x + h * big_v
    free = (c["inv_mass"] > 0)[..., None]
    kh2 = c["kh2"][..., None]
    moved = np.where(free, (x + h * v + kh2 * target) / (1.0 + kh2), target)
    lengths = np.linalg.norm(np.diff(moved, axis=1), axis=2)
    step = rounding(size, 2 * 6, eps=EPS64) + h * tol_v_in               # a point after the implicit step
    big = size + 2 * lengths.sum(axis=1).max()
    seg = _bend_errors(moved, target, c["inv_mass"], bend, 2 * step, big)
    limit = max(1.0, ((1 - c["max_stretch"]) * c["rest_len"] / lengths).max())
    seg = limit * seg + rounding(big, 2 * 13, eps=EPS64)
    tol_x = step + seg.sum(axis=1).max()
    length = lengths.min() * (1 - c["max_stretch"])
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
    """The substep's kernels are serial loops over the wisps (a parallel launch cost more than
    their work): the same bits on any thread count, by construction — and by this test, should
    they run ``prange`` again."""
    runs = []
    for threads in (1, 2):
        with numba_threads(threads):
            c = _dynamics_case(54, PARAMS["defaults"], num=200)
            x, v, r, rd = c["x"].copy(), c["v"].copy(), c["r"].copy(), c["rd"].copy()
            v_old = np.empty_like(v)
            for _ in range(4):
                wisp_velocities(x, v, r, rd, c["frames"], c["target"], c["v_goal"], c["ext"], c["base"], c["mass"],
                                c["inv_mass"], c["rest_len"], c["r0"], c["h"], c["k_stretch"], c["nu_stretch"],
                                c["nu_bend"], c["keep"], c["toward"], c["k_env"], c["nu_env"], v_old)
                wisp_positions(x, v, r, rd, c["target"], c["inv_mass"], c["rest_len"], c["h"], c["kh2"],
                               c["bend"], c["max_stretch"])
            runs.append((x, v, r, rd, v_old))
    assert all(np.array_equal(a, b) for a, b in zip(*runs))


# ---------------------------------------------------------------------------------------------
# The angular springs as a position modification (wisp_positions' bend pass)
# ---------------------------------------------------------------------------------------------

LOOSE = 1e3      # a max_stretch no segment reaches: the stretch limit never acts


def _positions(x, v, r, rd, target, inv_mass, rest_len, h, kh2, bend, max_stretch=LOOSE):
    x, v, r = x.copy(), v.copy(), r.copy()
    wisp_positions(x, v, r, rd, target, inv_mass, rest_len, h, kh2, bend, max_stretch)
    return x, v, r


BENDS = {"defaults": PARAMS["defaults"], "stiff": PARAMS["stiff, overdamped"]}


@pytest.mark.parametrize("params", BENDS, ids=str)
def test_the_bend_keeps_lengths_and_changes_no_velocity(params):
    """The same positions pass with and without the bend (the stretch limit off, so nothing after
    the bend reads its positions): every velocity and radius the same bits — the bend moves
    positions only — the held roots exactly on their targets, and every segment as long as the
    implicit step left it (its direction turned: the wisp did move, by far more than the
    tolerance). Tolerance of a length: the bend's own roundings of that segment, kernel alone
    (``_bend_own``, its conditioning read from the data), the carry's adds to its two ends (2),
    the incoming segment's difference (1) and the two lengths' norms here (2 UNIT), of the
    coordinates with the carried moves (``_position_tolerances``' X)."""
    c = _dynamics_case(55, BENDS[params])
    args = (c["rd"], c["target"], c["inv_mass"], c["rest_len"], c["h"], c["kh2"])
    x0, v0, r0 = _positions(c["x"], c["v"], c["r"], *args, 0.0)
    x1, v1, r1 = _positions(c["x"], c["v"], c["r"], *args, c["bend"])
    assert np.array_equal(v1, v0) and np.array_equal(r1, r0)
    held = c["inv_mass"] == 0
    assert np.array_equal(x1[held], c["target"][held])
    len0 = np.linalg.norm(np.diff(x0, axis=1), axis=2)
    len1 = np.linalg.norm(np.diff(x1, axis=1), axis=2)
    _, blend = ref_bend(x0, c["target"], c["inv_mass"], c["bend"])
    rho = np.concatenate([np.zeros((len(x0), 1)), len0[:, 1:] / len0[:, :-1]], axis=1)
    big = magnitude(x0, x1) + 2 * len0.sum(axis=1).max()
    tol = rounding(big * (_bend_own(c["bend"], rho, blend) + 2 + 1 + 2 * UNIT), 1, eps=EPS64)
    assert (np.abs(len1 - len0) <= tol).all()
    assert np.abs(x1 - x0).max() > 1e6 * tol.max()                  # the bend did turn the segments


def test_a_full_bend_lays_each_segment_along_the_goals_bend():
    """``bend`` = 1 (an infinitely stiff angular spring): each free segment turned all the way onto
    ``_bend_target`` — the goal's segment k turned by the least rotation from the goal's segment
    k − 1 onto the wisp's (as the pass left it), the first along the goal's own — at its length.
    Checked on the result: each segment's direction against the reference's target direction from
    the same points. Tolerance of a direction: the kernel's own roundings of the step
    (``_bend_own(1, ρ, 1)``) and the reference's target on the result (3 UNIT + TURN and the wisp's
    segment before's direction, (UNIT + 1) ρ), of |x| over the segment's length L."""
    c = _dynamics_case(56, PARAMS["defaults"])
    x, _, _ = _positions(c["x"], c["v"], c["r"], c["rd"], c["target"], c["inv_mass"], c["rest_len"], c["h"], c["kh2"],
                         1.0)
    length = np.linalg.norm(np.diff(x, axis=1), axis=2)
    rho = np.concatenate([np.zeros((len(x), 1)), length[:, 1:] / length[:, :-1]], axis=1)
    big = magnitude(x, c["target"]) + 2 * length.sum(axis=1).max()
    for k in range(x.shape[1] - 1):
        want = _unit(ref_bend_target(x, c["target"], k, length[:, k]) - x[:, k])
        got = _unit(x[:, k + 1] - x[:, k])
        tol = rounding(big / length[:, k] * (_bend_own(1.0, rho[:, k], 1.0) + 3 * UNIT + TURN + (UNIT + 1) * rho[:, k]
                                             + UNIT), 1, eps=EPS64)
        assert (np.linalg.norm(got - want, axis=1) <= tol).all(), k


@pytest.mark.parametrize("params", BENDS, ids=str)
def test_the_bend_leaves_a_wisp_bent_as_its_goal_where_it_is(params):
    """A wisp resting on its goal (x = target, no velocity, each segment at its rest length): the
    implicit step keeps it (to its 6 roundings a point), and the bend finds each segment already
    bent as the goal's — its target is where its far point is — and moves nothing but rounding.
    Tolerance: ``_bend_errors`` (the bend pass's recurrence, kernel alone) on segments known to two
    points' implicit-step roundings, summed root to tip, and the implicit step's own."""
    c = _dynamics_case(57, BENDS[params])
    target = c["target"]
    rest = np.linalg.norm(np.diff(target, axis=1), axis=2)
    zero = np.zeros_like(target)
    x, v, _ = _positions(target, zero, c["r"], c["rd"], target, c["inv_mass"], rest, c["h"], c["kh2"], c["bend"])
    step = rounding(magnitude(target), 6, eps=EPS64)
    big = magnitude(target) + 2 * rest.sum(axis=1).max()
    seg = _bend_errors(target, target, c["inv_mass"], c["bend"], 2 * step, big, sides=1)
    tol = step + np.cumsum(seg, axis=1)
    off = np.linalg.norm(x - target, axis=2)
    assert (off[:, 0] == 0).all()
    assert (off[:, 1:] <= tol).all()
    assert np.abs(v).max() <= 2 * step / c["h"]                   # the implicit step's move over h


def test_a_released_wisp_gains_no_kinetic_energy_from_the_bend():
    """Wisps shaken on their goal (it swings side to side, Hold and every spring on, a dozen
    substeps) and then released: no goal, no load, no spring, no damping — only the bend acting
    (share 0.5, far stiffer than the layer's default) and nothing else that could change a speed
    (the stretch limit off: its velocity fix may hand one point another's speed); the held roots
    stop with the goal. For 120
    substeps the kinetic energy Σ m v² never grows: the bend moves positions only. (As a force
    towards a target the segment before sets, it fed a shaken wisp energy.) Tolerance a substep:
    with every force 0 the velocities pass leaves v exactly; the implicit step's velocity is its
    move over h, 3 roundings of |x| + h |v| over h and 1 of |v| a coordinate (δ), so Σ m v² moves
    by at most Σ m (2 √3 |v| δ + 3 δ²)."""
    p = dict(PARAMS["defaults"])
    c = _dynamics_case(58, p)
    x, v, r, rd = c["x"].copy(), np.zeros_like(c["x"]), c["r"].copy(), np.zeros_like(c["rd"])
    h, v_old = c["h"], np.empty_like(x)
    side = _unit(np.cross(c["target"][:, -1] - c["target"][:, 0], [0.0, 0.0, 1.0]))[:, None, :]
    goal = c["target"]
    for i in range(12):                                                # shaken
        new = c["target"] + 0.05 * math.sin(2 * math.pi * (i + 1) / 12) * side
        v_goal = (new - goal) / h
        goal = new
        wisp_velocities(x, v, r, rd, c["frames"], goal, v_goal, c["ext"], c["base"], c["mass"], c["inv_mass"],
                        c["rest_len"], c["r0"], h, c["k_stretch"], c["nu_stretch"], c["nu_bend"], c["keep"],
                        c["toward"], c["k_env"], c["nu_env"], v_old)
        wisp_positions(x, v, r, rd, goal, c["inv_mass"], c["rest_len"], h, c["kh2"], c["bend"], c["max_stretch"])
    mass = c["mass"]
    energy = np.einsum("wn,wnd,wnd->", mass, v, v)
    assert energy > 1e-6                                               # it moves
    free_kh2, still = np.zeros_like(c["kh2"]), np.zeros_like(v)
    for _ in range(120):                                               # released
        wisp_velocities(x, v, r, rd, c["frames"], goal, still, still, np.zeros(3), mass, c["inv_mass"],
                        c["rest_len"], c["r0"], h, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, v_old)
        free = c["inv_mass"] > 0
        assert np.array_equal(v[free], v_old[free]) and not v[~free].any()      # the held roots stopped with the goal
        before = v.copy()
        wisp_positions(x, v, r, rd, goal, c["inv_mass"], c["rest_len"], h, free_kh2, 0.5, LOOSE)
        delta = (rounding(magnitude(x) + h * magnitude(before), 3, eps=EPS64) / h
                 + rounding(magnitude(before), 1, eps=EPS64))
        speed = np.linalg.norm(before, axis=2)
        tol = float(np.sum(mass * (2 * math.sqrt(3) * speed * delta + 3 * delta * delta)))
        now = np.einsum("wn,wnd,wnd->", mass, v, v)
        assert now <= energy + tol
        energy = now


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
                    nu_bend, 1.0, 0.0, 0.0, 0.0, np.empty_like(v))
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

ENV_SHARE = ENVELOPE_MASS / (1 + 4 * ENVELOPE_MASS)     # the layer's m_env / mass (hair_wig/wisps.py)


def ref_closest(a0, a1, b0, b1):
    """The closest points of segments a0a1 and b0b1, found by trying every place the minimum of
    their (convex) squared distance over the square of parameters can lie: the interior stationary
    point (the 2 × 2 normal equations, where the axes are not parallel and it lies in the square)
    and the best point of each edge (one parameter 0 or 1, the other the clamped projection).
    Returns s, t, the offset a(s) − b(t) and the conditioning of (s, t), the Gram matrix's
    aa·ee / det = 1 / sin² of the angle between the axes."""
    d1, d2, r = a1 - a0, b1 - b0, a0 - b0
    aa, ee, bb = d1 @ d1, d2 @ d2, d1 @ d2
    det = aa * ee - bb * bb
    cand = []
    if det > 0:
        try:
            s, t = np.linalg.solve(np.array([[aa, -bb], [-bb, ee]]), np.array([-(d1 @ r), d2 @ r]))
        except np.linalg.LinAlgError:                   # parallel to rounding: the edges hold a minimum
            s = t = -1.0
        if 0 <= s <= 1 and 0 <= t <= 1:
            cand.append((s, t))
    for s in (0.0, 1.0):
        cand.append((s, min(max((a0 + s * d1 - b0) @ d2 / ee, 0.0), 1.0)))
    for t in (0.0, 1.0):
        cand.append((min(max((b0 + t * d2 - a0) @ d1 / aa, 0.0), 1.0), t))
    s, t = min(cand, key=lambda st: np.linalg.norm(a0 + st[0] * d1 - b0 - st[1] * d2))
    return s, t, a0 + s * d1 - b0 - t * d2, aa * ee / max(det, 1e-300)


# Roundings (in units of the largest velocity S) of one contact's response, skeleton point or axes alike: the
# velocities blended at the contact (2 for a point, 4 for a segment's point, 8 for the axes'
# two), the relative velocity (1), its normal part (DOT) and the change (3), the inverse masses
# at the contact (5) and the impulse (2), the updates (2 on the point, 3 on each end): ~30 of
# 2 S. The plane's normal (two unit directions or σ_s's and the tangent, UNIT each, their cross
# product CROSS, made unit UNIT) divided by |σ_p × σ_s| ≥ PARALLEL (``cond`` 1 / |σ_p × σ_s|,
# 0 for parallel wisps: no normal), entering twice (vn and vn n) with 2 S.
def _response_operations(cond):
    return 2 * 30 + 2 * 2 * cond * (3 * UNIT + CROSS)


def ref_interact(x, v, r, rd, frames, tangent, mass, inv_mass, m_env, r0, viscosity, dt_c, pairs):
    """Wisp–wisp interactions as velocity modifications, from the docstrings (seed 001 §4.1–4.2),
    over the broadphase's pairs in its order. For each pair, first the two segments' axes: their
    closest points (``ref_closest``), if nearer than half the sum of the two wisps' mean envelope
    radii there, meet as points do; then the far cross-section of each segment against the other
    segment's volume (the space between its two cross-sections, discs of their envelopes' mean
    radii, blended along it), the skeleton point first, then its four envelope points (§5.1), each
    moving with its skeleton point (the envelope's radial speed is its own breathing, no contact's
    business). The kernel skips the cross-sections where the axes lie farther apart than the two
    segments' widest radii: no point can be inside then (a point inside lies within the other's
    mean radius ≤ widest of its axis, and within its own wisp's widest radius of its own axis), so
    the reference tests them all and must find the same.

    A skeleton contact (a point in a volume, or the axes' closest points): relative velocity
    ``rel`` against the other's at the same place; the wisps' directions σ_p (the point's tangent,
    or its segment's) and σ_s span a plane of normal n = σ_p × σ_s. Parallel wisps (|n| <
    PARALLEL) always interpenetrate, nothing to remove off a plane: viscous drag
    min(viscosity · density · dt_c, 1) on all of ``rel`` (density the other's rest area over its
    area now). Else ``rel`` within 25° of the plane: interpenetrate, its normal part removed and the
    drag on the rest; else collide: ``rel`` removed, all of it — no separating push, however deep
    the point lies in the other. An envelope point: nothing where the wisps interpenetrate (counted
    all the same); where they collide it
    loses only the part of ``rel`` along its offset from the other's axis that carries it deeper,
    min(rel · f̂, 0) f̂.

    The change Δ of the relative velocity is made by an impulse J on the one side and −J on the
    other, each spread over the points it is blended from by their shares, so J = Δ / (w₁ + w₂),
    w = Σ share² / m; an envelope point's side is its own mass m_env (J's part along its half-line
    goes to its radial speed, the rest to its skeleton point). A held skeleton point is not moved
    by others. Returns v, rd, counts (points and axes met, of them colliding, pairs), the
    roundings ``ops_v`` of S (``_response_operations`` and the conditioning below, per contact),
    read here:

    * the axes' closest points: (s, t) solve the 2 × 2 normal equations from differences of points
      up to |x|, ~20 roundings of |x| / L_min, times their conditioning κ: δs ≲ 20 κ |x| / L_min eps;
      that moves the blends of velocities (4 of them, S each);
    * an envelope point's offset direction f̂ (o: 6 roundings of |x|, made unit), ``(UNIT + 6) |x| /
      off`` of its part along it, 2 S;

    and how many contacts' class it decided within what the two computations may differ by there
    (their roundings so far, as above): a relative velocity of rounding, or 25° off the plane to
    rounding — the kernel may class those the other way."""
    v, rd = v.copy(), rd.copy()
    counts = np.zeros(3, np.int64)
    counts[2] = len(pairs)
    k_seg = x.shape[1] - 1
    mean_r, mean_r0 = r.mean(axis=2), r0.mean(axis=2)
    big_x = magnitude(x)
    seg_len = np.linalg.norm(np.diff(x, axis=1), axis=2)
    l_min = seg_len.min()
    ops = dict(v=0.0, ambiguous=0)
    big_s = magnitude(v)
    spread = math.sqrt(mass.max() / mass.min())

    def respond(rel, sigma_p, sigma_s, density):
        """(Δ, collided, cond) of a skeleton contact (the 25° rule)."""
        normal = np.cross(sigma_p, sigma_s)
        size_n = np.linalg.norm(normal)
        speed = np.linalg.norm(rel)
        n = normal / size_n if size_n >= PARALLEL else np.zeros(3)
        vn = rel @ n
        # what the kernel's velocities may differ by here: a class decided within it is rounding
        margin = spread * rounding(big_s, 2 * ops["v"] + 16, eps=EPS64)
        if size_n >= PARALLEL and (speed <= margin or abs(abs(vn) - SIN_PLANE * speed) <= 2 * margin):
            ops["ambiguous"] += 1
        if size_n < PARALLEL or abs(vn) <= SIN_PLANE * speed:
            drag = min(viscosity * density * dt_c, 1.0)
            return -vn * n - drag * (rel - vn * n), False, (1 / size_n if size_n >= PARALLEL else 0.0)
        return -rel, True, 1 / size_n

    def cross(wa, ka, wb, kb):
        s, t, o, kappa = ref_closest(x[wa, ka], x[wa, ka + 1], x[wb, kb], x[wb, kb + 1])
        reach = 0.5 * ((1 - s) * mean_r[wa, ka] + s * mean_r[wa, ka + 1] + (1 - t) * mean_r[wb, kb]
                       + t * mean_r[wb, kb + 1])
        if np.linalg.norm(o) >= reach:
            return
        counts[0] += 1
        rel = (1 - s) * v[wa, ka] + s * v[wa, ka + 1] - (1 - t) * v[wb, kb] - t * v[wb, kb + 1]
        now = (1 - t) * mean_r[wb, kb] + t * mean_r[wb, kb + 1]
        rest = (1 - t) * mean_r0[wb, kb] + t * mean_r0[wb, kb + 1]
        delta, collided, cond = respond(rel, _unit(x[wa, ka + 1] - x[wa, ka]), _unit(x[wb, kb + 1] - x[wb, kb]),
                                        (rest / now) ** 2)
        counts[1] += collided
        shift = 20 * kappa * big_x / l_min                     # δs, δt in units of eps
        ops["v"] += _response_operations(cond) + 2 * 4 * shift
        ends = ((wa, ka, 1 - s, 1.0), (wa, ka + 1, s, 1.0), (wb, kb, 1 - t, -1.0), (wb, kb + 1, t, -1.0))
        w_sum = sum(share * share * inv_mass[w, k] for w, k, share, _ in ends)
        if w_sum <= 0:
            return
        impulse = delta / w_sum
        for w, k, share, sign in ends:
            v[w, k] += sign * share * inv_mass[w, k] * impulse

    def meet(wa, c, wb, kb):
        a, b = x[wb, kb], x[wb, kb + 1]
        axis = b - a
        sigma_s = axis / np.linalg.norm(axis)
        for q in (None, 0, 1, 2, 3):
            e = np.zeros(3) if q is None else (1.0 if q < 2 else -1.0) * frames[wa, c, q % 2]
            p = x[wa, c] if q is None else x[wa, c] + r[wa, c, q] * e
            u = (p - a) @ axis / (axis @ axis)
            if not 0.0 <= u <= 1.0:
                continue
            o = p - a - u * axis
            rad = (1 - u) * mean_r[wb, kb] + u * mean_r[wb, kb + 1]
            if o @ o >= rad * rad or (q is None and inv_mass[wa, c] == 0):
                continue
            counts[0] += 1
            rel = v[wa, c] - ((1 - u) * v[wb, kb] + u * v[wb, kb + 1])
            rest = (1 - u) * mean_r0[wb, kb] + u * mean_r0[wb, kb + 1]
            delta, collided, cond = respond(rel, tangent[wa, c], sigma_s, (rest / rad) ** 2)
            counts[1] += collided
            ops["v"] += _response_operations(cond)
            if q is not None:
                if not collided:
                    continue                                     # envelopes overlap freely
                f = o / np.linalg.norm(o)
                delta = -min(rel @ f, 0.0) * f
                ops["v"] += 2 * (UNIT + 6) * big_x / np.linalg.norm(o)
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

    for s_a, s_b in pairs.tolist():
        wa, ka, wb, kb = s_a // k_seg, s_a % k_seg, s_b // k_seg, s_b % k_seg
        cross(wa, ka, wb, kb)
        meet(wa, ka + 1, wb, kb)
        meet(wb, kb + 1, wa, ka)
    return v, rd, counts, ops["v"], ops["ambiguous"]


def _meeting_wisps(seed, count, kind, n=7):
    """``count`` wisps meeting about the origin: 'crossing' (random directions) or 'parallel'
    (within 4° of one direction, offsets under their radii, moving mostly along it); all points free
    (inverse mass 1/m everywhere, envelope masses the layer's share of them), random velocities and
    radial speeds."""
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
                inv_mass=1.0 / mass, m_env=ENV_SHARE * mass, r0=r0)


MEETINGS = [(seed, count, kind) for kind in ("crossing", "parallel") for count in (2, 3) for seed in range(4)]


def _interact(c, viscosity, dt_c, v=None, rd=None):
    v = (c["v"] if v is None else v).copy()
    rd = (c["rd"] if rd is None else rd).copy()
    counts = np.zeros(3, np.int64)
    wisp_interact(c["x"], v, c["r"], rd, c["frames"], c["tangent"], c["mass"], c["inv_mass"], c["m_env"], c["r0"],
                  viscosity, dt_c, counts)
    return v, rd, counts


@pytest.mark.parametrize("kind", ["crossing", "parallel"])
def test_interact_is_the_reference_interaction(kind):
    """Every contact against the reference's, in the kernel's order (``wisp_pairs``, tested
    above as a set, sorted into colours by ``wisp_colours``, tested below). Tolerance: the contacts' roundings (``ref_interact``'s, each with its
    conditioning) in the kernel and the reference, added over the contacts as they carry on; a
    contact changes its two sides by momentum-keeping impulses — for skeleton points the
    mass-weighted projection removing (a part of) their relative velocity — which does not grow an
    error in the mass-weighted norm, so a
    point's error is at most √(m_max / m_min) of that (radial speeds, of envelope masses:
    √(m_max / m_env,min)). Contacts met are counted alike; a contact's class (collide or
    interpenetrate) can go either way where the reference finds it decided within that rounding
    (a relative velocity of rounding, after an inelastic contact on the axes just before: then
    either class changes it by rounding), and nowhere else."""
    met = collided = ambiguous = 0
    for seed, count, k in MEETINGS:
        if k != kind:
            continue
        c = _meeting_wisps(seed, count, kind)
        dt = 1 / 192
        v, rd, counts = _interact(c, 5.0, dt)
        pairs = wisp_pairs(c["x"], c["r"], c["x"].shape[1] - 1)
        order, _ = wisp_colours(pairs, c["x"].shape[1], c["x"].shape[0] * c["x"].shape[1])
        pairs = pairs[order]                     # the kernel's order: colour by colour
        ref_v, ref_rd, ref_counts, ops_v, undecided = ref_interact(
            c["x"], c["v"], c["r"], c["rd"], c["frames"], c["tangent"], c["mass"], c["inv_mass"], c["m_env"],
            c["r0"], 5.0, dt, pairs)
        assert counts[0] == ref_counts[0] and counts[2] == ref_counts[2]
        assert abs(counts[1] - ref_counts[1]) <= undecided
        tol = rounding(magnitude(c["v"], v, ref_v), 2 * ops_v, eps=EPS64)
        np.testing.assert_allclose(v, ref_v, rtol=0, atol=tol * math.sqrt(c["mass"].max() / c["mass"].min()))
        np.testing.assert_allclose(rd, ref_rd, rtol=0, atol=tol * math.sqrt(c["mass"].max() / c["m_env"].min()))
        met += counts[0]
        collided += counts[1]
        ambiguous += undecided
    assert met > 20 and 0 < collided < met           # the draws met, both ways
    assert ambiguous <= met // 10


def _dense_meeting(seed, count=60, n=9):
    """``count`` wisps of ``n`` points crossing one small region in every direction: a point
    meets many pairs (many colours)."""
    rng = np.random.default_rng(seed)
    d = _unit(rng.normal(size=(count, 3)))
    s = (np.arange(n) - (n - 1) / 2) * 0.05
    x = rng.normal(size=(count, 1, 3)) * 0.02 + s[None, :, None] * d[:, None, :]
    r = rng.uniform(0.02, 0.06, (count, n, 4))
    mass = rng.uniform(0.7, 1.4, (count, n)) * 1e-3
    inv = 1.0 / mass
    inv[:, 0] = 0.0                                    # roots held
    frames, tangent = _kernel_frames(x, d, rng.normal(size=(count, 3)))
    return dict(x=x, v=rng.normal(size=x.shape) * 0.5, r=r, rd=rng.normal(size=r.shape) * 0.1, frames=frames,
                tangent=tangent, mass=mass, inv_mass=inv, m_env=ENV_SHARE * mass, r0=r * 1.1)


def test_colours_hold_pairs_that_share_no_point_and_every_pair_once():
    """Each pair in exactly one colour, a colour's pairs in list order, and no two pairs of a
    colour touching one skeleton point (their segments' ends): what lets a colour run in
    parallel. Greedy: a pair's colour is the lowest its points leave free — so each colour
    below it holds a pair touching one of its points (checked on every 50th pair)."""
    c = _dense_meeting(3)
    n, num = c["x"].shape[1], c["x"].shape[0]
    pairs = wisp_pairs(c["x"], c["r"], n - 1)
    order, starts = wisp_colours(pairs, n, num * n)
    colours = len(starts) - 1
    assert starts[-1] == len(pairs) and np.array_equal(np.sort(order), np.arange(len(pairs)))
    assert colours > 64                                   # past one bank of 64 colours
    seg = pairs // (n - 1) * n + pairs % (n - 1)          # each pair's segments' first points
    points = np.concatenate([seg, seg + 1], axis=1)       # (P, 4): the four points it touches
    colour = np.empty(len(pairs), np.int64)
    touched = np.zeros((colours, num * n), bool)
    for col in range(colours):
        members = order[starts[col]:starts[col + 1]]
        assert len(members) and (np.diff(members) > 0).all()
        own = points[members].ravel()
        assert len(np.unique(own)) == own.size            # disjoint: each pair its own four points
        colour[members] = col
        touched[col, own] = True
    for t in range(0, len(pairs), 50):
        assert touched[:colour[t]][:, points[t]].any(axis=1).all()


def test_interact_is_the_same_bits_on_one_and_two_threads():
    """Colours met in parallel: v, rd and the counts alike, bit for bit, on 1 and 2 threads."""
    c = _dense_meeting(7)
    runs = []
    for threads in (1, 2, 1, 2):
        with numba_threads(threads):
            runs.append(_interact(c, 5.0, 1 / 192))
    for got in runs[1:]:
        for a, b in zip(runs[0], got):
            assert np.array_equal(a, b)
    assert runs[0][2][0] > 100


def _momentum(c, v, rd):
    """Σ m v of the skeletons plus Σ m_env rd e_q of the envelopes (their radial momentum along
    their half-lines), each coordinate summed exactly (math.fsum) from the rounded products."""
    axes = _half_lines(c["frames"])
    skel = c["mass"][..., None] * v
    env = (c["m_env"][..., None] * rd)[..., None] * axes
    return np.array([math.fsum(np.r_[skel[..., d].ravel(), env[..., d].ravel()]) for d in range(3)])


def _momentum_tolerance(c, v, rd, counts):
    """A contact rounds, per coordinate, its sides' updates — a point's (J / m_p and the add, or
    the radial part, its speed and the rest's update: 6), each of a segment's ends (3 each), the
    axes' four ends (3 each) — values up to m S, ~12 of 2 m S a contact; the momenta the products
    m v and m_env rd e (1 and 2 each, before and after), the sums exact (math.fsum)."""
    size = magnitude(c["mass"]) * (magnitude(c["v"], v) + magnitude(c["rd"], rd))
    points = c["x"].shape[0] * c["x"].shape[1]
    return rounding(size, 2 * 12 * counts[0] + 2 * (points + 2 * 4 * points), eps=EPS64)


@pytest.mark.parametrize("viscosity", [5.0, 1e5])
@pytest.mark.parametrize("meeting", MEETINGS, ids=lambda m: f"{m[2]} {m[1]} wisps #{m[0]}")
def test_interact_keeps_momentum(meeting, viscosity):
    """All points free: every contact is an impulse J on one side and −J on the other (a point's,
    or spread over a segment's ends by their shares), an envelope point's J split between its
    radial speed (along e_q, mass m_env) and its skeleton point: Σ m v + Σ m_env rd e_q is kept
    (``_momentum_tolerance``)."""
    seed, count, kind = meeting
    c = _meeting_wisps(seed, count, kind)
    v, rd, counts = _interact(c, viscosity, 1 / 192)
    assert counts[0] > 0
    np.testing.assert_allclose(_momentum(c, v, rd), _momentum(c, c["v"], c["rd"]), rtol=0,
                               atol=_momentum_tolerance(c, v, rd, counts))


@pytest.mark.parametrize("meeting", MEETINGS, ids=lambda m: f"{m[2]} {m[1]} wisps #{m[0]}")
def test_wisps_at_rest_or_moving_together_are_not_pushed_apart(meeting):
    """Wisps lying deep in each other (a groom's do where they lie): at rest, no contact changes
    anything — exactly (a relative velocity of 0 lies 'in the plane': an interpenetration of
    nothing). Moving all together (one velocity everywhere) and breathing (random radial speeds,
    the envelope's own business), every relative velocity is rounding: nothing pushes them apart
    (they lie deep in each other), every velocity and radial speed as it was to rounding.
    Tolerance: each contact's relative velocity is
    ~8 roundings of the common |V| (its blends' shares summing to 1 within rounding), and it changes
    its points by at most that times m_max / m_min (an impulse's share on the lighter side): 2 × 8 a
    contact, added over the contacts (an earlier change is a later relative velocity); a radial
    speed by at most its envelope point's change of relative velocity (J / m_env ≤ Δ)."""
    seed, count, kind = meeting
    c = _meeting_wisps(seed, count, kind)
    dt = 1 / 192
    zero_v, zero_rd = np.zeros_like(c["v"]), np.zeros_like(c["rd"])
    v, rd, counts = _interact(c, 5.0, dt, v=zero_v, rd=zero_rd)
    assert counts[0] > 0 and counts[1] == 0
    assert not v.any() and not rd.any()
    common = np.random.default_rng(seed).normal(size=3)
    together = np.broadcast_to(common, c["v"].shape).copy()
    v, rd, counts = _interact(c, 5.0, dt, v=together)
    assert counts[0] > 0
    ratio = c["mass"].max() / c["mass"].min()
    tol = rounding(np.linalg.norm(common), 2 * 8 * counts[0], eps=EPS64) * ratio
    np.testing.assert_allclose(v, together, rtol=0, atol=tol)
    np.testing.assert_allclose(rd, c["rd"], rtol=0, atol=tol)       # an envelope point's J / m_env ≤ its Δ


def test_the_axes_closest_distance_is_the_segments():
    """``_cross`` returns the distance between the two segments' axes, on which the interactions
    decide whether to test the cross-sections at all: it must be the segments' true closest
    distance — crossing, skew, clamped at an end or both, nearly and exactly parallel (overlapping
    or end to end), one segment a point's length. Its radii 0 (no contact, nothing changed).
    Tolerance: the distance at a (near) minimiser is first-order insensitive to the parameters
    where they are free and exact where clamped, so the two differ by the roundings of the offset
    and its norm: the differences (2), the blends (2 × 2), the norm (UNIT) of |x|, each side. Axes
    the kernel declares parallel (aa·ee − bb² ≤ 10⁻¹² aa·ee: sin θ ≤ 10⁻⁶) it meets from one end
    of one, the other's closest point to it and back: the distance along two lines that close
    changes by at most sin θ a unit of length, so that choice is off the minimum by at most
    10⁻⁶ (|a| + |b|) — the kernel's threshold, not rounding."""
    rng = np.random.default_rng(81)
    cases = []
    for _ in range(300):
        cases.append(rng.normal(size=(4, 3)) * rng.uniform(0.01, 1.0))
    for _ in range(100):                                   # nearly parallel, overlapping or not
        a0, d = rng.normal(size=3), _unit(rng.normal(size=3))
        e = _unit(d + rng.normal(size=3) * 10.0 ** rng.uniform(-9, -2))
        b0 = a0 + rng.normal(size=3) * 0.05 + d * rng.uniform(-0.5, 0.5)
        cases.append(np.array([a0, a0 + d * rng.uniform(0.05, 0.3), b0, b0 + e * rng.uniform(0.05, 0.3)]))
    for _ in range(50):                                    # exactly parallel (the same direction vector)
        a0, d = rng.normal(size=3), rng.normal(size=3) * 0.1
        b0 = a0 + rng.normal(size=3) * 0.05 + d * rng.uniform(-2, 2)
        cases.append(np.array([a0, a0 + d, b0, b0 + d * rng.choice([-1.0, 1.0])]))
    cases.append(np.array([[0, 0, 0], [1e-7, 0, 0], [0.5, -1, 0.2], [0.5, 1, 0.2]]))
    counts = np.zeros((1, 3), np.int64)
    for pts in cases:
        x = np.ascontiguousarray(pts.reshape(2, 2, 3))
        v = np.zeros_like(x)
        r = np.zeros((2, 2, 4))
        dist = kernel_cross(x, v, r, r, np.ones((2, 2)), 0, 0, 1, 0, 5.0, 1 / 192, counts, 0)
        _, _, o, kappa = ref_closest(*pts)
        lengths = np.linalg.norm(pts[1] - pts[0]) + np.linalg.norm(pts[3] - pts[2])
        allowance = 1e-6 * lengths if kappa >= 1e12 else 0.0
        assert abs(dist - np.linalg.norm(o)) <= rounding(magnitude(pts), 2 * (2 + 4 + UNIT), eps=EPS64) + allowance, pts
        assert not v.any()
    assert not counts.any()


def _frames_square_to(tangent, toward):
    """Frames (W, N, 2, 3): e₁ ``toward`` (3,) made square to each tangent, e₂ = t × e₁."""
    e1 = _unit(toward - _dot(toward, tangent)[..., None] * tangent)
    return np.stack([e1, _cross(tangent, e1)], axis=-2)


def _turns():
    rng = np.random.default_rng(72)
    out = [np.eye(3)]
    for _ in range(2):
        q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        out.append(q * np.sign(np.linalg.det(q)))
    return out


def _two_wisps(xa, xb, ra, rb, rb0, ta, tb, fa, fb, turn, seed):
    """Two 4-point wisps A and B as the layer's arrays, turned by ``turn`` (3, 3) and shifted; masses
    random but B's points 1 and 2 alike (with B's velocities there alike, a contact at u = 1/2
    leaves B translating: its velocity the same all along its segment 1), points free."""
    rng = np.random.default_rng(seed)
    shift = rng.uniform(-1, 1, 3)
    x = np.stack([xa, xb]) @ turn.T + shift
    mass = rng.uniform(0.7, 1.4, (2, 4)) * 1e-3
    mass[1, 2] = mass[1, 1]
    v = rng.normal(size=(2, 4, 3)) * 0.3
    v[1, 2] = v[1, 1]
    return dict(x=x, r=np.stack([ra, rb]), r0=np.stack([ra, rb0]), frames=np.stack([fa, fb]) @ turn.T,
                tangent=np.stack([ta, tb]) @ turn.T, mass=mass, inv_mass=1.0 / mass, m_env=ENV_SHARE * mass,
                rd=np.zeros((2, 4, 4)), v=v)


def _one_contact(kind, turn):
    """Two wisps meeting at one cross-section: A's point 2 inside B's segment 1 halfway (u = 1/2),
    A thin (radius 0.004) so its axis stays out of reach of B's (half the sum of the two radii,
    0.027) and no other cross-section of either comes near the other. A's four envelope points at
    point 2 lie inside B too (they cannot all clear it: A would be too wide): they meet as well.
    'crossing': B through the origin 20° off the x axis (radius 0.05, rest 0.0625: density 1.5625),
    A down the z axis 0.04 off B's axis along their common normal.
    'parallel': B down the z axis (radius 0.05, rest 0.04: density 0.64), A a V whose point 2 is
    0.035 off B's axis with its tangent (the bisector) along B's."""
    if kind == "crossing":
        d = np.array([math.cos(math.radians(20)), 0.0, math.sin(math.radians(20))])
        xa = np.array([[0, 0.04, 0.2], [0, 0.04, 0.1], [0, 0.04, 0.0], [0, 0.04, -0.1]])
        xb = np.array([-0.3, -0.1, 0.1, 0.3])[:, None] * d
        rb, rb0 = np.full((4, 4), 0.05), np.full((4, 4), 0.0625)
        ta, tb = np.tile([0.0, 0.0, -1.0], (4, 1)), np.tile(d, (4, 1))
        fa, fb = _frames_square_to(ta, np.array([1.0, 1.0, 0.0])), _frames_square_to(tb, np.array([0.0, 1.0, 0.0]))
    else:
        off = 0.035
        xa = np.array([[off + 0.2, 0, 0.2], [off + 0.1, 0, 0.1], [off, 0, 0.0], [off + 0.1, 0, -0.1]])
        xb = np.array([[0, 0, 0.6], [0, 0, 0.2], [0, 0, -0.2], [0, 0, -0.6]])
        rb, rb0 = np.full((4, 4), 0.05), np.full((4, 4), 0.04)
        seg = _unit(np.diff(xa, axis=0))
        ta = _unit(np.stack([seg[0], seg[0] + seg[1], seg[1] + seg[2], seg[2]]))
        tb = np.tile([0.0, 0.0, -1.0], (4, 1))
        fa, fb = _frames_square_to(ta, np.array([1.0, 0.0, 0.0])), _frames_square_to(tb, np.array([1.0, 0.0, 0.0]))
    return _two_wisps(xa, xb, np.full((4, 4), 0.004), rb, rb0, ta, tb, fa, fb, turn, 71)


@pytest.mark.parametrize("viscosity", [5.0, 40.0, 1e5])
@pytest.mark.parametrize("way", ["off the plane", "in the plane"])
@pytest.mark.parametrize("kind", ["crossing", "parallel"])
def test_one_contact_is_inelastic_or_interpenetrates(kind, way, viscosity):
    """At A's skeleton point inside B's segment (with its envelope points the only points inside
    anything, the axes out of reach: counts say so), relative velocity v_A − v_B(u) set 'off the
    plane' (77° off it) or 'in the plane' (12° off it); for parallel wisps, whose plane is
    undefined, the same directions about the normal the crossing's rule would take (B's axis ×
    the offset). Crossing, off: inelastic, the relative velocity there ~0 after. Crossing in, and
    parallel either way: interpenetration — the
    normal part ~0 after (parallel: nothing removed off a plane, the drag takes all of it), the
    in-plane part (1 − min(viscosity · density · dt, 1)) of what it was: shrunk, never reversed, 0
    once viscosity · density · dt ≥ 1. The envelope points moving with their skeleton point (B
    translating, its shares at u = 1/2 alike) then meet with a relative velocity of rounding, and
    change nothing but rounding (nor their radial speeds).

    Tolerance: the kernel's roundings of the five contacts (``_response_operations`` with the
    plane's conditioning 1/sin 70° crossing, none parallel; the envelope points' offsets' 2 (UNIT +
    6) |x| / off, off ≥ 0.036), of the largest velocity, and the relative velocity read back from
    three rounded velocities (4 more)."""
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
            n, cond = _unit(_cross(sigma_s, offset)), 0.0
        else:
            n, cond = _unit(normal), 1 / np.linalg.norm(normal)
        in_plane = _unit(_cross(n, sigma_s) + 0.7 * sigma_s)
        if way == "off the plane":
            rel = 1.2 * (n + 0.23 * in_plane)                         # 77° off the plane
        else:
            rel = 0.8 * (in_plane + 0.21 * n)                         # 12° off it
        v[0, 2] = (1 - u) * v[1, 1] + u * v[1, 2] + rel
        after, rd, counts = _interact(c, viscosity, dt)
        collide = kind == "crossing" and way == "off the plane"
        rest = 0.0625 if kind == "crossing" else 0.04
        drag = min(viscosity * (rest / 0.05) ** 2 * dt, 1.0)
        assert counts[0] == 5                                    # the point and its 4 envelope points
        if collide:
            assert counts[1] >= 1
        else:                 # drag 1 leaves the envelope points a relative velocity of rounding: either class
            assert counts[1] == 0 if drag < 1 or kind == "parallel" else counts[1] <= 4
        rel_after = after[0, 2] - ((1 - u) * after[1, 1] + u * after[1, 2])
        size = magnitude(v, after)
        tol = rounding(size, 5 * _response_operations(cond) + 4 * 2 * (UNIT + 6) * magnitude(x) / 0.036 + 4,
                       eps=EPS64)
        assert np.abs(rd).max() <= tol
        if collide:
            np.testing.assert_allclose(rel_after, 0.0, rtol=0, atol=tol)
            continue
        if kind == "parallel":
            np.testing.assert_allclose(rel_after, (1 - drag) * rel, rtol=0, atol=tol)
            assert rel_after @ rel >= -tol * np.linalg.norm(rel)
            continue
        plane_before = rel - (rel @ n) * n
        assert abs(rel_after @ n) <= tol
        plane_after = rel_after - (rel_after @ n) * n
        np.testing.assert_allclose(plane_after, (1 - drag) * plane_before, rtol=0, atol=tol)
        assert plane_after @ plane_before >= -tol * np.linalg.norm(plane_before)        # never reversed


def _inside_any(c):
    """How many cross-section points (skeleton and envelope, at their places) of either wisp lie in
    a segment's volume of the other (§4.1's test), from positions alone."""
    x, r, frames = c["x"], c["r"], c["frames"]
    axes = _half_lines(frames)
    found = 0
    for wa, wb in ((0, 1), (1, 0)):
        pts = np.concatenate([x[wa], (x[wa][:, None] + r[wa][..., None] * axes[wa]).reshape(-1, 3)])
        for kb in range(x.shape[1] - 1):
            a, axis = x[wb, kb], x[wb, kb + 1] - x[wb, kb]
            u = (pts - a) @ axis / (axis @ axis)
            o = pts - a - u[:, None] * axis
            rad = (1 - u) * r[wb, kb].mean() + u * r[wb, kb + 1].mean()
            found += int(np.sum((u >= 0) & (u <= 1) & (np.linalg.norm(o, axis=1) < rad)))
    return found


def _thin_crossing(turn, gap):
    """Two thin wisps (radius 0.01; B's rest 0.0125: density 1.5625) whose axes cross between their
    cross-sections: A down the z axis ``gap`` off B's along their common normal (y), B through the
    origin 20° off the x axis, each one's segment 1 (0.2 long, 20 times its radius) meeting the
    other's halfway (s = t = 1/2), their cross-sections 0.1 from the crossing: reach (half the sum
    of the radii) 0.01."""
    d = np.array([math.cos(math.radians(20)), 0.0, math.sin(math.radians(20))])
    xa = np.array([[0, gap, 0.3], [0, gap, 0.1], [0, gap, -0.1], [0, gap, -0.3]])
    xb = np.array([-0.3, -0.1, 0.1, 0.3])[:, None] * d
    ta, tb = np.tile([0.0, 0.0, -1.0], (4, 1)), np.tile(d, (4, 1))
    fa, fb = _frames_square_to(ta, np.array([1.0, 1.0, 0.0])), _frames_square_to(tb, np.array([0.0, 1.0, 0.0]))
    return _two_wisps(xa, xb, np.full((4, 4), 0.01), np.full((4, 4), 0.01), np.full((4, 4), 0.0125), ta, tb, fa, fb,
                      turn, 73)


def _axes_tolerance(c, v, after, angle):
    """One axes' contact, as ``ref_interact`` counts it: ``_response_operations`` of the largest
    velocity with the plane's conditioning 1 / sin(angle), the closest points' shift
    δs = 20 κ |x| / L_min eps (κ = 1 / sin² angle) through the four velocities' blends, the relative
    velocity read back (8 roundings)."""
    kappa = 1 / math.sin(angle) ** 2
    lengths = np.linalg.norm(np.diff(c["x"], axis=1), axis=2)
    shift = 20 * kappa * magnitude(c["x"]) / lengths.min()
    return rounding(magnitude(v, after), _response_operations(1 / math.sin(angle)) + 2 * 4 * shift + 8, eps=EPS64)


GAPS = {"near the rim": 0.009, "halfway in": 0.005, "deep in": 0.0005}


@pytest.mark.parametrize("gap", GAPS.values(), ids=GAPS.keys())
@pytest.mark.parametrize("way", ["off the plane", "in the plane", "slow", "at rest"])
def test_thin_wisps_crossing_between_cross_sections_meet_at_their_axes(way, gap):
    """Seed 001 §4.1 tests only the cross-sections' points, 'sufficient' for segments as wide as
    long; two thin wisps can cross between their cross-sections with no point of either inside the
    other (checked here from positions: none is) — the axes' closest points catch it, one contact
    (counts[0] == 1), meeting as points do: 'off the plane' (77° off the plane the two axes span),
    inelastic: the relative velocity at the closest points ~0 after however deep the axes lie in
    each other (no separating push); 'slow' (off the plane, 1 mm/s) the same; 'in the plane' (12°
    off it), interpenetration: normal part ~0, in-plane part (1 − min(40 · 1.5625 · dt, 1)); 'at
    rest': nothing changes at all. Each spreads its impulse over the four ends (no envelope point
    meets: the radial speeds untouched) keeping Σ m v (``_momentum_tolerance``). Tolerance of the
    relative velocity: ``_axes_tolerance``."""
    dt, viscosity = 1 / 192, 40.0
    for turn in _turns():
        c = _thin_crossing(turn, gap)
        assert _inside_any(c) == 0
        x, v = c["x"], c["v"]
        sigma_a, sigma_b = _unit(x[0, 2] - x[0, 1]), _unit(x[1, 2] - x[1, 1])
        n = _unit(_cross(sigma_a, sigma_b))
        in_plane = _unit(_cross(n, sigma_b) + 0.7 * sigma_b)
        rel = {"off the plane": 1.2 * (n + 0.23 * in_plane), "in the plane": 0.8 * (in_plane + 0.21 * n),
               "slow": 1e-3 * _unit(n + 0.23 * in_plane), "at rest": np.zeros(3)}[way]
        if way == "at rest":
            v[:] = 0.0
        shift = 0.5 * (v[1, 1] + v[1, 2]) + rel - 0.5 * (v[0, 1] + v[0, 2])
        v[0, 1] += shift
        v[0, 2] += shift
        after, rd, counts = _interact(c, viscosity, dt)
        assert counts[0] == 1 and counts[1] == (way in ("off the plane", "slow"))
        assert np.array_equal(rd, c["rd"])
        if way == "at rest":
            assert not after.any()
            continue
        rel_after = 0.5 * (after[0, 1] + after[0, 2]) - 0.5 * (after[1, 1] + after[1, 2])
        tol = _axes_tolerance(c, v, after, math.radians(70))
        if way == "in the plane":
            drag = min(viscosity * 1.5625 * dt, 1.0)
            assert abs(rel_after @ n) <= tol
            np.testing.assert_allclose(rel_after - (rel_after @ n) * n, (1 - drag) * (rel - (rel @ n) * n), rtol=0,
                                       atol=tol)
        else:
            np.testing.assert_allclose(rel_after, 0.0, rtol=0, atol=tol)
        np.testing.assert_allclose(_momentum(c, after, rd), _momentum(c, v, c["rd"]), rtol=0,
                                   atol=_momentum_tolerance(c, after, rd, counts))


def _tip_in(turn, depth):
    """B along the x axis (radius 0.05, its segment 1 from x = −0.2 to 0.2), A (radius 0.004) along
    +y ending ``depth`` over B's axis at x = 0: A's tip inside B's segment 1 halfway, A's last axis
    within reach of B's (0.027, for depth below it) with its closest point the tip, their offset
    along the plane's normal (σ_A × σ_B = −z). A's other points far from B."""
    xa = np.array([[0, -0.3, depth], [0, -0.2, depth], [0, -0.1, depth], [0, 0.0, depth]])
    xb = np.array([[-0.6, 0, 0], [-0.2, 0, 0], [0.2, 0, 0], [0.6, 0, 0]])
    ta, tb = np.tile([0.0, 1.0, 0.0], (4, 1)), np.tile([1.0, 0.0, 0.0], (4, 1))
    fa, fb = _frames_square_to(ta, np.array([1.0, 0.0, 1.0])), _frames_square_to(tb, np.array([0.0, 1.0, 0.0]))
    return _two_wisps(xa, xb, np.full((4, 4), 0.004), np.full((4, 4), 0.05), np.full((4, 4), 0.05), ta, tb, fa, fb,
                      turn, 74)


DEPTHS = {"near the rim": 0.026, "halfway in": 0.01, "on the axis": 0.0005}
SPEEDS = {"moving": 0.8, "slow": 1e-3, "at rest": 0.0}


def _inside_offset(c):
    """The smallest offset from B's axis of A's tip and its envelope points (the contacts' f̂ are
    made unit from these: their conditioning |x| / off)."""
    x, r, axes = c["x"], c["r"], _half_lines(c["frames"])
    pts = np.concatenate([x[0, 3][None], x[0, 3] + r[0, 3][:, None] * axes[0, 3]])
    a, axis = x[1, 1], x[1, 2] - x[1, 1]
    o = pts - a - ((pts - a) @ axis / (axis @ axis))[:, None] * axis
    return np.linalg.norm(o, axis=1).min()


@pytest.mark.parametrize("way", SPEEDS)
@pytest.mark.parametrize("depth", DEPTHS.values(), ids=DEPTHS.keys())
def test_a_colliding_skeleton_point_is_never_pushed_whatever_its_depth(depth, way):
    """A's tip inside B at any depth, moving into B square to the plane (their axes' contact and the
    tip's both collide, the tip's four envelope points inside too): the axes' contact removes the
    relative velocity, the tip's own finds none left: the relative velocity of the tip against B
    there ends ~0 — not pushed out, however deep (a separating push flung points and kept a still
    groom jittering). 'slow' alike; 'at rest': nothing changes at all — a groom's wisps lying in
    each other stay where they lie. Momentum kept (``_momentum_tolerance``). Tolerance:
    ``_axes_tolerance`` for the axes' contact (its conditioning 1, the axes square) and
    ``_response_operations(1)`` for the tip's five, with the envelope points' offsets' directions,
    2 (UNIT + 6) |x| / off each (``_inside_offset``)."""
    dt = 1 / 192
    for turn in _turns():
        c = _tip_in(turn, depth)
        x, v = c["x"], c["v"]
        out = turn @ np.array([0.0, 0.0, 1.0])
        rel = SPEEDS[way] * _unit(-out + 0.2 * turn @ np.array([1.0, 0.3, 0.0]))      # into B, 78° off the plane
        if way == "at rest":
            v[:] = 0.0
        v[0, 3] = 0.5 * (v[1, 1] + v[1, 2]) + rel
        after, rd, counts = _interact(c, 5.0, dt)
        assert counts[0] == 6                  # the axes, the tip and its four envelope points
        if way == "at rest":
            assert counts[1] == 0 and not after.any() and not rd.any()
            continue
        assert counts[1] >= 1                  # the axes (the tip then meets a relative velocity of rounding)
        rel_after = after[0, 3] - 0.5 * (after[1, 1] + after[1, 2])
        size = magnitude(v, after) + magnitude(rd)
        tol = _axes_tolerance(c, v, after, math.radians(90)) + rounding(
            size, 5 * _response_operations(1.0) + 4 * 2 * (UNIT + 6) * magnitude(x) / _inside_offset(c), eps=EPS64)
        np.testing.assert_allclose(rel_after, 0.0, rtol=0, atol=tol)
        np.testing.assert_allclose(_momentum(c, after, rd), _momentum(c, v, c["rd"]), rtol=0,
                                   atol=_momentum_tolerance(c, after, rd, counts))


@pytest.mark.parametrize("way", SPEEDS)
@pytest.mark.parametrize("depth", DEPTHS.values(), ids=DEPTHS.keys())
def test_a_cross_sections_meet_never_pushes_its_skeleton_point_whatever_its_depth(depth, way):
    """``_meet`` alone (the cross-section's own contacts, without the axes' before it): A's tip
    inside B at any depth, moving into B square to the plane: inelastic, the relative velocity there
    ~0 after — the skeleton point's whole relative velocity removed, mass-split, nothing more (a
    leftover push would leave it moving out); 'slow' alike; 'at rest': nothing changes. Momentum
    kept. Tolerance: ``_response_operations(1)`` of the largest velocity for the tip and its four
    envelope points (their offsets' directions 2 (UNIT + 6) |x| / off, ``_inside_offset``), and the
    relative velocity read back (4)."""
    dt = 1 / 192
    for turn in _turns():
        c = _tip_in(turn, depth)
        x, v = c["x"], c["v"].copy()
        out = turn @ np.array([0.0, 0.0, 1.0])
        if way == "at rest":
            v[:] = 0.0
        v[0, 3] = 0.5 * (v[1, 1] + v[1, 2]) + SPEEDS[way] * _unit(-out + 0.2 * turn @ np.array([1.0, 0.3, 0.0]))
        after, rd, hits = v.copy(), c["rd"].copy(), np.zeros((1, 3), np.int64)
        kernel_meet(x, after, c["r"], rd, c["frames"], c["tangent"], c["mass"], c["inv_mass"], c["m_env"], c["r0"],
                    0, 3, 1, 1, 5.0, dt, hits, 0)
        counts = hits[0]
        assert counts[0] == 5                              # the tip and its four envelope points
        if way == "at rest":
            assert counts[1] == 0 and not after.any() and not rd.any()
            continue
        assert counts[1] >= 1
        rel_after = after[0, 3] - 0.5 * (after[1, 1] + after[1, 2])
        size = magnitude(v, after) + magnitude(rd)
        tol = rounding(size, 5 * _response_operations(1.0) + 4 * 2 * (UNIT + 6) * magnitude(x) / _inside_offset(c)
                       + 4, eps=EPS64)
        np.testing.assert_allclose(rel_after, 0.0, rtol=0, atol=tol)
        np.testing.assert_allclose(_momentum(c, after, rd), _momentum(c, v, c["rd"]), rtol=0,
                                   atol=_momentum_tolerance(c, after, rd, counts))


def _envelope_reaching_in(turn):
    """B along the x axis (radius 0.03, segment 1 from x = −0.2 to 0.2); A down the z axis 0.05 off
    B's along y (out of B, its axis out of reach, 0.022), its point 2 over B's halfway with a long
    envelope half-line (0.04) along −y reaching 0.01 into B from its axis; its other half-lines
    and other cross-sections short (0.005), out of B. Its envelope point on +e₁ = −y is the only
    point inside anything; its offset from B's axis f̂ = +y, the plane's normal σ_A × σ_B = ∓y."""
    xa = np.array([[0, 0.05, 0.2], [0, 0.05, 0.1], [0, 0.05, 0.0], [0, 0.05, -0.1]])
    xb = np.array([[-0.6, 0, 0], [-0.2, 0, 0], [0.2, 0, 0], [0.6, 0, 0]])
    ta, tb = np.tile([0.0, 0.0, -1.0], (4, 1)), np.tile([1.0, 0.0, 0.0], (4, 1))
    fa, fb = _frames_square_to(ta, np.array([0.0, -1.0, 0.0])), _frames_square_to(tb, np.array([0.0, 1.0, 0.0]))
    ra = np.full((4, 4), 0.005)
    ra[2, 0] = 0.04
    c = _two_wisps(xa, xb, ra, np.full((4, 4), 0.03), np.full((4, 4), 0.03), ta, tb, fa, fb, turn, 75)
    c["out"] = turn @ np.array([0.0, 1.0, 0.0])
    return c


def test_an_envelope_point_only_loses_what_carries_it_deeper():
    """An envelope point inside another wisp (its skeleton point outside, the axes out of reach:
    the one contact), 300 relative velocities in every direction. Interpenetrating (within 25° of
    the plane): nothing changes, exactly — envelopes overlap freely. Colliding and moving out of
    the other or along its surface (rel · f̂ ≥ 0, f̂ the offset from the other's axis): nothing
    changes, exactly — the envelope is never dragged along nor pulled out by a neighbour. Colliding
    and moving deeper: only that part is removed — the point's own velocity (its skeleton's plus
    its radial speed along its half-line) against B's there, along f̂, becomes 0, its part across
    f̂ is kept, the radial speed can only shrink (the envelope compresses, never widens: here the
    half-line points into B), its skeleton point takes nothing (the impulse lies along the
    half-line), and momentum is kept. Tolerance: the contact's ``_response_operations(1)`` and its
    offset's direction (2 (UNIT + 6) |x| / 0.01) of the largest velocity, radial speeds included."""
    dt = 1 / 192
    rng = np.random.default_rng(76)
    seen = set()
    for turn in _turns():
        base = _envelope_reaching_in(turn)
        f = base["out"]
        e = base["frames"][0, 2, 0]
        for _ in range(100):
            c = dict(base, v=base["v"].copy(), rd=rng.normal(size=base["rd"].shape) * 0.1)
            rel = _unit(rng.normal(size=3)) * rng.uniform(0.1, 2.0)
            c["v"][0, 2] = 0.5 * (c["v"][1, 1] + c["v"][1, 2]) + rel
            after, rd, counts = _interact(c, 5.0, dt)
            assert counts[0] == 1
            collide = abs(rel @ f) > SIN_PLANE * np.linalg.norm(rel)        # the normal is ±f here
            assert counts[1] == collide
            if not collide or rel @ f >= 0:
                seen.add("in the plane" if not collide else "moving out")
                assert np.array_equal(after, c["v"]) and np.array_equal(rd, c["rd"])
                continue
            seen.add("moving deeper")
            size = magnitude(c["v"], after) + magnitude(c["rd"], rd)
            tol = rounding(size, _response_operations(1.0) + 2 * (UNIT + 6) * magnitude(c["x"]) / 0.01 + 8, eps=EPS64)
            d_rd = rd[0, 2, 0] - c["rd"][0, 2, 0]
            own = after[0, 2] + d_rd * e - 0.5 * (after[1, 1] + after[1, 2])       # the point's change counted
            np.testing.assert_allclose(own @ f, 0.0, rtol=0, atol=tol)
            np.testing.assert_allclose(own - (own @ f) * f, rel - (rel @ f) * f, rtol=0, atol=tol)
            assert d_rd < 0
            np.testing.assert_allclose(after[0], c["v"][0], rtol=0, atol=tol)
            rd_rest = rd.copy()
            rd_rest[0, 2, 0] = c["rd"][0, 2, 0]
            assert np.array_equal(rd_rest, c["rd"])
            np.testing.assert_allclose(_momentum(c, after, rd), _momentum(c, c["v"], c["rd"]), rtol=0,
                                       atol=_momentum_tolerance(c, after, rd, counts))
    assert seen == {"in the plane", "moving out", "moving deeper"}
