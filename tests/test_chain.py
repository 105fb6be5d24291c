"""``chain.least_motion``: the least motion of a strand that keeps its lengths and meets its
contacts (Gauss's principle of least constraint), against a plain reference and physics with an
answer; and the Strands layer's give on a strand hanging onto a rising floor (issue 34 part 3)."""

import numpy as np
from hair_wig.chain import least_motion
from hair_wig.strands import StrandSettings, VerletStrands

EPS = np.finfo(np.float64).eps


def _reference(x, fixed, length, normal, reach, rounds=3):
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


def _chains(seed, n=9, k=6):
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.normal(size=(3, n, k)) * 0.1, axis=1)
    length = np.sqrt(np.einsum("kis,kis->is", np.diff(x, axis=1), np.diff(x, axis=1)))
    normal = np.zeros((3, n, k))
    reach = np.zeros((n, k))
    for j in (n - 1, n - 4):                          # two contacts on each chain, 1 cm out
        nz = rng.normal(size=(3, k))
        nz /= np.linalg.norm(nz, axis=0)
        normal[:, j] = nz
        reach[j] = np.einsum("ks,ks->s", nz, x[:, j]) + 0.01
    normal[:, 2, ::2] = [[0.0], [0.0], [1.0]]       # a third on every other chain
    reach[2, ::2] = x[2, 2, ::2] - 0.005
    return x, length, normal, reach


def test_least_motion_is_the_plain_gauss_newton_step_and_meets_every_constraint():
    for fixed in (1, 2):
        x, length, normal, reach = _chains(fixed)
        y = least_motion(x, fixed, length, normal, reach)
        ref = _reference(x, fixed, length, normal, reach)
        scale = np.abs(x).max() + 0.1
        # the same steps: a solve of 2n rows against a least squares — each round's rounding,
        # conditioned by the chain's smallest angle (tens here), of |x|
        assert np.abs(y - ref).max() <= 1e3 * 3 * EPS * scale
        assert np.array_equal(y[:, :fixed], x[:, :fixed])          # held points never move
        seg = np.sqrt(np.einsum("kis,kis->is", np.diff(y, axis=1), np.diff(y, axis=1)))
        # 1 cm pushes on 10 cm segments: three quadratic rounds leave (0.1)^8 of a segment, and
        # the rounding above
        assert np.abs(seg - length).max() <= 1e-8 * length.max() + 1e3 * 3 * EPS * scale
        on = np.einsum("kis,kis->is", normal, y)
        has = np.einsum("kis,kis->is", normal, normal) > 0
        assert np.abs(on - reach)[has].max() <= 1e-8 + 1e3 * 3 * EPS * scale


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


def test_the_layer_gives_as_a_chain_and_keeps_its_lengths_on_a_rising_floor():
    """VerletStrands with a floor rising under hanging strands' ends, half a millimetre a frame
    (12 mm over a second: their last segments stay within 45° of the floor's normal, head-on):
    the pushed strands keep their lengths at the end of every frame (the give, not the next
    substep's follow-the-leader, sets them back), and no end jumps sideways out of its own
    motion."""
    n, k, seg_len = 12, 5, 0.05
    rng = np.random.default_rng(4)
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

    ends = []
    for _ in range(24):
        rise[0] += 5e-4
        shown = layer.step(state, x, 1 / 24, (0.0, 0.0, -9.81), contact=contact)
        seg = np.sqrt(np.einsum("kis,kis->is", np.diff(state["pos"], axis=1), np.diff(state["pos"], axis=1)))
        assert np.abs(seg - seg_len).max() <= 1e-9, np.abs(seg - seg_len).max()
        ends.append(shown[:, -1].copy())
    move = np.linalg.norm(np.diff(np.array(ends), axis=0), axis=1)          # (frames − 1, K)
    around = np.maximum(np.maximum(move[:-2], move[2:]), 5e-4)
    assert (move[1:-1] / around).max() < 3.0
