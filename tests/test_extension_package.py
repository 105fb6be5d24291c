"""The manifest passes Blender's own extension validator and the built package holds the add-on
and nothing of the development tree."""

import os
import subprocess
import sys
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


def blender_ext() -> Path:
    path = Path(bpy.utils.system_resource("SCRIPTS")) / "addons_core/bl_pkg/cli/blender_ext.py"
    assert path.is_file(), f"bpy ships no extension command-line tool at {path}"
    return path


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    ext = blender_ext()
    out = tmp_path_factory.mktemp("build")
    res = subprocess.run([sys.executable, str(ext), "validate", str(ROOT)], capture_output=True, text=True)
    assert res.returncode == 0 and "Success" in res.stdout, res.stdout + res.stderr
    res = subprocess.run([sys.executable, str(ext), "build", "--source-dir", str(ROOT),
                          "--output-dir", str(out)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    (zipped,) = out.glob("hair_wig-*.zip")
    return zipped


def test_manifest_validates_and_package_leaves_out_dev_files(package):
    names = zipfile.ZipFile(package).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"__init__.py", "blender_manifest.toml", "README.md", "hair_wig", "operators", "panels"}, tops
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_package_installs_enables_and_disables_as_an_extension(package, tmp_path):
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path))   # a user folder of its own
    res = subprocess.run([sys.executable, "-c", INSTALL, str(package)], capture_output=True,
                         text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    enabled = next(l for l in res.stdout.splitlines() if l.startswith("ENABLED"))
    assert enabled == "ENABLED ['bl_ext.user_default.hair_wig'] True True", enabled
    disabled = next(l for l in res.stdout.splitlines() if l.startswith("DISABLED"))
    assert disabled == "DISABLED False []", disabled
