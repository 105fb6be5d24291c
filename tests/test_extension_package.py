"""The manifest passes Blender's own extension validator, tells the truth about the Blender versions
it runs on, and the built package holds the add-on and nothing else, whatever else lies in the
folder."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import bpy
import pytest
from conftest import ROOT

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

PACKAGES = ("hair_wig", "operators", "panels")

# What a working copy gathers besides the add-on: virtual environments under any name, demo and
# bench output, caches, editor droppings, a .blend left in a package folder, a sub-folder.
STRAYS = (".venv/bin/python", ".venv-5.2/lib/x.py", "venv/lib/site.py", "env311/pyvenv.cfg",
          "demo_out/demo.blend", "demo_output/demo_contact_sheet.png", "bench_output/bench.png",
          "shot.blend", "shot.blend1", "notes.txt", "todo.py", ".DS_Store", ".hypothesis/x",
          "hair_wig/__pycache__/cache.cpython-311.pyc", "hair_wig/cache.pyc", "hair_wig/scratch.blend",
          "operators/.#baking.py", "operators/old/baking.py", "panels/sidebar.py~", "panels/.DS_Store",
          "tests/extra_test.py", "scripts/more.py", "docs/big.png")


def blender_ext() -> Path:
    path = Path(bpy.utils.system_resource("SCRIPTS")) / "addons_core/bl_pkg/cli/blender_ext.py"
    assert path.is_file(), f"bpy ships no extension command-line tool at {path}"
    return path


def addon_files(root: Path) -> set:
    """The files that make up the add-on: the manifest, the root module, the README and the
    modules of its packages."""
    files = {"blender_manifest.toml", "__init__.py", "README.md"}
    for package in PACKAGES:
        files |= {f"{package}/{p.name}" for p in (root / package).glob("*.py") if not p.name.startswith(".")}
    return files


def build(source: Path, out: Path) -> Path:
    ext = blender_ext()
    res = subprocess.run([sys.executable, str(ext), "validate", str(source)], capture_output=True, text=True)
    assert res.returncode == 0 and "Success" in res.stdout, res.stdout + res.stderr
    res = subprocess.run([sys.executable, str(ext), "build", "--source-dir", str(source),
                          "--output-dir", str(out)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    (zipped,) = out.glob("hair_wig-*.zip")
    return zipped


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    return build(ROOT, tmp_path_factory.mktemp("build"))


def test_package_holds_the_addon_and_nothing_else(package):
    names = set(zipfile.ZipFile(package).namelist())
    assert names == addon_files(ROOT), sorted(names ^ addon_files(ROOT))


def test_stray_folders_and_files_stay_out_of_the_package(tmp_path):
    source = tmp_path / "hair_wig_checkout"
    source.mkdir()
    for name in addon_files(ROOT):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    for name in STRAYS:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(b"stray " * 1000)
    out = tmp_path / "out"
    out.mkdir()
    names = set(zipfile.ZipFile(build(source, out)).namelist())
    assert names == addon_files(ROOT), sorted(names ^ addon_files(ROOT))


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


def test_package_installs_enables_and_disables_as_an_extension(package, tmp_path):
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path))   # a user folder of its own
    res = subprocess.run([sys.executable, "-c", INSTALL, str(package)], capture_output=True,
                         text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    enabled = next(l for l in res.stdout.splitlines() if l.startswith("ENABLED"))
    assert enabled == "ENABLED ['bl_ext.user_default.hair_wig'] True True", enabled
    disabled = next(l for l in res.stdout.splitlines() if l.startswith("DISABLED"))
    assert disabled == "DISABLED False []", disabled
