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

from ..kernels import grid_build
from .triangles import TriangleIndex


MAX_NODES = 1 << 23       # a field's grid holds at most this many nodes (~250 MB while it is built)


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
        self.dims = np.asarray(dims, np.int64)
        corners = tris.corners
        fn = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        # a triangle of no area (a pole's sliver far from the origin rounds to one) has no plane:
        # its NaN normal fails every plane test, and its neighbours' edges stand for it
        with np.errstate(invalid="ignore", divide="ignore"):
            self._faces = np.ascontiguousarray(fn / np.linalg.norm(fn, axis=1, keepdims=True), np.float32)  # (T, 3)
        self._build_lists(tris)
        self._build_grid(tris)
        self._mark_seams()
        self._widen_lists(tris)
        self._kernel_tuples()

    def _build_lists(self, tris: TriangleIndex):
        """Triangles per list cell (CSR): those whose box, grown by LIST_BAND cells, meets the
        cell, and whose plane passes within that band plus half the cell's diagonal of its
        centre. A point within LIST_BAND cells of the surface finds its closest triangle there.

        How far the grid's distance may be off in each cell: a cell where the surface is one
        sheet interpolates a 1-Lipschitz distance from its corners, off by at most the mean
        distance to them (half its diagonal, at its centre: 0.87) plus the swept nodes' own
        error (~0.13 on a sphere): one cell (half a cell, assumed before, was 0.83 off beside
        Suzanne's eye); where it folds back within the cell's reach (an ear, an eyelid, a thin
        brim: faces whose normals disagree), the grid cannot see the inside, and up to two."""
        h = self.cell * self.LIST_CELL
        grow = self.LIST_BAND * self.cell
        self.list_dims = np.floor((self.dims - 1) / self.LIST_CELL).astype(np.int64) + 1
        reach = grow + 0.5 * np.sqrt(3.0) * h
        self.list_start, self.list_tri = grid_build.plane_lists(tris.corners, self._faces, self.list_dims, h, grow,
                                                                reach)
        self.grid_error = np.empty(len(self.list_start) - 1, np.float32)
        grid_build.list_errors(self.list_start, self.list_tri, self._faces, self.COHERENT,
                               np.float32(self.SHEET_ERROR * self.cell), np.float32(self.FOLD_ERROR * self.cell),
                               self.grid_error)

    def _build_grid(self, tris: TriangleIndex):
        """Signed distance at every node: exact for the nodes within NODE_BAND cells of the
        surface, then closest points swept to every other node, each signed by the pseudo-normal
        of its closest point's feature (beside an open edge, by the winding number)."""
        total = int(np.prod(self.dims))
        cp = np.full((3, total), 1e18, np.float32)        # "none yet"; its square still fits
        src = np.full(total, -1, np.int32)
        feature = np.zeros(total, np.int8)
        grid_build.band_nodes(tris.corners, self._faces, tris._tri_cols, self.dims, float(self.cell),
                              float(self.NODE_BAND * self.cell), cp, src, feature)
        self.band_nodes = int(np.count_nonzero(src >= 0))
        grid_build.sweep(cp, src, feature, self.dims, float(self.cell), 2)
        dist = np.empty(total, np.float32)
        grid_build.signed_nodes(cp, src, feature, tris.normals, self.dims, float(self.cell), dist)
        if tris.boundary.shape[0]:
            # a node whose closest point lies on an open edge: its side by the winding number
            reached = np.flatnonzero(src >= 0)
            opened = tris.boundary[src[reached], feature[reached]]
            at = reached[opened & (np.abs(dist[reached]) > 1e-9 * tris.extent)]
            if at.size:
                ijk = np.stack(np.unravel_index(at, tuple(int(d) for d in self.dims)), axis=1)
                x = ijk.astype(np.float32).astype(np.float64) * np.float64(np.float32(self.cell))
                tris.wound(x, dist, at)
        self.distance_grid = dist

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

        A wide cell lists the triangles whose box grown by SEAM_BAND cells meets it and whose
        bounding sphere comes within its band of the cell's box."""
        band = np.full(len(self.list_start) - 1, np.float32(self.LIST_BAND))
        band[self.grid_error > np.float32(self.SHEET_ERROR * self.cell)] = self.FOLD_ERROR
        if self.untrusted is not None:
            g = np.unravel_index(np.flatnonzero(self.untrusted), tuple(int(x) for x in self.dims))
            band[np.ravel_multi_index(tuple(x // self.LIST_CELL for x in g), tuple(self.list_dims))] = self.SEAM_BAND
        self.list_reach = band * np.float32(self.cell)
        wide = band > self.LIST_BAND
        if not wide.any():
            return
        h = self.cell * self.LIST_CELL
        start, listed = grid_build.sphere_lists(tris.corners, tris.centres, tris.radii, self.list_dims, h,
                                                self.SEAM_BAND * self.cell, wide, self.list_reach)
        self.list_start, self.list_tri = grid_build.merge_lists(self.list_start, self.list_tri, start, listed, wide)

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
