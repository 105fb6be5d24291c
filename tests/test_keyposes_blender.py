"""Keyframed hairstyles through Blender (real bpy): record, re-record, retime, delete and save key
poses; bake their in-betweens (same and different curves); live preview; magnets on top; wisps of
imitator strands round leaders and key leader strands."""

import bpy
import numpy as np
import pytest
import scenes
from tolerance import AFFINE, FOLLOW, NORM, magnitude, rounding


def shown(p, more=0):
    """How far the bake can round a keyed style it shows as it is (no magnet moving it): into
    head-local space and back (7 roundings each) and ``more``, of coordinates up to |x|."""
    return rounding(magnitude(p), 2 * AFFINE + more)


@pytest.fixture
def glue(addon):
    from hair_wig_addon.hair_wig.keyposes import KeyedStyle
    from hair_wig_addon.operators import baking, blender_io, preview, scene_reader
    return baking, blender_io, scene_reader, preview, KeyedStyle


def positions(ob):
    p = np.empty(len(ob.data.points) * 3, np.float32)
    ob.data.attributes["position"].data.foreach_get("vector", p)
    return p.reshape(-1, 3)


def set_positions(ob, p):
    ob.data.attributes["position"].data.foreach_set("vector", np.asarray(p, np.float32).ravel())
    ob.data.update_tag()


def swing(rest, counts, dx):
    """Every strand bent sideways by ``dx`` at its tip (as if combed), roots fixed."""
    t = np.concatenate([np.linspace(0, 1, n) for n in counts]).astype(np.float32)[:, None]
    return rest + t * np.array([dx, 0.0, 0.0], np.float32)


def styled_hair(count=60, points=6):
    """Hair with UVs on a sphere head, no magnets, no collision, no length control: the bake shows the
    key poses' in-betweens alone."""
    bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0)
    head = bpy.context.active_object
    head.name = "Head"
    ob, pts = scenes.uv_hair_on(head, count, points=points)
    s = ob.hair_wig
    s.use_collision = s.use_length = False
    bpy.context.view_layer.objects.active = ob
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 21
    return ob, head, pts.reshape(-1, 3), np.full(count, points)


def record(frame):
    bpy.context.scene.frame_set(frame)
    assert bpy.ops.hair_wig.record_key_pose() == {"FINISHED"}


def played(io, ob, frame):
    bpy.context.scene.frame_set(frame)
    return io.read_evaluated_points(ob, bpy.context.evaluated_depsgraph_get())


def three_keys(ob, rest, counts):
    record(1)
    set_positions(ob, swing(rest, counts, 0.3))
    record(11)
    set_positions(ob, swing(rest, counts, -0.2))
    record(21)
    set_positions(ob, rest)
    return [rest, swing(rest, counts, 0.3), swing(rest, counts, -0.2)]


def test_record_rerecord_retime_delete_and_save_reload(scene, glue, tmp_path):
    ob, head, rest, counts = styled_hair()
    keys = three_keys(ob, rest, counts)
    s = ob.hair_wig
    assert [k.frame for k in s.key_poses] == [1, 11, 21] and s.use_key_poses
    assert all(k.curves.name.startswith(".Hair key pose") for k in s.key_poses)      # hidden copies
    record(6)                                                                      # lands in order
    assert [k.frame for k in s.key_poses] == [1, 6, 11, 21] and s.key_pose_index == 1
    set_positions(ob, swing(rest, counts, 0.1))
    record(6)                                                                      # re-record in place
    assert len(s.key_poses) == 4
    np.testing.assert_array_equal(_points(s.key_poses[1].curves), swing(rest, counts, 0.1))
    s.key_pose_index = 1
    data = s.key_poses[1].curves.name
    assert bpy.ops.hair_wig.delete_key_pose() == {"FINISHED"}
    assert [k.frame for k in s.key_poses] == [1, 11, 21] and data not in bpy.data.hair_curves
    s.key_pose_index = 2
    set_positions(ob, keys[2] * 1.01)
    assert bpy.ops.hair_wig.rerecord_key_pose() == {"FINISHED"}
    np.testing.assert_array_equal(_points(s.key_poses[2].curves), keys[2] * 1.01)
    s.key_poses[2].frame = 25                                                      # retime
    assert bpy.ops.hair_wig.jump_to_key_pose(index=2) == {"FINISHED"} and scene.frame_current == 25
    path = str(tmp_path / "keys.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    s = bpy.data.objects["Hair"].hair_wig
    assert [k.frame for k in s.key_poses] == [1, 11, 25]
    for k, want in zip(s.key_poses, [keys[0], keys[1], keys[2] * 1.01]):
        np.testing.assert_array_equal(_points(k.curves), want)


def _points(cv):
    p = np.empty(len(cv.points) * 3, np.float32)
    cv.attributes["position"].data.foreach_get("vector", p)
    return p.reshape(-1, 3)


def test_bake_reaches_key_poses_and_plays_the_in_betweens(scene, glue):
    baking, io, scene_reader, _, KeyedStyle = glue
    ob, head, rest, counts = styled_hair()
    keys = three_keys(ob, rest, counts)
    style = KeyedStyle(scene_reader.read_key_poses(ob), scene_reader.style_settings(ob.hair_wig))
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    for f, want in zip((1, 11, 21), keys):
        np.testing.assert_allclose(played(io, ob, f), want, rtol=0, atol=shown(want))
    for f in (4, 8, 15):
        # the in-between by the same code in this process: the same bits, then the bake's maps
        np.testing.assert_allclose(played(io, ob, f), style.pose(f), rtol=0, atol=shown(style.pose(f)))
        assert np.abs(played(io, ob, f) - rest).max() > 1e-3
    assert bpy.ops.hair_wig.clear_bake() == {"FINISHED"}
    assert np.array_equal(positions(ob), rest)


def test_key_poses_with_other_curves_bake_into_new_curves_and_clear_gives_the_hair_back(scene, glue):
    baking, io, scene_reader, _, KeyedStyle = glue
    ob, head, rest, counts = styled_hair(40, 6)
    ob.data.set_types(type="POLY")
    record(1)
    own = ob.data
    before = (own.name, positions(ob).copy(), len(own.curves))
    # the second key pose is drawn again with fewer curves and more points per curve
    redrawn = bpy.data.hair_curves.new("Redrawn")
    pts8, counts8, uv8 = scenes.grow(head, 30, points=8, length=0.5, seed=3)
    redrawn.add_curves(counts8.tolist())
    redrawn.attributes["position"].data.foreach_set("vector", pts8.ravel())
    redrawn.attributes.new("surface_uv_coordinate", "FLOAT2", "CURVE").data.foreach_set("vector", uv8.ravel())
    ob.data = redrawn
    record(11)
    ob.data = own
    bpy.data.hair_curves.remove(redrawn)
    # the in-between as the wig binds it: roots travelling on the scalp between the two drawings
    want6 = scene_reader.bind(bpy.context, ob).wig.keyed.pose(6).copy()
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    style = KeyedStyle(scene_reader.read_key_poses(ob))
    assert ob.data is not own and len(ob.data.curves) == style.tracks.num_tracks >= 40
    assert np.array_equal(style.counts, np.diff(io._curve_offsets(ob.data)))
    assert all(t.value == 1 for t in ob.data.attributes["curve_type"].data)       # poly, as the hair
    np.testing.assert_allclose(played(io, ob, 6), want6, rtol=0, atol=shown(want6))
    roots = style.offsets[:-1]
    assert np.abs(want6[roots] - style.pose(6)[roots]).max() > 1e-3        # not the straight path
    at11 = played(io, ob, 11)
    # the redrawn key pose is reached: each of its curves is some track's shape at frame 11
    tips = at11[style.offsets[1:] - 1]
    want = pts8.reshape(30, 8, 3)[:, -1]
    assert np.linalg.norm(tips[:, None] - want[None], axis=2).min(axis=0).max() < shown(want)
    assert bpy.ops.hair_wig.clear_bake() == {"FINISHED"}
    assert ob.data is own and (own.name, len(own.curves)) == (before[0], before[2])
    assert np.array_equal(positions(ob), before[1]) and not own.use_fake_user
    assert not [c for c in bpy.data.hair_curves if c.name.endswith("Key Poses")]


def test_preview_and_magnets_on_a_keyed_style(scene, glue):
    baking, io, scene_reader, preview, KeyedStyle = glue
    ob, head, rest, counts = styled_hair()
    three_keys(ob, rest, counts)
    style = KeyedStyle(scene_reader.read_key_poses(ob), scene_reader.style_settings(ob.hair_wig))
    assert bpy.ops.hair_wig.preview() == {"FINISHED"}
    scene.frame_set(8)
    np.testing.assert_allclose(positions(ob), style.pose(8), rtol=0, atol=shown(style.pose(8)))
    bpy.ops.hair_wig.preview()
    assert np.array_equal(positions(ob), rest)
    # a magnet pulls the in-between: the same frame, moved by the magnet
    scene.cursor.location = (0.0, 0.0, 1.2)
    bpy.ops.hair_wig.add_magnet(radius=1.0)
    magnet = ob.hair_wig.magnets[0].object
    magnet.keyframe_insert("location", frame=1)
    magnet.location.z += 0.4
    magnet.keyframe_insert("location", frame=21)
    cache = baking.compute(bpy.context, ob, 1, 21)
    np.testing.assert_allclose(cache.frame(1), style.pose(1), rtol=0, atol=shown(style.pose(1)))   # magnet at rest
    moved = cache.frame(15) - style.pose(15)
    assert moved[:, 2].max() > 0.05 and np.isfinite(cache.positions).all()


def select_curves(ob, idx):
    sel = np.zeros(len(ob.data.curves), bool)
    sel[idx] = True
    a = ob.data.attributes.get(".selection") or ob.data.attributes.new(".selection", "BOOLEAN", "CURVE")
    if a.domain != "CURVE":
        ob.data.attributes.remove(a)
        a = ob.data.attributes.new(".selection", "BOOLEAN", "CURVE")
    a.data.foreach_set("value", sel)


def test_wisps_of_imitators_follow_their_key_leaders(scene, glue):
    baking, io, scene_reader, _, _ = glue
    ob, head, rest, counts = styled_hair(12, 6)
    ob.data.set_types(type="POLY")
    assert ob.data.attributes["curve_type"].data[0].value == 1
    uv0 = io.read_hair(ob).surface_uv
    inner = np.flatnonzero((uv0.min(axis=1) > 0.05) & (uv0.max(axis=1) < 0.95))   # away from the UV seam
    a, b = (int(i) for i in inner[:2])
    select_curves(ob, [a, b])
    assert bpy.ops.hair_wig.make_wisps(rings=2, closeness=0.01, fuzziness=0.0) == {"FINISHED"}
    assert len(ob.data.curves) == 12 + 2 * 16
    types = ob.data.attributes.get("curve_type")           # Blender drops it when all are Catmull-Rom (0)
    assert types is None or all(t.value == 0 for t in types.data)
    hair = io.read_hair(ob)
    roots = hair.points[hair.offsets[:-1]]
    np.testing.assert_allclose(np.linalg.norm(roots[12:], axis=1), 1.0, atol=0.01)  # on the scalp
    uv = hair.surface_uv
    d = np.linalg.norm(uv[12:].reshape(2, 16, 2) - uv[[a, b]][:, None], axis=2)
    # each ring's UV stored as float32 (1 rounding of |uv|, relative to the 0.01 ring) and
    # measured here in float32 (a norm: 4)
    ring = rounding((magnitude(uv[[a, b]]) + 0.02) / 0.01, 1) + rounding(1.0, NORM)
    np.testing.assert_allclose(d, np.tile(np.r_[[0.01] * 8, [0.02] * 8], (2, 1)), rtol=ring)
    leader_of = scene_reader.leaders_of(ob, hair)
    assert list(leader_of[12:]) == [a] * 16 + [b] * 16 and leader_of[a] == a
    # key leaders only: record, swing the leaders alone, record again
    ob.hair_wig.use_key_leaders = True
    own = hair.points.copy()
    record(1)
    moved = own.copy()
    for c in (a, b):
        sl = slice(hair.offsets[c], hair.offsets[c + 1])
        moved[sl] = swing(own[sl], [6], 0.3)
    set_positions(ob, moved)
    record(11)
    set_positions(ob, own)
    cache = baking.compute(bpy.context, ob, 1, 11)
    # A follower: the leader's point at its fraction (4) less its first key (1), turned and
    # stored (1), plus its rest point (1), through the bake's maps (7 each), and both offsets
    # here (2): of |x|. Its turn from the leader's root frame is the identity but for the
    # frames' first segments, whose float32 ends tilt them by eps |x| / segment: times the
    # leaders' 0.3 swing. An imitator that lost its offset is off by its centimetre.
    big = magnitude(own, moved)
    first = np.linalg.norm(own.reshape(-1, 6, 3)[:, 1] - own.reshape(-1, 6, 3)[:, 0], axis=1).min()
    tol = shown(own, 9) + rounding(big / first, 2) * 0.3
    for f in (1, 6, 11):
        p = cache.frame(f).reshape(-1, 6, 3)
        for i, c in enumerate((a, b)):
            offset = p[12 + 16 * i:28 + 16 * i] - p[c][None]
            np.testing.assert_allclose(offset, (own.reshape(-1, 6, 3)[12 + 16 * i:28 + 16 * i]
                                                - own.reshape(-1, 6, 3)[c][None]), rtol=0, atol=tol)
    np.testing.assert_allclose(cache.frame(11).reshape(-1, 6, 3)[a], moved.reshape(-1, 6, 3)[a], rtol=0,
                               atol=shown(moved))


def test_key_pose_errors_name_what_is_wrong(scene, glue):
    ob, head, rest, counts = styled_hair()
    record(1)
    set_positions(ob, swing(rest, counts, 0.2))
    record(5)
    ob.hair_wig.key_poses[1].frame = 1
    with pytest.raises(RuntimeError, match="'Hair' has two key poses at frame 1"):
        bpy.ops.hair_wig.bake()
    ob.hair_wig.key_poses[1].frame = 5
    ob.hair_wig.use_key_leaders = True
    with pytest.raises(RuntimeError, match="has no leader curves"):
        bpy.ops.hair_wig.bake()
    ob.hair_wig.use_key_leaders = False
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    with pytest.raises(RuntimeError, match="'Hair' is baked: clear the bake before recording key poses"):
        bpy.ops.hair_wig.record_key_pose()


def test_marked_leaders_lead_the_curves_nearest_them(scene, glue):
    _, io, scene_reader, _, _ = glue
    ob, head, rest, counts = styled_hair(30, 5)
    with pytest.raises(RuntimeError, match="'Hair': no curves are selected"):
        select_curves(ob, [])
        bpy.ops.hair_wig.mark_leaders()
    select_curves(ob, [4, 19])
    assert bpy.ops.hair_wig.mark_leaders() == {"FINISHED"}
    hair = io.read_hair(ob)
    uv = hair.surface_uv
    want = np.where(np.linalg.norm(uv - uv[4], axis=1) <= np.linalg.norm(uv - uv[19], axis=1), 4, 19)
    assert np.array_equal(scene_reader.leaders_of(ob, hair), want)


def test_record_and_delete_key_poses_undo_and_redo(scene, glue):
    ob, head, rest, counts = styled_hair()
    bpy.ops.ed.undo_push(message="hair")
    scene.frame_set(1)
    assert bpy.ops.hair_wig.record_key_pose("EXEC_DEFAULT", True) == {"FINISHED"}
    set_positions(ob, swing(rest, counts, 0.3))
    bpy.ops.ed.undo_push(message="comb")
    scene.frame_set(9)
    assert bpy.ops.hair_wig.record_key_pose("EXEC_DEFAULT", True) == {"FINISHED"}
    frames = lambda: [k.frame for k in bpy.data.objects["Hair"].hair_wig.key_poses]
    assert frames() == [1, 9]
    bpy.ops.ed.undo()
    bpy.ops.ed.undo()
    assert frames() == [1]
    bpy.ops.ed.redo()
    bpy.ops.ed.redo()
    assert frames() == [1, 9]
    hair = bpy.data.objects["Hair"]
    np.testing.assert_array_equal(_points(hair.hair_wig.key_poses[1].curves), swing(rest, counts, 0.3))
    bpy.context.view_layer.objects.active = hair
    hair.hair_wig.key_pose_index = 0
    assert bpy.ops.hair_wig.delete_key_pose("EXEC_DEFAULT", True) == {"FINISHED"}
    assert frames() == [9]
    bpy.ops.ed.undo()
    assert frames() == [1, 9]
    np.testing.assert_array_equal(_points(bpy.data.objects["Hair"].hair_wig.key_poses[0].curves), rest)


def test_in_between_roots_stay_on_the_scalp_and_strands_out_of_the_head(scene, glue):
    """Key poses whose roots differ (each strand moved along the scalp, by its UV): with the
    defaults (collision on), every in-between root lies on the head's mesh, no point goes inside
    it, and both key poses come back exactly at their frames (SPEC §7, seed 002)."""
    baking, io, reader, _, _ = glue
    from hair_wig_addon.hair_wig.collision import exact_signed_distance
    from hair_wig_addon.hair_wig.scalp import locate_uv

    bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0)
    head = bpy.context.active_object
    head.name = "Head"
    ob, rest = scenes.uv_hair_on(head, 20, points=6, length=0.4)
    rest = rest.reshape(-1, 3)
    bpy.context.view_layer.objects.active = ob
    scene.frame_start, scene.frame_end = 1, 11
    mesh = io.read_mesh(head, None, head.data.uv_layers.active.name)
    attr = ob.data.attributes["surface_uv_coordinate"]
    uv = np.empty(40, np.float32)
    attr.data.foreach_get("vector", uv)
    uv = uv.reshape(-1, 2)
    # every root moved 0.03 along the map's u, its strand carried with it, onto the surface
    uv2 = uv + np.array([0.03, 0.0], np.float32)
    tri, _ = locate_uv(mesh.tri_uv, uv2, strict=False)
    uv2[tri < 0] = uv[tri < 0]                   # past the seam or a pole's gap: stays
    tri, bary = locate_uv(mesh.tri_uv, uv2)
    roots2 = np.einsum("nk,nkd->nd", bary, mesh.positions[mesh.tri_verts[tri]])
    moved = rest + np.repeat(roots2 - rest[::6], 6, axis=0)
    record(1)
    set_positions(ob, moved.astype(np.float32))
    attr.data.foreach_set("vector", uv2.ravel())
    record(11)
    set_positions(ob, rest)
    attr.data.foreach_set("vector", uv.ravel())
    assert ob.hair_wig.use_collision
    cache = baking.compute(bpy.context, ob, 1, 11)
    # collision and length on: the length walk re-places the 6 points root to tip too
    np.testing.assert_allclose(cache.frame(1), rest, rtol=0, atol=shown(rest, FOLLOW * 6))
    # the second key pose is reached: every one of its curves is some track's shape there
    # (stored as float32 when recorded: 1 more)
    at11 = cache.frame(11).reshape(-1, 6, 3)
    gap = np.abs(at11[:, None] - moved.reshape(-1, 6, 3)[None]).max(axis=(2, 3))
    assert gap.min(axis=0).max() <= shown(moved, FOLLOW * 6 + 1)
    root = np.zeros(len(rest), bool)
    root[::6] = True
    straight = 0.5 * (rest[::6] + moved[::6])
    assert exact_signed_distance(straight, mesh.positions, mesh.tri_verts).min() < -1e-3     # would sink
    for f in (3, 6, 9):
        p = cache.frame(f).astype(np.float64)
        d = exact_signed_distance(p, mesh.positions, mesh.tri_verts)
        # on the mesh: also the root whose UV path crosses the pole's gap (its straight path,
        # a chord, sank 6e-5; the whole straight path sinks 4e-3). Set on it in float64, its
        # shift stored as float32 and added (2), then the bake's maps (7 each), of |x|
        assert np.abs(d[root]).max() <= shown(p[root], 2), (f, np.abs(d[root]).max())
        # the last to place a point is the push-out: onto the surface, or onto its tangent
        # plane, outside a convex head (its foot, swing and sum: 5), stored (1), then the maps
        assert d[~root].min() >= -shown(p, 5 + 1), (f, d[~root].min())
