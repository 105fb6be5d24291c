"""Damped springs: dynamic magnets (SPEC §4) and secondary movement (SPEC §5), seed 000
"Primary Movement" (dynamic magnets) and "Secondary Movement".

The seed writes the spring force as ``R·v_prev − k·x``; read literally it pushes away from the
target and accelerates with velocity. We use the physically meant signs (SPEC §4):

    mass · a = k (target − x) − R v + f

and step it exactly: over a step of length ``dt`` with the target and the force ``f`` held, the
motion is the damped oscillator's closed-form solution, so the step is unconditionally stable and
exact for any stiffness (no explicit-Euler blow-up at k = 10⁴, dt = 1/24).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .errors import HairWigError
from .profiles import Profile
from .spaces import transform_rows


def spring_step_coefficients(stiffness, damping, mass, dt):
    """Entries of ``exp(A · dt)`` for ``A = [[0, 1], [-k/m, -R/m]]``, elementwise.

    Returns ``(e11, e12, e21, e22)`` float64 arrays such that for the offset ``y = x − x_eq`` from
    equilibrium ``x_eq = target + f / k``: ``y' = e11 y + e12 v``, ``v' = e21 y + e22 v``.
    Handles under-, critically and over-damped springs without overflow.
    """
    k = np.asarray(stiffness, dtype=np.float64)
    r = np.asarray(damping, dtype=np.float64)
    m = np.asarray(mass, dtype=np.float64)
    a, b = k / m, r / m                     # y'' = -a y - b y'
    s = -b / 2
    disc = s * s - a                        # > 0 overdamped, < 0 underdamped
    q = np.sqrt(np.abs(disc))
    t = dt
    over = disc > 1e-12 * np.maximum(a, 1e-300)
    under = disc < -1e-12 * np.maximum(a, 1e-300)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # C = e^{st} cosh/cos(qt), S = e^{st} sinh/sin(qt) / q, written to avoid overflow.
        e_plus, e_minus = np.exp((s + q) * t), np.exp((s - q) * t)
        c_over, s_over = (e_plus + e_minus) / 2, (e_plus - e_minus) / (2 * np.where(q > 0, q, 1))
        est = np.exp(s * t)
        c_under, s_under = est * np.cos(q * t), est * np.sin(q * t) / np.where(q > 0, q, 1)
        c_crit, s_crit = est, est * t
    c = np.where(over, c_over, np.where(under, c_under, c_crit))
    sn = np.where(over, s_over, np.where(under, s_under, s_crit))
    # exp(At) = C I + S (A - s I)
    e11 = c - s * sn
    e12 = sn
    e21 = -a * sn
    e22 = c + (-b - s) * sn
    return e11, e12, e21, e22


@dataclass
class DynamicMagnet:
    """Spring settings of a dynamic magnet (SPEC §4).

    mass (kg), stiffness k (N/m), damping R (N·s/m), dynablend in [0, 1] (0 = simple magnet,
    1 = fully dynamic), substeps per frame, gravity_max ``g_max`` (m/s²) and the gravity profile
    ``G(dev)`` of head tilt.
    """

    mass: float = 1.0
    stiffness: float = 60.0
    damping: float = 6.0
    dynablend: float = 1.0
    substeps: int = 1
    gravity_max: float = 9.81
    gravity_profile: Profile = field(default_factory=lambda: Profile.linear(0.0, 1.0, "gravity"))

    def check(self, name: str):
        for what, v, lo in (("mass", self.mass, 1e-9), ("stiffness", self.stiffness, 0.0),
                            ("damping", self.damping, 0.0)):
            if not np.isfinite(v) or v < lo:
                raise HairWigError(f"magnet '{name}': {what} must be {'positive' if lo else '>= 0'}, got {v}")
        if not 0 <= self.dynablend <= 1:
            raise HairWigError(f"magnet '{name}': dynablend must be in 0..1, got {self.dynablend}")
        if int(self.substeps) < 1:
            raise HairWigError(f"magnet '{name}': substeps must be at least 1, got {self.substeps}")


KINDS = ("WIND", "TURBULENCE", "DRAG")


@dataclass
class ForceField:
    """A force field of the scene, filled from a Blender Wind, Turbulence or Drag field (SPEC §4
    "Wind"): the force at world positions, as Blender's effectors give it (a magnet of mass m
    feels it as force; a strand's points, of unit mass, as acceleration).

    position, direction (unit, the field's Z axis) in world space; strength; shape 'PLANE'
    (distance measured along the direction, as Blender's default wind) or 'POINT' (radial);
    falloff ``(1 + r - r_min)^-power`` beyond ``min_distance`` and zero beyond ``max_distance``
    (Blender's effector falloff); ``noise`` adds a smooth, seeded gust of relative amplitude.

    * WIND: ``strength`` along the direction.
    * TURBULENCE: ``strength`` times a smooth seeded noise vector (each component in −1…1, two
      octaves) of the position relative to the field (``global_coords``: the world position)
      scaled by ``size``, the noise's size — Blender's field read the same way, though not
      Blender's own noise function value for value.
    * DRAG: against the velocity, ``linear_drag · |v| + quadratic_drag · |v|²`` (each at most 2,
      as Blender clamps them).
    """

    position: np.ndarray
    direction: np.ndarray
    strength: float
    shape: str = "PLANE"
    falloff_power: float = 0.0
    min_distance: float = 0.0
    max_distance: float = np.inf
    noise: float = 0.0
    seed: int = 0
    kind: str = "WIND"
    size: float = 1.0
    global_coords: bool = False
    linear_drag: float = 0.0
    quadratic_drag: float = 0.0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise HairWigError(f"force field: kind must be one of {KINDS}, got {self.kind!r}")

    def force(self, x: np.ndarray, time: float, velocity: np.ndarray | None = None) -> np.ndarray:
        """Force (…, 3) at world positions ``x`` (…, 3), time (s) and, for Drag, the points'
        velocities (…, 3) (none: no drag)."""
        x = np.asarray(x, dtype=np.float64)
        d = np.asarray(self.direction, dtype=np.float64)
        d = d / max(np.linalg.norm(d), 1e-12)
        rel = x - np.asarray(self.position, dtype=np.float64)
        r = np.abs(rel @ d) if self.shape == "PLANE" else np.linalg.norm(rel, axis=-1)
        fac = np.where(r > self.min_distance, (1 + np.maximum(r - self.min_distance, 0)) ** -self.falloff_power, 1.0)
        fac = np.where(r > self.max_distance, 0.0, fac)
        gust = self.gust(time)
        if self.kind == "WIND":
            return (self.strength * gust * fac)[..., None] * d
        if self.kind == "TURBULENCE":
            at = (x if self.global_coords else rel) / max(self.size, 1e-6)
            return (self.strength * gust * fac)[..., None] * turbulence(at, self.seed)
        if velocity is None:
            return np.zeros(x.shape)
        v = np.asarray(velocity, dtype=np.float64)
        speed = np.sqrt(np.einsum("...k,...k->...", v, v))
        lin, quad = min(self.linear_drag, 2.0), min(self.quadratic_drag, 2.0)
        # −v̂ (lin |v| + quad |v|²) = −v (lin + quad |v|)
        return -(gust * fac * (lin + quad * speed))[..., None] * v

    def gust(self, time: float) -> float:
        """The noise's gust at ``time`` (s): ``1 + noise · mean(sin(2π f t + φ))`` over three
        seeded frequencies and phases; 1 without noise."""
        if not self.noise:
            return 1.0
        rng = np.random.default_rng(self.seed)
        freq = rng.uniform(0.3, 2.0, 3)
        phase = rng.uniform(0, 2 * np.pi, 3)
        return 1.0 + self.noise * np.sin(2 * np.pi * freq * time + phase).mean()


def pack_fields(forces: list, time: float) -> tuple:
    """The fields ``forces`` at ``time`` as the kernel reads them (``kernels.fields.field_accel``),
    made once a frame: kinds ``(F, 4)`` int64 (kind, shape, global coordinates, noise table),
    floats ``(F, 13)`` float64 (position, unit direction, strength × gust — the gust alone for
    drag —, falloff power, min and max distance, noise size, linear and quadratic drag) and the
    noise tables ``(T, 4096, 3)`` of their seeds, each value computed as ``ForceField.force`` does."""
    kinds = np.zeros((len(forces), 4), np.int64)
    floats = np.zeros((len(forces), 13))
    seeds: list[int] = []
    for f, w in enumerate(forces):
        d = np.asarray(w.direction, dtype=np.float64)
        gust = w.gust(time)
        kinds[f, :3] = KINDS.index(w.kind), w.shape != "PLANE", bool(w.global_coords)
        if w.kind == "TURBULENCE":
            if int(w.seed) not in seeds:
                seeds.append(int(w.seed))
            kinds[f, 3] = seeds.index(int(w.seed))
        floats[f, :3] = np.asarray(w.position, dtype=np.float64)
        floats[f, 3:6] = d / max(np.linalg.norm(d), 1e-12)
        floats[f, 6] = gust if w.kind == "DRAG" else w.strength * gust
        floats[f, 7:13] = (w.falloff_power, w.min_distance, w.max_distance, max(w.size, 1e-6),
                           min(w.linear_drag, 2.0), min(w.quadratic_drag, 2.0))
    tables = np.stack([_noise_table(s) for s in seeds]) if seeds else np.zeros((0, _TABLE, 3))
    return kinds, floats, tables


_TABLE = 4096


@lru_cache(maxsize=32)
def _noise_table(seed: int) -> np.ndarray:
    """The turbulence's seeded random vectors on the lattice (4096, 3), each component in −1…1
    (read-only: shared by every call with the seed)."""
    table = np.random.default_rng(int(seed)).uniform(-1.0, 1.0, (_TABLE, 3))
    table.flags.writeable = False
    return table


def turbulence(p: np.ndarray, seed: int = 0, octaves: int = 2) -> np.ndarray:
    """A smooth noise vector field (…, 3), each component in −1…1, at points ``p`` (…, 3) in
    noise units: seeded random vectors on the integer lattice blended with a quintic fade
    (continuous value and gradient), the next octave at twice the frequency and half the
    amplitude."""
    p = np.asarray(p, np.float64)
    table = _noise_table(int(seed))
    total = np.zeros(p.shape)
    amp, norm = 1.0, 0.0
    for o in range(octaves):
        total += amp * _lattice(p * (2.0 ** o) + 17.0 * o, table)
        norm += amp
        amp *= 0.5
    return total / norm


def _lattice(p: np.ndarray, table: np.ndarray) -> np.ndarray:
    base = np.floor(p)
    f = p - base
    w = f * f * f * (f * (f * 6 - 15) + 10)
    i = base.astype(np.int64)
    out = np.zeros(p.shape)
    for dx in (0, 1):
        for dy in (0, 1):
            for dz in (0, 1):
                h = (i[..., 0] + dx) * 73856093 ^ (i[..., 1] + dy) * 19349663 ^ (i[..., 2] + dz) * 83492791
                h ^= h >> 13
                h *= 1274126177
                h ^= h >> 16
                weight = ((w[..., 0] if dx else 1 - w[..., 0]) * (w[..., 1] if dy else 1 - w[..., 1])
                          * (w[..., 2] if dz else 1 - w[..., 2]))
                out += weight[..., None] * table[h & (_TABLE - 1)]
    return out


def tilt_deviation(head_up: np.ndarray, up: np.ndarray) -> float:
    """``dev = (1 − u · up) / 2``: 0 upright, 1 upside down (SPEC §4)."""
    u = np.asarray(head_up, dtype=np.float64)
    u = u / max(np.linalg.norm(u), 1e-12)
    return float((1.0 - np.dot(u, up)) / 2.0)


class DynamicMagnets:
    """The spring state of every dynamic magnet: position and velocity in world space."""

    def __init__(self, names: list[str], settings: list[DynamicMagnet]):
        for n, s in zip(names, settings):
            s.check(n)
        self.names = names
        self.settings = settings

    def step(self, state_pos, state_vel, prev_target, target, dt, gravity, head_up, forces, time,
             dynablend=None):
        """Advance every dynamic magnet by one frame; return the shown positions.

        state_pos, state_vel : (D, 3) float64, updated in place (the spring's own state).
        prev_target, target : (D, 3) keyed positions at the previous and this frame; the target
            moves linearly across substeps.
        gravity : (3,) scene gravity (m/s²); head_up : (3,) the head's up axis in world space.
        dynablend : (D,) or None — this frame's dynablend (keyed), else each magnet's setting.
        Returns (D, 3): ``m_f = target + dynablend · (m_spring − target)``.
        """
        g = np.asarray(gravity, dtype=np.float64)
        g_norm = np.linalg.norm(g)
        down = g / g_norm if g_norm > 0 else np.zeros(3)
        dev = tilt_deviation(head_up, -down) if g_norm > 0 else 0.0
        shown = np.empty_like(state_pos)
        for i, s in enumerate(self.settings):
            n = int(s.substeps)
            h = dt / n
            e11, e12, e21, e22 = spring_step_coefficients(s.stiffness, s.damping, s.mass, h)
            g_eff = s.gravity_max * float(s.gravity_profile(dev))
            for j in range(1, n + 1):
                tgt = prev_target[i] + (target[i] - prev_target[i]) * (j / n)
                f = s.mass * g_eff * down
                for w in forces:
                    f = f + w.force(state_pos[i], time - dt + j * h, state_vel[i])
                eq = tgt + f / s.stiffness if s.stiffness > 0 else state_pos[i]
                y = state_pos[i] - eq
                v = state_vel[i]
                if s.stiffness > 0:
                    state_pos[i] = eq + e11 * y + e12 * v
                    state_vel[i] = e21 * y + e22 * v
                else:   # free mass: damped drift under the force
                    decay = np.exp(-s.damping / s.mass * h)
                    acc = f / s.mass
                    if s.damping > 0:
                        rate = s.damping / s.mass
                        state_pos[i] = state_pos[i] + v * (1 - decay) / rate + acc * (h - (1 - decay) / rate) / rate
                        state_vel[i] = v * decay + acc * (1 - decay) / rate
                    else:
                        state_pos[i] = state_pos[i] + v * h + 0.5 * acc * h * h
                        state_vel[i] = v + acc * h
            blend = s.dynablend if dynablend is None else float(dynablend[i])
            shown[i] = target[i] + blend * (state_pos[i] - target[i])
        return shown


class SecondarySprings:
    """Per-vertex damped springs towards the primary target (SPEC §5, seed 000 "Secondary
    Movement"), with per-strand stiffness and damping randomised by ±``random`` (seeded)."""

    def __init__(self, strand_of_point: np.ndarray, num_strands: int, vertex_t: np.ndarray,
                 stiffness: float, damping: float, mass: float = 1.0, random: float = 0.2,
                 seed: int = 0, stiffness_profile: Profile | None = None,
                 blend_profile: Profile | None = None, dynablend: float = 1.0):
        for what, v in (("stiffness", stiffness), ("damping", damping)):
            if not np.isfinite(v) or v < 0:
                raise HairWigError(f"secondary dynamics: {what} must be >= 0, got {v}")
        if not np.isfinite(mass) or mass <= 0:
            raise HairWigError(f"secondary dynamics: mass must be positive, got {mass}")
        if not 0 <= random < 1:
            raise HairWigError(f"secondary dynamics: randomness must be in 0..1 (0..100%), got {random}")
        rng = np.random.default_rng(seed)
        k_strand = stiffness * (1 + rng.uniform(-random, random, num_strands))
        r_strand = damping * (1 + rng.uniform(-random, random, num_strands))
        prof = stiffness_profile(vertex_t) if stiffness_profile is not None else 1.0
        self.k = (k_strand[strand_of_point] * prof).astype(np.float64)
        self.r = r_strand[strand_of_point].astype(np.float64)
        self.mass = float(mass)
        blend = blend_profile(vertex_t) if blend_profile is not None else np.ones_like(vertex_t)
        self._profile_blend = np.where(vertex_t > 0, blend, 0.0).astype(np.float32)   # roots never leave the scalp
        self.dynablend = None
        self.set_dynablend(dynablend)
        self._dt = None
        self._coef = None

    def set_dynablend(self, dynablend: float) -> None:
        """Mix shown = target + dynablend · s(t) · (spring − target); the springs are unchanged."""
        if dynablend != self.dynablend:
            self.dynablend = float(dynablend)
            self.blend = (np.float32(dynablend) * self._profile_blend).astype(np.float32)

    def coefficients(self, dt: float):
        """Per-vertex step coefficients (4 × (P,) float32), computed once per frame length, and
        the force's share ``c1`` (``forced``)."""
        if self._dt != dt:
            e = spring_step_coefficients(self.k, self.r, self.mass, dt)
            self._coef = [c.astype(np.float32) for c in e]
            self._forced = forced_coefficient(self.k, self.r, self.mass, dt, e[0], e[1]).astype(np.float32)
            self._dt = dt
        return self._coef

    def follow(self, pos: np.ndarray, vel: np.ndarray, p: np.ndarray, head: np.ndarray,
               head_inv: np.ndarray, dt: float, first: bool, work: np.ndarray, spare: np.ndarray,
               row: np.ndarray, span: slice = slice(None), accel: np.ndarray | None = None) -> np.ndarray:
        """Advance the springs towards this frame's targets and move ``p`` to what is shown.

        ``p`` holds the primary positions (3, C) float32 in head-local space, which the head
        matrix ``head`` carries into the world as the springs' targets ``T``. With the deviation
        ``y = pos − T`` the exact step (SPEC §5) is ``y' = e11 y + e12 v``, ``v' = e21 y + e22 v``,
        ``pos' = T + y'``, and the vertex is shown at ``T + blend · y'``: in head-local space,
        ``p + blend · A⁻¹ y'`` (``A`` the head's linear part), so ``T`` itself never comes back.
        ``pos`` and ``vel`` are the world-space state (3, C) for the block ``span``, updated in
        place; ``work``, ``spare`` (3, C) and ``row`` (C,) are scratch. ``first``: the springs
        start at rest on their targets. ``accel`` (3, C): an acceleration held over the step (the
        force fields' push per unit mass), which adds ``c1 · a`` to ``y'`` and ``e12 · a`` to
        ``v'`` (``forced_coefficient``): exact for a force held constant, so a steady wind holds a
        spring ``a · m / k`` downwind.
        """
        target = transform_rows(head, p, work)
        if first:
            pos[...] = target
            vel[...] = 0.0
            return p
        e11, e12, e21, e22 = (c[span] for c in self.coefficients(dt))
        y = np.subtract(pos, target, out=work)      # T is pos − y from here on
        np.multiply(vel, e12, out=spare)
        vel *= e22
        pos -= y
        for k in range(3):
            np.multiply(y[k], e21, out=row)
            vel[k] += row
        y *= e11
        y += spare                                  # y'
        if accel is not None:
            c1 = self._forced[span]
            for k in range(3):
                np.multiply(accel[k], c1, out=row)
                y[k] += row
                np.multiply(accel[k], e12, out=row)
                vel[k] += row
        pos += y
        y *= self.blend[span]
        p += transform_rows(head_inv, y, spare, translate=False)
        return p


def forced_coefficient(stiffness, damping, mass, dt, e11, e12):
    """How far a constant unit acceleration moves a spring over ``dt`` from rest: ``c1 =
    ∫₀^dt e12(s) ds``, the position entry of ``∫ exp(A s) ds · (0, 1)``; its velocity entry is
    ``e12`` itself. From ``A ∫ exp(A s) ds = exp(A dt) − I``: ``c1 = (1 − e11) / (k/m)``; where
    ``k/m · dt²`` is below 1e-9 (a free mass: that quotient's digits would be rounding) the free
    mass's ``(dt − e12) / (R/m)``, and ``dt² / 2`` without damping."""
    a = np.asarray(stiffness, np.float64) / mass
    b = np.broadcast_to(np.asarray(damping, np.float64) / mass, a.shape)
    sprung = a * dt * dt > 1e-9
    damped = b * dt > 1e-9
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sprung, (1.0 - e11) / np.where(sprung, a, 1.0),
                        np.where(damped, (dt - e12) / np.where(damped, b, 1.0), 0.5 * dt * dt))
