"""The viewport display of magnets: its geometry, and (where bpy can draw in background mode)
the pixels it draws."""

import json
import subprocess
import sys
from pathlib import Path

import bpy
import gpu
import numpy as np
import pytest
import scenes
from tolerance import AFFINE, magnitude, rounding

PROBE = Path(__file__).with_name("overlay_probe.py")


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
    # circles drawn in float64 round the magnet's float32 location, handed to the GPU as
    # float32 (1 rounding of |x|); measured here in float64 (1 more for the centre)
    drawn = rounding(magnitude(lines["reach"]), 2)
    np.testing.assert_allclose(np.linalg.norm(lines["reach"] - [1, 0, 0], axis=1), 0.7, atol=drawn)
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
    # moved from its rest place: the reach bound there is drawn too, where it was
    # the rest place: the head's float32 world matrix times the stored float32 rest matrix
    # (7 + 1 roundings), then as above
    np.testing.assert_allclose(np.linalg.norm(lines["rest"] - [1, 0, 0], axis=1), 0.7,
                               atol=rounding(magnitude(lines["rest"]), 2 + AFFINE + 1))
    acted = cache.magnet_paths[m.name][6 - 1]
    keyed = np.array(m.matrix_world.translation)
    assert np.linalg.norm(acted - keyed) > 0.05                         # the spring lags its key
    centre = lines["acted"].reshape(3, -1, 3).mean(axis=(0, 1))
    np.testing.assert_allclose(centre, acted, atol=1e-3)                # far above rounding: a mean
    # the arrow's ends handed to the GPU as float32: 1 rounding of |x| each
    np.testing.assert_allclose(lines["arrow"][0], keyed, rtol=0, atol=rounding(magnitude(keyed), 1))
    np.testing.assert_allclose(lines["arrow"][1], acted, rtol=0, atol=rounding(magnitude(acted), 1))
    # a reach that follows the magnet is only where the magnet is
    m.hair_wig_magnet.reach = "FOLLOW"
    lines = overlay.magnet_lines(scene)
    assert "rest" not in lines
    np.testing.assert_allclose(np.linalg.norm(lines["reach"] - keyed, axis=1), 0.7,
                               atol=rounding(magnitude(lines["reach"]), 2))


def test_draw_handler_comes_and_goes_with_the_addon(addon):
    from hair_wig_addon.panels import overlay

    assert overlay._handle is not None
    addon.unregister()
    try:
        assert overlay._handle is None
    finally:
        addon.register()
    assert overlay._handle is not None


@pytest.mark.skipif(not hasattr(gpu, "init"),
                    reason="this Blender's bpy cannot draw in background mode (gpu.init arrived in 5.x)")
def test_the_overlay_draws_each_magnets_reach_where_the_magnet_is():
    """Drawn for real (offscreen, Blender's own GPU module) in a process of its own, looking down z:
    the reach's three circles show as a ring of the magnet's radius around it and two diameters;
    the drawing follows the magnet, and once it has moved its reach at rest stays drawn where it
    was; a disabled wig draws nothing."""
    run = subprocess.run([sys.executable, str(PROBE)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads(next(l for l in run.stdout.splitlines() if l.startswith("REPORT "))[7:])
    px = report["pixel"]
    for key, centre in (("at_1_0", (1.0, 0.0)), ("at_-1_0.5", (-1.0, 0.5))):
        xy = np.array(report[key])
        if key != "at_1_0":
            # moved from its rest place: the reach bound there is drawn too, round (1, 0)
            at_rest = np.linalg.norm(xy - (1.0, 0.0), axis=1) <= 0.7 + 1.5 * px
            assert at_rest.sum() > 100, at_rest.sum()
            xy = xy[~at_rest]
        xy = xy - centre
        assert len(xy) > 100, (key, len(xy))
        r = np.linalg.norm(xy, axis=1)
        assert r.max() <= 0.7 + 1.5 * px, (key, r.max())              # nothing beyond the reach
        ring = xy[r > 0.7 - 1.5 * px]
        angles = np.floor((np.arctan2(ring[:, 1], ring[:, 0]) + np.pi) / (2 * np.pi) * 32)
        assert len(np.unique(angles)) >= 30, (key, len(np.unique(angles)))   # the whole circle
        inside = xy[r < 0.7 - 1.5 * px]                                 # the two other circles, edge-on
        on_axes = (np.abs(inside[:, 0]) < 1.5 * px) | (np.abs(inside[:, 1]) < 1.5 * px)
        assert on_axes.all(), (key, inside[~on_axes][:5])
    assert report["disabled"] == []
