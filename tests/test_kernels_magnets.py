"""Primary movement's blend kernel (hair_wig/kernels/magnets.py, ``MagnetWeights.displace_rows``)
against the dense formula ``out += Σ_k W_k (M_k − I) p`` (SPEC §3) in float64, on hair spanning
several weight tiles, magnets that reach a few tiles each, still magnets among them, a block of
the points (the wig's ``span``) and the same bits with 1 or 2 threads.

Tolerance: each point's blend sums m_t weighted matrices in float32 (2 roundings a magnet of
|W| |M − I|, at most 1 + |M|) and applies it (AFFINE of |p|): eps32 × |p| (1 + max |M|) × (2 m + AFFINE)."""

import numpy as np
import pytest

from hair_wig import HairSet, Magnet, MagnetWeights, Profile
from tolerance import AFFINE, magnitude, rounding


def _setup(strands=3000, n=12, magnets=9, seed=0):
    rng = np.random.default_rng(seed)
    roots = rng.normal(size=(strands, 3))
    roots /= np.linalg.norm(roots, axis=1, keepdims=True)
    order = np.argsort(np.arctan2(roots[:, 1], roots[:, 0]))          # surface order: tiles meet few magnets
    t = np.linspace(0, 1, n)
    pts = (roots[order][:, None] * (1 + 0.4 * t[None, :, None])).reshape(-1, 3).astype(np.float32)
    hair = HairSet(pts, np.full(strands, n), name="Hair")
    mags = []
    for k in range(magnets):
        a = 2 * np.pi * k / magnets
        m = np.eye(4)
        m[:3, 3] = (1.2 * np.cos(a), 1.2 * np.sin(a), 0.3)
        mags.append(Magnet(f"M{k}", m, radius=0.9))
    weights = MagnetWeights(hair, pts, mags, Profile.linear(0.0, 1.0), Profile.constant(1.0), "cap")
    motions = np.repeat(np.eye(4)[None], magnets, axis=0)
    for k in range(magnets):
        if k % 3:                                       # every third magnet stays still
            q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
            motions[k, :3, :3] = np.eye(3) + 0.2 * (q - np.eye(3))
            motions[k, :3, 3] = rng.normal(size=3) * 0.1
    return hair, weights, motions


@pytest.mark.parametrize("span", [(0, 36000), (5000, 20011)])
def test_the_blend_is_the_dense_formula(span):
    hair, weights, motions = _setup()
    assert len(weights.tile_magnets) > 2 and weights.magnets_per_point() < weights.num_magnets
    lo, hi = span
    rows = np.ascontiguousarray(hair.points.T)
    out = np.zeros((3, hi - lo), np.float32)
    weights.displace_rows(rows[:, lo:hi], motions, out, slice(lo, hi))
    w = weights.dense(hair.num_points)[:, lo:hi].astype(np.float64)          # (M, C)
    p = rows[:, lo:hi].astype(np.float64)
    want = np.einsum("mc,mab,bc->ac", w, motions[:, :3, :3] - np.eye(3), p) + \
        np.einsum("mc,ma->ac", w, motions[:, :3, 3])
    size = magnitude(p) * (1 + np.abs(motions).max())
    np.testing.assert_allclose(out, want, rtol=0, atol=rounding(size, 2 * weights.num_magnets + AFFINE))
    assert np.abs(want).max() > 0.01


def test_the_blend_gives_the_same_bits_on_one_and_two_threads():
    import numba

    hair, weights, motions = _setup(seed=1)
    rows = np.ascontiguousarray(hair.points.T)
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            out = rows.copy()
            weights.displace_rows(rows, motions, out)
            runs.append(out)
    finally:
        numba.set_num_threads(was)
    assert np.array_equal(*runs)
