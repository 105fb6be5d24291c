"""The core's compiled kernels (numba ``@njit``, ``cache=True``): the per-frame loops over points and
segments, ``prange`` over strands, each strand written only by its own iteration so a result is the
same bit for bit with 1 or N threads (../shared/DESIGN.md, "Hot loops are kernels").

Positions are ``(P, 3)`` arrays, float32 or float64 — a view ``rows.T`` of rows ``(3, P)`` is one
too, so clients that keep rows pass them without a copy — with each strand's points addressed by
its first row, its count and a step (``strand_major`` from offsets, ``point_major`` for groups
``(3, n, S)``): strands of any point counts share one kernel. Each kernel is tested against the
plain numpy code it replaces (tests/test_kernels.py).

This package is a leaf: it imports nothing of the core, and the core imports it under a name of
its content's (``hair_wig.kernel_home``), so its compiled code — kept by ``store`` — serves every
copy of the same sources: the core's tests, the add-on, an installed extension, a package's build.
"""

import os
import tempfile
from pathlib import Path


def _writable(folder: Path) -> bool:
    """Whether a file can be made in ``folder`` (made if missing), as numba tests its cache
    folders: by making one, not by the permission bits (root ignores those)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def _user_cache() -> Path | None:
    """The user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``), or None where there is no
    home to find (a farm container's user missing from its passwd file)."""
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"])
    home = os.path.expanduser("~")
    return None if home == "~" else Path(home) / ".cache"


def _cache_root() -> Path:
    """The folder the kernels' compiled code is kept under: ``$HAIR_WIG_KERNEL_CACHE`` when set (a
    farm may point every node at one shared folder), else numba's ``NUMBA_CACHE_DIR``, else beside this package
    (``__pycache__``), else in the user's cache folder, else — both read-only: an add-on
    installed read-only on a farm node whose home is read-only too — in the system's temporary
    folder (a process then compiles again when that is emptied)."""
    from numba.core import config

    for given in (os.environ.get("HAIR_WIG_KERNEL_CACHE"), config.CACHE_DIR):
        if given:
            return Path(given)
    folders = [Path(__file__).resolve().parent / "__pycache__"]
    user = _user_cache()
    if user is not None:
        folders.append(user / "hair_wig")
    for folder in folders:
        if _writable(folder):
            return folder
    return Path(tempfile.gettempdir()) / "hair_wig_kernels"


def _numba_version() -> str:
    import numba

    return f"numba-{numba.__version__}"


# The folders of this package's compiled code, named by the package's own name, which carries a
# digest of its sources (``hair_wig.kernel_home``): code compiled from other sources is never in
# them; and by numba's version: another numba's data files, whose names its index reuses, are
# never read. LOCAL: what this process compiles; PREPARED: what the background preparation
# compiled; PREBUILT: what a platform package carries, read-only.
ROOT = str(_cache_root())
_FOLDER = Path(ROOT) / __name__ / _numba_version()
LOCAL, PREPARED = str(_FOLDER / "local"), str(_FOLDER / "prepared")
PREBUILT = str(Path(__file__).resolve().parent / "prebuilt" / __name__ / _numba_version())
# a preparation's worker saves where the preparation's results are looked for
_SAVE = PREPARED if os.environ.get("HAIR_WIG_PREPARING") else LOCAL


def _safe_layer_loads() -> bool:
    """Whether numba's tbb or OpenMP layer loads here (a numba wheel may lack one, or the system
    the library it needs: the macOS wheel's OpenMP layer wants a libomp it does not ship). Where
    neither does numba's own fallback stays, rather than no layer at all."""
    import importlib

    for name in ("numba.np.ufunc.tbbpool", "numba.np.ufunc.omppool"):
        try:
            importlib.import_module(name)
            return True
        except (ImportError, OSError):
            continue
    return False


def _threading_layer() -> None:
    """A threading layer that may be entered from several threads at once (tbb — which Blender
    ships and loads — or OpenMP): kernels may be launched from more than one thread (a bake and
    the viewport's preview handler, a caller's own pool), and numba's fallback layer (workqueue)
    aborts the process when used so. Set
    ``NUMBA_THREADING_LAYER`` (and ``OMP_WAIT_POLICY``) to choose."""
    from numba.core import config

    if config.THREADING_LAYER == "default" and _safe_layer_loads():
        config.THREADING_LAYER = "threadsafe"
    # OpenMP's threads otherwise spin for a while after each kernel, on the cores the numpy passes
    # between kernels need: measured with follow_chains inside the Strands layer's substeps (10k x
    # 16, no bpy), a frame took 291 ms against 210 with one thread, 236 passive (read when OpenMP
    # starts, at the first parallel kernel)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


_threading_layer()


# every module of this folder but this one and the store: a new kernel module needs no list
_NAMES = sorted(p.stem for p in Path(__file__).resolve().parent.glob("[!_.]*.py") if p.stem != "store")


def _import_kernels():
    """Import the kernel modules, each kernel's numba cache a ``store.KernelCache`` saving to
    ``_SAVE`` (numba chooses a kernel's cache when it is decorated: its locator is ours for the
    import, a setting of numba's for the whole process that other add-ons' kernels keep)."""
    import importlib

    from numba.core import config

    from . import store

    was = config.CACHE_LOCATOR_CLASSES
    store._Locator.folder = _SAVE
    config.CACHE_LOCATOR_CLASSES = f"{store.__name__}._Locator"
    try:
        modules = {name: importlib.import_module(f"{__name__}.{name}") for name in _NAMES}
    finally:
        config.CACHE_LOCATOR_CLASSES = was
    more = tuple(f for f in (PREPARED, PREBUILT) if f != _SAVE)
    for module in modules.values():
        store.adopt(module, _SAVE, more, any_cpu=_SAVE != PREPARED, strict=_SAVE == PREPARED)
    return modules


_modules = _import_kernels()
from . import store  # noqa: E402  (imported above)
from .leader import follow_chains, point_major, strand_major  # noqa: E402  (imported above)
from .rods import rod_angles, rod_build, rod_moments, rod_substeps  # noqa: E402  (imported above)
from .verlet import verlet_substeps, verlet_substeps_met  # noqa: E402  (imported above)
from .springs import spring_follow  # noqa: E402  (imported above)
from .magnets import magnet_blend  # noqa: E402  (imported above)
from .points import rows_copy_to_points, rows_to_points  # noqa: E402  (imported above)
from .fields import field_accel  # noqa: E402  (imported above)
from .scalp import scalp_carry  # noqa: E402  (imported above)

__all__ = ["field_accel", "follow_chains", "magnet_blend", "point_major", "rod_angles", "rod_build", "rod_moments", "rod_substeps", "rows_copy_to_points",
           "rows_to_points", "scalp_carry", "spring_follow", "store", "strand_major", "verlet_substeps",
           "verlet_substeps_met"]

# (what an artist reads while it runs, the call that compiles it as the core calls it), of the
# kernel modules that need nothing of the core to call them; ``hair_wig.prepare`` adds the others
WARM_UPS = sum((m.WARM_UPS for m in _modules.values() if hasattr(m, "WARM_UPS")), ())
