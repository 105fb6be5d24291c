"""Compression compensation (seed 000, "Refinement", FIG. 10; SPEC §6.1) in one pass over the
points, a run of points a ``prange`` iteration: ``p += c · (α − 1) · max(0, d · c) / |c|²`` with
``d = p − p_rest`` and ``c = l − p_rest`` the compression vector towards the head's centre ``l`` —
the part of a displacement that points inward scaled by ``α``. The numpy form it replaced stays as
``refinement._compensate_numpy`` (its reference in tests/test_kernels_compression.py); both do the
same float32 operations in the same order.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

RUN = 8192


@njit(cache=True, parallel=True)
def compress_rows(p, rest, c, factor, centre, alpha, bound):
    """Compensate rows ``p`` (3, C) float32 in place against their rest pose ``rest`` (3, C).
    ``bound``: ``c`` (3, C) and ``factor`` (C,) — ``(α − 1) / |c|²``, 0 at the centre — are this
    rest pose's (``refinement.compression_vectors``); otherwise they are computed here from
    ``centre`` (3,) and ``alpha`` (C,) float32."""
    n = p.shape[1]
    for r in prange((n + RUN - 1) // RUN):
        for i in range(r * RUN, min(n, (r + 1) * RUN)):
            if bound:
                c0, c1, c2, f = c[0, i], c[1, i], c[2, i], factor[i]
            else:
                c0, c1, c2 = centre[0] - rest[0, i], centre[1] - rest[1, i], centre[2] - rest[2, i]
                cc = c0 * c0 + c1 * c1 + c2 * c2
                f = (alpha[i] - np.float32(1.0)) / cc if cc > 0 else np.float32(0.0)
            d0, d1, d2 = p[0, i] - rest[0, i], p[1, i] - rest[1, i], p[2, i] - rest[2, i]
            dn = d0 * c0 + d1 * c1 + d2 * c2
            if dn == dn and not (dn > 0):       # np.maximum(dn, 0): NaN stays
                dn = np.float32(0.0)
            dn = dn * f
            p[0, i] += c0 * dn
            p[1, i] += c1 * dn
            p[2, i] += c2 * dn


def _as_called():
    """The argument types refinement passes: contiguous float32 rows, with and without the
    bound vectors."""
    p, rest = np.ones((3, 4), np.float32), np.zeros((3, 4), np.float32)
    centre, alpha = np.zeros(3, np.float32), np.full(4, 0.5, np.float32)
    compress_rows(p, rest, rest, alpha, centre, alpha, True)
    compress_rows(p, rest, rest, alpha, centre, alpha, False)


WARM_UPS = (("compression", _as_called),)
