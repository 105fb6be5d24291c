"""Live dynamics from Blender (issue 37, real bpy): frames driven by ``frame_set`` as playback drives
them. Playing 1..N equals a bake bit for bit for every solver; scrubbing back shows cached frames
without a step; a keyframe changed at frame k outdates k… and the replay equals a fresh bake; a
setting changed outdates everything; the budget holds; Bake takes the cached frames and equals a
bake from scratch; save, reopen, undo and switching it off give the groom back exactly; a legacy
Curve says it needs a bake; an error while playing stops it naming the wig."""

import bpy
import numpy as np
import pytest
import scenes

N = 16


@pytest.fixture
def glue(addon):
    from hair_wig_addon.operators import baking, blender_io, frames, preview
    return baking, blender_io, frames, preview


def positions(ob):
    out = np.empty(len(ob.data.points) * 3, np.float32)
    ob.data.attributes["position"].data.foreach_get("vector", out)
    return out.reshape(-1, 3)


def live_wig(layer="STRANDS", strands=60):
    """The turning sphere head's hair, frames 1..N, with ``layer`` and head collision."""
    scene, head, ob, _ = scenes.turning_head_hair(strands, N)
    s = ob.hair_wig
    s.use_secondary = True
    s.dynamics_layer = layer
    bpy.context.view_layer.objects.active = ob
    scene.frame_set(1)
    return scene, head, ob, positions(ob)


def session(preview, ob):
    return preview._previews[ob.session_uid].live


def play(scene, ob, frames):
    shown = {}
    for f in frames:
        scene.frame_set(f)
        shown[f] = positions(ob)
    return shown


def bake_counting(monkeypatch, frames, io, ob):
    """Bake ``ob`` with the Bake operator, counting the frames it computes (``frames.step_frame``
    watched); the frames computed and the bake's positions as stored (1..N)."""
    computed = []
    step = frames.step_frame
    monkeypatch.setattr(frames, "step_frame", lambda *a, **k: computed.append(a[3]) or step(*a, **k))
    try:
        bpy.context.view_layer.objects.active = ob
        assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    finally:
        monkeypatch.setattr(frames, "step_frame", step)
    (first, last), baked, _paths = io.read_bake(ob)
    assert (first, last) == (1, N)
    return computed, baked


def fresh(baking, ob, first=1, last=N):
    """A bake from scratch of the wig as it is now (Live Dynamics off: nothing to take)."""
    assert not ob.hair_wig.use_live_dynamics
    return baking.compute(bpy.context, ob, first, last)


@pytest.mark.parametrize("layer", ["STRANDS", "SPRINGS", "RODS", "WISPS"])
def test_playing_forward_equals_a_bake_bit_for_bit_and_off_gives_the_groom_back(glue, layer):
    baking, _, _, preview = glue
    scene, head, ob, rest = live_wig(layer)
    ob.hair_wig.use_live_dynamics = True
    live = session(preview, ob)
    shown = play(scene, ob, range(1, N + 1))
    assert live.stepper.steps == N and live.cache.last_current == N
    assert np.abs(shown[6] - rest).max() > 0.05                   # the head turned: the hair moved
    assert not ob.hair_wig.rest_captured                          # it binds as a bake, setting nothing
    ob.hair_wig.use_live_dynamics = False                        # off: the groom, exactly
    assert not preview.is_previewing(ob) and np.array_equal(positions(ob), rest)
    assert ".hair_wig_rest" not in ob.data.attributes
    baked = fresh(baking, ob)
    for f in range(1, N + 1):
        np.testing.assert_array_equal(shown[f], baked.frame(f), err_msg=f"frame {f}")


def test_scrubbing_shows_cached_frames_and_a_jump_steps_the_frames_between(glue, monkeypatch, capsys):
    _, _, _, preview = glue
    from hair_wig_addon.operators import live as live_module

    scene, head, ob, rest = live_wig()
    ob.hair_wig.use_live_dynamics = True
    live = session(preview, ob)
    monkeypatch.setattr(live_module, "PROGRESS_AFTER", 0.0)      # a long jump says how far it goes
    scene.frame_set(10)                                           # a jump: 1..10 computed
    assert "'Hair': live dynamics computing 9 frames to frame 10" in capsys.readouterr().out
    assert live.stepper.steps == 10 and live.cache.last_current == 10
    at10 = positions(ob)
    assert scene.frame_current == 10
    for f in (3, 9, 1, 10, 5):
        scene.frame_set(f)
        np.testing.assert_array_equal(positions(ob), live.cache.shown(f))
    assert live.stepper.steps == 10                               # no frame computed again
    scene.frame_set(10)
    np.testing.assert_array_equal(positions(ob), at10)
    scene.frame_set(12)
    assert live.stepper.steps == 12
    scene.frame_set(N + 5)                                        # past the range: its last frame
    assert live.cache.last == N
    np.testing.assert_array_equal(positions(ob), live.cache.shown(N))
    assert f"frames 1–{N} cached" in preview.status(ob)
    bpy.context.view_layer.objects.active = ob
    assert bpy.ops.hair_wig.clear_live_cache() == {"FINISHED"}     # cleared: the groom, exactly
    assert np.array_equal(positions(ob), rest) and live.cache.last is None
    assert preview.status(ob) == "nothing cached" and ob.hair_wig.use_live_dynamics
    scene.frame_set(3)
    np.testing.assert_array_equal(positions(ob), live.cache.shown(3))
    assert live.stepper.steps == N + 3


def test_a_keyframe_changed_at_frame_k_outdates_from_k_and_the_replay_equals_a_fresh_bake(glue):
    baking, _, _, preview = glue
    scene, head, ob, rest = live_wig()
    s = ob.hair_wig
    s.strands_dynablend = 1.0
    s.keyframe_insert("strands_dynablend", frame=1)
    ob.hair_wig.use_live_dynamics = True
    live = session(preview, ob)
    play(scene, ob, range(1, N + 1))
    before = {f: live.cache.shown(f).copy() for f in range(1, N + 1)}
    s.strands_dynablend = 0.3                                     # a new key at frame 7, held after it
    s.keyframe_insert("strands_dynablend", frame=7)
    for fc in ob.animation_data.action.layers[0].strips[0].channelbags[0].fcurves:
        for k in fc.keyframe_points:
            k.interpolation = "CONSTANT"
    bpy.context.view_layer.update()                               # the edit reaches the handlers
    assert live.cache.outdated == 7 and live.cache.last_current == 6
    assert f"7–{N} outdated" in preview.status(ob)
    from hair_wig_addon.panels import timeline                    # the Timeline's strip: bright, then dim
    assert timeline.runs(live.cache) == [(1, 6, "current"), (7, N, "outdated")]
    rects = timeline.rectangles(timeline.runs(live.cache), lambda f: 10.0 * f)
    assert rects[0] == ((5.0, 0.0, 65.0, float(timeline.HEIGHT)), "current") and rects[1][0][:3] == (65.0, 0.0, 165.0)
    for f in range(1, 7):                                         # what came before is still current
        assert live.cache.shown(f) is not None and np.array_equal(live.cache.shown(f), before[f])
    steps = live.stepper.steps
    shown = play(scene, ob, range(7, N + 1))
    assert live.stepper.steps - steps <= N - 6 + 1 and live.cache.outdated is None
    assert not np.array_equal(shown[N], before[N])
    ob.hair_wig.use_live_dynamics = False
    baked = fresh(baking, ob)
    for f in range(1, N + 1):
        np.testing.assert_array_equal(live_or(shown, before, f), baked.frame(f), err_msg=f"frame {f}")


def live_or(shown, before, f):
    return shown[f] if f in shown else before[f]


def test_a_setting_changed_outdates_everything_and_an_edit_shows_at_once(glue):
    baking, _, _, preview = glue
    scene, head, ob, rest = live_wig()
    ob.hair_wig.use_live_dynamics = True
    live = session(preview, ob)
    play(scene, ob, range(1, 11))
    at10 = positions(ob)
    ob.hair_wig.strands_links = 3                                 # acts on every frame
    bpy.context.view_layer.update()
    assert live.cache.outdated == 1 and "1–10 outdated" in preview.status(ob)
    assert not np.array_equal(positions(ob), at10)                # frame 10 again, from frame 9's state
    assert live.cache.outdated == 1
    steps = live.stepper.steps
    scene.frame_set(11)                                           # the next playback: all again
    assert live.stepper.steps - steps == 11 and live.cache.outdated is None
    # a force field added without a key: what frame 11 reads changed; everything is outdated
    bpy.ops.object.effector_add(type="WIND", location=(0, -3, 0), rotation=(-1.5708, 0, 0))
    bpy.context.active_object.field.strength = 200.0
    bpy.context.view_layer.update()
    assert live.cache.outdated == 1
    bpy.context.view_layer.objects.active = ob


def test_the_memory_budget_keeps_what_fits_says_so_and_plays_on(glue):
    baking, _, _, preview = glue
    scene, head, ob, rest = live_wig()
    ob.hair_wig.use_live_dynamics = True
    live = session(preview, ob)
    scene.frame_set(1)
    one = live.cache.bytes
    ob.hair_wig.live_memory = 4.5 * one / 2 ** 20
    bpy.context.view_layer.update()
    shown = play(scene, ob, range(1, 9))
    assert live.cache.last == 4 and "budget is reached" in preview.status(ob)
    assert live.cache.bytes <= live.cache.budget
    ob.hair_wig.use_live_dynamics = False
    baked = fresh(baking, ob, 1, 8)
    for f in range(1, 9):
        np.testing.assert_array_equal(shown[f], baked.frame(f), err_msg=f"frame {f}")


def test_bake_takes_the_cached_frames_and_equals_a_bake_from_scratch(glue, monkeypatch):
    baking, io, frames, preview = glue
    scene, head, ob, rest = live_wig()
    ob.hair_wig.use_live_dynamics = True
    play(scene, ob, range(1, 11))
    computed, baked = bake_counting(monkeypatch, frames, io, ob)
    assert computed == list(range(11, N + 1))                     # 1..10 came from the cache
    assert not preview.is_previewing(ob) and io.is_baked(ob)
    scene.frame_set(3)                                            # a baked wig plays its bake
    assert not preview.is_previewing(ob) and "is baked" in preview.status(ob)
    assert bpy.ops.hair_wig.clear_bake() == {"FINISHED"}
    assert np.array_equal(positions(ob), rest)
    ob.hair_wig.use_live_dynamics = False
    np.testing.assert_array_equal(baked, fresh(baking, ob).positions)


def test_a_bake_measures_the_live_frames_it_takes_as_it_measures_its_own(glue, monkeypatch):
    """Live dynamics does not measure how deep the hair is held inside the head (nothing it
    shows reads it); a bake that takes its frames measures them as it takes them: the same
    figure as a bake from scratch, bit for bit."""
    baking, _, frames, preview = glue
    scene, head, ob, rest = live_wig("SPRINGS")
    ob.hair_wig.use_live_dynamics = True
    play(scene, ob, range(1, 11))
    assert session(preview, ob).cache.extra(5).penetration is None
    computed = []
    step = frames.step_frame
    monkeypatch.setattr(frames, "step_frame", lambda *a, **k: computed.append(a[3]) or step(*a, **k))
    taken = baking.compute(bpy.context, ob, 1, N)
    monkeypatch.setattr(frames, "step_frame", step)
    assert computed == list(range(11, N + 1))                     # 1..10 came from the cache
    ob.hair_wig.use_live_dynamics = False
    scratch = fresh(baking, ob)
    np.testing.assert_array_equal(taken.positions, scratch.positions)
    assert taken.penetration == scratch.penetration


def test_saving_writes_no_cache_and_reopening_shows_the_groom(glue, tmp_path):
    _, _, _, preview = glue
    scene, head, ob, rest = live_wig()
    ob.hair_wig.use_live_dynamics = True
    scene.frame_set(6)
    at6 = positions(ob)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "live.blend"))
    np.testing.assert_array_equal(positions(ob), at6)             # shown again after saving
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "live.blend"))
    hair = bpy.data.objects["Hair"]
    assert np.array_equal(positions(hair), rest) and ".hair_wig_rest" not in hair.data.attributes
    assert hair.hair_wig.use_live_dynamics and not preview._previews
    bpy.context.scene.frame_set(6)                                # playing starts it again
    np.testing.assert_array_equal(positions(hair), at6)
    hair.hair_wig.use_live_dynamics = False
    assert np.array_equal(positions(hair), rest)


def test_undo_gives_back_what_was_there(glue):
    _, _, _, preview = glue
    scene, head, ob, rest = live_wig()
    bpy.ops.ed.undo_push(message="groom")
    ob.hair_wig.use_live_dynamics = True
    bpy.ops.ed.undo_push(message="live on")
    scene.frame_set(8)
    at8 = positions(ob)
    bpy.ops.ed.undo_push(message="played")
    ob.hair_wig.strands_links = 3
    bpy.ops.ed.undo_push(message="links")
    bpy.ops.ed.undo()                                             # the setting back: at8's frames
    hair = bpy.data.objects["Hair"]
    assert hair.hair_wig.strands_links != 3 and preview.is_previewing(hair)
    np.testing.assert_array_equal(positions(hair), at8)
    bpy.ops.ed.undo()
    bpy.ops.ed.undo()                                             # before Live Dynamics: the groom
    hair = bpy.data.objects["Hair"]
    assert not hair.hair_wig.use_live_dynamics and not preview.is_previewing(hair)
    assert np.array_equal(positions(hair), rest) and ".hair_wig_rest" not in hair.data.attributes


def test_a_legacy_curve_says_it_needs_a_bake(glue):
    _, _, _, preview = glue
    bpy.ops.wm.read_factory_settings(use_empty=True)
    pts = np.stack([np.zeros(16), np.zeros(16), np.r_[np.linspace(0, 1, 8), np.linspace(0, 1, 8)]], 1)
    pts[8:, 0] = 0.5
    legacy = scenes.legacy_hair("Legacy", pts.astype(np.float32), [8, 8])
    legacy.hair_wig.enabled = True
    legacy.hair_wig.use_live_dynamics = True
    assert "'Legacy' is a legacy Curve object" in preview.status(legacy) and "bake" in preview.status(legacy)
    bpy.context.scene.frame_set(5)
    assert not preview.is_previewing(legacy)


def test_an_error_while_playing_stops_it_naming_the_wig_and_the_scene_plays_on(glue):
    _, _, _, preview = glue
    scene, head, ob, rest = live_wig()
    ob.hair_wig.use_live_dynamics = True
    scene.frame_set(4)
    live = session(preview, ob)
    live.bound.wig.step = lambda *a, **k: 1 / 0                  # a failure inside the step
    scene.frame_set(9)
    assert not preview.is_previewing(ob) and not ob.hair_wig.use_live_dynamics
    text = preview.status(ob)
    assert text.startswith("'Hair': live dynamics stopped at frame 9") and "division by zero" in text
    assert np.array_equal(positions(ob), rest)
    scene.frame_set(12)                                           # the scene plays on
    assert scene.frame_current == 12 and np.array_equal(positions(ob), rest)


def test_quick_fur_on_a_bent_head_shows_live_as_its_bake_plays(glue):
    """Blender's Quick Fur stack (it carries the hair with the skin, children grown from the
    guides) on an armature-bent head with a dynamic magnet: what Blender evaluates while Live
    Dynamics plays — guides and children — is what it evaluates from the bake of those frames
    (the live positions handed to the stack in the skin's rest space, as the bake stores them)."""
    import grooms
    from tolerance import magnitude, rounding

    baking, io, _, preview = glue
    g = grooms.quick_fur("LOW")
    scene, ob = bpy.context.scene, g.hair
    scene.frame_start, scene.frame_end = 1, 12

    def evaluated(f):
        scene.frame_set(f)
        return io.read_evaluated_points(ob, bpy.context.evaluated_depsgraph_get()).astype(np.float64)

    rest = evaluated(1)
    ob.hair_wig.use_live_dynamics = True
    live = {f: evaluated(f) for f in (1, 6, 12)}
    session = preview._previews[ob.session_uid].live
    assert preview.is_live(ob) and session.skin
    cached = {f: session.cache.shown(f).copy() for f in live}
    ob.hair_wig.use_live_dynamics = False
    np.testing.assert_array_equal(evaluated(1), rest)
    assert not ob.hair_wig.rest_captured and ob.hair_wig.rest_frame == 1
    scratch = baking.compute(bpy.context, ob, 1, 12)              # the wig's own frames, bit for bit
    for f, pts in cached.items():
        np.testing.assert_array_equal(pts, scratch.frame(f), err_msg=f"frame {f}")
    bpy.context.view_layer.objects.active = ob
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    assert np.abs(live[12] - rest).max() > 0.05                   # the head bent: the fur went with it
    for f, pts in live.items():
        # the same float32 positions through the same stack; the bake's playback blends its
        # stored frame with the next by a weight of 0 (2 roundings of |x|), and the stack's
        # children are computed from guides that differ by that much: its interpolation's
        # weighted sum and its noise's offset each round their inputs' difference apart once
        # more (2 roundings: 4 in all; measured on 4.5, one child point 2.04 roundings apart)
        np.testing.assert_allclose(pts, evaluated(f), rtol=0, atol=rounding(magnitude(pts), 4), err_msg=f"frame {f}")


def quick_fur_at_rest():
    """Quick Fur (low density) on the bent head, frames 1..12, at frame 1: the scene and hair."""
    import grooms

    g = grooms.quick_fur("LOW")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 12
    scene.frame_set(1)
    return scene, g.hair


def test_a_live_frame_runs_the_hairs_own_stack_once_on_the_hair_it_shows(glue):
    """Blender evaluates a new frame, calls the frame-change handlers, then evaluates again what
    they changed: the hair's stack (Quick Fur's children, noise, frizz) runs only on the hair the
    live wig wrote, never on the frame before's. What a handler before ours sees is the hair with
    its modifiers off (no children grown); after the frame they are all back, the user's own
    switched-off modifier still off, and what Blender shows is what a fresh evaluation gives. A
    binding inside a frame change (the frame range changed) still reads the children it keeps
    room for."""
    _, io, _, preview = glue
    scene, ob = quick_fur_at_rest()
    ob.modifiers["Frizz Hair Curves"].show_viewport = False          # the user's own choice
    shown = [m.show_viewport for m in ob.modifiers]
    guides = len(ob.data.points)
    ob.hair_wig.use_live_dynamics = True
    first = []

    def before_ours(scene, depsgraph=None):
        first.append(([m.show_viewport for m in ob.modifiers],
                      len(io.read_evaluated_points(ob, bpy.context.evaluated_depsgraph_get()))))
    post = bpy.app.handlers.frame_change_post
    post.insert(0, before_ours)
    try:
        for f in (2, 3, 7, 4):
            scene.frame_set(f)
            assert [m.show_viewport for m in ob.modifiers] == shown, f
            now = io.read_evaluated_points(ob, bpy.context.evaluated_depsgraph_get()).copy()
            assert len(now) > 10 * guides                              # the children are shown
            ob.update_tag()                                            # evaluated afresh: the same
            np.testing.assert_array_equal(io.read_evaluated_points(ob, bpy.context.evaluated_depsgraph_get()), now)
        # every frame's first evaluation, the live wig's own steps to frame 7 among them
        assert len(first) >= 4 and all(f == ([False] * len(shown), guides) for f in first)
        wig = preview._previews[ob.session_uid].wig
        assert wig.walk.children is not None
        scene.frame_end = 11                                           # a new session, bound in the frame change
        scene.frame_set(5)
        assert preview._previews[ob.session_uid].wig is not wig
        assert preview._previews[ob.session_uid].wig.walk.children is not None
        assert [m.show_viewport for m in ob.modifiers] == shown
    finally:
        post.remove(before_ours)
        ob.hair_wig.use_live_dynamics = False


def test_a_live_frame_leaves_keyed_visibility_to_its_keys_and_a_cut_short_frame_is_mended(glue):
    """A modifier whose viewport visibility is keyed shows as its keys say, frame by frame. A
    frame whose handlers were cut short (a run-once handler before ours that removes itself makes
    Blender skip the next one) leaves the hair's modifiers off with their list on the object: the
    next frame change, stopping the preview, or loading a state that kept them off, switches them
    back on."""
    _, io, _, preview = glue
    scene, ob = quick_fur_at_rest()
    noise = ob.modifiers["Hair Curves Noise"]
    for f, on in ((1, True), (4, False), (6, True)):
        noise.show_viewport = on
        noise.keyframe_insert("show_viewport", frame=f)
    ob.hair_wig.use_live_dynamics = True
    try:
        for f in (2, 3, 4, 5, 6, 7, 5, 3):
            scene.frame_set(f)
            assert noise.show_viewport == (f < 4 or f >= 6), f
            assert all(m.show_viewport for m in ob.modifiers if m != noise), f
        shown = [m.show_viewport for m in ob.modifiers]

        def once(scene, depsgraph=None):
            bpy.app.handlers.frame_change_post.remove(once)
        bpy.app.handlers.frame_change_post.insert(0, once)
        scene.frame_set(8)                                             # ours skipped: left off
        assert not any(m.show_viewport for m in ob.modifiers if m != noise)
        assert io.MUTED_FOR_FRAME in ob
        scene.frame_set(9)                                             # the next frame mends it
        assert [m.show_viewport for m in ob.modifiers] == shown and io.MUTED_FOR_FRAME not in ob
        bpy.app.handlers.frame_change_post.insert(0, once)
        scene.frame_set(10)
        ob.hair_wig.use_live_dynamics = False                          # stopping mends it
        assert [m.show_viewport for m in ob.modifiers] == shown and io.MUTED_FOR_FRAME not in ob
        # a state loaded with them off and their list (saved before the frame was over)
        frizz = ob.modifiers["Frizz Hair Curves"]
        frizz.show_viewport = False
        ob[io.MUTED_FOR_FRAME] = [frizz.persistent_uid]
        io.restore_muted(bpy.data.objects)
        assert frizz.show_viewport and io.MUTED_FOR_FRAME not in ob
    finally:
        ob.hair_wig.use_live_dynamics = False


def test_a_modifier_that_simulates_after_the_wig_is_named_in_its_warnings(glue):
    """A geometry-nodes modifier holding a Simulation zone (Blender's own Hair Dynamics, which
    Quick Fur adds on 5.x) runs after the wig, on what it writes: the hair Blender shows moves
    twice. Binding the wig names each such modifier shown, in the warnings the bake reports and
    the panel shows; one switched off is not named."""
    from hair_wig_addon.operators import scene_reader

    scene, ob = quick_fur_at_rest()
    ng = bpy.data.node_groups.new("Sway", "GeometryNodeTree")
    ng.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    ng.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes = ng.nodes
    given, result = nodes.new("NodeGroupInput"), nodes.new("NodeGroupOutput")
    zone_in, zone_out = nodes.new("GeometryNodeSimulationInput"), nodes.new("GeometryNodeSimulationOutput")
    zone_in.pair_with_output(zone_out)
    ng.links.new(given.outputs[0], zone_in.inputs["Geometry"])
    ng.links.new(zone_in.outputs["Geometry"], zone_out.inputs["Geometry"])
    ng.links.new(zone_out.outputs["Geometry"], result.inputs[0])
    sway = ob.modifiers.new("Sway", "NODES")
    sway.node_group = ng

    def named():
        return {m for m in ob.modifiers if any(f"'{m.name}' simulates '{ob.name}'" in w
                                               for w in scene_reader.bind(bpy.context, ob).warnings)}
    dynamics = {m for m in ob.modifiers if m.name.startswith("Hair Dynamics")}      # Quick Fur's, on 5.x
    assert named() == {sway} | dynamics
    for m in (sway, *dynamics):
        m.show_viewport = m.show_render = False
    assert named() == set()


def test_sculpt_mode_gets_the_groom_before_a_stroke(glue):
    """Into Sculpt Mode with Live Dynamics showing frame 8: the groom is back at once (a stroke
    must never land on a shown pose), and back in object mode playing starts it again."""
    _, _, _, preview = glue
    scene, head, ob, rest = live_wig()
    ob.hair_wig.use_live_dynamics = True
    scene.frame_set(8)
    assert not np.array_equal(positions(ob), rest)
    bpy.ops.object.mode_set(mode="SCULPT_CURVES")
    bpy.context.view_layer.update()
    assert not preview.is_previewing(ob) and np.array_equal(positions(ob), rest)
    bpy.ops.object.mode_set(mode="OBJECT")
    scene.frame_set(9)
    assert preview.is_live(ob) and not np.array_equal(positions(ob), rest)


def test_what_the_playhead_does_not_read_is_still_noticed_and_bake_checks_every_frame_it_takes(glue):
    """Changes away from the frame shown: a Wind field added at frame 0 (before the range), a key
    added at frame 12 to the empty the head copies its turn from (a constraint's target) while at
    frame 2, a magnet hidden from the viewport. Each outdates what it affects, and Bake then
    equals a bake from scratch bit for bit."""
    baking, io, _, preview = glue
    scene, head, ob, rest = live_wig()
    ctrl = bpy.data.objects.new("Ctrl", None)
    scene.collection.objects.link(ctrl)
    ctrl.keyframe_insert("rotation_euler", frame=1)
    ctrl.rotation_euler.z = 0.8
    ctrl.keyframe_insert("rotation_euler", frame=8)
    head.constraints.new("COPY_ROTATION").target = ctrl
    scene.frame_set(1)
    ob.hair_wig.use_live_dynamics = True
    live = session(preview, ob)
    play(scene, ob, range(1, N + 1))
    scene.frame_set(0)
    bpy.ops.object.effector_add(type="WIND", location=(0, -3, 0), rotation=(-1.5708, 0, 0))
    bpy.context.active_object.field.strength = 200.0
    bpy.context.view_layer.update()
    # a field: every frame; frame 0 shows the first frame, computed again, the rest gone
    assert live.cache.last == 1 and live.cache.outdated is None and live.stepper.steps > N
    play(scene, ob, range(1, N + 1))
    scene.frame_set(2)
    ctrl.rotation_euler.z = -0.5
    ctrl.keyframe_insert("rotation_euler", frame=12)
    bpy.context.view_layer.update()
    assert 8 <= live.cache.outdated <= 12                         # from where the new key's curve departs
    play(scene, ob, range(1, N + 1))
    bpy.context.view_layer.objects.active = ob
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    _, baked, _ = io.read_bake(ob)
    assert bpy.ops.hair_wig.clear_bake() == {"FINISHED"}
    ob.hair_wig.use_live_dynamics = False
    np.testing.assert_array_equal(baked, fresh(baking, ob).positions)


def test_bake_takes_no_frame_whose_input_changed_unseen(glue, monkeypatch):
    """A change the live view does not see (here: its checks switched off, the scene's gravity
    set): Bake reads each cached frame's input again and computes from the first that differs."""
    baking, io, frames, preview = glue
    from hair_wig_addon.operators import live as live_module

    scene, head, ob, rest = live_wig()
    ob.hair_wig.use_live_dynamics = True
    play(scene, ob, range(1, N + 1))
    monkeypatch.setattr(live_module.Session, "check", lambda *a, **k: None)
    scene.gravity = (0.0, 0.0, -3.0)
    bpy.context.view_layer.update()
    assert session(preview, ob).cache.last_current == N           # unseen: the frames look current
    computed, baked = bake_counting(monkeypatch, frames, io, ob)
    assert computed == list(range(1, N + 1))
    assert bpy.ops.hair_wig.clear_bake() == {"FINISHED"}
    ob.hair_wig.use_live_dynamics = False
    np.testing.assert_array_equal(baked, fresh(baking, ob).positions)


def test_after_a_bake_is_cleared_live_dynamics_plays_again_and_a_disk_bake_leaves_none_running(glue, tmp_path):
    _, io, _, preview = glue
    scene, head, ob, rest = live_wig()
    ob.hair_wig.use_live_dynamics = True
    scene.frame_set(4)
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    scene.frame_set(5)
    assert not preview.is_live(ob) and "is baked" in preview.status(ob)
    assert bpy.ops.hair_wig.clear_bake() == {"FINISHED"}
    scene.frame_set(6)
    assert preview.is_live(ob) and "cached" in preview.status(ob)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "disk.blend"))
    ob = bpy.data.objects["Hair"]
    bpy.context.view_layer.objects.active = ob
    assert bpy.ops.hair_wig.bake_to_disk() == {"FINISHED"}
    assert not preview.is_live(ob) and ".hair_wig_rest" not in ob.data.attributes
    np.testing.assert_array_equal(positions(ob), rest)
    scene.frame_set(7)
    assert not preview.is_live(ob) and "is baked" in preview.status(ob)


def test_an_edit_past_the_range_keeps_the_playhead_where_it_is(glue):
    _, _, _, preview = glue
    scene, head, ob, rest = live_wig()
    ob.hair_wig.use_live_dynamics = True
    scene.frame_set(N + 4)
    ob.hair_wig.strands_links = 3
    bpy.context.view_layer.update()
    scene.frame_set(N + 4)
    assert scene.frame_current == N + 4 and preview.is_live(ob)


def test_a_hidden_magnet_is_named_and_bake_computes_anew(glue, monkeypatch):
    """A magnet disabled in viewports: Blender does not move it, so live dynamics cannot; the panel
    names it, and Bake (which moves it) takes no frame of the cache."""
    baking, io, frames, preview = glue
    scene, head, ob, rest = live_wig()
    magnet = scenes.keyed_magnet(ob, "Pull", (0.0, -1.2, 0.6), (0.0, -0.4, 0.0), (1, 8), radius=0.8)
    magnet.hide_viewport = True
    ob.hair_wig.use_live_dynamics = True
    play(scene, ob, range(1, N + 1))
    assert any("magnet 'Pull' is disabled in viewports" in w for w in preview.live_warnings(ob))
    computed, baked = bake_counting(monkeypatch, frames, io, ob)
    assert computed == list(range(1, N + 1))


@pytest.mark.skipif(not hasattr(__import__("gpu"), "init"),
                    reason="this Blender's bpy cannot draw in background mode (gpu.init arrived in 5.x)")
def test_the_timeline_strip_is_drawn_bright_then_dim_along_the_bottom():
    """Drawn for real (offscreen, in a process of its own), 10 pixels a frame: frames 1–6 bright
    from x 5 to 65, 7–10 dim to 105, HEIGHT pixels high, nothing above or beyond."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from hair_wig_addon.panels import timeline

    probe = Path(__file__).with_name("timeline_probe.py")
    run = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    alpha = np.array(json.loads(next(l for l in run.stdout.splitlines() if l.startswith("REPORT "))[7:])["alpha"])
    bright, dim = timeline.COLORS["current"][3], timeline.COLORS["outdated"][3]
    h = timeline.HEIGHT
    np.testing.assert_allclose(alpha[:h, 6:64], bright, atol=0.02)        # pixel centres inside
    np.testing.assert_allclose(alpha[:h, 66:104], dim, atol=0.02)
    assert not alpha[h + 1:].any() and not alpha[:, :4].any() and not alpha[:, 106:].any()
