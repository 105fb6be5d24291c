"""The generalized winding number of a triangle mesh (Jacobson, Kavan, Sorkine-Hornung 2013):
``w(q) = Σ Ω_t(q) / 4π`` over the triangles, ``Ω_t`` the signed solid angle triangle ``t``
subtends at ``q`` (Van Oosterom & Strackee 1983). It is 1 inside a closed outward-facing mesh, 0
outside, and degrades gracefully where the mesh has holes or shells that cross: rounded at ½ it
says inside or outside of a head with open eye sockets, a neck cut, or eyes and ears pushed into
it — where the pseudo-normal of the nearest feature answers by whichever shell is nearest.

``winding_numbers`` is the fast evaluation of Barill, Dickson, Schmidt, Levin, Jacobson 2018
("Fast winding numbers for soups and clouds"), with two levels of clusters: a cluster of
triangles far from ``q`` (beyond ``BETA`` times its radius) is its dipole, ``(p̃ − q) · N /
4π |p̃ − q|³`` (``N`` the cluster's area-weighted normal, ``p̃`` its area-weighted centre); a near
group is looked at leaf by leaf, the same way, and a near leaf (a few triangles) is summed
triangle by triangle. (With one level, of about 48 triangles a cluster, a point beside a head
was within reach of most of its clusters and summed most of its triangles: the winding number
beside Suzanne's open edges was a fifth of refinement's time.) ``winding_exact`` sums every
triangle (a reference, and the independent measure of the groom scripts).

Each point is one ``prange`` iteration summing in a fixed order: the same bits on any thread
count.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

BETA = 2.3          # a cluster farther than this many radii is its dipole (Barill et al. 2018, §4)
FOUR_PI = 4.0 * math.pi


@njit(cache=True, inline="always")
def _solid_angle(qx, qy, qz, v, a, b, c):
    """The signed solid angle (steradians) triangle ``(a, b, c)`` (rows of ``v``) subtends at
    ``q``: positive where ``q`` sees its back (inside an outward-facing mesh)."""
    ax, ay, az = v[a, 0] - qx, v[a, 1] - qy, v[a, 2] - qz
    bx, by, bz = v[b, 0] - qx, v[b, 1] - qy, v[b, 2] - qz
    cx, cy, cz = v[c, 0] - qx, v[c, 1] - qy, v[c, 2] - qz
    la = math.sqrt(ax * ax + ay * ay + az * az)
    lb = math.sqrt(bx * bx + by * by + bz * bz)
    lc = math.sqrt(cx * cx + cy * cy + cz * cz)
    det = ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
    den = la * lb * lc + (ax * bx + ay * by + az * bz) * lc + (bx * cx + by * cy + bz * cz) * la \
        + (cx * ax + cy * ay + cz * az) * lb
    return 2.0 * math.atan2(det, den)


@njit(cache=True, parallel=True)
def winding_exact(q, v, t, out):
    """``w`` (N,) float64 of points ``q`` (N, 3) float64 against triangles ``t`` (T, 3) int64 of
    vertices ``v`` (V, 3) float64, every triangle summed, into ``out``."""
    for i in prange(q.shape[0]):
        s = 0.0
        for k in range(t.shape[0]):
            s += _solid_angle(q[i, 0], q[i, 1], q[i, 2], v, t[k, 0], t[k, 1], t[k, 2])
        out[i] = s / FOUR_PI


@njit(cache=True, parallel=True)
def winding_numbers(q, v, t, starts, centres, normals, radii, groups, skip, out):
    """``w`` (N,) float64 of points ``q`` (N, 3) float64, into ``out``, by clusters
    (``collision.solid.clusters``): the triangles ``t`` (T, 3) int64 of vertices ``v`` (V, 3)
    float64 sorted by leaf, leaf ``k`` being ``t[starts[k]:starts[k + 1]]``; the groups' and then
    the leaves' area-weighted centres ``centres`` (G + L, 3), area-weighted normals ``normals``
    (the sum of their triangles' ``(b − a) × (c − a) / 2``) and the radii ``radii`` of balls
    about the centres holding their triangles; group ``g`` holding leaves ``groups[g] …
    groups[g + 1] − 1`` (numbered after the groups). ``skip`` (N,) int64: a triangle (its row of
    ``t``) point ``i`` leaves out — one it lies on, whose solid angle there is ±2π by the rounding
    of a zero — or −1 (empty: none for any point)."""
    for i in prange(q.shape[0]):
        out[i] = winding_point(q[i, 0], q[i, 1], q[i, 2], v, t, starts, centres, normals, radii, groups,
                               skip[i] if skip.shape[0] else -1)


@njit(cache=True, inline="always")
def _dipole(qx, qy, qz, k, centres, normals, radii):
    """Cluster ``k``'s solid angle at ``q`` (times 4π's share) as its dipole, and whether it is
    far enough for that (beyond ``BETA`` times its radius)."""
    dx, dy, dz = centres[k, 0] - qx, centres[k, 1] - qy, centres[k, 2] - qz
    r2 = dx * dx + dy * dy + dz * dz
    far = BETA * radii[k]
    if r2 > far * far:
        return True, (dx * normals[k, 0] + dy * normals[k, 1] + dz * normals[k, 2]) / (r2 * math.sqrt(r2))
    return False, 0.0


@njit(cache=True, inline="always")
def winding_point(qx, qy, qz, v, t, starts, centres, normals, radii, groups, skip):
    """``winding_numbers`` at one point, leaving out row ``skip`` of ``t`` (−1: none)."""
    s = 0.0
    top = groups.shape[0] - 1
    for g in range(top):
        far, part = _dipole(qx, qy, qz, g, centres, normals, radii)
        if far:
            s += part
            continue
        for k in range(groups[g], groups[g + 1]):
            far, part = _dipole(qx, qy, qz, k, centres, normals, radii)
            if far:
                s += part
                continue
            for m in range(starts[k - top], starts[k - top + 1]):
                if m == skip:
                    continue
                s += _solid_angle(qx, qy, qz, v, t[m, 0], t[m, 1], t[m, 2])
    return s / FOUR_PI


def _as_called():
    """The argument types ``collision.solid`` passes: float64 points and vertices, int64
    triangles and cluster starts."""
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float64)
    t = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], np.int64)
    q = np.full((2, 3), 0.2)
    out = np.empty(2)
    winding_exact(q, v, t, out)
    winding_numbers(q, v, t, np.array([0, 4], np.int64), np.full((2, 3), 0.25), np.zeros((2, 3)), np.ones(2),
                    np.array([1, 2], np.int64), np.zeros(0, np.int64), out)
    shells(t, 4)


@njit(cache=True)
def shells(t, vertices):
    """Each triangle's shell (T,) int64 — the triangles joined through shared vertices — by
    union-find over ``t`` (T, 3) int64 of ``vertices`` vertices, numbered by their first
    triangle's order (0, 1, …)."""
    parent = np.arange(vertices)
    for k in range(t.shape[0]):
        for e in range(1, 3):
            a, b = t[k, 0], t[k, e]
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            while parent[b] != b:
                parent[b] = parent[parent[b]]
                b = parent[b]
            if a != b:
                if a < b:
                    parent[b] = a
                else:
                    parent[a] = b
    label = np.full(vertices, -1, np.int64)
    out = np.empty(t.shape[0], np.int64)
    count = 0
    for k in range(t.shape[0]):
        r = t[k, 0]
        while parent[r] != r:
            r = parent[r]
        if label[r] < 0:
            label[r] = count
            count += 1
        out[k] = label[r]
    return out


WARM_UPS = (("winding numbers", _as_called),)
