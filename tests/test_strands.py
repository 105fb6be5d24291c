"""Verlet strands (seed 004, SPEC §7–8), numpy core only: analytic answers where physics has one."""

import copy

import numpy as np
import pytest

from hair_wig.errors import HairWigError
from hair_wig.profiles import Profile
from hair_wig.strands import StrandSettings, VerletStrands, from_layout, to_layout
from tolerance import AFFINE, EPS64, FOLLOW, NORM, SEGMENT, magnitude, rounding

# The Strands core is float64: its checks at 1e-9 (free fall, energy, lengths under stiff
# settings) and 1e-12 of exact zeros sit far above float64's rounding over these runs and far
# below any physical error; they stay. The layer in a wig returns float32: those are derived.

G = np.array([0.0, 0.0, -9.81])


def hanging(strands=5, n=8, length=0.4, seed=0):
    """Curved strands (3, n, S) rooted on a unit sphere's top, combed out and down."""
    rng = np.random.default_rng(seed)
    phi = rng.uniform(0, 2 * np.pi, strands)
    theta = rng.uniform(0.2, 0.8, strands)
    root = np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)])
    out = root * np.array([1.0, 1.0, 0.0])[:, None]
    out /= np.linalg.norm(out, axis=0)
    s = np.linspace(0, 1, n)[:, None]
    pts = root[:, None] + length * (out[:, None] * np.sin(s * 1.2) + np.array([0, 0, -1.0])[:, None, None]
                                    * (1 - np.cos(s * 1.2)) * 0.8 + root[:, None] * 0.15 * s)
    return np.ascontiguousarray(pts)


def seg_lengths(x):
    d = np.diff(x, axis=1)
    return np.sqrt(np.einsum("knj,knj->nj", d, d))


def free(**kw):
    base = dict(goal_stiffness=0.0, goal_damping=0.0, drag=0.0, hold_style=False, bend=0.0)
    base.update(kw)
    return StrandSettings(**base)


def test_layout_round_trip():
    p = np.random.default_rng(1).normal(size=(6 * 4, 3))
    rows = to_layout(p, 4)
    assert rows.shape == (3, 4, 6)
    np.testing.assert_array_equal(from_layout(rows), p)
    np.testing.assert_array_equal(rows[:, 2, 3], p[3 * 4 + 2])


def test_free_fall_of_an_unpinned_chain_is_exact():
    """Position Verlet is exact for a constant acceleration: started on the trajectory
    (x_prev = x(−h)), the chain falls as x0 + v0 t + ½ g t², keeping its lengths."""
    rest = hanging(3, 6)
    layer = VerletStrands(rest, free(pinned=False, substeps=4))
    v0 = np.array([0.3, -0.2, 1.5])
    state = layer.initial_state(rest, G)
    dt = 1 / 24
    h = dt / 4
    state["prev"][...] = rest - (v0 * h)[:, None, None] + (0.5 * G * h * h)[:, None, None]
    for f in range(1, 25):
        layer.step(state, rest, dt, G)
        t = f * dt
        want = rest + (v0 * t + 0.5 * G * t * t)[:, None, None]
        assert np.abs(state["pos"] - want).max() <= 1e-9, f          # float64: far above its rounding
    # float64 lengths: the last follow step and the measure (SEGMENT + NORM roundings of |x|,
    # relative to the shortest segment)
    x = state["pos"]
    kept = rounding(magnitude(x) / layer.length.min(), SEGMENT + NORM, eps=EPS64)
    np.testing.assert_allclose(seg_lengths(x), layer.length, rtol=kept)


def test_small_angle_pendulum_period():
    """A one-segment strand pinned at its root swings with period 2π √(L / g) (within 1 %)."""
    L, angle = 0.8, 0.05
    rest = np.zeros((3, 2, 1))
    rest[:, 1, 0] = (L * np.sin(angle), 0.0, -L * np.cos(angle))
    layer = VerletStrands(rest, free(root_direction=False, substeps=16))
    goal = rest.copy()
    state = layer.initial_state(goal, G)
    dt, xs = 1 / 24, []
    for _ in range(24 * 12):
        layer.step(state, goal, dt, G)
        xs.append(state["pos"][0, 1, 0])
    xs = np.array(xs)
    t = (np.arange(len(xs)) + 1) * dt
    up = np.flatnonzero((xs[:-1] < 0) & (xs[1:] >= 0))            # upward zero crossings
    cross = t[up] + dt * (-xs[up]) / (xs[up + 1] - xs[up])
    period = np.diff(cross).mean()
    want = 2 * np.pi * np.sqrt(L / 9.81) * (1 + angle ** 2 / 16)
    assert len(cross) >= 4
    assert abs(period / want - 1) <= 0.01, (period, want)
    assert np.abs(seg_lengths(state["pos"]) - L).max() <= 1e-12


def test_the_groom_is_the_equilibrium_under_gravity():
    """Nothing moving: frame 1 is the groom and 100 frames later it still is (≤ 1e-5 × length)."""
    rest = hanging(20, 12)
    layer = VerletStrands(rest)
    state = layer.initial_state(rest, G)
    length = layer.length.sum(axis=0).max()
    for f in range(100):
        out = layer.step(state, rest, 1 / 24, G)
        assert np.abs(out - rest).max() <= 1e-5 * length, f
    # without the style's hold the same strands sag
    sag = VerletStrands(rest, StrandSettings(hold_style=False))
    state = sag.initial_state(rest, G)
    for _ in range(24):
        out = sag.step(state, rest, 1 / 24, G)
    assert np.abs(out - rest).max() > 1e-3


def _head_motion(rest, frames, stop):
    """The goal: the groom carried by a head that turns about z and lifts until ``stop``."""
    for f in range(frames):
        a = 0.8 * min(f, stop) / stop
        c, s = np.cos(a), np.sin(a)
        R = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
        lift = np.array([0.0, 0.0, 0.3 * min(f, stop) / stop])
        yield f, R, np.einsum("ij,jns->ins", R, rest) + lift[:, None, None]


@pytest.mark.parametrize("method", ["FTL", "JAKOBSEN"])
def test_energy_stays_bounded_without_damping_or_goal(method):
    """A chain swinging under gravity with no drag, no goal and no goal damping — only the
    length constraint (FTL with its velocity correction, or Jakobsen's relaxation): its energy
    (kinetic + potential, per unit mass) never grows past its start, and it does swing."""
    n = 8
    rest = np.zeros((3, n, 1))
    rest[0, :, 0] = np.linspace(0, 0.7, n)                      # horizontal: it will swing down
    layer = VerletStrands(rest, free(root_direction=False, substeps=16, method=method))
    state = layer.initial_state(rest, G)
    h = 1 / 24 / 16

    def energy():
        v = (state["pos"] - state["prev"])[:, 1:] / h
        return float(0.5 * np.einsum("kns,kns->", v, v) - G @ state["pos"][:, 1:].sum(axis=(1, 2)))

    e0 = energy()
    worst, lowest = -np.inf, np.inf
    for _ in range(24 * 10):
        layer.step(state, rest, 1 / 24, G)
        worst = max(worst, energy())
        lowest = min(lowest, energy())
    assert worst <= e0 + 1e-9, (worst, e0)
    assert lowest < e0 - 10.0                                 # it fell and swung


@pytest.mark.parametrize("method", ["FTL", "JAKOBSEN"])
def test_every_segment_keeps_its_length_after_every_frame(method):
    rest = hanging(30, 16)
    settings = StrandSettings(method=method, iterations=200 if method == "JAKOBSEN" else 20)
    layer = VerletStrands(rest, settings)
    state = layer.initial_state(rest, G)
    worst = 0.0
    for f, R, goal in _head_motion(rest, 36, 12):
        layer.step(state, goal, 1 / 24, G, head_turn=R)
        worst = max(worst, np.abs(seg_lengths(state["pos"]) / layer.length - 1).max())
        np.testing.assert_allclose(state["pos"][:, 0], goal[:, 0], atol=1e-12)       # roots on the scalp
    # not rounding: Jakobsen's relaxation converges to this within its 200 iterations (FTL is
    # exact to float64 rounding)
    assert worst <= 1e-4, worst


def test_back_to_the_style_within_two_seconds_after_the_motion_stops():
    """Default settings: the head turns and lifts for half a second; 2 s after it stops every
    point is within 1 % of its strand's length of the style (carried by the head)."""
    rest = hanging(30, 16)
    layer = VerletStrands(rest)
    state = layer.initial_state(rest, G)
    length = layer.length.sum(axis=0)
    peak = 0.0
    for f, R, goal in _head_motion(rest, 12 + 48 + 1, 12):
        out = layer.step(state, goal, 1 / 24, G, head_turn=R)
        off = np.sqrt(np.einsum("kns,kns->ns", out - goal, out - goal)).max(axis=0) / length
        if f <= 14:
            peak = max(peak, off.max())
    assert peak > 0.02                               # it really lagged
    assert off.max() <= 0.01, off.max()


def test_resuming_from_a_saved_state_gives_the_same_bits():
    rest = hanging(10, 10)
    layer = VerletStrands(rest)
    state = layer.initial_state(rest, G)
    frames = list(_head_motion(rest, 30, 10))
    saved = None
    for f, R, goal in frames:
        out = layer.step(state, goal, 1 / 24, G, head_turn=R)
        if f == 12:
            saved = copy.deepcopy(state)
    again = VerletStrands(rest)
    for f, R, goal in frames[13:]:
        resumed = again.step(saved, goal, 1 / 24, G, head_turn=R)
    np.testing.assert_array_equal(resumed, out)
    for k in state:
        np.testing.assert_array_equal(saved[k], state[k])


def test_dynablend_zero_is_exactly_the_goal_and_roots_never_leave_it():
    rest = hanging(8, 10)
    layer = VerletStrands(rest, StrandSettings(dynablend=0.0))
    state = layer.initial_state(rest, G)
    for f, R, goal in _head_motion(rest, 20, 8):
        out = layer.step(state, goal, 1 / 24, G, head_turn=R)
        np.testing.assert_array_equal(out, goal)
    layer = VerletStrands(rest)
    state = layer.initial_state(rest, G)
    for f, R, goal in _head_motion(rest, 20, 8):
        out = layer.step(state, goal, 1 / 24, G, head_turn=R)
        np.testing.assert_array_equal(out[:, 0], goal[:, 0])


def test_settings_are_checked_by_name():
    rest = hanging(2, 4)
    with pytest.raises(HairWigError, match="substeps"):
        VerletStrands(rest, StrandSettings(substeps=0))
    with pytest.raises(HairWigError, match="goal stiffness"):
        VerletStrands(rest, StrandSettings(goal_stiffness=-1.0))
    with pytest.raises(HairWigError, match="method"):
        VerletStrands(rest, StrandSettings(method="RK4"))
    with pytest.raises(HairWigError, match="2 points"):
        VerletStrands(rest[:, :1], StrandSettings())
    assert Profile.linear(1.0, 0.25)(np.array([0.0, 1.0])).tolist() == [1.0, 0.25]


def test_stiff_and_heavily_damped_strands_stay_stable():
    """Goal stiffness, goal damping and drag far past anything useful (the explicit step would
    blow up at stiffness · h² > 4 or damping · h > 2): the strands stay finite, on their
    lengths, and settle on the goal."""
    rest = hanging(10, 12)
    for kw in (dict(goal_stiffness=1e7), dict(goal_damping=1e5), dict(drag=1e5),
               dict(goal_stiffness=1e7, goal_damping=1e5, drag=1e5)):
        layer = VerletStrands(rest, StrandSettings(**kw))
        state = layer.initial_state(rest, G)
        for f, R, goal in _head_motion(rest, 24, 8):
            out = layer.step(state, goal, 1 / 24, G, head_turn=R)
            assert np.isfinite(out).all(), kw
        assert np.abs(seg_lengths(state["pos"]) / layer.length - 1).max() <= 1e-9


# ------------------------------------------------------------------- the Strands layer in a wig

from hair_wig import FrameInput, HairSet, Magnet, Wig, WigSettings  # noqa: E402
from test_wig_core import numba_threads, sphere_mesh  # noqa: E402


def _wig_hair(strands=40, seed=2, sizes=(10, 6)):
    """Hair of the point counts ``sizes`` combed out and down from a unit sphere's top."""
    parts, counts = [], []
    for k, n in enumerate(sizes):
        rows = hanging(strands // len(sizes), n, seed=seed + k)
        parts.append(from_layout(rows))
        counts += [n] * (strands // len(sizes))
    return HairSet(np.concatenate(parts).astype(np.float32), counts, name="Hair")


def _turn(angle):
    m = np.eye(4)
    c, s = np.cos(angle), np.sin(angle)
    m[:2, :2] = [[c, -s], [s, c]]
    return m


def _inputs(frames, stop, magnet_z=1.5):
    return [FrameInput(np.eye(4), _turn(0.8 * min(f, stop) / stop), np.array([np.eye(4) + 0]), time=f / 24,
                       gravity=G) for f in range(frames)]


def _wig(settings=None, threads=1, sizes=(10, 6), **kw):
    hair = _wig_hair(sizes=sizes)
    base = dict(use_collision=False, dynamics=settings or StrandSettings())
    base.update(kw)
    wig = Wig(hair, np.eye(4), np.eye(4), [Magnet("M", np.eye(4), radius=0.01)], WigSettings(**base),
              threads=threads)
    return hair, wig


def test_a_wig_with_strands_holds_its_groom_at_rest_and_lags_when_the_head_turns():
    hair, wig = _wig()
    state = None
    # Each frame the float32 goal goes to the float64 layer and back (1 rounding), the length
    # walk re-places the points root to tip (up to 10), and the map to the object (7); the
    # layer's float64 state keeps no float32 rounding from frame to frame. Of |x| <= the groom's.
    held = rounding(magnitude(hair.points), 1 + FOLLOW * hair.counts.max() + AFFINE)
    for inp in _inputs(100, 10**9):                               # the head never moves
        out, state = wig.step(inp, state)
        np.testing.assert_allclose(out, hair.points, atol=held)
    assert wig.has_dynamics and state.layer is not None and set(state.layer) >= {"10:pos", "6:pos"}
    # the head turns for half a second: the hair lags behind the rigid turn, roots stay on
    hair, wig = _wig()
    state, t = None, hair.vertex_t()
    for f, inp in enumerate(_inputs(13, 12)):
        out, state = wig.step(inp, state)
    rigid = (hair.points.astype(np.float64) @ _turn(0.8)[:3, :3].T)
    lag = np.linalg.norm(out - rigid, axis=1)
    # roots: the turn to the object (7) and the float32 store (1), of |x|
    assert lag[t == 1].mean() > 0.01 and lag[t == 0].max() <= rounding(magnitude(rigid), AFFINE + 1)
    seg = np.linalg.norm(np.diff(out.astype(np.float64), axis=0), axis=1)
    seg0 = np.linalg.norm(np.diff(hair.points.astype(np.float64), axis=0), axis=1)
    inner = t[1:] > 0
    # lengths: the layer's float64 chain stored as float32 (1 each end), the walk's step (8),
    # the turn to the object (7 each end), relative to the shortest segment
    kept = rounding(magnitude(rigid) / seg0[inner].min(), 2 + SEGMENT + 2 * AFFINE)
    assert np.abs(seg[inner] / seg0[inner] - 1).max() <= kept


def bake_on_two_threads_and_resumed(settings, inputs):
    """A wig of ``settings()`` baked over ``inputs`` on 1 and 2 threads (the same bits each
    frame) and resumed at frame 10 from a saved state (the same last frame and state); the wig
    baked on one thread and its frames, for what else a caller checks."""
    one, two = _wig(settings(), sizes=(10,))[1], _wig(settings(), threads=2, sizes=(10,))[1]
    state1 = state2 = None
    frames = []
    for f, inp in enumerate(inputs):
        with numba_threads(1):
            a, state1 = one.step(inp, state1)
        with numba_threads(2):
            b, state2 = two.step(inp, state2, keep_state=False)
        assert np.array_equal(a, b), f
        frames.append(a)
        if f == 9:
            saved = state1.copy()
    assert saved != state1 and state1 == state2
    _, again = _wig(settings(), sizes=(10,))
    state = saved
    for inp in inputs[10:]:
        last, state = again.step(inp, state)
    assert np.array_equal(last, frames[-1]) and state == state1
    return one, frames


def test_a_wig_with_strands_bakes_the_same_bits_on_two_threads_and_when_resumed():
    one, _ = bake_on_two_threads_and_resumed(lambda: StrandSettings(hair_hair=True, diameter=0.05, links=2),
                                             _inputs(20, 12))
    assert one.layer.groups[0][2].pairs > 0 and one.layer.groups[0][2].link_a.size > 0   # they touch


def test_a_wig_refuses_settings_no_layer_takes_by_name():
    with pytest.raises(HairWigError, match="'Hair': no dynamics layer takes settings of type dict"):
        _wig({"substeps": 4})


def _dragged_through_the_head(frames=24):
    hair = _wig_hair(sizes=(10,))
    inputs = []
    for f in range(frames):
        m = np.eye(4)
        m[2, 3] = -1.2 * min(f, 12) / 12
        inputs.append(FrameInput(np.eye(4), np.eye(4), np.array([m]), time=f / 24, gravity=G))
    return hair, Magnet("Drag", np.eye(4), radius=3.0), inputs


def _inside_convex(a, b, vertices, triangles, eps=0.0):
    """Exactly which segments a→b (K, 3) enter the convex mesh deeper than ``eps``: the mesh is
    the intersection of its faces' half-spaces, so along a segment each face allows an interval
    of t, and the segment is inside somewhere iff those intervals (and [0, 1]) overlap."""
    v = vertices[triangles]
    n = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
    area = np.linalg.norm(n, axis=1)
    keep = area > 1e-12
    n = n[keep] / area[keep, None]
    c = np.einsum("fk,fk->f", n, v[keep, 0]) - eps         # inside: n·x < c (deeper than eps)
    g0 = a @ n.T - c                                         # (K, F): g(t) = g0 + t·slope < 0
    slope = (b - a) @ n.T
    with np.errstate(divide="ignore", invalid="ignore"):
        t = -g0 / slope
    lo = np.max(np.where(slope < 0, t, 0.0), axis=1, initial=0.0)
    hi = np.min(np.where(slope > 0, t, 1.0), axis=1, initial=1.0)
    never = np.any((slope == 0) & (g0 >= 0), axis=1)
    return (lo < hi) & ~never


def test_strands_meet_the_head_inside_their_substeps_vertices_and_segments():
    """A magnet drags the hair down through a sphere head (its goal goes deep inside). Inside
    the substeps the strands meet the head by their points and their segments, so after every
    frame no vertex and no segment of the strands' state or of what shows enters the head — an
    exact test (the mesh is convex), with a hair's offset of 5 mm (more than the grid's
    distance errs by on a smooth head). The head's field is met hundreds of times."""
    hair, magnet, inputs = _dragged_through_the_head()
    head = sphere_mesh(0.98)
    wig = Wig(hair, np.eye(4), np.eye(4), [magnet],
              WigSettings(dynamics=StrandSettings(), use_collision=True, collision_offset=0.005),
              head_mesh=head)
    state, inside, touched = None, 0, 0
    for inp in inputs:
        out, state = wig.step(inp, state)
        touched += wig.layer.touched
        for rows in (to_layout(out, 10), state.layer["10:pos"]):
            a = from_layout(rows[:, :-1].copy())
            b = from_layout(rows[:, 1:].copy())
            inside += int(_inside_convex(a, b, *head).sum())
    assert touched > 100                                      # the head was met, hard
    assert inside == 0


def test_contacts_look_only_where_something_could_touch_and_miss_nothing():
    """Within a frame the contacts look again only at points and segments that moved by as much
    as their room at the last look; the strands come out bit for bit as when every one is looked
    at every substep, with fewer looks."""
    from hair_wig.collision.contacts import SurfaceContacts

    hair, magnet, inputs = _dragged_through_the_head()
    runs = {}
    for every in (False, True):
        wig = Wig(hair, np.eye(4), np.eye(4), [magnet],
                  WigSettings(dynamics=StrandSettings(), use_collision=True, collision_offset=0.005),
                  head_mesh=sphere_mesh(0.98))
        contact = wig.layer.contacts[0]
        contact.every = every
        state, frames = None, []
        for inp in inputs:
            out, state = wig.step(inp, state)
            frames.append(out.copy())
        runs[every] = frames, contact.looked
    assert all(np.array_equal(a, b) for a, b in zip(runs[False][0], runs[True][0]))
    assert runs[False][1] < 0.8 * runs[True][1], (runs[False][1], runs[True][1])     # (hair dragged through the head: most are near)
    assert isinstance(contact, SurfaceContacts)


@pytest.mark.parametrize("segments", [True, False])
def test_a_segment_does_not_fall_through_a_bar(segments):
    """Strands pinned at one end swing down from flat onto a thin bar (3 cm square, segments of
    5 cm) that sits under the middle of a segment. By their points alone the bar passes between
    two points and cuts a segment; meeting it by segments too, the strand drapes over it. The
    contacts read the collider's field (a grid), so a segment may dip into it by the field's
    error and no more; checked exactly (the bar is convex)."""
    from test_collision import box

    from hair_wig.collision import Collider, ColliderMesh
    from hair_wig.collision.contacts import SurfaceContacts

    bar = box((0.015, 0.5, 0.015), n=2)
    rest = np.zeros((3, 6, 3))
    rest[0] = (np.arange(6)[:, None] - 2.5) * 0.05 + np.array([0.0, 0.001, -0.001])
    rest[1] = np.array([-0.2, 0.0, 0.2])
    rest[2] = 0.03
    layer = VerletStrands(rest, free(root_direction=False))
    collider = Collider(ColliderMesh("Bar", *bar, resolution=256), np.eye(4), 0.0)
    collider.bind(rest.reshape(3, -1))
    error = float(collider.field.grid.grid_error.max())
    assert error < 0.01                                        # a third of the bar
    contact = SurfaceContacts([collider], np.arange(rest[0].size).reshape(rest.shape[1:]), 1)
    if not segments:
        contact.w_a, contact.w_b = 0 * contact.w_a, 0 * contact.w_b
    state = layer.initial_state(rest, G)
    cut = 0
    for _ in range(24):
        layer.step(state, rest, 1 / 24, G, contact=contact)
        x = state["pos"]
        cut += int(_inside_convex(from_layout(x[:, :-1].copy()), from_layout(x[:, 1:].copy()), *bar,
                                  eps=error).sum())
    low = state["pos"][2].min()
    if segments:
        assert cut == 0 and low > -0.2, (cut, low)            # draped over the bar
    else:
        assert cut > 0, (cut, low)                            # it passed through


def test_strands_feel_the_head_through_refinement():
    """What refinement still does to the layer's pose moves the strands' own state as a contact
    would. With the substeps' contacts off, a magnet drags the hair down through a sphere head:
    after every frame no point of the strands' state is inside it; without that it sinks in."""
    hair, magnet, inputs = _dragged_through_the_head()
    depth = {}
    for feel in (True, False):
        wig = Wig(hair, np.eye(4), np.eye(4), [magnet],
                  WigSettings(dynamics=StrandSettings(), use_collision=True), head_mesh=sphere_mesh(0.98))
        wig.layer.contacts = None
        if not feel:
            wig._layer_feels_refinement = lambda *a: None
        state, worst_out, worst_state = None, 0.0, 0.0
        for inp in inputs:
            out, state = wig.step(inp, state)
            worst_out = max(worst_out, 0.98 - np.linalg.norm(out, axis=1).min())
            pos = np.concatenate([from_layout(state.layer[f"{n}:pos"]) for n in (10,)])
            worst_state = max(worst_state, 0.98 - np.linalg.norm(pos, axis=1).min())
        depth[feel] = (worst_out, worst_state)
    assert depth[True][0] <= 0.01 and depth[False][0] <= 0.01          # what shows is outside
    assert depth[True][1] <= 0.01, depth                                # and so is the state
    assert depth[False][1] > 0.1, depth                                 # (it sank in without)


@pytest.mark.parametrize("friction", [0.0, 0.3])
def test_coulomb_friction_stops_a_sliding_strand_after_v0_squared_over_2_mu_g(friction):
    """A strand lying on a floor (a contact that pushes z back to 0) slides along x at 1 m/s
    under gravity: Coulomb friction μ stops it after v0² / (2 μ g) (within a substep's travel);
    without friction it keeps its speed exactly."""
    rest = np.zeros((3, 2, 1))
    rest[0, 1, 0] = 0.1
    layer = VerletStrands(rest, free(pinned=False, friction=friction))
    state = layer.initial_state(rest, G)
    dt, v0 = 1 / 24, 1.0
    h = dt / layer.settings.substeps
    state["prev"][0] -= v0 * h

    def floor(x, f):
        push = np.zeros_like(x)
        push[2] = np.maximum(-x[2], 0.0)
        return push if push.any() else None

    for _ in range(24):
        layer.step(state, rest, dt, G, contact=floor)
    slid = state["pos"][0, 0, 0]
    assert np.abs(state["pos"][2]).max() <= 1e-12
    if friction == 0:
        assert abs(slid - v0 * 1.0) <= 1e-9
    else:
        want = v0 ** 2 / (2 * friction * 9.81)
        assert abs(slid - want) <= v0 * h, (slid, want)
        assert np.allclose(state["pos"], state["prev"])                # it has stopped


# ------------------------------------------------------------------- force fields on strands

def test_a_drag_field_slows_a_moving_strand_as_exp_minus_c_t():
    """A Drag field (linear 0.8) on a free chain gliding at 2 m/s with nothing else acting:
    dv/dt = −c v, so v(t) = v0 e^{−c t} (within 1 % over a second); a quadratic drag
    dv/dt = −q v² gives v0 / (1 + q v0 t)."""
    from hair_wig import ForceField

    rest = hanging(2, 5)
    for lin, quad, want in ((0.8, 0.0, lambda t: 2.0 * np.exp(-0.8 * t)),
                            (0.0, 0.5, lambda t: 2.0 / (1 + 0.5 * 2.0 * t))):
        field = ForceField(np.zeros(3), np.array([0, 0, 1.0]), strength=0.0, kind="DRAG",
                           linear_drag=lin, quadratic_drag=quad)
        layer = VerletStrands(rest, free(pinned=False, substeps=16))
        state = layer.initial_state(rest, np.zeros(3))
        h = (1 / 24) / 16
        state["prev"][0] -= 2.0 * h

        def accel(x, v):
            return np.moveaxis(field.force(np.moveaxis(x, 0, -1), 0.0, np.moveaxis(v, 0, -1)), -1, 0)

        for f in range(24):
            before = state["pos"].copy()
            layer.step(state, rest, 1 / 24, np.zeros(3), accel=accel)
        speed = (state["pos"][0] - state["prev"][0]).mean() / h
        assert abs(speed / want(1.0) - 1) < 0.01, (lin, quad, speed, want(1.0))
        assert np.abs(state["pos"][1:] - before[1:]).max() < 1e-12          # only along x


def test_a_turbulence_field_is_smooth_seeded_and_bounded():
    """Turbulence: strength × a noise vector of the position relative to the field over its
    size — each component within ±strength, continuous (nearby points feel nearly the same
    force: a step of 1 % of the size changes it by a few %), the same for the same seed and
    different for another, and moving with the field unless global."""
    from hair_wig import ForceField

    rng = np.random.default_rng(4)
    x = rng.uniform(-3, 3, (5000, 3))
    field = ForceField(np.array([0.5, 0, 0]), np.array([0, 0, 1.0]), strength=3.0, kind="TURBULENCE",
                       shape="POINT", size=0.7, seed=9)
    f = field.force(x, 0.0)
    assert np.abs(f).max() <= 3.0 and np.abs(f).mean() > 0.3
    step = field.force(x + 0.007 * rng.normal(size=x.shape) / np.sqrt(3), 0.0)
    assert np.abs(step - f).max() < 0.1 * 3.0
    assert np.array_equal(field.force(x, 0.0), f)
    other = ForceField(np.array([0.5, 0, 0]), np.array([0, 0, 1.0]), strength=3.0, kind="TURBULENCE",
                       shape="POINT", size=0.7, seed=10)
    assert np.abs(other.force(x, 0.0) - f).mean() > 0.3
    moved = ForceField(np.array([1.5, 0, 0]), np.array([0, 0, 1.0]), strength=3.0, kind="TURBULENCE",
                       shape="POINT", size=0.7, seed=9)
    # the same noise at positions that differ by their float64 rounding (x + 1 − 1.5 against
    # x − 0.5: 2 roundings of |x|), through the noise's slope (at most 0.3 / 0.007, as measured
    # above), plus the noise's own ~50 roundings of its value (<= strength)
    slope = 0.1 * 3.0 / 0.007
    tol = slope * rounding(magnitude(x) + 1.5, 2, eps=EPS64) + rounding(3.0, 50, eps=EPS64)
    np.testing.assert_allclose(moved.force(x + [1.0, 0, 0], 0.0), f, atol=tol)
    glob = ForceField(np.array([1.5, 0, 0]), np.array([0, 0, 1.0]), strength=3.0, kind="TURBULENCE",
                      shape="POINT", size=0.7, seed=9, global_coords=True)
    assert np.abs(glob.force(x + [1.0, 0, 0], 0.0) - f).mean() > 0.3
    with pytest.raises(HairWigError, match="kind must be one of"):
        ForceField(np.zeros(3), np.array([0, 0, 1.0]), strength=1.0, kind="VORTEX")


def test_colliders_sweep_through_the_substeps_with_the_head():
    """Within a frame the head (and what collides in its frame) moves from where it was to where
    it is as the goal does, linearly: a point it sweeps through half way is pushed at the half,
    not at the frame's end, and a point riding with the head is never pushed on the way."""
    from test_collision import box, box_distance

    from hair_wig.collision import Collider, ColliderMesh
    from hair_wig.collision.contacts import SurfaceContacts

    cube = box((0.1, 0.1, 0.1), n=4)                              # head-local, half size 0.1
    rest = np.zeros((3, 3, 1))
    rest[0, :, 0], rest[2, :, 0] = 0.3, [0.3, 0.2, 0.08]          # off its side, hanging to its top's height
    collider = Collider(ColliderMesh("Cube", *cube, resolution=64), np.eye(4), 0.0)
    collider.bind(rest.reshape(3, -1))
    contact = SurfaceContacts([collider], np.arange(3).reshape(3, 1), 1)
    was, now = np.eye(4), np.eye(4)
    now[0, 3] = -0.6                                              # world -> local: the head moved +0.6 in x
    contact.move(was, now)
    x = rest.copy()                                               # where the head is half way
    contact.begin()
    assert contact(x, 0.0) is None and contact(x, 1.0) is None    # clear of it at both ends
    contact.begin()
    push = contact(x, 0.5)
    assert push is not None
    local = from_layout(x + push) - [0.3, 0.0, 0.0]
    assert box_distance(local, np.full(3, 0.1)).min() >= -float(collider.field.grid.grid_error.max())
    riding = rest.copy()
    for f in np.linspace(0, 1, 9):
        riding[0] = 0.105 + 0.6 * f                               # carried with the head, 5 mm off its face
        contact.begin()
        assert contact(riding, f) is None
