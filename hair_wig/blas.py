"""numpy's BLAS kept on the calling thread while hair is computed.

numpy hands a large product (a frame's ``matrix @ rows`` over every point) to OpenBLAS, which
splits it over worker threads; those workers then spin, waiting for more work, for about a tenth
of a second before they sleep (OpenBLAS's thread timeout). The kernels launched next want the same
cores: measured on this project's 2-core machine, the collision walk of a 5000 × 16 Springs bake
took 90 ms a frame right after the frame's numpy passes against 50 ms when launched again at once,
and the whole frame 131 → 73 ms with numpy's BLAS on one thread (``OPENBLAS_NUM_THREADS=1``).
The per-frame products are small enough (3 × 3 by 3 × P) that one thread loses nothing on them.

``one_thread`` sets every OpenBLAS the process has loaded to one thread for the time hair is
computed and gives back the count it found afterwards, so an artist's own scripts in the same
Blender keep numpy as they had it. Where no OpenBLAS can be found (another BLAS, or a build without
one) it does nothing.
"""

import ctypes
import functools
import glob
import os
import sys
import threading

# the names OpenBLAS builds export their thread functions by: numpy 2's wheels (scipy-openblas,
# 64-bit integers), numpy 1.26's (openblas64_), and a plain build
_PREFIXES = ("scipy_openblas", "openblas")
_SUFFIXES = ("64_", "_64_", "")

_lock = threading.Lock()
_depth = 0
_saved: list[int] = []
_found = None


def _loaded_paths() -> list[str]:
    """Files of the OpenBLAS libraries this process may have loaded: on Linux those it has mapped,
    elsewhere those numpy's wheel ships beside it."""
    paths = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(" ", 5)[-1].strip()
                if "openblas" in os.path.basename(path).lower() and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    if paths:
        return paths
    try:
        import numpy
    except ImportError:
        return []
    here = os.path.dirname(numpy.__file__)
    for folder in (os.path.join(here, ".dylibs"), os.path.join(os.path.dirname(here), "numpy.libs"),
                   os.path.join(here, "..", "numpy.libs")):
        paths += [p for p in glob.glob(os.path.join(folder, "*openblas*")) if p not in paths]
    return paths


def _functions(path: str):
    """(get, set) of the OpenBLAS at ``path``, or None."""
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None
    for prefix in _PREFIXES:
        for suffix in _SUFFIXES:
            get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            if get is not None and put is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                put.restype, put.argtypes = None, [ctypes.c_int]
                return get, put
    return None


def libraries() -> list:
    """(get, set) thread functions of each OpenBLAS found (looked for once)."""
    global _found
    if _found is None:
        found = []
        if sys.platform != "emscripten":
            for path in _loaded_paths():
                pair = _functions(path)
                if pair is not None:
                    found.append(pair)
        _found = found
    return _found


def threads() -> list[int]:
    """Each OpenBLAS's thread count now."""
    return [get() for get, _ in libraries()]


def _enter() -> None:
    global _depth, _saved
    with _lock:
        if _depth == 0:
            pairs = libraries()
            _saved = [get() for get, _ in pairs]
            for _, put in pairs:
                put(1)
        _depth += 1


def _leave() -> None:
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0:
            for (_, put), n in zip(libraries(), _saved):
                put(n)


class _OneThread:
    """Context manager and decorator: numpy's BLAS on one thread inside (nested and from several
    threads alike: the count is given back when the last one leaves)."""

    def __enter__(self):
        _enter()
        return self

    def __exit__(self, *exc):
        _leave()
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def wrapped(*args, **kwargs):
            _enter()
            try:
                return function(*args, **kwargs)
            finally:
                _leave()

        return wrapped


one_thread = _OneThread()
