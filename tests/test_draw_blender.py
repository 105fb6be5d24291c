"""Draw Hair through Blender (real bpy, seed 002 ch. 3): a Grease Pencil drawing made in bpy
converted to hair seen from the active camera (roots on the surface with their UV, one strand
per stroke that starts on the scalp, loops made curls, wisps round the strands), the Draw Hair
tool's session driven stroke by stroke without a window (press, drag, release, Ctrl+Z), and the
last key pose's roots shown to redraw from."""

import bpy
import numpy as np
import pytest
import scenes
from tolerance import AFFINE, EPS64, magnitude, rounding

EYE = np.array([0.0, -5.0, 0.2])


def _scene():
    """A UV sphere head, empty hair on it, a camera at EYE looking along +y."""
    bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0, segments=48, ring_count=24, calc_uvs=True)
    head = bpy.context.active_object
    head.name = "Head"
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    bpy.context.scene.collection.objects.link(cam)
    cam.location = EYE
    cam.rotation_euler = (np.pi / 2, 0.0, 0.0)              # −Z (the view) along +y
    bpy.context.scene.camera = cam
    bpy.context.view_layer.update()                      # the camera's world matrix
    ob = scenes.empty_hair(head)
    return head, ob


def _on_plane(targets, plane_y=-2.0):
    """Where the camera's rays toward ``targets`` (K, 3) cross the plane y = plane_y: a stroke as
    Grease Pencil places it on a drawing plane in front of the head."""
    d = np.asarray(targets, np.float64) - EYE
    return EYE + d * ((plane_y - EYE[1]) / d[:, 1])[:, None]


def _grease_pencil(strokes, times=None):
    data = bpy.data.grease_pencils_v3.new("Drawing") if hasattr(bpy.data, "grease_pencils_v3") \
        else bpy.data.grease_pencils.new("Drawing")
    gp = bpy.data.objects.new("Drawing", data)
    bpy.context.scene.collection.objects.link(gp)
    drawing = data.layers.new("Lines").frames.new(1).drawing
    drawing.add_strokes([len(s) for s in strokes])
    pos = np.concatenate(strokes).astype(np.float32)
    drawing.attributes["position"].data.foreach_set("vector", pos.ravel())
    if times is not None:
        a = drawing.attributes.get("delta_time") or drawing.attributes.new("delta_time", "FLOAT", "POINT")
        a.data.foreach_set("value", np.concatenate(times).astype(np.float32))
    return gp


def _stroke(start, to, k=20, loop=0.0):
    """From the head point ``start`` toward ``to`` (world), on the drawing plane; ``loop``: the
    radius of a cursive loop half way."""
    s = np.linspace(0, 1, k)[:, None]
    path = np.asarray(start, np.float64) + s * (np.asarray(to) - np.asarray(start))
    if loop:                       # one turn starting at the top, round to the right and back
        th = np.linspace(-np.pi, np.pi, k)
        path[:, 0] += -loop * np.sin(th)
        path[:, 2] -= loop * (1 + np.cos(th))
    return _on_plane(path)


def _front(x, z):
    return np.array([x, -np.sqrt(1 - x * x - z * z), z])


def _positions(ob):
    p = np.empty(len(ob.data.points) * 3, np.float32)
    ob.data.attributes["position"].data.foreach_get("vector", p)
    return p.reshape(-1, 3).astype(np.float64)


def test_a_grease_pencil_drawing_becomes_hair_rooted_on_the_surface(scene, addon):
    from hair_wig_addon.hair_wig import scalp
    from hair_wig_addon.operators import blender_io as io
    from hair_wig_addon.operators.scene_reader import LEADER, curve_attribute

    head, ob = _scene()
    starts = [_front(0.2, 0.5), _front(-0.3, 0.4), _front(0.0, 0.7)]
    strokes = [_stroke(starts[0], [0.9, -1.0, -0.6]), _stroke(starts[1], [-1.0, -1.0, -0.8]),
               _stroke(starts[2], [0.5, -0.8, 0.7], k=60, loop=0.4),
               _on_plane(np.array([[2.5, 0.0, 0.0], [3.0, 0.0, -1.0]]))]         # starts beside the head
    d = ob.hair_wig.draw
    d.strokes = _grease_pencil(strokes)
    d.points, d.keep_outside = 24, False
    assert bpy.ops.hair_wig.strokes_to_hair() == {"FINISHED"}
    counts = [c.points_length for c in ob.data.curves]
    assert counts == [24, 24, 24]                                 # the stroke beside the head is left out
    p = _positions(ob).reshape(3, 24, 3)
    # each root is where the camera's ray through the stroke's first point meets the sphere's mesh
    # The sketching core places a root exactly (float64); Blender stores it as float32 (1
    # rounding of |x|), and the sphere's float32 vertices sit within 2 roundings of radius 1
    for root, start in zip(p[:, 0], starts):
        ray = (start - EYE) / np.linalg.norm(start - EYE)
        off = (root - EYE) - ((root - EYE) @ ray) * ray
        assert np.linalg.norm(off) < rounding(magnitude(root), 1)
        assert 0.98 < np.linalg.norm(root) <= 1.0 + rounding(1.0, 2 + 1)
    # and on the surface by its UV, as Blender's own hair tools attach it
    mesh = io.read_mesh(head, None, "UVMap")
    uv = np.empty(6, np.float32)
    ob.data.attributes["surface_uv_coordinate"].data.foreach_get("vector", uv)
    tri, bary = scalp.locate_uv(mesh.tri_uv, uv.reshape(-1, 2), "Hair")
    # the root's UV stored as float32 (1 rounding of |uv|) moves it over the surface by the UV
    # map's stretch there (its Jacobian, position per UV); the root itself is stored as float32
    # (1) and the position interpolated from float32 corners (3 products, 2 sums: 5), of |x|
    corners, uvs = mesh.positions[mesh.tri_verts[tri]], mesh.tri_uv[tri]
    e_uv = np.stack([uvs[:, 1] - uvs[:, 0], uvs[:, 2] - uvs[:, 0]], axis=2)          # (n, 2, 2)
    e_xyz = np.stack([corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]], axis=2)
    stretch = max(np.linalg.norm(e_xyz[i] @ np.linalg.inv(e_uv[i]), 2) for i in range(len(tri)))
    tol = stretch * rounding(magnitude(uv), 1) + rounding(magnitude(p[:, 0]), 1 + 5)
    np.testing.assert_allclose(np.einsum("nk,nkd->nd", bary, mesh.positions[mesh.tri_verts[tri]]), p[:, 0],
                               rtol=0, atol=tol)
    # straight strokes stay on their drawing plane (normal to the view); the looped one curls out of it
    view = np.array([0.0, 1.0, 0.0])
    # exact in the core (float64); each point stored as float32 (1 rounding of |x| each end)
    assert np.abs((p[:2] - p[:2, :1]) @ view).max() < rounding(magnitude(p[:2]), 2)
    assert np.abs((p[2] - p[2, :1]) @ view).max() > 0.05
    assert curve_attribute(ob.data, LEADER, bool, False).all()
    kind = np.zeros(3, np.int8)                                   # no attribute: all the default,
    if "curve_type" in ob.data.attributes:                        # CURVE_TYPE_CATMULL_ROM (0)
        ob.data.attributes["curve_type"].data.foreach_get("value", kind)
    assert (kind == 0).all()


def test_converted_hair_keeps_outside_and_leads_wisps(scene, addon):
    from hair_wig_addon.hair_wig.collision import MeshField
    from hair_wig_addon.operators import blender_io as io

    head, ob = _scene()
    d = ob.hair_wig.draw
    # drawn across the head's face: on the drawing plane through the root it would pass inside
    d.strokes = _grease_pencil([_stroke(_front(-0.5, 0.3), [0.6, -1.0, 0.2], k=30)])
    d.rings, d.points, d.clearance = 1, 16, 0.01
    assert bpy.ops.hair_wig.strokes_to_hair() == {"FINISHED"}
    assert len(ob.data.curves) == 1 + 8                           # a leader and a ring of eight
    mesh = io.world_mesh(head)
    d_min = MeshField(mesh.positions, mesh.tri_verts, margin=0.1).signed_distance(_positions(ob)[1:16])
    assert d_min.min() > 0.005
    with pytest.raises(RuntimeError, match="no stroke of 'Drawing.001' starts on 'Head'"):
        d.strokes = _grease_pencil([_on_plane(np.array([[2.5, 0.0, 0.0], [3.0, 0.0, -1.0]]))])
        bpy.ops.hair_wig.strokes_to_hair()


def test_the_draw_hair_session_makes_a_strand_per_stroke_refuses_a_miss_and_undoes(scene, addon):
    from hair_wig_addon.operators import blender_io as io
    from hair_wig_addon.operators.draw_ops import DrawSession, rays

    head, ob = _scene()
    ob.hair_wig.draw.keep_outside = False
    session = DrawSession(bpy.context, ob, lambda: io.camera_view(bpy.context.scene))
    view = io.camera_view(bpy.context.scene)
    miss = rays(_on_plane(np.array([[2.5, 0.0, 0.0]])), view)
    assert not session.press(miss[0][0], miss[1][0], 0.0) and not session.drawing
    for n, (x, z) in enumerate([(0.2, 0.5), (-0.2, 0.6)], start=1):
        o, d = rays(_stroke(_front(x, z), [x * 3, -1.0, -0.8]), view)
        assert session.press(o[0], d[0], 0.0)
        for k in range(1, len(o)):
            session.move(o[k], d[k], k / 60)
        assert len(session.stroke_points()) == len(o)
        assert len(session.release()) == 1 and len(ob.data.curves) == n
    o, d = rays(_stroke(_front(0.0, 0.3), [0.0, -1.0, -0.9]), view)
    session.press(o[0], d[0], 0.0)
    session.move(o[5], d[5], 0.1)
    session.cancel()                                              # Esc while drawing: nothing made
    assert not session.drawing and len(ob.data.curves) == 2
    first = _positions(ob)[:16].copy()
    assert session.undo() == 1 and len(ob.data.curves) == 1       # Ctrl+Z: the last stroke goes
    np.testing.assert_array_equal(_positions(ob), first)


def test_a_two_point_stroke_is_as_long_as_drawn_and_a_tap_is_left_out_by_name(scene, addon, capfd):
    """Issue 34 (part 12). A Grease Pencil stroke of 2 points makes the strand it spans on the
    drawing plane through its root — seen from the camera, the stroke as drawn: the camera's rays
    through its ends, cut by the plane — as long as the same stroke in 20 points. A tap (a stroke
    of 2 points in one place; a press and release in Draw Hair) made a strand of no length, every
    point on the root, unsaid; it is left out by name, and the Draw Hair session says why."""
    from hair_wig_addon.operators import blender_io as io
    from hair_wig_addon.operators.draw_ops import DrawSession, rays

    head, ob = _scene()
    ob.hair_wig.draw.keep_outside = False
    two = _stroke(_front(0.2, 0.5), [0.3, -1.0, 0.4], k=2)
    tap = np.repeat(two[:1], 2, axis=0)
    twenty = _stroke(_front(-0.2, 0.5), [-0.1, -1.0, 0.4], k=20)
    ob.hair_wig.draw.strokes = _grease_pencil([two, tap, twenty])
    capfd.readouterr()
    assert bpy.ops.hair_wig.strokes_to_hair() == {"FINISHED"}
    assert "stroke 2 of layer 'Lines' of 'Drawing' has no length (a tap): left out" in capfd.readouterr().out
    assert len(ob.data.curves) == 2
    p = _positions(ob).reshape(2, 16, 3)
    root = p[0, 0]
    # the stroke's ends through the camera, cut by the plane through the root square to the view (+y)
    ends = EYE + (two - EYE) * ((root[1] - EYE[1]) / (two[:, 1] - EYE[1]))[:, None]
    ends[0] = root
    length = np.linalg.norm(np.diff(p, axis=1), axis=2).sum(axis=1)
    # float32 storage of 16 points |x| <= 1 (1 rounding each end of 15 segments), the plane
    # crossing here in float64 from float32 stroke points (1 rounding of |x| ~5 from the eye)
    assert length[0] == pytest.approx(np.linalg.norm(ends[1] - ends[0]), abs=rounding(5.0, 2 * 15 + 2))
    assert length[0] > 1.3 * np.linalg.norm(two[1] - two[0])           # longer than on the nearer Grease Pencil plane
    # the same straight stroke in 20 points: its strand is as long as its ends span on the plane
    ends20 = EYE + (twenty[[0, -1]] - EYE) * ((p[1, 0, 1] - EYE[1]) / (twenty[[0, -1], 1] - EYE[1]))[:, None]
    assert length[1] == pytest.approx(np.linalg.norm(ends20[1] - p[1, 0]), abs=rounding(5.0, 2 * 15 + 2))
    # the session: a tap makes nothing, and says why for the status bar
    session = DrawSession(bpy.context, ob, lambda: io.camera_view(bpy.context.scene))
    o, d = rays(two[:1], io.camera_view(bpy.context.scene))
    assert session.press(o[0], d[0], 0.0)
    session.move(o[0], d[0], 0.1)
    assert len(session.release()) == 0 and len(ob.data.curves) == 2
    assert session.refused == "The stroke has no length (a tap): left out"
    with pytest.raises(RuntimeError, match=r"no stroke of 'Drawing.001' makes a strand: stroke 1 of layer "
                                           r"'Lines' of 'Drawing.001' has no length \(a tap\)"):
        ob.hair_wig.draw.strokes = _grease_pencil([tap])
        bpy.ops.hair_wig.strokes_to_hair()


def test_the_last_key_pose_roots_are_shown_to_redraw_from(scene, addon):
    from hair_wig_addon.operators.draw_ops import previous_key_pose_roots

    head, ob = _scene()
    ob.hair_wig.draw.strokes = _grease_pencil([_stroke(_front(0.2, 0.5), [0.9, -1.0, -0.6]),
                                               _stroke(_front(-0.3, 0.4), [-1.0, -1.0, -0.8])])
    assert bpy.ops.hair_wig.strokes_to_hair() == {"FINISHED"}
    assert bpy.ops.hair_wig.enable() == {"FINISHED"}
    bpy.context.scene.frame_set(1)
    assert bpy.ops.hair_wig.record_key_pose() == {"FINISHED"}
    assert len(previous_key_pose_roots(ob, 1)) == 0               # none before the first
    roots = previous_key_pose_roots(ob, 20)
    p = _positions(ob)
    # the key pose's float32 copy of the points, carried by the object's matrix in float64
    np.testing.assert_allclose(roots, p[[0, 16]], rtol=0, atol=rounding(magnitude(p), AFFINE, eps=EPS64))


def test_the_tools_say_what_they_need(scene, addon):
    """No surface, no drawing picked, no 3D view: the buttons are off (their tooltips say why)."""
    head, ob = _scene()
    assert not bpy.ops.hair_wig.strokes_to_hair.poll()            # no Grease Pencil picked
    assert not bpy.ops.hair_wig.draw_hair.poll()                  # no 3D view in the background
    ob.hair_wig.draw.strokes = _grease_pencil([_stroke(_front(0.2, 0.5), [0.9, -1.0, -0.6])])
    assert bpy.ops.hair_wig.strokes_to_hair.poll()
    ob.data.surface = None
    assert not bpy.ops.hair_wig.strokes_to_hair.poll()            # nothing to draw on


def test_this_view_needs_a_3d_view(scene, addon):
    head, ob = _scene()
    d = ob.hair_wig.draw
    d.strokes, d.view = _grease_pencil([_stroke(_front(0.2, 0.5), [0.9, -1.0, -0.6])]), "VIEW"
    with pytest.raises(RuntimeError, match="This View needs a 3D view; use Active Camera"):
        bpy.ops.hair_wig.strokes_to_hair()
    assert len(ob.data.curves) == 0                               # nothing made
