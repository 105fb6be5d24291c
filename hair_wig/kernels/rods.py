"""The angular rods' kinematics and substeps (seed 003; ``hair_wig.rods``): forward kinematics
(``rod_build``), inverse kinematics (``rod_angles``), the loads' moments about the joints
(``rod_moments``) and whole substeps (``rod_substeps``: moments, the joints' update, forward
kinematics again, ``count`` times), one strand per ``prange`` iteration, each writing only its
own strand. Arrays are strand-major float64: points ``(S, n, 3)``, angles ``(S, m, 2)`` with
``m = n − 1`` joints, per-joint constants ``(m,)``.

The arithmetic is the numpy code's (kept as the reference in tests/test_kernels_rods.py), but
for the turns: a joint's cos θ, sin θ / θ and (1 − cos θ) / θ² come from their series where
|θ| ≤ 1/2 (``_turn``, within a third of an ulp), and the moments beyond a joint are summed tip to
root per joint, so results agree with the reference to a few roundings, not bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _turn(t2):
    """``cos θ``, ``sin θ / θ`` and ``(1 − cos θ) / θ²`` of a turn with ``θ² = t2``. For |θ| ≤ 1/2,
    as a joint turns in almost every substep, the series to the term below float64's rounding
    (θ¹⁶ / 17! < 5e-20; within 0.31 ulp of the exact values, checked at 2001 angles): no square
    root, no trigonometry and no division — most of a substep's time otherwise."""
    if t2 <= 0.25:
        sinc = 1.0 + t2 * (-1.0 / 6 + t2 * (1.0 / 120 + t2 * (-1.0 / 5040 + t2 * (
            1.0 / 362880 + t2 * (-1.0 / 39916800 + t2 * (1.0 / 6227020800 + t2 * (-1.0 / 1307674368000)))))))
        cosc = 0.5 + t2 * (-1.0 / 24 + t2 * (1.0 / 720 + t2 * (-1.0 / 40320 + t2 * (
            1.0 / 3628800 + t2 * (-1.0 / 479001600 + t2 * (1.0 / 87178291200 + t2 * (-1.0 / 20922789888000)))))))
        return 1.0 - t2 * cosc, sinc, cosc
    theta = math.sqrt(t2)
    cos = math.cos(theta)
    return cos, math.sin(theta) / theta, (1.0 - cos) / t2


@njit(cache=True, inline="always")
def _frame_step(p, q, t, a, b):
    """One joint's turn ``r = p a + q b`` applied to the frame ``t, a, b`` (3,) each, in place
    (Rodrigues, written so the turn's cross products with the frame are the frame again:
    ``t' = cos t + sinc (q a − p b)``, ``a' = cos a − sinc q t + cosc p r``, ``b' = cos b + sinc
    p t + cosc q r``)."""
    cos, sinc, cosc = _turn(p * p + q * q)
    for k in range(3):
        r = p * a[k] + q * b[k]
        tn = cos * t[k] + sinc * (q * a[k] - p * b[k])
        an = cos * a[k] - (sinc * q) * t[k] + (cosc * p) * r
        bn = cos * b[k] + (sinc * p) * t[k] + (cosc * q) * r
        t[k], a[k], b[k] = tn, an, bn


@njit(cache=True, inline="always")
def _build_one(s, roots, root_dir, e1, angles, seg, pts, ax1, ax2, t, a, b):
    """Forward kinematics of strand ``s`` into ``pts[s]``, ``ax1[s]``, ``ax2[s]``; ``t, a, b``
    (3,) scratch."""
    m = angles.shape[1]
    norm = math.sqrt(root_dir[s, 0] ** 2 + root_dir[s, 1] ** 2 + root_dir[s, 2] ** 2)
    norm = max(norm, 1e-300)
    for k in range(3):
        t[k] = root_dir[s, k] / norm
        a[k] = e1[s, k]
        pts[s, 0, k] = roots[s, k]
    b[0] = t[1] * a[2] - t[2] * a[1]
    b[1] = t[2] * a[0] - t[0] * a[2]
    b[2] = t[0] * a[1] - t[1] * a[0]
    for i in range(m):
        for k in range(3):
            ax1[s, i, k] = a[k]
            ax2[s, i, k] = b[k]
        _frame_step(angles[s, i, 0], angles[s, i, 1], t, a, b)
        for k in range(3):
            pts[s, i + 1, k] = pts[s, i, k] + seg[s, i] * t[k]


@njit(cache=True, parallel=True)
def rod_build(roots, root_dir, e1, angles, seg, pts, ax1, ax2):
    """Forward kinematics (``rods.build``): points ``pts`` (S, n, 3) from ``roots`` (S, 3) along
    the bend ``angles`` (S, m, 2) with segment lengths ``seg`` (S, m), and each joint's parent
    frame axes ``ax1``, ``ax2`` (S, m, 3) — the axes its angles turn about. Written in place."""
    for s in prange(angles.shape[0]):
        t, a, b = np.empty(3), np.empty(3), np.empty(3)
        _build_one(s, roots, root_dir, e1, angles, seg, pts, ax1, ax2, t, a, b)


@njit(cache=True, inline="always")
def _moments_one(s, pts, load, seg, ax1, ax2, out):
    """Strand ``s``'s generalised forces into ``out`` (m, 2): about each joint the moment of the
    loads on the segments beyond it, ``Σ_{j≥i} (mid_j − x_i) × F_j``, summed tip to root."""
    m = seg.shape[1]
    ox = oy = oz = 0.0                 # Σ mid_j × F_j beyond the joint
    fx = fy = fz = 0.0                 # Σ F_j beyond the joint
    for i in range(m - 1, -1, -1):
        gx, gy, gz = load[s, i, 0] * seg[s, i], load[s, i, 1] * seg[s, i], load[s, i, 2] * seg[s, i]
        mx = 0.5 * (pts[s, i + 1, 0] + pts[s, i, 0])
        my = 0.5 * (pts[s, i + 1, 1] + pts[s, i, 1])
        mz = 0.5 * (pts[s, i + 1, 2] + pts[s, i, 2])
        ox += my * gz - mz * gy
        oy += mz * gx - mx * gz
        oz += mx * gy - my * gx
        fx += gx
        fy += gy
        fz += gz
        px, py, pz = pts[s, i, 0], pts[s, i, 1], pts[s, i, 2]
        tx = ox - (py * fz - pz * fy)
        ty = oy - (pz * fx - px * fz)
        tz = oz - (px * fy - py * fx)
        out[i, 0] = tx * ax1[s, i, 0] + ty * ax1[s, i, 1] + tz * ax1[s, i, 2]
        out[i, 1] = tx * ax2[s, i, 0] + ty * ax2[s, i, 1] + tz * ax2[s, i, 2]


@njit(cache=True, parallel=True)
def rod_moments(pts, load, seg, ax1, ax2, out):
    """The loads' moments (``rods.moments``): ``load`` (S, m, 3) per unit length on each
    segment, levers from ``pts`` (S, n, 3), along the joints' axes; into ``out`` (S, m, 2)."""
    for s in prange(pts.shape[0]):
        _moments_one(s, pts, load, seg, ax1, ax2, out[s])


@njit(cache=True, parallel=True)
def rod_substeps(angles, last, rest, k, c, hb, load, seg, roots, root_dir, e1, count, pts, ax1, ax2):
    """``count`` substeps of every strand (seed 003, eq. 5 with our damping; ``AngularRods.step``):
    each the moments of ``load`` (S, m, 3) at the points as they are (``pts``, ``ax1``, ``ax2``,
    in and out), the joints' springs ``k`` (m,) toward ``rest`` (S, m, 2), the update
    ``a' = a + c (a − last) + hb · force`` with ``c``, ``hb`` (m,), and forward kinematics again.
    ``angles`` and ``last`` (S, m, 2) are advanced in place."""
    m = angles.shape[1]
    for s in prange(angles.shape[0]):
        force = np.empty((m, 2))
        t, a, b = np.empty(3), np.empty(3), np.empty(3)
        for _ in range(count):
            _moments_one(s, pts, load, seg, ax1, ax2, force)
            for i in range(m):
                for d in range(2):
                    now = angles[s, i, d]
                    f = force[i, d] - k[i] * (now - rest[s, i, d])
                    angles[s, i, d] = now + c[i] * (now - last[s, i, d]) + hb[i] * f
                    last[s, i, d] = now
            _build_one(s, roots, root_dir, e1, angles, seg, pts, ax1, ax2, t, a, b)


@njit(cache=True, parallel=True)
def rod_angles(points, root_dir, e1, out):
    """Inverse kinematics (``rods.angles_of``): the bend angles ``out`` (S, m, 2) of strands
    ``points`` (S, n, 3) whose root frame is ``root_dir``, ``e1`` (S, 3), each segment against
    its parent: the turn ``r`` from the parent's direction ``t`` to the segment's, read in the
    parent's frame ``a``, ``b = t × a``; the frame then turned by ``r``."""
    m = points.shape[1] - 1
    for s in prange(points.shape[0]):
        norm = max(math.sqrt(root_dir[s, 0] ** 2 + root_dir[s, 1] ** 2 + root_dir[s, 2] ** 2), 1e-300)
        tx, ty, tz = root_dir[s, 0] / norm, root_dir[s, 1] / norm, root_dir[s, 2] / norm
        ax, ay, az = e1[s, 0], e1[s, 1], e1[s, 2]
        for i in range(m):
            dx = points[s, i + 1, 0] - points[s, i, 0]
            dy = points[s, i + 1, 1] - points[s, i, 1]
            dz = points[s, i + 1, 2] - points[s, i, 2]
            dn = max(math.sqrt(dx * dx + dy * dy + dz * dz), 1e-300)
            dx, dy, dz = dx / dn, dy / dn, dz / dn
            cx, cy, cz = ty * dz - tz * dy, tz * dx - tx * dz, tx * dy - ty * dx
            size = math.sqrt(cx * cx + cy * cy + cz * cz)
            if size > 0.0:
                turn = math.atan2(size, tx * dx + ty * dy + tz * dz) / size
                rx, ry, rz = cx * turn, cy * turn, cz * turn
            else:
                rx = ry = rz = 0.0
            bx, by, bz = ty * az - tz * ay, tz * ax - tx * az, tx * ay - ty * ax
            out[s, i, 0] = rx * ax + ry * ay + rz * az
            out[s, i, 1] = rx * bx + ry * by + rz * bz
            # a turned by r (Rodrigues: a cos + (r × a) sinc + r (r · a) cosc), then made unit
            cos, sinc, cosc = _turn(rx * rx + ry * ry + rz * rz)
            along = (rx * ax + ry * ay + rz * az) * cosc
            nx = ax * cos + (ry * az - rz * ay) * sinc + rx * along
            ny = ay * cos + (rz * ax - rx * az) * sinc + ry * along
            nz = az * cos + (rx * ay - ry * ax) * sinc + rz * along
            an = max(math.sqrt(nx * nx + ny * ny + nz * nz), 1e-300)
            ax, ay, az = nx / an, ny / an, nz / an
            tx, ty, tz = dx, dy, dz


def _as_called():
    """Every rods kernel with the argument types ``hair_wig.rods`` passes (C-contiguous float64,
    a count): one compiled version each."""
    num, n = 2, 4
    m = n - 1
    roots, e1 = np.zeros((num, 3)), np.zeros((num, 3))
    root_dir = np.zeros((num, 3))
    root_dir[:, 2], e1[:, 0] = 1.0, 1.0
    angles, seg = np.full((num, m, 2), 0.1), np.ones((num, m))
    pts, ax1, ax2 = np.empty((num, n, 3)), np.empty((num, m, 3)), np.empty((num, m, 3))
    rod_build(roots, root_dir, e1, angles, seg, pts, ax1, ax2)
    load, out = np.zeros((num, m, 3)), np.empty((num, m, 2))
    rod_moments(pts, load, seg, ax1, ax2, out)
    rod_angles(pts, root_dir, e1, out)
    per_joint = np.ones(m)
    rod_substeps(angles, angles.copy(), out, per_joint, per_joint, per_joint, load, seg, roots, root_dir, e1, 2,
                 pts, ax1, ax2)


# (what an artist reads while it runs, the call that compiles it as the core calls it)
WARM_UPS = (("angular rods", _as_called),)
