"""The baked per-frame vertex cache, checked before it is written into a user's file."""

from __future__ import annotations

import numpy as np

from .errors import FROM_ZERO, HairWigError
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
        finite = np.isfinite(block)
        if finite.all():             # the usual answer, at once: a reduction along the last axis
            return                   # of 3 took 100 times as long (2.3 ms a frame at 80 000 points)
        bad = ~finite.all(axis=2)
        if bad.any():
            fi, pi = np.argwhere(bad)[0]
            frame = (self.first + int(fi)) if f is None else f
            strand = int(np.searchsorted(self.hair.offsets, pi, side="right") - 1)
            raise HairWigError(
                f"'{self.hair.name}': the solution is not finite at frame {frame}, strand {strand}; "
                f"nothing was written{FROM_ZERO}")

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


PART_VERSION = 1


def save_part(path, cache: BakeCache, strands: tuple[int, int] | None = None) -> None:
    """Write a part of a split bake (issue 18): ``cache``'s frames for the strands ``strands``
    (``start, stop``; None: all of them) to ``path`` (``.npz``, uncompressed: a farm's disk is
    faster than its CPUs). Enough rides along to check the parts belong together and to merge
    them: the object's name, the frames, the strand range, the whole hair's layout, where the
    dynamic magnets acted, warnings, collision figures, and the skin's motion for those roots."""
    hair = cache.hair
    a, b = (0, hair.num_strands) if strands is None else (int(strands[0]), int(strands[1]))
    p0, p1 = int(hair.offsets[a]), int(hair.offsets[b])
    meta = {"version": PART_VERSION, "object": hair.name, "first": cache.first, "last": cache.last,
            "strands": [a, b], "num_strands": hair.num_strands, "num_points": hair.num_points,
            "warnings": list(cache.warnings), "colliders": list(cache.colliders),
            "penetration": float(cache.penetration), "magnets": sorted(cache.magnet_paths),
            "skin": cache.skin is not None, "new_topology": bool(getattr(cache, "new_topology", False))}
    arrays = {"positions": cache.positions[:, p0:p1], "counts": hair.counts.astype(np.int32),
              "rest": np.ascontiguousarray(hair.points[p0:p1])}
    for k, name in enumerate(meta["magnets"]):
        arrays[f"magnet_{k}"] = cache.magnet_paths[name]
    if cache.skin is not None:
        moved = np.array([s is not None for s in cache.skin])
        arrays["skin_moved"] = moved
        n, f = b - a, cache.num_frames
        rot, o0, o1 = np.zeros((f, n, 3, 3), np.float32), np.zeros((f, n, 3)), np.zeros((f, n, 3))
        head = np.zeros((f, 4, 4))
        for i, s in enumerate(cache.skin):
            if s is not None:
                rot[i], o0[i], o1[i], head[i] = s[0][a:b], s[1][a:b], s[2][a:b], s[3]
        arrays.update(skin_rot=rot, skin_o0=o0, skin_o1=o1, skin_head=head)
    import json

    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def load_part(path) -> dict:
    """A part file as ``{"meta": dict, name: array, ...}``; a file that is not one is named."""
    import json

    try:
        with np.load(path, allow_pickle=False) as z:
            out = {k: z[k] for k in z.files}
        meta = json.loads(out.pop("meta").tobytes().decode())
    except (OSError, ValueError, KeyError) as err:
        raise HairWigError(f"{path} is not a hair_wig bake part ({err})") from None
    if meta.get("version") != PART_VERSION:
        raise HairWigError(f"{path} is a bake part of another version ({meta.get('version')}); bake it again")
    out["meta"] = meta
    return out


def merge_parts(hair: HairSet, parts: list[dict], names=None) -> BakeCache:
    """The bake of ``hair`` assembled from its ``parts`` (``load_part``'s), which must cover its
    strands exactly once over the same frames, baked from the same rest hair. ``names``: the
    parts' file names, for messages."""
    names = names or [f"part {k + 1}" for k in range(len(parts))]
    if not parts:
        raise HairWigError(f"'{hair.name}': no parts to merge")
    m0 = parts[0]["meta"]
    for part, name in zip(parts, names):
        m = part["meta"]
        if (m["first"], m["last"]) != (m0["first"], m0["last"]):
            raise HairWigError(f"{name}: frames {m['first']}..{m['last']}, the other parts {m0['first']}..{m0['last']}")
        if m["num_strands"] != hair.num_strands or not np.array_equal(part["counts"], hair.counts):
            raise HairWigError(f"{name}: baked from hair of {m['num_strands']} strands, '{hair.name}' has "
                               f"{hair.num_strands} or other point counts now; bake the parts again")
        if m["new_topology"]:
            raise HairWigError(f"{name}: '{hair.name}' bakes a keyed hairstyle whose curves change; bake it in "
                               "one process")
    order = sorted(range(len(parts)), key=lambda k: parts[k]["meta"]["strands"][0])
    at = 0
    for k in order:
        a, b = parts[k]["meta"]["strands"]
        if a != at:
            what = f"strands {at}:{a} are in no part" if a > at else f"strands {a}:{at} are in two parts"
            raise HairWigError(f"'{hair.name}': {what} ({names[k]} starts at {a})")
        at = b
    if at != hair.num_strands:
        raise HairWigError(f"'{hair.name}': strands {at}:{hair.num_strands} are in no part")
    cache = BakeCache(hair, m0["first"], m0["last"])
    off = hair.offsets
    skin = m0["skin"]
    if skin:
        cache.skin = [None] * cache.num_frames
        moved = parts[0]["skin_moved"]
        full = {key: np.zeros((cache.num_frames, hair.num_strands) + parts[0][f"skin_{key}"].shape[2:],
                              parts[0][f"skin_{key}"].dtype) for key in ("rot", "o0", "o1")}
    for k in order:
        part, (a, b) = parts[k], parts[k]["meta"]["strands"]
        rest = np.asarray(hair.points[off[a]:off[b]], np.float32)
        if not np.array_equal(part["rest"], rest):
            raise HairWigError(f"{names[k]}: baked from another rest pose of '{hair.name}' (edited since); "
                               "bake the parts again")
        cache.positions[:, off[a]:off[b]] = part["positions"]
        cache.warnings += [w for w in part["meta"]["warnings"] if w not in cache.warnings]
        cache.penetration = max(cache.penetration, part["meta"]["penetration"])
        if skin:
            for key in full:
                full[key][:, a:b] = part[f"skin_{key}"]
    cache.colliders = list(m0["colliders"])
    cache.magnet_paths = {name: parts[order[0]][f"magnet_{j}"] for j, name in enumerate(m0["magnets"])}
    if skin:
        head = parts[0]["skin_head"]
        for i in np.flatnonzero(moved):
            cache.skin[i] = (full["rot"][i], full["o0"][i], full["o1"][i], head[i])
    return cache
