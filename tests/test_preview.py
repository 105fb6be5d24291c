"""Live preview (real bpy): follows frames and magnets, and always gives the rest pose back
bit for bit — on stop, around a save, on unregister, on leaving object mode."""

import bpy
import numpy as np
import pytest
import scenes
from tolerance import AFFINE, FOLLOW, magnitude, rounding


@pytest.fixture
def glue(addon):
    from hair_wig_addon.operators import baking, blender_io, preview
    return baking, blender_io, preview


def previewed(scene):
    ob, _, magnet = scenes.keyed_wig(80, 8, radius=1.5, travel=0.5, magnet_at=(0.0, 0.0, 1.6), head_turn=False)
    scene.frame_set(1)
    return ob, magnet, positions(ob)


def positions(ob):
    out = np.empty(len(ob.data.points) * 3, np.float32)
    ob.data.attributes["position"].data.foreach_get("vector", out)
    return out.reshape(-1, 3)


def test_preview_follows_frames_and_magnets_and_stops_bit_exact(scene, glue):
    baking, io, preview = glue
    ob, magnet, rest = previewed(scene)
    expect = baking.compute(bpy.context, ob, 10, 10).frame(10)           # the bake's pose, no dynamics
    assert bpy.ops.hair_wig.preview() == {"FINISHED"} and preview.is_previewing(ob)
    # frame 1 is the rest pose: into head-local space and back (7 roundings each) and the length
    # walk re-placing the 8 points root to tip, of |x|
    np.testing.assert_allclose(positions(ob), rest, rtol=0,
                               atol=rounding(magnitude(rest), 2 * AFFINE + FOLLOW * 8))
    scene.frame_set(10)
    at10 = positions(ob)
    assert np.abs(at10 - rest).max() > 0.1
    # the bake's frame 10: the same inputs through the same code in the same process
    np.testing.assert_array_equal(at10, expect)
    magnet.location.z += 0.3                                            # moving a magnet updates it
    bpy.context.view_layer.update()
    assert np.abs(positions(ob) - at10).max() > 1e-3
    assert bpy.ops.hair_wig.preview() == {"FINISHED"} and not preview.is_previewing(ob)
    assert np.array_equal(positions(ob), rest)


def test_saved_file_holds_the_rest_pose(scene, glue, tmp_path):
    _, _, preview = glue
    ob, magnet, rest = previewed(scene)
    bpy.ops.hair_wig.preview()
    scene.frame_set(10)
    deformed = positions(ob)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "p.blend"))
    assert np.array_equal(positions(ob), deformed)                      # re-applied after saving
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "p.blend"))
    assert np.array_equal(positions(bpy.data.objects["Hair"]), rest)
    assert not preview._previews


def test_unregister_and_mode_change_restore_rest(scene, glue, addon):
    _, _, preview = glue
    ob, magnet, rest = previewed(scene)
    bpy.ops.hair_wig.preview()
    scene.frame_set(10)
    addon.unregister()
    try:
        assert np.array_equal(positions(ob), rest)
    finally:
        addon.register()
    bpy.context.view_layer.objects.active = ob
    bpy.ops.hair_wig.preview()
    scene.frame_set(10)
    bpy.ops.object.mode_set(mode="SCULPT_CURVES")
    scene.frame_set(9)                    # any update notices the mode and hands the rest back
    assert not preview.is_previewing(ob) and np.array_equal(positions(ob), rest)
    bpy.ops.object.mode_set(mode="OBJECT")


def test_edited_hair_stops_preview_and_keeps_the_edit(scene, glue, capsys):
    _, _, preview = glue
    ob, magnet, rest = previewed(scene)
    bpy.ops.hair_wig.preview()
    scene.frame_set(10)
    ob.data.add_curves([4])               # points added while previewed
    scene.frame_set(5)
    assert not preview.is_previewing(ob) and len(ob.data.points) == len(rest) + 4
    assert "was edited while previewed (640 -> 644 points)" in capsys.readouterr().out


def test_preview_refuses_baked_and_legacy_hair(scene, glue):
    _, io, _ = glue
    ob, magnet, rest = previewed(scene)
    bpy.ops.hair_wig.bake()
    with pytest.raises(RuntimeError, match="'Hair' is baked: clear the bake to preview"):
        bpy.ops.hair_wig.preview()
    legacy = scenes.legacy_hair("Legacy", rest[:16], [8, 8])
    legacy.hair_wig.enabled = True
    bpy.context.view_layer.objects.active = legacy
    assert bpy.ops.hair_wig.preview.poll() is False


def test_baking_while_previewing_starts_from_the_rest_pose(scene, glue):
    baking, _, preview = glue
    ob, magnet, rest = previewed(scene)
    expect = baking.compute(bpy.context, ob, 1, 10)
    bpy.ops.hair_wig.preview()
    scene.frame_set(10)
    got = baking.compute(bpy.context, ob, 1, 10)
    assert not preview.is_previewing(ob) and np.array_equal(positions(ob), rest)
    assert np.array_equal(got.positions, expect.positions)
