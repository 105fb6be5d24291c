"""The field queries (SPEC §6.3): which query answers where. ``MeshField`` is what every client
asks — a triangle mesh's signed distance, the push out to a limit, the grid's quick screens and
bounds — composed of the grid (``grid.DistanceGrid``: distances on nodes, how far they may be
off, the cell lists) and the triangle index (``triangles.TriangleIndex``: exact closest points).
Far from the surface the grid answers; within the exact band, or wherever the grid cannot be
trusted with the side, the triangles do. ``RayField`` is the patent's ray test behind the same
queries."""

from __future__ import annotations

import numpy as np

from ..kernels import field as field_kernels
from .grid import DistanceGrid, place_grid
from .rows import _rows32, _rows64, _take_rows
from .triangles import TriangleIndex, usable_triangles


def _of(part: str, name: str, doc: str) -> property:
    """The attribute ``name`` of the field's ``part`` (``grid`` or ``index``), read on the field."""
    return property(lambda self: getattr(getattr(self, part), name), doc=doc)


class MeshField:
    """A triangle mesh's signed distance on a regular grid, in the mesh's own space (SPEC §6.3).

    Parameters
    ----------
    vertices : (V, 3), triangles : (T, 3)
        The collider (any units; the grid follows its size).
    resolution : int or None
        Grid nodes along the mesh's longest side; by default about one cell per triangle edge
        (between 48 and 160). Precision near the surface does not depend on it (pushes there
        are exact); it sets how far the exact band reaches and the cost.
    margin : float
        How far beyond the mesh the grid reaches (at least the largest offset asked for).
    name : str
        The collider, for messages.
    cell : float or None
        The grid's cell size, if it is to be that of another field (a deformed collider's).
    winding : ((V', 3), (T', 3)) or None
        What decides the side beside an open edge: the whole mesh's winding number
        (``solid.Solid.winding``); None: the nearest feature's pseudo-normal everywhere.
    give : float
        How far (field units) every vertex may yet move with the field following by ``refit``
        (a deforming collider's), not by a new build.
    kept : bool
        Whether the field is queried over many frames: its triangle lists are then per grid
        cell, unless it has ``give`` or more than ``DistanceGrid.KEPT_LISTS`` nodes (False: it
        is one frame's, a deforming collider's built again each frame; per two cells, cheaper to
        build, slower to query).
    like : MeshField or None
        A field of the same triangles elsewhere (a deforming collider's as bound), whose topology
        is kept: which vertices the triangles use, and the index's (``TriangleIndex``'s ``like``).

    Its parts: ``grid`` (``DistanceGrid``) and ``index`` (``TriangleIndex``). Which of them
    answers where is decided here: the grid's nearest node screens (``screen``,
    ``lower_bound``), its trilinear value and error bound say who may be near (``distance_rows``),
    the triangles answer within the exact band or where the grid is in doubt
    (``signed_distance``, ``project``, ``_exact_in_band``), the grid's gradient beyond.
    """

    LIST_BAND = DistanceGrid.LIST_BAND     # the lists are exact this many cells out (at least)

    def __init__(self, vertices, triangles, resolution: int | None = None, margin: float = 0.0,
                 name: str = "collider", cell: float | None = None, winding=None, give: float = 0.0,
                 kept: bool = True, like: "MeshField | None" = None):
        v, tri = usable_triangles(vertices, triangles, name)
        if like is not None and not np.array_equal(tri, like.triangles):     # a face lost its area
            like = None
        self.name = name
        self._used = np.unique(tri) if like is None else like._used          # the vertices the triangles use
        used = v[self._used]
        lo, hi = used.min(axis=0), used.max(axis=0)
        self.size = float(max((hi - lo).max(), 1e-12))
        # the mesh's diameter about its centroid, to within a factor 2: unlike the box it does not
        # change as the mesh turns, so tolerances scaled by it decide alike in any orientation
        self.extent = float(max(2 * np.sqrt(((used - used.mean(axis=0)) ** 2).sum(axis=1).max()), 1e-12))
        self.box = (lo, hi)
        h, origin, dims = place_grid(v, tri, lo, hi, self.size, resolution, margin, cell)
        self.index = TriangleIndex(v, tri, origin, self.size, self.extent, winding,
                                   like=None if like is None else like.index)
        self.grid = DistanceGrid(self.index, h, dims, give, kept)
        self.index.use_lists(self.grid)
        self._k_box = (np.array(lo, np.float64), np.array(hi, np.float64), np.float32(self.exact_reach))
        self.moved_by = 0.0

    def deformation(self, vertices: np.ndarray) -> float:
        """How far the farthest vertex of ``vertices`` (V, 3), field space, is from this field's
        own (inf when they are not as many)."""
        v = np.asarray(vertices, np.float64)
        if v.shape != self.vertices.shape:
            return np.inf
        d = v[self._used] - self.vertices[self._used]
        return float(np.sqrt(np.einsum("ij,ij->i", d, d).max()))

    def refit(self, vertices: np.ndarray, winding=None) -> "MeshField | None":
        """This field's mesh deformed to ``vertices`` (V, 3) (field space, the same triangles),
        where no vertex moved farther than the grid's ``give``: the lists are kept, the grid's
        nodes near the surface carried with it (``DistanceGrid.deformed``: every bound twice
        ``moved`` wider), the triangles measured where they are now — exact distances and sides
        are the deformed mesh's, as a new build's, and the fast distance where hair touches
        follows the skin. A refit costs the triangles' numbers (and the winding number's
        clusters, ``winding``: the deformed solid's), not the lists or the grid. None where the
        mesh moved beyond the give or a triangle lost its area (a new build then)."""
        moved = self.deformation(vertices)
        if not moved <= self.grid.give or self.grid._skin is None:
            return None
        tri = self.triangles
        v, usable = usable_triangles(vertices, tri, self.name)
        if len(usable) != len(tri):
            return None
        out = object.__new__(MeshField)
        out.name, out.size, out.extent, out._used = self.name, self.size, self.extent, self._used
        used = v[self._used]
        lo, hi = used.min(axis=0), used.max(axis=0)
        out.box = (lo, hi)
        out.index = TriangleIndex(v, tri, self.origin, self.size, self.extent, winding, like=self.index)
        out.grid = self.grid.deformed(tri, v - self.vertices, moved)
        out.index.use_lists(out.grid)
        out._k_box = (np.array(lo, np.float64), np.array(hi, np.float64), np.float32(out.exact_reach))
        out.moved_by = moved
        return out

    @classmethod
    def of_solid(cls, vertices, triangles, solid=None, resolution: int | None = None, **kw) -> "MeshField":
        """The field of the surface of a mesh's solid (``solid.Solid``: small holes closed, shells
        inside others dropped, the winding number deciding the side beside an open edge): what a
        mesh as artists model it (open eye sockets, eyes sunk into the head) collides as — every
        collider, Style Hair and Draw Hair alike. ``solid``: the mesh's, decided already (by
        default decided here); its cell (``cell``, else ``resolution``) is sized by the mesh as
        modelled: the fans' long edges say nothing of its detail. The solid is kept as ``solid``."""
        from .grid import cell_of
        from .solid import Solid

        v, tri = usable_triangles(vertices, triangles, kw.get("name", "collider"))
        solid = Solid(v, tri) if solid is None else solid
        if not kw.get("cell"):
            kw["cell"] = cell_of(v, tri, float((v.max(axis=0) - v.min(axis=0)).max()), resolution)
        w = solid.vertices(v)
        field = cls(w, solid.triangles, winding=solid.winding(w), **kw)
        field.solid = solid
        return field

    vertices = _of("index", "vertices", "The mesh's vertices (V, 3) float64, field space.")
    triangles = _of("index", "triangles", "Its triangles (T, 3) int64, without faces of no area.")
    cell = _of("grid", "cell", "The grid's cell size (field units).")
    origin = _of("grid", "origin", "The grid's first node (3,) float64.")
    dims = _of("grid", "dims", "The grid's nodes per axis (3,) int64.")
    list_reach = _of("grid", "list_reach", "How far from the surface each list cell's list is exact (float32).")
    # what the kernels read (``kernels.field``'s tuples), each part's own; ``_k_box`` is the field's
    _k_nodes = _of("grid", "_k_nodes", "The grid's nodes, as ``screen`` and ``lower_bound`` read them.")
    _k_grid32 = _of("grid", "_k_grid32", "The grid in float32 coordinates (``distance_rows``).")
    _k_grid64 = _of("grid", "_k_grid64", "The grid in float64 coordinates (``lookup``).")
    _k_errors = _of("grid", "_k_errors", "The grid's error bounds and the lists' cells and reach.")
    _k_tris = _of("index", "_k_tris", "The cell lists and the triangles (the exact queries).")
    _k_every = _of("index", "_k_every", "Every triangle as one list (a seam's cell's exact query).")
    _k_planes = _of("index", "_k_planes", "Each triangle's plane and side planes (``_depths``'s bound).")
    _slack = _of("grid", "_slack", "``slack``, as the kernels read it.")
    nbytes = _of("grid", "nbytes", "What the grid and its lists hold (bytes).")

    @property
    def exact_reach(self) -> float:
        """How far from the surface distances and pushes are exact."""
        return self.LIST_BAND * self.cell

    @property
    def pad(self) -> float:
        """How far beyond the mesh's box the grid reaches, at least (field units)."""
        return float((self.box[0] - self.origin).min())

    @property
    def inside_at_edge(self) -> bool:
        """Whether the mesh's inside reaches the grid's edge (a node on one of its six faces is
        inside), so goes on beyond it, where every query reads +inf (outside): an open mesh's
        pseudo-normal sign makes all that lies under a ground plane's level past its rim inside,
        however far."""
        d = self.grid.distance_grid.reshape(tuple(int(n) for n in self.dims))
        return bool(min(d[0].min(), d[-1].min(), d[:, 0].min(), d[:, -1].min(), d[:, :, 0].min(),
                        d[:, :, -1].min()) < 0)

    def exact(self, p: np.ndarray, every: bool = False):
        """``TriangleIndex.exact``: exact signed distance (N,) of points ``p`` (N, 3), their
        closest points (N, 3), the outward direction there (N, 3) and whether any triangle was
        listed (N,): from each point's list cell or, ``every``, from every triangle."""
        return self.index.exact(p, every)

    # ------------------------------------------------------------------ queries
    # Per point, kernels (``kernels.field``) doing what the numpy code did, in its order and
    # types, so every query gives its bits; the numpy code stays for searches of every triangle.
    def lookup(self, p: np.ndarray):
        """Trilinear signed distance (N,) and its gradient (N, 3) at points ``p`` (N, 3); points
        beyond the grid get +inf (they are farther than any clearance asked for). Float32, in
        float64 cell coordinates."""
        d, g = self._lookup_rows(_rows64(p))
        return d, g.T

    def _lookup_rows(self, rows: np.ndarray):
        """``lookup`` at float64 rows (3, N) C-contiguous: distance (N,) and gradient (3, N)."""
        d = np.empty(rows.shape[1], np.float32)
        g = np.empty((3, rows.shape[1]), np.float32)
        field_kernels.launch(field_kernels.lookup, rows.shape[1], rows, self._k_grid64, d, g)
        return d, g

    def gradient(self, p: np.ndarray) -> np.ndarray:
        """The direction (N, 3) in which the distance grows fastest at ``p``: away from the
        surface (the trilinear gradient; zero beyond the grid)."""
        d, g = self.lookup(p)
        g[~np.isfinite(d)] = 0
        return g

    @property
    def slack(self) -> np.float32:
        """What ``screen`` subtracts from the nearest node's distance for a lower bound: what the
        distance can change over half a cell's diagonal, plus the grid's largest error."""
        return self._slack

    def screen(self, x: np.ndarray, reach: np.ndarray) -> np.ndarray:
        """Which points ``x`` (3, S) float32 rows, field space, may lie within ``reach − slack``
        (S,) of the surface: the nearest node's distance is then below ``reach``. One gather per
        point, no clipping of coordinates: a point beyond the grid lands on some node (its index
        is clipped by the gather), and it is farther from the mesh than the grid's pad, which is
        more than any limit — whatever that node says is safe (a false "near" is only looked up).
        A blown-up (NaN) point lands on a corner and is caught after refinement. Positions into
        ``x``."""
        return np.flatnonzero(self._node_values(x, clamp=False) < reach)

    def lower_bound(self, x: np.ndarray) -> np.ndarray:
        """A lower bound (S,) float32 of the distance of points ``x`` (3, S) float32 rows, field
        space: the nearest node's distance minus ``slack``. A point beyond the grid reads the
        node nearest its projection onto the grid's box, which is no farther from the mesh than
        the point (the mesh lies inside that box), so the bound holds everywhere."""
        v = self._node_values(x, clamp=True)
        v -= self._slack
        return v

    def _node_values(self, x: np.ndarray, clamp: bool) -> np.ndarray:
        """The distance at the grid node nearest each point ``x`` (3, S) float32 rows: one gather
        (``x / cell + ½ − origin / cell`` truncated to int32, the flat index clipped by the
        gather). ``clamp``: coordinates beyond the grid are first moved onto its box (else the
        gather clips the flat index, which is only safe for ``screen``)."""
        x = _rows32(x)
        out = np.empty(x.shape[1], np.float32)
        field_kernels.launch(field_kernels.node_values, x.shape[1], x, self._k_nodes, bool(clamp), out)
        return out

    def trilinear_rows(self, x: np.ndarray) -> np.ndarray:
        """Trilinear signed distance (S,) float32 of points ``x`` (3, S) float32 rows, field
        space; beyond the grid +inf."""
        return self._rows_query(x, False)[0]

    def distance_rows(self, x: np.ndarray):
        """Trilinear signed distance (S,) float32 of points ``x`` (3, S) float32 rows, field
        space, and how far it may be from the exact one (S,) (its list cell's ``grid_error``,
        inf where the cell is ``untrusted``); beyond the grid +inf."""
        return self._rows_query(x, True)

    def _rows_query(self, x: np.ndarray, want_error: bool):
        x = _rows32(x)
        d = np.empty(x.shape[1], np.float32)
        err = np.empty(x.shape[1] if want_error else 0, np.float32)
        field_kernels.launch(field_kernels.trilinear_rows, x.shape[1], x, self._k_grid32, self._k_errors, want_error, d,
                             err)
        return d, err

    def contact_rows(self, rows: np.ndarray, direction: bool = False):
        """The distance the substeps' contacts collide by at float64 rows (3, N) field space
        (``kernels.field.contact_rows``): the grid's — trilinear at the float32 point, or with
        ``direction`` the float64 lookup's and its gradient (3, N) — but exact where the grid
        cannot be trusted to see the surface (a folded cell: a part thinner than a cell, which its
        corners may all read outside; a seam: ``DistanceGrid._doubt_cells``), float64 (N,)."""
        rows = np.ascontiguousarray(rows, np.float64)
        n = rows.shape[1]
        d, g = np.empty(n), np.empty((3, n) if direction else (3, 0))
        field_kernels.launch(field_kernels.contact_rows, n, rows, self._k_grid32, self._k_grid64, self._k_errors,
                             self._k_tris, bool(direction), d, g, serial=field_kernels.SERIAL_EXACT)
        return d, (g if direction else None)

    def _cells(self, p: np.ndarray):
        """The list cell and the (clipped) grid cell, flat, of each point ``p`` (N, 3)."""
        rows = _rows64(p)
        cell = np.empty(rows.shape[1], np.int64)
        base = np.empty(rows.shape[1], np.int64)
        field_kernels.launch(field_kernels.grid_cells, rows.shape[1], rows, self._k_grid64, self._k_errors, cell, base)
        return cell, base

    def _list_cell(self, p: np.ndarray) -> np.ndarray:
        return self._cells(p)[0]

    def error_at(self, p: np.ndarray, cell: np.ndarray | None = None) -> np.ndarray:
        """How far (N,) the grid's distance at points ``p`` may be from the exact one (inf where
        the cell is ``untrusted``); ``cell``: their list cells, if known."""
        known, base = self._cells(p)
        err = self.grid.grid_error[known if cell is None else cell]
        if self.grid.untrusted is not None:
            err[self.grid.untrusted[base]] = np.inf
        return err

    def signed_distance(self, p: np.ndarray) -> np.ndarray:
        """The signed distance (N,) float32 as the collider sees it: exact near the surface, the
        grid's beyond (the same rule ``project`` decides by, so rest clearances and pushes agree),
        and beyond the grid the distance to the mesh's box (a lower bound, and more than any
        offset)."""
        p = np.asarray(p, np.float64)
        rows = _rows64(p)
        d = np.empty(rows.shape[1], np.float32)
        redo = np.empty(rows.shape[1], bool)
        field_kernels.launch(field_kernels.signed_distances, rows.shape[1], rows, self._k_grid64, self._k_errors,
                             self._k_tris, self._k_box, d, redo, serial=field_kernels.SERIAL_EXACT)
        self._redo(p.reshape(-1, 3), d, redo)
        return d

    def _redo(self, p: np.ndarray, d: np.ndarray, redo: np.ndarray) -> None:
        """Where the kernels left a point's distance to a search of every triangle (``redo``):
        ``d`` of points ``p`` (N, 3) becomes its exact distance there, where one is found."""
        again = np.flatnonzero(redo)
        if again.size:
            sd, _, _, ok = self.index.exact_every(p[again])
            d[again[ok]] = sd[ok]

    def _depths(self, x: np.ndarray, limit: np.ndarray) -> np.ndarray:
        """``limit − signed_distance`` (S,) float32 of points ``x`` (3, S) float32 rows, field
        space, that may be inside their ``limit`` (S,) float32; −inf where they are not (their
        depth would be ≤ 0): the grid's screen and its trilinear bound, then the lists' lower
        bound (``kernels.field._outside``) (``Collider.held_depth``)."""
        x = _rows32(x)
        depth = np.empty(x.shape[1], np.float32)
        redo = np.empty(x.shape[1], bool)
        field_kernels.launch(field_kernels.held_depths, x.shape[1], x, np.ascontiguousarray(limit, np.float32),
                             self._k_nodes, self._slack, self._k_grid32, self._k_grid64, self._k_errors, self._k_tris,
                             self._k_box, self._k_planes, depth, redo, serial=field_kernels.SERIAL_EXACT)
        again = np.flatnonzero(redo)
        if again.size:                          # a seam's: every triangle searched
            sd = self.signed_distance(_take_rows(x, again).T.astype(np.float64))
            depth[again] = np.asarray(limit, np.float32).take(again) - sd
        return depth

    def _exact_in_band(self, p: np.ndarray, grid: np.ndarray):
        """``exact`` with ``ok`` (N,): where the distance is exact. Where it is not (beyond the
        list's reach), the grid's distance ``grid`` (N,) decides — its error there is within the
        reach (``DistanceGrid._widen_lists``), so its sign is right — unless the cell is a seam's
        and the point is farther than ``DistanceGrid.SEAM_BAND`` cells: there every triangle is
        searched."""
        sd, cp, out, known, cell = self.index.exact_listed(p)
        reach = self.list_reach[cell]
        ok = known & (np.abs(sd) <= reach)
        if ok.all():
            return sd, cp, out, ok
        err = self.error_at(p, cell)
        redo = np.flatnonzero(~ok & (np.abs(grid) <= err) & (err > reach))
        if redo.size:
            r = self.index.exact(p[redo], every=True)
            sd[redo], cp[redo], out[redo] = r[0], r[1], r[2]
            ok[redo] = r[3]
        return sd, cp, out, ok

    def project(self, p: np.ndarray, limit: np.ndarray, tolerance: float = 0.0, direction: bool = False,
                short: bool = False):
        """Push every point of ``p`` (N, 3) whose signed distance is below ``limit`` (N,) out to
        that distance: exactly from its closest point near the surface, along the grid's gradient
        beyond. Returns the new positions (N, 3) of the points moved, and their indices; with
        ``direction`` also the unit direction (N, 3) each was pushed along (the surface's outward
        one at its closest point: a push of a rounding still has a direction to the digit).
        ``short``: a push along the gradient stops short by the grid's error there, so it never
        carries a point past its limit (the distance is 1-Lipschitz: a move of ``limit − d −
        error`` cannot raise the exact distance above ``limit``); pushed again, the point is
        placed exactly (``collision.PoseContacts``)."""
        d, grad = self.lookup(p)
        lim = np.asarray(limit, np.float64)
        err = self.error_at(p)
        maybe = np.flatnonzero(d < lim + err)
        if maybe.size == 0:
            return (np.zeros((0, 3)), maybe) + ((np.zeros((0, 3)),) if direction else ())
        p = np.asarray(p, np.float64)
        dm = d[maybe].astype(np.float64)
        lim = lim[maybe]
        new = p[maybe].copy()
        along = np.zeros_like(new)
        moved = np.zeros(len(maybe), bool)
        grid = np.ones(len(maybe), bool)                 # decided by the grid
        check = np.flatnonzero(np.abs(dm) < self.exact_reach + err[maybe])
        if check.size:
            sd, cp, out, ok = self._exact_in_band(p[maybe[check]], dm[check])
            push = ok & (sd < lim[check] - tolerance)
            k = check[push]
            new[k] = cp[push] + out[push] * lim[check][push, None]
            along[k] = out[push]
            moved[k] = True
            grid[check[ok]] = False
        far = grid & (dm < lim - tolerance)
        if far.any():
            g = grad[maybe][far].astype(np.float64)
            gn = np.linalg.norm(g, axis=1, keepdims=True)
            g = np.where(gn > 1e-12, g / np.maximum(gn, 1e-300), 0.0)
            step = lim[far] - dm[far]
            if short:
                step = step - err[maybe][far]
            new[far] += g * step[:, None]
            along[far] = g
            moved |= far
        if direction:
            return new[moved], maybe[moved], along[moved]
        return new[moved], maybe[moved]


class RayField:
    """The patent's ray test (seed 000, "Refinement"; SPEC §6.3 *Ray (patent)*) behind the same
    queries as ``MeshField``: the signed distance is measured along the ray from the head's
    centre, ``|q − l| − r(direction)``, and a point is pushed out along that ray."""

    def __init__(self, radius_map):
        self.map = radius_map
        self.name = radius_map.name
        self.size = self.extent = 2 * radius_map.outer
        self.cell = self.size / max(radius_map.shape)

    def _polar(self, p):
        rel = np.asarray(p, np.float64) - self.map.centre
        r = np.linalg.norm(rel, axis=1)
        dirs = np.where(r[:, None] > 0, rel / np.where(r > 0, r, 1)[:, None], np.array([0.0, 0.0, 1.0]))
        return r, dirs, self.map.radius(dirs.astype(np.float32)).astype(np.float64)

    def signed_distance(self, p: np.ndarray) -> np.ndarray:
        r, _, radius = self._polar(p)
        return r - radius

    def project(self, p: np.ndarray, limit: np.ndarray, tolerance: float = 0.0, direction: bool = False,
                short: bool = False):
        r, dirs, radius = self._polar(p)
        moved = np.flatnonzero(r - radius < np.asarray(limit, np.float64) - tolerance)
        new = self.map.centre + dirs[moved] * (radius[moved] + limit[moved])[:, None]
        return (new, moved, dirs[moved]) if direction else (new, moved)

