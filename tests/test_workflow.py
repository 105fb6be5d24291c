"""The animator's workflow through bpy.ops: magnets, rest pose, modal bake with cancel and
pre-roll, undo (real bpy)."""

import bpy
import numpy as np
import pytest
import scenes
from tolerance import AFFINE, magnitude, rounding


@pytest.fixture
def glue(addon):
    from hair_wig_addon.operators import baking, blender_io
    return baking, blender_io


def wig_scene(surface=True):
    bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0)
    head = bpy.context.active_object
    head.name = "Head"
    ob, pts = scenes.wig_on(head if surface else None, 60, 8)
    ob.hair_wig.use_collision = ob.hair_wig.use_length = False
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 12
    return ob, head, pts


def footprint(ob):
    """Everything a bake could add to the scene."""
    return (sorted(a.name for a in ob.data.attributes), [m.name for m in ob.modifiers],
            sorted(bpy.data.node_groups.keys()), sorted(bpy.data.actions.keys()),
            bpy.context.scene.frame_current, ob.get("_hair_wig_bake") is not None)


def test_add_magnet_at_cursor_rides_on_head_and_captures_rest(scene, glue):
    baking, io = glue
    ob, head, _ = wig_scene()
    scene.cursor.location = (0.3, -0.2, 1.4)
    assert bpy.ops.hair_wig.add_magnet(radius=0.8) == {"FINISHED"}
    s = ob.hair_wig
    (slot,) = s.magnets
    m = slot.object
    # (stored float32 properties: one rounding of 0.8, well inside approx's 1e-6)
    assert m.parent == head and m.empty_display_size == pytest.approx(0.8)
    assert m.hair_wig_magnet.radius == pytest.approx(0.8)
    # the cursor stored as the Empty's float32 location (1), under its parent's world matrix and
    # parent inverse (Blender's float32 products: 7 each), coordinates up to |cursor|
    placed = rounding(magnitude(scene.cursor.location), 1 + 2 * AFFINE)
    np.testing.assert_allclose(m.matrix_world.translation, (0.3, -0.2, 1.4), atol=placed)
    assert s.rest_captured and m.hair_wig_magnet.has_rest and s.magnet_index == 0
    # the head's and the magnet's float32 world matrices (7 each) composed here and by the
    # add-on (float64), the rest matrix stored as float32 (1): of the largest entry
    rest = np.linalg.inv(np.array(head.matrix_world)) @ np.array(m.matrix_world)
    np.testing.assert_allclose(io.stored_matrix(m.hair_wig_magnet, "rest_matrix"), rest,
                               atol=rounding(magnitude(rest), 2 * AFFINE + 1))
    assert bpy.context.active_object == ob          # the wig stays active: its panel stays up
    assert bpy.ops.hair_wig.add_magnet(place="CENTROID", space="WORLD", dynamic=True) == {"FINISHED"}
    second = s.magnets[1].object
    # the mean in float64, as the add-on takes it (a float32 mean's rounding depends on the
    # order numpy sums in); the centre stored as a float32 location (1) and turned into the
    # Empty's world matrix (7), of |centre|
    centre = np.array(ob.matrix_world) @ np.append(io.read_hair(ob).points.astype(np.float64).mean(axis=0), 1)
    np.testing.assert_allclose(second.matrix_world.translation, centre[:3],
                               atol=rounding(magnitude(centre[:3]), 1 + AFFINE))
    assert second.parent is None and second.hair_wig_magnet.dynamic and s.magnet_index == 1


def test_remove_select_delete_and_rename(scene, glue):
    baking, _ = glue
    ob, head, _ = wig_scene()
    for _ in range(3):
        bpy.ops.hair_wig.add_magnet()
    s = ob.hair_wig
    names = [slot.object.name for slot in s.magnets]
    s.magnet_index = 1
    assert bpy.ops.hair_wig.select_magnet() == {"FINISHED"}
    assert bpy.data.objects[names[1]].select_get() and bpy.context.active_object == ob
    assert bpy.ops.hair_wig.remove_magnet() == {"FINISHED"}
    assert [slot.object.name for slot in s.magnets] == [names[0], names[2]]
    assert names[1] in bpy.data.objects                     # only taken off the wig
    s.magnet_index = 0
    assert bpy.ops.hair_wig.remove_magnet(delete_object=True) == {"FINISHED"}
    assert names[0] not in bpy.data.objects and len(s.magnets) == 1
    bpy.data.objects.remove(bpy.data.objects[names[2]])     # deleted in the outliner
    bpy.context.view_layer.update()
    assert len(s.magnets) == 0 and bpy.ops.hair_wig.remove_magnet.poll() is False
    bpy.ops.hair_wig.add_magnet()
    s.magnets[0].object.name = "Renamed Magnet"             # renaming is safe
    assert baking.compute(bpy.context, ob, 1, 3).num_frames == 3


def test_no_surface_no_head_is_reported_and_changes_nothing(scene, glue):
    ob, _, _ = wig_scene(surface=False)
    assert ob.hair_wig.head is None
    assert bpy.ops.hair_wig.add_magnet.poll() is False
    before = footprint(ob)
    with pytest.raises(RuntimeError, match="'Hair' has no head"):
        bpy.ops.hair_wig.bake()
    with pytest.raises(RuntimeError, match="'Hair' has no head"):
        bpy.ops.hair_wig.set_rest_pose()
    assert footprint(ob) == before


def test_set_rest_pose_is_kept_when_keys_change(scene, glue):
    baking, _ = glue
    ob, head, pts = wig_scene()
    bpy.ops.hair_wig.add_magnet(radius=100.0)
    m = ob.hair_wig.magnets[0].object
    m.hair_wig_magnet.multiplier = 2.0                        # full weight everywhere ('cap')
    m.keyframe_insert("location", frame=1)
    m.location.x += 0.4
    m.keyframe_insert("location", frame=12)
    scene.frame_set(1)
    assert bpy.ops.hair_wig.set_rest_pose() == {"FINISHED"}
    m.location.x -= 1.0                                       # re-key frame 1 after setting the rest
    m.keyframe_insert("location", frame=1)
    cache = baking.compute(bpy.context, ob, 1, 12)
    t = np.tile(np.linspace(0, 1, 8), 60)[:, None]
    np.testing.assert_allclose(cache.frame(12), pts + t * [0.4, 0, 0], atol=pulled(pts, 0.4))
    np.testing.assert_allclose(cache.frame(1), pts + t * [-1.0, 0, 0], atol=pulled(pts, 1.0))


def pulled(pts, move):
    """How far a bake can round where a full-weight magnet moves the hair by ``move`` scaled by
    the flex profile: the flex, a straight line read from Blender's curve table (8 roundings of
    1, times the move), and the blend and G p (9 roundings of coordinates up to |x|, the move's
    included). A wrong flex or weight is off by centimetres."""
    return rounding(magnitude(pts) + move, 9) + rounding(move, 8)


def test_bake_job_cancel_leaves_scene_exactly_as_before(scene, glue):
    baking, io = glue
    ob, head, pts = wig_scene()
    bpy.ops.hair_wig.add_magnet()
    ob.hair_wig.use_secondary = True
    scene.frame_set(7)
    io.write_bake(ob, io.BakeCache.from_positions(io.read_hair(ob), 1, np.repeat(pts[None], 3, 0)))
    before = footprint(ob)
    job = baking.BakeJob(bpy.context, [ob])
    assert job.total == 12 and not job.advance(5) and job.done == 5
    assert scene.frame_current == 5
    job.cancel()
    assert footprint(ob) == before and io.bake_range(ob) == (1, 3)
    job = baking.BakeJob(bpy.context, [ob])
    assert job.advance(100) and job.finish() == 12
    assert io.bake_range(ob) == (1, 12) and scene.frame_current == 7


def test_invoke_in_background_bakes_and_undo_redo(scene, glue):
    _, io = glue
    ob, head, pts = wig_scene()
    bpy.ops.hair_wig.add_magnet()
    bpy.ops.ed.undo_push(message="before bake")
    # undo=True: push an undo step as a call from the UI does
    assert bpy.ops.hair_wig.bake("INVOKE_DEFAULT", True) == {"FINISHED"}
    assert io.is_baked(bpy.data.objects["Hair"])
    bpy.ops.ed.undo()
    hair = bpy.data.objects["Hair"]
    assert not io.is_baked(hair) and len(hair.modifiers) == 0
    assert not [a for a in hair.data.attributes if a.name.startswith(io.BAKE_PREFIX)]
    bpy.ops.ed.redo()
    hair = bpy.data.objects["Hair"]
    assert io.is_baked(hair)
    bpy.context.view_layer.objects.active = hair
    assert bpy.ops.hair_wig.clear_bake("EXEC_DEFAULT", True) == {"FINISHED"}
    assert not io.is_baked(bpy.data.objects["Hair"])
    bpy.ops.ed.undo()
    assert io.is_baked(bpy.data.objects["Hair"])


def test_preroll_lets_dynamics_settle_before_the_first_frame(scene, glue):
    baking, _ = glue
    ob, head, pts = wig_scene()
    bpy.ops.hair_wig.add_magnet(radius=100.0, dynamic=True)
    m = ob.hair_wig.magnets[0].object
    m.hair_wig_magnet.multiplier = 2.0
    m.hair_wig_magnet.stiffness, m.hair_wig_magnet.damping = 30.0, 1.0
    for f, x in ((-20, 0.0), (-10, 0.6), (1, 0.6)):             # a move that ends before frame 1
        m.location.x = x
        m.keyframe_insert("location", frame=f)
    scene.frame_set(-20)
    bpy.ops.hair_wig.set_rest_pose()
    cold = baking.compute(bpy.context, ob, 1, 4, preroll=0)
    ob.hair_wig.preroll = 20
    warm = baking.compute(bpy.context, ob, 1, 4)
    t = np.tile(np.linspace(0, 1, 8), 60)[:, None]
    np.testing.assert_allclose(cold.frame(1), pts + t * [0.6, 0, 0], atol=pulled(pts, 0.6))   # starts at rest on its target
    assert np.abs(warm.frame(1) - cold.frame(1)).max() > 1e-3                    # still swinging
    assert scene.frame_current == -20


def test_keyed_weight_and_dynablend_act_per_frame(scene, glue):
    baking, _ = glue
    ob, head, pts = wig_scene()
    bpy.ops.hair_wig.add_magnet(radius=100.0)
    m = ob.hair_wig.magnets[0].object
    ms = m.hair_wig_magnet
    ms.multiplier = 2.0                                         # full pull ('cap') when bound
    m.location.x += 0.5                                         # moved from its rest
    ms.keyframe_insert("multiplier", frame=1)
    ms.multiplier = 0.0                                         # faded out by frame 5
    ms.keyframe_insert("multiplier", frame=5)
    scene.frame_set(1)
    cache = baking.compute(bpy.context, ob, 1, 5)
    t = np.tile(np.linspace(0, 1, 8), 60)[:, None]
    np.testing.assert_allclose(cache.frame(1), pts + t * [0.5, 0, 0], atol=pulled(pts, 0.5))
    np.testing.assert_allclose(cache.frame(3), pts + t * [0.25, 0, 0], atol=pulled(pts, 0.5))   # half the weight
    np.testing.assert_allclose(cache.frame(5), pts, atol=pulled(pts, 0.5))
    ms.multiplier = 2.0
    ms.keyframe_delete("multiplier", frame=1)
    ms.keyframe_delete("multiplier", frame=5)
    ms.dynamic = True
    ms.dynablend = 0.0
    ms.keyframe_insert("dynablend", frame=1)
    ms.dynablend = 1.0
    ms.keyframe_insert("dynablend", frame=4)
    m.keyframe_insert("location", frame=1)
    m.location.z += 1.0
    m.keyframe_insert("location", frame=3)
    lagging = baking.compute(bpy.context, ob, 1, 4)
    ms.dynamic = False
    simple = baking.compute(bpy.context, ob, 1, 4)
    # dynablend 0, and at the first frame a dynamic magnet starts on its target: the same
    # motions through the same code, the same bits
    np.testing.assert_array_equal(lagging.frame(1), simple.frame(1))
    assert np.abs(lagging.frame(4) - simple.frame(4)).max() > 1e-3                  # dynablend 1


def modifier_states(*obs):
    return [(ob.name, m.name, m.persistent_uid, m.show_viewport, m.show_render, m.show_in_editmode)
            for ob in obs for m in ob.modifiers]


def test_the_hairs_modifiers_are_off_while_a_bake_computes_and_back_as_they_were(scene, glue):
    """A bake never reads what the hair's modifiers make, so they do not evaluate at every frame
    while it computes; they come back exactly as they were after a bake, a cancel and an error,
    and the bake is the same as with no modifiers at all. A Bake All Wigs keeps every wig's
    modifiers off while any of them computes."""
    baking, io = glue
    ob, head, pts = wig_scene()
    bpy.ops.hair_wig.add_magnet()
    magnet = ob.hair_wig.magnets[0].object
    magnet.keyframe_insert("location", frame=1)
    magnet.location.x += 0.3
    magnet.keyframe_insert("location", frame=12)
    plain = baking.compute(bpy.context, ob, 1, 12)
    other, _ = scenes.wig_on(head, 10, 4, name="Other Hair")
    lift = bpy.data.node_groups.new("Lift", "GeometryNodeTree")     # moves every point 1 up
    lift.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    lift.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    gi, go, move = (lift.nodes.new(t) for t in ("NodeGroupInput", "NodeGroupOutput", "GeometryNodeTransform"))
    move.inputs["Translation"].default_value = (0.0, 0.0, 1.0)
    lift.links.new(gi.outputs[0], move.inputs[0])
    lift.links.new(move.outputs[0], go.inputs[0])
    for hair in (ob, other):
        hair.modifiers.new("Lift", "NODES").node_group = lift
        hair.modifiers.new("Off Already", "NODES").show_viewport = False
        hair.modifiers.new("Render Off", "NODES").show_render = False
    before = modifier_states(ob, other)
    seen = []

    def watch(done, total):
        seen.append([m.show_viewport for h in (ob, other) for m in h.modifiers])
        if len(seen) == 4 and watch.fail:
            raise RuntimeError("stop at frame 4")

    watch.fail = False
    cache = baking.compute(bpy.context, ob, 1, 12, watch, others=[ob, other])
    assert len(seen) == 12 and not any(any(s) for s in seen)
    assert modifier_states(ob, other) == before
    assert np.array_equal(cache.positions, plain.positions)
    watch.fail = True
    seen.clear()
    with pytest.raises(RuntimeError, match="stop at frame 4"):
        baking.compute(bpy.context, ob, 1, 12, watch)
    assert modifier_states(ob, other) == before
    job = baking.BakeJob(bpy.context, [ob, other])
    job.advance(5)
    assert not any(m.show_viewport for h in (ob, other) for m in h.modifiers)
    job.cancel()
    assert modifier_states(ob, other) == before
    assert job.__class__(bpy.context, [ob, other]).advance(100)
    assert modifier_states(ob, other) == before


def _panel_labels(ob):
    """The texts the sidebar's panels would show for ``ob`` (drawn into a recording layout)."""
    from hair_wig_addon.panels import sidebar

    texts = []

    class Layout:
        use_property_split = active = enabled = True

        def label(self, text="", **_kw):
            texts.append(text)

        def __getattr__(self, _name):
            return lambda *a, **k: self

    bpy.context.view_layer.objects.active = ob
    for cls in sidebar.classes:
        if issubclass(cls, bpy.types.Panel) and cls.poll(bpy.context):
            cls.draw(type("PanelSelf", (), {"layout": Layout()})(), bpy.context)
    return texts


def test_follow_skin_without_a_uv_map_says_so_in_the_panel_and_the_bake(scene, glue):
    """A head without a UV map: Follow Skin cannot place the roots on the skin. The panel says so
    under the checkbox, the bake reports it by name (and bakes, following the head), and once the
    hair's surface has a UV map and root UVs both go quiet."""
    baking, io = glue
    bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0, calc_uvs=False)
    head = bpy.context.active_object
    head.name = "Head"
    assert len(head.data.uv_layers) == 0
    ob, _ = scenes.wig_on(head, 20, 6)
    assert ob.hair_wig.use_scalp
    assert "Follow Skin: 'Head' has no UV map set" in _panel_labels(ob)
    cache = baking.compute(bpy.context, ob, 1, 2)
    assert any("'Head'" in w and "no UV map" in w and "follows the head only" in w for w in cache.warnings)
    ob.hair_wig.use_scalp = False
    assert not any("Follow Skin" in t for t in _panel_labels(ob))
    assert not baking.compute(bpy.context, ob, 1, 2).warnings
    ob.hair_wig.use_scalp = True
    head.data.uv_layers.new(name="UVMap")
    ob.data.surface_uv_map = "UVMap"
    assert "Follow Skin: the roots have no surface UVs" in _panel_labels(ob)
    ob.data.attributes.new("surface_uv_coordinate", "FLOAT2", "CURVE")
    assert not any("Follow Skin" in t for t in _panel_labels(ob))
    assert not baking.compute(bpy.context, ob, 1, 2).warnings


def test_a_magnet_moves_the_hair_whether_or_not_it_is_shown(scene, glue):
    """Artists hide helper Empties before baking. A keyed magnet disabled in viewports, or only in
    an excluded collection, bakes exactly as when shown (Blender does not evaluate it, so the bake
    has it evaluated meanwhile and puts everything back); the live preview, which cannot, names it.
    A magnet whose parent is scaled to zero is named in the bake's warnings."""
    baking, io = glue
    from hair_wig_addon.operators import scene_reader

    ob, head, m = scenes.keyed_wig(frames=(1, 8), head_turn=False)
    ob.hair_wig.use_scalp = False          # straight test hair has no root UVs to follow the skin by
    shown = baking.compute(bpy.context, ob, 1, 8)
    moved = np.abs(shown.frame(8) - shown.frame(1)).max()
    assert moved > 0.05 and not shown.warnings
    m.hide_viewport = True
    assert scene_reader.hidden_magnet_warnings(bpy.context, ob)
    hidden = baking.compute(bpy.context, ob, 1, 8)
    assert np.array_equal(hidden.frame(8), shown.frame(8))
    assert m.hide_viewport and [c.name for c in m.users_collection] == [scene.collection.name]
    m.hide_viewport = False
    helpers = bpy.data.collections.new("Helpers")
    scene.collection.children.link(helpers)
    helpers.objects.link(m)
    scene.collection.objects.unlink(m)
    bpy.context.view_layer.layer_collection.children["Helpers"].exclude = True
    assert "magnet 'Magnet Hair'" in scene_reader.hidden_magnet_warnings(bpy.context, ob)[0]
    excluded = baking.compute(bpy.context, ob, 1, 8)
    assert np.array_equal(excluded.frame(8), shown.frame(8))
    assert [c.name for c in m.users_collection] == ["Helpers"]
    assert bpy.context.view_layer.layer_collection.children["Helpers"].exclude
    bpy.context.view_layer.layer_collection.children["Helpers"].exclude = False
    assert not scene_reader.hidden_magnet_warnings(bpy.context, ob)
    controller = bpy.data.objects.new("Controller", None)
    scene.collection.objects.link(controller)
    world = m.matrix_world.copy()
    m.parent = controller
    m.matrix_world = world
    controller.keyframe_insert("scale", frame=4)
    controller.scale = (0, 0, 0)
    controller.keyframe_insert("scale", frame=5)
    flat = baking.compute(bpy.context, ob, 1, 8)
    assert any("magnet 'Magnet Hair' is scaled to nothing at frame 5" in w for w in flat.warnings)


def _baked(io, ob):
    return io.read_bake(ob)[1]


def test_rebaking_a_few_frames_keeps_the_rest_and_equals_a_whole_rebake_there(scene, glue):
    """Issue 14 part 10: frames 5..8 re-baked after a magnet's key changed there equal those of
    a whole re-bake bit for bit (a dynamic magnet, secondary springs, collision: state carried
    from the bake's start); frames 1..4 and 9..12 are the old bake's; with nothing changed, the
    whole bake comes back bit for bit."""
    _, io = glue
    ob, head, pts = wig_scene()
    ob.hair_wig.use_secondary = True
    ob.hair_wig.use_collision = True
    ob.hair_wig.preroll = 3
    m = scenes.keyed_magnet(ob, "Swing", (0.0, 0.0, 1.1), (0.4, 0.0, 0.0), (1, 12), 0.8,
                            dynamic=(40.0, 2.0, 1.0), back=True)
    bpy.context.view_layer.objects.active = ob
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    old = _baked(io, ob)
    assert bpy.ops.hair_wig.rebake_frames(frame_start=5, frame_end=8, after="KEEP") == {"FINISHED"}
    assert io.bake_range(ob) == (1, 12)
    assert np.array_equal(_baked(io, ob), old)                       # nothing changed: same bits
    m.location = (0.0, 0.3, 1.1)                                     # a new key in the sub-range
    m.keyframe_insert("location", frame=6)
    assert bpy.ops.hair_wig.rebake_frames(frame_start=5, frame_end=8, after="KEEP") == {"FINISHED"}
    assert io.outdated(ob) == [(9, 12)]                          # made by the dynamics as they ran
    patched = _baked(io, ob)
    paths = io.read_bake(ob)[2]["Swing"]
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    whole = _baked(io, ob)
    assert np.abs(whole[4:8] - old[4:8]).max() > 1e-3                # the key did change them
    assert np.array_equal(patched[4:8], whole[4:8])
    assert np.array_equal(patched[:4], old[:4]) and np.array_equal(patched[8:], old[8:])
    assert np.array_equal(paths[4:8], io.read_bake(ob)[2]["Swing"][4:8])
    assert not io.outdated(ob)                                       # a whole bake is current
    # Issue 34 part 5: the panel's default carries the change on to the bake's end, so the
    # frames after the range are what a whole re-bake makes; Clear ends the bake there
    m.location = (0.0, -0.3, 1.1)
    m.keyframe_insert("location", frame=7)
    assert bpy.ops.hair_wig.rebake_frames(frame_start=5, frame_end=8) == {"FINISHED"}
    carried = _baked(io, ob)
    assert io.bake_range(ob) == (1, 12) and not io.outdated(ob)
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    assert np.array_equal(carried, _baked(io, ob))
    assert bpy.ops.hair_wig.rebake_frames(frame_start=5, frame_end=8, after="CLEAR") == {"FINISHED"}
    assert io.bake_range(ob) == (1, 8) and np.array_equal(_baked(io, ob), carried[:8])
    # past the bake's end, the bake grows; its frames before the range stay
    assert bpy.ops.hair_wig.rebake_frames(frame_start=10, frame_end=12) == {"FINISHED"}
    assert io.bake_range(ob) == (1, 12) and np.array_equal(_baked(io, ob), carried)
    assert bpy.ops.hair_wig.clear_bake() == {"FINISHED"}
    with pytest.raises(RuntimeError, match="no bake yet"):
        bpy.ops.hair_wig.rebake_frames(frame_start=5, frame_end=8)


def test_a_magnet_whose_reach_follows_it_sweeps_through_grass(scene, glue):
    """Issue 14 part 2: a magnet keyed to sweep through a patch of grass from outside it. Bound
    at rest (the default) it reaches no blade and says so; with Reach = Follows Magnet it bends
    the blades it passes — along its motion over the last Trail frames — and leaves every blade
    exactly as groomed once it has stopped beyond them."""
    baking, io = glue
    bpy.ops.mesh.primitive_plane_add(size=4.0)
    ground = bpy.context.active_object
    ground.name = "Ground"
    g = np.linspace(-1.5, 1.5, 20)
    x, y = np.meshgrid(g, g)
    z = np.linspace(0.0, 0.3, 4)
    pts = np.stack(np.broadcast_arrays(x.reshape(-1, 1), y.reshape(-1, 1), z[None]), -1).reshape(-1, 3)
    ob = scenes.curves_hair("Grass", pts, [4] * 400)
    bpy.context.view_layer.objects.active = ob
    bpy.ops.hair_wig.enable()
    s = ob.hair_wig
    s.head = ground
    s.use_scalp = s.use_collision = False
    m = scenes.keyed_magnet(ob, "Hand", (-3.0, 0.0, 0.15), (6.0, 0.0, 0.0), (1, 40), 0.4)
    scene.frame_start, scene.frame_end = 1, 26
    groom = io.read_hair(ob).points

    def moved(cache, f):
        return np.linalg.norm(cache.frame(f) - groom, axis=1).reshape(400, 4).max(axis=1)

    at_rest = baking.compute(bpy.context, ob, 1, 26)
    assert max(moved(at_rest, f).max() for f in range(1, 27)) == 0.0
    assert any("reaches no hair at its rest pose" in w for w in at_rest.warnings)
    m.hair_wig_magnet.reach = "FOLLOW"
    m.hair_wig_magnet.trail = 4
    follow = baking.compute(bpy.context, ob, 1, 26)
    assert not any("reaches no hair" in w for w in follow.warnings)
    swept = np.zeros(400, bool)
    for f in range(1, 21):
        swept |= moved(follow, f) > 1e-3
    assert swept.sum() > 40                                    # a lane of blades bent as it passed
    lane = np.abs(y.ravel()) < 0.3
    assert swept[lane].mean() > 0.8 and not swept[np.abs(y.ravel()) > 0.6].any()
    # along its way: the tips of blades it is passing lean in +x
    f = 12
    hand = np.array(scene.frame_set(f) or m.matrix_world.translation)
    near = np.linalg.norm(groom.reshape(400, 4, 3)[:, 3] - hand, axis=1) < 0.3
    assert near.any() and (follow.frame(f).reshape(400, 4, 3)[near, 3, 0] > groom.reshape(400, 4, 3)[near, 3, 0]).all()
    assert all(moved(follow, f).max() == 0.0 for f in range(21, 27))    # stopped beyond: as groomed
