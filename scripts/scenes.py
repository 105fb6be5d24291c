"""Building hair scenes from arrays: used by the demo, the benchmarks and the tests."""

from __future__ import annotations

import bpy
import numpy as np


def link(ob, scene=None):
    (scene or bpy.context.scene).collection.objects.link(ob)
    return ob


def curves_hair(name: str, points: np.ndarray, counts, scene=None):
    """A ``Curves`` hair object with the given strands (object-local points)."""
    counts = np.asarray(counts, dtype=np.int32)
    cv = bpy.data.hair_curves.new(name)
    cv.add_curves(counts.tolist())
    cv.attributes["position"].data.foreach_set("vector", np.asarray(points, np.float32).ravel())
    return link(bpy.data.objects.new(name, cv), scene)


def legacy_hair(name: str, points: np.ndarray, counts, spline_type: str = "POLY", scene=None):
    """A legacy ``Curve`` object with one spline per strand. Bezier handles are put a third of
    the way to the neighbouring points."""
    counts = np.asarray(counts, dtype=np.int32)
    points = np.asarray(points, dtype=np.float32)
    cu = bpy.data.curves.new(name, "CURVE")
    cu.dimensions = "3D"
    offsets = np.concatenate([[0], np.cumsum(counts)])
    for i, n in enumerate(counts):
        sp = cu.splines.new(spline_type)
        pts = points[offsets[i]:offsets[i + 1]]
        if spline_type == "BEZIER":
            sp.bezier_points.add(int(n) - 1)
            prev = np.vstack([pts[:1], pts[:-1]])
            nxt = np.vstack([pts[1:], pts[-1:]])
            sp.bezier_points.foreach_set("co", pts.ravel())
            sp.bezier_points.foreach_set("handle_left", (pts + (prev - pts) / 3).ravel())
            sp.bezier_points.foreach_set("handle_right", (pts + (nxt - pts) / 3).ravel())
        else:
            sp.points.add(int(n) - 1)
            co4 = np.hstack([pts, np.ones((len(pts), 1), np.float32)])
            sp.points.foreach_set("co", co4.ravel())
            if spline_type == "NURBS":
                sp.order_u = min(4, int(n))
                sp.use_endpoint_u = True
    return link(bpy.data.objects.new(name, cu), scene)


def straight_strands(num: int, points_per_strand: int, length: float = 0.2, seed: int = 0):
    """``num`` strands rooted on a unit sphere's upper half, pointing outward, with a little
    random bend. Returns ``points (num * k, 3) float32, counts (num,)``."""
    rng = np.random.default_rng(seed)
    z = rng.uniform(0.1, 1.0, num)
    phi = rng.uniform(0, 2 * np.pi, num)
    r = np.sqrt(1 - z * z)
    roots = np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)
    t = np.linspace(0, 1, points_per_strand)
    bend = rng.normal(0, 0.05, (num, 1, 3)) * t[None, :, None] ** 2
    pts = roots[:, None, :] * (1 + length * t[None, :, None]) + bend
    return pts.reshape(-1, 3).astype(np.float32), np.full(num, points_per_strand, np.int32)


def keyed_head_turn(head, first: int, last: int, angle: float = 0.8, lift: float = 0.1):
    """Key a head turn about Z with a small lift: rest at ``first``, turned at ``last``."""
    head.rotation_euler = (0.0, 0.0, 0.0)
    head.location = (0.0, 0.0, 0.0)
    head.keyframe_insert("rotation_euler", frame=first)
    head.keyframe_insert("location", frame=first)
    head.rotation_euler = (0.15, 0.0, angle)
    head.location = (0.2, 0.0, lift)
    head.keyframe_insert("rotation_euler", frame=last)
    head.keyframe_insert("location", frame=last)


def armature_bend(head, frames, base=-1.2, joint=0.9, top=2.0, ramp=(-0.6, 0.3), turn=(0.35, 0.0, 0.25)):
    """Bend ``head`` with an armature (a "Rig" with a Neck bone from ``base`` up ``joint`` and a
    Skull bone on to ``top``): vertices weighted to the Skull from 0 at height ``ramp[0]`` to 1 at
    ``ramp[1]``, the Skull turned by ``turn`` (Euler) from ``frames[0]`` to ``frames[1]``.
    Returns the rig."""
    bpy.ops.object.armature_add(location=(0, 0, base))
    rig = bpy.context.active_object
    rig.name = "Rig"
    bpy.ops.object.mode_set(mode="EDIT")
    bone = rig.data.edit_bones[0]
    bone.name = "Neck"
    bone.head, bone.tail = (0, 0, 0), (0, 0, joint)
    skull = rig.data.edit_bones.new("Skull")
    skull.head, skull.tail, skull.parent = (0, 0, joint), (0, 0, top), bone
    bpy.ops.object.mode_set(mode="OBJECT")
    co = np.empty(len(head.data.vertices) * 3, np.float32)
    head.data.vertices.foreach_get("co", co)
    z = co.reshape(-1, 3)[:, 2]
    w = np.clip((z - ramp[0]) / (ramp[1] - ramp[0]), 0, 1)
    for name, weight in (("Skull", w), ("Neck", 1 - w)):
        g = head.vertex_groups.new(name=name)
        for value in np.unique(np.round(weight, 2)):
            ids = np.flatnonzero(np.round(weight, 2) == value).tolist()
            if value > 0:
                g.add(ids, float(value), "REPLACE")
    arm = head.modifiers.new("Armature", "ARMATURE")
    arm.object = rig
    pose = rig.pose.bones["Skull"]
    pose.rotation_mode = "XYZ"
    pose.keyframe_insert("rotation_euler", frame=frames[0])
    pose.rotation_euler = turn
    pose.keyframe_insert("rotation_euler", frame=frames[1])
    return rig


def deform_on_surface_group(name: str = "Surface Deform"):
    """A geometry-nodes group that is just Blender's "Deform Curves on Surface" node."""
    g = bpy.data.node_groups.new(name, "GeometryNodeTree")
    g.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    g.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    gi, go = g.nodes.new("NodeGroupInput"), g.nodes.new("NodeGroupOutput")
    node = g.nodes.new("GeometryNodeDeformCurvesOnSurface")
    g.links.new(gi.outputs[0], node.inputs[0])
    g.links.new(node.outputs[0], go.inputs[0])
    return g


def wig_on(head, strands: int, points: int, name: str = "Hair", length: float = 0.2):
    """Straight Curves hair attached to ``head`` (its surface), active, with its wig enabled."""
    pts, counts = straight_strands(strands, points, length=length)
    ob = curves_hair(name, pts, counts)
    ob.data.surface = head
    bpy.context.view_layer.objects.active = ob
    bpy.ops.hair_wig.enable()
    return ob, pts


def keyed_wig(strands: int = 40, points: int = 6, radius: float = 0.5, travel: float = 0.3,
              magnet_at=(0.0, 0.0, 1.1), frames=(1, 10), head_turn: bool = True):
    """A UV-sphere "Head" (turning over ``frames`` when ``head_turn``) with Curves "Hair" on it,
    the wig enabled, and one magnet at ``magnet_at`` keyed to move ``travel`` along x over
    ``frames``; the scene's range is ``frames``. Returns ``hair, head, magnet``."""
    bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0)
    head = bpy.context.active_object
    head.name = "Head"
    first, last = frames
    if head_turn:
        keyed_head_turn(head, first, last)
    ob, _ = wig_on(head, strands, points)
    ob.hair_wig.use_scalp = False           # straight hair has no root UVs to follow the skin by
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = first, last
    scene.cursor.location = magnet_at
    bpy.ops.hair_wig.add_magnet(radius=radius)
    magnet = ob.hair_wig.magnets[0].object
    magnet.keyframe_insert("location", frame=first)
    magnet.location.x += travel
    magnet.keyframe_insert("location", frame=last)
    return ob, head, magnet


def keyed_magnet(hair, name, where, move, frames, radius, dynamic=None, parent=None, size=0.1,
                 multiplier=None, back=False):
    """A sphere Empty at ``where`` made a magnet of ``hair``: keyed at ``frames[0]``, moved by
    ``move`` at the middle of ``frames`` (and back at ``frames[1]`` with ``back``); ``dynamic``:
    its (stiffness, damping, mass) as a dynamic magnet; ``parent``: what it rides on."""
    bpy.ops.object.empty_add(type="SPHERE", radius=size, location=where)
    m = bpy.context.active_object
    m.name = name
    if parent is not None:
        m.parent = parent
    ms = m.hair_wig_magnet
    ms.radius = radius
    if multiplier is not None:
        ms.multiplier = multiplier
    ms.dynamic = dynamic is not None
    if dynamic is not None:
        ms.stiffness, ms.damping, ms.mass = dynamic
    m.keyframe_insert("location", frame=frames[0])
    m.location = np.asarray(where) + np.asarray(move)
    m.keyframe_insert("location", frame=(frames[0] + frames[1]) // 2)
    if back:
        m.location = where
        m.keyframe_insert("location", frame=frames[1])
    hair.hair_wig.magnets.add().object = m
    return m


def surface_arrays(mesh):
    """What growing hair on ``mesh`` needs: its triangles (``demo.triangles``: corner vertex
    ids, loop ids, areas, normals), vertex positions (V, 3) and the active UV map per loop."""
    import demo

    verts, loops, area, normal = demo.triangles(mesh)
    co = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", co)
    uv_all = np.empty(len(mesh.loops) * 2, np.float32)
    mesh.uv_layers.active.data.foreach_get("uv", uv_all)
    return verts, loops, area, normal, co.reshape(-1, 3), uv_all.reshape(-1, 2)


def grow(head, count, points=6, length=0.3, seed=0):
    """Strands on ``head``'s faces along their normals, with their surface UVs."""
    verts, loops, area, normal, co, uv_all = surface_arrays(head.data)
    rng = np.random.default_rng(seed)
    tri = rng.choice(len(area), size=count, p=area / area.sum())
    r1, r2 = rng.uniform(0.05, 0.95, count), rng.uniform(0.05, 0.95, count)
    s = np.sqrt(r1)
    bary = np.stack([1 - s, s * (1 - r2), s * r2], 1).astype(np.float32)
    roots = np.einsum("nk,nkd->nd", bary, co[verts[tri]])
    uv = np.einsum("nk,nkd->nd", bary, uv_all[loops[tri]])
    t = np.linspace(0, 1, points, dtype=np.float32)[None, :, None]
    pts = roots[:, None] + length * t * normal[tri][:, None]
    return pts.reshape(-1, 3), np.full(count, points), uv


def empty_hair(head, name: str = "Hair"):
    """An empty Curves hair object on ``head``'s surface and active UV map, made active (what
    Add > Curves > Empty Hair makes)."""
    cv = bpy.data.hair_curves.new(name)
    cv.surface = head
    cv.surface_uv_map = head.data.uv_layers.active.name
    ob = bpy.data.objects.new(name, cv)
    bpy.context.scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    return ob


def uv_hair_on(head, count=200, name="Hair", **kw):
    """``grow`` as a Curves hair object on ``head``'s surface and UV map, its wig enabled."""
    pts, counts, uv = grow(head, count, **kw)
    ob = curves_hair(name, pts, counts)
    ob.data.surface = head
    ob.data.surface_uv_map = head.data.uv_layers.active.name
    ob.data.attributes.new("surface_uv_coordinate", "FLOAT2", "CURVE").data.foreach_set("vector", uv.ravel())
    ob.hair_wig.enabled = True
    return ob, pts


def evaluated_positions(ob) -> np.ndarray:
    """The hair's points (P, 3) float32 as Blender evaluates them at the current frame (its
    modifiers and a bake's playback included)."""
    at = ob.evaluated_get(bpy.context.evaluated_depsgraph_get()).data.attributes["position"].data
    out = np.empty(len(at) * 3, np.float32)
    at.foreach_get("vector", out)
    return out.reshape(-1, 3)


def turning_head_hair(strands: int, last: int, points: int = 12, length: float = 0.6, factory: bool = True):
    """A factory-fresh scene: a sphere head (radius 1) turning 0.9 rad over frames 1-8, ``strands``
    x ``points`` hair ``length`` long grown on it, frames 1-``last``, at frame 1. Returns the
    scene, the head, the hair object and its groom's points. ``factory=False``: the scene emptied
    instead, the preferences kept (the add-on enabled as an extension stays enabled)."""
    if factory:
        bpy.ops.wm.read_factory_settings(use_empty=True)
    else:
        for ob in list(bpy.data.objects):
            bpy.data.objects.remove(ob)
    bpy.ops.mesh.primitive_uv_sphere_add(segments=32, ring_count=16, radius=1.0)
    head = bpy.context.active_object
    head.name = "Head"
    ob, pts = uv_hair_on(head, strands, points=points, length=length)
    keyed_head_turn(head, 1, 8, angle=0.9, lift=0.0)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, last
    scene.frame_set(1)
    return scene, head, ob, pts
