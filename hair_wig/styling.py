"""Hairstyles from physics (seed 003, Kim, Lee, Ko; SPEC §7 "003"): strands bent like cantilever
beams under gravity and styling forces.

A strand is a chain of equal segments of length ``l`` grown from its root along a start
direction. The slope of the elastic curve follows the bending moment, ``dθ/dx = M(x) / EI``
(seed 003, eq. 2), where the moment at ``x`` is that of the loads on the rest of the strand
(eq. 3):

    M(x) = Σ_{i>k} F_i l_i (c_i − x) + ½ F_k (c_k + ½ l_k − x)²,    c_i = Σ_{j<i} l_j + ½ l_i,

``F_i`` the load per unit length on segment ``i`` (gravity plus a styling force). In three
dimensions (the seed's polar generalisation) the loads are vectors: the lever arms are taken
along the strand's current direction ``T``, so the moment is ``T × W(x)`` with
``W(x) = Σ F_i l_i (c_i − x)`` (plus the part of the segment holding ``x``), and the strand
turns about ``T × W`` towards ``W`` — never past it (the moment vanishes there), so however
soft the hair it comes to rest along its load, as a hanging strand does. For a small deflection
this is the seed's linear beam exactly: a uniform load perpendicular to a straight strand gives
the tip slope ``F L³ / (6 EI)`` and tip deflection ``F L⁴ / (8 EI)``.

Forward kinematics builds each strand root to tip from its segment directions, so every segment
has its length exactly. Arrays are strand-major, ``(S, n, 3)``; the march runs over the ``n``
points, each step over all strands at once.
"""

from __future__ import annotations

import numpy as np

from .errors import FROM_ZERO, HairWigError
from .leader import follow_the_leader, guide_direction
from .profiles import Profile


def _unit(v: np.ndarray, name: str) -> np.ndarray:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    if np.any(~np.isfinite(v)) or np.any(norm <= 0):
        bad = int(np.flatnonzero((norm[..., 0] <= 0) | ~np.isfinite(v).all(axis=-1))[0])
        raise HairWigError(f"Style Hair: strand {bad} has no {name} (zero or not finite){FROM_ZERO}")
    return v / norm


def cantilever(roots, directions, length, points: int, load, stiffness: float,
               stiffness_profile: Profile | None = None, collide=None, moment=None) -> np.ndarray:
    """Strands styled as cantilevers (seed 003, eqs. 2–3): ``(S, points, 3)``.

    ``roots`` (S, 3) and start ``directions`` (S, 3, any length) of the strands; ``length``
    (S,) or a number: each strand's length, split into ``points − 1`` equal segments; ``load``
    the force per unit length on the strand — (3,) the same everywhere, (S, 3) per strand or
    (S, points − 1, 3) per segment (gravity times the hair's mass per length, plus a styling
    force); ``stiffness`` the flexural rigidity ``EI``, times ``stiffness_profile`` (root to tip)
    where given. Segment lengths are exact by construction. A strand aimed exactly against its
    load is in balance (the moment is zero) and stays straight, as an ideal column below its
    buckling load would: give it a styling force with some sideways part.

    ``collide(points, k)`` → points: where the head (and what else collides) puts the points
    ``k`` (S, 3) of every strand, pushed out (seed 003's collision while styling). A pushed
    point is laid back at its segment's length in the pushed direction, and the strand goes on
    from there, so it slides over the head with its lengths exact.

    ``moment`` (S, points − 1, 3): a bending moment that acts where it is, added at each slope
    step (at ``slope_stations``): a load whose far part the seed leaves out ("each segment ...
    an independent rod", §2), as the rotating curl force's (``curl_moments``)."""
    roots = np.asarray(roots, np.float64)
    if roots.ndim != 2 or roots.shape[1] != 3:
        raise HairWigError(f"Style Hair: roots must be (strands, 3), got {roots.shape}")
    num, n = len(roots), int(points)
    if n < 2:
        raise HairWigError(f"Style Hair: a strand needs 2 points or more, got {points}")
    if not np.isfinite(stiffness) or stiffness <= 0:
        raise HairWigError(f"Style Hair: stiffness must be > 0, got {stiffness}")
    d0 = _unit(np.broadcast_to(np.asarray(directions, np.float64), (num, 3)), "start direction")
    length = np.broadcast_to(np.asarray(length, np.float64), (num,))
    if np.any(~np.isfinite(length)) or np.any(length <= 0):
        bad = int(np.flatnonzero(~np.isfinite(length) | (length <= 0))[0])
        raise HairWigError(f"Style Hair: strand {bad} has length {length[bad]} (must be > 0){FROM_ZERO}")
    m = n - 1                                                   # segments
    seg = length / m                                            # (S,)
    f = np.asarray(load, np.float64)
    if f.shape == (3,):
        f = np.broadcast_to(f, (num, m, 3))
    elif f.shape == (num, 3):
        f = np.broadcast_to(f[:, None, :], (num, m, 3))
    elif f.shape != (num, m, 3):
        raise HairWigError(f"Style Hair: load must be (3,), ({num}, 3) or ({num}, {m}, 3), got {f.shape}")
    if moment is not None and np.shape(moment) != (num, m, 3):
        raise HairWigError(f"Style Hair: moment must be ({num}, {m}, 3), got {np.shape(moment)}")
    ei = flexural_rigidity(stiffness, stiffness_profile, m)
    # W at joint k (x_k = k l): Σ_{i≥k} F_i l (c_i − x_k) = l² Σ_{i≥k} F_i (i + ½ − k), from the
    # suffix sums A_k = Σ_{i≥k} F_i (i + ½) and B_k = Σ_{i≥k} F_i
    i = np.arange(m)[None, :, None] + 0.5
    a = np.cumsum((f * i)[:, ::-1], axis=1)[:, ::-1]            # (S, m, 3)
    b = np.cumsum(f[:, ::-1], axis=1)[:, ::-1]
    l2 = (seg * seg)[:, None]
    out = np.empty((num, n, 3))
    out[:, 0] = roots
    direction = d0.copy()
    for k in range(m):
        if k == 0:
            # the root's segment: the slope at its centre, the moment at its middle (x = l/4):
            # the segments beyond (levers c_i − l/4) and ½ F_0 (3l/4)² of its own
            w = l2 * (a[:, 1] - 0.25 * b[:, 1] + 0.28125 * f[:, 0]) if m > 1 else l2 * 0.28125 * f[:, 0]
            step = 0.5 * seg
        else:
            w = l2 * (a[:, k] - k * b[:, k])
            step = seg
        if moment is not None:
            w = w + moment[:, k]
        direction = _turn_towards(direction, w, step / ei[k])
        out[:, k + 1] = out[:, k] + seg[:, None] * direction
        if collide is not None:
            direction = _slide(collide, out[:, k], direction, seg, k + 1)
            out[:, k + 1] = out[:, k] + seg[:, None] * direction
    return out


def flexural_rigidity(stiffness: float, stiffness_profile: Profile | None, m: int) -> np.ndarray:
    """``EI`` (m,) at the slope stations of a strand of ``m`` segments: ``stiffness`` times its
    profile there."""
    t = slope_stations(m)
    ei = stiffness * (np.ones_like(t) if stiffness_profile is None else stiffness_profile(t))
    if np.any(~np.isfinite(ei)) or np.any(ei <= 0):
        raise HairWigError("Style Hair: the stiffness profile must stay above 0 along the strand")
    return ei


def slope_stations(m: int) -> np.ndarray:
    """Where along a strand of ``m`` segments (fractions 0…1) ``cantilever`` takes its slope
    steps: the root segment's quarter (the slope at its centre) and every joint."""
    return np.r_[0.25 / m, np.arange(1, m) / m]


def _slide(collide, base, direction, seg, k, rounds: int = 4):
    """Directions (S, 3) for the segments from ``base`` (S, 3) whose ends ``collide`` pushes:
    each turned toward the push just enough that its end, at the segment's length, lies on the
    plane the pushed point lies on, square to the push (the surface there, to first order) — the
    strand slides over the surface at its length. Repeated for ends still pushed, ``rounds``
    times; where that does not get an end out (a fold), the chord is laid toward the pushed
    point."""
    out = direction.copy()
    rows = np.arange(len(base))
    for _ in range(rounds):
        end, pushed = _pushed(collide, base, seg, out, rows, k)
        push = pushed - end
        size = np.linalg.norm(push, axis=1)
        hit = size > 0
        if not hit.any():
            return out
        rows, end, pushed, push, size = rows[hit], end[hit], pushed[hit], push[hit], size[hit]
        d = out[rows]
        n = push / size[:, None]
        # turn d toward n by α so that seg · (cos α d + sin α m) · n = (pushed − base) · n, m the
        # unit part of n square to d: seg cos(α − θ₀) = h with cos θ₀ = d · n
        cos0 = np.clip(np.einsum("sk,sk->s", d, n), -1.0, 1.0)
        theta0 = np.arccos(cos0)
        m = n - cos0[:, None] * d
        mn = np.linalg.norm(m, axis=1)
        m = np.divide(m, mn[:, None], out=np.zeros_like(m), where=mn[:, None] > 1e-12)
        h = np.einsum("sk,sk->s", pushed - base[rows], n)
        alpha = theta0 - np.arccos(np.clip(h / seg[rows], -1.0, 1.0))
        alpha = np.clip(alpha, 0.0, theta0)
        out[rows] = np.cos(alpha)[:, None] * d + np.sin(alpha)[:, None] * m
    # still pushed after every round: lay the chord toward the pushed point (lengths stay exact)
    _end, pushed = _pushed(collide, base, seg, out, rows, k)
    toward = pushed - base[rows]
    out[rows] = toward / np.maximum(np.linalg.norm(toward, axis=1, keepdims=True), 1e-300)
    return out


def relay(collide, strands):
    """``strands`` (S, n, 3) laid again root to tip, each segment at its own length and turned,
    where ``collide`` would push its end, just enough to slide over the surface (``_slide``).
    Each point is placed by the one follow-the-leader every client shares
    (``leader.follow_the_leader``), guided by the strand's own segment: a relay never divides
    by a squashed distance, and a zero-length segment still has a direction."""
    out = strands.copy()
    for k in range(1, strands.shape[1]):
        step = strands[:, k] - strands[:, k - 1]
        seg = np.linalg.norm(step, axis=1)
        direction = guide_direction(step.T, seg).T
        slid = _slide(collide, out[:, k - 1], direction, seg, k)
        leader = out[:, k - 1].T
        laid = seg * slid.T                          # the segment as laid: its own guide
        out[:, k] = follow_the_leader(leader, leader + laid, seg, laid).T
    return out


def _pushed(collide, base, seg, direction, rows, k):
    """The ends (R, 3) of strands ``rows``' segments from ``base`` along ``direction``, and
    where ``collide`` puts them (only those rows asked, when the collider can)."""
    end = base[rows] + seg[rows, None] * direction[rows]
    if hasattr(collide, "for_rows") and len(rows) < len(base):
        return end, np.asarray(collide.for_rows(rows)(end, k), np.float64)
    full = base + seg[:, None] * direction
    full[rows] = end
    return end, np.asarray(collide(full, k), np.float64)[rows]


def layer_offsets(roots, up, volume: float) -> np.ndarray:
    """Layered volume (seed 003, ``ω(θ_pore)``): how far (S,) above the head each strand's
    collision surface lies, ``volume`` for the highest root along ``up`` down to 0 for the
    lowest, so hair from the crown lies over hair from below."""
    h = np.asarray(roots, np.float64) @ _unit(np.asarray(up, np.float64)[None], "up direction")[0]
    span = h.max() - h.min() if len(h) else 0.0
    if volume < 0 or not np.isfinite(volume):
        raise HairWigError(f"Style Hair: volume must be >= 0, got {volume}")
    return volume * ((h - h.min()) / span if span > 0 else np.ones_like(h))


def _turn_towards(t: np.ndarray, w: np.ndarray, compliance: np.ndarray) -> np.ndarray:
    """Unit directions ``t`` (S, 3) turned towards ``w`` (S, 3) by ``|t × w| · compliance``
    radians (``Δx / EI``), and no further than onto ``w``."""
    along = np.einsum("sk,sk->s", t, w)
    across = w - along[:, None] * t                             # w's part normal to t
    size = np.linalg.norm(across, axis=1)                       # |t × w|
    angle = np.minimum(size * compliance, np.arctan2(size, along))
    normal = np.divide(across, size[:, None], out=np.zeros_like(across), where=size[:, None] > 0)
    turned = np.cos(angle)[:, None] * t + np.sin(angle)[:, None] * normal
    return turned / np.linalg.norm(turned, axis=1, keepdims=True)


def curl(axis, radius, turns, phase=0.0, turns_profile: Profile | None = None) -> np.ndarray:
    """Strands wound round a cylinder whose axis is the styled strand (seed 003, "cylindrical
    representation"): ``(S, n, 3)``.

    ``axis`` (S, n, 3): the axis's points (a cantilever's); ``radius`` (n,) or (S, n): the
    cylinder's radius at each point (0 at the root keeps the root where it grows); ``turns``
    (S,) or a number: the turns over the whole strand, spread evenly along the axis's length
    (so the pitch is ``axis length / turns``); ``phase`` (S,) or a number, radians: where round
    the axis each strand starts. The helix is laid in a frame carried along the axis without
    twist (each step's normal is the last one's, made square to the new direction), so a
    straight axis gives a circular helix of the radius and pitch set. ``turns_profile``: how
    tightly the turns come root (0) to tip (1), relative (the paper's turns per segment): the
    turns still add up to ``turns``, spread in proportion to it."""
    axis = np.asarray(axis, np.float64)
    if axis.ndim != 3 or axis.shape[2] != 3 or axis.shape[1] < 2:
        raise HairWigError(f"Curls: the axis must be (strands, points >= 2, 3), got {axis.shape}")
    num, n = axis.shape[:2]
    r = np.broadcast_to(np.asarray(radius, np.float64), (num, n))
    if np.any(~np.isfinite(r)) or np.any(r < 0):
        raise HairWigError("Curls: the radius must be finite and >= 0 everywhere along the strand")
    seg = np.diff(axis, axis=1)
    run = np.cumsum(np.concatenate([np.zeros((num, 1)), np.linalg.norm(seg, axis=2)], axis=1), axis=1)
    total = run[:, -1:]
    if np.any(total <= 0):
        raise HairWigError(f"Curls: strand {int(np.flatnonzero(total[:, 0] <= 0)[0])} has no length{FROM_ZERO}")
    u = run / total
    if turns_profile is not None:
        # the share of the turns made by u: the profile's running integral, normalised
        grid = np.linspace(0.0, 1.0, 513)
        rate = np.asarray(turns_profile(grid), np.float64)
        if np.any(~np.isfinite(rate)) or np.any(rate < 0) or rate.sum() <= 0:
            raise HairWigError("Curls: the turns profile must be >= 0 along the strand and above 0 somewhere")
        share = np.r_[0.0, np.cumsum(0.5 * (rate[1:] + rate[:-1]))]
        u = np.interp(u, grid, share / share[-1])
    angle = 2 * np.pi * np.broadcast_to(np.asarray(turns, np.float64), (num,))[:, None] * u
    angle = angle + np.broadcast_to(np.asarray(phase, np.float64), (num,))[:, None]
    normal, binormal = _carried_frame(axis)
    return axis + r[..., None] * (np.cos(angle)[..., None] * normal + np.sin(angle)[..., None] * binormal)


def _carried_frame(axis):
    """Two unit vectors (S, n, 3) square to the axis (S, n, 3) at each of its points and to
    each other, carried along it without twist (each point's normal is the last one's, made
    square to the direction there): round a straight axis, a fixed frame."""
    seg = np.diff(axis, axis=1)
    # directions at the points: the segment ahead at the root, behind at the tip, their mean between
    ahead = seg / np.linalg.norm(seg, axis=2, keepdims=True)
    tangent = np.concatenate([ahead[:, :1], ahead[:, :-1] + ahead[:, 1:], ahead[:, -1:]], axis=1)
    tangent /= np.linalg.norm(tangent, axis=2, keepdims=True)
    # a first normal square to the root's direction: across the axis it leans on least
    t0 = tangent[:, 0]
    pick = np.eye(3)[np.argmin(np.abs(t0), axis=1)]
    normal = np.cross(t0, pick)
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    normals = np.empty_like(axis)
    for k in range(axis.shape[1]):
        t = tangent[:, k]
        normal = normal - np.einsum("sk,sk->s", normal, t)[:, None] * t
        normal /= np.linalg.norm(normal, axis=1, keepdims=True)
        normals[:, k] = normal
    return normals, np.cross(tangent, normals)


def curl_moments(axis, strength, turns, stiffness, phase=0.0) -> np.ndarray:
    """Curls by force (seed 003, §2, perming: "an external force rotating about the straight hair
    in the beam model. As we march from the pore to the end, larger force should be loaded"):
    the bending moments (S, m, 3) at ``cantilever``'s slope stations (``slope_stations``) of a
    load per unit length square to the strand's ``axis`` (S, m + 1, 3) — the strand styled
    without it — turning ``turns`` (S,) or a number times about it root to tip from ``phase``,
    its size ``strength`` (force per length) at the tip, growing linearly from 0 at the root so
    the root stays put; ``stiffness``: ``EI`` at the stations, (m,) or (S, m).

    The moment is the one the load has where it acts, as on an endless helix: the seed styles
    "each segment ... as an independent rod" and leaves out the far loads' sum, whose straight
    lever arms add a rotating load's turns up into a bend to one side (measured on a 30 cm
    strand at Curl Force 2: 17 /m at the root, the tip 25 cm off the axis, no curl). A rod with no twisting moment under a load
    ``F`` per unit length turning at ``ω = 2π turns / L`` per unit length about a straight axis
    is in balance (Kirchhoff: ``n' + f = 0``, ``m' + t × n = 0``, ``m = EI t × t'``) as the helix

        curvature κ = F / (EI ω²),   torsion τ = √(ω² − κ²),   radius r = κ / ω²,

    displaced toward the load, ``turns`` turns of it over the strand (the internal force is
    ``F / (ω √(1 − κ²/ω²))`` round it): the moment is ``−F / ω²`` along the load. Past ``κ = ω``
    there is no helix (the coil lies flat there): the moment is held at ``EI ω``. The load turns
    in a frame carried along the axis without twist (``_carried_frame``), so a strand that
    gravity bends curls round the way it hangs."""
    axis = np.asarray(axis, np.float64)
    num, n = axis.shape[:2]
    m = n - 1
    turns = np.broadcast_to(np.asarray(turns, np.float64), (num,))
    if np.any(~(turns > 0)):
        raise HairWigError("Curls: a Rotating Force needs Turns above 0 (a force that does not turn "
                           "pushes the strand one way: use a Styling Force)")
    length = np.linalg.norm(np.diff(axis, axis=1), axis=2).sum(axis=1)             # (S,)
    omega = (2 * np.pi * turns / length)[:, None]                                 # per unit length
    t = slope_stations(m)
    size = np.broadcast_to(np.asarray(strength, np.float64), (num,))[:, None] * t  # F (S, m)
    ei = np.broadcast_to(np.asarray(stiffness, np.float64), (num, m))
    held = np.minimum(size / omega ** 2, ei * omega)                              # |M|: κ <= ω
    angle = 2 * np.pi * turns[:, None] * t + np.broadcast_to(np.asarray(phase, np.float64), (num,))[:, None]
    # the station at the root's quarter takes the root's frame, each joint its own
    normal, binormal = (v[:, :m] for v in _carried_frame(axis))
    return -held[..., None] * (np.cos(angle)[..., None] * normal + np.sin(angle)[..., None] * binormal)


# What styling holds per strand while it works, measured with tracemalloc (2k-8k strands of 16
# and 32 points, curls and collision on: 6.7 and 8.5 KB a strand), rounded up
STYLE_BYTES_PER_STRAND = 6144
STYLE_BYTES_PER_POINT = 128


def style_bytes(strands: int, points: int) -> int:
    """About how much memory styling ``strands`` strands of ``points`` points takes at once."""
    return int(strands) * (STYLE_BYTES_PER_STRAND + STYLE_BYTES_PER_POINT * int(points))


def grow_roots(positions, tri_verts, density: float, seed: int = 0, weight=None, tri_uv=None,
               tri_normals=None, points: int = 16, limit_gib: float | None = None, name: str = "Style Hair"):
    """Roots scattered on a surface (Style Hair's "grow on the scalp"): ``density`` strands per
    unit area, each triangle's share times its ``weight`` (T,) in 0…1 (a vertex group's mean, or
    1 for selected faces and 0 elsewhere), uniformly inside it, from ``seed``.

    ``positions`` (V, 3) and ``tri_verts`` (T, 3): the surface; ``tri_uv`` (T, 3, 2) its UV map
    and ``tri_normals`` (T, 3, 3) its corner normals, when given, are interpolated at the roots.
    Returns ``roots`` (N, 3), unit ``normals`` (N, 3), ``uv`` (N, 2) or None and the triangle
    (N,) of each root. The count is ``density × weighted area`` rounded, so the same settings
    give the same hair. With ``limit_gib``, a count whose styling (``points`` a strand) would need
    more memory than that is refused by ``name`` before anything is allocated."""
    v = np.asarray(positions, np.float64)
    tri = np.asarray(tri_verts, np.int64)
    a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
    face = np.cross(b - a, c - a)
    area = 0.5 * np.linalg.norm(face, axis=1)
    w = np.ones(len(tri)) if weight is None else np.clip(np.asarray(weight, np.float64), 0.0, 1.0)
    if not np.isfinite(density) or density < 0:
        raise HairWigError(f"Style Hair: density must be >= 0, got {density}")
    share = area * w
    want = density * share.sum()
    if limit_gib is not None and style_bytes(min(want, 2.0 ** 62), points) > limit_gib * 2 ** 30:
        raise HairWigError(
            f"{name}: Density {density:g} on {share.sum():.3g} square units grows {want:,.0f} strands of "
            f"{points} points, about {style_bytes(want, points) / 2 ** 30:,.1f} GiB to style, over the "
            f"{limit_gib:g} GiB memory limit (Bake ▸ Memory Limit): lower the Density")
    count = int(round(want))
    if count == 0:
        raise HairWigError("Style Hair: no roots to grow — the scalp part chosen has no area "
                           "(select faces, or paint the vertex group) or the density is too low")
    rng = np.random.default_rng(seed)
    at = rng.choice(len(tri), size=count, p=share / share.sum())
    r1, r2 = np.sqrt(rng.random(count)), rng.random(count)
    bary = np.stack([1 - r1, r1 * (1 - r2), r1 * r2], axis=1)
    roots = np.einsum("nk,nkd->nd", bary, v[tri[at]])
    if tri_normals is not None:
        normals = np.einsum("nk,nkd->nd", bary, np.asarray(tri_normals, np.float64)[at])
    else:
        normals = face[at]
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-300)
    uv = None if tri_uv is None else np.einsum("nk,nkd->nd", bary, np.asarray(tri_uv, np.float64)[at])
    return roots, normals, uv, at


def strand_lengths(count: int, length: float, randomness: float, seed: int = 0) -> np.ndarray:
    """Lengths (count,) of grown strands: ``length``, each up to ``randomness`` (0…1) of it
    shorter, at random from ``seed``."""
    if not 0 <= randomness <= 1:
        raise HairWigError(f"Style Hair: length randomness must be in 0…1, got {randomness}")
    return length * (1.0 - randomness * np.random.default_rng(seed + 1).random(count))


def arc_lengths(points, offsets) -> np.ndarray:
    """Length (S,) of each strand of a hair set given as points (P, 3) and curve ``offsets``
    (S + 1,): the sum of its segments."""
    points = np.asarray(points, np.float64)
    seg = np.r_[np.linalg.norm(np.diff(points, axis=0), axis=1), 0.0]
    run = np.r_[0.0, np.cumsum(seg)]
    offsets = np.asarray(offsets, np.int64)
    last = np.maximum(offsets[1:] - 1, offsets[:-1])
    return run[last] - run[offsets[:-1]]


def pull_toward(target, strength: float):
    """A styling force (``style_strands``' ``force_at``): ``strength`` (gravities) toward the
    point ``target`` (3,), wherever the hair is."""
    target = np.asarray(target, np.float64)

    def force_at(mid):
        v = target - mid
        size = np.linalg.norm(v, axis=-1, keepdims=True)
        return strength * np.divide(v, size, out=np.zeros_like(v), where=size > 0)
    return force_at


def field_force(fields, strength: float = 1.0, time: float = 0.0):
    """A styling force from force fields (``ForceField``: Wind, Turbulence) where the hair is,
    as they would push it (in gravities, 9.81 to one), times ``strength``."""
    def force_at(mid):
        total = np.zeros(np.shape(mid))
        for f in fields:
            total += f.force(mid, time)
        return (strength / 9.81) * total
    return force_at


def style_strands(roots, directions, lengths, counts, *, gravity, stiffness: float,
                  stiffness_profile: Profile | None = None, force=None, force_at=None,
                  passes: int = 3, collide=None, curl_radius=0.0, curl_radius_profile=None,
                  curl_turns=0.0, curl_turns_profile=None, curl_force=0.0, seed: int = 0,
                  tilt: float = 0.05) -> np.ndarray:
    """Style Hair, whole (seed 003): strands of ``counts`` (S,) points from ``roots`` (S, 3)
    along ``directions`` (S, 3), ``lengths`` (S,) long, bent as cantilevers (``cantilever``)
    under ``gravity`` (3,) (acceleration; the hair's weight per unit length, with unit mass per
    length) plus a styling force: ``force`` (3,) or (S, 3) everywhere, and ``force_at(midpoints
    (S, m, 3)) → (S, m, 3)`` where it depends on place (toward an Empty, a force field) —
    evaluated on the last pass's shape and styled again, ``passes`` times.

    ``stiffness`` is relative, so a groom looks the same at any scale: ``EI = stiffness ·
    |g| · L³`` with ``L`` the mean length and ``|g|`` 9.81 unless gravity is stronger; a strand
    held out square to gravity bends its tip by ``1 / (6 · stiffness)`` radians while that is
    small. ``collide`` as ``cantilever``'s. Curls (seed 003's cylindrical representation):
    ``curl_radius`` (absolute) times ``curl_radius_profile`` root to tip, ``curl_turns`` over the
    strand with ``curl_turns_profile``, each strand at a seeded phase; or ``curl_force`` (in
    gravities, at the tip) turning ``curl_turns`` times about the strand as styled without it
    (``curl_moments``: a helix of curvature ``F / (EI ω²)``, ``κ / ω = curl_force / (stiffness ·
    (2π turns)³)`` at the tip, the same at any scale).

    A start direction exactly against the load is a balanced column and would stay straight;
    every direction is tipped by a seeded ``tilt`` (0.05 rad, 3°, unseen on hair grown along
    the normals) so such hair falls to a side: soft hair (stiffness 0.02) grown straight up falls
    over, stiffer hair (0.05) stands — a forward march does not find a column's buckling — and
    wants a styling force with a sideways part.
    Returns the points (sum(counts), 3), strand after strand."""
    roots = np.asarray(roots, np.float64)
    counts = np.asarray(counts, np.int64)
    num = len(roots)
    if counts.shape != (num,):
        raise HairWigError(f"Style Hair: {num} roots but {counts.shape} point counts")
    lengths = np.broadcast_to(np.asarray(lengths, np.float64), (num,))
    d = _unit(np.broadcast_to(np.asarray(directions, np.float64), (num, 3)), "start direction")
    rng = np.random.default_rng(seed)
    if tilt:
        d = _unit(d + tilt * rng.normal(size=(num, 3)), "start direction")
    phase = rng.uniform(0, 2 * np.pi, num)
    g = np.asarray(gravity, np.float64)
    unit = max(9.81, float(np.linalg.norm(g)))
    ei = stiffness * unit * float(np.mean(lengths)) ** 3 if num else 1.0
    out = np.empty((int(counts.sum()), 3))
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    for n in np.unique(counts):              # strands of one point count are styled together
        pick = np.flatnonzero(counts == n)
        if n < 2:
            out[starts[pick]] = roots[pick]
            continue
        base = np.broadcast_to(g, (len(pick), n - 1, 3)).copy()
        if force is not None:
            f = np.asarray(force, np.float64)
            base += (f[pick][:, None, :] if f.ndim == 2 else f) * unit
        grown = None
        for _ in range(max(1, passes) if force_at is not None else 1):
            load = base
            if force_at is not None:
                if grown is None:                      # the first pass: along the start direction
                    t = (np.arange(n - 1) + 0.5) / (n - 1)
                    mid = roots[pick, None] + lengths[pick, None, None] * t[None, :, None] * d[pick, None]
                else:
                    mid = 0.5 * (grown[:, 1:] + grown[:, :-1])
                load = base + unit * np.asarray(force_at(mid), np.float64)
            grown = cantilever(roots[pick], d[pick], lengths[pick], n, load, ei, stiffness_profile,
                               None if collide is None else _rows(collide, pick))
        if curl_force:                           # curled round the strand as styled so far
            moment = curl_moments(grown, unit * curl_force, curl_turns, ei * flexural_rigidity(
                1.0, stiffness_profile, n - 1), phase[pick])
            grown = cantilever(roots[pick], d[pick], lengths[pick], n, load, ei, stiffness_profile,
                               None if collide is None else _rows(collide, pick), moment)
        if curl_radius and curl_turns and not curl_force:
            radius = curl_radius * (np.ones(n) if curl_radius_profile is None
                                    else np.asarray(curl_radius_profile(np.linspace(0, 1, n)), np.float64))
            grown = curl(grown, radius, curl_turns, phase[pick], curl_turns_profile)
            if collide is not None:              # a curl may dip into the head: slid out again
                grown = relay(_rows(collide, pick), grown)
        index = starts[pick][:, None] + np.arange(n)[None, :]
        out[index.ravel()] = grown.reshape(-1, 3)
    return out


def _rows(collide, pick):
    """``collide`` for the strands ``pick`` (a ``SurfaceCollide`` keeps a limit per strand)."""
    return collide.for_rows(pick) if hasattr(collide, "for_rows") else collide
