"""Bake write and playback cost of the keyframed cache, for both hair object types.

    python scripts/bench_io.py [--strands 5000] [--points 16] [--frames 100]

For each type (Curves; legacy Curve with poly, NURBS and bezier splines, bezier also at
resolution 1 to separate Blender's tessellation from the bake) it writes a bake of
synthetic per-frame positions, then times ``scene.frame_set`` + reading the evaluated positions
for every baked frame, checks what it read against what it wrote, and saves the .blend
(uncompressed and compressed) to report its size. "unbaked eval ms" is what Blender spends
re-evaluating the same hair once without any bake (tagged as changed): the floor any animation of
that object pays per frame. One run, one table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import addon  # noqa: E402
import bpy  # noqa: E402
import numpy as np  # noqa: E402
import scenes  # noqa: E402


def bench(kind: str, strands: int, points: int, frames: int, tmp: Path) -> dict:
    addon.ensure_registered()
    from hair_wig_addon.hair_wig import BakeCache
    from hair_wig_addon.operators import blender_io as io

    bpy.ops.wm.read_factory_settings(use_empty=True)
    pts, counts = scenes.straight_strands(strands, points)
    if kind == "Curves":
        ob = scenes.curves_hair("Hair", pts, counts)
    else:   # "Curve <type>[ r<resolution>]"
        words = kind.split()
        ob = scenes.legacy_hair("Hair", pts, counts, words[1].upper())
        if len(words) > 2:
            ob.data.resolution_u = int(words[2][1:])
    hair = io.read_hair(ob)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    depsgraph.update()
    t = time.perf_counter()
    for _ in range(5):      # what Blender spends re-evaluating this hair once, bake or no bake
        ob.data.update_tag()
        depsgraph.update()
    own_eval = (time.perf_counter() - t) / 5
    rng = np.random.default_rng(0)
    drift = rng.normal(0, 0.01, (frames, 1, 3)).astype(np.float32).cumsum(axis=0)
    cache = BakeCache.from_positions(hair, 1, hair.points[None] + drift)
    t = time.perf_counter()
    io.write_bake(ob, cache)
    write = time.perf_counter() - t

    scene = bpy.context.scene
    scene.frame_set(frames // 2)     # warm up: first evaluation builds caches
    io.read_evaluated_points(ob, depsgraph)
    worst = 0.0
    t = time.perf_counter()
    for f in cache.frames:
        scene.frame_set(f)
        got = io.read_evaluated_points(ob, depsgraph)
        worst = max(worst, float(np.abs(got - cache.frame(f)).max()))
    play = (time.perf_counter() - t) / frames

    sizes = []
    for compress in (False, True):
        path = tmp / f"bench_{kind.replace(' ', '_')}_{int(compress)}.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(path), compress=compress, copy=True)
        sizes.append(path.stat().st_size / 1e6)
        path.unlink()
    return {"kind": kind, "write_s": write, "play_ms": play * 1e3, "max_err": worst, "eval_ms": own_eval * 1e3,
            "mb": sizes[0], "mb_compressed": sizes[1]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--strands", type=int, default=5000)
    p.add_argument("--points", type=int, default=16)
    p.add_argument("--frames", type=int, default=100)
    args = p.parse_args(argv)
    # Bezier and NURBS splines are tessellated at their resolution (12 by default) whenever
    # their shape changes; the r1 row separates that cost of Blender's from the bake's.
    targets = {"Curves": (1.0, 15.0), "Curve poly": (3.0, 30.0), "Curve nurbs": (3.0, 30.0),
               "Curve bezier": (3.0, 30.0), "Curve bezier r1": (3.0, 30.0)}
    print(f"bake I/O: {args.strands} strands x {args.points} points x {args.frames} frames, "
          f"bpy {bpy.app.version_string}")
    print(f"{'object type':<16}{'write s':>9}{'target':>8}{'play ms/frame':>15}{'target':>8}"
          f"{'unbaked eval ms':>17}{'max |err|':>11}{'.blend MB':>11}{'compressed':>12}")
    with tempfile.TemporaryDirectory() as d:
        for kind, (w_target, p_target) in targets.items():
            r = bench(kind, args.strands, args.points, args.frames, Path(d))
            print(f"{kind:<16}{r['write_s']:>9.3f}{w_target:>8.1f}{r['play_ms']:>15.2f}{p_target:>8.1f}"
                  f"{r['eval_ms']:>17.2f}{r['max_err']:>11.2e}{r['mb']:>11.1f}{r['mb_compressed']:>12.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
