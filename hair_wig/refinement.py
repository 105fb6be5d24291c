"""Refinement (seed 000, "Refinement"; SPEC §6): compression compensation, length control and
collision with the head, all in head-local space."""

from __future__ import annotations

import numpy as np

from .errors import HairWigError
from .hairset import HairSet
from .kernels import follow_chains, strand_major
from .kernels.compression import compress_rows
from .leader import follow_the_leader


def compensate_compression(rest: np.ndarray, displaced: np.ndarray, centre: np.ndarray,
                           alpha: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Scale the part of each displacement that points towards the head centre by ``α(t)``
    (seed 000, "Refinement", FIG. 10; SPEC §6.1).

    ``d = p − p_rest = n + r`` with ``n`` along the compression vector ``c = l − p_rest``; when
    ``n`` points towards the centre, ``d = α n + r``. rest, displaced, out : (P, 3) float32;
    alpha : (P,) or (P, 1) float32.
    """
    rows = np.ascontiguousarray(displaced.T)
    compensate_compression_rows(np.ascontiguousarray(rest.T), rows, centre, np.ravel(alpha))
    out[...] = rows.T
    return out


def compression_vectors(rest: np.ndarray, centre: np.ndarray, alpha: np.ndarray):
    """What compression compensation needs of a rest pose (rows (3, P)): the compression
    vectors ``c = l − p_rest`` and the factor ``(α − 1) / |c|²`` (0 for a point at the centre)."""
    c = centre.astype(np.float32)[:, None] - rest
    cc = np.einsum("kp,kp->p", c, c)
    factor = np.zeros_like(cc)
    np.divide(np.asarray(alpha, np.float32) - 1, cc, out=factor, where=cc > 0)
    return c, factor


def compensate_compression_rows(rest: np.ndarray, p: np.ndarray, centre: np.ndarray,
                                alpha: np.ndarray, bound=None, work: np.ndarray | None = None,
                                row: np.ndarray | None = None) -> np.ndarray:
    """``compensate_compression`` in place on points stored as rows (3, P):
    ``p += c · (α − 1) · max(0, d·c) / |c|²`` (``kernels.compression.compress_rows``). ``bound``
    may carry ``compression_vectors`` of this ``rest`` (they depend on the rest pose only).
    ``work`` and ``row``: the numpy form's scratch, unused."""
    rows = p if p.flags.c_contiguous and p.dtype == np.float32 else np.ascontiguousarray(p, np.float32)
    rest32 = np.ascontiguousarray(rest, np.float32)
    alpha32 = np.ascontiguousarray(alpha, np.float32)
    if bound is None:
        c, factor = rest32, alpha32                   # not read: computed in the kernel
    else:
        c, factor = (np.ascontiguousarray(a, np.float32) for a in bound)
    compress_rows(rows, rest32, c, factor, np.asarray(centre, np.float32), alpha32, bound is not None)
    if rows is not p:
        p[...] = rows
    return p


def _compensate_numpy(rest: np.ndarray, p: np.ndarray, centre: np.ndarray, alpha: np.ndarray,
                      bound=None) -> np.ndarray:
    """The numpy form of ``compensate_compression_rows`` (the kernel's reference in tests)."""
    c, factor = compression_vectors(rest, centre, alpha) if bound is None else bound
    d = np.subtract(p, rest)
    dn = np.einsum("kp,kp->p", d, c)
    np.maximum(dn, 0, out=dn)               # only where the displacement points inward
    dn *= factor
    p += c * dn
    return p


_NO_GUIDE = np.empty((0, 3))           # follow_chains: each point guided by its segment as it came in


class LengthControl:
    """Length control (seed 000, "Refinement": ``elasticity + ratio · (1 − elasticity)``; SPEC §6.2).

    mode 'STRAND' (the patent's): every segment of a strand is scaled by ``s = e + ratio (1 − e)``
    with ``ratio = L_rest / L_deformed`` of the whole strand, rebuilt from the root by a cumulative
    sum. mode 'SEGMENT': follow-the-leader (seed 004), each segment pulled back towards its own rest
    length by the same formula, from root to tip.
    """

    def __init__(self, hair: HairSet, elasticity: float = 0.0, mode: str = "STRAND"):
        if not 0 <= elasticity <= 1:
            raise HairWigError(f"length control: elasticity must be in 0..1, got {elasticity}")
        if mode not in ("STRAND", "SEGMENT"):
            raise HairWigError(f"length control: mode must be STRAND or SEGMENT, got {mode!r}")
        self.hair = hair
        self.elasticity = float(elasticity)
        self.mode = mode
        self.rest_segments = hair.segment_lengths().astype(np.float64)
        self.rest_lengths = np.add.reduceat(self.rest_segments, hair.offsets[:-1]).astype(np.float32)
        self.strand = hair.strand_of_point()
        self.roots = hair.offsets[:-1]
        counts = hair.counts
        self.uniform = int(counts[0]) if np.all(counts == counts[0]) else 0
        self._columns = None
        self._columns32 = None
        self._rest_rows = None           # the rest pose as rows (3, P), once a squashed segment asks

    def rest_columns(self, first: int, count: int) -> np.ndarray:
        """Rest segment lengths (n, count) float32, point-major, of ``count`` strands of one
        point count from strand ``first`` on (kept between frames: the walk reads a row a step)."""
        if self._columns is None:
            n = self.uniform
            self._columns = np.ascontiguousarray(self.rest_segments.reshape(-1, n).T, np.float32)
        return self._columns[:, first:first + count]

    @property
    def rest_segments32(self) -> np.ndarray:
        """The segments' rest lengths (P,) float32, a point's from the one before it (the walk's;
        kept between frames)."""
        if self._columns32 is None:
            self._columns32 = self.rest_segments.astype(np.float32)
        return self._columns32

    def set_rest_rows(self, rows: np.ndarray) -> None:
        """Take the lengths to keep from ``rows`` (3, P), this frame's rest pose (a keyframed
        hairstyle whose strands grow, shrink or are redrawn from key pose to key pose)."""
        seg = np.diff(rows, axis=1)
        seg = np.sqrt(np.einsum("kp,kp->p", seg, seg)).astype(np.float64)
        self.rest_segments = np.zeros(rows.shape[1], np.float64)
        self.rest_segments[1:] = seg
        self.rest_segments[self.hair.offsets[:-1]] = 0.0
        self.rest_lengths = np.add.reduceat(self.rest_segments, self.hair.offsets[:-1]).astype(np.float32)
        self._columns = self._columns32 = None
        self._rest_rows = rows

    def apply(self, points: np.ndarray, strands: np.ndarray | None = None) -> np.ndarray:
        """Correct ``points`` (P, 3) float32 in place (only ``strands``, indices, when given)."""
        rows = np.ascontiguousarray(points.T)
        self.apply_rows(rows, strands)
        points[...] = rows.T
        return points

    @property
    def blockable(self) -> bool:
        """Whether blocks of whole strands can be corrected on their own (``first_strand``)."""
        return bool(self.uniform)

    def apply_rows(self, p: np.ndarray, strands: np.ndarray | None = None,
                   first_strand: int = 0, work: np.ndarray | None = None,
                   row: np.ndarray | None = None, base: np.ndarray | None = None) -> np.ndarray:
        """``apply`` on points stored as rows (3, P), in place. When ``blockable``, ``p`` may
        hold only the strands from ``first_strand`` on (``strands`` then counts from there);
        ``work`` (3, P) and ``row`` (P,) are scratch; ``base`` (3, P): the rest pose in the
        points' space this frame (per segment, where a squashed segment takes its direction
        from; default: the bound one)."""
        if self.elasticity >= 1:
            return p
        if self.mode == "STRAND" and self.uniform:
            if strands is None:
                return self._strand_uniform_all(p, first_strand, work, row)
            return self._strand_uniform(p, strands, first_strand)
        if self.mode == "STRAND":
            return self._strand(p, strands)
        if self.uniform:
            return self._segment_uniform(p, strands, first_strand, base)
        return self._segment(p, strands, base)

    def follow(self, leader: np.ndarray, point: np.ndarray, rest: np.ndarray, guide: np.ndarray,
               rest_dir=None, scratch: np.ndarray | None = None, work: np.ndarray | None = None) -> np.ndarray:
        """One follow-the-leader step on rows (3, S), in place: ``point`` placed its segment's
        length ``rest`` (S,) from ``leader`` — scaled by ``s = e + (L / |d|)(1 − e)`` where that is
        well-conditioned, turned towards ``guide`` (the segment as the deformation asked for it)
        and then ``rest_dir`` (the rest segment) where it is not (``leader.follow_the_leader``).
        ``scratch`` (S,) and ``work`` (3, S) are reused when given. Returns ``point``."""
        return follow_the_leader(leader, point, rest, guide, rest_dir, self.elasticity, out=point,
                                 scratch=scratch, work=work)

    def steps(self, q: np.ndarray, rest: np.ndarray, rest_rows: np.ndarray):
        """Follow-the-leader root to tip over point-major strands ``q`` (3, n, S), in place,
        yielding each ``j`` once point ``j`` is placed — a caller may move it further (collision)
        before the next is placed from it. ``rest`` (n, S): the segments' lengths; ``rest_rows``
        (3, S, n): the rest pose, where a segment squashed to nothing takes its direction. Each
        point is guided by its segment as it came in (``follow``)."""
        count = q.shape[2]
        scratch = np.empty(count, np.float32)
        work, guide = np.empty((3, count), np.float32), np.empty((3, count), np.float32)
        came = q[:, 0].copy()                        # where the leader was asked to be
        for j in range(1, q.shape[1]):
            np.subtract(q[:, j], came, out=guide)    # the segment as it came in
            np.copyto(came, q[:, j])
            self.follow(q[:, j - 1], q[:, j], rest[j], guide,
                        lambda: rest_rows[:, :, j] - rest_rows[:, :, j - 1], scratch, work)
            yield j

    def _rest_rows_of(self, base: np.ndarray | None, first_point: int, count: int) -> np.ndarray:
        """The rest pose (3, count) of the points from ``first_point`` on, in the points' space:
        ``base`` when the caller has it (this frame's, head-local), else the bound one."""
        if base is not None:
            return base
        if self._rest_rows is None:
            self._rest_rows = np.ascontiguousarray(self.hair.points.T)
        return self._rest_rows[:, first_point:first_point + count]

    def _segment_uniform(self, p: np.ndarray, strands, first: int = 0, base=None) -> np.ndarray:
        """Follow-the-leader on strands of one point count, root to tip (SPEC §6.4; Müller, Kim,
        Chentanez 2012): ``p'_j = p'_{j−1} + ℓ_j u_j`` with ``ℓ_j = e |d| + (1 − e) L_j`` — with
        ``e = 0`` every segment ends exactly its rest length in one pass — and ``u_j`` the
        conditioned direction of ``leader.follow_the_leader`` (guided by the segment as it came
        in, then the rest segment of ``base``): the one kernel, ``kernels.follow_chains``."""
        n = self.uniform
        count = p.shape[1] // n
        return self._follow(p, np.arange(count + 1, dtype=np.int64) * n, strands,
                            self.rest_segments[first * n:(first + count) * n],
                            self._rest_rows_of(base, first * n, count * n))

    def _follow(self, p, offsets, strands, length, rest_rows) -> np.ndarray:
        """``kernels.follow_chains`` on rows ``p`` (3, P), in place: the ``strands`` (indices or a
        mask; None: all the ``offsets`` give) root to tip, each point guided by its segment as it
        came in."""
        count = len(offsets) - 1
        if strands is None:
            strands = np.arange(count, dtype=np.int64)
        else:
            strands = np.asarray(strands)
            if strands.dtype == bool:
                if strands.shape != (count,):
                    raise IndexError(f"length control: a mask of {strands.size} strands for {count}")
                strands = np.flatnonzero(strands)
            # the kernel writes where it is told, each strand once: out of range or twice would
            # write other points' memory, or one strand from two threads
            strands = np.unique(strands.astype(np.int64))
            if strands.size and (strands[0] < 0 or strands[-1] >= count):
                raise IndexError(f"length control: strand {strands[0] if strands[0] < 0 else strands[-1]} "
                                 f"out of 0..{count - 1}")
        follow_chains(p.T, *strand_major(offsets), strands, length, _NO_GUIDE, rest_rows.T, self.elasticity, True, 1,
                      4 * float(np.finfo(p.dtype).eps))
        return p

    def _strand_uniform_all(self, p: np.ndarray, first: int, work: np.ndarray | None,
                            row: np.ndarray | None) -> np.ndarray:
        """Every strand of the block, in long passes over the rows: strand lengths from the
        point-to-point segments (each strand's first "segment" spans from the previous strand
        and is dropped), then ``p' = p_0 + s (p − p_0)``."""
        n = self.uniform
        count = p.shape[1] // n
        seg = np.empty_like(p) if work is None else work
        np.subtract(p[:, 1:], p[:, :-1], out=seg[:, 1:])
        lengths = np.einsum("kp,kp->p", seg[:, 1:], seg[:, 1:], out=seg[0, 1:])
        np.sqrt(lengths, out=lengths)
        seg[0, ::n] = 0.0
        length = seg[0].reshape(count, n) @ np.ones(n, dtype=np.float32)     # one pass, not count small sums
        rest = self.rest_lengths[first:first + count]
        ratio = np.divide(rest, length, out=np.ones_like(length), where=length > 0)
        e = np.float32(self.elasticity)
        scale = np.empty(p.shape[1], np.float32) if row is None else row
        np.copyto(scale.reshape(count, n), (e + ratio * (1 - e))[:, None])
        root = seg
        np.copyto(root.reshape(3, count, n), p[:, ::n, None])
        p -= root
        p *= scale
        p += root                                       # roots stay exactly where they were
        return p

    def _strand_uniform(self, p: np.ndarray, strands, first: int = 0) -> np.ndarray:
        # Every segment scaled by the strand's s and summed from the root is the same as
        # scaling each point's offset from the root: p'_j = p_0 + s (p_j - p_0).
        e = np.float32(self.elasticity)
        view = p.reshape(3, -1, self.uniform)
        block = view if strands is None else view[:, strands]
        seg = np.subtract(block[:, :, 1:], block[:, :, :-1])
        length = np.sqrt(np.einsum("ksn,ksn->sn", seg, seg)).sum(axis=1)
        rest = self.rest_lengths[first:first + view.shape[1]]
        rest = rest if strands is None else rest[strands]
        ratio = np.divide(rest, length, out=np.ones_like(length), where=length > 0)
        scale = (e + ratio * (1 - e)).astype(np.float32)[None, :, None]
        root = block[:, :, :1].copy()
        block *= scale                                  # p' = s p + (1 - s) p_0
        block += root * (1 - scale)
        block[:, :, :1] = root                          # roots exactly where they were
        if strands is not None:
            view[:, strands] = block
        return p

    def _strand(self, p: np.ndarray, strands) -> np.ndarray:
        """Strands of different lengths: a cumulative sum over the whole set, per strand offset."""
        e = self.elasticity
        q = p.T
        seg = np.empty(q.shape, dtype=np.float64)
        seg[1:] = q[1:] - q[:-1]
        seg[self.roots] = 0.0
        length = np.add.reduceat(np.sqrt(np.einsum("ij,ij->i", seg, seg)), self.roots)
        ratio = np.divide(self.rest_lengths, length, out=np.ones_like(length), where=length > 0)
        factor = e + ratio * (1 - e)
        if strands is not None:
            keep = np.ones(len(factor), dtype=bool)
            keep[strands] = False
            factor[keep] = 1.0
        seg *= factor[self.strand][:, None]
        run = np.cumsum(seg, axis=0)
        start = run[self.roots] - seg[self.roots]
        q[...] = q[self.roots].astype(np.float64)[self.strand] + run - start[self.strand]
        return p

    def _segment(self, p: np.ndarray, strands, base=None) -> np.ndarray:
        """Follow-the-leader over strands of different point counts (``_segment_uniform``)."""
        return self._follow(p, self.hair.offsets.astype(np.int64), strands, self.rest_segments,
                            self._rest_rows_of(base, 0, p.shape[1]))


class RadiusMap:
    """The head as seen from its centre: the distance to its outer surface in every direction,
    precomputed on a (θ, φ) grid (seed 000's ray test; seed 003's "precalculated polar
    coordinates"; SPEC §6.3).

    Built by casting rays from ``centre`` against the triangles, ``supersample``² rays per cell,
    keeping the farthest hit, and adding the mesh's vertices; each grid value is then the maximum
    over its neighbourhood so that bilinear lookups never fall inside the surface. Directions that hit nothing get 0
    (the head does not enclose its centre there).
    """

    def __init__(self, vertices: np.ndarray, triangles: np.ndarray, centre=None,
                 resolution: tuple[int, int] = (64, 128), supersample: int = 2, name: str = "head"):
        v = np.asarray(vertices, dtype=np.float64)
        tri = np.asarray(triangles, dtype=np.int64)
        if tri.ndim != 2 or tri.shape[1] != 3 or len(tri) == 0:
            raise HairWigError(f"'{name}' has no faces to collide with")
        self.centre = (v.min(axis=0) + v.max(axis=0)) / 2 if centre is None else np.asarray(centre, np.float64)
        nt, nph = resolution
        self.shape = (nt, nph)
        st, sp = nt * supersample, nph * supersample
        theta = (np.arange(st) + 0.5) / st * np.pi
        phi = (np.arange(sp) + 0.5) / sp * 2 * np.pi - np.pi
        hits, nearest = _farthest_hits_grid(self.centre, theta, phi, v[tri])
        # A ray that crosses the surface more than once (ears, a neck, a brim): the head is not
        # star-shaped from its centre there, and the ray test keeps only the farthest crossing.
        self.folded = float((nearest < 0.98 * hits).mean())
        # |x| is convex, so over every face the surface is farthest from the centre at a corner:
        # with the corners in the grid, the neighbourhood maximum below bounds the whole surface.
        rel = v[np.unique(tri)] - self.centre
        rv = np.linalg.norm(rel, axis=1)
        th = np.arccos(np.clip(rel[:, 2] / np.where(rv > 0, rv, 1), -1, 1))
        ph = np.arctan2(rel[:, 1], rel[:, 0])
        ci = np.clip((th / np.pi * st).astype(np.int64), 0, st - 1)
        cj = np.clip(((ph + np.pi) / (2 * np.pi) * sp).astype(np.int64), 0, sp - 1)
        np.maximum.at(hits, ci * sp + cj, rv)
        hits = hits.reshape(nt, supersample, nph, supersample)
        cell = hits.max(axis=(1, 3))
        grow = cell.copy()               # neighbourhood max: conservative between samples
        for di in (-1, 0, 1):
            for dj in (-1, 0, 1):
                rolled = np.roll(cell, dj, axis=1)
                if di:
                    rolled = np.concatenate([rolled[:1], rolled[:-1]]) if di > 0 else np.concatenate([rolled[1:], rolled[-1:]])
                grow = np.maximum(grow, rolled)
        self.radii = grow.astype(np.float32)
        self.outer = float(self.radii.max())
        self.missed = float((cell == 0).mean())
        self.name = name

    def warnings(self) -> list[str]:
        """What the ray test cannot do for this head (SPEC §6.3), for the artist."""
        out = []
        if self.missed > 0.01:
            out.append(f"'{self.name}' does not enclose its centre in {100 * self.missed:.0f}% of directions: "
                       f"hair there is not collided")
        if self.folded > 0.01:
            out.append(f"'{self.name}' is not star-shaped from its centre in {100 * self.folded:.0f}% of "
                       f"directions (ears, neck): collision is the patent's ray test from the centre, which "
                       f"pushes hair out to the farthest surface along each ray")
        return out

    def radius(self, dirs: np.ndarray) -> np.ndarray:
        """Surface distance (P,) along unit directions ``dirs`` (P, 3), bilinear on the grid
        (clamped at the poles, wrapping round in φ)."""
        nt, nph = self.shape
        x = np.arccos(np.clip(dirs[:, 2], -1, 1)).astype(np.float32)
        x *= np.float32(nt / np.pi)
        x -= np.float32(0.5)
        y = np.arctan2(dirs[:, 1], dirs[:, 0]).astype(np.float32)
        y += np.float32(np.pi)
        y *= np.float32(nph / (2 * np.pi))
        y -= np.float32(0.5)
        fx = np.floor(x)
        fy = np.floor(y)
        i0 = fx.astype(np.int32)
        j0 = fy.astype(np.int32)
        x -= fx                                   # fractions
        y -= fy
        i1 = np.minimum(i0 + 1, nt - 1) * nph
        i0 = np.maximum(i0, 0) * nph
        j0[j0 < 0] += nph
        j1 = j0 + 1
        j1[j1 == nph] = 0
        flat = self.radii.ravel()
        top = flat.take(i0 + j0)
        top += (flat.take(i0 + j1) - top) * y
        bottom = flat.take(i1 + j0)
        bottom += (flat.take(i1 + j1) - bottom) * y
        top += (bottom - top) * x
        return top


def _directions(theta, phi):
    st, ct = np.sin(theta), np.cos(theta)
    return np.stack(np.broadcast_arrays(st * np.cos(phi), st * np.sin(phi), ct), axis=-1)


def _ray_triangle(origin, dirs, a, b, c):
    """Möller–Trumbore, pairwise: hit distance of ray i against triangle i, 0 where none."""
    e1, e2 = b - a, c - a
    pvec = np.cross(dirs, e2)
    det = np.einsum("ij,ij->i", pvec, e1)
    ok = np.abs(det) > 1e-14
    inv = 1.0 / np.where(ok, det, 1.0)
    tvec = origin - a
    u = np.einsum("ij,ij->i", pvec, tvec) * inv
    qvec = np.cross(tvec, e1)
    v = np.einsum("ij,ij->i", dirs, qvec) * inv
    t = np.einsum("ij,ij->i", e2, qvec) * inv
    hit = ok & (u >= -1e-9) & (v >= -1e-9) & (u + v <= 1 + 1e-9) & (t > 0)
    return np.where(hit, t, 0.0)


def farthest_hits(origin: np.ndarray, dirs: np.ndarray, tris: np.ndarray, chunk: int = 256) -> np.ndarray:
    """Farthest hit distance along each of ``dirs`` (R, 3) from ``origin`` against every triangle
    of ``tris`` (T, 3, 3), 0 where none: the exact ray test, for checks and small cases."""
    out = np.zeros(len(dirs))
    for s in range(0, len(dirs), chunk):
        d = dirs[s:s + chunk]
        r, t = len(d), len(tris)
        hit = _ray_triangle(origin, np.repeat(d, t, axis=0), np.tile(tris[:, 0], (r, 1)),
                            np.tile(tris[:, 1], (r, 1)), np.tile(tris[:, 2], (r, 1)))
        out[s:s + chunk] = hit.reshape(r, t).max(axis=1)
    return out


def _farthest_hits_grid(origin, theta, phi, tris, edge_samples: int = 8):
    """Farthest and nearest hit (0 and inf where none) along every grid direction (θ_i, φ_j),
    testing each triangle only against
    the grid directions inside its angular bounding box (from points along its edges, so arcs
    bulging towards a pole are covered; triangles around a pole or across φ = ±π take every φ)."""
    nt, nph = len(theta), len(phi)
    dth, dph = np.pi / nt, 2 * np.pi / nph
    w = np.linspace(0, 1, edge_samples, endpoint=False)
    a, b, c = tris[:, 0] - origin, tris[:, 1] - origin, tris[:, 2] - origin
    ring = np.concatenate([a[:, None] + w[None, :, None] * (b - a)[:, None],
                           b[:, None] + w[None, :, None] * (c - b)[:, None],
                           c[:, None] + w[None, :, None] * (a - c)[:, None]], axis=1)
    rr = np.linalg.norm(ring, axis=2)
    th = np.arccos(np.clip(ring[..., 2] / np.where(rr > 0, rr, 1), -1, 1))
    ph = np.arctan2(ring[..., 1], ring[..., 0])
    i0 = np.clip(np.floor(th.min(axis=1) / dth - 0.5).astype(np.int64) - 1, 0, nt - 1)
    i1 = np.clip(np.ceil(th.max(axis=1) / dth - 0.5).astype(np.int64) + 1, 0, nt - 1)
    p0, p1 = ph.min(axis=1), ph.max(axis=1)
    wrap = p1 - p0 > np.pi                       # straddles φ = ±π: take the short way round
    ph_w = np.where(ph < 0, ph + 2 * np.pi, ph)
    p0 = np.where(wrap, ph_w.min(axis=1), p0)
    p1 = np.where(wrap, ph_w.max(axis=1), p1)
    polar = (i0 <= 1) | (i1 >= nt - 2) | (p1 - p0 > np.pi)
    j0 = np.floor((p0 + np.pi) / dph - 0.5).astype(np.int64) - 1
    j1 = np.ceil((p1 + np.pi) / dph - 0.5).astype(np.int64) + 1
    j0 = np.where(polar, 0, j0)
    j1 = np.where(polar, nph - 1, np.minimum(j1, j0 + nph - 1))
    rows, cols = i1 - i0 + 1, j1 - j0 + 1
    per = rows * cols
    tri_of = np.repeat(np.arange(len(tris)), per)
    k = np.arange(per.sum()) - np.repeat(np.cumsum(per) - per, per)
    ii = i0[tri_of] + k // cols[tri_of]
    jj = (j0[tri_of] + k % cols[tri_of]) % nph
    out = np.zeros(nt * nph)
    nearest = np.full(nt * nph, np.inf)
    chunk = 1 << 20
    for s in range(0, len(tri_of), chunk):
        sl = slice(s, s + chunk)
        t_idx, i_idx, j_idx = tri_of[sl], ii[sl], jj[sl]
        d = _directions(theta[i_idx], phi[j_idx])
        hit = _ray_triangle(np.zeros(3), d, a[t_idx], b[t_idx], c[t_idx])
        np.maximum.at(out, i_idx * nph + j_idx, hit)
        np.minimum.at(nearest, i_idx * nph + j_idx, np.where(hit > 0, hit, np.inf))
    return out, nearest
