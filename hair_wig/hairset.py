"""A hair set: N strands stored flat (SPEC §1)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import FROM_ZERO, HairWigError


@dataclass(frozen=True)
class HairSet:
    """N strands stored flat, root first (SPEC §1 "Data").

    Parameters
    ----------
    points : (P, 3) float32
        Point positions of every strand, strand after strand, each from root to tip, in the
        hair object's local space (metres).
    counts : (N,) int32
        Points per strand; ``counts.sum() == P`` and every count is at least 2.
    name : str
        What the hair is called in messages (the Blender object's name).
    selection : (N,) bool or None
        Strands picked by a named selection attribute; ``None`` when there is none.
    surface_uv : (N, 2) float32 or None
        Each strand's root in the surface's UV map (Blender's ``surface_uv_coordinate``).
    """

    points: np.ndarray
    counts: np.ndarray
    name: str = "hair"
    selection: np.ndarray | None = None
    surface_uv: np.ndarray | None = None
    offsets: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        points = np.ascontiguousarray(self.points, dtype=np.float32)
        counts = np.ascontiguousarray(self.counts, dtype=np.int32)
        if counts.ndim != 1 or counts.size == 0:
            raise HairWigError(f"'{self.name}' has no strands")
        if points.ndim != 2 or points.shape[1] != 3:
            raise HairWigError(f"'{self.name}': points must have shape (P, 3), got {points.shape}")
        short = np.flatnonzero(counts < 2)
        if short.size:
            raise HairWigError(
                f"'{self.name}': strand {short[0]} has {counts[short[0]]} point(s); every strand "
                f"needs at least 2 ({short.size} such strand(s) in all){FROM_ZERO}")
        if int(counts.sum()) != points.shape[0]:
            raise HairWigError(
                f"'{self.name}': the strands' point counts add up to {int(counts.sum())} but there "
                f"are {points.shape[0]} points")
        bad = ~np.isfinite(points).all(axis=1)
        if bad.any():
            strand = int(np.searchsorted(np.cumsum(counts), np.flatnonzero(bad)[0], side="right"))
            raise HairWigError(f"'{self.name}': strand {strand} has a NaN or infinite point position{FROM_ZERO}")
        offsets = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        for arr, width, what in ((self.selection, None, "selection"), (self.surface_uv, 2, "surface_uv")):
            if arr is not None:
                shape = (counts.size,) if width is None else (counts.size, width)
                if np.shape(arr) != shape:
                    raise HairWigError(f"'{self.name}': {what} must have shape {shape}, got {np.shape(arr)}")
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "offsets", offsets)
        if self.selection is not None:
            object.__setattr__(self, "selection", np.asarray(self.selection, dtype=bool))
        if self.surface_uv is not None:
            object.__setattr__(self, "surface_uv", np.asarray(self.surface_uv, dtype=np.float32))

    @property
    def num_strands(self) -> int:
        return int(self.counts.size)

    @property
    def num_points(self) -> int:
        return int(self.points.shape[0])

    def strand_of_point(self) -> np.ndarray:
        """(P,) int32 index of the strand each point belongs to."""
        return strand_of_point(self.counts)

    def strand_slice(self, strand: int) -> slice:
        return slice(int(self.offsets[strand]), int(self.offsets[strand + 1]))

    def vertex_t(self) -> np.ndarray:
        """(P,) float32 normalised vertex index ``t = j / (n - 1)``: 0 at the root, 1 at the tip
        (SPEC §1)."""
        return vertex_t(self.offsets)

    def segment_lengths(self, points: np.ndarray | None = None) -> np.ndarray:
        """(P,) float32 length of the segment ending at each point; 0 at roots."""
        p = self.points if points is None else points
        seg = np.zeros(self.num_points, dtype=np.float32)
        seg[1:] = np.linalg.norm(p[1:] - p[:-1], axis=1)
        seg[self.offsets[:-1]] = 0.0
        return seg

    def strand_lengths(self, points: np.ndarray | None = None) -> np.ndarray:
        """(N,) float32 length ``L`` of each strand, the sum of its segment lengths."""
        seg = self.segment_lengths(points).astype(np.float64)
        return np.add.reduceat(seg, self.offsets[:-1]).astype(np.float32)

    def normalised_length(self) -> np.ndarray:
        """(N,) float32 ``ℓ = (L - Lmin) / (Lmax - Lmin)``, 1 for every strand when all lengths
        are equal (SPEC §1)."""
        length = self.strand_lengths().astype(np.float64)
        span = length.max() - length.min()
        if span <= 1e-7 * max(length.max(), 1e-12):
            return np.ones(self.num_strands, dtype=np.float32)
        return ((length - length.min()) / span).astype(np.float32)


def strand_of_point(counts: np.ndarray) -> np.ndarray:
    """(P,) int32: the strand each point belongs to, for strands of ``counts`` points."""
    return np.repeat(np.arange(len(counts), dtype=np.int32), counts)


def vertex_t(offsets: np.ndarray) -> np.ndarray:
    """(P,) float32 normalised vertex index ``t = j / (n − 1)`` of strands starting at ``offsets``
    (S + 1,): 0 at the root, 1 at the tip (SPEC §1)."""
    counts = np.diff(offsets)
    j = np.arange(offsets[-1], dtype=np.float64) - np.repeat(offsets[:-1], counts)
    return (j / np.repeat(counts - 1, counts)).astype(np.float32)
