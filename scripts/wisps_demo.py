"""Long hair in wisps against strands: the groom scene's long hair (combed 5 mm over a subdivided
Suzanne, ears and all, onto a shoulders collider; ``grooms.long_hair``) with the head turning one
way, then the other, then back and holding still, baked twice — with the Wisps solver (seed 001,
Plante, Cani & Poulin 2002: the seed's long hairstyle, 56 wisps of 8 segments) and with the
Strands solver — both at Hold 150 and Settle 10 (the defaults of both), the rest at their defaults.
Each bake is measured as the groom scenes are (rest move, stretch, deepest inside) and frame by
frame (largest tip move); the two are rendered side by side with Workbench, every strand coloured
by the wisp the Wisps solver put it in (the same colours in both rows), so wisps can be followed
as they slide into each other and come apart.

    ./run python scripts/wisps_demo.py [--strands 3000] [--points 24] [--output docs/wisps_vs_strands.png]
                                       [--gif docs/wisps_vs_strands.gif] [--size 300]

The picture: Wisps on the top row, Strands on the bottom, frames ``TILES`` left to right. The GIF
(written with Pillow where it is installed, else left out): every other frame, Wisps left,
Strands right.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bpy  # noqa: E402
import grooms  # noqa: E402
import numpy as np  # noqa: E402
import scenes  # noqa: E402

LAST = 48
# the head's turn about Z (radians) at these frames: one way, the other, back, then still
TURN = ((1, 0.0), (9, 0.75), (17, -0.55), (24, 0.25), (30, 0.0))
TILES = (1, 9, 13, 17, 21, 25, 32, 48)
WISPS, SEGMENTS = 56, 8           # the seed's long hairstyle
HOLD, SETTLE = 150.0, 10.0        # the Wisps defaults (Strands' too)
PALETTE = np.array([(0.80, 0.08, 0.08), (0.95, 0.45, 0.02), (0.90, 0.78, 0.05), (0.15, 0.55, 0.10),
                    (0.02, 0.50, 0.50), (0.08, 0.25, 0.85), (0.45, 0.10, 0.65), (0.90, 0.30, 0.60),
                    (0.40, 0.22, 0.08), (0.15, 0.15, 0.15), (0.35, 0.70, 0.95), (0.55, 0.85, 0.15)])


def build(strands: int, points: int, last: int = LAST) -> grooms.Groom:
    """``grooms.long_hair`` without its magnet, the head keyed through ``TURN``, frames 1–``last``."""
    g = grooms.long_hair(strands, points)
    for ob in [o for o in bpy.data.objects if o.type == "EMPTY"]:       # the scene's magnet
        bpy.data.objects.remove(ob)
    g.hair.hair_wig.magnets.clear()                    # the motion is the solver's alone
    head = g.head
    head.animation_data_clear()
    for frame, angle in TURN:
        head.rotation_euler = (0.0, 0.0, angle)
        head.keyframe_insert("rotation_euler", frame=frame)
    g.frames = (1, last)
    bpy.context.scene.frame_end = last
    s = g.hair.hair_wig
    s.use_secondary = True
    return g


def bake_with(g: grooms.Groom, solver: str):
    """Bake ``g`` with ``solver`` (WISPS or STRANDS); the cache, seconds, and for Wisps the layer
    the bake stepped (its wisps, seconds and counts)."""
    import addon

    s = g.hair.hair_wig
    s.dynamics_layer = solver
    layers = []
    if solver == "WISPS":
        s.wisps_count, s.wisps_segments = WISPS, SEGMENTS
        s.wisps_stiffness, s.wisps_goal_damping = HOLD, SETTLE
        wisps = addon.load().hair_wig.wisps
        original = wisps.WispLayer.__init__

        def init(self, *a, **k):
            original(self, *a, **k)
            layers.append(self)

        wisps.WispLayer.__init__ = init
    else:
        s.strands_stiffness, s.strands_goal_damping = HOLD, SETTLE
    try:
        cache, seconds = grooms.bake(g)
    finally:
        if solver == "WISPS":
            wisps.WispLayer.__init__ = original
    return cache, seconds, (layers[-1] if layers else None)


def motion(g: grooms.Groom, cache) -> list[dict]:
    """Frame by frame: the largest and mean tip move since the frame before (m), the mean and
    largest distance of a point from the groom (m), the worst segment stretch (longest / rest);
    whether every point is finite."""
    from hair_wig_addon.operators import blender_io

    bpy.context.scene.frame_set(g.frames[0])
    hair = blender_io.read_hair(g.hair)
    ends = hair.offsets[1:] - 1
    starts = hair.offsets[:-1]
    first = np.zeros(hair.num_points, bool)
    first[starts] = True
    groom = hair.points.astype(np.float64)
    seg0 = np.linalg.norm(np.diff(groom, axis=0), axis=1)
    real = ~first[1:] & (seg0 > 0)
    rows, before = [], None
    for f in range(g.frames[0], g.frames[1] + 1):
        p = cache.frame(f).astype(np.float64)
        seg = np.linalg.norm(np.diff(p, axis=0), axis=1)[real] / seg0[real]
        tips = p[ends]
        jump = np.zeros(len(ends)) if before is None else np.linalg.norm(tips - before, axis=1)
        before = tips
        away = np.linalg.norm(p - groom, axis=1)
        rows.append({"frame": f, "tip_max": float(jump.max()), "tip_mean": float(jump.mean()),
                     "away_mean": float(away.mean()), "away_max": float(away.max()),
                     "stretch": float(seg.max()), "squash": float(seg.min()), "finite": bool(np.isfinite(p).all())})
    return rows


def wisp_colours(groups: np.ndarray, roots: np.ndarray) -> np.ndarray:
    """A palette index per wisp, neighbouring wisps (by where their roots are) told apart."""
    num = int(groups.max()) + 1
    centre = np.array([roots[groups == w].mean(axis=0) for w in range(num)])
    colour = np.full(num, -1)
    d = np.linalg.norm(centre[:, None] - centre[None], axis=2)
    for w in np.argsort(centre[:, 2])[::-1]:           # crown first
        near = np.argsort(d[w])[1:7]
        used = np.bincount(colour[near][colour[near] >= 0], minlength=len(PALETTE))
        colour[w] = int(np.argmin(used + 1e-3 * np.arange(len(PALETTE))))
    return colour


class Display:
    """The hair drawn as one Curves object per colour (Workbench colours whole objects): its points
    set from a bake's frame, world space."""

    def __init__(self, g: grooms.Groom, groups: np.ndarray, colour_of_wisp: np.ndarray):
        from hair_wig_addon.operators import blender_io

        bpy.context.scene.frame_set(g.frames[0])
        hair = blender_io.read_hair(g.hair)
        self.g = g
        counts = hair.counts
        offsets = hair.offsets
        strand_colour = colour_of_wisp[groups]
        self.parts = []
        for c in range(len(PALETTE)):
            strands = np.flatnonzero(strand_colour == c)
            if not strands.size:
                continue
            idx = np.concatenate([np.arange(offsets[s], offsets[s + 1]) for s in strands])
            ob = scenes.curves_hair(f"Wisps {c}", hair.points[idx], counts[strands])
            ob.color = (*PALETTE[c], 1.0)
            self.parts.append((ob, idx))
        g.hair.hide_render = True

    def show(self, cache, frame: int) -> None:
        m = np.array(self.g.hair.evaluated_get(bpy.context.evaluated_depsgraph_get()).matrix_world)
        p = cache.frame(frame).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
        for ob, idx in self.parts:
            ob.data.attributes["position"].data.foreach_set("vector", p[idx].astype(np.float32).ravel())
            ob.data.update_tag()


def camera(g: grooms.Groom, size: int, view=(0.55, 1.0, 0.15)):
    """A Workbench camera from ``view`` (behind Suzanne and to her left) framing the head and the
    hair down to the shoulders."""
    scene = bpy.context.scene
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    scene.camera = cam
    hv, _ = grooms.mesh_world(g.head)
    target = np.array([0.0, 0.2, 0.5 * (hv[:, 2].max() + hv[:, 2].min()) - 0.55])
    view = np.asarray(view, np.float64)
    cam.location = target + view / np.linalg.norm(view) * 6.2
    cam.rotation_euler = grooms.look(target - np.array(cam.location))
    grooms.workbench(g, size)            # the hair is drawn by its wisps' parts, in their colours


def render(path: Path) -> np.ndarray:
    """Render the scene at its current frame; pixels (H, W, 4) float, top row first."""
    out = grooms.render_still(path)[::-1].copy()
    path.unlink()
    return out


def to_rgb(px: np.ndarray) -> np.ndarray:
    """Pixels (H, W, 4) float (as the PNG holds them: display values) over the background, as
    (H, W, 3) uint8."""
    bg = np.array([0.93, 0.93, 0.94])
    rgb = px[..., :3] * px[..., 3:] + bg * (1 - px[..., 3:])
    return (np.clip(rgb, 0, 1) * 255 + 0.5).astype(np.uint8)


def pillow():
    try:
        from PIL import Image, ImageDraw
    except ImportError:
        return None
    return Image, ImageDraw


def label(img: np.ndarray, texts) -> np.ndarray:
    """``texts`` [(x, y, text)] written on ``img`` (H, W, 3) uint8 with Pillow, where it is there."""
    pil = pillow()
    if pil is None:
        return img
    Image, ImageDraw = pil
    im = Image.fromarray(img)
    draw = ImageDraw.Draw(im)
    for x, y, text in texts:
        draw.text((x, y), text, fill=(20, 20, 20))
    return np.asarray(im)


def save_png(img: np.ndarray, path: Path) -> None:
    pil = pillow()
    if pil is not None:
        pil[0].fromarray(img).save(path)
        return
    h, w, _ = img.shape
    im = bpy.data.images.new("sheet", w, h, alpha=False)
    px = np.concatenate([img[::-1].astype(np.float32) / 255, np.ones((h, w, 1), np.float32)], axis=2)
    im.pixels.foreach_set(px.ravel())
    im.filepath_raw = str(path)
    im.file_format = "PNG"
    im.save()
    bpy.data.images.remove(im)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--strands", type=int, default=3000)
    p.add_argument("--points", type=int, default=24)
    p.add_argument("--output", default="docs/wisps_vs_strands.png", help="'' for no pictures")
    p.add_argument("--last", type=int, default=LAST, help="the last frame baked (the pictures need 48 or more)")
    p.add_argument("--gif", default="docs/wisps_vs_strands.gif", help="'' for none")
    p.add_argument("--size", type=int, default=300, help="pixels of a tile")
    args = p.parse_args(argv)
    grooms.addon.ensure_registered()
    g = build(args.strands, args.points, args.last)
    caches, layer = {}, None
    for solver in ("WISPS", "STRANDS"):
        cache, seconds, found = bake_with(g, solver)
        caches[solver] = cache
        layer = layer or found
        print(f"{solver}: {grooms.bake_line(g, cache, seconds)}", flush=True)
        rows = motion(g, cache)
        worst = max(rows, key=lambda r: r["tip_max"])
        still = [r for r in rows if r["frame"] > TURN[-1][0] + 8]
        print(f"   largest tip move in a frame {1e3 * worst['tip_max']:.0f} mm (frame {worst['frame']}); mean tip "
              f"move per frame at frames 5/9/13/17/21/25/32/40/48: "
              + " ".join(f"{1e3 * rows[f - 1]['tip_mean']:.0f}" for f in (5, 9, 13, 17, 21, 25, 32, 40, 48))
              + f" mm; after frame {TURN[-1][0] + 8} largest {1e3 * max(r['tip_max'] for r in still):.1f} mm; "
              f"worst stretch {max(r['stretch'] for r in rows):.3f}, shortest {min(r['squash'] for r in rows):.3f} of "
              f"rest; all finite: {all(r['finite'] for r in rows)}", flush=True)
        print("   mean / largest distance from the groom (mm) at frames "
              + ", ".join(f"{r['frame']}: {1e3 * r['away_mean']:.0f} / {1e3 * r['away_max']:.0f}"
                          for r in rows if r["frame"] in (1, 17, 30, 40, 48, 64, 80, 96)), flush=True)
    groups = layer.set.wisp_of_strand
    sizes = np.bincount(groups)
    print(f"wisps: {len(sizes)} ({sizes.min()}-{sizes.max()} strands each), {layer.set.K} segments; over the "
          f"bake: wisps meeting {layer.seconds['interactions']:.1f} s, the body {layer.seconds['body']:.1f} s, "
          f"springs {layer.seconds['springs']:.1f} s, strands placed {layer.seconds['strands']:.1f} s; points met "
          f"in another wisp {layer.counts[0]}, of them colliding {layer.counts[1]}, pairs tested {layer.counts[2]}")
    if not args.output:
        return 0
    from hair_wig_addon.operators import blender_io

    bpy.context.scene.frame_set(1)
    hair = blender_io.read_hair(g.hair)
    display = Display(g, groups, wisp_colours(groups, hair.points[hair.offsets[:-1]].astype(np.float64)))
    camera(g, args.size)
    frames = sorted(set(TILES) | (set(range(1, LAST + 1, 2)) if args.gif else set()))
    tiles = {}
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for f in frames:
        bpy.context.scene.frame_set(f)
        for solver, cache in caches.items():
            display.show(cache, f)
            tiles[solver, f] = to_rgb(render(out.with_name(f"_tile_{solver}_{f}.png")))
    print(f"rendered {len(tiles)} tiles in {time.perf_counter() - t0:.0f} s", flush=True)
    s = args.size
    top = 18
    sheet = np.full((top + 2 * s, s * len(TILES), 3), 255, np.uint8)
    for i, f in enumerate(TILES):
        sheet[top:top + s, i * s:(i + 1) * s] = tiles["WISPS", f]
        sheet[top + s:, i * s:(i + 1) * s] = tiles["STRANDS", f]
    texts = [(i * s + 6, 3, f"frame {f}") for i, f in enumerate(TILES)]
    texts += [(6, top + 4, f"Wisps ({WISPS} wisps x {SEGMENTS} segments)"), (6, top + s + 4, "Strands")]
    save_png(label(sheet, texts), out)
    print(f"wrote {out}: frames {', '.join(map(str, TILES))} left to right; Wisps on top, Strands below; "
          f"strands coloured by their wisp", flush=True)
    pil = pillow()
    if args.gif and pil is None:
        print("no Pillow here: no GIF")
    elif args.gif:
        images = []
        for f in range(1, LAST + 1, 2):
            pair = np.concatenate([tiles["WISPS", f], tiles["STRANDS", f]], axis=1)
            pair = label(pair, [(6, 4, f"Wisps  frame {f}"), (s + 6, 4, "Strands")])
            images.append(pil[0].fromarray(pair).convert("P", palette=pil[0].Palette.ADAPTIVE, colors=128))
        images[0].save(args.gif, save_all=True, append_images=images[1:], duration=1000 // 12, loop=0,
                       optimize=True)
        print(f"wrote {args.gif}: {len(images)} frames (every other frame, 12 a second), Wisps left, Strands right")
    return 0


if __name__ == "__main__":
    sys.exit(main())
