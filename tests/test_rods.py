"""The Rods core (seed 003's angular dynamics; numpy only, no bpy): a chain of rigid segments
whose bend angles follow the central-difference update, with eq. 6's style-preserving rest
angles."""

import numpy as np
import pytest

from hair_wig.errors import HairWigError
from hair_wig.rods import AngularRods, RodSettings, angles_of, build, root_normal
from tolerance import AFFINE, EPS64, FOLLOW, SEGMENT, magnitude, rounding

# The Rods core is float64: its checks at 1e-9 of "round-off" (what 100 frames of it leave is
# 1e-16 here) sit far above float64's rounding and far below a sag (centimetres); they stay.


def _strands(num=5, n=9, seed=0):
    rng = np.random.default_rng(seed)
    roots = rng.normal(size=(num, 3))
    d = rng.normal(size=(num, n - 1, 3)) * 0.3 + np.array([1.0, 0.0, 0.5])
    d /= np.linalg.norm(d, axis=2, keepdims=True)
    return np.concatenate([roots[:, None], roots[:, None] + 0.05 * np.cumsum(d, axis=1)], axis=1)


def test_angles_and_forward_kinematics_are_inverse_and_lengths_exact():
    p = _strands()
    root_dir = p[:, 1] - p[:, 0]
    e1 = root_normal(root_dir)
    a = angles_of(p, root_dir, e1)
    back, _, _ = build(p[:, 0], root_dir, e1, a, np.full(len(p), 0.05))
    # float64: per joint the angle (arctan2 of dot products) and the frame it turns (sines and
    # cosines — their last bits depend on the CPU's SIMD path — and rotations): ~20 roundings,
    # carried root to tip over the chain's 8 joints, of coordinates up to |x|
    joints = p.shape[1] - 1
    np.testing.assert_allclose(back, p, atol=rounding(magnitude(p), 20 * joints, eps=EPS64))
    bent = a + 0.3
    q, _, _ = build(p[:, 0], root_dir, e1, bent, np.full(len(p), 0.05))
    # a segment is L times a unit direction (its rotations and norm: ~12 roundings of 1) added
    # to a point (1 rounding of |x| at each end, relative to L)
    kept = rounding(magnitude(q) / 0.05, 2, eps=EPS64) + rounding(1.0, 12, eps=EPS64)
    np.testing.assert_allclose(np.linalg.norm(np.diff(q, axis=1), axis=2), 0.05, rtol=kept)


def test_small_oscillation_period_is_two_pi_over_root_beta_k():
    """One segment, no load, tipped by 1e-3 rad from its rest: it swings with period
    2π/√(βk) (seed 003) — within 1 % (measured from the zero crossings over 20 periods); no
    damping of either kind (the wobble damping is ours, not the seed's)."""
    beta, k = 50.0, 2.0
    rods = AngularRods(np.array([[[0.0, 0, 0], [0.0, 0, 0.1]]]), RodSettings(stiffness=k, beta=beta, damping=0.0,
                                                                                      wobble=0.0, courant=0.25))
    goal = np.array([[[0.0, 0, 0], [0.0, 0, 0.1]]])
    state = rods.initial_state(goal)
    state["angles"] = state["angles"] + np.array([1e-3, 0.0])
    state["last"] = state["angles"].copy()
    dt = 1 / 60
    trace = []
    for _ in range(int(20 * 2 * np.pi / np.sqrt(beta * k) / dt) + 10):
        rods.step(state, goal, dt, np.zeros(3))
        trace.append(state["angles"][0, 0, 0])
    x = np.array(trace)
    t = (np.arange(len(x)) + 1) * dt
    cross = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))
    tc = t[cross] + dt * x[cross] / (x[cross] - x[cross + 1])               # linear between samples
    period = np.diff(tc).mean()
    assert period == pytest.approx(2 * np.pi / np.sqrt(beta * k), rel=0.01)
    assert np.abs(x).max() == pytest.approx(1e-3, rel=0.01)                  # no damping: no loss


def test_the_style_is_the_equilibrium_under_gravity_for_100_frames():
    """Eq. 6: bound on a styled goal under gravity, the angles stay at their start to
    round-off for 100 frames (the hair does not sag); without eq. 6 (rest angles = the goal's)
    the same rods sag."""
    goal = _strands(20, 13, seed=3)
    rods = AngularRods(goal, RodSettings(stiffness=5.0, beta=100.0))
    state = rods.initial_state(goal)
    start = state["angles"].copy()
    for _ in range(100):
        pts = rods.step(state, goal, 1 / 24, np.array([0.0, 0.0, -9.81]))
    assert np.abs(state["angles"] - start).max() < 1e-9
    assert np.abs(pts - goal).max() < 1e-9
    sag = rods.initial_state(goal)
    rods.rest_angles = lambda g, r, e, load, k=None: sag["angles"].copy()      # no eq. 6
    for _ in range(24):
        pts = rods.step(sag, goal, 1 / 24, np.array([0.0, 0.0, -9.81]))
    assert np.abs(pts - goal).max() > 0.01


def test_displaced_it_comes_back_to_the_style_and_stays_stable_at_the_settings_maximum():
    goal = _strands(10, 9, seed=4)
    for settings, frames in ((RodSettings(), 96), (RodSettings(stiffness=1e5, beta=1e6, damping=1e4, wobble=1.0, max_substeps=16), 24)):
        rods = AngularRods(goal, settings)
        state = rods.initial_state(goal)
        state["angles"] = state["angles"] + 0.1
        state["last"] = state["angles"].copy()
        for _ in range(frames):
            pts = rods.step(state, goal, 1 / 24, np.array([0.0, 0.0, -9.81]))
            assert np.isfinite(pts).all()
            np.testing.assert_allclose(np.linalg.norm(np.diff(pts, axis=1), axis=2), 0.05, rtol=1e-9)
        if not rods.clamped:
            assert np.abs(pts - goal).max() < 1e-3               # back to the style
    # the second, every panel setting at its maximum (Steps Limit aside): √(βk) far past 16
    # substeps a frame, the stiffness is clamped, and it stays stable
    assert rods.clamped and np.abs(state["angles"]).max() < 10


def test_resume_is_bit_identical_and_bad_settings_name_themselves():
    goal = _strands(6, 7, seed=5)
    rods = AngularRods(goal, RodSettings())
    state = rods.initial_state(goal)
    state["angles"] += 0.2
    load = np.array([0.3, 0.0, -9.81])
    for _ in range(5):
        rods.step(state, goal, 1 / 24, load)
    saved = {k: v.copy() for k, v in state.items()}
    a = [rods.step(state, goal, 1 / 24, load) for _ in range(5)]
    b = [rods.step(saved, goal, 1 / 24, load) for _ in range(5)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    with pytest.raises(HairWigError, match="courant must stay below 2"):
        RodSettings(courant=2.5)
    with pytest.raises(HairWigError, match="stiffness must be > 0"):
        RodSettings(stiffness=0.0)


# --- the Rods layer in a wig (SPEC §8) ---------------------------------------------------------

from hair_wig import FrameInput, HairSet, Magnet, Wig, WigSettings  # noqa: E402
from test_strands import G, _dragged_through_the_head, _inputs, _turn, _wig_hair  # noqa: E402
from test_wig_core import sphere_mesh  # noqa: E402


def _rod_wig(settings=None, hair=None, **kw):
    hair = _wig_hair() if hair is None else hair
    base = dict(use_collision=False, dynamics=settings or RodSettings())
    base.update(kw)
    return hair, Wig(hair, np.eye(4), np.eye(4), [Magnet("M", np.eye(4), radius=0.01)], WigSettings(**base))


def _segments(points, hair):
    p = points.astype(np.float64)
    return np.linalg.norm(np.diff(p, axis=0), axis=1)[hair.vertex_t()[1:] > 0]


def test_a_wig_with_rods_holds_its_groom_at_rest_and_lags_when_the_head_turns():
    """Still head: 100 frames on the groom (eq. 6 under the wig's gravity). Turning head: the
    roots stay on it, the tips lag behind the rigid turn, every segment keeps its length."""
    hair, wig = _rod_wig()
    state = None
    # Each frame the float32 goal goes to the float64 layer and back (1 rounding), the length
    # walk re-places the points root to tip (up to 10), and the map to the object (7); the
    # layer's float64 state keeps no float32 rounding from frame to frame. Of |x| <= the groom's.
    held = rounding(magnitude(hair.points), 1 + FOLLOW * hair.counts.max() + AFFINE)
    for inp in _inputs(100, 10**9):
        out, state = wig.step(inp, state)
        np.testing.assert_allclose(out, hair.points, atol=held)
    assert wig.has_dynamics and set(state.layer) >= {"10:angles", "6:angles", "head", "hold"}
    # the head turns faster and faster (0.8 rad in half a second): the tips bend back against
    # the turn, the roots stay on it, every segment keeps its length
    hair, wig = _rod_wig()
    state, t = None, hair.vertex_t()
    turn = [FrameInput(np.eye(4), _turn(0.8 * (min(f, 12) / 12) ** 2), np.array([np.eye(4)]), time=f / 24,
                       gravity=G) for f in range(120)]
    for inp in turn[:13]:
        out, state = wig.step(inp, state)
    rigid = hair.points.astype(np.float64) @ _turn(0.8)[:3, :3].T
    ahead = np.cross([0.0, 0.0, 1.0], rigid)                  # the way the turn goes, at each point
    lag = np.einsum("pk,pk->p", out - rigid, ahead) / np.linalg.norm(ahead, axis=1)
    # roots: the turn to the object (7) and the float32 store (1), of |x|
    assert lag[t == 1].mean() < -0.005, lag[t == 1].mean()
    assert np.abs(out - rigid)[t == 0].max() <= rounding(magnitude(rigid), AFFINE + 1)
    # lengths: the layer's float64 chain stored as float32 (1 each end), the walk's step (8),
    # the turn to the object (7 each end), relative to the shortest segment
    seg0 = _segments(hair.points, hair)
    kept = rounding(magnitude(rigid) / seg0.min(), 2 + SEGMENT + 2 * AFFINE)
    np.testing.assert_allclose(_segments(out, hair), seg0, rtol=kept)
    for inp in turn[13:]:                     # the head stops: back onto the turned groom
        out, state = wig.step(inp, state)
    assert np.abs(out - rigid).max() < 2e-3


def test_a_rod_in_a_uniformly_accelerating_head_leans_to_its_analytic_equilibrium():
    """One segment hanging under gravity from a head accelerating at ``a`` along x: in the
    head's frame it feels ``−a``, and settles where the joint's spring holds the loads'
    moment, ``k α = (L² / 2)(a cos α − g sin α)`` (k = the stiffness for one segment), and
    again when the stiffness is keyed to twice it."""
    length, a = 0.3, 3.0
    hair = HairSet(np.array([[0, 0, 0], [0, 0, -length]], np.float32), [2], name="Hair")
    hair, wig = _rod_wig(RodSettings(stiffness=2.0, damping=6.0), hair=hair, use_length=False)
    state = None
    for f in range(480):
        head = np.eye(4)
        head[0, 3] = 0.5 * a * (f / 24) ** 2
        # the stiffness keyed from 2 to 4 half way: the rod stands up to its new equilibrium
        k = 2.0 if f < 240 else 4.0
        inp = FrameInput(np.eye(4), head, np.array([np.eye(4)]), time=f / 24, gravity=G, keyed={"stiffness": k})
        out, state = wig.step(inp, state)
        if f in (239, 479):
            lo, hi = 0.0, np.pi / 2                            # bisect k α − (L²/2)(a cos α − g sin α)
            for _ in range(60):
                mid = 0.5 * (lo + hi)
                if k * mid - 0.5 * length ** 2 * (a * np.cos(mid) - 9.81 * np.sin(mid)) > 0:
                    hi = mid
                else:
                    lo = mid
            tip = out[1].astype(np.float64) - out[0]
            angle = np.arctan2(-tip[0], -tip[2])               # leaning back, against the motion
            assert abs(angle - lo) < 0.01 * lo, (f, angle, lo)
            # float32 points 600 m out: the layer's float64 points stored and shifted by the
            # head's pure translation, one rounding per coordinate at each end (of up to |x|),
            # √3 of them in a length: 2√3 < 4 roundings of |x|. A stretched rod is off by cm.
            assert abs(np.linalg.norm(tip) - length) < rounding(magnitude(out), 4)


def test_a_turning_head_carries_a_styled_rod_without_twisting_it():
    """Weightless, the head spins faster and faster about the root segment's own axis (17 rad
    in 30 frames): the bent strand turns with it — the root frame's normal turns with the head,
    not only with the root segment. A stiff rod bends under the spin's centripetal and
    tangential loads by microns (2.7e-4 at stiffness 10, 1/k of it here); a root frame that
    did not turn would leave the bend behind by the whole turn."""
    pts = np.array([[0, 0, 0], [0, 0, 0.1], [0.1, 0, 0.1], [0.1, 0.1, 0.1]], np.float32)
    hair = HairSet(pts, [4], name="Hair")
    hair, wig = _rod_wig(RodSettings(stiffness=1000.0), hair=hair, use_length=False)
    state = None
    for f in range(30):
        inp = FrameInput(np.eye(4), _turn(0.02 * f * f), np.array([np.eye(4)]), time=f / 24, gravity=np.zeros(3))
        out, state = wig.step(inp, state)
        np.testing.assert_allclose(out, pts @ _turn(0.02 * f * f)[:3, :3].T, atol=5e-5)


def test_rods_dynablend_resume_and_one_layer_at_a_time():
    inputs = _inputs(20, 12)
    _, still = _rod_wig(RodSettings(dynablend=0.0))
    _, free = _rod_wig()
    s0 = s1 = None
    for f, inp in enumerate(inputs):
        goal, s0 = still.step(inp, s0)
        out, s1 = free.step(inp, s1)
        rigid = still.hair.points.astype(np.float64) @ inp.head_matrix[:3, :3].T
        # dynablend 0: the goal exactly — the length walk (root to tip) and the turn to the
        # object (7), roundings of |x|
        shown = rounding(magnitude(rigid), FOLLOW * still.hair.counts.max() + AFFINE)
        np.testing.assert_allclose(goal, rigid, atol=shown)
        if f == 9:
            saved = s1.copy()
    _, again = _rod_wig()
    state = saved
    for inp in inputs[10:]:
        last, state = again.step(inp, state)
    assert np.array_equal(last, out) and state == s1
    with pytest.raises(HairWigError, match="'Hair': no dynamics layer takes settings of type dict"):
        _rod_wig({"stiffness": 3.0})
    with pytest.raises(HairWigError, match="'Hair': Rods: strand 1 has a segment of no length"):
        _rod_wig(hair=HairSet(np.array([[0, 0, 0], [0, 0, 1], [1, 0, 0], [1, 0, 0]], np.float32), [2, 2], name="Hair"))
    with pytest.raises(HairWigError, match="Rods: dynablend must be in 0..1"):
        RodSettings(dynablend=1.5)


def test_rods_meet_the_head_in_their_substeps_and_feel_refinement():
    """A magnet drags the hair down through a sphere head: what shows stays outside, and so do
    the rods' own angles — met inside their substeps (``SurfaceContacts``, as the Strands layer
    meets the head), and refinement's push absorbed as a contact besides. With neither, the
    rods' state sinks in (measured: 0.004 against 0.30); refinement's absorb alone keeps it out
    too, a frame late."""
    hair, magnet, inputs = _dragged_through_the_head()
    depth = {}
    for contacts, feel in ((True, True), (False, True), (False, False)):
        wig = Wig(hair, np.eye(4), np.eye(4), [magnet], WigSettings(dynamics=RodSettings(), use_collision=True),
                  head_mesh=sphere_mesh(0.98))
        if not contacts:
            wig.layer.bind_colliders([])
        if not feel:
            wig._layer_feels_refinement = lambda *a: None
        state, worst_out, worst_state, pushed = None, 0.0, 0.0, 0
        for inp in inputs:
            out, state = wig.step(inp, state)
            worst_out = max(worst_out, 0.98 - np.linalg.norm(out, axis=1).min())
            rods = wig.layer.groups[0][2]
            built = build(state.layer["10:root"], state.layer["10:root_dir"], state.layer["10:e1"],
                          state.layer["10:angles"], rods.seg)[0]
            worst_state = max(worst_state, 0.98 - np.linalg.norm(built, axis=2).min())
            pushed += wig.layer.contacts[0].touched if contacts else 0
        depth[contacts, feel] = worst_out, worst_state, pushed
    assert all(d[0] <= 0.01 for d in depth.values()), depth
    assert depth[True, True][1] <= 0.01 and depth[True, True][2] > 0, depth        # the layer's own contacts
    assert depth[False, True][1] <= 0.01, depth
    assert depth[False, False][1] > 0.1, depth


def test_a_contact_stops_a_rod_turning_and_friction_holds_it():
    """``AngularRods.meet`` on one strand pressed into a plane z = 0 it swings down onto: the
    strand comes most of the way out, every segment keeps its length, the strand stops turning
    (inelastic: its last angles are its angles), and with friction the pushed points slide
    less along the plane from where they were a substep ago (friction times the push taken
    back); a strand not pushed keeps its state exactly."""
    n = 6
    rest = np.zeros((2, n, 3))
    rest[:, :, 0] = np.linspace(0.0, 0.5, n)
    rest[:, :, 2] = 0.2
    rest[1, :, 1] = 1.0                                        # the second strand, elsewhere
    rods = AngularRods(rest, RodSettings())
    root_dir = rest[:, 1] - rest[:, 0]
    e1 = root_normal(root_dir)
    last = angles_of(rest, root_dir, e1)
    # turning down at the root by 0.6 rad, a substep on (whichever axis and sign turns it down)
    turns = [np.array(t) for t in ((0.6, 0.0), (-0.6, 0.0), (0.0, 0.6), (0.0, -0.6))]
    low = [build(rest[:1, 0], root_dir[:1], e1[:1], last[:1] + np.r_[[t], np.zeros((n - 2, 2))][None], rods.seg[:1])[0][0, -1, 2]
           for t in turns]
    angles = last.copy()
    angles[:, 0, :] += turns[int(np.argmin(low))]
    moving = angles - last
    for friction in (0.0, 1.0):
        pts, ax1, ax2 = build(rest[:, 0], root_dir, e1, angles, rods.seg)
        before = pts.copy()
        push = np.zeros_like(pts)
        below = pts[0, :, 2] < 0
        assert below.any()
        push[0, below, 2] = -pts[0, below, 2]                  # onto the plane
        a, b = rods.meet(push, pts, ax1, ax2, angles, last, rest, root_dir, e1, friction)
        # out most of the way: follow-the-leader then sets each segment back to its length from
        # its leader, which may set a pushed point a little back down (the next contact goes on)
        assert pts[0, :, 2].min() > 0.25 * before[0, :, 2].min(), (pts[0, :, 2], before[0, :, 2])
        # float64: the angles' inverse kinematics and the build again (~20 roundings a joint,
        # carried over 5 joints) of coordinates up to 1
        tol = rounding(1.0, 20 * n, eps=EPS64)
        np.testing.assert_allclose(np.linalg.norm(np.diff(pts[0], axis=0), axis=1), rods.seg[0], rtol=tol)
        assert np.array_equal(a[0], b[0])                      # stopped
        assert np.array_equal(a[1], angles[1]) and np.array_equal(b[1], last[1]) and np.array_equal(pts[1], before[1])
        assert np.array_equal(angles - last, moving)           # the inputs are left as they were
        # how far the pushed points slid along the plane over the substep, from a substep ago
        ago = build(rest[:1, 0], root_dir[:1], e1[:1], last[:1], rods.seg[:1])[0][0]
        slide = np.linalg.norm((pts[0] - ago)[below, :2], axis=1).max()
        if friction == 0.0:
            free = slide
        else:
            assert slide < free                                # held back by the push times friction


def test_the_rods_style_is_the_goal_walked_out_of_the_head():
    """``RodLayer._style``: a goal laid into the head (a magnet pulling strands' tails through a
    sphere) becomes a style outside it — every point out by the contacts' own fast distance
    (the grid's trilinear value) to its tolerance, every segment its rest length
    (follow-the-leader: rounding only), the roots where they were — and a goal that touches
    nothing is the style itself, bit for bit (a groom at rest keeps its style)."""
    from hair_wig.collision import Collider, ColliderMesh
    from hair_wig.dynamics_layer import HairModel
    from hair_wig.rods import RodLayer

    n, num = 12, 40
    rng = np.random.default_rng(3)
    up = rng.normal(size=(num, 3)) * 0.3 + np.array([0.0, 0.0, 1.0])
    up /= np.linalg.norm(up, axis=1, keepdims=True)
    side = np.cross(up, rng.normal(size=(num, 3)))
    side /= np.linalg.norm(side, axis=1, keepdims=True)
    t = np.linspace(0.0, 1.0, n)[None, :, None]
    rest = up[:, None] * 1.0 + 0.6 * t * side[:, None] + 0.02 * up[:, None]       # combed over the scalp
    seg = np.linalg.norm(np.diff(rest, axis=1), axis=2)
    offsets = np.arange(num + 1) * n
    layer = RodLayer(HairModel("Hair", np.ascontiguousarray(rest.reshape(-1, 3).T), offsets), RodSettings())
    collider = Collider(ColliderMesh("Head", *sphere_mesh(1.0), resolution=96), np.eye(4), 0.0)
    collider.bind(np.ascontiguousarray(rest.reshape(-1, 3).T))
    layer.bind_colliders([collider])
    rods = layer.groups[0][2]
    assert np.array_equal(layer._style(0, np.eye(4), rest, rods.seg), rest)
    # the tails bent down through the head, each segment keeping its length
    bent = rest.copy()
    for j in range(1, n):
        d = rest[:, j] - rest[:, j - 1]
        d = d - (0.08 * j) * up * np.linalg.norm(d, axis=1, keepdims=True)
        bent[:, j] = bent[:, j - 1] + d / np.linalg.norm(d, axis=1, keepdims=True) * seg[:, j - 1:j]
    assert (np.linalg.norm(bent, axis=2) < 0.99).sum() > num       # deep inside
    style = layer._style(0, np.eye(4), bent, rods.seg)
    assert np.array_equal(style[:, 0], bent[:, 0])
    np.testing.assert_allclose(np.linalg.norm(np.diff(style, axis=1), axis=2), seg,
                               rtol=rounding(1.0, FOLLOW * n, eps=EPS64))
    room = collider.fast_distance(np.ascontiguousarray(style[:, 1:].reshape(-1, 3).T))
    limit = np.minimum(0.0, collider.fast_distance(np.ascontiguousarray(rest[:, 1:].reshape(-1, 3).T), rest=True))
    deep = (limit - collider.fast_distance(np.ascontiguousarray(bent[:, 1:].reshape(-1, 3).T))).max()
    # out to the contacts' tolerance, give or take what the last length pass sets a point back
    # in (a fraction of the last round's push, which is itself a fraction of the one before)
    assert (room - limit).min() > -10 * collider.tolerance, ((room - limit).min(), collider.tolerance)
    assert deep > 1e4 * collider.tolerance, deep
