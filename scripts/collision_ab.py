"""Collision settings side by side: the bench's turning Suzanne (5000 × 16 strands, head collision)
baked with one of ``TriangleIndex``'s or ``Collider``'s settings at each of several values, the values alternated in
one process so that the machine's drift falls on all of them alike. For each value: the baked
positions' hash (the same hash for every value when the setting is one that must not change the
result), the bake's report, the time a frame — (a 48-frame bake − a 3-frame bake) / 45, so the bind
is left out — the bind's extra time, and the whole 48-frame bake.

    ./run python scripts/collision_ab.py [--layer SPRINGS] [--setting FINE_NODES] [--values 0 2]
                                         [--pairs 3] [--subdivide 0] [--strands 5000]

``--setting SEGMENTS --values 0 1``: the walk by points alone against points and segments (that
one changes the result: the hashes differ).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from importlib import import_module
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layer", default="SPRINGS", help="the wig's dynamics layer (SPRINGS, STRANDS, RODS, WISPS)")
    ap.add_argument("--setting", default="FINE_NODES",
                    help="a TriangleIndex class setting (FINE_NODES, SUB_CELLS) or a Collider one (SEGMENTS)")
    ap.add_argument("--values", type=int, nargs="+", default=[0, 2])
    ap.add_argument("--pairs", type=int, default=3, help="rounds over the values")
    ap.add_argument("--subdivide", type=int, default=0, help="Subdivision Surface levels applied to the head")
    ap.add_argument("--strands", type=int, default=5000)
    args = ap.parse_args(argv)

    frames = 48
    bpy, scene, head = bench._head_scene(frames)
    if args.subdivide:
        mod = head.modifiers.new("Subdivision", "SUBSURF")
        mod.levels = args.subdivide
        bpy.context.view_layer.objects.active = head
        bpy.ops.object.modifier_apply(modifier=mod.name)
    hair = bench.head_wig(head, args.strands, args.layer)
    import addon

    index = import_module(f"{addon.PACKAGE}.hair_wig.collision.triangles").TriangleIndex
    if not hasattr(index, args.setting):
        index = import_module(f"{addon.PACKAGE}.hair_wig.collision.colliders").Collider
    baking = import_module(f"{addon.PACKAGE}.operators.baking")
    if not hasattr(index, args.setting):
        sys.exit(f"collision_ab: neither TriangleIndex nor Collider has a setting {args.setting}")
    kept = getattr(index, args.setting)
    short, whole, hashes = ({v: [] for v in args.values} for _ in range(3))
    try:
        baking.compute(bpy.context, hair, 1, frames)                  # every kernel warm
        for _ in range(args.pairs):
            for v in args.values:
                setattr(index, args.setting, v)
                t0 = time.perf_counter()
                baking.compute(bpy.context, hair, 1, 3)
                short[v].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                cache = baking.compute(bpy.context, hair, 1, frames)
                whole[v].append(time.perf_counter() - t0)
                hashes[v].append((hashlib.sha1(cache.positions.tobytes()).hexdigest()[:16],
                                  float(cache.penetration)))
    finally:
        setattr(index, args.setting, kept)
    base = args.values[0]

    def median(x):
        return sorted(x)[len(x) // 2]

    print(f"{args.layer} {args.strands} x {bench.POINTS}, {len(head.data.polygons)} faces, {args.setting}, "
          f"{args.pairs} rounds alternated")
    print(f"{'value':>6} {'ms/frame':>9} {'bind+3 s':>9} {'48 fr s':>8}  hash              report")
    for v in args.values:
        per = 1e3 * (median(whole[v]) - median(short[v])) / (frames - 3)
        seen = sorted(set(hashes[v]))
        print(f"{v:>6} {per:9.1f} {median(short[v]):9.3f} {median(whole[v]):8.3f}  "
              + ", ".join(f"{h} {p:.8f}" for h, p in seen))
    same = all(set(hashes[v]) == set(hashes[base]) for v in args.values)
    print("the same bits for every value" if same else "the bits differ between values")


if __name__ == "__main__":
    main()
