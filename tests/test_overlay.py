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


@pytest.mark.parametrize("module", ["overlay", "timeline"])
def test_draw_handler_comes_and_goes_with_the_addon(addon, module):
    """The 3D Viewport's overlay and the Timeline's live cache strip (issue 37)."""
    from importlib import import_module

    panel = import_module(f"hair_wig_addon.panels.{module}")
    assert panel.handler.handle is not None
    addon.unregister()
    try:
        assert panel.handler.handle is None
    finally:
        addon.register()
    assert panel.handler.handle is not None


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


def _wisps_wig(scene):
    """A sphere head turning 0.9 rad over frames 1-8 with 120 strands x 12 points on it, the
    Wisps solver grouping them into 8 wisps, Show Wisps on."""
    bpy.ops.mesh.primitive_uv_sphere_add(segments=32, ring_count=16, radius=1.0)
    head = bpy.context.active_object
    head.name = "Head"
    ob, pts = scenes.uv_hair_on(head, 120, points=12, length=0.6)
    scenes.keyed_head_turn(head, 1, 8, angle=0.9, lift=0.0)
    scene.frame_start, scene.frame_end = 1, 8
    s = ob.hair_wig
    s.use_secondary, s.use_collision = True, False
    s.dynamics_layer, s.wisps_count, s.wisps_max_width = "WISPS", 8, 0.0        # 8 wisps, none split
    bpy.context.view_layer.objects.active = ob
    return head, ob


def _world_rows(ob, points):
    m = np.array(ob.matrix_world)
    return np.ascontiguousarray((np.asarray(points, np.float64) @ m[:3, :3].T + m[:3, 3]).T)


def test_the_wisps_are_drawn_as_the_bake_groups_them_and_follow_it(scene, addon):
    """Show Wisps on a Wisps wig: each wisp's skeleton (K segments) and a four-sided ring at each
    of its N cross-sections, at its rest radii. The wisps are the bake's own (the same strands in
    each, the same rest skeletons); drawn at a baked frame they are the wisps of the hair the bake
    shows there, their rings turned with the head as the layer turns them. Bound once: playing
    the bake re-binds nothing, changing Wisps does. Nothing is drawn with Show Wisps off, another
    solver, or wisps that cannot be made (Wisps From: Attribute without the attribute)."""
    from hair_wig_addon.hair_wig.spaces import rotation_of
    from hair_wig_addon.operators import blender_io, scene_reader
    from hair_wig_addon.panels import overlay

    head, ob = _wisps_wig(scene)
    s = ob.hair_wig
    assert overlay.wisp_lines(scene) == {}                        # Show Wisps off
    s.show_wisps = True
    s.dynamics_layer = "STRANDS"
    assert overlay.wisp_lines(scene) == {}                        # not the Wisps solver
    s.dynamics_layer = "WISPS"
    scene.frame_set(5)                      # drawn first away from the rest frame: the same wisps
    away = overlay.bound_wisps(ob, bpy.context.evaluated_depsgraph_get())
    scene.frame_set(1)                      # at the rest frame: bound again, as the bake binds
    layer = overlay.bound_wisps(ob, bpy.context.evaluated_depsgraph_get())
    assert layer is not away
    ws = layer.set
    bake_layer = scene_reader.bind(bpy.context, ob).wig.layer    # what a bake binds
    np.testing.assert_array_equal(away.set.wisp_of_strand, bake_layer.set.wisp_of_strand)
    np.testing.assert_array_equal(ws.wisp_of_strand, bake_layer.set.wisp_of_strand)
    np.testing.assert_array_equal(ws.e1_rest, bake_layer.set.e1_rest)
    np.testing.assert_array_equal(layer.turn_rest, bake_layer.turn_rest)
    assert ws.num_wisps == 8 and (ws.K, ws.N) == (8, 9)
    # the same rest skeletons: the same float32 head-local rest rows taken to the world, each
    # point a mean of strand samples (float64), so within the maps' roundings (7 each way)
    np.testing.assert_allclose(ws.skeleton_rest, bake_layer.set.skeleton_rest, rtol=0,
                               atol=rounding(magnitude(ws.skeleton_rest), 2 * AFFINE))
    W, K, N = ws.num_wisps, ws.K, ws.N

    def check(lines, points):
        assert set(lines) == {"skeleton", "envelope"}
        bones, loops = lines["skeleton"], lines["envelope"]
        assert bones.shape == (2 * W * K, 3) and loops.shape == (8 * W * N, 3)
        rows = _world_rows(ob, points)
        x = ws.skeleton(rows)
        # the skeleton of the hair shown, handed to the GPU as float32 (1 rounding of |x|)
        want = np.stack([x[:, :-1], x[:, 1:]], axis=2).reshape(-1, 3)
        np.testing.assert_allclose(bones, want, rtol=0, atol=rounding(magnitude(want), 1))
        ring = loops.reshape(W, N, 4, 2, 3)[:, :, :, 0]
        np.testing.assert_array_equal(loops.reshape(W, N, 4, 2, 3)[:, :, :, 1], np.roll(ring, -1, axis=2))
        # each ring: its corners at the rest radii from the skeleton point, along e1, e2, -e1, -e2
        # (float32 corners: 1 rounding of |x|, and |d| in float64 of it)
        d = ring.astype(np.float64) - x[:, :, None, :]
        np.testing.assert_allclose(np.linalg.norm(d, axis=-1), ws.r0, rtol=0, atol=rounding(magnitude(ring), 2))
        u = d / ws.r0[..., None]
        # unit axes from them: those roundings over the thinnest radius
        axis_tol = rounding(magnitude(ring), 2) / ws.r0.min()
        assert np.abs(np.einsum("wnk,wnk->wn", u[:, :, 0], u[:, :, 1])).max() < 2 * axis_tol     # e1 ⟂ e2
        np.testing.assert_allclose(u[:, :, 2], -u[:, :, 0], rtol=0, atol=2 * axis_tol)
        return x, u, axis_tol

    check(overlay.wisp_lines(scene), blender_io.read_hair(ob).points)   # unbaked: the groom
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    _, baked, _ = blender_io.read_bake(ob)
    scene.frame_set(8)
    lines = overlay.wisp_lines(scene)
    x, u, axis_tol = check(lines, baked[8 - 1])
    assert overlay.bound_wisps(ob, bpy.context.evaluated_depsgraph_get()) is layer      # not bound again
    rest_x = ws.skeleton(_world_rows(ob, blender_io.read_hair(ob).points))
    assert np.linalg.norm(x - rest_x, axis=-1).max() > 0.1          # it follows the bake, not the groom
    # the rings' frames as the layer's step makes them with the head turned so (its root e1)
    turn = rotation_of(np.array(head.matrix_world))
    frames, _ = ws.frames(x, (x[:, 1] - x[:, 0]) / np.linalg.norm(x[:, 1] - x[:, 0], axis=-1)[:, None],
                          layer._e1_root(turn))
    np.testing.assert_allclose(u[:, :, 0], frames[:, :, 0], rtol=0, atol=axis_tol)
    np.testing.assert_allclose(u[:, :, 1], frames[:, :, 1], rtol=0, atol=axis_tol)
    s.wisps_count = 5
    assert overlay.bound_wisps(ob, bpy.context.evaluated_depsgraph_get()).set.num_wisps == 5
    assert lines["skeleton"].shape != overlay.wisp_lines(scene)["skeleton"].shape
    s.wisps_source = "ATTRIBUTE"                                  # no 'wisp' attribute: nothing drawn
    assert overlay.wisp_lines(scene) == {}


WISPS_PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import addon, bpy, gpu, numpy as np, scenes
from mathutils import Matrix
SIZE, EXTENT = 128, 2.0
addon.ensure_registered()
from hair_wig_addon.panels import overlay
gpu.init()
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0)
head = bpy.context.active_object
hair, _ = scenes.wig_on(head, 60, 8, length=0.6)
s = hair.hair_wig
s.dynamics_layer, s.wisps_count, s.show_wisps = "WISPS", 6, True
bpy.context.view_layer.update()
offscreen = gpu.types.GPUOffScreen(SIZE, SIZE)
with offscreen.bind():
    fb = gpu.state.active_framebuffer_get()
    fb.clear(color=(0.0, 0.0, 0.0, 0.0))
    with gpu.matrix.push_pop(), gpu.matrix.push_pop_projection():
        gpu.matrix.load_matrix(Matrix.Identity(4))
        gpu.matrix.load_projection_matrix(Matrix(np.diag([1 / EXTENT, 1 / EXTENT, -0.1, 1.0]).tolist()))
        overlay.draw()
    pixels = np.array(fb.read_color(0, 0, SIZE, SIZE, 4, 0, "FLOAT").to_list())
offscreen.free()
rows, cols = np.nonzero(pixels[..., 3] > 0.05)
to_world = lambda i: (i + 0.5) / SIZE * 2 * EXTENT - EXTENT
lines = {k: v[:, :2].tolist() for k, v in overlay.wisp_lines(bpy.context.scene).items()}
print("REPORT " + json.dumps({"drawn": np.stack([to_world(cols), to_world(rows)], 1).tolist(), "lines": lines,
                              "pixel": 2 * EXTENT / SIZE}))
"""


@pytest.mark.skipif(not hasattr(gpu, "init"),
                    reason="this Blender's bpy cannot draw in background mode (gpu.init arrived in 5.x)")
def test_the_overlay_draws_the_wisps_it_outlines():
    """Drawn for real (offscreen, looking down z, in a process of its own): what Show Wisps puts
    on screen is the wisps' skeletons and rings ``wisp_lines`` gives — every pixel on one of
    their segments, and every segment drawn along its length."""
    root = Path(__file__).resolve().parents[1] / "scripts"
    run = subprocess.run([sys.executable, "-c", WISPS_PROBE, str(root)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads(next(l for l in run.stdout.splitlines() if l.startswith("REPORT "))[7:])
    px, drawn = report["pixel"], np.array(report["drawn"])
    segs = np.concatenate([np.array(v).reshape(-1, 2, 2) for v in report["lines"].values()])
    assert set(report["lines"]) == {"skeleton", "envelope"} and len(drawn) > 100

    def to_segments(points):
        """Each point's distance (N,) to the nearest segment."""
        a, b = segs[:, 0], segs[:, 1]
        ab = b - a
        t = np.clip(((points[:, None] - a) * ab).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-30), 0, 1)
        return np.linalg.norm(points[:, None] - (a + t[..., None] * ab), axis=-1).min(axis=1)

    assert to_segments(drawn).max() <= 1.5 * px                         # nothing but the wisps
    t = np.linspace(0, 1, 5)[:, None, None]
    along = (segs[:, 0] + t * (segs[:, 1] - segs[:, 0])).reshape(-1, 2)  # points along every segment
    near = np.linalg.norm(along[:, None] - drawn[None], axis=-1).min(axis=1)
    assert (near <= 1.5 * px).all(), near.max() / px                     # all of them drawn
