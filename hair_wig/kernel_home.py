"""The core's kernels (``hair_wig/kernels``) imported under a name made of their sources' digest,
``hair_wig_kernels_<digest>``, and seen by the core as its ``kernels`` package.

numba's compiled code names the module it was compiled in and imports that module by name when
it loads (its environment; measured: a batch bake loading code compiled as ``hair_wig.kernels``
failed with "No module named 'hair_wig'"). The core is imported under many names — ``hair_wig``
by its tests, ``bl_ext.<repository>.hair_wig.hair_wig`` by Blender, another by the scripts — so
the kernels take one name that depends only on what they are: code compiled anywhere from the
same sources loads everywhere (a package's prebuilt kernels, the background preparation's, the
test session's), and two copies of the core in one process share one set of compiled kernels.
Different sources get a different name, so code compiled from them is never mistaken for it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "kernels"


def digest() -> str:
    """12 hex digits of the SHA-256 of the kernel modules' names and contents."""
    h = hashlib.sha256()
    for path in sorted(FOLDER.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


NAME = f"hair_wig_kernels_{digest()}"


def adopt(core: str):
    """Import the kernels as ``NAME`` (once a process) and make them ``<core>.kernels``, their
    modules ``<core>.kernels.<module>``, for the core package named ``core``. Returns them."""
    if NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(NAME, FOLDER / "__init__.py",
                                                      submodule_search_locations=[str(FOLDER)])
        package = importlib.util.module_from_spec(spec)
        sys.modules[NAME] = package
        try:
            spec.loader.exec_module(package)
        except BaseException:
            for name in [n for n in sys.modules if n == NAME or n.startswith(NAME + ".")]:
                del sys.modules[name]
            raise
    package = sys.modules[NAME]
    sys.modules[f"{core}.kernels"] = package
    for name, module in list(sys.modules.items()):
        if name.startswith(NAME + "."):
            sys.modules[f"{core}.kernels.{name[len(NAME) + 1:]}"] = module
    setattr(sys.modules[core], "kernels", package)
    return package
