"""The hair_wig demo: build a scene, bake it, save the baked .blend and render a contact sheet.

    python scripts/demo.py [--output DIR] [--strands N]

Builds a subdivided Suzanne as the head over a capsule of shoulders (a mesh with Collision
physics: a collider of its own), combs long hair 5 mm over her head, her ears and the shoulders,
attached to her surface (surface object, UV map and per-strand ``surface_uv_coordinate``, as
Blender's own hair tools make them), keys a head turn and three magnets riding on the head (two
sweeping the sides, one dynamic at the back), turns on secondary dynamics, compression and
collision, bakes 48 frames with the Bake operator, saves ``DIR/demo.blend`` and renders six of the
frames with Workbench into ``DIR/demo_contact_sheet.png``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import addon  # noqa: E402
import bpy  # noqa: E402
import grooms  # noqa: E402
import numpy as np  # noqa: E402
import scenes  # noqa: E402

FRAMES = (1, 48)
SHEET_FRAMES = (1, 10, 20, 30, 40, 48)


def triangles(mesh):
    """Triangles of ``mesh`` as arrays: corner vertex ids (T, 3), loop ids (T, 3), areas, normals.

    In a canonical order (corners by vertex id, triangles by their corners): Blender's primitives
    do not create their faces in the same order from run to run (measured: the UV sphere's loops
    differ between processes, its vertices do not), and hair grown on them must not differ."""
    mesh.calc_loop_triangles()
    tris = mesh.loop_triangles
    t = len(tris)
    verts = np.empty(t * 3, np.int32)
    loops = np.empty(t * 3, np.int32)
    area = np.empty(t, np.float32)
    normal = np.empty(t * 3, np.float32)
    tris.foreach_get("vertices", verts)
    tris.foreach_get("loops", loops)
    tris.foreach_get("area", area)
    tris.foreach_get("normal", normal)
    verts, loops = verts.reshape(t, 3), loops.reshape(t, 3)
    corner = np.argsort(verts, axis=1, kind="stable")
    verts = np.take_along_axis(verts, corner, axis=1)
    loops = np.take_along_axis(loops, corner, axis=1)
    order = np.lexsort(verts.T[::-1])
    return verts[order], loops[order], area[order], normal.reshape(t, 3)[order]


def grow_hair(head, count: int, points: int = 12, seed: int = 1):
    """Strands rooted at random points of the head's upper half, combed outward and down."""
    verts, loops, area, normal, co, uv_all = scenes.surface_arrays(head.data)
    centre = co[verts].mean(axis=1)
    scalp = (centre[:, 2] > 0.15) & (normal[:, 2] > -0.2) & (centre[:, 1] > -0.55)
    weight = np.where(scalp, area, 0.0)
    rng = np.random.default_rng(seed)
    tri = rng.choice(len(area), size=count, p=weight / weight.sum())
    r1, r2 = rng.random(count), rng.random(count)
    s = np.sqrt(r1)
    bary = np.stack([1 - s, s * (1 - r2), s * r2], axis=1).astype(np.float32)
    roots = np.einsum("nk,nkd->nd", bary, co[verts[tri]])
    uv = np.einsum("nk,nkd->nd", bary, uv_all[loops[tri]])
    n = normal[tri]
    t = np.linspace(0.0, 1.0, points, dtype=np.float32)[None, :, None]
    length = rng.uniform(0.35, 0.55, (count, 1, 1)).astype(np.float32)
    sag = np.array([0.0, 0.25, -1.0], np.float32)            # falls back and down
    pts = roots[:, None] + length * (n[:, None] * t * 0.45 + sag * t ** 1.6 * 0.7)
    pts += rng.normal(0, 0.01, pts.shape).astype(np.float32) * t
    return pts.reshape(-1, 3).astype(np.float32), np.full(count, points, np.int32), uv.astype(np.float32)


def comb_hair(head, bodies, count: int, points: int = 24, seed: int = 1):
    """Long hair combed 5 mm over the head, its ears and the shoulders (``grooms.comb``), from
    roots on the head's upper half."""
    roots, normals, uv = grooms.scalp_roots(
        head, count, lambda c, n: (c[:, 2] > 0.2) & (n[:, 2] > -0.1) & (c[:, 1] > -0.3), seed=seed)
    v, t = grooms.mesh_world(head)
    for body in bodies:
        bv, bt = grooms.mesh_world(body)
        v, t = np.concatenate([v, bv]), np.concatenate([t, bt + len(v)])
    # parted in the middle: combed back, and to each side from the parting
    down = np.c_[0.5 * np.tanh(4 * roots[:, 0]), np.full(count, 0.5), np.full(count, -1.0)]
    pts = grooms.comb(v, t, roots, normals, points, length=1.8, height=0.005, down=down, seed=seed)
    return pts, np.full(count, points, np.int32), uv


def build_scene(strands: int):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    bpy.ops.mesh.primitive_monkey_add(size=2.0, calc_uvs=True)
    head = bpy.context.active_object
    head.name = "Head"
    sub = head.modifiers.new("Subdivision", "SUBSURF")
    bpy.ops.object.modifier_apply(modifier=sub.name)
    bpy.ops.object.shade_smooth()
    head.data.uv_layers.active.name = "UVMap"
    body = grooms.shoulders()                  # a collider: Collision physics, Outer thickness 1 cm
    body.color = (0.55, 0.6, 0.7, 1.0)
    pts, counts, uv = comb_hair(head, [body], strands)
    scenes.keyed_head_turn(head, FRAMES[0], FRAMES[1], angle=0.7, lift=0.1)
    hair = scenes.curves_hair("Hair", pts, counts)
    cv = hair.data
    cv.surface = head
    cv.surface_uv_map = "UVMap"
    cv.attributes.new("surface_uv_coordinate", "FLOAT2", "CURVE").data.foreach_set("vector", uv.ravel())
    radius = cv.attributes.get("radius") or cv.attributes.new("radius", "FLOAT", "POINT")
    radius.data.foreach_set("value", np.full(len(pts), 0.003, np.float32))
    head.color = (0.85, 0.75, 0.68, 1.0)
    hair.color = (0.35, 0.18, 0.07, 1.0)
    bpy.context.view_layer.objects.active = hair
    return head, hair


def add_magnets(head, hair):
    """Three magnets riding on the head: two sweeping the sides, one dynamic at the back."""
    specs = [("Magnet Left", (-0.95, -0.1, 0.55), (-0.45, 0.15, 0.35), False),
             ("Magnet Right", (0.95, -0.1, 0.55), (0.35, -0.25, 0.45), False),
             ("Magnet Back", (0.0, 0.85, 0.55), (0.0, 0.25, 0.2), True)]
    for name, where, move, dynamic in specs:
        # the magnets ride on the head; their own keys add to its turn
        scenes.keyed_magnet(hair, name, where, move, FRAMES, 0.9, (25.0, 2.5, 1.0) if dynamic else None,
                            parent=head, size=0.15, multiplier=1.0, back=True)
    s = hair.hair_wig
    s.use_secondary = True
    s.secondary_stiffness, s.secondary_damping = 80.0, 6.0
    s.compression = 0.3


def setup_render(size: int):
    scene = bpy.context.scene
    cam_data = bpy.data.cameras.new("Camera")
    cam = bpy.data.objects.new("Camera", cam_data)
    scene.collection.objects.link(cam)
    cam.location = (4.6, -7.4, 1.0)
    cam.rotation_euler = grooms.look(np.array([0.0, 0.1, -0.45]) - np.array(cam.location))
    cam_data.lens = 62
    scene.camera = cam
    r = scene.render
    r.engine = "BLENDER_WORKBENCH"
    r.resolution_x = r.resolution_y = size
    r.resolution_percentage = 100
    r.image_settings.file_format = "PNG"
    r.film_transparent = False
    shading = scene.display.shading
    shading.light = "STUDIO"
    shading.color_type = "OBJECT"
    scene.world = bpy.data.worlds.new("World")
    scene.world.color = (0.9, 0.9, 0.92)


def contact_sheet(out_dir: Path, size: int, columns: int = 3) -> Path:
    """Render SHEET_FRAMES and tile them into one PNG."""
    scene = bpy.context.scene
    tiles = []
    for f in SHEET_FRAMES:
        scene.frame_set(f)
        path = out_dir / f"frame_{f:03d}.png"
        scene.render.filepath = str(path)
        bpy.ops.render.render(write_still=True)
        img = bpy.data.images.load(str(path))
        px = np.empty(img.size[0] * img.size[1] * 4, np.float32)
        img.pixels.foreach_get(px)
        tiles.append(px.reshape(img.size[1], img.size[0], 4))
        bpy.data.images.remove(img)
        path.unlink()
    rows = [np.concatenate(tiles[i:i + columns], axis=1) for i in range(0, len(tiles), columns)]
    sheet = np.concatenate(rows[::-1], axis=0)   # Blender's pixel rows run bottom-up
    h, w = sheet.shape[:2]
    img = bpy.data.images.new("contact_sheet", w, h, alpha=True)
    img.pixels.foreach_set(sheet.ravel())
    out = out_dir / "demo_contact_sheet.png"
    img.filepath_raw = str(out)
    img.file_format = "PNG"
    img.save()
    bpy.data.images.remove(img)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--output", default="demo_output", help="folder for demo.blend and the picture")
    p.add_argument("--strands", type=int, default=3000, help="number of hair curves")
    p.add_argument("--size", type=int, default=360, help="pixel size of each rendered frame")
    args = p.parse_args(argv)
    out_dir = Path(args.output).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    addon.ensure_registered()

    t0 = time.perf_counter()
    head, hair = build_scene(args.strands)
    bpy.ops.hair_wig.enable()
    add_magnets(head, hair)
    bpy.context.view_layer.objects.active = hair
    t1 = time.perf_counter()
    if bpy.ops.hair_wig.bake() != {"FINISHED"}:
        print("demo: bake failed", file=sys.stderr)
        return 1
    t2 = time.perf_counter()
    setup_render(args.size)
    blend = out_dir / "demo.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), compress=True)
    sheet = contact_sheet(out_dir, args.size)
    t3 = time.perf_counter()
    points = len(hair.data.points)
    print(f"demo: {len(hair.data.curves)} strands, {points} points, frames {FRAMES[0]}..{FRAMES[1]}")
    print(f"demo: build {t1 - t0:.2f} s, bake {t2 - t1:.2f} s, save + render {t3 - t2:.2f} s")
    print(f"demo: wrote {blend} ({blend.stat().st_size / 1e6:.1f} MB) and {sheet}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
