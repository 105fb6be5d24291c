"""Disk-cache bake figures (issue 18): a shot of ``--strands`` strands × 16 points on the bench's
turning Suzanne (Springs dynamics, head collision) baked with Bake to Disk over ``--frames``
frames: seconds, peak memory of the process (against what a .blend bake would hold), the cache's
size, and playback — milliseconds per frame for Blender's Mesh Sequence Cache modifier to show
a frame of it.

    ./run python scripts/disk_bench.py [--strands 100000] [--frames 240]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--strands", type=int, default=100_000)
    p.add_argument("--frames", type=int, default=240)
    p.add_argument("--folder", default="/tmp/hair_wig_disk")
    args = p.parse_args(argv)
    import bpy
    import numpy as np
    import split_bench

    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / "shot.blend"
    split_bench.make_shot(shot, args.strands, args.frames)
    import addon
    from importlib import import_module

    disk_bake = import_module(f"{addon.PACKAGE}.operators.disk_bake")
    cache_module = import_module(f"{addon.PACKAGE}.hair_wig.cache")
    bpy.ops.wm.open_mainfile(filepath=str(shot))
    ob = bpy.data.objects["Hair"]
    points = len(ob.data.points)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    done = disk_bake.bake_to_disk(bpy.context, ob, 1, args.frames)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    in_blend = cache_module.BakeCache.estimate_bytes(points, args.frames) / 2**20
    print(f"{args.strands} strands x 16 points ({points} points), {args.frames} frames: {done['seconds']:.1f} s "
          f"({1e3 * done['seconds'] / args.frames:.0f} ms/frame); cache {done['bytes'] / 2**20:.0f} MB; peak memory "
          f"{peak:.0f} MB (the process before baking {before:.0f} MB; a .blend bake holds {in_blend:.0f} MB of "
          f"frames, twice that while it writes them)", flush=True)
    scene = bpy.context.scene
    times = []
    for f in range(1, min(args.frames, 48) + 1):
        t = time.perf_counter()
        scene.frame_set(f)
        g = ob.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
        assert len(g.curves.points) == points
        times.append(time.perf_counter() - t)
    print(f"playback through Blender's Mesh Sequence Cache: {1e3 * float(np.median(times[1:])):.1f} ms per frame "
          f"(median of {len(times) - 1} frames)", flush=True)
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    os._exit(status)
