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
        for i in range(start, stop):
            x0, x1, x2 = p[0, i], p[1, i], p[2, i]
            y0 = _spring(0, i, x0, x1, x2, pos, vel, m, e11, e12, e21, e22, accel, c1, lo, forced) * blend[i]
            y1 = _spring(1, i, x0, x1, x2, pos, vel, m, e11, e12, e21, e22, accel, c1, lo, forced) * blend[i]
            y2 = _spring(2, i, x0, x1, x2, pos, vel, m, e11, e12, e21, e22, accel, c1, lo, forced) * blend[i]
            for k in range(3):
                p[k, i] += inv[k, 0] * y0 + inv[k, 1] * y1 + inv[k, 2] * y2


@njit(cache=True, inline="always")
def _spring(k, i, x0, x1, x2, pos, vel, m, e11, e12, e21, e22, accel, c1, lo, forced):
    """Coordinate ``k`` of point ``i``'s spring stepped (``pos``, ``vel`` in place); its new
    deviation ``y'`` from the target."""
    target = m[k, 0] * x0 + m[k, 1] * x1 + m[k, 2] * x2 + m[k, 3]
    y = pos[k, i] - target
    v = vel[k, i]
    y_new = e11[i] * y + e12[i] * v
    v_new = e22[i] * v + e21[i] * y
    if forced:
        a = accel[k, i - lo]
        y_new += c1[i] * a
        v_new += e12[i] * a
    vel[k, i] = v_new
    pos[k, i] = target + y_new
    return y_new


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
