"""The core's compiled kernels (numba ``@njit``, ``cache=True``): the per-frame loops over points and
segments, ``prange`` over strands, each strand written only by its own iteration so a result is the
same bit for bit with 1 or N threads (../shared/DESIGN.md, "Hot loops are kernels").

Positions are ``(P, 3)`` arrays, float32 or float64 — a view ``rows.T`` of rows ``(3, P)`` is one
too, so clients that keep rows pass them without a copy — with strands given by their ``offsets``
``(S + 1,)``: strands of any point counts share one kernel. Each kernel is tested against the
plain numpy code it replaces (tests/test_kernels.py).
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


def _cache_folder() -> None:
    """Where compiled kernels are cached: beside this module (``__pycache__``), else in the
    user's cache folder (numba's own order); where neither can be written — an add-on installed
    read-only on a farm node whose home is read-only too — numba refuses to load the module at
    all, so there the system's temporary folder is used (a process compiles again when it is
    emptied). Set ``NUMBA_CACHE_DIR`` to choose."""
    from numba.core import config

    if config.CACHE_DIR:
        return
    here = Path(__file__).resolve().parent
    user = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "numba"
    if _writable(here / "__pycache__") or _writable(user):
        return
    config.CACHE_DIR = os.path.join(tempfile.gettempdir(), "hair_wig_kernels")


_cache_folder()

import numpy as np  # noqa: E402

from .leader import follow_chains  # noqa: E402

__all__ = ["follow_chains", "warm_up", "warmed"]


def _follow_chains_as_called():
    """``follow_chains`` with the argument types refinement passes: float32 rows as ``rows.T``
    views — of whole rows (Fortran-ordered to numba) or of a block of them (strided) — and its
    rest pose the same way (numba compiles one version for each)."""
    offsets, strands = np.array([0, 3], np.int64), np.array([0], np.int64)
    length, none = np.array([0.0, 1.0, 1.0]), np.empty((0, 3))
    rows = np.zeros((3, 6), np.float32)
    rows[2] = (0.0, 0.5, 3.0, 0.0, 0.5, 3.0)
    whole, block = (lambda: rows[:, :3].copy()), (lambda: rows.copy()[:, :3])
    for p in (whole, block):
        for rest in (whole, block):
            follow_chains(p().T, offsets, strands, length, none, rest().T, 0.0, True, 1, 4e-7)


# (what an artist reads while it runs, the call that compiles it as the core calls it)
WARM_UPS = (("follow-the-leader", _follow_chains_as_called),)
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
