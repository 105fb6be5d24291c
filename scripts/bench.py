"""Speed and memory of hair_wig, measured in one run: the wig core per frame from 1k to 1.6M
points on one and two threads against a streaming floor, the end-to-end bake against Blender's
own particle hair dynamics, the live preview's rate, block-sparse magnet weights, a bake of
Blender's Quick Fur groom with its modifier stack, and (section 10) the Wisps layer on the seed's
three hairstyles against Springs on the same grooms (``--wisps all`` for the whole table,
``--wisps-only`` for that section alone; its rows also go to ``--output``/wisps.json), and
(section 11) live dynamics played with ``frame_set`` (``--live-only`` for that section alone).

    ./run bench        (= python scripts/bench.py [--sizes 64 640 6400 25000 100000] [--frames 12]
                          [--e2e 1000 5000] [--preview-strands 10000] [--quick-fur MEDIUM]
                          [--wisps long:50000 | all] [--wisps-only] [--output bench_output])

Each measurement runs in a fresh process with BLAS/OpenMP threads set to 1. The core binds a wig
with 8 magnets (2 dynamic), secondary dynamics, compression, whole-strand length control and
collision against a 4k-triangle head, keys the magnets and the head moving, steps ``--frames``
frames and reports the median time per frame (after one warm-up frame), with one of numba's
threads (split into phases) and with two; the floor is numpy copying, once, every array a frame
must touch. Memory is the process's peak. Then: 48-frame bakes in Blender against particle hair
dynamics, ``frame_set`` with the live preview on, and the weights' storage. A plot goes to
``--output``.
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

import numpy as np

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


def one(strands: int, frames: int, length_mode: str = "SEGMENT", method: str = "FIELD") -> dict:
    sys.path.insert(0, str(ROOT))
    import numba
    import numpy as np

    from hair_wig import (DynamicMagnet, FrameInput, HairSet, Magnet, Profile, SpringSettings,
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
    settings = WigSettings(dynamics=SpringSettings(), compression=Profile.linear(1.0, 0.5),
                           elasticity=0.0, length_mode=length_mode, collision_method=method)
    t0 = time.perf_counter()
    wig = Wig(hair, np.eye(4), np.eye(4), magnets, settings, head_mesh=sphere_mesh())
    bind = time.perf_counter() - t0

    def inputs(f):
        head = np.eye(4)
        c, s = np.cos(0.02 * f), np.sin(0.02 * f)
        head[:2, :2] = [[c, -s], [s, c]]
        mats = np.array([head @ m.rest_matrix for m in magnets])
        mats[:, :3, 3] += (0.02 * f, 0.0, -0.01 * f)
        return FrameInput(np.eye(4), head, mats, time=f / 24)

    out = np.empty_like(pts)
    result = {"strands": strands, "points": strands * POINTS, "bind_s": bind,
              "weights_mb": wig.weights.nbytes / 2**20}
    for threads in (1, 2):
        # the wig's kernels run on numba's threads: the wig has no pool of its own (Wig.threads
        # plans nothing)
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        times, state, phases = [], None, {}
        for f in range(frames + 1):
            t1 = time.perf_counter()
            _, state = wig.step(inputs(f), state, out=out, keep_state=False,
                                timings=phases if (f and threads == 1) else None)
            if f:
                times.append(time.perf_counter() - t1)
        result[f"ms_{threads}"] = 1e3 * float(np.median(times))
        if threads == 1:
            result["phases"] = {k: 1e3 * v / frames for k, v in phases.items()}
    # What one frame allocates at most, at once (numpy reports its buffers to tracemalloc): the
    # hot path reuses its buffers, so this stays far below one (P, 3) array.
    import tracemalloc

    tracemalloc.start()
    wig.step(inputs(frames + 1), state, out=out, keep_state=False)
    result["frame_alloc_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    # The streaming floor: numpy reading and writing, once, the arrays one frame must touch
    # (rest pose, magnet weights, spring positions and velocities, the output).
    arrays = [wig.rest_rows, wig.weights.values, *state.layer.values(), out]
    copies = [np.empty_like(a) for a in arrays]
    floor = []
    for _ in range(7):
        t1 = time.perf_counter()
        for a, b in zip(arrays, copies):
            np.copyto(b, a)
        floor.append(time.perf_counter() - t1)
    result["floor_ms"] = 1e3 * float(np.median(floor))
    result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def _head_scene(frames: int):
    sys.path.insert(0, str(ROOT / "scripts"))
    import bpy
    import scenes

    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    bpy.ops.mesh.primitive_monkey_add(size=2.0, calc_uvs=True)
    head = bpy.context.active_object
    head.data.uv_layers.active.name = "UVMap"
    scenes.keyed_head_turn(head, 1, frames, angle=0.9, lift=0.25)
    return bpy, scene, head


def particle_hair(strands: int, frames: int, collide: bool = False) -> dict:
    """Blender's own hair dynamics (particle hair, cloth solver) on the same head motion:
    ``strands`` hairs of 16 points, stepped frame by frame as playback does; ``collide``: the
    head is a collider (Collision physics) and the hair's collision is on."""
    bpy, scene, head = _head_scene(frames)
    if collide:
        head.modifiers.new("Collision", "COLLISION")
    head.modifiers.new("Hair", "PARTICLE_SYSTEM")
    psys = head.particle_systems[0]
    ps = psys.settings
    ps.type = "HAIR"
    ps.count = strands
    ps.hair_length = 0.45
    ps.hair_step = POINTS - 1
    psys.use_hair_dynamics = True
    psys.cloth.collision_settings.use_collision = collide
    psys.point_cache.frame_start, psys.point_cache.frame_end = 1, frames
    scene.frame_set(1)
    t0 = time.perf_counter()
    for f in range(2, frames + 1):
        scene.frame_set(f)
    elapsed = time.perf_counter() - t0
    return {"strands": strands, "s": elapsed, "frames": frames - 1}


def head_wig(head, strands: int, layer: str = "SPRINGS"):
    """The bench's hair: ``strands`` of POINTS grown on ``head``'s UV map, made a wig with
    secondary dynamics of the solver ``layer`` (and its defaults: length, collision)."""
    import addon
    import bpy
    import demo
    import scenes

    addon.ensure_registered()
    pts, counts, uv = demo.grow_hair(head, strands, points=POINTS)
    hair = scenes.curves_hair("Hair", pts, counts)
    hair.data.surface = head
    hair.data.surface_uv_map = "UVMap"
    hair.data.attributes.new("surface_uv_coordinate", "FLOAT2", "CURVE").data.foreach_set("vector", uv.ravel())
    bpy.context.view_layer.objects.active = hair
    bpy.ops.hair_wig.enable()
    hair.hair_wig.use_secondary = True
    hair.hair_wig.dynamics_layer = layer
    return hair


def wig_bake(strands: int, frames: int, layer: str = "SPRINGS") -> dict:
    """hair_wig's whole bake on the same head motion: read the scene, step (secondary dynamics
    of the solver ``layer``, length, collision with the head), write the keyframed cache."""
    bpy, scene, head = _head_scene(frames)
    hair = head_wig(head, strands, layer)
    import addon
    from importlib import import_module

    baking = import_module(f"{addon.PACKAGE}.operators.baking")
    t0 = time.perf_counter()
    baking.bake(bpy.context, hair)
    elapsed = time.perf_counter() - t0
    return {"strands": strands, "s": elapsed, "frames": frames}


def quick_fur_bake(density: str, frames: int = 36) -> dict:
    """A bake of Blender's own Quick Fur groom (guides with Interpolate Hair Curves children,
    noise and frizz) on a subdivided Suzanne turning her head, three ways in one process: the
    stack switched off by the artist, the stack on (hair_wig switches it off while it computes),
    and the stack evaluated at every frame as before hair_wig did that."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import addon
    import bpy
    import scenes

    addon.ensure_registered()
    from importlib import import_module

    baking = import_module(f"{addon.PACKAGE}.operators.baking")
    blender_io = import_module(f"{addon.PACKAGE}.operators.blender_io")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.mesh.primitive_monkey_add()
    head = bpy.context.active_object
    head.modifiers.new("Subdivision", "SUBSURF").levels = 2
    bpy.ops.object.modifier_apply(modifier="Subdivision")    # subdivided mesh (Follow Skin needs fixed topology)
    scenes.keyed_head_turn(head, 1, frames)
    bpy.ops.object.quick_fur(density=density)
    hair = next(o for o in bpy.context.scene.objects if o.type == "CURVES")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    bpy.context.view_layer.objects.active = hair
    bpy.ops.hair_wig.enable()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    scene.frame_set(1)
    geometry = hair.evaluated_get(depsgraph).evaluated_geometry()    # keep it, or its curves go
    children = len(geometry.curves.curves)

    def timed() -> float:
        t0 = time.perf_counter()
        baking.compute(bpy.context, hair, 1, frames)
        return time.perf_counter() - t0

    timed()                                            # warm-up: node groups compiled once
    stack = [m for m in hair.modifiers if m.show_viewport]
    for m in stack:
        m.show_viewport = False
    off = timed()
    for m in stack:
        m.show_viewport = True
    on = timed()
    mute = blender_io.mute_modifiers
    blender_io.mute_modifiers = lambda obs: []          # as before: the stack evaluates every frame
    try:
        evaluated = timed()
    finally:
        blender_io.mute_modifiers = mute
    return {"guides": len(hair.data.curves), "children": children, "frames": frames,
            "modifiers": [m.name for m in stack], "off_s": off, "on_s": on, "evaluated_s": evaluated}


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


def live_rate(key: str, frames: int = 48) -> dict:
    """Live dynamics (issue 37) in Blender: ``LAYER:strands[:WIND]`` (16 points each) on section
    2's turning Suzanne with head collision (and, with ``WIND``, a Wind field of strength 3 blowing
    at her face) and Live Dynamics on, played with ``frame_set`` as the timeline plays it; then
    scrubbed back over the cached frames. Updates per second and the cache's memory per frame."""
    layer, strands, *wind = key.split(":")
    bpy, scene, head = _head_scene(frames)
    hair = head_wig(head, int(strands), layer)
    if wind == ["WIND"]:
        bpy.ops.object.effector_add(type="WIND", location=(0.0, -3.0, 0.0), rotation=(np.pi / 2, 0.0, 0.0))
        bpy.context.active_object.field.strength = 3.0
        bpy.context.view_layer.objects.active = hair
    import addon
    import numba
    from importlib import import_module

    preview = import_module(f"{addon.PACKAGE}.operators.preview")
    scene.frame_set(1)
    hair.hair_wig.use_live_dynamics = True           # binds, and computes frame 1
    session = preview._previews[hair.session_uid].live
    scene.frame_set(2)                               # warm: the first steps of each kernel
    t0 = time.perf_counter()
    for f in range(3, frames + 1):
        scene.frame_set(f)
    played = time.perf_counter() - t0
    t0 = time.perf_counter()
    for f in range(frames, 0, -1):
        scene.frame_set(f)
    scrubbed = time.perf_counter() - t0
    assert session.stepper.steps == frames, session.stepper.steps      # scrubbing back computed nothing
    per_frame = session.cache.bytes / (session.cache.last - session.cache.start + 1)
    hair.hair_wig.use_live_dynamics = False
    return {"layer": layer, "strands": int(strands), "points": int(strands) * POINTS, "frames": frames - 2,
            "updates_per_s": (frames - 2) / played, "ms": 1e3 * played / (frames - 2),
            "scrub_per_s": frames / scrubbed, "cache_mb_per_frame": per_frame / 2 ** 20,
            "threads": numba.get_num_threads()}


def live_section(args, env) -> list:
    print("11. live dynamics (issue 37): frame_set as the timeline plays, Live Dynamics on, section 2's turning "
          "Suzanne with head collision, 16 points per strand; every frame computed, kept, written into the hair; "
          "then scrubbed back over the cached frames (targets: Strands >= 24 updates/s at 5000 strands, >= 60 at 1000)")
    print(f"{'solver':>9}{'strands':>9}{'updates/s':>11}{'ms/frame':>10}{'scrub/s':>9}{'MB/frame':>10}{'threads':>9}")
    rows = []
    for key in args.live:
        r = _run("--live-one", key, env=env)
        rows.append(r)
        print(f"{r['layer'].lower() + (' +wind' if key.endswith(':WIND') else ''):>9}{r['strands']:>9}"
              f"{r['updates_per_s']:>11.1f}{r['ms']:>10.1f}"
              f"{r['scrub_per_s']:>9.0f}{r['cache_mb_per_frame']:>10.2f}{r['threads']:>9}", flush=True)
    return rows


def sparse_weights(strands: int, magnets: int = 32) -> dict:
    """Block-sparse magnet weights: ``magnets`` magnets of radius 0.6 in a ring around a head,
    the same hair stored in surface order (sorted by root longitude, as hair grown or combed
    over a surface is) and in random order: magnets stored per point, MB, and the primary
    movement's time per frame (every magnet moving)."""
    sys.path.insert(0, str(ROOT))
    from hair_wig import HairSet, Magnet, MagnetWeights, Profile

    rng = np.random.default_rng(0)
    z = rng.uniform(0.1, 1.0, strands)
    phi = np.sort(rng.uniform(-np.pi, np.pi, strands))
    r = np.sqrt(1 - z * z)
    roots = np.stack([r * np.cos(phi), r * np.sin(phi), z], 1)
    t = np.linspace(0, 1, POINTS)
    ring = []
    for k, a in enumerate(np.linspace(0, 2 * np.pi, magnets, endpoint=False)):
        m = np.eye(4)
        m[:3, 3] = (1.3 * np.cos(a), 1.3 * np.sin(a), 0.6)
        ring.append(Magnet(f"M{k}", m, radius=0.6))
    motions = np.repeat(np.eye(4)[None], magnets, axis=0)
    motions[:, :3, 3] = rng.normal(0, 0.1, (magnets, 3))
    result = {"strands": strands, "points": strands * POINTS, "magnets": magnets}
    for order, perm in (("surface", np.arange(strands)), ("random", rng.permutation(strands))):
        pts = (roots[perm][:, None] * (1 + 0.5 * t[None, :, None])).reshape(-1, 3).astype(np.float32)
        hair = HairSet(pts, np.full(strands, POINTS), name="bench")
        w = MagnetWeights(hair, pts, ring, Profile.linear(0, 1), Profile.constant(1), "cap")
        rows = np.ascontiguousarray(pts.T)
        out = rows.copy()
        times = []
        for _ in range(5):
            t1 = time.perf_counter()
            w.displace_rows(rows, motions, out)
            times.append(time.perf_counter() - t1)
        result[order] = {"per_point": w.magnets_per_point(), "mb": w.nbytes / 2**20,
                         "dense_mb": 4 * magnets * hair.num_points / 2**20, "ms": 1e3 * float(np.median(times))}
    # Reaches that follow their magnets (weighed every frame where the magnet is): 1 and 8 of
    # radius 0.6 sweeping over the same hair, each moved over its trail.
    from hair_wig.magnets import FollowReach

    for count in (1, 8):
        follow = [Magnet(f"F{k}", ring[k * (magnets // 8)].rest_matrix, radius=0.6, follow=True)
                  for k in range(count)]
        reach = FollowReach(hair, follow, Profile.linear(0, 1), Profile.constant(1), np.zeros(hair.num_points), "cap")
        centres = np.array([m.rest_position for m in follow])
        trail = np.repeat(np.eye(4)[None], count, axis=0)
        trail[:, :3, 3] = 0.05
        times = []
        for _ in range(5):
            out = rows.copy()
            t1 = time.perf_counter()
            reach.apply_rows(rows, out, slice(0, hair.num_points), centres, trail)
            times.append(time.perf_counter() - t1)
        result[f"follow_{count}_ms"] = 1e3 * float(np.median(times))
    return result


def field_build(triangles: int) -> dict:
    """Building a collider's signed-distance field (``MeshField``) for a head of about
    ``triangles`` triangles (a UV sphere: pole slivers included), its size, and exact queries of
    points lying within 5 mm of it."""
    sys.path.insert(0, str(ROOT))
    from hair_wig.collision import MeshField
    from hair_wig.collision.solid import Solid

    n = int(np.sqrt(triangles / 2))
    v, tri = sphere_mesh(1.0, rings=n, segments=n)
    times, solid = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        f = MeshField(v, tri)
        times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        Solid(v, tri)                   # what a collider's bind adds: its solid (winding numbers)
        solid.append(time.perf_counter() - t0)
    rng = np.random.default_rng(0)
    q = rng.normal(size=(20000, 3))
    q *= (1.0 + rng.uniform(-0.005, 0.005, 20000) / np.linalg.norm(q, axis=1))[:, None] / np.linalg.norm(q, axis=1,
                                                                                                        keepdims=True)
    t0 = time.perf_counter()
    f.signed_distance(q)
    query = time.perf_counter() - t0
    return {"triangles": int(len(tri)), "s": float(np.median(times)), "solid_s": float(np.median(solid)),
            "mb": f.nbytes / 2**20,
            "dims": [int(d) for d in f.dims], "query_us": 1e6 * query / len(q), **_deforming(v, tri, q)}


def _deforming(v, tri, q) -> dict:
    """The same head as a collider that breathes (a bump on its side rising and falling, up to
    0.9 of its give): ms a frame to follow it, refitted (``MeshField.refit``) and built anew
    each frame (give 0), the first deformed frame's build of the refit's rest field, and exact
    queries of ``q`` on each."""
    from hair_wig.collision import Collider, ColliderMesh

    out, was = {}, Collider.GIVE
    for key, give in (("refit", was), ("built", 0.0)):
        Collider.GIVE = give
        c = Collider(ColliderMesh("Head", v, tri), np.eye(4), 0.0)
        cell = c.bound_field.cell
        r = np.linalg.norm(v - (0.0, 1.0, 0.0), axis=1)
        bump = np.exp(-(r / 0.5) ** 2)[:, None] * v
        t0 = time.perf_counter()
        c.set_frame(None, v + 0.1 * was * cell * bump)
        first = time.perf_counter() - t0
        times = []
        for k in range(4):
            t0 = time.perf_counter()
            c.set_frame(None, v + (0.3 + 0.2 * k) * was * cell * bump)
            times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        c.field.signed_distance(q)
        out[f"{key}_query_us"] = 1e6 * (time.perf_counter() - t0) / len(q)
        out[f"{key}_ms"] = 1e3 * float(np.median(times))
        out[f"{key}_first_ms"] = 1e3 * first
    Collider.GIVE = was
    return out


def _strands_groom(strands: int, points: int) -> np.ndarray:
    """Hair (3, points, strands) combed out and down from a unit sphere's crown, 0.5 long."""
    rng = np.random.default_rng(1)
    phi = rng.uniform(0, 2 * np.pi, strands)
    theta = np.arccos(rng.uniform(0.35, 0.98, strands))
    root = np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)])
    out = root * np.array([1.0, 1.0, 0.0])[:, None]
    out /= np.maximum(np.linalg.norm(out, axis=0), 1e-9)
    s = np.linspace(0, 1, points)[:, None]
    return 1.002 * root[:, None] + 0.5 * (out[:, None] * np.sin(s * 1.2) - np.array([0, 0, 1.0])[:, None, None]
                                          * (1 - np.cos(s * 1.2)) * 0.8 + root[:, None] * 0.1 * s)


def strands_one(strands: int, points: int, hair_hair: bool, frames: int = 6, method: str = "PAIRS") -> dict:
    """The wig core per frame with the Strands layer (8 substeps, collision with a sphere head in
    its substeps and in refinement): ``strands`` combed out and down from the head's crown, the
    head turning; with ``hair_hair``, segments of different strands closer than 5 mm repel
    (``method`` PAIRS), or the hair is felt as a volume (VOLUME).
    Reports the median ms per frame after a warm-up frame, the layer's and refinement's parts,
    the hair-hair interaction's part, the process's peak memory and a hash of the positions
    of every frame (a change that should keep the bits keeps it)."""
    import hashlib

    sys.path.insert(0, str(ROOT))
    from hair_wig import FrameInput, HairSet, Magnet, Wig, WigSettings
    from hair_wig.strands import StrandSettings, VerletStrands

    pts = _strands_groom(strands, points)
    hair = HairSet(np.ascontiguousarray(pts.transpose(2, 1, 0)).reshape(-1, 3).astype(np.float32),
                   np.full(strands, points), name="bench")
    settings = WigSettings(dynamics=StrandSettings(hair_hair=bool(hair_hair), diameter=0.005, hair_hair_method=method),
                           use_collision=True)
    wig = Wig(hair, np.eye(4), np.eye(4), [Magnet("M", np.eye(4), radius=0.01)], settings,
              head_mesh=sphere_mesh())
    spent = [0.0]
    original = VerletStrands.interaction

    def interaction(self, pos, frame=None, prev=None):
        t1 = time.perf_counter()
        try:
            return original(self, pos, frame, prev)
        finally:
            spent[0] += time.perf_counter() - t1

    VerletStrands.interaction = interaction
    times, state, phases = [], None, {}
    digest = hashlib.sha1()
    for f in range(frames + 1):
        head = np.eye(4)
        c, si = np.cos(0.9 * f / frames), np.sin(0.9 * f / frames)
        head[:2, :2] = [[c, -si], [si, c]]
        if f == 1:
            spent[0], phases = 0.0, {}
        t1 = time.perf_counter()
        out, state = wig.step(FrameInput(np.eye(4), head, np.array([np.eye(4)]), time=f / 24), state,
                              keep_state=False, timings=phases)
        if f:
            times.append(time.perf_counter() - t1)
        digest.update(np.ascontiguousarray(out).tobytes())
    return {"strands": strands, "points": points, "hair_hair": hair_hair, "method": method,
            "hash": digest.hexdigest()[:16], "ms": 1e3 * float(np.median(times)),
            "mean_ms": 1e3 * float(np.mean(times)), "layer_ms": 1e3 * phases.get("dynamics", 0.0) / frames,
            "refine_ms": 1e3 * (phases.get("collision", 0.0) + phases.get("length", 0.0)) / frames,
            "interaction_ms": 1e3 * spent[0] / frames,
            "pairs": sum(g[2].pairs for g in wig.layer.groups),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def one_search(strands: int, points: int) -> dict:
    """One hair-hair search (pairs of segments closer than 5 mm + the 5 mm margin the solver
    keeps: the grid's candidates and the exact distance of each) over ``strands_one``'s groom
    at rest."""
    sys.path.insert(0, str(ROOT))
    from hair_wig.interaction import segment_pairs

    pts = _strands_groom(strands, points)
    a, b = pts[:, :-1].reshape(3, -1), pts[:, 1:].reshape(3, -1)
    strand = np.tile(np.arange(strands), points - 1)
    t0 = time.perf_counter()
    i, j, _, _, _ = segment_pairs(a, b, strand, 0.01)
    search = time.perf_counter() - t0
    return {"strands": strands, "points": points, "pairs": int(len(i)), "search_s": search,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def strands_section(args, env, blender: dict) -> None:
    """Section 7: the Strands solver (issue 15) end to end against Blender's hair dynamics, and
    its per-frame cost."""
    print("7. Strands solver: end-to-end bake with head collision (in its substeps and in refinement), "
          "48 frames of a head turn, 16 points per strand, against Blender's particle hair dynamics without "
          "collision (the same head turn)")
    print(f"{'strands':>8}{'hair_wig s':>12}{'ms/frame':>10}{'Blender ms/frame':>18}{'ratio':>8}")
    ours = {}
    for n in args.strands:
        ours[n] = r = _run("--wig-strands-one", n)
        theirs = blender.get(n) or _run("--particle-one", n)
        mine, their = 1e3 * r["s"] / r["frames"], 1e3 * theirs["s"] / theirs["frames"]
        print(f"{n:>8}{r['s']:>12.2f}{mine:>10.1f}{their:>18.1f}{their / mine:>7.1f}x", flush=True)
    n = min(args.strands)
    theirs = _run("--particle-collide-one", n)
    their = 1e3 * theirs["s"] / theirs["frames"]
    mine = 1e3 * ours[n]["s"] / ours[n]["frames"]
    print(f"   with collision on both sides ({n} strands, the whole turn; Blender's head a Collision object): "
          f"Blender {their:.0f} ms/frame, hair_wig {mine:.1f} ms/frame: {their / mine:.1f}x")
    print("   the core per frame (sphere head turning, hair combed out and down from the crown, 8 substeps, "
          "collision; median after a warm-up frame):")
    print(f"{'strands':>10}{'points':>7}{'hair-hair':>10}{'ms/frame':>10}{'layer':>8}{'refine':>8}"
          f"{'hair-hair':>10}{'share':>7}{'pairs':>9}{'peak MB':>9}")
    for size in args.strands_core:
        # hair against hair off, by strand pairs (seed 004), and as a volume (Petrovic et al. 2005)
        for hair_hair, method in ((0, "PAIRS"), (1, "PAIRS"), (1, "VOLUME")):
            strands, points = map(int, size.split("x"))
            if hair_hair and method == "PAIRS" and strands * points > 400_000:
                r = _run("--search-one", size, env=env)
                print(f"{strands:>10}{points:>7}{'yes':>10}   not stepped: one search for the pairs within "
                      f"1 cm {r['search_s']:.1f} s ({r['pairs']} pairs); peak {r['peak_mb']:.0f} MB", flush=True)
                continue
            frames = 2 if hair_hair else 4
            r = _run("--strands-one", f"{strands}x{points}x{hair_hair}x{frames}x{method}", env=env)
            share = r["interaction_ms"] / r["mean_ms"]
            kind = ("pairs" if method == "PAIRS" else "volume") if hair_hair else "no"
            print(f"{strands:>10}{points:>7}{kind:>10}{r['ms']:>10.0f}{r['layer_ms']:>8.0f}"
                  f"{r['refine_ms']:>8.0f}{r['interaction_ms']:>10.0f}{100 * share:>6.0f}%{r['pairs']:>9}"
                  f"{r['peak_mb']:>9.0f}", flush=True)


def style_one(key: str) -> dict:
    """Style Hair (issue 16) through its operator: about ``strands`` strands of ``points``
    grown on a UV sphere's upper half (radius 0.1 m, a head), 0.3 m long, hanging under gravity with a
    combing force, colliding with layered volume, ``curl`` HELIX or NONE; seconds for the
    operator (reading, styling, writing), and the core's share."""
    strands, points, curl = key.split("x")
    strands, points = int(strands), int(points)
    import addon
    import bpy

    addon.ensure_registered()
    from importlib import import_module

    styling = import_module(f"{addon.PACKAGE}.hair_wig.styling")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon.ensure_registered()
    import scenes

    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.1, segments=64, ring_count=32, calc_uvs=True)
    head = bpy.context.active_object
    c = np.empty(len(head.data.polygons) * 3)
    head.data.polygons.foreach_get("center", c)
    head.data.polygons.foreach_set("select", c.reshape(-1, 3)[:, 2] > 0.0)
    hair = scenes.empty_hair(head)
    st = hair.hair_wig.style
    st.roots, st.grow_on, st.points, st.length = "GROW", "SELECTED", points, 0.3
    st.density = strands / (2 * np.pi * 0.1 ** 2)             # the upper half's area
    st.force, st.force_direction, st.force_strength = "DIRECTION", (0.0, 1.0, -1.0), 0.3
    st.clearance, st.volume = 0.002, 0.01
    if curl == "HELIX":
        st.curl, st.curl_radius, st.curl_turns = "HELIX", 0.01, 4.0
    spent = {"core": 0.0}
    inner = styling.style_strands

    def timed(*a, **k):
        t = time.perf_counter()
        out = inner(*a, **k)
        spent["core"] += time.perf_counter() - t
        return out
    ops = import_module(f"{addon.PACKAGE}.operators.style_ops")
    ops.style_strands = timed
    t0 = time.perf_counter()
    assert bpy.ops.hair_wig.style_hair() == {"FINISHED"}
    elapsed = time.perf_counter() - t0
    return {"strands": len(hair.data.curves), "points": points, "curl": curl, "s": elapsed,
            "core_s": spent["core"], "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def rods_one(key: str) -> dict:
    """The Rods core (issue 16; the wig's Rods layer steps it) per frame: ``strands`` x ``points``
    combed out and down from a unit sphere's crown (section 7's groom), default settings, under
    gravity, each strand pushed off its style first so it swings; median ms per frame."""
    strands, points = map(int, key.split("x"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from hair_wig.rods import AngularRods, RodSettings

    goal = np.ascontiguousarray(_strands_groom(strands, points).transpose(2, 1, 0), np.float64)
    t0 = time.perf_counter()
    rods = AngularRods(goal, RodSettings())
    state = rods.initial_state(goal)
    bind = time.perf_counter() - t0
    state["angles"] += 0.05
    gravity = np.array([0.0, 0.0, -9.81])
    times = []
    for _ in range(4):
        t = time.perf_counter()
        rods.step(state, goal, 1 / 24, gravity)
        times.append(time.perf_counter() - t)
    return {"strands": strands, "points": points, "ms": 1e3 * float(np.median(times[1:])),
            "substeps": rods.substeps(1 / 24)[0], "bind_s": bind,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def draw_one(key: str) -> dict:
    """Draw Hair (issue 17) on Suzanne (``draw_demo``'s scene): Convert Strokes to Hair on
    ``strokes`` strokes drawn from three views (seconds, wisps off: one strand a stroke), then,
    with ``existing`` strands already in the hair, the Draw Hair tool's session per mouse event:
    a drag's move (median) and a release that makes the strand and writes it (median of 10)."""
    strokes, existing = map(int, key.split("x"))
    import bpy
    import draw_demo

    head, hair, drawings = draw_demo.build(strokes, rings=0)
    convert = sum(draw_demo.draw_from(hair, view, gp) for view, gp in drawings.items())
    made = len(hair.data.curves)
    while len(hair.data.curves) < existing:            # more hair, drawn the same way
        draw_demo.draw_from(hair, "back", drawings["back"])
    from importlib import import_module

    import addon
    draw_ops = import_module(f"{addon.PACKAGE}.operators.draw_ops")
    io = import_module(f"{addon.PACKAGE}.operators.blender_io")
    view = io.camera_view(bpy.context.scene)
    session = draw_ops.DrawSession(bpy.context, hair, lambda: view)
    gp_strokes = draw_ops.strokes_from_grease_pencil(drawings["back"], 1, view)
    moves, releases = [], []
    for label, o, d, times in gp_strokes[:10]:
        assert session.press(o[0], d[0], 0.0), label
        for k in range(1, len(o)):
            t = time.perf_counter()
            session.move(o[k], d[k], k / 60)
            session.stroke_points()                    # what the overlay draws each event
            moves.append(time.perf_counter() - t)
        t = time.perf_counter()
        session.release()
        releases.append(time.perf_counter() - t)
    return {"strokes": strokes, "made": made, "convert_s": convert, "existing": len(hair.data.curves) - 10,
            "move_ms": 1e3 * float(np.median(moves)), "release_ms": 1e3 * float(np.median(releases)),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


# Section 10: the Wisps layer (seed 001, Plante, Cani & Poulin 2002) on the seed's three
# hairstyles. Head radius 1 (a sphere, as sections 1 and 7), a shoulders ellipsoid below it as the
# body collider; lengths in head radii.
WISP_STYLES = {"short": (199, 4, 0.6), "medium": (73, 10, 1.6), "long": (56, 8, 3.0)}   # wisps, segments, length
WISP_CASES = ["short:10000", "short:50000", "medium:10000", "medium:50000", "long:10000", "long:50000",
              "long:100000"]
SEED_MS = 0.68 * 60e3          # the seed's average time a frame (1000 Hz, wisps meeting at 24 Hz)
SHOULDERS = (np.array([0.0, 0.0, -1.9]), np.array([2.4, 0.9, 0.6]))     # centre, semi-axes


def _wisps_groom(strands: int, points: int, length: float, seed: int = 1) -> np.ndarray:
    """Hair (strands, points, 3) of ``length`` (head radii) grown on a unit sphere's upper part,
    combed down over it 1 % of its radius up and falling from where it leaves it; where it
    reaches the shoulders (``SHOULDERS``) it lies on them. Equal segments of ``length / (points - 1)``."""
    rng = np.random.default_rng(seed)
    phi = rng.uniform(0, 2 * np.pi, strands)
    theta = np.arccos(rng.uniform(0.35, 0.98, strands))
    root = np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], 1)
    out = root * np.array([1.0, 1.0, 0.0])
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    jitter = rng.normal(0, 0.1, (strands, 3)) * np.array([1.0, 1.0, 0.0])
    centre, axes = SHOULDERS
    seg = length / (points - 1)
    p = np.empty((strands, points, 3))
    p[:, 0] = root
    for j in range(1, points):
        prev = p[:, j - 1]
        near = np.linalg.norm(prev, axis=1, keepdims=True) < 1.05
        want = np.array([0.0, 0.0, -1.0]) + np.where(near, 0.7, 0.1) * out + jitter
        q = prev + seg * want / np.linalg.norm(want, axis=1, keepdims=True)
        r = np.linalg.norm(q, axis=1, keepdims=True)
        q = np.where(r < 1.01, q / r * 1.01, q)
        u = (q - centre) / axes
        ru = np.linalg.norm(u, axis=1, keepdims=True)
        q = np.where(ru < 1.02, centre + u / ru * 1.02 * axes, q)
        d = q - prev
        p[:, j] = prev + seg * d / np.linalg.norm(d, axis=1, keepdims=True)
    return p


def wisps_one(key: str, frames: int = 4) -> dict:
    """One of the seed's hairstyles (``WISP_STYLES``; key ``style:strands:layer``, layer WISPS or
    SPRINGS) as a wig core: ``strands`` of 16 points on a unit sphere head turning and shaking
    (0.6 rad either way, 16 frames a shake), colliding with the head and a shoulders ellipsoid
    (the body) in the layer's substeps and in refinement; Wisps at the style's wisp and segment
    counts, the rest at their defaults (8 substeps, wisps meeting every substep; a fourth field of
    the key: every that many substeps), or Springs at its defaults. Two warm-up frames (state made,
    kernels loaded), then ``frames`` frames a thread count, one and two alternating: the median ms
    per frame each, the wig's phases, and the layer's own seconds (``WispLayer.seconds``) and
    counts a frame, per thread count."""
    style, strands, layer, *every = key.split(":")
    strands = int(strands)
    every = int(every[0]) if every else 1
    sys.path.insert(0, str(ROOT))
    import numba

    from hair_wig import FrameInput, HairSet, Magnet, SpringSettings, Wig, WigSettings
    from hair_wig.collision import ColliderMesh
    from hair_wig.wisps import WispSettings

    wisps, segments, length = WISP_STYLES[style]
    pts = _wisps_groom(strands, POINTS, length)
    hair = HairSet(pts.reshape(-1, 3).astype(np.float32), np.full(strands, POINTS), name="bench")
    dyn = (WispSettings(wisps=wisps, segments=segments, interact_every=every, max_width=0.0) if layer == "WISPS"
           else SpringSettings())
    v, tri = sphere_mesh()
    centre, axes = SHOULDERS
    body = ColliderMesh("Shoulders", v * axes + centre, tri, np.eye(4))
    t0 = time.perf_counter()
    wig = Wig(hair, np.eye(4), np.eye(4), [Magnet("M", np.eye(4), radius=0.01)], WigSettings(dynamics=dyn),
              head_mesh=sphere_mesh(), colliders=[body])
    bind = time.perf_counter() - t0
    wl = wig.layer if layer == "WISPS" else None
    state = None
    res = {"style": style, "strands": strands, "points": strands * POINTS, "layer": layer, "bind_s": bind,
           "threads_available": int(numba.config.NUMBA_NUM_THREADS)}
    if wl is not None:
        res.update(wisps=int(wl.set.num_wisps), segments=int(wl.set.K), substeps=int(dyn.substeps),
                   interact_every=int(dyn.interact_every))
    per = {t: {"times": [], "phases": {}, "seconds": {}, "counts": np.zeros(3)} for t in (1, 2)}
    load = os.getloadavg()[0]
    for f in range(2 + 2 * frames):
        threads = 1 + (f % 2)
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        a = 0.6 * np.sin(2 * np.pi * f / 16)
        head = np.eye(4)
        head[:2, :2] = [[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]
        inp = FrameInput(np.eye(4), head, np.array([np.eye(4)]), time=f / 24,
                         collider_matrices=np.array([np.eye(4)]))
        warm = f < 2
        phases = {}
        before = dict(wl.seconds) if wl is not None else {}
        counts = wl.counts.copy() if wl is not None else None
        t1 = time.perf_counter()
        _, state = wig.step(inp, state, keep_state=False, timings=phases)
        spent = time.perf_counter() - t1
        if warm:
            continue
        d = per[threads]
        d["times"].append(spent)
        for k, val in phases.items():
            d["phases"][k] = d["phases"].get(k, 0.0) + val
        if wl is not None:
            for k, val in wl.seconds.items():
                d["seconds"][k] = d["seconds"].get(k, 0.0) + val - before[k]
            d["counts"] += wl.counts - counts
    for t, d in per.items():
        n = len(d["times"])
        res[f"ms_{t}"] = 1e3 * float(np.median(d["times"]))
        res[f"mean_ms_{t}"] = 1e3 * float(np.mean(d["times"]))
        res[f"phases_{t}"] = {k: 1e3 * val / n for k, val in d["phases"].items()}
        if wl is not None:
            res[f"wisps_ms_{t}"] = {k: 1e3 * val / n for k, val in d["seconds"].items()}
            res[f"counts_{t}"] = (d["counts"] / n).tolist()
    res["frames"] = frames
    res["load"] = [load, os.getloadavg()[0]]
    res["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return res


def wisps_section(args, env) -> list:
    """Section 10: the Wisps layer (seed 001) on the seed's three hairstyles, with Springs on the
    same grooms; the rows, for the output's wisps.json."""
    cases = [c for k in args.wisps for c in (WISP_CASES if k == "all" else [k])]
    print("10. Wisps (seed 001) on the seed's hairstyles (short 199 wisps x 4 segments, 0.6 head radii; medium "
          "73 x 10, 1.6; long 56 x 8, 3.0), 16 points a strand, on a unit sphere head turning and shaking, "
          "colliding with it and a shoulders ellipsoid (the body), 8 substeps, wisps meeting every substep unless "
          "told; against Springs on the same groom. ms per frame: median of "
          f"{args.wisps_frames} warm frames a thread count (1 and 2 alternating); the seed took "
          f"{SEED_MS:.0f} ms (0.68 min) a frame; 24 fps is 41.7 ms")
    print(f"{'style':>7}{'strands':>8}{'wisps':>6}{'every':>6}{'thr':>4}{'Wisps':>8}{'Springs':>9}{'ratio':>7}"
          f"{'layer':>7}{'S.layer':>8}{'refine':>8}{'meet':>7}{'share':>6}{'body':>7}{'share':>6}"
          f"{'strands':>8}{'fps':>6}{'seed/us':>8}{'pairs':>8}{'met':>7}{'collide':>8}")
    rows, springs = [], {}
    for case in cases:
        style, strands, *every = case.split(":")
        every = int(every[0]) if every else 1
        w = _run("--wisps-one", f"{style}:{strands}:WISPS:{every}", "--wisps-frames", args.wisps_frames, env=env)
        if (style, strands) not in springs:
            springs[style, strands] = _run("--wisps-one", f"{style}:{strands}:SPRINGS", "--wisps-frames",
                                           args.wisps_frames, env=env)
        s = springs[style, strands]
        rows.append({"wisps": w, "springs": s})
        for t in (1, 2):
            ms, sp = w[f"ms_{t}"], s[f"ms_{t}"]
            ph, sph, sec = w[f"phases_{t}"], s[f"phases_{t}"], w[f"wisps_ms_{t}"]
            refine = ph.get("collision", 0.0) + ph.get("length", 0.0)
            pairs, met, hit = w[f"counts_{t}"][2], w[f"counts_{t}"][0], w[f"counts_{t}"][1]
            print(f"{style:>7}{int(strands):>8}{w['wisps']:>6}{every:>6}{t:>4}{ms:>8.0f}{sp:>9.0f}{ms / sp:>6.2f}x"
                  f"{ph.get('dynamics', 0.0):>7.0f}{sph.get('dynamics', 0.0):>8.0f}{refine:>8.0f}"
                  f"{sec['interactions']:>7.0f}{100 * sec['interactions'] / w[f'mean_ms_{t}']:>5.0f}%"
                  f"{sec['body']:>7.0f}{100 * sec['body'] / w[f'mean_ms_{t}']:>5.0f}%{sec['strands']:>8.0f}"
                  f"{1e3 / ms:>6.1f}{SEED_MS / ms:>7.0f}x{pairs:>8.0f}{met:>7.0f}{hit:>8.0f}", flush=True)
    print("   every: wisps meet every this many substeps; thr: numba's threads; Wisps, Springs: the whole frame "
          "(primary, layer, refinement, output); ratio: Wisps / Springs; layer, S.layer: the wig's dynamics "
          "phase with Wisps and with Springs; refine: refinement's collision and length with Wisps; meet, body, "
          "strands: the Wisps layer's own seconds (wisps meeting each other; the body: sliding contact and "
          "penetration; the strands placed in their wisps), shares of the mean frame; fps: 1000 / Wisps; "
          "seed/us: 40 800 ms / Wisps; pairs tested, "
          "points met in another wisp and of them colliding, a frame")
    for r in rows:
        w = r["wisps"]
        print(f"   {w['style']} {w['strands']} (meeting every {w['interact_every']}): bind {w['bind_s']:.1f} s "
              f"(Springs {r['springs']['bind_s']:.1f} s), peak {w['peak_mb']:.0f} MB, load average "
              f"{w['load'][0]:.1f} -> {w['load'][1]:.1f}", flush=True)
    big = [r for r in rows if r["wisps"]["style"] == "long" and r["wisps"]["strands"] == 50000
           and r["wisps"]["interact_every"] == 1]
    if big:
        w, s = big[0]["wisps"], big[0]["springs"]
        print(f"   targets, long 50k: >= 24 fps on two threads -> {1e3 / w['ms_2']:.2f} fps ({w['ms_2']:.0f} ms; one "
              f"thread {w['ms_1']:.0f} ms); <= 2x Springs' frame -> {w['ms_2'] / s['ms_2']:.2f}x on two threads, "
              f"{w['ms_1'] / s['ms_1']:.2f}x on one; the layer alone (the wig's dynamics phase) "
              f"{w['phases_2']['dynamics']:.0f} ms on two threads, {w['phases_1']['dynamics']:.0f} on one (Springs' "
              f"{s['phases_2']['dynamics']:.0f}, {s['phases_1']['dynamics']:.0f}); refinement "
              f"{w['phases_1']['collision']:.0f} ms on one")
    return rows


def _run(*args, env=None) -> dict:
    res = subprocess.run([sys.executable, __file__, *map(str, args)], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads([line for line in res.stdout.splitlines() if line.startswith("{")][-1])


def plot(rows: list, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [r["points"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    a.loglog(pts, [r["ms_1"] for r in rows], "o-", label="pipeline, 1 thread")
    a.loglog(pts, [r["ms_2"] for r in rows], "s-", label="pipeline, 2 threads")
    a.loglog(pts, [r["floor_ms"] for r in rows], "^--", label="streaming floor")
    a.set_xlabel("points (16 per strand)")
    a.set_ylabel("ms per frame")
    a.set_title("wig core per frame")
    a.grid(True, which="both", alpha=0.3)
    a.legend()
    b.plot([p / 1e6 for p in pts], [r["peak_mb"] for r in rows], "o-")
    b.set_xlabel("million points")
    b.set_ylabel("peak memory, MB")
    b.set_title("memory")
    b.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 640, 6400, 25000, 100000],
                   help="strand counts (16 points each)")
    p.add_argument("--frames", type=int, default=12)
    p.add_argument("--e2e", type=int, nargs="*", default=[1000, 5000],
                   help="strand counts for the end-to-end bake against Blender's hair dynamics")
    p.add_argument("--preview-strands", type=int, default=10000,
                   help="strands (16 points each) for the live-preview rate; 0 skips it")
    p.add_argument("--output", default="bench_output", help="folder for bench.png")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--length-mode", default="SEGMENT", help=argparse.SUPPRESS)
    p.add_argument("--method", default="FIELD", help=argparse.SUPPRESS)
    p.add_argument("--preview-one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--particle-one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--wig-one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--sparse-one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--quick-fur", default="MEDIUM", choices=("LOW", "MEDIUM", "HIGH", "NONE"),
                   help="Quick Fur density for the bake-with-its-modifier-stack figure; NONE skips it")
    p.add_argument("--quick-fur-one", help=argparse.SUPPRESS)
    p.add_argument("--field-one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--field", type=int, default=50000, help="triangles of the head whose collision field is built")
    p.add_argument("--strands", type=int, nargs="*", default=[1000, 5000],
                   help="strand counts for the Strands solver's end-to-end bake; none skips section 7")
    p.add_argument("--strands-core", nargs="*", default=["10000x32", "100000x16"],
                   help="strands x points for the Strands solver's per-frame cost")
    p.add_argument("--strands-one", help=argparse.SUPPRESS)
    p.add_argument("--wig-strands-one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--particle-collide-one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--search-one", help=argparse.SUPPRESS)
    p.add_argument("--style", nargs="*", default=["20000x25"],
                   help="Style Hair sizes (strands x points) for section 8; none skips it")
    p.add_argument("--style-one", help=argparse.SUPPRESS)
    p.add_argument("--rods", nargs="*", default=["21250x25", "100000x16"],
                   help="Rods core sizes (strands x points) for section 8; none skips them")
    p.add_argument("--rods-one", help=argparse.SUPPRESS)
    p.add_argument("--rods-bake", type=int, nargs="*", default=[1000, 5000],
                   help="strand counts for the Rods layer's end-to-end bake in section 8; none skips it")
    p.add_argument("--wig-rods-one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--draw", nargs="*", default=["1000x10000"],
                   help="Draw Hair sizes (strokes x strands already drawn) for section 9; none skips it")
    p.add_argument("--draw-one", help=argparse.SUPPRESS)
    p.add_argument("--wisps", nargs="*", default=["long:50000"],
                   help="Wisps (seed 001) cases for section 10, style:strands[:every] with style short, medium or "
                        "long (the seed's hairstyles) and wisps meeting every that many substeps (1), or 'all' for "
                        "the seven of the issue (10k and 50k each, 100k long); none skips it")
    p.add_argument("--wisps-frames", type=int, default=4, help="warm frames a thread count in section 10")
    p.add_argument("--wisps-only", action="store_true", help="run section 10 (Wisps) alone")
    p.add_argument("--wisps-one", help=argparse.SUPPRESS)
    p.add_argument("--live", nargs="*", default=["STRANDS:5000", "STRANDS:5000:WIND", "STRANDS:1000", "SPRINGS:5000",
                                                 "RODS:5000", "WISPS:5000"],
                   help="live dynamics cases for section 11, SOLVER:strands[:WIND] (WIND: a Wind field blowing at "
                        "her face); none skips it")
    p.add_argument("--live-only", action="store_true", help="run section 11 (live dynamics) alone")
    p.add_argument("--live-one", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for flag, fn in ((args.one, lambda n: one(n, args.frames, args.length_mode, args.method)), (args.preview_one, lambda n: preview_rate(n, 48)),
                     (args.particle_one, lambda n: particle_hair(n, 48)), (args.wig_one, lambda n: wig_bake(n, 48)),
                     (args.sparse_one, sparse_weights), (args.quick_fur_one, quick_fur_bake),
                     (args.field_one, field_build), (args.wig_strands_one, lambda n: wig_bake(n, 48, "STRANDS")),
                     (args.wig_rods_one, lambda n: wig_bake(n, 48, "RODS")),
                     (args.particle_collide_one, lambda n: particle_hair(n, 48, collide=True)),
                     (args.strands_one, lambda k: strands_one(*map(int, k.split("x")[:4]), *k.split("x")[4:5])),
                     (args.search_one, lambda k: one_search(*map(int, k.split("x")))),
                     (args.style_one, style_one), (args.rods_one, rods_one), (args.draw_one, draw_one),
                     (args.wisps_one, lambda k: wisps_one(k, args.wisps_frames)), (args.live_one, live_rate)):
        if flag:
            print(json.dumps(fn(flag)))
            return 0
    # the kernels an artist's session runs: prepared for any CPU, as the add-on prepares them (a
    # kernel compiled here on the fly would be made for this CPU, which is not what an artist's
    # session loads, and is up to 40 % slower on some: README, *Measured*); nothing if prepared
    import prepare_kernels

    if not prepare_kernels.run():
        print("bench: the kernels could not be prepared; the figures are of kernels compiled here", file=sys.stderr)
    # no BLAS thread limits set here: the add-on keeps numpy's BLAS on one thread itself while the
    # wig computes (``hair_wig.blas``), and the bench measures what an artist's session gets
    env = dict(os.environ)
    if args.live_only:
        live_section(args, env)
        return 0
    if args.wisps_only:
        wisp_rows = wisps_section(args, env) if args.wisps else []
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        (out / "wisps.json").write_text(json.dumps(wisp_rows, indent=1))
        print(f"wisps: {out / 'wisps.json'}")
        return 0
    blender = {}                 # Blender's particle hair dynamics per strand count, measured once
    print("1. wig core per frame: 8 magnets (2 dynamic), secondary dynamics, compression, length, collision")
    print(f"{'strands':>8}{'points':>9}{'1 thread':>10}{'2 threads':>10}{'speed-up':>9}{'floor':>8}"
          f"{'ratio':>7}{'primary':>9}{'dynamics':>9}{'compr.':>8}{'length':>8}{'collis.':>8}{'output':>8}"
          f"{'peak MB':>9}")
    rows = []
    for n in args.sizes:
        r = _run("--one", n, "--frames", args.frames, env=env)
        rows.append(r)
        ph = r["phases"]
        print(f"{r['strands']:>8}{r['points']:>9}{r['ms_1']:>10.1f}{r['ms_2']:>10.1f}"
              f"{r['ms_1'] / r['ms_2']:>8.2f}x{r['floor_ms']:>8.1f}{r['ms_2'] / r['floor_ms']:>6.1f}x"
              + "".join(f"{ph.get(k, 0):>{w}.1f}" for k, w in (("primary", 9), ("dynamics", 9),
                        ("compression", 8), ("length", 8), ("collision", 8), ("output", 8)))
              + f"{r['peak_mb']:>9.0f}", flush=True)
    big = rows[-1]
    pts = np.array([r["points"] for r in rows], float)
    mb = np.array([r["peak_mb"] for r in rows], float)
    slope, intercept = np.polyfit(pts, mb, 1)
    print(f"   ms per frame and phases: median of {args.frames} frames; phases with 1 thread; floor = "
          f"numpy copying rest, weights, spring state and output once; ratio = 2 threads / floor")
    print(f"   memory: peak = {intercept:.0f} MB + {slope * 1e6:.0f} MB per million points "
          f"(linear fit over the sizes above); one frame at {big['points']} points allocates at most "
          f"{big['frame_alloc_mb']:.1f} MB at once (one (P, 3) float32 array: {big['points'] * 12 / 2**20:.1f} MB)")
    print(f"   targets at {big['points']} points: <= 4x floor -> {big['ms_2'] / big['floor_ms']:.1f}x; "
          f"<= 150 ms on one core -> {big['ms_1']:.0f} ms; peak <= 2048 MB -> {big['peak_mb']:.0f} MB")
    if args.e2e:
        print("2. end-to-end bake, 48 frames of a head turn, 16 points per strand, against Blender's "
              "particle hair dynamics")
        print(f"{'strands':>8}{'hair_wig s':>12}{'ms/frame':>10}{'Blender s':>11}{'ms/frame':>10}{'ratio':>8}")
        for n in args.e2e:
            ours = _run("--wig-one", n)
            theirs = blender[n] = _run("--particle-one", n)
            print(f"{n:>8}{ours['s']:>12.2f}{1e3 * ours['s'] / ours['frames']:>10.1f}{theirs['s']:>11.2f}"
                  f"{1e3 * theirs['s'] / theirs['frames']:>10.1f}"
                  f"{(theirs['s'] / theirs['frames']) / (ours['s'] / ours['frames']):>7.0f}x", flush=True)
    if args.preview_strands:
        r = _run("--preview-one", args.preview_strands)
        print(f"3. live preview in Blender, {r['strands']} strands x {POINTS} points, 8 magnets: "
              f"{r['updates_per_s']:.1f} updates/s ({r['ms']:.1f} ms per frame_set incl. the write; "
              f"target >= 30/s)")
    r = _run("--sparse-one", args.sizes[-1], env=env)
    print(f"4. block-sparse magnet weights, {r['points']} points, {r['magnets']} magnets of radius 0.6 in a ring; "
          f"dense storage would be {r['surface']['dense_mb']:.0f} MB")
    for order in ("surface", "random"):
        o = r[order]
        print(f"   hair in {order} order: {o['per_point']:.1f} magnets stored per point, {o['mb']:.0f} MB, "
              f"primary movement {o['ms']:.1f} ms per frame")
    print(f"   reaches that follow their magnets (weighed each frame where the magnet is, radius 0.6): "
          f"1 magnet {r['follow_1_ms']:.1f} ms per frame, 8 magnets {r['follow_8_ms']:.1f} ms")
    if args.quick_fur != "NONE":
        r = _run("--quick-fur-one", args.quick_fur)
        per = {k: 1e3 * r[k] / r["frames"] for k in ("off_s", "on_s", "evaluated_s")}
        print(f"5. bake of a Quick Fur groom ({args.quick_fur}: {r['guides']} guides, {r['children']} curves "
              f"with children; {', '.join(r['modifiers'])}) on a subdivided, turning Suzanne, "
              f"{r['frames']} frames:")
        print(f"   stack off by the artist {per['off_s']:.1f} ms/frame; stack on {per['on_s']:.1f} ms/frame "
              f"({per['on_s'] / per['off_s']:.2f}x, target <= 1.25x); the stack evaluated every frame, as "
              f"before: {per['evaluated_s']:.1f} ms/frame ({per['evaluated_s'] / per['off_s']:.1f}x)")
    ph = big["phases"]
    runs = {(mode, method): _run("--one", args.sizes[-1], "--frames", args.frames, "--length-mode", mode,
                                 "--method", method, env=env)["phases"]
            for mode, method in (("STRAND", "FIELD"), ("STRAND", "RAY"))}
    whole, ray = runs[("STRAND", "FIELD")], runs[("STRAND", "RAY")]
    print(f"6. collision: length + collision at {big['points']} points on one thread, per frame (target <= 25 ms; "
          f"the patent's ray map took 2.7 + 9.4 ms when the target was set): per segment (the default, one walk) "
          f"{ph.get('length', 0) + ph.get('collision', 0):.1f} ms; whole strand {whole['length']:.1f} + "
          f"{whole['collision']:.1f} ms; the patent's ray map with whole-strand length, now: {ray['length']:.1f} + "
          f"{ray['collision']:.1f} ms (primary phase of the three runs: {ph['primary']:.1f}, {whole['primary']:.1f}, "
          f"{ray['primary']:.1f} ms: how fast the machine was)")
    r = _run("--field-one", args.field, env=env)
    print(f"   field of a {r['triangles']}-triangle head: built in {r['s']:.2f} s, its solid (holes closed, "
          f"inner shells dropped by the winding number) {r['solid_s']:.2f} s more (target: both <= 1 s), "
          f"{r['mb']:.0f} MB, grid {'x'.join(map(str, r['dims']))}; exact signed distance of points within "
          f"5 mm of it: {r['query_us']:.1f} us per point")
    print(f"   the same head deforming (a bump rising and falling within its give): its field followed in "
          f"{r['refit_ms']:.0f} ms a frame (refitted; {r['refit_first_ms']:.0f} ms the first deformed frame) against "
          f"{r['built_ms']:.0f} ms built anew ({r['built_ms'] / r['refit_ms']:.1f}x); exact queries "
          f"{r['refit_query_us']:.1f} us a point refitted, {r['built_query_us']:.1f} built")
    if args.strands:
        strands_section(args, env, blender)
    if args.style:
        print("8. Style Hair (issue 16) through its operator: strands grown on a sphere head's upper half, "
              "0.3 m, gravity and a combing force, collision with layered volume (seconds for the whole "
              "operator; the core's share)")
        print(f"{'strands':>8}{'points':>7}{'curls':>7}{'s':>8}{'core s':>8}{'peak MB':>9}")
        for size in args.style:
            for curl in ("NONE", "HELIX"):
                r = _run("--style-one", f"{size}x{curl}", env=env)
                print(f"{r['strands']:>8}{r['points']:>7}{curl.lower():>7}{r['s']:>8.2f}{r['core_s']:>8.2f}"
                      f"{r['peak_mb']:>9.0f}", flush=True)
    if args.rods:
        print("   the Rods core per frame: default settings, gravity, hair combed out and down from a sphere's "
              "crown, one thread; the paper ran 21 250 strands at 30 fps (33 ms a frame) in 2003")
        print(f"{'strands':>10}{'points':>7}{'substeps':>9}{'ms/frame':>10}{'x 33 ms':>9}{'bind s':>8}{'peak MB':>9}")
        for size in args.rods:
            r = _run("--rods-one", size, env=env)
            print(f"{r['strands']:>10}{r['points']:>7}{r['substeps']:>9}{r['ms']:>10.0f}{r['ms'] / (1e3 / 30):>8.1f}x"
                  f"{r['bind_s']:>8.2f}{r['peak_mb']:>9.0f}", flush=True)
    if args.rods_bake:
        print("   the Rods layer end to end: section 2's bake (48 frames of a head turn, 16 points per strand, "
              "length and head collision) with Solver: Rods, against the same bake with Strands")
        print(f"{'strands':>10}{'Rods s':>9}{'ms/frame':>10}{'Strands s':>11}{'ms/frame':>10}")
        for n in args.rods_bake:
            r, t = _run("--wig-rods-one", n), _run("--wig-strands-one", n)
            print(f"{n:>10}{r['s']:>9.2f}{1e3 * r['s'] / r['frames']:>10.1f}{t['s']:>11.2f}"
                  f"{1e3 * t['s'] / t['frames']:>10.1f}", flush=True)
    for size in args.draw:
        r = _run("--draw-one", size, env=env)
        print(f"9. Draw Hair (issue 17) on Suzanne: Convert Strokes to Hair, {r['strokes']} strokes from three "
              f"views -> {r['made']} strands: {r['convert_s']:.2f} s; the Draw Hair tool with {r['existing']} "
              f"strands drawn: {r['move_ms']:.3f} ms per mouse move (sample + overlay points), "
              f"{r['release_ms']:.1f} ms per release (the strand made and written)", flush=True)
    wisp_rows = wisps_section(args, env) if args.wisps else []
    if args.live:
        live_section(args, env)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    if wisp_rows:
        (out / "wisps.json").write_text(json.dumps(wisp_rows, indent=1))
        print(f"wisps: {out / 'wisps.json'}")
    plot(rows, out / "bench.png")
    print(f"plot: {out / 'bench.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
