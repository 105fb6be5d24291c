"""The one contact response (hair_wig/kernels/response.py) against plain references and the
answers Coulomb's law has in closed form: a slide kept by ``1 − μ p / s`` or stopped, nothing
bouncing back, nothing moved where a point leaves the surface — and the row kernels the same bits
with 1 or 2 threads.

Tolerance against the plain numpy references: both compute ``met`` from the same float64 values
by the same formula, the numpy one with its operations grouped as numpy groups them; a value of
the motion (up to |v|) goes through about ten roundings (the dot product, the part taken out, the
slide, its norm and share, the product), so they agree to ``rounding(|v|, 10, EPS64)`` — a real
fault (a sign, a missing part) moves the answer by the motion itself.
"""

import math

import numba
import numpy as np
import pytest

from hair_wig.kernels.response import coulomb_kept, held, held_rows, met, met_rows, slowed_rows
from tolerance import EPS64, magnitude, rounding

OPS = 10


def _met_reference(v, n, friction):
    """``met`` in numpy, as the Strands layer first wrote it: rows (3, K)."""
    into = np.minimum(np.sum(v * n, axis=0), 0.0)
    w = v - into * n
    slide = w - np.sum(w * n, axis=0) * n
    speed = np.sqrt(np.sum(slide * slide, axis=0))
    slow = np.minimum(friction * -into, speed) / np.where(speed > 0, speed, 1.0)
    return w - slow * slide


def _random_contacts(seed, k):
    rng = np.random.default_rng(seed)
    v = rng.normal(0.0, 1.0, (3, k)) * rng.uniform(1e-3, 10.0, k)
    n = rng.normal(0.0, 1.0, (3, k))
    n /= np.linalg.norm(n, axis=0)
    return v, n


def test_coulomb_law_keeps_one_minus_mu_p_over_s_and_never_turns_a_slide_back():
    assert coulomb_kept(2.0, 1.0, 0.5) == 0.75
    assert coulomb_kept(2.0, 1.0, 0.0) == 1.0
    assert coulomb_kept(2.0, 8.0, 0.5) == 0.0                # more friction than slide: a stop
    assert coulomb_kept(0.0, 1.0, 0.5) == 0.0                # no slide: none to keep
    assert coulomb_kept(2.0, 0.0, 0.9) == 1.0                # no pressure: no friction


def test_a_motion_into_a_floor_loses_its_fall_and_friction_slows_its_slide_by_mu_times_it():
    # 2 m/s along x, falling at 0.5 m/s onto z = 0: the fall is taken out, the slide slowed by μ 0.5
    assert met(2.0, 0.0, -0.5, 0.0, 0.0, 1.0, 0.4) == pytest.approx((2.0 - 0.4 * 0.5, 0.0, 0.0), rel=4 * EPS64)
    assert met(2.0, 0.0, -0.5, 0.0, 0.0, 1.0, 0.0) == (2.0, 0.0, 0.0)
    assert met(0.1, 0.0, -0.5, 0.0, 0.0, 1.0, 1.0) == (0.0, 0.0, 0.0)     # stopped, not turned back
    # leaving the surface, or along it: untouched, whatever the friction
    assert met(2.0, 1.0, 0.5, 0.0, 0.0, 1.0, 1.0) == (2.0, 1.0, 0.5)
    assert met(2.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0) == (2.0, 1.0, 0.0)


def test_a_point_beyond_a_plane_is_held_on_it_its_slide_slowed_by_mu_times_its_depth():
    # the plane z = 0 through e = (1, 0, 0); b 0.2 below it and 1 along x from e
    beyond, x, y, z = held(2.0, 0.0, -0.2, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.5)
    assert beyond and (x, y, z) == pytest.approx((1.0 + 1.0 * (1 - 0.5 * 0.2), 0.0, 0.0), rel=4 * EPS64)
    beyond, x, y, z = held(1.05, 0.0, -0.2, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.5)
    assert beyond and (x, y, z) == (1.0, 0.0, 0.0)          # friction more than the slide: at e
    assert held(2.0, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.5) == (False, 2.0, 0.0, 0.3)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("friction", [0.0, 0.3, 2.0])
def test_met_rows_is_the_numpy_response(seed, friction):
    v, n = _random_contacts(seed, 257)
    out = np.empty_like(v)
    met_rows(v, n, friction, out)
    want = _met_reference(v, n, friction)
    np.testing.assert_allclose(out, want, rtol=0, atol=rounding(magnitude(v), OPS, eps=EPS64))
    # what went into the surface is gone; a motion leaving it keeps every bit
    assert (np.sum(out * n, axis=0) >= -rounding(magnitude(v), OPS, eps=EPS64)).all()
    leaving = np.sum(v * n, axis=0) >= 0
    assert leaving.any() and (~leaving).any()
    np.testing.assert_array_equal(out[:, leaving], v[:, leaving])


def test_slowed_rows_and_held_rows_are_their_one_point_forms_and_the_same_on_one_or_two_threads():
    v, n = _random_contacts(7, 5000)
    pressure = np.abs(np.random.default_rng(8).normal(0.0, 1.0, 5000))
    e = v + np.random.default_rng(9).normal(0.0, 0.1, v.shape)
    runs = []
    for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
        numba.set_num_threads(threads)
        slid = v.copy()
        slowed_rows(slid, pressure, 0.3)
        beyond, where = np.empty(v.shape[1], np.bool_), np.empty_like(v)
        held_rows(v, e, n, 0.3, beyond, where)
        out = np.empty_like(v)
        met_rows(v, n, 0.3, out)
        runs.append((slid, beyond, where, out))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    slid, beyond, where, out = runs[0]
    for k in range(0, 5000, 97):
        s = math.sqrt(v[0, k] * v[0, k] + v[1, k] * v[1, k] + v[2, k] * v[2, k])
        assert tuple(slid[:, k]) == tuple(v[:, k] * coulomb_kept(s, pressure[k], 0.3))
        b, *x = held(*v[:, k], *e[:, k], *n[:, k], 0.3)
        assert b == beyond[k] and (not b or tuple(x) == tuple(where[:, k]))
        assert met(*v[:, k], *n[:, k], 0.3) == tuple(out[:, k])
