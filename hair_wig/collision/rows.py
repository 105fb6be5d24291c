"""Points stored as rows (3, N), as the collision queries and their kernels read them: one
contiguous pass per coordinate."""

from __future__ import annotations

import numpy as np


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
