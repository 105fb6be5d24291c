"""Profile curves (seed 000: flex profile FIG. 9A, length profile FIG. 9B, falloff, attachment,
compression, gravity and secondary-blend profiles; SPEC §1).

A profile maps [0, 1] to a multiplier. It is given by sorted control points and sampled once into
a lookup table, so evaluating it for every vertex of a wig is one vectorised gather.
"""

from __future__ import annotations

import numpy as np

from .errors import HairWigError

LUT_SIZE = 1025     # spacing 1/1024: control points at dyadic x are sampled exactly


def _monotone_slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Fritsch–Carlson slopes: a smooth curve through the points that never overshoots them."""
    h = np.diff(x)
    delta = np.diff(y) / h
    m = np.empty_like(y)
    m[0], m[-1] = delta[0], delta[-1]
    m[1:-1] = np.where(delta[:-1] * delta[1:] > 0, (delta[:-1] + delta[1:]) / 2, 0.0)
    flat = delta == 0
    m[:-1][flat] = 0.0
    m[1:][flat] = 0.0
    a = np.divide(m[:-1], delta, out=np.zeros_like(delta), where=~flat)
    b = np.divide(m[1:], delta, out=np.zeros_like(delta), where=~flat)
    s = a * a + b * b
    scale = np.where(s > 9, 3 / np.sqrt(np.maximum(s, 1e-300)), 1.0)
    m[:-1] *= np.where(flat, 1.0, scale)
    m[1:] *= np.where(flat, 1.0, scale)
    return m


class Profile:
    """A profile curve through ``points`` with ``interpolation`` 'LINEAR' or 'SMOOTH'.

    Parameters
    ----------
    points : (K, 2) float
        Control points ``(x, y)`` with x strictly increasing inside [0, 1]; the curve is flat
        beyond the first and last point.
    interpolation : 'LINEAR' | 'SMOOTH'
        Piecewise linear, or monotone cubic (smooth without overshooting the points).
    name : str
        What the profile is called in messages ("flex", "falloff of 'Magnet'", ...).
    """

    def __init__(self, points, interpolation: str = "LINEAR", name: str = "profile"):
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] != 2 or len(pts) == 0:
            raise HairWigError(f"{name} profile needs control points (x, y), got shape {pts.shape}")
        if not np.isfinite(pts).all():
            raise HairWigError(f"{name} profile has a NaN or infinite control point")
        x, y = pts[:, 0], pts[:, 1]
        if x.min() < 0 or x.max() > 1:
            raise HairWigError(f"{name} profile has control points outside 0..1 on x")
        if np.any(np.diff(x) <= 0):
            raise HairWigError(f"{name} profile's control points must have strictly increasing x")
        if interpolation not in ("LINEAR", "SMOOTH"):
            raise HairWigError(f"{name} profile: interpolation must be LINEAR or SMOOTH, got {interpolation!r}")
        self.name = name
        self.points = pts
        self.interpolation = interpolation
        u = np.linspace(0.0, 1.0, LUT_SIZE)
        if interpolation == "LINEAR" or len(pts) < 3:
            lut = np.interp(u, x, y)
        else:
            m = _monotone_slopes(x, y)
            i = np.clip(np.searchsorted(x, u, side="right") - 1, 0, len(x) - 2)
            h = x[i + 1] - x[i]
            s = np.clip((u - x[i]) / h, 0.0, 1.0)
            h00, h10 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s
            h01, h11 = -2 * s**3 + 3 * s**2, s**3 - s**2
            lut = h00 * y[i] + h10 * h * m[i] + h01 * y[i + 1] + h11 * h * m[i + 1]
            lut = np.where(u < x[0], y[0], np.where(u > x[-1], y[-1], lut))
        self.lut = lut.astype(np.float32)

    @classmethod
    def constant(cls, value: float = 1.0, name: str = "profile") -> "Profile":
        return cls([(0.0, value), (1.0, value)], "LINEAR", name)

    @classmethod
    def linear(cls, start: float, end: float, name: str = "profile") -> "Profile":
        return cls([(0.0, start), (1.0, end)], "LINEAR", name)

    @classmethod
    def pinned_root(cls, reach: float = 0.2, name: str = "profile") -> "Profile":
        """0 at the root, rising straight to 1 at ``reach``, 1 beyond: the Pinned Root preset of
        the secondary blend (seed 000's dynablend is uniform along the strand; only the root
        stays put)."""
        return cls([(0.0, 0.0), (reach, 1.0), (1.0, 1.0)], "LINEAR", name)

    @classmethod
    def ease_out(cls, name: str = "profile") -> "Profile":
        """1 at 0 falling smoothly to 0 at 1, flat at both ends: the default magnet falloff."""
        return cls([(0.0, 1.0), (0.25, 0.9), (0.75, 0.1), (1.0, 0.0)], "SMOOTH", name)

    def __call__(self, u) -> np.ndarray:
        """Evaluate at ``u`` (any shape), clamped to [0, 1]; float32 result."""
        u = np.clip(np.asarray(u, dtype=np.float32), 0.0, 1.0) * np.float32(LUT_SIZE - 1)
        i = np.minimum(u.astype(np.int32), LUT_SIZE - 2)
        f = u - i
        return self.lut[i] * (1 - f) + self.lut[i + 1] * f
