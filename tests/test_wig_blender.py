"""The wig pipeline driven from a Blender scene (real bpy): scalp space against Blender's own
"Deform Curves on Surface", collision on Suzanne, keyed magnets, Wind fields and gravity."""

import bpy
import numpy as np
import pytest
import scenes
from tolerance import AFFINE, FOLLOW, NORM, SEGMENT, magnitude, rounding

# Our scalp space against Blender's Deform Curves on Surface (both float32 in the end): per
# point, the root's position interpolated (5 roundings of |x|) and the strand carried by the
# frame change, S q = R (q − o0) + o1, then blended by the attachment (10 of |x|), on each side;
# the frames themselves (corner normals interpolated and normalised, two cross products
# normalised: ~20 roundings of 1 each, ours in float64 but Blender's in float32) turn the
# strand's points about their root by that, x the strand's length.
CARRIED = 2 * (5 + 10)
FRAME = 20


def strand_length(pts, counts):
    """The longest strand's reach from its root (the lever a frame's rounding turns)."""
    first = np.repeat(np.r_[0, np.cumsum(counts)[:-1]], counts)
    return float(np.linalg.norm(pts - pts[first], axis=1).max())


@pytest.fixture
def glue(addon):
    from hair_wig_addon.operators import baking, blender_io
    return baking, blender_io


@pytest.fixture
def reader(addon):
    from hair_wig_addon.operators import scene_reader
    return scene_reader


def evaluated(io, ob, frame):
    bpy.context.scene.frame_set(frame)
    return io.read_evaluated_points(ob, bpy.context.evaluated_depsgraph_get())


def test_scalp_space_agrees_with_deform_curves_on_surface(scene, glue):
    baking, io = glue
    bpy.ops.mesh.primitive_uv_sphere_add(segments=24, ring_count=12, radius=1.0)
    head = bpy.context.active_object
    bpy.ops.object.shade_smooth()
    head.add_rest_position_attribute = True
    head.shape_key_add(name="Basis")
    key = head.shape_key_add(name="Squash", from_mix=False)
    co = np.empty(len(key.data) * 3, np.float32)
    key.data.foreach_get("co", co)
    co = co.reshape(-1, 3)
    x, y, z = co.T
    twisted = np.stack([x * np.cos(0.6 * z) - y * np.sin(0.6 * z), x * np.sin(0.6 * z) + y * np.cos(0.6 * z),
                        0.8 * z + 0.2 * x * x], 1)
    key.data.foreach_set("co", twisted.ravel())
    key.value = 0.0
    key.keyframe_insert("value", frame=1)
    key.value = 1.0
    key.keyframe_insert("value", frame=5)
    ob, _ = scenes.uv_hair_on(head, 300)
    s = ob.hair_wig
    s.use_length = s.use_collision = False
    scene.frame_start, scene.frame_end = 1, 5
    ob.modifiers.new("Surface Deform", "NODES").node_group = scenes.deform_on_surface_group()
    blender = {f: evaluated(io, ob, f) for f in (1, 3, 5)}
    assert np.abs(blender[5] - blender[1]).max() > 0.2           # the surface really deformed
    cache = baking.compute(bpy.context, ob, 1, 5)
    lever = strand_length(cache.frame(1), cache.hair.counts)
    for f, want in blender.items():
        err = np.abs(cache.frame(f) - want).max()
        # (CARRIED above); a different frame definition would be off by centimetres
        tol = rounding(magnitude(want), CARRIED) + rounding(lever, 2 * FRAME)
        assert err <= tol, (f, err, tol)


def _skin_distance(head, points, frame):
    """Distance (N,) of ``points`` (world = head space here) to ``head`` as Blender evaluates it
    at ``frame`` (its BVH tree)."""
    from mathutils.bvhtree import BVHTree

    bpy.context.scene.frame_set(frame)
    tree = BVHTree.FromObject(head, bpy.context.evaluated_depsgraph_get())
    return np.array([tree.find_nearest(p)[3] for p in points.tolist()])


def test_follow_skin_through_a_subdivision_surface_on_an_armature_bent_head(scene, glue):
    """Issue 14 part 4: the usual head — an armature bends it, a Subdivision Surface smooths it
    after — was refused for Follow Skin. The roots now ride on the subdivided skin Blender
    evaluates: the groom untouched at rest, every root as far from the bent skin as it was from
    the skin at rest, the strands moving as Blender's own Deform Curves on Surface moves them."""
    baking, io = glue
    bpy.ops.mesh.primitive_uv_sphere_add(segments=24, ring_count=12, radius=1.0)
    head = bpy.context.active_object
    bpy.ops.object.shade_smooth()
    scenes.armature_bend(head, (1, 5), base=-1.0, joint=0.8, top=1.6, ramp=(-0.4, 0.5), turn=(0.5, 0.0, 0.3))
    head.modifiers.new("Subdivision", "SUBSURF").levels = 1
    ob, pts = scenes.uv_hair_on(head, 300)
    s = ob.hair_wig
    s.use_length = s.use_collision = False
    cache = baking.compute(bpy.context, ob, 1, 5)
    assert not cache.warnings
    # at rest: at most a frame change of a surface that differs from its rest by rounding,
    # carried through S q and the attachment (10 roundings of |x|)
    assert np.abs(cache.frame(1) - pts).max() <= rounding(magnitude(pts), 10)
    first = io.read_hair(ob).offsets[:-1]
    rest = _skin_distance(head, pts[first], 1)
    bent = _skin_distance(head, cache.frame(5)[first], 5)
    moved = np.abs(cache.frame(5)[first] - pts[first]).max()
    # with Blender's stack on the same hair (it needs the surface's rest positions)
    head.add_rest_position_attribute = True
    ob.modifiers.new("Surface Deform", "NODES").node_group = scenes.deform_on_surface_group()
    blender = {f: evaluated(io, ob, f) for f in (1, 5)}
    theirs = _skin_distance(head, blender[5][first], 5) - _skin_distance(head, blender[1][first], 1)
    motion = np.abs((cache.frame(5) - pts) - (blender[5] - blender[1])).max()
    assert moved > 0.3                                            # the bone really bent the skin
    assert np.abs(bent - rest).max() <= 5e-4 * 2.0               # measured 1.4e-4
    # Blender's stack keeps its roots' gap exactly but shifts the whole groom at rest (its
    # rest_position is not the subdivided surface): the motions agree within that shift.
    # Exactly: to its float32 rounding, the root carried (15 roundings of |x|) and its gap
    # measured by the BVH tree (closest point on a triangle: ~20) at both frames.
    assert np.abs(theirs).max() <= rounding(magnitude(blender[5], blender[1]), 2 * (15 + 20))
    assert np.abs((cache.frame(5) - pts) - (blender[5] - blender[1])).max() <= np.abs(blender[1] - pts).max()
    # the head alone would leave the skin
    s.use_scalp = False
    ob.modifiers.remove(ob.modifiers["Surface Deform"])
    head_only = baking.compute(bpy.context, ob, 1, 5)
    assert np.abs(_skin_distance(head, head_only.frame(5)[first], 5) - rest).max() > 0.05


def _root_gaps(hair, head, frame):
    """How far (N,) the root of every curve Blender evaluates for ``hair`` (guides and children,
    whatever its modifiers make) lies from ``head``'s evaluated skin at ``frame``."""
    from mathutils.bvhtree import BVHTree

    scene = bpy.context.scene
    scene.frame_set(frame)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    cv = hair.evaluated_get(depsgraph).data
    pos = np.empty(len(cv.points) * 3, np.float32)
    cv.attributes["position"].data.foreach_get("vector", pos)
    offsets = np.empty(len(cv.curves) + 1, np.int32)
    cv.curve_offset_data.foreach_get("value", offsets)
    to_head = np.linalg.solve(np.array(head.evaluated_get(depsgraph).matrix_world),
                              np.array(hair.evaluated_get(depsgraph).matrix_world))
    roots = pos.reshape(-1, 3)[offsets[:-1]] @ to_head[:3, :3].T + to_head[:3, 3]
    tree = BVHTree.FromObject(head, depsgraph)
    return np.array([tree.find_nearest(r)[3] for r in roots.tolist()])


@pytest.mark.parametrize("subdivided", [False, True])
def test_quick_fur_children_stay_on_a_bending_skin_after_the_bake(scene, glue, subdivided):
    """Issue 14 part 5: Quick Fur on a head an armature bends, with or without an (unapplied)
    Subdivision Surface after the armature. Its stack carries guides and children with the skin
    (4.5: Surface Deform; 5.2: Interpolate Hair Curves), so the bake is stored in the skin's rest
    space and that stack puts it back on the skin: every child root is as close to the bent skin
    as with Blender's own stack (before: 0.35 off on 4.5, 0.23 on 5.2; subdivided 0.40 and 0.28,
    and 4.5 moved the subdivided groom 0.22 at rest), the groom is as the artist saw it at rest
    (on a subdivided head that is Blender's own shifted groom), and the children follow the
    magnet-pulled guides."""
    _, io = glue
    bpy.ops.mesh.primitive_monkey_add(size=2.0, calc_uvs=True)
    head = bpy.context.active_object
    head.name = "Head"
    scenes.armature_bend(head, (1, 6), base=-1.2, joint=0.9, top=2.0, ramp=(-0.6, 0.3))
    if subdivided:
        head.modifiers.new("Subdivision", "SUBSURF").levels = 2
    bpy.ops.object.select_all(action="DESELECT")
    head.select_set(True)
    bpy.context.view_layer.objects.active = head
    assert bpy.ops.object.quick_fur(density="LOW") == {"FINISHED"}
    hair = next(o for o in scene.objects if o.type == "CURVES")
    scene.frame_start, scene.frame_end = 1, 6
    theirs = _root_gaps(hair, head, 6)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    scene.frame_set(1)
    groom = io.read_evaluated_points(hair, depsgraph).copy()
    bpy.context.view_layer.objects.active = hair
    bpy.ops.hair_wig.enable()
    hair.hair_wig.use_collision = False
    scenes.keyed_magnet(hair, "Pull", (0.0, 0.6, 1.0), (0.4, 0.0, 0.0), (1, 6), 1.2)
    bpy.context.view_layer.objects.active = hair
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    ours = _root_gaps(hair, head, 6)
    assert len(ours) == len(theirs) > 500
    # the baked roots in the skin's rest space (into head-local space and back: 7 roundings
    # each) carried by the same stack, both gaps measured by the BVH tree (~20 each), of |x|
    big = magnitude(groom)
    assert ours.max() <= theirs.max() + rounding(big, 2 * AFFINE + 2 * 20), (ours.max(), theirs.max())
    assert all(m.show_viewport and m.show_render for m in hair.modifiers)       # nothing switched off
    scene.frame_set(1)
    # at rest: into head-local space and back (7 each) and the length walk re-placing the
    # guides' points root to tip; children and noise follow the guides linearly
    guides = int(np.diff(io.read_hair(hair).offsets).max())
    still = rounding(big, 2 * AFFINE + FOLLOW * guides)
    assert np.abs(io.read_evaluated_points(hair, depsgraph) - groom).max() <= still
    scene.frame_set(3)
    moved = np.linalg.norm(io.read_evaluated_points(hair, depsgraph) - groom, axis=1)
    assert moved.max() > 0.1
    # and without the add-on's help nothing is lost: clearing gives Blender's stack back, the
    # same groom evaluated by the same Blender: the same bits
    assert bpy.ops.hair_wig.clear_bake() == {"FINISHED"}
    np.testing.assert_array_equal(_root_gaps(hair, head, 6), theirs)


def suzanne_dragged(strands):
    """Suzanne with ``strands`` x 8 hair and a magnet keyed from above her to below, dragging
    the hair through her head (frames 1-6)."""
    bpy.ops.mesh.primitive_monkey_add(size=2.0, calc_uvs=True)
    head = bpy.context.active_object
    ob, pts = scenes.uv_hair_on(head, strands, points=8, length=0.4)
    bpy.ops.object.empty_add(location=(0, 0, 1.5))
    magnet = bpy.context.active_object
    magnet.hair_wig_magnet.radius = 3.0
    magnet.hair_wig_magnet.multiplier = 2.0
    magnet.keyframe_insert("location", frame=1)
    magnet.location = (0.3, -0.5, -0.5)
    magnet.keyframe_insert("location", frame=6)
    ob.hair_wig.magnets.add().object = magnet
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 6
    return head, ob, pts, magnet


def _solid_distance(vertices, triangles):
    """Exact signed distances to Suzanne as a solid (her open sockets closed, her eyes' backs
    inside her left out: ``collision.solid``), inside by the winding number of every triangle
    summed — not the add-on's field. Signed by her mesh's nearest feature alone, a point behind
    her eye, in her head, reads outside; one in front of the eye's back, inside."""
    from hair_wig_addon.hair_wig.collision import exact_signed_distance, solid
    from hair_wig_addon.hair_wig.kernels import winding

    v, t = np.asarray(vertices, np.float64), np.asarray(triangles, np.int64)
    s = solid.Solid(v, t)
    whole = s.vertices(v)

    def distance(points, *_):
        d = np.abs(exact_signed_distance(points, whole, s.triangles))
        w = np.empty(len(points))
        winding.winding_exact(np.ascontiguousarray(points, np.float64), whole, s.whole, w)
        return np.where(w > 0.5, -d, d)
    return distance


@pytest.mark.parametrize("method", ["FIELD", "RAY"])
def test_collision_keeps_hair_out_of_suzanne(scene, glue, reader, method):
    """Hair dragged through Suzanne by a magnet ends outside her: by the exact closest-triangle
    distance (not the add-on's field) with the default method, by the exact ray test with the
    patent's; no segment stretches."""
    baking, io = glue
    head, ob, pts, magnet = suzanne_dragged(400)
    ob.hair_wig.collision_method = method
    mesh = io.read_mesh(head, bpy.context.evaluated_depsgraph_get())
    t = np.tile(np.linspace(0, 1, 8), 400)
    exact_signed_distance = _solid_distance(mesh.positions, mesh.tri_verts)
    rest_d = exact_signed_distance(pts, mesh.positions, mesh.tri_verts)
    seg0 = np.linalg.norm(np.diff(pts.reshape(400, 8, 3), axis=1), axis=2)
    for offset in (0.0, 0.02):
        ob.hair_wig.collision_offset = offset
        wig = reader.bind(bpy.context, ob).wig
        cache = baking.compute(bpy.context, ob, 1, 6)
        p = cache.frame(6).astype(np.float64)
        moved = np.abs(cache.frame(6) - pts).max()
        assert moved > 0.3
        seg = np.linalg.norm(np.diff(p.reshape(400, 8, 3), axis=1), axis=2)
        # relative to the shortest segment: the walk's step (8) and a push back onto the
        # segment's sphere (5) of coordinates, the ends' difference here (2); sqrt(L² − h²) and
        # its ratio (8) and the norm (4) of the length. A stretch is percents.
        kept = rounding(magnitude(p) / seg0.min(), SEGMENT + 5 + 2) + rounding(1.0, 8 + NORM)
        assert np.abs(seg / seg0 - 1).max() < kept
        if method == "FIELD":
            limit = np.minimum(offset, rest_d[t > 0])
            field = wig.colliders[0].field
            near = rest_d[t > 0] > -field.exact_reach
            worst = 0.0
            for f in range(2, 7):                                # every frame the walk made
                pf = cache.frame(f).astype(np.float64)[t > 0]
                d = exact_signed_distance(pf, mesh.positions, mesh.tri_verts)
                # Issue 13 asks for 1e-3 x head size. With an offset, hair this groom passes
                # through the head cannot always reach its offset surface round Suzanne's eyes at
                # a segment's length from a point inside: 0.087 short measured at frame 3 and
                # 0.045 at frame 6 since her eyes are part of her solid (0.033 and 7e-5 when the
                # field took the nearest shell's side: a push from inside her eye now leaves by
                # the crack where eye and head cross, README Limits): this bounds that, not the
                # goal. Hair the groom has deeper
                # inside than the exact band keeps its depth as the grid measures it: within
                # the grid's own error bound there (half a cell, two where the surface folds,
                # as round the eyes), which the field states per cell.
                tol = np.where(near, 2e-3 if offset == 0 else 0.1, field.error_at(pf))
                assert (d >= limit - tol).all(), (offset, f, (limit - d).max())
                worst = max(worst, float((limit - d)[near].max()))
            # the bake measures what is left with its own field: near the surface, where its
            # distances are exact, it does not under-report (its figure is the worst frame's);
            # its float32 distance query of a point (~12 roundings of |x|) against the float64
            # exact distance of the same float32 point
            assert cache.penetration >= worst - rounding(magnitude(p), 12)
        else:
            # the patent's test, along rays from the centre through its radius map, against
            # each point's own rest clearance along its ray (hair the groom has inside stays)
            collider = wig.colliders[0]
            got = collider.field.signed_distance(p)
            worst = float((collider.limit[t > 0] - got[t > 0]).max())
            # Kept lengths and a ray surface that wraps Suzanne's ears like a helmet cannot both
            # hold: the patent's test stretched hair 9x here; now nothing stretches (above) and
            # what stays inside its ray surface (0.44 measured) is reported by the bake.
            assert worst > 0.1 and abs(worst - cache.penetration) < 0.02 * worst


def test_the_same_hair_with_the_whole_scene_scaled_x100_and_moved_1000_units(scene, glue):
    """Issue 13: a head, its hair and a keyed magnet under one parent scaled x100 and moved
    1000 units from the origin, the magnet's radius and the head offset given x100 (they are
    world distances): the baked hair, in its object's space, is the same as at scale 1 — through
    scalp space, magnets, dynamics, compression, length and collision."""
    baking, io = glue
    head, ob, pts, magnet = suzanne_dragged(300)
    bpy.ops.object.empty_add(location=(0, 0, 0))
    root = bpy.context.active_object
    for child in (head, ob, magnet):
        child.parent = root
    results = []
    for scale, shift in ((1.0, 0.0), (100.0, 1000.0)):
        root.scale = (scale,) * 3
        root.location = (shift, -shift, shift)
        magnet.hair_wig_magnet.radius = 3.0 * scale
        ob.hair_wig.collision_offset = 0.01 * scale
        bpy.context.view_layer.update()
        cache = baking.compute(bpy.context, ob, 1, 6)
        results.append((cache.frame(6).astype(np.float64), cache.penetration / scale))
    (p1, pen1), (p100, pen100) = results
    assert np.abs(p1 - pts).max() > 0.2                          # the magnet does move the hair
    err = np.abs(p100 - p1).max()
    # Blender's float32 world matrices 1000 units out (parent x child: 7 roundings each, for the
    # hair, the head and the magnet) reach head-local space (÷ 100) off by their rounding of
    # |world| / 100; from there one frame at a time (no dynamics here: frames do not add up):
    # primary (12), compression (12) and per point of the 8-point walk a length step (FOLLOW) and a
    # push-out (~20), carried to the tip, of |x|. A unit slip would move hair by centimetres.
    world = (1000.0 * np.sqrt(3.0) + 100.0 * magnitude(p1)) / 100.0
    tol = rounding(world, 3 * 2 * AFFINE) + rounding(magnitude(p1), 12 + 12 + 8 * (FOLLOW + 20))
    assert err <= tol, (err, tol)                                # x head size
    assert abs(pen100 - pen1) <= tol


def straight_wig(scene, **settings):
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.2, location=(0, 0, -5))   # a head out of the way
    head = bpy.context.active_object
    pts, counts = scenes.straight_strands(30, 6)
    ob = scenes.curves_hair("Hair", pts, counts)
    ob.hair_wig.enabled = True
    ob.hair_wig.head = head
    ob.hair_wig.use_length = ob.hair_wig.use_collision = False
    for k, v in settings.items():
        setattr(ob.hair_wig, k, v)
    bpy.ops.object.empty_add(location=(0, 0, 0))
    magnet = bpy.context.active_object
    ms = magnet.hair_wig_magnet
    ms.radius, ms.multiplier = 100.0, 2.0                      # 'cap': full weight everywhere
    ob.hair_wig.magnets.add().object = magnet
    return ob, head, magnet, pts, np.tile(np.linspace(0, 1, 6), 30)[:, None]


def straight(pts, head, move=0.0, parented=False):
    """How far ``straight_wig``'s bake can round where a full-weight magnet moves the hair by
    ``move`` (its length) scaled by the flex: into the head's space 5 m down and back (7 roundings
    each of coordinates up to that far), the blend and G p (9), the flex read from Blender's
    curve table (8 roundings of 1, x the move); parented to a turned head, Blender's float32
    parent matrices too (7 each, for the hair and the magnet)."""
    local = magnitude(np.asarray(pts, np.float64) - np.array(head.matrix_world.translation)) + move
    return rounding(local, 2 * AFFINE + 9 + (2 * AFFINE if parented else 0)) + rounding(move, 8)


def test_keyed_magnet_moves_hair_by_flex_times_its_motion(scene, glue):
    baking, _ = glue
    ob, head, magnet, pts, t = straight_wig(scene)
    magnet.keyframe_insert("location", frame=1)
    magnet.location = (0.5, 0.0, -0.25)
    magnet.keyframe_insert("location", frame=10)
    cache = baking.compute(bpy.context, ob, 1, 10)
    np.testing.assert_allclose(cache.frame(1), pts, rtol=0, atol=straight(pts, head))
    move = float(np.hypot(0.5, 0.25))
    np.testing.assert_allclose(cache.frame(10), pts + t * np.array([0.5, 0, -0.25], np.float32), rtol=0,
                               atol=straight(pts, head, move))
    scene.frame_set(5)
    mid = np.array(magnet.matrix_world.translation)             # Blender interpolates the keys
    # (and the magnet's float32 location: 1 more rounding of the move)
    np.testing.assert_allclose(cache.frame(5), pts + t * mid.astype(np.float32), rtol=0,
                               atol=straight(pts, head, move) + rounding(move, 1))


def test_wind_field_and_gravity_push_a_dynamic_magnet(scene, glue):
    baking, io = glue
    ob, head, magnet, pts, t = straight_wig(scene)
    ms = magnet.hair_wig_magnet
    ms.dynamic, ms.stiffness, ms.damping, ms.mass = True, 50.0, 20.0, 1.0
    scene.use_gravity = False
    bpy.ops.object.effector_add(type="WIND", rotation=(0, np.pi / 2, 0))     # blows along +X
    wind = bpy.context.active_object
    wind.field.strength = 5.0
    winds = io.read_force_fields(scene, bpy.context.evaluated_depsgraph_get())
    # the wind's axis from Blender's float32 rotation (its sine and cosine, the product: 7)
    assert len(winds) == 1 and np.allclose(winds[0].direction, [1, 0, 0], rtol=0, atol=rounding(1.0, AFFINE))
    cache = baking.compute(bpy.context, ob, 1, 96)
    np.testing.assert_allclose(cache.frame(1), pts, rtol=0, atol=straight(pts, head))   # first frame at rest
    # settled: the overdamped magnet's slow rate ω (ζ − √(ζ² − 1)) = 2.93/s has had 95 frames
    # to close its 0.1 offset (1e-6 left), in float64; then the bake's rounding
    settle = 0.1 * np.exp(-2.93 * 95 / 24)
    np.testing.assert_allclose(cache.frame(96), pts + t * np.array([5.0 / 50.0, 0, 0], np.float32), rtol=0,
                               atol=settle + straight(pts, head, 0.1))
    # Gravity, not wind. The tilt is measured from the head's rest pose (SPEC §4): a head rotated
    # at rest (a model built Y-up) is upright there, so nothing sags; turned upside down from that
    # pose, the magnet settles the full m·g/k below its target.
    bpy.data.objects.remove(wind)
    scene.use_gravity = True
    upright = baking.compute(bpy.context, ob, 1, 96)
    np.testing.assert_allclose(upright.frame(96), pts, rtol=0, atol=straight(pts, head))
    for child in (ob, magnet):                                  # hair and magnet go with the head
        child.parent = head
        child.matrix_parent_inverse = head.matrix_world.inverted()
    head.rotation_euler = (np.pi / 2, 0, 0)
    bpy.context.view_layer.update()
    y_up = baking.compute(bpy.context, ob, 1, 96)
    np.testing.assert_allclose(y_up.frame(96), pts, rtol=0, atol=straight(pts, head, parented=True))
    head.keyframe_insert("rotation_euler", frame=1)
    head.rotation_euler = (np.pi / 2 + np.pi, 0, 0)
    head.keyframe_insert("rotation_euler", frame=10)
    flipped = baking.compute(bpy.context, ob, 1, 192)     # the 5-unit swing settles (overdamped)
    np.testing.assert_allclose(flipped.frame(1), pts, rtol=0, atol=straight(pts, head, parented=True))
    scene.frame_set(192)
    sag = 9.81 / 50.0
    hair_now = np.array(ob.matrix_world)
    world = (hair_now @ np.c_[flipped.frame(192), np.ones(len(pts))].T).T[:, :3]
    rest_world = (hair_now @ np.c_[pts, np.ones(len(pts))].T).T[:, :3]
    # settled: the 5-unit swing closes at 2.93/s for the 182 frames after the flip (1e-9 left);
    # then the bake's rounding, parented, and its float64 world here
    settle = 5.0 * np.exp(-2.93 * 182 / 24)
    np.testing.assert_allclose(world - rest_world, t * np.array([0, 0, -sag]), rtol=0,
                               atol=settle + straight(pts, head, sag, parented=True))


def test_magnet_errors_name_the_slot_and_the_magnet(scene, glue, reader):
    baking, _ = glue
    ob, head, magnet, pts, t = straight_wig(scene)
    other = bpy.data.scenes.new("Other")
    scene.collection.objects.unlink(magnet)
    other.collection.objects.link(magnet)
    with pytest.raises(Exception, match="'Hair': magnet 'Empty' is not in scene 'Scene'"):
        baking.compute(bpy.context, ob, 1, 2)
    other.collection.objects.unlink(magnet)
    scene.collection.objects.link(magnet)
    ob.hair_wig.magnets.add()                   # a slot whose Empty is gone, before any update
    with pytest.raises(Exception, match="'Hair': magnet slot 2 is empty"):
        reader.magnet_objects(scene, ob)
    bpy.data.objects.remove(magnet)
    bpy.context.view_layer.update()             # deleting a magnet cleans the wig's list
    assert len(ob.hair_wig.magnets) == 0
    assert baking.compute(bpy.context, ob, 1, 2).num_frames == 2


def test_a_deleted_magnet_leaves_the_wig_and_a_deleted_head_stops_its_bake(scene, glue, reader):
    """Issue 34 part 11, one rule as the README says: deleting a magnet's Empty in the viewport
    (it lingers in no scene, held by its slot) takes it off the wig, which bakes on; deleting the
    head stops the wig's bake, naming it, until a head is picked again (it read the deleted
    head's mesh silently)."""
    baking, _ = glue
    ob, head, magnet, pts, t = straight_wig(scene)
    for o in bpy.context.selected_objects:
        o.select_set(False)
    magnet.select_set(True)
    bpy.context.view_layer.objects.active = magnet
    assert bpy.ops.object.delete() == {"FINISHED"}
    bpy.context.view_layer.update()
    assert len(ob.hair_wig.magnets) == 0
    assert baking.compute(bpy.context, ob, 1, 2).num_frames == 2
    head.select_set(True)
    bpy.context.view_layer.objects.active = head
    assert bpy.ops.object.delete() == {"FINISHED"}
    assert ob.hair_wig.head is not None and not ob.hair_wig.head.users_scene      # lingers, held
    with pytest.raises(Exception, match="'Hair': its head 'Sphere' was deleted .*pick the head again"):
        baking.compute(bpy.context, ob, 1, 2)
    bpy.context.view_layer.objects.active = ob
    with pytest.raises(RuntimeError, match="its head 'Sphere' was deleted"):
        bpy.ops.hair_wig.bake()


def test_a_quick_fur_groom_bakes_under_its_whole_modifier_stack(scene, glue):
    """Blender's own Quick Fur (guides, Interpolate Hair Curves children, noise, frizz; on 5.2 a
    Hair Dynamics modifier pinned last, on 4.5 Surface Deform) on a turning Suzanne: the playback
    goes first, so the children follow the baked guides, and at the rest frame the whole groom is
    as it was. (Collision is off here: what it does to a groom at rest is issue 13's.)"""
    _, io = glue
    bpy.ops.mesh.primitive_monkey_add()
    head = bpy.context.active_object
    head.name = "Head"
    scenes.keyed_head_turn(head, 1, 12)
    assert bpy.ops.object.quick_fur(density="LOW") == {"FINISHED"}
    hair = next(o for o in scene.objects if o.type == "CURVES")
    stack = [m.name for m in hair.modifiers]
    scene.frame_start, scene.frame_end = 1, 12
    depsgraph = bpy.context.evaluated_depsgraph_get()
    scene.frame_set(1)
    groom = io.read_evaluated_points(hair, depsgraph).copy()
    assert len(groom) > 5 * len(hair.data.points)                 # children are generated
    bpy.context.view_layer.objects.active = hair
    bpy.ops.hair_wig.enable()
    hair.hair_wig.use_collision = False
    scene.cursor.location = (0.0, 0.0, 1.0)                       # over the top of the head
    bpy.ops.hair_wig.add_magnet(radius=1.5)
    magnet = hair.hair_wig.magnets[0].object
    magnet.keyframe_insert("location", frame=1)
    magnet.location.x += 0.3
    magnet.keyframe_insert("location", frame=12)
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    assert [m.name for m in hair.modifiers] == [io.MODIFIER_NAME] + stack
    scene.frame_set(1)
    at_rest = io.read_evaluated_points(hair, depsgraph).copy()
    assert at_rest.shape == groom.shape
    # into head-local space and back (7 each) and the length walk re-placing the guides'
    # points root to tip; children, noise and frizz follow the guides, of |x|
    guides = int(np.diff(io.read_hair(hair).offsets).max())
    assert np.abs(at_rest - groom).max() <= rounding(magnitude(groom), 2 * AFFINE + FOLLOW * guides)
    scene.frame_set(12)
    moved = np.linalg.norm(io.read_evaluated_points(hair, depsgraph) - groom, axis=1)
    assert moved.max() > 0.1 and (moved > 0.01).mean() > 0.1       # children follow the pulled guides
