"""Segment collision in the walk (``kernels.walk._segment_against``): a segment whose two points
lie outside a collider but which cuts through a part of it thinner than itself (an ear's rim) is
swung about its leader until its middle, quarter and three-quarter points are outside their
limits. A strand combed over the top edge of a fin 16 cm thick, its points 20 cm apart, pulled
down by a magnet: by points alone the segment that straddles the fin cuts 5 cm into it with both
its ends beside it; with segments met, the strand drapes over the edge. The groom at rest meets
no segment contact (the same bits as walked by points alone); every segment keeps its length;
the kernel and the numpy walk agree; the same bits on one and two threads. With a dynamics
layer, which carries what a swing leaves on to the next frame, meeting its samples turns a
segment by ``SEGMENT_TURN`` a frame at most: a strand pulled across the fin in one frame is
turned over the edge a little a frame, not thrown round it. No Blender.
"""

import math

import numba
import numpy as np
import pytest

from hair_wig import FrameInput, HairSet, Magnet, SpringSettings, Wig, WigSettings
from hair_wig.collision import Collider, ColliderMesh
from hair_wig.kernels import walk as walk_kernels
from hair_wig.walk import CollisionWalk, _turn_at_most
from test_collision import sphere
from tolerance import FOLLOW, rounding

STRANDS, POINTS, GAP = 6, 12, 0.2
HALF, TOP, BELOW = 0.08, -1.0, 0.5       # the fin's half thickness, its top (z), how far down it goes
OVER, PULL = 0.02, 0.12                  # the groom above the fin's top; the magnet's pull down
ACROSS = 8                               # the segment from this point to the next straddles the fin


def _fin():
    """A box 10 cm thick (y), 2 m long (x), its top at z = TOP."""
    hx, hy, hz = 1.0, HALF, BELOW / 2
    v = np.array([[sx * hx, sy * hy, sz * hz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
    v[:, 2] += TOP - hz
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return v, np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])


def _wig(settings=None):
    """Straight strands across the fin's top edge (along y, 2 cm above it), their ``ACROSS``-th
    point and the next 2 cm beside its faces, a small head far above; a magnet as wide as the
    scene."""
    pts = np.zeros((STRANDS, POINTS, 3))
    pts[:, :, 0] = np.linspace(-0.5, 0.5, STRANDS)[:, None]
    pts[:, :, 1] = GAP * (np.arange(POINTS)[None] - ACROSS - 0.5)
    pts[:, :, 2] = TOP + OVER
    hair = HairSet(pts.reshape(-1, 3).astype(np.float32), np.full(STRANDS, POINTS), name="Over the fin")
    v, t = _fin()
    head = sphere(0.25, 12, 24)
    head = (head[0] + (0.0, 0.0, 2.0), head[1])
    return Wig(hair, np.eye(4), np.eye(4), [Magnet("M", np.eye(4), radius=5.0)], settings or WigSettings(),
               head_mesh=head, colliders=[ColliderMesh("Fin", v, t)])


def _bake(wig, pulls=(0.0, PULL / 2, PULL)):
    state, outs = None, []
    for f, down in enumerate(pulls):
        m = np.eye(4)
        m[2, 3] = -down
        out, state = wig.step(FrameInput(np.eye(4), np.eye(4), np.array([m]), time=f / 24,
                                         collider_matrices=np.array([np.eye(4)])), state)
        outs.append(out.reshape(STRANDS, POINTS, 3).astype(np.float64))
    return outs


def _inside(x):
    """How far points x (..., 3) lie inside the fin (its signed distance's negative; ≤ 0 outside
    at the faces' planes, as a box's is)."""
    d = np.stack([np.abs(x[..., 1]) - HALF, x[..., 2] - TOP, (TOP - BELOW) - x[..., 2], np.abs(x[..., 0]) - 1.0])
    return -d.max(axis=0)


def _samples(out, at=walk_kernels.SEGMENT_AT):
    a, b = out[:, :-1], out[:, 1:]
    return np.stack([a + t * (b - a) for t in at])


def _points_alone(monkeypatch):
    """The walk with segments not met (each collider's segment bounds unbound)."""
    monkeypatch.setattr(Collider, "_segment_bounds", lambda self: np.zeros((4, 0), np.float32))


@pytest.mark.parametrize("numpy_walk", [False, True])
def test_a_segment_across_a_thin_part_is_swung_out_over_its_edge(monkeypatch, numpy_walk):
    """By points alone the segment from the 9th to the 10th point (2 cm beside either face, the
    fin 16 cm thick) cuts 5 cm and more into the fin with both its points outside.
    Met at its middle and quarters, no sample of any segment is inside the fin (its limit there is
    the surface: the groom lies 2 cm clear of it, with no offset) beyond float32 rounding of the
    coordinates (~1.5) over the walk (its strand's points carried on, each swing a few more), and
    every segment keeps its length."""
    if numpy_walk:
        monkeypatch.setattr(CollisionWalk, "_walk_kernel",
                            lambda self, p, base, span, first, *last: self._walk(p, base, span, first, *last))
    met = _bake(_wig())[-1]
    with monkeypatch.context() as m:
        _points_alone(m)
        alone = _bake(_wig())[-1]
    tol = rounding(1.5, POINTS * (FOLLOW + 30))
    # by points alone: every point outside, the middle of the straddling segment 4 cm in
    assert _inside(alone).max() <= tol
    assert _inside(_samples(alone)[0][:, ACROSS]).min() > 0.05
    # met: no sample inside, the straddling points lifted over the edge
    assert _inside(_samples(met)).max() <= tol
    assert _inside(met).max() <= tol
    assert (met[:, ACROSS + 1, 2] > alone[:, ACROSS + 1, 2] + 0.1).all()
    seg = np.linalg.norm(np.diff(met, axis=1), axis=2)
    np.testing.assert_allclose(seg, GAP, rtol=0, atol=rounding(1.5, 2 * FOLLOW))
    # between the samples a segment can still clip the edge by its sag: under an eighth of it
    dense = _samples(met, np.linspace(0, 1, 33))
    assert _inside(dense).max() < GAP / 8


def test_the_groom_at_rest_meets_no_segment_contact(monkeypatch):
    """The groom at rest is where it was put: each sample's limit is no farther out than its own
    clearance there. The rest frame and a frame with no pull are the groom to
    the bit."""
    hair = _wig().hair.points.reshape(STRANDS, POINTS, 3).astype(np.float64)
    for out in _bake(_wig(), pulls=(0.0, 0.0)):
        np.testing.assert_array_equal(out, hair)


@pytest.mark.parametrize("turn", [math.pi, walk_kernels.SEGMENT_TURN])
def test_segment_collision_gives_the_same_bits_on_one_and_two_threads(turn):
    """Every strand is walked by one iteration of the kernel, writing only its own points — the
    swing all the way, and the turn a dynamics layer gets (read from the last frame's record)."""
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            wig = _wig()
            wig.walk.turn = turn
            runs.append(_bake(wig, (0.0,) + (PULL,) * 4))
    finally:
        numba.set_num_threads(was)
    assert all(np.array_equal(a, b) for a, b in zip(*runs))


def _turned(lead, was, now, most, previous=None):
    """``_turn_at_most`` by the kernel (rows: each leader then its point; ``previous`` (3, S): the
    segments' directions at the end of the last step, as such rows too) and by numpy."""
    rows = np.zeros((3, 2 * lead.shape[1]), np.float32)
    rows[:, ::2], rows[:, 1::2] = lead, now
    last = np.zeros((3, 0), np.float32)
    if previous is not None:
        last = np.zeros_like(rows)
        last[:, 1::2] = previous
    for i in range(lead.shape[1]):
        walk_kernels._turn_at_most(rows, 2 * i + 1, 2 * i + 1, *map(float, was[:, i]), last, most)
    return rows[:, 1::2], _turn_at_most(lead.astype(np.float64), was.astype(np.float64), now.copy(), most,
                                        None if previous is None else previous.astype(np.float64))


def _along(lead, angle):
    """Points 0.2 from ``lead`` (3,) at ``angle`` from +y towards −z."""
    return lead + 0.2 * np.array([0.0, math.cos(angle), -math.sin(angle)])


@pytest.mark.parametrize("most", [walk_kernels.SEGMENT_TURN, math.radians(5.0)])
def test_a_swing_turns_a_segment_at_most_so_far_on_the_same_great_circle(most):
    """A point swung by 90° about its leader goes back to ``most`` from where it was, in the plane
    of the two, at its segment's length; one swung by less than ``most`` stays where it was
    swung, to the bit; one turned right round stays where it was. With where its segment pointed
    at the end of the last step: a swing within ``most`` of that stays as swung, to the bit; one
    farther from both goes ``most`` from whichever of the two comes nearer it. The kernel and
    numpy give the same bits (the same operations in the same order, no fused ones)."""
    lead = np.array([0.1, -0.2, 0.3])
    was = np.stack([_along(lead, 0.0)] * 4, axis=1).astype(np.float32)
    leads = np.stack([lead] * 4, axis=1).astype(np.float32)
    now = np.stack([_along(lead, math.pi), _along(lead, math.pi / 2), _along(lead, most / 2),
                    _along(lead, math.pi / 2)], axis=1).astype(np.float32)
    # coordinates up to 0.5, about a dozen roundings: the unit vectors, the turn, the float32 write
    tol = rounding(0.5, 12)
    for out in _turned(leads, was, now, most):
        np.testing.assert_array_equal(out[:, 0], was[:, 0])
        np.testing.assert_allclose(out[:, 1], _along(lead, most), rtol=0, atol=tol)
        np.testing.assert_array_equal(out[:, 2], now[:, 2])
    np.testing.assert_array_equal(*_turned(leads, was, now, most))
    previous = np.stack([_along(lead, math.pi / 2 - most / 2) - lead, _along(lead, math.pi / 4) - lead] * 2,
                        axis=1).astype(np.float32)
    kernel, numpy_ = _turned(leads[:, 1:3], was[:, 1:3], now[:, [1, 3]], most, previous[:, :2])
    np.testing.assert_array_equal(kernel, numpy_)
    np.testing.assert_array_equal(kernel[:, 0], now[:, 1])                   # within reach of the last
    want = _along(lead, math.pi / 4 + most)                                   # from the nearer of the two
    np.testing.assert_allclose(kernel[:, 1], want, rtol=0, atol=tol)
    # all the way: nothing turned back
    for out in _turned(leads, was, now, math.pi):
        np.testing.assert_array_equal(out, now)


def test_a_wig_turns_segments_by_segment_turn_with_a_dynamics_layer_and_all_the_way_without():
    """The wig gives its walk ``SEGMENT_TURN`` where a dynamics layer carries each step on, and
    π (the swing all the way, every frame walked afresh from its keyed pose) where none does."""
    assert _wig(WigSettings(dynamics=SpringSettings())).walk.turn == walk_kernels.SEGMENT_TURN
    assert _wig().walk.turn == math.pi


@pytest.mark.parametrize("numpy_walk", [False, True])
def test_a_swing_stays_within_segment_turn_of_where_its_segment_pointed(monkeypatch, numpy_walk):
    """The strands pulled 12 cm down across the fin's edge in one frame and held there: walked
    with the turn a dynamics layer gets (``SEGMENT_TURN``), the straddling segment turns that
    frame from where the walk by points alone leaves it by less than half as far as the swing all
    the way (a wig without a layer) turns it; each frame after, it turns on from where it ended
    by ``SEGMENT_TURN`` at most, and within a few frames it is where the swing all the way put
    it, to the bit."""
    if numpy_walk:
        monkeypatch.setattr(CollisionWalk, "_walk_kernel",
                            lambda self, p, base, span, first, *last: self._walk(p, base, span, first, *last))
    pulls = (0.0,) + (PULL,) * 6
    whole = _bake(_wig(), pulls)
    wig = _wig()
    wig.walk.turn = walk_kernels.SEGMENT_TURN
    held = _bake(wig, pulls)
    with monkeypatch.context() as m:
        _points_alone(m)
        alone = _bake(_wig(), pulls[:2])[-1]

    def turn(a, b):              # between the straddling segments of two results, per strand
        u, v = (x[:, ACROSS + 1] - x[:, ACROSS] for x in (a, b))
        c = (u * v).sum(axis=1) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1))
        return np.arccos(np.clip(c, -1.0, 1.0))

    most = walk_kernels.SEGMENT_TURN
    slack = rounding(1.5, POINTS * (FOLLOW + 30)) / GAP         # radians: the points' rounding over a segment
    # that frame: the swing all the way turns it over twice as far as the held one turns it
    # (about its own leader, which the same turn of the segment before moved: not to the bit)
    assert turn(whole[1], alone).min() > 2 * turn(held[1], alone).max()
    assert max(turn(held[f], held[f - 1]).max() for f in range(2, len(held))) <= most + slack
    np.testing.assert_array_equal(held[-1], whole[-1])
    assert _inside(_samples(held[-1])).max() <= rounding(1.5, POINTS * (FOLLOW + 30))
