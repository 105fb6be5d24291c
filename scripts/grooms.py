"""The groom scenes every feature must survive, built in Blender, baked with the default
settings (collision on) and measured; optionally rendered as one picture.

    python scripts/grooms.py [--scenes long_hair quick_fur grass flat] [--small] [--render DIR]
                             [--solver SCENE|SPRINGS|STRANDS|RODS|WISPS] [--hair-hair OFF|PAIRS|VOLUME]
                             [--live]

* ``long_hair``: 3000 strands x 36 points combed 5 mm over a subdivided Suzanne, ears and all,
  falling onto a capsule "shoulders" collider; the head turns, a magnet pulls, secondary dynamics.
* ``quick_fur``: Blender's own Quick Fur (guides + Interpolate Hair Curves children) on a
  subdivided Suzanne bent by an armature; a dynamic magnet.
* ``grass``: blades on a subdivided ground plane under a Wind field; a dynamic magnet.
* ``flat``: hair lying 5 mm over an ellipsoid scalp; nothing moves.

For each: the largest move at the rest frame (relative to the head's size), the worst segment
stretch over the bake, and the deepest point inside a collision surface (exact point-to-triangle
distances against each collider as Blender evaluates it at that frame, relative to the head's
size), with what the bake itself reported. The tests build the same scenes smaller.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import addon  # noqa: E402
import bpy  # noqa: E402
import numpy as np  # noqa: E402
import scenes  # noqa: E402

FRAMES = (1, 24)


@dataclass
class Groom:
    name: str
    hair: object
    head: object
    colliders: list = field(default_factory=list)     # extra collider objects
    frames: tuple = FRAMES


def _core():
    return addon.load().hair_wig


def mesh_world(ob):
    """The evaluated mesh of ``ob`` in world space: vertices (V, 3) float64, triangles (T, 3)."""
    from hair_wig_addon.operators import blender_io

    depsgraph = bpy.context.evaluated_depsgraph_get()
    m = blender_io.read_mesh(ob, depsgraph)
    mat = np.array(ob.evaluated_get(depsgraph).matrix_world)
    v = np.asarray(m.positions, np.float64) @ mat[:3, :3].T + mat[:3, 3]
    return v, np.asarray(m.tri_verts, np.int64)


_FALL = np.array([0.0, 0.1, -1.0])


def comb(vertices, triangles, roots, normals, points: int, length: float, height: float,
         down=(0.0, 0.2, -1.0), seed: int = 0):
    """Strands (S * points, 3) combed from ``roots`` along the surface at ``height`` above it,
    towards ``down`` (a brush stroke), leaving the surface where it falls away (under an ear,
    past the chin) and hanging from there. Segment lengths exactly ``length / (points − 1)``."""
    col = _core().collision
    solid = col.solid.Solid(vertices, triangles)      # over what bounds the solid, not into an eye
    f = col.MeshField(solid.vertices(vertices), solid.triangles, margin=height)
    rng = np.random.default_rng(seed)
    s = len(roots)
    seg = length / (points - 1)
    down = np.asarray(down, np.float64)                      # (3,), or (S, 3): one per strand
    down = down / np.linalg.norm(down, axis=-1, keepdims=True)
    p = np.empty((s, points, 3))
    p[:, 0] = roots
    direction = normals.astype(np.float64).copy()
    jitter = rng.normal(0, 0.15, (s, 3))
    for j in range(1, points):
        prev = p[:, j - 1]
        d, _, out, known = f.exact(prev)
        close = known & (d < 4 * height)
        n = np.where(close[:, None], out, 0.0)
        # the brush's direction over the surface; hanging free, the hair falls
        pull = np.where(close[:, None], down + 0.3 * jitter, _FALL + 0.1 * jitter)
        want = 0.6 * direction + 0.4 * pull
        want -= np.einsum("ij,ij->i", want, n)[:, None] * n       # along the surface where it is close
        want /= np.linalg.norm(want, axis=1, keepdims=True)
        q = prev + seg * want
        d, _, out, known = f.exact(q)
        sd = f.signed_distance(q)
        g = f.gradient(q)
        out = np.where(known[:, None], out, g / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-12))
        # still over the surface: keep the height; never below it (a shoulder met while hanging)
        hold = (known & (d < 4 * height)) | (sd < height)
        q = np.where(hold[:, None], q + (height - sd)[:, None] * out, q)
        v = q - prev
        v *= seg / np.linalg.norm(v, axis=1, keepdims=True)
        p[:, j] = prev + v
        direction = v / seg
    return p.reshape(-1, 3).astype(np.float32)


def scalp_roots(head, count, keep, seed=0):
    """Roots on ``head``'s faces where ``keep(centre, normal)`` holds: positions, normals, UVs."""
    verts, loops, area, normal, co, uv_all = scenes.surface_arrays(head.data)
    weight = np.where(keep(co[verts].mean(axis=1), normal), area, 0.0)
    rng = np.random.default_rng(seed)
    tri = rng.choice(len(area), size=count, p=weight / weight.sum())
    r1, r2 = rng.uniform(0.02, 0.98, count), rng.uniform(0.02, 0.98, count)
    s = np.sqrt(r1)
    bary = np.stack([1 - s, s * (1 - r2), s * r2], 1)
    roots = np.einsum("nk,nkd->nd", bary, co[verts[tri]])
    uv = np.einsum("nk,nkd->nd", bary, uv_all[loops[tri]])
    return roots, normal[tri].astype(np.float64), uv.astype(np.float32)


def _attach(head, pts, counts, uv, name="Hair"):
    ob = scenes.curves_hair(name, pts, counts)
    cv = ob.data
    cv.surface = head
    cv.surface_uv_map = head.data.uv_layers.active.name
    cv.attributes.new("surface_uv_coordinate", "FLOAT2", "CURVE").data.foreach_set("vector", uv.ravel())
    bpy.context.view_layer.objects.active = ob
    bpy.ops.hair_wig.enable()
    return ob


def _subdivided_suzanne(levels=2, closed=False):
    """Suzanne at 2 m, subdivided; as Add > Mesh > Monkey makes her (eye sockets open, ears
    crossing her head), or with every hole filled (``closed``)."""
    bpy.ops.mesh.primitive_monkey_add(size=2.0, calc_uvs=True)
    head = bpy.context.active_object
    head.name = "Head"
    if closed:
        bpy.ops.object.mode_set(mode="EDIT")
        bpy.ops.mesh.select_all(action="SELECT")
        bpy.ops.mesh.fill_holes(sides=0)
        bpy.ops.object.mode_set(mode="OBJECT")
    sub = head.modifiers.new("Subdivision", "SUBSURF")
    sub.levels = levels
    bpy.ops.object.modifier_apply(modifier=sub.name)
    bpy.ops.object.shade_smooth()
    return head


def _magnet(hair, where, move, frames, radius=1.0, dynamic=False, parent=None):
    return scenes.keyed_magnet(hair, f"Magnet {len(hair.hair_wig.magnets) + 1}", where, move, frames, radius,
                               (30.0, 4.0, 1.0) if dynamic else None, parent)


def shoulders(name="Shoulders"):
    """A capsule lying across under the head (a body collider), Collision physics on."""
    bpy.ops.mesh.primitive_uv_sphere_add(segments=48, ring_count=24, radius=1.0, location=(0, 0.25, -1.5))
    body = bpy.context.active_object
    body.name = name
    body.scale = (2.4, 0.9, 0.6)
    bpy.ops.object.transform_apply(scale=True)
    bpy.ops.object.modifier_add(type="COLLISION")
    body.collision.thickness_outer = 0.01
    return body


def long_hair(strands=3000, points=36, with_shoulders=True, closed=False) -> Groom:
    """Long hair combed 5 mm over a subdivided Suzanne and her ears, onto the shoulders (her eye
    sockets filled if ``closed``)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    head = _subdivided_suzanne(closed=closed)
    colliders = [shoulders()] if with_shoulders else []
    roots, normals, uv = scalp_roots(
        head, strands, lambda c, n: (c[:, 2] > 0.25) & (n[:, 2] > 0.1) & (c[:, 1] > -0.5))
    v, t = mesh_world(head)
    for body in colliders:                   # combed over the shoulders too
        bv, bt = mesh_world(body)
        v, t = np.concatenate([v, bv]), np.concatenate([t, bt + len(v)])
    pts = comb(v, t, roots, normals, points, length=1.9, height=0.005)
    hair = _attach(head, pts, np.full(strands, points), uv)
    scenes.keyed_head_turn(head, *FRAMES, angle=0.6, lift=0.05)
    _magnet(hair, (0.0, 0.9, 0.4), (0.0, -0.5, -0.3), FRAMES, radius=1.2, parent=head)
    s = hair.hair_wig
    s.use_secondary = True
    s.compression = 0.3
    return Groom("long hair", hair, head, colliders)


def grow_quick_fur(head, density: str):
    """Blender's Quick Fur on ``head``: its hair object, active, with a wig enabled."""
    bpy.ops.object.select_all(action="DESELECT")
    head.select_set(True)
    bpy.context.view_layer.objects.active = head
    assert bpy.ops.object.quick_fur(density=density) == {"FINISHED"}
    hair = next(o for o in bpy.context.scene.objects if o.type == "CURVES")
    bpy.context.view_layer.objects.active = hair
    bpy.ops.hair_wig.enable()
    return hair


def quick_fur(density="MEDIUM") -> Groom:
    """Blender's Quick Fur on a subdivided Suzanne whose head bone bends it (armature), with a
    Subdivision Surface after the armature, unapplied, as heads usually have."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    head = _subdivided_suzanne(1)
    scenes.armature_bend(head, FRAMES, base=-1.2, joint=0.9, top=2.0, ramp=(-0.6, 0.3))
    head.modifiers.new("Subdivision", "SUBSURF").levels = 1
    hair = grow_quick_fur(head, density)
    _magnet(hair, (0.0, 0.6, 1.0), (0.5, 0.0, -0.2), FRAMES, radius=1.2, dynamic=True)
    return Groom("Quick Fur", hair, head)


def ground(size: float, cuts: int, frames=FRAMES):
    """A new scene over ``frames`` with a subdivided ground plane ``size`` wide, named Ground."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = frames
    bpy.ops.mesh.primitive_plane_add(size=size)
    plane = bpy.context.active_object
    plane.name = "Ground"
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.subdivide(number_cuts=cuts)
    bpy.ops.object.mode_set(mode="OBJECT")
    return plane


def grass(blades=600, points=8) -> Groom:
    """Blades on a subdivided ground plane, bent by a Wind field and a dynamic magnet."""
    plane = ground(4.0, 15)
    roots, normals, uv = scalp_roots(plane, blades, lambda c, n: np.ones(len(c), bool), seed=3)
    rng = np.random.default_rng(3)
    t = np.linspace(0, 1, points)[None, :, None]
    lean = np.c_[rng.normal(0, 0.25, (blades, 2)), np.zeros(blades)][:, None]
    height = rng.uniform(0.25, 0.4, (blades, 1, 1))
    pts = roots[:, None] + height * (normals[:, None] * t + lean * t * t)
    hair = _attach(plane, pts.reshape(-1, 3).astype(np.float32), np.full(blades, points), uv, "Grass")
    bpy.ops.object.effector_add(type="WIND", location=(-3, 0, 0.3), rotation=(0, np.pi / 2, 0))
    wind = bpy.context.active_object
    wind.field.strength = 40.0
    wind.field.noise = 0.5
    # Blender seeds a new field's noise from the clock (BKE_partdeflect_new: the seconds + 1, mod
    # 128): unpinned, every build of this scene blew another gust and baked other bits
    wind.field.seed = 47
    _magnet(hair, (0.0, 0.0, 0.3), (0.0, 0.0, -0.6), FRAMES, radius=1.5, dynamic=True)
    s = hair.hair_wig
    s.use_secondary = True
    return Groom("grass", hair, plane)


def flat(strands=400, points=12) -> Groom:
    """Hair lying 5 mm over an ellipsoid scalp; nothing moves."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    bpy.ops.mesh.primitive_uv_sphere_add(segments=64, ring_count=32, radius=1.0)
    head = bpy.context.active_object
    head.name = "Scalp"
    head.scale = (1.0, 0.8, 1.2)
    bpy.ops.object.transform_apply(scale=True)
    bpy.ops.object.shade_smooth()
    roots, normals, uv = scalp_roots(head, strands, lambda c, n: c[:, 2] > 0.3, seed=5)
    v, t = mesh_world(head)
    pts = comb(v, t, roots, normals, points, length=0.5, height=0.005, down=(0.3, 0.2, -1.0))
    hair = _attach(head, pts, np.full(strands, points), uv)
    s = hair.hair_wig
    s.use_secondary = True
    return Groom("flat", hair, head)


BUILDERS = {"long_hair": long_hair, "quick_fur": quick_fur, "grass": grass, "flat": flat}
SMALL = {"long_hair": dict(strands=400, points=36), "quick_fur": dict(density="LOW"),
         "grass": dict(blades=150), "flat": dict(strands=150)}


def use_solver(g: Groom, solver: str) -> None:
    """Bake ``g`` with the dynamics solver ``solver`` (the Dynamics panel's Solver) on."""
    g.hair.hair_wig.use_secondary = True
    g.hair.hair_wig.dynamics_layer = solver


def bake(g: Groom):
    """Bake the groom with the Bake operator; its cache as the add-on computed it."""
    from hair_wig_addon.operators import baking

    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = g.frames
    bpy.context.view_layer.objects.active = g.hair
    t0 = time.perf_counter()
    cache = baking.compute(bpy.context, g.hair, *g.frames)
    return cache, time.perf_counter() - t0


def play(g: Groom):
    """Play the groom with Live Dynamics on (issue 37), every frame with ``frame_set`` as the
    timeline plays it; the bake Bake then makes of the cached frames (nothing computed again), the
    seconds the playing took, and whether that equals a bake from scratch bit for bit."""
    from hair_wig_addon.operators import baking, preview

    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = g.frames
    scene.frame_set(g.frames[0])
    bpy.context.view_layer.objects.active = g.hair
    t0 = time.perf_counter()
    g.hair.hair_wig.use_live_dynamics = True
    for f in range(g.frames[0], g.frames[1] + 1):
        scene.frame_set(f)
    seconds = time.perf_counter() - t0
    live = preview._previews[g.hair.session_uid].live
    assert live.stepper.steps == g.frames[1] - g.frames[0] + 1 + g.hair.hair_wig.preroll
    cache = baking.compute(bpy.context, g.hair, *g.frames)        # from the live cache
    g.hair.hair_wig.use_live_dynamics = False
    scratch = baking.compute(bpy.context, g.hair, *g.frames)
    return cache, seconds, bool(np.array_equal(cache.positions, scratch.positions))


class _Exact:
    """Signed distances to a collider as Blender evaluates it, in its own space, independent of
    the add-on's field and its lookups: the nearest triangle from Blender's own BVH tree
    (``mathutils``), the exact closest point on it; the sign from the generalized winding number
    (inside where it is above ½; every triangle summed wherever the fast clustered sum leaves the
    side in doubt), or with ``winding`` off — and on a
    one-sided mesh (a ground plane) — from the nearest feature's angle-weighted pseudo-normal.

    What is inside a mesh with holes is a definition: here the mesh's solid as SPEC §6.3 has it
    (``collision.solid.Solid``: holes small beside their shell closed by fans, surfaces inside
    another part left out), the distance to its surface, and the winding number of every shell
    whole with the fans. Measured on the mesh as modelled instead, a point over an open eye
    socket is "inside" by a winding number of 0.6 and its depth the distance to the far wall."""

    def __init__(self, ob, winding: bool = True):
        self.ob, self.key, self.winding = ob, None, winding

    def __call__(self, world_points):
        from mathutils.bvhtree import BVHTree

        from hair_wig_addon.operators import blender_io

        col = _core().collision
        depsgraph = bpy.context.evaluated_depsgraph_get()
        m = blender_io.read_mesh(self.ob, depsgraph)
        mat = np.array(self.ob.evaluated_get(depsgraph).matrix_world)
        v, t = np.asarray(m.positions, np.float64), np.asarray(m.tri_verts, np.int64)
        if self.key is None or not np.array_equal(self.key, v):
            self.key = v
            if not hasattr(self, "solid"):
                # decided once, on the first pose measured (the rest frame), as a deforming
                # collider's is: its triangles and fans then move with the skin
                # a one-sided mesh (a hole about as large as the mesh: a ground plane) has no
                # inside to wind about: its normals say where outside is
                self.solid_sign = self.winding and not _one_sided(v, t)
                self.solid = col.solid.Solid(v, t) if self.solid_sign else None
            if self.solid is not None:
                self.whole = (self.solid.vertices(v), self.solid.whole)
                self.parts, _ = col.solid.clusters(*self.whole)
                v, t = self.solid.vertices(v), self.solid.triangles
            self.surface = (v, t)
            self.tree = BVHTree.FromPolygons(v.tolist(), t.tolist(), epsilon=0.0)
            self.normals = col.pseudo_normals(v, t)
        v, t = self.surface
        local = np.linalg.solve(mat, np.c_[world_points, np.ones(len(world_points))].T).T[:, :3]
        nearest = self.tree.find_nearest
        idx = np.array([nearest(x)[2] for x in local.tolist()], np.int64)
        a, b, c = v[t[idx, 0]], v[t[idx, 1]], v[t[idx, 2]]
        bary, feat = col.closest_on_triangles(local, a, b, c)
        diff = local - (bary[:, :1] * a + bary[:, 1:2] * b + bary[:, 2:] * c)
        d = np.linalg.norm(diff, axis=1)
        if self.solid_sign:
            # the winding number, not the nearest surface's side: eyes sunk into a head have no
            # one nearest surface to ask. By clusters first (within 0.05 of every triangle summed,
            # tests/test_solid.py), then every triangle summed wherever that leaves the side in
            # any doubt — the measure never rests on the clusters' far-field approximation
            q = np.ascontiguousarray(local)
            w = np.empty(len(q))
            kernels = _core().kernels.winding
            kernels.winding_numbers(q, self.whole[0], *self.parts, np.zeros(0, np.int64), w)
            doubt = np.flatnonzero(np.abs(w - 0.5) < 0.3)
            if doubt.size:
                exact = np.empty(doubt.size)
                kernels.winding_exact(np.ascontiguousarray(q[doubt]), *self.whole, exact)
                w[doubt] = exact
            return np.where(w > 0.5, -d, d)
        side = np.einsum("ij,ij->i", diff, self.normals[idx, feat])
        return np.where(side < 0, -d, d)


def _one_sided(v, t) -> bool:
    """Whether a boundary loop of mesh ``(v, t)`` spans ``solid.FILL`` of its area or more (its
    fan about the loop's centre): a ground plane, a scalp patch — not an open eye socket."""
    col = _core().collision

    def area(vv, tt):
        return 0.5 * np.linalg.norm(np.cross(vv[tt[:, 1]] - vv[tt[:, 0]], vv[tt[:, 2]] - vv[tt[:, 0]]), axis=1).sum()

    whole = area(v, t)
    for loop in col.solid.boundary_loops(t):
        fan = col.solid.Solid._fan(loop, len(v))
        if area(np.vstack([v, v[loop].mean(axis=0)]), fan) >= col.solid.FILL * whole:
            return True
    return False


def _to_world(g: Groom, points, frame):
    bpy.context.scene.frame_set(frame)
    m = np.array(g.hair.evaluated_get(bpy.context.evaluated_depsgraph_get()).matrix_world)
    return points @ m[:3, :3].T + m[:3, 3]


def world_points(g: Groom, cache, frame):
    """The baked points of ``frame`` in world space (N, 3) float64."""
    return _to_world(g, cache.frame(frame).astype(np.float64), frame)


def measure(g: Groom, cache, every: int = 3) -> dict:
    """Rest move, stretch and penetration of a baked groom (see the module's docstring); the
    penetration on every ``every``-th frame and the last."""
    from hair_wig_addon.operators import blender_io

    scene = bpy.context.scene
    first, last = g.frames
    scene.frame_set(first)
    hair = blender_io.read_hair(g.hair)
    groom = hair.points.astype(np.float64)
    starts = hair.offsets[:-1]
    first_of = np.zeros(len(groom), bool)
    first_of[starts] = True
    hv, _ = mesh_world(g.head)
    size = float((hv.max(0) - hv.min(0)).max())
    seg0 = np.linalg.norm(np.diff(groom, axis=0), axis=1)
    valid = ~first_of[1:] & (seg0 > 1e-6 * size)

    def world(points, frame):
        return _to_world(g, points, frame)

    # Each collider's surface per point: min(offset, rest clearance), by exact distances.
    settings = g.hair.hair_wig
    bodies = [(_Exact(g.head), settings.collision_offset)]
    bodies += [(_Exact(c), c.collision.thickness_outer) for c in g.colliders]
    rest_world = world(groom, first)
    limits = [np.minimum(offset, body(rest_world)) for body, offset in bodies]
    rest = np.abs(cache.frame(first).astype(np.float64) - groom).max(axis=1)
    out = {"scene": g.name, "strands": hair.num_strands, "points": len(groom), "size": size,
           "rest_move": float(rest.max() / size),
           "strands_moved_at_rest": int(np.unique(hair.strand_of_point()[rest > 0.01 * size]).size),
           "stretch": 1.0, "squash": 1.0, "penetration": 0.0, "reported": float(cache.penetration / size),
           "moved": 0.0}
    for f in range(first, last + 1):
        p = cache.frame(f).astype(np.float64)
        seg = np.linalg.norm(np.diff(p, axis=0), axis=1)
        out["stretch"] = max(out["stretch"], float((seg[valid] / seg0[valid]).max()))
        out["squash"] = min(out["squash"], float((seg[valid] / seg0[valid]).min()))
        out["moved"] = max(out["moved"], float(np.abs(p - groom).max() / size))
        if (f - first) % every and f != last:
            continue
        pw = world(p, f)
        for (body, _), limit in zip(bodies, limits):
            d = body(pw)
            out["penetration"] = max(out["penetration"], float((limit - d)[~first_of].max() / size))
    return out


def bake_line(g: Groom, cache, seconds: float) -> str:
    """One line of a swing demo's bake: its size, time and ``measure``'s figures."""
    m = measure(g, cache)
    first, last = g.frames
    frames = last - first + 1
    return (f"{m['strands']} strands x {m['points'] // m['strands']} points, frames {first}-{last}, bake "
            f"{seconds:.1f} s ({1e3 * seconds / frames:.0f} ms/frame): rest move {m['rest_move']:.2e} of the head, "
            f"worst stretch {m['stretch']:.5f}, deepest inside {m['penetration']:.2e} of the head (exact), most "
            f"moved {m['moved']:.3f}")


def picture(g: Groom, path: Path, frame: int, size: int = 420, view=(0.75, -1.0, 0.35)) -> np.ndarray:
    """Render the baked groom at ``frame`` with Workbench, the camera towards the head's rest
    place from ``view``; the pixels (H, W, 4)."""
    scene = bpy.context.scene
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    scene.camera = cam
    target = np.array(g.head.matrix_world.translation)
    lo, hi = mesh_world(g.head)[0].min(0), mesh_world(g.head)[0].max(0)
    span = float((hi - lo).max())
    view = np.asarray(view, np.float64)
    cam.location = target + view / np.linalg.norm(view) * span * 2.6
    direction = target - np.array(cam.location)
    cam.rotation_euler = look(direction)
    workbench(g, size)
    scene.frame_set(frame)
    return render_still(path)


def workbench(g: Groom, size: int) -> None:
    """The groom pictures' look: Workbench, ``size`` pixels square, studio light, the head,
    hair and colliders in their colours over a light grey world."""
    scene = bpy.context.scene
    r = scene.render
    r.engine = "BLENDER_WORKBENCH"
    r.resolution_x = r.resolution_y = size
    r.resolution_percentage = 100
    r.image_settings.file_format = "PNG"
    shading = scene.display.shading
    shading.light = "STUDIO"
    shading.color_type = "OBJECT"
    g.head.color = (0.85, 0.75, 0.68, 1.0)
    g.hair.color = (0.35, 0.18, 0.07, 1.0)
    for c in g.colliders:
        c.color = (0.55, 0.6, 0.7, 1.0)
    scene.world = bpy.data.worlds.new("World")
    scene.world.color = (0.9, 0.9, 0.92)


def render_still(path: Path) -> np.ndarray:
    """Render the scene at its current frame into ``path``; the pixels (H, W, 4) float, bottom
    row first (as Blender holds them)."""
    bpy.context.scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)
    img = bpy.data.images.load(str(path))
    px = np.empty(img.size[0] * img.size[1] * 4, np.float32)
    img.pixels.foreach_get(px)
    out = px.reshape(img.size[1], img.size[0], 4)
    bpy.data.images.remove(img)
    return out


def look(direction):
    from mathutils import Vector

    return Vector(direction).to_track_quat("-Z", "Y").to_euler()


def frame_sheet(g: Groom, out: Path, frames, view, size: int = 300) -> None:
    """A contact sheet of the baked groom at ``frames`` in two rows (the first half on top),
    every tile from one camera aimed where the head rests, written to ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tiles = []
    for f in frames:
        bpy.context.scene.frame_set(g.frames[0])
        tiles.append(picture(g, out.with_name(f"_tile{f}.png"), f, size=size, view=view))
        out.with_name(f"_tile{f}.png").unlink()
    half = len(tiles) // 2
    rows = [np.concatenate(tiles[:half], axis=1), np.concatenate(tiles[half:], axis=1)]
    save_sheet([np.concatenate(rows[::-1], axis=0)], out)       # Blender's images start bottom-left


def save_sheet(tiles, path: Path) -> None:
    sheet = np.concatenate(tiles, axis=1)
    img = bpy.data.images.new("grooms", sheet.shape[1], sheet.shape[0], alpha=True)
    img.pixels.foreach_set(sheet.ravel())
    img.filepath_raw = str(path)
    img.file_format = "PNG"
    img.save()
    bpy.data.images.remove(img)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenes", nargs="+", default=list(BUILDERS), choices=list(BUILDERS))
    p.add_argument("--small", action="store_true", help="the sizes the tests use")
    p.add_argument("--render", default="", help="folder for grooms.png (each scene at --frame)")
    p.add_argument("--frame", type=int, default=14)
    p.add_argument("--solver", choices=("SCENE", *_core().LAYERS), default="SCENE",
                   help="the dynamics solver every groom bakes with (SCENE: as each scene sets it)")
    p.add_argument("--hair-hair", choices=("OFF", "PAIRS", "VOLUME"), default="OFF",
                   help="with --solver STRANDS: Hair Against Hair on, by Strand Pairs or as a Volume")
    p.add_argument("--live", action="store_true",
                   help="play each groom with Live Dynamics instead of baking it (the bake then takes the "
                        "cached frames; compared with a bake from scratch); pictures show the live frame")
    args = p.parse_args(argv)
    addon.ensure_registered()
    tiles = []
    print("| scene | strands x points | rest move / size | strands moved at rest | worst stretch "
          "| deepest inside / size (exact) | bake reported | most moved / size | "
          + ("played s | live = bake |" if args.live else "bake s |"))
    print("|---|---|---|---|---|---|---|---|---|" + ("---|" if args.live else ""))
    for name in args.scenes:
        g = BUILDERS[name](**(SMALL[name] if args.small else {}))
        if args.solver != "SCENE":
            use_solver(g, args.solver)
        if args.hair_hair != "OFF":
            g.hair.hair_wig.strands_hair_hair = True
            g.hair.hair_wig.strands_hair_hair_method = args.hair_hair
        if args.live:
            cache, seconds, same = play(g)
        else:
            cache, seconds = bake(g)
        m = measure(g, cache)
        print(f"| {m['scene']} | {m['strands']} x {m['points'] // m['strands']} | {m['rest_move']:.2e} | "
              f"{m['strands_moved_at_rest']} | {m['stretch']:.5f} | {m['penetration']:.2e} | "
              f"{m['reported']:.2e} | {m['moved']:.3f} | {seconds:.1f} |"
              + (f" {'yes' if same else 'NO'} |" if args.live else ""), flush=True)
        if args.render:
            out = Path(args.render)
            out.mkdir(parents=True, exist_ok=True)
            from hair_wig_addon.operators import blender_io

            if args.live:                  # the live frame, as the viewport shows it while playing
                g.hair.hair_wig.use_live_dynamics = True
            else:
                blender_io.write_bake(g.hair, cache)
            tiles.append(picture(g, out / f"{name}.png", args.frame))
    if tiles:
        save_sheet(tiles, Path(args.render) / "grooms.png")
        print(f"wrote {Path(args.render) / 'grooms.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
