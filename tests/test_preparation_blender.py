"""The kernels' background preparation in Blender (real bpy, each case in a Blender process of its
own whose kernel folder lacks some groups): enabling the add-on starts it and returns at once, the
process goes on working while the workers compile, a bake asked for meanwhile waits for the
groups it needs and bakes the same bits as a bake with every kernel ready, and a preparation that
fails or is cancelled says why and leaves bakes working."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT

# the groups taken out of the kernel folder a case starts with (cheap ones: a few seconds to
# compile) and the kernel modules whose compiled code is theirs
TAKEN = {"springs": "springs", "output": "points", "magnets": "magnets"}

CASE = """
import os, signal, sys, time
import numpy as np
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/scripts"]
import addon, bpy, scenes
case = sys.argv[2]
t = time.perf_counter()
package = addon.ensure_registered()
print("REGISTERED", f"{time.perf_counter() - t:.3f}")
preparation, prepare = package.operators.preparation, package.hair_wig.prepare
kernels = package.hair_wig.kernels
compiled = kernels.store.count_compiles(kernels.__name__)
if preparation._prep is not None:
    done, total, _ = preparation.progress(preparation._prep.names)
    print("STARTED", preparation.running(), done < total)


def shot():
    scene, head, ob, pts = scenes.turning_head_hair(60, 6, points=8, length=0.5)
    ob.hair_wig.head = head
    bpy.context.view_layer.objects.active = ob
    return scene, ob


def baked(scene, ob):
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    scene.frame_set(6)
    return scenes.evaluated_positions(ob)


if case == "bake":
    np.save(sys.argv[3], baked(*shot()))
    print("WAITED", compiled.count, prepare.prepared())
elif case == "answers":
    # the process goes on (a frame set, a depsgraph evaluated, Live Dynamics on) while the
    # workers compile; what the live wig needs is not compiled here meanwhile
    scene, ob = shot()
    ob.hair_wig.use_live_dynamics = True
    turns, seen = 0, set()
    while preparation.running():
        scene.frame_set(turns % 6 + 1)
        turns += 1
        seen.add(preparation.progress(preparation._prep.names)[0])
        time.sleep(0.01)
    print("ANSWERED", turns > 20, len(seen) > 1, prepare.prepared(), compiled.count)
elif case == "needs":
    # a layer's groups (and every wig's) loaded: a bake with that layer, head collision and
    # dynamics adds no kernel version (what it calls is all in its groups)
    from numba.core.dispatcher import Dispatcher
    def versions():
        return {(m.__name__.rsplit(".", 1)[-1] + "." + k, s) for m in kernels._modules.values()
                for k, d in vars(m).items() if isinstance(d, Dispatcher) for s in d.signatures}
    scene, ob = shot()
    ob.hair_wig.dynamics_layer = sys.argv[3]
    layer = package.hair_wig.LAYERS[sys.argv[3]]
    list(prepare.warm_up(prepare.needed([layer])))
    before = versions()
    baked(scene, ob)
    print("NEEDS", sorted(k for k, _ in versions() - before))
elif case == "live":
    # Live Dynamics played while the kernels prepare: the groom stays, nothing compiles here;
    # once they are ready the preparation's timer shows the frame played to
    scene, ob = shot()
    rest = np.empty(len(ob.data.points) * 3, np.float32)
    ob.data.attributes["position"].data.foreach_get("vector", rest)
    ob.hair_wig.use_live_dynamics = True
    scene.frame_set(4)
    here = np.empty_like(rest)
    ob.data.attributes["position"].data.foreach_get("vector", here)
    print("PENDING", preparation.running(), np.array_equal(here, rest), compiled.count)
    preparation._prep.wait()
    preparation._watch()
    ob.data.attributes["position"].data.foreach_get("vector", here)
    print("SHOWN", float(np.abs(here - rest).max()) > 0.01, compiled.count)
elif case == "fails":
    os.kill(preparation._prep._procs[0][0].pid, signal.SIGKILL)       # a worker dies (out of memory, killed)
    while preparation.running():
        time.sleep(0.05)
    print("SAID", preparation.status())
    print("BAKED", bool(np.isfinite(baked(*shot())).all()), compiled.count > 0)
elif case == "cancelled":
    assert bpy.ops.hair_wig.prepare_kernels(cancel=True) == {"FINISHED"}
    print("SAID", preparation.running(), preparation.status())
    print("BAKED", bool(np.isfinite(baked(*shot())).all()), compiled.count > 0)
"""


@pytest.fixture
def short_of_some(tmp_path):
    """A kernel folder holding every prepared group but ``TAKEN``'s (copied from the session's)."""
    from hair_wig import kernels, prepare

    root = tmp_path / "kernels"
    folder = root / Path(kernels.PREPARED).relative_to(kernels.ROOT)
    shutil.copytree(kernels.PREPARED, folder)
    for path in folder.iterdir():
        if path.name.split(".")[0] in TAKEN.values() or any(
                path.name == prepare._stamp(g, "generic") for g in TAKEN):
            path.unlink()
    return root


def run(case: str, root, *args) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["HAIR_WIG_KERNEL_CACHE"] = str(root)
    res = subprocess.run([sys.executable, "-c", CASE, str(ROOT), case, *map(str, args)], capture_output=True,
                         text=True, env=env, timeout=600, cwd=root)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in res.stdout.splitlines() if " " in line}


def test_a_bake_asked_for_while_kernels_prepare_waits_and_bakes_the_same_bits(addon, short_of_some, tmp_path):
    import bpy
    import scenes

    said = run("bake", short_of_some, tmp_path / "waited.npy")
    assert said["STARTED"] == "True True", said
    # nothing compiled in Blender's own process: the bake waited for the workers
    assert said["WAITED"] == "0 True", said
    scene, head, ob, _ = scenes.turning_head_hair(60, 6, points=8, length=0.5)
    ob.hair_wig.head = head
    bpy.context.view_layer.objects.active = ob
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    scene.frame_set(6)
    assert np.array_equal(np.load(tmp_path / "waited.npy"), scenes.evaluated_positions(ob))


def test_blender_goes_on_while_kernels_prepare(short_of_some):
    said = run("answers", short_of_some)
    assert said["STARTED"] == "True True", said
    # frames were set while the workers prepared group after group; this process compiled nothing
    assert said["ANSWERED"] == "True True True 0", said


@pytest.mark.parametrize("layer", ["SPRINGS", "STRANDS", "RODS", "WISPS"])
def test_each_layer_needs_no_kernel_outside_its_groups(tmp_path, layer):
    """``prepare.needed``: every kernel a bake of the layer calls is in the groups it waits for."""
    from hair_wig import kernels

    said = run("needs", Path(kernels.ROOT), layer)
    assert said["NEEDS"] == "[]", (layer, said)


def test_live_dynamics_waits_for_the_kernels_and_then_plays(short_of_some):
    said = run("live", short_of_some)
    assert said["PENDING"] == "True True 0", said
    assert said["SHOWN"] == "True 0", said


def test_a_failed_preparation_says_why_and_bakes_still_run(short_of_some):
    said = run("fails", short_of_some)
    assert said["SAID"].startswith("Preparing hair kernels failed: a helper process stopped (exit status -9)"), said
    assert said["SAID"].endswith("A bake compiles what it needs (slower to start)"), said
    assert said["BAKED"] == "True True", said            # compiled here what the dead worker had not


def test_a_cancelled_preparation_says_so_and_bakes_still_run(short_of_some):
    said = run("cancelled", short_of_some)
    assert said["SAID"] == ("False Preparing hair kernels was cancelled: a bake compiles what it needs "
                            "(slower to start)"), said
    assert said["BAKED"] == "True True", said
