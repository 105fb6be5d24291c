"""Hair–hair interaction (seed 004), numpy core only: the broadphase finds exactly the pairs brute
force finds, segment distances are exact, and the repulsion is the seed's spring."""

import numpy as np
import pytest

from hair_wig.interaction import repulsion, segment_closest, segment_pairs
from tolerance import EPS64, magnitude, rounding


def brute_pairs(a, b, strand, threshold):
    m = a.shape[1]
    i, j = np.triu_indices(m, 1)
    keep = strand[i] != strand[j]
    i, j = i[keep], j[keep]
    _, _, vec = segment_closest(a[:, i], b[:, i], a[:, j], b[:, j])
    near = np.einsum("kn,kn->n", vec, vec) < threshold ** 2
    return set(zip(i[near].tolist(), j[near].tolist()))


def sampled_distance(p0, p1, q0, q1, n=401):
    """Distance between two segments by dense sampling (an upper bound within the step)."""
    s = np.linspace(0, 1, n)
    P = p0[None] + s[:, None] * (p1 - p0)[None]
    Q = q0[None] + s[:, None] * (q1 - q0)[None]
    return np.sqrt(((P[:, None] - Q[None]) ** 2).sum(-1)).min()


def strands_in_a_box(num, n, seed, spread=1.0):
    rng = np.random.default_rng(seed)
    roots = rng.uniform(-spread, spread, (num, 3))
    steps = rng.normal(0, 0.08, (num, n - 1, 3))
    pts = np.concatenate([roots[:, None], roots[:, None] + np.cumsum(steps, axis=1)], axis=1)   # (S, n, 3)
    a = pts[:, :-1].reshape(-1, 3).T.copy()
    b = pts[:, 1:].reshape(-1, 3).T.copy()
    strand = np.repeat(np.arange(num), n - 1)
    return a, b, strand


def test_segment_distance_is_exact():
    rng = np.random.default_rng(3)
    p0, p1, q0, q1 = (rng.normal(size=(3, 300)) for _ in range(4))
    q1[:, :20] = q0[:, :20] + (p1 - p0)[:, :20]                     # parallel pairs
    q1[:, 20:30] = q0[:, 20:30]                                     # a point against a segment
    s, t, vec = segment_closest(p0, p1, q0, q1)
    d = np.linalg.norm(vec, axis=0)
    assert ((s >= 0) & (s <= 1) & (t >= 0) & (t <= 1)).all()
    # float64. The closest pair (~30 roundings; where s, t are off — nearly parallel pairs — the
    # distance moves only to second order), its norm (4), a sample's point and norm (10): 44
    # roundings of coordinates up to the largest |x|; a wrong pair is farther by 1e-3 and more.
    # ``ref − 0.01`` is the sampling's step, not rounding.
    for k in range(300):
        ref = sampled_distance(p0[:, k], p1[:, k], q0[:, k], q1[:, k])
        tol = rounding(magnitude(p0[:, k], p1[:, k], q0[:, k], q1[:, k]), 44, eps=EPS64)
        assert d[k] <= ref + tol and d[k] >= ref - 0.01, (k, d[k], ref)
    # the same points by the same formula, each side a difference, a product and sums: 2 x 5
    np.testing.assert_allclose(vec, (q0 + t * (q1 - q0)) - (p0 + s * (p1 - p0)),
                               atol=rounding(2 * magnitude(p0, p1, q0, q1), 10, eps=EPS64))


@pytest.mark.parametrize("seed, num, n, threshold", [(0, 200, 12, 0.05), (1, 400, 16, 0.02), (2, 60, 8, 0.3)])
def test_broadphase_finds_exactly_the_pairs_brute_force_finds(seed, num, n, threshold):
    a, b, strand = strands_in_a_box(num, n, seed, spread=0.5)
    i, j, s, t, vec = segment_pairs(a, b, strand, threshold)
    got = list(zip(i.tolist(), j.tolist()))
    assert len(got) == len(set(got))                                 # each pair once
    want = brute_pairs(a, b, strand, threshold)
    assert set(got) == want and len(want) > 10
    assert (strand[i] != strand[j]).all()


def test_repulsion_pushes_two_crossing_segments_apart_by_the_seeds_spring():
    """Two segments crossing 0.01 apart, threshold 0.05, k = 100: each feels k (0.05 − 0.01) = 4
    along the shortest vector, split between its ends by where the closest points lie."""
    a = np.array([[-1.0, 0.0, 0.0], [0.25, -1.0, 0.01]]).T
    b = np.array([[1.0, 0.0, 0.0], [0.25, 1.0, 0.01]]).T
    on_a, on_b, pairs = repulsion(a, b, np.array([0, 1]), 0.05, 100.0)
    assert pairs == 1
    total = on_a + on_b
    # float64: the closest pair (~30 roundings of coordinates <= 1, x k = 100 into the force),
    # k (threshold − d) along the unit vector and its split by s (~10 of the force 4): a wrong
    # split or spring is off by a tenth and more
    tol = rounding(100.0, 30, eps=EPS64) + rounding(4.0, 10, eps=EPS64)
    np.testing.assert_allclose(total[:, 0], [0, 0, -4.0], atol=tol)
    np.testing.assert_allclose(total[:, 1], [0, 0, 4.0], atol=tol)
    np.testing.assert_allclose(on_a[2, 0], -4.0 * (1 - 0.625), atol=tol)     # s = 0.625 along the first
    np.testing.assert_allclose(on_b[2, 0], -4.0 * 0.625, atol=tol)
    far_a, far_b, none = repulsion(a, b + np.array([[0, 0], [0, 0], [0, 0.5]]) * 0, np.array([0, 0]), 0.05, 100.0)
    assert none == 0 and not far_a.any() and not far_b.any()            # same strand: no force


def test_strands_closer_than_a_hair_push_apart_to_its_diameter():
    """Two straight strands groomed 1 cm apart, squeezed to 2 mm, diameter 5 mm, nothing else
    acting (no goal, no gravity) and a heavy drag (so they do not coast on): they part until
    their segments are one diameter apart — the repulsion ends there."""
    from hair_wig.strands import StrandSettings, VerletStrands

    n = 6
    rest = np.zeros((3, n, 2))
    rest[2, :, :] = -np.linspace(0, 0.25, n)[:, None]
    rest[0, :, 1] = 0.01
    squeezed = rest.copy()
    squeezed[0, :, 1] = 0.002
    settings = StrandSettings(goal_stiffness=0.0, goal_damping=0.0, drag=400.0, hold_style=False,
                              root_direction=False, pinned=False, hair_hair=True, diameter=0.005)
    layer = VerletStrands(rest, settings)
    state = layer.initial_state(squeezed, np.zeros(3))
    rest = squeezed
    for _ in range(48):
        layer.step(state, rest, 1 / 24, np.zeros(3))
    gap = state["pos"][0, :, 1] - state["pos"][0, :, 0]
    # physical: the repulsion's spring lets them settle a hair's breadth (1e-6) inside it, and
    # the drag stops them within a tenth beyond
    assert gap.min() >= 0.005 - 1e-6 and gap.max() <= 0.0055, gap
    # groomed 2 mm apart, the pair is at rest there: nothing pushes (issue 34 part 2)
    groomed = VerletStrands(squeezed, settings)
    state = groomed.initial_state(squeezed, np.zeros(3))
    for _ in range(4):
        groomed.step(state, squeezed, 1 / 24, np.zeros(3))
    np.testing.assert_array_equal(state["pos"], squeezed)
    off = VerletStrands(rest, StrandSettings(**{**settings.__dict__, "hair_hair": False}))
    state = off.initial_state(rest, np.zeros(3))
    off.step(state, rest, 1 / 24, np.zeros(3))
    np.testing.assert_allclose(state["pos"][0, :, 1] - state["pos"][0, :, 0], 0.002)


def test_static_links_join_near_neighbours_and_hold_their_distance():
    """A row of strands 1 cm apart: each is linked to its two nearest (the ends to one and the
    next), never to a far one; pulling one strand's goal sideways drags its linked neighbours
    along, and they would stay put without links."""
    from hair_wig.interaction import static_links
    from hair_wig.strands import StrandSettings, VerletStrands

    num, n = 6, 8
    rest = np.zeros((3, n, num))
    rest[0] = np.arange(num)[None, :] * 0.01
    rest[2] = -np.linspace(0, 0.3, n)[:, None]
    a, b = static_links(rest[:, 0], 2)
    pairs = set(zip(a.tolist(), b.tolist()))
    assert {(k, k + 1) for k in range(num - 1)} <= pairs
    assert all(abs(i - j) <= 2 for i, j in pairs)

    def pulled(links):
        settings = StrandSettings(links=links, link_stiffness=400.0, goal_stiffness=100.0,
                                  goal_profile=__import__("hair_wig").Profile.linear(1.0, 0.0))
        layer = VerletStrands(rest, settings)
        state = layer.initial_state(rest, np.zeros(3))
        goal = rest.copy()
        goal[1, 1:, 2] += np.linspace(0, 0.1, n)[1:]                 # strand 2 pulled out along y
        for _ in range(24):
            layer.step(state, goal, 1 / 24, np.zeros(3))
        return state["pos"][1, -1]                                     # tips' y

    with_links, without = pulled(2), pulled(0)
    assert abs(without[1]) <= 1e-9 and abs(without[3]) <= 1e-9
    assert with_links[1] > 0.005 and with_links[3] > 0.005


def test_contacts_kept_across_substeps_give_the_pairs_a_new_search_would():
    """The broadphase kept while points move less than half its margin: at every step of a
    random motion the pairs measured from it are exactly brute force's; it searches again only
    when something has moved farther."""
    from hair_wig.interaction import Contacts

    num, n, threshold = 150, 10, 0.04
    a0, b0, strand = strands_in_a_box(num, n, 7, spread=0.4)
    pts = np.concatenate([a0.reshape(3, num, n - 1), b0.reshape(3, num, n - 1)[:, :, -1:]], axis=2)
    contacts = Contacts(strand, threshold, threshold)
    rng = np.random.default_rng(8)
    drift = rng.normal(0, 1, pts.shape)
    for step in range(12):
        p = pts + drift * (0.004 * step)
        a, b = p[:, :, :-1].reshape(3, -1), p[:, :, 1:].reshape(3, -1)
        i, j = contacts.candidates(p, a, b)
        on_a, on_b, count = repulsion(a, b, strand, threshold, 10.0, (i, j))
        ref_a, ref_b, ref = repulsion(a, b, strand, threshold, 10.0)
        assert count == ref > 0
        # float64: the same pairs' forces (each <= k threshold), summed per segment in the order
        # each search lists them: one rounding per pair of the sum's size
        pairs = np.bincount(np.concatenate([i, j]), minlength=a.shape[1]).max()
        tol = rounding(pairs * 10.0 * threshold, pairs, eps=EPS64)
        np.testing.assert_allclose(on_a, ref_a, atol=tol)
        np.testing.assert_allclose(on_b, ref_b, atol=tol)
    assert 1 < contacts.searches < 12


def test_a_still_groom_of_hair_lying_on_hair_is_an_equilibrium():
    """Issue 34 part 2: sixty curved strands combed close (many pairs of segments nearer than a
    hair's diameter in the groom), gravity, the style's hold, nothing animated, the head turned
    (the groom carried by a rigid motion, as a still head anywhere in the scene): with hair
    against hair on, every frame is the bake without it, bit for bit — the contacts are measured
    against the groom's own distances (before, hair lying on hair was pushed up to 13 cm off)."""
    from hair_wig.strands import StrandSettings, VerletStrands
    from test_strands import hanging

    rest = hanging(60, 12, seed=3)
    rest[:2] *= 0.15                               # bunched: strands 2-10 mm apart, crossing
    c, s = np.cos(0.7), np.sin(0.7)
    turn = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
    goal = np.einsum("ij,jns->ins", turn, rest) + np.array([3.0, -2.0, 1.0])[:, None, None]
    g = np.array([0.0, 0.0, -9.81])
    runs = []
    for hair_hair in (True, False):
        layer = VerletStrands(rest, StrandSettings(hair_hair=hair_hair, diameter=0.01))
        state = layer.initial_state(goal, g, turn)
        runs.append([layer.step(state, goal, 1 / 24, g, turn).copy() for _ in range(12)])
        if hair_hair:
            a, b = rest[:, :-1].reshape(3, -1), rest[:, 1:].reshape(3, -1)
            assert len(segment_pairs(a, b, layer.segment_strand, 0.01)[0]) > 100     # touching in the groom
    np.testing.assert_array_equal(np.array(runs[0]), np.array(runs[1]))
