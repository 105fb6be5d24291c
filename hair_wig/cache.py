"""The baked per-frame vertex cache, checked before it is written into a user's file."""

from __future__ import annotations

import numpy as np

from .errors import HairWigError
from .hairset import HairSet


class BakeCache:
    """Positions of every point for the frames ``first..last`` of a bake.

    Parameters
    ----------
    hair : HairSet
        The rest hair the cache was baked from (for its strand layout and name).
    first, last : int
        The baked frame range, both included.

    Attributes
    ----------
    positions : (F, P, 3) float32, hair-object space (metres), ``F = last - first + 1``.
    """

    def __init__(self, hair: HairSet, first: int, last: int):
        first, last = int(first), int(last)
        if last < first:
            raise HairWigError(f"'{hair.name}': frame range {first}..{last} is empty (end before start)")
        self.hair = hair
        self.first = first
        self.last = last
        self.positions = np.empty((last - first + 1, hair.num_points, 3), dtype=np.float32)
        # Where each dynamic magnet acted, per frame (F, 3), world space: for the viewport display.
        self.magnet_paths: dict[str, np.ndarray] = {}
        # What the artist should know though the bake succeeded (Wig.warnings).
        self.warnings: list[str] = []
        # Collision (SPEC §6.4): what the hair collided with, and the deepest any point was left
        # inside its collision surface over the bake (world units).
        self.colliders: list[str] = []
        self.penetration = 0.0
        # For hair whose own modifier stack carries it with the skin: each frame's root frame
        # change (rotation (N, 3, 3), rest and current root (N, 3), head-from-hair (4, 4)), or
        # None where the skin is at rest; the bake is then stored in the skin's rest space.
        self.skin: list | None = None
        # Frames whose positions are already as stored (kept from an earlier bake).
        self.stored = np.zeros(last - first + 1, bool)

    @classmethod
    def from_positions(cls, hair: HairSet, first: int, positions: np.ndarray) -> "BakeCache":
        positions = np.asarray(positions, dtype=np.float32)
        if positions.ndim != 3 or positions.shape[1:] != (hair.num_points, 3):
            raise HairWigError(
                f"'{hair.name}': baked positions must have shape (F, {hair.num_points}, 3), "
                f"got {positions.shape}")
        cache = cls(hair, first, first + positions.shape[0] - 1)
        cache.positions[...] = positions
        return cache

    @property
    def frames(self) -> range:
        return range(self.first, self.last + 1)

    @property
    def num_frames(self) -> int:
        return self.last - self.first + 1

    def frame(self, f: int) -> np.ndarray:
        """(P, 3) view of frame ``f``."""
        return self.positions[f - self.first]

    def check_finite(self, f: int | None = None) -> None:
        """Raise naming the first frame and strand with a NaN or infinite position.

        A bake must never write a NaN into the user's file; checking one frame as it is
        computed lets a bake stop at the frame that blew up.
        """
        block = self.positions if f is None else self.positions[f - self.first][None]
        bad = ~np.isfinite(block).all(axis=2)
        if bad.any():
            fi, pi = np.argwhere(bad)[0]
            frame = (self.first + int(fi)) if f is None else f
            strand = int(np.searchsorted(self.hair.offsets, pi, side="right") - 1)
            raise HairWigError(
                f"'{self.hair.name}': the solution is not finite at frame {frame}, strand {strand}; "
                f"nothing was written")

    @staticmethod
    def estimate_bytes(num_points: int, num_frames: int) -> int:
        """Bytes the cache takes in memory and, uncompressed, in the .blend."""
        return int(num_points) * int(num_frames) * 3 * 4


def check_memory(bakes, limit_gib: float) -> int:
    """Refuse, before anything is computed, bakes that would not fit: ``bakes`` lists
    ``(name, points, frames)``. A bake holds its cache in memory and then writes the same
    amount into Blender, so it needs twice ``BakeCache.estimate_bytes``. Returns the estimate."""
    need = sum(2 * BakeCache.estimate_bytes(p, f) for _, p, f in bakes)
    if need > limit_gib * 2**30:
        what = ", ".join(f"'{n}' {f} frames × {p:,} points" for n, p, f in bakes)
        raise HairWigError(
            f"baking {what} needs about {need / 2**30:.1f} GiB, over the {limit_gib:g} GiB memory limit "
            f"(Bake ▸ Memory Limit): bake fewer frames at a time, or bake guide hairs and let "
            f"Blender's Interpolate Hair Curves grow the rest from them")
    return need
