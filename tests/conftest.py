import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))              # the numpy core as plain ``hair_wig``
sys.path.insert(0, str(ROOT / "scripts"))  # addon loader and scene builders


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
