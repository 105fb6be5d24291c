"""Where the kernels' compiled code is kept and found, so that it is compiled once — by a
background preparation or a package's build — and loaded everywhere after.

numba's own cache (``cache=True``) is kept, with three changes made by :class:`KernelCache`, which
replaces the cache of every kernel of this package once it is imported:

* **Folders that do not depend on where the source is.** numba names a cache folder after the
  hash of the source's path; here every kernel of a package goes to one folder the package names
  (its content's digest is in the package's module name, ``hair_wig_kernels_<digest>``), so a
  cache built in one place — a package's build, another checkout — loads in another.
* **Several folders, one written.** A kernel is looked up in the process's own folder, then in
  the read-only ones (the background preparation's, the package's prebuilt kernels), and saved
  only to its own. Saving holds a lock on the folder: a preparation runs several processes
  that may compile the same helper at once, and numba's index is read, changed and written back.
* **Code made for any CPU of the platform loads first.** numba keys compiled code by the CPU it
  was made for (name and features). Code compiled with ``NUMBA_CPU_NAME=generic`` (the
  platform's baseline instructions: SSE2 on x86-64) runs on every CPU of its platform, so it is
  taken before code made for this CPU, which is taken where no such code is kept (numba's
  developer notes, *Cache sharing*) — or first, where tuning is asked for (``TUNED``). numba's
  index checks the source by its content (a SHA-256 of the file), not its time, so an extracted
  zip's fresh file times do not invalidate it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import sys
import time

from numba.core import caching, event
from numba.core.dispatcher import Dispatcher

GENERIC = "generic"
# Whether a process loads code made for this very CPU before code made for any CPU of the
# platform, where both are kept (an artist's "Tune Kernels for This Computer"; for scripts and
# farms ``HAIR_WIG_TUNED=1``). Not by default: which is faster depends on the CPU. On this
# project's AMD EPYC (Zen 4) machine code tuned for it ran a 5000 x 16 Springs bake's frame at
# 80 ms against 57.5 for code made for any x86-64 (the collision walk 46 against 29 ms), Strands
# at 113 against 85; on the Intel machine measured before, tuned code was up to 14 % faster.
TUNED = os.environ.get("HAIR_WIG_TUNED", "") == "1"


def cpu_key() -> str:
    """What the code this process compiles is made for: ``generic`` (any CPU of the platform), or
    this CPU's name and a digest of its features, as numba keys compiled code."""
    from numba.core.registry import cpu_target

    _, name, features = cpu_target.target_context.codegen().magic_tuple()
    if name == GENERIC:
        return GENERIC
    return f"{name}-{hashlib.sha1(features.encode()).hexdigest()[:8]}"


def _source_stamp(path: str) -> bytes:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).digest()


class _Locator(caching._CacheLocator):
    """A kernel's cache folder: the one its package chose (``folder``, set on a subclass)."""

    folder = ""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno

    def get_cache_path(self):
        return self.folder

    def get_source_stamp(self):
        return _source_stamp(self._py_file)

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        return cls(py_func, py_file) if os.path.isfile(py_file) else None


@contextlib.contextmanager
def _locked(folder: str):
    """Hold ``folder``'s lock file (blocking): one writer of its indexes at a time, across
    processes. Where the file system has no locks (some network shares) it goes on without."""
    os.makedirs(folder, exist_ok=True)
    fd = os.open(os.path.join(folder, ".lock"), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        if os.name == "nt":
            import msvcrt
            deadline = time.monotonic() + 120
            while True:
                try:
                    msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
                    break
                except OSError as err:   # LK_LOCK gives up after 10 s held elsewhere: try again
                    if err.errno not in (errno.EACCES, errno.EDEADLK) or time.monotonic() > deadline:
                        raise
            try:
                yield
            finally:
                os.lseek(fd, 0, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        else:
            import fcntl
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError as err:
                if err.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                    raise
                yield
                return
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


_told = []     # folders this process could not keep compiled code in, said once each


class KernelCache(caching.FunctionCache):
    """numba's function cache for one kernel, saving to ``folder`` and looking in ``folder``
    then ``more`` (read-only), for code made for any CPU first, then for this CPU (``TUNED``: the
    other way round; not ``any_cpu``: for this CPU only).
    ``strict``: a failed save raises (a preparation's worker must not stamp what it did not keep);
    otherwise it is said once and the kernel runs on."""

    def __init__(self, py_func, folder: str, more: tuple[str, ...], any_cpu: bool = True, strict: bool = False):
        from numba.core import config

        locator = type("Locator", (_Locator,), {"folder": folder})
        self._impl_class = type("Impl", (caching.CompileResultCacheImpl,), {"_locator_classes": [locator]})
        self._strict = strict
        was = config.CACHE_LOCATOR_CLASSES        # a setting of the user's must not move our folders
        config.CACHE_LOCATOR_CLASSES = ""
        try:
            super().__init__(py_func)
        finally:
            config.CACHE_LOCATOR_CLASSES = was
        stamp, base = self._impl.locator.get_source_stamp(), self._impl.filename_base
        self.loaded = {}                # signature -> the CPU its loaded code was made for
        self._any_cpu = any_cpu
        self._more = [caching.IndexDataCacheFile(cache_path=f, filename_base=base, source_stamp=stamp)
                      for f in more]

    def _keys(self, sig, codegen):
        """The index keys to look for: code made for any CPU, then for this process's CPU — or,
        ``TUNED``, the other way round."""
        key = self._index_key(sig, codegen)
        triple = key[1][0]
        generic = (key[0], (triple, GENERIC, ""), key[2])
        if generic == key or not self._any_cpu:
            return (key,)
        return (key, generic) if TUNED else (generic, key)

    def _load_overload(self, sig, target_context):
        if not self._enabled:
            return None
        for key in self._keys(sig, target_context.codegen()):
            for index in (self._cache_file, *self._more):
                data = index.load(key)
                if data is not None:
                    self.loaded[sig] = key[1][1]          # the CPU name the code was made for
                    return self._impl.rebuild(target_context, data)
        return None

    def save_overload(self, sig, data):
        """numba's, but an access error is not swallowed on Windows (numba's guard would): it is
        tried again while another process holds the index open, then raised or said."""
        tries = 50 if os.name == "nt" else 1
        for attempt in range(tries):
            try:
                self._save_overload(sig, data)
                return
            except PermissionError:
                if attempt + 1 < tries:
                    time.sleep(0.1)
                    continue
                if self._strict:
                    raise
                self._tell()
            except OSError:
                if self._strict:
                    raise
                self._tell()
                return

    def _tell(self):
        if self._cache_path not in _told:
            _told.append(self._cache_path)
            print(f"hair_wig: compiled kernels cannot be kept in {self._cache_path} (not writable): later "
                  "sessions compile them again", file=sys.stderr)

    def _save_overload(self, sig, data):
        if not self._enabled or not self._impl.check_cachable(data):
            return
        with _locked(self._cache_path):
            key = self._index_key(sig, data.codegen)
            self._cache_file.save(key, self._impl.reduce(data))


def adopt(module, folder: str, more: tuple[str, ...], any_cpu: bool = True, strict: bool = False) -> None:
    """Give every cached kernel defined in ``module`` a :class:`KernelCache` (``any_cpu``: taking
    code made for any CPU as well as for this one — not in a process that prepares code tuned for
    this CPU, which would take the generic code and compile nothing)."""
    for value in vars(module).values():
        if (isinstance(value, Dispatcher) and value.py_func.__module__ == module.__name__
                and isinstance(value._cache, caching.FunctionCache)):
            value._cache = KernelCache(value.py_func, folder, more, any_cpu, strict)


class _Counter(event.Listener):
    """Counts compiles (not loads from a cache) of the kernels of packages named ``prefix…``."""

    def __init__(self, prefix: str):
        self.prefix, self.count, self.names = prefix, 0, []

    def on_start(self, ev):
        d = ev.data["dispatcher"]
        if d.py_func.__module__.startswith(self.prefix):
            self.count += 1
            self.names.append(f"{d.py_func.__module__.rsplit('.', 1)[-1]}.{d.py_func.__name__}")

    def on_end(self, ev):
        pass


_counters: dict[str, _Counter] = {}


def count_compiles(prefix: str) -> _Counter:
    """The running count of ``prefix``'s kernels compiled in this process (a cache load is not
    a compile): how a test or a bake tells that nothing compiled."""
    if prefix not in _counters:
        _counters[prefix] = _Counter(prefix)
        event.register("numba:compile", _counters[prefix])
    return _counters[prefix]


def python_tag() -> str:
    """The Python a kernel cache's files are for (numba names them so): ``py313``."""
    return f"py{sys.version_info[0]}{sys.version_info[1]}"
