"""The Springs layer's kernel (hair_wig/kernels/springs.py) against the numpy step it replaced
(``SecondarySprings.follow``, kept as its reference): random springs, coefficients of every
kind of damping, with and without a force field's push, a part of the points (a split bake's) —
and the same bits with 1 or 2 threads.

Tolerance: the numpy step maps the goal into the springs' space with a float32 matrix product
whose sums BLAS may order (and fuse) its own way: AFFINE roundings of |x| in the target, carried
by the step's coefficients (at most 1 each, |e11| + |e12 …|), and AFFINE again on the way back
to head-local; the rest is the same float32 operations in the same order."""

import numpy as np
import pytest

from hair_wig.dynamics import SecondarySprings
from hair_wig.kernels import spring_follow
from tolerance import AFFINE, magnitude, rounding


def _springs(num=500, n=12, seed=0):
    rng = np.random.default_rng(seed)
    strand = np.repeat(np.arange(num), n).astype(np.int32)
    t = np.tile(np.linspace(0, 1, n), num).astype(np.float32)
    springs = SecondarySprings(strand, num, t, 120.0, 8.0, random=0.9, seed=seed)
    p_count = num * n
    rows = lambda scale: (rng.normal(size=(3, p_count)) * scale).astype(np.float32)
    return springs, rows(1.0), rows(0.01), rows(0.3), rng


@pytest.mark.parametrize("forced", [False, True])
@pytest.mark.parametrize("span", [(0, 6000), (1200, 4803)])
def test_the_springs_kernel_is_the_numpy_step(forced, span):
    springs, goal, dev, vel, rng = _springs()
    lo, hi = span
    dt = 1 / 24
    head = np.eye(4)
    head[:3, :3] = np.linalg.qr(rng.normal(size=(3, 3)))[0] * 1.5
    head[:3, 3] = (0.3, -2.0, 1.0)
    inv = np.linalg.inv(head)
    pos = (goal.T @ head[:3, :3].T.astype(np.float32) + head[:3, 3].astype(np.float32)).T + dev
    accel = rng.normal(size=(3, hi - lo)).astype(np.float32) if forced else None
    # numpy reference on the part
    p_ref, pos_ref, vel_ref = goal[:, lo:hi].copy(), pos[:, lo:hi].copy(), vel[:, lo:hi].copy()
    c = hi - lo
    work, spare, row = np.empty((3, c), np.float32), np.empty((3, c), np.float32), np.empty(c, np.float32)
    springs.follow(pos_ref, vel_ref, p_ref, head, inv, dt, False, work, spare, row, slice(lo, hi), accel)
    # the kernel on the whole rows, the part only
    p_k, pos_k, vel_k = goal.copy(), pos.copy(), vel.copy()
    coef = springs.coefficients(dt)
    spring_follow(pos_k, vel_k, p_k, head[:3].astype(np.float32), inv[:3, :3].astype(np.float32), *coef,
                  springs.blend, np.zeros((3, 0), np.float32) if accel is None else accel, springs._forced, lo, hi)
    size = magnitude(pos, goal)
    tol = rounding(size, 3 * AFFINE)
    np.testing.assert_allclose(pos_k[:, lo:hi], pos_ref, rtol=0, atol=tol)
    np.testing.assert_allclose(vel_k[:, lo:hi], vel_ref, rtol=0, atol=tol / dt)
    np.testing.assert_allclose(p_k[:, lo:hi], p_ref, rtol=0, atol=tol * np.abs(inv).sum())
    # outside the part nothing moved
    for a, b in ((p_k, goal), (pos_k, pos), (vel_k, vel)):
        assert np.array_equal(a[:, :lo], b[:, :lo]) and np.array_equal(a[:, hi:], b[:, hi:])


def test_the_springs_kernel_gives_the_same_bits_on_one_and_two_threads():
    import numba

    springs, goal, dev, vel, _ = _springs(num=2000)
    coef = springs.coefficients(1 / 24)
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            p, pos, v = goal.copy(), goal + dev, vel.copy()
            for _ in range(3):
                spring_follow(pos, v, p, np.eye(4, dtype=np.float32)[:3], np.eye(3, dtype=np.float32), *coef,
                              springs.blend, np.zeros((3, 0), np.float32), springs._forced, 0, p.shape[1])
            runs.append((p, pos, v))
    finally:
        numba.set_num_threads(was)
    assert all(np.array_equal(a, b) for a, b in zip(*runs))
