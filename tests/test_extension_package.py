"""The manifest passes Blender's own extension validator, tells the truth about the Blender versions
it runs on, and each platform's package holds the add-on, that platform's compiled wheels for both
Blender lines, and nothing else, whatever else lies in the folder — the Linux package also its
kernels, prebuilt for both lines; the Linux package installs into a clean profile through
Blender's own installer, and a new Blender process bakes with its bundled numba compiling
nothing."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import bpy
from conftest import INSTALL_AND_SAVE, ROOT

INSTALL = """
import bpy, sys
import addon_utils  # importable only once bpy is
assert bpy.ops.extensions.package_install_files(
    filepath=sys.argv[1], repo="user_default", enable_on_install=True) == {"FINISHED"}
names = [m for m in bpy.context.preferences.addons.keys() if "hair_wig" in m]
print("ENABLED", names, hasattr(bpy.types.Object, "hair_wig"), "hair_wig.bake" in
      [f"hair_wig.{o}" for o in dir(bpy.ops.hair_wig)])
addon_utils.disable(names[0])
print("DISABLED", hasattr(bpy.types.Object, "hair_wig"), dir(bpy.ops.hair_wig))
"""

# A new Blender process of a clean profile the package was just installed in, its home empty (no
# cache anywhere): the wheels Blender unpacked when it enabled the extension put first on the path
# (before the test environment's own numba, which a Blender installation does not have), the
# add-on enabled, a small shot baked with the solver argv[2]; what it compiled, what it started.
FIRST_BAKE = """
import bpy, os, sys
import addon_utils
local = os.path.join(bpy.utils.user_resource("EXTENSIONS"), ".local", "lib",
                     "python{}.{}".format(*sys.version_info[:2]), "site-packages")
assert os.path.isdir(local) and "numba" not in sys.modules, local
sys.path.insert(0, local)
addon_utils.enable("bl_ext.user_default.hair_wig", default_set=True)
import numba, numpy as np
core = sys.modules["bl_ext.user_default.hair_wig.hair_wig"]
preparation = sys.modules["bl_ext.user_default.hair_wig.operators.preparation"]
compiled = core.kernels.store.count_compiles(core.kernels.__name__)
print("STARTED", preparation._prep is not None, core.prepare.missing())
sys.path.insert(0, sys.argv[1])
import scenes
scene, head, ob, pts = scenes.turning_head_hair(60, 6, points=8, length=0.5, factory=False)
ob.hair_wig.head = head
ob.hair_wig.dynamics_layer = sys.argv[2]
bpy.context.view_layer.objects.active = ob
assert bpy.ops.hair_wig.bake() == {"FINISHED"}
scene.frame_set(6)
print("BAKED", float(np.abs(scenes.evaluated_positions(ob) - pts).max()) > 0.05)
print("COMPILED", compiled.count, compiled.names[:5])
local_cache = core.kernels.LOCAL
print("LOCAL", sorted(os.listdir(local_cache)) if os.path.isdir(local_cache) else [])
print("NUMBA", numba.__file__.startswith(local))
"""

PACKAGES = ("hair_wig", "hair_wig/collision", "hair_wig/kernels", "operators", "panels")

# What a working copy gathers besides the add-on: virtual environments under any name, demo and
# bench output, caches, editor droppings, a .blend left in a package folder, a sub-folder.
STRAYS = (".venv/bin/python", ".venv-5.2/lib/x.py", "venv/lib/site.py", "env311/pyvenv.cfg",
          "demo_out/demo.blend", "demo_output/demo_contact_sheet.png", "bench_output/bench.png",
          "shot.blend", "shot.blend1", "notes.txt", "todo.py", ".DS_Store", ".hypothesis/x",
          "hair_wig/__pycache__/cache.cpython-311.pyc", "hair_wig/cache.pyc", "hair_wig/scratch.blend",
          "hair_wig/kernels/__pycache__/leader.follow_chains-1.py313.nbi", "hair_wig/kernels/notes.txt",
          "operators/.#baking.py", "operators/old/baking.py", "panels/sidebar.py~", "panels/.DS_Store",
          "tests/extra_test.py", "scripts/more.py", "docs/big.png")


def addon_files(root: Path) -> set:
    """The files that make up the add-on: the manifest, the root module, the README and the
    modules of its packages."""
    files = {"blender_manifest.toml", "__init__.py", "README.md"}
    for package in PACKAGES:
        files |= {f"{package}/{p.name}" for p in (root / package).glob("*.py") if not p.name.startswith(".")}
    return files


def build(source: Path, out: Path) -> dict:
    """Each platform's package built from ``source`` (whose ./wheels holds the manifest's wheels)."""
    import package

    return package.build(out, root=source)


def wheels_in(platform: str) -> set:
    """The wheels a platform's package holds: the manifest's for that platform (numba and
    llvmlite, CPython 3.11 and 3.13)."""
    import package

    return {w.removeprefix("./") for w in package.wheels_for([platform])}


def prebuilt_in(names: set) -> set:
    """The package's prebuilt kernels: their stamps' and compiled code's archive names."""
    return {n for n in names if n.startswith("hair_wig/kernels/prebuilt/")}


def test_each_platform_package_holds_the_addon_its_wheels_and_nothing_else(packages):
    """... and the Linux one its kernels prebuilt: every group prepared for both lines' Pythons,
    under the kernels' own name (their sources' digest)."""
    from hair_wig import kernel_home, prepare

    assert sorted(packages) == ["linux-x64", "macos-arm64", "windows-x64"]
    for platform, path in packages.items():
        names = set(zipfile.ZipFile(path).namelist())
        prebuilt = prebuilt_in(names)
        want = addon_files(ROOT) | wheels_in(platform) | prebuilt
        assert names == want, (platform, sorted(names ^ want))
        if platform != "linux-x64":
            assert not prebuilt, platform
            continue
        assert {Path(n).parts[3] for n in prebuilt} == {kernel_home.NAME}
        assert {Path(n).parts[4] for n in prebuilt} == {f"numba-{numba_version_bundled()}"}
        stamps = {Path(n).name for n in prebuilt if n.endswith(".ok")}
        assert stamps == {prepare._stamp(g, "generic").replace(".py" + f"{sys.version_info[0]}{sys.version_info[1]}.", f".{py}.")
                          for g in prepare.GROUPS for py in ("py311", "py313")}, sorted(stamps)
        assert {Path(w).name.split("-")[0] for w in wheels_in(platform)} == {"numba", "llvmlite"}
        assert {Path(w).name.split("-")[2] for w in wheels_in(platform)} == {"cp311", "cp313"}


def test_the_bundled_wheels_are_the_versions_the_suite_runs():
    """The manifest's numba and llvmlite are the ones requirements-<line>.txt pin (the suite
    tests with those), for every platform and both Pythons."""
    import package

    pins = set()
    for req in ROOT.glob("requirements-[0-9]*.txt"):
        text = req.read_text()
        for name in ("numba", "llvmlite"):
            pin = re.search(rf"^{name}==(\S+)$", text, re.M)
            assert pin, f"{req.name} pins no {name}"
            pins.add((name, pin[1]))
    assert len({n for n, _ in pins}) == len(pins) == 2, pins          # one version each, both lines
    bundled = {tuple(Path(w).name.split("-")[:2]) for w in package.manifest()["wheels"]}
    assert bundled == pins, (bundled, pins)


def test_stray_folders_and_files_stay_out_of_the_package(tmp_path, packages):
    source = tmp_path / "hair_wig_checkout"
    source.mkdir()
    for name in addon_files(ROOT):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    for name in STRAYS:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(b"stray " * 1000)
    (source / "wheels").mkdir()
    for wheel in (ROOT / "wheels").glob("*.whl"):              # fetched by the packages fixture
        (source / "wheels" / wheel.name).symlink_to(wheel)
    (source / "wheels" / "numpy-9.9-cp313-cp313-win_amd64.whl").write_bytes(b"stray wheel")
    out = tmp_path / "out"
    out.mkdir()
    for platform, path in build(source, out).items():
        names = set(zipfile.ZipFile(path).namelist())
        want = addon_files(ROOT) | wheels_in(platform) | prebuilt_in(names)
        assert names == want, (platform, sorted(names ^ want))
        assert bool(prebuilt_in(names)) == (platform == "linux-x64"), platform


def oldest_tested_line() -> tuple:
    """(major, minor) of the oldest Blender line the suite runs on: the bpy pinned by the
    requirements file of each line ``./run`` knows."""
    lines = []
    for req in ROOT.glob("requirements-[0-9]*.txt"):
        pin = re.search(r"^bpy==(\d+)\.(\d+)\.", req.read_text(), re.M)
        assert pin, f"{req.name} pins no bpy version"
        lines.append((int(pin[1]), int(pin[2])))
    assert len(lines) >= 2, "./run knows fewer than two Blender lines"
    return min(lines)


def test_manifest_minimum_is_the_oldest_line_the_suite_runs_on():
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
    major, minor = oldest_tested_line()
    assert manifest["blender_version_min"] == f"{major}.{minor}.0"
    assert tuple(bpy.app.version) >= (major, minor, 0)


def test_package_installs_enables_and_disables_as_an_extension(packages, tmp_path):
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path))   # a user folder of its own
    res = subprocess.run([sys.executable, "-c", INSTALL, str(packages["linux-x64"])], capture_output=True,
                         text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    enabled = next(l for l in res.stdout.splitlines() if l.startswith("ENABLED"))
    assert enabled == "ENABLED ['bl_ext.user_default.hair_wig'] True True", enabled
    disabled = next(l for l in res.stdout.splitlines() if l.startswith("DISABLED"))
    assert disabled == "DISABLED False []", disabled


def test_a_first_bake_after_installing_compiles_nothing(packages, tmp_path):
    """The Linux package installed through Blender's own installer into a clean profile, the home
    empty and no kernel cache anywhere; a new Blender process enables it and bakes a small shot
    with the default solver and with Strands: nothing compiles (numba's compile events for the
    core's kernels: none), no preparation starts (the package's prebuilt kernels are all there),
    nothing is written to the add-on's own kernel folder, and the bundled numba is the one used."""
    import package

    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "HAIR_WIG_KERNEL", "XDG_"))}
    env.update(BLENDER_USER_RESOURCES=str(tmp_path / "profile"), HOME=str(home))
    env.pop("PYTHONPATH", None)
    res = subprocess.run([sys.executable, "-c", INSTALL_AND_SAVE, str(packages["linux-x64"])], capture_output=True,
                         text=True, env=env, timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    (version,) = {Path(w).name.split("-")[1] for w in package.wheels_for(["linux-x64"]) if "/numba-" in w}
    for solver in ("SPRINGS", "STRANDS"):
        res = subprocess.run([sys.executable, "-c", FIRST_BAKE, str(ROOT / "scripts"), solver], capture_output=True,
                             text=True, env=env, timeout=600, cwd=tmp_path)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        said = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in res.stdout.splitlines()
                if line.split(" ", 1)[0] in ("STARTED", "BAKED", "COMPILED", "LOCAL", "NUMBA")}
        assert said == {"STARTED": "False []", "BAKED": "True", "COMPILED": "0 []", "LOCAL": "[]", "NUMBA": "True"}, \
            (solver, said, res.stderr[-2000:])
    assert not any(home.rglob("*.nbi")), sorted(home.rglob("*"))
    assert numba_version_bundled() == version


def numba_version_bundled() -> str:
    """The numba version of the wheels in the manifest (one, for every platform)."""
    import package

    (version,) = {Path(w).name.split("-")[1] for w in package.manifest()["wheels"] if "/numba-" in w}
    return version
