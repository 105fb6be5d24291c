"""Children's room: guides that keep the hair interpolated from them out of the head.

Blender grows most grooms' visible hair from guides (Quick Fur's *Interpolate Hair Curves*): a
child is its own root plus a blend of its nearest guides' shapes, each guide's points taken
relative to the guide's root. With *Follow Surface Normal* off (Quick Fur's default) a guide's
shape is moved onto the child's root without turning. A guide kept out of the head can still
carry a child into it wherever the skin under the child lies higher than under the guide — a
brow, an ear, the far side of a curved scalp — so the collision keeps out, besides every guide,
the guide's shape moved onto a few roots of the children it leads (the collision of SPEC §6.3,
extended by issue 34 to what Blender grows from the guides): samples of its neighbourhood, each
with its own clearance at rest, so a groom at rest stays as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

@dataclass
class Children:
    """The hair a wig's strands are guides of: each child's ``roots`` (C, 3) in the hair
    object's space at rest, and whether its shape turns with the surface normal from the
    guide's root to its own (*Follow Surface Normal*)."""

    roots: np.ndarray
    follow_normal: bool = False


#: samples of each guide's neighbourhood: the children's roots spread widest around it
SAMPLES = 16
#: the guides a child blends (Interpolate Hair Curves' "Interpolation Guides", 4 in Quick Fur)
GUIDES = 5


def nearest(points: np.ndarray, sites: np.ndarray, k: int = 1, budget: int = 1 << 22) -> np.ndarray:
    """The indices (N, k) of the ``k`` nearest of ``sites`` (G, 3) to each of ``points`` (N, 3),
    nearest first; in chunks of at most ``budget`` distances."""
    k = min(k, len(sites))
    out = np.empty((len(points), k), np.int64)
    step = max(1, budget // max(len(sites), 1))
    s2 = np.einsum("gk,gk->g", sites, sites)
    for a in range(0, len(points), step):
        d2 = s2[None, :] - 2.0 * (points[a:a + step] @ sites.T)
        near = np.argpartition(d2, k - 1, axis=1)[:, :k] if k < len(sites) else np.tile(np.arange(k), (len(d2), 1))
        order = np.argsort(np.take_along_axis(d2, near, axis=1), axis=1, kind="stable")
        out[a:a + step] = np.take_along_axis(near, order, axis=1)
    return out


def neighbourhood(guide_roots: np.ndarray, child_roots: np.ndarray, samples: int = SAMPLES,
                  among: int = GUIDES) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (samples, 3, G) float64 from each guide's root to the roots of children it leads
    (those it is one of the ``among`` nearest guides of, as Interpolate Hair Curves blends
    them): the farthest first, then each the farthest from those
    already taken (farthest-point sampling), so a few samples span the whole patch. A guide
    leading fewer children repeats them; one leading none has offsets 0 (the guide itself).
    Deterministic: ties go to the child listed first."""
    g = np.asarray(guide_roots, np.float64)
    c = np.asarray(child_roots, np.float64)
    G = len(g)
    out = np.zeros((samples, 3, G))
    which = np.full((samples, G), -1, np.int64)
    if G == 0 or len(c) == 0 or samples == 0:
        return out, which
    near = nearest(c, g, among)
    owner = near.ravel()
    c = np.repeat(c, near.shape[1], axis=0)
    child = np.repeat(np.arange(len(child_roots)), near.shape[1])
    order = np.argsort(owner, kind="stable")
    counts = np.bincount(owner, minlength=G)
    width = int(counts.max())
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.arange(len(c)) - np.repeat(starts, counts)
    offsets = np.zeros((G, width, 3))
    valid = np.zeros((G, width), bool)
    ids = np.full((G, width), -1, np.int64)
    offsets[owner[order], slot] = c[order] - g[owner[order]]
    valid[owner[order], slot] = True
    ids[owner[order], slot] = child[order]
    # the distance of each candidate to the samples taken so far (its own offset's length to
    # begin with: the guide's root counts as taken)
    gap = np.where(valid, np.einsum("gwk,gwk->gw", offsets, offsets), -1.0)
    rows = np.arange(G)
    for k in range(samples):
        pick = np.argmax(gap, axis=1)
        chosen = offsets[rows, pick]                                   # (G, 3)
        out[k] = chosen.T
        which[k] = ids[rows, pick]
        d = offsets - chosen[:, None, :]
        gap = np.where(valid, np.minimum(gap, np.einsum("gwk,gwk->gw", d, d)), -1.0)
    return out, which


def turns(guide_up: np.ndarray, child_up: np.ndarray) -> np.ndarray:
    """The shortest rotations (K, 3, 3, G) float64 taking each guide's up ``guide_up`` (3, G) to
    its samples' ups ``child_up`` (K, 3, G) — unit surface normals: how Interpolate Hair Curves
    turns a guide's shape onto a child's root with *Follow Surface Normal* (Rodrigues' formula
    about ``a × b``; opposite ups turn half a circle about an axis across ``a``)."""
    a = guide_up[None]
    b = child_up
    axis = np.cross(a, b, axis=1)                                        # (K, 3, G)
    c = np.einsum("kag,kag->kg", np.broadcast_to(a, b.shape), b)
    k_, _, g_ = b.shape
    r = np.zeros((k_, 3, 3, g_))
    r[:, 0, 0] = r[:, 1, 1] = r[:, 2, 2] = c
    x, y, z = axis[:, 0], axis[:, 1], axis[:, 2]
    # [v]x + (1 - c) / |v|² v vᵀ with |v|² = 1 − c²: (1 − c)/(1 − c²) = 1/(1 + c)
    f = np.divide(1.0, 1.0 + c, out=np.zeros_like(c), where=c > -1 + 1e-9)
    r[:, 0, 1], r[:, 0, 2], r[:, 1, 2] = -z, y, -x
    r[:, 1, 0], r[:, 2, 0], r[:, 2, 1] = z, -y, x
    r += f[:, None, None] * np.einsum("kag,kbg->kabg", axis, axis)
    flip = np.argwhere(c <= -1 + 1e-9)
    for kk, gg in flip:                      # bind time, rare: a half turn about a perpendicular
        u = np.cross(guide_up[:, gg], np.eye(3)[np.argmin(np.abs(guide_up[:, gg]))])
        u /= np.linalg.norm(u)
        r[kk, :, :, gg] = 2.0 * np.outer(u, u) - np.eye(3)
    return r


def transplant(points: np.ndarray, roots: np.ndarray, offsets: np.ndarray, turn: np.ndarray | None) -> np.ndarray:
    """Guides' points ``points`` (3, S) — strands rooted at ``roots`` (3, S) — moved onto their
    samples' roots: (K, 3, S), ``root + offset + R (point − root)`` (``R`` from ``turns``, or
    none: moved without turning)."""
    if turn is None:
        return points[None] + offsets
    return roots[None] + offsets + np.einsum("kabs,bs->kas", turn, points - roots)


def transplant_as_walked(points: np.ndarray, roots: np.ndarray, offsets: np.ndarray,
                        turn: np.ndarray | None) -> np.ndarray:
    """``transplant`` in float32, each sum and product in the order the walk's kernel takes
    them (``kernels.walk._children_out``): float32 ``points``, ``roots`` (3, S), ``offsets``
    (K, 3, S), ``turn`` (K, 3, 3, S) give the very places (K, 3, S) the kernel reaches from them,
    bit for bit."""
    points, roots = np.asarray(points, np.float32), np.asarray(roots, np.float32)
    offsets = np.asarray(offsets, np.float32)
    if turn is None:
        return points[None] + offsets
    turn = np.asarray(turn, np.float32)
    u = points - roots                                                      # (3, S)
    turned = (turn[:, :, 0] * u[0] + turn[:, :, 1] * u[1]) + turn[:, :, 2] * u[2]
    return (roots[None] + offsets) + turned


def sag(offsets: np.ndarray) -> np.ndarray:
    """How much farther out (G,) than the head offset each guide keeps its shapes moved onto
    its children's roots: a child blends the shapes of guides up to its patch's radius ``r``
    away (the farthest of ``offsets`` (K, 3, G)), and where the skin turns about a radian across
    a patch (radius of curvature ``R ≈ r``: a brow, an ear, the scalp between a sparse groom's
    guides) a blend of shapes that are each just outside sags inside them by up to a chord's
    sagitta: a chord ``r`` long on a circle of radius ``r`` sags ``r (1 − cos 30°) ≈ 0.134 r``. Kept only where the groom has that room (the limit is never
    above a point's rest clearance), so a groom at rest does not move.

    Measured on Quick Fur (112 guides) on Suzanne turning 90° with Springs
    (``scripts/fur_children.py``): child points > 1 cm inside per frame at worst 2371 without
    the children's room, 1425 with it at no margin, 1061-1070 with the sagitta — as many as
    Blender's own interpolation of the unbaked groom (1061)."""
    return np.sqrt(np.einsum("kag,kag->kg", offsets, offsets)).max(axis=0) * (1.0 - np.sqrt(3.0) / 2.0)
