"""The Springs layer's step (SPEC §5; ``hair_wig.dynamics.SecondarySprings.follow``, its numpy
reference) as one pass over the points: each point's spring toward its target stepped exactly,
and the point shown at ``goal + blend · A⁻¹ y'``. Points are rows ``(3, P)`` float32, as the wig
keeps them; each ``prange`` iteration takes a run of points and writes only those.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

RUN = 4096                        # points a kernel iteration takes


@njit(cache=True, parallel=True)
def spring_follow(pos, vel, p, m, inv, e11, e12, e21, e22, blend, accel, c1, lo, hi):
    """Points ``lo … hi − 1``: with the target ``T = m · p`` (``m`` (3, 4) float32: head-local →
    the springs' space) and ``y = pos − T``, ``y' = e11 y + e12 v (+ c1 a)``, ``v' = e21 y + e22 v
    (+ e12 a)``, ``pos' = T + y'``; ``p`` (3, P) moves to ``p + blend · inv · y'`` (``inv`` (3, 3):
    the springs' space → head-local, linear part). ``pos``, ``vel`` (3, P) float32 in place;
    ``accel`` (3, hi − lo) float32, the force fields' push held over the step, or (3, 0)."""
    forced = accel.shape[1] > 0
    runs = (hi - lo + RUN - 1) // RUN
    for r in prange(runs):
        start = lo + r * RUN
        stop = min(start + RUN, hi)
        # row by row (each pass along contiguous memory), the deviations kept for the way back
        y = np.empty((3, stop - start), np.float32)
        for k in range(3):
            for i in range(start, stop):
                target = m[k, 0] * p[0, i] + m[k, 1] * p[1, i] + m[k, 2] * p[2, i] + m[k, 3]
                dev = pos[k, i] - target
                v = vel[k, i]
                y_new = e11[i] * dev + e12[i] * v
                v_new = e22[i] * v + e21[i] * dev
                if forced:
                    a = accel[k, i - lo]
                    y_new += c1[i] * a
                    v_new += e12[i] * a
                vel[k, i] = v_new
                pos[k, i] = target + y_new
                y[k, i - start] = y_new * blend[i]
        for k in range(3):
            for i in range(start, stop):
                c = i - start
                p[k, i] += inv[k, 0] * y[0, c] + inv[k, 1] * y[1, c] + inv[k, 2] * y[2, c]


def _as_called():
    """``spring_follow`` with the argument types the Springs layer passes (float32 rows and
    coefficients, a (3, 0) or (3, C) push)."""
    f = np.float32
    rows, coef = np.zeros((3, 4), f), np.ones(4, f)
    m = np.zeros((3, 4), f)
    m[:, :3] = np.eye(3, dtype=f)
    for accel in (np.zeros((3, 0), f), np.zeros((3, 4), f)):
        spring_follow(rows, rows.copy(), rows.copy(), m, np.eye(3, dtype=f), coef, coef, coef, coef, coef, accel,
                      coef, 0, 4)


# (what an artist reads while it runs, the call that compiles it as the core calls it)
WARM_UPS = (("springs", _as_called),)
