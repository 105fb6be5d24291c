"""Reading hair from Blender and writing/clearing keyframed bakes (real bpy, no mocks)."""

import bpy
import numpy as np
import pytest
import scenes
from tolerance import magnitude, rounding


@pytest.fixture
def io(addon):
    from hair_wig_addon.operators import blender_io
    return blender_io


@pytest.fixture
def compat(addon):
    from hair_wig_addon.operators import compat
    return compat


@pytest.fixture
def core(addon):
    import hair_wig_addon.hair_wig as core
    return core


def float32_close(a, b, operations, slip=0.0):
    """``a`` (what Blender evaluated, float32 C++) within ``operations`` float32 roundings of
    ``b`` (numpy) at the data's magnitude, plus ``slip``: what an inexact blend fraction moves
    the points by."""
    tol = rounding(magnitude(b), operations) + slip
    return float(np.abs(a - b).max()) <= tol


# Blender's Mix (vector) s a + t b, s = 1 − t (3 roundings) against numpy's blend of the same
# two frames: 0.5 (a + b) (1) or 0.75 a + 0.25 b (3). The geometry-nodes bake keys its Frame
# input on every whole frame, so a quarter or a half frame's fraction is exact.
HALF, QUARTER = 3 + 1, 3 + 3


def legacy_slip(cache):
    """Absolute shape keys sit at 10, 20, ... (``kb.frame``, with float drift) and Blender
    blends the two around ``eval_time / 100`` by a fraction of differences of those float32
    positions: up to 4 roundings of (keys + 1) key spacings off, times how far the points move
    from one baked frame to the next (the blend's weights 1 − t, t: 4 more roundings of the
    points are counted by the caller)."""
    step = max((np.abs(cache.frame(f + 1) - cache.frame(f)).max() for f in cache.frames[:-1]), default=0.0)
    return rounding(cache.num_frames + 1, 4) * float(step)


def synthetic_cache(core, hair, first, frames, seed=0):
    """Per-frame positions that differ everywhere from frame to frame, known exactly."""
    rng = np.random.default_rng(seed)
    pos = hair.points[None] + rng.normal(0, 0.05, (frames, hair.num_points, 3)).astype(np.float32)
    pos += np.arange(frames, dtype=np.float32)[:, None, None] * np.float32(0.01)
    return core.BakeCache.from_positions(hair, first, pos)


def evaluated(io, ob, frame, subframe=0.0):
    bpy.context.scene.frame_set(frame, subframe=subframe)
    return io.read_evaluated_points(ob, bpy.context.evaluated_depsgraph_get())


def head_with_uvs(name="Head"):
    bpy.ops.mesh.primitive_uv_sphere_add(segments=16, ring_count=8)
    head = bpy.context.active_object
    head.name = name
    return head


# ------------------------------------------------------------------------------- reading

def test_read_curves_counts_positions_surface(scene, io):
    pts, counts = scenes.straight_strands(7, 5)
    counts = np.array([5, 5, 5, 5, 5, 5, 5])
    counts[2], counts[3] = 3, 7
    ob = scenes.curves_hair("Hair", pts, counts)
    head = head_with_uvs()
    cv = ob.data
    cv.surface = head
    cv.surface_uv_map = "UVMap"
    uv = np.random.default_rng(1).random((7, 2), dtype=np.float32)
    attr = cv.attributes.new("surface_uv_coordinate", "FLOAT2", "CURVE")
    attr.data.foreach_set("vector", uv.ravel())
    h = io.read_hair(ob)
    assert h.counts.tolist() == counts.tolist()
    assert np.array_equal(h.points, pts)
    assert np.array_equal(h.surface_uv, uv)
    assert h.name == "Hair" and h.selection is None
    from hair_wig_addon.operators.properties import head_of
    assert head_of(ob) == head
    ob.location = (1, 2, 3)
    head.rotation_euler = (0, 0, 0.5)
    bpy.context.view_layer.update()
    src = io.read_source(ob)
    assert np.array_equal(src.hair.points, pts) and src.surface == head and src.surface_uv_map == "UVMap"
    assert np.array_equal(src.matrix, np.array(ob.matrix_world))
    assert np.array_equal(src.surface_matrix, np.array(head.matrix_world))
    assert src.matrix[:3, 3].tolist() == [1, 2, 3]
    bare = io.read_source(scenes.legacy_hair("Legacy", pts[:10], [5, 5]))
    assert bare.surface is None and bare.surface_matrix is None and bare.hair.num_strands == 2


@pytest.mark.parametrize("domain, dtype", [("CURVE", "BOOLEAN"), ("POINT", "BOOLEAN"), ("POINT", "FLOAT")])
def test_read_curves_selection(scene, io, domain, dtype):
    pts, counts = scenes.straight_strands(4, 3)
    ob = scenes.curves_hair("Hair", pts, counts)
    a = ob.data.attributes.new("pick", dtype, domain)
    if domain == "CURVE":
        vals = np.array([1, 0, 1, 0], bool)
    else:   # strand 2 is picked by its tip only, strand 0 by its root
        vals = np.zeros(12, bool if dtype == "BOOLEAN" else np.float32)
        vals[0], vals[8] = 1, 1
    a.data.foreach_set("value", vals)
    h = io.read_hair(ob, "pick")
    assert h.selection.tolist() == [True, False, True, False]


def test_read_curves_errors_name_what_is_wrong(scene, io, core):
    pts, counts = scenes.straight_strands(2, 3)
    ob = scenes.curves_hair("Hair", pts, counts)
    with pytest.raises(core.HairWigError, match="'Hair' has no attribute 'nope'"):
        io.read_hair(ob, "nope")
    ob.data.attributes.new("vec", "FLOAT_VECTOR", "POINT")
    with pytest.raises(core.HairWigError, match="selection attribute 'vec' is FLOAT_VECTOR"):
        io.read_hair(ob, "vec")
    empty = scenes.link(bpy.data.objects.new("Bald", bpy.data.hair_curves.new("Bald")))
    with pytest.raises(core.HairWigError, match="'Bald' has no curves yet: add hair first"):
        io.read_hair(empty)
    single = scenes.curves_hair("Short", np.zeros((3, 3)), [2, 1])
    with pytest.raises(core.HairWigError, match="'Short': strand 1 has 1 point"):
        io.read_hair(single)
    mesh = head_with_uvs("Mesh")
    with pytest.raises(core.HairWigError, match="'Mesh' is a mesh object, not hair"):
        io.read_hair(mesh)


@pytest.mark.parametrize("kind", ["POLY", "NURBS", "BEZIER"])
def test_read_legacy_curves(scene, io, kind):
    pts, _ = scenes.straight_strands(5, 4, seed=2)
    counts = [4, 4, 4, 4, 4]
    ob = scenes.legacy_hair("Legacy", pts, counts, kind)
    h = io.read_hair(ob)
    assert h.counts.tolist() == counts
    assert np.array_equal(h.points, pts)
    _, _, handles = io._legacy_arrays(ob)
    assert (handles is not None) == (kind == "BEZIER")
    if handles is not None:
        left = np.array([bp.handle_left for sp in ob.data.splines for bp in sp.bezier_points], np.float32)
        assert np.array_equal(handles[0], left)


def test_read_legacy_rejects_mixed_and_empty(scene, io, core):
    ob = scenes.legacy_hair("Mixed", np.zeros((4, 3)), [2, 2], "POLY")
    sp = ob.data.splines.new("BEZIER")
    sp.bezier_points.add(1)
    with pytest.raises(core.HairWigError, match="'Mixed' mixes bezier splines"):
        io.read_hair(ob)
    cu = bpy.data.curves.new("Nothing", "CURVE")
    with pytest.raises(core.HairWigError, match="'Nothing' has no splines"):
        io.read_hair(scenes.link(bpy.data.objects.new("Nothing", cu)))


# ------------------------------------------------------------------------ curves round trip

def curves_scene(n=20, k=6):
    pts, counts = scenes.straight_strands(n, k)
    return scenes.curves_hair("Hair", pts, counts)


def test_curves_bake_plays_back_exactly(scene, io, core):
    ob = curves_scene()
    hair = io.read_hair(ob)
    cache = synthetic_cache(core, hair, 3, 8)
    io.write_bake(ob, cache)
    for f in cache.frames:
        assert np.array_equal(evaluated(io, ob, f), cache.frame(f)), f
    for f in range(3, 10):
        mid = 0.5 * (cache.frame(f) + cache.frame(f + 1))
        assert float32_close(evaluated(io, ob, f, 0.5), mid, HALF), f
    quarter = 0.75 * cache.frame(5) + 0.25 * cache.frame(6)
    assert float32_close(evaluated(io, ob, 5, 0.25), quarter, QUARTER)
    assert np.array_equal(evaluated(io, ob, -4), cache.frame(3))      # held before
    assert np.array_equal(evaluated(io, ob, 40), cache.frame(10))     # held after
    # The per-frame attributes stay out of the evaluated output, and out of the UI lists.
    geometry = ob.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
    names = [a.name for a in geometry.curves.attributes]
    assert not [n for n in names if "hw_bake" in n], names
    assert all(a.name.startswith(".") for a in ob.data.attributes if "hw_bake" in a.name)
    assert ob.modifiers[0].name == io.MODIFIER_NAME and io.bake_range(ob) == (3, 10)


def test_curves_clear_restores_rest_bit_exact_and_removes_everything(scene, io, core):
    ob = curves_scene()
    rest = io.read_hair(ob).points.copy()
    before = ({a.name for a in ob.data.attributes}, set(bpy.data.node_groups), set(bpy.data.actions))
    io.write_bake(ob, synthetic_cache(core, io.read_hair(ob), 1, 5))
    assert io.is_baked(ob)
    assert io.clear_bake(ob) is True
    assert np.array_equal(evaluated(io, ob, 3), rest)
    assert np.array_equal(io.read_hair(ob).points, rest)
    after = ({a.name for a in ob.data.attributes}, set(bpy.data.node_groups), set(bpy.data.actions))
    assert after == before
    assert len(ob.modifiers) == 0 and ob.animation_data is None
    assert io.RECORD not in ob.keys() and not io.is_baked(ob)
    assert io.clear_bake(ob) is False


def test_rebake_replaces_and_subrange(scene, io, core):
    ob = curves_scene()
    hair = io.read_hair(ob)
    io.write_bake(ob, synthetic_cache(core, hair, 1, 20, seed=1))
    sub = synthetic_cache(core, hair, 7, 4, seed=2)
    io.write_bake(ob, sub)
    assert io.bake_range(ob) == (7, 10)
    names = sorted(a.name for a in ob.data.attributes if a.name.startswith(io.BAKE_PREFIX))
    assert names == sorted(f"{io.BAKE_PREFIX}{f}" for f in range(7, 11))
    assert sum(m.type == "NODES" for m in ob.modifiers) == 1
    assert sum(1 for g in bpy.data.node_groups if io._is_playback_group(g)) == 1
    for f in (1, 7, 8, 10, 15):
        assert np.array_equal(evaluated(io, ob, f), sub.frame(min(max(f, 7), 10)))


def test_bake_keeps_the_users_own_animation(scene, io, core, compat):
    ob = curves_scene()
    ob.location = (0, 0, 0)
    ob.keyframe_insert("location", frame=1)
    ob.location = (1, 0, 0)
    ob.keyframe_insert("location", frame=10)
    action = ob.animation_data.action
    io.write_bake(ob, synthetic_cache(core, io.read_hair(ob), 1, 10))
    assert ob.animation_data.action == action
    assert len(list(bpy.data.actions)) == 1
    md = ob.modifiers[io.MODIFIER_NAME]
    frame = next(i.identifier for i in md.node_group.interface.items_tree if i.name == "Frame")
    paths = sorted(fc.data_path for fc in compat.action_fcurves(action))
    assert paths == sorted(["location"] * 3 + [compat.modifier_input_path(md, frame)])
    for f, subframe in ((4, 0.0), (7, 0.25), (15, 0.0)):      # the keyed Frame input follows the scene
        scene.frame_set(f, subframe=subframe)
        assert compat.modifier_input(md, frame) == pytest.approx(min(f + subframe, 10))
    io.clear_bake(ob)
    assert ob.animation_data.action == action
    assert sorted(fc.data_path for fc in compat.action_fcurves(action)) == ["location"] * 3
    scene.frame_set(10)
    assert ob.matrix_world.translation.x == pytest.approx(1.0)


def deform_on_surface_group():
    g = scenes.deform_on_surface_group()
    outer = bpy.data.node_groups.new("Wrapper", "GeometryNodeTree")   # nested one level down
    outer.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    outer.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    node = outer.nodes.new("GeometryNodeGroup")
    node.node_tree = g
    return g, outer


def test_bake_owns_deformation_and_restores_surface_deform(scene, io, core):
    ob = curves_scene()
    g, outer = deform_on_surface_group()
    direct = ob.modifiers.new("Deform", "NODES")
    direct.node_group = g
    nested = ob.modifiers.new("Nested", "NODES")
    nested.node_group = outer
    nested.show_render = False      # a state of the user's that must come back as it was
    other = ob.modifiers.new("Other", "NODES")
    io.write_bake(ob, synthetic_cache(core, io.read_hair(ob), 1, 3))
    assert [m.name for m in ob.modifiers] == [io.MODIFIER_NAME, "Deform", "Nested", "Other"]
    assert not direct.show_viewport and not direct.show_render
    assert not nested.show_viewport and not nested.show_render
    assert other.show_viewport and other.show_render
    direct.name = "Renamed"         # the record keys on the modifier's persistent id
    io.clear_bake(ob)
    assert [m.name for m in ob.modifiers] == ["Renamed", "Nested", "Other"]
    assert direct.show_viewport and direct.show_render
    assert nested.show_viewport and not nested.show_render


def test_playback_goes_first_even_before_a_modifier_pinned_last(scene, io, core):
    """Blender puts a new modifier before any that is pinned last (5.2's Quick Fur pins its Hair
    Dynamics); the playback still has to come before everything, and the pin stays."""
    ob = curves_scene()
    ob.modifiers.new("Before", "NODES")
    pinned = ob.modifiers.new("Pinned", "NODES")
    pinned.use_pin_to_last = True
    cache = synthetic_cache(core, io.read_hair(ob), 1, 4)
    io.write_bake(ob, cache)
    assert [m.name for m in ob.modifiers] == [io.MODIFIER_NAME, "Before", "Pinned"]
    assert pinned.use_pin_to_last
    assert np.array_equal(evaluated(io, ob, 3), cache.frame(3))
    io.clear_bake(ob)
    assert [m.name for m in ob.modifiers] == ["Before", "Pinned"] and pinned.use_pin_to_last


def test_write_refuses_shared_data_and_edited_hair(scene, io, core):
    ob = curves_scene()
    hair = io.read_hair(ob)
    twin = scenes.link(bpy.data.objects.new("Twin", ob.data))
    with pytest.raises(core.HairWigError, match="'Hair' shares its data 'Hair' with 1 other"):
        io.write_bake(ob, synthetic_cache(core, hair, 1, 2))
    bpy.data.objects.remove(twin)
    ob.data.add_curves([3])
    with pytest.raises(core.HairWigError, match="'Hair' was edited after the bake was computed: "
                                                "it has 21 strands and 123 points, the bake 20 and 120"):
        io.write_bake(ob, synthetic_cache(core, hair, 1, 2))
    moved = scenes.curves_hair("Regrouped", hair.points, [5, 7] + [6] * 18)   # same total
    with pytest.raises(core.HairWigError, match="'Regrouped' was edited .*: strand 0 has 5 points, the bake 6"):
        io.write_bake(moved, synthetic_cache(core, hair, 1, 2))
    assert not io.is_baked(ob) and len(ob.modifiers) == 0


def test_edit_after_bake_is_noticed(scene, io, core):
    ob = curves_scene()
    io.write_bake(ob, synthetic_cache(core, io.read_hair(ob), 1, 2))
    assert io.edited_since_bake(ob) is None
    ob.data.add_curves([6])
    assert io.edited_since_bake(ob) == (120, 126)
    io.clear_bake(ob)                      # nothing lost: the edit stays, the bake goes
    assert len(ob.data.points) == 126 and io.edited_since_bake(ob) is None


def test_write_refuses_nan_and_leaves_previous_bake(scene, io, core):
    ob = curves_scene()
    hair = io.read_hair(ob)
    good = synthetic_cache(core, hair, 1, 3)
    io.write_bake(ob, good)
    bad = synthetic_cache(core, hair, 1, 3, seed=5)
    bad.positions[2, 13, 1] = np.inf
    with pytest.raises(core.HairWigError, match="not finite at frame 3, strand 2"):
        io.write_bake(ob, bad)
    assert np.array_equal(evaluated(io, ob, 2), good.frame(2))


# ------------------------------------------------------------------------ legacy round trip

@pytest.mark.parametrize("kind", ["POLY", "NURBS", "BEZIER"])
def test_legacy_bake_plays_back_and_clears(scene, io, core, kind):
    pts, _ = scenes.straight_strands(6, 5, seed=4)
    ob = scenes.legacy_hair("Legacy", pts, [5] * 6, kind)
    rest_points, _, rest_handles = io._legacy_arrays(ob)
    hair = io.read_hair(ob)
    cache = synthetic_cache(core, hair, 2, 6)
    io.write_bake(ob, cache)
    key = ob.data.shape_keys
    assert key is not None and not key.use_relative
    slip = legacy_slip(cache)
    for f in cache.frames:
        assert float32_close(evaluated(io, ob, f), cache.frame(f), 4, slip), f
    for f in range(2, 7):
        assert float32_close(evaluated(io, ob, f, 0.5), 0.5 * (cache.frame(f) + cache.frame(f + 1)), 4 + 1, slip)
    assert float32_close(evaluated(io, ob, -3), cache.frame(2), 4, slip)
    assert float32_close(evaluated(io, ob, 99), cache.frame(7), 4, slip)
    if kind == "BEZIER":    # handles moved with their point
        scene.frame_set(5)
        geometry = ob.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
        left = np.empty(hair.num_points * 3, np.float32)
        geometry.curves.attributes["handle_left"].data.foreach_get("vector", left)
        expect = rest_handles[0] + (cache.frame(5) - rest_points)
        # the handle moved with its point (2 roundings here and in the add-on), then blended (4)
        assert float32_close(left.reshape(-1, 3), expect, 2 + 2 + 4, slip)
    io.clear_bake(ob)
    assert ob.data.shape_keys is None and len(bpy.data.actions) == 0
    assert np.array_equal(evaluated(io, ob, 4), rest_points)
    points, _, handles = io._legacy_arrays(ob)
    assert np.array_equal(points, rest_points)
    if handles is not None:
        assert np.array_equal(handles[0], rest_handles[0]) and np.array_equal(handles[1], rest_handles[1])


def test_legacy_rebake_and_refuses_users_shape_keys(scene, io, core):
    pts, _ = scenes.straight_strands(3, 4)
    ob = scenes.legacy_hair("Legacy", pts, [4] * 3)
    hair = io.read_hair(ob)
    io.write_bake(ob, synthetic_cache(core, hair, 1, 5))
    second = synthetic_cache(core, hair, 3, 2, seed=9)
    io.write_bake(ob, second)
    assert len(ob.data.shape_keys.key_blocks) == 3 and io.bake_range(ob) == (3, 4)
    assert float32_close(evaluated(io, ob, 4), second.frame(4), 4, legacy_slip(second))
    io.clear_bake(ob)
    other = scenes.legacy_hair("Keyed", pts, [4] * 3)
    other.shape_key_add(name="Basis")
    with pytest.raises(core.HairWigError, match="'Keyed' has shape keys of its own"):
        io.write_bake(other, synthetic_cache(core, io.read_hair(other), 1, 2))
    assert len(other.data.shape_keys.key_blocks) == 1
