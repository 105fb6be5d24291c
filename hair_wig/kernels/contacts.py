"""The colliders' contacts inside a dynamics layer's substeps (SPEC §6, §8; ``hair_wig.strands.
SurfaceContacts`` says what they do and why) as one kernel: every strand met on its own thread,
collider after collider — its free points pushed out along the fast distance's gradient to their
collision surfaces, then each segment met at the deepest of its middle and quarter points and its
push split to its ends — passing over the points and segments that cannot have reached their
surface since their last look within the frame (LIPSCHITZ × travel < room), but for a collider
that moved relative to the head since the frame before (SWEPT): it is carried through the
substeps from where it was (its maps at each substep, ``Collider.maps_at``), so a point it was
not near at its last look may meet it without moving, and every one is looked at — exactly where
its grid cannot see it (``kernels.field.in_doubt``: a plate thinner than a cell).

A strand is written only by its own iteration (a chunk of strands, met side by side) — its
points, its push and its own records of the last look — so the result is the same bits on any
number of threads. Each operation is the numpy code's (``SurfaceContacts._call_numpy``), in its
order and types: float64 head-local points, the grid's trilinear float32 value at float32
field-space points (``Collider.fast_distance``), the gradient from the float64 lookup
(``kernels.field._lookup64``). For a collider that does not move with the head (MAPPED,
SWEPT) the maps into its field (entries rounded to float32) and back are float64 products and
sums in the numpy code's order (``Collider._mapped_rows``). Called by ``SurfaceContacts.__call__``, the head's own maps — the points into
head-local space at the substep, the push back into the world — stay with the caller, in numpy,
for the same reason: colliders moving with the head (the head itself) give the numpy code's
bits. The Strands substeps' kernel (``kernels.verlet.verlet_substeps_met``) calls its passes
itself and applies the head's maps by float64 products and sums: the same to a rounding.

The colliders are the walk's (``collision.Collider.kernel_view``, ``kernels.walk``'s docstring
lists its parts), of which the contacts read the grid's tuples (``kernels.field``) and how far
inside a push may leave a point; each collider's maps at the substep and how it moves come
beside them (``fmaps``, ``moving``: ``collision.contacts.contact_maps``).
"""

from __future__ import annotations

import numpy as np
from numba import get_thread_id, njit, prange

from .field import _list_cell, _lookup64, _trilinear32, in_doubt, launch
# the parts of a collider's tuple (``kernels.walk``'s) the contacts read
from .walk import _ERRORS, _GRID32, _GRID64, _TOLERANCE, _TRIS


# Strands a parallel iteration meets one after another: a typed List's item costs ~0.5 µs a read
# (``kernels.walk``), so each collider is read once a chunk.
CHUNK = 32
# Below this many points the kernel runs on the calling thread alone (``field.launch``): waking
# the other threads costs ~0.2 ms on 2 cores, ~0.1 µs a point is what a look costs.
SERIAL = 1 << 12
SAMPLES = (0.5, 0.25, 0.75)          # where a segment is met (``SurfaceContacts.SAMPLES``): the middle first
# How a collider moves relative to the head (``SurfaceContacts._maps_at``): not (its field is head-local),
# MAPPED (through a map, the same all frame), SWEPT (carried through the substeps from where it was:
# a point it was not near at its last look it may have reached without moving, so every one is
# looked at)
MAPPED, SWEPT = 1, 2


# ---------------------------------------------------------------- the fast distance
@njit(cache=True, inline="always")
def _f32(v):
    """A map's entry rounded to float32, as ``Collider._field_rows`` rounds it."""
    return np.float64(np.float32(v))


@njit(cache=True, inline="always")
def _in_field(fm, moving, x, y, z):
    """A head-local float64 point in the collider's field space (float64) through its map at the
    substep, ``fm[0]`` (``Collider.maps_at``; the identity where it does not ``moving``), the
    map's entries rounded to float32 (``Collider._mapped_rows``)."""
    if not moving:
        return x, y, z
    m = fm[0]
    return (_f32(m[0, 0]) * x + _f32(m[0, 1]) * y + _f32(m[0, 2]) * z + _f32(m[0, 3]),
            _f32(m[1, 0]) * x + _f32(m[1, 1]) * y + _f32(m[1, 2]) * z + _f32(m[1, 3]),
            _f32(m[2, 0]) * x + _f32(m[2, 1]) * y + _f32(m[2, 2]) * z + _f32(m[2, 3]))


@njit(cache=True, inline="always")
def _distance(col, fm, moving, swept, x, y, z):
    """``Collider.fast_distance`` at a head-local point, the collider where ``fm`` maps
    (``_in_field``): the grid's trilinear value (float32 at the float32 point, +inf beyond the
    grid) as float64 — with ``swept`` (a constant: ``meet_collider``), exact where the grid is in
    doubt (``field.in_doubt``)."""
    fx, fy, fz = _in_field(fm, moving, x, y, z)
    d = np.float64(_trilinear32(np.float32(fx), np.float32(fy), np.float32(fz), col[_GRID32])[0])
    if swept:
        d = _doubtful(fx, fy, fz, d, col[_GRID64], col[_ERRORS], col[_TRIS])[1]
    return d


@njit(cache=True)
def _doubtful(fx, fy, fz, d, grid64, errors, tris):
    """``field.in_doubt`` at a field-space point whose grid distance is ``d`` (its list cell
    found here). A plain call, made only by the loops compiled for a swept collider."""
    cell = _list_cell(fx, fy, fz, grid64[1], errors)
    return in_doubt(fx, fy, fz, d, cell, grid64, errors, tris)


@njit(cache=True, inline="always")
def _direction(col, fm, moving, swept, x, y, z):
    """``Collider.fast_distance(direction=True)`` at a head-local point, the collider where
    ``fm`` maps (its field space's directions back by ``fm[1]``): the trilinear distance by the
    float64 lookup (float64) and the outward unit direction (head-local; zero where the gradient
    vanishes) — with ``swept``, exact where the grid is in doubt (``field.in_doubt``)."""
    fx, fy, fz = _in_field(fm, moving, x, y, z)
    grid64 = col[_GRID64]
    v, gx, gy, gz, _ = _lookup64(fx, fy, fz, grid64)
    d, g0, g1, g2 = np.float64(v), np.float64(gx), np.float64(gy), np.float64(gz)
    if swept:
        exact, sd, ox, oy, oz = _doubtful(fx, fy, fz, d, grid64, col[_ERRORS], col[_TRIS])
        if exact:
            d, g0, g1, g2 = sd, ox, oy, oz
    if moving:
        m = fm[1]
        g0, g1, g2 = (m[0, 0] * g0 + m[0, 1] * g1 + m[0, 2] * g2,
                      m[1, 0] * g0 + m[1, 1] * g1 + m[1, 2] * g2,
                      m[2, 0] * g0 + m[2, 1] * g1 + m[2, 2] * g2)
    norm = np.sqrt(g0 * g0 + g1 * g1 + g2 * g2)
    inv = 1.0 / norm if norm > 1e-12 else 0.0
    return d, g0 * inv, g1 * inv, g2 * inv


# ---------------------------------------------------------------- a chunk of strands against one collider
# The passes go along the strands point by point, the chunk's strands side by side: arrays are
# point-major, so the strands' points ``j`` lie next to one another (strand by strand, each
# point's rows lay a whole group apart: measured, 5000 x 16 on 1 thread, 4.2 ms a call against
# ~1 ms).
@njit(cache=True)
def _points(q, lo, hi, fixed, k, col, fm, moving, swept, lim_p, fresh, every, lipschitz, ref_p, room_p, touched,
            looked):
    """The free points of strands ``lo … hi − 1`` of ``q`` (3, n, S) pushed out of collider
    ``k`` (``SurfaceContacts._call_numpy``'s points pass), each strand's pushes and looks
    counted into ``touched`` and ``looked``."""
    n, count = q.shape[1], q.shape[2]
    tol = col[_TOLERANCE]
    for j in range(fixed, n):
        for s in range(lo, hi):
            i = (j - fixed) * count + s
            x, y, z = q[0, j, s], q[1, j, s], q[2, j, s]
            if not (fresh or every or swept):
                dx, dy, dz = x - ref_p[k, 0, i], y - ref_p[k, 1, i], z - ref_p[k, 2, i]
                if not (lipschitz * np.sqrt(dx * dx + dy * dy + dz * dz) >= room_p[k, i]):
                    continue
            looked[s] += 1
            lim = lim_p[k, i]
            room = _distance(col, fm, moving, swept, x, y, z) - lim
            ref_p[k, 0, i], ref_p[k, 1, i], ref_p[k, 2, i] = x, y, z
            room_p[k, i] = room
            if room < -tol:
                d, g0, g1, g2 = _direction(col, fm, moving, swept, x, y, z)
                q[0, j, s] = x + g0 * (lim - d)
                q[1, j, s] = y + g1 * (lim - d)
                q[2, j, s] = z + g2 * (lim - d)
                touched[s] += 1


@njit(cache=True)
def _segments(q, lo, hi, k, col, fm, moving, swept, lim_s, w_a, w_b, fresh, every, lipschitz, ref_m, half_m, room_s, held,
              touched, looked):
    """The segments of strands ``lo … hi − 1`` of ``q`` (3, n, S) met by collider ``k`` at the
    deepest of their samples, each push split to its ends (``SurfaceContacts._call_numpy``'s
    segments pass). Every push is found on the positions before the pass; point ``j`` then moves
    by its own segment's end share, then by the one before's (numpy's ``q[:, :-1] += ends_a``,
    then ``q[:, 1:] += ends_b``): ``held`` (4, hi − lo) keeps each strand's last segment's push on
    its end b (and whether there is one) until then."""
    n, count = q.shape[1], q.shape[2]
    tol = col[_TOLERANCE]
    held[3, :] = 0.0
    for j in range(n - 1):
        for s in range(lo, hi):
            i = j * count + s
            ax, ay, az = q[0, j, s], q[1, j, s], q[2, j, s]
            bx, by, bz = q[0, j + 1, s], q[1, j + 1, s], q[2, j + 1, s]
            mx, my, mz = 0.5 * (ax + bx), 0.5 * (ay + by), 0.5 * (az + bz)
            abx, aby, abz = bx - ax, by - ay, bz - az
            half = 0.5 * np.sqrt(abx * abx + aby * aby + abz * abz)
            hit = False
            ex = ey = ez = nx = ny = nz = 0.0          # this segment's push on its ends a and b
            look = fresh or every or swept
            if not look:
                dx, dy, dz = mx - ref_m[k, 0, i], my - ref_m[k, 1, i], mz - ref_m[k, 2, i]
                reach = lipschitz * np.sqrt(dx * dx + dy * dy + dz * dz)
                reach += half - half_m[k, i]
                look = reach >= room_s[k, i]
            if look:
                looked[s] += 1
                lim = lim_s[k, i]
                d_mid = _distance(col, fm, moving, swept, mx, my, mz)
                room = d_mid - half - lim
                ref_m[k, 0, i], ref_m[k, 1, i], ref_m[k, 2, i] = mx, my, mz
                half_m[k, i] = half
                room_s[k, i] = room
                if room < 0:
                    # a middle farther than half the segment past its surface keeps the segment out
                    t, deepest = SAMPLES[0], d_mid
                    for t0 in SAMPLES[1:]:
                        d = _distance(col, fm, moving, swept, ax + t0 * abx, ay + t0 * aby, az + t0 * abz)
                        if d < deepest:
                            t, deepest = t0, d
                    if deepest < lim - tol:
                        d, g0, g1, g2 = _direction(col, fm, moving, swept, ax + t * abx, ay + t * aby, az + t * abz)
                        px, py, pz = g0 * (lim - d), g1 * (lim - d), g2 * (lim - d)
                        wa, wb = w_a[j], w_b[j]
                        denom = wa * ((1 - t) * (1 - t)) + wb * t * t
                        if not (denom != denom or denom >= 0.25):       # np.maximum: NaN stays
                            denom = 0.25
                        share_a, share_b = wa * (1 - t) / denom, wb * t / denom
                        ex, ey, ez = px * share_a, py * share_a, pz * share_a
                        nx, ny, nz = px * share_b, py * share_b, pz * share_b
                        hit = True
                        touched[s] += 1
            # point j is read by no later segment: its share of its own segment's push goes on
            # now, then its share of the one before's
            h = s - lo
            if hit:
                q[0, j, s] = ax + ex
                q[1, j, s] = ay + ey
                q[2, j, s] = az + ez
            if held[3, h] != 0.0:
                q[0, j, s] += held[0, h]
                q[1, j, s] += held[1, h]
                q[2, j, s] += held[2, h]
            held[0, h], held[1, h], held[2, h] = nx, ny, nz
            held[3, h] = 1.0 if hit else 0.0
    for s in range(lo, hi):
        h = s - lo
        if held[3, h] != 0.0:
            q[0, n - 1, s] += held[0, h]
            q[1, n - 1, s] += held[1, h]
            q[2, n - 1, s] += held[2, h]


@njit(cache=True)
def meet_collider(q, lo, hi, fixed, k, col, fm, moving, lim_p, lim_s, w_a, w_b, fresh, every, lipschitz, ref_p, room_p,
                  ref_m, half_m, room_s, held, touched, looked):
    """``_points`` then ``_segments`` of strands ``lo … hi − 1`` against collider ``k``, compiled
    apart for a collider SWEPT through the substeps (``swept`` a constant in each): there every
    point is looked at and exact where the grid is in doubt; elsewhere the loops hold no trace of
    that — the exact distance's call, never made, still slowed every look (the Strands' substeps
    at 5000 x 16 over Suzanne, the head alone: 41 -> 71 ms a frame)."""
    if moving == SWEPT:
        _points(q, lo, hi, fixed, k, col, fm, moving, True, lim_p, fresh, every, lipschitz, ref_p, room_p, touched,
                looked)
        _segments(q, lo, hi, k, col, fm, moving, True, lim_s, w_a, w_b, fresh, every, lipschitz, ref_m, half_m, room_s,
                  held, touched, looked)
    else:
        _points(q, lo, hi, fixed, k, col, fm, moving, False, lim_p, fresh, every, lipschitz, ref_p, room_p, touched,
                looked)
        _segments(q, lo, hi, k, col, fm, moving, False, lim_s, w_a, w_b, fresh, every, lipschitz, ref_m, half_m,
                  room_s, held, touched, looked)


# ---------------------------------------------------------------- the kernel
@njit(cache=True, parallel=True)
def surface_contacts(q, fixed, cols, fmaps, moving, lim_p, lim_s, w_a, w_b, fresh, every, lipschitz, ref_p, room_p,
                     ref_m, half_m, room_s, push, touched, looked):
    """Every collider of ``cols`` met by the points ``q`` (3, n, S) float64, head-local, in place
    (``SurfaceContacts.__call__``), and how far each point moved, into ``push`` (3, n, S).

    Parameters
    ----------
    fixed : int
        How many points from each root the constraints hold (not pushed; a segment's end among
        them takes none of its push).
    cols : a typed List of collider tuples a thread (``collision.kernel_colliders``)
    fmaps, moving : (C, 2, 4, 4) float64, (C,) int8
        Each collider's head-local -> field map and back at this substep (``Collider.maps_at``),
        read where it is ``moving`` (MAPPED or SWEPT; the identity elsewhere).
    lim_p : (C, (n − fixed) S) float64
        Each collider's collision surface of each free point (point-major: point ``j`` of strand
        ``s`` at ``(j − fixed) S + s``); ``lim_s`` (C, (n − 1) S): each segment's.
    w_a, w_b : (n − 1,) float64
        Each segment's ends' shares of its push (1 where the point is free, 0 where it is
        held).
    fresh, every : bool
        The frame's first look (every point and segment is looked at and recorded); look at
        every one anyway (the skipping off).
    lipschitz : float
        How much the fast distance changes at most per unit of travel.
    ref_p, room_p : (C, 3, (n − fixed) S), (C, (n − fixed) S) float64
        Where each free point was at its last look and its room then (its distance less its
        surface), read and written; ``ref_m``, ``half_m``, ``room_s`` (C, 3, (n − 1) S), (C,
        (n − 1) S) ×2: each segment's middle, half length and room at its last look.
    touched, looked : (S,) int64
        Written: each strand's points and segments pushed, and looked at.
    """
    n, count = q.shape[1], q.shape[2]
    for chunk in prange((count + CHUNK - 1) // CHUNK):
        lo, hi = chunk * CHUNK, min((chunk + 1) * CHUNK, count)
        held = np.empty((4, hi - lo))
        for s in range(lo, hi):
            touched[s] = 0
            looked[s] = 0
        for c in range(3):
            for j in range(n):
                for s in range(lo, hi):
                    push[c, j, s] = q[c, j, s]
        mine = cols[get_thread_id()]
        for k in range(len(mine)):
            col = mine[k]
            fm, mv = fmaps[k], moving[k]
            meet_collider(q, lo, hi, fixed, k, col, fm, mv, lim_p, lim_s, w_a, w_b, fresh, every, lipschitz, ref_p,
                          room_p, ref_m, half_m, room_s, held, touched, looked)
        for c in range(3):
            for j in range(n):
                for s in range(lo, hi):
                    push[c, j, s] = q[c, j, s] - push[c, j, s]


def meet(q, fixed, cols, fmaps, moving, lim_p, lim_s, w_a, w_b, fresh, every, lipschitz, seen, push, touched, looked):
    """``surface_contacts`` on one thread where ``q`` holds too few points to share (``field.
    launch``); ``seen``: its five records of the last looks."""
    launch(surface_contacts, q.shape[1] * q.shape[2], q, fixed, cols, fmaps, moving, lim_p, lim_s, w_a, w_b, fresh,
           every, lipschitz, *seen, push, touched, looked, serial=SERIAL)
