"""Scalp space (seed 000, "Reference Spaces"; SPEC §2).

Each strand is carried by a frame at its root on the surface: the root's position, the surface
normal there, and a tangent. When the surface deforms (shape keys, armature), the strand moves by
its frame's change ``S = S_f · S_0⁻¹``, scaled per vertex by the attachment profile:
``q += a(t) · (S q − q)``.

The frame is built the way Blender's "Deform Curves on Surface" node builds it, so that with
``a ≡ 1`` hair_wig and Blender agree: the root is found by its surface UV coordinate; position
and normal are interpolated barycentrically (normals from face-corner normals); the first tangent
is ``normalize(n × (v1 − v0))`` over the root triangle's first two corners, the second
``normalize(n × t1)``.
"""

from __future__ import annotations

import numpy as np

from .errors import FROM_ZERO, HairWigError
from .kernels import scalp_carry


def _normalize(v):
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n > 0, n, 1)


def locate_uv(tri_uv: np.ndarray, uv: np.ndarray, name: str = "hair", grid: int | None = None,
              strict: bool = True):
    """Triangle and barycentric weights of every point ``uv`` (N, 2) in a UV map whose triangles
    are ``tri_uv`` (T, 3, 2). Vectorised through a uniform grid over the UV bounding box.

    Returns ``tri (N,) int64`` and ``bary (N, 3) float64``; raises naming the first strand whose
    UV lies in no triangle (``strict=False``: gives it triangle -1 and zero weights instead).
    """
    tri_uv = np.asarray(tri_uv, dtype=np.float64)
    uv = np.asarray(uv, dtype=np.float64)
    t = len(tri_uv)
    lo = np.minimum(tri_uv.reshape(-1, 2).min(axis=0), uv.min(axis=0)) - 1e-9
    hi = np.maximum(tri_uv.reshape(-1, 2).max(axis=0), uv.max(axis=0)) + 1e-9
    g = grid or max(1, int(np.sqrt(t)))
    cell = (hi - lo) / g
    bmin = np.clip(((tri_uv.min(axis=1) - lo) / cell).astype(np.int64), 0, g - 1)
    bmax = np.clip(((tri_uv.max(axis=1) - lo) / cell).astype(np.int64), 0, g - 1)
    nx, ny = bmax[:, 0] - bmin[:, 0] + 1, bmax[:, 1] - bmin[:, 1] + 1
    per = nx * ny
    tri_of = np.repeat(np.arange(t), per)
    k = np.arange(per.sum()) - np.repeat(np.cumsum(per) - per, per)
    cx = bmin[tri_of, 0] + k % nx[tri_of]
    cy = bmin[tri_of, 1] + k // nx[tri_of]
    cell_id = cx * g + cy
    order = np.argsort(cell_id, kind="stable")
    cell_sorted, tri_sorted = cell_id[order], tri_of[order]
    q = np.clip(((uv - lo) / cell).astype(np.int64), 0, g - 1)
    qid = q[:, 0] * g + q[:, 1]
    start = np.searchsorted(cell_sorted, qid, side="left")
    stop = np.searchsorted(cell_sorted, qid, side="right")
    n_cand = stop - start
    strand_of = np.repeat(np.arange(len(uv)), n_cand)
    j = np.arange(n_cand.sum()) - np.repeat(np.cumsum(n_cand) - n_cand, n_cand)
    cand = tri_sorted[start[strand_of] + j]
    a, b, c = tri_uv[cand, 0], tri_uv[cand, 1], tri_uv[cand, 2]
    p = uv[strand_of]
    v0, v1, v2 = b - a, c - a, p - a
    den = v0[:, 0] * v1[:, 1] - v1[:, 0] * v0[:, 1]
    ok = np.abs(den) > 1e-20
    den = np.where(ok, den, 1)
    w1 = (v2[:, 0] * v1[:, 1] - v1[:, 0] * v2[:, 1]) / den
    w2 = (v0[:, 0] * v2[:, 1] - v2[:, 0] * v0[:, 1]) / den
    w0 = 1 - w1 - w2
    inside = ok & (w0 >= -1e-6) & (w1 >= -1e-6) & (w2 >= -1e-6)
    # Least outside-ness wins, so a root on a shared edge picks one triangle deterministically.
    score = np.where(inside, -np.minimum(np.minimum(w0, w1), w2), np.inf)
    best = np.full(len(uv), np.inf)
    np.minimum.at(best, strand_of, score)
    pick = inside & (score == best[strand_of])
    none = np.iinfo(np.int64).max
    first = np.full(len(uv), none, dtype=np.int64)
    rows = np.flatnonzero(pick)
    np.minimum.at(first, strand_of[rows], rows)
    missing = np.flatnonzero(first == none)
    if missing.size and not strict:
        tri = np.full(len(uv), -1, np.int64)
        bary = np.zeros((len(uv), 3))
        found = first != none
        tri[found] = cand[first[found]]
        bary[found] = np.stack([w0[first[found]], w1[first[found]], w2[first[found]]], axis=1)
        return tri, bary
    if missing.size:
        s = int(missing[0])
        raise HairWigError(
            f"'{name}': strand {s}'s surface UV ({uv[s, 0]:.4f}, {uv[s, 1]:.4f}) lies outside the "
            f"surface's UV map ({missing.size} strand(s) in all); re-attach the hair to the surface{FROM_ZERO}")
    tri = cand[first]
    bary = np.stack([w0[first], w1[first], w2[first]], axis=1)
    return tri, bary


class ScalpSpace:
    """Per-strand root frames on a surface, bound at rest.

    Parameters
    ----------
    tri_verts, tri_corners : (T, 3) int
        The surface's triangles as vertex indices and as face-corner indices.
    tri_uv : (T, 3, 2) float
        UV of each triangle corner.
    rest_positions : (V, 3) float, rest_normals : (C, 3) float
        The surface at rest (head-local): vertex positions and face-corner normals.
    strand_uv : (N, 2)
        Each strand's ``surface_uv_coordinate``.
    """

    def __init__(self, tri_verts, tri_corners, tri_uv, rest_positions, rest_normals, strand_uv,
                 name: str = "hair"):
        self.tri_verts = np.asarray(tri_verts, dtype=np.int64)
        self.tri_corners = np.asarray(tri_corners, dtype=np.int64)
        tri, bary = locate_uv(tri_uv, strand_uv, name)
        self.verts = self.tri_verts[tri]          # (N, 3)
        self.corners = self.tri_corners[tri]      # (N, 3)
        self.bary = bary
        self.rest_positions = np.asarray(rest_positions, dtype=np.float64)
        self.rest_normals = np.asarray(rest_normals, dtype=np.float64)
        self.rest_origin, self.rest_rotation = self.frames(self.rest_positions, rest_normals)
        # Below this the surface counts as undeformed (float32 resolution of its size).
        self.tolerance = 1e-7 * max(float(np.ptp(self.rest_positions, axis=0).max()), 1e-12)

    def at_rest(self, positions, normals) -> bool:
        """Whether the surface has its rest shape (then every frame change is the identity)."""
        return (np.abs(np.asarray(positions) - self.rest_positions).max() <= self.tolerance
                and np.abs(np.asarray(normals) - self.rest_normals).max() <= 1e-6)

    def frames(self, positions, normals, reference=None):
        """Root origins (N, 3) and orientations (N, 3, 3) — columns tangent, bitangent, normal —
        on the surface given by vertex ``positions`` and corner ``normals``. The tangent follows
        the root triangle's first edge in ``reference`` positions (default: ``positions``)."""
        pos = np.asarray(positions, dtype=np.float64)
        nrm = np.asarray(normals, dtype=np.float64)
        ref = self.rest_positions if reference is None else reference
        w = self.bary[:, :, None]
        origin = (pos[self.verts] * w).sum(axis=1)
        n = _normalize((nrm[self.corners] * w).sum(axis=1))
        edge = ref[self.verts[:, 1]] - ref[self.verts[:, 0]]
        tx = _normalize(np.cross(n, edge))
        ty = _normalize(np.cross(n, tx))
        return origin, np.stack([tx, ty, n], axis=2)

    def transforms(self, positions, normals):
        """Per-strand frame change: rotation ``R = R_f · R_0ᵀ`` (N, 3, 3), and the rest and
        current root positions, so that ``S q = R (q − o_0) + o_f``."""
        origin, rot = self.frames(positions, normals, reference=np.asarray(positions, dtype=np.float64))
        return rot @ np.swapaxes(self.rest_rotation, 1, 2), self.rest_origin, origin

    def apply_rows(self, rest: np.ndarray, strand_of_point: np.ndarray, attachment: np.ndarray,
                   frame, out: np.ndarray) -> np.ndarray:
        """``out = q + a(t) · (S q − q)`` (SPEC §2) for points stored as rows ``rest`` (3, C)
        float32 of the strands ``strand_of_point`` (C,) int32, attachment (C,) float32; ``frame``
        is this frame's ``transforms`` as float32. ``out`` (3, C) must not be ``rest``. One pass
        of ``kernels.scalp_carry``; ``apply_rows_numpy`` is its reference."""
        rot, o0, o1 = frame
        scalp_carry(rest, strand_of_point, attachment, rot, o0, o1, out)
        return out

    @staticmethod
    def apply_rows_numpy(rest: np.ndarray, strand_of_point: np.ndarray, attachment: np.ndarray,
                         frame, out: np.ndarray) -> np.ndarray:
        """``apply_rows`` in numpy: the plain reference its kernel is tested against."""
        rot, o0, o1 = frame
        rel = rest - o0[strand_of_point].T
        np.einsum("pkj,jp->kp", rot[strand_of_point], rel, out=out)
        out += o1[strand_of_point].T
        out -= rest
        out *= attachment
        out += rest
        return out
