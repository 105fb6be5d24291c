"""Split bake figures (issue 18): a shot of ``--strands`` strands × 16 points on the bench's turning
Suzanne (Springs dynamics, head collision), ``--frames`` frames, baked in one process and as
``--parts`` strand parts run ``--jobs`` at a time (as a 2-core farm node would), then merged;
wall times, the merge, file sizes, and whether the merged bake equals the one-process bake.

    ./run python scripts/split_bench.py [--strands 100000] [--frames 100] [--parts 4] [--jobs 2]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

BAKE = HERE / "bake.py"


def make_shot(path: Path, strands: int, frames: int) -> None:
    import bench

    bpy, scene, head = bench._head_scene(frames)
    bench.head_wig(head, strands)
    scene.hair_wig_memory_limit = 16.0         # 100k x 16 x 100 frames: 3.6 GiB with the write
    bpy.ops.wm.save_as_mainfile(filepath=str(path))


def _bake(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(BAKE), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait(procs) -> None:
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"bake.py failed: {err.strip()}")


def _frames_of(path: Path, frames) -> dict:
    import bpy

    bpy.ops.wm.open_mainfile(filepath=str(path))
    attrs = bpy.data.objects["Hair"].data.attributes
    out = {}
    for f in frames:
        a = attrs[f".hw_bake_{f}"]
        v = np.empty(len(a.data) * 3, np.float32)
        a.data.foreach_get("vector", v)
        out[f] = v
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--strands", type=int, default=100_000)
    p.add_argument("--frames", type=int, default=100)
    p.add_argument("--parts", type=int, default=4)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--folder", default="/tmp/hair_wig_split")
    args = p.parse_args(argv)
    import prepare_kernels

    # the kernels a farm node's bake loads: prepared for any CPU (nothing if they are), not
    # compiled on the fly by each part for this CPU
    if not prepare_kernels.run():
        print("split_bench: the kernels could not be prepared; the parts compile their own", file=sys.stderr)
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / "shot.blend"
    t = time.perf_counter()
    make_shot(shot, args.strands, args.frames)
    print(f"shot: {args.strands} strands x 16 points, {args.frames} frames ({time.perf_counter() - t:.1f} s to make)",
          flush=True)
    whole = folder / "whole.blend"
    t = time.perf_counter()
    _wait([_bake(shot, "--output", whole)])
    one = time.perf_counter() - t
    print(f"one process: {one:.1f} s; {whole.stat().st_size / 2**20:.0f} MB", flush=True)
    edges = np.linspace(0, args.strands, args.parts + 1).astype(int)
    parts = [folder / f"part_{k}.npz" for k in range(args.parts)]
    t = time.perf_counter()
    for k in range(0, args.parts, args.jobs):
        _wait([_bake(shot, "--objects", "Hair", "--strands", f"{edges[j]}:{edges[j + 1]}", "--part", parts[j])
               for j in range(k, min(k + args.jobs, args.parts))])
    split = time.perf_counter() - t
    sizes = [q.stat().st_size / 2**20 for q in parts]
    print(f"{args.parts} parts, {args.jobs} at a time: {split:.1f} s ({one / split:.2f}x the one process); parts "
          f"{', '.join(f'{s:.0f}' for s in sizes)} MB", flush=True)
    merged = folder / "merged.blend"
    t = time.perf_counter()
    _wait([_bake(shot, "--merge", *parts, "--output", merged)])
    merge = time.perf_counter() - t
    print(f"merge: {merge:.1f} s; {merged.stat().st_size / 2**20:.0f} MB", flush=True)
    frames = [1, args.frames // 2, args.frames]
    a, b = _frames_of(whole, frames), _frames_of(merged, frames)
    same = all(np.array_equal(a[f], b[f]) for f in frames)
    print(f"merged bake equals the one-process bake at frames {frames}: {same}", flush=True)
    return 0 if same else 1


if __name__ == "__main__":
    import os

    status = main()
    sys.stdout.flush()
    os._exit(status)
