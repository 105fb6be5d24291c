"""The kernels' preparation (hair_wig/prepare.py, no bpy): what each wig needs, how the work is
shared out, and worker processes compiling a group for any CPU, then for this one — which a later
process loads in preference where tuning is asked for, compiling nothing."""

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

from hair_wig import LAYERS, kernels, prepare


def test_every_wig_and_each_layer_needs_registered_groups_every_wigs_first():
    for layer in LAYERS.values():
        names = prepare.needed([layer])
        assert names[:len(prepare.EVERY_WIG)] == prepare.EVERY_WIG
        assert set(layer.KERNELS) <= set(names) <= set(prepare.GROUPS), layer.KEY
    assert set(prepare.needed(LAYERS.values())) <= set(prepare.GROUPS)
    # every group is needed by some wig: none is prepared for nothing
    assert set(prepare.needed(LAYERS.values())) == set(prepare.GROUPS)


def test_the_work_is_shared_out_longest_first_to_the_least_loaded_worker():
    order = prepare._default_first()
    assert sorted(order) == sorted(prepare.GROUPS)
    first = set(prepare.needed([next(iter(LAYERS.values()))]))
    assert set(order[:len(first)]) == first                         # the default solver's groups first
    shares = prepare.share(order, 2)
    assert sorted(sum(shares, [])) == sorted(order)
    for share in shares:                                            # each worker keeps the order
        assert share == [n for n in order if n in share]
    load = [sum(prepare.GROUPS[n].seconds for n in s) for s in shares]
    assert max(load) - min(load) <= max(g.seconds for g in prepare.GROUPS.values())
    assert prepare.share(order[:1], 4) == [order[:1]]               # no idle worker started


PREPARE = """
import sys
sys.path.insert(0, sys.argv[1])
from hair_wig import prepare
for cpu in sys.argv[2:]:
    job = prepare.Preparation(["output"], 1, cpu=cpu)
    assert job.wait(), job.error
print("PREPARED", prepare.prepared(["output"], "generic"), prepare.prepared(["output"], "host"))
"""

LOAD = """
import sys
sys.path.insert(0, sys.argv[1])
from hair_wig import kernels, prepare
compiled = kernels.store.count_compiles(kernels.__name__)
list(prepare.warm_up(["output"]))
made_for = {cpu for k in (kernels.points.rows_to_points, kernels.points.rows_copy_to_points) for cpu in k._cache.loaded.values()}
print("LOADED", sorted(made_for), compiled.count, prepare.host_key().split("-")[0])
"""


def _run(code, cache, *args, tuned=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_") and k != "HAIR_WIG_TUNED"}
    env["HAIR_WIG_KERNEL_CACHE"] = str(cache)
    if tuned:
        env["HAIR_WIG_TUNED"] = "1"
    res = subprocess.run([sys.executable, "-c", code, str(ROOT), *args], capture_output=True, text=True, env=env,
                         timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return next(line for line in res.stdout.splitlines() if line.split(" ")[0] in ("PREPARED", "LOADED")).split(" ", 1)[1]


def test_kernels_prepared_for_any_cpu_load_first_and_tuned_ones_where_tuning_is_asked(tmp_path):
    generic, both = tmp_path / "generic", tmp_path / "both"
    assert _run(PREPARE, generic, "generic") == "True False"
    assert _run(PREPARE, both, "generic", "host") == "True True"
    # a process compiling for this CPU loads code made for any CPU, whether or not code tuned for
    # it is there too (which is faster depends on the CPU), and the tuned code where tuning is
    # asked for (HAIR_WIG_TUNED, the preferences' Tune Kernels): nothing compiles either way
    cpu = prepare.host_key().split("-")[0]
    assert _run(LOAD, generic) == f"['generic'] 0 {cpu}"
    assert _run(LOAD, both) == f"['generic'] 0 {cpu}"
    assert _run(LOAD, both, tuned=True) == f"['{cpu}'] 0 {cpu}"
    assert _run(LOAD, generic, tuned=True) == f"['generic'] 0 {cpu}"
    stamps = {p.name for p in (both / Path(kernels.PREPARED).relative_to(kernels.ROOT)).glob("*.ok")}
    assert stamps == {prepare._stamp("output", "generic"), prepare._stamp("output", prepare.host_key())}


def test_the_compiled_code_of_earlier_sources_beside_the_kernels_is_removed(tmp_path):
    """Only beside the kernels (a checkout, an add-on's own folder): there every other name is an
    earlier version of these files. A shared folder is left as it is."""
    beside = Path(kernels.__file__).resolve().parent / "__pycache__"
    old = [beside / "hair_wig_kernels_000000000000", beside / "numba-deadbeef"]
    for folder in old:
        (folder / "local").mkdir(parents=True)
    kept = beside / "leader.cpython-313.pyc.d"            # not ours to remove (any other name)
    kept.mkdir(exist_ok=True)
    try:
        elsewhere = tmp_path / "hair_wig_kernels_000000000000"
        elsewhere.mkdir()
        assert prepare.prune(str(tmp_path)) == [] and elsewhere.is_dir()
        if Path(kernels.ROOT).resolve() == beside.resolve():
            assert prepare.prune() == ["hair_wig_kernels_000000000000", "numba-deadbeef"]
            assert not any(f.exists() for f in old) and kept.is_dir() and Path(kernels.PREPARED).is_dir()
    finally:
        kept.rmdir()
        for folder in old:
            if folder.exists():
                import shutil
                shutil.rmtree(folder)
