"""Hair–hair interaction (seed 004, Barnes after Chang, Jin, Yu; SPEC §7 "004"): segments of
different strands closer than a hair's diameter repel with ``k (threshold − d)`` along the
shortest vector between them, and static links between neighbouring strands hold a style's
volume. For dense hair, ``Volume`` does it through a grid instead (Petrovic, Henne, Anderson
2005): friction as the grid's smoothed velocity, repulsion down the density's gradient.

The broadphase sorts and sweeps the segments' boxes (grown by half the threshold) in columns of
a grid — each pair once; the narrow phase is the exact distance between two segments. Both, the
repulsion summed per segment and the links summed per point are numba kernels (``kernels.pairs``
has how), the same bits with any number of threads.
"""

from __future__ import annotations

import numpy as np

from .errors import HairWigError
from .kernels import pairs
from .kernels import volume as volume_kernels


def segment_closest(p0, p1, q0, q1):
    """Closest points of segments ``p0 p1`` and ``q0 q1`` (rows (3, K)), pairwise: parameters
    ``s, t`` (K,) in [0, 1] and the shortest vector ``q(t) − p(s)`` (3, K) (Ericson, *Real-Time
    Collision Detection* §5.1.9; ``kernels.pairs.closest``)."""
    p0, p1, q0, q1 = (np.ascontiguousarray(x, np.float64) for x in np.broadcast_arrays(p0, p1, q0, q1))
    k = p0.shape[1]
    s, t, vec = np.empty(k), np.empty(k), np.empty((3, k))
    pairs.closest_rows(p0, p1, q0, q1, s, t, vec)
    return s, t, vec


def _rows(x) -> np.ndarray:
    return np.ascontiguousarray(x, np.float64)


def segment_pairs(a: np.ndarray, b: np.ndarray, strand: np.ndarray, threshold: float):
    """Pairs ``(i, j)`` (i < j) of segments ``a[:, k] b[:, k]`` (rows (3, M)) of different
    strands (``strand`` (M,)) closer than ``threshold``, with their closest parameters ``s, t``
    and shortest vector (3, K). Sorted by ``(i, j)`` (``kernels.pairs.find_pairs``)."""
    return pairs.find_pairs(_rows(a), _rows(b), np.ascontiguousarray(strand, np.int64), float(threshold))


def segment_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Segments ``a b`` (3, M) as rows (M, 6) (``kernels.pairs.segment_ends``): a groom's, made
    once, for ``repulsion``'s ``rest``."""
    return pairs.segment_ends(_rows(a), _rows(b))


def repulsion(a: np.ndarray, b: np.ndarray, strand: np.ndarray, threshold: float, stiffness: float,
              candidates=None, rest=None):
    """Accelerations (3, M) on segment start points and (3, M) on end points: every pair of
    segments of different strands closer than ``threshold`` is pushed apart by
    ``stiffness · (threshold − d)`` along its shortest vector, shared between each segment's
    ends by where the closest points lie. ``candidates`` ``(i, j)``: pairs known to hold every
    pair closer than ``threshold`` (a ``Contacts`` broadphase), measured instead of searched.
    ``rest`` ``(a0, b0)``, or those as ``segment_rows`` gives them (made once for many calls):
    the same segments in the groom — a pair the groom has closer than
    ``threshold`` is pushed apart only once closer than it lies there (less a millionth, so
    the rounding of a groom carried by the head pushes nothing): the groom at rest is an
    equilibrium, where hair lying on hair was pushed 13 cm off a still head (issue 34).
    Returns ``(on_a, on_b, pairs)``.

    Each pair is measured on its own (``kernels.pairs.measure_pairs``), then each segment sums
    its own pairs in the order of ``(i, j)`` (``gather_repulsion``): the same bits with any
    number of threads."""
    a, b = _rows(a), _rows(b)
    m = a.shape[1]
    if candidates is None:
        i, j, _, _, _ = pairs.find_pairs(a, b, np.ascontiguousarray(strand, np.int64), float(threshold),
                                         closest_points=False)
    else:
        i, j = (np.ascontiguousarray(x, np.int64) for x in candidates)
    on_a, on_b = np.zeros((3, m)), np.zeros((3, m))
    if i.size == 0:
        return on_a, on_b, 0
    ends = pairs.segment_ends(a, b)
    if rest is None:
        rest_ends = ends
    elif isinstance(rest, np.ndarray):
        rest_ends = rest
    else:
        rest_ends = segment_rows(*rest)
    rec = np.empty((i.size, 5))
    acts = pairs.measure_pairs(ends, i, j, float(threshold), rest_ends, rest is not None, float(stiffness), rec)
    lists = pairs.pair_lists(i, j, acts, m)
    pairs.gather_repulsion(*lists, rec, on_a, on_b)
    return on_a, on_b, len(lists[0])


class Contacts:
    """The broadphase kept across substeps (a Verlet list): the pairs closer than
    ``threshold + skin`` where the points were when it last searched. While no point has moved
    more than ``skin / 2`` since, two segments' distance has changed by less than ``skin``, so
    every pair now closer than ``threshold`` is among them — exactly the pairs a new search would
    find; once a point has moved farther, it searches again.

    The skin is the margin while a list serves three calls or more, else none: a list that
    served fewer (a point moved more than half the margin within two calls) is given up, and every
    call searches at the threshold itself (a millionth over it, for the rounding of the boxes)
    until a call finds the points moved less than a sixth of the margin since the last. (A list
    of the margin holds about four times the pairs closer than the threshold in hair lying in
    layers, and its search costs two to three times a search at the threshold: measured at
    10k strands x 32, 1.2M pairs in 660 ms against 250k in 250 ms.) Any skin gives the same
    pairs now closer than ``threshold`` in the same order, so the forces do not depend on it."""

    def __init__(self, strand: np.ndarray, threshold: float, margin: float):
        self.strand = np.ascontiguousarray(strand, np.int64)
        self.threshold, self.margin = float(threshold), float(margin)
        self.skin = self.margin
        self.at = None
        self.pairs = None
        self.searches = 0
        self.served = 0                                  # calls the current list has answered

    def candidates(self, points: np.ndarray, a: np.ndarray, b: np.ndarray):
        """The candidate pairs for segments ``a b`` (3, M) of ``points`` (3, …) now."""
        now = np.ascontiguousarray(points, np.float64).reshape(3, -1)
        if self.at is not None and self.at.shape == now.shape:
            serves, self.skin = pairs.list_serves(pairs.most_moved(now, self.at), self.skin, self.margin, self.served)
            if serves:
                self.served += 1
                return self.pairs
        reach = self.threshold * (1 + 1e-6) + self.skin
        i, j, _, _, _ = pairs.find_pairs(_rows(a), _rows(b), self.strand, reach, closest_points=False)
        if self.at is None or self.at.shape != now.shape:
            self.at = now.copy()
        else:
            self.at[...] = now
        self.pairs = (i, j)
        self.searches += 1
        self.served = 1
        return self.pairs


def static_links(roots: np.ndarray, neighbours: int = 2, reach: float | None = None):
    """Static links (seed 004's guide strips, defined here): each strand is linked to its
    ``neighbours`` nearest strands whose roots lie within ``reach`` of its own (default: 2.5 ×
    the median distance from a root to its nearest neighbour). Returns the linked strand pairs
    ``(i, j)`` (L,), i < j, each once. ``roots`` (3, S)."""
    num = roots.shape[1]
    empty = np.zeros(0, np.int64)
    if num < 2 or neighbours < 1:
        return empty, empty
    ids = np.arange(num)
    if reach is None:
        # nearest-neighbour spacing from a first pass at a generous reach (the roots' spread)
        span = float((roots.max(axis=1) - roots.min(axis=1)).max())
        guess = span / max(num ** (1 / 2), 1.0) * 2.0
        i, j, _, _, vec = segment_pairs(roots, roots, ids, max(guess, 1e-12))
        if i.size == 0:
            return empty, empty
        d = np.sqrt(np.einsum("kn,kn->n", vec, vec))
        nearest = np.full(num, np.inf)
        np.minimum.at(nearest, i, d)
        np.minimum.at(nearest, j, d)
        reach = 2.5 * float(np.median(nearest[np.isfinite(nearest)]))
    i, j, _, _, vec = segment_pairs(roots, roots, ids, float(reach))
    d = np.sqrt(np.einsum("kn,kn->n", vec, vec))
    # each strand keeps its nearest few, from either end of a pair
    owner = np.r_[i, j]
    other = np.r_[j, i]
    dist = np.r_[d, d]
    order = np.lexsort((other, dist, owner))
    owner, other = owner[order], other[order]
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    rank = np.arange(len(owner)) - np.repeat(starts, np.diff(np.r_[starts, len(owner)]))
    keep = rank < neighbours
    a, b = np.minimum(owner[keep], other[keep]), np.maximum(owner[keep], other[keep])
    key = np.unique(a * num + b)
    return key // num, key % num


def link_forces(pos: np.ndarray, link_a: np.ndarray, link_b: np.ndarray, rest: np.ndarray,
                stiffness: float) -> np.ndarray:
    """Accelerations (3, n, S) of springs joining point ``j`` of strand ``link_a`` to point
    ``j`` of strand ``link_b`` at their groom distance ``rest`` (n, L): ``k (|d| − rest)``
    along ``d``, equal and opposite. ``pos`` (3, n, S). Each strand sums its own links in
    their order (``kernels.pairs.gather_links``)."""
    pos = np.ascontiguousarray(pos, np.float64)
    out = np.zeros_like(pos)
    if link_a.size == 0:
        return out
    link_a, link_b = (np.ascontiguousarray(x, np.int64) for x in (link_a, link_b))
    lists = pairs.link_lists(link_a, link_b, pos.shape[2])
    pairs.gather_links(pos, link_a, link_b, np.ascontiguousarray(rest, np.float64), float(stiffness), *lists, out)
    return out


class Volume:
    """Hair–hair interaction through a volume (Petrovic, Henne, Anderson 2005, *Volumetric Methods
    for Simulation and Rendering of Hair*, §3): the points counted into a grid of cubes of side
    ``cell`` in the head's frame, each node's density and momentum gathered from the points
    around it, and each point pulled towards the grid's velocity (hair–hair friction) and pushed
    down the density's gradient where the hair is packed tighter than in the groom
    (``kernels.volume``). Cost: a few passes over the points and the grid's nodes, whatever the
    hair's density — where the strand pairs' search grows with the pairs.

    ``rest`` (3, P): the groom's points in the head's frame, in the order the calls pass them;
    its density at each point (``rest_density``) is what the hair may have without being
    pushed, so the groom at rest feels nothing."""

    BAND = 0.01       # packed less than 1 % tighter than in the groom: nothing (the groom carried
                      # by the head, rounded through float32 goals, changes the density ~1e-6)
    MAX_CELLS = 1 << 23

    def __init__(self, rest: np.ndarray, cell: float):
        if not np.isfinite(cell) or cell <= 0:
            raise HairWigError(f"hair against hair (Volume): the cell, from Diameter, must be > 0, got {cell}")
        self.cell = float(cell)
        self.nodes = 0                                               # the last grid's nodes
        self._buffers = {}
        # the grid's lists and nodes as a launch keeps them (``launch_parts``), grown by it
        self._grids = (np.zeros(1, np.int64), np.zeros(1), np.zeros((1, 3)))
        self.rest_density = self.density(rest)

    def _grid(self, q: np.ndarray, vel: np.ndarray | None):
        q = np.ascontiguousarray(q, np.float64)
        scale = 1.0 / self.cell
        lo, hi = np.floor(q.min(axis=1) * scale), np.floor(q.max(axis=1) * scale)
        origin = lo - 1.0                                            # a cell's margin each side
        dims = (hi - origin + 2).astype(np.int64)
        nx, ny, nz = (int(d) for d in dims)
        if nx * ny * nz > self.MAX_CELLS:
            self._refuse(nx, ny, nz)
        nodes = (nx + 1) * (ny + 1) * (nz + 1)
        count = q.shape[1]
        cell_of = self._buffer("cell_of", count, np.int64)
        volume_kernels.cell_ids(q, scale, origin, ny, nz, cell_of)
        start = self._buffer("start", nx * ny * nz + 1, np.int64)
        order = self._buffer("order", count, np.int64)
        volume_kernels.count_sort(cell_of, nx * ny * nz, start, order)
        xs = self._buffer("xs", 3 * count).reshape(count, 3)
        vs = self._buffer("vs", 3 * count if vel is not None else 0).reshape(count, -1 if vel is not None else 0)
        volume_kernels.sort_points(q, np.zeros((3, 0)) if vel is None else vel, scale, origin, order, xs, vs)
        rho = self._buffer("rho", nodes)
        mom = self._buffer("mom", 3 * nodes if vel is not None else 0).reshape(-1 if vel is not None else 0, 3)
        volume_kernels.gather_nodes(xs, vs, start, nx, ny, nz, rho, mom)
        self.nodes = nodes
        return xs, vs, order, (nx, ny, nz), rho, mom

    def _refuse(self, nx: int, ny: int, nz: int):
        raise HairWigError(f"hair against hair (Volume): the hair spans {nx} x {ny} x {nz} cells of "
                           f"{self.cell:g} m; raise Diameter (the cell grows with it) or use Strand Pairs")

    def launch_parts(self, count: int, push: float, share: float, turn: np.ndarray | None) -> tuple:
        """``accel``'s work as a kernel takes it (``kernels.volume.strands_volume``) for ``count``
        points: its ``vol`` tuple (the settings, the groom's density, scratch kept from call to
        call) and the grid's ``start``, ``rho``, ``mom`` (``launch_kept`` keeps what the launch
        returns)."""
        b = self._buffer
        turn = np.eye(3) if turn is None else np.ascontiguousarray(turn, np.float64)
        vol = (self.cell, float(share), float(push), self.BAND, float(self.MAX_CELLS), turn, self.rest_density,
               b("vel", 3 * count).reshape(3, count), b("cell_of", count, np.int64), b("order", count, np.int64),
               b("xs", 3 * count).reshape(count, 3), b("vs", 3 * count).reshape(count, 3),
               b("acc", 3 * count).reshape(3, count), b("grid", 5))
        return vol, self._grids

    def launch_kept(self, vol: tuple, grids: tuple) -> None:
        """Keep a launch's grid scratch ``grids``; refuse by name the grid it could not make
        (``vol``'s ``grid``: ``kernels.volume.strands_volume``), as ``accel`` does."""
        self._grids = grids
        grid = vol[-1]
        if grid[4] == 1:
            self._refuse(*(int(x) for x in grid[:3]))
        if grid[4] == 2:
            raise HairWigError("hair against hair (Volume): a strand's point is not a finite number; "
                               "lower Push or raise Substeps")
        self.nodes = int(grid[3])

    def _buffer(self, name: str, size: int, dtype=np.float64) -> np.ndarray:
        """``size`` entries of a buffer kept from call to call (fresh memory a substep costs its
        pages' first touches: tens of MB on a head's grid), grown when too small."""
        have = self._buffers.get(name)
        if have is None or have.size < size:
            have = self._buffers[name] = np.empty(max(size, 1), dtype)
        return have[:size]

    def density(self, q: np.ndarray) -> np.ndarray:
        """The hair's density (P,) at its own points ``q`` (3, P), in points per cell."""
        xs, _, order, (_, ny, nz), rho, _ = self._grid(q, None)
        out = np.empty(xs.shape[0])
        volume_kernels.sample_density(xs, order, rho, ny, nz, out)
        return out

    def accel(self, q: np.ndarray, vel: np.ndarray, push: float, share: float, h: float,
              turn: np.ndarray | None = None) -> np.ndarray:
        """Accelerations (3, P) at points ``q`` (3, P), the head's frame, moving at ``vel`` (3, P)
        world: friction taking ``share`` of each point's velocity difference to the grid's over
        the substep ``h``, and ``push`` (1/s²) down the density's gradient where it exceeds the
        groom's (``kernels.volume.volume_accel``). ``turn`` (3, 3): the head's frame → the world."""
        vel = np.ascontiguousarray(vel, np.float64)
        xs, vs, order, (_, ny, nz), rho, mom = self._grid(q, vel)
        out = np.empty_like(vel)
        turn = np.eye(3) if turn is None else np.ascontiguousarray(turn, np.float64)
        volume_kernels.volume_accel(xs, vs, order, self.rest_density, rho, mom, ny, nz, self.cell, float(push),
                                    float(share), float(h), self.BAND, turn, out)
        return out
