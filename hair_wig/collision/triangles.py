"""Closest points on triangles and the triangle index (SPEC §6.3): a mesh's triangles as the
exact queries read them, and those queries — each point's closest point on the mesh, signed by
the angle-weighted pseudo-normal of its closest feature (Bærentzen & Aanæs 2005), which is exact
for a closed mesh (it has an inside) and makes an open mesh one-sided (its normals say where
outside is).

A point's candidates are the triangles its list cell holds (the cell lists ``grid.DistanceGrid``
builds); where those cannot decide, every triangle that may be nearest is searched (numpy)."""

from __future__ import annotations

import hashlib
import threading

import numpy as np

from ..errors import HairWigError
from ..kernels import field as field_kernels
from ..kernels import grid_build
from ..kernels import winding as winding_kernels
from .rows import _dot, _rows64, _take_rows

# no open edge asks the winding number (``TriangleIndex.wind``, empty)
_NO_WIND = (np.zeros((0, 7), bool), np.zeros((0, 3)), np.zeros((0, 3), np.int64), np.zeros(1, np.int64),
            np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(1, np.int64))

# Feature codes of a closest point on a triangle (a, b, c): which pseudo-normal signs it.
FACE, VERT_A, VERT_B, VERT_C, EDGE_AB, EDGE_BC, EDGE_CA = range(7)


def closest_on_triangles(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray):
    """Closest point on triangle ``(a, b, c)`` to ``p``, pairwise over rows (N, 3) (see
    ``closest_rows``). Returns ``bary (N, 3)`` and ``feature (N,) int8``."""
    bary, feature = closest_rows(*(np.ascontiguousarray(np.asarray(x).T) for x in (p, a, b, c)))
    return bary.T, feature


def closest_rows(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray):
    """Closest point on triangle ``(a, b, c)`` to ``p``, pairwise, points as rows (3, N): the
    plane's foot when it falls inside the triangle, else the nearest of the three edges' clamped
    feet (the Voronoi regions of Ericson, *Real-Time Collision Detection* §5.1.5).

    Returns ``bary (3, N)`` (weights of a, b, c) and ``feature (N,) int8`` (FACE, VERT_*, EDGE_*).
    """
    ab, ac, bc = b - a, c - a, c - b
    ub, uc, feature = closest_feet(p - a, ab, ac, bc, *_gram(ab, ac, bc))
    return np.stack([1 - ub - uc, ub, uc]), feature


def _gram(ab: np.ndarray, ac: np.ndarray, bc: np.ndarray) -> list:
    """What the feet of a triangle's edges ab, ac, bc (rows (3, T)) divide by: d00 = ab·ab,
    d01 = ab·ac, d11 = ac·ac, then 1/(d00 d11 − d01²), 1/d00, 1/d11, 1/(bc·bc) (1 where a
    triangle is degenerate)."""
    d00, d01, d11, ll = _dot(ab, ab), _dot(ab, ac), _dot(ac, ac), _dot(bc, bc)
    den = d00 * d11 - d01 * d01
    return [d00, d01, d11] + [np.divide(1, x, out=np.ones_like(x), where=x != 0) for x in (den, d00, d11, ll)]


def triangle_rows(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """A mesh's triangles ``(a, b, c)`` (rows (3, T)) as ``closest_feet`` reads them, one
    (19, T) array computed once, whose columns a query gathers in one call: a, ab, ac, bc (rows
    0–11) and ``_gram`` (12–18)."""
    ab, ac, bc = b - a, c - a, c - b
    return np.concatenate([a, ab, ac, bc, np.stack(_gram(ab, ac, bc))])


def _closest_on_rows(ap: np.ndarray, rows: np.ndarray):
    """``closest_feet`` of points at ``ap`` (3, N) from a, on ``triangle_rows`` columns."""
    return closest_feet(ap, rows[3:6], rows[6:9], rows[9:12], *rows[12:19])


# feature of an edge's clamped foot: [edge (ab, bc, ca)] × [t ≤ 0, inside, t ≥ 1]
_EDGE_FEATURES = np.array([VERT_A, EDGE_AB, VERT_B, VERT_B, EDGE_BC, VERT_C, VERT_A, EDGE_CA, VERT_C], np.int8)


def closest_feet(ap, ab, ac, bc, d00, d01, d11, inv_den, inv_d00, inv_d11, inv_ll):
    """The closest point on triangles to points at ``ap`` = p − a (3, N), given the triangles'
    edges (rows) and ``_gram``: ``(ub, uc)`` (N,), the closest point being ``a + ub·ab + uc·ac``,
    and its feature (N,) int8 (see ``closest_rows``)."""
    d1, d2 = _dot(ab, ap), _dot(ac, ap)
    v = (d11 * d1 - d01 * d2) * inv_den
    w = (d00 * d2 - d01 * d1) * inv_den
    face = (v >= 0) & (w >= 0) & (v + w <= 1)
    # the three edges' clamped feet: ab from a, bc from b, ca from a (towards c)
    one = ap.dtype.type(1)
    t_ab = np.clip(d1 * inv_d00, 0, one)
    t_ca = np.clip(d2 * inv_d11, 0, one)
    bp = ap - ab
    t_bc = np.clip(_dot(bc, bp) * inv_ll, 0, one)
    e = ap - t_ab * ab
    dist_ab = _dot(e, e)
    e = ap - t_ca * ac
    dist_ca = _dot(e, e)
    e = bp - t_bc * bc
    dist_bc = _dot(e, e)
    on_bc = dist_bc < dist_ab
    on_ca = dist_ca < np.minimum(dist_ab, dist_bc)
    on_bc &= ~on_ca
    t = np.where(on_ca, t_ca, np.where(on_bc, t_bc, t_ab))
    ub = np.where(on_ca, 0, np.where(on_bc, 1 - t, t))
    uc = np.where(on_ca, t, np.where(on_bc, t, 0))
    ub = np.where(face, v, ub)
    uc = np.where(face, w, uc)
    at = on_bc * np.int8(3) + on_ca * np.int8(6) + (t > 0) + (t >= 1)
    feature = _EDGE_FEATURES.take(at)
    feature[face] = FACE
    return ub, uc, feature


_EDGES: dict = {}        # a few meshes' edges by their triangles' bytes (``edges``)
_EDGES_LOCK = threading.Lock()


def corners_of(triangles: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """Which corners (T, 3) bool, a b c, of ``triangles`` (T, 3) are an end of an edge marked in
    ``marked`` (T, 3), edges ab bc ca, of any triangle."""
    t = np.asarray(triangles, np.int64)
    end = np.zeros(int(t.max(initial=-1)) + 1, bool)
    end[np.stack([t, np.roll(t, -1, axis=1)], axis=2)[marked].ravel()] = True
    return end[t]


def edges(triangles: np.ndarray):
    """A triangle list's edges: for each triangle's edges ab, bc, ca (3T,) which of the mesh's
    edges it is, and how many triangles share each edge (both read-only). Kept for the last few
    meshes (a deforming collider's field asks every frame; binding a collider asks several
    times); a bake and the viewport's preview may ask at once."""
    tri = np.ascontiguousarray(triangles, np.int64)
    key = (tri.shape, hashlib.blake2b(tri.data, digest_size=16).digest())
    with _EDGES_LOCK:
        got = _EDGES.get(key)
    if got is not None:
        return got
    if len(tri) == 0:
        got = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    else:
        pairs = np.sort(np.stack([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]], axis=1).reshape(-1, 2), axis=1)
        _, inverse, count = np.unique(pairs[:, 0] * (int(tri.max()) + 1) + pairs[:, 1], return_inverse=True,
                                      return_counts=True)
        got = (inverse.ravel(), count)
    for a in got:
        a.setflags(write=False)
    with _EDGES_LOCK:
        while len(_EDGES) >= 8:
            _EDGES.pop(next(iter(_EDGES)), None)
        _EDGES[key] = got
    return got


def pseudo_normals(vertices: np.ndarray, triangles: np.ndarray, topology=None) -> np.ndarray:
    """Angle-weighted pseudo-normals (T, 7, 3) float64 of every triangle's features, in
    feature-code order: the face, its three vertices (angle-weighted sum of the faces round each
    vertex) and its three edges (sum of the faces on each edge; a boundary edge has its one
    face's). By a kernel (``kernels.grid_build.pseudo_normals``): a deforming collider asks every
    frame. ``topology``: the triangles' ``edges``, if known."""
    v = np.ascontiguousarray(vertices, np.float64)
    tri = np.ascontiguousarray(triangles, np.int64)
    inverse, count = edges(tri) if topology is None else topology
    out = np.empty((len(tri), 7, 3))
    grid_build.pseudo_normals(v, tri, inverse, len(count), out)
    return out


def pseudo_normals_plain(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """``pseudo_normals`` in numpy: the plain reference its kernel is tested against."""
    v = np.asarray(vertices, np.float64)
    tri = np.asarray(triangles, np.int64)
    a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
    n = np.cross(b - a, c - a)
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
    angle = np.empty((len(tri), 3))
    for k in range(3):
        p, q, r = v[tri[:, k]], v[tri[:, (k + 1) % 3]], v[tri[:, (k + 2) % 3]]
        e1, e2 = q - p, r - p
        cos = np.einsum("ij,ij->i", e1, e2) / np.maximum(
            np.linalg.norm(e1, axis=1) * np.linalg.norm(e2, axis=1), 1e-300)
        angle[:, k] = np.arccos(np.clip(cos, -1, 1))
    at = tri.ravel()
    vn = np.stack([np.bincount(at, (n[:, k, None] * angle).ravel(), minlength=len(v)) for k in range(3)], axis=1)
    inverse, count = edges(tri)
    en = np.stack([np.bincount(inverse, np.repeat(n[:, k], 3), minlength=len(count)) for k in range(3)], axis=1)
    out = np.empty((len(tri), 7, 3))
    out[:, FACE] = n
    out[:, VERT_A:VERT_C + 1] = vn[tri]
    out[:, EDGE_AB:EDGE_CA + 1] = en[inverse].reshape(-1, 3, 3)
    return out


def is_closed(triangles: np.ndarray) -> bool:
    """Whether every edge of the mesh has exactly two faces (the mesh has an inside)."""
    return bool(np.all(edges(triangles)[1] == 2))


def exact_signed_distance(points, vertices, triangles, normals=None, chunk: int = 1 << 20):
    """Signed distance of ``points`` (N, 3) to the mesh by brute force over every triangle: the
    closest point, signed by its feature's pseudo-normal. For checks and small meshes."""
    p = np.asarray(points, np.float64)
    v = np.asarray(vertices, np.float64)
    tri = np.asarray(triangles, np.int64)
    normals = pseudo_normals(v, tri) if normals is None else normals
    best = np.full(len(p), np.inf)
    sd = np.zeros(len(p))
    per = max(1, chunk // max(len(tri), 1))
    for s in range(0, len(p), per):
        q = p[s:s + per]
        qi = np.repeat(np.arange(len(q)), len(tri))
        ti = np.tile(np.arange(len(tri)), len(q))
        a, b, c = v[tri[ti, 0]], v[tri[ti, 1]], v[tri[ti, 2]]
        bary, feat = closest_on_triangles(q[qi], a, b, c)
        cp = bary[:, :1] * a + bary[:, 1:2] * b + bary[:, 2:] * c
        diff = q[qi] - cp
        d = np.sqrt(np.einsum("ij,ij->i", diff, diff)).reshape(len(q), len(tri))
        k = d.argmin(axis=1)
        pick = np.arange(len(q)) * len(tri) + k
        sign = np.where(np.einsum("ij,ij->i", diff[pick], normals[ti[pick], feat[pick]]) < 0, -1.0, 1.0)
        best[s:s + per] = d[np.arange(len(q)), k]
        sd[s:s + per] = sign * best[s:s + per]
    return sd



def _signed_volume(v, tri) -> float:
    a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6)


def usable_triangles(vertices, triangles, name: str):
    """A collider's vertices (V, 3) float64 and its triangles (T, 3) int64 without the faces of
    no area (they have no normal to sign by); an error that names the collider when none is
    left."""
    v = np.ascontiguousarray(vertices, np.float64)
    tri = np.ascontiguousarray(triangles, np.int64)
    if tri.ndim != 2 or tri.shape[1] != 3 or len(tri) == 0:
        raise HairWigError(f"'{name}' has no faces to collide with")
    if tri.min() < 0 or tri.max() >= len(v):
        raise HairWigError(f"'{name}' has faces whose corners are not among its {len(v)} vertices")
    area2 = np.empty(len(tri))
    grid_build.doubled_areas(v, tri, area2)        # a deforming collider asks every frame
    tri = tri[area2 > 1e-12 * max(float(area2.max()), 1e-300)]      # degenerate faces: no normal
    if len(tri) == 0:
        raise HairWigError(f"'{name}' has only degenerate faces")
    return v, tri


def side_planes(rel: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Each triangle's plane and its edges' side planes (T, 16) float32, for
    ``kernels.field._lower``: the unit normal n and n·a, then for each edge (a→b, b→c, c→a) its
    outward unit normal within the plane m = (end − start) × n and m·start; ``rel`` (V, 3) the
    vertices relative to the grid's origin."""
    a, b, c = (rel[triangles[:, k]] for k in range(3))
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    out = [n, np.einsum("ij,ij->i", n, a)[:, None]]
    for p, q in ((a, b), (b, c), (c, a)):
        m = np.cross(q - p, n)
        m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-300)
        out += [m, np.einsum("ij,ij->i", m, p)[:, None]]
    return np.ascontiguousarray(np.concatenate(out, axis=1), np.float32)


class TriangleIndex:
    """A mesh's triangles relative to the grid's origin, and the exact queries on them (SPEC
    §6.3): each point's closest point, the signed distance to it and the outward direction there.

    Parameters
    ----------
    vertices : (V, 3) float64, triangles : (T, 3) int64
        The collider, without faces of no area (``usable_triangles``), in field space.
    origin : (3,) float64
        The grid's origin: every per-triangle number is kept relative to it, as the grid's nodes
        and the kernels read them.
    size, extent : float
        The mesh's longest side and its diameter about its centroid (``MeshField``): the scale
        of the queries' slacks.

    The triangles listed per list cell come from the grid (``use_lists``): a point's closest
    triangle is sought among those of its list cell first (``kernels.field.exact_listed``),
    among every triangle that may be nearest where those cannot decide (``exact(every=True)``).
    """

    SUB_CELLS = 2        # sub-cells per side of a kept field's list cells, each with its own candidates
    FINE_NODES = 2       # fine cells per side of those list cells, whose nodes' distances bound a point's
    CHUNK = 1 << 15      # points per exact query at once (its scratch is ~50 triangle pairs each)
    TIGHT_PAIRS = 4096   # exact queries of more (point, triangle) pairs measure a first triangle

    def __init__(self, vertices: np.ndarray, triangles: np.ndarray, origin: np.ndarray, size: float,
                 extent: float, winding=None, like: "TriangleIndex | None" = None):
        v, tri = vertices, triangles
        self.vertices = v
        self.triangles = tri
        self.origin = origin
        self.size = size
        self.extent = extent
        # ``like``: an index of the same triangles elsewhere (a deforming mesh's rest pose), whose
        # topology — closed or not, its open edges, its winding clusters' grouping — is kept
        self._edges = edges(tri) if like is None else like._edges
        self.closed = bool(np.all(self._edges[1] == 2)) if like is None else like.closed
        normals = pseudo_normals(v, tri, self._edges)
        # A closed mesh modelled inside out: its inside is still its inside.
        self.flipped = self.closed and _signed_volume(v, tri) < 0
        if self.flipped:
            normals = -normals
        self.normals = normals.astype(np.float32)                     # (T, 7, 3), feature-code order
        rel = np.ascontiguousarray(v - origin)
        # a triangle's numbers as the kernels read them, by one kernel (``triangle_numbers``):
        # (T, 19) side by side (``triangle_rows``), its grid-relative corners (T, 3, 3), bounding
        # spheres (3, T) and (T,), plane and side planes (T, 16) (``side_planes``)
        nt = len(tri)
        self._tri_cols = np.empty((nt, 19))
        self.corners = np.empty((nt, 3, 3), np.float32)
        self.centres = np.empty((3, nt), np.float32)
        self.radii = np.empty(nt, np.float32)
        self._k_planes = np.empty((nt, 16), np.float32)
        grid_build.triangle_numbers(rel, np.ascontiguousarray(tri, np.int64), self._tri_cols, self.corners,
                                    self.centres, self.radii, self._k_planes)
        self.grid = None
        # beside an open edge (``solid.boundary_features``) the pseudo-normal has no side: where
        # the mesh has an inside (``winding``: the whole mesh, ``solid.Solid.winding``) its
        # winding number decides there, as the kernels' ``wind`` part
        self.boundary = np.zeros((0, 7), bool)
        self.wind = _NO_WIND
        self._grouping = None
        if winding is not None:
            from .solid import boundary_features, clusters

            wv, wt = winding
            open_features = boundary_features(tri) if like is None else like.boundary
            if not open_features.any():       # closed: no side is the winding number's to decide
                return
            self.boundary = open_features
            wrel = np.ascontiguousarray(np.asarray(wv, np.float64) - origin)
            self._grouping = clusters(wrel, np.asarray(wt, np.int64), keep=None if like is None else like._grouping)
            parts = self._grouping[0]
            self.wind = (self.boundary, wrel) + tuple(parts)

    def wound_sides(self, x: np.ndarray, sd: np.ndarray, outward: np.ndarray, t: np.ndarray, feat: np.ndarray,
                    dist: np.ndarray) -> None:
        """Where the closest feature (triangles ``t``, features ``feat``) of points ``x`` (N, 3),
        relative to the origin, is an open edge and the point is off the surface (``dist``), the
        side of signed distances ``sd`` (N,) and directions ``outward`` (N, 3) by the winding
        number (in place; ``kernels.field._exact_point`` does the same per point)."""
        if not self.boundary.shape[0]:
            return
        ask = np.flatnonzero(self.boundary[t, feat] & (dist > 1e-9 * self.extent))
        flip = self.wound(x[ask], sd, ask)
        outward[flip] = -outward[flip]

    def wound(self, x: np.ndarray, sd: np.ndarray, ask: np.ndarray) -> np.ndarray:
        """The signed distances ``sd`` (N,) at ``ask`` (A,), of points ``x`` (A, 3) relative to the
        origin, made inside where the whole mesh's winding number there is above ½, outside
        elsewhere (in place). Returns where the side changed (of ``ask``)."""
        if ask.size == 0:
            return ask
        w = np.empty(ask.size)
        winding_kernels.winding_numbers(np.ascontiguousarray(x, np.float64), *self.wind[1:],
                                        np.zeros(0, np.int64), w)
        flip = ask[(w > 0.5) != (sd[ask] < 0)]
        sd[flip] = -sd[flip]
        return flip

    def use_lists(self, grid) -> None:
        """Find each point's candidates in the cell lists of ``grid`` (``grid.DistanceGrid``,
        built over these triangles), and the kernels' ``tris`` tuple from them."""
        self.grid = grid
        spheres = np.ascontiguousarray(np.concatenate([self.centres, self.radii[None]]).T)      # (T, 4)
        dims, h = np.array(grid.list_dims, np.int64), float(grid.cell * grid.list_cell)
        # (side by side, as the winding number's: a tuple in a tuple cannot enter a parallel loop)
        none = (np.zeros(0, np.int32), np.zeros(1, np.int64), np.zeros(0, np.int32), 1, h, dims,
                np.zeros(0, np.int32), np.zeros(0, np.float32), 1)
        # then each triangle's plane and side planes: what rules a listed triangle out before it
        # is measured (``kernels.field._exact_point``), the sub-cells' shorter lists and the
        # fine nodes' bricks
        self._k_tris = (grid.list_start, grid.list_tri, self._tri_cols, spheres,
                        self.normals, 1e-5 * self.size, 1e-9 * self.extent) + self.wind + (self._k_planes,) + none
        # the same triangles as one list holding every one: where a point's list cell cannot
        # decide (a seam's cell), the exact query searches them all — the first nearest in
        # triangle order after the same bounding-sphere prune, as ``exact_every``
        t = self._tri_cols.shape[0]
        self._k_every = (np.array([0, t], np.int64), np.arange(t, dtype=np.int32)) + self._k_tris[2:16] + none

    def use_sub_lists(self, points: np.ndarray) -> None:
        """Shorter lists where hair is: the list cells holding ``points`` (3, N) float32 rows
        (field space; the hair at rest) and the cells round them, each cut into SUB_CELLS³
        sub-cells listing the triangles that may be nearest there (``grid_build.sub_lists``). A
        query in such a cell measures those only (about 4 of 16 where hair lies over Suzanne),
        with the same pick and bits as from the whole list (``kernels.field._exact_point``);
        elsewhere it reads the whole list. The same cells keep their exact distances at
        FINE_NODES + 1 nodes a side (``grid_build.fine_nodes``), which prove most points near the
        surface outside their limits without a query (``kernels.field.clear_of``). Only for a field queried over many frames (one-cell
        lists: a field built for one frame would not earn it back)."""
        grid = self.grid
        if grid.list_cell != grid.KEPT_LIST_CELL or points.shape[1] == 0:
            return
        h, dims = self._k_tris[20], self._k_tris[21]
        shape = tuple(int(x) for x in dims)
        with np.errstate(invalid="ignore"):
            at = np.floor((np.asarray(points, np.float64).T - grid.origin) / h)
        at = np.clip(at[np.isfinite(at).all(axis=1)].astype(np.int64), 0, dims - 1)
        flat = np.unique(np.ravel_multi_index(at.T, shape))                               # the cells holding hair
        at = np.stack(np.unravel_index(flat, shape), axis=1)
        near = np.stack(np.meshgrid(*[np.arange(-1, 2)] * 3, indexing="ij"), -1).reshape(-1, 3)
        at = np.clip((at[:, None, :] + near[None]).reshape(-1, 3), 0, dims - 1)         # and those round them
        cells = np.unique(np.ravel_multi_index(at.T, shape))
        s = self.SUB_CELLS
        first, start, tri = grid_build.sub_lists(grid.list_start, grid.list_tri, self._tri_cols, dims, h, s,
                                                 float(self._k_tris[5]), cells)
        self._k_tris = self._k_tris[:16] + (first, start, tri, s, h, dims) + self._k_tris[22:]
        n = self.FINE_NODES
        if n <= 0:
            return
        brick, values = grid_build.fine_nodes(self._k_tris, cells, n, grid.list_reach, grid.doubt, self.parts())
        self._k_tris = self._k_tris[:22] + (brick, values, n)

    def parts(self) -> np.ndarray:
        """Each triangle's shell (T,) int64 (joined through shared corners), −1 for a triangle
        touching an edge that is not between two faces (open, or shared by more than two), at an
        edge or a corner: beside those a point's side may jump."""
        tri = np.ascontiguousarray(self.triangles, np.int64)
        if len(tri) == 0:
            return np.zeros(0, np.int64)
        part = winding_kernels.shells(tri, int(tri.max()) + 1)
        if not self.closed:
            inverse, count = self._edges
            odd = (count[inverse] != 2).reshape(-1, 3)
            part[odd.any(axis=1) | corners_of(tri, odd).any(axis=1)] = -1
        return part

    def exact(self, p: np.ndarray, every: bool = False):
        """Exact signed distance (N,) of points ``p`` (N, 3), their closest points (N, 3) and the
        outward direction there (N, 3), from the triangles listed for each point's list cell
        (exact where ``|d|`` is within its cell's ``list_reach``, an upper bound beyond) or,
        ``every``, from every triangle; ``known`` (N,) is False where no triangle was listed (far
        from the surface)."""
        if every:
            return self.exact_every(np.asarray(p, np.float64))
        return self.exact_listed(p)[:4]

    def exact_listed(self, p: np.ndarray):
        """``exact`` from the lists (``kernels.field.exact_listed``), with each point's list cell."""
        rows = _rows64(p)
        n = rows.shape[1]
        sd, closest, outward = np.empty(n), np.empty((n, 3)), np.empty((n, 3))
        known, cell = np.empty(n, bool), np.empty(n, np.int64)
        field_kernels.launch(field_kernels.exact_listed, n, rows, self.grid._k_grid64, self.grid._k_errors,
                             self._k_tris, sd, closest, outward, known, cell, serial=field_kernels.SERIAL_EXACT)
        return sd, closest, outward, known, cell

    def exact_every(self, p: np.ndarray):
        """``exact`` over every triangle that may be closest to each point (numpy: the few points
        the lists cannot decide, ``MeshField._exact_in_band``)."""
        if len(p) > self.CHUNK:                         # bounded scratch, however many points
            parts = [self.exact_every(p[s:s + self.CHUNK]) for s in range(0, len(p), self.CHUNK)]
            return tuple(np.concatenate(x) for x in zip(*parts))
        q_of, t, cnt = self._all_pairs(p)
        known = cnt > 0
        sd = np.full(len(p), np.inf)
        closest = np.zeros((len(p), 3))
        outward = np.zeros((len(p), 3))
        if not known.any():
            return sd, closest, outward, known
        q = np.ascontiguousarray((p - self.origin).T)                       # (3, N) rows
        def nearest_on(x, t):
            """Closest points (3, K) on triangles ``t`` (K,) to ``x`` (3, K) and their features."""
            rows = self._tri_cols.take(t, axis=0).T
            ub, uc, feat = _closest_on_rows(x - rows[0:3], rows)
            cp = rows[0:3] + ub * rows[3:6]
            cp += uc * rows[6:9]
            return cp, feat

        # Bounding spheres first: a triangle farther (at least) than some triangle is (exactly)
        # cannot be the closest. That one is the triangle whose centre is nearest: its exact
        # distance bounds the closest tightly, so most of a cell's list goes before the exact test.
        diff = _take_rows(q.astype(np.float32), q_of)                   # (a bound: float32 will do)
        diff -= _take_rows(self.centres, t)
        dc = np.sqrt(_dot(diff, diff))
        radii = self.radii.take(t)
        starts = np.cumsum(cnt) - cnt
        upper = np.full(len(p), np.inf)
        if len(t) >= self.TIGHT_PAIRS:
            first = self._first_of(dc, q_of, starts, known, len(p))[known]
            x = _take_rows(q, np.flatnonzero(known))
            cp, _ = nearest_on(x, t.take(first))
            x -= cp
            upper[known] = np.sqrt(_dot(x, x))
        else:               # few points: fewer calls beat a tighter bound
            upper[known] = np.minimum.reduceat(dc + radii, starts[known])
        keep = np.flatnonzero(dc - radii <= upper.take(q_of) * (1 + 1e-5) + 1e-5 * self.size)
        q_of, t = q_of.take(keep), t.take(keep)
        x = _take_rows(q, q_of)
        cp, feat = nearest_on(x, t)
        diff = x - cp
        d2 = _dot(diff, diff)
        cnt = np.bincount(q_of, minlength=len(p))
        starts = np.cumsum(cnt) - cnt
        k = self._first_of(d2, q_of, starts, known, len(p))[known]       # the first tie in each list
        n = self.normals[t[k], feat[k]].astype(np.float64)
        dk = _take_rows(diff, k).T
        dist = np.sqrt(d2.take(k))
        side = np.einsum("ij,ij->i", dk, n)
        sign = np.where(side < 0, -1.0, 1.0)
        sd[known] = sign * dist
        closest[known] = _take_rows(cp, k).T + self.origin
        safe = dist > 1e-9 * self.extent
        nn = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
        outward[known] = np.where(safe[:, None], dk * (sign / np.where(safe, dist, 1))[:, None], nn)
        if self.boundary.shape[0]:
            at = np.flatnonzero(known)
            sk, ok_ = sd[at], outward[at]
            self.wound_sides(q.T[at], sk, ok_, t[k], feat[k], dist)
            sd[at], outward[at] = sk, ok_
        return sd, closest, outward, known

    def _all_pairs(self, p: np.ndarray):
        """(point, triangle) pairs over every triangle that may be closest to each point (its
        bounding sphere is no farther than the nearest sphere's far side): for the few points
        the lists cannot decide."""
        q = (p - self.origin).astype(np.float32)
        radii = self.radii
        step = max(1, (1 << 22) // len(radii))
        q_of, t = [], []
        for s in range(0, len(q), step):
            x = q[s:s + step]
            d2 = np.zeros((len(x), len(radii)), np.float32)
            for k in range(3):
                diff = self.centres[k][None, :] - x[:, k, None]
                d2 += diff * diff
            dc = np.sqrt(d2, out=d2)
            upper = (dc + radii).min(axis=1)
            rows, cols = np.nonzero(dc - radii <= upper[:, None] * (1 + 1e-5) + 1e-5 * self.size)
            q_of.append(rows + s)
            t.append(cols)
        q_of = np.concatenate(q_of)
        return q_of, np.concatenate(t).astype(np.int32), np.bincount(q_of, minlength=len(p))

    @staticmethod
    def _first_of(value, owner, starts, known, n):
        """Per owner (N,), the position in ``value`` of its first smallest entry (owners' entries
        are contiguous from ``starts``; -1 where an owner has none, ``known`` False)."""
        best = np.full(n, np.inf)
        best[known] = np.minimum.reduceat(value, starts[known])
        rows = np.flatnonzero(value == best.take(owner))
        pick = np.full(n, -1, np.int64)
        pick[owner.take(rows[::-1])] = rows[::-1]
        return pick
