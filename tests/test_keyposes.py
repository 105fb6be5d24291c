"""Keyframed hairstyles in the numpy core (seed 002): matching, mass sampling, paths, slow-in/
slow-out with the direction check, air-drag noise, collision, leaders and imitators. No bpy."""

import numpy as np
import pytest

from hair_wig.collision import MeshField, exact_signed_distance
from hair_wig.keyposes import (KeyedStyle, KeyPose, LeaderFollow, StyleSettings, build_tracks, imitate,
                               imitator_roots_uv, match_wisps, resample)
from tolerance import FOLLOW, NORM, magnitude, rounding

# pose(): the in-between of a point as a cubic in float32 by Horner's rule (3 products, 3 sums),
# its coefficients differences of the keys (3) and its warp in time, a float32 w times
# displacements no larger than the points (1): 10 roundings of |x|
POSE = 10


def strands(n=30, k=6, seed=0, length=0.3):
    """``n`` strands of ``k`` points rooted on the unit sphere's upper half; roots and their UVs."""
    rng = np.random.default_rng(seed)
    uv = rng.uniform(0.05, 0.95, (n, 2))
    theta, phi = uv[:, 0] * np.pi / 2, uv[:, 1] * 2 * np.pi
    roots = np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], 1)
    t = np.linspace(0, length, k)
    pts = roots[:, None, :] * (1 + t[None, :, None]) + rng.normal(0, 0.01, (n, k, 3)) * t[None, :, None]
    return pts.astype(np.float32), uv.astype(np.float32)


def key(frame, pts, uv, name="Hair"):
    return KeyPose(frame, pts.reshape(-1, 3), np.full(len(pts), pts.shape[1]), uv, name)


def swung(pts, dx=0.0, dz=0.0):
    """Strands bent by moving every point by (dx, 0, dz) times its distance along the strand."""
    w = np.linspace(0, 1, pts.shape[1])[None, :, None]
    return (pts + w * np.array([dx, 0.0, dz], np.float32)).astype(np.float32)


@pytest.mark.parametrize("path", ["LINEAR", "SMOOTH"])
@pytest.mark.parametrize("slow", [True, False])
def test_key_poses_are_reached_exactly_at_their_frames(path, slow):
    pts, uv = strands()
    keys = [key(1, pts, uv), key(9, swung(pts, 0.3), uv), key(20, swung(pts, -0.2, 0.1), uv)]
    style = KeyedStyle(keys, StyleSettings(path=path, slow_in_out=slow, noise=0.05))
    for k in keys:
        assert np.array_equal(style.pose(k.frame, noise=False), k.points)
    assert np.array_equal(style.pose(-5, noise=False), keys[0].points)      # held before and after
    assert np.array_equal(style.pose(40, noise=False), keys[-1].points)


@pytest.mark.parametrize("path", ["LINEAR", "SMOOTH"])
def test_in_betweens_of_identical_key_poses_are_that_pose(path):
    pts, uv = strands()
    style = KeyedStyle([key(1, pts, uv), key(12, pts, uv)], StyleSettings(path=path))
    for f in np.linspace(1, 12, 23):
        np.testing.assert_allclose(style.pose(f), pts.reshape(-1, 3), atol=rounding(magnitude(pts), POSE))


def test_matching_recovers_a_known_permutation_in_uv_and_in_position():
    pts, uv = strands(200, 5)
    perm = np.random.default_rng(3).permutation(200)
    a = key(1, pts, uv)
    b = key(10, swung(pts[perm], 0.2), uv[perm])
    assert np.array_equal(perm[match_wisps(a, b)], np.arange(200))
    a0, b0 = key(1, pts, None), key(10, pts[perm], None)                 # no UV map: root positions
    assert np.array_equal(perm[match_wisps(a0, b0)], np.arange(200))
    tracks = build_tracks([a, b])
    assert np.array_equal(perm[tracks.curve[1]], np.arange(200)) and tracks.num_tracks == 200
    style = KeyedStyle([a, b])
    np.testing.assert_array_equal(style.pose(10).reshape(200, 5, 3), swung(pts, 0.2))
    assert np.array_equal(style.roots_uv, uv)                        # each track keeps its root's UV


def test_resampling_keeps_shape_and_length_and_follows_the_thesis_distribution():
    rng = np.random.default_rng(1)
    counts = np.array([6, 2, 5, 9])
    pts = rng.normal(size=(counts.sum(), 3)).astype(np.float32)
    new = np.array([12, 7, 5, 10])
    out = resample(pts, counts, new)
    off, noff = np.r_[0, np.cumsum(counts)], np.r_[0, np.cumsum(new)]
    for c in range(len(counts)):
        old, got = pts[off[c]:off[c + 1]].astype(np.float64), out[noff[c]:noff[c + 1]].astype(np.float64)
        assert np.array_equal(got[0], old[0]) and np.array_equal(got[-1], old[-1])
        seg = lambda p: np.linalg.norm(np.diff(p, axis=0), axis=1).sum()
        # each new point a + (b − a) t in float32 (t, the difference, product and sum: 4
        # roundings of |x|) moves the two pieces it ends by that; summed over the pieces,
        # relative to the curve's length (measured in float64 here)
        big = magnitude(old)
        assert seg(got) == pytest.approx(seg(old), rel=rounding(big / seg(old), 2 * 4 * new[c]))   # the same length
        # every new point lies on an old segment
        a, b = old[:-1], old[1:]
        d = b - a
        t = np.clip(np.einsum("qsk,sk->qs", got[:, None] - a[None], d) / np.einsum("sk,sk->s", d, d), 0, 1)
        dist = np.linalg.norm(got[:, None] - (a[None] + t[..., None] * d[None]), axis=2).min(axis=1)
        assert dist.max() <= rounding(big, 4)
    # thesis fig. 4.5: 6 points to 12, one extra on each of the 5 segments and the 6th on the first
    first = out[:12]
    # float32 on both sides, t = 1/3 rounded once or divided by 3: 4 + 3 roundings of |x|
    tol = rounding(magnitude(pts[:3]), 7)
    np.testing.assert_allclose(first[1], pts[0] + (pts[1] - pts[0]) / 3, atol=tol)
    np.testing.assert_allclose(first[3], pts[1], atol=0)
    np.testing.assert_allclose(first[4], (pts[1] + pts[2]) / 2, atol=tol)


def test_unmatched_curves_grow_from_their_root_or_split_from_their_neighbour():
    pts, uv = strands(10, 4)
    extra_pts, extra_uv = strands(1, 6, seed=9)
    a = key(1, pts, uv)
    b = KeyPose(11, np.concatenate([pts.reshape(-1, 3), extra_pts.reshape(-1, 3)]),
                np.r_[np.full(10, 4), 6], np.concatenate([uv, extra_uv]))
    grow = KeyedStyle([a, b], StyleSettings(unmatched="GROW"))
    assert grow.tracks.num_tracks == 11 and grow.counts[-1] == 6
    new = slice(grow.offsets[10], grow.offsets[11])
    at1, at6, at11 = grow.pose(1)[new], grow.pose(6)[new], grow.pose(11)[new]
    length = lambda p: np.linalg.norm(np.diff(p, axis=0), axis=1).sum()
    assert length(at1) == 0 and np.allclose(at1, extra_pts[0, 0], rtol=0,           # collapsed on its root
                                            atol=rounding(magnitude(extra_pts), POSE))
    assert 0 < length(at6) < length(at11) and np.array_equal(at11, extra_pts[0])
    split = KeyedStyle([a, b], StyleSettings(unmatched="SPLIT"))
    parent = int(np.argmin(np.linalg.norm(uv - extra_uv[0], axis=1)))
    np.testing.assert_allclose(split.pose(1)[new], resample(pts[parent], [4], [6]), atol=0)
    # and a curve that disappears shrinks to its root (GROW) or merges (SPLIT)
    shrink = KeyedStyle([b, key(21, pts, uv)], StyleSettings(unmatched="GROW"))
    last = shrink.pose(21)
    lone = slice(shrink.offsets[10], shrink.offsets[11])
    assert np.ptp(last[lone], axis=0).max() == 0
    merge = KeyedStyle([b, key(21, pts, uv)], StyleSettings(unmatched="SPLIT"))
    tip = merge.pose(21)[lone]
    assert np.linalg.norm(np.diff(tip, axis=0), axis=1).sum() > 0.1


def velocity(style, frame, side, eps=1e-3):
    """One-sided velocity (P, 3) per frame, without noise."""
    a = style.pose(frame, noise=False).astype(np.float64)
    b = style.pose(frame + side * eps, noise=False).astype(np.float64)
    return (b - a) / (side * eps)


def still(keys, eps=1e-3):
    """The most a velocity measured by ``velocity`` can read where the hair is still: two float32
    poses (POSE roundings each of |x| up to the keys' largest) differenced over ``eps`` frames,
    plus what a slow-in really moves one ``eps`` from its key (its acceleration, at most the
    largest key displacement x 6 / interval², times eps). The hair's real speed here is 1e-2 to
    4e-2 a frame."""
    big = magnitude(*[k.points for k in keys])
    move = max(float(np.abs(b.points - a.points).max()) for a, b in zip(keys, keys[1:]))
    gap = min(b.frame - a.frame for a, b in zip(keys, keys[1:]))
    return 2 * rounding(big, POSE) / eps + 6 * move / gap**2 * eps


def test_slow_in_slow_out_stops_only_the_axes_whose_direction_flips():
    pts, uv = strands(20, 5)
    # x swings +0.4 then -0.4 (flips at the middle key); z keeps rising (no flip)
    keys = [key(1, pts, uv), key(11, swung(pts, 0.4, 0.1), uv), key(21, swung(pts, 0.0, 0.2), uv)]
    eased = KeyedStyle(keys, StyleSettings(slow_in_out=True))
    plain = KeyedStyle(keys, StyleSettings(slow_in_out=False))
    tip = eased.offsets[1:] - 1
    slow = still(keys)
    for side in (-1, 1):
        v, v0 = velocity(eased, 11, side)[tip], velocity(plain, 11, side)[tip]
        assert np.abs(v[:, 0]).max() < slow < np.abs(v0[:, 0]).max()          # x: slow in / out
        np.testing.assert_allclose(v[:, 2], v0[:, 2], atol=2 * slow)              # z: unchanged
    assert np.abs(velocity(eased, 1, 1)[tip]).max() < slow                      # starts from rest
    smooth = KeyedStyle(keys, StyleSettings(path="SMOOTH"))
    v = velocity(smooth, 11, 1)[tip]
    assert np.abs(v[:, 0]).max() < slow and np.abs(v[:, 2]).min() > slow


def test_noise_is_zero_at_the_root_grows_to_the_tip_is_seeded_and_smooth_in_time():
    pts, uv = strands(50, 8)
    keys = [key(1, pts, uv), key(48, swung(pts, 0.3), uv)]
    mag, period = 0.05, 8.0
    style = KeyedStyle(keys, StyleSettings(noise=mag, noise_period=period, noise_seed=4))
    frames = np.arange(1, 49, 0.5)
    n = np.stack([style.noise(f) for f in frames]).reshape(len(frames), 50, 8, 3)
    assert np.abs(n[:, :, 0]).max() == 0.0                                     # roots never move
    by_point = np.abs(n).mean(axis=(0, 1, 3))
    assert np.all(np.diff(by_point) > 0) and by_point[-1] > 0.1 * mag          # grows root to tip
    assert np.abs(n).max() <= mag
    step = np.abs(np.diff(n, axis=0)).max() / 0.5
    assert step <= 2 * mag / period                                           # bounded change per frame
    again = KeyedStyle(keys, StyleSettings(noise=mag, noise_period=period, noise_seed=4))
    other = KeyedStyle(keys, StyleSettings(noise=mag, noise_period=period, noise_seed=5))
    assert np.array_equal(again.noise(17.25), style.noise(17.25))
    assert not np.allclose(other.noise(17.25), style.noise(17.25))
    # (p + n) − p in float32: 2 roundings of |x|
    np.testing.assert_allclose(style.pose(20) - style.pose(20, noise=False), style.noise(20),
                               atol=rounding(magnitude(pts) + 0.3 + mag, 2))


def sphere(radius=1.0, n=24):
    t, p = np.meshgrid(np.linspace(0, np.pi, n), np.linspace(0, 2 * np.pi, 2 * n, endpoint=False), indexing="ij")
    v = radius * np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], -1).reshape(-1, 3)
    m = 2 * n
    quads = [(i * m + j, i * m + (j + 1) % m, (i + 1) * m + (j + 1) % m, (i + 1) * m + j)
             for i in range(n - 1) for j in range(m)]
    tris = [(a, b, c) for a, b, c, d in quads] + [(a, c, d) for a, b, c, d in quads]
    return v, np.array(tris)[:, ::-1]               # faces outward


def sphere_uv(n=24):
    """The ``sphere`` mesh's UV map as ``strands`` reads it: u = θ / (π/2), v = φ / 2π, one
    column past the seam so that no triangle wraps round."""
    m = 2 * n
    ij = [((i, j), (i, j + 1), (i + 1, j + 1), (i + 1, j)) for i in range(n - 1) for j in range(m)]
    uv = lambda c: (c[0] / (n - 1) * 2.0, c[1] / m)
    quads = [[uv(c) for c in q] for q in ij]
    return np.array([(a, b, c) for a, b, c, d in quads] + [(a, c, d) for a, b, c, d in quads])[:, ::-1]


def test_no_in_between_vertex_ends_inside_the_head():
    """Strands swept from one side to the other through a sphere head: every in-between point
    stays outside (exact distances to the mesh, not the collider's field), and the key poses
    come back exactly at their frames."""
    pts, uv = strands(40, 8, length=1.2)
    pts[:, :, 2] = np.abs(pts[:, :, 2]) + 0.02
    left = pts.copy()
    right = pts.copy()
    right[:, 1:, 0] *= -1                    # strands swept from one side to the other through the head
    keys = [key(1, left, uv), key(11, right, uv)]
    style = KeyedStyle(keys)
    v, tri = sphere()
    raw = np.concatenate([style.pose(f) for f in range(1, 12)])
    assert (exact_signed_distance(raw, v, tri) < -0.1).any()                   # the path does cross
    field = MeshField(v, tri)
    style.set_collider([field], np.eye(4), [0.0])
    for f in np.arange(1, 11.01, 0.5):
        p = style.pose(f)
        d = exact_signed_distance(p[style._not_root], v, tri)
        # pushed out exactly in float64 (the exact step after the grid's: a few roundings of
        # float64), then stored as float32 (1 rounding of |x|); a point the push missed is
        # inside by millimetres
        assert d.min() >= -rounding(magnitude(p), 2), (f, d.min())
    for k in keys:
        assert np.array_equal(style.pose(k.frame), k.points)


def test_in_between_roots_travel_on_the_scalp():
    """Seed 002: a root does not leave the head. Between two key poses whose roots differ (the
    hair turned 0.3 rad about the head's axis, roots and all) a straight path sinks the roots
    (radius cos 0.15 = 0.9888 halfway); on the surface by UV, every in-between root lies on the
    mesh, its strand keeps its segments, and the keys come back exactly."""
    pts, uv = strands(40, 8)
    a = 0.3
    rot = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]], np.float32)
    turned = pts @ rot.T
    uv2 = uv + np.array([0.0, a / (2 * np.pi)], np.float32)
    keys = [key(1, pts, uv), key(11, turned, uv2)]
    style = KeyedStyle(keys, StyleSettings(slow_in_out=False))
    roots = style.offsets[:-1]
    halfway = np.linalg.norm(style.pose(6)[roots], axis=1)
    assert halfway.min() < 0.99                                               # a straight path sinks
    straight = KeyedStyle(keys, StyleSettings(slow_in_out=False))
    v, tri = sphere()
    style.set_surface(sphere_uv(), tri, v)
    segments = lambda p: np.linalg.norm(np.diff(p.reshape(40, 8, 3), axis=1), axis=2)
    for f in (2, 4.5, 6, 8, 10.5):
        p = style.pose(f)
        d = exact_signed_distance(p[roots], v, tri)
        # a root set on the mesh in float64: its shift stored as float32 and added to the
        # float32 point (2 roundings of |x|); a root off the scalp is off by millimetres
        assert np.abs(d).max() <= rounding(magnitude(p), 2), (f, np.abs(d).max())
        # the strand moves with its root: the in-between's own segments. Every point shifted
        # by the same float32 vector (1 rounding of |x| each end), relative to the shortest
        # segment, and both measured by float32 norms (4 each)
        seg = segments(straight.pose(f))
        kept = rounding(magnitude(p) / seg.min(), 2) + rounding(1.0, 2 * NORM)
        np.testing.assert_allclose(segments(p), seg, rtol=kept)
    # halfway, each root sits halfway between its two key roots' longitudes (UV v is φ / 2π)
    mid = style.pose(6)[roots]
    phi = np.arctan2(mid[:, 1], mid[:, 0])
    c0, c1 = style.tracks.curve
    want = np.pi * (uv[c0, 1] + uv2[c1, 1])
    # (to within the flat triangles' own map: a column of this mesh spans 0.13 rad)
    assert np.abs(np.angle(np.exp(1j * (phi - want)))).max() < 0.03
    for k in keys:
        assert np.array_equal(style.pose(k.frame), straight.pose(k.frame))


def test_followers_and_imitators_keep_their_offset_from_the_leader():
    pts, uv = strands(3, 6)
    leaders = [key(1, pts, uv), key(11, swung(pts, 0.3, -0.1), uv), key(21, swung(pts, -0.2), uv)]
    style = KeyedStyle(leaders, StyleSettings(slow_in_out=False))
    rng = np.random.default_rng(0)
    roots = pts[:, 0] + np.array([0.05, 0.0, 0.0], np.float32)
    imit = np.stack([imitate(pts[i], roots[i:i + 1], 0.0, 0.05, rng)[0] for i in range(3)])
    from hair_wig import HairSet
    hair = HairSet(imit.reshape(-1, 3), np.full(3, 6))
    follow = LeaderFollow(style, hair, np.arange(3))
    # A follower's point: the leader's at its fraction (4 roundings of |x|) less its first key
    # (1), turned (float64) and stored (1), plus its rest point (1); both differences here (2):
    # 9 roundings of |x|. Its turn from the leader's root frame is the identity but for the
    # frames' first segments, whose float32 ends (1 rounding each) tilt them by
    # eps |x| / segment: times the leader's swing (<= 0.3 m). A follower that lost its offset
    # is off by its 5 cm.
    big, first = magnitude(pts, imit), np.linalg.norm(pts[:, 1] - pts[:, 0], axis=1).min()
    tol = rounding(big, 9) + rounding(big / first, 2) * 0.3
    for f in (1, 5, 11, 17, 21):
        lead = style.pose(f).reshape(3, 6, 3)
        np.testing.assert_allclose(follow.pose(f).reshape(3, 6, 3) - lead, imit - pts, atol=tol)
    # rings of eight in UV, ring r at r * closeness
    ring = imitator_roots_uv(uv[:1], 0.02, 2)[0]
    d = np.linalg.norm(ring - uv[0], axis=1)
    np.testing.assert_allclose(d, [0.02] * 8 + [0.04] * 8, rtol=1e-6)
    np.testing.assert_allclose(ring[[0, 2, 4, 6]] - uv[0], [[0.02, 0], [0, 0.02], [-0.02, 0], [0, -0.02]], atol=1e-9)
    fuzzy = imitate(pts[0], roots[:1], 0.5, 0.05, np.random.default_rng(1))[0]
    # the jitter's bound, plus its float32 sum into the point and the difference here: 2
    # roundings of |x| and 2 of the jitter
    assert np.array_equal(fuzzy[0], roots[0])
    assert 0 < np.abs(fuzzy - imit[0]).max() <= 0.025 + rounding(magnitude(imit), 2) + rounding(0.025, 2)


def test_a_keyed_style_is_the_rest_pose_the_wig_deforms():
    """Without magnets the wig reproduces each frame's in-between; with length control, a strand
    that grows between key poses keeps the in-between's length, not the first key's."""
    from hair_wig import FrameInput, HairSet, Wig, WigSettings

    pts, uv = strands(20, 6)
    longer = pts[:, :1] + (pts - pts[:, :1]) * 2.0
    style = KeyedStyle([key(1, pts, uv), key(11, swung(longer, 0.2), uv)])
    eye = np.eye(4)
    wig = Wig(style.hair(), eye, eye, settings=WigSettings(use_length=True, use_collision=False))
    for f in (1, 4, 7.5, 11):
        got, _ = wig.step(FrameInput(eye, eye, rest_points=style.pose(f)))
        # identity maps, then the length walk re-placing every point, root to tip over 6
        np.testing.assert_allclose(got, style.pose(f), atol=rounding(magnitude(got), FOLLOW * 6))
    with pytest.raises(Exception, match="rest pose has 3 points, the wig 120"):
        wig.step(FrameInput(eye, eye, rest_points=np.zeros((3, 3), np.float32)))


@pytest.mark.parametrize("dim", [2, 3])
def test_nearest_through_the_grid_equals_brute_force(dim):
    from hair_wig.keyposes import nearest

    rng = np.random.default_rng(dim)
    sites = rng.uniform(0, 1, (3000, dim))
    sites[:1500] *= 0.05                                  # a dense cluster and sparse rest
    sites[2999] = sites[10]                               # an exact duplicate: the lower index wins
    queries = np.concatenate([rng.uniform(-0.5, 1.5, (2000, dim)), sites[:50]])
    brute = np.argmin(((queries[:, None] - sites[None]) ** 2).sum(axis=2), axis=1)
    assert np.array_equal(nearest(queries, sites), brute)


def test_a_curve_that_lost_its_partner_takes_the_free_one_nearby():
    """Roots in UV: a at 0.30 and 0.36; b at 0.34 and 0.40. Both of a target 0.34 (nearest); 0.36
    wins it, and 0.30 takes the free 0.40 (0.10 away, within 3 × 0.04) instead of shrinking while
    0.40 grows. Without the second choice the thesis' rule gives three tracks; a free curve too far
    away is not taken."""
    def keyed(frame, us):
        uv = np.array([[u, 0.5] for u in us], np.float32)
        pts = np.stack([np.stack([np.r_[u, 0.5, 1.0], np.r_[u, 0.5, 1.2]]) for u in us]).astype(np.float32)
        return key(frame, pts, uv)

    keys = [keyed(1, [0.30, 0.36]), keyed(11, [0.34, 0.40])]
    with_second = build_tracks(keys)
    assert with_second.num_tracks == 2
    assert with_second.curve[1].tolist() == [1, 0]                       # 0.30 → 0.40, 0.36 → 0.34
    assert build_tracks(keys, second_choice=False).num_tracks == 3
    assert build_tracks([keys[0], keyed(11, [0.34, 0.47])]).num_tracks == 3   # 0.17 > 3 × 0.04
