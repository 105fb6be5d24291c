"""Bad input, extreme settings and interruption through the operators (real bpy): every case is
answered by a message naming what is wrong, and the scene is left exactly as it was."""

import os

import bpy
import numpy as np
import pytest
import scenes
from tolerance import AFFINE, FOLLOW, magnitude, rounding


@pytest.fixture
def io(addon):
    from hair_wig_addon.operators import blender_io
    return blender_io


def wig_scene():
    """A sphere head turning over frames 1..10, Curves hair on it with one keyed magnet."""
    ob, head, magnet = scenes.keyed_wig(40, 6)
    bpy.context.scene.frame_set(3)
    return ob, head, magnet


def positions(ob):
    p = np.empty(len(ob.data.points) * 3, dtype=np.float32)
    ob.data.attributes["position"].data.foreach_get("vector", p)
    return p.reshape(-1, 3)


def set_positions(ob, p):
    ob.data.attributes["position"].data.foreach_set("vector", np.asarray(p, np.float32).ravel())
    ob.data.update_tag()


def snapshot(ob):
    """Everything a bake could change."""
    return (positions(ob).tobytes(), sorted(a.name for a in ob.data.attributes), [m.name for m in ob.modifiers],
            sorted(bpy.data.node_groups.keys()), sorted(bpy.data.actions.keys()),
            sorted(bpy.data.shape_keys.keys()), bpy.context.scene.frame_current, ob.get("_hair_wig_bake") is not None)


def refused(ob, pattern):
    """Bake is refused with ``pattern`` in its message and nothing in the scene changed."""
    before = snapshot(ob)
    with pytest.raises(RuntimeError, match=pattern):
        bpy.ops.hair_wig.bake()
    assert snapshot(ob) == before


def baked_finite(ob, io):
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    dg = bpy.context.evaluated_depsgraph_get()
    for f in range(1, 11):
        bpy.context.scene.frame_set(f)
        assert np.isfinite(io.read_evaluated_points(ob, dg)).all()


def _no_curves(ob, head, magnet):
    ob.data.remove_curves()


def _one_point_strand(ob, head, magnet):
    ob.data.add_curves([1])


def _nan(ob, head, magnet):
    p = positions(ob)
    p[7, 1] = np.nan
    set_positions(ob, p)


def _inf(ob, head, magnet):
    p = positions(ob)
    p[13, 2] = np.inf
    set_positions(ob, p)


def _deleted_magnet(ob, head, magnet):
    ob.hair_wig.magnets[0].object = None


def _other_scene(ob, head, magnet):
    other = bpy.data.scenes.new("Other")
    other.collection.objects.link(magnet)
    for c in list(magnet.users_collection):
        if c != other.collection:
            c.objects.unlink(magnet)


def _faceless_head(ob, head, magnet):
    mesh = bpy.data.meshes.new("Points")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0)], [], [])
    head.data = mesh


def _reversed_range(ob, head, magnet):
    ob.hair_wig.use_scene_range = False
    ob.hair_wig.frame_start, ob.hair_wig.frame_end = 10, 2


def _memory(ob, head, magnet):
    bpy.context.scene.hair_wig_memory_limit = 0.05
    ob.hair_wig.use_scene_range = False
    ob.hair_wig.frame_start, ob.hair_wig.frame_end = 1, 30000


def _far_offset(ob, head, magnet):
    ob.hair_wig.collision_offset = 39.0


def _no_head(ob, head, magnet):
    ob.data.surface = None
    ob.hair_wig.head = None


@pytest.mark.parametrize("edit, pattern", [
    (_no_curves, r"'Hair' has no curves yet: add hair first"),
    (_one_point_strand, r"'Hair': strand 40 has 1 point"),
    (_nan, r"'Hair': strand 1 has a NaN or infinite point position"),
    (_inf, r"'Hair': strand 2 has a NaN or infinite point position"),
    (_deleted_magnet, r"'Hair': magnet slot 1 is empty"),
    (_other_scene, r"'Hair': magnet 'Magnet Hair' is not in scene 'Scene'"),
    (_faceless_head, r"'Head' has no faces: hair cannot collide with it"),
    (_reversed_range, r"'Hair': frame range 10..2 is empty"),
    (_memory, r"needs about 0\.\d GiB, over the 0\.05 GiB memory limit .*fewer frames.*guide hairs"),
    (_no_head, r"'Hair' has no head"),
    (_far_offset, r"'Head': the distance hair keeps from it \(39\) is more than its own size \(2\): lower Head Offset"),
], ids=lambda v: v.__name__.strip("_") if callable(v) else None)
def test_bad_input_is_named_and_changes_nothing(scene, edit, pattern):
    ob, head, magnet = wig_scene()
    edit(ob, head, magnet)
    refused(ob, pattern)


def test_edited_hair_after_bake_is_refused_by_rebake_until_cleared_and_clear_keeps_the_edit(scene, io):
    ob, head, magnet = wig_scene()
    rest = positions(ob)
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    ob.data.add_curves([4])                    # points added after the bake
    assert io.edited_since_bake(ob) is not None
    assert bpy.ops.hair_wig.clear_bake() == {"FINISHED"}
    now = positions(ob)
    assert np.array_equal(now[:len(rest)], rest) and len(now) == len(rest) + 4
    baked_finite(ob, io)                       # and the edited hair bakes


@pytest.mark.parametrize("radius, exponent", [(0.0, 0.0), (-1.0, 2.0), (1e9, 0.0), (0.0, 20.0), (50.0, 20.0)])
def test_extreme_magnet_settings_bake_finite(scene, io, radius, exponent):
    ob, head, magnet = wig_scene()
    m = magnet.hair_wig_magnet
    m.radius, m.exponent = radius, exponent        # the UI clamps 0 and -1 to its minimum
    assert m.radius > 0
    magnet.location = ob.matrix_world @ ob.data.points[3].position   # right on a vertex
    magnet.keyframe_insert("location", frame=1)
    baked_finite(ob, io)


def test_zero_length_segments_and_collapsed_strands_bake(scene, io):
    ob, head, magnet = wig_scene()
    p = positions(ob)
    p[1] = p[0]                 # a repeated point
    p[6:12] = p[6]              # a whole strand collapsed onto its root
    set_positions(ob, p)
    ob.hair_wig.use_secondary = True
    baked_finite(ob, io)
    bpy.context.scene.frame_set(10)
    got = io.read_evaluated_points(ob, bpy.context.evaluated_depsgraph_get())
    # still collapsed: length 0 kept — each point set on its leader by a follow step (FOLLOW) and
    # mapped to the object (7), roundings of |x|
    assert np.ptp(got[6:12], axis=0).max() <= rounding(magnitude(got), FOLLOW + AFFINE)


def test_warnings_for_magnets_out_of_reach_and_heads_the_ray_test_cannot_handle(scene, io, addon):
    from hair_wig_addon.operators import baking

    ob, head, magnet = wig_scene()
    magnet.location = (40, 0, 0)
    magnet.keyframe_insert("location", frame=1)
    bpy.ops.hair_wig.set_rest_pose()
    assert baking.compute(bpy.context, ob, 1, 2).warnings == [
        "'Hair': magnet 'Magnet Hair' reaches no hair at its rest pose (radius 0.5), where the hair it "
        "moves is picked up; move its rest pose closer to the hair or widen it"]
    # an open bowl: no surface above the centre; then a mushroom: two crossings under the cap
    bowl = bpy.data.meshes.new("Bowl")
    v = [(np.cos(a) * np.sin(t), np.sin(a) * np.sin(t), -np.cos(t))
         for t in np.linspace(0, 1.2, 8) for a in np.linspace(0, 2 * np.pi, 16, endpoint=False)]
    faces = [(i * 16 + j, i * 16 + (j + 1) % 16, (i + 1) * 16 + (j + 1) % 16, (i + 1) * 16 + j)
             for i in range(7) for j in range(16)]
    bowl.from_pydata(v, [], faces)
    head.data = bowl
    assert len(baking.compute(bpy.context, ob, 1, 2).warnings) == 1   # any shape collides by its surface
    ob.hair_wig.collision_method = "RAY"                                # the patent's ray test cannot
    warnings = baking.compute(bpy.context, ob, 1, 2).warnings
    assert any("'Head' does not enclose its centre in" in w and "not collided" in w for w in warnings)
    bpy.data.objects.remove(head)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0)
    head = bpy.context.active_object
    head.name = "Mushroom"
    bpy.ops.mesh.primitive_cylinder_add(radius=2.0, depth=0.2, location=(0, 0, 0.9))
    cap = bpy.context.active_object
    cap.select_set(True)
    head.select_set(True)
    bpy.context.view_layer.objects.active = head
    bpy.ops.object.join()
    ob.hair_wig.head = head
    warnings = baking.compute(bpy.context, ob, 1, 2).warnings
    assert any("'Mushroom' is not star-shaped from its centre" in w and "ray test" in w for w in warnings)


def test_a_solver_blow_up_stops_the_bake_names_frame_and_strand_and_keeps_the_scene(scene, io):
    ob, head, magnet = wig_scene()
    magnet.location = (3e38, 0, 0)              # a key that sends the hair past float range
    magnet.keyframe_insert("location", frame=5)
    # the first strand the magnet reaches (a strand out of its reach keeps finite: 0 × its
    # overflowed motion is not summed)
    refused(ob, r"'Hair': the solution is not finite at frame 2, strand \d+; nothing was written")


def test_an_exception_in_the_middle_of_a_bake_leaves_the_scene_and_the_earlier_bake(scene, io, addon):
    from hair_wig_addon.operators import baking

    ob, head, magnet = wig_scene()
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    before = snapshot(ob)

    def boom(done, total):
        if done == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        baking.bake(bpy.context, ob, progress=boom)
    assert snapshot(ob) == before


def test_a_renamed_magnet_keeps_working(scene, io, addon):
    from hair_wig_addon.operators import baking

    ob, head, magnet = wig_scene()
    bpy.ops.hair_wig.set_rest_pose()
    expect = baking.compute(bpy.context, ob, 1, 10).positions
    magnet.name = "Fringe Magnet"              # slots hold the Empty itself, not its name
    assert ob.hair_wig.magnets[0].object == magnet
    assert np.array_equal(baking.compute(bpy.context, ob, 1, 10).positions, expect)


def _edited_mesh(mesh, extra_vertices=(), extra_faces=(), drop=None):
    """A copy of ``mesh`` with vertices and faces added, and without the faces whose centres
    satisfy ``drop``."""
    v = np.array([x.co for x in mesh.vertices])
    faces = [tuple(f.vertices) for f in mesh.polygons if drop is None or not drop(v[list(f.vertices)].mean(axis=0))]
    out = bpy.data.meshes.new(mesh.name + " edited")
    out.from_pydata(v.tolist() + list(extra_vertices), [], faces + list(extra_faces))
    return out


def test_non_manifold_heads(scene, io, addon):
    """Doubled faces change nothing; a fin into the head changes nothing either, but the
    patent's ray test names it, as any surface crossed twice from the centre; an open neck is
    named by the ray test by how much of the head it misses, and the hair above it collides as
    on the closed head with either method."""
    from hair_wig_addon.operators import baking

    ob, head, magnet = wig_scene()
    ob.hair_wig.use_collision = True
    bpy.ops.hair_wig.set_rest_pose()
    sphere = head.data
    a, b, c = tuple(sphere.polygons[0].vertices)[:3]
    centre = len(sphere.vertices)
    for method in ("FIELD", "RAY"):
        ob.hair_wig.collision_method = method
        head.data = sphere
        clean = baking.compute(bpy.context, ob, 1, 10)
        # The same surface where the hair is, held by another mesh: its field's values there are
        # the same to their rounding (differences of coordinates and a norm: 10), and each frame
        # (no dynamics: frames do not add up) the 6-point walk carries a length step (FOLLOW) and a
        # push-out (~20) per point to the tip; coordinates up to |x|. A fin or a hole that
        # reached the hair would move it by millimetres.
        tol = rounding(magnitude(clean.positions), 10 + 6 * (FOLLOW + 20))
        head.data = _edited_mesh(sphere, extra_faces=[(a, b, c), (a, b, c)])
        got = baking.compute(bpy.context, ob, 1, 10)
        assert got.warnings == []
        np.testing.assert_allclose(got.positions, clean.positions, rtol=0, atol=tol)
        head.data = _edited_mesh(sphere, [(0.0, 0.0, 0.0)], [(a, b, centre)])
        got = baking.compute(bpy.context, ob, 1, 10)
        np.testing.assert_allclose(got.positions, clean.positions, rtol=0, atol=tol)
        if method == "RAY":
            assert [w for w in got.warnings if "'Head' is not star-shaped from its centre" in w], got.warnings
        head.data = _edited_mesh(sphere, drop=lambda c: c[2] < -0.6)      # an open neck
        got = baking.compute(bpy.context, ob, 1, 10)
        if method == "RAY":
            assert [w for w in got.warnings if "'Head' does not enclose its centre in" in w], got.warnings
        np.testing.assert_allclose(got.positions, clean.positions, rtol=0, atol=tol)

# settings a shot does not draw: whether the wig is on, key poses (none are recorded), what the
# bake's frames, the live preview and the viewport read
_NOT_DRAWN = {"enabled", "use_key_poses", "use_live_dynamics", "live_memory", "show_wisps", "use_scene_range",
              "frame_start", "frame_end", "magnet_index", "key_pose_index", "preroll"}


def _draw(prop, rng):
    """A value of the wig setting ``prop`` an artist can type: within its hard limits, often at
    one of them, else anywhere up to a thousand times its soft range (a typed 40 m offset)."""
    if prop.type == "BOOLEAN":
        return bool(rng.random() < 0.5)
    if prop.type == "ENUM":
        return str(rng.choice([item.identifier for item in prop.enum_items]))
    lo, hi = float(prop.hard_min), float(prop.hard_max)
    span = max(abs(float(prop.soft_max)), abs(float(prop.soft_min)), 1.0) * 1000.0
    lo, top = max(lo, -span), min(hi, span)
    pick = rng.random()
    value = lo if pick < 0.15 else top if pick < 0.3 else lo + (top - lo) * rng.random() ** 3
    return int(round(value)) if prop.type == "INT" else value


def test_random_settings_within_every_limit_bake_or_are_refused_by_name_and_memory_stays_bounded(scene, io):
    """Every wig setting drawn at random within the limits its field allows, every solver, small
    shots: each bake finishes with finite hair or is refused with a message naming what is at
    fault (no traceback), the scene as it was; the process's peak memory grows by under 2 GiB."""
    import resource

    rng = np.random.default_rng(int(os.environ.get("HAIR_WIG_FUZZ_SEED", "49")))
    settings_type = bpy.types.Object.bl_rna.properties["hair_wig"].fixed_type
    props = [p for p in settings_type.properties
             if p.identifier not in _NOT_DRAWN and not p.is_readonly and p.type in ("BOOLEAN", "ENUM", "FLOAT", "INT")
             and not getattr(p, "is_array", False) and not (p.type == "ENUM" and p.is_enum_flag)]
    solvers = [item.identifier for item in settings_type.properties["dynamics_layer"].enum_items]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcomes = []
    for shot in range(int(os.environ.get("HAIR_WIG_FUZZ_SHOTS", "40"))):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        ob, head, magnet = scenes.keyed_wig(12, 5)
        s = ob.hair_wig
        drawn = {}
        for p in props:
            value = _draw(p, rng)
            try:
                setattr(s, p.identifier, value)
            except (TypeError, ValueError):
                continue
            drawn[p.identifier] = value
        s.dynamics_layer = solvers[shot % len(solvers)]
        s.use_scene_range = False
        s.frame_start, s.frame_end = 1, 4
        bpy.context.scene.frame_set(1)
        before = snapshot(ob)
        try:
            result = bpy.ops.hair_wig.bake()
        except RuntimeError as err:
            text = str(err)
            assert "Traceback" not in text and text.startswith("Error: "), (shot, drawn, text)
            assert snapshot(ob) == before, (shot, text)
            outcomes.append("refused")
            continue
        assert result == {"FINISHED"}, (shot, drawn)
        dg = bpy.context.evaluated_depsgraph_get()
        for f in range(1, 5):
            bpy.context.scene.frame_set(f)
            assert np.isfinite(io.read_evaluated_points(ob, dg)).all(), (shot, f, drawn)
        outcomes.append("baked")
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
    assert grown_kib < 2 * 1024 * 1024, grown_kib
    assert "baked" in outcomes
