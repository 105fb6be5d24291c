"""The Wisps layer's contacts with the head and body (seed 001 §4.3) as kernels: the sliding
contact (§4.3.1) and the penetration reaction (§4.3.2) of every skeleton and envelope point, each
substep, in two launches. ``hair_wig.wisps.WispLayer._slide`` and ``_penetration`` say what they
do and why, and are the plain numpy reference these are tested against
(tests/test_kernels_wisp_body.py); the numpy form also serves colliders the kernels cannot read
(the patent's ray head).

The distance and the outward direction are the colliders' fast ones, read as every collision
kernel reads them (``kernels.contacts._direction``: the grid's trilinear value and gradient), and
the response is the one every client shares (``kernels.response.met``). The head's maps at the
substep (world → head-local, and back for the normal) are applied here by float64 products and
sums in the reference's order, so the two give the same bits for colliders that ride the head
(the head itself, a body parented to it); through a collider's own map (one moving relative to
the head) numpy multiplies matrices, and they agree to that map's rounding.

Wisps are met a chunk at a time on parallel threads (``prange``), collider after collider, each
wisp's points and velocities written only by its own chunk: the same bits on any number of
threads.

Points of wisp ``w`` at cross-section ``i`` are numbered as the reference lays them out: the
skeleton's ``w N + i`` first, then the envelope's ``W N + 4 (w N + i) + a`` along the half-lines
``+e₁, +e₂, −e₁, −e₂`` (``a`` = 0 … 3); ``lims`` (C, 5 W N) float64 holds each collider's limit
for every one of them (``collision.groom_limits``).
"""

import numpy as np
from numba import get_thread_id, njit, prange

from .contacts import _direction
from .response import met
from .wisps import _frames_of, carry

CHUNK = 16              # wisps a parallel iteration meets one after another (a collider read once a chunk)
SAMPLES = (0.5, 0.25, 0.75)   # where a skeleton's segment is met (``collision.contacts.SurfaceContacts.SAMPLES``)
GRAZE = 0.25            # a segment is pushed where it lies within 30° of the surface (cos² with its normal up to this)
TURNED_AWAY = -0.3      # an envelope half-line whose cosine with the outward normal is above this runs
                        # along the surface: moving its point in along it does not help


@njit(cache=True, inline="always")
def _affine(m, x, y, z):
    """The affine map ``m`` (4, 4) of a point, by products and sums in ``A @ p + t``'s order."""
    return (m[0, 0] * x + m[0, 1] * y + m[0, 2] * z + m[0, 3],
            m[1, 0] * x + m[1, 1] * y + m[1, 2] * z + m[1, 3],
            m[2, 0] * x + m[2, 1] * y + m[2, 2] * z + m[2, 3])


@njit(cache=True, inline="always")
def _normal(m, gx, gy, gz):
    """A head-local direction taken into the world by ``m``'s linear part, made unit."""
    nx = m[0, 0] * gx + m[0, 1] * gy + m[0, 2] * gz
    ny = m[1, 0] * gx + m[1, 1] * gy + m[1, 2] * gz
    nz = m[2, 0] * gx + m[2, 1] * gy + m[2, 2] * gz
    r = max(np.sqrt(nx * nx + ny * ny + nz * nz), 1e-300)
    return nx / r, ny / r, nz / r


@njit(cache=True, inline="always")
def _half_line(frames, w, i, a):
    """The unit half-line ``a`` (``+e₁, +e₂, −e₁, −e₂``) of cross-section ``i`` of wisp ``w``."""
    f = a % 2
    if a < 2:
        return frames[w, i, f, 0], frames[w, i, f, 1], frames[w, i, f, 2]
    return -frames[w, i, f, 0], -frames[w, i, f, 1], -frames[w, i, f, 2]


@njit(cache=True, parallel=True)
def wisp_slide(x, v, r, rd, frames, inv_mass, cols, fmaps, sweeping, lims, to_local, back, moving, h, margin, friction,
               touched):
    """The sliding contact (seed 001 §4.3.1) of skeletons ``x`` (W, N, 3) world with velocities
    ``v``, envelope radii ``r`` (W, N, 4) and their speeds ``rd``, cross-section frames
    ``frames`` (W, N, 2, 3): every free skeleton point and every envelope point within
    ``margin`` of its collision surface (``lims``) loses the part of its velocity relative to
    the surface's going in, and its slide is slowed by ``friction`` times that part
    (``response.met``), collider after collider; a skeleton point takes it on ``v``, an envelope
    point on its radius's speed along its half-line.

    ``cols``: the colliders' kernel views, a typed List a thread (``collision.kernel_colliders``), and
    ``fmaps`` (C, 2, 4, 4) each one's head-local -> field map and back where it ends the frame,
    read where it is ``sweeping`` (C,) (``kernels.contacts.surface_contacts``' ``fmaps``,
    ``moving``; ``WispLayer._maps_at``: the wisps meet a collider moving relative to the head
    where it ends the frame, by its grid, never SWEPT); ``to_local`` (4, 4)
    world → head-local at the substep's start, ``back`` its inverse, ``moving`` (4, 4) how far
    the head's local → world map moves over the substep (``h`` seconds): the surface's velocity
    at a head-local point ``q`` is ``moving q / h``. ``touched`` (chunks,) int64: the contacts
    met, added per chunk."""
    num_w, n = x.shape[0], x.shape[1]
    num = num_w * n
    for c in prange((num_w + CHUNK - 1) // CHUNK):
        lo = c * CHUNK
        hi = min(num_w, lo + CHUNK)
        change = np.zeros((hi - lo, n, 5, 3))
        met_here = 0
        mine = cols[get_thread_id()]
        for k in range(len(mine)):
            col = mine[k]
            fm, sw = fmaps[k], sweeping[k]
            for w in range(lo, hi):
                for i in range(n):
                    for e in range(5):
                        if e == 0:
                            if not inv_mass[w, i] > 0.0:
                                continue
                            px, py, pz = x[w, i, 0], x[w, i, 1], x[w, i, 2]
                            vx, vy, vz = v[w, i, 0], v[w, i, 1], v[w, i, 2]
                            at = w * n + i
                        else:
                            ax, ay, az = _half_line(frames, w, i, e - 1)
                            s, sd = r[w, i, e - 1], rd[w, i, e - 1]
                            px, py, pz = x[w, i, 0] + s * ax, x[w, i, 1] + s * ay, x[w, i, 2] + s * az
                            vx, vy, vz = v[w, i, 0] + sd * ax, v[w, i, 1] + sd * ay, v[w, i, 2] + sd * az
                            at = num + 4 * (w * n + i) + e - 1
                        qx, qy, qz = _affine(to_local, px, py, pz)
                        d, gx, gy, gz = _direction(col, fm, sw, False, qx, qy, qz)
                        if not d < lims[k, at] + margin:
                            continue
                        nx, ny, nz = _normal(back, gx, gy, gz)
                        ux, uy, uz = _affine(moving, qx, qy, qz)
                        dc = change[w - lo, i, e]
                        rx = vx + dc[0] - ux / h
                        ry = vy + dc[1] - uy / h
                        rz = vz + dc[2] - uz / h
                        ox, oy, oz = met(rx, ry, rz, nx, ny, nz, friction)
                        dc[0] += ox - rx
                        dc[1] += oy - ry
                        dc[2] += oz - rz
                        met_here += 1
        for w in range(lo, hi):
            for i in range(n):
                dc = change[w - lo, i, 0]
                v[w, i, 0] += dc[0]
                v[w, i, 1] += dc[1]
                v[w, i, 2] += dc[2]
                for a in range(4):
                    ax, ay, az = _half_line(frames, w, i, a)
                    dc = change[w - lo, i, a + 1]
                    rd[w, i, a] += dc[0] * ax + dc[1] * ay + dc[2] * az
        touched[c] += met_here


@njit(cache=True, parallel=True)
def wisp_penetrate(x, v, r, rd, inv_mass, anchor, e1_root, floor, cols, fmaps, sweeping, lims, lims_s, to_local, back,
                   scale, passes, frames, tangent, push, touched):
    """The penetration reaction (seed 001 §4.3.2) of skeletons ``x`` (W, N, 3) world: a free
    skeleton point inside its collision surface is pushed out by its depth along the outward
    normal, summed over the colliders; a segment neither of whose ends is pushed, met at the
    deepest of its middle and quarter points (SAMPLES) inside its collision surface (``lims_s``
    (C, W (N − 1))), pushes its far end so that point moves out by its depth (a share ``t /
    max(t², ¼)`` of it: the near end is held, as the carry holds it; twice the depth at most) —
    where it dips into the surface (within 30° of it, GRAZE), so a wisp's chord does not cut into
    the head between its points; a segment passing through a part thinner than it (an ear's rim
    met edge-on) is left to its points, as pushing its end round the part swung the whole wisp
    (pops of 0.6 m on Suzanne's fast turn); every pushed
    point is set at its segment's length from the point before it, the rest of the wisp carried
    along (``wisps.carry``) — up to ``passes`` times, while any of the wisp's points is inside or
    pushed; then, on the cross-sections the wisp has now (its frames into
    ``frames``, ``tangent``: scratch (W, N, 2, 3), (W, N, 3)), each envelope point inside moves
    in along its half-line — its radius shortened, to no less than ``floor`` (W, N, 4), its
    speed outward taken off — where the half-line points into the surface (cosine with the
    outward normal below TURNED_AWAY), collider after collider, all measured at the radii it had.

    ``cols``, ``fmaps``, ``sweeping``: ``wisp_slide``'s. ``scale``: the world
    length of a head-local unit (depths are head-local); ``anchor``,
    ``e1_root`` (W, 3): the wisps' root tangents and first axes (``wisps._frames_of``); ``push``
    (W, N, 3): scratch. ``touched`` (chunks,) int64: the points pushed, added per chunk."""
    num_w, n = x.shape[0], x.shape[1]
    num = num_w * n
    for c in prange((num_w + CHUNK - 1) // CHUNK):
        lo = c * CHUNK
        hi = min(num_w, lo + CHUNK)
        met_here = 0
        mine = cols[get_thread_id()]
        hit = np.empty((hi - lo, n), np.bool_)
        for _ in range(passes):
            push[lo:hi] = 0.0
            for k in range(len(mine)):
                col = mine[k]
                fm, sw = fmaps[k], sweeping[k]
                for w in range(lo, hi):
                    for i in range(n):
                        if not inv_mass[w, i] > 0.0:
                            continue
                        qx, qy, qz = _affine(to_local, x[w, i, 0], x[w, i, 1], x[w, i, 2])
                        d, gx, gy, gz = _direction(col, fm, sw, False, qx, qy, qz)
                        limit = lims[k, w * n + i]
                        if d < limit:
                            nx, ny, nz = _normal(back, gx, gy, gz)
                            depth = (limit - d) * scale
                            push[w, i, 0] += depth * nx
                            push[w, i, 1] += depth * ny
                            push[w, i, 2] += depth * nz
            for k in range(len(mine)):
                col = mine[k]
                fm, sw = fmaps[k], sweeping[k]
                for w in range(lo, hi):         # what each collider's segments find pushed already
                    for i in range(n):
                        hit[w - lo, i] = _pushed(push, w, i)
                for w in range(lo, hi):
                    for i in range(1, n):
                        if not inv_mass[w, i] > 0.0 or hit[w - lo, i - 1] or hit[w - lo, i]:
                            continue
                        ax, ay, az = x[w, i - 1, 0], x[w, i - 1, 1], x[w, i - 1, 2]
                        bx, by, bz = x[w, i, 0] - ax, x[w, i, 1] - ay, x[w, i, 2] - az
                        t, deepest, gx, gy, gz = 0.0, np.inf, 0.0, 0.0, 0.0
                        for t0 in SAMPLES:
                            qx, qy, qz = _affine(to_local, ax + t0 * bx, ay + t0 * by, az + t0 * bz)
                            d, ux, uy, uz = _direction(col, fm, sw, False, qx, qy, qz)
                            if d < deepest:
                                t, deepest, gx, gy, gz = t0, d, ux, uy, uz
                        limit = lims_s[k, w * (n - 1) + i - 1]
                        if deepest < limit:
                            nx, ny, nz = _normal(back, gx, gy, gz)
                            along = bx * nx + by * ny + bz * nz
                            if not along * along <= GRAZE * (bx * bx + by * by + bz * bz):
                                continue            # through a thin part, not dipping into a surface
                            depth = (limit - deepest) * scale * (t / max(t * t, 0.25))
                            push[w, i, 0] += depth * nx
                            push[w, i, 1] += depth * ny
                            push[w, i, 2] += depth * nz
            pushed = 0
            for w in range(lo, hi):
                for i in range(n):
                    if push[w, i, 0] != 0.0 or push[w, i, 1] != 0.0 or push[w, i, 2] != 0.0:
                        pushed += 1
            if pushed == 0:
                break
            met_here += pushed
            for w in range(lo, hi):
                carry(x, v, push, w)
        for w in range(lo, hi):
            _frames_of(x, w, anchor, e1_root, frames, tangent)
        # every envelope point measured at the radii it has before any collider moves it in
        inside = np.zeros((hi - lo, n, 4, 3))
        for w in range(lo, hi):
            for i in range(n):
                for a in range(4):
                    ax, ay, az = _half_line(frames, w, i, a)
                    s = r[w, i, a]
                    inside[w - lo, i, a, 0], inside[w - lo, i, a, 1], inside[w - lo, i, a, 2] = _affine(
                        to_local, x[w, i, 0] + s * ax, x[w, i, 1] + s * ay, x[w, i, 2] + s * az)
        for k in range(len(mine)):
            col = mine[k]
            fm, sw = fmaps[k], sweeping[k]
            for w in range(lo, hi):
                for i in range(n):
                    for a in range(4):
                        q = inside[w - lo, i, a]
                        d, gx, gy, gz = _direction(col, fm, sw, False, q[0], q[1], q[2])
                        limit = lims[k, num + 4 * (w * n + i) + a]
                        if not d < limit:
                            continue
                        nx, ny, nz = _normal(back, gx, gy, gz)
                        ax, ay, az = _half_line(frames, w, i, a)
                        cos = ax * nx + ay * ny + az * nz
                        if not cos < TURNED_AWAY:
                            continue
                        r[w, i, a] = max(r[w, i, a] - (limit - d) * scale / -cos, floor[w, i, a])
                        rd[w, i, a] = min(rd[w, i, a], 0.0)
                        met_here += 1
        touched[c] += met_here


@njit(cache=True, inline="always")
def _pushed(push, w, i):
    return push[w, i, 0] != 0.0 or push[w, i, 1] != 0.0 or push[w, i, 2] != 0.0


def chunks(num_wisps: int) -> int:
    """How many parallel iterations (and ``touched`` entries) the kernels take for ``num_wisps``."""
    return (num_wisps + CHUNK - 1) // CHUNK
