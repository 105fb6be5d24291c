"""Batch bake of hair_wig wigs from a checkout of the repository, for render farms and pipelines.
The baker itself ships in the extension (``operators/batch.py``; a farm node with the extension
installed runs it with ``blender -b FILE --python-expr``, README "Batch baking"); this script
loads the repository's add-on and runs the same baker:

    ./run python scripts/bake.py FILE.blend [--objects NAME ...] [--frames START END] [--output OUT.blend]
    blender --background FILE.blend --python scripts/bake.py -- [--objects ...] [--frames ...] [--output ...]

Split bakes (a part of one object's strands into a part file, then the merge):

    ./run python scripts/bake.py FILE.blend --objects Hair --strands 0:25000 --part hair_0.npz
    ./run python scripts/bake.py FILE.blend --merge hair_*.npz [--output OUT.blend]

``python scripts/bake.py --help`` (in a Python with ``bpy``) lists every option.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def baker():
    """The extension's batch module, from this repository's add-on (registered)."""
    import addon
    from importlib import import_module

    addon.ensure_registered()
    return import_module(f"{addon.PACKAGE}.operators.batch")


if __name__ == "__main__":
    try:
        import bpy  # noqa: F401  (Blender as a module, or Blender itself)
    except ImportError:
        print("bake.py: error: this Python has no bpy (Blender as a module); run ./run python scripts/bake.py "
              "FILE.blend ... (the project's environment), or Blender itself: blender --background "
              "FILE.blend --python scripts/bake.py -- ...", file=sys.stderr, flush=True)
        sys.exit(1)
    batch = baker()
    batch.end(batch.main())
