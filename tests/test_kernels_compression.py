"""Compression compensation's kernel (``kernels.compression.compress_rows``) against its numpy
form (``refinement._compensate_numpy``), with the rest pose's vectors bound and computed, and the
same bits on one and two threads."""

import numba
import numpy as np
import pytest

from hair_wig.refinement import _compensate_numpy, compensate_compression_rows, compression_vectors
from tolerance import rounding


def _points(count=5000, seed=0):
    rng = np.random.default_rng(seed)
    rest = rng.normal(size=(3, count)).astype(np.float32)
    p = (rest + 0.3 * rng.normal(size=(3, count))).astype(np.float32)
    alpha = rng.uniform(0.0, 1.0, count).astype(np.float32)
    rest[:, :3] = 0.0                        # points at the centre: no compression vector
    return rest, p, alpha, np.zeros(3)


@pytest.mark.parametrize("bound", [False, True])
def test_compression_kernel_gives_what_the_numpy_form_gives(bound):
    """Each point: d = p − rest (1 rounding), d · c (3 products, 2 sums), times the factor (1),
    times c and added (2): ~9 roundings of values up to |p| + |c| (≤ ~12 here) — the sums'
    order is the only freedom (numpy's einsum may pair them otherwise)."""
    rest, p, alpha, centre = _points()
    vectors = compression_vectors(rest, centre, alpha) if bound else None
    kernel = compensate_compression_rows(rest, p.copy(), centre, alpha, vectors)
    reference = _compensate_numpy(rest, p.copy(), centre, alpha, vectors)
    size = float(np.abs(p).max() + np.abs(rest).max())
    assert np.abs(kernel - reference).max() <= rounding(size, 9)
    moved = np.abs(kernel - p).max(axis=0) > 0
    assert 0 < moved.sum() < p.shape[1]         # inward displacements compensated, outward not


def test_compression_kernel_gives_the_same_bits_on_one_and_two_threads():
    rest, p, alpha, centre = _points(100_000)
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            runs.append(compensate_compression_rows(rest, p.copy(), centre, alpha))
    finally:
        numba.set_num_threads(was)
    assert np.array_equal(*runs)
