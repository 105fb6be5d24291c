"""Magnets: primary movement (seed 000, "Primary Movement"; SPEC §3).

A magnet is a pose controller with a rest matrix ``Mi`` and a current matrix ``Mf``, both in
head-local space. It moves each vertex near it by its own motion ``M = Mf · Mi⁻¹`` scaled by a
weight that falls off with the vertex's rest distance from the magnet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import HairWigError
from .hairset import HairSet
from .profiles import Profile

NORMALISATIONS = ("cap", "sum")
MAX_INFLUENCES = 8        # strongest magnets kept per vertex (SPEC §3: stored sparsely)


@dataclass
class Magnet:
    """One magnet's settings.

    Parameters
    ----------
    name : str
        For messages (the Blender Empty's name).
    rest_matrix : (4, 4) float64, head-local
        ``Mi``, the magnet's transform at bind.
    multiplier, exponent, radius : float
        ``a``, ``b`` and ``d`` of the weight ``a · x^-b · c(x / d)`` (seed 000, "Primary Movement").
    falloff : Profile
        ``c(u)``; zero for ``u > 1`` whatever the curve says.
    strands : (N,) bool or None
        The set of hairs the magnet acts on (claim 1, "sets of hairs"); ``None``: all.
    dynamic : DynamicMagnet or None
        Spring settings when the magnet is dynamic (SPEC §4).
    """

    name: str
    rest_matrix: np.ndarray
    multiplier: float = 1.0
    exponent: float = 0.0
    radius: float = 1.0
    falloff: Profile = field(default_factory=lambda: Profile.ease_out("falloff"))
    strands: np.ndarray | None = None
    dynamic: object = None

    def __post_init__(self):
        self.rest_matrix = np.asarray(self.rest_matrix, dtype=np.float64)
        if self.rest_matrix.shape != (4, 4) or not np.isfinite(self.rest_matrix).all():
            raise HairWigError(f"magnet '{self.name}': rest matrix must be a finite 4x4 matrix")
        if not np.isfinite(self.radius) or self.radius <= 0:
            raise HairWigError(f"magnet '{self.name}': falloff radius must be positive, got {self.radius}")
        if not np.isfinite(self.exponent) or not 0 <= self.exponent <= 20:
            raise HairWigError(f"magnet '{self.name}': distance exponent must be in 0..20, got {self.exponent}")
        if not np.isfinite(self.multiplier) or self.multiplier < 0:
            raise HairWigError(f"magnet '{self.name}': weight multiplier must be >= 0, got {self.multiplier}")

    @property
    def rest_position(self) -> np.ndarray:
        return self.rest_matrix[:3, 3]

    def weight(self, distance: np.ndarray) -> np.ndarray:
        """``w = a · x^-b · c(x / d)`` with ``x`` guarded below by a core radius ``0.05 d``
        so a vertex on the magnet has a finite weight (seed 000, "Primary Movement"; SPEC §3)."""
        x = np.maximum(np.asarray(distance, dtype=np.float32), np.float32(0.05 * self.radius))
        u = x / np.float32(self.radius)
        w = self.multiplier * self.falloff(u)
        if self.exponent:
            w = w * x ** np.float32(-self.exponent)
        return np.where(u > 1, np.float32(0), w).astype(np.float32)


class MagnetWeights:
    """Every magnet's normalised weights at the rest pose, bound once and stored sparsely.

    For each magnet, the vertices it influences (among each vertex's ``MAX_INFLUENCES`` strongest
    magnets) and their weights, already multiplied by the flex profile ``f(t)`` and the length
    profile ``g(ℓ)``: ``W_k = f(t) · g(ℓ) · w_k / norm`` with ``norm = max(1, Σ w)`` ('cap') or
    ``Σ w`` ('sum') over all magnets (SPEC §3).
    """

    def __init__(self, hair: HairSet, rest_points: np.ndarray, magnets: list[Magnet],
                 flex: Profile, length: Profile, normalisation: str = "cap"):
        if normalisation not in NORMALISATIONS:
            raise HairWigError(f"weight normalisation must be one of {NORMALISATIONS}, got {normalisation!r}")
        p = len(rest_points)
        m = len(magnets)
        k = min(MAX_INFLUENCES, m)
        top_w = np.zeros((p, max(k, 1)), dtype=np.float32)
        top_i = np.full((p, max(k, 1)), -1, dtype=np.int32)
        total = np.zeros(p, dtype=np.float32)
        strand = hair.strand_of_point()
        for i, mag in enumerate(magnets):
            if mag.strands is not None and np.shape(mag.strands) != (hair.num_strands,):
                raise HairWigError(
                    f"magnet '{mag.name}': its strand set has {np.shape(mag.strands)} entries for "
                    f"{hair.num_strands} strands")
            w = mag.weight(np.linalg.norm(rest_points - mag.rest_position.astype(np.float32), axis=1))
            if mag.strands is not None:
                w *= np.asarray(mag.strands, dtype=np.float32)[strand]
            total += w
            slot = np.argmin(top_w, axis=1)
            rows = np.flatnonzero(w > top_w[np.arange(p), slot])
            top_w[rows, slot[rows]] = w[rows]
            top_i[rows, slot[rows]] = i
        norm = np.maximum(total, 1.0) if normalisation == "cap" else np.where(total > 0, total, 1.0)
        scale = flex(hair.vertex_t()) * length(hair.normalised_length())[strand] / norm
        self.indices: list[np.ndarray] = []
        self.weights: list[np.ndarray] = []
        for i in range(m):
            rows, cols = np.nonzero(top_i == i)
            order = np.argsort(rows)
            rows = rows[order].astype(np.int32)
            self.indices.append(rows)
            self.weights.append((top_w[rows, cols[order]] * scale[rows]).astype(np.float32)[:, None])
        self.total = total                # raw Σ w per vertex, for diagnostics and tests

    @property
    def nbytes(self) -> int:
        return sum(i.nbytes + w.nbytes for i, w in zip(self.indices, self.weights))

    def dense(self, num_points: int) -> np.ndarray:
        """(M, P) weights, for tests and small cases."""
        out = np.zeros((len(self.indices), num_points), dtype=np.float32)
        for k, (i, w) in enumerate(zip(self.indices, self.weights)):
            out[k, i] = w[:, 0]
        return out

    def displace(self, points: np.ndarray, motions: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Add ``Σ_k W_k · (M_k p - p)`` to ``out`` (SPEC §3, "Displacement").

        points : (P, 3) float32, head-local; motions : (M, 4, 4) float64, ``M_k = Mf · Mi⁻¹``.
        """
        for idx, w, m in zip(self.indices, self.weights, motions):
            if idx.size == 0 or np.array_equal(m, np.eye(4)):
                continue
            a = (m[:3, :3] - np.eye(3)).T.astype(np.float32)
            p = points[idx]
            d = p @ a
            d += m[:3, 3].astype(np.float32)
            d *= w
            out[idx] += d            # indices are unique within one magnet
        return out
