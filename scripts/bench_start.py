"""How soon hair_wig is ready after installing: the Linux package installed through Blender's own
installer into a clean profile (home empty, no kernel cache anywhere), then a new Blender process
enabling it and baking a 200-strand shot (a sphere head turning, 16 points a strand, 24 frames,
head collision) — with each solver, each in a fresh install; a second session of the same
profile; the same package without its prebuilt kernels (what a platform whose package carries
none does: the kernels prepared in the background, the bake waiting for its own); and how long
Blender's own process is held while that preparation runs (the longest gap between frames set
in a loop meanwhile, enabling the add-on, and loading one group of prepared kernels — what a
bake does between two of Blender's events).

    ./run python scripts/bench_start.py [--solvers SPRINGS STRANDS RODS WISPS] [--strands 200]

One run; figures are wall seconds on this machine, each process started cold.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

INSTALL = """
import bpy, sys
assert bpy.ops.extensions.package_install_files(
    filepath=sys.argv[1], repo="user_default", enable_on_install=True) == {"FINISHED"}
bpy.ops.wm.save_userpref()
"""

# a new Blender process: the extension enabled as Blender enables it at start (its wheels first
# on the path), a shot built and baked; what it compiled, how long the steps took; with "watch",
# the main thread's longest gap while a background preparation runs, before the bake
SHOT = """
import json, os, sys, time
t0 = time.perf_counter()
import bpy, addon_utils
local = os.path.join(bpy.utils.user_resource("EXTENSIONS"), ".local", "lib",
                     "python{}.{}".format(*sys.version_info[:2]), "site-packages")
sys.path.insert(0, local)
t = time.perf_counter()
addon_utils.enable("bl_ext.user_default.hair_wig", default_set=True)
enable = time.perf_counter() - t
core = sys.modules["bl_ext.user_default.hair_wig.hair_wig"]
preparation = sys.modules["bl_ext.user_default.hair_wig.operators.preparation"]
compiled = core.kernels.store.count_compiles(core.kernels.__name__)
started = preparation.running()
sys.path.insert(0, sys.argv[1])
import scenes
scene, head, ob, pts = scenes.turning_head_hair(int(sys.argv[3]), 24, points=16, length=0.6, factory=False)
ob.hair_wig.head = head
ob.hair_wig.dynamics_layer = sys.argv[2]
bpy.context.view_layer.objects.active = ob
gap = 0.0
if sys.argv[4] == "watch":
    last, turns = time.perf_counter(), 0
    while preparation.running():
        scene.frame_set(turns % 24 + 1)
        turns += 1
        now = time.perf_counter()
        gap, last = max(gap, now - last), now
        time.sleep(0.01)
t = time.perf_counter()
assert bpy.ops.hair_wig.bake() == {"FINISHED"}
bake = time.perf_counter() - t
loads = []
if sys.argv[4] == "watch":
    for name in core.prepare.GROUPS:                     # each group loaded from the prepared folder
        t = time.perf_counter()
        list(core.prepare.warm_up([name]))
        loads.append((time.perf_counter() - t, name))
print("RESULT " + json.dumps(dict(enable=enable, started=started, bake=bake, compiled=compiled.count,
                                  gap=gap, load=max(loads) if loads else None, whole=time.perf_counter() - t0)))
"""


def _env(profile: Path, home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "HAIR_WIG_KERNEL", "XDG_"))}
    env.update(BLENDER_USER_RESOURCES=str(profile), HOME=str(home))
    env.pop("PYTHONPATH", None)
    return env


def fresh_install(package: Path, where: Path) -> dict:
    """A clean profile and an empty home with ``package`` installed: the environment to run in."""
    profile, home = where / "profile", where / "home"
    profile.mkdir(parents=True)
    home.mkdir()
    env = _env(profile, home)
    subprocess.run([sys.executable, "-c", INSTALL, str(package)], env=env, check=True, capture_output=True, cwd=where)
    return env


def shot(env: dict, solver: str, strands: int, mode: str = "plain") -> dict:
    """A new Blender process baking the shot: its own figures and its whole wall time."""
    t = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", SHOT, str(ROOT / "scripts"), solver, str(strands), mode], env=env,
                         capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t
    if res.returncode != 0:
        raise RuntimeError(res.stdout[-3000:] + res.stderr[-3000:])
    out = json.loads(next(line for line in res.stdout.splitlines() if line.startswith("RESULT "))[7:])
    out["wall"] = wall
    return out


def without_prebuilt(package: Path, out: Path) -> Path:
    """``package`` without its prebuilt kernels."""
    with zipfile.ZipFile(package) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            if not item.filename.startswith("hair_wig/kernels/prebuilt/"):
                dst.writestr(item, src.read(item.filename))
    return out


def main(argv=None) -> int:
    import package as packaging

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--solvers", nargs="+", default=["SPRINGS", "STRANDS", "RODS", "WISPS"])
    p.add_argument("--strands", type=int, default=200)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hair_wig_start_") as tmp:
        tmp = Path(tmp)
        linux = packaging.build(tmp / "packages")["linux-x64"]
        print(f"Linux package: {linux.stat().st_size / 2**20:.1f} MiB "
              f"({sum(n.startswith('hair_wig/kernels/prebuilt/') for n in zipfile.ZipFile(linux).namelist())} "
              f"prebuilt kernel files)", flush=True)
        print(f"{'case':<52}{'wall s':>8}{'bake s':>8}{'enable s':>9}{'compiled':>9}", flush=True)

        def row(case, r):
            print(f"{case:<52}{r['wall']:>8.1f}{r['bake']:>8.1f}{r['enable']:>9.2f}{r['compiled']:>9}", flush=True)

        for i, solver in enumerate(args.solvers):
            env = fresh_install(linux, tmp / f"fresh{i}")
            row(f"fresh install, first bake, {solver}", shot(env, solver, args.strands))
            if i == 0:
                row(f"second session, same profile, {solver}", shot(env, solver, args.strands))
        bare = without_prebuilt(linux, tmp / "bare.zip")
        env = fresh_install(bare, tmp / "bare")
        r = shot(env, args.solvers[0], args.strands)
        row(f"no prebuilt kernels, first bake, {args.solvers[0]}", r)
        env = fresh_install(bare, tmp / "bare_watch")
        r = shot(env, args.solvers[0], args.strands, "watch")
        row(f"no prebuilt, frames set while preparing, then bake", r)
        print(f"Blender held while kernels prepare: longest gap between frames set {r['gap']:.2f} s; "
              f"enabling the add-on {r['enable']:.2f} s; loading one prepared group at most "
              f"{r['load'][0]:.2f} s ({r['load'][1]})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
