"""Quick Fur children against the head after a bake (issue 34 part 4).

Suzanne (one subdivision, 2 m), Blender's Quick Fur (guides + Interpolate Hair Curves children),
the head turning 90 degrees over frames 1-12, a wig with Springs and head collision. For every
frame: how many evaluated points (guides and children, as Blender shows them) are more than
``--depth`` inside the head by exact distance, unbaked (Blender's own interpolation following the
head) and baked, and the worst of each.

    python scripts/fur_children.py [--density MEDIUM] [--solver SPRINGS] [--no-children] [--render DIR]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import addon  # noqa: E402
import bpy  # noqa: E402
import grooms  # noqa: E402
import numpy as np  # noqa: E402
import scenes  # noqa: E402

FRAMES = (1, 12)


def build(density="MEDIUM", solver="SPRINGS", children=True):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    head = grooms._subdivided_suzanne(1)
    scenes.keyed_head_turn(head, *FRAMES, angle=math.pi / 2, lift=0.0)
    hair = grooms.grow_quick_fur(head, density)
    hair.hair_wig.use_secondary = True
    hair.hair_wig.dynamics_layer = solver
    hair.hair_wig.use_children_room = children
    return grooms.Groom("Quick Fur", hair, head, frames=FRAMES)


def inside_counts(g, depth, frames=None):
    """Per frame of ``frames`` (all the scene's by default): (count of evaluated points more
    than ``depth`` inside the head, deepest, points evaluated)."""
    from hair_wig_addon.operators import blender_io

    exact = grooms._Exact(g.head)
    out = []
    for f in frames or range(FRAMES[0], FRAMES[1] + 1):
        bpy.context.scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        p = blender_io.read_evaluated_points(g.hair, dg).astype(np.float64)
        m = np.array(g.hair.evaluated_get(dg).matrix_world)
        d = exact(p @ m[:3, :3].T + m[:3, 3])
        out.append((int((d < -depth).sum()), float(-d.min()), len(p)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--density", default="MEDIUM")
    ap.add_argument("--solver", default="SPRINGS")
    ap.add_argument("--depth", type=float, default=0.01)
    ap.add_argument("--no-children", action="store_true", help="Keep Children Out off (as before it existed)")
    ap.add_argument("--render")
    args = ap.parse_args(argv)
    addon.ensure_registered()
    g = build(args.density, args.solver, not args.no_children)
    unbaked = inside_counts(g, args.depth)
    bpy.context.view_layer.objects.active = g.hair
    t0 = time.perf_counter()
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    seconds = time.perf_counter() - t0
    baked = inside_counts(g, args.depth)
    print(f"{len(g.hair.data.curves)} guides, {unbaked[0][2]} evaluated points, bake {seconds:.1f} s")
    print("frame  unbaked(count, deepest mm)  baked(count, deepest mm)")
    for f, (u, b) in enumerate(zip(unbaked, baked), FRAMES[0]):
        print(f"{f:5d}  {u[0]:7d} {1e3 * u[1]:8.1f}      {b[0]:7d} {1e3 * b[1]:8.1f}")
    wu, wb = max(u[0] for u in unbaked), max(b[0] for b in baked)
    worse = sum(b[0] > u[0] for u, b in zip(unbaked, baked))
    print(f"worst unbaked {wu}, worst baked {wb} ({wb / max(wu, 1):.2f}x), baked worse on {worse} of "
          f"{len(baked)} frames")
    if args.render:
        out = Path(args.render)
        out.mkdir(parents=True, exist_ok=True)
        grooms.frame_sheet(g, out / "fur_children.png", [1, 4, 6, 8, 10, 12], view=(0.0, -1.0, 0.2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
