"""Reference spaces (seed 000, "Reference Spaces"; SPEC §2).

Matrices are 4x4 float64 affine matrices in Blender's convention (column vectors:
``world = M @ local``), as ``numpy.array(obj.matrix_world)`` gives them.
"""

from __future__ import annotations

import numpy as np

from .errors import HairWigError


def as_matrix(m, what: str = "matrix") -> np.ndarray:
    """A (4, 4) float64 affine matrix, checked to be finite and invertible."""
    m = np.asarray(m, dtype=np.float64)
    if m.shape != (4, 4):
        raise HairWigError(f"{what} must be 4x4, got {m.shape}")
    if not np.isfinite(m).all():
        raise HairWigError(f"{what} has a NaN or infinite entry")
    if abs(np.linalg.det(m[:3, :3])) < 1e-12:
        raise HairWigError(f"{what} is singular (zero scale on an axis)")
    return m


def scale_of(m: np.ndarray) -> float:
    """The uniform scale (world units per local unit) of a (4, 4) matrix: the cube root of its
    linear part's volume change (1 for a degenerate one)."""
    return float(abs(np.linalg.det(np.asarray(m, np.float64)[:3, :3]))) ** (1 / 3) or 1.0


def transform_points(points: np.ndarray, m: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Apply the affine matrix ``m`` to ``points``.

    Parameters
    ----------
    points : (P, 3) float32
    m : (4, 4) float64
    out : (P, 3) float32, optional
        Written in place when given (may be ``points`` itself).
    """
    rot = m[:3, :3].T.astype(points.dtype)
    res = np.matmul(points, rot, out=out)
    res += m[:3, 3].astype(points.dtype)
    return res


def transform_rows(m: np.ndarray, src: np.ndarray, out: np.ndarray, translate: bool = True) -> np.ndarray:
    """Apply the affine matrix ``m`` to points stored as rows ``src`` (3, P) float32, writing
    ``out`` (3, P), which must not be ``src``. The hot path keeps points this way: every
    operation is then a pass over contiguous rows. ``translate=False`` applies only the linear
    part (to a vector, such as a displacement)."""
    np.matmul(m[:3, :3].astype(src.dtype), src, out=out)
    if translate:
        out += m[:3, 3:].astype(src.dtype)
    return out


def rotation_of(m: np.ndarray) -> np.ndarray:
    """The rotation (3, 3) of an affine matrix's linear part, without its scale or shear (the
    nearest rotation: U Vᵀ of its singular value decomposition)."""
    u, _, vt = np.linalg.svd(np.asarray(m, np.float64)[:3, :3])
    r = u @ vt
    if np.linalg.det(r) < 0:
        u[:, -1] *= -1
        r = u @ vt
    return r
