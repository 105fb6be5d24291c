"""Points between the wig's working layout and the hair's: rows ``(3, C)`` head-local float32 into
the hair object's ``(C, 3)`` through an affine map (``pipeline.Wig``'s output), one pass, a run of
points a ``prange`` iteration.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

RUN = 8192


@njit(cache=True, parallel=True)
def rows_to_points(rows, m, out):
    """``out[i] = m · rows[:, i]`` for rows (3, C) float32 into ``out`` (C, 3) float32, ``m``
    (3, 4) float32 an affine map (its last column the translation)."""
    c = rows.shape[1]
    for r in prange((c + RUN - 1) // RUN):
        for i in range(r * RUN, min(c, (r + 1) * RUN)):
            x0, x1, x2 = rows[0, i], rows[1, i], rows[2, i]
            for k in range(3):
                out[i, k] = m[k, 0] * x0 + m[k, 1] * x1 + m[k, 2] * x2 + m[k, 3]


@njit(cache=True, parallel=True)
def rows_copy_to_points(rows, out):
    """``out[i] = rows[:, i]``: rows (3, C) float32 into ``out`` (C, 3) float32 as they are."""
    c = rows.shape[1]
    for r in prange((c + RUN - 1) // RUN):
        for i in range(r * RUN, min(c, (r + 1) * RUN)):
            out[i, 0], out[i, 1], out[i, 2] = rows[0, i], rows[1, i], rows[2, i]


def _as_called():
    """The argument types the wig passes: a block's rows (C-contiguous) into its block of the
    output (C-contiguous rows of (P, 3))."""
    rows, out = np.zeros((3, 4), np.float32), np.zeros((4, 3), np.float32)
    rows_to_points(rows, np.zeros((3, 4), np.float32), out)
    rows_copy_to_points(rows, out)


# (what an artist reads while it runs, the call that compiles it as the core calls it)
WARM_UPS = (("output", _as_called),)
