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

import copy

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

    ``kept``: the grid is queried over many frames (False: built for one frame's deformed mesh;
    its lists are coarser, cheaper to build).

    ``give`` (field units): how far the mesh may yet deform from these triangles, every vertex, and
    its lists still hold the nearest triangle of every point within their reach (``deformed``):
    a triangle whose vertices moved no more than ``give`` is within ``give`` of where it was, so
    lists that take in every triangle three gives farther keep it for every point within their
    reach and two gives — the reach a refit's bounds (twice its move wider) need, so that a
    point the grid cannot clear is never sent to a search of every triangle.

    ``distance_grid`` (N,) float32, the nodes' signed distances (x-major); ``grid_error`` per
    list cell, how far the trilinear distance may be off there; ``untrusted`` per node (None
    when there is no seam), the cells that have no bound; ``list_start``, ``list_tri`` the
    triangles per list cell (CSR) and ``list_reach`` how far from the surface each list is
    exact. The kernels read them as tuples (``_k_nodes``, ``_k_grid32``, ``_k_grid64``,
    ``_k_errors``; ``kernels.field``).
    """

    NODE_BAND = 1.0      # nodes whose distance is computed exactly: within this many cells
    REFIT_BAND = 2.0     # nodes a deformed mesh carries with it (``deformed``): a cell's corners
                         # are within its diagonal, √3, of a point near the surface
    LIST_CELL = 2        # grid cells per side of the cells that keep triangle lists, in a field built
                         # for one frame (a deforming collider's) or one that refits
    KEPT_LIST_CELL = 1   # ... in a field bound once and queried every frame (``kept``)
    KEPT_LISTS = 1 << 21  # at most this many grid nodes for one-cell lists (their starts, 8 bytes each)
    LIST_BAND = 1.5      # a cell keeps the triangles within this many grid cells of it
    COHERENT = 0.8       # a list cell whose unit normals sum to less than this per triangle is folded
    SHEET_ERROR = 1.0    # how far (cells) the grid may be off where the surface is one sheet
    FOLD_ERROR = 2.0     # how far (cells) the grid may be off where the surface folds
    SEAM = 1.0           # a cell whose corners' signs differ by more than its diagonal + this many
                         # cells is a seam (swept nodes are off by up to ~0.13 cell on a sphere)
    SEAM_BAND = 3.5      # a list cell holding part of a seam lists the triangles this many cells out

    def __init__(self, tris: TriangleIndex, cell: float, dims: np.ndarray, give: float = 0.0, kept: bool = True):
        self.cell = cell
        self.give = float(give)
        self.origin = tris.origin
        self.dims = np.asarray(dims, np.int64)
        # lists of one grid cell each are shorter and their error bounds tighter (the surface
        # folds in fewer of them): a Springs bake over Suzanne 8-10 % faster a frame, live 17 %.
        # Eight times as many cells and about four times the entries cost a third more to build
        # and several times the memory, so a field built every frame or refitted keeps two
        fine = kept and not self.give and int(np.prod(self.dims)) <= self.KEPT_LISTS
        self.list_cell = self.KEPT_LIST_CELL if fine else self.LIST_CELL
        corners = tris.corners
        fn = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        # a triangle of no area (a pole's sliver far from the origin rounds to one) has no plane:
        # its NaN normal fails every plane test, and its neighbours' edges stand for it
        with np.errstate(invalid="ignore", divide="ignore"):
            self._faces = np.ascontiguousarray(fn / np.linalg.norm(fn, axis=1, keepdims=True), np.float32)  # (T, 3)
        self._build_lists(tris)
        self._build_grid(tris)
        self._mark_seams()
        self.doubt = self._doubt_cells()
        self._widen_lists(tris)
        self._kernel_tuples()
        self._skin = self._skin_nodes(tris) if self.give else None

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
        h = self.cell * self.list_cell
        grow = self.LIST_BAND * self.cell + 3 * self.give
        self.list_dims = np.floor((self.dims - 1) / self.list_cell).astype(np.int64) + 1
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
        cp, src, feature = self._band(tris, self._faces)
        self.band_nodes = int(np.count_nonzero(src >= 0))
        grid_build.sweep(cp, src, feature, self.dims, float(self.cell), 2)
        self.distance_grid = self._signed(tris, cp, src, feature)

    def _band(self, tris: TriangleIndex, faces: np.ndarray, band: float | None = None):
        """The exact closest point (3, N) float32, its triangle (N,) int32 (−1: none) and feature
        (N,) int8 of every node within ``band`` cells (NODE_BAND) of ``tris`` (``faces`` their unit
        normals)."""
        total = int(np.prod(self.dims))
        cp = np.full((3, total), 1e18, np.float32)        # "none yet"; its square still fits
        src = np.full(total, -1, np.int32)
        feature = np.zeros(total, np.int8)
        grid_build.band_nodes(tris.corners, faces, tris._tri_cols, self.dims, float(self.cell),
                              float((self.NODE_BAND if band is None else band) * self.cell), cp, src, feature)
        return cp, src, feature

    def _signed(self, tris: TriangleIndex, cp, src, feature) -> np.ndarray:
        """Each node's signed distance (N,) float32 to its closest point (``_band``'s, swept or
        not), by the pseudo-normal of its feature, beside an open edge by the winding number."""
        dist = np.empty(int(np.prod(self.dims)), np.float32)
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
        return dist

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
        self._seam_corners = None
        if self.seam_cells:
            touched = np.zeros(d.shape, bool)            # the corners of seam cells
            for a, b, c in corners:
                touched[a:a + d.shape[0] - 1, b:b + d.shape[1] - 1, c:c + d.shape[2] - 1] |= seam
            d[touched] = -np.abs(d[touched])
            # a mesh that may deform moves its seams with it (an open rim's side flips across
            # its winding number's half level, which follows the rim): the cells they may reach
            # are in doubt too, whatever their corners read now — deformed, their corners keep
            # a lower bound only (``deformed``)
            touched = _grown(touched, int(np.ceil(self.give / self.cell)))
            self._seam_corners = np.flatnonzero(touched.ravel()) if self.give else None
            # every cell with a touched corner, flagged at its low corner's node
            cell = np.zeros(d.shape, bool)
            for a, b, c in corners:
                cell[:d.shape[0] - 1, :d.shape[1] - 1, :d.shape[2] - 1] |= touched[
                    a:a + d.shape[0] - 1, b:b + d.shape[1] - 1, c:c + d.shape[2] - 1]
            self.untrusted = cell.ravel()
        self._slack = np.float32(0.5 * np.sqrt(3.0) * self.cell * 1.01 + self.grid_error.max())

    def _doubt_cells(self) -> np.ndarray:
        """Per list cell (int16), whether the grid cannot be trusted to see the surface there at
        all — it folds (a part thinner than a cell: a plate, an ear's rim, which the grid's corners
        may all read outside) or holds part of a seam: −1 for a cell with a seam, 0 for a folded
        one, 1 elsewhere. What a swept collider's contacts read there is exact
        (``kernels.field.in_doubt``)."""
        folded = (self.grid_error > np.float32(1.5 * self.cell)).reshape(tuple(int(x) for x in self.list_dims))
        out = np.where(folded, 0, 1).astype(np.int16)
        if self.untrusted is not None:
            g = np.unravel_index(np.flatnonzero(self.untrusted), tuple(int(x) for x in self.dims))
            out[tuple(x // self.list_cell for x in g)] = -1
        return out.ravel()

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
            band[np.ravel_multi_index(tuple(x // self.list_cell for x in g), tuple(self.list_dims))] = self.SEAM_BAND
        # with give, exact twice the give farther: a refit's bounds grow by twice its move
        # (``deformed``) and must stay within the reach its lists are exact to
        self.list_reach = band * np.float32(self.cell) + np.float32(2 * self.give)
        wide = band > self.LIST_BAND
        if not wide.any():
            return
        h = self.cell * self.list_cell
        start, listed = grid_build.sphere_lists(tris.corners, tris.centres, tris.radii, self.list_dims, h,
                                                self.SEAM_BAND * self.cell + 3 * self.give, wide,
                                                self.list_reach + np.float32(self.give))
        self.list_start, self.list_tri = grid_build.merge_lists(self.list_start, self.list_tri, start, listed, wide)

    def _skin_nodes(self, tris: TriangleIndex):
        """The nodes within REFIT_BAND cells and the give of the surface — those within REFIT_BAND
        of it however it deforms — their closest point's triangle, its barycentric weights there
        (n, 3), the direction (n, 3) in which the signed distance grows, and the grid's value
        there (n,): what ``deformed`` moves with the skin (float32, as the grid holds it)."""
        cp, src, feature = self._band(tris, self._faces, self.REFIT_BAND + self.give / self.cell)
        nodes = np.flatnonzero(src >= 0)
        t = src[nodes].astype(np.int64)
        ijk = np.stack(np.unravel_index(nodes, tuple(int(d) for d in self.dims)), axis=1)
        x = ijk.astype(np.float32).astype(np.float64) * np.float64(np.float32(self.cell))
        c = tris.vertices[tris.triangles[t]] - tris.origin                     # (n, 3, 3)
        foot = cp[:, nodes].T.astype(np.float64)
        e1, e2, w = c[:, 1] - c[:, 0], c[:, 2] - c[:, 0], foot - c[:, 0]
        d00, d01, d11 = (np.einsum("ij,ij->i", a, b) for a, b in ((e1, e1), (e1, e2), (e2, e2)))
        d20, d21 = np.einsum("ij,ij->i", w, e1), np.einsum("ij,ij->i", w, e2)
        den = np.maximum(d00 * d11 - d01 * d01, 1e-300)
        bv, bw = (d11 * d20 - d01 * d21) / den, (d00 * d21 - d01 * d20) / den
        bary = np.stack([1 - bv - bw, bv, bw], 1)
        value = self.distance_grid[nodes]
        sign = np.where(value < 0, -1.0, 1.0)
        off = x - foot
        dist = np.sqrt(np.einsum("ij,ij->i", off, off))
        normal = tris.normals[t, feature[nodes]].astype(np.float64)
        grow = np.where((dist > 1e-9 * tris.extent)[:, None], sign[:, None] * off / np.maximum(dist, 1e-300)[:, None],
                        normal / np.maximum(np.linalg.norm(normal, axis=1, keepdims=True), 1e-300))
        # carried from the grid's own value: a mesh that did not move reads the rest grid's bits
        return (nodes.astype(np.int32 if nodes.size and nodes[-1] < 2**31 else np.int64), t.astype(np.int32),
                bary.astype(np.float32), grow.astype(np.float32), value.copy())

    def deformed(self, triangles: np.ndarray, shift: np.ndarray, moved: float) -> "DistanceGrid":
        """This grid for its mesh deformed by ``shift`` (V, 3) (each vertex's move, none farther
        than ``moved`` ≤ ``give``; ``triangles`` the mesh's): the same lists; the nodes within
        REFIT_BAND cells of the surface carried with it — each one's signed distance less its
        closest point's move along the direction the distance grows there (a surface that
        shifts moves its distance so, to first order: what the substeps' fast distance reads
        where hair touches is the skin as it is now, not as it was) — the others as they were.
        A signed distance changes by no more than the surface moves, and the carried one by no
        more than that again, so every error bound (and the screen's slack) is 2 ``moved``
        larger; no give left."""
        if not moved <= self.give:
            raise ValueError(f"a deformation of {moved:.6g} is beyond the grid's give of {self.give:.6g}")
        out = copy.copy(self)
        out.give = 0.0
        out.grid_error = _up32(self.grid_error.astype(np.float64) + 2 * moved)
        out._slack = np.float32(_up32(float(self._slack) + 2 * moved))
        d = self.distance_grid.copy()
        grid_build.carry_nodes(d, *self._skin, np.ascontiguousarray(triangles, np.int64),
                               np.ascontiguousarray(shift, np.float64))
        if self._seam_corners is not None and moved > 0:     # where a seam may be: a lower bound only
            d[self._seam_corners] = -np.abs(d[self._seam_corners])
        out.distance_grid = d
        out._skin = None
        out._kernel_tuples()
        return out

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
        self._k_errors = (self.grid_error, untrusted, int(self.list_cell), np.array(self.list_dims, np.int64),
                          float(self.cell * self.list_cell), self.list_reach, self.doubt)

    @property
    def nbytes(self) -> int:
        seams = 0 if self.untrusted is None else self.untrusted.nbytes
        return int(self.distance_grid.nbytes + self.list_start.nbytes + self.list_tri.nbytes + seams
                   + self.grid_error.nbytes + self.list_reach.nbytes)


def _up32(x):
    """``x`` (a float or float64 array) as float32, rounded up: a bound stays a bound."""
    x = np.asarray(x, np.float64)
    y = x.astype(np.float32)
    return np.where(y < x, np.nextafter(y, np.float32(np.inf)), y)


def _grown(cells: np.ndarray, k: int) -> np.ndarray:
    """The boolean grid ``cells`` grown by ``k`` cells along each axis (a cube about each)."""
    out = cells
    for axis in range(out.ndim):
        for _ in range(k):
            g = out.copy()
            lo = [slice(None)] * out.ndim
            hi = [slice(None)] * out.ndim
            lo[axis], hi[axis] = slice(0, -1), slice(1, None)
            g[tuple(lo)] |= out[tuple(hi)]
            g[tuple(hi)] |= out[tuple(lo)]
            out = g
    return out


def carried(dist: np.ndarray, skin: tuple, triangles: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``kernels.grid_build.carry_nodes`` in numpy: the plain reference its test holds it to."""
    nodes, t, bary, grow, value = skin
    move = np.einsum("nk,nkj->nj", bary.astype(np.float64), shift[triangles[t]])
    out = dist.copy()
    out[nodes] = value - np.einsum("ij,ij->i", grow.astype(np.float64), move).astype(np.float32)
    return out
