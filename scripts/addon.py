"""Load this repository as the hair_wig add-on in a Python that has ``bpy``.

The repository root is the extension package. Blender imports it as ``bl_ext.<repo>.hair_wig``;
scripts and tests import it under :data:`PACKAGE` so that its relative imports (including the
numpy core, ``<package>.hair_wig``) resolve the same way.
"""

import atexit
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


def _unregister_at_exit():
    if PACKAGE in sys.modules and is_registered():
        sys.modules[PACKAGE].unregister()


def ensure_registered():
    """The add-on package, registered; unregistered again when Python exits.

    Blender unregisters add-ons when it quits. The ``bpy`` module does not, and a process that
    exits with the add-on's RNA types still registered hangs in bpy's static destructors
    (measured with bpy 4.5.15: ten minutes in ``GlobalState::~GlobalState``).
    """
    addon = load()
    if not is_registered():
        addon.register()
    atexit.unregister(_unregister_at_exit)
    atexit.register(_unregister_at_exit)
    return addon
