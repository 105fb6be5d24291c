"""The Wisps dynamics layer (seed 001, hair_wig/wisps.py) on scenes with answers: the seed's two
wisps (§7.1, Fig. 8 and 9) crossing and lying alike, viscosity, a hanging wisp that stays its
groom, the envelope's return after a squeeze, the skeleton's stretch limit, the colliders, the
strands riding their wisps (waves keep their count, §6), and how strands are grouped. The layer
contract (at rest, lengths, inside, dynablend, resume, threads) is tests/test_layers.py's, which
runs every registered layer."""

import numpy as np
import pytest

from hair_wig import FrameInput, Magnet, Wig, WigSettings
from hair_wig.dynamics_layer import HairModel, LayerFrame
from hair_wig.errors import HairWigError
from hair_wig.wisps import SPREAD, SQUEEZE, WispLayer, WispSet, WispSettings, group_wisps
from test_strands import G, _turn, _wig_hair
from test_wig_core import sphere_mesh
from tolerance import EPS64, rounding

DT = 1 / 24


def bundle(root, axis, length=0.4, n=9, ring=6, rho=0.015):
    """A straight wisp of ``ring + 1`` strands: one on the axis, the others on a circle of radius
    ``rho`` about it."""
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    a = np.cross(axis, [0.3, 0.5, 0.8])
    a /= np.linalg.norm(a)
    b = np.cross(axis, a)
    offs = [np.zeros(3)] + [rho * (np.cos(t) * a + np.sin(t) * b)
                            for t in np.linspace(0, 2 * np.pi, ring, endpoint=False)]
    s = np.linspace(0, length, n)
    return [np.asarray(root, float) + o + s[:, None] * axis for o in offs]


def _model(strands, name="wisps"):
    pts = np.concatenate(strands).astype(np.float32)
    offsets = np.r_[0, np.cumsum([len(s) for s in strands])]
    return HairModel(name, np.ascontiguousarray(pts.T), offsets, np.eye(4))


def _frame(f, head=None):
    head = np.eye(4) if head is None else head
    return LayerFrame(DT, f * DT, G, [], head, np.linalg.inv(head), np.eye(4))


def _run(layer, model, frames, state=None, start=0):
    goal = model.rest_rows.copy()
    state = layer.initial_state(goal, _frame(start)) if state is None else state
    out = np.empty_like(goal)
    hist = []
    for f in range(start + 1, start + frames + 1):
        layer.step(state, goal, _frame(f), out)
        hist.append({k: state[k].copy() for k in ("x", "v", "r")} | {"out": out.copy()})
    return hist, state


def two_wisps(crossing, interact=True, viscosity=5.0, speed=1.5, frames=36):
    """Seed 001 §7.1's two wisps: A hangs from the origin and is swung towards B (its tip at
    ``speed`` m/s) under gravity. ``crossing``: B lies across A's swing, square to it, held by a
    stiff Hold (so the relative velocity at their contact is along their common plane's normal:
    they collide); else B hangs beside A, 4 cm over, free (the relative velocity lies in their
    common plane: they interpenetrate). Both swing freely, no Hold and no Bend, as the seed's."""
    A = bundle([0, 0, 0], [0, 0, -1])
    B = bundle([-0.2, 0.05, -0.3], [1, 0, 0]) if crossing else bundle([0, 0.04, 0], [0, 0, -1])
    model = _model(A + B)
    s = WispSettings(source="ATTRIBUTE", groups=np.r_[np.zeros(len(A)), np.ones(len(B))].astype(int),
                     goal_stiffness=0.0, bend=0.0, viscosity=viscosity, interact=interact, segments=8)
    s.hold_style = False                     # both swing under gravity as pendulums
    layer = WispLayer(model, s)
    if crossing:
        layer.stiffness[1] = 3000.0          # B held where it lies
    goal = model.rest_rows.copy()
    state = layer.initial_state(goal, _frame(0))
    state["v"][0, 1:, 1] = speed * np.linspace(0, 1, 9)[1:]
    hist, _ = _run(layer, model, frames, state)
    return hist, layer


def test_wisps_crossing_at_right_angles_do_not_pass_through_each_other():
    """A swings into B, which lies square across its path: where A crosses B's height its axis
    stays on its own side of B's (the contacts are inelastic); without interactions it swings
    through (the scene can fail)."""
    for interact in (True, False):
        hist, layer = two_wisps(True, interact=interact)
        side = np.array([h["x"][0, 6, 1] - h["x"][1, 4, 1] for h in hist])     # A at z = −0.3 less B's axis
        if interact:
            assert side.max() < 0, side.max()
            assert layer.counts[1] > 0                      # some contacts collided
        else:
            assert side.max() > 0.02, side.max()


def test_parallel_wisps_interpenetrate_and_separate_again():
    """B hangs beside A, parallel: A swings into it along their common plane and goes through it
    (their offset changes sign, the contacts interpenetrate), then they come apart again (farther
    than their two radii)."""
    hist, layer = two_wisps(False, viscosity=0.5)
    offset = np.array([(h["x"][0, 5:, 1] - h["x"][1, 5:, 1]).mean() for h in hist])
    assert offset.max() > 0                   # A (4 cm on B's near side at rest) went through to B's far side
    crossed = int(np.argmax(offset > 0))
    apart = np.array([np.linalg.norm(h["x"][0, 5:] - h["x"][1, 5:], axis=1).mean() for h in hist])
    radii = hist[0]["r"][0].mean() + hist[0]["r"][1].mean()
    assert apart[crossed:].max() > radii                      # and came out of it
    met, collided = layer.counts[0], layer.counts[1]
    assert met > 0 and collided < 0.1 * met                   # interpenetrating, not colliding


def test_viscosity_keeps_interpenetrating_wisps_together_longer():
    """Seed 001 Fig. 9: viscosity 50 against 0.5 — the frames the two wisps' lower halves stay
    within their radii of each other."""
    together = {}
    for viscosity in (0.5, 50.0):
        hist, _ = two_wisps(False, viscosity=viscosity, frames=48)
        apart = np.array([np.linalg.norm(h["x"][0, 5:] - h["x"][1, 5:], axis=1).mean() for h in hist])
        radii = hist[0]["r"][0].mean() + hist[0]["r"][1].mean()
        together[viscosity] = int((apart < radii).sum())
    assert together[50.0] >= together[0.5] + 6, together


def _hanging_groom(count=12, n=20):
    strands = []
    for k in range(count):
        root = np.array([0.01 * k, 0.002 * k, 0.0])
        s = np.linspace(0, 1, n)
        strands.append(root + np.stack([0.05 * np.sin(6 * s) + 0.2 * s, 0.02 * np.cos(4 * s), -0.4 * s], 1))
    return strands


def test_a_hanging_groom_is_the_groom_for_100_frames():
    """Nothing moves: the wisps (overlapping each other, curved, under gravity the style holds)
    and every shown point stay exactly where the groom is, frame after frame."""
    model = _model(_hanging_groom())
    layer = WispLayer(model, WispSettings(wisps=3))
    hist, state = _run(layer, model, 100)
    for h in hist:
        assert np.array_equal(h["out"], model.rest_rows)
    assert np.abs(state["x"] - state["goal"]).max() <= rounding(1.0, 100 * 20, EPS64)


def test_the_envelope_comes_back_to_its_rest_radii_after_a_squeeze():
    """Every radius squeezed to a third: the soft, heavily damped springs bring each back within
    1 % of its rest in two seconds, without overshooting by more than 1 %."""
    model = _model(_hanging_groom())
    layer = WispLayer(model, WispSettings(wisps=3))
    goal = model.rest_rows.copy()
    state = layer.initial_state(goal, _frame(0))
    state["r"] *= 1 / 3
    hist, state = _run(layer, model, 48, state)
    ratio = np.array([h["r"] / layer.set.r0 for h in hist])
    assert np.abs(ratio[-1] - 1).max() < 0.01, np.abs(ratio[-1] - 1).max()
    assert ratio.max() < 1.01


def test_skeleton_lengths_stay_within_max_stretch_on_a_violent_shake():
    """The head is shaken ±1 rad at 3 Hz: every skeleton segment stays within Max Stretch of its
    rest length (to rounding of the lengths compared)."""
    model = _model(_hanging_groom())
    s = WispSettings(wisps=3, max_stretch=0.03, stiffness=500.0)
    layer = WispLayer(model, s)
    goal = model.rest_rows.copy()
    state = layer.initial_state(goal, _frame(0))
    out = np.empty_like(goal)
    rest = layer.set.rest_len
    worst = 0.0
    for f in range(1, 37):
        head = _turn(np.sin(2 * np.pi * 3 * f * DT))
        layer.step(state, goal, _frame(f, head), out)
        seg = np.linalg.norm(np.diff(state["x"], axis=1), axis=2)
        worst = max(worst, np.abs(seg / rest - 1).max())
    assert worst <= 0.03 + rounding(1.0, 20, EPS64), worst
    assert worst > 0.001                       # the shake did pull on them


def test_strands_ride_their_wisp_and_waves_keep_their_count_as_it_stretches():
    """A wavy strand in a wisp (seed 001 §6): placed on its wisp stretched to 1.5 × its length and
    with its envelope widened to 1.5 ×, the strand's wave along e₁ has as many crossings as at
    rest, its amplitude 1.5 × and its length along the axis 1.5 ×."""
    s = np.linspace(0, 1, 61)
    # two mirrored waves: the wisp's skeleton (their mean with the others) is straight
    wave = [np.stack([sign * 0.01 * np.sin(2 * np.pi * 4 * s), 0.0 * s, -0.5 * s], 1) for sign in (1, -1)]
    others = [np.stack([0.0 * s + dx, 0.0 * s + dy, -0.5 * s], 1) for dx, dy in ((0.02, 0), (-0.02, 0), (0, 0.02),
                                                                                 (0, -0.02))]
    strands = wave + others
    model = _model(strands)
    ws = WispSet(model.rest_rows.astype(np.float64), model.offsets, np.zeros(6, np.int64), 6)
    from hair_wig.kernels.wisps import wisp_place
    x = ws.skeleton_rest.copy()
    x[..., 2] *= 1.5                                   # stretched along its axis
    anchor = ws.anchor_rest
    frames, _ = ws.frames(x, anchor, ws.e1_rest)
    stretch = np.linalg.norm(np.diff(x, axis=1), axis=2) / ws.rest_len
    ratio = np.full(ws.r0.shape, 1.5)
    goal = np.ascontiguousarray(model.rest_rows.T.astype(np.float64))
    out = np.empty_like(goal)
    gstretch = np.ones_like(stretch)
    wisp_place(goal, out, ws.offsets, ws.point_wisp, ws.point_seg, ws.point_u, ws.coords, np.ones(len(goal)),
               x, frames, ratio, stretch, ws.skeleton_rest, ws.frames_rest, gstretch, np.ones_like(ws.r0))
    strand = out[:61]
    rest = goal[:61]
    lateral = strand[:, :2] - x[0, 0, :2]                     # off the (straight) axis

    def crossings(v):
        return int((np.diff(np.sign(np.round(v, 9))) != 0).sum())
    e1 = ws.frames_rest[0, 0, 0, :2]
    assert crossings(lateral @ e1) == crossings((rest[:, :2] - ws.skeleton_rest[0, 0, :2]) @ e1) >= 7
    amp = np.abs(lateral).max() / np.abs(rest[:, :2] - ws.skeleton_rest[0, 0, :2]).max()
    assert abs(amp - 1.5) < 0.02, amp
    # exact but for rounding: each end is placed by ~24 float64 roundings of coordinates up to
    # |strand| (the lerps of the skeleton and of both frames, the scaled offsets, the segment's
    # unit axis, goal + blend · moved), then a difference and a division by the rest length
    along = rounding(np.abs(strand).max() / abs(rest[0, 2] - rest[-1, 2]), 2 * 24 + 2, EPS64)
    assert abs((strand[0, 2] - strand[-1, 2]) / (rest[0, 2] - rest[-1, 2]) - 1.5) <= along


def test_wisps_keep_out_of_the_head():
    """Hair on a sphere head turned fast: every free skeleton point of every wisp ends each frame
    outside its collision surface, by the distance the wisps meet it by (the collider's fast
    distance), to that distance's rounding (``Collider.tolerance``); and the wig's shown hair, after refinement, is out of the head as the
    contract test holds every layer to."""
    hair = _wig_hair(sizes=(10, 6))
    head = sphere_mesh(0.98)
    s = WispSettings(wisps=6, goal_stiffness=5.0)
    wig = Wig(hair, np.eye(4), np.eye(4), [Magnet("Drag", np.eye(4), radius=3.0)],
              WigSettings(dynamics=s, use_collision=True), head_mesh=head)
    layer = wig.layer
    state = None
    worst = np.inf
    for f in range(24):
        m = np.eye(4)
        m[2, 3] = -0.8 * min(f, 8) / 8              # the magnet drags the hair down through the head
        inp = FrameInput(np.eye(4), _turn(1.2 * min(f, 6) / 6), np.array([m]), time=f / 24, gravity=G)
        out, state = wig.step(inp, state)
        x = state.layer["x"]
        head_inv = np.linalg.inv(inp.head_matrix)
        q = head_inv[:3, :3] @ x[:, 1:].reshape(-1, 3).T + head_inv[:3, 3:4]
        assert layer.colliders
        if f == 0:
            continue                                # the first frame is the groom (no step)
        for c, lim in zip(layer.colliders, layer._limits):
            d = c.fast_distance(q)
            room = d - lim.reshape(-1)[:layer.set.num_wisps * layer.set.N].reshape(layer.set.num_wisps, -1)[:, 1:].ravel()
            worst = min(worst, room.min())
    # the collider's own allowance: its float32 field rounds the distance it is met by
    assert worst >= -max(c.tolerance for c in layer.colliders), worst
    assert wig.penetration <= 1e-3 * 2 * 0.98


def test_strands_are_grouped_by_where_they_grow_deterministically():
    """k-means over roots and shape: the same seed gives the same wisps, another seed others; each
    wisp's roots lie closer together than the groom's; at least the count asked for is made, more
    where a wisp would be wider than a tenth of its length."""
    hair = _wig_hair(strands=200, sizes=(10,))
    rows = np.ascontiguousarray(hair.points.T)
    a = group_wisps(rows, hair.offsets, 12, seed=1)
    assert np.array_equal(a, group_wisps(rows, hair.offsets, 12, seed=1))
    assert not np.array_equal(a, group_wisps(rows, hair.offsets, 12, seed=2))
    assert a.max() + 1 >= 12 and np.bincount(a).min() >= 1
    roots = hair.points[hair.offsets[:-1]].astype(np.float64)     # as group_wisps reads them
    tips = hair.points[hair.offsets[1:] - 1].astype(np.float64)
    length = np.linalg.norm(tips - roots, axis=1)
    for w in range(a.max() + 1):             # none wider than Widest Wisp (0.1) of its length
        r = roots[a == w]
        # the split's own spread and mean length, summed in another order: a mean of n values
        # (n sums, a division), a difference and a norm (4), of |roots| and of the longest strand
        n = len(r)
        slack = rounding(np.abs(r).max(), n + 4, EPS64) + 0.1 * rounding(length.max(), n + 4, EPS64)
        assert np.linalg.norm(r - r.mean(axis=0), axis=1).max() <= 0.1 * length[a == w].mean() + slack
    assert group_wisps(rows, hair.offsets, 12, seed=1, max_width=0).max() + 1 == 12     # 0: the count asked
    spread = np.mean([roots[a == w].std(axis=0).sum() for w in range(12)])
    assert spread < 0.5 * roots.std(axis=0).sum()
    # the layer says when it made more than asked, and not otherwise
    layer = WispLayer(HairModel("hair", rows, hair.offsets), WispSettings(wisps=12))
    assert (layer.set.num_wisps > 12) == bool(layer.warnings())
    assert all(f"{layer.set.num_wisps} wisps were made where 12" in w for w in layer.warnings())


def test_errors_name_the_setting():
    model = _model(_hanging_groom())
    with pytest.raises(HairWigError, match="attribute 'wisp'"):
        WispLayer(model, WispSettings(source="ATTRIBUTE"))
    with pytest.raises(HairWigError, match="max stretch"):
        WispLayer(model, WispSettings(max_stretch=2.0))
    with pytest.raises(HairWigError, match="values for 12 strands"):
        WispLayer(model, WispSettings(source="ATTRIBUTE", groups=np.zeros(5, int)))
    assert SQUEEZE < 1 < SPREAD


def test_a_shaken_groom_settles_back_onto_its_groom():
    """Long hair (three head radii) shaken ±0.6 rad at 2 Hz for half a second, wisps meeting: once
    the head stops the wisps' top speed only falls (no spring feeds energy in: a bend spring
    pulling towards a target set by the segment before did — 2.0 → 2.8 after the stop, measured),
    and two seconds later the hair is back on its groom to within 0.5 % of its length."""
    from hair_wig import HairSet
    from test_strands import from_layout, hanging
    hair = HairSet(from_layout(hanging(600, 12, length=3.0, seed=1)).astype(np.float32), [12] * 600, name="H")
    wig = Wig(hair, np.eye(4), np.eye(4), [Magnet("M", np.eye(4), radius=0.01)],
              WigSettings(dynamics=WispSettings(wisps=24), use_collision=False))
    state, speed = None, []
    for f in range(60):
        turn = 0.6 * np.sin(2 * np.pi * 2 * f / 24) if f < 12 else 0.0
        out, state = wig.step(FrameInput(np.eye(4), _turn(turn), np.array([np.eye(4)]), time=f / 24, gravity=G),
                              state)
        speed.append(np.abs(state.layer["v"]).max())
    after = np.array(speed[14:])
    assert after[-1] < 0.02 * after[0]
    assert after[6:].max() <= after[:6].max()        # no new peak once it settles in
    assert np.linalg.norm(out - hair.points, axis=1).mean() < 0.005 * 3.0


def test_wisps_follow_key_poses_and_settle_on_the_last():
    """Key poses (seed 002) as each frame's rest: the hair swings from the first hairstyle to the
    second (the tips 0.15 over in x) by frame 12 and holds it. Frame 1 is the first pose exactly
    (its wisps rest on their goal); the wisps lag the change; two seconds after it the hair is
    where the poses alone put it (the wig without dynamics: lengths kept) to within 2 % of the
    swing."""
    from hair_wig import HairSet
    from hair_wig.keyposes import KeyedStyle
    from test_keyposes import key, strands, swung
    pts, uv = strands(n=40, k=8, length=0.4)
    other = swung(pts, dx=0.15)
    style = KeyedStyle([key(1, pts, uv), key(12, other, uv)])
    hair = HairSet(pts.reshape(-1, 3), [8] * 40, name="Hair")
    def bake(dynamics):
        wig = Wig(hair, np.eye(4), np.eye(4), [Magnet("M", np.eye(4), radius=0.01)],
                  WigSettings(dynamics=dynamics, use_collision=False), keyed=style)
        state, frames = None, []
        for f in range(1, 61):
            out, state = wig.step(FrameInput(np.eye(4), np.eye(4), np.array([np.eye(4)]), time=f / 24, gravity=G,
                                             rest_points=style.pose(f)), state)
            frames.append(out.copy())
        return np.array(frames)
    wisps, still = bake(WispSettings(wisps=6, max_width=0.0)), bake(None)   # still: the poses as shown
    assert np.array_equal(wisps[0], pts.reshape(-1, 3))
    lag = np.abs(wisps - still).max(axis=(1, 2))
    assert lag[4:14].max() > 0.005                 # the wisps lag the change of style
    assert lag[-1] < 0.02 * 0.15
