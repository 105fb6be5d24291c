"""Keyframed hairstyles: key poses, automatic in-betweens, key leader strands and wisps of imitator
strands (seed 002, Başarankut 2008: §2.2 wisps, §4.1 key frame recording, §4.2 in-betweening).

Key poses are hairstyles recorded at frames; they may differ in how many curves and points they
have. ``KeyedStyle`` binds them once — wisp matching, mass sampling, paths, easing flags and noise
tables — and then gives the pose at any frame with whole-array operations only.

Where we depart from the seed (SPEC §7 lists 002 in one line; the departures are ours):

* Tracks. The thesis matches each key's wisps to the next key's and animates each interval on its
  own; a Blender bake needs one topology for the whole animation, so matches are chained into
  *tracks* running through every key pose. A track has, at every key, either a curve of that key
  or a point (its root) it is collapsed onto. Unmatched curves either grow from / shrink to zero
  length at their root (``unmatched="GROW"``) or split from / merge into their nearest neighbour
  (``"SPLIT"``).
* Second choice. Nearest-root matching is not one-to-one; when a key pose is redrawn, a curve
  that lost its nearest partner to a nearer curve takes the nearest partner nobody took, if that
  is at most three times as far, before it is left to grow/shrink or split/merge.
* Paths. The thesis' path is linear (§4.2.3); ``path="SMOOTH"`` adds a Catmull-Rom spline in time
  through all key poses (non-uniform: tangents from the neighbouring keys' frames). Key poses are
  reached exactly either way.
* Slow-in/slow-out. The thesis scales speeds by ``2 - |s|`` (§4.2.4, eq. 4.2); we warp time per
  axis with a cubic Hermite whose end slopes are 0 where the wisp's average direction flips on
  that axis (the thesis' direction check) and 1 where it does not, so velocity is continuous and
  unchanged on the axes that keep going. The first and last key are approached from rest.
* Air-drag noise. The thesis draws new random offsets every frame, which jitters; ours is a
  cubic B-spline through random values a ``noise_period`` apart in time, sampled with a phase
  that runs along the strand (a wave from root to tip), scaled by (arc position)² so the root
  never moves. Its frame-to-frame change is at most ``2 · magnitude / noise_period``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .collision import MeshField, PoseContacts, groom_limits
from .errors import HairWigError
from .hairset import HairSet
from .scalp import locate_uv


@dataclass
class KeyPose:
    """A hairstyle recorded at ``frame`` (thesis §4.1): ``points (P, 3)`` in the hair object's space,
    ``counts (C,)`` points per curve, ``roots_uv (C, 2)`` surface UVs of the roots or ``None``."""

    frame: float
    points: np.ndarray
    counts: np.ndarray
    roots_uv: np.ndarray | None = None
    name: str = "key pose"

    def __post_init__(self):
        hair = HairSet(self.points, self.counts, name=self.name, surface_uv=self.roots_uv)
        self.points, self.counts, self.offsets = hair.points, hair.counts, hair.offsets

    @property
    def roots(self) -> np.ndarray:
        return self.points[self.offsets[:-1]]

    def curve(self, i: int) -> np.ndarray:
        return self.points[self.offsets[i]:self.offsets[i + 1]]


# ------------------------------------------------------------------------------ matching

def nearest(queries: np.ndarray, sites: np.ndarray) -> np.ndarray:
    """Index of the nearest of ``sites (S, D)`` to every one of ``queries (Q, D)`` (Euclidean,
    D = 2 or 3). Through a uniform grid of about four sites per cell: each query looks at the 3^D
    cells round its own, which is exact whenever it finds a site within one cell size; the few
    queries that do not (far from every site) are answered by brute force."""
    q = np.asarray(queries, np.float64)
    s = np.asarray(sites, np.float64)
    if len(s) == 0:
        raise HairWigError("nothing to match against")
    dim = s.shape[1]
    lo = np.minimum(s.min(axis=0), q.min(axis=0))
    span = np.maximum(np.maximum(s.max(axis=0), q.max(axis=0)) - lo, 1e-12)
    per_axis = max(1, int(round((len(s) / 4) ** (1.0 / dim))))
    h = float(span.max()) / per_axis
    grid = np.minimum((span / h).astype(np.int64) + 1, 1 << 20)
    cell_of = lambda x: np.minimum(((x - lo) / h).astype(np.int64), grid - 1)
    strides = np.cumprod(np.r_[1, grid[:-1]])
    sc = cell_of(s) @ strides
    order = np.argsort(sc, kind="stable")
    sorted_cells = sc[order]
    qc = cell_of(q)
    best = np.full(len(q), np.inf)
    arg = np.full(len(q), -1, np.int64)
    for off in np.stack(np.meshgrid(*[[-1, 0, 1]] * dim, indexing="ij"), -1).reshape(-1, dim):
        c = qc + off
        valid = np.all((c >= 0) & (c < grid), axis=1)
        cid = np.where(valid, c @ strides, -1)
        start = np.searchsorted(sorted_cells, cid, side="left")
        stop = np.where(valid, np.searchsorted(sorted_cells, cid, side="right"), start)
        n = stop - start
        who = np.repeat(np.arange(len(q)), n)
        cand = order[np.repeat(start, n) + np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)]
        d = ((q[who] - s[cand]) ** 2).sum(axis=1)
        # per query: smallest distance, ties to the lower site index
        key = np.lexsort((cand, d, who))
        first = np.ones(len(key), bool)
        first[1:] = who[key][1:] != who[key][:-1]
        w, dd, cc = who[key][first], d[key][first], cand[key][first]
        better = (dd < best[w]) | ((dd == best[w]) & (cc < arg[w]))
        best[w[better]], arg[w[better]] = dd[better], cc[better]
    unsure = np.flatnonzero(best > h * h)
    for a in range(0, len(unsure), 64):
        rows = unsure[a:a + 64]
        d = ((q[rows, None, :] - s[None, :, :]) ** 2).sum(axis=2)
        arg[rows] = np.argmin(d, axis=1)
    return arg


def match_wisps(src: KeyPose, dst: KeyPose) -> np.ndarray:
    """Thesis §4.2.1: every curve of ``src`` targets the curve of ``dst`` whose root is nearest in
    surface UV space (in root position when either key has no UVs). Returns ``(C_src,)`` indices."""
    if src.roots_uv is not None and dst.roots_uv is not None:
        return nearest(src.roots_uv, dst.roots_uv)
    return nearest(src.roots, dst.roots)


# ---------------------------------------------------------------------------- resampling

def resample(points: np.ndarray, counts: np.ndarray, new_counts: np.ndarray) -> np.ndarray:
    """Wisp mass sampling (thesis §4.2.2): give every curve ``new_counts[c] >= counts[c]`` points
    without changing its shape. The ``d`` extra points go round the segments from the root, one
    per segment per round; a segment given ``n`` extra points is cut into ``n + 1`` equal parts.

    points (P, 3), counts (C,), new_counts (C,) → (new_counts.sum(), 3) float32. Vectorised over
    all curves at once."""
    counts = np.asarray(counts, np.int64)
    new_counts = np.asarray(new_counts, np.int64)
    if np.any(new_counts < counts):
        c = int(np.flatnonzero(new_counts < counts)[0])
        raise HairWigError(f"curve {c}: cannot resample {counts[c]} points down to {new_counts[c]}")
    points = np.asarray(points, np.float32)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    segs = counts - 1                                   # segments per curve
    extra = new_counts - counts
    seg_curve = np.repeat(np.arange(len(counts)), segs)
    seg_first = np.concatenate([[0], np.cumsum(segs)])[:-1]
    local = np.arange(segs.sum()) - np.repeat(seg_first, segs)
    per_seg = extra[seg_curve] // segs[seg_curve] + (local < extra[seg_curve] % segs[seg_curve])
    # every segment emits its start point and its extra points; every curve then its last point
    emitted = per_seg + 1
    seg_start = offsets[:-1][seg_curve] + local
    src = np.repeat(seg_start, emitted)
    r = np.arange(emitted.sum()) - np.repeat(np.cumsum(emitted) - emitted, emitted)
    t = (r / np.repeat(emitted, emitted)).astype(np.float32)[:, None]
    body = points[src] + (points[src + 1] - points[src]) * t
    out = np.empty((int(new_counts.sum()), 3), np.float32)
    new_offsets = np.concatenate([[0], np.cumsum(new_counts)])
    last = new_offsets[1:] - 1
    is_last = np.zeros(len(out), bool)
    is_last[last] = True
    out[~is_last] = body
    out[last] = points[offsets[1:] - 1]
    return out


# -------------------------------------------------------------------------------- tracks

@dataclass
class Tracks:
    """Matches chained through all key poses. For key ``k`` and track ``t``: ``curve[k, t]`` is the
    key's curve the track shows there, or -1 when it is collapsed onto ``anchor[k, t]`` (3,)."""

    curve: np.ndarray          # (K, T) int64
    anchor: np.ndarray         # (K, T, 3) float32
    counts: np.ndarray         # (T,) points per track: the most any of its curves has

    @property
    def num_tracks(self) -> int:
        return self.curve.shape[1]


def _claim(primary: np.ndarray, claimants: np.ndarray, wanted: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Give every wanted curve that has no primary source yet its nearest claimant (ties to the
    lower index); returns the claimants that won."""
    order = np.lexsort((claimants, dist, wanted))
    first = np.ones(len(order), bool)
    first[1:] = wanted[order][1:] != wanted[order][:-1]
    win = order[first]
    free = primary[wanted[win]] < 0
    win = win[free]
    primary[wanted[win]] = claimants[win]
    return claimants[win]


def _second_choice(primary: np.ndarray, target: np.ndarray, ra: np.ndarray, rb: np.ndarray, rounds: int = 4):
    """Curves that lost their nearest partner to a nearer curve take the nearest partner nobody
    took, when it lies within three times the distance to the partner they lost (our addition to
    thesis §4.2.1: fewer curves grow, shrink, split or merge when a key pose is redrawn).
    ``target`` is updated in place."""
    gate = 3.0 * np.linalg.norm(ra - rb[target], axis=1)
    for _ in range(rounds):
        losers = np.flatnonzero(primary[target] != np.arange(len(target)))
        orphans = np.flatnonzero(primary < 0)
        if not losers.size or not orphans.size:
            return
        choice = orphans[nearest(ra[losers], rb[orphans])]
        d = np.linalg.norm(ra[losers] - rb[choice], axis=1)
        near = d <= gate[losers]
        if not near.any():
            return
        won = _claim(primary, losers[near], choice[near], d[near])
        target[won] = _partner_of(primary, won)


def _partner_of(primary: np.ndarray, curves: np.ndarray) -> np.ndarray:
    """For each of ``curves`` (sources), the curve whose primary source it is."""
    j = np.flatnonzero(primary >= 0)
    where = np.full(int(primary.max()) + 1, -1)
    where[primary[j]] = j
    return where[curves]


def build_tracks(keys: list[KeyPose], unmatched: str = "GROW", second_choice: bool = True) -> Tracks:
    """Chain ``match_wisps`` through consecutive keys (thesis §4.2.1, in tracks: module docstring).

    Key 0 starts one track per curve. Going from key k to k+1, each curve ``j`` of k+1 has a primary
    source: the nearest of the curves that target it (then, with ``second_choice``, curves that lost
    take the nearest curve nobody targets, if not much farther: ``_second_choice``). The primary
    source's track continues onto ``j``. Any other track on a curve that targets ``j`` shrinks to its own root (``GROW``) or merges
    into ``j`` (``SPLIT``). A curve of k+1 nobody targets starts a new track, collapsed on its root
    before k+1 (``GROW``) or split from the track of its nearest curve in k (``SPLIT``).
    Collapsed tracks stay collapsed."""
    if unmatched not in ("GROW", "SPLIT"):
        raise HairWigError(f"unmatched curves: expected GROW or SPLIT, got {unmatched!r}")
    k0 = keys[0]
    curve = [np.arange(len(k0.counts))]
    anchor = [k0.roots.copy()]
    for k in range(len(keys) - 1):
        a, b = keys[k], keys[k + 1]
        target = match_wisps(a, b)                                  # (Ca,)
        uv = a.roots_uv is not None and b.roots_uv is not None
        ra, rb = (a.roots_uv, b.roots_uv) if uv else (a.roots, b.roots)
        ra, rb = np.asarray(ra, np.float64), np.asarray(rb, np.float64)
        primary = np.full(len(b.counts), -1)
        _claim(primary, np.arange(len(target)), target, np.linalg.norm(ra - rb[target], axis=1))
        if second_choice:
            _second_choice(primary, target, ra, rb)
        cur, anc = curve[-1], anchor[-1]
        live = cur >= 0
        nxt = np.full_like(cur, -1)
        nxt_anchor = anc.copy()
        src = np.where(live, cur, 0)
        is_primary = live & (primary[target[src]] == src)
        merge = live & ~is_primary
        nxt[is_primary] = target[src[is_primary]]
        if unmatched == "SPLIT":
            nxt[merge] = target[src[merge]]
        else:
            nxt_anchor[merge] = a.roots[src[merge]]
        nxt_anchor[nxt >= 0] = b.roots[nxt[nxt >= 0]]
        # Curves of k+1 that nobody targets: new tracks.
        orphans = np.flatnonzero(primary < 0)
        if orphans.size:
            if unmatched == "SPLIT":
                back = nearest(rb[orphans], ra)                     # their nearest curve in k
                # the track now showing that curve (one that continues there, else any)
                holder = np.full(len(a.counts), -1)
                holder[cur[live]] = np.flatnonzero(live)
                parent = holder[back]
                hist_c = [c[parent] for c in curve]
                hist_a = [x[parent] for x in anchor]
            else:
                hist_c = [np.full(orphans.size, -1) for _ in curve]
                hist_a = [np.broadcast_to(b.roots[orphans], (orphans.size, 3)).copy() for _ in anchor]
            curve = [np.concatenate([c, h]) for c, h in zip(curve, hist_c)]
            anchor = [np.concatenate([x, h]) for x, h in zip(anchor, hist_a)]
            nxt = np.concatenate([nxt, orphans])
            nxt_anchor = np.concatenate([nxt_anchor, b.roots[orphans]])
        curve.append(nxt)
        anchor.append(nxt_anchor)
    curve = np.stack(curve)
    anchor = np.stack(anchor).astype(np.float32)
    counts = np.full(curve.shape[1], 2, np.int64)
    for k, key in enumerate(keys):
        on = curve[k] >= 0
        counts[on] = np.maximum(counts[on], key.counts[curve[k, on]])
    return Tracks(curve, anchor, counts)


def track_shapes(keys: list[KeyPose], tracks: Tracks) -> np.ndarray:
    """Every key pose in the tracks' topology: (K, P, 3) float32, ``P = tracks.counts.sum()``.
    A track's curve is resampled up to the track's count (``resample``); a collapsed track has
    all its points on its anchor."""
    n = tracks.counts
    offsets = np.concatenate([[0], np.cumsum(n)])
    point_track = np.repeat(np.arange(len(n)), n)
    out = np.empty((len(keys), int(n.sum()), 3), np.float32)
    for k, key in enumerate(keys):
        c = tracks.curve[k]
        out[k] = tracks.anchor[k][point_track]
        on = np.flatnonzero(c >= 0)
        if on.size:
            sel = c[on]
            pts = resample(key.points[curve_point_index(key.offsets, sel)], key.counts[sel], n[on])
            out[k, curve_point_index(offsets, on)] = pts
    return out


def curve_point_index(offsets: np.ndarray, curves: np.ndarray) -> np.ndarray:
    """Point indices of ``curves``, in order, from curve ``offsets`` (vectorised ranges)."""
    curves = np.asarray(curves, np.int64)
    starts = offsets[curves]
    lens = offsets[curves + 1] - starts
    return np.repeat(starts - np.concatenate([[0], np.cumsum(lens)])[:-1], lens) + np.arange(lens.sum())


# --------------------------------------------------------------------------- the style

def hermite_warp(u: np.ndarray, ease_in: np.ndarray, ease_out: np.ndarray) -> np.ndarray:
    """Time warp w(u) on [0, 1]: cubic Hermite from 0 to 1 with end slopes 0 where eased and 1
    where not (w = u when neither). Broadcasts ``u`` against the boolean flags."""
    m0 = np.where(ease_in, 0.0, 1.0).astype(np.float32)
    m1 = np.where(ease_out, 0.0, 1.0).astype(np.float32)
    u2 = u * u
    u3 = u2 * u
    h01 = 3 * u2 - 2 * u3
    return h01 + m0 * (u3 - 2 * u2 + u) + m1 * (u3 - u2)


@dataclass
class StyleSettings:
    path: str = "LINEAR"              # LINEAR (thesis §4.2.3) or SMOOTH (Catmull-Rom in time)
    slow_in_out: bool = True          # thesis §4.2.4 with its per-axis direction check
    unmatched: str = "GROW"           # GROW/shrink by length, or SPLIT/merge
    noise: float = 0.0                # air-drag noise magnitude at the tip (object units)
    noise_period: float = 12.0        # frames between the noise's random values
    noise_seed: int = 0


class KeyedStyle:
    """Key poses bound once; ``pose(frame)`` gives the in-between hairstyle (thesis §4.2).

    Frames before the first key hold it, frames after the last hold the last.
    """

    def __init__(self, keys: list[KeyPose], settings: StyleSettings | None = None, name: str = "hair"):
        if not keys:
            raise HairWigError(f"'{name}' has no key poses; record one with Record Key Pose")
        keys = sorted(keys, key=lambda k: k.frame)
        frames = np.array([k.frame for k in keys], np.float64)
        if np.any(np.diff(frames) == 0):
            f = frames[1:][np.diff(frames) == 0][0]
            raise HairWigError(f"'{name}' has two key poses at frame {f:g}")
        self.name = name
        self.settings = s = settings or StyleSettings()
        if s.path not in ("LINEAR", "SMOOTH"):
            raise HairWigError(f"'{name}': path must be LINEAR or SMOOTH, got {s.path!r}")
        self.keys = keys
        self.frames = frames
        self.tracks = build_tracks(keys, s.unmatched)
        self.counts = self.tracks.counts.astype(np.int32)
        self.offsets = np.concatenate([[0], np.cumsum(self.counts)])
        self.shapes = track_shapes(keys, self.tracks)                      # (K, P, 3)
        self.roots_uv = self._track_uvs()
        self.point_track = np.repeat(np.arange(len(self.counts)), self.counts)
        self._bind_paths()
        self._bind_noise()
        self.colliders = []
        self.surface = None
        self._not_root = np.ones(self.num_points, bool)
        self._not_root[self.offsets[:-1]] = False

    @property
    def num_points(self) -> int:
        return self.shapes.shape[1]

    def _track_uvs(self) -> np.ndarray | None:
        """(T, 2) each track's root UV: that of the first curve it shows (None without UV maps)."""
        if any(k.roots_uv is None for k in self.keys):
            return None
        uv = np.zeros((self.tracks.num_tracks, 2), np.float32)
        done = np.zeros(self.tracks.num_tracks, bool)
        for k, key in enumerate(self.keys):
            c = self.tracks.curve[k]
            take = ~done & (c >= 0)
            uv[take] = key.roots_uv[c[take]]
            done |= take
        return uv

    def hair(self, frame: float | None = None) -> HairSet:
        """The tracks as a hair set, posed at ``frame`` (the first key when None)."""
        pts = self.shapes[0] if frame is None else self.pose(frame)
        return HairSet(pts, self.counts, name=self.name)

    def _bind_paths(self):
        k = len(self.frames)
        shapes = self.shapes
        if k > 1:
            h = np.diff(self.frames).astype(np.float32)                    # (K-1,)
            delta = np.diff(shapes, axis=0)                                # (K-1, P, 3)
            # each interval's path as a cubic in the (warped) interval time w: c0 + w (c1 + w (c2 + w c3))
            if self.settings.path == "SMOOTH":
                # tangents (per frame): non-uniform Catmull-Rom, one-sided at the ends
                tang = np.empty_like(shapes)
                tang[0] = delta[0] / h[0]
                tang[-1] = delta[-1] / h[-1]
                if k > 2:
                    tang[1:-1] = (shapes[2:] - shapes[:-2]) / (self.frames[2:] - self.frames[:-2]).astype(
                        np.float32)[:, None, None]
                m0 = tang[:-1] * h[:, None, None]
                m1 = tang[1:] * h[:, None, None]
                self.cubic = (shapes[:-1], m0, 3 * delta - 2 * m0 - m1, m0 + m1 - 2 * delta)
            else:
                self.cubic = (shapes[:-1], delta)
            # direction check (thesis §4.2.4): each track's mean motion per axis in every interval
            sums = np.add.reduceat(delta, self.offsets[:-1], axis=1)          # (K-1, T, 3)
            sign = np.sign(sums)
            flip = np.ones((k, sums.shape[1], 3), bool)                         # first, last: from rest
            flip[1:-1] = sign[:-1] * sign[1:] < 0
            self.ease = flip
        else:
            self.ease = np.ones((1, len(self.counts), 3), bool)

    def _bind_noise(self):
        s = self.settings
        n = self.counts
        local = np.arange(self.num_points) - np.repeat(self.offsets[:-1], n)
        along = (local / np.repeat(n - 1, n)).astype(np.float32)             # 0 root .. 1 tip
        self.along = along
        self.noise_weight = (along * along)[:, None]
        period = max(float(s.noise_period), 1e-3)
        span = (self.frames[-1] - self.frames[0]) / period
        self.noise_knots = int(np.ceil(span)) + 6
        rng = np.random.default_rng(s.noise_seed)
        values = rng.uniform(-1.0, 1.0, (self.noise_knots, len(n), 3)).astype(np.float32)
        # track-major rows, so that a point's four knots are four neighbouring rows
        self._noise_rows = np.ascontiguousarray(values.transpose(1, 0, 2)).reshape(-1, 3)
        self._noise_base = (self.point_track * self.noise_knots).astype(np.int64)

    def _key_root_uvs(self) -> np.ndarray:
        """(K, T, 2) each track's root UV at every key: its curve's there; where a track shows no
        curve (grown from or shrunk onto a root), the nearest earlier key's, else the next one's."""
        uv = np.full((len(self.keys), self.tracks.num_tracks, 2), np.nan)
        for k, key in enumerate(self.keys):
            c = self.tracks.curve[k]
            uv[k, c >= 0] = key.roots_uv[c[c >= 0]]
        for order in (range(1, len(uv)), range(len(uv) - 2, -1, -1)):
            for k in order:
                gap = np.isnan(uv[k, :, 0])
                uv[k, gap] = uv[k - 1 if order.step > 0 else k + 1, gap]
        return uv

    def set_surface(self, tri_uv: np.ndarray, tri_verts: np.ndarray, positions: np.ndarray) -> None:
        """Keep in-between roots on the scalp (seed 002: a root "does not change its location"
        on the head; SPEC §7): a root moving between two key poses travels in the surface's UV
        map, from one key's root UV to the next, and is placed on the surface there, its strand
        moved with it (segment lengths kept). ``tri_uv`` (T, 3, 2), ``tri_verts`` (T, 3): the
        surface's triangles; ``positions`` (V, 3) its rest vertices in this hair's space. A root
        whose UV path leaves the map (across a seam, through a pole's gap) goes to the surface's
        point nearest its straight path instead. Without root UVs in every key pose, roots keep
        their straight path."""
        if self.roots_uv is None or len(self.keys) < 2:
            return
        uv = self._key_root_uvs()
        moving = np.any(uv[1:] != uv[:-1], axis=(0, 2))          # tracks whose root travels
        if not moving.any():
            return
        self.surface = (np.asarray(tri_uv, np.float64), np.asarray(tri_verts, np.int64),
                        np.asarray(positions, np.float64), uv, np.flatnonzero(moving))
        self._surface_field = None

    def set_collider(self, fields, to_field: np.ndarray, offsets) -> None:
        """Collide in-betweens with the head and body (SPEC §6): ``fields`` are the colliders'
        signed-distance fields (``collision.MeshField`` or ``RayField``) in field space,
        ``to_field`` (4, 4) maps this hair's rest space there, ``offsets`` the distance each keeps
        (field units); the in-betweens meet them as every pose does (``collision.PoseContacts``).
        Every key pose is a groom: a point's collision surface is ``min(offset, its clearance)``
        (``collision.groom_limits``), the clearance interpolated between the two key poses around
        the frame, so each key pose comes back exactly at its frame."""
        self.contacts = PoseContacts(fields, to_field)
        clear = [self.contacts.clearances(shape) for shape in self.shapes]          # key → field → (P,)
        self.colliders = [(float(offset), np.stack([c[i] for c in clear])) for i, offset in enumerate(offsets)]

    def _interval(self, frame: float):
        """The key interval of an in-between ``frame``: (k, u in (0, 1)), or None on or outside
        the keys."""
        frames = self.frames
        if len(frames) == 1 or frame <= frames[0] or frame >= frames[-1]:
            return None
        k = int(np.searchsorted(frames, frame, side="right") - 1)
        u = (frame - frames[k]) / (frames[k + 1] - frames[k])
        return (k, u) if u > 0 else None

    def _roots_on_surface(self, out: np.ndarray, k: int, u: float) -> None:
        tri_uv, tri_verts, positions, uv, moving = self.surface
        w = u
        if self.settings.slow_in_out:
            ease_in = self.ease[k][moving].all(axis=1)
            ease_out = self.ease[k + 1][moving].all(axis=1)
            w = hermite_warp(np.float64(u), ease_in, ease_out)
        w = np.broadcast_to(np.asarray(w, np.float64), moving.shape)[:, None]
        now = uv[k, moving] + w * (uv[k + 1, moving] - uv[k, moving])
        tri, bary = locate_uv(tri_uv, now, self.name, strict=False)
        ok = tri >= 0
        on = np.empty((len(moving), 3))
        on[ok] = np.einsum("nk,nkd->nd", bary[ok], positions[tri_verts[tri[ok]]])
        off = np.flatnonzero(~ok)
        if off.size:
            # the UV path leaves the map: the surface's point nearest the straight path (which,
            # a chord, sinks into a round head)
            if self._surface_field is None:
                self._surface_field = MeshField(positions, tri_verts, name=self.name)
            _, closest, _, known = self._surface_field.exact(out[self.offsets[moving[off]]])
            on[off] = np.where(known[:, None], closest, out[self.offsets[moving[off]]])
        shift = (on - out[self.offsets[moving]]).astype(np.float32)
        delta = np.zeros((len(self.counts), 3), np.float32)
        delta[moving] = shift
        out += delta[self.point_track]

    def _collide(self, out: np.ndarray, k: int, u: float) -> None:
        pts = np.flatnonzero(self._not_root)
        limits = []
        for offset, clear in self.colliders:
            c = clear[k][pts]
            c = c + np.float32(u) * (clear[k + 1][pts] - c)
            limits.append(groom_limits(c, offset))
        x, hit = self.contacts.push(out[pts], limits)
        out[pts[hit]] = x[hit].astype(np.float32)

    def noise(self, frame: float) -> np.ndarray:
        """The air-drag noise (P, 3) at ``frame`` (module docstring): a uniform cubic B-spline in
        time through per-track random values, its phase running one knot from root to tip."""
        s = self.settings
        x = (float(frame) - self.frames[0]) / max(float(s.noise_period), 1e-3) + 2.0 - self.along
        x = np.clip(x, 1.0, self.noise_knots - 3.0 - 1e-6)
        i = x.astype(np.int64)
        f = (x - i).astype(np.float32)[:, None]
        f2, f3 = f * f, f * f * f
        b0 = (1 - f) ** 3 / 6
        b1 = (3 * f3 - 6 * f2 + 4) / 6
        b2 = (-3 * f3 + 3 * f2 + 3 * f + 1) / 6
        b3 = f3 / 6
        rows, at = self._noise_rows, self._noise_base + i
        out = b0 * rows.take(at - 1, axis=0)
        out += b1 * rows.take(at, axis=0)
        out += b2 * rows.take(at + 1, axis=0)
        out += b3 * rows.take(at + 2, axis=0)
        out *= self.noise_weight * np.float32(s.noise)
        return out

    def pose(self, frame: float, out: np.ndarray | None = None, noise: bool = True) -> np.ndarray:
        """The hairstyle at ``frame`` (P, 3) float32 in the hair object's space."""
        if out is None:
            out = np.empty((self.num_points, 3), np.float32)
        frames, shapes, s = self.frames, self.shapes, self.settings
        if len(frames) == 1 or frame <= frames[0] or frame >= frames[-1]:
            np.copyto(out, shapes[0] if len(frames) == 1 or frame <= frames[0] else shapes[-1])
        else:
            k = int(np.searchsorted(frames, frame, side="right") - 1)
            h = np.float32(frames[k + 1] - frames[k])
            u = np.float32((frame - frames[k]) / h)
            if s.slow_in_out:
                w = hermite_warp(u, self.ease[k], self.ease[k + 1])[self.point_track]   # (P, 3)
            else:
                w = np.full((1, 3), u, np.float32)
            c = [x[k] for x in self.cubic]
            np.multiply(c[-1], w, out=out)                  # Horner from the highest power
            for x in c[-2:0:-1]:
                out += x
                out *= w
            out += c[0]
        if noise and s.noise:
            out += self.noise(frame)
        between = self._interval(frame)
        if between is not None and self.surface is not None:
            self._roots_on_surface(out, *between)
        if between is not None and self.colliders:
            self._collide(out, *between)
        return out


# ------------------------------------------------------------------ leaders and imitators

def root_frames(points: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """An orthonormal frame (C, 3, 3) per curve, columns (tangent, bitangent, direction): the
    direction of the curve's first segment and two axes across it, built the same way for every
    curve so that a frame change maps one root's neighbourhood onto another's."""
    d = points[offsets[:-1] + 1] - points[offsets[:-1]]
    d = d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
    ref = np.where(np.abs(d[:, 2:3]) < 0.9, np.array([[0.0, 0.0, 1.0]]), np.array([[1.0, 0.0, 0.0]]))
    t = np.cross(ref, d)
    t /= np.linalg.norm(t, axis=1, keepdims=True)
    b = np.cross(d, t)
    return np.stack([t, b, d], axis=2).astype(np.float32)


class LeaderFollow:
    """Key leader strands (thesis §4.2.1 "Key Leader Strand", appendix A): key poses are recorded for
    the leader curves only; every other curve follows its leader's motion in its own root frame.

    A follower's point at arc fraction ``s`` moves by the leader's displacement from its first key
    at the same fraction, carried from the leader's root frame into the follower's:
    ``p_f(s, t) = p_f(s, 0) + R_f R_L(0)ᵀ (p_L(s, t) − p_L(s, 0))`` (rotations ``R`` from
    ``root_frames``)."""

    def __init__(self, style: KeyedStyle, hair: HairSet, leader_of: np.ndarray):
        self.style, self.hair = style, hair
        leader_of = np.asarray(leader_of, np.int64)
        if leader_of.shape != (hair.num_strands,) or np.any(leader_of < 0) or np.any(leader_of >= len(style.counts)):
            raise HairWigError(f"'{hair.name}': every curve needs a leader among the {len(style.counts)} key-posed curves")
        n = hair.counts.astype(np.int64)
        local = np.arange(hair.num_points) - np.repeat(hair.offsets[:-1], n)
        s = local / np.repeat(n - 1, n)
        lc = style.counts.astype(np.int64)[leader_of]
        lead = np.repeat(leader_of, n)
        x = s * np.repeat(lc - 1, n)
        i0 = np.minimum(np.floor(x).astype(np.int64), np.repeat(lc - 2, n))
        self.frac = (x - i0).astype(np.float32)[:, None]
        self.i0 = style.offsets[lead] + i0
        rest0 = style.shapes[0]
        self.base = self._at(rest0)
        rf = root_frames(hair.points, hair.offsets)
        rl = root_frames(rest0, style.offsets)[leader_of]
        self.rotation = np.repeat(rf @ np.transpose(rl, (0, 2, 1)), n, axis=0)   # (P, 3, 3)
        self.points = hair.points

    def _at(self, leader_points: np.ndarray) -> np.ndarray:
        a = leader_points[self.i0]
        return a + (leader_points[self.i0 + 1] - a) * self.frac

    def pose(self, frame: float, out: np.ndarray | None = None) -> np.ndarray:
        moved = self._at(self.style.pose(frame)) - self.base
        res = np.einsum("pij,pj->pi", self.rotation, moved).astype(np.float32)
        res += self.points
        if out is not None:
            out[:] = res
            return out
        return res


def imitator_roots_uv(leader_uv: np.ndarray, closeness: float, rings: int) -> np.ndarray:
    """Thesis §2.2, eq. 2.3: rings of eight imitator roots (N, S, E, W and the diagonals) around
    each leader's root in UV space, ring ``r`` at ``r · closeness``. (L, 2) → (L, 8·rings, 2); the
    diagonals sit at the same distance as N/S/E/W (the thesis: "all having the same distance")."""
    ang = np.arange(8) * (np.pi / 4)
    ring = np.arange(1, rings + 1)[:, None] * closeness
    off = np.stack([np.cos(ang)[None, :] * ring, np.sin(ang)[None, :] * ring], axis=-1).reshape(-1, 2)
    return np.asarray(leader_uv, np.float64)[:, None, :] + off[None]


def imitate(leader: np.ndarray, new_roots: np.ndarray, fuzziness: float, closeness: float,
            rng: np.random.Generator) -> np.ndarray:
    """Imitator curves (thesis §2.2): the leader's shape (n, 3) moved onto each of ``new_roots``
    (m, 3), every point then jittered by up to ``fuzziness · closeness``, growing from 0 at the root
    (the root stays on the scalp). Returns (m, n, 3) float32."""
    leader = np.asarray(leader, np.float32)
    shape = leader - leader[0]
    out = np.asarray(new_roots, np.float32)[:, None, :] + shape[None]
    n = len(leader)
    grow = (np.arange(n) / max(n - 1, 1)).astype(np.float32)[None, :, None]
    jitter = rng.uniform(-1.0, 1.0, out.shape).astype(np.float32)
    out += jitter * grow * np.float32(fuzziness * closeness)
    return out
