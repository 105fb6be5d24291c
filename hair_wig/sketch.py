"""Hair drawn by sketching (seed 002, Başarankut 2008, ch. 3; SPEC §7 "002"): a stroke's samples
become a strand rooted on the scalp, and loops drawn in it become curls.

* The stroke's first sample must hit the scalp (a ray from the view, §3.1.2): that hit is the root.
* The **drawing plane** passes through the root, normal to the view direction (§3.1.1); every
  later sample is the point where its view ray meets the plane, and the samples are taken at
  even time steps (the thesis records control points "in uniform time steps").
* The strand is a Catmull-Rom curve through the samples, its ends extrapolated
  ``C_0 = 2 C_1 − C_2`` (§2, eq. 2.1).
* **Loops become curls** (§3.1.3): in plane coordinates segments ``n < m`` cross when both line
  parameters of eq. 3.1 lie in [0, 1]; for each ``n`` the nearest ``m`` is kept, and a loop whose
  polygon is not convex is no curl. The loop's focal point ``F`` is the mean of its segments'
  midpoints (eq. 3.2); the curl's axis runs through ``F`` parallel to the start of segment ``n``
  → the end of segment ``m``; the loop's points are turned about it by eq. 3.3,
  ``360° · i / (2N − 1)`` for a loop of ``N`` segments, whose ``2N − 1`` control points count each
  segment's two ends — so inner point ``j`` (the end of segment ``j − 1``, ``i = 2j − 1``) turns
  by ``360° (2j − 1) / (2N − 1)``, and the loop's two ends stay where they were: the flat loop
  becomes one turn of a helix about the axis.

Numpy only. Strokes cross in as view rays (origins and directions, world) with their times;
everything is vectorised over a stroke's samples; a batch of strokes is a loop over strokes
(each a few hundred samples at most), never over points.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import HairWigError


class StrokeRefused(HairWigError):
    """A stroke that makes no strand: refused (the stroke, not the drawing); ``why`` says it
    in a few words for one stroke left out, ``why_many`` for several."""

    why, why_many = "makes no strand", "make no strand"


class NotOnScalp(StrokeRefused):
    """A stroke whose first sample misses the scalp."""

    why, why_many = "does not start on the scalp", "do not start on the scalp"


class NoLength(StrokeRefused):
    """A stroke with no length on its drawing plane: a tap (a press and a release where it was
    pressed), whose samples all lie on the root. It would make a strand of no length, every
    point on the root, with no direction to keep outside the head along."""

    why, why_many = "has no length (a tap)", "have no length (taps)"


@dataclass
class Sketched:
    """One stroke made a strand: ``points`` (n, 3), the root's triangle ``tri`` and barycentric
    coordinates ``bary`` (3,) on the scalp (its UV follows from them), the control points the
    curve went through (``controls`` (K, 3), curls applied) and the curls made, as sample index
    pairs ``(n, m)`` (segments n and m crossed)."""

    points: np.ndarray
    tri: int
    bary: np.ndarray
    controls: np.ndarray
    loops: list = field(default_factory=list)


def ray_hit(origin, direction, positions, tri_verts):
    """The nearest hit of the ray ``origin + t · direction`` (t > 0) on the triangles
    ``positions[tri_verts]`` (Möller–Trumbore over every triangle at once): ``(t, tri, bary)``,
    or ``None`` when it misses."""
    o = np.asarray(origin, np.float64)
    d = np.asarray(direction, np.float64)
    tri = np.asarray(positions, np.float64)[np.asarray(tri_verts)]
    a, e1, e2 = tri[:, 0], tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
    p = np.cross(d, e2)
    det = np.einsum("tk,tk->t", e1, p)
    ok = np.abs(det) > 1e-14 * max(1.0, float(np.abs(e1).max()) ** 2)
    inv = np.divide(1.0, det, out=np.zeros_like(det), where=ok)
    s = o - a
    u = np.einsum("tk,tk->t", s, p) * inv
    q = np.cross(s, e1)
    v = (q @ d) * inv
    t = np.einsum("tk,tk->t", e2, q) * inv
    eps = 1e-9
    hit = ok & (u >= -eps) & (v >= -eps) & (u + v <= 1 + eps) & (t > 0)
    if not hit.any():
        return None
    k = int(np.flatnonzero(hit)[np.argmin(t[hit])])
    return float(t[k]), k, np.array([1.0 - u[k] - v[k], u[k], v[k]])


def drawing_plane(root, view_dir):
    """The drawing plane through ``root`` normal to the view (§3.1.1): its unit normal (toward
    the viewer) and two unit axes in it, ``(normal, e1, e2)``, right-handed."""
    n = -np.asarray(view_dir, np.float64)
    size = np.linalg.norm(n)
    if not size > 0:
        raise HairWigError("sketch: the view direction has no length")
    n = n / size
    pick = np.eye(3)[int(np.argmin(np.abs(n)))]
    e1 = np.cross(pick, n)
    e1 /= np.linalg.norm(e1)
    return n, e1, np.cross(n, e1)


def onto_plane(origins, directions, root, normal) -> np.ndarray:
    """Where the view rays (``origins``, ``directions`` (K, 3)) meet the plane through ``root``
    with ``normal``: (K, 3). A ray along the plane cannot meet it: an error."""
    o = np.asarray(origins, np.float64).reshape(-1, 3)
    d = np.asarray(directions, np.float64).reshape(-1, 3)
    along = d @ normal
    if np.any(np.abs(along) < 1e-12 * np.linalg.norm(d, axis=1)):
        raise HairWigError("sketch: a view ray runs along the drawing plane (the view is edge-on to it)")
    t = ((np.asarray(root, np.float64) - o) @ normal) / along
    return o + t[:, None] * d


def even_in_time(points, times, step: float | None = None) -> np.ndarray:
    """The stroke ``points`` (K, 3) recorded at ``times`` (K,) resampled at even time steps
    ``step`` (default: the stroke's mean step, so a stroke keeps its sample count); the first
    and last samples are kept. Where the pen rested, repeated times are merged."""
    p = np.asarray(points, np.float64)
    t = np.asarray(times, np.float64)
    if len(p) != len(t):
        raise HairWigError(f"sketch: {len(p)} samples but {len(t)} times")
    if len(p) < 2:
        return p.copy()
    keep = np.r_[True, np.diff(t) > 0]
    p, t = p[keep], t[keep]
    if len(p) < 2 or np.any(np.diff(t) < 0):
        raise HairWigError("sketch: a stroke's sample times must rise")
    span = t[-1] - t[0]
    step = span / (len(t) - 1) if step is None else float(step)
    if not step > 0:
        raise HairWigError(f"sketch: the time step must be > 0, got {step}")
    count = max(2, int(round(span / step)) + 1)
    at = np.linspace(t[0], t[-1], count)
    return np.stack([np.interp(at, t, p[:, k]) for k in range(3)], axis=1)


def catmull_rom(controls, per_segment: int = 8) -> np.ndarray:
    """The uniform Catmull-Rom curve through every control point (K, 3), its ends extrapolated
    ``C_0 = 2 C_1 − C_2`` and ``C_{K+1} = 2 C_K − C_{K−1}``, sampled ``per_segment`` times on each
    span (the control points themselves among them): ((K − 1) · per_segment + 1, 3)."""
    c = np.asarray(controls, np.float64)
    if len(c) < 2:
        raise HairWigError("sketch: a curve needs two control points at least")
    ext = np.concatenate([2 * c[:1] - c[1:2], c, 2 * c[-1:] - c[-2:-1]])
    s = np.arange(per_segment) / per_segment
    s2, s3 = s * s, s * s * s
    # the Catmull-Rom basis (tension 1/2) for p0..p3, evaluated for every span at once
    b0 = -0.5 * s3 + s2 - 0.5 * s
    b1 = 1.5 * s3 - 2.5 * s2 + 1
    b2 = -1.5 * s3 + 2 * s2 + 0.5 * s
    b3 = 0.5 * s3 - 0.5 * s2
    p0, p1, p2, p3 = ext[:-3], ext[1:-2], ext[2:-1], ext[3:]
    out = (b0[None, :, None] * p0[:, None] + b1[None, :, None] * p1[:, None]
           + b2[None, :, None] * p2[:, None] + b3[None, :, None] * p3[:, None])
    return np.concatenate([out.reshape(-1, 3), c[-1:]])


def resample(points, count: int) -> np.ndarray:
    """``count`` points evenly spaced along the polyline ``points`` by arc length, ends kept."""
    p = np.asarray(points, np.float64)
    seg = np.linalg.norm(np.diff(p, axis=0), axis=1)
    s = np.r_[0.0, np.cumsum(seg)]
    if not s[-1] > 0:
        raise HairWigError("sketch: a stroke of no length makes no strand")
    at = np.linspace(0.0, s[-1], int(count))
    return np.stack([np.interp(at, s, p[:, k]) for k in range(3)], axis=1)


def crossings(xy) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of segments ``n < m`` (not neighbours) of the plane polyline ``xy`` (K, 2) that
    cross (eq. 3.1: both line parameters in [0, 1]): ``(n, m, u)``, ``u`` where on segment ``n``."""
    p = np.asarray(xy, np.float64)
    a, d = p[:-1], np.diff(p, axis=0)
    k = len(d)
    n, m = np.triu_indices(k, 2)
    if n.size == 0:
        return n, m, np.zeros(0)
    dn, dm = d[n], d[m]
    den = dm[:, 1] * dn[:, 0] - dm[:, 0] * dn[:, 1]
    w = a[n] - a[m]
    # parallel segments (a straight stroke's) never cross: their sine is round-off
    ok = np.abs(den) > 1e-9 * np.linalg.norm(dn, axis=1) * np.linalg.norm(dm, axis=1)
    u1 = np.divide(dm[:, 0] * w[:, 1] - dm[:, 1] * w[:, 0], den, out=np.full(den.shape, -1.0), where=ok)
    u2 = np.divide(dn[:, 0] * w[:, 1] - dn[:, 1] * w[:, 0], den, out=np.full(den.shape, -1.0), where=ok)
    hit = ok & (u1 >= 0) & (u1 <= 1) & (u2 >= 0) & (u2 <= 1)
    return n[hit], m[hit], u1[hit]


def convex(polygon, tolerance: float = 1e-9) -> bool:
    """Whether the closed plane polygon (K, 2) turns one way only (collinear corners allowed)."""
    p = np.asarray(polygon, np.float64)
    e = np.roll(p, -1, axis=0) - p
    turn = e[:, 0] * np.roll(e, -1, axis=0)[:, 1] - e[:, 1] * np.roll(e, -1, axis=0)[:, 0]
    scale = tolerance * float(np.einsum("ij,ij->i", e, e).max())
    return bool(np.all(turn >= -scale) or np.all(turn <= scale))


def find_loops(xy) -> list[tuple[int, int]]:
    """The stroke's loops (§3.1.3) in plane coordinates ``xy`` (K, 2): for each segment ``n``
    (after the last loop found) the nearest later segment ``m`` it crosses; the loop — the
    crossing point and the samples between — is kept if its polygon is convex. Returns the
    ``(n, m)`` pairs, in stroke order, never overlapping."""
    p = np.asarray(xy, np.float64)
    n, m, u = crossings(p)
    loops = []
    after = -1
    for first in np.unique(n):
        if first <= after:
            continue
        pick = np.flatnonzero(n == first)
        k = pick[np.argmin(m[pick])]                     # the nearest: m − n smallest
        last = int(m[k])
        cross = p[first] + u[k] * (p[first + 1] - p[first])
        if convex(np.concatenate([cross[None], p[first + 1:last + 1]])):
            loops.append((int(first), last))
            after = last
    return loops


def curl_loop(controls, n: int, m: int) -> np.ndarray:
    """Loop ``(n, m)`` of the control points (K, 3) turned into a curl (eqs. 3.2, 3.3): its
    inner points ``n + 1 .. m`` turned about the axis through the focal point ``F`` (the mean of
    the loop's segment midpoints), parallel to ``controls[m + 1] − controls[n]``, inner point
    ``j`` by ``2π (2j − 1) / (2N − 1)`` for ``N = m − n + 1`` segments. Distances to the axis are
    kept; the loop's ends stay. Returns the new control points."""
    c = np.array(controls, np.float64)
    seg = slice(n, m + 1)
    mid = 0.5 * (c[seg] + c[n + 1:m + 2])
    focal = mid.mean(axis=0)
    axis = c[m + 1] - c[n]
    size = np.linalg.norm(axis)
    if not size > 0:
        return c
    axis /= size
    count = m - n + 1
    j = np.arange(1, count)
    angle = 2 * np.pi * (2 * j - 1) / (2 * count - 1)
    r = c[n + 1:m + 1] - focal
    along = (r @ axis)[:, None] * axis
    radial = r - along
    cos, sin = np.cos(angle)[:, None], np.sin(angle)[:, None]
    c[n + 1:m + 1] = focal + along + radial * cos + np.cross(axis, radial) * sin
    return c


@dataclass
class SketchSettings:
    """``points``: points per strand (the wig's); ``time_step``: the even time step the
    samples are taken at (seconds; None: the stroke's own mean step); ``curls``: loops become
    curls; ``per_segment``: Catmull-Rom samples per span before resampling."""

    points: int = 16
    time_step: float | None = None
    curls: bool = True
    per_segment: int = 8

    def __post_init__(self):
        if int(self.points) < 2:
            raise HairWigError(f"sketch: points per strand must be at least 2, got {self.points}")
        if self.time_step is not None and not self.time_step > 0:
            raise HairWigError(f"sketch: the time step must be > 0, got {self.time_step}")


def sketch_strand(origins, directions, times, view_dir, positions, tri_verts,
                  settings: SketchSettings | None = None, name: str = "stroke") -> Sketched:
    """One stroke (view rays ``origins``, ``directions`` (K, 3) and ``times`` (K,), world) on the
    scalp ``positions``/``tri_verts`` (world) seen along ``view_dir``, made a strand (see the
    module's docstring). A stroke whose first ray misses the scalp (``NotOnScalp``) or that has
    no length on the drawing plane (``NoLength``) is refused by ``name``. A stroke of two samples
    is a straight strand from the root as long as the stroke is on the drawing plane."""
    s = settings or SketchSettings()
    o = np.asarray(origins, np.float64).reshape(-1, 3)
    d = np.asarray(directions, np.float64).reshape(-1, 3)
    if len(o) < 2:
        raise HairWigError(f"{name}: a stroke needs two samples at least")
    hit = ray_hit(o[0], d[0], positions, tri_verts)
    if hit is None:
        raise NotOnScalp(f"{name} does not start on the scalp: start the stroke on the head")
    t, tri, bary = hit
    root = o[0] + t * d[0]
    normal, e1, e2 = drawing_plane(root, view_dir)
    on_plane = onto_plane(o[1:], d[1:], root, normal)
    samples = np.concatenate([root[None], on_plane])
    # the root is placed by its ray's hit on a triangle, the samples by their rays' crossing of
    # the plane: the same ray lands on both within some tens of roundings of the coordinates
    if np.abs(samples - root).max() <= 64 * np.finfo(np.float64).eps * max(np.abs(o).max(), np.abs(root).max()):
        raise NoLength(f"{name} has no length on its drawing plane (a tap): drag from the root to draw a strand")
    controls = even_in_time(samples, times, s.time_step)
    loops = []
    if s.curls and len(controls) >= 4:
        xy = np.stack([(controls - root) @ e1, (controls - root) @ e2], axis=1)
        loops = find_loops(xy)
        for n, m in loops:
            controls = curl_loop(controls, n, m)
    dense = catmull_rom(controls, s.per_segment)
    return Sketched(resample(dense, s.points), tri, bary, controls, loops)


def keep_outside(points, field, clearance: float) -> np.ndarray:
    """Strands ``points`` (S, n, 3) laid again root to tip at their segments' lengths, each
    segment turned just enough to slide over ``field`` (a ``MeshField`` in the same space) at
    ``clearance`` where it would end inside (Style Hair's ``relay``): drawn hair lies on the
    head where the drawing plane cut into it."""
    from .collision import SurfaceCollide
    from .styling import relay

    x = np.asarray(points, np.float64)
    return relay(SurfaceCollide(field, np.full(len(x), float(clearance))), x)
