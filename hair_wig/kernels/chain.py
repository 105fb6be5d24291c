"""Gauss's least motion of a chain (``hair_wig.chain`` says what it is and why: the minimum-norm
Gauss–Newton step ``Δ = Aᵀ (A Aᵀ)⁻¹ g`` of a chain whose segments keep their lengths and whose
contacts stay on their planes, a fixed number of rounds; issue 34 part 3) as one kernel
(``least_motion_chains``), and the Strands layer's give built on it (``chain.give``: which strands
a contact left short head-on, ``give_candidates``; their contacts, least motion and whether it is
a give to take, ``give_chains``). A chain per ``prange`` iteration, each writing only its own:
the same bits on any number of threads.

A chain's ``A Aᵀ`` is banded once its rows are ordered along the chain — segment ``i`` (ending on
free point ``i``), then point ``i``'s contact if it has one, then segment ``i + 1``: a segment
row meets only the segments beside it (the point they share) and the contacts of its two ends,
and a contact row only the two segments of its point, so nothing lies more than two places off
the diagonal. ``A Aᵀ + RIDGE·I`` is symmetric positive definite, and its LDLᵀ on that band
(``_factor``, ``_solve``: no pivoting, no fill outside the band) takes ``O(m)`` for ``m`` rows,
where ``numpy.linalg.solve`` took ``O(m³)`` on the dense matrix. The ridge also keeps every pivot
at least ``RIDGE`` less its rounding (entries of at most 2, a few ε of them, far below 1e-12).

Rows of points with no contact are left out (the numpy code gave every chain a row for every
point any chain touched: a row of zeros but for the ridge, which solves to nothing). The
arithmetic is otherwise the numpy code's (``chain._least_motion_numpy`` and ``chain._give_numpy``,
the tests' reference), with dot products summed x, y, z and the solve LDLᵀ rather than LAPACK's
pivoted LU: the two agree to the solve's rounding times ``A Aᵀ``'s condition
(tests/test_kernels_chain.py).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(cache=True)
def _factor(band, m):
    """LDLᵀ of the symmetric band ``band`` (m, 3) in place: on entry ``band[j, 0]`` is
    ``a_jj``, ``band[j, 1]`` ``a_{j+1,j}`` and ``band[j, 2]`` ``a_{j+2,j}``; on return
    ``band[j, 0]`` is ``d_j`` and ``band[j, 1]``, ``band[j, 2]`` are ``L_{j+1,j}``,
    ``L_{j+2,j}``."""
    for j in range(m):
        d = band[j, 0]
        if j >= 1:
            l1 = band[j - 1, 1]
            d -= l1 * l1 * band[j - 1, 0]
        if j >= 2:
            l2 = band[j - 2, 2]
            d -= l2 * l2 * band[j - 2, 0]
        band[j, 0] = d
        if j + 1 < m:
            a = band[j, 1]
            if j >= 1:
                a -= band[j - 1, 2] * band[j - 1, 1] * band[j - 1, 0]
            band[j, 1] = a / d
        if j + 2 < m:
            band[j, 2] = band[j, 2] / d


@njit(cache=True)
def _solve(band, m, z):
    """``z`` (m,) ← ``(L D Lᵀ)⁻¹ z`` in place, ``band`` factored by ``_factor``."""
    for j in range(1, m):
        z[j] -= band[j - 1, 1] * z[j - 1]
        if j >= 2:
            z[j] -= band[j - 2, 2] * z[j - 2]
    for j in range(m):
        z[j] /= band[j, 0]
    for j in range(m - 2, -1, -1):
        z[j] -= band[j, 1] * z[j + 1]
        if j + 2 < m:
            z[j] -= band[j, 2] * z[j + 2]


@njit(cache=True)
def _chain_moves(p, nrm, rch, lng, fixed, rounds, ridge, u, now, row, band, z):
    """One chain ``p`` (n, 3) moved by ``rounds`` minimum-norm Gauss–Newton steps, in place
    (``hair_wig.chain.least_motion``): its contacts ``nrm`` (n, 3) (zero: none) and ``rch`` (n,),
    segments ``lng`` (n − 1,), points ``0 … fixed − 1`` held. Scratch: ``u`` (r, 3) its unit free
    segments, ``now`` (r,) their lengths, ``row`` (r,) each free point's contact row (−1: none),
    ``band`` (2r, 3), ``z`` (2r,), for ``r = n − fixed`` free points."""
    n = p.shape[0]
    r = n - fixed
    # rows in chain order: segment i, then point i's contact (if any)
    m = 0
    for i in range(r):
        m += 1
        q = fixed + i
        if nrm[q, 0] * nrm[q, 0] + nrm[q, 1] * nrm[q, 1] + nrm[q, 2] * nrm[q, 2] > 0.0:
            row[i] = m
            m += 1
        else:
            row[i] = -1
    for _ in range(rounds):
        for i in range(r):
            a, b = fixed + i - 1, fixed + i
            s0, s1, s2 = p[b, 0] - p[a, 0], p[b, 1] - p[a, 1], p[b, 2] - p[a, 2]
            ln = math.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
            inv = max(ln, 1e-300)
            now[i] = ln
            u[i, 0], u[i, 1], u[i, 2] = s0 / inv, s1 / inv, s2 / inv
        for j in range(m):
            band[j, 0], band[j, 1], band[j, 2] = 0.0, 0.0, 0.0
        s = 0
        n0 = n1 = n2 = 0.0
        for i in range(r):
            q = fixed + i
            uu = u[i, 0] * u[i, 0] + u[i, 1] * u[i, 1] + u[i, 2] * u[i, 2]
            # a segment's two ends both free, but the first's start is held
            band[s, 0] = (1.0 if i == 0 else 2.0) * uu + ridge
            z[s] = lng[q - 1] - now[i]
            c = row[i]
            if c >= 0:
                n0, n1, n2 = nrm[q, 0], nrm[q, 1], nrm[q, 2]
                band[c, 0] = (n0 * n0 + n1 * n1 + n2 * n2) + ridge
                band[s, 1] = n0 * u[i, 0] + n1 * u[i, 1] + n2 * u[i, 2]          # ends on point i
                z[c] = rch[q] - (n0 * p[q, 0] + n1 * p[q, 1] + n2 * p[q, 2])
            nxt = s + 1 if c < 0 else s + 2
            if i + 1 < r:
                # segments i, i + 1 share point i; its contact meets the next one's start
                band[s, nxt - s] = -(u[i, 0] * u[i + 1, 0] + u[i, 1] * u[i + 1, 1] + u[i, 2] * u[i + 1, 2])
                if c >= 0:
                    band[c, 1] = -(n0 * u[i + 1, 0] + n1 * u[i + 1, 1] + n2 * u[i + 1, 2])
            s = nxt
        _factor(band, m)
        _solve(band, m, z)
        # Δ = Aᵀ λ: a point takes u_i λ_i of the segment it ends, −u_{i+1} λ_{i+1} of the one it
        # starts, and n λ of its contact
        s = 0
        for i in range(r):
            q = fixed + i
            c = row[i]
            nxt = s + 1 if c < 0 else s + 2
            for d in range(3):
                step = u[i, d] * z[s]
                if i + 1 < r:
                    step -= u[i + 1, d] * z[nxt]
                if c >= 0:
                    step += nrm[q, d] * z[c]
                p[q, d] += step
            s = nxt


@njit(cache=True, parallel=True)
def least_motion_chains(x, fixed, length, normal, reach, rounds, ridge):
    """``hair_wig.chain.least_motion`` on the chains ``x`` (3, n, K) float64, in place: segments
    ``length`` (n − 1, K), contacts ``normal`` (3, n, K) (zero: none) and ``reach`` (n, K), points
    ``0 … fixed − 1`` held (``fixed`` ≥ 1), ``rounds`` steps, ``ridge`` on ``A Aᵀ``'s diagonal.
    One chain per iteration."""
    n, chains = x.shape[1], x.shape[2]
    r = n - fixed
    if r <= 0:
        return
    for k in prange(chains):
        p, nrm = np.empty((n, 3)), np.empty((n, 3))
        for i in range(n):
            for c in range(3):
                p[i, c] = x[c, i, k]
                nrm[i, c] = normal[c, i, k]
        u, now, row = np.empty((r, 3)), np.empty(r), np.empty(r, np.int64)
        band, z = np.empty((2 * r, 3)), np.empty(2 * r)
        _chain_moves(p, nrm, reach[:, k], length[:, k], fixed, rounds, ridge, u, now, row, band, z)
        for i in range(fixed, n):
            for c in range(3):
                x[c, i, k] = p[i, c]


@njit(cache=True, inline="always")
def _pushed_normal(push, i, s):
    """Point ``i`` of strand ``s``'s push ``push`` (3, n, S): its squared length and its unit
    direction (zero where it is not pushed), divided as ``chain.give`` divides it."""
    r2 = push[0, i, s] * push[0, i, s] + push[1, i, s] * push[1, i, s] + push[2, i, s] * push[2, i, s]
    d = math.sqrt(r2) if r2 > 0.0 else 1.0
    return r2, push[0, i, s] / d, push[1, i, s] / d, push[2, i, s] / d


@njit(cache=True)
def gives(x, length, push, give, settling, head_on, s):
    """Whether ``chain.give`` looks at strand ``s`` of ``x`` (3, n, S): pushed (``push`` (3, n, S))
    by no more than ``settling`` of its shortest segment, with a segment left more than ``give``
    of its ``length`` (n − 1, S) short whose pushed end's (or start's) normal it lies within
    ``acos(head_on)`` of. A strand of one point never gives."""
    n = x.shape[1]
    if n < 2:
        return False
    shortest = length[0, s]
    for i in range(1, n - 1):
        shortest = min(shortest, length[i, s])
    most = (settling * settling) * shortest ** 2
    hit, settles, short = False, True, False
    for i in range(n):
        r2 = push[0, i, s] * push[0, i, s] + push[1, i, s] * push[1, i, s] + push[2, i, s] * push[2, i, s]
        hit |= r2 > 0.0
        settles &= r2 <= most
    if hit and settles:
        for i in range(n - 1):
            s0, s1, s2 = x[0, i + 1, s] - x[0, i, s], x[1, i + 1, s] - x[1, i, s], x[2, i + 1, s] - x[2, i, s]
            now = math.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
            if not length[i, s] - now > give * length[i, s]:
                continue
            for end in (i + 1, i):
                r2, n0, n1, n2 = _pushed_normal(push, end, s)
                if r2 > 0.0 and abs(s0 * n0 + s1 * n1 + s2 * n2) / max(now, 1e-300) > head_on:
                    short = True
            if short:
                break
    return hit and settles and short


@njit(cache=True, parallel=True)
def give_candidates(x, length, push, give, settling, head_on, out):
    """``gives`` of every strand of ``x`` (3, n, S), into ``out`` (S,) bool. One strand per
    iteration."""
    for s in prange(x.shape[2]):
        out[s] = gives(x, length, push, give, settling, head_on, s)


@njit(cache=True)
def give_chain(x, length, push, s, fixed, rounds, ridge, kept, moved, k):
    """``chain.give`` on strand ``s`` of ``x`` (3, n, S) (one ``gives`` picked): each pushed
    point's contact the plane through it across its push (``push`` (3, n, S)), the chain's least
    motion (``_chain_moves``) into ``moved[:, :, k]`` (3, n, K), and whether it is a give to take
    (``chain.settled``: every segment its ``length`` (n − 1, S) to ``kept`` of the longest, the
    whole motion no more than the swing's ``√(2 max L δ)``), returned. ``x`` is only read."""
    n = x.shape[1]
    r = n - fixed
    p, start, nrm = np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3))
    rch, lng = np.zeros(n), length[:, s]
    for i in range(n):
        _, nrm[i, 0], nrm[i, 1], nrm[i, 2] = _pushed_normal(push, i, s)
        for c in range(3):
            p[i, c] = start[i, c] = x[c, i, s]
        rch[i] = nrm[i, 0] * p[i, 0] + nrm[i, 1] * p[i, 1] + nrm[i, 2] * p[i, 2]
    # what follow-the-leader would move instead: the swing √(2 L δ) of the shortest fall
    worst = 0.0
    for i in range(n - 1):
        s0, s1, s2 = p[i + 1, 0] - p[i, 0], p[i + 1, 1] - p[i, 1], p[i + 1, 2] - p[i, 2]
        worst = max(worst, lng[i] * max(lng[i] - math.sqrt(s0 * s0 + s1 * s1 + s2 * s2), 0.0))
    swing = math.sqrt(2.0 * worst)
    if r > 0:
        u, now, row = np.empty((r, 3)), np.empty(r), np.empty(r, np.int64)
        band, z = np.empty((2 * r, 3)), np.empty(2 * r)
        _chain_moves(p, nrm, rch, lng, fixed, rounds, ridge, u, now, row, band, z)
    for i in range(n):
        for c in range(3):
            moved[c, i, k] = p[i, c] - start[i, c]
    return settled(p, start, lng, kept, swing)


@njit(cache=True)
def settled(x, x0, length, kept, bound):
    """``chain.settled`` for one chain moved from ``x0`` to ``x`` (m, 3), its segments' lengths
    ``length`` (m − 1,) before: a give to take where every segment keeps its length to ``kept``
    of the longest and the whole motion (the root of its summed squares) is finite and no more
    than ``bound``. The walk's lift and the chain's give both decide so."""
    off, longest, total = 0.0, 0.0, 0.0
    for k in range(x.shape[0]):
        if k > 0:
            s0, s1, s2 = x[k, 0] - x[k - 1, 0], x[k, 1] - x[k - 1, 1], x[k, 2] - x[k - 1, 2]
            off = max(off, abs(math.sqrt(s0 * s0 + s1 * s1 + s2 * s2) - length[k - 1]))
            longest = max(longest, length[k - 1])
        for c in range(3):
            total += (x[k, c] - x0[k, c]) ** 2
    total = math.sqrt(total)
    return off <= kept * longest and total <= bound and math.isfinite(total)


@njit(cache=True, parallel=True)
def give_chains(x, length, push, pick, fixed, rounds, ridge, kept, moved, ok):
    """``give_chain`` of the strands ``pick`` (K,) of ``x`` (3, n, S), their motion into ``moved``
    (3, n, K) and whether each is a give to take into ``ok`` (K,). One strand per iteration."""
    for k in prange(pick.shape[0]):
        ok[k] = give_chain(x, length, push, pick[k], fixed, rounds, ridge, kept, moved, k)
