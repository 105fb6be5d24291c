"""Scalp space's kernel (hair_wig/kernels/scalp.py) against the numpy it replaced
(``ScalpSpace.apply_rows_numpy``, kept as its reference): random rows, rotations, origins and
attachments, all the points and a split bake's part of them (strided rows) — the same float32
operations in the same order, so the same bits — and the same bits with 1 or 2 threads."""

import numpy as np
import pytest

from hair_wig.kernels import scalp_carry
from hair_wig.scalp import ScalpSpace


def _scalp(strands=2000, n=16, seed=0):
    rng = np.random.default_rng(seed)
    counts = rng.integers(2, 2 * n, strands)
    strand = np.repeat(np.arange(strands, dtype=np.int32), counts)
    p = strand.size
    rest = (rng.normal(size=(3, p)) * 3).astype(np.float32)
    att = rng.uniform(0, 1, p).astype(np.float32)
    att[rng.uniform(size=p) < 0.2] = 1.0
    rot = np.linalg.qr(rng.normal(size=(strands, 3, 3)))[0] * rng.uniform(0.5, 2.0, (strands, 1, 1))
    o0, o1 = rng.normal(size=(strands, 3)) * 2, rng.normal(size=(strands, 3)) * 2
    return rest, strand, att, tuple(a.astype(np.float32) for a in (rot, o0, o1))


@pytest.mark.parametrize("part", [None, (1000, 9000)])
def test_the_scalp_kernel_is_the_numpy_carry(part):
    rest, strand, att, frame = _scalp()
    lo, hi = part or (0, rest.shape[1])
    rows, strands, a = rest[:, lo:hi], strand[lo:hi], att[lo:hi]
    ref, got = np.empty(rows.shape, np.float32), np.full(rows.shape, np.nan, np.float32)
    ScalpSpace.apply_rows_numpy(rows, strands, a, frame, ref)
    scalp_carry(rows, strands, a, *frame, got)
    assert got.tobytes() == ref.tobytes()


def test_the_scalp_kernel_gives_the_same_bits_on_one_and_two_threads():
    import numba

    rest, strand, att, frame = _scalp(6000)
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            out = np.empty_like(rest)
            scalp_carry(rest, strand, att, *frame, out)
            runs.append(out)
    finally:
        numba.set_num_threads(was)
    assert runs[0].tobytes() == runs[1].tobytes()
