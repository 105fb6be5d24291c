"""Hair–hair interaction's kernels (hair_wig/kernels/pairs.py, through hair_wig.interaction; no bpy)
against plain numpy references on random input — strands of mixed segment counts, 1-segment
strands, zero-length and parallel segments, a segment that is not finite — and the same bits with
1 and 2 threads and run to run."""

import numba
import numpy as np
import pytest

from hair_wig import interaction
from hair_wig.interaction import Contacts, link_forces, repulsion, segment_closest, segment_pairs, static_links
from hair_wig.kernels import pairs
from tolerance import EPS64, magnitude, rounding


def closest_reference(p0, p1, q0, q1):
    """Closest points of segments pairwise, rows (3, K) (the numpy code the kernel replaced:
    Ericson §5.1.9, every branch taken with ``np.where``)."""
    d1, d2 = p1 - p0, q1 - q0
    r = p0 - q0
    a = np.einsum("kn,kn->n", d1, d1)
    e = np.einsum("kn,kn->n", d2, d2)
    f = np.einsum("kn,kn->n", d2, r)
    c = np.einsum("kn,kn->n", d1, r)
    b = np.einsum("kn,kn->n", d1, d2)
    denom = a * e - b * b
    tiny = 1e-300
    s = np.where(denom > 1e-12 * np.maximum(a * e, tiny), (b * f - c * e) / np.maximum(denom, tiny), 0.0)
    s = np.clip(s, 0.0, 1.0)
    t = (b * s + f) / np.maximum(e, tiny)
    low, high = t < 0, t > 1
    t = np.clip(t, 0.0, 1.0)
    s = np.where(low, np.clip(-c / np.maximum(a, tiny), 0, 1), s)
    s = np.where(high, np.clip((b - c) / np.maximum(a, tiny), 0, 1), s)
    q_point, p_point = e <= 1e-30, a <= 1e-30
    s = np.where(q_point, np.clip(-c / np.maximum(a, tiny), 0, 1), s)
    t = np.where(q_point, 0.0, t)
    t = np.where(p_point, np.clip(f / np.maximum(e, tiny), 0, 1), t)
    s = np.where(p_point, 0.0, s)
    return s, t, (q0 + d2 * t) - (p0 + d1 * s)


def brute_pairs(a, b, strand, reach):
    """Every pair ``i < j`` of segments of different strands, measured (O(M²)): those closer
    than ``reach``, sorted, with their closest points (the kernel's own ``closest``, tested on
    its own below, so the sets compare exactly)."""
    i, j = np.triu_indices(a.shape[1], 1)
    keep = strand[i] != strand[j]
    i, j = i[keep], j[keep]
    s, t, vec = segment_closest(a[:, i], b[:, i], a[:, j], b[:, j])
    near = np.flatnonzero(np.einsum("kn,kn->n", vec, vec) < reach ** 2)
    return i[near], j[near], s[near], t[near], vec[:, near]


def repulsion_reference(a, b, i, j, threshold, stiffness, rest=None):
    """The numpy repulsion the kernels replaced, on candidate pairs ``(i, j)``: each pair
    closer than its reach pushed apart, summed per segment with ``np.bincount``."""
    m = a.shape[1]
    s, t, vec = closest_reference(a[:, i], b[:, i], a[:, j], b[:, j])
    d = np.sqrt(np.einsum("kn,kn->n", vec, vec))
    reach = np.full(len(d), float(threshold))
    if rest is not None:
        _, _, vec0 = closest_reference(rest[0][:, i], rest[1][:, i], rest[0][:, j], rest[1][:, j])
        np.minimum(reach, np.sqrt(np.einsum("kn,kn->n", vec0, vec0)) * (1 - 1e-6), out=reach)
    near = np.flatnonzero((d < threshold) & (d < reach))
    i, j, s, t, vec, d, reach = i[near], j[near], s[near], t[near], vec[:, near], d[near], reach[near]
    push = vec / np.maximum(d, 1e-300) * (stiffness * (reach - d))
    on_a, on_b = np.zeros((3, m)), np.zeros((3, m))
    for k in range(3):
        on_a[k] -= np.bincount(i, push[k] * (1 - s), m)
        on_b[k] -= np.bincount(i, push[k] * s, m)
        on_a[k] += np.bincount(j, push[k] * (1 - t), m)
        on_b[k] += np.bincount(j, push[k] * t, m)
    return on_a, on_b, len(i)


def links_reference(pos, link_a, link_b, rest, stiffness):
    """The numpy link springs the kernel replaced (``np.bincount`` per point)."""
    out = np.zeros_like(pos)
    d = pos[:, :, link_b] - pos[:, :, link_a]
    r = np.sqrt(np.einsum("knl,knl->nl", d, d))
    f = d * (stiffness * (r - rest) / np.maximum(r, 1e-300))
    n, num = pos.shape[1], pos.shape[2]
    flat_a = (np.arange(n)[:, None] * num + link_a[None, :]).ravel()
    flat_b = (np.arange(n)[:, None] * num + link_b[None, :]).ravel()
    for k in range(3):
        fk = f[k].ravel()
        out[k] += (np.bincount(flat_a, fk, n * num) - np.bincount(flat_b, fk, n * num)).reshape(n, num)
    return out


def mixed_strands(seed, num=120, spread=0.3, step=0.05):
    """Random strands of 1..12 segments (strand-major segments, ``strand`` their strand), a few
    zero-length segments and a few exactly parallel neighbours: ``(a, b, strand)`` rows (3, M)."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 13, num)
    counts[:4] = 1
    a, b, strand = [], [], []
    for s, c in enumerate(counts):
        steps = rng.normal(0, step, (c, 3))
        steps[rng.random(c) < 0.05] = 0.0                        # zero-length segments
        pts = rng.uniform(-spread, spread, 3) + np.concatenate([np.zeros((1, 3)), np.cumsum(steps, axis=0)])
        a.append(pts[:-1])
        b.append(pts[1:])
        strand += [s] * c
    a, b = np.concatenate(a).T.copy(), np.concatenate(b).T.copy()
    strand = np.array(strand)
    # a strand laid beside another, shifted: parallel segments of different strands
    n0 = int(np.sum(strand == 5))
    first = np.flatnonzero(strand == 5)
    other = np.flatnonzero(strand == 6)[:n0]
    a[:, other], b[:, other] = a[:, first[:len(other)]] + 0.003, b[:, first[:len(other)]] + 0.003
    return a, b, strand


def both_thread_counts(fn):
    """``fn()`` with 1 thread and with 2 (numba.set_num_threads)."""
    out = []
    for threads in (1, 2):
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        try:
            out.append(fn())
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return out


def assert_same_bits(x, y):
    for u, v in zip(x, y):
        u, v = np.asarray(u), np.asarray(v)
        assert u.dtype == v.dtype and u.shape == v.shape
        assert u.tobytes() == v.tobytes()


def test_closest_is_the_numpy_reference():
    """``closest`` does the reference's operations in its order, one pair at a time: random
    pairs, parallel ones, points against segments and points against points."""
    rng = np.random.default_rng(3)
    p0, p1, q0, q1 = (rng.normal(size=(3, 2000)) * rng.choice([1e-3, 1.0, 1e3], (1, 2000)) for _ in range(4))
    q1[:, :50] = q0[:, :50] + (p1 - p0)[:, :50]                       # parallel
    q1[:, 50:80] = q0[:, 50:80]                                       # q a point
    p1[:, 70:100] = p0[:, 70:100]                                     # p a point (70-80: both)
    q0[:, 100:120] = p0[:, 100:120]                                   # touching
    got = segment_closest(p0, p1, q0, q1)
    want = closest_reference(p0, p1, q0, q1)
    assert ((got[0] >= 0) & (got[0] <= 1) & (got[1] >= 0) & (got[1] <= 1)).all()
    # float64: the same formula, the dot products at most summed in another order (2 roundings
    # of each of 5), carried through the parameters (~20 roundings) into the points of a pair
    # (~6 more), each of the pair's magnitude
    for k in range(p0.shape[1]):
        mag = magnitude(p0[:, k], p1[:, k], q0[:, k], q1[:, k])
        np.testing.assert_allclose(got[2][:, k], want[2][:, k], rtol=0, atol=rounding(2 * mag, 36, eps=EPS64))
    # the parameters where the closest points are well-conditioned (lines at an angle)
    d1, d2 = p1 - p0, q1 - q0
    cross = np.linalg.norm(np.cross(d1.T, d2.T), axis=1)
    sound = cross > 1e-3 * np.linalg.norm(d1, axis=0) * np.linalg.norm(d2, axis=0)
    np.testing.assert_allclose(got[0][sound], want[0][sound], rtol=0, atol=rounding(1.0, 36 * 1000, eps=EPS64))
    np.testing.assert_allclose(got[1][sound], want[1][sound], rtol=0, atol=rounding(1.0, 36 * 1000, eps=EPS64))


@pytest.mark.parametrize("seed, reach", [(0, 0.02), (1, 0.05), (2, 0.004), (3, 0.2)])
def test_search_finds_exactly_the_pairs_brute_force_finds(seed, reach):
    """The grid search against all pairs: the same pairs, each once, sorted by ``(i, j)``, of
    different strands, with the closest points of each — strands of 1..12 segments."""
    a, b, strand = mixed_strands(seed)
    i, j, s, t, vec = segment_pairs(a, b, strand, reach)
    bi, bj, bs, bt, bvec = brute_pairs(a, b, strand, reach)
    assert len(bi) > 10
    np.testing.assert_array_equal(i, bi)
    np.testing.assert_array_equal(j, bj)
    assert (i < j).all() and (strand[i] != strand[j]).all()
    assert_same_bits((s, t, vec), (bs, bt, bvec))                    # the same kernel on the same pair


def test_search_edge_cases():
    """No segments, one, all of one strand, a segment not finite (never a pair), a spread far
    wider than the threshold (the grid's cells grow, the pairs stay exact), and pairs exactly
    at the threshold (closer than it: not)."""
    for m in (0, 1):
        got = segment_pairs(np.zeros((3, m)), np.ones((3, m)), np.arange(m), 0.1)
        assert len(got[0]) == 0 and got[4].shape == (3, 0)
    a, b, strand = mixed_strands(4)
    assert len(segment_pairs(a, b, np.zeros_like(strand), 0.1)[0]) == 0
    bad = a.copy()
    bad[1, 7] = np.nan
    bad[0, 9] = np.inf
    i, j, *_ = segment_pairs(bad, b, strand, 0.05)
    assert not np.isin([7, 9], np.r_[i, j]).any()
    want = brute_pairs(a, b, strand, 0.05)
    keep = ~np.isin(want[0], [7, 9]) & ~np.isin(want[1], [7, 9])
    np.testing.assert_array_equal(np.c_[i, j], np.c_[want[0][keep], want[1][keep]])
    # two clusters 1e6 apart: each axis has more than the grid's most cells of the threshold
    far = a.copy(), b.copy()
    far[0][:, ::2] += 1e6
    far[1][:, ::2] += 1e6
    got = segment_pairs(*far, strand, 0.02)
    want = brute_pairs(*far, strand, 0.02)
    assert len(want[0]) > 10
    np.testing.assert_array_equal(np.c_[got[0], got[1]], np.c_[want[0], want[1]])
    # points 1 apart on a line: at a threshold of exactly 1 no pair, just above every neighbour
    line = np.zeros((3, 5))
    line[0] = np.arange(5.0)
    assert len(segment_pairs(line, line, np.arange(5), 1.0)[0]) == 0
    assert len(segment_pairs(line, line, np.arange(5), 1.0 + 1e-9)[0]) == 4


def test_a_crowded_search_gives_what_a_roomy_one_does():
    """Room is made for a guess of pairs per segment; blocks that found more are searched again
    with room for all: the result does not depend on the guess."""
    a, b, strand = mixed_strands(5, num=300, spread=0.15)
    roomy = pairs.find_pairs(a, b, strand, 0.03, per_segment=50.0)
    crowded = pairs.find_pairs(a, b, strand, 0.03, per_segment=0.0)
    assert len(roomy[0]) > 500
    assert_same_bits(roomy, crowded)


def test_search_same_bits_with_one_and_two_threads_and_run_to_run():
    a, b, strand = mixed_strands(6, num=400, spread=0.2)
    one, two = both_thread_counts(lambda: segment_pairs(a, b, strand, 0.03))
    assert len(one[0]) > 500
    assert_same_bits(one, two)
    assert_same_bits(one, segment_pairs(a, b, strand, 0.03))


@pytest.mark.parametrize("with_rest", [False, True])
def test_repulsion_is_the_numpy_reference(with_rest):
    """The repulsion measured per pair and gathered per segment against the reference's
    ``np.bincount`` over the same candidates: searched here, from a ``Contacts``'s wider list,
    and against a groom (``rest``) some pairs are closer in."""
    a, b, strand = mixed_strands(7, num=300, spread=0.15)
    rng = np.random.default_rng(8)
    rest = (a + rng.normal(0, 0.004, a.shape), b + rng.normal(0, 0.004, b.shape)) if with_rest else None
    threshold, k = 0.02, 300.0
    wide = segment_pairs(a, b, strand, 2 * threshold)[:2]
    want = repulsion_reference(a, b, *wide, threshold, k, rest)
    for candidates in (None, wide):
        on_a, on_b, count = repulsion(a, b, strand, threshold, k, candidates, rest)
        assert count == want[2] > 100
        # float64: each pair's push (<= k threshold) the same to ~10 roundings; the sums per
        # segment in the same order (bincount's, the pairs'): a rounding per pair on the sum
        per = int(np.bincount(np.r_[wide[0], wide[1]], minlength=a.shape[1]).max())
        tol = rounding(per * k * threshold, 10 + per, eps=EPS64)
        np.testing.assert_allclose(on_a, want[0], atol=tol)
        np.testing.assert_allclose(on_b, want[1], atol=tol)


def test_repulsion_same_bits_with_one_and_two_threads_and_run_to_run():
    a, b, strand = mixed_strands(9, num=400, spread=0.2)
    rest = (a * 1.01, b * 1.01)
    one, two = both_thread_counts(lambda: repulsion(a, b, strand, 0.02, 300.0, None, rest))
    assert one[2] > 100
    assert_same_bits(one[:2], two[:2])
    assert one[2] == two[2]
    assert_same_bits(one[:2], repulsion(a, b, strand, 0.02, 300.0, None, rest)[:2])


def test_link_forces_are_the_numpy_reference_and_the_same_bits_with_any_threads():
    rng = np.random.default_rng(10)
    n, num = 7, 60
    pos = rng.normal(size=(3, n, num))
    link_a, link_b = static_links(pos[:, 0], 3)
    rest = rng.uniform(0.5, 2.0, (n, len(link_a)))
    got = link_forces(pos, link_a, link_b, rest, 40.0)
    want = links_reference(pos, link_a, link_b, rest, 40.0)
    # float64: each spring the same ops (~12 roundings of |d| k, d up to 2 x the spread), summed
    # per point in link order: a rounding per link of the point's strand on the sum
    per = int(np.bincount(np.r_[link_a, link_b]).max())
    scale = 40.0 * 2 * magnitude(pos) * (2 * magnitude(pos) + rest.max())
    np.testing.assert_allclose(got, want, atol=rounding(per * scale, 12 + per, eps=EPS64))
    one, two = both_thread_counts(lambda: link_forces(pos, link_a, link_b, rest, 40.0))
    assert_same_bits([one], [two])
    assert not link_forces(pos, np.zeros(0, np.int64), np.zeros(0, np.int64), rest[:, :0], 40.0).any()


def test_contacts_follow_the_motion_and_give_the_forces_of_a_fresh_search():
    """Points moving farther than the skin at every call: the list is given up (no skin, every
    call searches at the threshold); once they move slowly the margin comes back and a list
    serves several calls. At every call the forces are those of a fresh search, bit for bit."""
    a0, b0, strand = mixed_strands(11, num=200, spread=0.15)
    num_seg = a0.shape[1]
    pts = np.concatenate([a0, b0], axis=1)                            # the points the segments are made of
    contacts = Contacts(strand, 0.02, 0.02)
    rng = np.random.default_rng(12)
    drift = rng.normal(0, 1, pts.shape)
    drift /= np.linalg.norm(drift, axis=0).max()                      # at most 1 a point
    skins = []
    for step in range(24):
        # 3 cm a call, then 0.1 mm a call: below a sixth of the margin (3.3 mm) the margin is
        # back, and a list of it serves 100 calls
        p = pts + drift * (0.03 * min(step, 8) + 1e-4 * max(step - 8, 0))
        a, b = p[:, :num_seg], p[:, num_seg:]
        got = repulsion(a, b, strand, 0.02, 300.0, contacts.candidates(p, a, b))
        want = repulsion(a, b, strand, 0.02, 300.0)
        assert_same_bits(got[:2], want[:2])
        assert got[2] == want[2]
        skins.append(contacts.skin)
    assert skins[1:9] == [0.0] * 8 and skins[-1] == 0.02
    assert contacts.searches < 24


def test_a_point_not_finite_searches_again():
    a, b, strand = mixed_strands(13)
    p = np.concatenate([a, b], axis=1)
    contacts = Contacts(strand, 0.02, 0.02)
    contacts.candidates(p, a, b)
    p = p.copy()
    p[2, 3] = np.nan
    contacts.candidates(p, a, b)
    assert contacts.searches == 2


def test_the_strands_layer_steps_the_same_bits_with_one_and_two_threads():
    """Hair against hair inside the Strands layer (repulsion and static links, every substep):
    a few frames of strands swinging, the same bits with 1 and 2 threads."""
    from hair_wig.strands import StrandSettings, VerletStrands
    from test_strands import hanging

    rest = hanging(50, 10, seed=4)
    rest[:2] *= 0.2
    g = np.array([0.0, 0.0, -9.81])

    def bake():
        layer = VerletStrands(rest, StrandSettings(hair_hair=True, diameter=0.01, links=2))
        state = layer.initial_state(rest, g)
        out = []
        for f in range(4):
            goal = rest + np.array([0.03 * f, 0.0, 0.0])[:, None, None]
            out.append(layer.step(state, goal, 1 / 24, g).copy())
        assert layer.pairs > 0
        return out

    one, two = both_thread_counts(bake)
    assert_same_bits(one, two)


def test_interaction_keeps_its_public_names():
    for name in ("segment_closest", "segment_pairs", "repulsion", "Contacts", "static_links", "link_forces"):
        assert hasattr(interaction, name)
