"""Load this repository as the hair_wig add-on in a Python that has ``bpy``.

The repository root is the extension package. Blender imports it as ``bl_ext.<repo>.hair_wig``;
scripts and tests import it under :data:`PACKAGE` so that its relative imports (including the
numpy core, ``<package>.hair_wig``) resolve the same way.
"""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "hair_wig_addon"


def load():
    """The add-on package (imported once, not registered)."""
    if PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            PACKAGE, ROOT / "__init__.py", submodule_search_locations=[str(ROOT)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = module
        spec.loader.exec_module(module)
    return sys.modules[PACKAGE]


def is_registered() -> bool:
    import bpy

    return hasattr(bpy.types.Object, "hair_wig")


def ensure_registered():
    """The add-on package, registered."""
    addon = load()
    if not is_registered():
        addon.register()
    return addon
