"""Speed of the wig core per frame, from 1k to 1.6M points, on one core.

    python scripts/bench.py [--sizes 64 640 6400 25000 100000] [--frames 12] [--preview-strands 10000]

Each size (strands × 16 points) runs in a fresh process with BLAS/OpenMP threads set to 1: it binds
a wig with 8 magnets (2 dynamic), secondary dynamics, compression, whole-strand length control and
collision against a 4k-triangle head, keys the magnets and the head moving, steps ``--frames``
frames, and reports the median time per frame (after one warm-up frame), the bind time, the
memory of the bound weights and the process's peak memory. The table ends with the cost per
point at each size, so that linearity shows directly. Then, in Blender, the live preview's rate:
``frame_set`` over 48 frames with the preview stepping the wig and writing into the hair.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POINTS = 16


def sphere_mesh(radius=1.0, rings=32, segments=64):
    import numpy as np

    th = np.linspace(0, np.pi, rings + 1)
    ph = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    v = radius * np.stack([np.outer(np.sin(th), np.cos(ph)), np.outer(np.sin(th), np.sin(ph)),
                           np.outer(np.cos(th), np.ones_like(ph))], -1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(rings), np.arange(segments), indexing="ij")
    a, b = i * segments + j, i * segments + (j + 1) % segments
    c, d = a + segments, b + segments
    tris = np.concatenate([np.stack([a, c, b], -1).reshape(-1, 3), np.stack([b, c, d], -1).reshape(-1, 3)])
    return v, tris


def one(strands: int, frames: int) -> dict:
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from hair_wig import (DynamicMagnet, FrameInput, HairSet, Magnet, Profile, SecondarySettings,
                          Wig, WigSettings)

    rng = np.random.default_rng(0)
    z = rng.uniform(0.1, 1.0, strands)
    phi = rng.uniform(0, 2 * np.pi, strands)
    r = np.sqrt(1 - z * z)
    roots = np.stack([r * np.cos(phi), r * np.sin(phi), z], 1)
    t = np.linspace(0, 1, POINTS)
    pts = (roots[:, None] * (1 + 0.5 * t[None, :, None])).reshape(-1, 3).astype(np.float32)
    hair = HairSet(pts, np.full(strands, POINTS), name="bench")
    magnets = []
    for k in range(8):
        a = 2 * np.pi * k / 8
        m = np.eye(4)
        m[:3, 3] = (1.2 * np.cos(a), 1.2 * np.sin(a), 0.8)
        dyn = DynamicMagnet(stiffness=40, damping=4) if k < 2 else None
        magnets.append(Magnet(f"M{k}", m, radius=1.0, dynamic=dyn))
    settings = WigSettings(secondary=SecondarySettings(), compression=Profile.linear(1.0, 0.5),
                           elasticity=0.0)
    t0 = time.perf_counter()
    wig = Wig(hair, np.eye(4), np.eye(4), magnets, settings, head_mesh=sphere_mesh())
    bind = time.perf_counter() - t0
    times, state = [], None
    out = np.empty_like(pts)
    for f in range(frames + 1):
        head = np.eye(4)
        c, s = np.cos(0.02 * f), np.sin(0.02 * f)
        head[:2, :2] = [[c, -s], [s, c]]
        mats = np.array([head @ m.rest_matrix for m in magnets])
        mats[:, :3, 3] += (0.02 * f, 0.0, -0.01 * f)
        t1 = time.perf_counter()
        _, state = wig.step(FrameInput(np.eye(4), head, mats, time=f / 24), state, out=out)
        if f:
            times.append(time.perf_counter() - t1)
    return {"strands": strands, "points": strands * POINTS, "ms": 1e3 * float(np.median(times)),
            "bind_s": bind, "weights_mb": wig.weights.nbytes / 2**20,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def preview_rate(strands: int, frames: int) -> dict:
    """Live-preview updates per second in Blender: ``frame_set`` with the preview handler stepping
    the wig (8 keyed magnets, compression, length, collision) and writing into the hair."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import addon
    import bpy
    import numpy as np
    import scenes

    addon.ensure_registered()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0, segments=64, ring_count=32)
    head = bpy.context.active_object
    pts, counts = scenes.straight_strands(strands, POINTS, length=0.5)
    ob = scenes.curves_hair("Hair", pts, counts)
    ob.data.surface = head
    bpy.context.view_layer.objects.active = ob
    bpy.ops.hair_wig.enable()
    ob.hair_wig.compression = 0.5
    for k in range(8):
        a = 2 * np.pi * k / 8
        scene.cursor.location = (1.2 * np.cos(a), 1.2 * np.sin(a), 0.8)
        bpy.ops.hair_wig.add_magnet(radius=1.0)
        m = ob.hair_wig.magnets[k].object
        m.keyframe_insert("location", frame=1)
        m.location.z -= 0.4
        m.keyframe_insert("location", frame=frames)
    bpy.ops.hair_wig.preview()
    scene.frame_set(2)
    t0 = time.perf_counter()
    for f in range(1, frames + 1):
        scene.frame_set(f)
    elapsed = time.perf_counter() - t0
    bpy.ops.hair_wig.preview()
    return {"strands": strands, "points": strands * POINTS, "updates_per_s": frames / elapsed,
            "ms": 1e3 * elapsed / frames}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 640, 6400, 25000, 100000],
                   help="strand counts (16 points each)")
    p.add_argument("--frames", type=int, default=12)
    p.add_argument("--preview-strands", type=int, default=10000,
                   help="strands (16 points each) for the live-preview rate; 0 skips it")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--preview-one", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.frames)))
        return 0
    if args.preview_one:
        print(json.dumps(preview_rate(args.preview_one, 48)))
        return 0
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    print("wig core per frame, one core: 8 magnets (2 dynamic), secondary dynamics, compression, "
          "length, collision")
    print(f"{'strands':>9}{'points':>10}{'ms/frame':>10}{'ns/point':>10}{'bind s':>8}"
          f"{'weights MB':>12}{'peak MB':>9}")
    rows = []
    for n in args.sizes:
        res = subprocess.run([sys.executable, __file__, "--one", str(n), "--frames", str(args.frames)],
                             capture_output=True, text=True, env=env, check=True)
        r = json.loads(res.stdout.strip().splitlines()[-1])
        rows.append(r)
        print(f"{r['strands']:>9}{r['points']:>10}{r['ms']:>10.1f}{1e6 * r['ms'] / r['points']:>10.1f}"
              f"{r['bind_s']:>8.2f}{r['weights_mb']:>12.1f}{r['peak_mb']:>9.0f}", flush=True)
    big = rows[-1]
    print(f"target: {big['points']} points at <= 150 ms/frame -> {big['ms']:.0f} ms; "
          f"peak memory <= 2048 MB -> {big['peak_mb']:.0f} MB")
    if args.preview_strands:
        res = subprocess.run([sys.executable, __file__, "--preview-one", str(args.preview_strands)],
                             capture_output=True, text=True, env=env, check=True)
        r = json.loads([l for l in res.stdout.splitlines() if l.startswith("{")][-1])
        print(f"live preview in Blender, {r['strands']} strands x {POINTS} points, 8 magnets: "
              f"{r['updates_per_s']:.1f} updates/s ({r['ms']:.1f} ms per frame_set incl. the write; "
              f"target >= 30/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
