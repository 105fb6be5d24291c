"""The compiled kernels against the numpy code they replaced, on the same data in one run.

    ./run python scripts/bench_kernels.py [--strands 100000] [--points 16] [--runs 7]

First the kernels' start: ``prepare.warm_up()`` in a fresh process with an empty cache folder
(``NUMBA_CACHE_DIR``: what the first bake after installing does — compile) and again in another
process with that folder filled (every later bake — load).

The collision field's queries (``kernels.field``, through ``hair_wig.collision.MeshField``) on
scripts/bench.py's groom (strands combed out of a unit sphere, the 4k-triangle sphere its head):
the screen, the trilinear distance and its error, the exact distances of the points nearest the
head, and held depth (what each frame measures on every point), on 1 and on every thread.

Follow-the-leader (refinement's length pass, ``kernels.follow_chains``) on strands combed out and
jittered by 1 cm, float32 like refinement's rows: the kernel on 1 and on every thread, and the
numpy step it replaced — ``leader.follow_the_leader`` over point-major rows, one call a point
index for strands of one count; for mixed counts, one call a column of the padded (strands, most
points) table. Medians of ``--runs`` (the first run, which loads the compiled code, apart).

Hair against hair (``kernels.pairs``, through ``hair_wig.interaction``): the pair search and the
repulsion on 10k strands x 32 points, on 1 and on every thread (no numpy beside it: the numpy
search it replaced took 3.2 s for the 10 mm search in scripts/bench.py's profile).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numba  # noqa: E402

from hair_wig import leader  # noqa: E402
from hair_wig.kernels import follow_chains, strand_major  # noqa: E402

EPS32 = float(np.finfo(np.float32).eps)


def _hair(strands: int, points: int, mixed: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    counts = rng.integers(2, 2 * points - 1, strands) if mixed else np.full(strands, points)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    P = int(offsets[-1])
    strand = np.repeat(np.arange(strands), counts)
    j = np.arange(P) - offsets[strand]
    root = rng.normal(size=(strands, 3))
    way = rng.normal(size=(strands, 3))
    rest = (root[strand] + (j / points)[:, None] * way[strand]).astype(np.float32)
    length = np.zeros(P)
    length[1:] = np.linalg.norm(np.diff(rest.astype(np.float64), axis=0), axis=1)
    length[offsets[:-1]] = 0.0
    asked = rest + rng.normal(size=rest.shape).astype(np.float32) * np.float32(0.01)
    return rest, asked, offsets, length


def _numpy(rows, offsets, length, rest_rows):
    """The numpy length pass (what ``LengthControl`` did before the kernel): a column of the
    padded table at a time, every strand at once."""
    counts = np.diff(offsets)
    table = np.where(np.arange(counts.max())[None, :] < counts[:, None], offsets[:-1, None] + np.arange(counts.max()), -1)
    came = rows.copy()
    for j in range(1, table.shape[1]):
        idx = table[:, j]
        live = idx >= 0
        cur, prev = idx[live], table[live, j - 1]
        rows[:, cur] = leader.follow_the_leader(rows[:, prev], came[:, cur], length[cur].astype(np.float32),
                                                came[:, cur] - came[:, prev],
                                                lambda: rest_rows[:, cur] - rest_rows[:, prev])
    return rows


def _numpy_uniform(rows, n, length, rest_rows):
    """The same for strands of one count: point-major rows, one call a point index."""
    count = rows.shape[1] // n
    q = np.ascontiguousarray(rows.reshape(3, count, n).transpose(0, 2, 1))
    r = rest_rows.reshape(3, count, n).transpose(0, 2, 1)
    L = np.ascontiguousarray(length.reshape(count, n).T, np.float32)
    came = q[:, 0].copy()
    guide = np.empty((3, count), np.float32)
    for j in range(1, n):
        np.subtract(q[:, j], came, out=guide)
        np.copyto(came, q[:, j])
        leader.follow_the_leader(q[:, j - 1], q[:, j], L[j], guide, lambda: r[:, j] - r[:, j - 1], out=q[:, j])
    rows[...] = q.transpose(0, 2, 1).reshape(3, -1)
    return rows


def _time(fn, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs + 1):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * times[0], 1e3 * float(np.median(times[1:]))


WARM = """
import sys, time
sys.path.insert(0, sys.argv[1])
t = time.perf_counter()
from hair_wig import prepare
imported = time.perf_counter() - t
for _ in prepare.warm_up():
    pass
print(imported, time.perf_counter() - t)
"""


def start_times() -> tuple:
    """(import, import + warm-up) seconds, cold (empty cache) then warm (filled), in fresh processes."""
    root = str(Path(__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        return tuple(tuple(map(float, subprocess.run([sys.executable, "-c", WARM, root], env=env, check=True,
                                                     capture_output=True, text=True).stdout.split()))
                     for _ in range(2))


def _collision_field(strands: int, points: int, runs: int, threads: int) -> None:
    """The collision field's queries on ``strands`` x ``points`` points of scripts/bench.py's
    groom (``one``) against its sphere head (32 rings x 64 segments), the roots left out."""
    from hair_wig.collision import MeshField

    th, ph = np.linspace(0, np.pi, 33), np.linspace(0, 2 * np.pi, 64, endpoint=False)
    v = np.stack([np.outer(np.sin(th), np.cos(ph)), np.outer(np.sin(th), np.sin(ph)),
                  np.outer(np.cos(th), np.ones_like(ph))], -1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(32), np.arange(64), indexing="ij")
    a, b = i * 64 + j, i * 64 + (j + 1) % 64
    tris = np.concatenate([np.stack([a, a + 64, b], -1).reshape(-1, 3),
                           np.stack([b, a + 64, b + 64], -1).reshape(-1, 3)])
    field = MeshField(v, tris)
    rng = np.random.default_rng(0)
    z = rng.uniform(0.1, 1.0, strands)
    phi = rng.uniform(0, 2 * np.pi, strands)
    roots = np.stack([np.sqrt(1 - z * z) * np.cos(phi), np.sqrt(1 - z * z) * np.sin(phi), z], 1)
    t = np.linspace(0, 1, points)
    # every point but the roots, as a frame measures them (``Wig._held_depth``)
    rows = np.ascontiguousarray((roots[:, None] * (1 + 0.5 * t[1:, None])).reshape(-1, 3).T, np.float32)
    limit = np.zeros(rows.shape[1], np.float32)
    near = rows[:, ::points - 1].T.astype(np.float64)         # each strand's first point after the root
    measured = int(np.isfinite(field._depths(rows, limit)).sum())
    print(f"collision field, {rows.shape[1]} points, {len(tris)} triangles, median of {runs} (ms)")
    print(f"{'':<44}{'points':>10}{'kernel 1':>10}{f'kernel {threads}':>10}")
    for label, call, count in (
            ("screen (nearest node)", lambda: field.screen(rows, limit + field.slack), rows.shape[1]),
            ("trilinear distance and error", lambda: field.distance_rows(rows), rows.shape[1]),
            ("exact distance (first points)", lambda: field.exact(near), len(near)),
            ("signed distance (first points)", lambda: field.signed_distance(near), len(near)),
            (f"held depth (exact at {measured})", lambda: field._depths(rows, limit), rows.shape[1])):
        numba.set_num_threads(1)
        _, t_1 = _time(call, runs)
        numba.set_num_threads(threads)
        _, t_n = _time(call, runs)
        print(f"{label:<44}{count:>10}{t_1:>10.1f}{t_n:>10.1f}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--strands", type=int, default=100000)
    p.add_argument("--points", type=int, default=16)
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args(argv)
    threads = numba.config.NUMBA_NUM_THREADS
    (ci, cold), (wi, warm) = start_times()
    print(f"kernels' start (import + warm-up): cold {cold:.2f} s (import {ci:.2f}), "
          f"warm {warm:.2f} s (import {wi:.2f})")
    _collision_field(args.strands, args.points, args.runs, threads)
    print(f"follow-the-leader, {args.strands} strands, float32, median of {args.runs} (ms); "
          f"numba {numba.__version__}, {threads} threads")
    print(f"{'strands':<22}{'points':>10}{'numpy':>9}{'kernel 1':>10}{f'kernel {threads}':>10}{'ratio':>8}")
    for mixed in (False, True):
        rest, asked, offsets, length = _hair(args.strands, args.points, mixed)
        rows0 = np.ascontiguousarray(asked.T)
        rest_rows = np.ascontiguousarray(rest.T)
        strands = np.arange(len(offsets) - 1, dtype=np.int64)
        work = {}

        def run_numpy():
            work["np"] = (_numpy(rows0.copy(), offsets, length, rest_rows) if mixed
                          else _numpy_uniform(rows0.copy(), args.points, length, rest_rows))

        def run_kernel():
            rows = rows0.copy()
            follow_chains(rows.T, *strand_major(offsets), strands, length, np.empty((0, 3)), rest_rows.T, 0.0, True, 1, 4 * EPS32)
            work["k"] = rows

        _, t_np = _time(run_numpy, args.runs)
        numba.set_num_threads(1)
        _, t_1 = _time(run_kernel, args.runs)
        numba.set_num_threads(threads)
        _, t_n = _time(run_kernel, args.runs)
        diff = float(np.abs(work["k"].astype(np.float64) - work["np"]).max())
        label = f"mixed 2..{2 * args.points - 2} points" if mixed else f"all {args.points} points"
        print(f"{label:<22}{len(asked):>10}{t_np:>9.1f}{t_1:>10.1f}{t_n:>10.1f}{t_np / t_n:>7.1f}x"
              f"   (largest difference {diff:.1e})")
    _hair_against_hair(args.runs, threads)
    return 0


def _hair_against_hair(runs: int, threads: int) -> None:
    """Hair against hair (``hair_wig.interaction``, kernels.pairs) on 10k strands x 32 points combed
    out and down from a unit sphere's crown (scripts/bench.py's ``strands_one`` groom): one search
    for the pairs within a diameter (5 mm) and within a diameter and a 5 mm margin (what ``Contacts``
    keeps), and the repulsion over the latter's candidates against the groom moved by 2 mm."""
    from hair_wig.interaction import repulsion, segment_pairs

    rng = np.random.default_rng(0)
    strands, points = 10000, 32
    phi, theta = rng.uniform(0, 2 * np.pi, strands), np.arccos(rng.uniform(0.35, 0.98, strands))
    root = np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)])
    out = root * np.array([1.0, 1.0, 0.0])[:, None]
    out /= np.maximum(np.linalg.norm(out, axis=0), 1e-9)
    t = np.linspace(0, 1, points)[:, None]
    pts = 1.002 * root[:, None] + 0.5 * (out[:, None] * np.sin(t * 1.2) - np.array([0, 0, 1.0])[:, None, None]
                                         * (1 - np.cos(t * 1.2)) * 0.8 + root[:, None] * 0.1 * t)
    a, b = np.ascontiguousarray(pts[:, :-1].reshape(3, -1)), np.ascontiguousarray(pts[:, 1:].reshape(3, -1))
    strand = np.tile(np.arange(strands), points - 1)
    moved = a + rng.normal(0, 0.002, a.shape), b + rng.normal(0, 0.002, b.shape)
    wide = segment_pairs(a, b, strand, 0.01)[:2]
    print(f"hair against hair, {strands} strands x {points} points ({a.shape[1]} segments), median of {runs} (ms)")
    print(f"{'':<34}{'pairs':>10}{'kernel 1':>10}{f'kernel {threads}':>10}")
    for label, call, count in (
            ("search within 5 mm", lambda: segment_pairs(a, b, strand, 0.005), None),
            ("search within 10 mm", lambda: segment_pairs(a, b, strand, 0.01), None),
            ("repulsion over the 10 mm pairs", lambda: repulsion(*moved, strand, 0.005, 2000.0, wide, (a, b)), 2)):
        numba.set_num_threads(1)
        _, t_1 = _time(call, runs)
        numba.set_num_threads(threads)
        _, t_n = _time(call, runs)
        found = call()
        print(f"{label:<34}{found[count] if count else len(found[0]):>10}{t_1:>10.1f}{t_n:>10.1f}")


if __name__ == "__main__":
    sys.exit(main())
