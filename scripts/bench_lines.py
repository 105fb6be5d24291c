"""hair_wig on Blender 4.5 LTS and 5.2 LTS side by side, measured in one run.

    ./run python scripts/bench_lines.py [--repeats 3] [--strands 100000] [--preview-strands 10000]

Every line whose environment ``./run`` has made (``HAIR_WIG_BPY_4_5``, ``HAIR_WIG_BPY_5_2``) runs the
same measurements in fresh processes, the lines taking turns so that the shared machine's drift
falls on both alike; each figure is the median over ``--repeats`` turns:

* the wig core per frame at ``--strands`` × 16 points, one and two threads (``bench.py --one``);
* the live preview's updates per second at ``--preview-strands`` × 16 (``bench.py --preview-one``);
* what Blender spends evaluating hair whose positions were just written (write + depsgraph update),
  for Catmull-Rom curves (Blender's default for hair, resolution 12) and for poly curves, written
  through ``attributes['position']`` and through ``position_data`` (what hair_wig uses).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINES = ("4.5", "5.2")


def evaluation_after_write(strands: int, frames: int = 24) -> dict:
    """ms for writing new positions into a Curves object and letting Blender evaluate it."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import bpy
    import numpy as np
    import scenes

    bpy.ops.wm.read_factory_settings(use_empty=True)
    pts, counts = scenes.straight_strands(strands, 16, length=0.5)
    ob = scenes.curves_hair("Hair", pts, counts)
    cv = ob.data
    flat = pts.astype(np.float32).ravel().copy()
    result = {"version": bpy.app.version_string}
    writes = {"attribute": lambda: cv.attributes["position"].data.foreach_set("vector", flat),
              "position_data": lambda: cv.position_data.foreach_set("vector", flat)}
    for kind in ("CATMULL_ROM", "POLY"):
        cv.set_types(type=kind)
        for way, write in writes.items():
            times = []
            for f in range(frames + 1):
                flat[::3] += np.float32(1e-4)
                t = time.perf_counter()
                write()
                cv.update_tag()
                bpy.context.view_layer.update()
                times.append(time.perf_counter() - t)
            result[f"{kind} {way}"] = 1e3 * float(np.median(times[1:]))
    return result


def run(python: str, *args) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    res = subprocess.run([python, *map(str, args)], capture_output=True, text=True, env=env, check=True)
    return json.loads([line for line in res.stdout.splitlines() if line.startswith("{")][-1])


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--strands", type=int, default=100000)
    p.add_argument("--preview-strands", type=int, default=10000)
    p.add_argument("--eval-one", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.eval_one:
        print(json.dumps(evaluation_after_write(args.eval_one)))
        return 0
    pythons = {line: os.environ.get(f"HAIR_WIG_BPY_{line.replace('.', '_')}") for line in LINES}
    missing = [line for line, py in pythons.items() if not py]
    if missing:
        print(f"bench_lines.py: error: no environment for Blender {', '.join(missing)}; "
              f"`./run tests` (or HAIR_WIG_BLENDER=<line> ./run python -c 1) makes it", file=sys.stderr)
        return 1
    bench = ROOT / "scripts" / "bench.py"
    for line in LINES:
        # each line's kernels prepared for any CPU first, as an artist's session loads them (a
        # kernel compiled on the fly here would be made for this CPU: README, *Measured*)
        subprocess.run([pythons[line], str(ROOT / "scripts" / "prepare_kernels.py")], check=True)
    evals = [f"{kind} {way}" for kind in ("CATMULL_ROM", "POLY") for way in ("attribute", "position_data")]
    got = {line: {"ms_1": [], "ms_2": [], "preview": [], **{k: [] for k in evals}} for line in LINES}
    t0 = time.perf_counter()
    for _ in range(args.repeats):
        for line in LINES:
            py, g = pythons[line], got[line]
            core = run(py, bench, "--one", args.strands)
            g["ms_1"].append(core["ms_1"])
            g["ms_2"].append(core["ms_2"])
            g["preview"].append(run(py, bench, "--preview-one", args.preview_strands)["updates_per_s"])
            ev = run(py, __file__, "--eval-one", args.preview_strands)
            for k in evals:
                g[k].append(ev[k])
            g["version"] = ev["version"]
    rows = (("wig core, 1 thread, ms/frame", "ms_1", args.strands * 16),
            ("wig core, 2 threads, ms/frame", "ms_2", args.strands * 16),
            ("live preview, updates/s", "preview", args.preview_strands * 16),
            *((f"write ({k.split()[1]}) + evaluate {'Catmull-Rom' if k.startswith('C') else 'poly'}, ms", k,
               args.preview_strands * 16) for k in evals))
    a, b = LINES
    print(f"hair_wig on two Blender lines: medians of {args.repeats} alternating turns "
          f"({time.perf_counter() - t0:.0f} s)")
    print(f"{'measure':<48}{'points':>10}{got[a]['version']:>14}{got[b]['version']:>14}{b + ' / ' + a:>12}")
    for label, key, points in rows:
        va, vb = median(got[a][key]), median(got[b][key])
        print(f"{label:<48}{points:>10}{va:>14.1f}{vb:>14.1f}{vb / va:>11.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
