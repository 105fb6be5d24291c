"""Scalp space (SPEC §2; ``hair_wig.scalp.ScalpSpace.apply_rows``, its numpy reference) as one pass
over the points: each point carried by its strand's frame change ``S q = R (q − o₀) + o_f`` and
moved ``a(t)`` of the way, ``out = q + a(t) · (S q − q)`` — without the reference's per-point
copies of every strand's rotation and origins. Points are rows ``(3, C)`` float32; each ``prange``
iteration takes a run of points and writes only those. The float32 operations are the
reference's, in its order.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

RUN = 4096                        # points a kernel iteration takes


@njit(cache=True, parallel=True)
def scalp_carry(rest, strand, attachment, rot, o0, o1, out):
    """``out[:, i] = q + a · (R_s (q − o₀_s) + o_f_s − q)`` for ``q = rest[:, i]`` (3, C) float32,
    ``s = strand[i]`` (C,) int32, ``a = attachment[i]`` (C,) float32; ``rot`` (N, 3, 3), ``o0``,
    ``o1`` (N, 3) float32 each strand's rotation and rest and current root; ``out`` (3, C)
    float32, not ``rest``."""
    c = rest.shape[1]
    for r in prange((c + RUN - 1) // RUN):
        for i in range(r * RUN, min(c, (r + 1) * RUN)):
            s = strand[i]
            q0, q1, q2 = rest[0, i], rest[1, i], rest[2, i]
            e0, e1, e2 = q0 - o0[s, 0], q1 - o0[s, 1], q2 - o0[s, 2]
            a = attachment[i]
            out[0, i] = ((rot[s, 0, 0] * e0 + rot[s, 0, 1] * e1 + rot[s, 0, 2] * e2 + o1[s, 0]) - q0) * a + q0
            out[1, i] = ((rot[s, 1, 0] * e0 + rot[s, 1, 1] * e1 + rot[s, 1, 2] * e2 + o1[s, 1]) - q1) * a + q1
            out[2, i] = ((rot[s, 2, 0] * e0 + rot[s, 2, 1] * e1 + rot[s, 2, 2] * e2 + o1[s, 2]) - q2) * a + q2


def _as_called():
    """``scalp_carry`` with the argument types the wig passes (``pipeline.Wig._primary``): float32
    rows — all of the rest pose's (C-contiguous) or a split bake's part of them (strided) —, int32
    strands, float32 attachment and frames."""
    f = np.float32
    rest = np.zeros((3, 8), f)
    strand, att = np.zeros(4, np.int32), np.ones(4, f)
    rot, org = np.zeros((1, 3, 3), f), np.zeros((1, 3), f)
    for rows in (rest[:, :4].copy(), rest[:, 2:6]):
        scalp_carry(rows, strand, att, rot, org, org, np.empty((3, 4), f))


# (what an artist reads while it runs, the call that compiles it as the core calls it)
WARM_UPS = (("scalp space", _as_called),)
