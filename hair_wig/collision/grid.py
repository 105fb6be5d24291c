"""The grid builder (SPEC §6.3): a triangle mesh's signed distance on a regular grid, with how
far it may be off in each cell, and the cell lists of the triangles near each cell.

The distance is exact at the nodes within a band round the surface, carried to every other node
by sweeping closest points through the grid (a fast-sweeping closest-point transform), and signed
by the pseudo-normal of each node's closest feature (``triangles.pseudo_normals``). Where the
surface folds within a cell the grid may be off by more; where the sign jumps across a cell (an
open mesh's rim, shells that cross) it cannot be trusted at all. The cell lists let a point find
its closest triangle exactly (``triangles.TriangleIndex``); they reach farther wherever the grid
is in doubt, so the lists decide there."""

from __future__ import annotations

import numpy as np

from .rows import _dot, _take_rows
from .triangles import TriangleIndex, _gram, closest_feet


MAX_NODES = 1 << 23       # a field's grid holds at most this many nodes (~200 MB while it is built)


def cell_of(vertices: np.ndarray, triangles: np.ndarray, size: float, resolution: int | None = None) -> float:
    """A grid's cell for a mesh whose box's longest side is ``size``: ``size / (resolution − 1)``,
    else about the median triangle edge (between size / 160 and size / 48)."""
    if resolution:
        return size / max(int(resolution) - 1, 2)
    ta, tb = vertices[triangles[:, 0]], vertices[triangles[:, 1]]
    edge = float(np.median(np.linalg.norm(tb - ta, axis=1)))
    return float(np.clip(edge, size / 160, size / 48))


def place_grid(vertices: np.ndarray, triangles: np.ndarray, lo: np.ndarray, hi: np.ndarray, size: float,
               resolution: int | None, margin: float, cell: float | None):
    """The grid round a mesh whose box is ``[lo, hi]`` (``size`` its longest side): its cell
    size, its origin (3,) and its nodes per axis (3,) int64. The cell is ``cell`` if given, else
    ``size / (resolution − 1)``, else about the median triangle edge (between size / 160 and
    size / 48); the grid reaches ``margin`` beyond the mesh and at least three cells."""
    h = float(cell) if cell else cell_of(vertices, triangles, size, resolution)
    pad = max(3 * h, 0.05 * size, float(margin) + 3 * h)
    # bounded whatever the margin: coarser cells where the box is large (distances near the
    # surface stay exact, from the lists; only the band they reach and the cost change)
    nodes = np.prod((hi - lo + 2 * pad) / h + 2)
    if nodes > MAX_NODES:
        h *= float(np.cbrt(nodes / MAX_NODES)) * 1.01
        pad = max(3 * h, 0.05 * size, float(margin) + 3 * h)
    origin = lo - pad
    return h, origin, np.ceil((hi + pad - origin) / h).astype(np.int64) + 1


class DistanceGrid:
    """The signed distance of ``tris`` (a ``TriangleIndex``) on the grid of ``cell`` size and
    ``dims`` nodes per axis from the triangles' origin (``place_grid``), its error bounds and
    its cell lists, built once.

    ``distance_grid`` (N,) float32, the nodes' signed distances (x-major); ``grid_error`` per
    list cell, how far the trilinear distance may be off there; ``untrusted`` per node (None
    when there is no seam), the cells that have no bound; ``list_start``, ``list_tri`` the
    triangles per list cell (CSR) and ``list_reach`` how far from the surface each list is
    exact. The kernels read them as tuples (``_k_nodes``, ``_k_grid32``, ``_k_grid64``,
    ``_k_errors``; ``kernels.field``).
    """

    NODE_BAND = 1.0      # nodes whose distance is computed exactly: within this many cells
    LIST_CELL = 2        # grid cells per side of the cells that keep triangle lists
    LIST_BAND = 1.5      # a cell keeps the triangles within this many grid cells of it
    COHERENT = 0.8       # a list cell whose unit normals sum to less than this per triangle is folded
    SHEET_ERROR = 1.0    # how far (cells) the grid may be off where the surface is one sheet
    FOLD_ERROR = 2.0     # how far (cells) the grid may be off where the surface folds
    SEAM = 1.0           # a cell whose corners' signs differ by more than its diagonal + this many
                         # cells is a seam (swept nodes are off by up to ~0.13 cell on a sphere)
    SEAM_BAND = 3.5      # a list cell holding part of a seam lists the triangles this many cells out

    def __init__(self, tris: TriangleIndex, cell: float, dims: np.ndarray):
        self.cell = cell
        self.origin = tris.origin
        self.dims = dims
        corners = tris.corners
        self._corner_rows = np.ascontiguousarray(corners.transpose(1, 2, 0))   # (corner, xyz, T)
        fn = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        # a triangle of no area (a pole's sliver far from the origin rounds to one) has no plane:
        # its NaN normal fails every plane test below, and its neighbours' edges stand for it
        with np.errstate(invalid="ignore", divide="ignore"):
            self._face_rows = np.ascontiguousarray((fn / np.linalg.norm(fn, axis=1, keepdims=True)).T)  # (3, T)
        self._build_lists(tris)
        self._build_grid(tris)
        self._mark_seams()
        self._widen_lists(tris)
        self._kernel_tuples()

    def _build_lists(self, tris: TriangleIndex):
        """Triangles per list cell (CSR): those whose box, grown by LIST_BAND cells, meets the
        cell. A point within LIST_BAND cells of the surface finds its closest triangle there."""
        h = self.cell * self.LIST_CELL
        grow = self.LIST_BAND * self.cell
        tmin = tris.corners.min(axis=1)
        tmax = tris.corners.max(axis=1)
        self.list_dims = np.floor((self.dims - 1) / self.LIST_CELL).astype(np.int64) + 1
        lo = np.floor((tmin - grow) / h).astype(np.int64)
        hi = np.floor((tmax + grow) / h).astype(np.int64)
        t_of, ix, iy, iz = _pairs(lo, hi, self.list_dims)
        # Only the triangles that may come within the band of some point of the cell: whose
        # plane passes within band + half the cell's diagonal of its centre.
        reach = np.float32(grow + 0.5 * np.sqrt(3.0) * h)
        fnr = self._face_rows
        # each plane in cell units: (n h) · (i + ½) = n · a, i.e. (n h) · i = n · a − (n h) · ½
        nh = fnr * np.float32(h)
        offset = _dot(fnr, self._corner_rows[0]) - np.float32(0.5) * nh.sum(axis=0)
        keep = np.empty(len(t_of), bool)
        step = 1 << 20
        for s in range(0, len(t_of), step):
            tt = t_of[s:s + step]
            side = -offset.take(tt)
            for k, i in enumerate((ix, iy, iz)):
                side += np.multiply(i[s:s + step], nh[k].take(tt), dtype=np.float32)
            keep[s:s + step] = np.abs(side) <= reach               # the triangle's plane
        t_of, ix, iy, iz = t_of[keep], ix[keep], iy[keep], iz[keep]
        ny, nz = int(self.list_dims[1]), int(self.list_dims[2])
        cell = (ix.astype(np.int64) * ny + iy) * nz + iz
        # by cell, then triangle: one sort of the combined key
        bits = max(int(len(tris.triangles)).bit_length(), 1)
        key = cell << bits
        key |= t_of
        key.sort()
        self.list_tri = (key & ((1 << bits) - 1)).astype(np.int32)
        cell = key >> bits
        self.list_start = np.zeros(int(self.list_dims.prod()) + 1, np.int64)
        np.cumsum(np.bincount(cell, minlength=len(self.list_start) - 1), out=self.list_start[1:])
        # How far the grid's distance may be off in each cell: a cell where the surface is one
        # sheet interpolates a 1-Lipschitz distance from its corners, off by at most the mean
        # distance to them (half its diagonal, at its centre: 0.87) plus the swept nodes' own
        # error (~0.13 on a sphere): one cell (half a cell, assumed before, was 0.83 off beside
        # Suzanne's eye); where it folds back within the cell's reach (an ear, an eyelid, a thin
        # brim: faces whose normals disagree), the grid cannot see the inside, and up to two.
        count = np.diff(self.list_start)
        filled = np.flatnonzero(count)
        sums = np.stack([np.add.reduceat(fnr[k].take(self.list_tri), self.list_start[filled]) for k in range(3)])
        folded = np.sqrt(_dot(sums, sums)) < self.COHERENT * count[filled]
        self.grid_error = np.full(len(count), np.float32(self.SHEET_ERROR * self.cell))
        self.grid_error[filled[folded]] = np.float32(self.FOLD_ERROR * self.cell)

    def _build_grid(self, tris: TriangleIndex):
        """Signed distance at every node: exact for the nodes within NODE_BAND cells of the
        surface, then closest points swept to every other node, each signed by the pseudo-normal
        of its closest point's feature."""
        h = np.float32(self.cell)
        nx, ny, nz = (int(d) for d in self.dims)
        band = np.float32(self.NODE_BAND * self.cell)
        tc = tris.corners
        lo = np.ceil((tc.min(axis=1) - band) / h).astype(np.int64)
        hi = np.floor((tc.max(axis=1) + band) / h).astype(np.int64)
        fnr = self._face_rows
        tcr = self._corner_rows
        total = nx * ny * nz
        best = np.full(total, np.inf, np.float32)
        pieces = []
        for t_of, ix, iy, iz in _pair_chunks(lo, hi, self.dims):
            x = np.stack([ix, iy, iz]).astype(np.float32)
            x *= h
            ta = _take_rows(tcr[0], t_of)
            keep = np.abs(_dot(x - ta, _take_rows(fnr, t_of))) <= band
            t_of, x, ta = t_of[keep], x[:, keep], ta[:, keep]
            node = (ix[keep].astype(np.int64) * ny + iy[keep]) * nz + iz[keep]
            ab, ac = _take_rows(tcr[1], t_of), _take_rows(tcr[2], t_of)
            ab -= ta
            ac -= ta
            bc = ac - ab
            ub, uc, feat = closest_feet(x - ta, ab, ac, bc, *_gram(ab, ac, bc))
            cp = ta + ub * ab
            cp += uc * ac
            diff = x - cp
            d = np.sqrt(_dot(diff, diff))
            near = d <= band
            node, d = node[near], d[near]
            cp = cp[:, near].T
            np.minimum.at(best, node, d)
            pieces.append((node, d, t_of[near], cp, feat[near]))
        grid_cp = np.full((3, total), 1e18, np.float32)     # "none yet"; its square still fits
        src = np.full(total, -1, np.int32)
        band_n = []
        band_open = []
        count = 0
        for node, d, t_of, cp, feat in pieces:
            win = np.flatnonzero(d == best[node])
            nodes = node[win]
            grid_cp[:, nodes] = cp[win].T
            src[nodes] = np.arange(len(win), dtype=np.int32) + count
            count += len(win)
            band_n.append(tris.normals[t_of[win], feat[win]])
            if tris.boundary.shape[0]:
                band_open.append(tris.boundary[t_of[win], feat[win]])
        band_n = np.concatenate(band_n + [np.zeros((1, 3), np.float32)])
        self.band_nodes = int(np.isfinite(best).sum())
        grid_cp = grid_cp.reshape(3, nx, ny, nz)
        src = src.reshape(nx, ny, nz)
        _sweep(grid_cp, src, float(h))
        dist = np.empty((nx, ny, nz), np.float32)
        ys = np.arange(ny, dtype=np.float32) * h
        zs = np.arange(nz, dtype=np.float32) * h
        for i in range(nx):                      # a slab at a time: no (N, 3) temporaries
            dx = np.float32(i) * h - grid_cp[0, i]
            dy = ys[:, None] - grid_cp[1, i]
            dz = zs[None, :] - grid_cp[2, i]
            dist[i] = np.sqrt(dx * dx + dy * dy + dz * dz)
            # signed by the pseudo-normal of the feature its closest point came from
            n = band_n[src[i]]
            dist[i][dx * n[..., 0] + dy * n[..., 1] + dz * n[..., 2] < 0] *= -1
        if band_open:
            # a node whose closest point lies on an open edge: its side by the winding number
            opened = np.concatenate(band_open + [np.zeros(1, bool)])
            at = np.flatnonzero(opened[src.ravel()] & (np.abs(dist.ravel()) > 1e-9 * tris.extent))
            if at.size:
                i, j, k = np.unravel_index(at, (nx, ny, nz))
                x = np.stack([i, j, k], axis=1).astype(np.float32).astype(np.float64) * np.float64(h)
                tris.wound(x, dist.ravel(), at)
        self.distance_grid = dist.ravel()

    def _mark_seams(self):
        """Where the grid cannot be trusted at all: cells across which the sign jumps. The
        pseudo-normal sign of an open mesh, or of shells that cross (Suzanne's eyes inside its
        head), flips where the closest feature changes side — deep inside a head as well as
        round a ground plane's rim — and the trilinear value across the jump reads about 0
        whatever the depth (measured on a subdivided Suzanne: 0 where the point is 5 cells deep).
        A continuous signed distance changes by at most the cell's diagonal from corner to
        corner; a cell whose corners change sign by more (and by more than the swept nodes'
        error, a cell allowed) is a seam. Its corners keep ``−|d|``
        (all the grid can promise there is a lower bound, which ``screen`` and ``lower_bound``
        read), and every cell with such a corner is ``untrusted``: no error bound (inf), its
        points are decided by exact distances (``_exact_in_band``)."""
        d = self.distance_grid.reshape(tuple(int(x) for x in self.dims))
        inner = tuple(slice(0, n - 1) for n in d.shape)
        hi, lo = d[inner].copy(), d[inner].copy()
        corners = [(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)]
        for a, b, c in corners[1:]:
            s = d[a:a + d.shape[0] - 1, b:b + d.shape[1] - 1, c:c + d.shape[2] - 1]
            np.maximum(hi, s, out=hi)
            np.minimum(lo, s, out=lo)
        seam = (hi > 0) & (lo < 0) & (hi - lo > np.float32((np.sqrt(3.0) + self.SEAM) * self.cell))
        del hi, lo
        self.seam_cells = int(seam.sum())
        self.untrusted = None
        if self.seam_cells:
            touched = np.zeros(d.shape, bool)            # the corners of seam cells
            for a, b, c in corners:
                touched[a:a + d.shape[0] - 1, b:b + d.shape[1] - 1, c:c + d.shape[2] - 1] |= seam
            d[touched] = -np.abs(d[touched])
            # every cell with a touched corner, flagged at its low corner's node
            cell = np.zeros(d.shape, bool)
            for a, b, c in corners:
                cell[:d.shape[0] - 1, :d.shape[1] - 1, :d.shape[2] - 1] |= touched[
                    a:a + d.shape[0] - 1, b:b + d.shape[1] - 1, c:c + d.shape[2] - 1]
            self.untrusted = cell.ravel()
        self._slack = np.float32(0.5 * np.sqrt(3.0) * self.cell * 1.01 + self.grid_error.max())

    def _widen_lists(self, tris: TriangleIndex):
        """Where the grid may be off by more than the band its lists are exact to, the grid
        cannot be trusted with the side, so those list cells list farther: a folded cell (grid
        off by up to FOLD_ERROR cells) the triangles within FOLD_ERROR cells of it, a cell that
        holds part of a seam (no bound) those within SEAM_BAND. Its points are then measured
        exactly wherever the grid is in doubt from their one list. ``list_reach`` (per list
        cell): how far from the surface its list is exact.

        A wide cell lists the triangles whose bounding sphere comes within its band of the cell's
        box."""
        band = np.full(len(self.list_start) - 1, np.float32(self.LIST_BAND))
        band[self.grid_error > np.float32(self.SHEET_ERROR * self.cell)] = self.FOLD_ERROR
        if self.untrusted is not None:
            g = np.unravel_index(np.flatnonzero(self.untrusted), tuple(int(x) for x in self.dims))
            band[np.ravel_multi_index(tuple(x // self.LIST_CELL for x in g), tuple(self.list_dims))] = self.SEAM_BAND
        self.list_reach = band * np.float32(self.cell)
        is_wide = band > self.LIST_BAND
        wide = np.flatnonzero(is_wide)
        if wide.size == 0:
            return
        h = self.cell * self.LIST_CELL
        grow = self.SEAM_BAND * self.cell
        lo = np.floor((tris.corners.min(axis=1) - grow) / h).astype(np.int64)
        hi = np.floor((tris.corners.max(axis=1) + grow) / h).astype(np.int64)
        ny, nz = int(self.list_dims[1]), int(self.list_dims[2])
        bits = max(int(len(tris.triangles)).bit_length(), 1)
        keys = []
        for t_of, ix, iy, iz in _pair_chunks(lo, hi, self.list_dims):
            cell = (ix.astype(np.int64) * ny + iy) * nz + iz
            m = np.flatnonzero(is_wide.take(cell))
            t_of, cell = t_of.take(m), cell.take(m)
            # the triangle's bounding sphere against the cell's box
            gap = np.stack([ix.take(m), iy.take(m), iz.take(m)]).astype(np.float32)
            gap += np.float32(0.5)
            gap *= np.float32(h)
            gap -= _take_rows(tris.centres, t_of)
            np.abs(gap, out=gap)
            gap -= np.float32(0.5 * h)
            np.maximum(gap, 0, out=gap)
            near = np.sqrt(_dot(gap, gap)) - tris.radii.take(t_of) <= self.list_reach.take(cell) * np.float32(1 + 1e-5)
            keys.append((cell[near] << bits) | t_of[near])
        # every other cell keeps its list; the wide cells' lists are replaced
        count = np.diff(self.list_start)
        narrow = count.copy()
        narrow[wide] = 0
        cell_of = np.repeat(np.arange(len(count)), count)
        kept = np.repeat(narrow > 0, count)
        keys.append((cell_of[kept] << bits) | self.list_tri[kept])
        key = np.concatenate(keys)
        key.sort()
        self.list_tri = (key & ((1 << bits) - 1)).astype(np.int32)
        self.list_start = np.zeros(len(count) + 1, np.int64)
        np.cumsum(np.bincount(key >> bits, minlength=len(count)), out=self.list_start[1:])

    def _kernel_tuples(self) -> None:
        """The grid as the query kernels read it (``kernels.field``'s tuples), built once."""
        # for screen(): float32 columns and strides
        self._origin_col = self.origin.astype(np.float32)[:, None]
        self._inv_cell = np.float32(1.0 / self.cell)
        self._top_col = (self.dims - 1).astype(np.float32)[:, None]
        self._clamp_col = self._top_col + np.float32(0.5)
        self._shift_col = (0.5 - self.origin / self.cell).astype(np.float32)[:, None]
        self._stride = (np.int32(self.dims[1] * self.dims[2]), np.int32(self.dims[2]))
        grid = self.distance_grid
        s0, s1 = int(self._stride[0]), int(self._stride[1])
        self._k_nodes = (grid, self._inv_cell, self._shift_col.ravel().copy(), self._clamp_col.ravel().copy(), s0, s1)
        self._k_grid32 = (grid, self._origin_col.ravel().copy(), self._inv_cell,
                          (self._top_col - 1).ravel().copy(), s0, s1)
        self._k_grid64 = (grid, np.array(self.origin, np.float64), float(self.cell),
                          np.array(self.dims, np.int64), np.float32(self.cell))
        untrusted = np.zeros(0, bool) if self.untrusted is None else self.untrusted
        self._k_errors = (self.grid_error, untrusted, int(self.LIST_CELL), np.array(self.list_dims, np.int64),
                          float(self.cell * self.LIST_CELL), self.list_reach)

    @property
    def nbytes(self) -> int:
        seams = 0 if self.untrusted is None else self.untrusted.nbytes
        return int(self.distance_grid.nbytes + self.list_start.nbytes + self.list_tri.nbytes + seams)


def _pairs(lo: np.ndarray, hi: np.ndarray, dims: np.ndarray):
    """Every (triangle, node) with the node in the triangle's box [lo, hi] (T, 3) of node
    indices (clipped to ``dims``): the triangle of each pair and the node's three indices."""
    i0 = np.clip(lo, 0, dims - 1).astype(np.int32)
    i1 = np.clip(hi, 0, dims - 1).astype(np.int32)
    span = np.maximum(i1 - i0 + 1, 0)
    # Triangles grouped by their box's shape (a few dozen shapes): each group's pairs are one
    # broadcast of its boxes' corners plus the shape's offsets, no division per pair.
    top = int(span.max(initial=0)) + 1
    shape = (span[:, 0].astype(np.int64) * top + span[:, 1]) * top + span[:, 2]
    order = np.argsort(shape, kind="stable")
    kinds, first = np.unique(shape[order], return_index=True)
    parts = []
    for kind, a, b in zip(kinds, first, list(first[1:]) + [len(order)]):
        sx, sy, sz = int(kind // (top * top)), int(kind // top % top), int(kind % top)
        if not sx * sy * sz:
            continue
        tris = order[a:b].astype(np.int32)
        off = np.stack(np.meshgrid(np.arange(sx), np.arange(sy), np.arange(sz), indexing="ij"), 0)
        off = off.reshape(3, 1, -1).astype(np.int32)
        ijk = (i0[tris].T[:, :, None] + off).reshape(3, -1)
        parts.append((np.repeat(tris, sx * sy * sz), ijk))
    if not parts:
        empty = np.zeros(0, np.int32)
        return empty, empty, empty, empty
    t_of = np.concatenate([t for t, _ in parts])
    ijk = np.concatenate([x for _, x in parts], axis=1)
    return t_of, ijk[0], ijk[1], ijk[2]


def _pair_chunks(lo: np.ndarray, hi: np.ndarray, dims: np.ndarray, budget: int = 1 << 21):
    """``_pairs`` over consecutive runs of triangles of about ``budget`` pairs each (bounded
    scratch), triangle indices global."""
    per = np.prod(np.maximum(np.clip(hi, 0, dims - 1) - np.clip(lo, 0, dims - 1) + 1, 0), axis=1)
    cum = np.cumsum(per)
    start = 0
    while start < len(lo):
        base = int(cum[start - 1]) if start else 0
        stop = max(int(np.searchsorted(cum, base + budget, side="right")), start + 1)
        t_of, ix, iy, iz = _pairs(lo[start:stop], hi[start:stop], dims)
        yield (t_of + np.int32(start), ix, iy, iz)
        start = stop


def _sweep(cp: np.ndarray, src: np.ndarray, h: float, rounds: int = 2) -> None:
    """Carry closest points from node to node along each axis, both ways (a fast-sweeping
    closest-point transform), in place: each node keeps the nearer of its own and its
    neighbour's closest point. ``cp`` (3, nx, ny, nz) planar float32, ``src`` (nx, ny, nz) int32
    says which band node each closest point came from (for its pseudo-normal)."""
    dims = src.shape
    coords = [np.arange(d, dtype=np.float32) * np.float32(h) for d in dims]
    for axis in list(range(3)) * rounds:
        # the swept axis first, so every slice is contiguous
        c = [np.ascontiguousarray(np.moveaxis(cp[k], axis, 0)) for k in range(3)]
        s = np.ascontiguousarray(np.moveaxis(src, axis, 0))
        oth = [k for k in range(3) if k != axis]
        shape = s.shape[1:]
        fixed = {oth[0]: coords[oth[0]][:, None], oth[1]: coords[oth[1]][None, :]}
        count = s.shape[0]

        def dist2(i, j):
            """Squared distance from the nodes of slice i to the closest points of slice j."""
            out = np.zeros(shape, np.float32)
            for k in range(3):
                x = coords[axis][i] if k == axis else fixed[k]
                d = np.subtract(x, c[k][j])
                d *= d
                out += d
            return out

        dist = np.zeros(s.shape, np.float32)
        for k in range(3):
            x = coords[axis][:, None, None] if k == axis else fixed[k][None]
            d = np.subtract(x, c[k])
            d *= d
            dist += d
        for order, step in ((range(1, count), -1), (range(count - 2, -1, -1), 1)):
            for i in order:
                dd = dist2(i, i + step)
                better = dd < dist[i]
                if better.any():
                    for k in range(3):
                        np.copyto(c[k][i], c[k][i + step], where=better)
                    np.copyto(s[i], s[i + step], where=better)
                    np.copyto(dist[i], dd, where=better)
        for k in range(3):
            cp[k] = np.moveaxis(c[k], 0, axis)
        src[...] = np.moveaxis(s, 0, axis)
