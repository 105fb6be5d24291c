"""Borrowed collider tuples (``kernels.borrow.borrowed``): a kernel reads through them exactly what
the arrays they were made from hold, the colliders' typed Lists keep those arrays alive however
the caller lets go of its own, and a tuple holding anything numba counts other than arrays is
refused."""

import gc

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError
from numba.typed import List

from hair_wig.kernels.borrow import borrowed
from hair_wig.kernels.walk import threads_colliders


@njit(cache=False)
def _sums(t):
    b = borrowed(t)
    return b[0].sum(), b[1][0].sum(), b[1][1][2, 1], b[2]


@njit(cache=False)
def _read(lists, t, k):
    cols = lists[t]
    c = cols[k]
    return c[0].sum() + c[1][0].sum() + c[1][1].sum()


def _tuple(seed):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=40), (rng.normal(size=7).astype(np.float32), rng.normal(size=(3, 4))), 2.5)


@njit(cache=False)
def _first(t):
    return borrowed(t)[0]


def test_a_borrowed_tuple_reads_what_its_arrays_hold():
    t = _tuple(1)
    # borrowed: its arrays have no owner (boxed back, as here only while ``t`` lives, they own
    # nothing), the same data
    a = _first(t)
    assert a is not t[0] and a.base is None and np.array_equal(a, t[0])
    got = _sums(t)
    assert got[0] == pytest.approx(t[0].sum(), rel=1e-15)
    assert got[1] == pytest.approx(float(t[1][0].sum()), rel=1e-6)
    assert got[2] == t[1][1][2, 1] and got[3] == 2.5


def test_the_colliders_lists_keep_the_arrays_they_borrow_from():
    want = [_tuple(s) for s in range(3)]
    sums = [t[0].sum() + float(t[1][0].sum()) + t[1][1].sum() for t in want]
    lists = threads_colliders([tuple(_copy(x) for x in t) for t in want])     # the caller keeps nothing
    gc.collect()
    for _ in range(50):                         # reuse of freed memory would show here
        junk = [np.full(40, 7.0) for _ in range(20)]
        del junk
    for thread in range(len(lists)):
        for k in range(3):
            assert _read(lists, thread, k) == pytest.approx(sums[k], rel=1e-6)


def _copy(x):
    return tuple(_copy(y) for y in x) if isinstance(x, tuple) else (x.copy() if isinstance(x, np.ndarray) else x)


def test_a_tuple_holding_a_list_is_not_borrowed():
    lst = List([1.0])
    with pytest.raises(TypingError):
        _sums((np.zeros(3), (np.zeros(2, np.float32), np.zeros((3, 3))), lst))
