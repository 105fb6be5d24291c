"""The wig core (seed 000 / SPEC §1-6) against analytic answers, without Blender."""

from contextlib import contextmanager

import numba
import numpy as np
import pytest

from hair_wig import (DynamicMagnet, FrameInput, HairSet, HairWigError, LengthControl, Magnet,
                      MagnetWeights, Profile, RadiusMap, SpringSettings, SecondarySprings, Wig,
                      WigSettings, ForceField, compensate_compression, spring_step_coefficients)
from hair_wig.dynamics import DynamicMagnets
from hair_wig.collision import RayField
from hair_wig.refinement import farthest_hits
from hair_wig.magnets import MAX_INFLUENCES
from tolerance import AFFINE, FOLLOW, NORM, SEGMENT, magnitude, rounding

DT = 1.0 / 24.0


@contextmanager
def numba_threads(n):
    """numba's thread count ``n`` (at most its pool's) inside, as it was after: what runs the
    wig's kernels in parallel (``Wig.threads`` plans nothing)."""
    was = numba.get_num_threads()
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(was)


def translate(x, y, z):
    m = np.eye(4)
    m[:3, 3] = (x, y, z)
    return m


def rotation(axis, angle, about=(0, 0, 0)):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    r = np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k
    m = np.eye(4)
    m[:3, :3] = r
    m[:3, 3] = np.asarray(about) - r @ np.asarray(about)
    return m


def strands(n=50, k=8, length=1.0, seed=0):
    """Straight strands rising from the unit sphere's upper half."""
    rng = np.random.default_rng(seed)
    z = rng.uniform(0.2, 1.0, n)
    phi = rng.uniform(0, 2 * np.pi, n)
    r = np.sqrt(1 - z * z)
    roots = np.stack([r * np.cos(phi), r * np.sin(phi), z], 1)
    t = np.linspace(0, 1, k)
    pts = roots[:, None] * (1 + length * t[None, :, None])
    return HairSet(pts.reshape(-1, 3), [k] * n, name="Hair")


def sphere_mesh(radius=1.0, rings=24, segments=48):
    th = np.linspace(0, np.pi, rings + 1)
    ph = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    v = radius * np.stack([np.outer(np.sin(th), np.cos(ph)), np.outer(np.sin(th), np.sin(ph)),
                           np.outer(np.cos(th), np.ones_like(ph))], -1).reshape(-1, 3)
    tris = []
    for i in range(rings):
        for j in range(segments):
            a, b = i * segments + j, i * segments + (j + 1) % segments
            c, d = a + segments, b + segments
            tris += [(a, c, b), (b, c, d)]
    return v, np.array(tris)


def no_refinement(**kw):
    return WigSettings(use_length=False, use_collision=False, **kw)


# ----------------------------------------------------------------------------- profiles, data

def test_profile_linear_and_smooth():
    lin = Profile([(0, 0), (0.5, 1), (1, 0)])
    # profiles are read from a table sampled every 1/1024: 2e-3 is that resolution, not rounding
    np.testing.assert_allclose(lin([0, 0.25, 0.5, 0.75, 1]), [0, 0.5, 1, 0.5, 0], atol=2e-3)
    smooth = Profile([(0, 0), (0.3, 0.9), (0.6, 1.0), (1, 0.2)], "SMOOTH")
    u = np.linspace(0, 1, 1001)
    y = smooth(u)
    # monotone cubic: no overshoot. Table entries in 0..1 (the float64 cubic rounded once), read
    # as a (1 − f) + b f in float32 (4 roundings): 5 eps32; an overshoot would be percents
    assert y.max() <= 1.0 + rounding(1.0, 5) and y.min() >= -rounding(1.0, 5)
    # 0.3 and 0.6 fall between table samples: slope (<= 3) x spacing 1/1024 = 3e-3
    np.testing.assert_allclose(smooth([0, 0.3, 0.6, 1]), [0, 0.9, 1.0, 0.2], atol=3e-3)
    assert np.all(np.abs(np.diff(y)) < 0.01)                   # smooth: no jumps
    assert Profile.constant(0.4)(np.array([[0.1, 2.0]])).shape == (1, 2)
    np.testing.assert_allclose(Profile.linear(1, 0)([-1, 2]), [1, 0])   # clamped outside 0..1


@pytest.mark.parametrize("points, pattern", [
    ([(0.5, 1), (0.2, 0)], "strictly increasing x"),
    ([(0, 1), (1.5, 0)], "outside 0..1"),
    ([(0, np.nan), (1, 0)], "NaN"),
    ([], "needs control points"),
])
def test_profile_errors_name_the_profile(points, pattern):
    with pytest.raises(HairWigError, match=f"flex profile.*{pattern}|flex profile {pattern}"):
        Profile(points, name="flex")


def test_vertex_t_and_lengths():
    h = HairSet(np.array([[0, 0, 0], [0, 0, 1], [0, 0, 3], [5, 0, 0], [5, 0, 2]], np.float32), [3, 2])
    np.testing.assert_allclose(h.vertex_t(), [0, 0.5, 1, 0, 1])
    np.testing.assert_allclose(h.strand_lengths(), [3, 2])
    np.testing.assert_allclose(h.normalised_length(), [1, 0])
    np.testing.assert_allclose(strands().normalised_length(), 1)   # all equal: 1 everywhere


# ------------------------------------------------------------------------------------ magnets

def test_one_full_weight_magnet_moves_hair_rigidly():
    h = strands()
    mag = Magnet("M", translate(0, 0, 1), radius=100.0, falloff=Profile.constant(1.0))
    wig = Wig(h, np.eye(4), np.eye(4), [mag], no_refinement(flex=Profile.constant(1.0)))
    motion = translate(0.3, -0.2, 0.5) @ rotation((1, 1, 0), 0.7, about=(0, 0, 1))
    got, _ = wig.step(FrameInput(np.eye(4), np.eye(4), np.array([motion @ mag.rest_matrix])))
    expect = h.points @ motion[:3, :3].T + motion[:3, 3]
    # M − I as float32 (1), its blend with weight 1 (1), G p: 3 products and 3 sums (6), p + G p
    # (1): 9 roundings of coordinates up to the largest |x|; a non-rigid motion is off by cm
    np.testing.assert_allclose(got, expect, atol=rounding(magnitude(h.points, expect), 9))


def test_weight_formula_radius_and_core():
    mag = Magnet("M", np.eye(4), multiplier=2.0, exponent=1.5, radius=2.0,
                 falloff=Profile.linear(1.0, 0.0))
    x = np.array([0.5, 1.0, 1.5, 1.999, 2.0, 2.5, 10.0])
    c = np.clip(1 - x / 2.0, 0, 1)
    # the falloff is read from its table (spacing 1/1024): rtol 1e-3 is that, not rounding
    np.testing.assert_allclose(mag.weight(x), np.where(x > 2, 0, 2 * x**-1.5 * c), rtol=1e-3, atol=1e-6)
    at_magnet = mag.weight(np.array([0.0]))
    assert np.isfinite(at_magnet).all() and at_magnet[0] == pytest.approx(2 * 0.1**-1.5 * 0.95, rel=1e-3)


def test_cap_is_continuous_at_radius_and_sum_adds_to_one():
    z = np.linspace(0.0, 2.0, 2000)
    pts = np.stack([np.zeros_like(z), np.zeros_like(z), z], 1)
    h = HairSet(pts, [2] * 1000)
    flex, length = Profile.constant(1.0), Profile.constant(1.0)
    lone = [Magnet("A", np.eye(4), radius=1.0)]
    cap = MagnetWeights(h, h.points, lone, flex, length, "cap").dense(h.num_points)[0]
    assert np.max(np.abs(np.diff(cap))) < 0.01        # no jump anywhere, including z = 1
    # at the magnet: the core radius 0.05 d reads the falloff at u = 0.05
    # the same table read, divided by a norm of 1 and stored as float32: 2 roundings of values <= 1
    assert cap[z > 1].max() == 0 and cap[0] == pytest.approx(float(lone[0].falloff(0.05)), abs=rounding(1.0, 2))
    total = MagnetWeights(h, h.points, lone, flex, length, "sum").dense(h.num_points)[0]
    # w / Σw with one magnet (float64) stored as float32: 2 roundings of 1
    assert (np.abs(total[z < 0.99] - 1.0) <= rounding(1.0, 2)).all() and total[z > 1].max() == 0   # 'sum' jumps at the edge
    two = [Magnet("A", np.eye(4), radius=1.5), Magnet("B", translate(0, 0, 1.5), multiplier=3, radius=1.5)]
    w = MagnetWeights(h, h.points, two, flex, length, "sum").dense(h.num_points)
    reached = w.sum(axis=0) > 0
    # two weights w / Σw each stored as float32 (2) and added (1): 3 roundings of values <= 1
    np.testing.assert_allclose(w.sum(axis=0)[reached], 1.0, atol=rounding(1.0, 3))
    capped = MagnetWeights(h, h.points, two, flex, length, "cap").dense(h.num_points)
    assert capped.sum(axis=0).max() <= 1.0 + rounding(1.0, 3)


def test_flex_length_profiles_and_sets_of_hairs():
    h = HairSet(np.array([[0, 0, 0], [0, 0, 1], [1, 0, 0], [1, 0, 2]], np.float32), [2, 2])
    mag = Magnet("M", np.eye(4), radius=100.0, falloff=Profile.constant(1.0))
    w = MagnetWeights(h, h.points, [mag], Profile.linear(0.2, 1.0), Profile.linear(0.5, 1.0), "cap")
    # flex: root 0.2, tip 1; length: shorter strand (ℓ=0) 0.5, longer (ℓ=1) 1
    np.testing.assert_allclose(w.dense(4)[0], [0.1, 0.5, 0.2, 1.0], atol=1e-3)   # profile tables' resolution
    only_second = Magnet("S", np.eye(4), radius=100.0, falloff=Profile.constant(1.0),
                         strands=np.array([False, True]))
    w = MagnetWeights(h, h.points, [only_second], Profile.constant(1), Profile.constant(1), "cap")
    np.testing.assert_allclose(w.dense(4)[0], [0, 0, 1, 1])
    with pytest.raises(HairWigError, match="magnet 'Bad': falloff radius must be positive"):
        Magnet("Bad", np.eye(4), radius=0.0)
    with pytest.raises(HairWigError, match="magnet 'Bad': distance exponent must be in 0..20"):
        Magnet("Bad", np.eye(4), exponent=25)


def surface_ordered(n=20000, k=8, seed=0):
    """Strands sorted by root longitude, as hair grown or combed over a surface is stored."""
    h = strands(n=n, k=k, seed=seed)
    roots = h.points[h.offsets[:-1]]
    order = np.argsort(np.arctan2(roots[:, 1], roots[:, 0]))
    return HairSet(h.points.reshape(n, k, 3)[order].reshape(-1, 3), [k] * n, name="Hair")


class SmallTiles(MagnetWeights):
    TILE = 100            # spans of the wig (a split bake's parts) then start and end inside tiles


def test_block_sparse_weights_blend_exactly_as_the_dense_sum():
    h = surface_ordered()
    rng = np.random.default_rng(4)
    ring = [Magnet(f"M{i}", translate(1.3 * np.cos(a), 1.3 * np.sin(a), 0.6), radius=0.6)
            for i, a in enumerate(np.linspace(0, 2 * np.pi, 32, endpoint=False))]
    motions = np.array([rotation(rng.normal(size=3), 0.3, m.rest_position) @ translate(*rng.normal(0, 0.1, 3))
                        for m in ring])
    for cls in (MagnetWeights, SmallTiles):
        w = cls(h, h.points, ring, Profile.linear(0, 1), Profile.constant(1), "cap")
        dense = w.dense()
        # every point keeps its weights, but a tile stores only the magnets within reach
        assert w.magnets_per_point() < 0.5 * len(ring)
        assert w.nbytes < 0.5 * dense.nbytes
        rows = np.ascontiguousarray(h.points.T)
        moved = np.einsum("kp,kij,jp->ip", dense, motions[:, :3, :3] - np.eye(3), rows.astype(np.float64))
        moved += np.einsum("kp,ki->ip", dense, motions[:, :3, 3])
        # float64 reference on the same stored weights; the blend G = Σ W (M − I) over a point's
        # MAX_INFLUENCES magnets in float32 (M − I rounded, a product, a sum: 3 each), then G p
        # (3 products, 3 sums), the translation and out += (8), in whatever order the CPU's
        # BLAS and einsum sum them: roundings of values up to |p| and |G p|
        tol = rounding(magnitude(rows, moved), 3 * MAX_INFLUENCES + 8)
        for span in (slice(None), slice(37, 29111), slice(16000, 17000)):
            out = np.zeros_like(rows[:, span])
            w.displace_rows(np.ascontiguousarray(rows[:, span]), motions, out, span)
            np.testing.assert_allclose(out, moved[:, span], atol=tol)
    # a magnet standing still costs nothing and displaces nothing
    still = np.repeat(np.eye(4)[None], len(ring), axis=0)
    out = np.zeros_like(rows)
    assert not w.displace_rows(rows, still, out).any()


def test_weights_are_sparse_and_small():
    h = strands(n=2000, k=16)
    rng = np.random.default_rng(1)
    mags = [Magnet(f"M{i}", translate(*rng.uniform(-1, 1, 3)), radius=5.0) for i in range(32)]
    w = MagnetWeights(h, h.points, mags, Profile.constant(1), Profile.constant(1), "cap")
    dense = w.dense(h.num_points)
    assert (dense > 0).sum(axis=0).max() == 8        # only each vertex's 8 strongest magnets
    assert ((w.total > 0).sum() > 0) and (dense > 0).any(axis=0).sum() == (w.total > 0).sum()
    per_point = w.nbytes / h.num_points
    # 100k strands × 16 points × 32 magnets at this rate: well under 1 GiB
    assert per_point * 100_000 * 16 < 0.25 * 2**30


# --------------------------------------------------------------------------------- dynamics

@pytest.mark.parametrize("k, r, m", [(40.0, 2.0, 1.0), (40.0, 2 * np.sqrt(40.0), 1.0), (40.0, 50.0, 2.0)])
def test_spring_step_response_is_the_damped_oscillator(k, r, m):
    dyn = DynamicMagnets(["M"], [DynamicMagnet(mass=m, stiffness=k, damping=r, gravity_max=0.0)])
    pos, vel = np.zeros((1, 3)), np.zeros((1, 3))
    target = np.array([[1.0, 0, 0]])
    got = []
    for _ in range(48):
        dyn.step(pos, vel, target, target, DT, np.zeros(3), np.array([0, 0, 1.0]), [], 0.0)
        got.append(pos[0, 0])
    t = DT * np.arange(1, 49)
    w0, zeta = np.sqrt(k / m), r / (2 * np.sqrt(k * m))
    if zeta < 1:
        wd = w0 * np.sqrt(1 - zeta**2)
        x = 1 - np.exp(-zeta * w0 * t) * (np.cos(wd * t) + zeta * w0 / wd * np.sin(wd * t))
    elif zeta == 1:
        x = 1 - np.exp(-w0 * t) * (1 + w0 * t)
    else:
        s1, s2 = -w0 * (zeta - np.sqrt(zeta**2 - 1)), -w0 * (zeta + np.sqrt(zeta**2 - 1))
        x = 1 - (s2 * np.exp(s1 * t) - s1 * np.exp(s2 * t)) / (s2 - s1)
    np.testing.assert_allclose(got, x, atol=1e-9)      # the step is exact, not just of some order


def test_spring_stays_bounded_at_extreme_stiffness():
    for k in (1e4, 1e6):
        for r in (0.0, 1e-3, 1e4):
            e = spring_step_coefficients(k, r, 1.0, DT)
            y, v = 1.0, 0.0
            peak = 0.0
            for _ in range(2000):
                y, v = e[0] * y + e[1] * v, e[2] * y + e[3] * v
                peak = max(peak, abs(y))
            assert np.isfinite(y) and peak <= 1.0 + 1e-9, (k, r, peak)


def test_dynamic_magnet_settles_gravity_and_dynablend():
    up = np.array([0, 0, 1.0])
    s = DynamicMagnet(stiffness=50.0, damping=10.0, gravity_max=9.81)
    dyn = DynamicMagnets(["M"], [s])
    target = np.array([[0.0, 0, 1]])
    for head_up, sag in ((up, 0.0), (-up, 9.81 / 50.0)):
        pos, vel = target.copy(), np.zeros((1, 3))
        for _ in range(24 * 20):
            shown = dyn.step(pos, vel, target, target, DT, np.array([0, 0, -9.81]), head_up, [], 0.0)
        # float64 and settled (20 s at a decay rate of 5/s): 1e-9 is far above both
    np.testing.assert_allclose(shown[0], target[0] - [0, 0, sag], atol=1e-9)
    wind = ForceField(np.zeros(3), np.array([1.0, 0, 0]), strength=5.0)
    pos, vel = target.copy(), np.zeros((1, 3))
    for _ in range(24 * 20):
        dyn.step(pos, vel, target, target, DT, np.zeros(3), up, [wind], 0.0)
    np.testing.assert_allclose(pos[0], target[0] + [5.0 / 50.0, 0, 0], atol=1e-9)
    far = ForceField(np.zeros(3), np.array([1.0, 0, 0]), strength=5.0, max_distance=0.5, shape="POINT")
    assert np.allclose(far.force(np.array([[2.0, 0, 0]]), 0.0), 0)


def moving_magnet_inputs(frames=40, dynamic=None, head=None):
    h = strands()
    mag = Magnet("M", translate(0, 0, 1.5), radius=3.0, dynamic=dynamic)
    head = np.eye(4) if head is None else head
    inputs = [FrameInput(np.eye(4), head, np.array([translate(0.05 * min(f, 20), 0, 1.5)]), time=f * DT)
              for f in range(frames)]
    return h, mag, inputs


def run(wig, inputs):
    state, out = None, []
    for inp in inputs:
        p, state = wig.step(inp, state)
        out.append(p)
    return np.array(out), state


def test_dynablend_zero_is_the_simple_magnet_and_one_lags():
    h, simple, inputs = moving_magnet_inputs()
    base, _ = run(Wig(h, np.eye(4), np.eye(4), [simple], no_refinement()), inputs)
    for blend in (0.0, 1.0):
        dyn = Magnet("M", simple.rest_matrix, radius=3.0,
                     dynamic=DynamicMagnet(stiffness=30, damping=3, dynablend=blend))
        got, state = run(Wig(h, np.eye(4), np.eye(4), [dyn], no_refinement()), inputs)
        if blend == 0:
            assert np.array_equal(got, base)
        else:
            assert np.abs(got[10] - base[10]).max() > 1e-3       # lags while the key moves
            assert state.magnet_pos.shape == (1, 3)


def test_secondary_lags_then_returns_to_style():
    h, mag, inputs = moving_magnet_inputs(frames=24 * 8)
    sec = WigSettings(use_length=False, use_collision=False,
                      dynamics=SpringSettings(stiffness=60, damping=6, random=0.2, seed=3))
    base, _ = run(Wig(h, np.eye(4), np.eye(4), [mag], no_refinement()), inputs)
    got, state = run(Wig(h, np.eye(4), np.eye(4), [mag], sec), inputs)
    t = h.vertex_t()
    lag = np.abs(got[10] - base[10]).max(axis=1)
    assert lag[t > 0.5].mean() > 1e-3 and lag[t == 0].max() == 0      # tips lag, roots pinned
    assert (got[10][t == 1, 0] < base[10][t == 1, 0]).all()         # behind the motion (+x)
    # back to the style at rest. The lag (<= the magnet's 1 m travel) has decayed for 7 s at
    # r / 2m >= 2.4/s: e^-17 of it, 4e-8. What is left is rounding: ~13 roundings a frame of
    # world coordinates up to |x| (there to the world and back, the spring step), remembered by
    # the springs for ~1 / (2.4 dt) = 10 frames; counted over a second (24 frames) for the
    # oscillator's transient. A spring left off its style by a bug is off by mm at least.
    settled = 1.0 * np.exp(-2.4 * DT * (len(inputs) - 20))
    np.testing.assert_allclose(got[-1], base[-1], atol=settled + rounding(magnitude(base), 13 * 24))
    springs = SecondarySprings(h.strand_of_point(), h.num_strands, t, 60, 6, random=0.2, seed=3)
    again = SecondarySprings(h.strand_of_point(), h.num_strands, t, 60, 6, random=0.2, seed=3)
    assert np.array_equal(springs.k, again.k) and np.ptp(springs.k) > 0


# -------------------------------------------------------------------------------- refinement

def test_compression_scales_only_the_inward_part():
    rest = np.array([[0, 0, 2.0], [0, 0, 2.0], [2.0, 0, 0]], np.float32)
    moved = rest + np.array([[0.3, 0, -0.5], [0.3, 0, 0.5], [-1.0, 1.0, 0]], np.float32)
    alpha = np.full((3, 1), 0.25, np.float32)
    out = compensate_compression(rest, moved, np.zeros(3), alpha, np.empty_like(moved))
    # d = p − rest (1), d·c (5), (α − 1) / |c|² (7), c · that (2), p += (1), out − rest (1):
    # 17 roundings of values up to |x| (the 0.3 of the input itself is a float32 too)
    tol = rounding(magnitude(rest, moved), 17)
    np.testing.assert_allclose(out[0] - rest[0], [0.3, 0, -0.125], atol=tol)   # inward: scaled
    np.testing.assert_allclose(out[1] - rest[1], [0.3, 0, 0.5], atol=tol)      # outward: kept
    np.testing.assert_allclose(out[2] - rest[2], [-0.25, 1.0, 0], atol=tol)    # tangent kept


@pytest.mark.parametrize("counts", [[8] * 30, [3, 8, 5, 12] * 5])
def test_length_control(counts):
    rng = np.random.default_rng(2)
    pts = rng.normal(size=(sum(counts), 3)).astype(np.float32)
    h = HairSet(pts, counts)
    stretched = pts * 1.7 + rng.normal(0, 0.1, pts.shape).astype(np.float32)
    stretched[h.offsets[:-1]] = pts[h.offsets[:-1]]
    rest_len = h.strand_lengths()
    p = LengthControl(h, 0.0, "STRAND").apply(stretched.copy())
    # Each point is placed (difference, scale, cumulative sum along the strand: ~3 roundings of
    # |x| <= M each, n points) and every length is summed over its n − 1 segments (norms: 4
    # roundings of a segment each), by the core and again here: relative to the shortest
    # strand L, n (3 M / L + 8) roundings of 1. A length not restored is off by percents.
    n, big, short = max(counts), magnitude(stretched), rest_len.min()
    np.testing.assert_allclose(h.strand_lengths(p), rest_len, rtol=rounding(1.0, n * (3 * big / short + 8)))
    np.testing.assert_array_equal(p[h.offsets[:-1]], pts[h.offsets[:-1]])
    assert np.array_equal(LengthControl(h, 1.0).apply(stretched.copy()), stretched)
    p = LengthControl(h, 0.0, "SEGMENT").apply(stretched.copy())
    # a segment's end is placed by one follow step (what it leaves in the length: SEGMENT)
    # and measured here (difference, norm: 4): 12 roundings of coordinates up to |x|
    np.testing.assert_allclose(h.segment_lengths(p), h.segment_lengths(), rtol=0,
                               atol=rounding(magnitude(stretched, p), SEGMENT + NORM))
    half = LengthControl(h, 0.5, "STRAND").apply(stretched.copy())
    ratio = h.strand_lengths(half) / rest_len
    assert np.all(ratio > 1.0) and np.all(ratio < h.strand_lengths(stretched) / rest_len)


@pytest.mark.parametrize("offset", [0.0, 0.05])
def test_the_ray_test_pushes_every_vertex_out_of_a_sphere(offset):
    v, tris = sphere_mesh(1.0)
    rmap = RadiusMap(v, tris, centre=np.zeros(3))
    assert rmap.missed == 0
    rng = np.random.default_rng(4)
    p = rng.normal(size=(5000, 3)).astype(np.float32) * 0.6
    new, moved = RayField(rmap).project(p, np.full(len(p), offset))
    p[moved] = new
    assert moved.size > 1000 and (np.linalg.norm(p[moved], axis=1) > 0.99).all()
    r = np.linalg.norm(p, axis=1)
    surface = farthest_hits(np.zeros(3), p / r[:, None], v[tris])     # the exact ray test
    # The map's radii bound the surface from outside (neighbourhood maxima) but are float32 (1)
    # read bilinearly (4); the point placed on its ray in float64 is stored as float32 (1); its
    # |p| here in float32 (4); the exact test's ray, p / |p|, is off by eps32 in direction, where
    # the faceted sphere's radius changes by its facets' slope (< 0.1) x that: 11 roundings of
    # 1 + offset. A point left inside is off by the push it missed, millimetres.
    assert (r >= surface + offset - rounding(1.0 + offset, 11)).all()
    # the faceted sphere itself: float64 hits on vertices at radius 1 stored as float32
    assert rmap.radii.max() <= 1.0 + rounding(1.0, 1) and rmap.radii.min() > 0.99


def test_refinement_keeps_hair_out_of_head_and_length():
    v, tris = sphere_mesh(1.0)
    h = strands(n=80, k=10, length=0.8)
    mag = Magnet("M", translate(0, 0, 1.8), radius=2.5)
    settings = WigSettings(compression=Profile.constant(0.5), elasticity=0.0)
    wig = Wig(h, np.eye(4), np.eye(4), [mag], settings, head_mesh=(v, tris), head_centre=np.zeros(3))
    push = translate(0, 0, -1.5)                    # pull the hair into the head
    p, _ = wig.step(FrameInput(np.eye(4), np.eye(4), np.array([push @ mag.rest_matrix])))
    t = h.vertex_t()
    r = np.linalg.norm(p, axis=1)
    assert r.min() < 1.2 < r.max()              # the magnet did pull hair down onto the head
    surface = farthest_hits(np.zeros(3), p[t > 0] / r[t > 0, None], v[tris])
    # no vertex inside the head (exact ray test): the last to place a point is the push-out
    # (onto the exact surface, then back on its segment: ~8 roundings) after the walk carried the
    # points before it (FOLLOW roundings per point, k points), and |p| here (4): of |x| <= magnitude
    assert (r[t > 0] >= surface - rounding(magnitude(p), FOLLOW * 10 + 8 + NORM)).all()
    np.testing.assert_array_equal(p[t == 0], h.points[t == 0])      # roots stay on the scalp


def test_head_moves_rigidly_with_full_refinement():
    v, tris = sphere_mesh(1.0)
    h = strands()
    wig = Wig(h, np.eye(4), np.eye(4), [], WigSettings(compression=Profile.constant(0.3)),
              head_mesh=(v, tris))
    head = translate(1, 2, 3) @ rotation((0, 1, 1), 0.9)
    p, _ = wig.step(FrameInput(np.eye(4), head))
    expect = h.points @ head[:3, :3].T + head[:3, 3]
    # head-local: the length walk re-places every point (FOLLOW roundings, carried root to tip over
    # 8 points) of |x| <= |rest|; then to the object: 3 products, 3 sums and the shift (7) of
    # |x| <= |expect|. Hair that does not move rigidly is off by millimetres at least.
    tol = rounding(magnitude(h.points), FOLLOW * 8) + rounding(magnitude(expect), AFFINE)
    np.testing.assert_allclose(p, expect, atol=tol)


def test_same_inputs_same_bake_bit_for_bit():
    v, tris = sphere_mesh(1.0)
    h, _, inputs = moving_magnet_inputs(frames=30)
    dyn = Magnet("M", translate(0, 0, 1.5), radius=3.0, dynamic=DynamicMagnet(stiffness=20, damping=2))
    settings = WigSettings(dynamics=SpringSettings(seed=5), compression=Profile.linear(1, 0.5))
    runs = [run(Wig(h, np.eye(4), np.eye(4), [dyn], settings, head_mesh=(v, tris)), inputs) for _ in range(2)]
    assert np.array_equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]
    # Saving the state half-way and resuming gives the same frames.
    wig = Wig(h, np.eye(4), np.eye(4), [dyn], settings, head_mesh=(v, tris))
    _, mid = run(wig, inputs[:15])
    saved = mid.copy()
    rest, _ = run_from(wig, inputs[15:], saved)
    assert np.array_equal(rest, runs[0][0][15:]) and saved == mid


def run_from(wig, inputs, state):
    out = []
    for inp in inputs:
        p, state = wig.step(inp, state)
        out.append(p)
    return np.array(out), state


def test_frames_without_dynamics_can_be_computed_in_any_order():
    v, tris = sphere_mesh(1.0)
    h, mag, inputs = moving_magnet_inputs(frames=12)
    wig = Wig(h, np.eye(4), np.eye(4), [mag], WigSettings(compression=Profile.constant(0.5)),
              head_mesh=(v, tris))
    assert not wig.has_dynamics
    in_order, _ = run(wig, inputs)
    for f in (7, 2, 11, 0, 7):
        alone, _ = wig.step(inputs[f])
        assert np.array_equal(alone, in_order[f])


def test_threads_and_in_place_state_give_the_same_bake_bit_for_bit():
    """The wig's kernels on one numba thread and on two, the state kept or advanced in place:
    the same bits (``threads`` is accepted and plans nothing)."""
    v, tris = sphere_mesh(1.0)
    h, _, inputs = moving_magnet_inputs(frames=10)
    dyn = Magnet("M", translate(0, 0, 1.5), radius=3.0, dynamic=DynamicMagnet(stiffness=20, damping=2))
    settings = WigSettings(dynamics=SpringSettings(seed=5), compression=Profile.linear(1, 0.5))
    one = Wig(h, np.eye(4), np.eye(4), [dyn], settings, head_mesh=(v, tris))
    two = Wig(h, np.eye(4), np.eye(4), [dyn], settings, head_mesh=(v, tris), threads=2)
    with numba_threads(1):
        expect, _ = run(one, inputs)
    state, timings = None, {}
    with numba_threads(2):
        for f, inp in enumerate(inputs):
            got, state = two.step(inp, state, keep_state=False, timings=timings)
            assert np.array_equal(got, expect[f])
    assert set(timings) == {"primary", "dynamics", "compression", "length", "collision", "output"}


def test_weights_stay_finite_for_subnormal_and_extreme_magnet_settings():
    """Found by tests/test_stability.py: a multiplier of 1e-308 made 'sum' normalisation divide
    by a subnormal total; radius 1e-4 with exponent 20 overflowed float32."""
    h = strands(n=30, k=8, length=0.6)
    on_vertex = translate(*h.points[3])
    for mags in ([Magnet("Tiny", translate(1.3, 0, 0.8), multiplier=2.8e-308, radius=1.0)],
                 [Magnet("Sharp", on_vertex, radius=1e-4, exponent=20), Magnet("Wide", on_vertex, radius=5)]):
        for norm in ("sum", "cap"):
            w = MagnetWeights(h, h.points, mags, Profile.linear(0, 1), Profile.constant(1), norm).dense()
            # up to MAX_INFLUENCES weights, each w / Σw stored as float32 and added: 2 each
            assert np.isfinite(w).all() and w.max() <= 1.0 and w.sum(axis=0).max() <= 1.0 + rounding(1.0, 2 * MAX_INFLUENCES)


def test_gravity_tilt_is_measured_from_the_heads_rest_orientation():
    """SPEC §4: the head's up axis u is the world's up as it was in the head's rest pose, turned
    with the head since. A head modelled Y-up (rotated 90° about X at rest) is upright at rest, so
    its dynamic magnet does not sag; turned upside down from that pose, the magnet settles the
    full m·g/k below its target (G = linear, so G(1) = 1)."""
    h = strands(n=20, k=6, length=0.5)
    k, g = 50.0, 9.81
    mag = Magnet("M", translate(0, 0, 1.5), radius=3.0,
                 dynamic=DynamicMagnet(stiffness=k, damping=20.0, mass=1.0, gravity_max=g))
    y_up = rotation((1, 0, 0), np.pi / 2)
    for head, sag in ((y_up, 0.0), (rotation((1, 0, 0), np.pi) @ y_up, g / k)):
        wig = Wig(h, y_up, y_up, [mag], no_refinement())
        state = None
        for f in range(300):
            inp = FrameInput(head, head, np.array([head @ mag.rest_matrix]), time=f * DT)
            _, state = wig.step(inp, state)
        target = (head @ mag.rest_matrix)[:3, 3]
        # float64, settled (300 frames at a decay rate of 10/s): 1e-9 is far above both
        np.testing.assert_allclose(state.magnet_shown[0] - target, [0.0, 0.0, -sag], atol=1e-9)


def test_the_same_answer_scaled_x100_and_moved_1000_units():
    """Issue 13: the whole scene scaled ×100 and moved 1000 units from the origin (hair, head and
    magnets; the collision offset, a world distance, ×100) gives the same hair in its own object
    space, through magnets, length control and collision on the head's field."""
    v, tris = sphere_mesh(1.0)
    h = strands(n=80, k=10, length=0.8)
    world = translate(1000.0, -1000.0, 1000.0) @ np.diag([100.0, 100.0, 100.0, 1.0])

    def run(w, s):
        mag = Magnet("M", translate(0, 0, 1.8), radius=2.5)           # head-local, as bound
        settings = WigSettings(compression=Profile.constant(0.5), elasticity=0.0, collision_offset=0.02 * s)
        wig = Wig(h, w, w, [mag], settings, head_mesh=(v, tris))
        pulled = w @ translate(0.3, 0, 0.3) @ translate(0, 0, -1.5) @ translate(0, 0, 1.8)
        p, _ = wig.step(FrameInput(w, w, np.array([pulled])))
        return p, wig

    base, wig = run(np.eye(4), 1.0)
    far, wig_far = run(world, 100.0)
    assert np.abs(base - h.points).max() > 0.3                       # the hair was pulled into the head
    assert wig.residual <= 1e-3 * 2                                    # and kept out (2 mm on a 1 m head)
    # object space: the same hair. The two scenes' float64 matrices (coordinates up to 1.7e3)
    # reach head-local space 1e-13 apart, a last bit of the float32 inputs at most; from there
    # both round alike but for that bit, carried through one frame: primary (12), compression
    # (12), and per point of the 10-point walk a length step (FOLLOW) and the push-out onto the
    # field (~20: closest point, onto the circle), carried to the tip. Coordinates up to |x|.
    # Hair pulled 0.3 elsewhere by a unit slip would be off by millimetres at least.
    tol = rounding(magnitude(base), 12 + 12 + 10 * (FOLLOW + 20))
    np.testing.assert_allclose(far, base, atol=tol)
    assert abs(wig_far.residual - wig.residual) <= tol


def _grass(n=41, k=4):
    """Blades of height 0.3 standing on the plane z = 0 at x = 0, 0.1, ... 4."""
    x = np.linspace(0.0, 4.0, n)
    t = np.linspace(0.0, 0.3, k)
    pts = np.stack(np.broadcast_arrays(x[:, None], 0.0, t[None, :]), -1).reshape(-1, 3)
    return HairSet(pts, [k] * n, name="Grass")


def test_a_reach_that_follows_the_magnet_takes_what_it_passes_and_lets_it_go():
    """A following magnet (issue 14 part 2) sweeping at constant speed v through blades: every
    point within its radius of where it is moves by its motion over the trail, v · trail (flex,
    falloff and weight all 1), nothing outside moves, and once it has passed and stopped every
    blade is back at rest. The same magnet bound at rest (the patent's) moves only what lay
    within reach of where it rested, by its whole travel."""
    h = _grass()
    v, trail, radius = 0.1, 3, 0.35
    one = Profile.constant(1.0)

    def path(f):                                     # from x = -1 across the blades, then still
        return translate(-1.0 + v * min(f, 40), 0, 0.15)

    inputs = [FrameInput(np.eye(4), np.eye(4), np.array([path(f)])) for f in range(50)]
    mag = Magnet("Sweep", path(0), radius=radius, falloff=one, follow=True, trail=trail)
    wig = Wig(h, np.eye(4), np.eye(4), [mag], no_refinement(flex=one))
    frames, state = run(wig, inputs)
    for f in (10, 20, 30):
        centre = path(f)[:3, 3]
        reached = np.linalg.norm(h.points - centre, axis=1) <= radius
        assert reached.any()
        shift = v * min(trail, f)
        # the trail motion A − I as float32 (1), G p (6), + translation, + p (2): 9 roundings
        tol = rounding(magnitude(h.points) + shift, 9)
        np.testing.assert_allclose(frames[f][reached], h.points[reached] + [shift, 0, 0], atol=tol)
        np.testing.assert_array_equal(frames[f][~reached], h.points[~reached])
    np.testing.assert_array_equal(frames[49], h.points)             # passed and still: all back
    assert state.magnet_history.shape == (trail + 1, 1, 4, 4)
    # bound at rest: only what lay within reach of x = -1 — nothing here
    rest = Wig(h, np.eye(4), np.eye(4), [Magnet("Sweep", path(0), radius=radius, falloff=one)],
               no_refinement(flex=one))
    np.testing.assert_array_equal(run(rest, inputs)[0][20], h.points)


def test_following_and_resting_magnets_share_one_normalisation():
    """Where a following magnet overlaps one bound at rest, 'cap' adds their pulls up to one full
    pull and 'sum' shares it: with weights 1 and translations a and b, a point reached by both
    moves by (a + b) / 2 under either rule (Σ w = 2), a point reached by one only by its own."""
    h = _grass(n=21)
    one = Profile.constant(1.0)
    a, b = np.array([0.0, 0.2, 0.0]), np.array([0.0, 0.0, 0.1])
    rest_mag = Magnet("Rest", translate(1.0, 0, 0), radius=1.05, falloff=one)
    follow_mag = Magnet("Follow", translate(2.0, 0, 0), radius=1.05, falloff=one, follow=True, trail=1)
    for rule in ("cap", "sum"):
        wig = Wig(h, np.eye(4), np.eye(4), [rest_mag, follow_mag], no_refinement(flex=one, normalisation=rule))
        still = FrameInput(np.eye(4), np.eye(4), np.array([rest_mag.rest_matrix, translate(2.0, 0, 0)]))
        moved = FrameInput(np.eye(4), np.eye(4), np.array([translate(*a) @ rest_mag.rest_matrix,
                                                           translate(2.0 + b[0], b[1], b[2])]))
        out, state = wig.step(still)
        out, _ = wig.step(moved, state)
        x = h.points[:, 0]
        near_rest = np.abs(x - 1.0) <= 1.05
        near_follow = np.linalg.norm(h.points - (2.0 + b[0], b[1], b[2]), axis=1) <= 1.05
        both = near_rest & near_follow
        assert both.any() and (near_rest & ~near_follow).any() and (near_follow & ~near_rest).any()
        # two magnets: each M − I as float32 and blended (3 each), G p (6), + translation, + p,
        # out − p here (3): 15 roundings of |x| up to the blades' farthest point
        tol = rounding(magnitude(h.points), 15)
        np.testing.assert_allclose(out[both] - h.points[both], np.broadcast_to((a + b) / 2, (both.sum(), 3)), atol=tol)
        np.testing.assert_allclose(out[near_rest & ~near_follow] - h.points[near_rest & ~near_follow],
                                   np.broadcast_to(a, ((near_rest & ~near_follow).sum(), 3)), atol=tol)
        np.testing.assert_allclose(out[near_follow & ~near_rest] - h.points[near_follow & ~near_rest],
                                   np.broadcast_to(b, ((near_follow & ~near_rest).sum(), 3)), atol=tol)


def _leading_hair(n=24, k=10):
    """Straight strands 0.5 long growing radially out of the unit sphere's +x side (within 40° of
    +x), the head ``sphere_mesh`` — what a head jumping +x carries into itself."""
    a = np.linspace(-0.7, 0.7, n)
    dirs = np.stack([np.cos(a), np.zeros(n), np.sin(a)], axis=1)
    pts = dirs[:, None] * (1.0 + np.linspace(0.0, 0.5, k))[None, :, None]
    return HairSet(pts.reshape(-1, 3).astype(np.float32), np.full(n, k), name="Leading")


def _jump(absorb=True):
    """The leading hair with Springs on a unit sphere that jumps 0.3 along +x in one frame: the
    springs lag behind it, into the head, and the walk pushes those points out."""
    from hair_wig.springs import SpringLayer
    v, tris = sphere_mesh(1.0)
    wig = Wig(_leading_hair(), np.eye(4), np.eye(4), [Magnet("M", translate(0, 0, 5), radius=0.001)],
              WigSettings(dynamics=SpringSettings(random=0.0)), head_mesh=(v, tris))
    if not absorb:
        wig.layer.absorb = lambda state, moved, frame: None
    state = None
    for x in (0.0, 0.3):
        m = translate(x, 0, 0)
        out, state = wig.step(FrameInput(m, m, np.array([translate(0, 0, 5)])), state)
    layer = state.layer
    # each point as its spring would now show it (``spring_follow``'s y' = pos − T, in head-local
    # axes, times its blend): where the next frame's springs start from
    goal = wig.rest_rows.astype(np.float64)
    head = translate(0.3, 0, 0)
    target = head[:3, :3] @ goal + head[:3, 3:] - wig.head_rest[:3, 3:]
    lag = np.linalg.inv(head[:3, :3]) @ (layer["pos"].astype(np.float64) - target)
    shown = goal + wig.layer.springs.blend[None].astype(np.float64) * lag
    return wig, shown, layer


def test_a_spring_pushed_deep_into_the_head_is_carried_out_with_its_point():
    """Springs feel the head where it pushes them deep (``SpringLayer.absorb``, ``Wig.
    _contacts_only``): a unit sphere jumps 0.3 in one frame and the springs of hair on its
    leading side lag up to 0.3 into it. Each spring whose point a contact pushed out by half a
    reach (``DEEP_PUSH`` of its segment) or more moves out with it along the push — all of the
    push beyond the reach, a share below: shown as it now lies, its point is no deeper than half
    the reach inside its limit (along a convex surface the walk's other moves lead outward), and
    it keeps no speed into the head along that push. Left where they lagged, the springs would
    show their points more than 0.1 m inside."""
    from hair_wig.pipeline import DEEP_PUSH
    wig, shown, layer = _jump()
    _, left, _ = _jump(absorb=False)
    c = wig.colliders[0]
    carried = np.flatnonzero(np.abs(shown - left).max(axis=0) > 0)
    assert carried.size > 10
    before = c.limit[carried] - c.field.signed_distance(left[:, carried].T)
    assert before.min() > 0 and before.max() > 0.1                    # every one inside, some deep
    inside = c.limit[carried] - c.field.signed_distance(shown[:, carried].T)
    seg = 0.5 / 9
    assert inside.max() <= 0.5 * DEEP_PUSH * seg + rounding(1.5, 16)
    push = wig.walk.pushes[:, carried].astype(np.float64)
    v = np.linalg.inv(translate(0.3, 0, 0)[:3, :3]) @ layer["vel"][:, carried].astype(np.float64)
    assert (np.einsum("kp,kp->p", v, push) >= -rounding(magnitude(v), 8)).all()


def test_springs_absorb_is_the_push_over_the_blend_and_no_speed_into_the_surface():
    """``SpringLayer.absorb`` on its own: a push ``Δ`` (head-local) at a point shown with blend
    ``b`` moves its spring by ``A Δ / b`` (``A`` the head's turn) exactly, takes its speed into
    the surface out and keeps its speed along it; a point shown with less than the floor of its
    spring, and a point not pushed, keep their springs bit for bit."""
    from hair_wig.dynamics_layer import LayerFrame
    from hair_wig.springs import SpringLayer
    wig = Wig(_leading_hair(2, 10), np.eye(4), np.eye(4), [Magnet("M", translate(0, 0, 5), radius=0.001)],
              WigSettings(dynamics=SpringSettings(random=0.0)))
    layer = wig.layer
    assert isinstance(layer, SpringLayer)
    blend = layer.springs.blend
    head = rotation((0, 0, 1), 0.7)
    frame = LayerFrame(1 / 24, 0.0, np.zeros(3), [], head, np.linalg.inv(head), np.eye(4), slice(None))
    pos = np.random.default_rng(0).normal(size=(3, 20)).astype(np.float32)
    vel = np.zeros((3, 20), np.float32)
    vel[:, 5] = head[:3, :3] @ np.array([-2.0, 0.5, 0.0])              # into the push (−x), along it (y)
    state = {"pos": pos.copy(), "vel": vel.copy()}
    moved = np.zeros((3, 20))
    moved[0, [0, 5]] = 0.04                                          # point 0: a root, shown where its goal is
    assert blend[0] < SpringLayer.BLEND_FLOOR <= blend[5]
    layer.absorb(state, moved, frame)
    expected = pos[:, 5].astype(np.float64) + head[:3, :3] @ np.array([0.04, 0, 0]) / np.float64(blend[5])
    np.testing.assert_allclose(state["pos"][:, 5], expected, rtol=0, atol=rounding(magnitude(expected), 2))
    np.testing.assert_allclose(np.linalg.inv(head[:3, :3]) @ state["vel"][:, 5], [0.0, 0.5, 0.0],
                               rtol=0, atol=rounding(2.0, 4))
    keep = np.arange(20) != 5
    np.testing.assert_array_equal(state["pos"][:, keep], pos[:, keep])
    np.testing.assert_array_equal(state["vel"][:, keep], vel[:, keep])
