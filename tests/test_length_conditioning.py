"""Squashed strands (issue 33): the one follow-the-leader every client shares
(``hair_wig.leader``) keeps lengths exact and directions finite when a strand is squashed to
1 %, 0.1 % and nothing of its length, never folds it, and amplifies a rounding of its input by a
bounded factor, not by ``L / |d|``. Without Blender."""

import numpy as np
import pytest

from hair_wig import FrameInput, HairSet, LengthControl, Magnet, Profile, Wig, WigSettings
from hair_wig.leader import C0, C1, K0, K1, R0, R1, follow_the_leader

from tolerance import SEGMENT, magnitude, rounding


def curly(n_strands=40, n=16, seed=0):
    """Strands of ``n`` points rising 0.3 from z = 0 with a gentle curl (turns of ~10-25°
    between segments): (S, n, 3) float32."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    phase = rng.uniform(0, 2 * np.pi, (n_strands, 1))
    r = rng.uniform(0.005, 0.02, (n_strands, 1))
    roots = np.c_[rng.uniform(-0.3, 0.3, (n_strands, 2)), np.zeros(n_strands)]
    pts = np.stack([r * np.cos(phase + 6 * t), r * np.sin(phase + 6 * t), 0.3 * t + 0 * phase], -1)
    return (pts + roots[:, None] - pts[:, :1]).astype(np.float32)


def textbook(points: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Plain follow-the-leader, ``p'_j = p'_{j−1} + L_j (p_j − p'_{j−1}) / |p_j − p'_{j−1}|``,
    one strand at a time in float32: the ill-conditioned form issue 33 replaced."""
    out = points.copy()
    for s in range(len(points)):
        for j in range(1, points.shape[1]):
            d = points[s, j] - out[s, j - 1]
            out[s, j] = out[s, j - 1] + d * (lengths[s, j - 1] / max(np.linalg.norm(d), 1e-30))
    return out


def reference(points, lengths, guides, rests, e=0.0):
    """The conditioned step as written in ``leader``'s docstring, strand by strand, point by
    point, in float64: the plain reference the vectorised code is checked against."""
    def smooth(x):
        x = min(max(x, 0.0), 1.0)
        return x * x * (3 - 2 * x)

    def unit(v):
        n = np.linalg.norm(v)
        return v / n if n > 0 else np.array([0.0, 0.0, 1.0])

    out = points.astype(np.float64).copy()
    for s in range(len(points)):
        for j in range(1, points.shape[1]):
            lead, L = out[s, j - 1], float(lengths[s, j - 1])
            d = points[s, j].astype(np.float64) - lead
            nd = np.linalg.norm(d)
            g0 = guides[s, j - 1].astype(np.float64)
            b = smooth((np.linalg.norm(g0) / L - 1e-3) / (1e-2 - 1e-3)) if L > 0 else 1.0
            gu, ru = unit(g0), unit(rests[s, j - 1].astype(np.float64))
            th = np.arccos(np.clip(gu @ ru, -1, 1))      # turned from the rest towards the guide
            g = unit((np.sin(b * th) * gu + np.sin((1 - b) * th) * ru) / np.sin(th)
                     if np.sin(th) > 1e-6 else (gu if b >= 0.5 or gu @ ru > 0 else ru))
            a = smooth((nd / L - R0) / (R1 - R0)) if L > 0 else 1.0
            if nd > 0:                      # a fold: d turned away from the guide (or the rest)
                a *= smooth((np.dot(d / nd, g) - C0) / (C1 - C0))
            if L > 0:                       # a squashed segment
                a *= smooth((np.linalg.norm(g0) / L - K0) / (K1 - K0))
            if nd == 0:
                a = 0.0
            u = a * (d / nd if nd > 0 else 0) + (1 - a) * g
            u = unit(u) if np.linalg.norm(u) >= 1e-6 else g
            out[s, j] = lead + u * (e * nd + (1 - e) * L)
    return out


def walk(points, lengths, rests, e=0.0):
    """``follow_the_leader`` root to tip over strands (S, n, 3), guided by the segments as they
    came in, then the rest ones: as refinement calls it."""
    q = np.ascontiguousarray(points.transpose(2, 1, 0))          # (3, n, S)
    came = q[:, 0].copy()
    for j in range(1, q.shape[1]):
        now = q[:, j].copy()
        follow_the_leader(q[:, j - 1], q[:, j], lengths[:, j - 1], now - came,
                          rests.transpose(2, 1, 0)[:, j - 1], e, out=q[:, j])
        came = now
    return q.transpose(2, 1, 0)


def seg_lengths(p):
    return np.linalg.norm(np.diff(p.astype(np.float64), axis=1), axis=2)


def turns(p):
    s = np.diff(p.astype(np.float64), axis=1)
    s /= np.linalg.norm(s, axis=2, keepdims=True)
    return np.degrees(np.arccos(np.clip((s[:, 1:] * s[:, :-1]).sum(2), -1, 1)))


def test_the_step_is_its_plain_reference_on_random_input():
    """Random strands (long, short, turned back, zero-length segments, elastic): the vectorised
    step and the point-by-point reference agree to float32 rounding of the strand's extent
    accumulated along it (n placements, each half an ulp, its direction at most ~7 roundings
    over a squashed segment: 8 n eps |x|)."""
    rng = np.random.default_rng(3)
    s, n = 300, 12
    pts = rng.normal(0, 0.05, (s, n, 3)).astype(np.float32)
    pts[::7, 5] = pts[::7, 4]                                   # zero-length input segments
    lengths = rng.uniform(0.0, 0.06, (s, n - 1)).astype(np.float32)
    lengths[::11, 3] = 0                                        # zero rest lengths
    rests = rng.normal(0, 0.05, (s, n - 1, 3)).astype(np.float32)
    guides = np.diff(pts, axis=1)
    for e in (0.0, 0.3):
        got = walk(pts, lengths, rests, e)
        want = reference(pts, lengths, guides, rests, e)
        assert np.isfinite(got).all()
        scale = np.abs(want).max()
        assert np.abs(got - want).max() <= rounding(scale, 8 * n)


@pytest.mark.parametrize("fraction", [1e-2, 1e-3, 0.0])
def test_a_strand_squashed_towards_its_root_comes_back_to_its_shape(fraction):
    """Every point moved towards its root to ``fraction`` of where it was: each segment keeps
    its direction and comes back to its rest length, so the strand is its rest shape again —
    lengths to a few ulp of the segment (one rounding a placement), directions finite, the shape
    to the rounding accumulated root to tip (n placements of half an ulp of the extent, times the
    bounded conditioning: 8 n eps |x|). The textbook step folds these strands back on
    themselves instead."""
    rest = curly()
    s, n, _ = rest.shape
    lengths = seg_lengths(rest).astype(np.float32)
    squashed = (rest[:, :1] + fraction * (rest - rest[:, :1])).astype(np.float32)
    got = walk(squashed, lengths, np.diff(rest, axis=1))
    assert np.isfinite(got).all()
    # each placement leaves its own segment SEGMENT roundings of the coordinates (tolerance.py)
    np.testing.assert_allclose(seg_lengths(got), lengths, rtol=0, atol=rounding(magnitude(rest), SEGMENT))
    assert np.abs(got - rest).max() <= rounding(magnitude(rest), 8 * n)
    assert turns(got).max() <= turns(rest).max() + 0.01
    if fraction:
        assert turns(textbook(squashed, lengths)).max() > 150          # the fold this replaces


def textbook64(points, lengths):
    """``textbook`` evaluated in float64 on the same float32 input: its exact answer."""
    return textbook(points.astype(np.float64), lengths.astype(np.float64))


@pytest.mark.parametrize("fraction", [0.5, 1e-2, 1e-3])
def test_the_step_adds_no_more_than_rounding_to_a_squashed_strand(fraction):
    """Squashed strands (to a half — where the textbook's ``d`` shrinks to nothing — 1 % and
    0.1 %): the float32 walk against its float64 reference on the same input differs by the
    rounding of n placements, each half an ulp of the coordinates, its direction at most ~7
    roundings over a squashed segment (1 / R0 and the blends' slopes, leader.py), i.e. 4 ulp a
    placement: 4 n ulp of the extent (1-2 ulp measured). The textbook step, float32 against its
    own float64 on the same input, amplifies its rounding by L / |d| (370 ulp at a half here)
    and fails the same bound."""
    rest = curly(seed=1)
    s, n, _ = rest.shape
    lengths = seg_lengths(rest).astype(np.float32)
    squashed = (rest[:, :1] + fraction * (rest - rest[:, :1])).astype(np.float32)
    rests = np.diff(rest, axis=1)
    bound = rounding(magnitude(rest), 4 * n)
    got = walk(squashed, lengths, rests)
    want = reference(squashed, lengths, np.diff(squashed, axis=1), rests)
    assert np.abs(got - want).max() <= bound
    if fraction == 0.5:
        assert np.abs(textbook(squashed, lengths) - textbook64(squashed, lengths)).max() > bound


@pytest.mark.parametrize("mode", ["SEGMENT", "STRAND"])
@pytest.mark.parametrize("fraction", [0.8, 1e-2, 1e-3, 0.0])
def test_a_magnet_that_squashes_the_hair_makes_it_bunch_not_fold(mode, fraction):
    """Through the wig: one magnet scales the hair's height to ``fraction`` (a squash along the
    strands, the issue's oracle scene), no head. Both length modes give every strand its length
    back (per segment: each segment, to a few ulp; per strand: the whole, to the rounding summed
    over its n segments) with no turn sharper than the squashed input's own plus the groom's own
    at that joint (squashed under K0 = 50 % per segment: the input's own to a hundredth of a degree,
    rounding), and nothing is NaN."""
    rest = curly(seed=2)
    s, n, _ = rest.shape
    hair = HairSet(rest.reshape(-1, 3), [n] * s, name="Hair")
    one = Profile.constant(1.0)
    wig = Wig(hair, np.eye(4), np.eye(4), [Magnet("Squash", np.eye(4), radius=5.0, falloff=one)],
              WigSettings(flex=one, length_mode=mode, use_collision=False))
    squash = np.diag([1.0, 1.0, fraction, 1.0])
    out, _ = wig.step(FrameInput(np.eye(4), np.eye(4), np.array([squash])))
    asked, _ = Wig(hair, np.eye(4), np.eye(4), [Magnet("Squash", np.eye(4), radius=5.0, falloff=one)],
                   WigSettings(flex=one, use_length=False, use_collision=False)).step(
        FrameInput(np.eye(4), np.eye(4), np.array([squash])))
    got = out.reshape(s, n, 3)
    assert np.isfinite(got).all()
    rest_len = seg_lengths(rest)
    if mode == "SEGMENT":
        np.testing.assert_allclose(seg_lengths(got), rest_len, rtol=0, atol=rounding(magnitude(rest), SEGMENT))
    else:                                   # n segments, each its scale's and add's roundings
        np.testing.assert_allclose(seg_lengths(got).sum(1), rest_len.sum(1), rtol=0,
                                   atol=rounding(magnitude(rest), SEGMENT * n))
    asked = asked.reshape(s, n, 3)
    ok = np.all(seg_lengths(asked) > 0, axis=1)            # a squash to nothing has no turns to keep
    own = turns(rest) if fraction > K0 else 0.0
    assert (turns(got)[ok] <= turns(asked)[ok] + own + 0.01).all()
