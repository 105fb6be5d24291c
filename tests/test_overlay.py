"""The viewport display of magnets, as geometry (there is no screen to draw on here)."""

import bpy
import numpy as np
import pytest
import scenes


def test_reach_target_and_where_the_magnet_acted(scene, addon):
    from hair_wig_addon.operators import baking
    from hair_wig_addon.panels import overlay

    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.2, location=(0, 0, -5))
    head = bpy.context.active_object
    ob, _ = scenes.wig_on(head, 20, 5)
    scene.cursor.location = (1.0, 0.0, 0.0)
    bpy.ops.hair_wig.add_magnet(radius=0.7, space="WORLD")
    lines = overlay.magnet_lines(scene)
    assert set(lines) == {"reach"} and lines["reach"].shape == (3 * 2 * overlay.SEGMENTS, 3)
    np.testing.assert_allclose(np.linalg.norm(lines["reach"] - [1, 0, 0], axis=1), 0.7, atol=1e-5)
    m = ob.hair_wig.magnets[0].object
    m.hair_wig_magnet.dynamic = True
    assert set(overlay.magnet_lines(scene)) == {"reach", "target"}     # no bake: nothing acted yet
    m.keyframe_insert("location", frame=1)
    m.location.z += 1.0
    m.keyframe_insert("location", frame=6)
    scene.frame_start, scene.frame_end = 1, 12
    cache = baking.bake(bpy.context, ob)
    scene.frame_set(6)
    lines = overlay.magnet_lines(scene)
    acted = cache.magnet_paths[m.name][6 - 1]
    keyed = np.array(m.matrix_world.translation)
    assert np.linalg.norm(acted - keyed) > 0.05                         # the spring lags its key
    centre = lines["acted"].reshape(3, -1, 3).mean(axis=(0, 1))
    np.testing.assert_allclose(centre, acted, atol=1e-3)
    np.testing.assert_allclose(lines["arrow"][0], keyed, atol=1e-5)
    np.testing.assert_allclose(lines["arrow"][1], acted, atol=1e-5)


def test_draw_handler_comes_and_goes_with_the_addon(addon):
    from hair_wig_addon.panels import overlay

    assert overlay._handle is not None
    addon.unregister()
    try:
        assert overlay._handle is None
    finally:
        addon.register()
    assert overlay._handle is not None
