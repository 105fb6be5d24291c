"""The core's compiled kernels (numba ``@njit``, ``cache=True``): the per-frame loops over points and
segments, ``prange`` over strands, each strand written only by its own iteration so a result is the
same bit for bit with 1 or N threads (../shared/DESIGN.md, "Hot loops are kernels").

Positions are ``(P, 3)`` arrays, float32 or float64 — a view ``rows.T`` of rows ``(3, P)`` is one
too, so clients that keep rows pass them without a copy — with each strand's points addressed by
its first row, its count and a step (``strand_major`` from offsets, ``point_major`` for groups
``(3, n, S)``): strands of any point counts share one kernel. Each kernel is tested against the
plain numpy code it replaces (tests/test_kernels.py).
"""

import hashlib
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


def _cache_folder() -> str:
    """Where this package's compiled kernels are cached: a folder of its own for the name it is
    imported under, beside it (``__pycache__/numba-<name's hash>``), else in the user's cache
    folder, else — both read-only: an add-on installed read-only on a farm node whose home is
    read-only too, where numba alone refuses to load the module — in the system's temporary
    folder (a process then compiles again when that is emptied); under ``NUMBA_CACHE_DIR`` when
    it is set.

    Per name because numba's cached code names the module it was compiled in and imports it
    again to load: the same files imported as ``hair_wig`` (the core's tests) and as the add-on
    (``bl_ext.….hair_wig``, or the scripts' ``hair_wig_addon.hair_wig``) must not share a cache —
    measured: a batch bake loading the core tests' cache failed with "No module named 'hair_wig'".
    The name is hashed to 8 characters: numba adds a folder of 48 and file names of 30 under it,
    and Windows refuses paths over 260."""
    from numba.core import config

    tag = "numba-" + hashlib.sha1(__name__.encode()).hexdigest()[:8]
    if config.CACHE_DIR:
        return os.path.join(config.CACHE_DIR, tag)
    folders = [Path(__file__).resolve().parent / "__pycache__" / tag]
    user = _user_cache()
    if user is not None:
        folders.append(user / "hair_wig" / tag)
    for folder in folders:
        if _writable(folder):
            return str(folder)
    return os.path.join(tempfile.gettempdir(), "hair_wig_kernels", tag)


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


# The kernel modules besides follow-the-leader, in the order they warm up: each has its
# ``WARM_UPS`` (what an artist reads while it runs, the call that compiles it as the core calls it)
MODULES = ("field", "walk", "compression", "contacts", "pairs", "volume", "rods", "verlet", "springs", "magnets", "points",
           "chain", "fields", "scalp", "wisps")


def _import_kernels():
    """Import the kernel modules with numba caching into ``_cache_folder()``: a kernel's cache
    folder is fixed when it is decorated, and the setting is numba's one for the whole process
    (other add-ons' kernels keep theirs). Returns them, follow-the-leader's first."""
    import importlib

    from numba.core import config

    was = config.CACHE_DIR
    config.CACHE_DIR = _cache_folder()
    try:
        return [importlib.import_module(f"{__name__}.{name}") for name in ("leader",) + MODULES]
    finally:
        config.CACHE_DIR = was


_leader, *_modules = _import_kernels()
follow_chains, strand_major, point_major = _leader.follow_chains, _leader.strand_major, _leader.point_major
from .rods import rod_angles, rod_build, rod_moments, rod_substeps  # noqa: E402  (imported above)
from .verlet import verlet_substeps  # noqa: E402  (imported above)
from .springs import spring_follow  # noqa: E402  (imported above)
from .magnets import magnet_blend  # noqa: E402  (imported above)
from .points import rows_copy_to_points, rows_to_points  # noqa: E402  (imported above)
from .fields import field_accel  # noqa: E402  (imported above)
from .scalp import scalp_carry  # noqa: E402  (imported above)

import numpy as np  # noqa: E402

__all__ = ["field_accel", "follow_chains", "magnet_blend", "point_major", "rod_angles", "rod_build", "rod_moments", "rod_substeps", "rows_copy_to_points",
           "rows_to_points", "scalp_carry", "spring_follow", "strand_major", "verlet_substeps", "warm_up", "warmed"]


def _follow_chains_as_called():
    """``follow_chains`` with the argument types refinement passes (numba compiles one version
    for each): float32 rows as ``rows.T`` views — of whole rows (Fortran-ordered to numba) or of
    a block of them (strided) — and its rest pose the same way."""
    chains, strands = strand_major(np.array([0, 3])), np.array([0], np.int64)
    length, none = np.array([0.0, 1.0, 1.0]), np.empty((0, 3))
    rows = np.zeros((3, 6), np.float32)
    rows[2] = (0.0, 0.5, 3.0, 0.0, 0.5, 3.0)
    whole, block = (lambda: rows[:, :3].copy()), (lambda: rows.copy()[:, :3])
    for p in (whole, block):
        for rest in (whole, block):
            follow_chains(p().T, *chains, strands, length, none, rest().T, 0.0, True, 1, 4e-7)


# (what an artist reads while it runs, the call that compiles it as the core calls it)
WARM_UPS = (("follow-the-leader", _follow_chains_as_called),) + sum((m.WARM_UPS for m in _modules), ())
_warmed = False


def warmed() -> bool:
    """Whether this process has its kernels ready (``warm_up`` ran to its end)."""
    return _warmed


def warm_up():
    """Compile every kernel for the argument types the core passes — or, after the first time on
    this machine, load them from numba's cache — one at a time, yielding ``(done, total, name)``
    after each, so a caller can show progress between them; a bake after it compiles nothing."""
    global _warmed
    for done, (name, call) in enumerate(WARM_UPS, 1):
        call()
        yield done, len(WARM_UPS), name
    _warmed = True
