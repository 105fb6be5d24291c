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
from .kernels import magnet_blend
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
    follow : bool
        The reach follows the magnet (beyond the patent; ``FollowReach``): each frame it takes
        the hair within its radius of where it is, and moves it by its own motion over the last
        ``trail`` frames, instead of the hair near where it rests by its motion since rest.
    trail : int
        Frames over which a following magnet's motion is taken (at least 1).
    """

    name: str
    rest_matrix: np.ndarray
    multiplier: float = 1.0
    exponent: float = 0.0
    radius: float = 1.0
    falloff: Profile = field(default_factory=lambda: Profile.ease_out("falloff"))
    strands: np.ndarray | None = None
    dynamic: object = None
    follow: bool = False
    trail: int = 4

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
        if self.follow and int(self.trail) < 1:
            raise HairWigError(f"magnet '{self.name}': a reach that follows the magnet needs a trail of "
                               f"at least 1 frame, got {self.trail}")

    @property
    def rest_position(self) -> np.ndarray:
        return self.rest_matrix[:3, 3]

    def weight(self, distance: np.ndarray) -> np.ndarray:
        """``w = a · x^-b · c(x / d)`` with ``x`` guarded below by a core radius ``0.05 d``
        so a vertex on the magnet has a finite weight (seed 000, "Primary Movement"; SPEC §3).
        In float64: at the UI's extremes (d = 1e-4, b = 20) ``x^-b`` reaches 1e106, far beyond
        float32; normalisation brings the weights back to 0..1 before they are stored."""
        x = np.maximum(np.asarray(distance, dtype=np.float64), 0.05 * self.radius)
        u = x / self.radius
        w = self.multiplier * self.falloff(u).astype(np.float64)
        if self.exponent:
            w = w * x ** -self.exponent
        return np.where(u > 1, 0.0, w)


class MagnetWeights:
    """Every magnet's normalised weights at the rest pose, bound once.

    Each vertex keeps only its ``MAX_INFLUENCES`` strongest magnets, with weights already
    multiplied by the flex profile ``f(t)`` and the length profile ``g(ℓ)``:
    ``W_k = f(t) · g(ℓ) · w_k / norm`` with ``norm = max(1, Σ w)`` ('cap') or ``Σ w`` ('sum')
    over all magnets (SPEC §3).
    """

    TILE = 1 << 14        # points per tile of stored weights; a tile's (12, C) blend stays in cache

    def __init__(self, hair: HairSet, rest_points: np.ndarray, magnets: list[Magnet],
                 flex: Profile, length: Profile, normalisation: str = "cap"):
        if normalisation not in NORMALISATIONS:
            raise HairWigError(f"weight normalisation must be one of {NORMALISATIONS}, got {normalisation!r}")
        p = len(rest_points)
        m = len(magnets)
        k = max(1, min(MAX_INFLUENCES, m))
        top_w = np.zeros((p, k), dtype=np.float64)
        top_i = np.full((p, k), m, dtype=np.int32)
        total = np.zeros(p, dtype=np.float64)
        strand = hair.strand_of_point()
        rows_all = np.arange(p)
        self.reached = np.zeros(m, dtype=np.int64)      # points within each magnet's radius
        for i, mag in enumerate(magnets):
            if mag.strands is not None and np.shape(mag.strands) != (hair.num_strands,):
                raise HairWigError(
                    f"magnet '{mag.name}': its strand set has {np.shape(mag.strands)} entries for "
                    f"{hair.num_strands} strands")
            if mag.follow:            # weighed each frame where it is (FollowReach), not here
                continue
            d = rest_points - mag.rest_position.astype(np.float32)
            w = mag.weight(np.sqrt(np.einsum("ij,ij->i", d, d)))
            if mag.strands is not None:
                w *= np.asarray(mag.strands, dtype=np.float64)[strand]
            total += w
            self.reached[i] = np.count_nonzero(w)
            slot = np.argmin(top_w, axis=1)
            rows = np.flatnonzero(w > top_w[rows_all, slot])
            top_w[rows, slot[rows]] = w[rows]
            top_i[rows, slot[rows]] = i
        norm = np.maximum(total, 1.0) if normalisation == "cap" else np.where(total > 0, total, 1.0)
        # Divided first: w / Σw stays within 0..1 even when Σw is subnormal (a weight multiplier
        # of 1e-308 is inside the UI's range), where 1 / Σw would overflow.
        top_w /= norm[:, None]
        top_w *= (flex(hair.vertex_t()) * length(hair.normalised_length())[strand])[:, None]
        self.num_magnets = m
        self.num_points = p
        self.total = total                # raw Σ w per vertex, for diagnostics and tests
        self._store_tiles(top_i, top_w.astype(np.float32))

    def _store_tiles(self, top_i: np.ndarray, top_w: np.ndarray) -> None:
        """Block-sparse storage: points in tiles of ``TILE``; each tile keeps a column of
        weights (point-major, contiguous) for just the magnets that reach one of its points.
        Hair that is stored in surface order (as Blender grows and combs it) meets few magnets
        per tile, so memory and the per-frame blend scale with the magnets actually in reach,
        not with all of them; a tile no magnet reaches costs nothing."""
        m, p = self.num_magnets, self.num_points
        column = np.empty(m + 1, dtype=np.intp)
        starts = np.arange(0, p, self.TILE)
        self.tile_start = np.append(starts, p)
        self.tile_magnets: list[np.ndarray] = []
        offsets, pieces = [0], []
        for a, b in zip(self.tile_start[:-1], self.tile_start[1:]):      # one pass per tile, at bind
            ti, tw = top_i[a:b], top_w[a:b]
            active = np.unique(ti[tw > 0])
            column[:] = len(active)                                      # empty slots: a spare column
            column[active] = np.arange(len(active))
            tile = np.zeros((b - a, len(active) + 1), dtype=np.float32)
            np.put_along_axis(tile, column[ti], tw, axis=1)
            pieces.append(tile[:, :-1].ravel())
            offsets.append(offsets[-1] + pieces[-1].size)
            self.tile_magnets.append(active.astype(np.intp))
        self.values = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        self.tile_offset = np.array(offsets, dtype=np.int64)
        self.tile_start = self.tile_start.astype(np.int64)
        # every tile's magnets in one array, for the kernel (``kernels.magnet_blend``)
        self._active = np.concatenate(self.tile_magnets + [np.zeros(0, np.intp)]).astype(np.int64)
        self._active_start = np.cumsum([0] + [len(a) for a in self.tile_magnets]).astype(np.int64)

    @property
    def nbytes(self) -> int:
        return self.values.nbytes + sum(a.nbytes for a in self.tile_magnets) + self.tile_offset.nbytes

    def _tile(self, t: int) -> np.ndarray:
        """(n, m_t) weights of tile ``t``: its points × its magnets in reach."""
        n = int(self.tile_start[t + 1] - self.tile_start[t])
        return self.values[self.tile_offset[t]:self.tile_offset[t + 1]].reshape(n, -1)

    def dense(self, num_points: int | None = None) -> np.ndarray:
        """(M, P) weights (for inspection and tests; the wig never builds it)."""
        out = np.zeros((self.num_magnets, self.num_points), dtype=np.float32)
        for t, active in enumerate(self.tile_magnets):
            out[active, self.tile_start[t]:self.tile_start[t + 1]] = self._tile(t).T
        return out if num_points is None else out[:, :num_points]

    def magnets_per_point(self) -> float:
        """Mean number of magnets stored per point (the dense layout would store all M)."""
        return self.values.size / max(1, self.num_points)

    def displace_rows(self, points: np.ndarray, motions: np.ndarray, out: np.ndarray,
                      span: slice = slice(None)) -> np.ndarray:
        """Add ``Σ_k W_k · (M_k p − p)`` to ``out`` (SPEC §3, "Displacement") for points stored as
        rows (3, P) float32, head-local — or the block ``span`` of the bound points when
        ``points`` and ``out`` hold only that block; motions (M, 4, 4) float64, ``M_k = Mf · Mi⁻¹``.

        The magnets' motions are blended per vertex first, ``G = Σ_k W_k (M_k − I)`` over its
        tile's magnets in reach, then applied, ``out += G p``: one pass over the points
        (``kernels.magnet_blend``).
        """
        m = self.num_magnets
        if m == 0:
            return out
        a = (motions[:, :3, :] - np.eye(4)[None, :3, :]).reshape(m, 12)
        moving = a.any(axis=1)
        if not moving.any():
            return out
        table = np.ascontiguousarray(a.T, dtype=np.float32)           # (12, M): a still magnet's is 0
        lo, hi, _ = span.indices(self.num_points)
        magnet_blend(self.values, self.tile_start, self.tile_offset, self._active, self._active_start, table,
                     points, out, lo, hi)
        return out


class FollowReach:
    """Magnets whose reach follows them (beyond seed 000, whose reach is bound at rest): each
    frame a following magnet ``j`` at head-local ``c_j`` weighs every point ``p`` of the pose
    it deforms by its current distance, ``w_j = a · x^-b · c(x / d)`` with ``x = |p − c_j|``
    (the patent's weight, "Primary Movement"), and moves it by its own motion over the last
    ``trail`` frames, ``A_j = F_j(t) · F_j(t − trail)⁻¹`` (head-local): what it sweeps through
    bends along with it and comes back once it has passed or stopped.

    Overlap combines with the magnets bound at rest as one normalisation over all of them
    (SPEC §3): the rest magnets' blend, stored as ``f g w_k / n_rest``, is rescaled to
    ``n_rest / n_all`` where a following magnet reaches, and ``f g w_j (A_j p − p) / n_all``
    added; ``n = max(1, Σ w)`` ('cap') or ``Σ w`` ('sum'). Profiles ``f`` (flex, along the
    strand) and ``g`` (length) apply as for the others.
    """

    def __init__(self, hair: HairSet, magnets: list[Magnet], flex: Profile, length: Profile,
                 rest_total: np.ndarray, normalisation: str):
        self.index = [i for i, m in enumerate(magnets) if m.follow]
        self.magnets = [magnets[i] for i in self.index]
        self.trail = np.array([int(m.trail) for m in self.magnets], np.int64)
        strand = hair.strand_of_point()
        self.fg = (flex(hair.vertex_t()) * length(hair.normalised_length())[strand]).astype(np.float32)
        self.strand_of_point = strand
        self.rest_total = np.asarray(rest_total, np.float64)
        self.normalisation = normalisation

    def __len__(self) -> int:
        return len(self.index)

    @property
    def history(self) -> int:
        """Frames of head-local magnet matrices a state keeps for the trails."""
        return int(self.trail.max()) + 1 if len(self) else 0

    def _norm(self, total: np.ndarray) -> np.ndarray:
        if self.normalisation == "cap":
            return np.maximum(total, 1.0)
        return np.where(total > 0, total, 1.0)

    def apply_rows(self, base: np.ndarray, p: np.ndarray, span: slice, centres: np.ndarray,
                   motions: np.ndarray) -> None:
        """Add the following magnets' pull to the block ``p`` (3, C) — the wig's points ``span``,
        whose pose before the magnets is ``base`` (3, C) and whose rest magnets' blend ``p`` already
        holds — in place. ``centres`` (J, 3), ``motions`` (J, 4, 4) head-local, this frame."""
        lo = span.start or 0
        hits = []                                   # per magnet: points reached, weights, pulls
        for j, mag in enumerate(self.magnets):
            a = motions[j]
            if np.array_equal(a, np.eye(4)):
                continue
            r = np.float32(mag.radius)
            cx, cy, cz = (np.float32(v) for v in centres[j])
            near = np.flatnonzero(np.abs(base[0] - cx) <= r)          # one row screens first
            if near.size == 0:
                continue
            x, y, z = (base[k].take(near) for k in range(3))
            d2 = (x - cx) ** 2 + (y - cy) ** 2 + (z - cz) ** 2
            keep = np.flatnonzero(d2 <= r * r)
            near, x, y, z = near.take(keep), x.take(keep), y.take(keep), z.take(keep)
            w = mag.weight(np.sqrt(d2.take(keep)))
            if mag.strands is not None:
                w = w * np.asarray(mag.strands, np.float64)[self.strand_of_point.take(lo + near)]
            keep = np.flatnonzero(w > 0)
            if keep.size == 0:
                continue
            near, w = near.take(keep), w.take(keep)
            x, y, z = x.take(keep), y.take(keep), z.take(keep)
            m = a.astype(np.float32)
            pull = [w * (m[k, 0] * x + m[k, 1] * y + m[k, 2] * z + m[k, 3] - v) for k, v in enumerate((x, y, z))]
            hits.append((near, w, pull))
        if not hits:
            return
        if len(hits) == 1:
            at, total, pull = hits[0]
        else:                      # each magnet reaches a point once: plain indexed adds suffice
            reached = np.zeros(base.shape[1], bool)
            for near, _, _ in hits:
                reached[near] = True
            at = np.flatnonzero(reached)
            slot = np.empty(base.shape[1], np.int64)
            slot[at] = np.arange(len(at))
            total = np.zeros(len(at))
            pull = [np.zeros(len(at)) for _ in range(3)]
            for near, w, part in hits:
                i = slot.take(near)
                total[i] += w
                for k in range(3):
                    pull[k][i] += part[k]
        rest_total = self.rest_total.take(lo + at)
        n_all = self._norm(rest_total + total)
        scale = np.where(rest_total > 0, self._norm(rest_total) / n_all, 0.0)
        share = self.fg.take(lo + at) / n_all
        for k in range(3):
            b = base[k].take(at).astype(np.float64)
            p[k].put(at, (b + (p[k].take(at) - b) * scale + pull[k] * share).astype(np.float32))
