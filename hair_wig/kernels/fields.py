"""The scene's force fields (SPEC §4 "Wind"; ``hair_wig.dynamics.ForceField.force``, its numpy
reference) as one pass over the points: every field's force at each point, summed in the fields'
order, written into an output array — no temporaries per field or per frame. The fields come
packed once per frame (``hair_wig.dynamics.pack_fields``: kinds and flags, the floats each reads,
the noise tables of their seeds); each ``prange`` iteration takes a run of points and writes only
those, so a point's value does not depend on the thread count.

The arithmetic is the reference's, operation for operation and in its order (the falloff's
``(1 + r − r_min)^−power``, the gust times the strength, the noise's quintic fade, its integer
hash with int64 products wrapping and arithmetic shifts, as numpy's int64 does), so the two agree
to the rounding of the few steps numpy may take another way (a BLAS dot product for a plane's
distance, SIMD square roots and powers).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

RUN = 1024                        # points a kernel iteration takes
TABLE = 4096                      # the noise table's rows (a power of two: the hash is masked)

# the packed fields' columns (``pack_fields``): ints (F, 4) and floats (F, 13)
WIND, TURBULENCE, DRAG = 0, 1, 2  # kind, in ``dynamics.KINDS`` order
PLANE, POINT = 0, 1               # shape


@njit(cache=True)
def _lattice(px, py, pz, table):
    """``dynamics._lattice`` at one point ``(px, py, pz)`` (noise units): the table's vectors at
    the cell's 8 corners blended by the quintic fade, added from zero in the reference's order."""
    bx, by, bz = math.floor(px), math.floor(py), math.floor(pz)
    fx, fy, fz = px - bx, py - by, pz - bz
    wx = fx * fx * fx * (fx * (fx * 6.0 - 15.0) + 10.0)
    wy = fy * fy * fy * (fy * (fy * 6.0 - 15.0) + 10.0)
    wz = fz * fz * fz * (fz * (fz * 6.0 - 15.0) + 10.0)
    ix, iy, iz = np.int64(bx), np.int64(by), np.int64(bz)
    o0 = o1 = o2 = 0.0
    for dx in range(2):
        for dy in range(2):
            for dz in range(2):
                # int64 throughout: the products wrap and >> is arithmetic, as numpy's int64
                h = (ix + dx) * np.int64(73856093) ^ (iy + dy) * np.int64(19349663) ^ (iz + dz) * np.int64(83492791)
                h ^= h >> 13
                h *= np.int64(1274126177)
                h ^= h >> 16
                row = h & (TABLE - 1)
                weight = (((wx if dx else 1.0 - wx) * (wy if dy else 1.0 - wy)) * (wz if dz else 1.0 - wz))
                o0 += weight * table[row, 0]
                o1 += weight * table[row, 1]
                o2 += weight * table[row, 2]
    return o0, o1, o2


@njit(cache=True, parallel=True)
def field_accel(x, v, out, kinds, floats, tables):
    """The fields' summed force (per unit mass) at points ``x`` (3, P) float64, world, moving at
    ``v`` (3, P) float64 (or (3, 0): no velocities, no drag), into ``out`` (3, P) float64.

    ``kinds`` (F, 4) int64: kind (WIND, TURBULENCE, DRAG), shape (PLANE, POINT), global
    coordinates, the row of ``tables`` (T, TABLE, 3) float64 holding its seed's noise table.
    ``floats`` (F, 13) float64: position (3), unit direction (3), scale (strength × gust; the gust
    alone for drag), falloff power, min and max distance, noise size (at least 1e-6), linear and
    quadratic drag (each at most 2). Fields are added in their order, from zero, as the
    reference's ``sum``."""
    n = x.shape[1]
    moving = v.shape[1] > 0
    for r in prange((n + RUN - 1) // RUN):
        for i in range(r * RUN, min(r * RUN + RUN, n)):
            v0 = v[0, i] if moving else 0.0
            v1 = v[1, i] if moving else 0.0
            v2 = v[2, i] if moving else 0.0
            out[0, i], out[1, i], out[2, i] = accel_at(x[0, i], x[1, i], x[2, i], v0, v1, v2, moving, kinds, floats,
                                                       tables)


@njit(cache=True, inline="always")
def accel_at(x0, x1, x2, v0, v1, v2, moving, kinds, floats, tables):
    """``field_accel`` at one point ``x`` moving at ``v`` (``moving``: else no drag): the fields'
    summed force per unit mass, added in their order from zero. The Strands substeps take it
    inside their own kernel (``kernels.verlet``), point by point, the same bits."""
    a0 = a1 = a2 = 0.0
    for f in range(kinds.shape[0]):
        kind, shape, glob, tab = kinds[f, 0], kinds[f, 1], kinds[f, 2], kinds[f, 3]
        px, py, pz = floats[f, 0], floats[f, 1], floats[f, 2]
        dx, dy, dz = floats[f, 3], floats[f, 4], floats[f, 5]
        scale, power, near, far = floats[f, 6], floats[f, 7], floats[f, 8], floats[f, 9]
        size, lin, quad = floats[f, 10], floats[f, 11], floats[f, 12]
        r0, r1, r2 = x0 - px, x1 - py, x2 - pz
        if shape == PLANE:
            dist = abs(r0 * dx + r1 * dy + r2 * dz)
        else:
            dist = math.sqrt(r0 * r0 + r1 * r1 + r2 * r2)
        if dist > far:
            fac = 0.0
        elif dist > near:
            fac = (1.0 + (dist - near)) ** -power
        else:
            fac = 1.0
        if kind == WIND:
            s = scale * fac
            a0 += s * dx
            a1 += s * dy
            a2 += s * dz
        elif kind == TURBULENCE:
            if glob:
                b0, b1, b2 = x0 / size, x1 / size, x2 / size
            else:
                b0, b1, b2 = r0 / size, r1 / size, r2 / size
            # ``dynamics.turbulence``: two octaves, the second at twice the frequency, half the
            # amplitude, shifted by 17
            table = tables[tab]
            n0, n1, n2 = _lattice(b0 * 1.0 + 0.0, b1 * 1.0 + 0.0, b2 * 1.0 + 0.0, table)
            o0, o1, o2 = _lattice(b0 * 2.0 + 17.0, b1 * 2.0 + 17.0, b2 * 2.0 + 17.0, table)
            s = scale * fac
            a0 += s * (((0.0 + 1.0 * n0) + 0.5 * o0) / 1.5)
            a1 += s * (((0.0 + 1.0 * n1) + 0.5 * o1) / 1.5)
            a2 += s * (((0.0 + 1.0 * n2) + 0.5 * o2) / 1.5)
        elif moving:
            # −v̂ (lin |v| + quad |v|²) = −v (lin + quad |v|)
            s = -((scale * fac) * (lin + quad * math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)))
            a0 += s * v0
            a1 += s * v1
            a2 += s * v2
        else:                     # the reference adds its zeros
            a0 += 0.0
            a1 += 0.0
            a2 += 0.0
    return a0, a1, a2


def _as_called():
    """``field_accel`` with the argument types the layers pass (``dynamics_layer.LayerFrame.accel``):
    C-contiguous float64 rows, velocities or (3, 0), the packed fields."""
    x = np.zeros((3, 4))
    kinds = np.array([[WIND, PLANE, 0, 0], [TURBULENCE, POINT, 0, 0], [DRAG, PLANE, 1, 0]], np.int64)
    floats = np.zeros((3, 13))
    floats[:, 5] = floats[:, 10] = 1.0
    for v in (x.copy(), np.zeros((3, 0))):
        field_accel(x, v, np.empty_like(x), kinds, floats, np.zeros((1, TABLE, 3)))


# (what an artist reads while it runs, the call that compiles it as the core calls it)
WARM_UPS = (("force fields", _as_called),)
