"""In-betweening time of a keyframed hairstyle (seed 002): 5000 curves × 16 points × 100 frames
through three key poses, the middle one redrawn with other curves (4500 of 20 points), smooth
paths, slow-in/slow-out and air-drag noise. Prints the bind (matching, mass sampling, paths) and
the per-frame pose time; then the same poses as the rest pose of a wig with head collision; then
the whole bake in Blender (three key poses recorded on Curves hair, Bake, written and keyed).
Run: ./run python scripts/bench_keyposes.py [--curves 5000] [--frames 100] [--no-blender]"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hair_wig import FrameInput, Wig, WigSettings  # noqa: E402
from hair_wig.keyposes import KeyedStyle, KeyPose, StyleSettings  # noqa: E402


def drawn(n, k, seed, length=0.3, bend=0.0):
    rng = np.random.default_rng(seed)
    uv = rng.uniform(0.02, 0.98, (n, 2))
    th, ph = uv[:, 0] * np.pi / 2, uv[:, 1] * 2 * np.pi
    roots = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], 1)
    t = np.linspace(0, 1, k)[None, :, None]
    pts = roots[:, None] * (1 + length * t) + bend * t ** 2 * np.array([1.0, 0, -0.5])
    return pts.reshape(-1, 3).astype(np.float32), np.full(n, k), uv.astype(np.float32)


def sphere(n=48):
    t, p = np.meshgrid(np.linspace(0, np.pi, n), np.linspace(0, 2 * np.pi, 2 * n, endpoint=False), indexing="ij")
    v = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], -1).reshape(-1, 3)
    m = 2 * n
    q = np.array([(i * m + j, i * m + (j + 1) % m, (i + 1) * m + (j + 1) % m, (i + 1) * m + j)
                  for i in range(n - 1) for j in range(m)])
    return v, np.concatenate([q[:, [0, 1, 2]], q[:, [0, 2, 3]]])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--curves", type=int, default=5000)
    ap.add_argument("--frames", type=int, default=100)
    ap.add_argument("--no-blender", action="store_true")
    a = ap.parse_args()
    n, frames = a.curves, a.frames
    keys = [KeyPose(1, *drawn(n, 16, 0)),
            KeyPose(1 + frames // 2, *drawn(int(n * 0.9), 20, 1, length=0.4, bend=0.3)),
            KeyPose(frames, *drawn(n, 16, 0, bend=-0.2))]
    settings = StyleSettings(path="SMOOTH", slow_in_out=True, noise=0.01, noise_period=12)
    t0 = time.perf_counter()
    style = KeyedStyle(keys, settings, "bench")
    bind = time.perf_counter() - t0
    out = np.empty((style.num_points, 3), np.float32)
    t0 = time.perf_counter()
    for f in range(1, frames + 1):
        style.pose(f, out)
    poses = time.perf_counter() - t0
    print(f"{n} curves x 16 points, {frames} frames, 3 key poses (middle: {int(n * 0.9)} x 20), "
          f"{style.tracks.num_tracks} tracks, {style.num_points} points")
    print(f"bind (matching, mass sampling, paths, noise tables): {bind * 1e3:.1f} ms")
    print(f"in-betweens, {frames} frames: {poses * 1e3:.1f} ms = {poses / frames * 1e3:.2f} ms/frame")
    v, tri = sphere()
    eye = np.eye(4)
    wig = Wig(style.hair(), eye, eye, settings=WigSettings(use_length=True, use_collision=True),
              head_mesh=(v, tri), head_centre=np.zeros(3))
    t0 = time.perf_counter()
    for f in range(1, frames + 1):
        wig.step(FrameInput(eye, eye, rest_points=style.pose(f, out)), None, out=out)
    total = time.perf_counter() - t0
    print(f"as the wig's rest pose with length control and head collision: {total * 1e3:.1f} ms "
          f"= {total / frames * 1e3:.2f} ms/frame")
    if not a.no_blender:
        blender_bake(n, frames)


def blender_bake(n, frames):
    """Record three key poses of Curves hair on a UV sphere (the same curves, swung) and bake."""
    import addon
    import bpy
    import scenes

    addon.ensure_registered()
    from hair_wig_addon.operators import baking

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0)
    head = bpy.context.active_object
    ob, pts = scenes.uv_hair_on(head, n, points=16, length=0.3)
    bpy.context.view_layer.objects.active = ob
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    t = np.tile(np.linspace(0, 1, 16, dtype=np.float32), n)[:, None]
    for frame, dx in ((1, 0.0), (frames // 2, 0.3), (frames, -0.2)):
        scene.frame_set(frame)
        ob.data.attributes["position"].data.foreach_set("vector", (pts + t * [dx, 0, 0]).astype(np.float32).ravel())
        bpy.ops.hair_wig.record_key_pose()
    ob.data.attributes["position"].data.foreach_set("vector", pts.ravel())
    t0 = time.perf_counter()
    baking.bake(bpy.context, ob)
    total = time.perf_counter() - t0
    print(f"Blender: bake of {n} x 16 Curves hair over {frames} frames from 3 key poses (read, in-between, "
          f"collide, write keyed): {total:.2f} s = {total / frames * 1e3:.1f} ms/frame")


if __name__ == "__main__":
    main()
