"""``chain.least_motion``: the least motion of a strand that keeps its lengths and meets its
contacts (Gauss's principle of least constraint), against a plain reference and physics with an
answer; and the Strands layer's give on a strand hanging onto a rising floor (issue 34 part 3)."""

import numpy as np
import pytest
from hair_wig.chain import GIVE, ROUNDS, give, least_motion, settled
from hair_wig.strands import StrandSettings, VerletStrands

EPS = np.finfo(np.float64).eps


def _reference(x, fixed, length, normal, reach, rounds):
    """The same Gauss–Newton steps with a dense constraint matrix per chain and least squares."""
    z = np.array(x, np.float64)
    _, n, k = z.shape
    m = n - fixed
    for _ in range(rounds):
        for c in range(k):
            rows, rhs = [], []
            for i in range(fixed, n):
                a = np.zeros((m, 3))
                d = z[:, i, c] - z[:, i - 1, c]
                ln = np.linalg.norm(d)
                a[i - fixed] = d / ln
                if i - 1 >= fixed:
                    a[i - 1 - fixed] = -d / ln
                rows.append(a.ravel())
                rhs.append(length[i - 1, c] - ln)
            for i in range(fixed, n):
                if normal[:, i, c] @ normal[:, i, c] > 0:
                    a = np.zeros((m, 3))
                    a[i - fixed] = normal[:, i, c]
                    rows.append(a.ravel())
                    rhs.append(reach[i, c] - normal[:, i, c] @ z[:, i, c])
            dz = np.linalg.lstsq(np.array(rows), np.array(rhs), rcond=None)[0]
            z[:, fixed:, c] += dz.reshape(m, 3).T
    return z


def _chains(seed, n=9, k=6, contacts=(-1, -4)):
    """Chains of 10 cm segments lying roughly across the contacts' normals (each segment within
    30° of the xy plane, each normal within 20° of z: every segment meets its contacts at 40° or
    more from head-on, where Gauss–Newton converges quadratically), pushed 1 cm at ``contacts``."""
    rng = np.random.default_rng(seed)
    phi = rng.uniform(0, 2 * np.pi, (n - 1, k))
    tilt = rng.uniform(-np.pi / 6, np.pi / 6, (n - 1, k))
    d = 0.1 * np.stack([np.cos(tilt) * np.cos(phi), np.cos(tilt) * np.sin(phi), np.sin(tilt)])
    x = np.concatenate([np.zeros((3, 1, k)), np.cumsum(d, axis=1)], axis=1)
    length = np.full((n - 1, k), 0.1)
    normal = np.zeros((3, n, k))
    reach = np.zeros((n, k))
    for j in contacts:
        off = rng.uniform(0, np.radians(20.0), k)
        turn = rng.uniform(0, 2 * np.pi, k)
        nz = np.stack([np.sin(off) * np.cos(turn), np.sin(off) * np.sin(turn), np.cos(off)])
        normal[:, j] = nz
        reach[j] = np.einsum("ks,ks->s", nz, x[:, j]) + 0.01
    return x, length, normal, reach


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("fixed", [1, 2, 3])
def test_least_motion_is_the_plain_gauss_newton_step_and_meets_every_constraint(seed, fixed):
    x, length, normal, reach = _chains(seed, contacts=(-1, -4, fixed))
    y = least_motion(x, fixed, length, normal, reach)
    ref = _reference(x, fixed, length, normal, reach, ROUNDS)
    scale = np.abs(x).max() + 0.1
    # the same steps, by normal equations here and least squares there: each round's step agrees
    # to cond(A)² ε of itself (normal equations square A's condition), and each round rounds the
    # coordinates it moves (a few ε of |x|); the next round's linearisation carries either
    # difference on, amplified by up to cond(A) (cond at the answer)
    a = _constraints(y, fixed, normal)
    cond = max(np.linalg.cond(m) for m in a)
    step = np.abs(y - x).max()
    assert np.abs(y - ref).max() <= ROUNDS * cond * (cond * EPS * step + 8 * EPS * scale)
    assert np.array_equal(y[:, :fixed], x[:, :fixed])          # held points never move
    # converged: a 1 cm push on 10 cm segments is 0.1 of one, squared each round, so after five
    # rounds only the rounding of the coordinates (|x| ≤ scale) and of a length from them is left
    seg = np.sqrt(np.einsum("kis,kis->is", np.diff(y, axis=1), np.diff(y, axis=1)))
    assert np.abs(seg - length).max() <= 16 * EPS * scale
    on = np.einsum("kis,kis->is", normal, y)
    has = np.einsum("kis,kis->is", normal, normal) > 0
    assert np.abs(on - reach)[has].max() <= 16 * EPS * scale


def test_least_motion_on_edge_cases():
    """One free point; a batch with no contact on chains already at their lengths (nothing to
    do: not a bit moves); a zero-length segment (no NaN)."""
    x, length, normal, reach = _chains(1, n=3, k=4, contacts=(-1,))
    y = least_motion(x, 2, length, normal, reach)
    assert np.abs(np.einsum("ks,ks->s", normal[:, -1], y[:, -1]) - reach[-1]).max() <= 16 * EPS
    x, _, _, _ = _chains(2)
    length = np.sqrt(np.einsum("kis,kis->is", np.diff(x, axis=1), np.diff(x, axis=1)))  # as they are
    none = np.zeros_like(x)
    assert np.array_equal(least_motion(x, 1, length, none, np.zeros(x.shape[1:])), x)
    x[:, 3] = x[:, 2]
    length[2] = 0.0
    assert np.isfinite(least_motion(x, 1, length, none, np.zeros(x.shape[1:]))).all()


def _constraints(y, fixed, normal):
    """Each chain's linearised constraint matrix A (rows: segments with a free end, contacts)."""
    _, n, k = y.shape
    out = []
    for c in range(k):
        rows = []
        for i in range(fixed, n):
            r = np.zeros((n - fixed, 3))
            d = y[:, i, c] - y[:, i - 1, c]
            r[i - fixed] = d / np.linalg.norm(d)
            if i - 1 >= fixed:
                r[i - 1 - fixed] = -d / np.linalg.norm(d)
            rows.append(r.ravel())
        for i in range(fixed, n):
            if normal[:, i, c] @ normal[:, i, c] > 0:
                r = np.zeros((n - fixed, 3))
                r[i - fixed] = normal[:, i, c]
                rows.append(r.ravel())
        out.append(np.array(rows))
    return out


def test_a_chain_straight_along_the_normal_does_not_give():
    """A strand hanging 0.05° from straight down onto a floor rising 0.5 mm: the linearisation
    is nearly singular (the step grows like δ/θ) and Gauss–Newton does not settle — measured,
    points would move 193 mm with lengths 128 mm off. ``give`` refuses it (``settled``) and
    leaves the strand to follow-the-leader, and ``settled`` refuses it from ``least_motion``'s
    own answer."""
    n, seg_len, tilt = 12, 0.05, np.radians(0.05)
    x = np.zeros((3, n, 1))
    x[0, :, 0] = np.arange(n) * seg_len * np.sin(tilt)
    x[2, :, 0] = -np.arange(n) * seg_len * np.cos(tilt)
    length = np.full((n - 1, 1), seg_len)
    push = np.zeros((3, n, 1))
    push[2, -1] = 5e-4
    normal = np.zeros((3, n, 1))
    normal[2, -1] = 1.0
    reach = np.zeros((n, 1))
    pushed = x + push
    reach[-1] = pushed[2, -1, 0]
    y = least_motion(pushed, 2, length, normal, reach)
    assert not settled(pushed, y, length, np.array([5e-4]))[0]
    before = pushed.copy()
    at, moved = give(pushed, length, push, fixed=2)
    assert at.size == 0 and moved.shape[2] == 0
    assert np.array_equal(pushed, before)


def test_a_hanging_chain_pushed_at_its_end_lifts_where_a_swing_would_slide():
    """Hair falling over a head onto a shoulder: a chain from a held root that leaves at 60° from
    straight down and hangs its last segments 5° from it, pushed up 1 mm at its end. A leader
    that stays swings the end sideways by about √(2 L δ) (13 mm on 83 mm segments); Gauss lifts
    the chain where it curves and the end moves a few times the push — and the lift is the least
    motion among those that keep the lengths: less than the swing's."""
    n, seg_len, push = 10, 0.083, 0.001
    x = np.zeros((3, n, 1))
    for i in range(1, n):
        a = np.radians(max(5.0, 60.0 - 11.0 * (i - 1)))
        x[:, i, 0] = x[:, i - 1, 0] + seg_len * np.array([np.sin(a), 0.0, -np.cos(a)])
    length = np.full((n - 1, 1), seg_len)
    normal = np.zeros((3, n, 1))
    normal[2, -1] = 1.0
    reach = np.zeros((n, 1))
    reach[-1] = x[2, -1, 0] + push
    y = least_motion(x, 1, length, normal, reach)
    assert abs(y[2, -1, 0] - reach[-1, 0]) <= 1e-9
    seg = np.linalg.norm(np.diff(y, axis=1), axis=0)
    assert np.abs(seg - seg_len).max() <= 1e-9
    moved = np.linalg.norm(y - x, axis=0)[:, 0]
    sideways = abs(y[0, -1, 0] - x[0, -1, 0])
    swing = np.sqrt(2 * seg_len * push)
    assert sideways < 0.25 * swing, (sideways, swing)
    assert np.sum(moved ** 2) < swing ** 2


@pytest.mark.parametrize("seed", range(6))
def test_the_layer_gives_as_a_chain_and_keeps_its_lengths_on_a_rising_floor(seed):
    """VerletStrands with a floor rising under hanging strands' ends, half a millimetre a frame
    (12 mm over a second: their last segments stay within 45° of the floor's normal, head-on):
    the pushed strands keep their lengths at the end of every frame — the give, not the next
    substep's follow-the-leader, sets them back: no segment ends more than ``chain.GIVE`` of its
    length short (a shortfall under that is left to follow-the-leader, as a push along a surface
    is). Left to follow-the-leader they end 0.1–0.8 % short, and this fails."""
    n, k, seg_len = 12, 5, 0.05
    rng = np.random.default_rng(seed)
    x = np.zeros((3, n, k))
    for c in range(k):
        tilt = np.radians(rng.uniform(3.0, 10.0))
        phi = rng.uniform(0, 2 * np.pi)
        for i in range(1, n):
            a = tilt * (0.3 + 0.7 * i / n)
            x[:, i, c] = x[:, i - 1, c] + seg_len * np.array(
                [np.sin(a) * np.cos(phi), np.sin(a) * np.sin(phi), -np.cos(a)])
    floor0 = x[2, -1].min() - 1e-4
    layer = VerletStrands(x, StrandSettings(goal_stiffness=50.0, bend=200.0))
    state = layer.initial_state(x, (0.0, 0.0, -9.81))
    rise = [0.0]

    def contact(p, f):
        z = floor0 + rise[0] + 5e-4 * (f - 1)
        push = np.zeros_like(p)
        push[2] = np.maximum(z - p[2], 0.0)
        push[:, 0] = 0.0
        return push if push.any() else None

    for _ in range(24):
        rise[0] += 5e-4
        layer.step(state, x, 1 / 24, (0.0, 0.0, -9.81), contact=contact)
        pos = state["pos"]
        seg = np.sqrt(np.einsum("kis,kis->is", np.diff(pos, axis=1), np.diff(pos, axis=1)))
        # GIVE of a segment short at most; never longer than it, but for the rounding of
        # coordinates (|x| ≤ 0.6 m) in a length from them
        assert (seg_len - seg).max() <= GIVE * seg_len, (seg_len - seg).max()
        assert (seg - seg_len).max() <= 16 * EPS * 0.6
        assert pos[2].min() >= floor0 + rise[0] - 1e-12                      # on or above the floor
