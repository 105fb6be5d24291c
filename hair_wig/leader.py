"""Follow-the-leader, conditioned: the one length projection every client shares (SPEC §6.4).

Refinement's length pass and its collision walk, the Strands layer's substeps and Style Hair's
relay all place a strand's points root to tip, each at its segment's length from the one placed
before it (Müller, Kim, Chentanez 2012, "Fast simulation of inextensible hair and fur"; seed 004's
distance constraint solved in one sweep)::

    p'_j = p'_{j−1} + ℓ_j u_j,    ℓ_j = e |d| + (1 − e) L_j,    d = p_j − p'_{j−1}

The textbook direction ``u = d / |d|`` is ill-conditioned where the segment is squashed
(``|d| ≪ L``: the rounding of ``d`` is multiplied by ``L / |d|``, hundreds of times on real
bakes) and folds the strand where the input is squashed: each leader overshoots its point, the
next segment points back, and hair that should bunch zig-zags by up to 180° (or, on a curl,
winds out into a spiral). So ``u`` is taken from ``d`` only where that is sound, and blends
continuously into a well-conditioned *guide* — the segment as the deformation asked for it (the
goal's own ``p_j − p_{j−1}``, or, in a dynamics layer, where the segment was a substep ago) —
as any of these grows:

* ``|d| / L`` falls below 0.75 (to 0.25: ``R0, R1``) — the conditioning;
* ``d`` turns more than 60° from the guide (to 90°: ``C0, C1``) — a fold;
* the guide is squashed below 80 % of ``L`` (to 50 %: ``K0, K1``) — bunching keeps the shape.

Where the guide is itself (nearly) zero the rest segment, carried by the head and the scalp,
takes over the same way (``G0, G1``). Nothing jumps, a zero-length segment gets a defined
direction, never a NaN, and a squashed strand has no turn sharper than its input's.

Rounding: where ``d`` is trusted the step is the textbook one (as ``p + (s − 1) d``); in a blend a
rounding ``δ`` of the inputs moves ``u`` by at most a few ``δ / L`` (``1 / R0``, and each weight's
slope times how far apart the two directions are — small where the leader is near its point),
not ``δ / |d|``. The last two rules apply to refinement and relays (``turn_back``), where the
guide is the input's own segment.
"""

from __future__ import annotations

import numpy as np

# The rules' constants (R0, R1, C0, C1, G0, G1, K0, K1, and what each means) live with the compiled
# kernel, in its own file: numba's cache is keyed on that file alone, so a constant changed
# anywhere else would leave the cached kernel on the old one (kernels/leader.py).
from .kernels.leader import C0, C1, G0, G1, K0, K1, R0, R1  # noqa: E402


def _smoothstep(x: np.ndarray) -> np.ndarray:
    """``3x² − 2x³`` on x clamped to [0, 1]: a weight with no jump and no kink at either end."""
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ks,ks->s", a, b)


def _unit_or(v: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """``v`` (3, K) scaled to unit length; ``fallback`` (3, K), unit, where ``v`` is zero."""
    n = np.sqrt(_dot(v, v))
    zero = n == 0
    out = v / np.where(zero, 1.0, n)
    if zero.any():
        out[:, zero] = fallback[:, zero]
    return out


_UP = np.array([0.0, 0.0, 1.0])


def guide_direction(guide: np.ndarray, length: np.ndarray, rest=None) -> np.ndarray:
    """The unit direction (3, K) a segment takes where its way to the point is not trusted: the
    ``guide`` (3, K) segment's own, blending into the ``rest`` segment's (3, K; an array, or a
    function of nothing returning one, read only when needed) as ``|guide| / L`` falls from
    ``G1`` to ``G0``. A zero guide with no rest (or a zero one) points along +Z: a direction
    still, and only ever used where the segment's length is zero too."""
    k = guide.shape[1]
    up = np.broadcast_to(_UP.astype(guide.dtype)[:, None], (3, k))
    ng = np.sqrt(_dot(guide, guide))
    g = guide / np.where(ng > 0, ng, 1.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        b = _smoothstep((ng / np.maximum(length, np.finfo(guide.dtype).tiny) - G0) / (G1 - G0))
    b = np.where(length > 0, b, np.where(ng > 0, 1.0, 0.0))
    weak = np.flatnonzero(b < 1)
    if weak.size == 0:
        return g
    r = rest() if callable(rest) else rest
    if r is None:
        r_unit = up[:, weak]
    else:
        r_unit = _unit_or(np.asarray(r, guide.dtype)[:, weak], up[:, weak])
    bw = b[weak]
    gw = g[:, weak]
    # Turned from the rest direction towards the guide by the fraction b of the angle between
    # them (a slerp): continuous in both, whatever that angle — a plain blend of the two would
    # cancel where a guide points back against its rest. Exactly opposite (no plane to turn
    # in) the stronger of the two is taken whole.
    cos = np.clip(_dot(gw, r_unit), -1.0, 1.0)
    theta = np.arccos(cos)
    sin = np.sin(theta)
    turn = sin > 1e-6
    with np.errstate(divide="ignore", invalid="ignore"):
        wr = np.where(turn, np.sin((1 - bw) * theta) / sin, 1 - bw)
        wg = np.where(turn, np.sin(bw * theta) / sin, bw)
    opposite = ~turn & (cos < 0)
    wr = np.where(opposite, (bw < 0.5).astype(wr.dtype), wr)
    wg = np.where(opposite, (bw >= 0.5).astype(wg.dtype), wg)
    mixed = gw * wg + r_unit * wr
    g[:, weak] = mixed / np.sqrt(_dot(mixed, mixed))
    return g


def follow_the_leader(leader: np.ndarray, point: np.ndarray, length: np.ndarray, guide: np.ndarray,
                      rest=None, elasticity: float = 0.0, out: np.ndarray | None = None,
                      scratch: np.ndarray | None = None, turn_back: bool = True,
                      work: np.ndarray | None = None) -> np.ndarray:
    """One conditioned follow-the-leader step on rows (3, S) (SPEC §6.4; module docstring).

    Parameters
    ----------
    leader : (3, S)
        Where the previous point was placed, ``p'_{j−1}``.
    point : (3, S)
        Where this point is asked to be, ``p_j``.
    length : (S,)
        The segment's length to keep, ``L_j`` (its rest length).
    guide : (3, S)
        The segment as the deformation asked for it — the goal's ``p_j − p_{j−1}``, or where
        the segment was before this substep: the direction taken where ``d`` is squashed or
        turns back.
    rest : (3, S), a function returning it, or None
        The rest segment in the same space: the direction where the guide is (nearly) zero.
    elasticity : float
        ``e`` in ``ℓ = e |d| + (1 − e) L``: 0 keeps every segment exactly its length.
    out : (3, S), optional
        Where ``p'_j`` is written; may be ``point`` itself (in place), never ``leader``.
    scratch : (S,), optional
        Reused for ``|d|``.
    work : (3, S), optional
        Reused for ``d`` (nothing of a row's size is allocated where every segment is sound).
    turn_back : bool
        Whether ``d`` turning more than 60° from the guide is taken as a fold (refinement and
        relays: the guide is what the deformation asked for). A dynamics layer's points are
        where its physics put them and may turn fast against a contact: there only a squashed
        ``d`` (or one within 41° of straight back) defers to the guide.

    Returns
    -------
    out : (3, S), ``p'_j``. Where ``d`` is long and agrees with the guide this is the textbook
    ``p'_{j−1} + s d``, ``s = e + (L / |d|)(1 − e)``, computed as ``p_j + (s − 1) d`` (and ``p_j``
    itself where ``s`` is 1 to 4 ulp: the groom at rest comes back exactly).
    """
    dtype = point.dtype
    if out is None:
        out = np.empty_like(point)
    length = np.asarray(length, dtype)
    d = np.subtract(point, leader, out=work)
    dd = _dot(d, d)
    gd = _dot(guide, d)
    gg = _dot(guide, guide)
    LL = length * length
    # Rows every rule trusts, tested in squares (no root, in place): |d| >= R1 L, d not against
    # the guide, the guide long enough to speak for itself (K1 L, or G1 L in a dynamics layer)
    # and, in refinement, d within 60° of it. Every other row — and every segment of zero rest
    # length — is weighed in full below; where its weight comes out 1 (a rounding at a rule's
    # edge) it keeps the textbook result all the same.
    t = np.multiply(LL, R1 * R1)
    sure = dd >= t
    sure &= gd >= 0
    sure &= length > 0
    np.multiply(LL, (K1 if turn_back else G1) ** 2, out=t)
    sure &= gg >= t                       # the guide speaks for itself (K1 >= G1)
    if turn_back:
        np.multiply(dd, gg, out=t)
        t *= C1 * C1
        np.multiply(gd, gd, out=LL)
        sure &= LL >= t
    odd = None if sure.all() else np.flatnonzero(~sure)
    if odd is not None:
        keep_d = d[:, odd].astype(np.float64)
    nd = np.sqrt(dd, out=scratch) if scratch is not None else np.sqrt(dd)
    scale = np.maximum(nd, np.finfo(dtype).tiny)
    e = dtype.type(elasticity)
    # a zero-length d overflows here to inf (and 0 · inf to NaN): never kept, every such row is
    # an odd one and is placed again below
    # The textbook p'_{j-1} + s d written as p + (s − 1) d: the same point, and a segment already
    # its length to the rounding of |d| (4 ulp) keeps its point bit for bit — a groom at rest,
    # or hair that only turned, comes back exactly, not re-rounded.
    with np.errstate(over="ignore", invalid="ignore"):
        np.divide(length, scale, out=scale)
        if e:
            scale *= 1 - e
            scale += e
        scale -= 1
        scale *= np.abs(scale) > 4 * np.finfo(dtype).eps
        d *= scale
        np.add(point, d, out=out)
    if odd is None:
        return out
    # The rows the screen left: their weight a in full (float64); where a < 1 the direction is
    # blended from d's into the guide's.
    L = length[odd].astype(np.float64)
    keep_nd = np.sqrt(_dot(keep_d, keep_d))
    rest_k = None
    if rest is not None:
        rest_k = (lambda: np.asarray(rest() if callable(rest) else rest)[:, odd].astype(np.float64))
    g_in = np.asarray(guide)[:, odd].astype(np.float64)
    g = guide_direction(g_in, L, rest_k)
    with np.errstate(divide="ignore", invalid="ignore"):
        Lq = np.where(L > 0, L, 1.0)
        dh = keep_d / np.where(keep_nd > 0, keep_nd, 1.0)
        a = _smoothstep((keep_nd / Lq - R0) / (R1 - R0))
        # a fold: d turned away from the guide (or, where that is too short to tell, the rest)
        cos = _dot(dh, g)
        if turn_back:
            fold = _smoothstep((cos - C0) / (C1 - C0))
            squashed = _smoothstep((np.sqrt(_dot(g_in, g_in)) / Lq - K0) / (K1 - K0))
            shape = np.where(L > 0, squashed, 1.0)
        else:                     # only never against the guide: the blend must not cancel
            fold = _smoothstep((cos + 0.75) / 0.5)
            shape = 1.0
    a = np.where(L > 0, a, 1.0) * fold * shape
    a = np.where(keep_nd > 0, a, 0.0)
    blend = np.flatnonzero(a < 1)
    if blend.size == 0:
        return out
    a, dh, g, keep_nd, L = a[blend], dh[:, blend], g[:, blend], keep_nd[blend], L[blend]
    rows = odd[blend]
    u = dh * a + g * (1 - a)
    nu = np.sqrt(_dot(u, u))
    flat = nu < 1e-6             # a guard: the blend only mixes directions within 139° of each other
    u = np.where(flat, g, u / np.where(flat, 1.0, nu))
    ell = elasticity * keep_nd + (1 - elasticity) * L
    out[:, rows] = (leader[:, rows].astype(np.float64) + u * ell).astype(dtype)
    return out
