"""Hair drawn by sketching (seed 002, ch. 3) on a subdivided Suzanne: Grease Pencil drawings made
in bpy from three views (left, back, right, as an artist turns the head between strokes) —
strokes from her scalp as each view sees it, sweeping out and down, every third with a loop in
it — converted by Convert Strokes to Hair from the camera where each was drawn, each strand
leading a wisp; measured (strands, seconds, nearest point to the head) and rendered.

    ./run python scripts/draw_demo.py [--strokes 150] [--output docs/draw_hair.png]
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

# an artist draws from several views, turning the head between strokes: left, back, right
VIEWS = {"left": np.array([-7.0, 1.0, 1.5]), "back": np.array([0.0, 7.0, 1.5]), "right": np.array([7.0, 1.0, 1.5])}


def _strokes(core, eye, v, t, count, rng):
    """``count`` strokes drawn from ``eye``: each starts on her scalp (not her face), sweeps out
    (back, from a side) and down, every third with a loop in it; as Grease Pencil places them, on a plane between the
    eye and the head."""
    forward = -eye / np.linalg.norm(eye)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    drawn, tries = [], 0
    while len(drawn) < count and tries < 100 * count:
        tries += 1
        aim = rng.uniform(-0.85, 0.85) * right + rng.uniform(0.3, 1.05) * up
        direction = (aim - eye) / np.linalg.norm(aim - eye)
        hit = core.sketch.ray_hit(eye, direction, v, t)
        if hit is None:
            continue
        root = eye + hit[0] * direction
        if root[1] < -0.2 or root[2] < 0.2:           # her face and below: no hair
            continue
        # out from the parting seen from behind; from a side, back over the ear (not over her eyes)
        side = (np.sign(root @ right) or 1.0) if abs(right[1]) < 0.5 else np.sign(right[1])
        s = np.linspace(0, 1, 40)[:, None]
        path = (root + s * (side * rng.uniform(0.3, 0.6) * right - rng.uniform(1.4, 2.0) * up)
                + (s * (1 - s)) * (side * 0.7 * right + 0.2 * up))         # out over the ear, then down
        if len(drawn) % 3 == 0:                # a loop two thirds down: one turn (a curl)
            th = np.clip((s[:, 0] - 0.55) / 0.3, 0, 1) * 2 * np.pi
            path += 0.1 * (-side * np.sin(th)[:, None] * right + (1 - np.cos(th))[:, None] * up)
        d = path - eye
        depth = 0.5 * np.linalg.norm(eye)                    # the Grease Pencil plane
        drawn.append(eye + d * (depth / (d @ forward))[:, None])
    return drawn


def _grease_pencil(name, strokes):
    data = bpy.data.grease_pencils_v3.new(name) if hasattr(bpy.data, "grease_pencils_v3") \
        else bpy.data.grease_pencils.new(name)
    gp = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(gp)
    drawing = data.layers.new("Strands").frames.new(1).drawing
    drawing.add_strokes([len(p) for p in strokes])
    drawing.attributes["position"].data.foreach_set("vector", np.concatenate(strokes).astype(np.float32).ravel())
    gp.hide_render = True
    return gp


def build(strokes: int, seed: int = 0, rings: int = 1):
    """Suzanne, empty hair on her, a camera, and a Grease Pencil drawing per view in ``VIEWS``
    of ``strokes`` strokes in all, each starting on her scalp as that view sees it. Returns the
    head, the hair and ``{view: drawing}``; ``draw_from(hair, view, drawing)`` converts one."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon.ensure_registered()
    core = grooms._core()
    head = grooms._subdivided_suzanne()
    cam = bpy.data.objects.new("Drawing Camera", bpy.data.cameras.new("Drawing Camera"))
    bpy.context.scene.collection.objects.link(cam)
    bpy.context.scene.camera = cam
    hair = scenes.empty_hair(head)
    v, t = grooms.mesh_world(head)
    rng = np.random.default_rng(seed)
    per = [len(a) for a in np.array_split(np.arange(strokes), len(VIEWS))]
    drawings = {name: _grease_pencil(f"Drawing ({name})", _strokes(core, eye, v, t, n, rng))
                for n, (name, eye) in zip(per, VIEWS.items())}
    d = hair.hair_wig.draw
    d.view, d.points, d.rings, d.closeness, d.fuzziness = "CAMERA", 32, rings, 0.008, 0.3
    bpy.context.view_layer.objects.active = hair
    return head, hair, drawings


def draw_from(hair, view: str, drawing) -> float:
    """Convert ``drawing`` with the camera where it was drawn from; seconds."""
    cam = bpy.context.scene.camera
    cam.location = VIEWS[view]
    cam.rotation_euler = grooms.look(-VIEWS[view])
    bpy.context.view_layer.update()
    hair.hair_wig.draw.strokes = drawing
    bpy.context.view_layer.objects.active = hair
    return convert(hair)


def convert(hair) -> float:
    start = time.perf_counter()
    assert bpy.ops.hair_wig.strokes_to_hair() == {"FINISHED"}
    return time.perf_counter() - start


def measure(head, hair) -> dict:
    core = grooms._core()
    cv = hair.data
    pts = np.empty(len(cv.points) * 3, np.float32)
    cv.attributes["position"].data.foreach_get("vector", pts)
    pts = pts.reshape(-1, 3).astype(np.float64)
    counts = np.array([c.points_length for c in cv.curves])
    off = np.r_[0, np.cumsum(counts)]
    root = np.zeros(len(pts), bool)
    root[off[:-1]] = True
    v, t = grooms.mesh_world(head)
    dist = core.collision.MeshField(v, t, margin=0.1, name=head.name).signed_distance(pts[~root])
    return dict(curves=len(counts), points=len(pts), nearest=float(dist.min()), inside=int((dist < 0).sum()))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--strokes", type=int, default=150)
    p.add_argument("--output", default=str(Path(__file__).resolve().parents[1] / "docs" / "draw_hair.png"))
    args = p.parse_args(argv)
    head, hair, drawings = build(args.strokes)
    seconds = sum(draw_from(hair, view, gp) for view, gp in drawings.items())
    m = measure(head, hair)
    print(f"{args.strokes} strokes -> {m['curves']} curves ({m['points']} points) in {seconds:.2f} s; points past "
          f"the root nearest the head {m['nearest'] * 1000:.1f} mm (clearance 5 mm), inside {m['inside']}")
    g = grooms.Groom("drawn", hair, head, frames=(1, 1))
    tiles = [grooms.picture(g, Path(args.output).with_suffix(f".{k}.png"), 1, size=480, view=view)
             for k, view in enumerate([(0.0, -1.0, 0.25), (1.0, -0.2, 0.3), (-0.4, 1.0, 0.3)])]
    grooms.save_sheet(tiles, Path(args.output))
    for k in range(3):
        Path(args.output).with_suffix(f".{k}.png").unlink(missing_ok=True)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
