"""The one contact response: what a contact does to a point's motion, for every client — the
Strands and Wisps substeps (velocities), the Rods' contacts and refinement's walk (positions).

A contact has a unit normal ``n`` out of the collider. The motion of a point against it (a
velocity, or a step's move: the law is the same at any scale) loses the part going into the
surface — none bounces back — and Coulomb's friction slows its slide along the surface by the
friction coefficient times the pressure the contact takes, to a stop where that is more than the
slide, never turning it back (SPEC §6.3: "at the surface, sliding with friction"; seed 001
§4.3.1's sliding contact; Coulomb's law in positions as PBD solvers take it). The pressure is
what the contact takes out along ``n``: the motion into the surface for a velocity, the depth
pushed out or held back for a position.

``coulomb_kept`` is the law, ``met`` the velocity form, ``held`` the position form against a
contact's plane; ``met_rows`` and ``slowed_rows`` run them over rows ``(3, K)`` float64 for the
numpy clients, each column its own ``prange`` iteration (the same bits on any thread count).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(cache=True)
def coulomb_kept(slide, pressure, friction):
    """The share of a slide of length ``slide`` that Coulomb's friction ``friction`` leaves
    when the contact takes ``pressure`` along its normal: ``max(0, 1 − friction · pressure /
    slide)`` (none of a slide of no length)."""
    if slide > 0.0:
        return max(0.0, 1.0 - friction * pressure / slide)
    return 0.0


@njit(cache=True)
def met(vx, vy, vz, nx, ny, nz, friction):
    """A motion ``v`` at a contact of unit normal ``n``: its part into the surface taken out and
    its slide along the surface slowed by ``friction`` times that part. A motion leaving the
    surface is its own slide's and keeps everything."""
    vn = vx * nx + vy * ny + vz * nz
    into = min(vn, 0.0)
    wx, wy, wz = vx - into * nx, vy - into * ny, vz - into * nz
    wn = wx * nx + wy * ny + wz * nz
    sx, sy, sz = wx - wn * nx, wy - wn * ny, wz - wn * nz
    lose = 1.0 - coulomb_kept(math.sqrt(sx * sx + sy * sy + sz * sz), -into, friction)
    return wx - lose * sx, wy - lose * sy, wz - lose * sz


@njit(cache=True)
def held(bx, by, bz, ex, ey, ez, nx, ny, nz, friction):
    """A point that would be at ``b`` against a contact's plane through ``e`` of normal ``n``:
    where beyond it, brought back onto the plane — the depth taken out — and its slide along the
    plane from ``e`` slowed by ``friction`` times that depth. Whether it was beyond, and where it
    is held (``b`` itself where it was not)."""
    into = (bx - ex) * nx + (by - ey) * ny + (bz - ez) * nz
    if into >= 0.0:
        return False, bx, by, bz
    tx, ty, tz = bx - into * nx - ex, by - into * ny - ey, bz - into * nz - ez
    keep = coulomb_kept(math.sqrt(tx * tx + ty * ty + tz * tz), -into, friction)
    return True, ex + tx * keep, ey + ty * keep, ez + tz * keep


@njit(cache=True, parallel=True)
def met_rows(v, n, friction, out):
    """``met`` of each column of ``v`` (3, K) float64 at the unit normals ``n`` (3, K), into
    ``out`` (3, K) (may be ``v``)."""
    for k in prange(v.shape[1]):
        out[0, k], out[1, k], out[2, k] = met(v[0, k], v[1, k], v[2, k], n[0, k], n[1, k], n[2, k], friction)


@njit(cache=True, parallel=True)
def slowed_rows(slide, pressure, friction):
    """Each column of ``slide`` (3, K) float64, a point's slide along its contact, scaled in
    place by the share ``coulomb_kept`` leaves it under ``pressure`` (K,)."""
    for k in prange(slide.shape[1]):
        sx, sy, sz = slide[0, k], slide[1, k], slide[2, k]
        keep = coulomb_kept(math.sqrt(sx * sx + sy * sy + sz * sz), pressure[k], friction)
        slide[0, k], slide[1, k], slide[2, k] = sx * keep, sy * keep, sz * keep


@njit(cache=True, parallel=True)
def held_rows(b, e, n, friction, beyond, out):
    """``held`` of each column of ``b`` (3, K) float64 against the planes through ``e`` of normals
    ``n`` (3, K): whether it was beyond (``beyond`` (K,) bool) and where it is held (``out``)."""
    for k in prange(b.shape[1]):
        beyond[k], out[0, k], out[1, k], out[2, k] = held(b[0, k], b[1, k], b[2, k], e[0, k], e[1, k], e[2, k],
                                                          n[0, k], n[1, k], n[2, k], friction)


def _as_called():
    """The row kernels with the types their clients pass (float64 rows, a float friction)."""
    rows = np.zeros((3, 2))
    rows[2] = 1.0
    met_rows(rows, rows, 0.3, np.empty_like(rows))
    slowed_rows(rows.copy(), np.ones(2), 0.3)
    held_rows(rows, rows, rows, 0.3, np.empty(2, np.bool_), np.empty_like(rows))


# (what an artist reads while it runs, the call that compiles it as the core calls it)
WARM_UPS = (("contact response", _as_called),)
