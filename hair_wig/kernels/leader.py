"""Follow-the-leader over whole strands, root to tip, conditioned (SPEC §6.4; ``hair_wig.leader``'s
module docstring has the rules; their constants are here): the one
length projection refinement's length pass and the dynamics layers share.

Each point is placed at its segment's length from the one placed before it,
``p'_j = p'_{j−1} + ℓ_j u_j``, ``ℓ_j = e |d| + (1 − e) L_j``, ``d = p_j − p'_{j−1}``, with ``u`` from
``d`` where that is well-conditioned and blended continuously into the guide (the segment as it
came in, or one the caller gives) and then the rest segment where it is not. Arithmetic is float64
whatever the positions' type; a segment already its length to 4 ulp of that type keeps its point
bit for bit (a groom at rest comes back exactly).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


# The rules of the conditioned follow-the-leader, shared with the numpy code (hair_wig/leader.py
# imports them from here: numba's cache is keyed on this file, so they must live in it).
# |d| / L below R0: the way to the point is not trusted at all (the guide's direction); above
# R1: fully. Between, a smoothstep. R0 bounds the rounding's amplification by 1 / R0.
R0, R1 = 0.25, 0.75
# cos of the angle between d and the guide: below C0 (90°) d turns back, the guide's direction;
# above C1 (60°) d's own.
C0, C1 = 0.0, 0.5
# |guide| / L below G0: the rest segment's direction; above G1: the guide's own.
G0, G1 = 1e-3, 1e-2
# The guide's length over L (the segment as it came in, squashed below 1): below K0 its
# direction is taken, above K1 the way to the point (refinement and relays, where the guide is
# the segment as it came in). A squashed strand's leaders overshoot their points, more with every
# segment, and a point followed from a leader that far off takes its direction from the leader's
# error, not the shape: a squashed curl wound out into a spiral with turns of 60° where it had
# 23°. Where the two directions agree (a leader where it was asked to be) the blend changes
# nothing, so its slope costs no digits. (A leader far from its point because collision pushed
# it out is not a squash: there the way to the point is what slides the strand over the head.)
K0, K1 = 0.5, 0.8

_TINY = np.finfo(np.float64).tiny
LANES = 8                              # strands a kernel iteration walks side by side


@njit(cache=True)
def _smoothstep(x):
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    return x * x * (3.0 - 2.0 * x)


@njit(cache=True)
def guide_direction(gx, gy, gz, length, rx, ry, rz):
    """The unit direction where a segment's way to its point is not trusted (``leader.
    guide_direction`` for one segment): the guide's own, turned towards the rest segment's
    ``(rx, ry, rz)`` (zero: none, +Z) as ``|guide| / L`` falls from ``G1`` to ``G0``."""
    ng = math.sqrt(gx * gx + gy * gy + gz * gz)
    q = ng if ng > 0.0 else 1.0
    ux, uy, uz = gx / q, gy / q, gz / q
    if length > 0.0:
        b = _smoothstep((ng / max(length, _TINY) - G0) / (G1 - G0))
    else:
        b = 1.0 if ng > 0.0 else 0.0
    if b >= 1.0:
        return ux, uy, uz
    nr = math.sqrt(rx * rx + ry * ry + rz * rz)
    if nr > 0.0:
        vx, vy, vz = rx / nr, ry / nr, rz / nr
    else:
        vx, vy, vz = 0.0, 0.0, 1.0
    # turned from the rest direction towards the guide by the fraction b of their angle (a slerp);
    # exactly opposite, the stronger of the two whole
    cos = min(max(ux * vx + uy * vy + uz * vz, -1.0), 1.0)
    theta = math.acos(cos)
    sin = math.sin(theta)
    if sin > 1e-6:
        wr = math.sin((1.0 - b) * theta) / sin
        wg = math.sin(b * theta) / sin
    elif cos < 0.0:
        wr = 1.0 if b < 0.5 else 0.0
        wg = 1.0 if b >= 0.5 else 0.0
    else:
        wr, wg = 1.0 - b, b
    mx, my, mz = ux * wg + vx * wr, uy * wg + vy * wr, uz * wg + vz * wr
    nm = math.sqrt(mx * mx + my * my + mz * mz)
    return mx / nm, my / nm, mz / nm


@njit(cache=True, inline="always")
def place(lx, ly, lz, px, py, pz, length, gx, gy, gz, rx, ry, rz, elasticity, turn_back, keep):
    """Where one point goes: leader ``l``, the point ``p``, its segment's ``length``, the guide
    ``g`` and the rest segment ``r`` (zero: none). ``keep``: ``|s − 1|`` up to which the point stays
    bit for bit (4 ulp of the positions' type). Returns the point and whether it moved."""
    dx, dy, dz = px - lx, py - ly, pz - lz
    dd = dx * dx + dy * dy + dz * dz
    gd = gx * dx + gy * dy + gz * dz
    gg = gx * gx + gy * gy + gz * gz
    LL = length * length
    # the rows every rule trusts: |d| >= R1 L, d not against the guide, the guide long enough to
    # speak for itself and, in refinement, d within 60° of it
    sure = dd >= LL * (R1 * R1) and gd >= 0.0 and length > 0.0
    sure = sure and gg >= LL * ((K1 if turn_back else G1) ** 2)
    if turn_back:
        sure = sure and gd * gd >= dd * gg * (C1 * C1)
    nd = math.sqrt(dd)
    if nd > 0.0:
        s = length / nd
        if elasticity != 0.0:
            s = s * (1.0 - elasticity) + elasticity
        s -= 1.0
        textbook = True
    else:
        s = 0.0
        textbook = False
    if sure:
        if abs(s) <= keep:
            return px, py, pz, False
        return px + dx * s, py + dy * s, pz + dz * s, True
    # weighed in full: the direction blended from d's into the guide's where the weight is < 1
    ux, uy, uz = guide_direction(gx, gy, gz, length, rx, ry, rz)
    lq = length if length > 0.0 else 1.0
    q = nd if nd > 0.0 else 1.0
    hx, hy, hz = dx / q, dy / q, dz / q
    a = _smoothstep((nd / lq - R0) / (R1 - R0)) if length > 0.0 else 1.0
    cos = hx * ux + hy * uy + hz * uz
    if turn_back:
        fold = _smoothstep((cos - C0) / (C1 - C0))
        shape = _smoothstep((math.sqrt(gg) / lq - K0) / (K1 - K0)) if length > 0.0 else 1.0
    else:                          # only never against the guide: the blend must not cancel
        fold = _smoothstep((cos + 0.75) / 0.5)
        shape = 1.0
    a = a * fold * shape
    if nd <= 0.0:
        a = 0.0
    if a >= 1.0 and textbook:
        if abs(s) <= keep:
            return px, py, pz, False
        return px + dx * s, py + dy * s, pz + dz * s, True
    vx, vy, vz = hx * a + ux * (1.0 - a), hy * a + uy * (1.0 - a), hz * a + uz * (1.0 - a)
    nu = math.sqrt(vx * vx + vy * vy + vz * vz)
    if nu < 1e-6:                  # a guard: the blend only mixes directions within 139°
        vx, vy, vz = ux, uy, uz
    else:
        vx, vy, vz = vx / nu, vy / nu, vz / nu
    ell = elasticity * nd + (1.0 - elasticity) * length
    return lx + vx * ell, ly + vy * ell, lz + vz * ell, True


@njit(cache=True, parallel=True)
def follow_chains(p, first_row, count, step, strands, length, guide, rest, elasticity, turn_back, first, keep):
    """Follow-the-leader root to tip on the ``strands`` (K,), in place. Point ``i`` of strand
    ``s`` is row ``first_row[s] + i step`` of ``p``: ``step`` 1 for strands one after another
    (``first_row`` their offsets), the strands' count for point-major groups ``(3, n, S)`` seen as
    ``rows.reshape(3, -1).T`` (``first_row`` 0…S−1).

    Parameters
    ----------
    p : (P, 3) float32 or float64
        The points, placed in place from each strand's point ``first`` on (those before it hold).
    first_row, count : (S,) int64
        Each strand's root row and point count.
    step : int
        Rows from one point of a strand to the next.
    strands : (K,) int64
        The strands to place.
    length : (P,) float
        Each point's segment's length to keep (its segment from the point before; a root's
        entry is not read).
    guide : (P, 3) float, or (0, 3)
        Points whose segments guide (a dynamics layer's: where the strand was a substep ago);
        empty: the segments as they came in (``p`` before this pass) — refinement's rule.
    rest : (P, 3) float, or (0, 3)
        The rest pose: where a guide is (nearly) zero the rest segment's direction is taken.
    elasticity : float
        ``e`` in ``ℓ = e |d| + (1 − e) L``.
    turn_back : bool
        Whether ``d`` turning more than 60° from the guide is a fold (refinement, relays).
    first : int
        The first point of a strand to place (1: the root holds).
    keep : float
        ``|s − 1|`` up to which a point stays bit for bit (4 ulp of ``p``'s type).
    """
    came = guide.shape[0] == 0
    has_rest = rest.shape[0] > 0
    total = strands.shape[0]
    # LANES strands at a time, a point of each in turn: each strand's walk is a chain of dependent
    # roots and divisions, and the processor overlaps independent chains where one strand alone
    # waits on its own latency (1.6M points on one thread: 36 ms a strand at a time, 25 ms so)
    for chunk in prange((total + LANES - 1) // LANES):
        k0 = chunk * LANES
        k1 = min(k0 + LANES, total)
        cx = np.empty(LANES)
        cy = np.empty(LANES)
        cz = np.empty(LANES)
        longest = 0
        for k in range(k0, k1):
            s = strands[k]
            longest = max(longest, count[s])
            if count[s] > first:
                c = first_row[s] + (first - 1) * step
                cx[k - k0], cy[k - k0], cz[k - k0] = float(p[c, 0]), float(p[c, 1]), float(p[c, 2])
        for i in range(first, longest):
            for k in range(k0, k1):
                s = strands[k]
                if i >= count[s]:
                    continue
                j = first_row[s] + i * step
                b = j - step
                px, py, pz = float(p[j, 0]), float(p[j, 1]), float(p[j, 2])
                if came:
                    gx, gy, gz = px - cx[k - k0], py - cy[k - k0], pz - cz[k - k0]
                    cx[k - k0], cy[k - k0], cz[k - k0] = px, py, pz
                else:
                    gx = float(guide[j, 0]) - float(guide[b, 0])
                    gy = float(guide[j, 1]) - float(guide[b, 1])
                    gz = float(guide[j, 2]) - float(guide[b, 2])
                if has_rest:
                    rx = float(rest[j, 0]) - float(rest[b, 0])
                    ry = float(rest[j, 1]) - float(rest[b, 1])
                    rz = float(rest[j, 2]) - float(rest[b, 2])
                else:
                    rx, ry, rz = 0.0, 0.0, 0.0
                ox, oy, oz, moved = place(float(p[b, 0]), float(p[b, 1]), float(p[b, 2]),
                                          px, py, pz, float(length[j]), gx, gy, gz, rx, ry, rz,
                                          elasticity, turn_back, keep)
                if moved:
                    p[j, 0] = ox
                    p[j, 1] = oy
                    p[j, 2] = oz


def strand_major(offsets: np.ndarray):
    """``(first_row, count, step)`` for strands one after another, from their ``offsets``."""
    offsets = np.asarray(offsets, np.int64)
    return offsets[:-1], np.diff(offsets), 1


def point_major(n: int, num: int):
    """``(first_row, count, step)`` for ``num`` strands of ``n`` points stored point-major,
    ``(3, n, num)`` seen as ``rows.reshape(3, -1).T``."""
    return np.arange(num, dtype=np.int64), np.full(num, n, np.int64), num


# ---------------------------------------------------------------- warm-up
def _as_called():
    """``follow_chains`` with the argument types refinement passes (numba compiles one version
    for each): float32 rows as ``rows.T`` views — of whole rows (Fortran-ordered to numba) or of
    a block of them (strided) — and its rest pose the same way."""
    chains, strands = strand_major(np.array([0, 3])), np.array([0], np.int64)
    length, none = np.array([0.0, 1.0, 1.0]), np.empty((0, 3))
    rows = np.zeros((3, 6), np.float32)
    rows[2] = (0.0, 0.5, 3.0, 0.0, 0.5, 3.0)
    whole, block = (lambda: rows[:, :3].copy()), (lambda: rows.copy()[:, :3])
    for p in (whole, block):
        for rest in (whole, block):
            follow_chains(p().T, *chains, strands, length, none, rest().T, 0.0, True, 1, 4e-7)


# (what an artist reads while it runs, the call that compiles it as the core calls it)
WARM_UPS = (("follow-the-leader", _as_called),)
