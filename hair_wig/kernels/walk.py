"""Refinement's collision-and-length walk as one kernel (SPEC §6.4; ``hair_wig.walk`` says what
the walk does and why): every strand of one point count walked root to tip on its own thread —
each point placed its segment's length from the one before (follow-the-leader, ``leader.place``),
looked at only where the grid cannot rule a contact out (``near``: the strand's running lower
bound, the nearest node, half the room from rest, the trilinear bound), pushed out of every
collider (``_project``: exact from the closest triangle near the surface, along the grid's
gradient beyond) and set back on its segment's length on the contact's tangent plane
(``_onto_circle``), ``iterations`` rounds; what is still inside after them (a crease, a pocket) is
swung out about its leader (``_swing_out``). With a layer whose substeps lift a chain (Strands), a contact met head-on
lifts the chain instead of swinging its point (``_lift``: ``chain.least_motion``'s kernel, the
points it would take inside met too).

A strand is written only by its own iteration, so the result is the same bits on any number of
threads. Arithmetic is float64 on float32 positions.

Each collider is a tuple (``collision.Collider.kernel_view``, the one view every collision kernel
reads), all of one type, in a numba typed List a thread (``threads_colliders``):

``(nodes, grid32, grid64, errors, tris, box, planes, limit (P,) f32, skip2 (P,) f32, to_field
(4, 4) f64, from_field (4, 4) f64, moved, slack f32, exact_reach f64, tolerance f64, stretch f32,
transformed, every, children (2, K, n, G) f32, segments (4, P) f32)``

— the field's query tuples (``kernels.field``), the wig's points' collision surfaces and squared
skip distances (``Collider``), this frame's head-local → field-space map and back (``transformed``
False: the identity, the collider moves with the head), whether the collider moved or deforms
(then no point is skipped for being near its rest position), and its triangles as one list
(``TriangleIndex._k_every``) for the points whose list cell cannot decide, and the limits of each guide's shape
moved onto its children's roots with the squared distances each such sample may move from where it
rested unlooked (``Collider.bind_children``; empty without children), and the limits of each
point's segment from its leader at its middle, quarter and three-quarter points (``SEGMENT_AT``)
with the squared distance the segment's ends may move from rest unlooked (``Collider.bind``;
empty: the collider's segments are not met).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import get_thread_id, njit, prange
from numba.typed import List

from .borrow import borrowed
from .field import (_F0, _INF32, _exact_point, clear_of, _grid_error, _list_cell, _lookup64, _node_value, _signed_point,
                    _trilinear32, box_distance, plane_offset)
from .chain import _chain_moves, settled
from .leader import place
from .response import held

# the parts of a collider's tuple other kernels read by name (the contacts)
_GRID32, _GRID64, _ERRORS, _TRIS, _TO_FIELD, _FROM_FIELD, _TOLERANCE, _TRANSFORMED = 1, 2, 3, 4, 9, 10, 14, 16

_F32_KEEP = 4 * float(np.finfo(np.float32).eps)   # a segment its length to 4 ulp keeps its point
# where along a segment from its leader it is met (the middle first): a part of a collider
# thinner than a quarter of the segment can still pass between two samples
SEGMENT_AT = (0.5, 0.25, 0.75)
# a segment's point is at most this share of it from the sample nearest it
_SEGMENT_REACH = 1.0 - min(SEGMENT_AT)
# rounds of a segment's samples at most: each swing is first order (the point moved by a sample's
# push over its share, then set back at the segment's length, falls short of it on a steep turn),
# and the quarters meet a corner the middle cleared
SEGMENT_ROUNDS = 8
# how far meeting its samples turns a segment in one step at most, from where it pointed before
# or at the end of the last step, radians (``_turn_at_most``; with a dynamics layer)
SEGMENT_TURN = math.radians(20.0)
SAMPLES = 9                                       # directions a swing scan measures (tenths)


NO_KIDS = (np.zeros((0, 3, 0), np.float32), np.zeros((0, 3, 3, 0), np.float32))


# Strands a parallel iteration walks one after another. The colliders come in a numba typed List,
# whose item costs ~0.5 us a read (it copies the item's arrays and counts their references): the
# first — the head, often the only one — is read once a chunk, not at every point.
CHUNK = 32


def _own(item):
    """``item`` (a collider tuple's part) with every array a view of its own."""
    if isinstance(item, np.ndarray):
        return item.view()
    if isinstance(item, tuple):
        return tuple(_own(x) for x in item)
    return item


def threads_colliders(tuples):
    """The colliders' tuples (``collision.Collider.kernel_view``) as a kernel's threads read them:
    a typed List of one typed List of them a thread of numba's pool, indexed by
    ``get_thread_id()``, each tuple ``borrow.borrowed`` (its arrays' references not counted:
    the List keeps the arrays they borrow from, ``_owned``). Before they were borrowed, a list a
    thread kept the threads from fighting over one shared count (perf, the walk at 5000 × 16: 30 %
    of its time in those counts on two threads, and no faster than on one; with a list a thread,
    1.6x faster on two); the lists stay, so that a kernel's thread reads what it owns."""
    owned = []

    def one():
        mine = [_own(t) for t in tuples]
        owned.append(mine)
        out = first_collider(mine[0])
        for t in mine[1:]:
            add_collider(out, t)
        return out

    out = thread_lists(one())
    # two at least, so that preparing the kernels on one thread compiles what every pool calls
    for _ in range(1, max(2, numba.config.NUMBA_NUM_THREADS)):
        add_thread_list(out, one())
    # kernels alone read it: an item read from Python holds borrowed arrays, which numba boxes
    # with no owner (they outlive the List that keeps their data). A subclass refusing to be read
    # cannot be passed to a kernel (numba unboxes a List of its own class only).
    out._owned = owned
    return out


@njit(cache=True)
def first_collider(col):
    """A typed List of collider tuples holding ``col`` borrowed (``borrow.borrowed``: the caller
    keeps ``col``'s arrays alive as long as the List), made by a cached kernel."""
    out = List()
    out.append(borrowed(col))
    return out


@njit(cache=True)
def add_collider(cols, col):
    """``col`` appended, borrowed, to the typed List ``cols`` (``first_collider``'s)."""
    cols.append(borrowed(col))


@njit(cache=True)
def thread_lists(cols):
    """A typed List of the threads' collider Lists, holding ``cols``."""
    out = List()
    out.append(cols)
    return out


@njit(cache=True)
def add_thread_list(lists, cols):
    """``cols`` appended to ``thread_lists``' List."""
    lists.append(cols)


# ---------------------------------------------------------------- one point against a collider
@njit(cache=True)
def _to(m, x, y, z):
    return (m[0, 0] * x + m[0, 1] * y + m[0, 2] * z + m[0, 3],
            m[1, 0] * x + m[1, 1] * y + m[1, 2] * z + m[1, 3],
            m[2, 0] * x + m[2, 1] * y + m[2, 2] * z + m[2, 3])


@njit(cache=True)
def _turn(m, x, y, z):
    return (m[0, 0] * x + m[0, 1] * y + m[0, 2] * z,
            m[1, 0] * x + m[1, 1] * y + m[1, 2] * z,
            m[2, 0] * x + m[2, 1] * y + m[2, 2] * z)


@njit(cache=True, inline="always")
def _exact_in_band(x, y, z, grid_d, err, cell, col):
    """``MeshField._exact_in_band`` at one float64 field-space point: whether its distance is
    exact, the signed distance, closest point and outward direction (field space)."""
    grid64, errors, tris = col[2], col[3], col[4]
    origin = grid64[1]
    known, sd, cx, cy, cz, ox, oy, oz = _exact_point(x - origin[0], y - origin[1], z - origin[2], cell, tris)
    reach = errors[5][cell]
    if known and abs(sd) <= reach:
        return True, sd, cx + origin[0], cy + origin[1], cz + origin[2], ox, oy, oz
    if abs(grid_d) <= err and err > reach:          # a seam's cell: every triangle
        _, sd, cx, cy, cz, ox, oy, oz = _exact_point(x - origin[0], y - origin[1], z - origin[2], 0, col[17])
        return True, sd, cx + origin[0], cy + origin[1], cz + origin[2], ox, oy, oz
    return False, sd, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0


@njit(cache=True, inline="always")
def _error(x, y, z, base, col):
    """How far the grid's distance may be off at a float64 field-space point (``error_at``)."""
    grid64, errors = col[2], col[3]
    cell = _list_cell(x, y, z, grid64[1], errors)
    err = errors[0][cell]
    if errors[1].shape[0] and errors[1][base]:
        err = _INF32
    return err, cell


@njit(cache=True, inline="always")
def _field_point(col, x, y, z):
    """A head-local point in the collider's field space (float64)."""
    if col[16]:
        return _to(col[9], x, y, z)
    return x, y, z


@njit(cache=True, inline="always")
def _skipped(col, rest, w, px, py, pz):
    """``Collider.candidates``: a point of a collider that has not moved which moved less than
    ``skip`` from its rest position cannot be within its limit (float32, as the numpy rule)."""
    if col[11]:
        return False
    dx = np.float32(px) - rest[0, w]
    dy = np.float32(py) - rest[1, w]
    dz = np.float32(pz) - rest[2, w]
    return not (dx * dx + dy * dy + dz * dz > col[8][w])


@njit(cache=True, inline="always")
def _project(px, py, pz, w, col, rest):
    """``Collider.project_at`` for one head-local point (float32 values) — the wig's point ``w``
    (``MeshField.project``): whether it is pushed out to its collision surface, where to
    (head-local) and the unit direction it was pushed along (head-local)."""
    if _skipped(col, rest, w, px, py, pz):
        return False, px, py, pz, 0.0, 0.0, 0.0
    return _project_to(px, py, pz, np.float64(col[7][w]), col)


@njit(cache=True, inline="always")
def _project_to(px, py, pz, lim, col):
    """``MeshField.project`` of one head-local point (float32 values) out to the surface
    ``lim`` from the collider: whether it is pushed, where to and along which unit direction
    (head-local)."""
    x, y, z = _field_point(col, np.float64(np.float32(px)), np.float64(np.float32(py)), np.float64(np.float32(pz)))
    d, gx, gy, gz, base = _lookup64(x, y, z, col[2])
    err, cell = _error(x, y, z, base, col)
    if not (d < lim + err):
        return False, px, py, pz, 0.0, 0.0, 0.0
    dm = np.float64(d)
    tol = col[14]
    pushed = False
    nx = ny = nz = ax = ay = az = 0.0
    grid = True
    if abs(dm) < col[13] + err:
        origin = col[2][1]
        if clear_of(x - origin[0], y - origin[1], z - origin[2], cell, lim - tol, np.float64(col[3][5][cell]), col[4]):
            return False, px, py, pz, 0.0, 0.0, 0.0          # the exact query would find it outside
        ok, sd, cx, cy, cz, ox, oy, oz = _exact_in_band(x, y, z, dm, err, cell, col)
        if ok:
            grid = False
            if sd < lim - tol:
                nx, ny, nz = cx + ox * lim, cy + oy * lim, cz + oz * lim
                ax, ay, az = ox, oy, oz
                pushed = True
    if grid and dm < lim - tol:
        g0, g1, g2 = np.float64(gx), np.float64(gy), np.float64(gz)
        gn = math.sqrt(g0 * g0 + g1 * g1 + g2 * g2)
        if gn > 1e-12:
            g0, g1, g2 = g0 / max(gn, 1e-300), g1 / max(gn, 1e-300), g2 / max(gn, 1e-300)
        else:
            g0 = g1 = g2 = 0.0
        nx, ny, nz = x + g0 * (lim - dm), y + g1 * (lim - dm), z + g2 * (lim - dm)
        ax, ay, az = g0, g1, g2
        pushed = True
    if not pushed:
        return False, px, py, pz, 0.0, 0.0, 0.0
    if col[16]:
        nx, ny, nz = _to(col[10], nx, ny, nz)
        ax, ay, az = _turn(col[10], ax, ay, az)
        an = max(math.sqrt(ax * ax + ay * ay + az * az), 1e-300)
        ax, ay, az = ax / an, ay / an, az / an
    return True, np.float64(np.float32(nx)), np.float64(np.float32(ny)), np.float64(np.float32(nz)), ax, ay, az


@njit(cache=True)
def _depth(px, py, pz, w, c0, cols, rest):
    """``walk.CollisionWalk._depth`` for one point: how far it is inside its collision surface
    over every collider, less each one's tolerance (0 outside)."""
    deepest = 0.0
    x32, y32, z32 = np.float32(px), np.float32(py), np.float32(pz)
    for k in range(len(cols)):
        col = c0 if k == 0 else cols[k]
        if _skipped(col, rest, w, x32, y32, z32):
            continue
        x, y, z = _field_point(col, np.float64(x32), np.float64(y32), np.float64(z32))
        origin = col[2][1]
        cell = _list_cell(x, y, z, origin, col[3])
        if clear_of(x - origin[0], y - origin[1], z - origin[2], cell, np.float64(col[7][w]) - col[14],
                    min(np.float64(col[3][5][cell]), np.float64(col[5][2])), col[4]):
            continue                 # not inside: the exact query would find no depth
        d, redo = _signed_point(x, y, z, col[2], col[3], col[4], col[5])
        if redo:                     # a seam's cell: every triangle
            origin = col[2][1]
            d = np.float32(_exact_point(x - origin[0], y - origin[1], z - origin[2], 0, col[17])[1])
        depth = np.float64(col[7][w]) - np.float64(d) - col[14]
        if depth > deepest:
            deepest = depth
    return deepest


@njit(cache=True)
def _outward(px, py, pz, col):
    """``Collider.outward_at`` for one head-local point: the direction away from the surface
    (unit or zero, head-local) — exact in the band, the grid's gradient beyond."""
    x, y, z = _field_point(col, np.float64(np.float32(px)), np.float64(np.float32(py)), np.float64(np.float32(pz)))
    d, gx, gy, gz, base = _lookup64(x, y, z, col[2])
    g0, g1, g2 = np.float64(gx), np.float64(gy), np.float64(gz)
    if not np.isfinite(d):
        g0 = g1 = g2 = 0.0
    err, cell = _error(x, y, z, base, col)
    if abs(np.float64(d)) < col[13] + err:
        ok, _, _, _, _, ox, oy, oz = _exact_in_band(x, y, z, np.float64(d), err, cell, col)
        if ok:
            g0, g1, g2 = ox, oy, oz
    if col[16]:
        g0, g1, g2 = _turn(col[10], g0, g1, g2)
    n = math.sqrt(g0 * g0 + g1 * g1 + g2 * g2)
    if n > 1e-12:
        return g0 / n, g1 / n, g2 / n
    return 0.0, 0.0, 0.0


@njit(cache=True, inline="always")
def _near(col, rest, w, px, py, pz, margins, k, s, seg, looked):
    """``Collider.near_step`` for one point: whether the grid cannot rule out that it is within
    its limit, the strand's running lower bound ``margins[k, s]`` kept up to date (the point lies
    ``seg`` from the one before, and distances are 1-Lipschitz: along a strand leaving the head
    one lookup clears the next few points)."""
    limit = col[7][w]
    stretch = col[15]
    margins[k, s] -= stretch * seg if stretch != np.float32(1.0) else seg
    if not (margins[k, s] < limit):
        return False
    looked[s] += 1
    x32, y32, z32 = np.float32(px), np.float32(py), np.float32(pz)
    if col[16]:                      # float32, as the numpy screen maps its rows
        m = col[9]
        fx = np.float32(m[0, 0]) * x32 + np.float32(m[0, 1]) * y32 + np.float32(m[0, 2]) * z32 + np.float32(m[0, 3])
        fy = np.float32(m[1, 0]) * x32 + np.float32(m[1, 1]) * y32 + np.float32(m[1, 2]) * z32 + np.float32(m[1, 3])
        fz = np.float32(m[2, 0]) * x32 + np.float32(m[2, 1]) * y32 + np.float32(m[2, 2]) * z32 + np.float32(m[2, 3])
    else:
        fx, fy, fz = x32, y32, z32
    lower = _node_value(fx, fy, fz, col[0], True) - col[12]
    margins[k, s] = lower
    if not (lower < limit):
        return False
    margins[k, s] = -_INF32          # this one may be moved: the next point is looked up
    if _skipped(col, rest, w, x32, y32, z32):
        return False
    d, i, j, kk, base = _trilinear32(fx, fy, fz, col[1])
    return d < limit + _grid_error(i, j, kk, base, col[3])


# ---------------------------------------------------------------- the walk's geometry
@njit(cache=True)
def _onto_circle(cx, cy, cz, bx, by, bz, ax, ay, az, nx, ny, nz):
    """``walk._onto_circle`` for one point: ``before`` b, at its segment's length from c, pushed
    to ``after`` a along n — the point at that distance from c on the contact's tangent plane
    nearest b (follow-the-leader along a − c where the sphere misses the plane)."""
    sx, sy, sz = bx - cx, by - cy, bz - cz
    length2 = sx * sx + sy * sy + sz * sz
    hc = nx * (cx - ax) + ny * (cy - ay) + nz * (cz - az)
    rho2 = length2 - hc * hc
    mx, my, mz = cx - hc * nx, cy - hc * ny, cz - hc * nz
    wx, wy, wz = bx - mx, by - my, bz - mz
    wn = nx * wx + ny * wy + nz * wz
    wx, wy, wz = wx - wn * nx, wy - wn * ny, wz - wn * nz
    wl = math.sqrt(wx * wx + wy * wy + wz * wz)
    if rho2 < 0.0 or wl <= 1e-12 * math.sqrt(length2):
        dx, dy, dz = ax - cx, ay - cy, az - cz
        dn = max(math.sqrt(dx * dx + dy * dy + dz * dz), 1e-30)
        f = math.sqrt(length2) / dn
        return cx + dx * f, cy + dy * f, cz + dz * f
    f = math.sqrt(max(rho2, 0.0)) / max(wl, 1e-30)
    return mx + wx * f, my + wy * f, mz + wz * f


@njit(cache=True)
def _unit(x, y, z):
    n = max(math.sqrt(x * x + y * y + z * z), 1e-30)
    return x / n, y / n, z / n


@njit(cache=True)
def _frame(a0, a1, a2, b0, b1, b2):
    """``walk._frame`` for one point: axes along ``a`` (unit) and the part of ``b`` across it
    (else across ``a`` towards its smallest coordinate), and their cross product."""
    ab = a0 * b0 + a1 * b1 + a2 * b2
    b0, b1, b2 = b0 - a0 * ab, b1 - a1 * ab, b2 - a2 * ab
    if math.sqrt(b0 * b0 + b1 * b1 + b2 * b2) <= 1e-6:
        k = 0
        if abs(a1) < abs(a0):
            k = 1
        if abs(a2) < (abs(a1) if k == 1 else abs(a0)):
            k = 2
        e0, e1, e2 = (1.0 if k == 0 else 0.0), (1.0 if k == 1 else 0.0), (1.0 if k == 2 else 0.0)
        ae = a0 * e0 + a1 * e1 + a2 * e2
        b0, b1, b2 = e0 - a0 * ae, e1 - a1 * ae, e2 - a2 * ae
    b0, b1, b2 = _unit(b0, b1, b2)
    return b0, b1, b2, a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=True)
def _arc(lo, hi, s, across):
    """``walk._arc`` for one point: the unit direction on the great circle from ``lo`` to ``hi``
    at the fraction ``s`` of their angle (towards ``across`` where they are opposite)."""
    cos = min(max(lo[0] * hi[0] + lo[1] * hi[1] + lo[2] * hi[2], -1.0), 1.0)
    w0, w1, w2 = hi[0] - lo[0] * cos, hi[1] - lo[1] * cos, hi[2] - lo[2] * cos
    sin = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    if sin <= 1e-6:
        w0, w1, w2, _, _, _ = _frame(lo[0], lo[1], lo[2], across[0], across[1], across[2])
    else:
        w0, w1, w2 = w0 / sin, w1 / sin, w2 / sin
    angle = math.atan2(sin, cos) * s
    c, sn = math.cos(angle), math.sin(angle)
    return c * lo[0] + sn * w0, c * lo[1] + sn * w1, c * lo[2] + sn * w2


@njit(cache=True)
def _outside(cx, cy, cz, d0, d1, d2, length, w, c0, cols, rest):
    """Whether the candidate ``c + d · length`` is outside every collision surface."""
    x = np.float32(cx + d0 * length)
    y = np.float32(cy + d1 * length)
    z = np.float32(cz + d2 * length)
    return _depth(np.float64(x), np.float64(y), np.float64(z), w, c0, cols, rest) <= 0.0


@njit(cache=True)
def _swing_out(p, i, j, w, c0, cols, rest, around, rounds):
    """``walk.CollisionWalk._swing_out`` for point ``i`` of rows ``p`` (its strand's point ``j``,
    the wig's point ``w``) still inside after the tangent-plane steps (a crease bends the surface
    away from the plane): point ``i`` swung about its leader, at its segment's length, from where
    it is towards a direction that is outside, to the first outside point on the way (found to
    1e-7 of the arc: ``rounds`` scans of nine samples). ``around`` (A, 3): directions over the
    sphere, along the first axis first (the last search's)."""
    px, py, pz = np.float64(p[0, i]), np.float64(p[1, i]), np.float64(p[2, i])
    if _depth(px, py, pz, w, c0, cols, rest) <= 0.0:
        return
    cx, cy, cz = np.float64(p[0, i - 1]), np.float64(p[1, i - 1]), np.float64(p[2, i - 1])
    _, qx, qy, qz, _, _, _ = _pushed_out(px, py, pz, w, c0, cols, rest)
    out = np.empty(3)
    out[0], out[1], out[2] = _unit(np.float64(np.float32(qx) - np.float32(px)),
                                   np.float64(np.float32(qy) - np.float32(py)),
                                   np.float64(np.float32(qz) - np.float32(pz)))
    sx, sy, sz = px - cx, py - cy, pz - cz
    length = math.sqrt(sx * sx + sy * sy + sz * sz)
    lo = np.empty(3)
    lo[0], lo[1], lo[2] = sx / max(length, 1e-30), sy / max(length, 1e-30), sz / max(length, 1e-30)
    hi = np.empty(3)
    if out[0] * out[0] + out[1] * out[1] + out[2] * out[2] > 0.25:
        hi[:] = out
    else:
        hi[:] = lo
    # where "out" is, the first of these that is outside: the push's direction, on along the
    # strand's previous segment, away from each collider at the leader (a pocket under an ear
    # can close the first way); a way of no length points nowhere
    found = False
    for way in range(2 + len(cols)):
        if way == 0:
            d0, d1, d2 = out[0], out[1], out[2]
        elif way == 1:
            if j < 2:
                continue
            d0, d1, d2 = _unit(cx - np.float64(p[0, i - 2]), cy - np.float64(p[1, i - 2]),
                               cz - np.float64(p[2, i - 2]))
        else:
            d0, d1, d2 = _outward(cx, cy, cz, c0 if way == 2 else cols[way - 2])
        if d0 * d0 + d1 * d1 + d2 * d2 > 0.25 and _outside(cx, cy, cz, d0, d1, d2, length, w, c0, cols, rest):
            hi[0], hi[1], hi[2] = d0, d1, d2
            found = True
            break
    if not found:
        # a pocket: of directions spread over the sphere in a frame of the point's own (they turn
        # with the scene), the outside one nearest along the segment — ``around`` runs from along
        # it to against it, so the first outside is that one
        b0, b1, b2, e0, e1, e2 = _frame(lo[0], lo[1], lo[2], out[0], out[1], out[2])
        for a in range(around.shape[0]):
            u, v, t = around[a, 0], around[a, 1], around[a, 2]
            d0 = u * lo[0] + v * b0 + t * e0
            d1 = u * lo[1] + v * b1 + t * e1
            d2 = u * lo[2] + v * b2 + t * e2
            if _outside(cx, cy, cz, d0, d1, d2, length, w, c0, cols, rest):
                hi[0], hi[1], hi[2] = d0, d1, d2
                break
    for _ in range(rounds):
        # the first outside of nine directions from lo to hi: the arc narrows to the tenth before
        # it; none outside: from the ninth on
        first = 0
        m0, m1, m2 = lo[0], lo[1], lo[2]
        a0 = a1 = a2 = 0.0
        for k in range(1, SAMPLES + 1):
            a0, a1, a2 = _arc(lo, hi, k / 10.0, out)
            if _outside(cx, cy, cz, a0, a1, a2, length, w, c0, cols, rest):
                first = k
                break
            m0, m1, m2 = a0, a1, a2
        lo[0], lo[1], lo[2] = m0, m1, m2
        if first:
            hi[0], hi[1], hi[2] = a0, a1, a2
    p[0, i] = np.float32(cx + hi[0] * length)
    p[1, i] = np.float32(cy + hi[1] * length)
    p[2, i] = np.float32(cz + hi[2] * length)


# ---------------------------------------------------------------- the walk
@njit(cache=True, parallel=True)
def walk_strands(p, base, n, start, first_strand, length, elasticity, iterations, lifts, rules,
                 threads_cols, kids, rest, margins, came, lifted, around, rounds, looked, last, maps, sweeps,
                 friction, crossed, pushes, turn, previous):
    """Follow-the-leader with collision, root to tip, on every strand of rows ``p`` (3, C)
    float32 — strands of ``n`` points one after another, strand ``s``'s point ``j`` row
    ``s n + j``, the wig's point ``start + s n + j`` — in place, all but the roots
    (``walk.CollisionWalk._walk``).

    Parameters
    ----------
    base : (3, C) float32
        This frame's rest pose: a segment squashed to nothing takes its direction.
    first_strand : int
        The wig's strand of the rows' first (a split bake's part): the children's guide.
    length : (C,) float32
        Each point's segment's rest length (a root's is not read).
    elasticity : float
        ``e`` of ``ℓ = e |d| + (1 − e) L``.
    iterations : int
        Rounds of contacts per point.
    lifts : bool
        Whether a contact met head-on lifts the chain (``_lift``: the swing moved the point more
        than twice its push, which is under ``rules[0]`` of its segment).
    rules : (4,) float64
        The lift's: the settling share of a segment a push stays under (``chain.SETTLING``), and
        ``chain.least_motion``'s rounds, ridge and the share of a length a give keeps
        (``chain.ROUNDS``, ``RIDGE``, ``KEPT``).
    threads_cols : ``threads_colliders``'s; rest : (3, P) float32
        The colliders (module docstring), a typed List a thread, and the wig's rest pose they
        were bound on.
    margins : (len(cols), S) float32
        Each strand's running lower bound of its last point's distance per collider (−inf to
        start).
    came : (3, S) float64
        Where each strand's point ``first − 1`` was asked to be (the segment as it came in guides).
    lifted : (S,) int64
        Each strand's count of chains lifted, added to.
    around, rounds :
        ``_swing_out``'s.
    looked : (S,) int64
        Each strand's count of points its running bound could not clear (looked up), added to.
    last, maps, sweeps : (3, P) float32, (K, 4, 4) float64, (K,) bool
        Continuous contact (``_crossed``): where each of the wig's points ended the last frame
        (head-local then), each collider's head-local → field map then, and whether it moved
        relative to the head since (only those are met so); ``last`` of no points: none (the
        first frame). A point placed across a collider from there goes back
        to the side it came from, on the plane its limit off where it met the surface (``response.held``,
        with Coulomb ``friction``); a segment that then cuts through such a collider (``_cuts``)
        is swung about its leader until it does not (``_wrap``, over ``around``).
    crossed : (S,) int64
        Each strand's count of points held back or swung so, added to.
    pushes : (3, C) float32
        Written at each point a contact pushed: the unit direction of its last push (from where
        it was pushed out: as well conditioned as its depth), head-local — what a dynamics layer
        that feels only its contacts takes back (``walk.CollisionWalk.pushes``); elsewhere left.
    turn, previous : float, (3, P) float32
        How far meeting its samples may turn a segment from where it pointed before, or at the
        end of the last step (``previous``, head-local; of no points: none), radians
        (``_turn_at_most``): ``SEGMENT_TURN`` with a dynamics layer; π (all the way) without.
    """
    count = p.shape[1] // n
    for chunk in prange((count + CHUNK - 1) // CHUNK):
        mine = threads_cols[get_thread_id()]
        c0 = mine[0]
        # the second (a body under the head, the shoulders) too, rather than from the list at
        # every point
        c1 = mine[1] if len(mine) > 1 else mine[0]
        for s in range(chunk * CHUNK, min((chunk + 1) * CHUNK, count)):
            _walk_strand(p, base, n, start, first_strand, s, length, elasticity, iterations, lifts,
                         rules, c0, c1, mine, kids, rest, margins, came, lifted, around, rounds, looked, last,
                         maps, sweeps, friction, crossed, pushes, turn, previous)


@njit(cache=True, inline="always")
def _walk_strand(p, base, n, start, first_strand, s, length, elasticity, iterations, lifts, rules, c0, c1,
                 cols, kids, rest, margins, came, lifted, around, rounds, looked, last, maps, sweeps, friction,
                 crossed, pushes, turn, previous):
    """``walk_strands`` for strand ``s``; ``c0``, ``c1``: the first and second colliders (``c1``
    is ``c0`` where there is one), read from the list once per chunk of strands. Inlined, as
    ``_round``, ``_project`` and ``_project_to`` are: a call that
    passes a collider's tuple counts a reference to each of its ~40 arrays, atomically, and takes
    it back; per strand and per contact that made the walk 3x slower than the numpy walk at 400k
    points (103 ms against 33; inlined, 21 to 27) and slower on two threads than on one. The
    price is the compile: numba inlines by deep-copying the callee's IR at every site, nested
    sites again (a profile of this compile: 570 of its 846 s in ``copy.deepcopy``). So only what
    takes a collider is inlined here; the helpers of scalars (``_to``, ``_turn``, ``_unit``,
    ``_onto_circle``, the field's axis and corner arithmetic) are plain calls LLVM inlines itself
    (no tuple, no reference counts): the walk's cold compile fell from 108 to 55 s of CPU."""
    ncol = len(cols)
    tries = max(1, iterations)
    sweeping = last.shape[1] > 0 and sweeps.any()
    r0 = s * n
    cx, cy, cz = came[0, s], came[1, s], came[2, s]
    for j in range(1, n):
        i = r0 + j
        w = start + i
        px, py, pz = np.float64(p[0, i]), np.float64(p[1, i]), np.float64(p[2, i])
        gx, gy, gz = px - cx, py - cy, pz - cz              # the segment as it came in
        cx, cy, cz = px, py, pz
        lx, ly, lz = np.float64(p[0, i - 1]), np.float64(p[1, i - 1]), np.float64(p[2, i - 1])
        # placed; where that crossed a collider since the last frame, slid back to the side it
        # came from and placed again from there (one loop: ``place`` is inlined at one site)
        ox, oy, oz, moved = place(lx, ly, lz, px, py, pz, np.float64(length[i]), gx, gy, gz,
                                  np.float64(base[0, i]) - np.float64(base[0, i - 1]),
                                  np.float64(base[1, i]) - np.float64(base[1, i - 1]),
                                  np.float64(base[2, i]) - np.float64(base[2, i - 1]),
                                  elasticity, True, _F32_KEEP)
        if moved:
            p[0, i], p[1, i], p[2, i] = np.float32(ox), np.float32(oy), np.float32(oz)
        # the cheap tests first, inlined on the colliders bound once a chunk: ``_sweep`` is a
        # plain call that counts each collider's ~40 array references and reads the list at
        # every point (with the second collider named too: the long hair over Suzanne's
        # shoulders as her head turns, 336-342 -> 247-260 ms a frame; the bench's Springs bake,
        # 4.15 -> 2.9-3.0 s)
        if sweeping and (ncol > 2 or not (_swept_clear(p, i, w, last, maps, sweeps, 0, c0, rest)
                                           and _swept_clear(p, i, w, last, maps, sweeps, 1, c1, rest))) and _sweep(
                p, i, j, w, s, lx, ly, lz, last, maps, sweeps, c0, cols, rest, friction, around, crossed):
            for k in range(ncol):            # the points before moved: no bound carried from them
                margins[k, s] = -_INF32
        if elasticity == 0.0:
            seg = length[i]
        else:
            e0, e1, e2 = p[0, i] - p[0, i - 1], p[1, i] - p[1, i - 1], p[2, i] - p[2, i - 1]
            seg = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        # the first collider by name, the others from the list: a tuple of arrays bound to a
        # variable (a branch's value, a list's item) counts a reference to each of its ~40
        # arrays, atomically, and takes it back — per point, that was most of the walk's time,
        # and slower on two threads than on one (they fought over the counts)
        near = _near(c0, rest, w, p[0, i], p[1, i], p[2, i], margins, 0, s, seg, looked)
        if ncol > 1 and _near(c1, rest, w, p[0, i], p[1, i], p[2, i], margins, 1, s, seg, looked):
            near = True
        for k in range(2, ncol):
            if _near(cols[k], rest, w, p[0, i], p[1, i], p[2, i], margins, k, s, seg, looked):
                near = True
        pushed = False
        if near and ncol > 1:                # moved by one collider: no bound for the others
            for k in range(ncol):
                margins[k, s] = -_INF32
        # the rounds, then — where the children's keep-out moved the guide's point — one more
        # round (``tries``) where they put it: one loop, so ``_round`` is inlined at one site
        # (each site is a deep copy of its IR and the compile's largest cost)
        r = 0 if near else tries
        after = False
        while True:
            if r < tries or after:
                got = _round(p, i, j, w, s, c0, c1, cols, rest, lifts, rules, elasticity, lifted, pushes)
                if after:
                    pushed = pushed or got
                    break
                pushed = got
                r += 1
                if got and r < tries:
                    continue
            if kids[0].shape[0] and _children_out(p, i, j, w, first_strand + s, c0, cols, kids, rest, tries):
                for k in range(ncol):        # moved: no bound for the next point
                    margins[k, s] = -_INF32
                after, r = True, tries
                continue
            break
        if pushed:                       # still unresolved after the last round
            _swing_out(p, i, j, w, c0, cols, rest, around, rounds)
        # its segment from its leader, met between its ends: swung out where a sample of it is
        # deeper than its limit (the first collider inlined, by name, at this one site) — but
        # not against a collider sweeping through the hair this frame: ``_sweep`` wraps what
        # cuts through it round its edge, each point kept on the side it came from, and a swing
        # out of a sample can leave a point where no pull back reaches it (a strand a slow plate
        # drags over its edge then slips through it)
        cut = False
        fx, fy, fz = np.float64(p[0, i]), np.float64(p[1, i]), np.float64(p[2, i])
        for r in range(SEGMENT_ROUNDS):
            got = False
            if not (sweeping and sweeps[0]):
                got = _segment_against(p, i, w, c0, rest, margins[0, s] if not cut else -_INF32, seg, pushes)
            for k in range(1, ncol):
                if not (sweeping and sweeps[k]) and _segment_against_call(
                        p, i, w, cols[k], rest, margins[k, s] if not (cut or got) else -_INF32, seg, pushes):
                    got = True
            if not got:
                break
            cut = True
        if cut:                          # moved: no bound for the next point; out if it went in
            _turn_at_most(p, i, w, fx, fy, fz, previous, turn)
            for k in range(ncol):
                margins[k, s] = -_INF32
            _swing_out(p, i, j, w, c0, cols, rest, around, rounds)


@njit(cache=True, inline="always")
def _round(p, i, j, w, s, c0, c1, cols, rest, lifts, rules, elasticity, lifted, pushes):
    """One round of contacts for point ``i`` (its strand's point ``j``, the wig's point ``w``;
    ``walk.CollisionWalk._push_round``): pushed out of every collider, then set back on its
    segment's length on the contact's tangent plane (``_onto_circle``). Where the swing moved it
    more than twice its push and the push is settling (under ``rules[0]`` of the segment) with a
    layer that ``lifts``, the chain is lifted instead where that is a give to take (``_lift``;
    ``lifted[s]`` counts those taken). Whether it was pushed."""
    qx, qy, qz = np.float64(p[0, i]), np.float64(p[1, i]), np.float64(p[2, i])
    nx = ny = nz = 0.0
    # the first collider by name: a branch's value (``c0 if k == 0 else cols[k]``) is a tuple
    # bound to a variable, ~40 atomic reference counts taken and given back a point — measured
    # on the bench's live Springs (5000 x 16 over Suzanne), a fifth of the frame (51-52 ms
    # against 41-42); the second inlined site of ``_project`` costs the walk's compile ~11 s
    hit, hx, hy, hz, ax, ay, az = _project(qx, qy, qz, w, c0, rest)
    if hit:
        qx, qy, qz, nx, ny, nz = hx, hy, hz, ax, ay, az
    if len(cols) > 1:                    # the second by name too (``walk_strands``)
        h, hx, hy, hz, ax, ay, az = _project(qx, qy, qz, w, c1, rest)
        if h:
            qx, qy, qz, nx, ny, nz, hit = hx, hy, hz, ax, ay, az, True
    for k in range(2, len(cols)):
        h, hx, hy, hz, ax, ay, az = _project(qx, qy, qz, w, cols[k], rest)
        if h:
            qx, qy, qz, nx, ny, nz, hit = hx, hy, hz, ax, ay, az, True
    if not hit:
        return False
    pushes[0, i], pushes[1, i], pushes[2, i] = np.float32(nx), np.float32(ny), np.float32(nz)
    bx, by, bz = np.float64(p[0, i]), np.float64(p[1, i]), np.float64(p[2, i])
    lx, ly, lz = np.float64(p[0, i - 1]), np.float64(p[1, i - 1]), np.float64(p[2, i - 1])
    sx, sy, sz = _onto_circle(lx, ly, lz, bx, by, bz, qx, qy, qz, nx, ny, nz)
    p[0, i], p[1, i], p[2, i] = np.float32(sx), np.float32(sy), np.float32(sz)
    if lifts and j >= 2:
        d2 = (sx - bx) ** 2 + (sy - by) ** 2 + (sz - bz) ** 2
        p2 = (qx - bx) ** 2 + (qy - by) ** 2 + (qz - bz) ** 2
        l2 = (bx - lx) ** 2 + (by - ly) ** 2 + (bz - lz) ** 2
        if d2 > 4 * p2 and p2 < rules[0] * rules[0] * l2:
            if _lift(p, i, j, w, c0, cols, rest, bx, by, bz, qx, qy, qz, nx, ny, nz, math.sqrt(d2), elasticity, rules,
                     pushes):
                lifted[s] += 1
    return True


@njit(cache=True, inline="always")
def _segment_against(p, i, w, col, rest, margin, seg, pushes):
    """Segment collision (SPEC §6.4) for point ``i`` of rows ``p`` (the wig's point ``w``)
    against one collider, after the point itself is out: its segment from its leader met at
    ``SEGMENT_AT`` of its length, each sample deeper than its own limit (the offset, or the
    groom's own clearance there: ``groom_limits``, so a groom at rest meets none) pushed out to
    it by swinging the segment about its leader — point ``i`` moved by the sample's push over the
    sample's share ``t`` of the segment and set back at the segment's length: to first order the
    least turn about the leader that takes the sample out, the segment's length kept. Samples in
    turn, each from where the one before left the point. Not looked at: a
    segment whose point is farther from the collider (``margin``, a lower bound in field units;
    −inf: none) than the share of it (``seg`` long) from its nearest sample beyond its samples'
    limits, nor one whose ends both moved less
    than its room from rest while the collider keeps still (the samples' skip, ``Collider.bind``).
    Writes the last push's direction to ``pushes``; whether it moved
    the point."""
    bounds = col[19]
    if bounds.shape[1] <= w:
        return False
    top = max(bounds[0, w], max(bounds[1, w], bounds[2, w]))
    if margin - col[15] * np.float32(_SEGMENT_REACH) * seg >= top:
        return False
    if not col[11]:
        skip2 = bounds[3, w]
        ax, ay, az = p[0, i] - rest[0, w], p[1, i] - rest[1, w], p[2, i] - rest[2, w]
        bx, by, bz = p[0, i - 1] - rest[0, w - 1], p[1, i - 1] - rest[1, w - 1], p[2, i - 1] - rest[2, w - 1]
        if not (ax * ax + ay * ay + az * az > skip2) and not (bx * bx + by * by + bz * bz > skip2):
            return False
    lx, ly, lz = np.float64(p[0, i - 1]), np.float64(p[1, i - 1]), np.float64(p[2, i - 1])
    moved = False
    for q in range(len(SEGMENT_AT)):
        t = SEGMENT_AT[q]
        px, py, pz = np.float64(p[0, i]), np.float64(p[1, i]), np.float64(p[2, i])
        sx, sy, sz = lx + t * (px - lx), ly + t * (py - ly), lz + t * (pz - lz)
        hit, hx, hy, hz, nx, ny, nz = _project_to(sx, sy, sz, np.float64(bounds[q, w]), col)
        if not hit:
            continue
        # the push from the sample as it was met (float32), carried to the point over its share
        dx = px + (hx - np.float64(np.float32(sx))) / t - lx
        dy = py + (hy - np.float64(np.float32(sy))) / t - ly
        dz = pz + (hz - np.float64(np.float32(sz))) / t - lz
        length = math.sqrt((px - lx) ** 2 + (py - ly) ** 2 + (pz - lz) ** 2)
        d = math.sqrt(dx * dx + dy * dy + dz * dz)
        if length == 0.0 or d == 0.0:
            continue
        f = length / d
        p[0, i], p[1, i], p[2, i] = np.float32(lx + dx * f), np.float32(ly + dy * f), np.float32(lz + dz * f)
        pushes[0, i], pushes[1, i], pushes[2, i] = np.float32(nx), np.float32(ny), np.float32(nz)
        moved = True
    return moved


@njit(cache=True)
def _toward(ux, uy, uz, dx, dy, dz, c, most):
    """The unit direction ``most`` radians from unit ``u`` towards unit ``d`` (``c`` = u · d
    below cos most) on their great circle; ``u`` where ``d`` is right against it."""
    vx, vy, vz = dx - c * ux, dy - c * uy, dz - c * uz
    v = math.sqrt(vx * vx + vy * vy + vz * vz)
    if v <= 1e-12:
        return ux, uy, uz
    sm = math.sin(most) / v
    cm = math.cos(most)
    return cm * ux + sm * vx, cm * uy + sm * vy, cm * uz + sm * vz


@njit(cache=True)
def _turn_at_most(p, i, w, fx, fy, fz, previous, most):
    """Point ``i`` of rows ``p`` (the wig's point ``w``), swung about its leader by meeting its
    segment's samples from ``f`` (where its own contacts left it), kept within ``most`` radians
    of where its segment pointed — before the swing, or at the end of the last step
    (``previous`` (3, P), head-local; of no points: none) — at the segment's length: where the
    swing went farther, turned from whichever of those two comes nearer it by ``most`` towards
    it. A sample deep inside (a strand the solver carried through an ear between two steps, a
    zigzag of segments across a thin part) asks a segment to turn by a right angle and more,
    which follow-the-leader carries to the tip: a strand's lower half jumped a metre in one frame
    and back in the next (the fast head turn's Wisps: 104 popping point-frames where points alone
    had none). A cut the solver brings back each step (hair held across an edge) is turned out
    ``most`` further each step from where it ended the last, until the swing comes within
    ``most`` of it. Unchanged (to the bit) where the swing is within ``most`` of either.
    (``walk.CollisionWalk._turn_at_most``.)"""
    if most >= math.pi:
        return
    lx, ly, lz = np.float64(p[0, i - 1]), np.float64(p[1, i - 1]), np.float64(p[2, i - 1])
    ex, ey, ez = fx - lx, fy - ly, fz - lz
    length = math.sqrt(ex * ex + ey * ey + ez * ez)
    dx, dy, dz = np.float64(p[0, i]) - lx, np.float64(p[1, i]) - ly, np.float64(p[2, i]) - lz
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    if length == 0.0 or d == 0.0:
        return
    ux, uy, uz = ex / length, ey / length, ez / length
    dx, dy, dz = dx / d, dy / d, dz / d
    limit = math.cos(most)
    c = ux * dx + uy * dy + uz * dz
    if c >= limit:
        return
    bx, by, bz = _toward(ux, uy, uz, dx, dy, dz, c, most)
    if previous.shape[1] > w:
        qx = np.float64(previous[0, w]) - np.float64(previous[0, w - 1])
        qy = np.float64(previous[1, w]) - np.float64(previous[1, w - 1])
        qz = np.float64(previous[2, w]) - np.float64(previous[2, w - 1])
        q = math.sqrt(qx * qx + qy * qy + qz * qz)
        if q > 0.0:
            qx, qy, qz = qx / q, qy / q, qz / q
            cq = qx * dx + qy * dy + qz * dz
            if cq >= limit:
                return
            ox, oy, oz = _toward(qx, qy, qz, dx, dy, dz, cq, most)
            if ox * dx + oy * dy + oz * dz > bx * dx + by * dy + bz * dz:
                bx, by, bz = ox, oy, oz
    p[0, i] = np.float32(lx + length * bx)
    p[1, i] = np.float32(ly + length * by)
    p[2, i] = np.float32(lz + length * bz)


@njit(cache=True)
def _segment_against_call(p, i, w, col, rest, margin, seg, pushes):
    """``_segment_against`` as a plain call, for the colliders after the first: each call counts
    its tuple's references (the first collider, nearly always the only one the hair is near, is
    inlined instead; each inlined site is a copy of the query's IR in the walk's compile)."""
    return _segment_against(p, i, w, col, rest, margin, seg, pushes)


@njit(cache=True)
def _pushed_out(px, py, pz, w, c0, cols, rest):
    """A head-local point pushed out of every collider in turn (``_round``'s, ``walk.
    CollisionWalk._push_round``'s): whether any pushed it, where it ends and the last push's
    unit direction."""
    # one site of ``_project`` for ``_swing_out`` and ``_lift``: each inlined site is a deep copy
    # of its IR, seconds of the walk's compile
    hit, qx, qy, qz, nx, ny, nz = False, px, py, pz, 0.0, 0.0, 0.0
    for k in range(len(cols)):
        h, hx, hy, hz, ax, ay, az = _project(qx, qy, qz, w, c0 if k == 0 else cols[k], rest)
        if h:
            hit, qx, qy, qz, nx, ny, nz = True, hx, hy, hz, ax, ay, az
    return hit, qx, qy, qz, nx, ny, nz


@njit(cache=True)
def _lift(p, i, j, w, c0, cols, rest, bx, by, bz, qx, qy, qz, nx, ny, nz, bound, elasticity, rules, pushes):
    """``walk.CollisionWalk._lift_steep`` for point ``i`` of rows ``p`` (its strand's point
    ``j`` ≥ 2, the wig's point ``w``), pushed from ``b`` to ``q`` along the unit ``n`` and swung
    ``bound`` away by its set-back: the chain ``0 … j`` moved as little as keeps each of its
    segments' lengths (as they are) and puts point ``j`` on its contact's plane (Gauss's least
    motion, ``kernels.chain._chain_moves``, ``rules[1]`` rounds, ridge ``rules[2]``); a point it
    would take inside its surface becomes a contact too, sliding along it, and the chain is
    solved again (three solves at most). Taken where no point is left a tenth of the push
    inside and it is a give to take (``chain.settled``: the lengths kept to ``rules[3]`` of the
    longest, the motion no more than ``bound``); points it left inside by less — a micron into
    the curved scalp they slid along — are walked again from the first of them (placed on the
    lift's own lengths, pushed out, set back on the tangent plane). Whether it was taken."""
    r0 = i - j
    m = j + 1
    x0, x, nrm = np.empty((m, 3)), np.empty((m, 3)), np.zeros((m, 3))
    rch, lng, depth = np.zeros(m), np.empty(j), np.zeros(m)
    for k in range(j):
        for c in range(3):
            x0[k, c] = np.float64(p[c, r0 + k])
    x0[j, 0], x0[j, 1], x0[j, 2] = bx, by, bz
    for k in range(j):
        s0, s1, s2 = x0[k + 1, 0] - x0[k, 0], x0[k + 1, 1] - x0[k, 1], x0[k + 1, 2] - x0[k, 2]
        lng[k] = math.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
    nrm[j, 0], nrm[j, 1], nrm[j, 2] = nx, ny, nz
    rch[j] = nx * qx + ny * qy + nz * qz
    u, now, row = np.empty((j, 3)), np.empty(j), np.empty(j, np.int64)
    band, z = np.empty((2 * j, 3)), np.empty(2 * j)
    rounds, ridge, kept = int(rules[1]), rules[2], rules[3]
    for _ in range(3):
        x[:] = x0
        _chain_moves(x, nrm, rch, lng, 1, rounds, ridge, u, now, row, band, z)
        inside = False
        for k in range(1, j):
            depth[k] = _depth(x[k, 0], x[k, 1], x[k, 2], w - (j - k), c0, cols, rest)
            inside = inside or depth[k] > 0.0
        if not inside:
            break
        # the points the lift took inside: on their surfaces too, sliding along them
        for k in range(1, j):
            if depth[k] > 0.0:
                hit, ox, oy, oz, ax, ay, az = _pushed_out(np.float64(np.float32(x[k, 0])),
                                                          np.float64(np.float32(x[k, 1])),
                                                          np.float64(np.float32(x[k, 2])), w - (j - k), c0, cols, rest)
                # a push along no direction (a flat gradient) is no plane to slide on
                if hit and ax * ax + ay * ay + az * az > 0.5:
                    nrm[k, 0], nrm[k, 1], nrm[k, 2] = ax, ay, az
                    rch[k] = ax * ox + ay * oy + az * oz
    tenth = 0.1 * math.sqrt((qx - bx) ** 2 + (qy - by) ** 2 + (qz - bz) ** 2)
    for k in range(1, j):
        if depth[k] > tenth:
            return False
    if not settled(x, x0, lng, kept, bound):
        return False
    for k in range(1, m):
        for c in range(3):
            p[c, r0 + k] = np.float32(x[k, c])
    first = 0
    for k in range(1, j):
        if depth[k] > 0.0:
            first = k
            break
    if first == 0:
        return True
    for k in range(first, m):
        a, b = r0 + k - 1, r0 + k
        lx, ly, lz = np.float64(p[0, a]), np.float64(p[1, a]), np.float64(p[2, a])
        px, py, pz = np.float64(p[0, b]), np.float64(p[1, b]), np.float64(p[2, b])
        ox, oy, oz, moved = place(lx, ly, lz, px, py, pz, np.float64(np.float32(lng[k - 1])), px - lx, py - ly,
                                  pz - lz, 0.0, 0.0, 0.0, elasticity, True, _F32_KEEP)
        if moved:
            p[0, b], p[1, b], p[2, b] = np.float32(ox), np.float32(oy), np.float32(oz)
        ex, ey, ez = np.float64(p[0, b]), np.float64(p[1, b]), np.float64(p[2, b])
        hit, hx, hy, hz, ax, ay, az = _pushed_out(ex, ey, ez, w - (j - k), c0, cols, rest)
        if hit:
            pushes[0, b], pushes[1, b], pushes[2, b] = np.float32(ax), np.float32(ay), np.float32(az)
            sx, sy, sz = _onto_circle(lx, ly, lz, ex, ey, ez, hx, hy, hz, ax, ay, az)
            p[0, b], p[1, b], p[2, b] = np.float32(sx), np.float32(sy), np.float32(sz)
    return True


@njit(cache=True)
def _children_out(p, i, j, w, g, c0, cols, kids, rest, tries):
    """``walk.CollisionWalk._keep_children_out`` for point ``i`` (its strand's point ``j``, the
    wig's point ``w``) of guide ``g``: each round, the guide's shape moved onto each of its
    children's roots (``children.transplant``: ``kids`` = (offsets (K, 3, G) f32, turns
    (K, 3, 3, G) f32 or empty) is pushed out of every collider to its own limit (each collider's
    ``children[0]`` (K, n, G)), and the largest push any needs moves the guide's point, set back
    on its segment's length on that contact's tangent plane (turned back into the guide's
    frame). Whether it moved. A sample of a collider that has not moved is not looked at while it
    lies within ``√children[1]`` of where it rested (the guide's rest shape moved onto the same
    child, ``rest``), as a point is not (``_skipped``): it cannot be within its limit."""
    off, turn = kids
    turned = turn.shape[0] > 0
    r0 = i - j
    w0 = w - j
    ux0, uy0, uz0 = rest[0, w] - rest[0, w0], rest[1, w] - rest[1, w0], rest[2, w] - rest[2, w0]
    moved = False
    for _ in range(tries):
        px, py, pz = np.float32(p[0, i]), np.float32(p[1, i]), np.float32(p[2, i])
        ox, oy, oz = p[0, r0], p[1, r0], p[2, r0]
        best = np.float32(-1.0)
        d0 = d1 = d2 = n0 = n1 = n2 = 0.0
        pick = 0
        for k in range(off.shape[0]):
            if turned:
                ux, uy, uz = px - ox, py - oy, pz - oz
                vx = ox + off[k, 0, g] + (turn[k, 0, 0, g] * ux + turn[k, 0, 1, g] * uy + turn[k, 0, 2, g] * uz)
                vy = oy + off[k, 1, g] + (turn[k, 1, 0, g] * ux + turn[k, 1, 1, g] * uy + turn[k, 1, 2, g] * uz)
                vz = oz + off[k, 2, g] + (turn[k, 2, 0, g] * ux + turn[k, 2, 1, g] * uy + turn[k, 2, 2, g] * uz)
            else:
                vx, vy, vz = px + off[k, 0, g], py + off[k, 1, g], pz + off[k, 2, g]
            if turned:                   # where it rested
                rx = rest[0, w0] + off[k, 0, g] + (turn[k, 0, 0, g] * ux0 + turn[k, 0, 1, g] * uy0 + turn[k, 0, 2, g] * uz0)
                ry = rest[1, w0] + off[k, 1, g] + (turn[k, 1, 0, g] * ux0 + turn[k, 1, 1, g] * uy0 + turn[k, 1, 2, g] * uz0)
                rz = rest[2, w0] + off[k, 2, g] + (turn[k, 2, 0, g] * ux0 + turn[k, 2, 1, g] * uy0 + turn[k, 2, 2, g] * uz0)
            else:
                rx, ry, rz = rest[0, w] + off[k, 0, g], rest[1, w] + off[k, 1, g], rest[2, w] + off[k, 2, g]
            bx, by, bz = vx, vy, vz
            ax = ay = az = 0.0
            for c in range(len(cols)):
                col = c0 if c == 0 else cols[c]
                bounds = col[18]
                if not col[11]:
                    ex, ey, ez = vx - rx, vy - ry, vz - rz
                    if not (ex * ex + ey * ey + ez * ez > bounds[1, k, j, g]):
                        continue
                lim = bounds[0, k, j, g]
                if not (_screen(col, vx, vy, vz) < lim + col[12]):
                    continue
                h, hx, hy, hz, gx, gy, gz = _project_to(np.float64(vx), np.float64(vy), np.float64(vz),
                                                        np.float64(lim), col)
                if h:
                    vx, vy, vz = np.float32(hx), np.float32(hy), np.float32(hz)
                    ax, ay, az = gx, gy, gz
            e0, e1, e2 = vx - bx, vy - by, vz - bz
            size = e0 * e0 + e1 * e1 + e2 * e2
            if size > best:
                best, pick = size, k
                d0, d1, d2, n0, n1, n2 = np.float64(e0), np.float64(e1), np.float64(e2), ax, ay, az
        if not (best > 0):
            break
        moved = True
        if turned:                       # back into the guide's own frame: Rᵀ
            t = turn[pick]
            d0, d1, d2 = (t[0, 0, g] * d0 + t[1, 0, g] * d1 + t[2, 0, g] * d2,
                          t[0, 1, g] * d0 + t[1, 1, g] * d1 + t[2, 1, g] * d2,
                          t[0, 2, g] * d0 + t[1, 2, g] * d1 + t[2, 2, g] * d2)
            n0, n1, n2 = (t[0, 0, g] * n0 + t[1, 0, g] * n1 + t[2, 0, g] * n2,
                          t[0, 1, g] * n0 + t[1, 1, g] * n1 + t[2, 1, g] * n2,
                          t[0, 2, g] * n0 + t[1, 2, g] * n1 + t[2, 2, g] * n2)
        hx, hy, hz = np.float64(px), np.float64(py), np.float64(pz)
        sx, sy, sz = _onto_circle(np.float64(p[0, i - 1]), np.float64(p[1, i - 1]), np.float64(p[2, i - 1]),
                                  hx, hy, hz, hx + d0, hy + d1, hz + d2, n0, n1, n2)
        p[0, i], p[1, i], p[2, i] = np.float32(sx), np.float32(sy), np.float32(sz)
    return moved


@njit(cache=True, inline="always")
def _screen(col, x, y, z):
    """The distance at the grid node nearest a head-local float32 point (``MeshField.screen``:
    no clamping — beyond the grid some node's distance, safe for a screen)."""
    if col[16]:
        m = col[9]
        fx = np.float32(m[0, 0]) * x + np.float32(m[0, 1]) * y + np.float32(m[0, 2]) * z + np.float32(m[0, 3])
        fy = np.float32(m[1, 0]) * x + np.float32(m[1, 1]) * y + np.float32(m[1, 2]) * z + np.float32(m[1, 3])
        fz = np.float32(m[2, 0]) * x + np.float32(m[2, 1]) * y + np.float32(m[2, 2]) * z + np.float32(m[2, 3])
        return _node_value(fx, fy, fz, col[0], False)
    return _node_value(x, y, z, col[0], False)


# ---------------------------------------------------------------- continuous contact
CROSS_STEPS = 32       # conservative-advancement steps along a path, at most
# A path that leaves the surface facing more than 60° away from where it met it went through
# (cos 60°): a graze over a convex surface turns the normal by its chord over the radius, and
# 60° would be a chord as long as the radius — a head's 10 cm in one frame, relative to it.
CROSS_TURN = 0.5
# A path that leaves facing less than 120° away from where it met (cos 120°) met two faces of a
# corner, not opposite faces: where the pull back asks whether a point it moved went through
# (``_pull_back``), such a path whose stretch inside is shorter than the reach the pull back
# allows went round the edge with its chain and clipped the corner on a straight way.
THROUGH_TURN = -0.5
# Coulomb friction of the hold where the wig's layer has none of its own (Springs): the layers'
# default Friction
CROSS_FRICTION = 0.3
WRAP_HALVINGS = 24     # a wrapped segment's way found to 2^-24 of its arc (~1e-7 rad)


@njit(cache=True, inline="always")
def _clearance(x, y, z, col):
    """A lower bound of the collider's signed distance at the head-local float64 point
    (x, y, z), in head-local units: exact where the lists reach it (``_exact_in_band``, as
    ``_outward`` reads it), the grid's less its error there beyond, the distance to the grid's
    box beyond the grid (``_signed_point``) — never more than the true distance, so a step of it
    along a path cannot pass the surface. Where that bound says the surface may be within the
    tolerance but is not exact (a grid as coarse as a thin plate's, whose error is its whole
    cell), the exact distance from every triangle: a path must not stop short of the surface."""
    fx, fy, fz = _field_point(col, x, y, z)
    d, _, _, _, base = _lookup64(fx, fy, fz, col[2])
    exact = False
    if not np.isfinite(d):
        sd, _ = _signed_point(fx, fy, fz, col[2], col[3], col[4], col[5])
        room = np.float64(sd)
    else:
        d64 = np.float64(d)
        err, cell = _error(fx, fy, fz, base, col)
        err = np.float64(err)
        room = d64 - err
        if abs(d64) < col[13] + err:
            ok, sd, _, _, _, _, _, _ = _exact_in_band(fx, fy, fz, d64, err, cell, col)
            if ok:
                room = sd
                exact = True
    if not exact and room <= col[14]:
        origin = col[2][1]
        known, sd, _, _, _, _, _, _ = _exact_point(fx - origin[0], fy - origin[1], fz - origin[2], 0, col[17])
        if known:
            room = sd
    return room / np.float64(col[15])


@njit(cache=True)
def _cross_way(ax, ay, az, bx, by, bz, w, col, strict, corner):
    """Continuous contact against one collider along the straight way from ``a`` to ``b``
    (head-local float64) — a point's path since the last frame, or a segment from its leader —
    for the wig's point ``w``: whether the way crossed the collider, and if so where it met it
    and the outward direction there (head-local), the point's limit (head-local units: the
    plane the point is kept on) and where the way leaves the surface (``b`` where ``b`` is
    inside).

    The way crossed where it meets the mesh's surface (conservative advancement from ``a``
    along the clearance, ``CROSS_STEPS`` steps at most: a grazing way that needs more has not
    gone in) and does not end by the face it came through — the surface it leaves by (found
    from ``b`` back the same way; ``b``'s nearest where ``b`` is inside) faces more than 60°
    away from the one it met (``CROSS_TURN``): a thin plate or a hand whose middle passed it, a
    corner it was carried into from one face and would be pushed out of another. A point that
    went in and ends nearer the face it came through is the walk's to push out that face; a
    point that slid over the surface and cut into it by a chord's sag leaves it facing nearly
    the way it met it, and is left alone. A way that starts inside the mesh (a groom inside the
    head) is the walk's too. ``strict``: a way that grazes the surface so near that the
    advancement runs out of steps before it reaches ``b`` counts as crossing (a way asked to be
    clear must be seen clear; no default: an omitted argument is a type of its own, and numba
    would compile this twice). ``corner``: a way that leaves by a face less than 120° from the
    one it met (``THROUGH_TURN``: two faces of an edge) within ``corner`` of where it met it
    clipped that edge and is not counted (0: every crossing counts)."""
    dx, dy, dz = bx - ax, by - ay, bz - az
    travel = math.sqrt(dx * dx + dy * dy + dz * dz)
    stretch = np.float64(col[15])
    tol = col[14] / stretch
    # forward from a to where the path meets the surface; then back from b to where it leaves
    # it (b itself where b is inside: its nearest surface) — one loop, so ``_clearance`` is
    # inlined at one site
    ex = ey = ez = 0.0
    for back in range(2):
        ox, oy, oz = (bx, by, bz) if back else (ax, ay, az)
        sign = -1.0 if back else 1.0
        s, x, y, z = 0.0, ox, oy, oz
        met = False
        for step in range(CROSS_STEPS):
            room = _clearance(x, y, z, col)
            if step == 0 and not back and room < -tol:
                break                # it started inside
            if room <= tol:
                met = True
                break
            s += room
            if s >= travel:
                break
            f = sign * s / travel
            x, y, z = ox + f * dx, oy + f * dy, oz + f * dz
        if not met:
            if strict and not back and s < travel and step == CROSS_STEPS - 1:
                return True, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
            break
        if not back:
            ex, ey, ez = x, y, z
            continue
        nx, ny, nz = _outward(ex, ey, ez, col)
        mx, my, mz = _outward(x, y, z, col)
        turn = nx * mx + ny * my + nz * mz
        inside2 = (x - ex) ** 2 + (y - ey) ** 2 + (z - ez) ** 2
        if turn < CROSS_TURN and (turn < THROUGH_TURN or inside2 >= corner * corner):
            return True, ex, ey, ez, nx, ny, nz, np.float64(col[7][w]) / stretch, x, y, z
    return False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0


@njit(cache=True, inline="always")
def _way_clear(ax, ay, az, bx, by, bz, col):
    """Whether the straight way from ``a`` to ``b`` (head-local float64) keeps farther than the
    tolerance from the collider's surface everywhere along it, by the triangles listed for
    ``a``'s list cell — so ``_cross_way`` would find it clear without stepping along it. Each
    side of a listed triangle (its plane, either face; its edges' side planes, as ``_lower``
    reads them) is linear along the way, so the way is at least the nearer end's offset from it;
    every triangle within the cell's reach of ``a`` is listed, so one that is not is farther than
    the reach less the way's length. Hair lying on a body the head turns above (a shoulder)
    keeps about its offset from it: the nearest node's screen cannot clear its paths and
    segments, and ``_cross_way`` stepped along each of them by that offset, an exact distance a
    step — about 20 steps a point on a long hair's segment. First, and where ``a`` lies beyond
    the lists, the mesh's box: the way is at least ``a``'s distance from it less its length
    (hair on the head, above a body's box, is so cleared of the body: each point's path and
    segment otherwise went through ``_sweep``'s plain call, whose collider tuples' reference
    counts cost more than the few steps it took)."""
    fax, fay, faz = _field_point(col, ax, ay, az)
    fbx, fby, fbz = _field_point(col, bx, by, bz)
    tol = np.float64(col[14])
    dx, dy, dz = fbx - fax, fby - fay, fbz - faz
    travel = math.sqrt(dx * dx + dy * dy + dz * dz)
    if box_distance(fax, fay, faz, col[5][0], col[5][1]) - travel > tol:
        return True
    errors, tris, planes = col[3], col[4], col[6]
    origin = col[2][1]
    dims, h = errors[3], errors[4]
    i = np.floor((fax - origin[0]) / h)
    j = np.floor((fay - origin[1]) / h)
    k = np.floor((faz - origin[2]) / h)
    if not (0.0 <= i < dims[0] and 0.0 <= j < dims[1] and 0.0 <= k < dims[2]):
        return False
    cell = (np.int64(i) * dims[1] + np.int64(j)) * dims[2] + np.int64(k)
    low = np.float64(errors[5][cell]) - travel
    if not (low > tol):
        return False
    start, listed, slack = tris[0], tris[1], tris[5]
    x0, y0, z0 = np.float32(fax - origin[0]), np.float32(fay - origin[1]), np.float32(faz - origin[2])
    x1, y1, z1 = np.float32(fbx - origin[0]), np.float32(fby - origin[1]), np.float32(fbz - origin[2])
    for m in range(start[cell], start[cell + 1]):
        t = listed[m]
        h0, h1 = plane_offset(x0, y0, z0, planes, t, 0), plane_offset(x1, y1, z1, planes, t, 0)
        near = min(h0, h1) if h0 > 0 and h1 > 0 else (min(-h0, -h1) if h0 < 0 and h1 < 0 else _F0)
        out = _F0
        for q in range(4, 16, 4):
            o = min(plane_offset(x0, y0, z0, planes, t, q), plane_offset(x1, y1, z1, planes, t, q))
            if o > out:
                out = o
        # less the prune's slack, as ``_outside``'s: far above these float32 roundings
        bound = np.float64(np.sqrt(near * near + out * out)) - slack
        if not (bound > tol):        # NaN (a triangle of no area): not cleared
            return False
    return True


@njit(cache=True, inline="always")
def _path_clear(p, i, w, last, m, col, rest):
    """The cheap tests that clear most points' paths since the last frame against collider
    ``col`` (``_crossed``'s: point ``i`` of rows ``p``, the wig's point ``w``, from where it ended
    the last frame, ``last``, through ``m``, the collider's head-local → field map then): no
    travel, both ends in the ball about its rest place that clears the surface (an unmoved
    collider), the nearest node's distance less the grid's slack farther than the path is
    long, or the path clear of the triangles listed where it starts (``_way_clear``). Whether
    they clear it, and the path's ends (head-local now)."""
    ax, ay, az = _to(m, np.float64(last[0, w]), np.float64(last[1, w]), np.float64(last[2, w]))
    if col[16]:                      # where it was in the collider's space, in head-local space now
        ax, ay, az = _to(col[10], ax, ay, az)
    bx, by, bz = np.float64(p[0, i]), np.float64(p[1, i]), np.float64(p[2, i])
    dx, dy, dz = bx - ax, by - ay, bz - az
    if dx * dx + dy * dy + dz * dz == 0.0:
        return True, ax, ay, az, bx, by, bz
    if not col[11] and _skipped(col, rest, w, ax, ay, az) and _skipped(col, rest, w, bx, by, bz):
        return True, ax, ay, az, bx, by, bz
    stretch = np.float64(col[15])
    near = np.float64(_screen(col, np.float32(ax), np.float32(ay), np.float32(az))) - np.float64(col[12])
    if near / stretch > math.sqrt(dx * dx + dy * dy + dz * dz) + col[14] / stretch:
        return True, ax, ay, az, bx, by, bz
    return _way_clear(ax, ay, az, bx, by, bz, col), ax, ay, az, bx, by, bz


@njit(cache=True, inline="always")
def _crossed(p, i, w, last, m, col, rest, corner):
    """``_cross_way`` for the path of point ``i`` of rows ``p`` (the wig's point ``w``) against collider
    ``col``, from where it ended the last frame (``last``, head-local then; ``m`` the collider's
    head-local → field map then), after the cheap tests that clear most points (``_path_clear``).
    ``corner``: ``_cross_way``'s."""
    clear, ax, ay, az, bx, by, bz = _path_clear(p, i, w, last, m, col, rest)
    if clear:
        return False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    return _cross_way(ax, ay, az, bx, by, bz, w, col, False, corner)[:8]


@njit(cache=True, inline="always")
def _segment_clear(p, i, a, col):
    """The cheap test that clears most segments from point ``a`` of rows ``p`` to point ``i``
    against collider ``col`` (``_cuts``'): ``a``'s nearest node's distance less the grid's
    slack farther than the segment is long, or the segment clear of the triangles listed where
    it starts (``_way_clear``)."""
    ax, ay, az = np.float64(p[0, a]), np.float64(p[1, a]), np.float64(p[2, a])
    dx, dy, dz = np.float64(p[0, i]) - ax, np.float64(p[1, i]) - ay, np.float64(p[2, i]) - az
    stretch = np.float64(col[15])
    near = np.float64(_screen(col, p[0, a], p[1, a], p[2, a])) - np.float64(col[12])
    if near / stretch > math.sqrt(dx * dx + dy * dy + dz * dz) + col[14] / stretch:
        return True
    return _way_clear(ax, ay, az, np.float64(p[0, i]), np.float64(p[1, i]), np.float64(p[2, i]), col)


@njit(cache=True, inline="always")
def _cuts(p, i, a, w, col):
    """Whether the segment from point ``a`` of rows ``p`` (its leader, or its follower on a
    pull back) to point ``i`` (the wig's point ``w``) cuts through the collider (``_cross_way``:
    a strand a moving plate drags round its edge by its leaders, one point on either face) —
    after the cheap test that clears most segments (``_segment_clear``)."""
    if _segment_clear(p, i, a, col):
        return False
    return _cross_way(np.float64(p[0, a]), np.float64(p[1, a]), np.float64(p[2, a]), np.float64(p[0, i]),
                      np.float64(p[1, i]), np.float64(p[2, i]), w, col, False, 0.0)[0]


@njit(cache=True, inline="always")
def _swept_clear(p, i, w, last, maps, sweeps, k, col, rest):
    """Whether ``_sweep`` leaves point ``i`` of rows ``p`` (the wig's point ``w``) as it is for
    collider ``k`` (``col``; none beyond the colliders, or one that did not sweep, leaves it):
    its path since the last frame and its segment from its leader cleared by the cheap tests
    ``_sweep`` itself makes first (``_path_clear``, ``_segment_clear``)."""
    if k >= sweeps.shape[0] or not sweeps[k]:
        return True
    return _path_clear(p, i, w, last, maps[k], col, rest)[0] and _segment_clear(p, i, i - 1, col)


@njit(cache=True)
def _sweep(p, i, j, w, s, lx, ly, lz, last, maps, sweeps, c0, cols, rest, friction, around, crossed):
    """Continuous contact for point ``i`` of rows ``p`` (the wig's point ``w``, of strand ``s``,
    its leader at ``l``) against every collider that moved relative to the head since the last
    frame (``walk_strands`` says what each argument is): placed across such a collider from
    where it ended the last frame (``_crossed``), it goes back to the side it came from, at its
    segment's length on the plane its limit off where it met the surface (``response.held``); then,
    where its segment from its leader cuts through that collider (``_cuts``), it is swung round
    it (``_wrap``). A plain call, made only while some collider sweeps: the walk's own
    compile is the project's longest, and each inlined site of this would be a copy of it (the
    price here, a collider tuple's reference counts a point, is paid only then). Where a swing
    would take the point across (its leader ran round the edge too far to reach back), the chain
    is pulled back to where it is held instead (``_pull_back``; ``j``: the point's index on its
    strand, ``c0``: the first collider, as ``_depth`` takes it). Whether a chain was pulled
    back (the points before ``i`` moved)."""
    pulled = False
    for k in range(len(cols)):
        if not sweeps[k]:
            continue
        col = cols[k]
        hit, ex, ey, ez, nx, ny, nz, lim = _crossed(p, i, w, last, maps[k], col, rest, 0.0)
        if hit:
            crossed[s] += 1
            ex, ey, ez = ex + nx * lim, ey + ny * lim, ez + nz * lim
            bx, by, bz = np.float64(p[0, i]), np.float64(p[1, i]), np.float64(p[2, i])
            beyond, hx, hy, hz = held(bx, by, bz, ex, ey, ez, nx, ny, nz, friction)
            seg2 = (bx - lx) ** 2 + (by - ly) ** 2 + (bz - lz) ** 2
            seg = math.sqrt(seg2)
            if beyond and j >= 2 and (ex - lx) * nx + (ey - ly) * ny + (ez - lz) * nz > seg and (
                    _pull_back(p, i, j, w, hx, hy, hz, seg, last, maps[k], col, c0, cols, rest, around)
                    or _pull_back(p, i, j, w, ex, ey, ez, seg, last, maps[k], col, c0, cols, rest, around)):
                # its leader lies farther behind the plane than its segment reaches: the chain
                # pulled back to where the point is held, or else to where it met the surface
                pulled = True
            elif beyond:
                # where it is held, at its segment's length from its leader: then on the circle
                # where that sphere meets the plane, nearest it
                hx, hy, hz = hx - lx, hy - ly, hz - lz
                f = math.sqrt(seg2 / max(hx * hx + hy * hy + hz * hz, 1e-300))
                sx, sy, sz = _onto_circle(lx, ly, lz, lx + hx * f, ly + hy * f, lz + hz * f,
                                          ex, ey, ez, nx, ny, nz)
                p[0, i], p[1, i], p[2, i] = np.float32(sx), np.float32(sy), np.float32(sz)
        if _cuts(p, i, i - 1, w, col):
            hx, hy, hz = np.float64(p[0, i]), np.float64(p[1, i]), np.float64(p[2, i])
            seg = math.sqrt((hx - lx) ** 2 + (hy - ly) ** 2 + (hz - lz) ** 2)
            if _wrap(p, i, i - 1, w, col, around, WRAP_HALVINGS, hx, hy, hz) == 2 and j >= 2 and _pull_back(
                    p, i, j, w, hx, hy, hz, seg, last, maps[k], col, c0, cols, rest, around):
                pulled = True
            crossed[s] += 1
    return pulled


@njit(cache=True)
def _clear(lx, ly, lz, bx, by, bz, d0, d1, d2, length, w, col, side):
    """Whether the way ``d`` from the leader ``l`` (``length`` long) does not cut through the
    collider and — with ``side`` — does not put the point across it from ``b``, where it was
    held (``_cross_way``)."""
    cx, cy, cz = lx + d0 * length, ly + d1 * length, lz + d2 * length
    if _cross_way(lx, ly, lz, cx, cy, cz, w, col, True, 0.0)[0]:
        return False
    return not (side and _cross_way(bx, by, bz, cx, cy, cz, w, col, False, 0.0)[0])


@njit(cache=True)
def _wrap(p, i, a, w, col, around, halvings, ox, oy, oz):
    """A segment that cuts through a moving collider (``_cuts``) swung about its point ``a`` —
    its leader, or its follower on a pull back (``_pull_back``) — at its length, to the nearest
    way that does not cut it and keeps point ``i`` on the side of the collider ``o`` is on (where
    it was held: ``_clear``): of
    the directions ``around`` (A, 3) spread over the sphere in a frame of the segment's own
    (``_swing_out``'s), the first that does not cut it — they run from along the segment to
    against it — then where the arc from the segment to that one stops cutting it
    (``halvings`` halvings of the arc). The strand wraps the collider's edge, over it or under
    it, whichever is nearer, instead of cutting its corner. Where no way keeps the point on its
    side — its leader has gone round the edge and lies too far beyond it for the segment to
    reach back (a strand slipping off the edge of a plate that drags it) — the nearest way that
    does not cut it, round the edge after its leader. Where every direction cuts it (the leader
    in a pocket), the point stays. 0 where it stays, 1 where it was swung on its side, 2 where
    it was swung across (what ``_pull_back`` is for)."""
    lx, ly, lz = np.float64(p[0, a]), np.float64(p[1, a]), np.float64(p[2, a])
    sx, sy, sz = np.float64(p[0, i]) - lx, np.float64(p[1, i]) - ly, np.float64(p[2, i]) - lz
    length = math.sqrt(sx * sx + sy * sy + sz * sz)
    if length == 0.0:
        return 0
    lo = np.empty(3)
    lo[0], lo[1], lo[2] = sx / length, sy / length, sz / length
    hi = np.empty(3)
    b0, b1, b2, e0, e1, e2 = _frame(lo[0], lo[1], lo[2], lo[0], lo[1], lo[2])
    found = False
    side = True
    for _ in range(2):
        for k in range(around.shape[0]):
            u, v, t = around[k, 0], around[k, 1], around[k, 2]
            d0 = u * lo[0] + v * b0 + t * e0
            d1 = u * lo[1] + v * b1 + t * e1
            d2 = u * lo[2] + v * b2 + t * e2
            if _clear(lx, ly, lz, ox, oy, oz, d0, d1, d2, length, w, col, side):
                hi[0], hi[1], hi[2] = d0, d1, d2
                found = True
                break
        if found:
            break
        side = False
    if not found:
        return 0
    cut, clear = 0.0, 1.0            # fractions of the arc from the segment to that way
    for _ in range(halvings):
        t = 0.5 * (cut + clear)
        a0, a1, a2 = _arc(lo, hi, t, hi)
        if _clear(lx, ly, lz, ox, oy, oz, a0, a1, a2, length, w, col, side):
            clear = t
        else:
            cut = t
    a0, a1, a2 = _arc(lo, hi, clear, hi)
    p[0, i] = np.float32(lx + a0 * length)
    p[1, i] = np.float32(ly + a1 * length)
    p[2, i] = np.float32(lz + a2 * length)
    return 1 if side else 2


# A pull back's rounds (forward and backward reaching, each a pass of the chain both ways), and
# how near the held place its point must end, in its segment's length: round a collider's edge
# the chain creeps towards it (a few millimetres off after a dozen rounds on the thin plate),
# and where it ends matters less than that it ends on the held side, outside, cutting nothing.
PULL_ROUNDS = 12
PULL_REACH = 0.1


@njit(cache=True)
def _follow(x, k, a, length, w, col, around):
    """Point ``k`` of rows ``x`` (the wig's point ``w``) set ``length`` from point ``a`` (the
    chain's neighbour it follows) towards where it is, then — where that segment cuts through the
    moving collider — swung round it (``_wrap``), and where that leaves it inside the collider,
    pushed out and set back on the segment's length on the contact's tangent plane (as a walk's
    round): one step of a pull back."""
    dx = np.float64(x[0, k]) - np.float64(x[0, a])
    dy = np.float64(x[1, k]) - np.float64(x[1, a])
    dz = np.float64(x[2, k]) - np.float64(x[2, a])
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    if d > 0.0:
        f = length / d
        x[0, k] = np.float32(np.float64(x[0, a]) + dx * f)
        x[1, k] = np.float32(np.float64(x[1, a]) + dy * f)
        x[2, k] = np.float32(np.float64(x[2, a]) + dz * f)
    if _cuts(x, k, a, w, col):
        _wrap(x, k, a, w, col, around, WRAP_HALVINGS, np.float64(x[0, k]), np.float64(x[1, k]), np.float64(x[2, k]))
    bx, by, bz = np.float64(x[0, k]), np.float64(x[1, k]), np.float64(x[2, k])
    hit, qx, qy, qz, nx, ny, nz = _project_to(bx, by, bz, np.float64(col[7][w]), col)
    if hit:
        sx, sy, sz = _onto_circle(np.float64(x[0, a]), np.float64(x[1, a]), np.float64(x[2, a]), bx, by, bz,
                                  qx, qy, qz, nx, ny, nz)
        x[0, k], x[1, k], x[2, k] = np.float32(sx), np.float32(sy), np.float32(sz)


@njit(cache=True)
def _pull_back(p, i, j, w, hx, hy, hz, seg, last, m, col, c0, cols, rest, around):
    """A strand a moving collider holds, whose leader has run too far round the collider's edge
    for its segment to reach back — farther behind the plane its point is held on than the
    segment is long, or so far that ``_wrap`` found no way on the held side (a Springs strand's
    point falls back to hanging behind a plate that drags the points below it) — the chain pulled
    back instead of the point pulled through: points ``0 … j`` of the strand (rows ``i − j …
    i``; the wig's point ``w`` is its point ``j``, its segment ``seg`` long) reaching from the
    root to ``h``, where point ``j`` is held, each segment keeping its length, by forward and
    backward reaching
    (FABRIK: Aristidou and Lasenby 2011) — set back from ``h`` to the root, then from the root
    to ``h``, each segment swung round the collider where it would cut it (``_follow``) —
    ``PULL_ROUNDS`` rounds at most. Taken where the chain reaches ``h`` (to ``PULL_REACH`` of
    the last segment), no point ends inside a collider or went through this one since the last
    frame (``_crossed``: ``last``, ``m``; a point whose straight way there clips an edge of it —
    meets one face, leaves by the next within its segment's ``PULL_REACH`` — went round that
    edge with its chain, not through), and the point is on ``h``'s side; else the strand is
    left as it was (its point slips after its leader). A strand that slides over an edge does so
    point by point, none through the collider. Whether it was taken."""
    r0 = i - j
    x = np.empty((3, j + 1), np.float32)
    for k in range(j + 1):
        x[0, k], x[1, k], x[2, k] = p[0, r0 + k], p[1, r0 + k], p[2, r0 + k]
    hx32, hy32, hz32 = np.float32(hx), np.float32(hy), np.float32(hz)
    lng = np.empty(j + 1)
    lng[0], lng[j] = 0.0, seg
    for k in range(1, j):
        dx = np.float64(x[0, k]) - np.float64(x[0, k - 1])
        dy = np.float64(x[1, k]) - np.float64(x[1, k - 1])
        dz = np.float64(x[2, k]) - np.float64(x[2, k - 1])
        lng[k] = math.sqrt(dx * dx + dy * dy + dz * dz)
    reach = PULL_REACH * lng[j]
    reached = False
    for _ in range(PULL_ROUNDS):
        x[0, j], x[1, j], x[2, j] = hx32, hy32, hz32
        for k in range(j - 1, -1, -1):
            _follow(x, k, k + 1, lng[k + 1], w - (j - k), col, around)
        x[0, 0], x[1, 0], x[2, 0] = p[0, r0], p[1, r0], p[2, r0]
        for k in range(1, j + 1):
            _follow(x, k, k - 1, lng[k], w - (j - k), col, around)
        ex = np.float64(x[0, j]) - hx
        ey = np.float64(x[1, j]) - hy
        ez = np.float64(x[2, j]) - hz
        if ex * ex + ey * ey + ez * ez <= reach * reach:
            reached = True
            break
    if not reached:
        return False
    for k in range(1, j + 1):
        if _depth(np.float64(x[0, k]), np.float64(x[1, k]), np.float64(x[2, k]), w - (j - k), c0, cols, rest) > 0.0:
            return False
        if _crossed(x, k, w - (j - k), last, m, col, rest, PULL_REACH * lng[k])[0]:
            return False
    if _cross_way(hx, hy, hz, np.float64(x[0, j]), np.float64(x[1, j]), np.float64(x[2, j]), w, col, False, 0.0)[0]:
        return False
    for k in range(1, j + 1):
        p[0, r0 + k], p[1, r0 + k], p[2, r0 + k] = x[0, k], x[1, k], x[2, k]
    return True


@njit(cache=True, parallel=True)
def cross_paths(p, start, last, maps, sweeps, not_root, threads_cols, rest, friction, moved):
    """Continuous contact (SPEC §6.3) before a walk that does not do it itself: each point of
    rows ``p`` (3, C) float32, head-local — the wig's points ``start …`` — against every
    collider that moved relative to the head since the last frame (``sweeps`` (K,) bool) in turn,
    along its path in the collider's own space from where it ended the last frame (``last``
    (3, P) float32, head-local then; ``maps`` (K, 4, 4) float64 each collider's head-local →
    field map then) to where it is now (``_crossed``). A point whose path crossed
    a collider is held on the plane its limit off the surface where it met it (``response.held``, with
    Coulomb ``friction``): it stays on the side it came from. ``moved`` (C,) int64: written, 1 where a point slid.
    Roots (``not_root`` False) stay. Each point is its own iteration: the same bits on any
    thread count."""
    count = p.shape[1]
    for chunk in prange((count + CHUNK - 1) // CHUNK):
        lo, hi = chunk * CHUNK, min((chunk + 1) * CHUNK, count)
        mine = threads_cols[get_thread_id()]
        for i in range(lo, hi):
            moved[i] = 0
        for k in range(len(mine)):
            if not sweeps[k]:
                continue
            col = mine[k]            # once a chunk: a bound tuple counts its arrays' references
            m = maps[k]
            for i in range(lo, hi):
                w = start + i
                if not not_root[w]:
                    continue
                hit, ex, ey, ez, nx, ny, nz, lim = _crossed(p, i, w, last, m, col, rest, 0.0)
                if hit:              # onto the plane its limit off where it met the surface
                    beyond, hx, hy, hz = held(np.float64(p[0, i]), np.float64(p[1, i]), np.float64(p[2, i]),
                                               ex + nx * lim, ey + ny * lim, ez + nz * lim, nx, ny, nz, friction)
                    if beyond:
                        p[0, i], p[1, i], p[2, i] = np.float32(hx), np.float32(hy), np.float32(hz)
                    moved[i] = 1
