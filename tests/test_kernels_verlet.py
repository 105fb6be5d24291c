"""The Strands layer's substep kernel (hair_wig/kernels/verlet.py) against the plain numpy
substeps it replaced (``VerletStrands._substeps_numpy``, still Jakobsen's path): random wavy
strands of several point counts (1-segment strands among them) pulled toward a moving goal, with
and without the bend, force-field accelerations, contacts with a plane and the static links —
and the same bits with 1 or 2 threads.

The kernel does the numpy code's float64 operations in the same order, point by point, and the
same follow-the-leader (``kernels.leader.place``): it gives the same bits where every segment is
sound, and differs by an ulp where a contact squashes one (the blended direction's roundings
differ). Each frame is stepped from the same state, and the comparison allows a frame's
roundings: a few eps64 of |x| per point placed, carried root to tip (FOLLOW per point), over its
8 substeps — not their growth over a run, which a chaotic system multiplies."""

import numpy as np
import pytest

from hair_wig.strands import StrandSettings, VerletStrands
from tolerance import EPS64, FOLLOW, magnitude, rounding

G = np.array([0.0, 0.0, -9.81])


def _groom(n, num, seed):
    rng = np.random.default_rng(seed)
    steps = rng.normal(size=(3, n - 1, num)) * 0.3 + np.array([0.0, 0.0, -1.0])[:, None, None]
    steps *= 0.05 / np.linalg.norm(steps, axis=0, keepdims=True)
    root = rng.normal(size=(3, 1, num))
    return np.ascontiguousarray(np.concatenate([root, root + steps.cumsum(axis=1)], axis=1))


def _floor(z):
    """A contact with the plane z = ``z``: how far points below it are pushed up."""
    def contact(x, _f):
        push = np.zeros_like(x)
        push[2] = np.maximum(z - x[2], 0.0)
        return push if push.any() else None
    return contact


def _wind(x, v):
    return np.broadcast_to(np.array([2.0, 0.0, 0.0])[:, None, None], x.shape) - 0.5 * v


@pytest.mark.parametrize("n", [2, 5, 16])
@pytest.mark.parametrize("case", ["plain", "no bend", "fields", "contacts", "links"])
def test_the_substep_kernel_is_the_numpy_substep(n, case):
    rest = _groom(n, 120, seed=n)
    settings = StrandSettings(bend=0.0 if case == "no bend" else 1000.0, links=2 if case == "links" else 0)
    accel = _wind if case == "fields" else None
    contact = _floor(float(np.median(rest[2]))) if case == "contacts" else None
    # a frame's 8 substeps, each placing n points root to tip (FOLLOW roundings a point, carried
    # on along the strand), of |x|
    tol = rounding(magnitude(rest, at_least=1.0), 8 * FOLLOW * n, eps=EPS64)
    if contact is not None:
        # a contact's give (``chain.give``: the least motion of the chain, a banded solve along
        # the strand) multiplies what comes in by its condition number, which grows as n² for a
        # chain of n points: n more than the walk's n
        tol *= n
    # each frame from the same state (the reference's), so what is compared is one frame's
    # roundings, not their growth over a chaotic run
    kernel, numpy_ = VerletStrands(rest, settings), VerletStrands(rest, settings)
    numpy_._substeps = numpy_._substeps_numpy
    state = numpy_.initial_state(rest, G)
    for f in range(6):
        goal = rest + np.array([0.05 * f, 0.0, 0.02 * f])[:, None, None]
        mine = {k: v.copy() for k, v in state.items()}
        got = kernel.step(mine, goal, 1 / 24, G, accel=accel, contact=contact)
        want = numpy_.step(state, goal, 1 / 24, G, accel=accel, contact=contact)
        for a, b in ((got, want), (mine["pos"], state["pos"]), (mine["prev"], state["prev"])):
            np.testing.assert_allclose(a, b, rtol=0, atol=tol)
    assert np.abs(want - rest).max() > 0.01               # the strands did move


def test_the_substep_kernel_gives_the_same_bits_on_one_and_two_threads():
    import numba

    rest = _groom(16, 300, seed=3)
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            strands = VerletStrands(rest, StrandSettings())
            state = strands.initial_state(rest, G)
            for f in range(4):
                out = strands.step(state, rest + 0.03 * f, 1 / 24, G)
            runs.append((out, state["pos"].copy(), state["prev"].copy()))
    finally:
        numba.set_num_threads(was)
    assert all(np.array_equal(a, b) for a, b in zip(*runs))
