"""A collider's surface as a solid (SPEC §6.3, *inside or outside*): what of a modelled mesh
bounds its inside, decided once at bind by the generalized winding number (Jacobson, Kavan,
Sorkine-Hornung 2013; fast evaluation after Barill et al. 2018, ``kernels.winding``).

Character meshes are rarely one closed surface. Suzanne's eyes are shells of their own pushed
into her head and her eye sockets are open; ears cross the skull; a neck is cut. The field signs a
point by the pseudo-normal of its nearest feature (``triangles``), which is exact for one closed
surface and answers by whichever shell is nearest elsewhere: hair in front of an eye sunk into
the head was "outside" (the eye's surface is nearest), and hair that had slipped behind the eye,
8 cm inside the head, was outside too. Two steps make the surface the field is built on bound the
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

What remains is the boundary of the union of the shells (to the size of a triangle along the
lines where they cross), and the pseudo-normal sign of its nearest feature is the winding
number's — except beside an open edge (the cracks where shells cross, a hole left open), where a
point in the plane of the edge's face has no side: there the field asks the winding number of
the whole mesh (``winding``; ``kernels.field._exact_point``, ``grid``).

It depends only on the rest pose: a deforming collider keeps its triangles and fills (``vertices``
moves the fans' centres with their rims).
"""

from __future__ import annotations

import numpy as np

from ..kernels import winding as winding_kernels
from .triangles import edges

FILL = 0.75           # a hole is closed when its fan is under this part of its shell's area
OFF = 1e-3            # how far off its face a triangle is looked from, in its own size


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
        The triangles kept, then the fans'.
    dropped, closed : int
        How many of the mesh's triangles lie inside it, and how many holes were closed.
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
        keep = ~self._enclosed(self.vertices(v), whole)
        self.whole = whole                        # every triangle and fan: what is wound about
        self.triangles = whole[keep]
        self.dropped = int((~keep[:len(t)]).sum())
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
        out.dropped = out.closed = 0
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
        mean of its rim, wherever the rim is now)."""
        v = np.asarray(v, np.float64)
        if not self.loops:
            return v
        return np.vstack([v] + [v[loop].mean(axis=0)[None] for loop in self.loops])

    @staticmethod
    def _enclosed(v: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Which triangles (T,) bool of the mesh ``(v, t)`` face into another part: just off the
        centre of its outer side, the winding number is above ½ in size (that side lies inside the
        solid; a surface that bounds it has the outside there). Looked at from a thousandth of
        its size off its face, so neither its own plane nor a neighbour's edge is met on the
        way; a triangle of no area faces nowhere and is kept."""
        a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
        n = np.cross(b - a, c - a)
        size = np.linalg.norm(n, axis=1)
        faces = size > 1e-12 * max(float(size.max(initial=0.0)), 1e-300)
        out = np.zeros(len(t), bool)
        at = np.flatnonzero(faces)
        if at.size == 0:
            return out
        unit = n[at] / size[at, None]
        points = (a[at] + b[at] + c[at]) / 3.0 + unit * (OFF * np.sqrt(0.5 * size[at]))[:, None]
        out[at] = np.abs(winding_numbers(points, v, t)) > 0.5
        return out


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
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    mid = (a + b + c) / 3.0
    n = 0.5 * np.cross(b - a, c - a)
    leaf_of = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    level_l = _cluster_shapes(leaf_of, a, b, c, mid, n)
    level_g = _cluster_shapes(leaf_group[leaf_of], a, b, c, mid, n)
    centres, normals, radii = (np.ascontiguousarray(np.concatenate([g, l])) for g, l in zip(level_g, level_l))
    return np.ascontiguousarray(t), starts, centres, normals, radii, groups


def _cluster_shapes(member: np.ndarray, a, b, c, mid, n):
    """Each cluster's area-weighted centre (K, 3) (plain where it has no area), summed normal
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
    rim = np.zeros(int(t.max()) + 1, bool)
    rim[np.stack([t, np.roll(t, -1, axis=1)], axis=2)[open_edge].ravel()] = True
    out[:, 1:4] = rim[t]
    return out
