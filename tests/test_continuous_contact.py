"""Continuous contact (``kernels.walk._cross_way``): a point whose path since the last frame, in
a collider's own space, crossed the collider stays on the side it came from — on the plane its
limit off where it met the surface, at its segment's length. A plate 2 cm thick jumping 15 cm a
frame through hanging hair (its middle passes the points between two frames: each frame alone
sees them outside it, behind) holds the hair on its front face, exactly; the same hair without
the last frame's record goes through. Hair lying on a turning ball (a chord of its path cuts
into the surface by its sag) is not taken for a crossing; a collider still relative to the head
is left to the push. The walk's kernel, its numpy
form (``CollisionWalk._cross_column``) and the kernel before a whole-strand length pass
(``cross_paths``) hold alike; the same bits on one and two threads. No Blender.
"""

import numba
import numpy as np
import pytest

from hair_wig import FrameInput, HairSet, Magnet, Wig, WigSettings
from hair_wig.collision import Collider, ColliderMesh
from hair_wig.rods import RodSettings
from hair_wig.springs import SpringSettings
from hair_wig.strands import StrandSettings
from hair_wig.walk import CollisionWalk
from test_collision import sphere
from tolerance import rounding

STRANDS, POINTS, DROP = 12, 16, 1.0
SEGMENT = DROP / (POINTS - 1)
THICK, TOP, BOTTOM = 0.02, -0.9, -1.2
PLATE = (-0.4, -0.25, -0.1, 0.05, 0.1)       # the plate's middle, a frame each (x, m)


def _box(hx, hy, hz):
    v = np.array([[sx * hx, sy * hy, sz * hz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return v, np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])


def _at(x, z=(TOP + BOTTOM) / 2):
    m = np.eye(4)
    m[:3, 3] = (x, 0.0, z)
    return m


def _plate_wig(dynamics=None, length_mode="SEGMENT", strands=STRANDS):
    """Straight strands hanging 1 m from a small head at x = 0, and the plate (2 m wide) across
    them from 0.9 to 1.2 m below it."""
    pts = np.zeros((strands, POINTS, 3))
    pts[:, :, 1] = np.linspace(-0.5, 0.5, strands)[:, None]
    pts[:, :, 2] = -0.3 - np.linspace(0.0, DROP, POINTS)[None]
    hair = HairSet(pts.reshape(-1, 3).astype(np.float32), np.full(strands, POINTS), name="Curtain")
    v, t = _box(THICK / 2, 1.0, (TOP - BOTTOM) / 2)
    head = sphere(0.25, 12, 24)
    settings = WigSettings(dynamics=dynamics, length_mode=length_mode)
    return Wig(hair, np.eye(4), np.eye(4), [Magnet("M", np.eye(4), radius=0.001)], settings,
               head_mesh=head, colliders=[ColliderMesh("Plate", v, t, _at(PLATE[0]))])


def _sweep(wig):
    state, outs, crossed = None, [], []
    for f, x in enumerate(PLATE):
        out, state = wig.step(FrameInput(np.eye(4), np.eye(4), np.array([np.eye(4)]), time=f / 24,
                                         collider_matrices=np.array([_at(x)])), state)
        outs.append(out.reshape(STRANDS, POINTS, 3).copy())
        crossed.append(wig.crossed)
    return outs, crossed


def _without_last(monkeypatch):
    """Every frame's walk as if it were the first: no record of where the points were."""
    run = CollisionWalk.run
    monkeypatch.setattr(CollisionWalk, "run", lambda self, p, base, span, first, last=None, maps=None:
                        run(self, p, base, span, first))


# the points over the plate's face once it has passed the hair, as combed: the 12th to the 15th
# (1.03 to 1.23 m down)
FACE = slice(11, 15)


@pytest.mark.parametrize("numpy_walk", [False, True])
def test_a_plate_whose_middle_passes_the_hair_in_one_frame_holds_it_on_its_front_face(monkeypatch, numpy_walk):
    """Without dynamics each frame asks for the hair as combed, at x = 0. Once the plate's
    middle is past it (x = 0.05, then 0.1), every frame alone finds the points outside the plate,
    behind it. With continuous contact each point over the face is set on the front face —
    x = plate + 1 cm, to float32 rounding of coordinates ~1 (a few roundings: the map into the
    plate's space and back, the plane, the set-back on the segment's length) — the strand is
    draped over the plate's top edge from the 10th point, which lies on its top plane behind it
    (the 11th, then the 11th and 12th, over the edge: none inside the plate, to the same
    rounding, and no segment cuts it), and every segment keeps its length."""
    if numpy_walk:
        monkeypatch.setattr(CollisionWalk, "_walk_kernel",
                            lambda self, p, base, span, first, *last: self._walk(p, base, span, first, *last))
    outs, crossed = _sweep(_plate_wig())
    assert crossed[:3] == [0, 0, 0] and crossed[3] >= STRANDS * 5
    tol = rounding(1.3, 16)
    for (x, out), face in zip(zip(PLATE[3:], outs[3:]), (slice(11, 16), slice(12, 16))):
        np.testing.assert_allclose(out[:, face, 0], x + THICK / 2, rtol=0, atol=tol)
        over = out[:, 10:face.start]                  # draped over the top edge: outside the plate
        outside = np.maximum(np.abs(over[..., 0] - x) - THICK / 2, over[..., 2] - TOP)
        assert (outside >= -tol).all()
        assert not _cut(out, x).any()
        seg = np.linalg.norm(np.diff(out, axis=1), axis=2)
        np.testing.assert_allclose(seg, SEGMENT, rtol=0, atol=rounding(1.3, 8))
    for out in outs[:3]:                          # before it reaches them: as combed
        np.testing.assert_array_equal(out[..., 0], 0.0)


def _cut(out, x, edge=0.02):
    """Which segments (S, n − 1) of strands ``out`` (S, n, 3) pierce the plate at ``x``: cross its
    middle ``edge`` or more in from its edges (``scripts/thin_plate.py``'s count). Nearer an edge
    a segment draped over it may clip its corner by a chord's sag: under a millimetre here."""
    a, b = out[:, :-1] - (x, 0.0, 0.0), out[:, 1:] - (x, 0.0, 0.0)
    across = (a[..., 0] > 0) != (b[..., 0] > 0)
    t = np.where(across, a[..., 0] / np.where(across, a[..., 0] - b[..., 0], 1.0), 0.0)
    yz = a[..., 1:] + t[..., None] * (b[..., 1:] - a[..., 1:])
    return across & (yz[..., 1] < TOP - edge) & (yz[..., 1] > BOTTOM + edge) & (np.abs(yz[..., 0]) < 1.0 - edge)


def test_without_the_last_frame_the_plate_goes_through_the_hair(monkeypatch):
    """The same sweep with each frame's walk blind to the last: the points over the face end
    behind the plate (as combed, x = 0) — what continuous contact is for."""
    _without_last(monkeypatch)
    outs, _ = _sweep(_plate_wig())
    for x, out in zip(PLATE[3:], outs[3:]):
        assert (out[:, FACE, 0] < x - THICK / 2).all()


def test_before_a_whole_strand_length_pass_the_points_are_held_alike():
    """With length kept per strand (the patent's scale, not a walk) the points are held by the
    kernel run before the collision pass (``cross_paths``): on the front face's side, every
    point over the face at or in front of it. (Nothing here places a point from the one
    before, so the points stay at their heights as combed: over the face are the 11th to the
    14th, 0.97 to 1.17 m down.)"""
    outs, crossed = _sweep(_plate_wig(length_mode="STRAND"))
    assert crossed[3] >= STRANDS * 4
    tol = rounding(1.3, 16)
    for x, out in zip(PLATE[3:], outs[3:]):
        assert (out[:, 10:14, 0] >= x + THICK / 2 - tol).all()


def test_a_frame_stepped_unmeasured_is_measured_later_as_its_step_would_have():
    """Live playback steps without measuring how deep the hair is held (``measure=False``: a
    quarter of its frame on a groom combed close over the head); a bake that takes such a frame
    measures it then (``Wig.penetration_of``), after later frames were stepped — with the
    colliders set where they were at that frame: the same figure as a measured step, bit for
    bit. A point put in the plate's middle at frame 3 reads as deep as its half thickness plus
    its limit there (and not at frame 4, the plate 15 cm on)."""
    measured, unmeasured = _plate_wig(), _plate_wig()
    state_a = state_b = None
    outs, inputs, figures = [], [], []
    for f, x in enumerate(PLATE):
        inp = FrameInput(np.eye(4), np.eye(4), np.array([np.eye(4)]), time=f / 24,
                         collider_matrices=np.array([_at(x)]))
        out_a, state_a = measured.step(inp, state_a)
        figures.append(measured.penetration)
        out_b, state_b = unmeasured.step(inp, state_b, measure=False)
        assert unmeasured.penetration is None
        np.testing.assert_array_equal(out_b, out_a)
        outs.append(out_b.copy())
        inputs.append(inp)
    for out, inp, figure in zip(outs, inputs, figures):
        assert unmeasured.penetration_of(out, inp) == figure
    w = 5 * POINTS + 12                              # a point over the plate's face, as combed
    inside = outs[3].copy()
    inside[w] = (PLATE[3], inside[w, 1], (TOP + BOTTOM) / 2)
    plate = unmeasured.colliders[-1]
    expected = THICK / 2 + float(plate.limit[w])
    assert abs(unmeasured.penetration_of(inside, inputs[3]) - expected) <= rounding(1.3, 8)
    assert unmeasured.penetration_of(inside, inputs[4]) < expected / 2


def test_hair_lying_on_a_turning_ball_is_not_taken_for_a_crossing(monkeypatch):
    """Hair lying on a ball of radius 0.5 (its points on the sphere, so its collision surface is
    the ball itself) that turns 12° a frame about its centre under it: in the ball's own space
    each point's path is a chord that cuts into it by its sag (0.5 (1 − cos 6°) = 2.7 mm) and
    ends on the ball again, facing the way it met it. Nothing crosses, and every frame is the
    bits of the walk without continuous contact (its segments not met by their samples in
    either: the walk leaves a collider's chord cuts to continuous contact while it sweeps, and
    meets them when it keeps still — on this faceted ball, a facet's sag off the sphere)."""
    monkeypatch.setattr(Collider, "_segment_bounds", lambda self: np.zeros((4, 0), np.float32))
    n, count = 12, 40
    rng = np.random.default_rng(7)
    u = rng.normal(size=(count, 3)) * (1, 1, 0.3) + (0, 0, 1.0)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    t = np.cross(u, (0.0, 0.0, 1.0))
    t /= np.linalg.norm(t, axis=1, keepdims=True)
    a = np.linspace(0, 0.8, n)[None, :, None]
    pts = 0.5 * (u[:, None] * np.cos(a) + t[:, None] * np.sin(a))
    hair = HairSet(pts.reshape(-1, 3).astype(np.float32), [n] * count, name="Flat")
    v, tri = sphere(0.5, 48, 96)

    def run():
        wig = Wig(hair, np.eye(4), np.eye(4), [Magnet("M", np.eye(4), radius=0.001)], WigSettings(),
                  colliders=[ColliderMesh("Ball", v, tri, np.eye(4))])
        state, outs, crossed = None, [], []
        for f in range(6):
            c, s = np.cos(np.radians(12 * f)), np.sin(np.radians(12 * f))
            m = np.eye(4)
            m[:2, :2] = ((c, -s), (s, c))
            out, state = wig.step(FrameInput(np.eye(4), np.eye(4), np.array([np.eye(4)]), time=f / 24,
                                             collider_matrices=np.array([m])), state)
            outs.append(out.copy())
            crossed.append(wig.crossed)
        return outs, crossed

    outs, crossed = run()
    assert crossed == [0] * 6
    _without_last(monkeypatch)
    blind, _ = run()
    assert all(np.array_equal(a, b) for a, b in zip(outs, blind))


def test_a_collider_that_keeps_still_relative_to_the_head_is_left_to_the_push(monkeypatch):
    """The plate parented to the head (still relative to it) while the hair is pulled through it
    by a magnet: continuous contact meets colliders that sweep through where the hair was, not
    hair a solver or a magnet moves through a still one — that is the push's (and the solvers'
    own contacts'), as without it: the same bits."""
    def run():
        wig = _plate_wig()
        state, outs = None, []
        for f in range(4):
            pull = np.eye(4)
            pull[0, 3] = 0.05 * f
            out, state = wig.step(FrameInput(np.eye(4), np.eye(4), np.array([pull]), time=f / 24,
                                             collider_matrices=np.array([_at(0.1)])), state)
            outs.append(out.copy())
            assert wig.crossed == 0
        return outs

    with monkeypatch.context() as m:
        m.setattr(Magnet, "__init__", _wide(Magnet.__init__))
        outs = run()
        _without_last(m)
        blind = run()
    assert all(np.array_equal(a, b) for a, b in zip(outs, blind))


def _wide(init):
    """``Magnet.__init__`` with a radius that reaches the whole curtain."""
    def wide(self, *a, **kw):
        kw["radius"] = 3.0
        init(self, *a, **kw)
    return wide


def test_continuous_contact_gives_the_same_bits_on_one_and_two_threads():
    """Strands (dynamics) through the plate: each point is one iteration of the walk's strand,
    writing only its own strand."""
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            runs.append(_sweep(_plate_wig(StrandSettings())))
    finally:
        numba.set_num_threads(was)
    (a, crossed), (b, _) = runs
    assert sum(crossed) > 0
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_a_point_whose_leader_went_round_the_edge_slips_over_it_rather_than_cut_it():
    """A strand slipping off the top edge of a plate that dragged it (``scripts/thin_plate.py
    --to 0.4``): its leader has gone round the edge and fallen 2.5 cm behind the plate, 6 cm
    under its top, while its point is still held 2 cm before the front face — the segment goes
    straight through the plate, and no way from the leader reaches the front round the edge.
    Before, the point stayed held and the segment cut the plate (400 strands pierced it). Now it
    is swung after its leader (``_wrap``'s last resort, the nearest way that does not cut it):
    it keeps its length, cuts nothing, and has not passed the plate's middle towards the front
    (the walk's next push takes it to the back face); both say it was swung across, what asks
    for the chain to be pulled back (``_pull_back``). The kernel and the numpy walk alike, to
    the rounding of the arc's halvings (2^-24 of an arc of at most half a turn, float32
    coordinates ~1)."""
    from hair_wig.collision import kernel_colliders
    from hair_wig.kernels import walk as walk_kernels
    from hair_wig.walk import _AROUND

    wig = _plate_wig()
    wig.step(FrameInput(np.eye(4), np.eye(4), np.array([np.eye(4)]), time=0.0,
                        collider_matrices=np.array([_at(0.0)])), None)
    plate = wig.colliders[-1]
    j = 11                                              # strand 0's 12th point, its leader the 11th
    lead = np.array([-THICK / 2 - 0.025, 0.0, TOP - 0.061])
    way = np.array([0.066, 0.0, -0.008])
    q = np.zeros((3, POINTS, 1), np.float32)
    q[:, j - 1, 0], q[:, j, 0] = lead, lead + way * (SEGMENT / np.linalg.norm(way))   # 2 cm before the plate
    col = kernel_colliders([plate])[0][0]                 # the plate's tuple, as a thread reads it
    rows = q[:, :, 0].copy()                             # the kernel's own rows: q stays for the numpy walk
    assert walk_kernels._cuts(rows, j, j - 1, j, col)
    held = [float(v) for v in rows[:, j]]                  # the side it was held on: where it is
    assert walk_kernels._wrap(rows, j, j - 1, j, col, _AROUND, walk_kernels.WRAP_HALVINGS, *held) == 2
    assert wig.walk._wrap(plate, q, j, np.array([0]), np.array([j])).all()
    for out in (rows, np.ascontiguousarray(q[:, :, 0])):
        assert not walk_kernels._cuts(out, j, j - 1, j, col)
        np.testing.assert_allclose(np.linalg.norm(out[:, j] - lead), SEGMENT, rtol=0, atol=rounding(1.0, 8))
        assert out[0, j] <= 0.0                                   # with its leader, not before the plate
    np.testing.assert_allclose(q[:, j, 0], rows[:, j], rtol=0, atol=rounding(1.0, 16) + 2.0 ** -24 * np.pi * SEGMENT)


def _passed(was, out, x_was, x, edge=0.02):
    """Which points (S, n) of strands went through the plate between two frames: their way from
    ``was`` (plate at ``x_was``) to ``out`` (plate at ``x``), seen from the plate, crosses its
    middle ``edge`` or more in from its edges (``scripts/thin_plate.py``'s count)."""
    r0, r1 = was[..., 0] - x_was, out[..., 0] - x
    way = (r0 > 0) & (r1 < 0)
    t = np.where(way, r0 / np.where(way, r0 - r1, 1.0), 0.0)
    y, z = was[..., 1] + t * (out[..., 1] - was[..., 1]), was[..., 2] + t * (out[..., 2] - was[..., 2])
    return way & (z < TOP - edge) & (z > BOTTOM + edge) & (np.abs(y) < 1.0 - edge)


@pytest.mark.parametrize("speed", [0.004, 0.01])
def test_strands_substeps_hold_the_hair_before_a_slow_plate(speed):
    """Strands hanging in the plate's way, the plate moving 4 mm and 1 cm a frame — far less
    than it is thick — from 5 cm before them to 10 cm past where they hang. The layer's substeps
    meet the plate on its way through the frame (``Collider.maps_at``), read exactly where its
    grid, coarser than the plate is thick, cannot see it (``kernels.field.in_doubt``), and see
    every point while it moves: the hair is pushed along on its front face, and no point goes
    through the plate between two frames and no segment cuts it at any frame. Before, the
    substeps met the plate where the frame ends, by its grid alone, and every strand's points
    over its face went through it between two frames (``scripts/thin_plate.py --to 0.1``)."""
    wig = _plate_wig(StrandSettings())
    state, was = None, None
    for f, x in enumerate(np.arange(-0.05, 0.1 + speed / 2, speed)):
        out, state = wig.step(FrameInput(np.eye(4), np.eye(4), np.array([np.eye(4)]), time=f / 24,
                                         collider_matrices=np.array([_at(x)])), state)
        out = out.reshape(STRANDS, POINTS, 3).astype(np.float64)
        assert not _cut(out, x).any()
        if was is not None:
            assert not _passed(was[0], out, was[1], x).any()
        was = (out, x)
    assert (out[:, FACE, 0] > x).all()                      # held before the plate, dragged along


def _slow_sweep(wig, speed, start=-0.05, switch=None):
    """The plate from ``start`` (5 cm before the hair) to 10 cm past it at ``speed`` a frame:
    each frame's strands (S, n, 3) and where the plate was. ``switch`` (x, f): ``f()`` called
    before the first frame with the plate at ``x`` or past it."""
    state, frames = None, []
    for f, x in enumerate(np.arange(start, 0.1 + speed / 2, speed)):
        if switch is not None and x >= switch[0]:
            switch[1]()
            switch = None
        out, state = wig.step(FrameInput(np.eye(4), np.eye(4), np.array([np.eye(4)]), time=f / 24,
                                         collider_matrices=np.array([_at(x)])), state)
        frames.append((out.reshape(-1, POINTS, 3).astype(np.float64), x))
    return frames


@pytest.mark.parametrize("numpy_walk", [False, True])
def test_a_slow_plate_drags_the_hair_over_its_edge_and_none_through_it(monkeypatch, numpy_walk):
    """Springs hair (the default layer, which does not feel the plate itself) a slow plate drags
    — 1 cm a frame, half as far as it is thick: the springs pull every point back
    towards hanging behind the plate, so a point that clears the plate's top edge falls back
    towards hanging at once. Placed root to tip, a point
    still held on the front face could not reach back round the edge from such a leader, and
    went through the plate between two frames (``scripts/thin_plate.py --to 0.1``: every
    strand). Now the chain is pulled back to where the point is held (``_pull_back``): the
    strand slides over the edge point by point. No point goes through the plate between two
    frames, no segment cuts it at any frame, and every segment keeps its length, to float32
    rounding of coordinates ~1 (the 8 roundings of the step that set it last — a walk's, or a
    pull back's reaching: each segment is set by its own step, so they do not add up along the
    strand) — by the kernel and by the numpy walk."""
    if numpy_walk:
        monkeypatch.setattr(CollisionWalk, "_walk_kernel",
                            lambda self, p, base, span, first, *last: self._walk(p, base, span, first, *last))
    frames = _slow_sweep(_plate_wig(SpringSettings()), 0.01)
    for (was, x_was), (out, x) in zip(frames, frames[1:]):
        assert not _cut(out, x).any()
        assert not _passed(was, out, x_was, x).any()
        seg = np.linalg.norm(np.diff(out, axis=1), axis=2)
        np.testing.assert_allclose(seg, SEGMENT, rtol=0, atol=rounding(1.3, 8))
    out, x = frames[-1]
    assert (out[:, -1, 0] > x).all()                  # the tips still on the front face, dragged along


def test_without_the_pull_back_a_slow_plate_drags_the_hair_through_itself(monkeypatch):
    """The same drag with the chain never pulled back (the numpy walk, whose ``_pull_back``
    declines): points go through the plate between two frames — what the pull back is for."""
    monkeypatch.setattr(CollisionWalk, "_walk_kernel",
                        lambda self, p, base, span, first, *last: self._walk(p, base, span, first, *last))
    monkeypatch.setattr(CollisionWalk, "_pull_back", lambda self, *a: False)
    frames = _slow_sweep(_plate_wig(SpringSettings()), 0.01)
    assert any(_passed(was, out, x_was, x).any() for (was, x_was), (out, x) in zip(frames, frames[1:]))


def _numpy_walk(monkeypatch):
    monkeypatch.setattr(CollisionWalk, "_walk_kernel",
                        lambda self, p, base, span, first, *last: self._walk(p, base, span, first, *last))


@pytest.mark.parametrize("numpy_walk", [False, True])
def test_rods_hair_a_slow_plate_drags_comes_round_its_edge_and_none_through_it(monkeypatch, numpy_walk):
    """Rods hair dragged by the plate at 4 mm a frame, a fifth of its thickness, from 40 cm
    before it (``scripts/thin_plate.py``'s way, so the rods have swung into their drape). Where the
    plate slows to its stop the rods swing each strand back towards hanging behind it: a point
    that clears the top edge drops behind the plate at once, and the point after it, held on
    the front face, is out of its reach — the chain must be pulled back. The pulled-back chain
    takes the point before it round the top edge, from just over the edge to just below it on
    the front face: its straight way there clips the plate's corner by a millimetre (meets the
    top face, leaves by the front one), and that was taken for going through the plate — the
    pull back was declined and the held point, left inside, was pushed out of the back face
    (``scripts/thin_plate.py --to 0.1``: 397 of 400 strands through at that speed). A way that
    clips an edge — two faces less than 120° apart, within the pull back's reach — went round
    it (``kernels.walk.THROUGH_TURN``). No point goes through the plate between two frames and
    no segment cuts it at any frame, by the kernel and by the numpy walk."""
    # the numpy walk (slow: a few strands) from where the plate slows to its stop, the kernel before
    switch = (0.06, lambda: _numpy_walk(monkeypatch)) if numpy_walk else None
    frames = _slow_sweep(_plate_wig(RodSettings(), strands=3 if numpy_walk else STRANDS), 0.004, start=-0.4,
                         switch=switch)
    for (was, x_was), (out, x) in zip(frames, frames[1:]):
        assert not _cut(out, x).any()
        assert not _passed(was, out, x_was, x).any()


def test_rods_chains_whose_corner_clips_count_as_crossings_go_through_the_plate(monkeypatch):
    """The same drag with every crossing counted against a pull back, corner clips too (the
    numpy walk, from where the plate slows): strands go through the plate between two frames —
    what the rule is for."""
    meets = CollisionWalk._meets

    def counting_corners():
        _numpy_walk(monkeypatch)
        monkeypatch.setattr(CollisionWalk, "_meets", lambda self, c, a, b, index, strict=False, corner=None:
                            meets(self, c, a, b, index, strict))
    frames = _slow_sweep(_plate_wig(RodSettings(), strands=3), 0.004, start=-0.4, switch=(0.06, counting_corners))
    assert any(_passed(was, out, x_was, x).any() for (was, x_was), (out, x) in zip(frames, frames[1:]))


def test_a_pull_back_gives_the_same_bits_on_one_and_two_threads():
    """The slow drag, whose strands are pulled back: each strand is written only by its own
    iteration of the walk."""
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            runs.append(_slow_sweep(_plate_wig(SpringSettings()), 0.004))
    finally:
        numba.set_num_threads(was)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(*runs))


@pytest.mark.parametrize("mapped", [False, True])
def test_a_way_cleared_without_stepping_along_it_keeps_clear_of_the_surface_all_along(mapped):
    """``kernels.walk._way_clear`` — the cheap test that clears a point's path or a segment
    before continuous contact steps along it — against its plain reference: every way it clears
    keeps farther than the collider's tolerance from the mesh at each of 400 points along it
    (exact distances, every triangle searched), among ways drawn through the surface, near it and
    beyond its box; and the ways it is for — hair lying along the surface at its offset, the
    chord's sag inside the offset — are cleared, as are ways above the box. ``mapped``: the
    collider reached through a field map (a body the head turns above)."""
    from hair_wig.collision import Collider
    from hair_wig.kernels import walk as walk_kernels

    v, t = sphere(0.5, rings=16, segments=32)
    c = Collider(ColliderMesh("Ball", v, t), np.eye(4), offset=0.02)
    to_field = np.eye(4)
    if mapped:
        a = 0.4
        to_field[:3, :3] = [[np.cos(a), -np.sin(a), 0.0], [np.sin(a), np.cos(a), 0.0], [0.0, 0.0, 1.0]]
        to_field[:3, 3] = (0.1, -0.2, 0.05)
        c.set_frame(to_field)
    col = c.kernel_view()
    tol = col[14]
    back = np.linalg.inv(to_field)
    rng = np.random.default_rng(5)

    def head_local(x):
        return x @ back[:3, :3].T + back[:3, 3]

    # through and near the surface, any way
    u = rng.normal(size=(600, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    a = u * rng.uniform(0.4, 0.7, (600, 1))
    b = a + rng.normal(size=(600, 3)) * 0.05
    # lying along it at the offset: short chords of the sphere grown by the offset, whose sag
    # (L² / 8 r, under 1 mm) and the facets' (under 3 mm below the sphere) keep them 15 mm out
    w = np.cross(u[:200], rng.normal(size=(200, 3)))
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    lying_a = u[:200] * 0.52
    lying_b = lying_a + w * 0.03
    lying_b = lying_b / np.linalg.norm(lying_b, axis=1, keepdims=True) * 0.52
    # above the box
    above_a = rng.uniform(-0.4, 0.4, (100, 3)) + (0.0, 0.0, 1.2)
    above_b = above_a + rng.normal(size=(100, 3)) * 0.05
    ways = [np.concatenate(x) for x in ((a, lying_a, above_a), (b, lying_b, above_b))]
    kind = np.repeat([0, 1, 2], (600, 200, 100))
    cleared = np.array([walk_kernels._way_clear(*head_local(ways[0][k]), *head_local(ways[1][k]), col)
                        for k in range(len(kind))])
    s = np.linspace(0.0, 1.0, 400)[:, None]
    for k in np.flatnonzero(cleared):
        along = ways[0][k] + s * (ways[1][k] - ways[0][k])
        sd = c.field.exact(along, every=True)[0]
        assert np.abs(sd).min() > tol, (k, kind[k], np.abs(sd).min())
    assert cleared[kind == 1].all() and cleared[kind == 2].all()
    crossing = [k for k in range(600)
                if np.ptp(np.sign(c.field.exact(ways[0][k] + s * (ways[1][k] - ways[0][k]), every=True)[0])) > 0]
    assert crossing and not cleared[crossing].any()
