"""A collider's surface as a solid (SPEC §6.3, *inside or outside*): what of a modelled mesh
bounds its inside, decided once at bind by the generalized winding number (Jacobson, Kavan,
Sorkine-Hornung 2013; fast evaluation after Barill et al. 2018, ``kernels.winding``).

Character meshes are rarely one closed surface. Suzanne's eyes are shells of their own pushed
into her head and her eye sockets are open; ears cross the skull; a neck is cut. The field signs a
point by the pseudo-normal of its nearest feature (``triangles``), which is exact for one closed
surface and answers by whichever shell is nearest elsewhere: hair in front of an eye sunk into
the head was "outside" (the eye's surface is nearest), and hair that had slipped behind the eye,
8 cm inside the head, was outside too. Three steps make the surface the field is built on bound the
solid the artist sees:

1. **Holes are closed.** Each boundary loop whose fan about its centre is under ``FILL`` of its
   shell's area (an eye socket, a neck cut, the rim of an eye modelled as a dome, a cap larger
   than a sphere's sixth) is closed by that fan, facing as its rim does. A loop about as large as
   its shell — a ground plane's rim, a terrain's, a scalp patch's — is left open: that mesh stays
   one-sided, its normals saying where outside is. (A spherical cap's rim disc is ``(1 + cos θ)
   / 2`` of its area: a hemisphere's half, a cap of half-angle 60° three quarters.)
2. **Surfaces inside the solid are dropped.** A triangle whose outer side faces into another
   part of the mesh (just off its face, the winding number is above ½ in size) bounds nothing an
   artist sees: the back of an eye inside the head, the skull under an ear.
3. **Triangles that cross another part are cut where they cross.** Kept or dropped whole by its
   centre, a large eyeball triangle pushed through the fan that closes its socket counted its
   part inside the head as surface: hair laid into the socket against the eye read as outside
   (7 mm deep on a bent Quick Fur head). A triangle that crosses one sharing no corner with it
   (``crossing``) is judged in ``DIVISIONS``² pieces; where they disagree its pieces outside
   replace it (``_split_crossings``), their corners on its edges shared with its neighbours.

What remains is the boundary of the union of the shells (to a piece's size along the lines
where they cross), and the pseudo-normal sign of its nearest feature is the winding number's —
except beside an open edge (the cracks where shells cross, a hole left open), where a point in
the plane of the edge's face has no side: there the field asks the winding number of the whole
mesh (``winding``; ``kernels.field._exact_point``, ``grid``).

It depends only on the rest pose: a deforming collider keeps its triangles, fills and pieces
(``vertices`` moves the fans' centres with their rims, and the pieces' corners with their
triangles).
"""

from __future__ import annotations

import numpy as np

from ..kernels import grid_build
from ..kernels import winding as winding_kernels
from .triangles import corners_of, edges

FILL = 0.75           # a hole is closed when its fan is under this part of its shell's area
OFF = 1e-3            # how far off its face a triangle is looked from, in its own size
DIVISIONS = 4         # a triangle that crosses another part is judged in DIVISIONS² pieces


def boundary_loops(triangles: np.ndarray) -> list[np.ndarray]:
    """The mesh's boundary loops: each a vertex cycle (L,) int64 in its rim's direction (the
    direction of the boundary edges in their triangles). Edges used once are boundary edges;
    where a vertex starts several (a bow tie), they are followed in the order found."""
    t = np.asarray(triangles, np.int64)
    if len(t) == 0:
        return []
    edges = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    key = np.sort(edges, axis=1)
    top = int(t.max()) + 1
    flat = key[:, 0] * top + key[:, 1]
    _, inverse, count = np.unique(flat, return_inverse=True, return_counts=True)
    rim = edges[count[inverse] == 1]
    if len(rim) == 0:
        return []
    order = np.argsort(rim[:, 0], kind="stable")
    rim = rim[order]
    first = np.searchsorted(rim[:, 0], np.arange(top + 1))
    used = np.zeros(len(rim), bool)
    loops = []
    for e in range(len(rim)):
        if used[e]:
            continue
        loop = []
        k = e
        while not used[k]:
            used[k] = True
            loop.append(int(rim[k, 0]))
            nxt = int(rim[k, 1])
            k = -1
            for m in range(first[nxt], first[nxt + 1]):
                if not used[m]:
                    k = m
                    break
            if k < 0:
                break
        if len(loop) >= 3:
            loops.append(np.array(loop, np.int64))
    return loops


def _areas(v: np.ndarray, t: np.ndarray) -> np.ndarray:
    return 0.5 * np.linalg.norm(np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]]), axis=1)


class Solid:
    """The surface of a collider's solid (module docstring): the mesh's triangles that bound it
    and the fans that close its small holes.

    Parameters
    ----------
    vertices : (V, 3) float64, triangles : (T, 3) int64
        The collider at rest (no faces of no area).

    Attributes
    ----------
    loops : list of (L,) int64
        The holes closed, each a rim in its own direction; fan ``k``'s centre is vertex
        ``V + k`` of ``vertices(v)``.
    triangles : (T', 3) int64
        The triangles kept and the fans', then the pieces of those split where they cross
        another part (and of their neighbours, made to meet the pieces corner to corner),
        indexing ``vertices(v)``.
    dropped, closed, split : int
        How many of the mesh's triangles lie inside it (by their centres), how many holes were
        closed, and how many triangles and fans were split where they cross another part.
    """

    def __init__(self, vertices: np.ndarray, triangles: np.ndarray):
        v = np.asarray(vertices, np.float64)
        t = np.asarray(triangles, np.int64)
        self.count = len(v)
        shell = winding_kernels.shells(t, len(v)) if len(t) else np.zeros(0, np.int64)
        area = np.bincount(shell, _areas(v, t), minlength=int(shell.max(initial=-1)) + 1)
        vertex_shell = np.full(len(v), -1, np.int64)
        vertex_shell[t.ravel()] = np.repeat(shell, 3)
        self.loops = []
        holes = boundary_loops(t)
        for loop in holes:
            centre = v[loop].mean(axis=0)
            fan = _areas(np.vstack([v, centre]), self._fan(loop, len(v))).sum()
            if fan < FILL * area[vertex_shell[loop[0]]]:
                self.loops.append(loop)
        fans = [self._fan(loop, len(v) + k) for k, loop in enumerate(self.loops)]
        whole = np.concatenate([t] + fans) if fans else t
        self._rows = np.zeros((0, 3), np.int64)
        self._weights = np.zeros((0, 3))
        w = self.vertices(v)
        keep = ~self._enclosed(w, whole)
        self.whole = whole                        # every triangle and fan: what is wound about
        self.dropped = int((~keep[:len(t)]).sum())
        pieces, self._rows, self._weights, self.split = _split_crossings(w, whole, keep)
        self.triangles = np.concatenate([whole[keep], pieces]) if len(pieces) else whole[keep]
        self.closed = len(self.loops)
        # a solid has an inside to wind about when every hole was closed (not a ground plane)
        self.winds = len(self.loops) == len(holes)
        self._open = bool(boundary_features(self.triangles).any())

    @classmethod
    def as_is(cls, vertices: np.ndarray, triangles: np.ndarray) -> "Solid":
        """The mesh as modelled: no hole closed, nothing dropped (nothing wound about)."""
        out = cls.__new__(cls)
        out.count = len(vertices)
        out.loops = []
        out.whole = out.triangles = np.asarray(triangles, np.int64)
        out.dropped = out.closed = out.split = 0
        out._rows, out._weights = np.zeros((0, 3), np.int64), np.zeros((0, 3))
        out.winds = out._open = False
        return out

    @staticmethod
    def _fan(loop: np.ndarray, centre: int) -> np.ndarray:
        """The fan closing rim ``loop``: triangles (rim edge reversed, centre), facing as the
        rim's own triangles do."""
        nxt = np.roll(loop, -1)
        return np.stack([nxt, loop, np.full(len(loop), centre, np.int64)], axis=1)

    def winding(self, v: np.ndarray):
        """What the field winds about where the nearest feature is an open edge (a crack left
        where shells cross, a hole left open): every triangle and fan ``(vertices (V', 3),
        triangles)`` with ``v`` = ``vertices(...)``, or None where the mesh has no inside (a
        ground plane: its normals say where outside is) or no open edge."""
        if not self.winds or not self._open:
            return None
        return np.asarray(v, np.float64), self.whole

    def vertices(self, v: np.ndarray) -> np.ndarray:
        """The collider's vertices ``v`` (V, 3) with each closed hole's centre after them (the
        mean of its rim, wherever the rim is now), then the corners of the pieces of triangles
        split where they cross (each a fixed blend of its triangle's corners, wherever they are
        now)."""
        v = np.asarray(v, np.float64)
        if self.loops:
            v = np.vstack([v] + [v[loop].mean(axis=0)[None] for loop in self.loops])
        if len(self._rows):
            v = np.vstack([v, np.einsum("ij,ijk->ik", self._weights, v[self._rows])])
        return v

    @staticmethod
    def _enclosed(v: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Which triangles (T,) bool of the mesh ``(v, t)`` face into another part (``_facing_in``)."""
        return _facing_in(v[t[:, 0]], v[t[:, 1]], v[t[:, 2]], v, t)


def _facing_in(a: np.ndarray, b: np.ndarray, c: np.ndarray, v: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Which triangles ``a, b, c`` (K, 3) — the mesh ``(v, t)``'s own, or pieces of them — face
    into another part of it: just off the centre of its outer side, the winding number is above ½
    in size (that side lies inside the solid; a surface that bounds it has the outside there).
    Looked at from a thousandth of its size off its face, so neither its own plane nor a
    neighbour's edge is met on the way; a triangle of no area faces nowhere and is kept."""
    n = np.cross(b - a, c - a)
    size = np.linalg.norm(n, axis=1)
    faces = size > 1e-12 * max(float(size.max(initial=0.0)), 1e-300)
    out = np.zeros(len(a), bool)
    at = np.flatnonzero(faces)
    if at.size == 0:
        return out
    unit = n[at] / size[at, None]
    points = (a[at] + b[at] + c[at]) / 3.0 + unit * (OFF * np.sqrt(0.5 * size[at]))[:, None]
    out[at] = np.abs(winding_numbers(points, v, t)) > 0.5
    return out


def crossing(v: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Which triangles (T,) bool of mesh ``(v, t)`` may cross another that shares no corner with
    it — an eyeball through the fan closing its socket, an ear through the skull: their boxes
    overlap and each has corners on both sides of the other's plane, where the two meet along
    the line of the planes (Möller 1997). (``_split_crossings`` judges the pieces.) Candidate
    pairs come from grids of cells in powers of two (``_box_pairs``), each triangle met in the
    grid of its own size by those no larger: never every triangle against every other, and a
    few large triangles among many small ones (a coarse head round a finely modelled eye) make
    no cell of thousands."""
    t = np.asarray(t, np.int64)
    out = np.zeros(len(t), bool)
    if len(t) < 2:
        return out
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    lo, hi = np.minimum(np.minimum(a, b), c), np.maximum(np.maximum(a, b), c)
    box = float((hi.max(axis=0) - lo.min(axis=0)).max())
    if box <= 0.0:
        return out
    p, q = _box_pairs(t, lo, hi, box)
    if p.size == 0:
        return out
    normal = np.cross(b - a, c - a)
    tol = 1e-9 * box

    def sides(x, y):           # y's corners' distances to x's plane
        unit = normal[x] / np.maximum(np.linalg.norm(normal[x], axis=1), 1e-300)[:, None]
        return np.einsum("ij,ikj->ik", unit, v[t[y]] - a[x][:, None, :])

    dp, dq = sides(q, p), sides(p, q)
    cross = (dp.max(axis=1) > tol) & (dp.min(axis=1) < -tol) & (dq.max(axis=1) > tol) & (dq.min(axis=1) < -tol)
    p, q, dp, dq = p[cross], q[cross], dp[cross], dq[cross]
    # each triangle meets the other's plane along a stretch of the line where the planes meet:
    # they cross where the two stretches overlap (Möller 1997)
    line = np.cross(normal[p], normal[q])
    sp = _stretch(np.einsum("ikj,ij->ik", v[t[p]], line), dp, tol)
    sq = _stretch(np.einsum("ikj,ij->ik", v[t[q]], line), dq, tol)
    cross = np.maximum(sp[0], sq[0]) <= np.minimum(sp[1], sq[1])
    out[p[cross]] = out[q[cross]] = True
    return out


PAIRS_AT_ONCE = 1 << 21   # candidate pairs tested in one go: a bound on the memory they take


def _box_pairs(t: np.ndarray, lo: np.ndarray, hi: np.ndarray, box: float):
    """The pairs ``(p, q)`` (each once, p < q) of triangles ``t`` sharing no corner whose boxes
    ``lo``, ``hi`` (T, 3) meet. A triangle's level is the power of two of the smallest cell
    (``box`` / 2²⁰ and up) its box fits in; at each level the triangles of that level and below
    are listed in every cell of its grid their box touches (at most 2 a side), and each
    triangle of the level is paired with the others in its cells. Two boxes that meet share a
    cell of the larger's level, so no pair is missed. Generated ``PAIRS_AT_ONCE`` at a time."""
    origin = lo.min(axis=0)
    base = box / float(1 << 20)
    extent = np.maximum((hi - lo).max(axis=1), base)
    level = np.ceil(np.log2(extent / base)).astype(np.int64)
    found = []
    for lv in np.unique(level).tolist():
        cell = base * float(1 << lv)
        listed = np.flatnonzero(level <= lv)
        i0 = np.floor((lo[listed] - origin) / cell).astype(np.int64)
        span = np.floor((hi[listed] - origin) / cell).astype(np.int64) - i0 + 1
        count = span.prod(axis=1)
        tri = np.repeat(listed, count)
        k = np.arange(len(tri)) - np.repeat(np.cumsum(count) - count, count)
        sx, sy = np.repeat(span[:, 0], count), np.repeat(span[:, 1], count)
        ijk = np.repeat(i0, count, axis=0) + np.stack([k % sx, (k // sx) % sy, k // (sx * sy)], axis=1)
        dims = ijk.max(axis=0) + 1
        key = (ijk[:, 0] * dims[1] + ijk[:, 1]) * dims[2] + ijk[:, 2]
        top = level[tri] == lv
        order = np.lexsort((~top, key))             # by cell, the level's own first
        key, tri, top = key[order], tri[order], top[order]
        # each of the level's own pairs with every triangle after it in its cell
        after = np.where(top, np.searchsorted(key, key, side="right") - np.arange(len(key)) - 1, 0)
        ends = np.cumsum(after)
        start = 0
        while start < len(key):
            stop = int(np.searchsorted(ends, (ends[start - 1] if start else 0) + PAIRS_AT_ONCE, side="right"))
            stop = max(stop, start + 1)
            few = after[start:stop]
            first = np.repeat(np.arange(start, stop), few)
            second = first + 1 + np.arange(len(first)) - np.repeat(np.cumsum(few) - few, few)
            p, q = tri[first], tri[second]
            for axis in range(3):               # boxes that meet, an axis at a time
                meet = (lo[p, axis] <= hi[q, axis]) & (lo[q, axis] <= hi[p, axis])
                p, q = p[meet], q[meet]
            apart = np.ones(len(p), bool)       # sharing no corner
            for i in range(3):
                for j in range(3):
                    apart &= t[p, i] != t[q, j]
            found.append(np.minimum(p, q)[apart] * len(t) + np.maximum(p, q)[apart])
            start = stop
    pair = np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
    return pair // len(t), pair % len(t)


def _stretch(s: np.ndarray, d: np.ndarray, tol: float):
    """Where along a line a triangle meets a plane: its corners' places ``s`` (K, 3) along the
    line and signed distances ``d`` (K, 3) from the plane (some above, some below) give the ends
    (lo, hi) (K,) of the part of it in the plane — a corner within ``tol`` of the plane one of
    them (a foot set exactly on a floor crosses it there)."""
    on = np.abs(d) <= tol
    lo = np.where(on, s, np.inf).min(axis=1)
    hi = np.where(on, s, -np.inf).max(axis=1)
    for i, j in ((0, 1), (1, 2), (2, 0)):
        on = d[:, i] * d[:, j] < 0.0
        at = s[:, i] + (s[:, j] - s[:, i]) * d[:, i] / np.where(on, d[:, i] - d[:, j], 1.0)
        lo, hi = np.where(on, np.minimum(lo, at), lo), np.where(on, np.maximum(hi, at), hi)
    return lo, hi


def _split_crossings(v: np.ndarray, t: np.ndarray, keep: np.ndarray):
    """The pieces of the triangles of ``(v, t)`` that cross another part of the mesh: where shells
    cross (an eyeball through its socket's fan) a triangle bounds the solid only on one side of
    the crossing, and kept or dropped whole its part inside would count as surface (hair laid into
    the socket, against the eyeball, read as outside). Each crossed triangle is cut into
    ``DIVISIONS``² pieces and each piece judged as a triangle is (``_facing_in``); where they
    disagree the triangle gives way to its pieces outside (``keep`` set False for it), so the
    surface is the union's boundary to a piece's size. Pieces' corners on a triangle's edge are
    shared with its neighbour's. Returns ``(pieces (P, 3), rows (E, 3), weights (E, 3), split)``:
    the pieces kept, indexing ``v`` and then the new corners, corner ``e`` being
    ``weights[e] @ v[rows[e]]``; and how many triangles were split."""
    none = (np.zeros((0, 3), np.int64), np.zeros((0, 3), np.int64), np.zeros((0, 3)), 0)
    crossed = np.flatnonzero(crossing(v, t))
    if crossed.size == 0:
        return none
    n = DIVISIONS
    i, j = (x.ravel() for x in np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij"))
    i, j = i[i + j <= n], j[i + j <= n]
    local = {(x, y): m for m, (x, y) in enumerate(zip(i.tolist(), j.tolist()))}
    pieces = np.array([(local[x, y], local[x + 1, y], local[x, y + 1]) for x, y in local if x + y < n]
                      + [(local[x + 1, y], local[x + 1, y + 1], local[x, y + 1]) for x, y in local if x + y < n - 1],
                      np.int64)                      # the same turn as the triangle's own
    whole = np.stack([n - i - j, i, j], axis=1)      # each point's blend of the corners, in n-ths
    corners = t[crossed]
    at = np.einsum("pk,ckx->cpx", whole / n, v[corners])
    inward = _facing_in(*(at[:, pieces[:, m]].reshape(-1, 3) for m in range(3)), v, t).reshape(len(crossed), -1)
    mixed = inward.any(axis=1) & ~inward.all(axis=1)
    if not mixed.any():
        return none
    keep[crossed[mixed]] = False
    which, piece = np.nonzero(~inward[mixed])
    corners = corners[mixed]
    point = pieces[piece]                            # (P, 3) of local points
    tri = np.repeat(which, 3)
    blend = whole[point.ravel()]                     # (3P, 3) n-ths
    g = corners[tri]                                 # their triangle's corners
    # a point's key: a corner is that vertex; a point on an edge (lo, hi, hi's n-ths), whichever
    # triangle it is reached from; one inside its own triangle's
    nonzero = (blend > 0).sum(axis=1)
    ids = np.where(blend > 0, g, np.iinfo(np.int64).max)
    lo_v = ids.min(axis=1)
    hi_v = np.where(blend > 0, g, -1).max(axis=1)
    hi_w = (np.where(g == hi_v[:, None], blend, 0)).max(axis=1)
    inner = nonzero == 3
    key = np.stack([np.where(inner, -1 - tri, lo_v), np.where(inner, point.ravel(), hi_v),
                    np.where(inner, 0, hi_w)], axis=1)
    key[nonzero == 1] = np.stack([lo_v, lo_v, np.zeros_like(lo_v)], axis=1)[nonzero == 1]
    made = nonzero > 1
    uniq, first, inverse = np.unique(key[made], axis=0, return_index=True, return_inverse=True)
    index = lo_v.copy()
    index[made] = len(v) + inverse.ravel()
    src = np.flatnonzero(made)[first]
    rows = np.where(inner[src, None], g[src], np.stack([lo_v[src], hi_v[src], lo_v[src]], axis=1))
    weights = np.where(inner[src, None], blend[src] / n,
                       np.stack([(n - hi_w[src]) / n, hi_w[src] / n, np.zeros(len(src))], axis=1))
    pieces = index.reshape(-1, 3)
    on_edges = uniq[uniq[:, 0] >= 0]
    fans, rows_more = _conformed(t, keep, on_edges, len(v) + np.flatnonzero(uniq[:, 0] >= 0), len(v) + len(uniq))
    if len(fans):
        pieces = np.concatenate([pieces, fans])
        rows = np.concatenate([rows, rows_more])
        weights = np.concatenate([weights, np.full((len(rows_more), 3), 1.0 / 3.0)])
    return pieces, rows.astype(np.int64), weights, int(mixed.sum())


def _conformed(t: np.ndarray, keep: np.ndarray, on_edges: np.ndarray, ids: np.ndarray, first: int):
    """The kept triangles of ``t`` beside a split one, each made a fan about its centre through
    the new corners on its edges (``on_edges`` (E, 3): each corner's edge (lo, hi) and place in
    ``DIVISIONS``-ths from lo, vertex ``ids``), so the split triangle's pieces meet it corner to
    corner and the mesh has no crack there (a crack makes the field ask the winding number).
    ``keep`` is set False for them. Returns ``(fans (F, 3), centres (C, 3))``: the fans'
    triangles, their centres being vertices ``first``, ``first + 1``, … (each its triangle's
    corners ``centres[k]``, a third each)."""
    none = (np.zeros((0, 3), np.int64), np.zeros((0, 3), np.int64))
    if len(on_edges) == 0:
        return none
    along = {}
    for (lo, hi, k), at in zip(on_edges.tolist(), ids.tolist()):
        along.setdefault((lo, hi), []).append((k, at))
    keys = np.array(list(along), np.int64)
    top = int(t.max()) + 1
    code = np.sort(keys, axis=1) @ np.array([top, 1])
    sides = np.sort(np.stack([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]], axis=1), axis=2) @ np.array([top, 1])
    beside = np.flatnonzero(keep & np.isin(sides, code).any(axis=1))
    fans, centres = [], []
    for m in beside.tolist():
        ring = []
        for x, y in ((t[m, 0], t[m, 1]), (t[m, 1], t[m, 2]), (t[m, 2], t[m, 0])):
            ring.append(int(x))
            got = sorted(along.get((min(x, y), max(x, y)), []))
            ring += [at for _, at in (got if x < y else got[::-1])]
        centre = first + len(centres)
        centres.append(t[m])
        fans += [(ring[i], ring[(i + 1) % len(ring)], centre) for i in range(len(ring))]
    keep[beside] = False
    return np.array(fans, np.int64).reshape(-1, 3), np.array(centres, np.int64).reshape(-1, 3)


def clusters(v: np.ndarray, t: np.ndarray, leaf: int = 6, side: int | None = None, keep=None):
    """The triangles ``t`` grouped for ``kernels.winding.winding_numbers`` in two levels: leaves,
    the triangles whose centres lie in one cell of a grid (about ``leaf`` triangles a cell on a
    surface), and groups, the leaves of ``side``³ such cells (by default 4, growing as the fourth
    root of the triangles from about 30 000: a point near the surface tests every group and the
    leaves of the groups near it, so the two counts are kept about even — measured on Suzanne
    subdivided from 4 000 to 63 000 triangles, 3.1–4.6 times faster than one level of 48
    triangles a cluster, the largest error against every triangle summed no more than doubled,
    0.01–0.03, and no point's side changed). Triangles sorted by group, then leaf;
    each cluster's area-weighted centre and normal and the radius of a ball about that centre
    holding its triangles, the groups' first. Returns ``(t sorted, leaf starts, centres, normals,
    radii, groups)`` — group ``g``'s leaves numbered ``groups[g] … groups[g + 1] − 1`` after the
    groups — and the order (T,) sorted by. ``keep``: an earlier call's ``(parts, order)`` on the
    same triangles (a mesh that deforms a little): its grouping kept, only the clusters' shapes
    measured again (any grouping is exact: a cluster's ball holds its triangles wherever they
    are; a grouping of the rest pose stays a good one)."""
    if keep is not None:
        return _regrouped(v, t, *keep)
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    mid = (a + b + c) / 3.0
    lo, hi = mid.min(axis=0), mid.max(axis=0)
    size = float(max((hi - lo).max(), 1e-12))
    cell = size / max(1.0, np.sqrt(len(t) / leaf))
    if side is None:
        side = max(4, int(round((len(t) / leaf) ** 0.25 / 1.7)))
    ijk = np.floor((mid - lo) / cell).astype(np.int64)
    dims = ijk.max(axis=0) + 1
    lkey = (ijk[:, 0] * dims[1] + ijk[:, 1]) * dims[2] + ijk[:, 2]
    gijk = ijk // side
    gdims = gijk.max(axis=0) + 1
    gkey = (gijk[:, 0] * gdims[1] + gijk[:, 1]) * gdims[2] + gijk[:, 2]
    order = np.lexsort((lkey, gkey))
    lkey, gkey = lkey[order], gkey[order]
    starts = np.r_[np.flatnonzero(np.r_[True, lkey[1:] != lkey[:-1]]), len(t)].astype(np.int64)
    first = starts[:-1]
    leaf_group = np.r_[0, np.cumsum(gkey[first][1:] != gkey[first][:-1])]     # each leaf's group
    groups_of = np.r_[np.flatnonzero(np.r_[True, leaf_group[1:] != leaf_group[:-1]]), len(first)]
    groups = (groups_of + (len(groups_of) - 1)).astype(np.int64)
    return _shaped(v, t[order], starts, leaf_group, groups), order


def _regrouped(v: np.ndarray, t: np.ndarray, parts: tuple, order: np.ndarray):
    """``clusters`` of triangles ``t`` at vertices ``v`` grouped as ``parts`` (an earlier call's,
    sorted by ``order``)."""
    starts, groups = parts[1], parts[5]
    leaves = len(starts) - 1
    first_leaf = len(groups) - 1                       # leaves are numbered after the groups
    leaf_group = np.searchsorted(groups, first_leaf + np.arange(leaves), side="right") - 1
    return _shaped(v, t[order], starts, leaf_group, groups), order


def _shaped(v: np.ndarray, t: np.ndarray, starts: np.ndarray, leaf_group: np.ndarray, groups: np.ndarray):
    """``clusters``' parts of triangles ``t`` (sorted by leaf) at vertices ``v``, leaf ``k``
    being ``t[starts[k]:starts[k + 1]]`` in group ``leaf_group[k]``: each cluster's shape
    measured, the groups' first."""
    v = np.ascontiguousarray(v, np.float64)
    t = np.ascontiguousarray(t, np.int64)
    leaf_of = np.repeat(np.arange(len(starts) - 1, dtype=np.int64), np.diff(starts))
    leaves, kinds = len(starts) - 1, len(groups) - 1
    centres, normals, radii = np.empty((kinds + leaves, 3)), np.empty((kinds + leaves, 3)), np.empty(kinds + leaves)
    # the groups' first, then the leaves (a deforming collider measures them every frame: kernels)
    grid_build.cluster_shapes(v, t, np.ascontiguousarray(leaf_group[leaf_of], np.int64), kinds, centres[:kinds],
                              normals[:kinds], radii[:kinds])
    grid_build.cluster_shapes(v, t, leaf_of, leaves, centres[kinds:], normals[kinds:], radii[kinds:])
    return t, starts, centres, normals, radii, groups


def _cluster_shapes(member: np.ndarray, a, b, c, mid, n):
    """(``kernels.grid_build.cluster_shapes`` in numpy: the plain reference its test holds it to.)
    Each cluster's area-weighted centre (K, 3) (plain where it has no area), summed normal
    (K, 3) and the radius (K,) of a ball about the centre holding its triangles' corners, of
    triangles ``a, b, c`` (T, 3) with centres ``mid`` and halved normals ``n``, triangle ``i`` in
    cluster ``member[i]``."""
    count = np.bincount(member)
    area = np.linalg.norm(n, axis=1)
    weight = np.bincount(member, area)
    centres = np.stack([np.bincount(member, area * mid[:, k]) for k in range(3)], axis=1)
    plain = np.stack([np.bincount(member, mid[:, k]) for k in range(3)], axis=1) / count[:, None]
    centres = np.where(weight[:, None] > 0, centres / np.maximum(weight, 1e-300)[:, None], plain)
    normals = np.stack([np.bincount(member, n[:, k]) for k in range(3)], axis=1)
    reach = np.maximum.reduce([np.linalg.norm(x - centres[member], axis=1) for x in (a, b, c)])
    radii = np.zeros(len(count))
    np.maximum.at(radii, member, reach)
    return centres, normals, radii


def winding_numbers(points: np.ndarray, v: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The generalized winding number (N,) float64 of mesh ``(v, t)`` at ``points`` (N, 3), by
    clusters (``kernels.winding.winding_numbers``)."""
    q = np.ascontiguousarray(points, np.float64).reshape(-1, 3)
    out = np.empty(len(q))
    if len(t) == 0:
        out[:] = 0.0
        return out
    parts, _ = clusters(np.asarray(v, np.float64), np.asarray(t, np.int64))
    winding_kernels.winding_numbers(q, np.ascontiguousarray(v, np.float64), *parts, np.zeros(0, np.int64), out)
    return out


def boundary_features(triangles: np.ndarray) -> np.ndarray:
    """Which features of each triangle (T, 7) bool — face, corners a b c, edges ab bc ca (the
    field's feature codes) — lie on the mesh's boundary: an edge of one triangle, and the corners
    of such edges. Beside them the pseudo-normal's sign is a coin toss (a point in the plane of
    a face past its open edge), where the winding number still answers."""
    t = np.asarray(triangles, np.int64)
    out = np.zeros((len(t), 7), bool)
    if len(t) == 0:
        return out
    inverse, count = edges(t)
    open_edge = (count[inverse] == 1).reshape(-1, 3)
    out[:, 4:7] = open_edge
    out[:, 1:4] = corners_of(t, open_edge)
    return out
