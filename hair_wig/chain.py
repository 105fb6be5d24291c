"""A strand meeting a contact head-on: the least motion of the whole chain (issue 34 part 3).

Follow-the-leader and a contact's push along the surface normal meet badly where a segment
points into the surface. Pushed out by ``δ``, the segment is ``δ`` short; set back on its
length from a leader that stays, its end swings sideways by ``√(2 L δ)`` — hair hanging onto a
shoulder that rises a millimetre slides 8 mm in a frame and, with the velocity that left, buzzes
between two sides substep after substep. A hanging strand pushed at its end lifts instead: the
push goes up the chain to where the strand can give.

That is Gauss's principle of least constraint for a chain of equal masses: among the
displacements ``Δ`` of the free points that keep every segment's length and put every contact
on its surface, the one of least ``‖Δ‖²``::

    min ‖Δ‖²   s.t.   u_i · (Δ_i − Δ_{i−1}) = L_i − |x_i − x_{i−1}|,   n_c · Δ_c = r_c − n_c · x_c

linearised at the current chain (``u_i`` its unit segments) and solved by Gauss–Newton: a fixed
number of rounds of the minimum-norm step ``Δ = Aᵀ (A Aᵀ)⁻¹ g`` (fixed, so a chain's answer does
not depend on the chains solved beside it). Where the chain meets its contact well away from
head-on along its whole length, the error of a round is quadratic in its step and the lengths
come out to float64's rounding. A chain almost straight along the contact's normal is nearly
singular: the step grows like δ/θ and the rounds need not converge — that answer is no give, and
``settled`` refuses it (its lengths are off, or it moves points far more than the push).
Refinement's collision walk and the Strands layer's substeps share it: one answer to one
contact, not two that undo each other.

Each chain is solved on its own (hair_wig/kernels/chain.py, a chain per thread): its ``A Aᵀ``,
rows ordered along the chain, is banded — a segment meets only its neighbours and its ends'
contacts — and ``A Aᵀ + RIDGE·I`` is symmetric positive definite, so a banded LDLᵀ solves it in
time linear in the chain's points.
"""

from __future__ import annotations

import numpy as np

from .kernels.chain import give_candidates, give_chains, least_motion_chains

ROUNDS = 5
# added to A Aᵀ's diagonal: a row of no constraint (a point with no contact) solves to 0, and
# constraints that fight are met in the least-squares sense
RIDGE = 1e-12


def _held(fixed: int) -> int:
    """``fixed`` as the kernels take it, the root held at least."""
    if fixed < 1:
        raise ValueError("least_motion: the root must be held (fixed >= 1)")
    return int(fixed)


def least_motion(x: np.ndarray, fixed: int, length: np.ndarray, normal: np.ndarray, reach: np.ndarray,
                 rounds: int = ROUNDS) -> np.ndarray:
    """The chains ``x`` (3, n, K) moved, as little as they can be, so that every segment is its
    ``length`` (n − 1, K) and every point with a contact is on its plane: ``normal`` (3, n, K),
    unit where point ``j`` of chain ``k`` has a contact, zero where it has none; ``reach``
    (n, K): the plane's offset, ``normal · x = reach``. Points ``0 … fixed − 1`` do not move
    (``fixed`` ≥ 1: the root at least). Returns the new chains (3, n, K) float64 (``x`` is not
    changed).

    Minimum-norm Gauss–Newton steps (module docstring), ``rounds`` of them, on ``A Aᵀ`` built
    directly: one row per segment (``u_i`` at its end, ``−u_i`` at its start where that is
    free), one per free point (its contact's normal, or nothing). Constraints that cannot all
    hold (two contacts pushing one segment's ends apart) are met in the least-squares sense of
    the regularised system, never by a NaN.

    One kernel (``kernels.chain.least_motion_chains``), a chain per thread: ``A Aᵀ`` is banded
    along the chain and factored so; ``_least_motion_numpy`` is the same steps in numpy, the
    tests' reference."""
    fixed = _held(fixed)
    x = np.array(x, np.float64, order="C")
    if x.shape[1] > fixed and x.shape[2]:
        as_rows = lambda a: np.ascontiguousarray(a, np.float64)          # one compiled version
        least_motion_chains(x, fixed, as_rows(length), as_rows(normal), as_rows(reach), int(rounds), RIDGE)
    return x


def _least_motion_numpy(x: np.ndarray, fixed: int, length: np.ndarray, normal: np.ndarray, reach: np.ndarray,
                        rounds: int = ROUNDS) -> np.ndarray:
    """``least_motion`` in numpy, as it was before its kernel: the tests' reference. Every chain
    has a row for every point a contact touches in any chain (a row of zeros but for the ridge
    where its own has none), and ``A Aᵀ`` is solved dense (``numpy.linalg.solve``)."""
    fixed = _held(fixed)
    x = np.array(x, np.float64)
    _, n, k = x.shape
    r = n - fixed                          # free points, and the segments that end on them
    if r <= 0 or k == 0:
        return x
    normal = np.asarray(normal, np.float64)[:, fixed:]                 # (3, r, K)
    reach = np.asarray(reach, np.float64)[fixed:]                      # (r, K)
    length = np.asarray(length, np.float64)[fixed - 1:]               # (r, K)
    nn = np.einsum("kis,kis->is", normal, normal)
    touch = np.flatnonzero((nn > 0).any(axis=1))     # points with a contact in some chain: their rows
    size = r + len(touch)
    seg_i, con_i = np.arange(r), r + np.arange(len(touch))
    starts = touch < r - 1                             # a touching point that starts the next segment
    both = np.arange(size)
    twice = np.full((r, 1), 2.0)                       # a segment's two ends, both free…
    twice[0] = 1.0                                     # …but the first's start is held
    mat = np.zeros((k, size, size))
    mat[:, con_i, con_i] = nn[touch].T
    n_touch = normal[:, touch]
    for _ in range(rounds):
        seg = x[:, fixed:] - x[:, fixed - 1:-1]                        # (3, r, K)
        now = np.sqrt(np.einsum("kis,kis->is", seg, seg))
        u = seg / np.maximum(now, 1e-300)
        mat[:, seg_i, seg_i] = (twice * np.einsum("kis,kis->is", u, u)).T
        shared = -np.einsum("kis,kis->is", u[:, :-1], u[:, 1:]).T      # segments i, i + 1 share point i
        mat[:, seg_i[:-1], seg_i[1:]] = shared
        mat[:, seg_i[1:], seg_i[:-1]] = shared
        at_end = np.einsum("kis,kis->is", n_touch, u[:, touch]).T      # point p's contact · u_p (it ends p)
        mat[:, touch, con_i] = at_end
        mat[:, con_i, touch] = at_end
        after = touch[starts] + 1                                      # … and starts p + 1: −u_{p+1}
        at_start = -np.einsum("kis,kis->is", n_touch[:, starts], u[:, after]).T
        mat[:, after, con_i[starts]] = at_start
        mat[:, con_i[starts], after] = at_start
        mat[:, both, both] += RIDGE
        gap = reach[touch] - np.einsum("kis,kis->is", n_touch, x[:, fixed:][:, touch])
        g = np.concatenate([length - now, gap]).T                      # (K, size)
        lam = np.linalg.solve(mat, g[..., None])[..., 0].T            # (size, K)
        mat[:, both, both] -= RIDGE
        # Δ = Aᵀ λ: a point takes u_i λ_i of the segment it ends, −u_{i+1} λ_{i+1} of the one
        # it starts, and n λ of its contact
        step = u * lam[:r]
        step[:, :-1] -= u[:, 1:] * lam[1:r]
        step[:, touch] += n_touch * lam[r:]
        x[:, fixed:] += step
    return x


# A give keeps every length to KEPT of it (float32 rounds it to 6e-8 after)
KEPT = 1e-9


def settled(before: np.ndarray, after: np.ndarray, length: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Which of the chains ``before`` → ``after`` (3, n, K), segments ``length`` (n − 1, K), are a
    give to take: (K,) bool. Every length kept to ``KEPT``, and the whole motion ``‖Δ‖`` no more
    than ``bound`` (K,) — the motion of the swing the give replaces. The least motion is less
    than any other that keeps the lengths, the swing among them, wherever the linearisation
    holds; one that comes out larger (a chain nearly straight along the normal, where the step
    grows like δ/θ: measured 193 mm for a 0.5 mm push at 0.05°, its lengths 128 mm off) is no
    answer."""
    seg = np.diff(after, axis=1)
    off = np.abs(np.sqrt(np.einsum("kns,kns->ns", seg, seg)) - length).max(axis=0)
    moved = after - before
    total = np.sqrt(np.einsum("kns,kns->s", moved, moved))
    return (off <= KEPT * length.max(axis=0)) & (total <= bound) & np.isfinite(total)


# A segment a contact left this much of its length short met it head-on: the chain gives. A
# push along a surface the segment lies on changes its length by the push's square over the
# length, far below this for any push a substep makes.
GIVE = 1e-3
# A push of more than this share of its segment is no resting contact settling on a surface that
# moved a little (a strand thrown into a head): the chain does not give for it.
SETTLING = 0.05
# cos 45°: a segment nearer its contact's normal than this meets it head-on
HEAD_ON = np.sqrt(0.5)


def give(x: np.ndarray, length: np.ndarray, push: np.ndarray, fixed: int = 1):
    """A dynamics layer's contact, after its ``push`` (3, n, S) moved the points ``x``
    (3, n, S): where it left a segment more than ``GIVE`` of its ``length`` (n − 1, S) short,
    meeting a pushed end's surface head-on (within 45° of the push), and no push on the strand
    is over ``SETTLING`` of a segment, the strand gives as a chain (``least_motion``), in place,
    where that give is one to take (``settled``):
    every pushed point stays on its contact's plane (through where it was pushed, across its
    push) and every segment is set back on its length. Points ``0 … fixed − 1`` stay. Returns
    the strands that gave (positions into S) and how far their points moved (3, n, K).

    Only the strands pushed are given (a contact touches few).

    Two kernels, a strand per thread: ``kernels.chain.give_candidates`` reads every strand's
    pushes and segments for the strands to look at, ``give_chains`` gives those (their contacts,
    least motion and ``settled``); ``_give_numpy`` is the same in numpy, the tests' reference."""
    fixed = _held(fixed)
    n, num = x.shape[1], x.shape[2]
    none = np.zeros(0, np.int64), np.zeros((3, n, 0))
    rows = [np.ascontiguousarray(a, np.float64) for a in (x, length, push)]    # one compiled version
    look = np.empty(num, np.bool_)
    give_candidates(*rows, GIVE, SETTLING, HEAD_ON, look)
    pick = np.flatnonzero(look)
    if pick.size == 0:
        return none
    moved, ok = np.empty((3, n, pick.size)), np.empty(pick.size, np.bool_)
    give_chains(*rows, pick, fixed, ROUNDS, RIDGE, KEPT, moved, ok)
    if not ok.any():
        return none
    at, moved = pick[ok], moved[:, :, ok]
    x[:, :, at] += moved
    return at, moved


def _give_numpy(x: np.ndarray, length: np.ndarray, push: np.ndarray, fixed: int = 1):
    """``give`` in numpy, as it was before its kernels (with ``_least_motion_numpy``): the tests'
    reference."""
    none = np.zeros(0, np.int64), np.zeros((3, x.shape[1], 0))
    r2 = np.einsum("kns,kns->ns", push, push)
    hit = np.flatnonzero(r2.max(axis=0) > 0)
    if hit.size == 0:
        return none
    r2, x_hit, lengths = r2[:, hit], x[:, :, hit], length[:, hit]
    pushed = r2 > 0
    normal = push[:, :, hit] / np.sqrt(np.where(pushed, r2, 1.0))
    seg = np.diff(x_hit, axis=1)
    now = np.sqrt(np.einsum("kns,kns->ns", seg, seg))
    short = lengths - now > GIVE * lengths
    # head-on: the segment within 45° of its pushed end's normal (a swing then moves the end
    # more than its push). A segment lying across a bar is pushed up at both ends by its middle's
    # contact; those ends' planes are not the bar's, and giving along them slid it off
    cos = np.abs(np.einsum("kns,kns->ns", seg, normal[:, 1:])) / np.maximum(now, 1e-300)
    cos_lead = np.abs(np.einsum("kns,kns->ns", seg, normal[:, :-1])) / np.maximum(now, 1e-300)
    short &= (pushed[1:] & (cos > HEAD_ON)) | (pushed[:-1] & (cos_lead > HEAD_ON))
    settling = (r2 <= (SETTLING * SETTLING) * np.min(lengths, axis=0) ** 2).all(axis=0)
    pick = np.flatnonzero(short.any(axis=0) & settling)
    if pick.size == 0:
        return none
    n = np.where(pushed[None, :, pick], normal[:, :, pick], 0.0)
    chain = x_hit[:, :, pick]
    reach = np.einsum("kns,kns->ns", n, chain)
    gave = _least_motion_numpy(chain, fixed, lengths[:, pick], n, reach)
    # what follow-the-leader would do instead: swing the short segment's end back on its length
    # from a leader that stays, √(2 L δ) for a shortfall δ
    lacking = np.maximum(lengths[:, pick] - now[:, pick], 0.0)
    swing = np.sqrt(2.0 * (lengths[:, pick] * lacking).max(axis=0))
    ok = settled(chain, gave, lengths[:, pick], swing)
    if not ok.any():
        return none
    moved = gave[:, :, ok] - chain[:, :, ok]
    at = hit[pick[ok]]
    x[:, :, at] += moved
    return at, moved
