"""Interacting wisps (seed 001, Plante, Cani, Poulin 2002, "Capturing the complexity of hair
motion"; SPEC §7 "001" and §8): the *Wisps* dynamics layer.

The wig's strands are grouped into wisps (by where they grow and how they lie, or by an integer
curve attribute the artist made). Each wisp is a **skeleton** — a chain of point masses carrying
its strands' mass, held at the root and anchored along its first segment in the head (§3.2) — and
an **envelope**: at each skeleton point a cross-section in the plane bisecting its two segments
with four light masses (1/100 of the skeleton's) that move only along radial half-lines, on soft,
heavily damped springs linked to each other for volume (§3.3). The cross-sections' frames are
carried root to tip by the least rotation: wisps never twist.

Every strand rides its wisp (§6): at bind each strand point gets fixed coordinates in its wisp's
cross-sections (segment, fraction along it, offsets along ``e₁, e₂`` and the segment), and each
frame it is placed there — the offsets scaled by the envelope's radius on their side and the
segment's stretch, so waves keep their count as a wisp stretches. What is shown is the goal plus
the wisp's displacement from the goal's wisp (``kernels.wisps.wisp_place``): at rest that is the
groom exactly, and what magnets did inside a wisp stays.

Dynamics (§5): damped linear and angular springs along the skeleton, damping as velocity
modifications that never reverse a relative velocity and keep momentum, gravity, air drag, the
scene's force fields, the goal of SPEC §8 (the groom is the equilibrium: the style's hold cancels
gravity at rest, as for Strands), substeps. Wisps meet each other (§4.1–4.2: a grid broadphase
over segments; quasi-parallel wisps whose relative velocity lies within 25° of their common
plane interpenetrate with viscous friction, others collide inelastically and their envelopes
compress), and the wig's colliders (§4.3: sliding contact within a distance, penetration
reaction that moves a skeleton point out at its segment's length and carries the rest of the
wisp, envelope points in along their half-lines).

Where this departs from the seed, and why:

* Strands are the groom's own, not drawn at random in a disc: each is placed as the goal plus its
  wisp's displacement from the goal's wisp, so the groom (and what magnets did inside a wisp)
  stays and a wisp at rest shows the groom exactly.
* The goal of SPEC §8 pulls every skeleton point (implicitly, stable for any Hold), the style's
  hold cancels gravity at rest, as for Strands, and the skeleton's springs rest at the goal's
  lengths and bends (a key pose or a magnet that reshapes the style reshapes the wisps); the seed
  relaxes a stretched groom under gravity first.
* The angular springs' elastic part is a position modification (each segment turned part of the
  way to the goal's bend, its tail carried, no velocity changed): as a force towards a target the
  segment before sets, it fed energy into a shaken wisp. Their damping stays a velocity
  modification.
* Two wisps also meet where their skeleton axes pass within half their radii of each other, not
  only at cross-section points: a thin wisp's segment passed through another between its
  cross-sections.
* An envelope point meets another wisp only in a collision, and only loses what carries it deeper:
  a groom's neighbouring wisps overlap where they lie, and their envelopes were dragged flat and
  wide by every neighbour. Parallel wisps (within 6°) always interpenetrate. Envelopes stay
  between 0.05 and 2 × their rest radii.
* Sliding contact on the body slows the sliding by Coulomb friction (the wig's Friction, shared
  with Strands and Rods) rather than a viscous drag.
* A wisp wider than Widest Wisp of its length is split: wide wisps kink their strands as they bend.

Arrays are wisp-major (``kernels/wisps.py``); the layer works in the world, as Strands do, and
places the strands in head-local space.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .collision import MeshField, groom_limits, kernel_colliders
from .collision.contacts import contact_maps
from .collision.rows import _dot
from .dynamics_layer import FRICTION, DynamicsLayer, HairModel, LayerFrame, setting
from .errors import HairWigError
from .kernels import wisp_body
from .kernels.field import launch
from .kernels.response import met_rows
from .kernels.wisps import (ENVELOPE_MASS, wisp_carry, wisp_frames, wisp_gather, wisp_interact, wisp_place, wisp_positions,
                            wisp_velocities)
from .spaces import rotation_of, scale_of

SOURCES = ("GROOM", "ATTRIBUTE")
MIN_RADIUS = 0.25             # a wisp's thinnest envelope at rest, of its mean segment length
SQUEEZE = 0.05                # how far an envelope may be squeezed, of its rest radius
PASSES = 4                    # penetration reactions a substep, at most
SPREAD = 2.0                  # how far it may be flung wide, of its rest radius


@dataclass
class WispSettings:
    """How the wisps are made and move. Rates are per second; stiffnesses are accelerations per
    unit of stretch or distance (1/s²)."""

    wisps: int = field(default=64, metadata=setting(
        "wisps_count", "Wisps", "How many wisps the strands are grouped into, by where they grow and how they "
        "lie: fewer make thick locks, more make finer ones (see Widest Wisp: short sparse hair may get "
        "more)", when=("source", "GROOM"), min=1, max=100000,
        soft_max=1000))
    max_width: float = field(default=0.1, metadata=setting(
        "wisps_max_width", "Widest Wisp", "A wisp whose roots spread wider than this share of its strands' "
        "length is split in two until none is (wide wisps kink their strands when they bend); 0 keeps the "
        "count as asked", when=("source", "GROOM"), min=0.0, max=10.0, soft_max=1.0))
    source: str = field(default="GROOM", metadata=setting(
        "wisps_source", "Wisps From", "How strands are grouped into wisps",
        items=[("GROOM", "Groom", "By where strands grow on the scalp and how they lie (Wisps, Seed)"),
               ("ATTRIBUTE", "Attribute", "By an integer curve attribute: strands with one value form one wisp "
                                          "(e.g. painted, or a clump id from Geometry Nodes)")]))
    attribute: str = field(default="wisp", metadata=setting(
        "wisps_attribute", "Wisp Attribute", "The integer curve attribute whose value says which wisp each "
        "strand is in", when=("source", "ATTRIBUTE"), reads="groups"))
    seed: int = field(default=0, metadata=setting(
        "wisps_seed", "Seed", "Another number groups the strands into other wisps", when=("source", "GROOM"),
        min=0))
    segments: int = field(default=8, metadata=setting(
        "wisps_segments", "Wisp Segments", "Segments of each wisp's skeleton: more follow a bending wisp more "
        "closely and cost more", min=1, max=64))
    substeps: int = field(default=8, metadata=setting(
        "wisps_substeps", "Substeps", "Steps per frame: more follow fast motion more faithfully and cost more",
        min=1, max=128))
    goal_stiffness: float = field(default=150.0, metadata=setting(
        "wisps_stiffness", "Hold", "How strongly each wisp is pulled back to the groomed, magnet-posed shape "
        "(less towards the tips): lower swings more freely. Key it to let hair loose for a move", keyed=True,
        min=0.0, max=1e6, soft_max=1000.0))
    goal_damping: float = field(default=10.0, metadata=setting(
        "wisps_goal_damping", "Settle", "How quickly wisps stop swinging about the groomed shape (does not slow "
        "them following the head)", min=0.0, max=1e4, soft_max=50.0))
    stiffness: float = field(default=4000.0, metadata=setting(
        "wisps_stretch_stiffness", "Stretch Stiffness", "How firmly a wisp keeps its length: lower lets wavy "
        "wisps stretch as they swing", min=0.0, max=1e6, soft_max=20000.0))
    max_stretch: float = field(default=0.05, metadata=setting(
        "wisps_max_stretch", "Max Stretch", "The most a wisp's skeleton may stretch or shrink, of its length",
        min=0.0, max=1.0, subtype="FACTOR"))
    damping: float = field(default=40.0, metadata=setting(
        "wisps_damping", "Stretch Damping", "How quickly a wisp's stretching dies away", min=0.0, max=1e5,
        soft_max=200.0))
    bend: float = field(default=1000.0, metadata=setting(
        "wisps_bend", "Bend Stiffness", "How firmly a wisp keeps its groomed curve while it swings", min=0.0,
        max=1e6, soft_max=5000.0))
    bend_damping: float = field(default=20.0, metadata=setting(
        "wisps_bend_damping", "Bend Damping", "How quickly a wisp's bending wobble dies away", min=0.0, max=1e5,
        soft_max=100.0))
    envelope_stiffness: float = field(default=1000.0, metadata=setting(
        "wisps_volume_stiffness", "Volume Stiffness", "How firmly a wisp comes back to its groomed thickness after "
        "it is squeezed or flung wide", min=0.0, max=1e5, soft_max=1000.0))
    envelope_damping: float = field(default=100.0, metadata=setting(
        "wisps_volume_damping", "Volume Damping", "How slowly a wisp's thickness changes (hair inside a wisp is "
        "very viscous)", min=0.0, max=1e5, soft_max=200.0))
    drag: float = field(default=0.5, metadata=setting(
        "wisps_drag", "Air Drag", "How much the air slows every motion of the hair", min=0.0, max=1e4,
        soft_max=10.0))
    dynablend: float = field(default=1.0, metadata=setting(
        "wisps_dynablend", "Dynablend", "How much of the wisps' own motion shows: 0 none (exactly the magnets' "
        "pose), 1 all of it. Key it per shot", keyed=True, min=0.0, max=1.0, subtype="FACTOR"))
    interact: bool = field(default=True, metadata=setting(
        "wisps_interact", "Wisps Meet", "Wisps slide into each other where they lie alike and collide where "
        "they cross"))
    viscosity: float = field(default=5.0, metadata=setting(
        "wisps_viscosity", "Viscosity", "How much wisps sliding into each other drag each other along (more "
        "where the hair is packed): higher keeps them together longer", when=("interact", True), keyed=True,
        min=0.0, max=1e4, soft_max=100.0))
    interact_every: int = field(default=1, metadata=setting(
        "wisps_interact_every", "Meet Every", "Wisps meet every this many substeps: more is faster and coarser",
        when=("interact", True), min=1, max=64))
    contact_distance: float = field(default=0.005, metadata=setting(
        "wisps_contact_distance", "Contact Distance", "Within this distance of a collider (beyond its offset) "
        "wisps slide on it instead of moving into it", min=0.0, max=10.0, soft_max=0.1, subtype="DISTANCE"))
    friction: float = field(default=0.3, metadata=FRICTION)
    hold_style: bool = True              # the groom is the equilibrium under gravity
    groups: np.ndarray | None = None     # (S,) the attribute's values (``source`` ATTRIBUTE), read by Blender

    def check(self) -> None:
        for what in ("goal_stiffness", "goal_damping", "stiffness", "damping", "bend", "bend_damping", "max_width",
                     "envelope_stiffness", "envelope_damping", "drag", "viscosity", "contact_distance", "friction"):
            value = getattr(self, what)
            if not np.isfinite(value) or value < 0:
                raise HairWigError(f"wisp dynamics: {what.replace('_', ' ')} must be >= 0, got {value}")
        for what, low in (("wisps", 1), ("segments", 1), ("substeps", 1), ("interact_every", 1), ("seed", 0)):
            if int(getattr(self, what)) < low:
                raise HairWigError(f"wisp dynamics: {what.replace('_', ' ')} must be at least {low}, "
                                   f"got {getattr(self, what)}")
        if not 0 <= self.dynablend <= 1:
            raise HairWigError(f"wisp dynamics: dynablend must be in 0..1, got {self.dynablend}")
        if not 0 <= self.max_stretch <= 1:
            raise HairWigError(f"wisp dynamics: max stretch must be in 0..1, got {self.max_stretch}")
        if self.friction > 1:
            raise HairWigError(f"wisp dynamics: friction must be in 0..1, got {self.friction}")
        if self.source not in SOURCES:
            raise HairWigError(f"wisp dynamics: wisps come from one of {SOURCES}, got {self.source!r}")


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-300)


def arc_fractions(rows: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(P,) each point's arc length from its root over its strand's length (0 root, 1 tip; a
    strand of no length: its points' index fractions)."""
    p = np.asarray(rows, np.float64)
    counts = np.diff(offsets)
    strand = np.repeat(np.arange(len(counts)), counts)
    seg = np.zeros(p.shape[1])
    seg[1:] = np.linalg.norm(np.diff(p, axis=1), axis=0)
    seg[offsets[:-1]] = 0.0
    run = np.cumsum(seg)
    run -= np.repeat(run[offsets[:-1]], counts)
    total = np.repeat(run[offsets[1:] - 1], counts)
    index = np.arange(p.shape[1]) - np.repeat(offsets[:-1], counts)
    by_index = index / np.maximum(np.repeat(counts, counts) - 1, 1)
    return np.where(total > 0, run / np.where(total > 0, total, 1.0), by_index), strand


def group_wisps(rest_rows: np.ndarray, offsets: np.ndarray, count: int, seed: int,
                max_width: float = 0.1) -> np.ndarray:
    """(S,) each strand's wisp, 0..W−1: k-means over where a strand grows and how it lies — its
    root, and (half weighted) its middle and tip relative to the root — from a k-means++ start
    drawn with ``seed``, deterministic, into ``count`` wisps (fewer where some are left empty,
    more where one is wider than ``max_width`` of its length: ``_split_wide``; 0: never)."""
    p = np.asarray(rest_rows, np.float64)
    offsets = np.asarray(offsets)
    counts = np.diff(offsets)
    num = len(counts)
    count = max(1, min(int(count), num))
    roots = p[:, offsets[:-1]].T
    tips = p[:, offsets[1:] - 1].T
    mids = p[:, offsets[:-1] + (counts - 1) // 2].T
    feat = np.concatenate([roots, 0.5 * (mids - roots), 0.5 * (tips - roots)], axis=1)
    rng = np.random.default_rng(int(seed))
    centres = np.empty((count, feat.shape[1]))
    centres[0] = feat[rng.integers(num)]
    near = ((feat - centres[0]) ** 2).sum(axis=1)
    for c in range(1, count):
        total = near.sum()
        pick = int(rng.integers(num)) if total <= 0 else int(np.searchsorted(np.cumsum(near), rng.random() * total))
        centres[c] = feat[min(pick, num - 1)]
        near = np.minimum(near, ((feat - centres[c]) ** 2).sum(axis=1))
    label = np.zeros(num, np.int64)
    sq = (feat ** 2).sum(axis=1)
    for _ in range(25):
        d = sq[:, None] - 2 * feat @ centres.T + (centres ** 2).sum(axis=1)[None, :]
        new = np.argmin(d, axis=1)
        if _ > 0 and np.array_equal(new, label):
            break
        label = new
        sums = np.zeros_like(centres)
        np.add.at(sums, label, feat)
        n = np.bincount(label, minlength=count)
        keep = n > 0
        centres[keep] = sums[keep] / n[keep, None]
    label = np.unique(label, return_inverse=True)[1].astype(np.int64)
    if max_width <= 0:
        return label
    return _split_wide(label, roots, np.linalg.norm(tips - roots, axis=1), rng, float(max_width))


def _split_wide(label: np.ndarray, roots: np.ndarray, length: np.ndarray, rng, widest: float) -> np.ndarray:
    """Wisps whose roots spread wider than ``widest`` of their strands' mean length split in two (by
    2-means on their roots), again until none is: a wide wisp turns its strands' large offsets
    with each bend of its skeleton, and its strands kink (seen in renders: grass blades grouped
    three to a 0.3 m wisp on 0.25–0.4 m blades bent into zig-zags; at a quarter of the length long
    hair over Suzanne still had wavy loose wisps beside the ear, at a tenth neither)."""
    while True:
        count = int(label.max()) + 1
        centre = np.zeros((count, 3))
        np.add.at(centre, label, roots)
        n = np.bincount(label, minlength=count)
        centre /= n[:, None]
        spread = np.zeros(count)
        np.maximum.at(spread, label, np.linalg.norm(roots - centre[label], axis=1))
        mean_length = np.bincount(label, weights=length, minlength=count) / n
        wide = np.flatnonzero((spread > widest * mean_length) & (n > 1))
        if wide.size == 0:
            return label
        for w in wide:
            members = np.flatnonzero(label == w)
            pts = roots[members]
            a = pts[int(rng.integers(len(pts)))]
            b = pts[int(np.argmax(((pts - a) ** 2).sum(axis=1)))]       # the farthest from a
            a = pts[int(np.argmax(((pts - b) ** 2).sum(axis=1)))]       # and from that
            for _ in range(10):
                side = ((pts - b) ** 2).sum(axis=1) < ((pts - a) ** 2).sum(axis=1)
                if side.all() or not side.any():
                    break
                a, b = pts[~side].mean(axis=0), pts[side].mean(axis=0)
            if side.all() or not side.any():
                side = np.arange(len(pts)) >= len(pts) // 2
            label[members[side]] = count
            count += 1


def wisps_from_attribute(values, num_strands: int) -> np.ndarray:
    """(S,) each strand's wisp from an integer attribute's ``values`` (S,): one wisp per value."""
    values = np.asarray(values)
    if values.shape != (num_strands,):
        raise HairWigError(f"wisp dynamics: the wisp attribute has {values.size} values for {num_strands} strands")
    return np.unique(values.astype(np.int64), return_inverse=True)[1].astype(np.int64)


def _apply(m: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The affine map ``m`` (4, 4) on points ``x`` (..., 3), float64."""
    m = np.asarray(m, np.float64)
    return x @ m[:3, :3].T + m[:3, 3]


class WispSet:
    """Strands grouped into wisps, bound on the groom ``rest`` (3, P) (world rows): the skeletons'
    samples of the strands, each strand point's fixed coordinates in its wisp, and the rest
    skeletons, frames, radii, lengths and masses."""

    def __init__(self, rest: np.ndarray, offsets: np.ndarray, wisp_of_strand: np.ndarray, segments: int,
                 e1_rest: np.ndarray | None = None):
        rest = np.asarray(rest, np.float64)
        offsets = np.asarray(offsets, np.int64)
        self.offsets = offsets
        counts = np.diff(offsets)
        num = len(counts)
        self.wisp_of_strand = np.asarray(wisp_of_strand, np.int64)
        self.num_wisps = W = int(self.wisp_of_strand.max()) + 1
        self.K = K = int(segments)
        self.N = N = K + 1
        order = np.argsort(self.wisp_of_strand, kind="stable")
        self.wisp_strands = order.astype(np.int64)
        self.strands_in = np.bincount(self.wisp_of_strand, minlength=W)
        self.wisp_start = np.r_[0, np.cumsum(self.strands_in)].astype(np.int64)
        self.weight = 1.0 / self.strands_in[self.wisp_of_strand]
        t, strand = arc_fractions(rest, offsets)
        self.t = t
        # each strand sampled at t = i / K: the point before and the share towards the next
        key = 2.0 * strand + t
        want = 2.0 * np.arange(num)[:, None] + np.arange(N)[None, :] / K
        a = np.searchsorted(key, want, side="right") - 1
        last = (offsets[1:] - 2)[:, None]
        a = np.clip(a, offsets[:-1, None], np.maximum(last, offsets[:-1, None]))
        a = np.minimum(a, rest.shape[1] - 2)
        ta, tb = t[a], t[a + 1]
        span = tb - ta
        f = np.where(span > 0, (want - 2.0 * np.arange(num)[:, None] - ta) / np.where(span > 0, span, 1.0), 0.0)
        self.samp_a = np.ascontiguousarray(a, np.int64)
        self.samp_f = np.ascontiguousarray(np.clip(f, 0.0, 1.0))
        self.samp_f[counts < 2] = 0.0
        # each point's place along its wisp: segment and fraction
        pos = t * K
        self.point_seg = np.minimum(np.floor(pos), K - 1).astype(np.int64)
        self.point_u = pos - self.point_seg
        self.point_wisp = self.wisp_of_strand[strand]
        self.skeleton_rest = self.skeleton(rest)
        seg = np.diff(self.skeleton_rest, axis=1)
        self.rest_len = np.linalg.norm(seg, axis=2)
        self.anchor_rest = _unit(seg[:, 0])
        if e1_rest is None:
            pick = np.eye(3)[np.argmin(np.abs(self.anchor_rest), axis=1)]
            e1_rest = _unit(np.cross(self.anchor_rest, pick))
        self.e1_rest = np.ascontiguousarray(e1_rest, np.float64)
        self.frames_rest, self.tangent_rest = self.frames(self.skeleton_rest, self.anchor_rest, self.e1_rest)
        self.coords = self._coords(rest)
        self.r0 = self._radii()
        # masses: a skeleton point carries its strands' mass about it (seed 001 §3.2), its
        # cross-section's four envelope points 1/100 of it each
        around = np.zeros((W, N))
        around[:, :-1] += 0.5 * self.rest_len
        around[:, 1:] += 0.5 * self.rest_len
        around = np.maximum(around, 1e-12 + 1e-6 * around.max(initial=0.0))
        m = self.strands_in[:, None] * around
        self.mass = m * (1 + 4 * ENVELOPE_MASS)
        self.m_env = m * ENVELOPE_MASS
        self.inv_mass = 1.0 / self.mass
        self.inv_mass[:, 0] = 0.0                         # the root rides on the head

    def skeleton(self, rows: np.ndarray) -> np.ndarray:
        """The wisps' skeletons (W, N, 3) float64 of strands at ``rows`` (3, P)."""
        out = np.empty((self.num_wisps, self.N, 3))
        pts = rows.T if rows.dtype in (np.float32, np.float64) else np.asarray(rows, np.float64).T
        wisp_gather(pts, self.wisp_start, self.wisp_strands, self.samp_a, self.samp_f, self.weight, out)
        return out

    @staticmethod
    def frames(x: np.ndarray, anchor: np.ndarray, e1: np.ndarray):
        """Cross-section frames (W, N, 2, 3) and tangents (W, N, 3) of skeletons ``x``."""
        frames = np.empty(x.shape[:2] + (2, 3))
        tangent = np.empty(x.shape)
        wisp_frames(x, np.ascontiguousarray(anchor, np.float64), np.ascontiguousarray(e1, np.float64), frames, tangent)
        return frames, tangent

    def _coords(self, rest: np.ndarray) -> np.ndarray:
        """(P, 3) each point's offsets ``a, b, c`` along its wisp's ``e₁, e₂`` (blended between the
        two cross-sections) and its segment: solved so that placing them on the rest wisp gives
        the point (``kernels.wisps.wisp_place``)."""
        w, k, u = self.point_wisp, self.point_seg, self.point_u[:, None]
        x, fr = self.skeleton_rest, self.frames_rest
        base = (1 - u) * x[w, k] + u * x[w, k + 1]
        d = _unit(x[w, k + 1] - x[w, k])
        e1 = (1 - u) * fr[w, k, 0] + u * fr[w, k + 1, 0]
        e2 = (1 - u) * fr[w, k, 1] + u * fr[w, k + 1, 1]
        m = np.stack([e1, e2, d], axis=2)                                  # (P, 3, 3) columns
        rhs = rest.T - base
        ok = np.abs(np.linalg.det(m)) > 1e-9
        out = np.zeros(rhs.shape)
        if ok.any():
            out[ok] = np.linalg.solve(m[ok], rhs[ok][:, :, None])[:, :, 0]
        return np.ascontiguousarray(out)

    def _radii(self) -> np.ndarray:
        """(W, N, 4) the envelope at rest: at each cross-section, how far its strands' points about
        it reach along ``+e₁, +e₂, −e₁, −e₂``; no thinner than MIN_RADIUS of the wisp's mean
        segment."""
        W, N = self.num_wisps, self.N
        near = np.rint(self.point_seg + self.point_u).astype(np.int64)
        r = np.zeros((W, N, 4))
        a, b = self.coords[:, 0], self.coords[:, 1]
        for q, val in enumerate((a, b, -a, -b)):
            np.maximum.at(r[:, :, q], (self.point_wisp, near), np.maximum(val, 0.0))
        floor = MIN_RADIUS * self.rest_len.mean(axis=1)
        return np.maximum(r, floor[:, None, None])

    def outline(self, rows: np.ndarray, anchor_turn: np.ndarray | None = None):
        """Line-segment pairs of the wisps of strands at ``rows`` (3, P), for the overlay: their
        skeletons (2·W·K, 3) and each cross-section's envelope at rest radii as a four-sided
        loop (8·W·N, 3), in ``rows``' space. ``anchor_turn`` (3, 3): how the root frames turned
        since rest (the identity where omitted)."""
        x = self.skeleton(rows)
        turn = np.eye(3) if anchor_turn is None else np.asarray(anchor_turn, np.float64)
        anchor = _unit(x[:, 1] - x[:, 0])
        fr, _ = self.frames(x, anchor, self.e1_rest @ turn.T)
        bones = np.stack([x[:, :-1], x[:, 1:]], axis=2).reshape(-1, 3)
        axes = np.stack([fr[:, :, 0], fr[:, :, 1], -fr[:, :, 0], -fr[:, :, 1]], axis=2)    # (W, N, 4, 3)
        ring = x[:, :, None, :] + self.r0[..., None] * axes
        loop = np.stack([ring, np.roll(ring, -1, axis=2)], axis=3).reshape(-1, 3)
        return bones, loop


class WispLayer(DynamicsLayer):
    """The Wisps dynamics layer of a wig (SPEC §8, seed 001). State: the skeletons ``'x'``,
    ``'v'`` (W, N, 3), the envelope's radii and radial speeds ``'r'``, ``'rd'`` (W, N, 4), the
    last frame's goal skeletons ``'goal'``, the style's ``'hold'`` (3,) in the head's frame and
    ``'head_inv'`` (4, 4), where the colliders were."""

    KEY = "WISPS"
    LABEL = "Wisps"
    DESCRIPTION = ("Strands move in wisps that swing, stretch and squeeze; wisps lying alike slide into each "
                   "other, wisps that cross collide: thick long hair")
    SETTINGS = WispSettings
    KEYED = ("dynablend", "goal_stiffness", "viscosity")
    KERNELS = ("wisps", "wisps meeting colliders")
    ABSORBS = False       # the wisps meet the colliders themselves; refinement's push is the strands' own

    def __init__(self, model: HairModel, settings: WispSettings):
        super().__init__(model, settings)
        s = settings
        s.check()
        if model.num_points < 2:
            raise HairWigError("wisp dynamics needs strands of 2 points or more")
        if s.source == "ATTRIBUTE":
            if s.groups is None:
                raise HairWigError(f"wisp dynamics: the hair has no integer curve attribute '{s.attribute}' "
                                   "to take its wisps from (Wisps From: Attribute)")
            groups = wisps_from_attribute(s.groups, model.num_strands)
        else:
            groups = group_wisps(model.rest_rows, model.offsets, s.wisps, s.seed, s.max_width)
        self.turn_rest = rotation_of(model.head_rest)
        rest = model.world_rest()
        self.set = ws = WispSet(rest, model.offsets, groups, s.segments)
        # the root frames' e₁ in the head's frame, so they turn with it
        self.e1_local = ws.e1_rest @ self.turn_rest
        self.anchor_local = ws.anchor_rest @ self.turn_rest
        self.unit = np.ones_like(ws.r0)
        self._free = (ws.t > 0).astype(np.float64)
        self.dynablend = self.goal_stiffness = None
        self.viscosity = float(s.viscosity)
        self.set_dynablend(s.dynablend)
        self.set_goal_stiffness(s.goal_stiffness)
        self.colliders = []
        self._limits = self._segment_limits = None
        self._stacked = None             # the limits as arrays, for the body's kernels
        self.scale = scale_of(model.head_rest)
        self.counts = np.zeros(3, np.int64)     # points met in another wisp, of them colliding, pairs
        self.seconds = {"interactions": 0.0, "body": 0.0, "springs": 0.0, "strands": 0.0}
        self.touched = 0                         # skeleton and envelope points the colliders met, last frame

    def warnings(self) -> list[str]:
        s = self.settings
        if s.source == "GROOM" and self.set.num_wisps > int(s.wisps):
            return [f"Wisps: {self.set.num_wisps} wisps were made where {int(s.wisps)} were asked: a wisp wider "
                    f"than Widest Wisp ({s.max_width:g}) of its strands' length is split in two (wide wisps kink "
                    f"their strands when they bend); Widest Wisp 0 keeps the count"]
        return []

    # -- keyed settings ---------------------------------------------------------------------------
    def set_dynablend(self, dynablend: float) -> None:
        if not 0 <= dynablend <= 1:
            raise HairWigError(f"wisp dynamics: dynablend must be in 0..1, got {dynablend}")
        if dynablend != self.dynablend:
            self.dynablend = float(dynablend)
            self.blend = self._free * self.dynablend

    def set_goal_stiffness(self, stiffness: float) -> None:
        """Hold, times a pull falling from 1 at the root to 1/4 at the tip (as Strands' default)."""
        if not np.isfinite(stiffness) or stiffness < 0:
            raise HairWigError(f"wisp dynamics: goal stiffness (Hold) must be >= 0, got {stiffness}")
        if stiffness != self.goal_stiffness:
            self.goal_stiffness = float(stiffness)
            t = np.arange(self.set.N) / self.set.K
            self.stiffness = np.broadcast_to(stiffness * (1.0 - 0.75 * t), (self.set.num_wisps, self.set.N)).copy()

    def key(self, values: dict) -> None:
        if values.get("dynablend") is not None:
            self.set_dynablend(values["dynablend"])
        if values.get("goal_stiffness") is not None:
            self.set_goal_stiffness(values["goal_stiffness"])
        if values.get("viscosity") is not None:
            v = float(values["viscosity"])
            if not np.isfinite(v) or v < 0:
                raise HairWigError(f"wisp dynamics: viscosity must be >= 0, got {v}")
            self.viscosity = v

    # -- colliders --------------------------------------------------------------------------------
    def bind_colliders(self, colliders) -> None:
        """Meet ``colliders`` (the wig's, head-local) inside the substeps: each skeleton and
        envelope point's collision surface is ``min(offset, its rest clearance)`` (the groom is
        sacred: ``groom_limits``), by the fast distance it collides by."""
        self.colliders = list(colliders or [])
        self._limits = self._segment_limits = None
        self._stacked = None

    def _points(self, x, r, frames):
        """Skeleton and envelope points (3, W·N·5) world, the skeleton's first; the envelope's
        unit half-lines (W, N, 4, 3)."""
        axes = np.stack([frames[:, :, 0], frames[:, :, 1], -frames[:, :, 0], -frames[:, :, 1]], axis=2)
        env = x[:, :, None, :] + r[..., None] * axes
        return np.concatenate([x.reshape(-1, 3), env.reshape(-1, 3)]).T, axes

    def _bind_limits(self):
        """Each collider's limits of every skeleton and envelope point and of every skeleton
        segment — at the deepest of its samples (``kernels.wisp_body.SAMPLES``) — from the rest
        wisps, by the distance they collide by, taken head-local as the kernels take it."""
        ws = self.set
        inv = np.linalg.inv(self.model.head_rest)
        pts, _ = self._points(ws.skeleton_rest, ws.r0, ws.frames_rest)
        q = self._affine(inv, pts)
        self._limits = [groom_limits(c.fast_distance(q, rest=True), c.offset) for c in self.colliders]
        x = ws.skeleton_rest
        a, ab = x[:, :-1].reshape(-1, 3).T, (x[:, 1:] - x[:, :-1]).reshape(-1, 3).T
        samples = [self._affine(inv, a + t * ab) for t in wisp_body.SAMPLES]
        self._segment_limits = [groom_limits(np.min([c.fast_distance(p, rest=True) for p in samples], axis=0),
                                             c.offset) for c in self.colliders]
        self._stacked = None

    # -- the protocol -----------------------------------------------------------------------------
    def initial_state(self, goal: np.ndarray, frame: LayerFrame) -> dict:
        ws = self.set
        g = _apply(frame.head, ws.skeleton(goal))
        hold = -self.turn_rest.T @ np.asarray(frame.gravity, np.float64) if self.settings.hold_style else np.zeros(3)
        return {"x": g.copy(), "v": np.zeros_like(g), "r": ws.r0.copy(), "rd": np.zeros_like(ws.r0),
                "goal": g.copy(), "hold": hold, "head_inv": np.array(frame.head_inv, np.float64)}

    def _e1_root(self, turn: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(self.e1_local @ turn.T)

    def step(self, state: dict, goal: np.ndarray, frame: LayerFrame, out: np.ndarray) -> None:
        s, ws = self.settings, self.set
        local = ws.skeleton(goal)                 # the goal's wisps, head-local, then in the world
        g1 = _apply(frame.head, local)
        g0 = state["goal"]
        m = int(s.substeps)
        h = float(frame.dt) / m
        step = (g1 - g0) / m
        v_goal = step / h
        turn = frame.head_turn()
        base = np.asarray(frame.gravity, np.float64) + turn @ state["hold"]
        e1 = self._e1_root(turn)
        accel = frame.accel()
        x, v, r, rd = state["x"], state["v"], state["r"], state["rd"]
        rate = s.goal_damping + s.drag
        keep = float(np.exp(-rate * h))
        toward = s.goal_damping / rate if rate > 0 else 0.0
        kh2 = self.stiffness * (h * h)
        bend = s.bend * h * h / (1.0 + s.bend * h * h)
        v_old = np.empty_like(v)
        ext = np.zeros_like(x)
        now = np.asarray(frame.head_inv, np.float64)
        was = state.get("head_inv", now)
        heads = (np.linalg.inv(was), np.linalg.inv(now))       # head-local → world, last frame and now
        if self.colliders and self._limits is None:
            self._bind_limits()
        body = self._body_parts() if self.colliders else None
        self.touched = 0
        for i in range(1, m + 1):
            target = g0 + step * i
            # the skeleton's springs rest at the goal's lengths (a key pose or a magnet that
            # lengthens the style lengthens the wisps; the groom is the equilibrium, SPEC §8)
            seg = np.diff(target, axis=1)
            lengths = np.sqrt(np.einsum("wkd,wkd->wk", seg, seg))
            anchor = _unit(target[:, 1] - target[:, 0])
            clock = time.perf_counter()
            frames, tangent = ws.frames(x, anchor, e1)
            if accel is not None:
                ext = accel(x.reshape(-1, 3).T, v.reshape(-1, 3).T).T.reshape(x.shape).copy()
            wisp_velocities(x, v, r, rd, frames, target, v_goal, ext, base, ws.mass, ws.inv_mass, lengths,
                            ws.r0, h, s.stiffness, s.damping, s.bend_damping, keep, toward,
                            s.envelope_stiffness, s.envelope_damping, v_old)
            self.seconds["springs"] += time.perf_counter() - clock
            if s.interact and (i - 1) % int(s.interact_every) == 0:
                clock = time.perf_counter()
                wisp_interact(x, v, r, rd, frames, tangent, ws.mass, ws.inv_mass, ws.m_env, ws.r0, self.viscosity,
                              h * int(s.interact_every), self.counts)
                self.seconds["interactions"] += time.perf_counter() - clock
            if self.colliders:
                clock = time.perf_counter()
                self._slide(x, v, r, rd, frames, (i - 1) / m, 1.0 / m, h, heads, body)
                self.seconds["body"] += time.perf_counter() - clock
            clock = time.perf_counter()
            wisp_positions(x, v, r, rd, target, ws.inv_mass, lengths, h, kh2, bend, s.max_stretch)
            self._envelope_limits(r, rd)
            self.seconds["springs"] += time.perf_counter() - clock
            if self.colliders:
                clock = time.perf_counter()
                self._penetration(x, v, r, rd, anchor, e1, i / m, heads, body)
                self.seconds["body"] += time.perf_counter() - clock
        state["goal"] = g1
        state["head_inv"] = now.copy()
        clock = time.perf_counter()
        self._show(goal, local, g1, x, r, e1, frame, out)
        self.seconds["strands"] += time.perf_counter() - clock

    def _show(self, goal, local, g1, x, r, e1, frame, out) -> None:
        """The strands riding the wisps into ``out`` (3, P) head-local (``kernels.wisps.wisp_place``),
        placed in head-local space straight from the goal rows: the wisps' skeletons as the goal's
        head-local ones ``local`` plus their displacement from the goal's (world ``x − g1``) taken
        into the head's frame, their frames by the head's linear map ``A``. Placing an offset ``c``
        along a segment's unit direction there takes the segment's stretch over the head's scale
        (``A`` turns and scales by ``1/s``); a wisp at its goal gives a displacement of exactly 0."""
        ws = self.set
        inv = np.asarray(frame.head_inv, np.float64)
        lin = inv[:3, :3]
        anchor = _unit(g1[:, 1] - g1[:, 0])
        frames, _ = ws.frames(x, anchor, e1)
        gframes, _ = ws.frames(g1, anchor, e1)
        scale = scale_of(frame.head)
        stretch = np.linalg.norm(np.diff(x, axis=1), axis=2) / (ws.rest_len * scale)
        gstretch = np.linalg.norm(np.diff(g1, axis=1), axis=2) / (ws.rest_len * scale)
        x_local = local + (x - g1) @ lin.T
        wisp_place(goal.T, out.T, ws.offsets, ws.point_wisp, ws.point_seg, ws.point_u, ws.coords, self.blend,
                   x_local, frames @ lin.T, r / ws.r0, stretch, local, gframes @ lin.T, gstretch, self.unit)

    def _envelope_limits(self, r, rd) -> None:
        """Each radius between SQUEEZE and SPREAD of its rest, stopped (its speed further out or
        in taken off) where it reaches either: hair squeezed flat or flung apart is held there."""
        r0 = self.set.r0
        low, high = r < SQUEEZE * r0, r > SPREAD * r0
        if low.any():
            r[low] = SQUEEZE * r0[low]
            rd[low] = np.maximum(rd[low], 0.0)
        if high.any():
            r[high] = SPREAD * r0[high]
            rd[high] = np.minimum(rd[high], 0.0)

    # -- the body (seed 001 §4.3) -----------------------------------------------------------------
    @staticmethod
    def _head_at(heads, f):
        """World → head-local at the fraction ``f`` of the frame, and back: the head's local →
        world maps ``heads`` at the last frame and at this one, blended linearly (as the goal
        moves through the substeps)."""
        h0, h1 = heads
        back = h0 + f * (h1 - h0)
        return np.linalg.inv(back), back

    def _body_parts(self):
        """What the body's kernels (``kernels.wisp_body``) read this frame: the colliders' kernel
        views, the limits (C, 5 W N), the envelope's floor and scratch; None where a collider is
        not a grid (the patent's ray head), which only the numpy form meets."""
        if not all(isinstance(c.field, MeshField) for c in self.colliders):
            return None
        if self._stacked is None:
            self._stacked = tuple(np.ascontiguousarray(np.stack(k), np.float64)
                                  for k in (self._limits, self._segment_limits))
        x = self.set.skeleton_rest
        return (kernel_colliders(self.colliders), self._stacked, np.ascontiguousarray(SQUEEZE * self.set.r0),
                np.empty(x.shape[:2] + (2, 3)), np.empty(x.shape), np.empty(x.shape),
                np.zeros(wisp_body.chunks(x.shape[0]), np.int64))

    def _maps_at(self, f: float):
        """Each collider's maps and how it moves, as the body's kernels read them: where it ends
        the frame, at every substep ``f`` (``collision.contacts.contact_maps`` without ``carry``)."""
        return contact_maps(self.colliders, f, carry=False)

    @staticmethod
    def _affine(m, p):
        """The affine map ``m`` (4, 4) of points ``p`` (3, K), by products and sums in the order
        the kernels take them (``kernels.wisp_body._affine``): the same bits."""
        return np.stack([m[j, 0] * p[0] + m[j, 1] * p[1] + m[j, 2] * p[2] + m[j, 3] for j in range(3)])

    @staticmethod
    def _world_normals(back, g):
        """Head-local unit directions ``g`` (3, K) taken into the world by ``back``'s linear part and
        made unit, in the kernels' order (``kernels.wisp_body._normal``)."""
        n = np.stack([back[j, 0] * g[0] + back[j, 1] * g[1] + back[j, 2] * g[2] for j in range(3)])
        n /= np.maximum(np.sqrt(_dot(n, n)), 1e-300)
        return n

    def _query(self, pts, f, heads):
        """For every collider: distances (K,) head-local at world points ``pts`` (3, K), outward
        unit normals (3, K) world, the points' limits (K,), and the head maps at ``f``."""
        to_local, back = self._head_at(heads, f)
        q = self._affine(to_local, pts)
        found = []
        for c, lim in zip(self.colliders, self._limits):
            d, g = c.fast_distance(q, direction=True, at=None)
            found.append((d, self._world_normals(back, g), lim))
        return found, q, back

    def _slide(self, x, v, r, rd, frames, f0, df, h, heads, body=None):
        """Sliding contact (§4.3.1): a point within Contact Distance of its collision surface loses
        the part of its velocity (relative to the surface's) going in, and Coulomb friction slows
        its sliding by Friction times that part, no more than it has (``kernels.response.met``).
        Envelope points take it along their half-lines. One kernel (``kernels.wisp_body.
        wisp_slide``) where ``body`` has its parts; else, and as its reference, numpy."""
        s = self.settings
        margin = s.contact_distance / self.scale
        to_local, back = self._head_at(heads, f0)
        _, back_next = self._head_at(heads, min(f0 + df, 1.0))
        if body is not None:
            cols, (lims, _), _floor, _frames, _tangent, _push, touched = body
            touched[:] = 0
            wisp_body.wisp_slide(x, v, r, rd, frames, self.set.inv_mass, cols, *self._maps_at(f0), lims, to_local,
                                 back, back_next - back, h, margin, float(s.friction), touched)
            self.touched += int(touched.sum())
            return
        ws = self.set
        pts, axes = self._points(x, r, frames)
        found, q, back = self._query(pts, f0, heads)
        num = x.shape[0] * x.shape[1]
        vel = np.concatenate([v.reshape(-1, 3), (v[:, :, None, :] + rd[..., None] * axes).reshape(-1, 3)]).T
        # the surface's velocity at each point: where the head carries its head-local place
        surface = self._affine(back_next - back, q) / h
        change = np.zeros_like(vel)
        for d, n, lim in found:
            near = np.flatnonzero(d < lim + margin)
            near = near[(near >= num) | (ws.inv_mass.reshape(-1)[np.minimum(near, num - 1)] > 0)]
            if near.size == 0:
                continue
            self.touched += near.size
            rel = np.ascontiguousarray(vel[:, near] + change[:, near] - surface[:, near], np.float64)
            after = np.empty_like(rel)
            launch(met_rows, near.size, rel, np.ascontiguousarray(n[:, near], np.float64), float(s.friction), after)
            change[:, near] += after - rel
        skel = change[:, :num].T.reshape(v.shape)
        v += skel
        env = change[:, num:].T.reshape(axes.shape)
        rd += env[..., 0] * axes[..., 0] + env[..., 1] * axes[..., 1] + env[..., 2] * axes[..., 2]

    def _segments_met(self, x, push, f, heads):
        """The segments' pushes of a penetration pass (``kernels.wisp_body.wisp_penetrate``'s), added
        to ``push`` (3, W N) world: a segment of a free far end, neither end pushed, met at the
        deepest of its samples inside its collision surface pushes its far end by its depth times
        ``t / max(t², ¼)``, collider after collider."""
        ws = self.set
        n = x.shape[1]
        to_local, back = self._head_at(heads, f)
        free = (ws.inv_mass[:, 1:] > 0).reshape(-1)
        a, ab = x[:, :-1].reshape(-1, 3).T, (x[:, 1:] - x[:, :-1]).reshape(-1, 3).T
        ends = (np.arange(x.shape[0])[:, None] * n + np.arange(1, n)[None, :]).reshape(-1)
        for c, lim in zip(self.colliders, self._segment_limits):
            hit = push.any(axis=0)
            look = np.flatnonzero(free & ~hit[ends - 1] & ~hit[ends])
            if look.size == 0:
                continue
            best_t, best_d, best_g = np.zeros(look.size), np.full(look.size, np.inf), np.zeros((3, look.size))
            for t in wisp_body.SAMPLES:
                d, g = c.fast_distance(self._affine(to_local, a[:, look] + t * ab[:, look]), direction=True, at=None)
                lower = d < best_d
                best_t[lower], best_d[lower], best_g[:, lower] = t, d[lower], g[:, lower]
            inside = np.flatnonzero(best_d < lim[look])
            if inside.size == 0:
                continue
            nrm = self._world_normals(back, best_g[:, inside])
            s = ab[:, look[inside]]
            along = _dot(s, nrm)
            dips = along * along <= wisp_body.GRAZE * _dot(s, s)
            inside, nrm = inside[dips], nrm[:, dips]
            t = best_t[inside]
            depth = (lim[look[inside]] - best_d[inside]) * self.scale * (t / np.maximum(t * t, 0.25))
            push[:, ends[look[inside]]] += depth * nrm

    def _penetration(self, x, v, r, rd, anchor, e1, f, heads, body=None):
        """Penetration reaction (§4.3.2): a skeleton point inside its collision surface moves out,
        set at its segment's length from the point before it, the rest of the wisp carried along
        (``kernels.wisps.wisp_carry``); then envelope points inside move in along their
        half-lines. Up to PASSES passes: a carried point may have met the surface in turn, and a
        point set on its tangent plane is still inside a surface curving away under it. One
        kernel (``kernels.wisp_body.wisp_penetrate``) where ``body`` has its parts; else, and as
        its reference, numpy."""
        ws = self.set
        if body is not None:
            cols, (lims, lims_s), floor, frames, tangent, push, touched = body
            to_local, back = self._head_at(heads, f)
            touched[:] = 0
            wisp_body.wisp_penetrate(x, v, r, rd, ws.inv_mass, np.ascontiguousarray(anchor, np.float64),
                                     np.ascontiguousarray(e1, np.float64), floor, cols, *self._maps_at(f), lims,
                                     lims_s, to_local, back, float(self.scale), PASSES, frames, tangent, push,
                                     touched)
            self.touched += int(touched.sum())
            return
        num = x.shape[0] * x.shape[1]
        for _ in range(PASSES):
            pts = x.reshape(-1, 3).T
            found, _q, _b = self._query(pts, f, heads)
            push = np.zeros((3, num))
            for d, n, lim in found:
                inside = np.flatnonzero(d < lim[:num])
                inside = inside[ws.inv_mass.reshape(-1)[inside] > 0]
                if inside.size:
                    push[:, inside] += (lim[:num][inside] - d[inside]) * self.scale * n[:, inside]
            self._segments_met(x, push, f, heads)
            if not push.any():
                break
            self.touched += int(np.count_nonzero(push.any(axis=0)))
            wisp_carry(x, v, np.ascontiguousarray(push.T.reshape(x.shape)))
        frames, _t = ws.frames(x, anchor, e1)
        pts, axes = self._points(x, r, frames)
        found, _q, _b = self._query(pts[:, num:], f, heads)
        flat_axes = axes.reshape(-1, 3).T
        rr, rdd = r.reshape(-1), rd.reshape(-1)
        floor = (SQUEEZE * ws.r0).reshape(-1)
        for (d, n, lim) in found:
            lim = lim[num:]
            inside = np.flatnonzero(d < lim)
            if inside.size == 0:
                continue
            cos = _dot(flat_axes[:, inside], n[:, inside])
            ok = cos < wisp_body.TURNED_AWAY       # a half-line along the surface: moving in along it does not help
            k = inside[ok]
            rr[k] = np.maximum(rr[k] - (lim[k] - d[k]) * self.scale / -cos[ok], floor[k])
            rdd[k] = np.minimum(rdd[k], 0.0)
            self.touched += k.size
