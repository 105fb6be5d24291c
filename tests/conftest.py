import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))              # the numpy core as plain ``hair_wig``
sys.path.insert(0, str(ROOT / "scripts"))  # addon loader and scene builders


def pytest_sessionstart(session):
    """The kernels prepared once, before any test, as the add-on prepares them (in worker
    processes, one a core, for any CPU): every process of the session — this one, the Blender
    processes the tests start, the package's build — then loads them instead of compiling."""
    if hasattr(session.config, "workerinput"):
        return                   # a worker of pytest-xdist: the controlling process prepared them
    import prepare_kernels

    if not prepare_kernels.run(out=sys.__stderr__):
        raise pytest.UsageError("the kernels could not be prepared (see above)")


@pytest.fixture(scope="session")
def addon():
    """The add-on package, registered in this process's Blender (real bpy)."""
    import addon as loader

    return loader.ensure_registered()


@pytest.fixture
def scene(addon):
    """An empty factory-fresh scene with hair_wig registered."""
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    return bpy.context.scene


@pytest.fixture(scope="session")
def packages(tmp_path_factory):
    """The extension packages as ``./run package`` builds them (scripts/package.py: the wheels
    fetched into ./wheels, Blender's own tool, one .zip a platform), built once a session."""
    import package

    return package.build(tmp_path_factory.mktemp("packages"))


# Blender's own installer puts the package into the profile's user repository, enabled, and the
# preferences are saved so a later Blender of that profile (a farm worker) enables it at start.
INSTALL_AND_SAVE = """
import bpy, sys
assert bpy.ops.extensions.package_install_files(
    filepath=sys.argv[1], repo="user_default", enable_on_install=True) == {"FINISHED"}
bpy.ops.wm.save_userpref()
"""


@pytest.fixture(scope="session")
def installed_extension(packages, tmp_path_factory):
    """A clean Blender user profile (its folder) with the Linux package installed through Blender's
    own installer, enabled in its saved preferences — one a session, shared by the tests that run
    the installed extension (its kernels come prebuilt with the package)."""
    import os
    import subprocess

    profile = tmp_path_factory.mktemp("profile")
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(profile))
    env.pop("PYTHONPATH", None)
    res = subprocess.run([sys.executable, "-c", INSTALL_AND_SAVE, str(packages["linux-x64"])], capture_output=True,
                         text=True, env=env, timeout=300, cwd=profile)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return profile
