"""The Wisps' contacts with the head and body as kernels (``kernels.wisp_body``: ``wisp_slide``,
``wisp_penetrate``) against their numpy form (``WispLayer._slide``, ``_penetration`` without the
kernels' parts): wisps a magnet drags down through a turning sphere head, and a ball beside it
that keeps still relative to the head, frame after frame — the same bits and the same contacts
counted; a ball that moves relative to the head (its field reached through the frame's map, which
numpy multiplies as matrices) within that map's rounding; and the same bits on one and two
threads. No Blender.
"""

import numba
import numpy as np
import pytest

from hair_wig import FrameInput, Magnet, Wig, WigSettings
from hair_wig.collision import ColliderMesh
from hair_wig.collision.contacts import contact_maps
from hair_wig.kernels import wisp_body
from hair_wig.wisps import WispLayer, WispSettings
from test_collision import sphere
from test_strands import G, _turn, _wig_hair
from tolerance import AFFINE, NORM, rounding


def _turned(f):
    return _turn(1.2 * min(f, 6) / 6)


def _ball_at(f, moving):
    """A body under the head (a ball of radius 1.2 whose top the wisps hang onto), riding the
    head as it turns, or with ``moving`` also sliding 3 cm a frame across it."""
    m = np.eye(4)
    m[:3, 3] = (0.03 * f if moving else 0.0, 0.0, -0.35)
    return _turned(f) @ m


def _wig(moving=False):
    """Wisps on a sphere head (radius 0.98) that turns, a magnet dragging them down over it and
    onto the body under it (``_ball_at``)."""
    hair = _wig_hair(sizes=(10, 6))
    v, t = sphere(1.2, 24, 48)
    s = WispSettings(wisps=12, goal_stiffness=5.0, substeps=4)
    wig = Wig(hair, np.eye(4), np.eye(4), [Magnet("Drag", np.eye(4), radius=3.0)],
              WigSettings(dynamics=s, use_collision=True), head_mesh=sphere(0.98, 24, 48),
              colliders=[ColliderMesh("Ball", v, t, _ball_at(0, moving))])
    return wig


def _frames(moving, count=14):
    for f in range(count):
        m = np.eye(4)
        m[2, 3] = -1.1 * min(f, 8) / 8
        yield FrameInput(np.eye(4), _turned(f), np.array([m]), time=f / 24, gravity=G,
                         collider_matrices=np.array([_ball_at(f, moving)]))


def _met(layer, inp, state):
    """The skeleton points within Contact Distance of each collider's surface (C,)."""
    x = state.layer["x"]
    inv = np.linalg.inv(inp.head_matrix)
    q = inv[:3, :3] @ x.reshape(-1, 3).T + inv[:3, 3:4]
    margin = layer.settings.contact_distance / layer.scale
    return np.array([int((c.fast_distance(q) < lim[:q.shape[1]] + margin).sum())
                     for c, lim in zip(layer.colliders, layer._limits)])


def _run(numpy, moving=False, count=14):
    """Each frame's wisps (x, v, r, rd) and the contacts the layer counted; and how many skeleton
    points each collider held at the frames' ends, all frames."""
    wig = _wig(moving)
    layer = wig.layer
    assert isinstance(layer, WispLayer) and len(layer.colliders) == 2
    if numpy:
        layer._body_parts = lambda: None
    state, out, met = None, [], 0
    for f, inp in enumerate(_frames(moving, count)):
        _, state = wig.step(inp, state)
        assert (layer.colliders[1].to_field is None) != (moving and f > 0)     # riding the head, or sliding on it
        out.append(([state.layer[k].copy() for k in ("x", "v", "r", "rd")], layer.touched))
        if f > 0:                                   # the first frame is the groom (no step)
            met = met + _met(layer, inp, state)
    return out, met


def test_the_kernels_meet_the_head_and_a_ball_as_the_numpy_contacts_do():
    """The kernels do the numpy form's operations in its order and types (the head's maps by
    products and sums, the colliders' fast distances, ``response.met``, ``wisps.carry``): the same
    bits, frame after frame, and the same contacts counted — of which there are many, skeleton
    and envelope."""
    (kernel, met), (reference, _) = _run(False), _run(True)
    assert sum(t for _, t in reference) > 500
    assert met.min() > 20                               # the head and the body each hold wisps
    for (a, ta), (b, tb) in zip(kernel, reference):
        assert ta == tb
        for x, y in zip(a, b):
            assert np.array_equal(x, y)


def test_a_ball_moving_relative_to_the_head_is_met_through_its_map_within_its_rounding():
    """Through a moving collider's map numpy multiplies matrices (BLAS, which may fuse a product
    and a sum) where the kernel multiplies and adds (``kernels.contacts._in_field``): the
    field-space point differs by a float64 rounding, which reaches the float32 field's value
    where a coordinate lies that near a float32 rounding's edge. One penetration reaction, from
    the same state, then puts a point off by the field's rounding at the point — the map's
    (AFFINE) and the gradient's turn and norm (NORM) in float32 of coordinates up to the points'
    — or, where a rounding decides whether it counts as inside, by as much as its depth then
    (the collider's tolerance); carried down the wisp by every point before it (N), over its
    passes (PASSES), for two colliders."""
    from hair_wig.wisps import PASSES

    wig = _wig(True)
    layer = wig.layer
    state = None
    frames = list(_frames(True, 8))
    for inp in frames[:-1]:
        _, state = wig.step(inp, state)
    x = state.layer["x"]
    heads = (_turned(7), _turned(7))                # the head's local -> world, still since frame 6
    anchor = np.tile(np.array([0.0, 0.0, -1.0]), (x.shape[0], 1))
    e1 = np.tile(np.array([1.0, 0.0, 0.0]), (x.shape[0], 1))
    runs = []
    for parts in (layer._body_parts(), None):
        s = {k: state.layer[k].copy() for k in ("x", "v", "r", "rd")}
        s["x"][:, 1:, 2] -= 0.05                     # pressed in
        if parts is not None:                        # the moving body is met
            q = np.linalg.inv(heads[1])[:3, :3] @ s["x"].reshape(-1, 3).T
            assert (layer.colliders[1].fast_distance(q) < layer._limits[1][:q.shape[1]]).sum() > 10
        layer._penetration(s["x"], s["v"], s["r"], s["rd"], anchor, e1, 1.0, heads, parts)
        runs.append(s)
    a, b = runs
    size = float(np.abs(b["x"]).max())
    tol = 2 * PASSES * x.shape[1] * (rounding(size, AFFINE + NORM) + max(c.tolerance for c in layer.colliders))
    assert not np.array_equal(state.layer["x"], b["x"])
    assert np.abs(a["x"] - b["x"]).max() <= tol
    assert np.abs(a["r"] - b["r"]).max() <= tol


def test_the_wisps_body_kernels_give_the_same_bits_on_one_and_two_threads():
    """Every wisp is met by one chunk of the kernels, which writes only its own wisps' rows and
    its own count."""
    was = numba.get_num_threads()
    runs = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            runs.append(_run(False, moving=True)[0])
    finally:
        numba.set_num_threads(was)
    layer = _wig().layer
    assert layer.set.num_wisps > wisp_body.CHUNK           # more than one chunk
    for (a, ta), (b, tb) in zip(*runs):
        assert ta == tb
        for x, y in zip(a, b):
            assert np.array_equal(x, y)



def _still(colliders):
    """The maps (C, 2, 4, 4) and kinds (C,) of colliders, as ``WispLayer._maps_at`` passes them."""
    return contact_maps(colliders, 1.0, carry=False)


def _cap_run(segments: bool):
    """One wisp of three points round a ball (radius 0.3, 5 mm kept): its root held, its points
    1 cm out, its second segment a chord that cuts the ball's cap between them; one penetration
    reaction, with its segments met or not (their limits −inf). The wisp after it, and the ball."""
    from hair_wig.collision import Collider, kernel_colliders

    c = Collider(ColliderMesh("Ball", *sphere(0.3, 24, 48)), np.eye(4), 0.005)
    th = np.radians([-50.0, -10.0, 30.0])
    x = np.ascontiguousarray(np.stack([0.31 * np.sin(th), np.zeros(3), 0.31 * np.cos(th)], axis=1)[None])
    n = x.shape[1]
    r, rd, v = np.full((1, n, 4), 1e-3), np.zeros((1, n, 4)), np.zeros_like(x)
    lims = np.full((1, 5 * n), 0.005)
    lims_s = np.full((1, n - 1), 0.005 if segments else -np.inf)
    anchor, e1 = np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]])
    frames, tangent, push = np.zeros((1, n, 2, 3)), np.zeros_like(x), np.zeros_like(x)
    wisp_body.wisp_penetrate(x, v, r, rd, np.array([[0.0, 1.0, 1.0]]), anchor, e1, 0.05 * r, kernel_colliders([c]),
                             *_still([c]), lims, lims_s, np.eye(4), np.eye(4), 1.0, 4, frames, tangent, push,
                             np.zeros(1, np.int64))
    return x, c


def test_a_wisp_segment_that_cuts_a_ball_between_its_points_is_pushed_off_it():
    """Both ends of each chord lie 5 mm past the 5 mm the ball keeps, their middles 8 mm inside
    the ball: the points alone meet nothing (the chords stay in); each segment's deepest sample
    pushes its far end out (the near end held: the sample moves by ``t`` of its end's move, so a
    quarter point takes a quarter of its depth a pass, and the next pass goes on) — the chords
    then clear the ball itself everywhere along them (exact distances), and what is left of
    their depth under the surface kept, by the distance the kernels read, is at most (3/4) to the
    passes' power of what it was — every length kept."""
    from hair_wig.wisps import PASSES

    start, c = _cap_run(False)
    x, _ = _cap_run(True)
    t = np.linspace(0, 1, 41)[:, None]
    for j in (0, 1):
        seg0, seg = start[0, j + 1] - start[0, j], x[0, j + 1] - x[0, j]
        assert abs(np.linalg.norm(seg) - np.linalg.norm(seg0)) <= rounding(0.31, 32, 2.2e-16)
        assert c.field.signed_distance(start[0, j] + t * seg0).min() < -0.005      # in, by the points alone
        assert c.field.signed_distance(x[0, j] + t * seg).min() > 0.0                # out
        was = 0.005 - c.fast_distance(np.stack([start[0, j] + u * seg0 for u in wisp_body.SAMPLES]).T).min()
        left = 0.005 - c.fast_distance(np.stack([x[0, j] + u * seg for u in wisp_body.SAMPLES]).T).min()
        assert left <= 0.75 ** PASSES * was


def test_a_wisp_segment_through_a_slab_thinner_than_it_is_left_to_its_points():
    """A segment that passes through a part thinner than itself (a 10 cm slab met square, its ends
    10 cm out on either side) is not pushed: its end would have to swing round the part's edge,
    which swung whole wisps about (pops of 0.6 m on Suzanne's fast turn); its points, outside,
    meet nothing — the wisp stays as it was, bit for bit, no contact counted."""
    from hair_wig.collision import Collider, kernel_colliders

    v = np.array([[sx * 0.5, sy * 0.5, sz * 0.05] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    slab = Collider(ColliderMesh("Slab", v, np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])),
                    np.eye(4), 0.005)
    assert slab.fast_distance(np.zeros((3, 1)))[0] < -0.04            # the grid sees its inside
    x = np.array([[[0.0, 0.0, 0.45], [0.0, 0.0, 0.15], [0.0, 0.0, -0.15]]])
    before = x.copy()
    r, rd, v = np.full((1, 3, 4), 1e-3), np.zeros((1, 3, 4)), np.zeros_like(x)
    touched = np.zeros(1, np.int64)
    wisp_body.wisp_penetrate(x, v, r, rd, np.array([[0.0, 1.0, 1.0]]), np.array([[0.0, 0.0, -1.0]]),
                             np.array([[1.0, 0.0, 0.0]]), 0.05 * r, kernel_colliders([slab]), *_still([slab]),
                             np.full((1, 15), 0.005),
                             np.full((1, 2), 0.005), np.eye(4), np.eye(4), 1.0, 4, np.zeros((1, 3, 2, 3)),
                             np.zeros_like(x), np.zeros_like(x), touched)
    assert np.array_equal(x, before) and touched[0] == 0
