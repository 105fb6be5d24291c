"""The Rods dynamics layer from Blender (real bpy, seed 003 §8): chosen in the Dynamics panel's
settings, baked with the Bake operator on hair made by Style Hair, read back as Blender
evaluates the baked hair."""

import bpy
import numpy as np
import scenes
from tolerance import AFFINE, FOLLOW, NORM, SEGMENT, magnitude, rounding


def _evaluated(io, ob, frame):
    bpy.context.scene.frame_set(frame)
    return io.read_evaluated_points(ob, bpy.context.evaluated_depsgraph_get()).astype(np.float64)


def _styled_head():
    """Curled hair grown by Style Hair on a sphere head's upper half, made a wig with Rods."""
    bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0, segments=48, ring_count=24, calc_uvs=True)
    head = bpy.context.active_object
    head.name = "Head"
    c = np.empty(len(head.data.polygons) * 3)
    head.data.polygons.foreach_get("center", c)
    head.data.polygons.foreach_set("select", c.reshape(-1, 3)[:, 2] > 0.2)
    ob = scenes.empty_hair(head)
    st = ob.hair_wig.style
    st.roots, st.density, st.points, st.length = "GROW", 40.0, 12, 0.6
    st.curl, st.curl_radius, st.curl_turns = "HELIX", 0.05, 2.0
    assert bpy.ops.hair_wig.style_hair() == {"FINISHED"}
    assert bpy.ops.hair_wig.enable() == {"FINISHED"}
    s = ob.hair_wig
    s.use_secondary, s.dynamics_layer = True, "RODS"
    return bpy.context.scene, head, ob


def test_rods_bake_holds_the_styled_groom_keeps_lengths_stays_outside_and_lags_the_turn(scene, addon):
    from hair_wig_addon.operators import blender_io as io

    scene, head, ob = _styled_head()
    styled = io.read_hair(ob)
    pts = styled.points.astype(np.float64)
    scenes.keyed_head_turn(head, 1, 8, angle=0.9, lift=0.0)
    scene.frame_start, scene.frame_end = 1, 20
    s = ob.hair_wig
    s.rods_dynablend = 1.0                     # keyed: all of the rods' motion, then none at 20
    s.keyframe_insert("rods_dynablend", frame=19)
    s.rods_dynablend = 0.0
    s.keyframe_insert("rods_dynablend", frame=20)
    bpy.context.view_layer.objects.active = ob
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    # at rest: into head-local space and back (7 roundings each), the float64 layer's goal
    # stored as float32 (1), the length walk re-placing the 12 points root to tip, of |x|
    n = int(styled.counts.max())
    still = rounding(magnitude(pts), 2 * AFFINE + 1 + FOLLOW * n)
    np.testing.assert_allclose(_evaluated(io, ob, 1), pts, rtol=0, atol=still)     # the styled groom at rest
    inner = np.ones(len(pts) - 1, bool)
    inner[styled.offsets[1:-1] - 1] = False                                      # segments, not strand joins
    seg0 = np.linalg.norm(np.diff(pts, axis=0), axis=1)[inner]
    mesh = io.read_mesh(head, None, "UVMap")
    tri = mesh.positions[mesh.tri_verts]                  # the sphere is convex: outside = past a face's plane
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    plane = np.einsum("tk,tk->t", normal, tri[:, 0])
    # Lengths, relative to the shortest segment: the float64 chain stored as float32 (1 each
    # end), the walk's step (8) and a push back onto the segment's sphere (5), the turn to the
    # object (7 each end), of |x|; sqrt(L² − h²) and its ratio (8) and a norm (4) of L.
    kept = rounding(magnitude(pts) / seg0.min(), 2 + SEGMENT + 5 + 2 * AFFINE) + rounding(1.0, 8 + NORM)
    # Outside: the last to place a point is the push-out, onto the surface or its tangent plane
    # (outside a convex head): its foot, swing and sum (5), stored (1); the maps to the object
    # and back to the head here (7 each), of |x|. A point left inside is in by millimetres.
    outside = rounding(magnitude(pts), 5 + 1 + 3 * AFFINE)
    frames = {}
    for f in range(1, 21):
        frames[f] = p = _evaluated(io, ob, f)
        seg = np.linalg.norm(np.diff(p, axis=0), axis=1)[inner]
        assert np.abs(seg / seg0 - 1).max() <= kept, f                           # no strand stretches
        local = (p - np.array(head.matrix_world.translation)) @ np.array(head.matrix_world.to_3x3())
        d = (local @ normal.T - plane).max(axis=1)
        assert d.min() > -outside, (f, d.min())                                  # none inside the head
    s.use_secondary = False                    # the same turn without dynamics
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    rigid = {f: _evaluated(io, ob, f) for f in (6, 20)}
    tips = styled.offsets[1:] - 1
    assert np.linalg.norm(frames[6][tips] - rigid[6][tips], axis=1).mean() > 0.01
    # dynablend keyed to 0: the layer shows its goal, but that goal went to the world and back
    # (7 + 1) before refinement, whose walk (root to tip) then rounds its own way in each bake
    np.testing.assert_allclose(frames[20], rigid[20], rtol=0,
                               atol=rounding(magnitude(pts), AFFINE + 1 + 2 * FOLLOW * n))


def test_the_panels_rod_settings_reach_the_layer_and_a_wind_moves_the_style(scene, addon):
    from hair_wig_addon.operators import baking, blender_io as io, profile_curves, scene_reader

    scene, head, ob = _styled_head()
    s = ob.hair_wig
    s.rods_stiffness, s.rods_response, s.rods_damping, s.rods_max_substeps = 7.0, 50.0, 3.0, 32
    s.rods_wobble = 0.5
    s.strands_friction = 0.5
    profile_curves.ensure(s, ob.name)
    profile_curves.set_preset(profile_curves.node(s, "rods_stiffness"), "LINEAR")
    rods = scene_reader.read_settings(s).rods
    assert (rods.stiffness, rods.beta, rods.damping, rods.max_substeps, rods.friction, rods.wobble) == \
        (7.0, 50.0, 3.0, 32, 0.5, 0.5)
    assert scene_reader.read_settings(s).strands is None and scene_reader.read_settings(s).secondary is None
    assert abs(rods.stiffness_profile(np.array([0.25]))[0] - 0.25) < 1e-3       # the curve drawn
    scene.frame_start, scene.frame_end = 1, 12
    bpy.context.view_layer.objects.active = ob
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    still = _evaluated(io, ob, 12)
    # nothing moves: the style (eq. 6 holds it to float64 round-off; the frames' float32
    # roundings do not add up, the layer's state is float64): as at rest above
    rest = io.read_hair(ob)
    held = rounding(magnitude(rest.points), 2 * AFFINE + 1 + FOLLOW * int(rest.counts.max()))
    np.testing.assert_allclose(still, rest.points, rtol=0, atol=held)
    bpy.ops.object.effector_add(type="WIND", rotation=(0.0, np.pi / 2, 0.0))     # blowing along +x
    bpy.context.active_object.field.strength = 30.0
    bpy.context.view_layer.objects.active = ob
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    blown = _evaluated(io, ob, 12)
    tips = io.read_hair(ob).offsets[1:] - 1
    assert (blown[tips, 0] - still[tips, 0]).mean() > 0.01                        # downwind
    # Stiffness and Dynablend are keyable: each frame's values reach the layer
    s.rods_stiffness, s.rods_dynablend = 7.0, 1.0
    s.keyframe_insert("rods_stiffness", frame=1)
    s.keyframe_insert("rods_dynablend", frame=1)
    s.rods_stiffness, s.rods_dynablend = 14.0, 0.5
    s.keyframe_insert("rods_stiffness", frame=12)
    s.keyframe_insert("rods_dynablend", frame=12)
    wig, head_ob, empties, surface = scene_reader.bind(bpy.context, ob)
    scene.frame_set(12)
    inp = scene_reader.frame_input(bpy.context, ob, head_ob, empties, surface, 12, wig=wig)
    assert (inp.strands_stiffness, inp.strands_dynablend) == (14.0, 0.5)
    wig.step(inp, wig.step(inp, None)[1])
    rods = wig.strands.groups[0][2]
    assert wig.strands.dynablend == 0.5 and np.allclose(rods.k, 2 * rods._k_per_unit * 7.0)
    ob.animation_data_clear()
    # too stiff for the steps allowed: softened, and the bake says so by name
    s.rods_stiffness, s.rods_response, s.rods_max_substeps = 1e4, 1e4, 2
    warnings = baking.compute(bpy.context, ob, 1, 3).warnings
    assert any("'Hair': Rods Stiffness × Response needs more steps a frame than the Steps Limit (2)" in w
               for w in warnings), warnings
