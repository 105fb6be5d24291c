"""The kernels' preparation: each group of kernels compiled for the argument types the core passes
— or loaded, once compiled — so that a bake compiles nothing.

Groups are registered here, one floor above the kernels: the kernel modules that need nothing of
the core name their own (``WARM_UPS``), the others are below. A dynamics layer names the groups
it needs besides every wig's (``DynamicsLayer.KERNELS``), so a bake waits for its own only.

The compile is long (two minutes of CPU), so it is done **in other processes** (:class:`
Preparation`): started when the add-on is enabled, a few worker processes — one per core, at a
lower priority than Blender — each compile a share of the groups for any CPU of the platform
(``NUMBA_CPU_NAME=generic``) into the kernels' ``PREPARED`` folder, leaving a stamp for each group
done. Blender only watches the stamps; once a group's stamp is there, loading it takes a fraction
of a second. A platform package carries the same folder, prebuilt (``PREBUILT``): then there is
nothing to prepare at all. Where the artist asks for it (Tune Kernels for This Computer), once
every group is there for any CPU, an interactive session prepares them again tuned for this CPU
(``cpu="host"``), which later sessions then load in preference: which runs faster depends on the
CPU (``kernels.store.TUNED`` says what was measured; README, *Measured*).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import kernels
from .kernels import store


# ---------------------------------------------------------------- the core's warm-ups
_SMALL = []


def _small_field():
    """A small closed field (a tetrahedron, 8 nodes a side) built by the core's own ``MeshField``:
    its queries pass the kernels the argument types a bake passes."""
    if not _SMALL:
        from .collision import MeshField

        v = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
        _SMALL.append(MeshField(v, np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]]), resolution=8))
    f = _SMALL[0]
    p = np.array([[0.2, 0.2, 0.2], [0.6, 0.3, 0.3], [4.0, 4.0, 4.0]])
    return f, p, np.ascontiguousarray(p.T, np.float32)


def _grid_as_called():
    f, p, x = _small_field()
    f.screen(x, np.zeros(3, np.float32))
    f.lower_bound(x)
    f.distance_rows(x)
    f.lookup(p)
    f.error_at(p)
    f.contact_rows(np.ascontiguousarray(p.T), False)
    f.contact_rows(np.ascontiguousarray(p.T), True)


def _exact_as_called():
    f, p, x = _small_field()
    f.exact(p)
    f.signed_distance(p)


def _depth_as_called():
    f, p, x = _small_field()
    f._depths(x, np.zeros(3, np.float32))


def _bound_colliders(rest, moving):
    """Colliders of the small field bound to the rows ``rest`` (3, P), one a ``moving`` entry:
    set still (None) or moved (a transform), as the wig sets them each frame."""
    from .collision import Collider, ColliderMesh

    f = _small_field()[0]
    shifted = np.eye(4)
    shifted[2, 3] = 0.01
    out = []
    for to_field in moving:
        c = Collider(ColliderMesh("warm-up", f.vertices, f.triangles), np.eye(4), 0.0)
        c.bind(rest)
        c.set_frame(None if to_field is None else shifted)
        out.append(c)
    return out


def _walk_as_called():
    """The walk over a strand of three points against a tetrahedron, bound and set as the wig
    binds its colliders: the argument types a bake passes."""
    from .collision import kernel_colliders
    from .kernels.walk import NO_KIDS, walk_strands

    rest = np.array([[0.3, 0.3, 0.3], [0.3, 0.3, 0.8], [0.3, 0.3, 1.3]], np.float32).T.copy()
    c = _bound_colliders(rest, (None,))[0]
    p = rest.copy()
    p[0, 2] = 0.1
    walk_strands(p, rest, 3, 0, 0, np.array([0, 0.5, 0.5], np.float32),
                 0.0, 3, True, np.array([0.05, 5.0, 1e-12, 1e-9]), kernel_colliders([c, c]), NO_KIDS, rest,
                 np.full((2, 1), -np.inf, np.float32), p[:, :1].astype(np.float64), np.zeros(1, np.int64),
                 np.zeros((1, 3)), 7,
                 np.zeros(1, np.int64), rest, np.stack([np.eye(4), np.eye(4)]), np.ones(2, bool), 0.3,
                 np.zeros(1, np.int64), np.zeros((3, 3), np.float32), 0.3, rest)


def _cross_as_called():
    """Continuous contact before a whole-strand length pass, over a strand of three points against
    two tetrahedra that sweep: the argument types a bake passes (its own group: compiled beside
    the walk's, the longest, by another worker)."""
    from .collision import kernel_colliders
    from .kernels.walk import cross_paths

    rest = np.array([[0.3, 0.3, 0.3], [0.3, 0.3, 0.8], [0.3, 0.3, 1.3]], np.float32).T.copy()
    c = _bound_colliders(rest, (None,))[0]
    p = rest.copy()
    p[0, 2] = 0.1
    cross_paths(p, 0, rest, np.stack([np.eye(4), np.eye(4)]), np.ones(2, bool), np.array([False, True, True]),
                kernel_colliders([c, c]), rest, 0.3, np.empty(3, np.int64))


def _contacts_as_called():
    """The contacts of a strand of three points pushed into a tetrahedron, one collider moving
    with the head and one not: the argument types a bake passes."""
    from .collision.contacts import SurfaceContacts

    rest = np.array([[0.3, 0.3, 0.6], [0.3, 0.3, 0.9], [0.3, 0.3, 1.2]]).T.reshape(3, 3, 1)
    cs = _bound_colliders(rest.reshape(3, -1), (None, True))
    contacts = SurfaceContacts(cs, np.arange(3).reshape(3, 1), 1)
    contacts.begin()
    x = rest.copy()
    x[:, 1:] = 0.2
    for _ in range(2):
        contacts(x, 1.0)


def _strands_met_as_called():
    """The Strands substeps meeting their colliders inside their kernel (``kernels.verlet.
    verlet_substeps_met``): a strand of three points pulled into a tetrahedron, one collider
    moving with the head and one not, a frame as the layer steps it."""
    from .collision.contacts import SurfaceContacts
    from .strands import StrandSettings, VerletStrands

    rest = np.ascontiguousarray(np.array([[0.3, 0.3, 0.6], [0.3, 0.3, 0.9], [0.3, 0.3, 1.2]]).T.reshape(3, 3, 1))
    contacts = SurfaceContacts(_bound_colliders(rest.reshape(3, -1), (None, True)), np.arange(3).reshape(3, 1), 2)
    strands = VerletStrands(rest, StrandSettings())
    gravity = np.array([0.0, 0.0, -9.81])
    state = strands.initial_state(rest, gravity)
    contacts.move(np.eye(4), np.eye(4))
    contacts.begin()
    strands.step(state, rest - 0.2, 1 / 24, gravity, contact=contacts)


def _strands_hair_as_called():
    """The Strands substeps with hair against hair in the same launch (``kernels.verlet.
    verlet_substeps_pairs``, ``verlet_substeps_met_pairs``): two strands of three points side by
    side, repelling and linked, pulled into a tetrahedron with its colliders and without (the
    hair's volume takes the same kernels, with the same argument types)."""
    from .collision.contacts import SurfaceContacts
    from .strands import StrandSettings, VerletStrands

    one = np.array([[0.3, 0.3, 0.6], [0.3, 0.3, 0.9], [0.3, 0.3, 1.2]]).T
    rest = np.ascontiguousarray(np.stack([one, one + np.array([[0.002], [0.0], [0.0]])], axis=2))   # (3, 3, 2)
    gravity = np.array([0.0, 0.0, -9.81])
    for met in (False, True):
        strands = VerletStrands(rest, StrandSettings(hair_hair=True, diameter=0.005, links=1))
        state = strands.initial_state(rest, gravity)
        contacts = None
        if met:
            contacts = SurfaceContacts(_bound_colliders(rest.reshape(3, -1), (None, True)),
                                       np.arange(6).reshape(3, 2), 2)
            contacts.move(np.eye(4), np.eye(4))
            contacts.begin()
        strands.step(state, rest - 0.2, 1 / 24, gravity, contact=contacts)


def _wisp_body_as_called():
    """The Wisps' contacts with the head and body (``kernels.wisp_body``): two wisps of three
    points, one pressed into a tetrahedron, one collider moving with the head and one not, with
    the argument types ``WispLayer._slide`` and ``_penetration`` pass."""
    from .collision import kernel_colliders
    from .collision.contacts import contact_maps
    from .kernels import wisp_body

    x = np.zeros((2, 3, 3))
    x[:, :, 0] = x[:, :, 1] = 0.3
    x[:, :, 2] = (0.6, 0.9, 1.2)
    x[1, 1:, :] = 0.2
    cs = _bound_colliders(np.ascontiguousarray(x.reshape(-1, 3).T), (None, True))
    v, r = np.zeros_like(x), np.full((2, 3, 4), 0.01)
    rd, ones = np.zeros_like(r), np.ones((2, 3))
    frames, tangent, push = np.zeros((2, 3, 2, 3)), np.zeros_like(x), np.zeros_like(x)
    axes = np.tile(np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]), (2, 1))
    lims, lims_s = np.zeros((2, 5 * 6)), np.zeros((2, 2 * 2))
    touched = np.zeros(wisp_body.chunks(2), np.int64)
    cols = kernel_colliders(cs)
    fmaps, moving = contact_maps(cs, 1.0, carry=False)
    wisp_body.wisp_slide(x, v, r, rd, frames, ones, cols, fmaps, moving, lims, np.eye(4), np.eye(4), np.zeros((4, 4)),
                         0.01, 0.001, 0.3, touched)
    wisp_body.wisp_penetrate(x, v, r, rd, ones, axes[:2], axes[2:], 0.05 * r, cols, fmaps, moving, lims, lims_s,
                             np.eye(4),
                             np.eye(4), 1.0, 4, frames, tangent, push, touched)


def _chain_as_called():
    """The kernels with the argument types ``chain.least_motion`` and ``chain.give`` pass
    (C-ordered float64 arrays, int64 picks, Python ints and floats): a strand of three points
    hanging onto a floor 1 mm above its end."""
    from .chain import give, least_motion

    x = np.zeros((3, 3, 1))
    x[2, :, 0] = (0.0, -0.1, -0.2)
    push = np.zeros((3, 3, 1))
    push[2, 2] = 1e-3
    least_motion(x, 1, np.full((2, 1), 0.1), push / 1e-3, np.full((3, 1), -0.199))
    give(x + push, np.full((2, 1), 0.1), push)


def _pairs_as_called():
    """Every pair kernel with the argument types the core passes (``hair_wig.interaction``'s
    functions on a few strands: float64 rows, int64 indices)."""
    from . import interaction

    rows = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.002, 0.0, 0.0], [0.002, 0.0, 1.0]])
    pos = np.ascontiguousarray(rows.reshape(2, 2, 3).transpose(2, 1, 0))         # (3, n, S)
    a, b = pos[:, :-1].reshape(3, -1), pos[:, 1:].reshape(3, -1)
    strand = np.arange(2)
    interaction.segment_closest(a, b, a[:, ::-1], b[:, ::-1])
    contacts = interaction.Contacts(strand, 0.005, 0.005)
    interaction.repulsion(a, b, strand, 0.005, 1.0, contacts.candidates(pos, a, b), (a, b))
    contacts.candidates(pos, a, b)           # the list kept: its rule (``pairs.list_serves``)
    link_a, link_b = interaction.static_links(pos[:, 0], 1)
    interaction.link_forces(pos, link_a, link_b, np.ones((2, len(link_a))), 1.0)


# ---------------------------------------------------------------- the registry
@dataclass(frozen=True)
class Group:
    """Kernels compiled together: what an artist reads while they prepare, the call that
    compiles them as the core calls them, and about how long that takes (CPU seconds on the
    2-core reference machine, cold: how the work is ordered and shared out)."""

    name: str
    call: object
    seconds: float


# CPU seconds of each group's cold compile, measured one after another in one process (5.2)
_SECONDS = {"follow-the-leader": 9.2, "collision grid": 2.9, "collision exact distances": 3.0, "collision depth": 2.1,
            "collision walk": 44.3, "continuous contact": 8.0, "collision build": 7.3, "compression": 0.8,
            "collision contacts": 7.1, "hair against hair": 15.0, "strands meeting colliders": 7.0,
            "strands against strands": 12.0,
            "hair volume": 4.6, "angular rods": 5.3, "strands": 5.8, "springs": 1.5, "magnets": 2.2, "output": 0.8,
            "chain give": 8.4, "contact response": 3.0, "force fields": 1.6, "scalp space": 1.1, "wisps": 13.8,
            "wisps meeting colliders": 4.0, "winding numbers": 2.0}

GROUPS: dict[str, Group] = {name: Group(name, call, _SECONDS.get(name, 5.0)) for name, call in (
    kernels.WARM_UPS + (("collision grid", _grid_as_called), ("collision exact distances", _exact_as_called),
                        ("collision depth", _depth_as_called), ("collision walk", _walk_as_called),
                        ("continuous contact", _cross_as_called),
                        ("collision contacts", _contacts_as_called), ("chain give", _chain_as_called),
                        ("strands meeting colliders", _strands_met_as_called),
                        ("strands against strands", _strands_hair_as_called),
                        ("wisps meeting colliders", _wisp_body_as_called),
                        ("hair against hair", _pairs_as_called)))}

# what every wig's frame runs, whatever its dynamics: magnets, scalp space, the force fields,
# refinement (compression, follow-the-leader, the collision walk and its chain), the output
EVERY_WIG = ("magnets", "scalp space", "force fields", "compression", "follow-the-leader", "winding numbers",
             "collision build", "collision grid", "collision exact distances", "collision depth", "collision walk",
             "continuous contact", "chain give", "contact response", "output")


def needed(layers=()) -> tuple[str, ...]:
    """The groups a wig of each of ``layers`` (dynamics layer classes) needs, every wig's first."""
    names = list(EVERY_WIG)
    for layer in layers:
        names += [n for n in layer.KERNELS if n not in names]
    return tuple(names)


def _default_first() -> list[str]:
    """Every group, those the default dynamics layer needs first, each part longest first."""
    from .layers import LAYERS

    first = needed([next(iter(LAYERS.values()))])
    rest = [n for n in GROUPS if n not in first]
    return (sorted(first, key=lambda n: -GROUPS[n].seconds) + sorted(rest, key=lambda n: -GROUPS[n].seconds))


# ---------------------------------------------------------------- in this process
_loaded: set[str] = set()


def warm_up(names=None):
    """Compile — or load, when prepared — the groups ``names`` (every group by default) in this
    process, one at a time, yielding ``(done, total, name)`` after each, so a caller can show
    progress between them; a bake after it compiles nothing."""
    todo = list(GROUPS) if names is None else list(names)
    for done, name in enumerate(todo, 1):
        if name not in _loaded:
            kept = prepared([name])
            GROUPS[name].call()
            _loaded.add(name)
            if not kept:                # compiled here: a later session loads it from this folder
                try:
                    Path(kernels.LOCAL, _stamp(name, host_key())).write_text("compiled in a session\n")
                except OSError:
                    pass
        yield done, len(todo), name


def warmed(names=None) -> bool:
    """Whether this process has the groups ``names`` (every group by default) ready."""
    return set(GROUPS if names is None else names) <= _loaded


# ---------------------------------------------------------------- prepared on disk
def _stamp(name: str, cpu: str) -> str:
    import numba

    slug = name.replace(" ", "-")
    return f"{slug}.{store.python_tag()}.numba-{numba.__version__}.{cpu}.ok"


HOST = "host"          # a preparation for this very CPU (``tuned``), as against GENERIC
_host_key = []


def host_key() -> str:
    """This CPU as the stamps of kernels tuned for it name it (``store.cpu_key`` of a process
    that compiles for this CPU)."""
    if not _host_key:
        _host_key.append(store.cpu_key())
    return _host_key[0]


def _stamped(name: str, cpu: str) -> bool:
    key = store.GENERIC if cpu == store.GENERIC else host_key()
    return any(os.path.isfile(os.path.join(folder, _stamp(name, key)))
               for folder in (kernels.PREPARED, kernels.PREBUILT, kernels.LOCAL))


def prepared(names=None, cpu: str | None = None) -> bool:
    """Whether the groups ``names`` (every group by default) are compiled where this process
    loads them from (the preparation's folder, the package's prebuilt one, or this machine's own
    from an earlier session): for ``cpu`` (``generic``: any CPU of the platform, ``host``: this
    one), or by default for either."""
    todo = GROUPS if names is None else names
    cpus = (store.GENERIC, HOST) if cpu is None else (cpu,)
    return all(any(_stamped(n, c) for c in cpus) for n in todo)


def missing(names=None, cpu: str | None = None) -> list[str]:
    """The groups of ``names`` (every group by default) not prepared for ``cpu`` (by default: for
    no CPU this process can load), in the order to prepare them."""
    want = set(GROUPS if names is None else names)
    return [n for n in _default_first() if n in want and not prepared([n], cpu)]


def prune(root: str | None = None) -> list[str]:
    """Remove from the kernels' folder beside them (``root``: ``kernels.ROOT`` when that is
    it) the compiled code of other sources — earlier versions of these very files, never loaded
    again — and of the layout before kernels had a name of their own (``numba-<hash>``).
    A shared or user-wide folder is left alone: other installs may use what is there. Returns
    what was removed."""
    beside = Path(kernels.__file__).resolve().parent / "__pycache__"
    root = Path(kernels.ROOT if root is None else root)
    if root.resolve() != beside.resolve():
        return []
    gone = []
    for folder in root.iterdir():
        if folder.is_dir() and folder.name != kernels.__name__ and (
                folder.name.startswith("hair_wig_kernels_") or folder.name.startswith("numba-")):
            shutil.rmtree(folder, ignore_errors=True)
            gone.append(folder.name)
    return sorted(gone)


def work(names) -> int:
    """A worker's whole run: each group compiled (numba saves it to the folder it was told) and
    stamped for the CPU it was compiled for, saying ``start``/``done`` on its output. Returns the
    exit status."""
    if not os.environ.get("HAIR_WIG_PREPARING"):
        print("a preparation worker runs with HAIR_WIG_PREPARING=1 (it saves to the prepared folder)", file=sys.stderr)
        return 2
    cpu = store.cpu_key()
    for name in names:
        print(f"start {name}", flush=True)
        t = time.perf_counter()
        GROUPS[name].call()
        Path(kernels.PREPARED, _stamp(name, cpu)).write_text(f"{time.perf_counter() - t:.2f} s\n")
        print(f"done {name}", flush=True)
    return 0


# a worker imports the core under a name of its own (it never imports bpy) and runs ``work``
_WORKER = """
import importlib.util, os, sys
if hasattr(os, "nice"):
    os.nice(10)
core = sys.argv[1]
spec = importlib.util.spec_from_file_location("hair_wig_preparing", os.path.join(core, "__init__.py"),
                                              submodule_search_locations=[core])
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
from hair_wig_preparing import prepare
sys.exit(prepare.work(sys.argv[2:]))
"""


def share(names, workers: int) -> list[list[str]]:
    """``names`` (in the order to prepare) shared out among ``workers``: each group to the one
    with the least work so far, so they end about together and the first groups come first."""
    shares = [[] for _ in range(max(1, min(workers, len(names))))]
    load = [0.0] * len(shares)
    for name in names:
        i = load.index(min(load))
        shares[i].append(name)
        load[i] += GROUPS[name].seconds
    return shares


def worker_count() -> int:
    """One worker a core this process may use, at most four (each holds a compiler: ~250 MB)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(4, cores or 1))


class Preparation:
    """Worker processes preparing groups of kernels, watched without waiting: ``poll`` says how
    far they are, ``cancel`` stops them. ``cpu``: ``generic`` (code for any CPU of the platform:
    what a package carries, ready for every machine) or ``host`` (tuned for this one: loaded in
    preference by later sessions where tuning is asked for, ``kernels.store.TUNED``). ``python``
    runs the workers (Blender's own Python: its ``sys.executable``)."""

    def __init__(self, names, workers: int | None = None, python: str | None = None, cpu: str = store.GENERIC):
        self.names = list(names)
        self.cpu = cpu
        self.error = ""
        self.details = ""                      # for the console: the worker's last words, its log
        self.cancelled = False
        self._log_dir = tempfile.mkdtemp(prefix="hair_wig_prepare_")
        env = dict(os.environ, HAIR_WIG_PREPARING="1", HAIR_WIG_KERNEL_CACHE=kernels.ROOT,
                   NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join(p for p in sys.path if p and os.path.isdir(p)))
        env.pop("NUMBA_CACHE_LOCATOR_CLASSES", None)
        if cpu == store.GENERIC:
            env["NUMBA_CPU_NAME"] = store.GENERIC
            env.pop("NUMBA_CPU_FEATURES", None)
            # code for any machine calls no Intel math library a machine may lack (numba uses it
            # where it is installed, and its key does not say so)
            env["NUMBA_DISABLE_INTEL_SVML"] = "1"
        flags = getattr(subprocess, "BELOW_NORMAL_PRIORITY_CLASS", 0) | getattr(subprocess, "CREATE_NO_WINDOW", 0)
        core = str(Path(__file__).resolve().parent)
        self._procs = []
        try:
            for i, share_ in enumerate(share(self.names, workers or worker_count())):
                log = os.path.join(self._log_dir, f"worker{i}.log")
                with open(log, "wb") as out:
                    proc = subprocess.Popen([python or sys.executable, "-c", _WORKER, core, *share_], stdout=out,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                            creationflags=flags)
                self._procs.append((proc, log))
        except BaseException:
            self.cancel()                      # no worker outlives a preparation that did not start
            raise

    def done(self) -> list[str]:
        """The groups prepared so far (their stamps are there)."""
        return [n for n in self.names if prepared([n], self.cpu)]

    def working_on(self) -> list[str]:
        """The groups the workers are compiling now."""
        now = []
        for proc, log in self._procs:
            if proc.poll() is None:
                started = [line[6:] for line in Path(log).read_text(errors="replace").splitlines()
                           if line.startswith("start ")]
                now += started[-1:]
        return now

    def poll(self) -> bool:
        """Whether the workers are still running; once they are not, ``error`` says what went
        wrong, if anything did."""
        running = False
        for proc, log in self._procs:
            code = proc.poll()
            if code is None:
                running = True
            elif code != 0 and not self.cancelled and not self.error:
                lines = [line for line in Path(log).read_text(errors="replace").splitlines() if line.strip()]
                self.error = f"a helper process stopped (exit status {code})"
                self.details = (lines[-1].strip() + " — " if lines else "") + f"its log: {log}"
        if not running and not self.error and not self.cancelled:
            left = [n for n in self.names if not prepared([n], self.cpu)]
            if left:
                self.error = f"the workers ended with {', '.join(left)} not prepared"
            else:
                shutil.rmtree(self._log_dir, ignore_errors=True)      # kept only to say what went wrong
        return running

    def cancel(self) -> None:
        """Stop the workers; groups already prepared stay prepared."""
        self.cancelled = True
        for proc, _ in self._procs:
            if proc.poll() is None:
                proc.kill()
        for proc, _ in self._procs:
            proc.wait()
        shutil.rmtree(self._log_dir, ignore_errors=True)

    def wait(self, names=None, report=None, poll: float = 0.25) -> bool:
        """Block until the groups ``names`` (all of this preparation's by default) are prepared
        or the workers stop; ``report(done, total, working_on)`` each time one more is done.
        Returns whether they are prepared."""
        want = self.names if names is None else [n for n in names if n in self.names]
        seen = -1
        while True:
            running = self.poll()
            done = sum(prepared([n], self.cpu) for n in want)
            if report is not None and done != seen:
                report(done, len(want), self.working_on())
                seen = done
            if done == len(want) or not running:
                return done == len(want)
            time.sleep(poll)
