"""Kernels of the Wisps dynamics layer (seed 001, Plante, Cani, Poulin 2002; SPEC §7 "001";
``hair_wig/wisps.py``).

A wig's wisps all have ``N`` skeleton points (``K = N − 1`` segments); their arrays are wisp-major:
skeleton points ``(W, N, 3)``, cross-section frames ``(W, N, 2, 3)`` (``e₁, e₂``; the tangent is
the bisector of the two segments at a point), envelope radii ``(W, N, 4)`` along the half-lines
``+e₁, +e₂, −e₁, −e₂``. The strands riding the wisps are the wig's points, ``(P, 3)`` views of rows.

The kernels over strands (the skeletons' gather, the strands' placing) run ``prange``, each
iteration writing only its own: the same bits on any thread count. The wisps themselves are few
(a few thousand point masses): their kernels are serial loops in a fixed order — a parallel launch
costs more than their work. Their meetings are many (hundreds of thousands of segment pairs a
substep on a full head): found by a parallel broadphase and met colour by colour, each colour's
pairs touching no point another touches — the serial pass's bits on any thread count.
"""

import numpy as np
from numba import njit, prange

ENVELOPE_MASS = 0.01                     # an envelope point's mass, of its skeleton point's (seed 001 §3.3)
ENV_SHARE = ENVELOPE_MASS / (1 + 4 * ENVELOPE_MASS)   # of a cross-section's mass, one envelope point's
SIN_PLANE = np.sin(np.radians(25.0))     # seed 001 §7.1: within 25° of the common plane, wisps interpenetrate
PARALLEL = 0.1                           # |σ_p × σ_s| below this: the wisps are parallel (≈ 6°)


@njit(cache=True)
def _unit3(x, y, z):
    r = np.sqrt(x * x + y * y + z * z)
    if r < 1e-300:
        return 0.0, 0.0, 0.0, 0.0
    return x / r, y / r, z / r, r


@njit(cache=True)
def _turn(ux, uy, uz, wx, wy, wz, dx, dy, dz):
    """The least rotation taking unit ``u`` onto unit ``w``, applied to ``d`` (the strands'
    bend formula, no cross product): ``R d = d − (s·d)/(1 + u·w) s + 2 (u·d) w``, ``s = u + w``."""
    sx, sy, sz = ux + wx, uy + wy, uz + wz
    c = 1.0 + ux * wx + uy * wy + uz * wz
    if c < 1e-9:               # u opposite w: no least rotation; leave d (a folded skeleton)
        return dx, dy, dz
    k = (sx * dx + sy * dy + sz * dz) / c
    ud = 2.0 * (ux * dx + uy * dy + uz * dz)
    return dx - k * sx + ud * wx, dy - k * sy + ud * wy, dz - k * sz + ud * wz


@njit(cache=True, parallel=True)
def wisp_gather(points, wisp_start, wisp_strands, samp_a, samp_f, weight, out):
    """Each wisp's skeleton ``out`` (W, N, 3): the weighted mean of its strands sampled at the
    same arc-length fractions ``i / K`` (seed 001 §3.2: the skeleton carries the strands' mass).
    ``points`` (P, 3); strands of wisp ``w`` are ``wisp_strands[wisp_start[w]:wisp_start[w+1]]``;
    strand ``s``'s sample ``i`` lies ``samp_f[s, i]`` of the way from point ``samp_a[s, i]`` to
    the next; ``weight`` (S,) each strand's share of its wisp (summing to 1)."""
    num_w, n = out.shape[0], out.shape[1]
    # each strand's weighted samples first, strand by strand (its points are together in memory),
    # then each wisp's sum over its strands in their order
    samples = np.empty((samp_a.shape[0], n, 3))
    for s in prange(samp_a.shape[0]):
        c = weight[s]
        for i in range(n):
            a = samp_a[s, i]
            f = samp_f[s, i]
            g = 1.0 - f
            for d in range(3):
                samples[s, i, d] = c * (g * points[a, d] + f * points[a + 1, d])
    for w in prange(num_w):
        for i in range(n):
            x = y = z = 0.0
            for j in range(wisp_start[w], wisp_start[w + 1]):
                s = wisp_strands[j]
                x += samples[s, i, 0]
                y += samples[s, i, 1]
                z += samples[s, i, 2]
            out[w, i, 0] = x
            out[w, i, 1] = y
            out[w, i, 2] = z


@njit(cache=True)
def _frames_of(x, w, anchor, e1_root, frames, tangent):
    """Cross-section frames of wisp ``w`` of skeleton ``x`` (W, N, 3) into ``frames[w]`` (N, 2, 3)
    and ``tangent[w]`` (N, 3): each in the plane bisecting its two segments (seed 001 §3.3; the
    root's first neighbour is the anchor direction ``anchor[w]``, the tip's its last segment);
    ``e₁`` at the root is ``e1_root[w]`` made square to the root's tangent, then carried root to
    tip by the least rotation between successive tangents: no twist."""
    n = x.shape[1]
    px, py, pz = anchor[w, 0], anchor[w, 1], anchor[w, 2]
    for i in range(n):
        if i < n - 1:
            dx, dy, dz, _ = _unit3(x[w, i + 1, 0] - x[w, i, 0], x[w, i + 1, 1] - x[w, i, 1],
                                   x[w, i + 1, 2] - x[w, i, 2])
        else:
            dx, dy, dz = px, py, pz
        tx, ty, tz, r = _unit3(px + dx, py + dy, pz + dz)
        if r < 1e-9:                    # folded back on itself: keep the segment before
            tx, ty, tz = px, py, pz
        if i == 0:
            ex, ey, ez = e1_root[w, 0], e1_root[w, 1], e1_root[w, 2]
            k = ex * tx + ey * ty + ez * tz
            ex, ey, ez, r = _unit3(ex - k * tx, ey - k * ty, ez - k * tz)
        else:
            ux, uy, uz = tangent[w, i - 1, 0], tangent[w, i - 1, 1], tangent[w, i - 1, 2]
            ex, ey, ez = _turn(ux, uy, uz, tx, ty, tz, frames[w, i - 1, 0, 0], frames[w, i - 1, 0, 1],
                               frames[w, i - 1, 0, 2])
            k = ex * tx + ey * ty + ez * tz              # rounding: keep it square to the tangent
            ex, ey, ez, r = _unit3(ex - k * tx, ey - k * ty, ez - k * tz)
        tangent[w, i, 0], tangent[w, i, 1], tangent[w, i, 2] = tx, ty, tz
        frames[w, i, 0, 0], frames[w, i, 0, 1], frames[w, i, 0, 2] = ex, ey, ez
        frames[w, i, 1, 0] = ty * ez - tz * ey
        frames[w, i, 1, 1] = tz * ex - tx * ez
        frames[w, i, 1, 2] = tx * ey - ty * ex
        px, py, pz = dx, dy, dz


@njit(cache=True)
def wisp_frames(x, anchor, e1_root, frames, tangent):
    """``_frames_of`` for every wisp."""
    for w in range(x.shape[0]):
        _frames_of(x, w, anchor, e1_root, frames, tangent)


@njit(cache=True)
def _axes(x, stretch, out):
    """Each segment's unit direction times its stretch (W, K, 3): where an offset ``c`` along it
    is placed (``wisp_place``)."""
    for w in range(x.shape[0]):
        for k in range(x.shape[1] - 1):
            dx, dy, dz, _ = _unit3(x[w, k + 1, 0] - x[w, k, 0], x[w, k + 1, 1] - x[w, k, 1],
                                   x[w, k + 1, 2] - x[w, k, 2])
            out[w, k, 0] = stretch[w, k] * dx
            out[w, k, 1] = stretch[w, k] * dy
            out[w, k, 2] = stretch[w, k] * dz


@njit(cache=True, parallel=True)
def wisp_place(goal, out, offsets, point_wisp, point_seg, point_u, coords, blend,
               x, frames, ratio, stretch, gx, gframes, gstretch, unit):
    """The shown strands (seed 001 §6): each point ``goal + blend · (placed(wisp) − placed(goal
    wisp))`` into ``out`` (P, 3) — its fixed coordinates in the simulated wisp (skeleton ``x``,
    ``frames``, envelope ``ratio``, segment ``stretch``) less the same in the goal's wisp
    (``gx``, ``gframes``, rest radii ``unit`` (W, N, 4) of ones, ``gstretch``); each placed on
    segment ``k`` at ``u`` of its length, ``a, b`` along the cross-sections' ``e₁, e₂`` (each
    scaled by the envelope's radius on its side, now over rest), ``c`` along the segment scaled by
    its stretch: waves keep their count as a wisp stretches, their amplitude follows the
    envelope. So the groom's own shape within a wisp (and what magnets did to it) stays, the
    wisp's motion is added, and a wisp resting on its goal (the same bits) shows the goal exactly. Strand by strand over ``offsets`` (S + 1,)."""
    axes = np.empty((x.shape[0], x.shape[1] - 1, 3))
    gaxes = np.empty_like(axes)
    _axes(x, stretch, axes)
    _axes(gx, gstretch, gaxes)
    for s in prange(offsets.shape[0] - 1):
        for p in range(offsets[s], offsets[s + 1]):
            w, k, u = point_wisp[p], point_seg[p], point_u[p]
            a, b, c = coords[p, 0], coords[p, 1], coords[p, 2]
            g = 1.0 - u
            qa = 0 if a >= 0.0 else 2
            qb = 1 if b >= 0.0 else 3
            sa = a * (g * ratio[w, k, qa] + u * ratio[w, k + 1, qa])
            sb = b * (g * ratio[w, k, qb] + u * ratio[w, k + 1, qb])
            ga = a * (g * unit[w, k, qa] + u * unit[w, k + 1, qa])
            gb = b * (g * unit[w, k, qb] + u * unit[w, k + 1, qb])
            f = blend[p]
            for d in range(3):
                moved = ((g * x[w, k, d] + u * x[w, k + 1, d]) - (g * gx[w, k, d] + u * gx[w, k + 1, d])
                         + (sa * (g * frames[w, k, 0, d] + u * frames[w, k + 1, 0, d])
                            - ga * (g * gframes[w, k, 0, d] + u * gframes[w, k + 1, 0, d]))
                         + (sb * (g * frames[w, k, 1, d] + u * frames[w, k + 1, 1, d])
                            - gb * (g * gframes[w, k, 1, d] + u * gframes[w, k + 1, 1, d]))
                         + c * (axes[w, k, d] - gaxes[w, k, d]))
                out[p, d] = goal[p, d] + f * moved


@njit(cache=True)
def _damp_pair(v, w, i, j, wi, wj, ux, uy, uz, share):
    """Damping as a velocity modification (seed 001 §5.2): the relative velocity of points ``i``
    and ``j`` of wisp ``w`` along unit ``u`` loses ``share = min(ν dt, 1)`` of itself, split by
    inverse masses ``wi, wj`` so momentum is kept; it can shrink to zero, never reverse."""
    tot = wi + wj
    if tot <= 0.0 or share <= 0.0:
        return
    rel = ((v[w, i, 0] - v[w, j, 0]) * ux + (v[w, i, 1] - v[w, j, 1]) * uy + (v[w, i, 2] - v[w, j, 2]) * uz)
    d = share * rel / tot
    v[w, i, 0] -= d * wi * ux
    v[w, i, 1] -= d * wi * uy
    v[w, i, 2] -= d * wi * uz
    v[w, j, 0] += d * wj * ux
    v[w, j, 1] += d * wj * uy
    v[w, j, 2] += d * wj * uz


@njit(cache=True)
def _bend_target(x, gx, w, k, L):
    """Where point ``k + 1`` of wisp ``w`` would be if its segment bent from the one before it as
    the goal's does: the goal's segment ``k`` turned by the least rotation taking the goal's
    segment ``k − 1`` onto the wisp's, laid from point ``k`` at length ``L``. The first segment's
    'before' is the anchor, the goal's own first segment (fixed in the head, seed 001 §3.2)."""
    gdx, gdy, gdz, _ = _unit3(gx[w, k + 1, 0] - gx[w, k, 0], gx[w, k + 1, 1] - gx[w, k, 1],
                              gx[w, k + 1, 2] - gx[w, k, 2])
    if k > 0:
        ux, uy, uz, _ = _unit3(gx[w, k, 0] - gx[w, k - 1, 0], gx[w, k, 1] - gx[w, k - 1, 1],
                               gx[w, k, 2] - gx[w, k - 1, 2])
        vx, vy, vz, _ = _unit3(x[w, k, 0] - x[w, k - 1, 0], x[w, k, 1] - x[w, k - 1, 1],
                               x[w, k, 2] - x[w, k - 1, 2])
        gdx, gdy, gdz = _turn(ux, uy, uz, vx, vy, vz, gdx, gdy, gdz)
    return x[w, k, 0] + L * gdx, x[w, k, 1] + L * gdy, x[w, k, 2] + L * gdz


@njit(cache=True)
def wisp_velocities(x, v, r, rd, frames, target, v_goal, ext, base, mass, inv_mass, rest_len, r0,
                    h, k_stretch, nu_stretch, nu_bend, keep, toward, k_env, nu_env, v_old):
    """Forces and velocity modifications of one substep ``h`` on every wisp (seed 001 §5.1, items
    1 and 3), before the interactions: into ``v`` (W, N, 3) and the envelope's radial speeds
    ``rd`` (W, N, 4); ``v_old`` gets the skeleton's velocities before.

    Forces per unit of the skeleton point's mass: ``base`` (3,) gravity with the style's hold
    and ``ext`` (W, N, 3) the force fields; linear springs along the skeleton
    ``f = −k (|p₁ − p₂| − r) u`` (elastic part; ``k_stretch`` per reduced mass); the envelope's
    springs' reaction. (The angular springs' elastic part is a position modification,
    ``wisp_positions``: as a force towards a target that depends on the segment before, it fed
    energy into a shaken wisp.)
    Then damping as velocity modifications that never reverse a relative velocity and keep
    momentum (``_damp_pair``): along each segment (``nu_stretch``) and across it against the turn
    of the segment before (``nu_bend``); the goal's damping and the air's exactly over the
    substep (``keep`` = e^{−(settle + drag) h}, ``toward`` the goal's share, as Strands do).
    The envelope: each radius ``r`` on a soft spring to its rest ``r0`` (``k_env``) and linked to
    its neighbours in the cross-section for volume, pushed by the skeleton's acceleration and the
    loads along its half-line, heavily damped (``nu_env``, as a velocity modification).
    ``inv_mass`` 0: a point held on the goal (the root)."""
    num_w, n = x.shape[0], x.shape[1]
    for w in range(num_w):
        acc = np.zeros((n, 3))
        env = np.zeros((n, 4))
        for i in range(n):
            for d in range(3):
                acc[i, d] = base[d] + ext[w, i, d]
        # the envelope's springs: radial to its rest, and links between neighbours (rest lengths
        # of the links from the rest radii: the half-lines are square)
        for i in range(n):
            for q in range(4):
                rq = r[w, i, q]
                f = k_env * (r0[w, i, q] - rq)
                for nb in ((q + 1) % 4, (q + 3) % 4):
                    rn = r[w, i, nb]
                    L = np.sqrt(rq * rq + rn * rn)
                    L0 = np.sqrt(r0[w, i, q] ** 2 + r0[w, i, nb] ** 2)
                    if L > 0.0:
                        f -= k_env * (L - L0) * rq / L
                env[i, q] = f
        for i in range(n):
            # the envelope's springs pull the skeleton back along each half-line (ENV_SHARE of its mass)
            for q in range(4):
                sgn = 1.0 if q < 2 else -1.0
                ax = q % 2
                for d in range(3):
                    acc[i, d] -= ENV_SHARE * env[i, q] * sgn * frames[w, i, ax, d]
        for k in range(n - 1):
            ux, uy, uz, L = _unit3(x[w, k + 1, 0] - x[w, k, 0], x[w, k + 1, 1] - x[w, k, 1],
                                   x[w, k + 1, 2] - x[w, k, 2])
            mu = 2.0 * mass[w, k] * mass[w, k + 1] / (mass[w, k] + mass[w, k + 1])
            f = k_stretch * mu * (L - rest_len[w, k])
            ma, mb = 1.0 / mass[w, k], 1.0 / mass[w, k + 1]
            acc[k, 0] += f * ux * ma
            acc[k, 1] += f * uy * ma
            acc[k, 2] += f * uz * ma
            acc[k + 1, 0] -= f * ux * mb
            acc[k + 1, 1] -= f * uy * mb
            acc[k + 1, 2] -= f * uz * mb
        for i in range(n):
            for d in range(3):
                v_old[w, i, d] = v[w, i, d]
                if inv_mass[w, i] > 0.0:
                    v[w, i, d] += h * acc[i, d]
                else:
                    v[w, i, d] = v_goal[w, i, d]
        # damping along and across each segment, root to tip
        s_stretch = min(nu_stretch * h, 1.0)
        s_bend = min(nu_bend * h, 1.0)
        wx = wy = wz = 0.0                  # the segment before's turn rate (the anchor's: none)
        for k in range(n - 1):
            ux, uy, uz, L = _unit3(x[w, k + 1, 0] - x[w, k, 0], x[w, k + 1, 1] - x[w, k, 1],
                                   x[w, k + 1, 2] - x[w, k, 2])
            wa, wb = inv_mass[w, k], inv_mass[w, k + 1]
            _damp_pair(v, w, k + 1, k, wb, wa, ux, uy, uz, s_stretch)
            if s_bend > 0.0 and L > 0.0:
                # relative velocity across the segment against what turning with the one before
                # would give it: ω × (x_{k+1} − x_k)
                rx = v[w, k + 1, 0] - v[w, k, 0] - (wy * uz - wz * uy) * L
                ry = v[w, k + 1, 1] - v[w, k, 1] - (wz * ux - wx * uz) * L
                rz = v[w, k + 1, 2] - v[w, k, 2] - (wx * uy - wy * ux) * L
                a = rx * ux + ry * uy + rz * uz
                px, py, pz, pr = _unit3(rx - a * ux, ry - a * uy, rz - a * uz)
                if pr > 0.0:
                    tot = wa + wb
                    if tot > 0.0:
                        dd = s_bend * pr / tot
                        for d, pd in ((0, px), (1, py), (2, pz)):
                            v[w, k + 1, d] -= dd * wb * pd
                            v[w, k, d] += dd * wa * pd
            if L > 0.0:
                # this segment's turn rate ω = u × (v_{k+1} − v_k) / L, for the next one
                rx = v[w, k + 1, 0] - v[w, k, 0]
                ry = v[w, k + 1, 1] - v[w, k, 1]
                rz = v[w, k + 1, 2] - v[w, k, 2]
                wx = (uy * rz - uz * ry) / L
                wy = (uz * rx - ux * rz) / L
                wz = (ux * ry - uy * rx) / L
        for i in range(n):
            if inv_mass[w, i] > 0.0:
                for d in range(3):
                    v[w, i, d] = keep * v[w, i, d] + (1.0 - keep) * toward * v_goal[w, i, d]
        # the envelope: pushed along its half-lines by the loads less the skeleton's acceleration
        # (it lags a swinging wisp), sprung and damped
        s_env = min(nu_env * h, 1.0)
        for i in range(n):
            for q in range(4):
                sgn = 1.0 if q < 2 else -1.0
                ax = q % 2
                push = 0.0
                for d in range(3):
                    a_skel = (v[w, i, d] - v_old[w, i, d]) / h
                    push += (base[d] + ext[w, i, d] - a_skel) * sgn * frames[w, i, ax, d]
                if inv_mass[w, i] == 0.0:
                    push = 0.0
                rd[w, i, q] += h * (push + env[i, q])
                rd[w, i, q] *= 1.0 - s_env


@njit(cache=True)
def wisp_positions(x, v, r, rd, target, inv_mass, rest_len, h, kh2, bend, max_stretch):
    """Positions of one substep (seed 001 §5.1, item 4): each free skeleton point moves by its
    velocity with the goal's spring taken implicitly, ``x' = (x + v h + k h² target) / (1 + k h²)``
    (stable for any stiffness; ``kh2`` (W, N) is ``k h²``) and its velocity becomes what it moved;
    held points go to ``target``. Then the angular springs, root to tip as position
    modifications (seed 001 §5.1 allows them; the strands' bend, ``strands.VerletStrands._bend``):
    each segment turned ``bend`` (``b h² / (1 + b h²)``) of the way towards the goal's bend from
    the segment before (``_bend_target``) at its own length, the rest of the wisp carried along,
    no velocity changed — stable for any stiffness, no energy fed in. Then each segment is kept
    within ``max_stretch`` of its rest
    length root to tip — the point after it set on the limit and the rest of the wisp carried
    along, its stretching speed taken off — and each envelope radius moves by its speed."""
    num_w, n = x.shape[0], x.shape[1]
    for w in range(num_w):
        for i in range(n):
            if inv_mass[w, i] > 0.0:
                c = kh2[w, i]
                for d in range(3):
                    nx = (x[w, i, d] + h * v[w, i, d] + c * target[w, i, d]) / (1.0 + c)
                    v[w, i, d] = (nx - x[w, i, d]) / h
                    x[w, i, d] = nx
            else:
                for d in range(3):
                    x[w, i, d] = target[w, i, d]
        if bend > 0.0:
            cx = cy = cz = 0.0
            for k in range(n - 1):
                x[w, k + 1, 0] += cx
                x[w, k + 1, 1] += cy
                x[w, k + 1, 2] += cz
                if inv_mass[w, k + 1] == 0.0:
                    continue
                sx = x[w, k + 1, 0] - x[w, k, 0]
                sy = x[w, k + 1, 1] - x[w, k, 1]
                sz = x[w, k + 1, 2] - x[w, k, 2]
                L = np.sqrt(sx * sx + sy * sy + sz * sz)
                tx, ty, tz = _bend_target(x, target, w, k, L)
                nx = sx + bend * (tx - x[w, k + 1, 0])
                ny = sy + bend * (ty - x[w, k + 1, 1])
                nz = sz + bend * (tz - x[w, k + 1, 2])
                nx, ny, nz, nr = _unit3(nx, ny, nz)
                if nr == 0.0:
                    continue
                fx = x[w, k, 0] + L * nx - x[w, k + 1, 0]
                fy = x[w, k, 1] + L * ny - x[w, k + 1, 1]
                fz = x[w, k, 2] + L * nz - x[w, k + 1, 2]
                x[w, k + 1, 0] += fx
                x[w, k + 1, 1] += fy
                x[w, k + 1, 2] += fz
                cx += fx
                cy += fy
                cz += fz
        cx = cy = cz = 0.0
        for k in range(n - 1):
            x[w, k + 1, 0] += cx
            x[w, k + 1, 1] += cy
            x[w, k + 1, 2] += cz
            if inv_mass[w, k + 1] == 0.0:
                continue
            ux, uy, uz, L = _unit3(x[w, k + 1, 0] - x[w, k, 0], x[w, k + 1, 1] - x[w, k, 1],
                                   x[w, k + 1, 2] - x[w, k, 2])
            lo, hi = rest_len[w, k] * (1.0 - max_stretch), rest_len[w, k] * (1.0 + max_stretch)
            to = L
            if L > hi:
                to = hi
            elif L < lo and L > 0.0:
                to = lo
            if to != L:
                mx, my, mz = (to - L) * ux, (to - L) * uy, (to - L) * uz
                x[w, k + 1, 0] += mx
                x[w, k + 1, 1] += my
                x[w, k + 1, 2] += mz
                cx += mx
                cy += my
                cz += mz
                rel = ((v[w, k + 1, 0] - v[w, k, 0]) * ux + (v[w, k + 1, 1] - v[w, k, 1]) * uy
                       + (v[w, k + 1, 2] - v[w, k, 2]) * uz)
                if (to > L and rel < 0.0) or (to < L and rel > 0.0):
                    v[w, k + 1, 0] -= rel * ux
                    v[w, k + 1, 1] -= rel * uy
                    v[w, k + 1, 2] -= rel * uz
        for i in range(n):
            for q in range(4):
                r[w, i, q] += h * rd[w, i, q]


@njit(cache=True)
def wisp_carry(x, v, push):
    """The penetration reaction (seed 001 §4.3.2) on skeletons ``x`` (W, N, 3): root to tip, a
    point pushed out by ``push`` (W, N, 3) (its depth along the surface's outward normal) is set
    at its segment's present length from the point before it, on the surface's side of the
    tangent plane through where the push takes it — the nearest such place to it (the sphere of
    that radius about the point before cut by the plane) — and every point after it moves as it
    did (lengths kept); its velocity loses what it had into the surface (``carry`` wisp by wisp)."""
    for w in range(x.shape[0]):
        carry(x, v, push, w)


@njit(cache=True)
def carry(x, v, push, w):
    """``wisp_carry`` of wisp ``w`` alone: it reads and writes only that wisp's rows."""
    n = x.shape[1]
    cx = cy = cz = 0.0
    for i in range(1, n):
        x[w, i, 0] += cx
        x[w, i, 1] += cy
        x[w, i, 2] += cz
        px, py, pz = push[w, i, 0], push[w, i, 1], push[w, i, 2]
        if px == 0.0 and py == 0.0 and pz == 0.0:
            continue
        nux, nuy, nuz, _ = _unit3(px, py, pz)
        bx, by, bz = x[w, i - 1, 0], x[w, i - 1, 1], x[w, i - 1, 2]
        L = np.sqrt((x[w, i, 0] - bx) ** 2 + (x[w, i, 1] - by) ** 2 + (x[w, i, 2] - bz) ** 2)
        sx, sy, sz = x[w, i, 0] + px, x[w, i, 1] + py, x[w, i, 2] + pz          # on the surface
        ux, uy, uz, _ = _unit3(sx - bx, sy - by, sz - bz)
        nx, ny, nz = bx + L * ux, by + L * uy, bz + L * uz
        above = (bx - sx) * nux + (by - sy) * nuy + (bz - sz) * nuz           # the point before, over the plane
        if (nx - sx) * nux + (ny - sy) * nuy + (nz - sz) * nuz < 0.0 and -L < above < L:
            # the length's sphere dips under the plane there: the nearest place on their circle
            ox, oy, oz = bx - above * nux, by - above * nuy, bz - above * nuz
            tx, ty, tz, tr = _unit3(sx - ox, sy - oy, sz - oz)
            if tr > 0.0:
                rad = np.sqrt(L * L - above * above)
                nx, ny, nz = ox + rad * tx, oy + rad * ty, oz + rad * tz
        cx += nx - x[w, i, 0]
        cy += ny - x[w, i, 1]
        cz += nz - x[w, i, 2]
        x[w, i, 0], x[w, i, 1], x[w, i, 2] = nx, ny, nz
        into = v[w, i, 0] * nux + v[w, i, 1] * nuy + v[w, i, 2] * nuz
        if into < 0.0:
            v[w, i, 0] -= into * nux
            v[w, i, 1] -= into * nuy
            v[w, i, 2] -= into * nuz


@njit(cache=True)
def _segment_boxes(x, r, box):
    """Each wisp segment's box (W·K, 6): its two cross-sections' skeleton points widened by their
    largest envelope radius."""
    num_w, n = x.shape[0], x.shape[1]
    for w in range(num_w):
        for k in range(n - 1):
            s = w * (n - 1) + k
            ra = max(max(r[w, k, 0], r[w, k, 1]), max(r[w, k, 2], r[w, k, 3]))
            rb = max(max(r[w, k + 1, 0], r[w, k + 1, 1]), max(r[w, k + 1, 2], r[w, k + 1, 3]))
            for d in range(3):
                a, b = x[w, k, d], x[w, k + 1, d]
                box[s, d] = min(a - ra, b - rb)
                box[s, 3 + d] = max(a + ra, b + rb)


@njit(cache=True)
def _cell_key(ix, iy, iz, mask):
    return ((ix * 73856093) ^ (iy * 19349663) ^ (iz * 83492791)) & mask


CELLS_PER_BOX = 8        # the grid's cell is at least the largest box over this: a box spans few cells
MAX_ROOM = 1 << 24       # a search's room for its pairs, at most (entries of 4 bytes: 64 MB)


@njit(cache=True)
def _grid(box):
    """The broadphase's grid over boxes (M, 6): cells of twice the mean box extent (at least the
    largest over ``CELLS_PER_BOX``), each box listed in every cell it overlaps. Returns each
    box's low and high cell (M, 6), the hash's mask, and the listing hashed into buckets:
    ``start`` (B + 1,) and, bucket by bucket in box order, each entry's box and cell (E,), (E, 3)."""
    m = box.shape[0]
    mean = 0.0
    largest = 0.0
    finite = 0
    for s in range(m):
        e = max(box[s, 3] - box[s, 0], max(box[s, 4] - box[s, 1], box[s, 5] - box[s, 2]))
        if np.isfinite(e) and np.isfinite(box[s, 0]) and np.isfinite(box[s, 1]) and np.isfinite(box[s, 2]):
            mean += e
            largest = max(largest, e)
            finite += 1
    mean /= max(finite, 1)
    cell = max(max(2.0 * mean, largest / CELLS_PER_BOX), 1e-12)
    span = np.zeros((m, 6), np.int64)
    entries = 0
    for s in range(m):
        cover = 1
        ok = True
        for d in range(6):
            ok = ok and np.isfinite(box[s, d] / cell)
        if ok:                              # else one cell, as every box of no place (NaN) is
            for d in range(3):
                span[s, d] = np.int64(np.floor(box[s, d] / cell))
                span[s, 3 + d] = np.int64(np.floor(box[s, 3 + d] / cell))
                cover *= span[s, 3 + d] - span[s, d] + 1
        entries += cover
    size = 1
    while size < 2 * entries:
        size *= 2
    mask = size - 1
    start = np.zeros(size + 1, np.int64)
    for s in range(m):
        for ix in range(span[s, 0], span[s, 3] + 1):
            for iy in range(span[s, 1], span[s, 4] + 1):
                for iz in range(span[s, 2], span[s, 5] + 1):
                    start[_cell_key(ix, iy, iz, mask) + 1] += 1
    for b in range(size):
        start[b + 1] += start[b]
    fill = start[:-1].copy()
    owner = np.empty(entries, np.int64)
    where = np.empty((entries, 3), np.int64)
    for s in range(m):                      # a counting sort: each bucket in box order
        for ix in range(span[s, 0], span[s, 3] + 1):
            for iy in range(span[s, 1], span[s, 4] + 1):
                for iz in range(span[s, 2], span[s, 5] + 1):
                    k = _cell_key(ix, iy, iz, mask)
                    owner[fill[k]] = s
                    where[fill[k], 0] = ix
                    where[fill[k], 1] = iy
                    where[fill[k], 2] = iz
                    fill[k] += 1
    return span, mask, start, owner, where


@njit(cache=True)
def _listed(a, span, mask, start):
    """How many entries the buckets of segment ``a``'s cells hold: at least as many as its pairs
    (``_pairs_of``)."""
    count = 0
    for ix in range(span[a, 0], span[a, 3] + 1):
        for iy in range(span[a, 1], span[a, 4] + 1):
            for iz in range(span[a, 2], span[a, 5] + 1):
                k = _cell_key(ix, iy, iz, mask)
                count += start[k + 1] - start[k]
    return count


@njit(cache=True)
def _pairs_of(a, box, span, mask, start, owner, where, n_seg, found, at):
    """Segment ``a``'s pairs with segments numbered after it: the other segment of each written
    into ``found`` from ``at`` on (nothing written where ``found`` is empty); how many. Each is met in the one cell both boxes list that
    holds the low corner of their overlap (the larger of their low cells, axis by axis: exact
    integers), so once; in the order of ``a``'s cells, then of the bucket."""
    count = 0
    wa, ka = a // n_seg, a % n_seg
    for ix in range(span[a, 0], span[a, 3] + 1):
        for iy in range(span[a, 1], span[a, 4] + 1):
            for iz in range(span[a, 2], span[a, 5] + 1):
                k = _cell_key(ix, iy, iz, mask)
                for e in range(start[k], start[k + 1]):
                    b = owner[e]
                    if b <= a or where[e, 0] != ix or where[e, 1] != iy or where[e, 2] != iz:
                        continue
                    if b // n_seg == wa and abs(b % n_seg - ka) < 2:
                        continue                 # a wisp's own neighbouring segments share a point
                    if (box[a, 0] > box[b, 3] or box[b, 0] > box[a, 3] or box[a, 1] > box[b, 4]
                            or box[b, 1] > box[a, 4] or box[a, 2] > box[b, 5] or box[b, 2] > box[a, 5]):
                        continue
                    if (max(span[a, 0], span[b, 0]) != ix or max(span[a, 1], span[b, 1]) != iy
                            or max(span[a, 2], span[b, 2]) != iz):
                        continue                 # met in the cell of their overlap's low corner
                    if found.shape[0]:
                        found[at + count] = b
                    count += 1
    return count


@njit(cache=True, parallel=True)
def wisp_pairs(x, r, n_seg):
    """The grid broadphase over wisp segments (seed 001 §4.1): pairs (M, 2) of segments — of
    different wisps, or of one wisp two or more apart — whose boxes meet, each pair once, in a
    fixed order (the lower segment's, then ``_pairs_of``'s). Cells are about twice a typical box
    (a few wide envelopes no longer make every cell as large as theirs: measured on 1896 wisps
    over Suzanne, cells as large as the largest box made each segment test a third of all the
    others); a box is listed in every cell it overlaps. Each segment's pairs are found once, in
    a ``prange`` pass, into room the entries of its cells' buckets bound, then gathered at their
    offsets: the same list on any thread count (counting them in one pass and finding them again
    in a second made a search of those 1896 wisps 38 ms, 21 now). Where that room would pass
    ``MAX_ROOM`` entries (most boxes in a few cells) they are counted, then found."""
    m = x.shape[0] * n_seg
    box = np.empty((m, 6))
    _segment_boxes(x, r, box)
    span, mask, start, owner, where = _grid(box)
    room = np.empty(m + 1, np.int64)
    room[0] = 0
    for a in prange(m):
        room[a + 1] = _listed(a, span, mask, start)
    for a in range(m):
        room[a + 1] += room[a]
    counts = np.empty(m + 1, np.int64)
    counts[0] = 0
    if room[m] <= MAX_ROOM:
        found = np.empty(room[m], np.int32)          # segment numbers: far below 2³¹
        for a in prange(m):
            counts[a + 1] = _pairs_of(a, box, span, mask, start, owner, where, n_seg, found, room[a])
        base = room
    else:
        # most boxes in a few cells (a wisp flung far sets the cells' size): the room would grow
        # with the square of the segments where the pairs need not; count them, then find them
        none = np.empty(0, np.int32)
        for a in prange(m):
            counts[a + 1] = _pairs_of(a, box, span, mask, start, owner, where, n_seg, none, 0)
        base = counts.copy()
        for a in range(m):
            base[a + 1] += base[a]
        found = np.empty(base[m], np.int32)
        for a in prange(m):
            _pairs_of(a, box, span, mask, start, owner, where, n_seg, found, base[a])
    for a in range(m):
        counts[a + 1] += counts[a]
    pairs = np.empty((counts[m], 2), np.int64)
    for a in prange(m):
        at, first = counts[a], base[a]
        for t in range(counts[a + 1] - at):
            pairs[at + t, 0] = a
            pairs[at + t, 1] = found[first + t]
    return pairs


@njit(cache=True, inline="always")
def _inside(x, r, wb, kb, px, py, pz):
    """Whether point ``p`` is inside segment ``kb`` of wisp ``wb`` (the volume between its two
    cross-sections, seed 001 §4.1: each a disc of its envelope's mean radius): its fraction ``u``
    along the segment, the offset from the axis there, and the hair's density there (rest area
    over the area now: a squeezed wisp is denser)."""
    ax, ay, az = x[wb, kb, 0], x[wb, kb, 1], x[wb, kb, 2]
    dx, dy, dz = x[wb, kb + 1, 0] - ax, x[wb, kb + 1, 1] - ay, x[wb, kb + 1, 2] - az
    dd = dx * dx + dy * dy + dz * dz
    if dd <= 0.0:
        return -1.0, 0.0, 0.0, 0.0, 0.0
    u = ((px - ax) * dx + (py - ay) * dy + (pz - az) * dz) / dd
    if u < 0.0 or u > 1.0:
        return -1.0, 0.0, 0.0, 0.0, 0.0
    ox, oy, oz = px - ax - u * dx, py - ay - u * dy, pz - az - u * dz
    ra = 0.25 * (r[wb, kb, 0] + r[wb, kb, 1] + r[wb, kb, 2] + r[wb, kb, 3])
    rb = 0.25 * (r[wb, kb + 1, 0] + r[wb, kb + 1, 1] + r[wb, kb + 1, 2] + r[wb, kb + 1, 3])
    rad = (1.0 - u) * ra + u * rb
    if ox * ox + oy * oy + oz * oz >= rad * rad:
        return -1.0, 0.0, 0.0, 0.0, 0.0
    return u, ox, oy, oz, rad


@njit(cache=True, inline="always")
def _meet(x, v, r, rd, frames, tangent, mass, inv_mass, m_env, r0, wa, c, wb, kb, viscosity, dt_c, hits, pair):
    """The points of cross-section ``c`` of wisp ``wa`` (skeleton and envelope) against segment
    ``kb`` of wisp ``wb`` (seed 001 §4.2): a point inside it interpenetrates where the relative
    velocity lies within 25° of the two wisps' common plane — its part along the plane's normal
    ``n = σ_p × σ_s`` removed (both set to their average there) and viscous friction taking
    ``min(viscosity · density · dt_c, 1)`` of the part in the plane — else collides inelastically
    (the relative velocity removed). Each change is split by masses between the point and the
    segment's two ends (the segment's mass at ``u`` seen through its ends' shares ``1 − u, u``),
    so momentum is kept; an envelope point (moving with its skeleton point) takes its part along
    its half-line (the envelope compresses) and passes the rest to its skeleton point."""
    for q in range(-1, 4):
        px, py, pz = x[wa, c, 0], x[wa, c, 1], x[wa, c, 2]
        vx, vy, vz = v[wa, c, 0], v[wa, c, 1], v[wa, c, 2]
        ex = ey = ez = 0.0
        if q >= 0:
            sgn = 1.0 if q < 2 else -1.0
            ax = q % 2
            ex, ey, ez = sgn * frames[wa, c, ax, 0], sgn * frames[wa, c, ax, 1], sgn * frames[wa, c, ax, 2]
            rr = r[wa, c, q]
            px += rr * ex
            py += rr * ey
            pz += rr * ez
            # the point moves with its wisp: the envelope's own breathing back to its rest is
            # not a contact's business (a groom's wisps overlap where they lie; a squeezed envelope
            # inside its neighbour must still come back)
        u, ox, oy, oz, rad = _inside(x, r, wb, kb, px, py, pz)
        if u < 0.0:
            continue
        if q < 0 and inv_mass[wa, c] == 0.0:
            continue
        hits[pair, 0] += 1
        g = 1.0 - u
        sx = g * v[wb, kb, 0] + u * v[wb, kb + 1, 0]
        sy = g * v[wb, kb, 1] + u * v[wb, kb + 1, 1]
        sz = g * v[wb, kb, 2] + u * v[wb, kb + 1, 2]
        relx, rely, relz = vx - sx, vy - sy, vz - sz
        # σ_p: the wisp's direction at the point; σ_s: the segment's
        spx, spy, spz = tangent[wa, c, 0], tangent[wa, c, 1], tangent[wa, c, 2]
        ssx, ssy, ssz, _ = _unit3(x[wb, kb + 1, 0] - x[wb, kb, 0], x[wb, kb + 1, 1] - x[wb, kb, 1],
                                  x[wb, kb + 1, 2] - x[wb, kb, 2])
        nx, ny, nz, nr = _unit3(spy * ssz - spz * ssy, spz * ssx - spx * ssz, spx * ssy - spy * ssx)
        if nr < PARALLEL:
            # parallel wisps lie in a common plane with any relative velocity: they interpenetrate,
            # nothing to remove across it
            nr = 0.0
            nx = ny = nz = 0.0
        vn = relx * nx + rely * ny + relz * nz
        speed = np.sqrt(relx * relx + rely * rely + relz * relz)
        if nr == 0.0 or abs(vn) <= SIN_PLANE * speed:
            # interpenetrate: the normal part removed, the in-plane part dragged by viscosity —
            # at the skeleton: the two act as one thicker wisp, their envelopes overlap freely
            if q >= 0:
                continue
            ra = 0.25 * (r0[wb, kb, 0] + r0[wb, kb, 1] + r0[wb, kb, 2] + r0[wb, kb, 3])
            rb = 0.25 * (r0[wb, kb + 1, 0] + r0[wb, kb + 1, 1] + r0[wb, kb + 1, 2] + r0[wb, kb + 1, 3])
            rest = g * ra + u * rb
            density = (rest / rad) ** 2 if rad > 0.0 else 1.0
            drag = min(viscosity * density * dt_c, 1.0)
            ix, iy, iz = relx - vn * nx, rely - vn * ny, relz - vn * nz
            dx = -vn * nx - drag * ix
            dy = -vn * ny - drag * iy
            dz = -vn * nz - drag * iz
        else:
            # collide: inelastic, the relative velocity removed (both move as their average);
            # an envelope point only loses what carries it deeper into the other (towards its
            # axis): the envelope compresses, and is not dragged about by every neighbour it
            # overlaps in a moving groom
            hits[pair, 1] += 1
            dx, dy, dz = -relx, -rely, -relz
            fx, fy, fz, off = _unit3(ox, oy, oz)
            if q >= 0:
                into = min(relx * fx + rely * fy + relz * fz, 0.0)
                dx, dy, dz = -into * fx, -into * fy, -into * fz
        # the segment's inverse mass at u, the point's mass
        wsum = g * g * inv_mass[wb, kb] + u * u * inv_mass[wb, kb + 1]
        mp = m_env[wa, c] if q >= 0 else mass[wa, c]
        # Δv_p = m_s / (m_p + m_s) Δ_rel = Δ_rel / (1 + m_p w_s)
        share = 1.0 / (1.0 + mp * wsum)
        jx, jy, jz = mp * share * dx, mp * share * dy, mp * share * dz      # the impulse on the point
        if q < 0:
            v[wa, c, 0] += jx / mp
            v[wa, c, 1] += jy / mp
            v[wa, c, 2] += jz / mp
        else:
            jr = jx * ex + jy * ey + jz * ez
            rd[wa, c, q] += jr / mp
            im = inv_mass[wa, c]
            v[wa, c, 0] += (jx - jr * ex) * im
            v[wa, c, 1] += (jy - jr * ey) * im
            v[wa, c, 2] += (jz - jr * ez) * im
        wg, wu = g * inv_mass[wb, kb], u * inv_mass[wb, kb + 1]
        v[wb, kb, 0] -= jx * wg
        v[wb, kb, 1] -= jy * wg
        v[wb, kb, 2] -= jz * wg
        v[wb, kb + 1, 0] -= jx * wu
        v[wb, kb + 1, 1] -= jy * wu
        v[wb, kb + 1, 2] -= jz * wu


@njit(cache=True, inline="always")
def _mean_radius(r, w, k):
    return 0.25 * (r[w, k, 0] + r[w, k, 1] + r[w, k, 2] + r[w, k, 3])


@njit(cache=True, inline="always")
def _cross(x, v, r, r0, inv_mass, wa, ka, wb, kb, viscosity, dt_c, hits, pair):
    """Two skeleton segments whose axes pass closer than half the sum of their mean radii there
    (``reach``; seed 001 §4.1 tests the cross-sections' points only, enough for segments as wide
    as long; a thin wisp's segment could pass through another between its cross-sections): the closest points of the two axes
    meet as ``_meet``'s points do — interpenetrating or colliding by the same 25° rule — the
    change split over each segment's two ends by their shares, so momentum is kept."""
    a0x, a0y, a0z = x[wa, ka, 0], x[wa, ka, 1], x[wa, ka, 2]
    b0x, b0y, b0z = x[wb, kb, 0], x[wb, kb, 1], x[wb, kb, 2]
    d1x, d1y, d1z = x[wa, ka + 1, 0] - a0x, x[wa, ka + 1, 1] - a0y, x[wa, ka + 1, 2] - a0z
    d2x, d2y, d2z = x[wb, kb + 1, 0] - b0x, x[wb, kb + 1, 1] - b0y, x[wb, kb + 1, 2] - b0z
    rx, ry, rz = a0x - b0x, a0y - b0y, a0z - b0z
    aa = d1x * d1x + d1y * d1y + d1z * d1z
    ee = d2x * d2x + d2y * d2y + d2z * d2z
    if aa <= 0.0 or ee <= 0.0:
        return 0.0
    ff = d2x * rx + d2y * ry + d2z * rz
    cc = d1x * rx + d1y * ry + d1z * rz
    bb = d1x * d2x + d1y * d2y + d1z * d2z
    den = aa * ee - bb * bb
    s = 0.0
    if den > 1e-12 * aa * ee:
        s = min(max((bb * ff - cc * ee) / den, 0.0), 1.0)
    t = min(max((bb * s + ff) / ee, 0.0), 1.0)
    s = min(max((bb * t - cc) / aa, 0.0), 1.0)
    ox = a0x + s * d1x - b0x - t * d2x
    oy = a0y + s * d1y - b0y - t * d2y
    oz = a0z + s * d1z - b0z - t * d2z
    reach = 0.5 * ((1.0 - s) * _mean_radius(r, wa, ka) + s * _mean_radius(r, wa, ka + 1)
                   + (1.0 - t) * _mean_radius(r, wb, kb) + t * _mean_radius(r, wb, kb + 1))
    dist = np.sqrt(ox * ox + oy * oy + oz * oz)
    if dist >= reach:
        return dist
    hits[pair, 0] += 1
    gs, gt = 1.0 - s, 1.0 - t
    relx = gs * v[wa, ka, 0] + s * v[wa, ka + 1, 0] - gt * v[wb, kb, 0] - t * v[wb, kb + 1, 0]
    rely = gs * v[wa, ka, 1] + s * v[wa, ka + 1, 1] - gt * v[wb, kb, 1] - t * v[wb, kb + 1, 1]
    relz = gs * v[wa, ka, 2] + s * v[wa, ka + 1, 2] - gt * v[wb, kb, 2] - t * v[wb, kb + 1, 2]
    ux, uy, uz, la = _unit3(d1x, d1y, d1z)
    wx, wy, wz, lb = _unit3(d2x, d2y, d2z)
    nx, ny, nz, nr = _unit3(uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx)
    if nr < PARALLEL:                     # parallel: they interpenetrate (``_meet``)
        nr = 0.0
        nx = ny = nz = 0.0
    vn = relx * nx + rely * ny + relz * nz
    speed = np.sqrt(relx * relx + rely * rely + relz * relz)
    if nr == 0.0 or abs(vn) <= SIN_PLANE * speed:
        rest = (gt * _mean_radius(r0, wb, kb) + t * _mean_radius(r0, wb, kb + 1))
        now = (gt * _mean_radius(r, wb, kb) + t * _mean_radius(r, wb, kb + 1))
        density = (rest / now) ** 2 if now > 0.0 else 1.0
        drag = min(viscosity * density * dt_c, 1.0)
        dx = -vn * nx - drag * (relx - vn * nx)
        dy = -vn * ny - drag * (rely - vn * ny)
        dz = -vn * nz - drag * (relz - vn * nz)
    else:
        hits[pair, 1] += 1
        dx, dy, dz = -relx, -rely, -relz
    w_a = gs * gs * inv_mass[wa, ka] + s * s * inv_mass[wa, ka + 1]
    w_b = gt * gt * inv_mass[wb, kb] + t * t * inv_mass[wb, kb + 1]
    if w_a + w_b <= 0.0:
        return dist
    jx, jy, jz = dx / (w_a + w_b), dy / (w_a + w_b), dz / (w_a + w_b)
    for d, j in ((0, jx), (1, jy), (2, jz)):
        v[wa, ka, d] += j * gs * inv_mass[wa, ka]
        v[wa, ka + 1, d] += j * s * inv_mass[wa, ka + 1]
        v[wb, kb, d] -= j * gt * inv_mass[wb, kb]
        v[wb, kb + 1, d] -= j * t * inv_mass[wb, kb + 1]
    return dist


@njit(cache=True, inline="always")
def _widest(r, w, k):
    """The largest envelope radius of segment ``k`` of wisp ``w`` (both its cross-sections)."""
    out = 0.0
    for c in range(k, k + 2):
        for q in range(4):
            out = max(out, r[w, c, q])
    return out


@njit(cache=True)
def _lowest_free(used, pa, pb, bank):
    """The lowest colour of bank ``bank`` (64 colours) that none of the pair's four points —
    ``pa, pa + 1, pb, pb + 1`` — has used, or −1."""
    taken = used[pa, bank] | used[pa + 1, bank] | used[pb, bank] | used[pb + 1, bank]
    if taken == np.uint64(0xFFFFFFFFFFFFFFFF):
        return -1
    c = 0
    while (taken >> np.uint64(c)) & np.uint64(1):
        c += 1
    return c


@njit(cache=True)
def wisp_colours(pairs, n, points):
    """The pairs sorted into colours: ``order`` (P,) and ``starts``, colour ``c`` being
    ``order[starts[c]:starts[c + 1]]`` in list order. A pair reads and changes only its two
    segments' ends (four skeleton points of ``points``, ``n`` a wisp), and takes the lowest colour
    none of them has (greedy, in list order): pairs of one colour share no point, so met in any
    order — or in parallel — they give the same bits."""
    colour = np.empty(pairs.shape[0], np.int64)
    used = np.zeros((points, 1), np.uint64)
    top = 0
    for t in range(pairs.shape[0]):
        a, b = pairs[t, 0], pairs[t, 1]
        pa = (a // (n - 1)) * n + a % (n - 1)
        pb = (b // (n - 1)) * n + b % (n - 1)
        bank = 0
        while True:
            if bank == used.shape[1]:
                grown = np.zeros((points, 2 * used.shape[1]), np.uint64)
                grown[:, :used.shape[1]] = used
                used = grown
            c = _lowest_free(used, pa, pb, bank)
            if c >= 0:
                break
            bank += 1
        bit = np.uint64(1) << np.uint64(c)
        for q in (pa, pa + 1, pb, pb + 1):
            used[q, bank] |= bit
        colour[t] = 64 * bank + c
        top = max(top, colour[t] + 1)
    starts = np.zeros(top + 1, np.int64)
    for t in range(pairs.shape[0]):
        starts[colour[t] + 1] += 1
    for c in range(top):
        starts[c + 1] += starts[c]
    fill = starts[:-1].copy()
    order = np.empty(pairs.shape[0], np.int64)
    for t in range(pairs.shape[0]):
        order[fill[colour[t]]] = t
        fill[colour[t]] += 1
    return order, starts


PARALLEL_COLOUR = 256    # a colour of fewer pairs is met serially (the same bits either way)


@njit(cache=True, inline="always")
def _pair(x, v, r, rd, frames, tangent, mass, inv_mass, m_env, r0, viscosity, dt_c, pairs, t, hits):
    """Pair ``t``: the axes (``_cross``), then each cross-section against the other's volume
    (``_meet``) where the axes come within the two segments' widest radii; its contacts counted
    in ``hits[t]``."""
    n = x.shape[1]
    a, b = pairs[t, 0], pairs[t, 1]
    wa, ka = a // (n - 1), a % (n - 1)
    wb, kb = b // (n - 1), b % (n - 1)
    dist = _cross(x, v, r, r0, inv_mass, wa, ka, wb, kb, viscosity, dt_c, hits, t)
    if dist >= _widest(r, wa, ka) + _widest(r, wb, kb):
        return                  # no point of either lies within the other's reach of its axis
    # both ends by one inlined site, as every helper a pair calls is inlined: a call passing
    # arrays counts a reference to each, atomically, and takes it back — per pair, on arrays
    # every thread shares
    for end in range(2):
        w1, c1, w2, k2 = (wa, ka + 1, wb, kb) if end == 0 else (wb, kb + 1, wa, ka)
        _meet(x, v, r, rd, frames, tangent, mass, inv_mass, m_env, r0, w1, c1, w2, k2, viscosity, dt_c, hits, t)


@njit(cache=True, parallel=True)
def wisp_interact(x, v, r, rd, frames, tangent, mass, inv_mass, m_env, r0, viscosity, dt_c, counts):
    """Wisp–wisp interactions (seed 001 §4.1–4.2) as velocity modifications on ``v`` (W, N, 3)
    and ``rd`` (W, N, 4): every pair of segments the broadphase gives (``wisp_pairs``), each
    segment's axis against the other's (``_cross``), and — where the axes come within the two
    segments' widest radii — its own cross-section (its far end's) tested against the other's
    volume and the other's against its (``_meet``). Met colour by colour (``wisp_colours``), a
    colour's pairs in parallel: the serial pass in the colours' order (``pairs[order]``), bit for
    bit on any thread count. ``counts`` (3,) int64, added to: contacts met
    (axes within reach, and points inside a volume — an envelope point that interpenetrates too,
    though nothing changes for it), of them colliding (not interpenetrating), and pairs tested."""
    n = x.shape[1]
    pairs = wisp_pairs(x, r, n - 1)
    order, starts = wisp_colours(pairs, n, x.shape[0] * n)
    hits = np.zeros((pairs.shape[0], 3), np.int64)
    for c in range(starts.shape[0] - 1):
        if starts[c + 1] - starts[c] >= PARALLEL_COLOUR:
            for i in prange(starts[c], starts[c + 1]):
                _pair(x, v, r, rd, frames, tangent, mass, inv_mass, m_env, r0, viscosity, dt_c, pairs, order[i], hits)
        else:               # a launch costs more than a few pairs: the long tail of small colours
            for i in range(starts[c], starts[c + 1]):
                _pair(x, v, r, rd, frames, tangent, mass, inv_mass, m_env, r0, viscosity, dt_c, pairs, order[i], hits)
    for t in range(pairs.shape[0]):
        counts[0] += hits[t, 0]
        counts[1] += hits[t, 1]
    counts[2] += pairs.shape[0]


def _warm():
    """Every kernel with the argument types the layer passes."""
    w, n, p = 2, 3, 6
    x = np.zeros((w, n, 3))
    x[:, :, 2] = -np.arange(n)
    x[1, :, 0] = 0.05
    v = np.zeros_like(x)
    r = np.full((w, n, 4), 0.1)
    rd = np.zeros_like(r)
    frames = np.zeros((w, n, 2, 3))
    tangent = np.zeros((w, n, 3))
    anchor = np.tile(np.array([0.0, 0.0, -1.0]), (w, 1))
    e1 = np.tile(np.array([1.0, 0.0, 0.0]), (w, 1))
    wisp_frames(x, anchor, e1, frames, tangent)
    pts = np.zeros((3, p), np.float32).T
    samp_a = np.zeros((2, n), np.int64)
    samp_f = np.zeros((2, n))
    wisp_gather(np.zeros((p, 3)), np.array([0, 1, 2]), np.array([0, 1]), samp_a, samp_f, np.ones(2), np.empty_like(x))
    wisp_gather(pts, np.array([0, 1, 2]), np.array([0, 1]), samp_a, samp_f, np.ones(2), np.empty_like(x))
    out = np.zeros((3, p), np.float32).T
    offsets = np.array([0, 3, 6])
    ints = np.zeros(p, np.int64)
    ones = np.ones((w, n, 4))
    stretch = np.ones((w, n - 1))
    for goal in (np.zeros((3, p), np.float32).T, np.zeros((p, 3))):
        wisp_place(goal, out, offsets, ints, ints, np.zeros(p), np.zeros((p, 3)), np.zeros(p), x, frames, ones,
                   stretch, x, frames, stretch, ones)
    mass = np.ones((w, n))
    inv = np.ones((w, n))
    rest_len = np.ones((w, n - 1))
    wisp_velocities(x, v, r, rd, frames, x, v, v, np.zeros(3), mass, inv, rest_len, r, 0.01, 1.0, 1.0, 1.0, 1.0,
                    0.0, 1.0, 1.0, np.empty_like(v))
    wisp_positions(x, v, r, rd, x, inv, rest_len, 0.01, np.zeros((w, n)), 0.1, 0.1)
    wisp_carry(x, v, np.zeros_like(x))
    wisp_interact(x, v, r, rd, frames, tangent, mass, inv, mass * 0.01, r, 1.0, 0.01, np.zeros(3, np.int64))


WARM_UPS = (("wisps", _warm),)
