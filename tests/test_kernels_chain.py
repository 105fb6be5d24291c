"""The chain kernels (hair_wig/kernels/chain.py) against the numpy code they replaced
(``chain._least_motion_numpy`` and ``chain._give_numpy``, kept as their reference): random chains
of 2 to 16 points with every pattern of contacts (none, some, all), one or two points held;
chains nearly straight along their contact's normal; contacts that fight; strands hanging onto a
floor, given — and the same bits with 1 or 2 threads.

Tolerance, where the chains meet their contacts well away from head-on (``A`` well conditioned):
the two solve the same ``A Aᵀ λ = g`` each round, LAPACK's pivoted LU and the kernel's banded
LDLᵀ, both backward stable, so their steps agree to the normal equations' rounding,
``cond(A)² ε`` of the step times the roundings of an entry (a dot product of unit vectors, 5, and
the solve's, a few a row: ``SOLVE``); the matrix and ``g`` are built from the same coordinates by
sums in another order (5 roundings of values up to |x| in ``g``'s lengths and gaps), which the
solve carries on multiplied by ``cond(A)`` (A's rows are unit vectors: ‖A‖ ≥ 1). Each round adds
its own and the next round's linearisation carries the difference on (the Gauss–Newton map is a
projection there: not amplified), so ``ROUNDS`` of them add.

Where ``A`` is nearly singular (a chain straight along its normal) or the contacts cannot all
hold, the rounds need not converge and a rounding can go anywhere the ill-conditioned step takes
it: there the two are compared by what ``chain.settled`` reads — both finite, and the same verdict
on whether the answer is a give to take.
"""

import numpy as np
import pytest

from hair_wig.chain import ROUNDS, SETTLING, _give_numpy, _least_motion_numpy, give, least_motion, settled
from test_chain import _constraints
from tolerance import EPS64, magnitude, rounding

SOLVE = 5 + 8          # roundings in an entry of A Aᵀ (a dot product) and in the solve per row
BUILD = 5              # roundings of |x| in a row of g (a difference, a norm, a subtraction)


def _random_chains(seed, n, k, fixed):
    """``k`` chains of ``n`` points, 2–10 cm segments within 30° of the xy plane, contacts on a
    random half of each chain's free points (none on some chains, all on others), their normals
    within 20° of z, pushed 0.1–5 mm: every segment meets its contacts 40° or more from head-on."""
    rng = np.random.default_rng(seed)
    phi = rng.uniform(0, 2 * np.pi, (n - 1, k))
    tilt = rng.uniform(-np.pi / 6, np.pi / 6, (n - 1, k))
    seg = rng.uniform(0.02, 0.1, (n - 1, k))
    d = seg * np.stack([np.cos(tilt) * np.cos(phi), np.cos(tilt) * np.sin(phi), np.sin(tilt)])
    x = np.concatenate([rng.uniform(-0.3, 0.3, (3, 1, k)), np.cumsum(d, axis=1)], axis=1)
    x[:, 1:] += x[:, :1]
    length = seg * rng.uniform(0.98, 1.02, (n - 1, k))              # off a little, as a substep leaves them
    touch = rng.random((n, k)) < 0.5
    touch[:fixed] = False
    touch[:, 0] = False                                             # no contact
    touch[fixed:, 1 % k] = True                                     # a contact at every free point
    off = rng.uniform(0, np.radians(20.0), (n, k))
    turn = rng.uniform(0, 2 * np.pi, (n, k))
    normal = np.stack([np.sin(off) * np.cos(turn), np.sin(off) * np.sin(turn), np.cos(off)]) * touch
    reach = np.einsum("kis,kis->is", normal, x) + rng.uniform(1e-4, 5e-3, (n, k)) * touch
    return x, length, normal, reach


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n", [2, 3, 5, 9, 16])
@pytest.mark.parametrize("fixed", [1, 2])
def test_the_kernel_is_the_numpy_least_motion_where_the_chain_meets_its_contacts_well(seed, n, fixed):
    x, length, normal, reach = _random_chains(seed, n, 12, fixed)
    y = least_motion(x, fixed, length, normal, reach)
    ref = _least_motion_numpy(x, fixed, length, normal, reach)
    assert np.array_equal(y[:, :fixed], x[:, :fixed])             # held points never move
    if n == fixed:
        assert np.array_equal(y, x)
        return
    scale = magnitude(x, at_least=0.1)
    for c, a in enumerate(_constraints(y, fixed, normal)):
        cond = np.linalg.cond(a)
        step = np.abs(ref[:, :, c] - x[:, :, c]).max()
        tol = ROUNDS * (rounding(step, cond * cond * SOLVE, EPS64) + rounding(scale, cond * BUILD, EPS64))
        assert np.abs(y[:, :, c] - ref[:, :, c]).max() <= tol, (c, cond)


def _straight(tilt_deg, n=12, seg_len=0.05, push=5e-4, k=3):
    """Strands hanging ``tilt_deg`` from straight down onto a floor rising ``push`` under their
    last point, the root and the next held (as ``chain``'s tests)."""
    tilt = np.radians(tilt_deg)
    x = np.zeros((3, n, k))
    turn = np.linspace(0.0, 2.0, k)
    x[0] = np.arange(n)[:, None] * seg_len * np.sin(tilt) * np.cos(turn)
    x[1] = np.arange(n)[:, None] * seg_len * np.sin(tilt) * np.sin(turn)
    x[2] = -np.arange(n)[:, None] * seg_len * np.cos(tilt)
    length = np.full((n - 1, k), seg_len)
    normal = np.zeros((3, n, k))
    normal[2, -1] = 1.0
    reach = np.zeros((n, k))
    x[2, -1] += push
    reach[-1] = x[2, -1]
    return x, length, normal, reach, np.full(k, push)


@pytest.mark.parametrize("tilt", [0.0, 1e-3, 0.05, 0.5, 5.0, 30.0])
def test_nearly_straight_chains_get_the_same_verdict(tilt):
    """Straight down onto a rising floor (exactly singular at 0°, the step like δ/θ below a few
    degrees): both finite, both refused or both taken by ``settled`` against the swing's motion."""
    x, length, normal, reach, push = _straight(tilt)
    swing = np.sqrt(2 * length[-1] * push)
    y = least_motion(x, 2, length, normal, reach)
    ref = _least_motion_numpy(x, 2, length, normal, reach)
    assert np.isfinite(y).all()
    assert np.array_equal(settled(x, y, length, swing), settled(x, ref, length, swing))


def test_contacts_that_fight_are_met_alike():
    """Two contacts pulling a segment's ends apart (point 4 pushed up 1 cm, point 5 below it down
    1 cm, the segment between them straight down): no answer keeps its length; both meet the
    constraints in the least-squares sense of the ridge — finite, neither a give to take."""
    x, length, normal, reach = _random_chains(7, 8, 6, 1)
    normal[:] = 0.0
    reach[:] = 0.0
    was = x[:, 5].copy()
    x[:, 5] = x[:, 4] - np.array([0.0, 0.0, 1.0])[:, None] * length[4]
    x[:, 6:] += (x[:, 5] - was)[:, None]
    normal[2, 4], normal[2, 5] = 1.0, -1.0
    reach[4] = x[2, 4] + 0.01
    reach[5] = -(x[2, 5] - 0.01)
    y = least_motion(x, 1, length, normal, reach)
    ref = _least_motion_numpy(x, 1, length, normal, reach)
    assert np.isfinite(y).all()
    bound = np.full(x.shape[2], 1.0)
    assert not settled(x, y, length, bound).any() and not settled(x, ref, length, bound).any()


def _hanging(seed, k=300, n=12, seg_len=0.05):
    """``k`` strands hanging 1–60° from straight down (a third of them lying 60–89° across it),
    their points pushed up by a floor under their tips — 0.05–2 mm on most, on some over
    ``SETTLING`` of a segment (thrown in), none on a few — as a substep's contact leaves them:
    the pushed points moved, their segments short."""
    rng = np.random.default_rng(seed)
    tilt = np.radians(np.where(rng.random(k) < 0.3, rng.uniform(60, 89, k), rng.uniform(1, 60, k)))
    turn = rng.uniform(0, 2 * np.pi, k)
    bend = rng.uniform(0.3, 1.0, k)
    a = tilt * (bend + (1 - bend) * np.arange(1, n)[:, None] / n)             # (n − 1, k)
    d = seg_len * np.stack([np.sin(a) * np.cos(turn), np.sin(a) * np.sin(turn), -np.cos(a)])
    x = np.concatenate([np.zeros((3, 1, k)), np.cumsum(d, axis=1)], axis=1)
    length = np.full((n - 1, k), seg_len)
    depth = rng.uniform(5e-5, 2e-3, k) * (rng.random(k) < 0.9)
    depth[rng.random(k) < 0.1] = 2 * SETTLING * seg_len
    floor = x[2].min(axis=0) + depth
    push = np.zeros((3, n, k))
    push[2] = np.maximum(floor - x[2], 0.0)
    push[:, 0] = 0.0
    return x + push, length, push


@pytest.mark.parametrize("fixed", [1, 2])
@pytest.mark.parametrize("seed", range(3))
def test_the_give_kernels_are_the_numpy_give(seed, fixed):
    """The same strands given, and their motion as ``least_motion``'s (well conditioned where
    ``settled`` takes it: measured cond(A) < 60 — the tolerance reads it per strand)."""
    x, length, push = _hanging(seed)
    y, ref = x.copy(), x.copy()
    at, moved = give(y, length, push, fixed)
    at_ref, moved_ref = _give_numpy(ref, length, push, fixed)
    assert at.size > 20 and np.array_equal(at, at_ref)
    scale = magnitude(x, at_least=0.1)
    normal = push / np.sqrt(np.maximum(np.einsum("kis,kis->is", push, push), 1e-300))
    for c, a in zip(at, _constraints(y[:, :, at], fixed, normal[:, :, at])):
        cond = np.linalg.cond(a)
        step = np.abs(ref[:, :, c] - x[:, :, c]).max()
        tol = ROUNDS * (rounding(step, cond * cond * SOLVE, EPS64) + rounding(scale, cond * BUILD, EPS64))
        assert np.abs(y[:, :, c] - ref[:, :, c]).max() <= tol, (c, cond)
    np.testing.assert_allclose(moved, moved_ref, rtol=0, atol=np.abs(y - ref).max() + rounding(scale, 2, EPS64))
    rest = np.setdiff1d(np.arange(x.shape[2]), at)
    assert np.array_equal(y[:, :, rest], x[:, :, rest])


def _threads(fn):
    """``fn()`` with 1 thread and with 2 (numba.set_num_threads)."""
    import numba

    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            runs.append(fn())
    finally:
        numba.set_num_threads(was)
    return runs


def test_the_kernels_give_the_same_bits_on_one_and_two_threads():
    x, length, normal, reach = _random_chains(3, 16, 500, 1)
    one, two = _threads(lambda: least_motion(x, 1, length, normal, reach))
    assert np.array_equal(one, two)
    x, length, push = _hanging(5, k=2000)
    one, two = _threads(lambda: (lambda y: (y,) + give(y, length, push))(x.copy()))
    assert all(np.array_equal(a, b) for a, b in zip(one, two))


def test_the_settled_kernel_is_the_numpy_rule():
    """``kernels.chain.settled`` — the rule the walk's lift and the chain's give both take — on
    chains whose lengths and motion land on either side of ``KEPT`` and the bound, against
    ``chain.settled``: the same verdicts, a case within rounding of a threshold left out."""
    from hair_wig.chain import KEPT
    from hair_wig.kernels.chain import settled as settled_kernel

    rng = np.random.default_rng(5)
    n, k = 7, 400
    before = np.cumsum(rng.normal(size=(3, n, k)), axis=1)
    length = np.linalg.norm(np.diff(before, axis=1), axis=0)
    # half turned whole about their roots (lengths kept to rounding), half shaken (lengths off)
    angle = rng.uniform(-0.3, 0.3, k)
    c, s_ = np.cos(angle), np.sin(angle)
    turned = before.copy()
    rel = before - before[:, :1]
    turned[0] = before[0, :1] + c * rel[0] - s_ * rel[1]
    turned[1] = before[1, :1] + s_ * rel[0] + c * rel[1]
    shaken = before + rng.normal(size=(3, n, k)) * (10.0 ** rng.uniform(-6, -1, k))
    after = np.where(np.arange(k) % 2 == 0, turned, shaken)
    bound = np.linalg.norm((after - before).reshape(-1, k), axis=0) * rng.uniform(0.5, 1.5, k)
    want = settled(before, after, length, bound)
    off = np.abs(np.linalg.norm(np.diff(after, axis=1), axis=0) - length).max(axis=0)
    total = np.linalg.norm((after - before).reshape(-1, k), axis=0)
    # the two sum in other orders: a verdict within 1e-12 of its threshold may go either way
    longest = length.max(axis=0)
    clear = (np.abs(off - KEPT * longest) > 1e-12 * longest) & (np.abs(total - bound) > 1e-12 * bound)
    got = np.array([settled_kernel(np.ascontiguousarray(after[:, :, s].T), np.ascontiguousarray(before[:, :, s].T),
                                   np.ascontiguousarray(length[:, s]), KEPT, bound[s]) for s in range(k)])
    assert clear.sum() > 0.9 * k and want[clear].any() and not want[clear].all()
    assert np.array_equal(got[clear], want[clear])
