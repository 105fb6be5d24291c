"""Long hair resting on shoulders that breathe (issue 34 part 3): does a tip pop?

Long hair combed over a subdivided Suzanne onto a capsule of shoulders (``grooms.long_hair``),
head still, no magnet; the shoulders' height keyed +2 % and back over 24-frame cycles (about
1 mm a frame at their top); the Strands solver. Per frame: the largest tip move from the frame
before, the 99th percentile of tip moves, and the strand of the largest; a pop is a frame whose
largest move is well above the ordinary motion.

    python scripts/breathing.py [--strands 784] [--points 24] [--frames 48] [--solver STRANDS]
                                [--breath SCALE | SHAPE] [--give CELLS] [--render sheet.png]

``--breath SHAPE`` breathes by a shape key instead of the object's scale (the top raised 2 % of
the height, the bottom kept), ``--breath HEAD`` puffs the head (subdivided Suzanne, 15 000
triangles) 6 mm along its normals by one: the collider then deforms, and its field follows the
skin (refitted within ``--give`` cells of its rest pose, the default the add-on's; 0: built anew
each frame). It prints the bake's ms a frame, how many frames were refitted, and the deepest
point inside the colliders as Blender plays the bake.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import addon  # noqa: E402
import bpy  # noqa: E402
import grooms  # noqa: E402
import numpy as np  # noqa: E402


def build(strands=784, points=24, frames=48, solver="STRANDS", friction=None, breath="SCALE"):
    g = grooms.long_hair(strands, points)
    g.head.animation_data_clear()
    s = g.hair.hair_wig
    while len(s.magnets):
        if s.magnets[0].object is not None:
            bpy.data.objects.remove(s.magnets[0].object)
        s.magnets.remove(0)
    body = g.colliders[0]
    # breathe about its own centre: the top rises 1 % of its height (about 1 mm a frame)
    bpy.ops.object.select_all(action="DESELECT")
    body.select_set(True)
    bpy.context.view_layer.objects.active = body
    bpy.ops.object.origin_set(type="ORIGIN_GEOMETRY", center="BOUNDS")
    bpy.context.view_layer.objects.active = g.hair
    if breath in ("SHAPE", "HEAD"):
        # the shoulders' top raised 2 % of their height, or the head puffed 6 mm along its normals
        skin = body if breath == "SHAPE" else g.head
        skin.shape_key_add(name="Basis")
        key = skin.shape_key_add(name="Breath")
        co = np.empty(len(skin.data.vertices) * 3, np.float32)
        skin.data.vertices.foreach_get("co", co)
        co = co.reshape(-1, 3)
        if breath == "SHAPE":
            z = co[:, 2]
            co[:, 2] += 0.02 * (z - z.min())
        else:
            n = np.empty(co.size, np.float32)
            skin.data.vertices.foreach_get("normal", n)
            co += 0.006 * n.reshape(-1, 3)
        key.data.foreach_set("co", co.ravel())
        for f in range(1, frames + 2, 12):
            key.value = 1.0 if (f // 12) % 2 else 0.0
            key.keyframe_insert("value", frame=f)
    else:
        for f in range(1, frames + 2, 12):
            body.scale = (1.0, 1.0, 1.02 if (f // 12) % 2 else 1.0)
            body.keyframe_insert("scale", frame=f)
    g.frames = (1, frames)
    grooms.use_solver(g, solver)
    if friction is not None:
        g.hair.hair_wig.strands_friction = friction
    return g


def tip_steps(g, cache) -> np.ndarray:
    """Every tip's move from the frame before, frame by frame from the second: (frames − 1,
    strands), m — the baked tips read once (each frame is a ``frame_set`` and an evaluation)."""
    tips = cache.hair.offsets[1:] - 1
    p = np.stack([grooms.world_points(g, cache, f)[tips] for f in range(g.frames[0], g.frames[1] + 1)])
    return np.linalg.norm(np.diff(p, axis=0), axis=2)


def tip_moves(g, cache, move=None):
    """Per frame from the second: (largest tip move, 99th percentile, strand of the largest), m.
    ``move``: ``tip_steps``, when the caller has it."""
    move = tip_steps(g, cache) if move is None else move
    return [(g.frames[0] + i + 1, float(d.max()), float(np.percentile(d, 99)), int(d.argmax()))
            for i, d in enumerate(move)]


def worst_pop(g, cache, floor=1e-3, move=None):
    """The largest pop: over every strand and frame, a tip's move in one frame over the larger of
    its moves in the frames either side (at least ``floor`` m, the shoulders' own motion a frame,
    so a still tip that stirs is no pop); (ratio, frame, strand). Resting contact on a moving body
    is stable when no tip jumps out of its own motion: 1.1 → 6.8 → 3.0 mm is a ratio of 2.3.
    ``move``: ``tip_steps``, when the caller has it."""
    move = tip_steps(g, cache) if move is None else move
    around = np.maximum(np.maximum(move[:-2], move[2:]), floor)
    ratio = move[1:-1] / around
    f, s = np.unravel_index(int(ratio.argmax()), ratio.shape)
    return float(ratio[f, s]), int(g.frames[0] + f + 2), int(s)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strands", type=int, default=784)
    ap.add_argument("--points", type=int, default=24)
    ap.add_argument("--frames", type=int, default=48)
    ap.add_argument("--solver", default="STRANDS")
    ap.add_argument("--friction", type=float)
    ap.add_argument("--breath", default="SCALE", choices=("SCALE", "SHAPE", "HEAD"))
    ap.add_argument("--give", type=float, help="cells a deforming collider may move with its field refitted")
    ap.add_argument("--render", default="", help="a contact sheet of the bake, written to this .png")
    args = ap.parse_args(argv)
    addon.ensure_registered()
    from hair_wig_addon.hair_wig.collision import Collider, MeshField

    if args.give is not None:
        Collider.GIVE = args.give
    refits = [0, 0]
    refit = MeshField.refit

    def counted(self, *a, **kw):
        out = refit(self, *a, **kw)
        refits[out is None] += 1
        return out

    MeshField.refit = counted
    g = build(args.strands, args.points, args.frames, args.solver, args.friction, args.breath)
    cache, seconds = grooms.bake(g)
    steps = tip_steps(g, cache)
    moves = tip_moves(g, cache, steps)
    for f, big, p99, s in moves:
        print(f"frame {f:3d}: largest tip move {1e3 * big:7.2f} mm (strand {s}), 99% {1e3 * p99:6.2f} mm")
    ratio, frame, strand = worst_pop(g, cache, move=steps)
    print(f"worst pop: strand {strand}'s tip at frame {frame} moved {ratio:.2f} times its larger move "
          f"in the frames either side")
    big = np.array([m[1] for m in moves])
    if args.render:
        from hair_wig_addon.operators import blender_io

        blender_io.write_bake(g.hair, cache)
        # from behind and to the left, where the hair rests on the shoulders
        grooms.frame_sheet(g, Path(args.render), (1, 4, 5, 6, 12, 13, 14, 24), view=(-0.7, 1.0, 0.35))
        print(f"wrote {args.render}")
    m = grooms.measure(g, cache)
    print(f"the deforming collider's field refitted {refits[0]} times ({refits[1]} refused); bake "
          f"{1e3 * seconds / (g.frames[1] - g.frames[0] + 1):.0f} ms a frame; deepest inside "
          f"{m['penetration']:.2e} of the head, worst stretch {m['stretch']:.5f}, rest move {m['rest_move']:.2e}")
    print(f"bake {seconds:.1f} s; largest {1e3 * big.max():.2f} mm at frame {moves[int(big.argmax())][0]}, "
          f"median of the frames' largest {1e3 * np.median(big):.2f} mm")
    return 0


if __name__ == "__main__":
    sys.exit(main())
