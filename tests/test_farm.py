"""The Flamenco job type (issue 18): farm/hair_wig_bake.js compiled by Node against a *test
harness* (tests/flamenco_harness.js — it implements only the parts of Flamenco's documented
authoring API the job type uses; Flamenco itself cannot run here), then the commands it
recorded run here as Blender would run them, the parts two at a time, the merge after them: the
merged bake equals the one-process bake bit for bit."""

import json
import shutil
import subprocess

import numpy as np
import pytest
from conftest import ROOT
from test_batch import BAKE, blender_command, run
from test_split_blender import _baked, _shot

JOB = ROOT / "farm" / "hair_wig_bake.js"
HARNESS = ROOT / "tests" / "flamenco_harness.js"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js is not installed (the job type's compiler is JavaScript)")


def compile_job(**settings):
    return subprocess.run([NODE, str(HARNESS), str(JOB), json.dumps(settings)], capture_output=True, text=True,
                          timeout=60)


def _settings(tmp_path, **kw):
    s = dict(blendfile=str(tmp_path / "shot.blend"), wigs="Hair:120,Fur:60", split_wigs="Hair", frames="1-16",
             strands_per_task=45, bake_script=str(BAKE), output=str(tmp_path / "farm.blend"),
             parts_dir=str(tmp_path / "parts"))
    s.update(kw)
    return s


def test_the_job_compiles_to_a_task_per_part_and_a_merge_after_them(tmp_path):
    res = compile_job(**_settings(tmp_path))
    assert res.returncode == 0, res.stderr
    job = json.loads(res.stdout)
    tasks = {t["name"]: t for t in job["tasks"]}
    assert list(tasks) == ["bake Hair 0:45", "bake Hair 45:90", "bake Hair 90:120", "bake Fur", "merge"]
    assert tasks["merge"]["dependencies"] == ["bake Hair 0:45", "bake Hair 45:90", "bake Hair 90:120", "bake Fur"]
    assert all(t["type"] == "blender" and not t["dependencies"] for n, t in tasks.items() if n != "merge")
    cmd = tasks["bake Hair 45:90"]["commands"][0]
    assert cmd["name"] == "blender-render" and cmd["parameters"]["exe"] == "{blender}"
    assert cmd["parameters"]["args"] == ["--python", str(BAKE), "--", "--objects", "Hair", "--strands", "45:90",
                                         "--frames", "1", "16", "--part", f"{tmp_path}/parts/Hair_45-90.npz",
                                         "--make-folders"]
    # Issue 34 part 8: without frames, each wig bakes its own range (none is imposed)
    res = compile_job(**_settings(tmp_path, frames=""))
    assert res.returncode == 0, res.stderr
    assert all("--frames" not in t["commands"][0]["parameters"]["args"] for t in json.loads(res.stdout)["tasks"])
    # what cannot be compiled says why
    for bad, message in ((dict(frames="16-1"), "END is before START"), (dict(wigs="Hair"), "NAME:STRANDS"),
                         (dict(strands_per_task=0), "strands_per_task must be above 0")):
        res = compile_job(**_settings(tmp_path, **bad))
        assert res.returncode == 1 and message in res.stderr, res.stderr
    res = compile_job(**{k: v for k, v in _settings(tmp_path).items() if k != "output"})
    assert res.returncode == 2 and 'setting "output" is required' in res.stderr


def test_the_compiled_tasks_run_two_at_a_time_and_merge_into_the_one_process_bake(addon, tmp_path):
    shot = tmp_path / "shot.blend"
    _shot(shot)
    job = json.loads(compile_job(**_settings(tmp_path)).stdout)
    *parts, merge = job["tasks"]

    def start(task):
        p = task["commands"][0]["parameters"]
        assert p["args"][:3] == ["--python", str(BAKE), "--"]
        return subprocess.Popen(blender_command(p["blendfile"], p["args"][1], p["args"][3:]), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    for k in range(0, len(parts), 2):                 # a 2-core worker: two tasks at a time
        procs = [start(t) for t in parts[k:k + 2]]
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
    proc = start(merge)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and "merged Hair (3 parts), Fur (1 parts)" in out, err
    whole = tmp_path / "whole.blend"
    assert run(shot, "--output", whole).returncode == 0
    a, b = _baked(whole), _baked(tmp_path / "farm.blend")
    assert len(a) == 32 and a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _job_evals() -> dict:
    """The job type's settings that Flamenco fills in from the scene: key -> Python expression."""
    code = ("const fs = require('fs'), vm = require('vm'); const c = vm.createContext({author: {}, console});"
            "vm.runInContext(fs.readFileSync(process.argv[1], 'utf8'), c);"
            "process.stdout.write(JSON.stringify(Object.fromEntries("
            "vm.runInContext('JOB_TYPE', c).settings.filter((s) => s.eval).map((s) => [s.key, s.eval]))))")
    res = subprocess.run([NODE, "-e", code, str(JOB)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_the_job_lists_every_wig_of_the_scene_legacy_curves_too(addon):
    """Issue 34 part 8: the wigs Flamenco's submission reads from the scene include legacy
    ``Curve`` wigs (they were left out), with their strand counts; and no frame range is imposed
    on the wigs unless one is asked for."""
    import bpy
    import scenes
    bpy.ops.wm.read_factory_settings(use_empty=True)
    pts, counts = scenes.straight_strands(12, 5)
    hair = scenes.curves_hair("Hair", pts, counts)
    old = scenes.legacy_hair("Old", pts, counts)
    off = scenes.curves_hair("Off", pts, counts)
    hair.hair_wig.enabled = old.hair_wig.enabled = True
    off.hair_wig.enabled = False
    evals = _job_evals()
    assert "frames" not in evals
    got = eval(evals["wigs"], {"C": bpy.context, "bpy": bpy})
    assert sorted(got.split(",")) == ["Hair:12", "Old:12"]
    assert eval(evals["split_wigs"], {"C": bpy.context, "bpy": bpy}) == "Hair"


# A farm worker as `blender -b shot.blend --python-expr EXPR -- ARGS` runs it with the bpy module:
# Blender reads the user's preferences at start and enables their add-ons (the installed
# extension among them), opens the file, then runs EXPR with its own command line in sys.argv.
# Nothing of the repository is on the path: the worker has only the installed extension.
WORKER = """
import sys, bpy, addon_utils
bpy.ops.wm.read_userpref()
for name in list(bpy.context.preferences.addons.keys()):
    if name.startswith("bl_ext."):
        addon_utils.enable(name, default_set=False)
blend, expr, args = sys.argv[1], sys.argv[2], sys.argv[3:]
bpy.ops.wm.open_mainfile(filepath=blend)
sys.argv = ["blender", "--background", blend, "--python-expr", expr, "--", *args]
assert not any("hair_wig_addon" in m for m in sys.modules)
exec(expr)
"""



def test_a_farm_with_only_the_installed_extension_bakes_the_job(addon, installed_extension, tmp_path):
    """Issue 34 part 7: the extension built by Blender's own tool and installed into a clean
    profile; the job compiled with no bake script runs the extension's own baker on each worker
    (`--python-expr`, the repository nowhere on the path): parts, then the merge, as the README
    says — and the merged bake equals a one-process bake bit for bit. (With bake.py and addon.py
    copied to storage it failed with FileNotFoundError, with bake.py alone ModuleNotFoundError.)"""
    import os
    import sys

    from hair_wig_addon.operators import batch

    # a clean profile with the extension Blender's own tool built (numba and llvmlite bundled,
    # scripts/package.py) installed and enabled by Blender's installer (conftest)
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(installed_extension))
    env.pop("PYTHONPATH", None)
    shot = tmp_path / "shot.blend"
    _shot(shot)
    job = json.loads(compile_job(**_settings(tmp_path, bake_script="", strands_per_task=60)).stdout)
    *parts, merge = job["tasks"]
    for task in parts + [merge]:
        p = task["commands"][0]["parameters"]
        assert p["args"][:3] == ["--python-expr", batch.COMMAND, "--"], p["args"][:3]
        res = subprocess.run([sys.executable, "-c", WORKER, p["blendfile"], p["args"][1], *p["args"][3:]],
                             capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
        assert res.returncode == 0, (task["name"], res.stdout[-2000:], res.stderr[-2000:])
    assert "merged Hair (2 parts), Fur (1 parts)" in res.stdout, res.stdout
    whole = tmp_path / "whole.blend"
    assert run(shot, "--output", whole).returncode == 0
    a, b = _baked(whole), _baked(tmp_path / "farm.blend")
    assert len(a) == 32 and a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
