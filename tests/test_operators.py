"""The operators through bpy.ops, as the UI calls them."""

import bpy
import numpy as np
import pytest
import scenes
from tolerance import AFFINE, FOLLOW, magnitude, rounding


def wig_scene(head=True):
    bpy.ops.mesh.primitive_uv_sphere_add()
    h = bpy.context.active_object
    h.name = "Head"
    scenes.keyed_head_turn(h, 1, 10)
    pts, counts = scenes.straight_strands(40, 6)
    ob = scenes.curves_hair("Hair", pts, counts)
    if head:
        ob.data.surface = h
    bpy.context.view_layer.objects.active = ob
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 10
    return ob, h, pts


def test_enable_takes_surface_as_head(scene):
    ob, head, _ = wig_scene()
    assert bpy.ops.hair_wig.bake.poll() is False
    assert bpy.ops.hair_wig.enable() == {"FINISHED"}
    assert ob.hair_wig.enabled and ob.hair_wig.head == head
    assert bpy.ops.hair_wig.bake.poll() is True


def test_bake_then_clear(scene, addon):
    from hair_wig_addon.operators import blender_io as io

    ob, head, rest = wig_scene()
    bpy.ops.hair_wig.enable()
    scene.frame_set(4)
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    assert scene.frame_current == 4 and io.bake_range(ob) == (1, 10)
    dg = bpy.context.evaluated_depsgraph_get()
    scene.frame_set(10)
    m = np.array(head.matrix_world)    # rest frame 1 has the identity
    want = rest @ m[:3, :3].T + m[:3, 3]
    # into head-local space and back to the object (Blender's float32 head matrix: 7 roundings
    # each), the length walk re-placing the 6 points root to tip, and want in float32 here (1)
    np.testing.assert_allclose(io.read_evaluated_points(ob, dg), want, rtol=0,
                               atol=rounding(magnitude(want), 2 * AFFINE + FOLLOW * 6 + 1))
    assert bpy.ops.hair_wig.clear_bake() == {"FINISHED"}
    assert np.array_equal(io.read_evaluated_points(ob, dg), rest)
    assert bpy.ops.hair_wig.clear_bake.poll() is False


def test_bake_error_reports_and_leaves_scene(scene, addon):
    from hair_wig_addon.operators import blender_io as io

    ob, _, rest = wig_scene(head=False)
    ob.hair_wig.enabled = True
    scene.frame_set(3)
    with pytest.raises(RuntimeError, match="'Hair' has no head"):
        bpy.ops.hair_wig.bake()
    assert not io.is_baked(ob) and len(ob.modifiers) == 0 and scene.frame_current == 3
    assert [a.name for a in ob.data.attributes] == ["position"]


def test_bake_all_wigs(scene, addon):
    from hair_wig_addon.operators import blender_io as io

    ob, head, rest = wig_scene()
    ob.hair_wig.enabled = True
    ob.hair_wig.head = head
    other = scenes.curves_hair("Other", rest, [6] * 40)
    other.hair_wig.enabled = True
    other.hair_wig.head = head
    other.hair_wig.use_scene_range = False
    other.hair_wig.frame_start, other.hair_wig.frame_end = 2, 5
    assert bpy.ops.hair_wig.bake(all_wigs=True) == {"FINISHED"}
    assert io.bake_range(ob) == (1, 10) and io.bake_range(other) == (2, 5)
    assert bpy.ops.hair_wig.clear_bake(all_wigs=True) == {"FINISHED"}
    assert not io.is_baked(ob) and not io.is_baked(other)


def test_bake_without_active_wig_reports(scene, addon):
    ob, head, _ = wig_scene()
    other = scenes.curves_hair("Other", np.zeros((4, 3)), [2, 2])
    other.hair_wig.enabled = True
    other.hair_wig.head = head
    bpy.context.view_layer.objects.active = ob     # hair, but not a wig
    assert bpy.ops.hair_wig.bake.poll() is True    # another wig exists: Bake All is possible
    with pytest.raises(RuntimeError, match="Select a hair object with Wig enabled"):
        bpy.ops.hair_wig.bake()
    assert bpy.ops.hair_wig.clear_bake.poll() is False


def _why(op) -> str:
    """What a greyed-out button's tooltip says: Blender puts the poll message in the error."""
    with pytest.raises(RuntimeError) as err:
        op()
    return str(err.value)


def test_greyed_out_buttons_say_why(scene):
    """Every button the panel greys out says what is missing, on which object, and what to press."""
    ob, head, _ = wig_scene(head=False)
    bpy.context.view_layer.objects.active = head
    assert "'Head' is not hair" in _why(bpy.ops.hair_wig.enable)
    assert "No wig in this scene" in _why(bpy.ops.hair_wig.bake)
    assert "Nothing is baked" in _why(bpy.ops.hair_wig.clear_bake)
    bpy.context.view_layer.objects.active = ob
    assert "'Hair' is not a wig yet: press Enable Wig" in _why(bpy.ops.hair_wig.add_magnet)
    assert "not a wig yet" in _why(bpy.ops.hair_wig.preview)
    assert "not a wig yet" in _why(bpy.ops.hair_wig.record_key_pose)
    assert bpy.ops.hair_wig.enable() == {"FINISHED"}
    assert "Choose the Head of 'Hair' first" in _why(bpy.ops.hair_wig.add_magnet)
    assert "Select a magnet in the list first" in _why(bpy.ops.hair_wig.remove_magnet)
    assert "Select a key pose in the list first" in _why(bpy.ops.hair_wig.rerecord_key_pose)
    assert "'Hair' has no key poses yet" in _why(bpy.ops.hair_wig.jump_to_key_pose)
    assert "Select a key pose in the list first" in _why(bpy.ops.hair_wig.delete_key_pose)
    ob.hair_wig.head = head
    assert bpy.ops.hair_wig.add_magnet() == {"FINISHED"}
    legacy = scenes.legacy_hair("Legacy", *scenes.straight_strands(4, 4)[:2])
    bpy.context.view_layer.objects.active = legacy
    bpy.ops.hair_wig.enable()
    assert "'Legacy' is a legacy Curve" in _why(bpy.ops.hair_wig.preview)


def test_procedural_hair_says_where_its_curves_come_from_before_anything_is_set_up(scene, addon):
    """Quick Fur without its guides applied: the viewport shows hair, the object holds no curves.
    Enable Wig is greyed out and says which modifier makes them and to apply it (so does the
    panel); a wig enabled on it anyway fails its bake with the same words. Applied, all works."""
    bpy.ops.mesh.primitive_monkey_add()
    head = bpy.context.active_object
    assert bpy.ops.object.quick_fur(density="LOW", apply_hair_guides=False) == {"FINISHED"}
    hair = next(o for o in scene.objects if o.type == "CURVES")
    assert len(hair.data.curves) == 0 and hair.modifiers[0].name == "Generate"
    bpy.context.view_layer.objects.active = hair
    why = _why(bpy.ops.hair_wig.enable)
    assert "holds no curves of its own" in why and "apply 'Generate'" in why
    from test_workflow import _panel_labels
    assert "No curves of its own: apply 'Generate'" in _panel_labels(hair)
    hair.hair_wig.enabled = True                   # enabled before its curves went, say
    hair.hair_wig.head = head
    assert "apply 'Generate'" in _why(bpy.ops.hair_wig.add_magnet)
    with pytest.raises(RuntimeError, match="holds no curves of its own"):
        bpy.ops.hair_wig.bake()
    hair.hair_wig.enabled = False
    assert bpy.ops.object.modifier_apply(modifier="Generate") == {"FINISHED"}
    assert len(hair.data.curves) > 0
    assert bpy.ops.hair_wig.enable() == {"FINISHED"}
    assert not any("curves" in t for t in _panel_labels(hair))
    assert bpy.ops.hair_wig.add_magnet() == {"FINISHED"}
