"""Collision as a layer of its own (SPEC §6.3): colliders bound once in their own space, queried
by whoever needs them — refinement today, the strand solvers of SPEC §8 next.

A collider is a triangle mesh (the head, a body, shoulders, a ground plane, a hat). Its signed
distance is kept on a regular grid built at bind (``MeshField``): exact point-to-triangle
distances in a narrow band round the surface, carried to every other node by sweeping closest
points through the grid, and signed by the angle-weighted pseudo-normal of the closest feature
(Bærentzen & Aanæs 2005), which is exact for a closed mesh — it has an inside — and makes an open
mesh (a ground plane, a scalp patch) one-sided: its normals say where outside is.

A point is pushed out along the distance gradient, never along a ray from a centre. Near the
surface the push is exact: each grid node keeps the triangles within its band, and the point goes
to its closest point on them plus its allowed clearance along the outward direction.

**The groom is sacred** (SPEC §6.3): at bind each vertex records its rest clearance ``d0`` to
every collider; its collision surface is ``min(offset, d0)``, so nothing moves at the rest frame.
"""

from __future__ import annotations

import numpy as np

from .children import transplant
from .errors import HairWigError
from .kernels import field as field_kernels
from .refinement import RadiusMap

# Feature codes of a closest point on a triangle (a, b, c): which pseudo-normal signs it.
FACE, VERT_A, VERT_B, VERT_C, EDGE_AB, EDGE_BC, EDGE_CA = range(7)


def _dot(x, y):
    """Row-wise dot products of points stored as rows (3, N)."""
    out = x[0] * y[0]
    out += x[1] * y[1]
    out += x[2] * y[2]
    return out


def _take_rows(a: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Columns ``at`` of rows ``a`` (3, N): a gather per row (numpy's 2-D fancy index and
    ``take(axis=1)`` of a strided view copy far more)."""
    return np.stack([a[k].take(at) for k in range(3)])


def _rows32(x: np.ndarray) -> np.ndarray:
    """Points ``x`` (3, S) as the kernels read them: float32 rows, C-contiguous (no copy when
    they are)."""
    return np.ascontiguousarray(x, np.float32)


def _rows64(p: np.ndarray) -> np.ndarray:
    """Points ``p`` (N, 3) as the kernels read them: float64 rows (3, N), C-contiguous."""
    return np.ascontiguousarray(np.asarray(p, np.float64).reshape(-1, 3).T)


def span_index(start: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Every index of the runs ``[start, start + count)``, run after run."""
    return np.repeat(start - (np.cumsum(count) - count), count) + np.arange(int(count.sum()))


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


def pseudo_normals(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Angle-weighted pseudo-normals (T, 7, 3) of every triangle's features, in feature-code
    order: the face, its three vertices (angle-weighted sum of the faces round each vertex) and
    its three edges (sum of the faces on each edge; a boundary edge has its one face's)."""
    v = np.asarray(vertices, np.float64)
    tri = np.asarray(triangles, np.int64)
    a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
    n = np.cross(b - a, c - a)
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
    vn = np.zeros_like(v)
    for k in range(3):
        p, q, r = v[tri[:, k]], v[tri[:, (k + 1) % 3]], v[tri[:, (k + 2) % 3]]
        e1, e2 = q - p, r - p
        cos = np.einsum("ij,ij->i", e1, e2) / np.maximum(
            np.linalg.norm(e1, axis=1) * np.linalg.norm(e2, axis=1), 1e-300)
        np.add.at(vn, tri[:, k], n * np.arccos(np.clip(cos, -1, 1))[:, None])
    edges = np.stack([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]], axis=1).reshape(-1, 2)
    key = np.sort(edges, axis=1)
    _, inverse = np.unique(key[:, 0] * (len(v) + 1) + key[:, 1], return_inverse=True)
    en = np.zeros((inverse.max() + 1, 3))
    np.add.at(en, inverse, np.repeat(n, 3, axis=0))
    out = np.empty((len(tri), 7, 3))
    out[:, FACE] = n
    out[:, VERT_A:VERT_C + 1] = vn[tri]
    out[:, EDGE_AB:EDGE_CA + 1] = en[inverse].reshape(-1, 3, 3)
    return out


def is_closed(triangles: np.ndarray) -> bool:
    """Whether every edge of the mesh has exactly two faces (the mesh has an inside)."""
    tri = np.asarray(triangles, np.int64)
    key = np.sort(np.stack([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]], 1).reshape(-1, 2), axis=1)
    _, count = np.unique(key[:, 0] * (int(tri.max()) + 2) + key[:, 1], return_counts=True)
    return bool(np.all(count == 2))


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
    CHUNK = 1 << 15      # points per exact query at once (its scratch is ~50 triangle pairs each)
    TIGHT_PAIRS = 4096   # exact queries of more (point, triangle) pairs measure a first triangle

    def __init__(self, vertices, triangles, resolution: int | None = None, margin: float = 0.0,
                 name: str = "collider", cell: float | None = None):
        v = np.asarray(vertices, np.float64)
        tri = np.asarray(triangles, np.int64)
        if tri.ndim != 2 or tri.shape[1] != 3 or len(tri) == 0:
            raise HairWigError(f"'{name}' has no faces to collide with")
        a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
        area2 = np.linalg.norm(np.cross(b - a, c - a), axis=1)
        tri = tri[area2 > 1e-12 * max(float(area2.max()), 1e-300)]      # degenerate faces: no normal
        if len(tri) == 0:
            raise HairWigError(f"'{name}' has only degenerate faces")
        self.name = name
        used = v[np.unique(tri)]
        lo, hi = used.min(axis=0), used.max(axis=0)
        self.size = float(max((hi - lo).max(), 1e-12))
        # the mesh's diameter about its centroid, to within a factor 2: unlike the box it does not
        # change as the mesh turns, so tolerances scaled by it decide alike in any orientation
        self.extent = float(max(2 * np.sqrt(((used - used.mean(axis=0)) ** 2).sum(axis=1).max()), 1e-12))
        self.box = (lo, hi)
        if cell:
            h = float(cell)
        elif resolution:
            h = self.size / max(int(resolution) - 1, 2)
        else:
            ta, tb = v[tri[:, 0]], v[tri[:, 1]]
            edge = float(np.median(np.linalg.norm(tb - ta, axis=1)))
            h = float(np.clip(edge, self.size / 160, self.size / 48))
        pad = max(3 * h, 0.05 * self.size, float(margin) + 3 * h)
        self.cell = h
        self.origin = lo - pad
        self.dims = np.ceil((hi + pad - self.origin) / h).astype(np.int64) + 1
        self.triangles = tri
        self.vertices = v
        self.closed = is_closed(tri)
        normals = pseudo_normals(v, tri)
        # A closed mesh modelled inside out: its inside is still its inside.
        self.flipped = self.closed and _signed_volume(v, tri) < 0
        if self.flipped:
            normals = -normals
        self.normals = normals.astype(np.float32)
        rel = v - self.origin
        # (T, 19): a triangle's numbers side by side, as the kernels read them
        rows = triangle_rows(*(np.ascontiguousarray(rel[tri[:, k]].T) for k in range(3)))
        self._tri_cols = np.ascontiguousarray(rows.T)
        corners = rel[tri]                                             # (T, 3, 3), grid-relative
        centre = corners.mean(axis=1)
        self._centres = np.ascontiguousarray(centre.T, np.float32)
        self._radii = np.linalg.norm(corners - centre[:, None], axis=2).max(axis=1).astype(np.float32)
        self._corners = corners.astype(np.float32)
        self._corner_rows = np.ascontiguousarray(self._corners.transpose(1, 2, 0))   # (corner, xyz, T)
        fn = np.cross(self._corners[:, 1] - self._corners[:, 0], self._corners[:, 2] - self._corners[:, 0])
        # a triangle of no area (a pole's sliver far from the origin rounds to one) has no plane:
        # its NaN normal fails every plane test below, and its neighbours' edges stand for it
        with np.errstate(invalid="ignore", divide="ignore"):
            self._face_rows = np.ascontiguousarray((fn / np.linalg.norm(fn, axis=1, keepdims=True)).T)  # (3, T)
        self._build_lists()
        self._build_grid()
        self._mark_seams()
        self._widen_lists()
        self._kernel_field()

    def _pairs(self, lo: np.ndarray, hi: np.ndarray, dims: np.ndarray):
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

    def _pair_chunks(self, lo: np.ndarray, hi: np.ndarray, dims: np.ndarray, budget: int = 1 << 21):
        """``_pairs`` over consecutive runs of triangles of about ``budget`` pairs each (bounded
        scratch), triangle indices global."""
        per = np.prod(np.maximum(np.clip(hi, 0, dims - 1) - np.clip(lo, 0, dims - 1) + 1, 0), axis=1)
        cum = np.cumsum(per)
        start = 0
        while start < len(lo):
            base = int(cum[start - 1]) if start else 0
            stop = max(int(np.searchsorted(cum, base + budget, side="right")), start + 1)
            t_of, ix, iy, iz = self._pairs(lo[start:stop], hi[start:stop], dims)
            yield (t_of + np.int32(start), ix, iy, iz)
            start = stop

    def _build_lists(self):
        """Triangles per list cell (CSR): those whose box, grown by LIST_BAND cells, meets the
        cell. A point within LIST_BAND cells of the surface finds its closest triangle there."""
        h = self.cell * self.LIST_CELL
        grow = self.LIST_BAND * self.cell
        tmin = self._corners.min(axis=1)
        tmax = self._corners.max(axis=1)
        self.list_dims = np.floor((self.dims - 1) / self.LIST_CELL).astype(np.int64) + 1
        lo = np.floor((tmin - grow) / h).astype(np.int64)
        hi = np.floor((tmax + grow) / h).astype(np.int64)
        t_of, ix, iy, iz = self._pairs(lo, hi, self.list_dims)
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
        bits = max(int(len(self.triangles)).bit_length(), 1)
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
        # for screen(): float32 columns and strides
        self._origin_col = self.origin.astype(np.float32)[:, None]
        self._inv_cell = np.float32(1.0 / self.cell)
        self._top_col = (self.dims - 1).astype(np.float32)[:, None]
        self._clamp_col = self._top_col + np.float32(0.5)
        self._shift_col = (0.5 - self.origin / self.cell).astype(np.float32)[:, None]
        self._stride = (np.int32(self.dims[1] * self.dims[2]), np.int32(self.dims[2]))

    def _build_grid(self):
        """Signed distance at every node: exact for the nodes within NODE_BAND cells of the
        surface, then closest points swept to every other node, each signed by the pseudo-normal
        of its closest point's feature."""
        h = np.float32(self.cell)
        nx, ny, nz = (int(d) for d in self.dims)
        band = np.float32(self.NODE_BAND * self.cell)
        tc = self._corners
        lo = np.ceil((tc.min(axis=1) - band) / h).astype(np.int64)
        hi = np.floor((tc.max(axis=1) + band) / h).astype(np.int64)
        fnr = self._face_rows
        tcr = self._corner_rows
        total = nx * ny * nz
        best = np.full(total, np.inf, np.float32)
        pieces = []
        for t_of, ix, iy, iz in self._pair_chunks(lo, hi, self.dims):
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
        count = 0
        for node, d, t_of, cp, feat in pieces:
            win = np.flatnonzero(d == best[node])
            nodes = node[win]
            grid_cp[:, nodes] = cp[win].T
            src[nodes] = np.arange(len(win), dtype=np.int32) + count
            count += len(win)
            band_n.append(self.normals[t_of[win], feat[win]])
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

    def _widen_lists(self):
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
        lo = np.floor((self._corners.min(axis=1) - grow) / h).astype(np.int64)
        hi = np.floor((self._corners.max(axis=1) + grow) / h).astype(np.int64)
        ny, nz = int(self.list_dims[1]), int(self.list_dims[2])
        bits = max(int(len(self.triangles)).bit_length(), 1)
        keys = []
        for t_of, ix, iy, iz in self._pair_chunks(lo, hi, self.list_dims):
            cell = (ix.astype(np.int64) * ny + iy) * nz + iz
            m = np.flatnonzero(is_wide.take(cell))
            t_of, cell = t_of.take(m), cell.take(m)
            # the triangle's bounding sphere against the cell's box
            gap = np.stack([ix.take(m), iy.take(m), iz.take(m)]).astype(np.float32)
            gap += np.float32(0.5)
            gap *= np.float32(h)
            gap -= _take_rows(self._centres, t_of)
            np.abs(gap, out=gap)
            gap -= np.float32(0.5 * h)
            np.maximum(gap, 0, out=gap)
            near = np.sqrt(_dot(gap, gap)) - self._radii.take(t_of) <= self.list_reach.take(cell) * np.float32(1 + 1e-5)
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

    def _kernel_field(self) -> None:
        """The field as the query kernels read it (``kernels.field``'s tuples), built once."""
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
        spheres = np.ascontiguousarray(np.concatenate([self._centres, self._radii[None]]).T)      # (T, 4)
        self._k_tris = (self.list_start, self.list_tri, self._tri_cols, spheres,
                        self.normals, 1e-5 * self.size, 1e-9 * self.extent)
        self._k_planes = self._planes()
        lo, hi = self.box
        self._k_box = (np.array(lo, np.float64), np.array(hi, np.float64), np.float32(self.exact_reach))

    def _planes(self) -> np.ndarray:
        """Each triangle's plane and its edges' side planes (T, 16) float32, grid-relative, for
        ``kernels.field._lower``: the unit normal n and n·a, then for each edge (a→b, b→c, c→a)
        its outward unit normal within the plane m = (end − start) × n and m·start."""
        rel = self.vertices - self.origin
        a, b, c = (rel[self.triangles[:, k]] for k in range(3))
        n = np.cross(b - a, c - a)
        n /= np.linalg.norm(n, axis=1, keepdims=True)
        out = [n, np.einsum("ij,ij->i", n, a)[:, None]]
        for p, q in ((a, b), (b, c), (c, a)):
            m = np.cross(q - p, n)
            m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-300)
            out += [m, np.einsum("ij,ij->i", m, p)[:, None]]
        return np.ascontiguousarray(np.concatenate(out, axis=1), np.float32)

    @property
    def nbytes(self) -> int:
        seams = 0 if self.untrusted is None else self.untrusted.nbytes
        return int(self.distance_grid.nbytes + self.list_start.nbytes + self.list_tri.nbytes + seams)

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
        err = self.grid_error[known if cell is None else cell]
        if self.untrusted is not None:
            err[self.untrusted[base]] = np.inf
        return err

    def exact(self, p: np.ndarray, every: bool = False):
        """Exact signed distance (N,) of points ``p`` (N, 3), their closest points (N, 3) and the
        outward direction there (N, 3), from the triangles listed for each point's list cell
        (exact where ``|d|`` is within its cell's ``list_reach``, an upper bound beyond) or, ``every``, from every
        triangle; ``known`` (N,) is False where no triangle was listed (far from the surface)."""
        if every:
            return self._exact_every(np.asarray(p, np.float64))
        return self._exact_listed(p)[:4]

    def _exact_listed(self, p: np.ndarray):
        """``exact`` from the lists (``kernels.field.exact_listed``), with each point's list cell."""
        rows = _rows64(p)
        n = rows.shape[1]
        sd, closest, outward = np.empty(n), np.empty((n, 3)), np.empty((n, 3))
        known, cell = np.empty(n, bool), np.empty(n, np.int64)
        field_kernels.launch(field_kernels.exact_listed, n, rows, self._k_grid64, self._k_errors, self._k_tris, sd,
                             closest, outward, known, cell, serial=field_kernels.SERIAL_EXACT)
        return sd, closest, outward, known, cell

    def _exact_every(self, p: np.ndarray):
        """``exact`` over every triangle that may be closest to each point (numpy: the few points
        the lists cannot decide, ``_exact_in_band``)."""
        if len(p) > self.CHUNK:                         # bounded scratch, however many points
            parts = [self._exact_every(p[s:s + self.CHUNK]) for s in range(0, len(p), self.CHUNK)]
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
        diff -= _take_rows(self._centres, t)
        dc = np.sqrt(_dot(diff, diff))
        radii = self._radii.take(t)
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
        return sd, closest, outward, known

    def _all_pairs(self, p: np.ndarray):
        """(point, triangle) pairs over every triangle that may be closest to each point (its
        bounding sphere is no farther than the nearest sphere's far side): for the few points
        the lists cannot decide."""
        q = (p - self.origin).astype(np.float32)
        radii = self._radii
        step = max(1, (1 << 22) // len(radii))
        q_of, t = [], []
        for s in range(0, len(q), step):
            x = q[s:s + step]
            d2 = np.zeros((len(x), len(radii)), np.float32)
            for k in range(3):
                diff = self._centres[k][None, :] - x[:, k, None]
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
            sd, _, _, ok = self._exact_every(p[again])
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

    @property
    def exact_reach(self) -> float:
        """How far from the surface distances and pushes are exact."""
        return self.LIST_BAND * self.cell

    def _exact_in_band(self, p: np.ndarray, grid: np.ndarray):
        """``exact`` with ``ok`` (N,): where the distance is exact. Where it is not (beyond the
        list's reach), the grid's distance ``grid`` (N,) decides — its error there is within the
        reach (``_widen_lists``), so its sign is right — unless the cell is a seam's and the
        point is farther than SEAM_BAND cells: there every triangle is searched."""
        sd, cp, out, known, cell = self._exact_listed(p)
        reach = self.list_reach[cell]
        ok = known & (np.abs(sd) <= reach)
        if ok.all():
            return sd, cp, out, ok
        err = self.error_at(p, cell)
        redo = np.flatnonzero(~ok & (np.abs(grid) <= err) & (err > reach))
        if redo.size:
            r = self.exact(p[redo], every=True)
            sd[redo], cp[redo], out[redo] = r[0], r[1], r[2]
            ok[redo] = r[3]
        return sd, cp, out, ok

    def project(self, p: np.ndarray, limit: np.ndarray, tolerance: float = 0.0, direction: bool = False):
        """Push every point of ``p`` (N, 3) whose signed distance is below ``limit`` (N,) out to
        that distance: exactly from its closest point near the surface, along the grid's gradient
        beyond. Returns the new positions (N, 3) of the points moved, and their indices; with
        ``direction`` also the unit direction (N, 3) each was pushed along (the surface's outward
        one at its closest point: a push of a rounding still has a direction to the digit)."""
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
            new[far] += g * (lim[far] - dm[far])[:, None]
            along[far] = g
            moved |= far
        if direction:
            return new[moved], maybe[moved], along[moved]
        return new[moved], maybe[moved]


def _signed_volume(v, tri) -> float:
    a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6)


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

    def project(self, p: np.ndarray, limit: np.ndarray, tolerance: float = 0.0, direction: bool = False):
        r, dirs, radius = self._polar(p)
        moved = np.flatnonzero(r - radius < np.asarray(limit, np.float64) - tolerance)
        new = self.map.centre + dirs[moved] * (radius[moved] + limit[moved])[:, None]
        return (new, moved, dirs[moved]) if direction else (new, moved)


class ColliderMesh:
    """A collider as the scene gives it: ``vertices`` (V, 3) in the collider's own space,
    ``triangles`` (T, 3), its world ``matrix`` (4, 4) at the rest pose, an ``offset`` (world
    units: how far hair keeps from it), and ``method`` FIELD or RAY (the patent's, for a head:
    ``centre`` then in the collider's space)."""

    def __init__(self, name, vertices, triangles, matrix=None, offset: float = 0.0, method: str = "FIELD",
                 centre=None, resolution: int | None = None):
        if method not in ("FIELD", "RAY"):
            raise HairWigError(f"collider '{name}': method must be FIELD or RAY, got {method!r}")
        self.name = name
        self.vertices = np.asarray(vertices, np.float64)
        self.triangles = np.asarray(triangles, np.int64)
        self.matrix = np.eye(4) if matrix is None else np.asarray(matrix, np.float64)
        self.offset = float(offset)
        self.method = method
        self.centre = centre
        self.resolution = resolution


class Collider:
    """One collider bound to a hair set (SPEC §6.3).

    The field lives in *field space*: the head's local space at the rest pose, so every distance
    is in head-local units and the collider's own scale does not matter. ``set_frame`` gives this
    frame's map from head-local points into field space — the identity for the head itself and
    for anything that moves with it, so the common case transforms nothing — and, for a
    collider that deforms, its current vertices (the field is then rebuilt on them).

    At bind every vertex records its rest clearance ``d0``; its collision surface is
    ``limit = min(offset, d0)`` (the groom is sacred). A point that has moved less than
    ``skip`` from its rest position (half of ``d0 − limit``: distances are 1-Lipschitz, and the
    grid's far values are within a few tenths of a cell per cell of distance) cannot have
    reached its limit and is not looked up while the collider has not moved.
    """

    def __init__(self, mesh: ColliderMesh, rest_to_field: np.ndarray, offset: float):
        self.name = mesh.name
        self.mesh = mesh
        self.rest_to_field = rest_to_field           # collider's own space -> field space
        v = mesh.vertices @ rest_to_field[:3, :3].T + rest_to_field[:3, 3]
        if mesh.method == "RAY":
            centre = None if mesh.centre is None else (rest_to_field[:3, :3] @ mesh.centre + rest_to_field[:3, 3])
            self.field = RayField(RadiusMap(v, mesh.triangles, centre, name=mesh.name))
        else:
            self.field = MeshField(v, mesh.triangles, mesh.resolution, margin=offset, name=mesh.name)
        self.bound_field = self.field
        self.offset = float(offset)
        self.to_field = None
        self.from_field = None
        # How far inside a push may leave a point and still count as out: float32 rounding of
        # the field's size, and of the coordinates where it lies (a point pushed out by less
        # than half an ulp of its coordinates does not move, and would count as stuck inside:
        # head-local coordinates can be several times the collider's size).
        reach = float(np.abs(v).max()) if len(v) else 0.0
        self.tolerance = 1e-7 * self.field.extent + 2 * float(np.finfo(np.float32).eps) * reach

    @property
    def moved(self) -> bool:
        return self.to_field is not None or self.field is not self.bound_field

    def bind(self, rest_rows: np.ndarray, uniform: int = 0) -> None:
        """Record every vertex's rest clearance; ``rest_rows`` (3, P) in field space.
        ``uniform``: the strands' point count when they all have the same (a walk from root to
        tip then reads point-major copies, ``near_step``)."""
        self.rest_rows = np.ascontiguousarray(rest_rows, np.float32)     # gathered from each frame
        d = self.field.signed_distance(np.ascontiguousarray(rest_rows.T, np.float64))
        self.clearance = d.astype(np.float32)
        self.limit = np.minimum(np.float32(self.offset), self.clearance)
        # Skip lookups for a point while it has moved less than half its room (distances are
        # 1-Lipschitz). The room is trusted where the clearance is exact (near the surface);
        # farther, the grid's swept distance can be too large on a messy mesh, so only the
        # distance to the collider's box (a true lower bound) counts.
        room = self.clearance - self.limit
        if isinstance(self.field, MeshField):
            far = np.abs(self.clearance) >= self.field.exact_reach
            if far.any():
                lo, hi = self.field.box
                x = rest_rows.T[far]
                gap = np.maximum(np.maximum(lo - x, x - hi), 0)
                room[far] = np.maximum(np.sqrt((gap * gap).sum(axis=1)) - np.maximum(self.limit[far], 0), 0)
        # and a point that moved no more than the push tolerance (float32 rounding of a length
        # pass) is no closer than its limit less that tolerance, which a push ignores
        skip = 0.5 * room + self.tolerance
        if not isinstance(self.field, MeshField):
            skip[:] = 0          # a distance along rays is not 1-Lipschitz: nothing can be skipped
        self.skip2 = (skip * skip).astype(np.float32)
        self._steps = None
        if uniform and isinstance(self.field, MeshField):
            # point-major (n, strands): step j of a walk reads contiguous rows
            def cols(a):
                return np.ascontiguousarray(a.reshape(-1, uniform).T)
            self._steps = {"limit": cols(self.limit), "skip2": cols(self.skip2),
                           "rest": np.ascontiguousarray(self.rest_rows.reshape(3, -1, uniform).transpose(0, 2, 1))}

    def bind_children(self, rest_rows: np.ndarray, offsets: np.ndarray, turn: np.ndarray | None,
                      uniform: int, margin: np.ndarray) -> None:
        """Record the rest clearance of each guide's shape moved onto its children's roots
        (``children.transplant``: ``offsets`` (K, 3, G), ``turn`` (K, 3, 3, G) or None, head-local;
        ``rest_rows`` (3, P) the guides' points, ``uniform`` each): their limits
        ``min(offset + margin, d0)`` (``margin`` (G,), ``children.sag``) as (K, uniform, G),
        point-major like a walk's steps. A groom at rest is outside every one of them."""
        k, _, g = offsets.shape
        rest = rest_rows.reshape(3, g, uniform).astype(np.float64)
        moved = np.stack([transplant(rest[:, :, j], rest[:, :, 0], offsets, turn) for j in range(uniform)], -1)
        x = np.ascontiguousarray(moved.transpose(0, 2, 3, 1).reshape(-1, 3), np.float64)   # (K, G, n)
        d = self.bound_field.signed_distance(x).reshape(k, g, uniform)
        limit = np.minimum(np.float32(self.offset) + margin.astype(np.float32)[None, :, None], d.astype(np.float32))
        self.child_limit = np.ascontiguousarray(limit.transpose(0, 2, 1))

    def set_frame(self, to_field: np.ndarray | None, vertices: np.ndarray | None = None) -> None:
        """This frame's head-local -> field-space map (``None``: identity) and, for a deforming
        collider, its vertices in its own space (``None``: as bound)."""
        if to_field is not None and np.allclose(to_field, np.eye(4), rtol=0, atol=1e-9):
            to_field = None
        self.to_field = to_field
        self.from_field = None if to_field is None else np.linalg.inv(to_field)
        # how much farther apart two points are in field space than head-local, at most
        self.stretch = 1.0 if to_field is None else float(np.linalg.norm(to_field[:3, :3], 2))
        if vertices is None or self.mesh.method == "RAY":
            self.field = self.bound_field
            return
        if np.shape(vertices) == self.mesh.vertices.shape and np.array_equal(vertices, self.mesh.vertices):
            self.field = self.bound_field
            return
        v = np.asarray(vertices, np.float64) @ self.rest_to_field[:3, :3].T + self.rest_to_field[:3, 3]
        f = self.bound_field
        self.field = MeshField(v, f.triangles, cell=f.cell, margin=self.offset, name=self.name)

    def candidates(self, q: np.ndarray, index: np.ndarray, row: np.ndarray | None = None) -> np.ndarray:
        """Which of the points ``q`` (3, S) — wig points ``index`` (S,) — may be within their
        limit: positions into ``q``."""
        if not self.moved:
            diff = q - np.take(self.rest_rows, index, axis=1)
            dist2 = _dot(diff, diff)
            return np.flatnonzero(dist2 > self.skip2[index])
        return np.arange(q.shape[1])

    def _in_field(self, q: np.ndarray, index: np.ndarray):
        """The candidates among ``q`` (3, S) (``candidates``) and their points (K, 3) in field
        space."""
        pick = self.candidates(q, index)
        x = _take_rows(q, pick).T.astype(np.float64)
        if self.to_field is not None and pick.size:
            x = x @ self.to_field[:3, :3].T + self.to_field[:3, 3]
        return pick, x

    def near_at(self, q: np.ndarray, index) -> np.ndarray:
        """Which of the points ``q`` (3, S) — wig points ``index`` — may be within their limit,
        by the grid alone (no exact distances): positions into ``q``. Every point ``project_at``
        would move is among them. ``index`` may be a slice (a block of the wig's points)."""
        if isinstance(self.field, MeshField):
            if isinstance(index, slice):
                start = index.start

                def at(pick):
                    return pick + start
            else:
                def at(pick):
                    return index[pick]
            return self._near(q, self.limit[index], lambda pick: self.skip2[at(pick)],
                              lambda pick: _take_rows(self.rest_rows, at(pick)))
        if isinstance(index, slice):
            index = np.arange(index.start, index.stop)
        pick, x = self._in_field(q, index)
        if pick.size == 0:
            return pick
        return pick[self.field.signed_distance(x) < self.limit[index[pick]] + self.tolerance]

    def near_step(self, q: np.ndarray, j: int, strands: slice, index: np.ndarray,
                  margin: np.ndarray | None = None, seg: np.ndarray | None = None) -> np.ndarray:
        """``near_at`` for step ``j`` of a root-to-tip walk: ``q`` (3, S) the points ``j`` of the
        strands ``strands`` (wig numbering, all of ``uniform`` points; their points ``index``).

        ``margin`` (S,) float32, the walk's own (start it at −inf): a lower bound of each
        strand's previous point's distance, kept up to date here. Point ``j`` lies ``seg`` (S,,
        head-local) from it, so it is at least ``margin − stretch · seg`` from the surface
        (distances are 1-Lipschitz), and where that is already past its limit it is not looked
        up at all: along a strand leaving the head, one lookup clears the next few points."""
        steps = self._steps
        if steps is None:
            return self.near_at(q, index)
        rest, skip2, limit = steps["rest"], steps["skip2"][j, strands], steps["limit"][j, strands]

        def skip2_at(pick):
            return skip2.take(pick)

        def rest_at(pick):
            return np.stack([rest[k, j, strands].take(pick) for k in range(3)])

        if margin is None:
            return self._near(q, limit, skip2_at, rest_at)
        margin -= np.float32(self.stretch) * seg if self.stretch != 1.0 else seg
        look = np.flatnonzero(margin < limit)
        if look.size == 0:
            return look
        whole = 2 * look.size > margin.size          # most of the row: one pass over all of it
        lower = self.field.lower_bound(self._field_rows(q if whole else _take_rows(q, look)))
        if whole:
            margin[...] = lower
            pick = np.flatnonzero(lower < limit)
        else:
            margin[look] = lower
            pick = look.take(np.flatnonzero(lower < limit.take(look)))
        margin[pick] = -np.inf           # these may be moved: the next point is looked up
        return self._confirm(q, pick, limit, skip2_at, rest_at)

    def _near(self, q, limit, skip2_at, rest_at) -> np.ndarray:
        """The grid's screen, then ``_confirm``: positions into ``q`` (3, S) that may be within
        ``limit`` (S,). ``skip2_at(positions)``, ``rest_at(positions)``: those points' squared
        skip distances and rest rows (3, K)."""
        # one gather per point first: most of a groom is nowhere near a collider
        pick = self.field.screen(self._field_rows(q), limit + self.field.slack)
        return self._confirm(q, pick, limit, skip2_at, rest_at)

    def _confirm(self, q, pick, limit, skip2_at, rest_at) -> np.ndarray:
        """Of the points ``pick`` the grid's screen kept: (when the collider has not moved) those
        that moved at least half their room from rest, then those whose trilinear distance may
        be within ``limit``."""
        if pick.size == 0:
            return pick
        if not self.moved:                               # then: moved less than half the room?
            diff = _take_rows(q, pick)
            diff -= rest_at(pick)
            pick = pick[_dot(diff, diff) > skip2_at(pick)]
            if pick.size == 0:
                return pick
        d, err = self.field.distance_rows(self._field_rows(_take_rows(q, pick)))
        return pick[d < limit.take(pick) + err]

    def _field_rows(self, q: np.ndarray) -> np.ndarray:
        """Head-local rows (3, S) float32 in this frame's field space."""
        if self.to_field is None:
            return q
        m = self.to_field.astype(np.float32)
        return m[:3, :3] @ q + m[:3, 3:4]

    def project_at(self, q: np.ndarray, index: np.ndarray, normal: np.ndarray | None = None) -> np.ndarray:
        """Push points ``q`` (3, S, head-local) — the wig's points ``index`` (S,) — out to their
        collision surface, in place. Returns the positions into ``q`` that moved; ``normal``
        (3, S), when given, gets the unit direction each moved point was pushed along."""
        pick, x = self._in_field(q, index)
        return self._push(q, pick, x, self.limit[index[pick]], normal)

    def push_to(self, q: np.ndarray, limit: np.ndarray, normal: np.ndarray | None = None) -> np.ndarray:
        """``project_at`` for points that are not the wig's own (a guide's children): ``q``
        (3, S, head-local) float32 out to their own ``limit`` (S,), the grid's screen first."""
        rows = self._field_rows(q)
        if isinstance(self.field, MeshField):
            pick = self.field.screen(rows.astype(np.float32, copy=False), limit + self.field.slack)
        else:
            pick = np.arange(q.shape[1])
        x = _take_rows(q, pick).T.astype(np.float64)
        if self.to_field is not None and pick.size:
            x = x @ self.to_field[:3, :3].T + self.to_field[:3, 3]
        return self._push(q, pick, x, limit[pick], normal)

    def _push(self, q, pick, x, limit, normal) -> np.ndarray:
        """Push the points ``pick`` of ``q`` — ``x`` (K, 3) in field space — out to ``limit``
        (K,): ``project_at``'s work."""
        if pick.size == 0:
            return pick
        new, moved, along = self.field.project(x, limit, self.tolerance, direction=True)
        if moved.size == 0:
            return moved
        if self.from_field is not None:
            new = new @ self.from_field[:3, :3].T + self.from_field[:3, 3]
            along = along @ self.from_field[:3, :3].T
            along /= np.maximum(np.linalg.norm(along, axis=1, keepdims=True), 1e-300)
        pick = pick[moved]
        q[:, pick] = new.T
        if normal is not None:
            normal[:, pick] = along.T
        return pick

    def outward_at(self, q: np.ndarray) -> np.ndarray:
        """The direction (3, K, head-local, unit or zero) away from the surface at points ``q``
        (3, K, head-local): from each point's exact closest point where the point is within the
        exact band, so it turns with the mesh whatever its grid; the grid's gradient beyond."""
        x = q.T.astype(np.float64)
        if self.to_field is not None:
            x = x @ self.to_field[:3, :3].T + self.to_field[:3, 3]
        field = self.field
        if isinstance(field, MeshField):
            d, g = field.lookup(x)
            g = np.where(np.isfinite(d)[:, None], g, 0.0).astype(np.float64)
            near = np.flatnonzero(np.abs(d) < field.exact_reach + field.error_at(x))
            if near.size:
                _, _, out, ok = field._exact_in_band(x[near], d[near])
                g[near[ok]] = out[ok]
        else:
            g = field._polar(x)[1]
        g = g.T
        if self.from_field is not None:
            g = self.from_field[:3, :3] @ g
        norm = np.sqrt(_dot(g, g))
        return g * np.divide(1.0, norm, out=np.zeros_like(norm), where=norm > 1e-12)

    def near_rows(self, q: np.ndarray, reach: np.ndarray) -> np.ndarray:
        """Which head-local points ``q`` (3, K) may lie within ``reach`` (K,) of the surface, by
        the grid's nearest node (one gather each; every point for the patent's rays): positions."""
        if isinstance(self.field, MeshField):
            return self.field.screen(self._field_rows(q).astype(np.float32), reach + self.field.slack)
        return np.arange(q.shape[1])

    def fast_distance(self, q: np.ndarray, rest: bool = False, direction: bool = False):
        """The field's own distance (K,) at head-local points ``q`` (3, K) — the grid's
        trilinear value (+inf beyond it), or along the ray — what a dynamics layer's contacts
        read at every substep, where the frame's refinement reads exact distances once; with
        ``direction`` also the outward unit direction (3, K), head-local. ``rest``: the
        collider as bound, where the groom's rest clearances are read by the same function, so
        a groom at rest meets no contact."""
        field = self.bound_field if rest else self.field
        f = q if rest else self._field_rows(q)
        if isinstance(field, MeshField):
            if not direction:
                return field.trilinear_rows(f.astype(np.float32)).astype(np.float64)
            d, g = field._lookup_rows(np.ascontiguousarray(f, np.float64))
            d, g = d.astype(np.float64), g.astype(np.float64)
        else:
            r, dirs, radius = field._polar(f.T)
            d, g = r - radius, dirs.T
            if not direction:
                return d
        if self.from_field is not None and not rest:
            g = self.from_field[:3, :3] @ g
        norm = np.sqrt(_dot(g, g))
        g *= np.divide(1.0, norm, out=np.zeros_like(norm), where=norm > 1e-12)
        return d, g

    def project_rows(self, p: np.ndarray, span: slice, mask: np.ndarray | None = None) -> np.ndarray:
        """``project_at`` on a block of points (3, C), the wig's points ``span``, only where
        ``mask`` (C,) is set: the grid's screen first (``near_at``). Returns the block positions
        moved."""
        near = self._near_rows(p, span, mask)
        if near.size == 0:
            return near
        qn = _take_rows(p, near)
        moved = self.project_at(qn, near + span.start)
        p[:, near[moved]] = _take_rows(qn, moved)
        return near[moved]

    def _near_rows(self, p: np.ndarray, span: slice, mask: np.ndarray | None) -> np.ndarray:
        """``near_at`` on the points of a block (3, C) where ``mask`` (C,) is set: block
        positions. A sparse mask screens only its points; a dense one, the block's rows."""
        if mask is None:
            return self.near_at(p, slice(span.start, span.start + p.shape[1]))
        local = np.flatnonzero(mask)
        if 4 * len(local) < len(mask):
            return local[self.near_at(_take_rows(p, local), local + span.start)]
        near = self.near_at(p, slice(span.start, span.start + p.shape[1]))
        return near[mask[near]]

    def depth_at(self, q: np.ndarray, index: np.ndarray):
        """The points among ``q`` (3, S) — wig points ``index`` — that may be inside their
        collision surface (positions into ``q``) and how far: ``limit − distance`` (K,), positive
        inside."""
        pick, x = self._in_field(q, index)
        if pick.size == 0:
            return pick, np.zeros(0)
        return pick, self.limit[index[pick]] - self.field.signed_distance(x)

    def held_depth(self, q: np.ndarray, index: np.ndarray) -> float:
        """How far (head-local units) points ``q`` (3, S) — wig points ``index`` — lie inside
        their collision surface at most (0 when none does), every point looked at: the grid's
        screen and its trilinear bound, then exact distances. Unlike the walk's screen no
        point is passed over for having moved less than half its room from rest — that rule
        trusts the distance to be 1-Lipschitz, and across a seam (an open mesh, shells that
        cross) its sign jumps: over Suzanne's brow a point 46 mm out moved 14 mm and was 44 mm
        inside, never looked at. What a bake reports is measured so (``Wig._held_depth``)."""
        limit = self.limit[index]
        rows = self._field_rows(q)
        if isinstance(self.field, MeshField):
            # per point, the screen, the bound and the exact distance: one kernel
            depth = self.field._depths(rows, limit)
            return float(max(depth.max(), 0.0)) if depth.size else 0.0
        if q.shape[1] == 0:
            return 0.0
        depth = limit - self.field.signed_distance(rows.T.astype(np.float64))
        return float(max(depth.max(), 0.0))

