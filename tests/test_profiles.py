"""Profile curves as Blender curve widgets (real bpy): defaults, presets, reset, and the bake
using them."""

import bpy
import numpy as np
import pytest
import scenes
from tolerance import magnitude, rounding

# Profiles drawn in Blender's curve widgets are read through Blender's own table of the curve
# (its resolution, and the curve's handles, not rounding): 1e-3 on a value of 0..1 is that.


@pytest.fixture
def glue(addon):
    from hair_wig_addon.operators import baking, profile_curves
    return baking, profile_curves


def wig(scene):
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.2, location=(0, 0, -5))
    head = bpy.context.active_object
    ob, pts = scenes.wig_on(head, 40, 6)
    ob.hair_wig.use_length = ob.hair_wig.use_collision = False
    scene.cursor.location = (0, 0, 0)
    bpy.ops.hair_wig.add_magnet(radius=100.0)
    m = ob.hair_wig.magnets[0].object
    m.hair_wig_magnet.multiplier = 2.0
    m.keyframe_insert("location", frame=1)
    m.location.x += 0.5
    m.keyframe_insert("location", frame=5)
    return ob, m, pts


def test_enable_makes_hidden_curves_with_their_defaults(scene, glue):
    _, profile_curves = glue
    ob, m, _ = wig(scene)
    group = ob.hair_wig.profiles
    assert group.name.startswith(".") and set(group.nodes.keys()) == set(profile_curves.WIG_PROFILES)
    assert set(m.hair_wig_magnet.profiles.nodes.keys()) == {"falloff"}
    u = np.array([0.0, 0.25, 0.5, 1.0])
    np.testing.assert_allclose(profile_curves.read(ob.hair_wig, "flex")(u), u, atol=1e-3)
    np.testing.assert_allclose(profile_curves.read(ob.hair_wig, "length")(u), 1, atol=1e-3)
    falloff = profile_curves.read(m.hair_wig_magnet, "falloff")(u)
    assert falloff[0] == pytest.approx(1, abs=1e-3) and falloff[-1] == pytest.approx(0, abs=1e-3)
    # never rising: Blender's float curve table (4) read into ours and back (4): 8 roundings of 1
    assert np.all(np.diff(falloff) <= rounding(1.0, 8))
    # the secondary blend is pinned at the root and full from a fifth of the strand on (the
    # patent's dynablend is uniform along the strand), in Blender's curve and in the core alike
    from hair_wig_addon.hair_wig import SpringSettings
    u = np.array([0.0, 0.1, 0.2, 0.5, 1.0])
    want = [0.0, 0.5, 1.0, 1.0, 1.0]
    np.testing.assert_allclose(profile_curves.read(ob.hair_wig, "secondary_blend")(u), want, atol=5e-3)
    np.testing.assert_allclose(SpringSettings().blend_profile(u), want, atol=1e-3)   # a LUT


def test_presets_reset_and_the_bake_follow_the_curves(scene, glue):
    baking, profile_curves = glue
    ob, m, pts = wig(scene)
    t = np.tile(np.linspace(0, 1, 6), 40)[:, None]
    linear = baking.compute(bpy.context, ob, 5, 5).frame(5)
    # The magnet's full (capped) weight times the flex, a straight line in Blender's table (8
    # roundings of 1, x the 0.5 m travel), moves the points by the blend and G p (9 roundings
    # of coordinates up to |x|, the head sits 5 m down). A wrong flex is off by centimetres.
    tol = rounding(magnitude(pts) + 0.5, 9) + rounding(0.5, 8)
    np.testing.assert_allclose(linear, pts + t * [0.5, 0, 0], atol=tol)      # flex: root 0 → tip 1
    assert bpy.ops.hair_wig.profile_preset(profile="flex", preset="CONSTANT") == {"FINISHED"}
    constant = baking.compute(bpy.context, ob, 5, 5).frame(5)
    np.testing.assert_allclose(constant, pts + [0.5, 0, 0], atol=tol)        # roots move too
    bpy.ops.hair_wig.profile_preset(profile="flex", preset="EASE")
    eased = profile_curves.read(ob.hair_wig, "flex")(np.array([0.25, 0.5, 0.75]))
    assert eased[0] < 0.25 and eased[1] == pytest.approx(0.5, abs=1e-3) and eased[2] > 0.75
    bpy.ops.hair_wig.profile_preset(profile="flex", preset="RESET")
    # the default curve again, baked by the same code in the same process: the same bits
    np.testing.assert_array_equal(baking.compute(bpy.context, ob, 5, 5).frame(5), linear)
    ob.hair_wig.magnet_index = 0
    bpy.ops.hair_wig.profile_preset(profile="falloff", preset="CONSTANT")
    np.testing.assert_allclose(profile_curves.read(m.hair_wig_magnet, "falloff")(np.array([0, 0.7, 1])), 1, atol=1e-3)
    with pytest.raises(RuntimeError, match="No profile named 'nope'"):
        bpy.ops.hair_wig.profile_preset(profile="nope", preset="LINEAR")


def test_curves_survive_save_and_reload(scene, glue, tmp_path):
    _, profile_curves = glue
    ob, m, _ = wig(scene)
    bpy.ops.hair_wig.profile_preset(profile="attachment", preset="EASE_OUT")
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "p.blend"))
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "p.blend"))
    ob = bpy.data.objects["Hair"]
    y = profile_curves.read(ob.hair_wig, "attachment")(np.array([0.0, 1.0]))
    np.testing.assert_allclose(y, [1, 0], atol=1e-3)
