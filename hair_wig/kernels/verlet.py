"""The Strands layer's substep (seed 004; ``hair_wig.strands.VerletStrands.step``) as one kernel:
the damped Verlet prediction with the goal's spring taken implicitly, the bend toward the goal's
curve, the roots on the goal, and the lengths by follow-the-leader with Müller et al.'s velocity
correction — ``count`` substeps, one strand per ``prange`` iteration, each writing only its own
strand. ``verlet_substeps_met`` meets the colliders inside the same launch, substep after
substep: the points taken into the head's frame at the substep, the contacts
(``kernels.contacts``' passes), their push back into the world and the response
(``kernels.response.met``), and the chain's give where a push met it head-on
(``kernels.chain.give_chain``) — every strand's own, so the whole frame is one launch and a
block of strands stays in cache through it. The scene's force fields are taken point by point
inside it. Hair against hair and the static links need every strand at every substep:
``verlet_substeps_pairs`` and ``verlet_substeps_met_pairs`` take them inside the launch too, each
substep's accelerations (``hair_hair``: the pairs' search and their repulsion, or the hair's
volume; the links) in passes of their own before its strands step. Arrays are point-major float64 ``(3, n, S)``, as the layer
keeps them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import get_thread_id, njit, prange

from .chain import give_chain, gives
from .contacts import meet_collider
from .fields import accel_at
from .leader import place
from .pairs import (gather_links, gather_repulsion, list_serves, measure_pairs, most_moved, pair_lists,
                    pairs_within)
from .response import met
from .volume import strands_volume


@njit(cache=True, parallel=True)
def verlet_substeps(pos, prev, new, g0, step, first, count, h, keep, toward, base, extra, kh2, share, length,
                    pinned, root_direction, ftl_damping, tiny, kinds, floats, tables):
    """Substeps ``first … first + count − 1`` (1-based within the frame) of every strand.

    Parameters
    ----------
    pos, prev : (3, n, S) float64
        Positions now and a substep ago, advanced in place (``pos`` ends as ``new``).
    new : (3, n, S) float64
        The last substep's positions, written (a contact may move them after a one-substep launch).
    g0, step : (3, n, S) float64
        The goal at the frame's start and its move per substep: substep ``i``'s target is
        ``g0 + i step``; the goal's velocity ``step / h``.
    h, keep, toward : float
        The substep; the velocity kept by the damping over it, ``e^{−(c_g + c_d) h}``, and the
        share of the goal's velocity it relaxes to.
    base : (3,) float64
        The acceleration every point feels (gravity and the held style's pull).
    extra : (3, n, S) float64, or (0, 0, 0)
        When given, each point's acceleration instead of ``base`` (force fields, hair–hair); with
        force fields packed in ``kinds`` (below), scratch the kernel writes them into.
    kh2 : (n, S) float64
        The goal's stiffness times ``h²``.
    share : float
        The bend's share per substep, ``b h² / (1 + b h²)`` (0: none).
    length : (n − 1, S) float64
        The segments' rest lengths.
    pinned, root_direction : bool
        Roots on the goal's; the first segment along the goal's.
    ftl_damping : float
        How much of a point's length correction comes off its leader's velocity.
    tiny : float
        Up to which ``|s − 1|`` follow-the-leader leaves a point bit for bit (4 ulp).
    kinds, floats, tables :
        The scene's force fields packed (``dynamics.pack_fields``; none: no rows): each substep
        ``extra`` is ``base`` plus their acceleration at the points and their velocities then
        (``_fields``), as the layer's numpy computed it between one-substep launches.
    """
    n, num = pos.shape[1], pos.shape[2]
    use_extra = extra.shape[1] == n
    blocks = (num + BLOCK - 1) // BLOCK
    for b in prange(blocks):
        # a block of strands side by side: every pass runs along contiguous rows of the block,
        # and the block's rows stay in cache through all its substeps
        lo, hi = b * BLOCK, min((b + 1) * BLOCK, num)
        carry = np.empty((3, hi - lo))
        for i in range(first, first + count):
            if kinds.shape[0]:
                _fields(pos, prev, step, h, keep, toward, base, extra, kinds, floats, tables, lo, hi)
            _substep(pos, prev, new, g0, step, i, h, keep, toward, base, extra, use_extra, kh2, share, length, pinned,
                     root_direction, ftl_damping, tiny, lo, hi, carry)
            _kept(new, pos, lo, hi)


BLOCK = 64                        # strands a kernel iteration takes side by side


@njit(cache=True, parallel=True)
def frame_moves(goal, g0, m, step, kept):
    """The goal's move a substep, ``step = (goal − g0) / m``, and ``kept``, a copy of ``goal``
    (the next frame's ``g0``), all (3, n, S) float64, in one pass: the layer's numpy operations
    (``VerletStrands.step``), the same bits, without their temporaries."""
    n, num = goal.shape[1], goal.shape[2]
    for r in prange(3 * n):
        k, j = r // n, r % n
        for s in range(num):
            g = goal[k, j, s]
            step[k, j, s] = (g - g0[k, j, s]) / m
            kept[k, j, s] = g


@njit(cache=True, parallel=True)
def frame_shown(goal, pos, blend, out):
    """The pose shown, ``goal + blend (pos − goal)`` (3, n, S), ``blend`` (n, S): numpy's
    operations in its order, in one pass."""
    n, num = goal.shape[1], goal.shape[2]
    for r in prange(3 * n):
        k, j = r // n, r % n
        for s in range(num):
            out[k, j, s] = goal[k, j, s] + blend[j, s] * (pos[k, j, s] - goal[k, j, s])


@njit(cache=True, parallel=True)
def verlet_substeps_met(pos, prev, new, g0, step, first, count, h, keep, toward, base, extra, kh2, share, length,
                        pinned, root_direction, ftl_damping, tiny, kinds, floats, tables, maps, backs, q, push, fixed,
                        cols, cmaps, moving, lim_p, lim_s,
                        w_a, w_b, fresh, every, lipschitz, ref_p, room_p, ref_m, half_m, room_s, touched, looked,
                        friction, give_fixed, give, settling, head_on, rounds, ridge, kept):
    """``verlet_substeps``, each substep's points then meeting the colliders as the layer's
    ``_meet`` does (``collision.contacts.SurfaceContacts`` at the substep's fraction of the frame,
    ``collision.contacts.respond``, ``chain.give``), strand by strand in one launch.

    Parameters (besides ``verlet_substeps``')
    ----------
    maps, backs : (m, 4, 4) float64
        Substep ``i``'s world → head-local map at ``maps[i − 1]`` and head-local → world at
        ``backs[i − 1]`` (its linear part takes a push back into the world).
    q, push : (3, n, S) float64
        Scratch: the points head-local, and where they were before the contacts; ``push`` ends
        as the last substep's push, in the world.
    fixed, cols, lim_p, lim_s, w_a, w_b, every, lipschitz, ref_p, room_p, ref_m, half_m, room_s :
        ``kernels.contacts.surface_contacts``' (its records of the last looks read and written);
        ``fresh`` applies to the launch's first substep alone.
    cmaps, moving : (m, C, 2, 4, 4) float64, (C,) int8
        Each collider's maps at each substep's end (``surface_contacts``' ``fmaps``, substep ``i``'s
        at ``cmaps[i − 1]``) and how it moves (``collision.contacts.contact_maps``).
    touched, looked : (S,) int64
        Written: each strand's points and segments pushed in the last substep, and looked at
        over the launch.
    friction : float
        The response's Coulomb friction.
    give_fixed, give, settling, head_on, rounds, ridge, kept :
        ``chain.give``'s held points and rules (``kernels.chain.gives``, ``give_chain``).
    """
    n, num = pos.shape[1], pos.shape[2]
    use_extra = extra.shape[1] == n
    blocks = (num + BLOCK - 1) // BLOCK
    meet = (maps, backs, q, push, fixed, cmaps, moving, lim_p, lim_s, w_a, w_b, every, lipschitz, ref_p, room_p,
            ref_m, half_m, room_s, touched, looked, friction, give_fixed, give, settling, head_on, rounds, ridge, kept)
    for b in prange(blocks):
        lo, hi = b * BLOCK, min((b + 1) * BLOCK, num)
        carry, held, moved = np.empty((3, hi - lo)), np.empty((4, hi - lo)), np.empty((3, n, 1))
        mine = cols[get_thread_id()]
        for s in range(lo, hi):
            looked[s] = 0
        for i in range(first, first + count):
            if kinds.shape[0]:
                _fields(pos, prev, step, h, keep, toward, base, extra, kinds, floats, tables, lo, hi)
            look = fresh and i == first
            _met_block(pos, prev, new, g0, step, i, h, keep, toward, base, extra, use_extra, kh2, share, length,
                       pinned, root_direction, ftl_damping, tiny, lo, hi, carry, held, moved, look, mine, meet)


@njit(cache=True, inline="always")
def _met_block(pos, prev, new, g0, step, i, h, keep, toward, base, extra, use_extra, kh2, share, length, pinned,
               root_direction, ftl_damping, tiny, lo, hi, carry, held, moved, look, mine, meet):
    """Substep ``i`` of strands ``lo … hi − 1`` meeting the colliders (``verlet_substeps_met``):
    the substep, its points taken into the head's frame and met by each collider of the
    thread's ``mine``, the response and the chain's give; ``look``: the frame's first look;
    ``meet``: the kernel's collider arguments, as a tuple (a call of more than 30 arguments is
    compiled as one of ``*args``, which numba cannot inline)."""
    (maps, backs, q, push, fixed, cmaps, moving, lim_p, lim_s, w_a, w_b, every, lipschitz, ref_p, room_p, ref_m,
     half_m, room_s, touched, looked, friction, give_fixed, give, settling, head_on, rounds, ridge, kept) = meet
    n = pos.shape[1]
    _substep(pos, prev, new, g0, step, i, h, keep, toward, base, extra, use_extra, kh2, share, length, pinned,
             root_direction, ftl_damping, tiny, lo, hi, carry)
    _local(new, q, push, maps[i - 1], lo, hi)
    for s in range(lo, hi):
        touched[s] = 0
    for k in range(len(mine)):
        col = mine[k]
        fm, mv = cmaps[i - 1, k], moving[k]
        meet_collider(q, lo, hi, fixed, k, col, fm, mv, lim_p, lim_s, w_a, w_b, look, every, lipschitz, ref_p,
                      room_p, ref_m, half_m, room_s, held, touched, looked)
    for s in range(lo, hi):
        if touched[s] > 0:
            _respond(new, prev, q, push, backs[i - 1], s, friction)
            if gives(new, length, push, give, settling, head_on, s) and give_chain(
                    new, length, push, s, give_fixed, rounds, ridge, kept, moved, 0):
                for j in range(n):
                    for c in range(3):
                        new[c, j, s] += moved[c, j, 0]
                        prev[c, j, s] += moved[c, j, 0]
        else:
            for j in range(n):
                for c in range(3):
                    push[c, j, s] = 0.0
    _kept(new, pos, lo, hi)


@njit(cache=True, parallel=True)
def verlet_substeps_pairs(pos, prev, new, g0, step, first, count, h, keep, toward, base, extra, kh2, share, length,
                          pinned, root_direction, ftl_damping, tiny, kinds, floats, tables, hair, vol, grids):
    """``verlet_substeps`` with hair against hair (seed 004) in the same launch: at every
    substep each point's acceleration ``extra`` — ``base``, the force fields, the static links
    and the repulsion of the segments of other strands closer than the diameter, or the hair's
    volume — then the substep. ``hair``, ``vol``, ``grids``: ``hair_hair``'s (the pairs' list
    in ``hair`` and the volume's ``start``, ``rho``, ``mom`` kept up to date). Returns
    ``hair_hair``'s list and volume's scratch as the launch ends (a volume that cannot be made
    stops the launch before the substep that needs it)."""
    num = pos.shape[2]
    blocks = (num + BLOCK - 1) // BLOCK
    pi, pj = hair[-2], hair[-1]
    start, rho, mom = grids
    for i in range(first, first + count):
        pi, pj, start, rho, mom, ok = hair_hair(pos, prev, step, h, keep, toward, base, extra, kinds, floats, tables,
                                                hair, vol, pi, pj, start, rho, mom)
        if not ok:
            break
        for b in prange(blocks):
            lo, hi = b * BLOCK, min((b + 1) * BLOCK, num)
            carry = np.empty((3, hi - lo))
            _substep(pos, prev, new, g0, step, i, h, keep, toward, base, extra, True, kh2, share, length, pinned,
                     root_direction, ftl_damping, tiny, lo, hi, carry)
            _kept(new, pos, lo, hi)
    return pi, pj, start, rho, mom


@njit(cache=True, parallel=True)
def verlet_substeps_met_pairs(pos, prev, new, g0, step, first, count, h, keep, toward, base, extra, kh2, share,
                              length, pinned, root_direction, ftl_damping, tiny, kinds, floats, tables, maps, backs, q,
                              push, fixed, cols, cmaps, moving, lim_p, lim_s, w_a, w_b, fresh, every, lipschitz,
                              ref_p, room_p, ref_m, half_m, room_s, touched, looked, friction, give_fixed, give,
                              settling, head_on, rounds, ridge, kept, hair, vol, grids):
    """``verlet_substeps_met`` with hair against hair in the same launch, as
    ``verlet_substeps_pairs``: every substep's accelerations, then each block of strands
    stepped and meeting the colliders. Returns as ``verlet_substeps_pairs`` does."""
    n, num = pos.shape[1], pos.shape[2]
    blocks = (num + BLOCK - 1) // BLOCK
    meet = (maps, backs, q, push, fixed, cmaps, moving, lim_p, lim_s, w_a, w_b, every, lipschitz, ref_p, room_p,
            ref_m, half_m, room_s, touched, looked, friction, give_fixed, give, settling, head_on, rounds, ridge, kept)
    for s in prange(num):
        looked[s] = 0
    pi, pj = hair[-2], hair[-1]
    start, rho, mom = grids
    for i in range(first, first + count):
        pi, pj, start, rho, mom, ok = hair_hair(pos, prev, step, h, keep, toward, base, extra, kinds, floats, tables,
                                                hair, vol, pi, pj, start, rho, mom)
        if not ok:
            break
        for b in prange(blocks):
            lo, hi = b * BLOCK, min((b + 1) * BLOCK, num)
            carry, held, moved = np.empty((3, hi - lo)), np.empty((4, hi - lo)), np.empty((3, n, 1))
            mine = cols[get_thread_id()]
            look = fresh and i == first
            _met_block(pos, prev, new, g0, step, i, h, keep, toward, base, extra, True, kh2, share, length,
                       pinned, root_direction, ftl_damping, tiny, lo, hi, carry, held, moved, look, mine, meet)
    return pi, pj, start, rho, mom


@njit(cache=True, parallel=True)
def hair_hair(pos, prev, step, h, keep, toward, base, extra, kinds, floats, tables, hair, vol, pi, pj, start, rho,
              mom):
    """Each point's acceleration ``extra`` (3, n, S) at the substep's start, in the layer's
    numpy order (``VerletStrands.interaction``): ``base`` plus the force fields (``_fields``),
    plus the static links' springs (``pairs.gather_links``) and the repulsion of every pair of
    segments of different strands closer than the threshold (``pairs.measure_pairs``, summed per
    segment in the pairs' order, ``pairs.gather_repulsion``). The candidate pairs are a Verlet
    list (``interaction.Contacts``' rules, its state in ``hair``): kept while no point has
    moved half its skin in the frame ``track`` (4, 4), else searched again
    (``pairs.pairs_within``). Or, where ``vol``'s cell is not 0, the hair's volume in place of
    the pairs (``volume.strands_volume`` on the points in the frame ``track``, ``vol`` its tuple
    less the scratch ``start``, ``rho``, ``mom``). Returns the list ``(pi, pj)``, the volume's
    scratch, and whether its grid could be made (if not, ``extra`` is left without hair against
    hair and the launch stops).

    ``hair`` = ``(track, strand, threshold, margin, stiffness, rest_ends, link_a, link_b,
    link_rest, link_k, link_lists (4 arrays), at, state, skin, now, ends, out, work, pi, pj)`` —
    ``at``, ``now`` (3, P): the tracked points at the last search and now; ``state`` (4,) int64:
    whether there is a list, the calls it served, the searches, the pairs acting; ``skin`` (1,);
    ``ends`` (M, 6), ``out`` (3, n, S), ``work`` (``pairs.search_work``'s): scratch, kept from
    frame to frame."""
    (track, strand, threshold, margin, stiffness, rest_ends, link_a, link_b, link_rest, link_k,
     by_a, at_a, by_b, at_b, at, state, skin, now, ends, out, work) = hair[:21]
    n, num = pos.shape[1], pos.shape[2]
    m = (n - 1) * num
    blocks = (num + BLOCK - 1) // BLOCK
    for b in prange(blocks):
        lo, hi = b * BLOCK, min((b + 1) * BLOCK, num)
        if kinds.shape[0]:
            _fields(pos, prev, step, h, keep, toward, base, extra, kinds, floats, tables, lo, hi)
        else:
            for j in range(n):
                for k in range(3):
                    for s in range(lo, hi):
                        extra[k, j, s] = base[k]
        for j in range(n):
            for s in range(lo, hi):
                x, y, z = pos[0, j, s], pos[1, j, s], pos[2, j, s]
                p = j * num + s
                for k in range(3):
                    now[k, p] = track[k, 0] * x + track[k, 1] * y + track[k, 2] * z + track[k, 3]
    if threshold > 0.0:                  # the segments' ends: the pairs' alone
        for x in prange(m):
            kk, s = x // num, x % num
            for c in range(3):
                ends[x, c] = pos[c, kk, s]
                ends[x, 3 + c] = pos[c, kk + 1, s]
    if link_a.shape[0]:
        gather_links(pos, link_a, link_b, link_rest, link_k, by_a, at_a, by_b, at_b, out)
    else:
        out[...] = 0.0
    if threshold > 0.0:
        search = True
        if state[0]:
            serves, skin[0] = list_serves(most_moved(now, at), skin[0], margin, state[1])
            if serves:
                state[1] += 1
                search = False
        if search:
            pi, pj = pairs_within(ends, strand, threshold * (1 + 1e-6) + skin[0], 4.0, work)
            at[...] = now
            state[0] = 1
            state[1] = 1
            state[2] += 1
        rec = np.empty((pi.shape[0], 5))
        acts = measure_pairs(ends, pi, pj, threshold, rest_ends, True, stiffness, rec)
        by_i, at_i, by_j, at_j = pair_lists(pi, pj, acts, m)
        state[3] = by_i.shape[0]
        if by_i.shape[0]:
            on_a, on_b = np.empty((3, m)), np.empty((3, m))
            gather_repulsion(by_i, at_i, by_j, at_j, rec, on_a, on_b)
            for b in prange(blocks):
                lo, hi = b * BLOCK, min((b + 1) * BLOCK, num)
                for j in range(n):
                    for s in range(lo, hi):
                        for k in range(3):
                            v = out[k, j, s]
                            if j < n - 1:
                                v += on_a[k, j * num + s]
                            if j > 0:
                                v += on_b[k, (j - 1) * num + s]
                            out[k, j, s] = v
    if vol[0] > 0.0:
        ok, start, rho, mom = strands_volume(pos, prev, now, h, vol, start, rho, mom)
        if not ok:
            return pi, pj, start, rho, mom, False
        acc = vol[12]
        for b in prange(blocks):
            lo, hi = b * BLOCK, min((b + 1) * BLOCK, num)
            for k in range(3):
                for j in range(n):
                    for s in range(lo, hi):
                        out[k, j, s] += acc[k, j * num + s]
    for b in prange(blocks):
        lo, hi = b * BLOCK, min((b + 1) * BLOCK, num)
        for j in range(n):
            for k in range(3):
                for s in range(lo, hi):
                    extra[k, j, s] += out[k, j, s]
    return pi, pj, start, rho, mom, True


@njit(cache=True, inline="always")
def _substep(pos, prev, new, g0, step, i, h, keep, toward, base, extra, use_extra, kh2, share, length, pinned,
             root_direction, ftl_damping, tiny, lo, hi, carry):
    """Substep ``i`` of strands ``lo … hi − 1`` into ``new``: the prediction, the bend, the roots
    and lengths."""
    _predict(pos, prev, new, g0, step, i, h, keep, toward, base, extra, use_extra, kh2, lo, hi)
    if share > 0.0 and pos.shape[1] > 2:
        _bend(new, prev, g0, step, i, share, lo, hi, carry)
    _constrain(new, prev, g0, step, i, length, pinned, root_direction, ftl_damping, tiny, lo, hi)


@njit(cache=True, inline="always")
def _kept(new, pos, lo, hi):
    """The substep's positions of strands ``lo … hi − 1`` become the strands' own."""
    for j in range(new.shape[1]):
        for k in range(3):
            for s in range(lo, hi):
                pos[k, j, s] = new[k, j, s]


@njit(cache=True, inline="always")
def _local(x, q, start, m, lo, hi):
    """The points ``x`` of strands ``lo … hi − 1`` taken by ``m`` (4, 4) into ``q`` (the head's
    frame), and into ``start`` as they are there before the contacts."""
    n = x.shape[1]
    for j in range(n):
        for s in range(lo, hi):
            a, b, c = x[0, j, s], x[1, j, s], x[2, j, s]
            for k in range(3):
                v = m[k, 0] * a + m[k, 1] * b + m[k, 2] * c + m[k, 3]
                q[k, j, s] = v
                start[k, j, s] = v


@njit(cache=True, inline="always")
def _respond(x, prev, q, push, back, s, friction):
    """Strand ``s``'s push (``q − push``, head-local) taken into the world by ``back``'s linear
    part, into ``push``, and met by its points ``x`` with their last positions ``prev``
    (``collision.contacts.respond``: moved by it, their motion met as ``met`` says)."""
    n = x.shape[1]
    for j in range(n):
        lx, ly, lz = q[0, j, s] - push[0, j, s], q[1, j, s] - push[1, j, s], q[2, j, s] - push[2, j, s]
        dx = back[0, 0] * lx + back[0, 1] * ly + back[0, 2] * lz
        dy = back[1, 0] * lx + back[1, 1] * ly + back[1, 2] * lz
        dz = back[2, 0] * lx + back[2, 1] * ly + back[2, 2] * lz
        push[0, j, s], push[1, j, s], push[2, j, s] = dx, dy, dz
        r2 = dx * dx + dy * dy + dz * dz
        if r2 > 0.0:
            r = math.sqrt(r2)
            x0, x1, x2 = x[0, j, s] + dx, x[1, j, s] + dy, x[2, j, s] + dz
            vx, vy, vz = met(x[0, j, s] - prev[0, j, s], x[1, j, s] - prev[1, j, s], x[2, j, s] - prev[2, j, s],
                             dx / r, dy / r, dz / r, friction)
            x[0, j, s], x[1, j, s], x[2, j, s] = x0, x1, x2
            prev[0, j, s], prev[1, j, s], prev[2, j, s] = x0 - vx, x1 - vy, x2 - vz


@njit(cache=True, inline="always")
def _fields(pos, prev, step, h, keep, toward, base, extra, kinds, floats, tables, lo, hi):
    """Each point's acceleration ``extra`` of strands ``lo … hi − 1``: ``base`` plus the force
    fields' (``kernels.fields.accel_at``) at its place and velocity — ``(x − x_prev) / h`` damped
    over the substep toward the goal's, as ``_predict`` takes it — in the layer's numpy order."""
    n = pos.shape[1]
    for j in range(n):
        for s in range(lo, hi):
            v0 = _velocity(pos, prev, step, h, keep, toward, 0, j, s)
            v1 = _velocity(pos, prev, step, h, keep, toward, 1, j, s)
            v2 = _velocity(pos, prev, step, h, keep, toward, 2, j, s)
            a0, a1, a2 = accel_at(pos[0, j, s], pos[1, j, s], pos[2, j, s], v0, v1, v2, True, kinds, floats, tables)
            extra[0, j, s] = base[0] + a0
            extra[1, j, s] = base[1] + a1
            extra[2, j, s] = base[2] + a2


@njit(cache=True, inline="always")
def _velocity(pos, prev, step, h, keep, toward, k, j, s):
    """Component ``k`` of point ``j`` of strand ``s``'s velocity over the substep: ``(x − x_prev)
    / h`` damped exactly toward the goal's ``step / h`` (``keep``, ``toward``), in the layer's
    numpy order — what the prediction moves it by and the force fields' drag reads."""
    v = (pos[k, j, s] - prev[k, j, s]) / h
    v *= keep
    v += (1.0 - keep) * toward * (step[k, j, s] / h)
    return v


@njit(cache=True, inline="always")
def _predict(pos, prev, new, g0, step, i, h, keep, toward, base, extra, use_extra, kh2, lo, hi):
    """The prediction with the goal's spring taken implicitly: ``x' = (x + v h + a h² + k h²
    target) / (1 + k h²)``, ``v`` damped exactly over the substep toward the goal's velocity."""
    n = pos.shape[1]
    for j in range(n):
        for k in range(3):
            for s in range(lo, hi):
                target = g0[k, j, s] + step[k, j, s] * i
                v = _velocity(pos, prev, step, h, keep, toward, k, j, s)
                a = extra[k, j, s] if use_extra else base[k]
                x = pos[k, j, s] + v * h + a * (h * h) + kh2[j, s] * target
                new[k, j, s] = x / (1.0 + kh2[j, s])
                prev[k, j, s] = pos[k, j, s]


@njit(cache=True, inline="always")
def _goal_segment(g0, step, i, j, s):
    """The goal's segment ``j`` (from point ``j`` to ``j + 1``) at substep ``i``."""
    return ((g0[0, j + 1, s] + step[0, j + 1, s] * i) - (g0[0, j, s] + step[0, j, s] * i),
            (g0[1, j + 1, s] + step[1, j + 1, s] * i) - (g0[1, j, s] + step[1, j, s] * i),
            (g0[2, j + 1, s] + step[2, j + 1, s] * i) - (g0[2, j, s] + step[2, j, s] * i))


@njit(cache=True, inline="always")
def _shift(x, prev, j, s, fx, fy, fz):
    """Point ``j`` of strand ``s`` moved by ``f``, its last position with it (set, not thrown)."""
    x[0, j, s] += fx
    x[1, j, s] += fy
    x[2, j, s] += fz
    prev[0, j, s] += fx
    prev[1, j, s] += fy
    prev[2, j, s] += fz


@njit(cache=True, inline="always")
def _bend(x, prev, g0, step, i, share, lo, hi, carry):
    """``VerletStrands._bend`` on the strands ``lo … hi − 1``: each segment, root to tip,
    ``share`` of the way toward the goal's bend from the segment before it, its length kept,
    the tail riding along (``prev`` too)."""
    n = x.shape[1]
    carry[:] = 0.0
    for j in range(2, n):
        for c in range(hi - lo):
            s = lo + c
            ux, uy, uz = _goal_segment(g0, step, i, j - 2, s)
            nu = math.sqrt(max(ux * ux + uy * uy + uz * uz, 1e-300))
            ux, uy, uz = ux / nu, uy / nu, uz / nu
            dx, dy, dz = _goal_segment(g0, step, i, j - 1, s)
            ud = ux * dx + uy * dy + uz * dz
            cx, cy, cz = carry[0, c], carry[1, c], carry[2, c]
            _shift(x, prev, j, s, cx, cy, cz)
            wx = x[0, j - 1, s] - x[0, j - 2, s]
            wy = x[1, j - 1, s] - x[1, j - 2, s]
            wz = x[2, j - 1, s] - x[2, j - 2, s]
            nw = math.sqrt(max(wx * wx + wy * wy + wz * wz, 1e-300))
            wx, wy, wz = wx / nw, wy / nw, wz / nw
            coef = (ud + (wx * dx + wy * dy + wz * dz)) / max(1.0 + (ux * wx + uy * wy + uz * wz), 1e-6)
            sx, sy, sz = x[0, j, s] - x[0, j - 1, s], x[1, j, s] - x[1, j - 1, s], x[2, j, s] - x[2, j - 1, s]
            seg = math.sqrt(sx * sx + sy * sy + sz * sz)
            tx = ((dx - coef * (ux + wx) + (2.0 * ud) * wx) - sx) * share + sx
            ty = ((dy - coef * (uy + wy) + (2.0 * ud) * wy) - sy) * share + sy
            tz = ((dz - coef * (uz + wz) + (2.0 * ud) * wz) - sz) * share + sz
            scale = seg / math.sqrt(max(tx * tx + ty * ty + tz * tz, 1e-300))
            fx, fy, fz = tx * scale - sx, ty * scale - sy, tz * scale - sz
            _shift(x, prev, j, s, fx, fy, fz)
            carry[0, c] = cx + fx
            carry[1, c] = cy + fy
            carry[2, c] = cz + fz


@njit(cache=True, inline="always")
def _constrain(x, prev, g0, step, i, length, pinned, root_direction, ftl_damping, tiny, lo, hi):
    """``VerletStrands._constrain`` (follow-the-leader) on the strands ``lo … hi − 1``: the root on
    the goal's (its last position with it), the first segment along the goal's, then every point
    on its segment's length from its leader (``leader.place``, guided by where the segment was a
    substep ago, then by the goal's), the leader's velocity corrected through ``prev``."""
    n = x.shape[1]
    start = 1
    if pinned:
        for k in range(3):
            for s in range(lo, hi):
                x[k, 0, s] = g0[k, 0, s] + step[k, 0, s] * i
                prev[k, 0, s] = x[k, 0, s]
        if root_direction:
            for s in range(lo, hi):
                dx, dy, dz = _goal_segment(g0, step, i, 0, s)
                r = length[0, s] / max(math.sqrt(dx * dx + dy * dy + dz * dz), 1e-300)
                x[0, 1, s] = x[0, 0, s] + dx * r
                x[1, 1, s] = x[1, 0, s] + dy * r
                x[2, 1, s] = x[2, 0, s] + dz * r
            start = 2
    for j in range(start, n):
        for s in range(lo, hi):
            rx, ry, rz = _goal_segment(g0, step, i, j - 1, s)
            px, py, pz, _ = place(x[0, j - 1, s], x[1, j - 1, s], x[2, j - 1, s], x[0, j, s], x[1, j, s],
                                  x[2, j, s], length[j - 1, s], prev[0, j, s] - prev[0, j - 1, s],
                                  prev[1, j, s] - prev[1, j - 1, s], prev[2, j, s] - prev[2, j - 1, s],
                                  rx, ry, rz, 0.0, False, tiny)
            if j >= 2 and ftl_damping != 0.0:
                prev[0, j - 1, s] += ftl_damping * (px - x[0, j, s])
                prev[1, j - 1, s] += ftl_damping * (py - x[1, j, s])
                prev[2, j - 1, s] += ftl_damping * (pz - x[2, j, s])
            x[0, j, s], x[1, j, s], x[2, j, s] = px, py, pz


def _as_called():
    """``verlet_substeps`` with the argument types ``hair_wig.strands`` passes."""
    n, num = 4, 2
    pos = np.zeros((3, n, num))
    pos[2] = -np.arange(n)[:, None] * 0.1
    prev, new, g0 = pos.copy(), pos.copy(), pos.copy()
    step = np.zeros_like(pos)
    kh2, length = np.full((n, num), 0.1), np.full((n - 1, num), 0.1)
    for extra in (np.zeros((0, 0, 0)), np.zeros_like(pos)):
        verlet_substeps(pos, prev, new, g0, step, 1, 2, 0.01, 0.9, 0.5, np.zeros(3), extra, kh2, 0.5, length,
                        True, True, 1.0, 8.9e-16, *NO_FIELDS)


NO_FIELDS = (np.zeros((0, 4), np.int64), np.zeros((0, 13)), np.zeros((0, 0, 3)))   # ``pack_fields``' types, no field


# (what an artist reads while it runs, the call that compiles it as the core calls it)
WARM_UPS = (("strands", _as_called),)
