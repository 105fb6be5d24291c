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

from .errors import HairWigError
from .profiles import Profile


def _unit(v: np.ndarray, name: str) -> np.ndarray:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    if np.any(~np.isfinite(v)) or np.any(norm <= 0):
        bad = int(np.flatnonzero((norm[..., 0] <= 0) | ~np.isfinite(v).all(axis=-1))[0])
        raise HairWigError(f"Style Hair: strand {bad} has no {name} (zero or not finite)")
    return v / norm


def cantilever(roots, directions, length, points: int, load, stiffness: float,
               stiffness_profile: Profile | None = None) -> np.ndarray:
    """Strands styled as cantilevers (seed 003, eqs. 2–3): ``(S, points, 3)``.

    ``roots`` (S, 3) and start ``directions`` (S, 3, any length) of the strands; ``length``
    (S,) or a number: each strand's length, split into ``points − 1`` equal segments; ``load``
    the force per unit length on the strand — (3,) the same everywhere, (S, 3) per strand or
    (S, points − 1, 3) per segment (gravity times the hair's mass per length, plus a styling
    force); ``stiffness`` the flexural rigidity ``EI``, times ``stiffness_profile`` (root to tip)
    where given. Segment lengths are exact by construction. A strand aimed exactly against its
    load is in balance (the moment is zero) and stays straight, as an ideal column below its
    buckling load would: give it a styling force with some sideways part."""
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
        raise HairWigError(f"Style Hair: strand {bad} has length {length[bad]} (must be > 0)")
    m = n - 1                                                   # segments
    seg = length / m                                            # (S,)
    f = np.asarray(load, np.float64)
    if f.shape == (3,):
        f = np.broadcast_to(f, (num, m, 3))
    elif f.shape == (num, 3):
        f = np.broadcast_to(f[:, None, :], (num, m, 3))
    elif f.shape != (num, m, 3):
        raise HairWigError(f"Style Hair: load must be (3,), ({num}, 3) or ({num}, {m}, 3), got {f.shape}")
    # EI where each slope step is taken: at the root's quarter and at every joint
    t = np.r_[0.25 / m, np.arange(1, m) / m]
    ei = stiffness * (np.ones_like(t) if stiffness_profile is None else stiffness_profile(t))
    if np.any(~np.isfinite(ei)) or np.any(ei <= 0):
        raise HairWigError("Style Hair: the stiffness profile must stay above 0 along the strand")
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
        direction = _turn_towards(direction, w, step / ei[k])
        out[:, k + 1] = out[:, k] + seg[:, None] * direction
    return out


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
