"""The numpy core, without Blender."""

import subprocess
import sys

import numpy as np
import pytest

from hair_wig import BakeCache, FrameInput, HairSet, HairWigError, Wig, transform_points, transform_rows
from tolerance import AFFINE, FOLLOW, NORM, SEGMENT, magnitude, rounding


def rot_z(a, t=(0, 0, 0), s=1.0):
    m = np.eye(4)
    c, si = np.cos(a), np.sin(a)
    m[:3, :3] = s * np.array([[c, -si, 0], [si, c, 0], [0, 0, 1]])
    m[:3, 3] = t
    return m


def two_strands():
    pts = np.array([[0, 0, 0], [0, 0, 1], [1, 0, 0], [1, 0, 1], [1, 0, 2]], np.float32)
    return HairSet(pts, [2, 3], name="Hair")


def test_core_imports_no_bpy():
    code = "import hair_wig, sys; sys.exit('bpy' in sys.modules or 'mathutils' in sys.modules)"
    from conftest import ROOT
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


def test_hairset_layout():
    h = two_strands()
    assert h.num_strands == 2 and h.num_points == 5
    assert h.offsets.tolist() == [0, 2, 5]
    assert h.strand_of_point().tolist() == [0, 0, 1, 1, 1]
    assert h.points.dtype == np.float32 and h.counts.dtype == np.int32
    assert h.strand_slice(1) == slice(2, 5)


@pytest.mark.parametrize("counts, pattern", [
    ([2, 1, 2], r"'Hair': strand 1 has 1 point\(s\)"),
    ([2, 3, 1], r"strand 2 has 1 point"),
    ([2, 2], r"add up to 4 but there are 5 points"),
    ([], r"'Hair' has no strands"),
])
def test_hairset_rejects_bad_counts(counts, pattern):
    with pytest.raises(HairWigError, match=pattern):
        HairSet(np.zeros((5, 3)), counts, name="Hair")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_hairset_rejects_non_finite_naming_strand(bad):
    pts = np.zeros((6, 3))
    pts[4, 1] = bad
    with pytest.raises(HairWigError, match=r"'Hair': strand 2 has a NaN or infinite point position \(strands count from 0, as the Spreadsheet's Curve index does\)"):
        HairSet(pts, [2, 2, 2], name="Hair")


def test_hairset_checks_per_strand_arrays():
    with pytest.raises(HairWigError, match="selection must have shape"):
        HairSet(np.zeros((4, 3)), [2, 2], selection=[True])
    with pytest.raises(HairWigError, match="surface_uv must have shape"):
        HairSet(np.zeros((4, 3)), [2, 2], surface_uv=np.zeros((2, 3)))


def test_transform_points_is_the_affine_map():
    rng = np.random.default_rng(3)
    p = rng.normal(size=(100, 3)).astype(np.float32)
    m = rot_z(0.7, (1, 2, 3), 2.0)
    expect = (np.c_[p.astype(np.float64), np.ones(100)] @ m.T)[:, :3]
    # one affine map in float32 against float64: its products reach |2 p|, its sums |expect|
    tol = rounding(magnitude(expect, 2 * p), AFFINE)
    np.testing.assert_allclose(transform_points(p, m), expect, rtol=0, atol=tol)
    out = p.copy()
    transform_points(out, m, out=out)
    np.testing.assert_allclose(out, expect, rtol=0, atol=tol)


def test_transform_rows_matches_transform_points():
    rng = np.random.default_rng(5)
    p = rng.normal(size=(50, 3)).astype(np.float32)
    m = rot_z(-1.1, (0.5, 2, -3), 0.7)
    rows = transform_rows(m, np.ascontiguousarray(p.T), np.empty((3, 50), np.float32))
    # two float32 affine maps, each summing in its own order: 2 x 7 roundings of |x|
    np.testing.assert_allclose(rows.T, transform_points(p, m), rtol=0,
                               atol=rounding(magnitude(rows, p), 2 * AFFINE))


def test_wig_moves_rigidly_with_the_head():
    h = two_strands()
    wig = Wig(h, np.eye(4), np.eye(4))
    head = rot_z(np.pi / 2, (0, 0, 5))
    got, state = wig.step(FrameInput(np.eye(4), head))
    expect = np.c_[-h.points[:, 1], h.points[:, 0], h.points[:, 2] + 5]
    # length control re-places every head-local point (|x| <= 2), carried root to tip (3 points),
    # then one affine map to the object (|x| <= 7); a wrong map is off by metres
    local, k = magnitude(h.points), h.counts.max()
    moved = rounding(local, FOLLOW * k) + rounding(magnitude(expect), AFFINE)
    np.testing.assert_allclose(got, expect, atol=moved)
    seg = np.linalg.norm(np.diff(got[2:], axis=0), axis=1)   # a rigid map keeps lengths
    # each segment keeps its length to one follow step; its ends are mapped (2 x 7) and
    # measured here (4)
    kept = rounding(local, SEGMENT) + 2 * rounding(magnitude(expect), AFFINE) + rounding(1.0, NORM)
    np.testing.assert_allclose(seg, [1, 1], atol=kept)


def test_wig_parented_to_head_stays_at_rest():
    h = two_strands()
    hair0, head0 = rot_z(0.3, (1, 0, 0)), rot_z(-0.2, (0, 1, 0))
    motion = rot_z(1.3, (0.5, -2, 7))
    got, _ = Wig(h, hair0, head0).step(FrameInput(motion @ hair0, motion @ head0))
    # to head-local space at bind (one affine map), the length walk (3 points), and back (one
    # more): roundings of coordinates up to their size in either space
    local = transform_points(h.points, np.linalg.solve(head0, hair0))
    tol = rounding(magnitude(h.points, local), 2 * AFFINE + FOLLOW * h.counts.max())
    np.testing.assert_allclose(got, h.points, rtol=0, atol=tol)
    assert got.dtype == np.float32
    same, _ = Wig(h, np.eye(4), np.eye(4)).step(FrameInput(np.eye(4), np.eye(4)))
    assert np.array_equal(same, h.points)       # nothing moved: bit for bit the rest pose


def test_wig_step_writes_into_given_buffer():
    h = two_strands()
    cache = BakeCache(h, 3, 4)
    wig = Wig(h, np.eye(4), np.eye(4))
    res, _ = wig.step(FrameInput(np.eye(4), rot_z(0.0, (1, 0, 0))), out=cache.frame(4))
    assert res is cache.frame(4).base or np.shares_memory(res, cache.positions)
    # the length walk (3 points) and the shift to the object
    np.testing.assert_allclose(cache.frame(4), h.points + [1, 0, 0], rtol=0,
                               atol=rounding(magnitude(h.points) + 1, FOLLOW * h.counts.max() + AFFINE))


def test_wig_rejects_singular_and_nan_matrices():
    h = two_strands()
    flat = np.eye(4)
    flat[2, 2] = 0
    with pytest.raises(HairWigError, match="'Hair' head rest matrix is singular"):
        Wig(h, np.eye(4), flat)
    bad = np.eye(4)
    bad[0, 3] = np.nan
    with pytest.raises(HairWigError, match="'Hair' head matrix has a NaN"):
        Wig(h, np.eye(4), np.eye(4)).step(FrameInput(np.eye(4), bad))


def test_cache_range_and_finite_check_names_frame_and_strand():
    h = two_strands()
    with pytest.raises(HairWigError, match="frame range 5..4 is empty"):
        BakeCache(h, 5, 4)
    c = BakeCache.from_positions(h, 10, np.zeros((3, 5, 3)))
    assert list(c.frames) == [10, 11, 12] and c.num_frames == 3
    c.check_finite()
    c.positions[1, 3, 0] = np.nan
    with pytest.raises(HairWigError, match="not finite at frame 11, strand 1"):
        c.check_finite()
    with pytest.raises(HairWigError, match="not finite at frame 11, strand 1"):
        c.check_finite(11)
    c.check_finite(12)
    with pytest.raises(HairWigError, match=r"shape \(F, 5, 3\)"):
        BakeCache.from_positions(h, 1, np.zeros((2, 4, 3)))
    assert BakeCache.estimate_bytes(80_000, 100) == 96_000_000
