"""Colliders (SPEC §6.3): a collider as the scene gives it (``ColliderMesh``), bound to a hair set
(``Collider``: its field in the head's rest space, the groom's rest clearances, this frame's
map), and the one rule every client's collision surfaces follow (``groom_limits``)."""

from __future__ import annotations

import numpy as np

from ..children import transplant, transplant_as_walked
from ..errors import HairWigError
from ..kernels import walk as walk_kernels
from ..refinement import RadiusMap
from .field import MeshField, RayField
from .rows import _dot, _take_rows
from .solid import Solid
from .triangles import usable_triangles


def groom_limits(clearance: np.ndarray, offset: float, margin: np.ndarray | None = None) -> np.ndarray:
    """Where each point's collision surface lies: ``min(offset + margin, clearance)`` (SPEC §6.3,
    "the groom is sacred"), in the clearance's float type.

    Parameters
    ----------
    clearance : array
        Each point's signed distance ``d0`` to the collider with the hair at rest (or in a key
        pose, which is a groom too), measured by the distance the point will collide by, so that
        the two agree to the bit.
    offset : float
        How far hair keeps from the collider (field units); rounded to the clearance's type.
    margin : array or None
        More room a client keeps on top of the offset (broadcast against ``clearance``).

    Hair the artist laid closer than the offset, or slightly inside the mesh, is where it was
    put: its surface is its own clearance, so the groom at rest meets no contact and nothing
    moves at the rest frame, ever; everywhere else the offset holds. Every client's limits come
    from here: the wig's points (``Collider.bind``), the guides' shapes moved onto their
    children (``Collider.bind_children``, with ``children.sag`` as the margin), the Strands'
    contacts (``contacts.SurfaceContacts``: points and segments, by the fast distance they
    collide by) and the in-betweens of key poses (``keyposes.KeyedStyle``, the clearance
    interpolated between the two key poses). Style Hair and Draw Hair make new hair, which has
    no rest to keep: they push to the clearance the artist asks for (``poses.SurfaceCollide``).
    """
    clearance = np.asarray(clearance)
    surface = np.asarray(offset, clearance.dtype)
    if margin is not None:
        surface = surface + np.asarray(margin, clearance.dtype)
    return np.minimum(surface, clearance)


def hair_reach(rows: np.ndarray, offsets: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """How far from the box ``[lo, hi]`` (3,) the strands at ``rows`` (3, P) can get while their
    roots stay where they are relative to it and their lengths are kept: the largest root's
    distance from the box plus its strand's length (triangle inequality along the strand)."""
    p = np.asarray(rows, np.float64)
    offsets = np.asarray(offsets, np.int64)
    if p.shape[1] == 0:
        return 0.0
    run = np.r_[0.0, np.cumsum(np.linalg.norm(np.diff(p, axis=1), axis=0))]
    length = run[offsets[1:] - 1] - run[offsets[:-1]]
    roots = p[:, offsets[:-1]].T
    gap = np.maximum(np.maximum(np.asarray(lo) - roots, roots - np.asarray(hi)), 0.0)
    return float((np.linalg.norm(gap, axis=1) + length).max(initial=0.0))


_NO_CHILDREN = np.zeros((2, 0, 0, 0), np.float32)
_NONE32 = np.zeros(0, np.float32)
_NO_SEGMENTS = np.zeros((4, 0), np.float32)


def kernel_colliders(colliders) -> object:
    """``colliders`` as the collision kernels' threads read them (``kernels.walk.
    threads_colliders`` of each one's ``Collider.kernel_view``)."""
    return walk_kernels.threads_colliders([c.kernel_view() for c in colliders])


class ColliderMesh:
    """A collider as the scene gives it: ``vertices`` (V, 3) in the collider's own space,
    ``triangles`` (T, 3), its world ``matrix`` (4, 4) at the rest pose, an ``offset`` (world
    units: how far hair keeps from it), and ``method`` FIELD or RAY (the patent's, for a head:
    ``centre`` then in the collider's space)."""

    def __init__(self, name, vertices, triangles, matrix=None, offset: float = 0.0, method: str = "FIELD",
                 centre=None, resolution: int | None = None):
        if method not in ("FIELD", "RAY"):
            raise HairWigError(f"collider '{name}': method must be FIELD or RAY, got {method!r}")
        self.name = name
        self.vertices = np.asarray(vertices, np.float64)
        self.triangles = np.asarray(triangles, np.int64)
        self.matrix = np.eye(4) if matrix is None else np.asarray(matrix, np.float64)
        self.offset = float(offset)
        self.method = method
        self.centre = centre
        self.resolution = resolution


class Collider:
    """One collider bound to a hair set (SPEC §6.3).

    The field lives in *field space*: the head's local space at the rest pose, so every distance
    is in head-local units and the collider's own scale does not matter. ``set_frame`` gives this
    frame's map from head-local points into field space — the identity for the head itself and
    for anything that moves with it, so the common case transforms nothing — and, for a
    collider that deforms, its current vertices (the field then follows them: refitted within
    GIVE cells of the rest pose, built on them beyond).

    At bind every vertex records its rest clearance ``d0``; its collision surface is
    ``limit = min(offset, d0)`` (the groom is sacred: ``groom_limits``). A point that has moved
    less than ``skip`` from its rest position (half of ``d0 − limit``: distances are 1-Lipschitz,
    and the grid's far values are within a few tenths of a cell per cell of distance) cannot
    have reached its limit and is not looked up while the collider has not moved.

    Beyond its grid a field reads +inf: outside. For a closed mesh that is so; an open mesh's
    inside (by the pseudo-normal sign) can go on past the grid — all that lies under a ground
    plane's level past its rim — and hair there was inside where no client could see it (a grass
    blade blown over the rim of the ground it grows on, 2 mm under its level and 0.3 m past its
    rim, beyond the grid's 0.25 m). Where the mesh's inside reaches the grid's edge, its grid
    grows (doubling) until the inside stops short of the edge or the grid covers all the hair
    that ``rides`` it can reach (``hair_reach``): the head's hair, rows (3, P) in field space and
    strand offsets (S + 1,). (Hair moving about a collider it does not ride can still leave the
    grid.)
    """

    SOLID = True          # built on the surface of the collider's solid (``solid``), not the mesh as modelled
    GIVE = 1.0            # cells a deforming collider's vertices may move from rest with its field refitted
    SEGMENTS = 1          # the walk meets each segment between its points too (0: points alone; a bench's switch)

    def __init__(self, mesh: ColliderMesh, rest_to_field: np.ndarray, offset: float, rides: tuple | None = None):
        self.name = mesh.name
        self.mesh = mesh
        self.rest_to_field = rest_to_field           # collider's own space -> field space
        v = mesh.vertices @ rest_to_field[:3, :3].T + rest_to_field[:3, 3]
        self.margin = float(offset)                  # how far its grid reaches beyond it, at least
        if mesh.method == "RAY":
            centre = None if mesh.centre is None else (rest_to_field[:3, :3] @ mesh.centre + rest_to_field[:3, 3])
            self.field = RayField(RadiusMap(v, mesh.triangles, centre, name=mesh.name))
        else:
            # the field is built on the surface of the collider's solid: holes closed, shells
            # inside others dropped (``solid``), so the nearest feature's sign is the inside's
            v, tri = usable_triangles(v, mesh.triangles, mesh.name)
            size = float((v.max(axis=0) - v.min(axis=0)).max())
            if self.margin > size:
                # the field would reach that far about the mesh: a grid the size of a room for a
                # head (gigabytes), and every hair pushed out of reach
                raise HairWigError(
                    f"'{mesh.name}': the distance hair keeps from it ({mesh.offset:.4g}) is more than its own "
                    f"size ({size * mesh.offset / max(self.margin, 1e-300):.4g}): lower Head Offset (or this "
                    f"collider's Collision Outer thickness)")
            self.field = MeshField.of_solid(v, tri, None if self.SOLID else Solid.as_is(v, tri),
                                            mesh.resolution, margin=self.margin, name=mesh.name)
            self.solid = self.field.solid
            reach = 0.0 if rides is None else hair_reach(*rides, *self.field.box)
            while self.field.inside_at_edge and self.field.pad < reach:
                self.margin = min(float(reach), 2.0 * self.field.pad)
                self.field = MeshField.of_solid(v, tri, self.solid, cell=self.field.cell, margin=self.margin,
                                                name=mesh.name)
            v = self.solid.vertices(v)

        self.bound_field = self.field
        self._deforming = None
        self.offset = float(offset)
        self.to_field = None
        self.from_field = None
        self.swept_from = None           # the head-local -> field map at the frame before, where it moved since
        self.stretch = 1.0
        # How far inside a push may leave a point and still count as out: float32 rounding of
        # the field's size, and of the coordinates where it lies (a point pushed out by less
        # than half an ulp of its coordinates does not move, and would count as stuck inside:
        # head-local coordinates can be several times the collider's size).
        reach = float(np.abs(v).max()) if len(v) else 0.0
        self.tolerance = 1e-7 * self.field.extent + 2 * float(np.finfo(np.float32).eps) * reach

    def kernel_view(self) -> tuple:
        """The collider bound and set for this frame (its field a ``MeshField``) as every collision
        kernel reads it: one tuple (``kernels.walk``'s docstring lists its parts), for the walk
        and the contacts alike."""
        f = self.field
        moved = self.to_field is not None
        to_field = np.eye(4) if not moved else np.ascontiguousarray(self.to_field, np.float64)
        from_field = np.eye(4) if not moved else np.ascontiguousarray(self.from_field, np.float64)
        children = getattr(self, "child_bounds", None)
        children = _NO_CHILDREN if children is None else children
        # a collider met by contacts alone need not be bound for the walk (no limits of its own)
        limit, skip2 = (np.ascontiguousarray(getattr(self, k, _NONE32), np.float32) for k in ("limit", "skip2"))
        segments = getattr(self, "segment_bounds", None)
        segments = _NO_SEGMENTS if segments is None else segments
        return (f._k_nodes, f._k_grid32, f._k_grid64, f._k_errors, f._k_tris, f._k_box, f._k_planes, limit, skip2, to_field,
                from_field, bool(self.moved), np.float32(f.slack), float(f.exact_reach), float(self.tolerance),
                np.float32(self.stretch), moved, f._k_every, children, segments)

    @property
    def moved(self) -> bool:
        return self.to_field is not None or self.field is not self.bound_field

    def bind(self, rest_rows: np.ndarray, uniform: int = 0) -> None:
        """Record every vertex's rest clearance; ``rest_rows`` (3, P) in field space.
        ``uniform``: the strands' point count when they all have the same (a walk from root to
        tip then reads point-major copies, ``near_step``)."""
        self.rest_rows = np.ascontiguousarray(rest_rows, np.float32)     # gathered from each frame
        if isinstance(self.field, MeshField):
            self.field.index.use_sub_lists(self.rest_rows)
        d = self.field.signed_distance(np.ascontiguousarray(rest_rows.T, np.float64))
        self.clearance = d.astype(np.float32)
        self.limit = groom_limits(self.clearance, self.offset)
        self.skip2 = self._skip2(self.clearance, self.limit, rest_rows.T, self.tolerance)
        self.segment_bounds = self._segment_bounds() if self.SEGMENTS and isinstance(self.field, MeshField) else None
        self._steps = None
        if uniform and isinstance(self.field, MeshField):
            # point-major (n, strands): step j of a walk reads contiguous rows
            def cols(a):
                return np.ascontiguousarray(a.reshape(-1, uniform).T)
            self._steps = {"limit": cols(self.limit), "skip2": cols(self.skip2),
                           "rest": np.ascontiguousarray(self.rest_rows.reshape(3, -1, uniform).transpose(0, 2, 1))}

    def _segment_bounds(self) -> np.ndarray:
        """Each point's segment from the point before it met between its ends (the walk's
        ``kernels.walk._segment_against``): the limits (``groom_limits``) at its samples
        ``SEGMENT_AT`` of the way from the point before — placed as the walk places them, float64
        from the float32 rest rows, rounded to float32 — and the squared distance both its ends
        may move from rest unlooked (the least of its samples' ``_skip2``: a sample moves no
        farther than the farther of its ends), as (4, P) float32. A strand's root has no segment:
        nothing is met there (a limit of −inf, which no distance is deeper than). The groom at
        rest is outside every limit, so it meets no segment contact."""
        r = self.rest_rows.astype(np.float64)
        a, b = r[:, :-1], r[:, 1:]
        out = np.empty((4, r.shape[1]), np.float32)
        out[:3, 0], out[3, 0] = -np.inf, np.inf
        skip2 = None
        for row, t in enumerate(walk_kernels.SEGMENT_AT):
            x = (a + t * (b - a)).astype(np.float32).T.astype(np.float64)
            clearance = self.field.signed_distance(np.ascontiguousarray(x)).astype(np.float32)
            limit = groom_limits(clearance, self.offset)
            out[row, 1:] = limit
            s2 = self._skip2(clearance, limit, x, self.tolerance)
            skip2 = s2 if skip2 is None else np.minimum(skip2, s2)
        out[3, 1:] = skip2
        return out

    def _skip2(self, clearance: np.ndarray, limit: np.ndarray, points: np.ndarray, tolerance: float):
        """The squared distance (float32, as ``clearance``) each point (``points`` (N, 3) at rest,
        field space) may move from its rest place unlooked: half its room. Distances are
        1-Lipschitz; the room is trusted where the clearance is exact (near the surface), farther
        the grid's swept distance can be too large on a messy mesh, so only the distance to the
        collider's box (a true lower bound) counts. ``tolerance``: how much farther a point may
        move besides — a point that moved no more than the push tolerance (float32 rounding of a
        length pass) is no closer than its limit less that tolerance, which a push ignores."""
        room = clearance - limit
        if isinstance(self.field, MeshField):
            far = np.abs(clearance) >= self.field.exact_reach
            if far.any():
                lo, hi = self.field.box
                x = points[far]
                gap = np.maximum(np.maximum(lo - x, x - hi), 0)
                room[far] = np.maximum(np.sqrt((gap * gap).sum(axis=1)) - np.maximum(limit[far], 0), 0)
        skip = 0.5 * room + tolerance
        if not isinstance(self.field, MeshField):
            skip[:] = 0          # a distance along rays is not 1-Lipschitz: nothing can be skipped
        return (skip * skip).astype(np.float32)

    def bind_children(self, offsets: np.ndarray, turn: np.ndarray | None, uniform: int, margin: np.ndarray) -> None:
        """Record the rest clearance of each guide's shape moved onto its children's roots
        (``children.transplant``: ``offsets`` (K, 3, G), ``turn`` (K, 3, 3, G) or None, head-local)
        from the guides' rest points (the rows ``bind`` recorded, ``uniform`` each): their limits
        ``min(offset + margin, d0)`` (``groom_limits``; ``margin`` (G,), ``children.sag``) and the
        squared distance each may move unlooked while the collider keeps still, as
        ``child_bounds`` (2, K, uniform, G), point-major like a walk's steps. A groom at rest is
        outside every limit. The skip is measured from the very float32 place the walk's kernel
        puts a sample at rest (``children.transplant_as_walked``), a few roundings from the one
        its limit is measured at."""
        k, _, g = offsets.shape
        rest32 = self.rest_rows.reshape(3, g, uniform)
        rest64 = rest32.astype(np.float64)

        def clearance(move, rows):
            moved = np.stack([move(rows[:, :, j], rows[:, :, 0], offsets, turn) for j in range(uniform)], -1)
            x = np.ascontiguousarray(moved.transpose(0, 2, 3, 1).reshape(-1, 3), np.float64)   # (K, G, n)
            return self.bound_field.signed_distance(x).astype(np.float32), x

        exact, _ = clearance(transplant, rest64)
        walked, x = clearance(transplant_as_walked, rest32)
        limit = groom_limits(exact.reshape(k, g, uniform), self.offset, margin[None, :, None]).ravel()
        # half the room to where a push begins (the limit less the push's tolerance): a sample
        # skipped lies a quarter of the tolerance or more beyond it, so the walk meets the very
        # contacts it meets without the skip; one the kernel puts nearer than that at rest is
        # never skipped, not even there
        tol = self.tolerance
        skip2 = self._skip2(walked + np.float32(tol), limit, x, 0.0)
        skip2[walked - limit < -0.5 * tol] = -1
        bounds = np.stack([limit, skip2]).reshape(2, k, g, uniform)
        self.child_bounds = np.ascontiguousarray(bounds.transpose(0, 1, 3, 2))
        self.child_limit = self.child_bounds[0]

    def set_frame(self, to_field: np.ndarray | None, vertices: np.ndarray | None = None) -> None:
        """This frame's head-local -> field-space map (``None``: identity) and, for a deforming
        collider, its vertices in its own space (``None``: as bound)."""
        if to_field is not None and np.allclose(to_field, np.eye(4), rtol=0, atol=1e-9):
            to_field = None
        self.to_field = to_field
        self.from_field = None if to_field is None else np.linalg.inv(to_field)
        # how much farther apart two points are in field space than head-local, at most
        self.stretch = 1.0 if to_field is None else float(np.linalg.norm(to_field[:3, :3], 2))
        if vertices is None or self.mesh.method == "RAY":
            self.field = self.bound_field
            return
        if np.shape(vertices) == self.mesh.vertices.shape and np.array_equal(vertices, self.mesh.vertices):
            self.field = self.bound_field
            return
        v = np.asarray(vertices, np.float64) @ self.rest_to_field[:3, :3].T + self.rest_to_field[:3, 3]
        v = self.solid.vertices(v)
        f = self.bound_field
        # within GIVE cells of its rest pose the rest field follows the skin (``MeshField.refit``:
        # its grid kept, the triangles measured where they are); beyond, a field of this frame's
        # own. Either way a frame's field depends on that frame's mesh alone, not on the frames
        # stepped before it (a split bake's part, a scrub, meet the same field).
        field = None
        if self.GIVE > 0 and f.deformation(v) <= self.GIVE * f.cell:
            field = self._deforming_field().refit(v, self.solid.winding(v))
        self.field = field if field is not None else MeshField(v, f.triangles, cell=f.cell, margin=self.margin,
                                                               name=self.name, winding=self.solid.winding(v),
                                                               kept=False, like=f)

    def sweep_from(self, was: np.ndarray | None) -> None:
        """Where the collider was relative to the head at the frame before — its head-local ->
        field map then (``walk.CollisionWalk.maps``), None where unknown (the first frame) — after
        ``set_frame``: a dynamics layer's substeps then meet it moving from there (``maps_at``), as
        the head moves through them, not jumping the frame's whole way at the first."""
        now = np.eye(4) if self.to_field is None else self.to_field
        moved = was is not None and not np.array_equal(was, now)
        self.swept_from = np.array(was, np.float64) if moved else None

    @property
    def sweeping(self) -> bool:
        """Whether the substeps meet the collider through a map (it moves relative to the head,
        or did since the frame before)."""
        return self.to_field is not None or self.swept_from is not None

    def maps_at(self, f: float) -> np.ndarray:
        """The head-local -> field map and back (2, 4, 4) at the fraction ``f`` of the frame: the
        collider carried linearly from where it was at the frame before (``sweep_from``) to where
        it is (``f`` = 1: this frame's own maps, exactly)."""
        to = np.eye(4) if self.to_field is None else self.to_field
        back = np.eye(4) if self.from_field is None else self.from_field
        if self.swept_from is None or f >= 1:
            return np.stack([to, back])
        m = self.swept_from + f * (to - self.swept_from)
        return np.stack([m, np.linalg.inv(m)])

    def _deforming_field(self) -> MeshField:
        """The rest pose's field with GIVE cells of give (``MeshField.refit``), built the first
        time the collider deforms."""
        if self._deforming is None:
            f = self.bound_field
            self._deforming = MeshField(f.vertices, f.triangles, cell=f.cell, margin=self.margin, name=self.name,
                                        winding=self.solid.winding(f.vertices), give=self.GIVE * f.cell)
        return self._deforming

    def candidates(self, q: np.ndarray, index: np.ndarray, row: np.ndarray | None = None) -> np.ndarray:
        """Which of the points ``q`` (3, S) — wig points ``index`` (S,) — may be within their
        limit: positions into ``q``."""
        if not self.moved:
            diff = q - np.take(self.rest_rows, index, axis=1)
            dist2 = _dot(diff, diff)
            return np.flatnonzero(dist2 > self.skip2[index])
        return np.arange(q.shape[1])

    def _in_field(self, q: np.ndarray, index: np.ndarray):
        """The candidates among ``q`` (3, S) (``candidates``) and their points (K, 3) in field
        space."""
        pick = self.candidates(q, index)
        x = _take_rows(q, pick).T.astype(np.float64)
        if self.to_field is not None and pick.size:
            x = x @ self.to_field[:3, :3].T + self.to_field[:3, 3]
        return pick, x

    def near_at(self, q: np.ndarray, index) -> np.ndarray:
        """Which of the points ``q`` (3, S) — wig points ``index`` — may be within their limit,
        by the grid alone (no exact distances): positions into ``q``. Every point ``project_at``
        would move is among them. ``index`` may be a slice (a block of the wig's points)."""
        if isinstance(self.field, MeshField):
            if isinstance(index, slice):
                start = index.start

                def at(pick):
                    return pick + start
            else:
                def at(pick):
                    return index[pick]
            return self._near(q, self.limit[index], lambda pick: self.skip2[at(pick)],
                              lambda pick: _take_rows(self.rest_rows, at(pick)))
        if isinstance(index, slice):
            index = np.arange(index.start, index.stop)
        pick, x = self._in_field(q, index)
        if pick.size == 0:
            return pick
        return pick[self.field.signed_distance(x) < self.limit[index[pick]] + self.tolerance]

    def near_step(self, q: np.ndarray, j: int, strands: slice, index: np.ndarray,
                  margin: np.ndarray | None = None, seg: np.ndarray | None = None) -> np.ndarray:
        """``near_at`` for step ``j`` of a root-to-tip walk: ``q`` (3, S) the points ``j`` of the
        strands ``strands`` (wig numbering, all of ``uniform`` points; their points ``index``).

        ``margin`` (S,) float32, the walk's own (start it at −inf): a lower bound of each
        strand's previous point's distance, kept up to date here. Point ``j`` lies ``seg`` (S,,
        head-local) from it, so it is at least ``margin − stretch · seg`` from the surface
        (distances are 1-Lipschitz), and where that is already past its limit it is not looked
        up at all: along a strand leaving the head, one lookup clears the next few points."""
        steps = self._steps
        if steps is None:
            return self.near_at(q, index)
        rest, skip2, limit = steps["rest"], steps["skip2"][j, strands], steps["limit"][j, strands]

        def skip2_at(pick):
            return skip2.take(pick)

        def rest_at(pick):
            return np.stack([rest[k, j, strands].take(pick) for k in range(3)])

        if margin is None:
            return self._near(q, limit, skip2_at, rest_at)
        margin -= np.float32(self.stretch) * seg if self.stretch != 1.0 else seg
        look = np.flatnonzero(margin < limit)
        if look.size == 0:
            return look
        whole = 2 * look.size > margin.size          # most of the row: one pass over all of it
        lower = self.field.lower_bound(self._field_rows(q if whole else _take_rows(q, look)))
        if whole:
            margin[...] = lower
            pick = np.flatnonzero(lower < limit)
        else:
            margin[look] = lower
            pick = look.take(np.flatnonzero(lower < limit.take(look)))
        margin[pick] = -np.inf           # these may be moved: the next point is looked up
        return self._confirm(q, pick, limit, skip2_at, rest_at)

    def _near(self, q, limit, skip2_at, rest_at) -> np.ndarray:
        """The grid's screen, then ``_confirm``: positions into ``q`` (3, S) that may be within
        ``limit`` (S,). ``skip2_at(positions)``, ``rest_at(positions)``: those points' squared
        skip distances and rest rows (3, K)."""
        # one gather per point first: most of a groom is nowhere near a collider
        pick = self.field.screen(self._field_rows(q), limit + self.field.slack)
        return self._confirm(q, pick, limit, skip2_at, rest_at)

    def _confirm(self, q, pick, limit, skip2_at, rest_at) -> np.ndarray:
        """Of the points ``pick`` the grid's screen kept: (when the collider has not moved) those
        that moved at least half their room from rest, then those whose trilinear distance may
        be within ``limit``."""
        if pick.size == 0:
            return pick
        if not self.moved:                               # then: moved less than half the room?
            diff = _take_rows(q, pick)
            diff -= rest_at(pick)
            pick = pick[_dot(diff, diff) > skip2_at(pick)]
            if pick.size == 0:
                return pick
        d, err = self.field.distance_rows(self._field_rows(_take_rows(q, pick)))
        return pick[d < limit.take(pick) + err]

    def _field_rows(self, q: np.ndarray) -> np.ndarray:
        """Head-local rows (3, S) float32 in this frame's field space."""
        if self.to_field is None:
            return q
        m = self.to_field.astype(np.float32)
        return m[:3, :3] @ q + m[:3, 3:4]

    def project_at(self, q: np.ndarray, index: np.ndarray, normal: np.ndarray | None = None) -> np.ndarray:
        """Push points ``q`` (3, S, head-local) — the wig's points ``index`` (S,) — out to their
        collision surface, in place. Returns the positions into ``q`` that moved; ``normal``
        (3, S), when given, gets the unit direction each moved point was pushed along."""
        pick, x = self._in_field(q, index)
        return self._push(q, pick, x, self.limit[index[pick]], normal)

    def push_to(self, q: np.ndarray, limit: np.ndarray, normal: np.ndarray | None = None) -> np.ndarray:
        """``project_at`` for points that are not the wig's own (a guide's children): ``q``
        (3, S, head-local) float32 out to their own ``limit`` (S,), the grid's screen first."""
        rows = self._field_rows(q)
        if isinstance(self.field, MeshField):
            pick = self.field.screen(rows.astype(np.float32, copy=False), limit + self.field.slack)
        else:
            pick = np.arange(q.shape[1])
        x = _take_rows(q, pick).T.astype(np.float64)
        if self.to_field is not None and pick.size:
            x = x @ self.to_field[:3, :3].T + self.to_field[:3, 3]
        return self._push(q, pick, x, limit[pick], normal)

    def _push(self, q, pick, x, limit, normal) -> np.ndarray:
        """Push the points ``pick`` of ``q`` — ``x`` (K, 3) in field space — out to ``limit``
        (K,): ``project_at``'s work."""
        if pick.size == 0:
            return pick
        new, moved, along = self.field.project(x, limit, self.tolerance, direction=True)
        if moved.size == 0:
            return moved
        if self.from_field is not None:
            new = new @ self.from_field[:3, :3].T + self.from_field[:3, 3]
            along = along @ self.from_field[:3, :3].T
            along /= np.maximum(np.linalg.norm(along, axis=1, keepdims=True), 1e-300)
        pick = pick[moved]
        q[:, pick] = new.T
        if normal is not None:
            normal[:, pick] = along.T
        return pick

    def outward_at(self, q: np.ndarray) -> np.ndarray:
        """The direction (3, K, head-local, unit or zero) away from the surface at points ``q``
        (3, K, head-local): from each point's exact closest point where the point is within the
        exact band, so it turns with the mesh whatever its grid; the grid's gradient beyond."""
        x = q.T.astype(np.float64)
        if self.to_field is not None:
            x = x @ self.to_field[:3, :3].T + self.to_field[:3, 3]
        field = self.field
        if isinstance(field, MeshField):
            d, g = field.lookup(x)
            g = np.where(np.isfinite(d)[:, None], g, 0.0).astype(np.float64)
            near = np.flatnonzero(np.abs(d) < field.exact_reach + field.error_at(x))
            if near.size:
                _, _, out, ok = field._exact_in_band(x[near], d[near])
                g[near[ok]] = out[ok]
        else:
            g = field._polar(x)[1]
        g = g.T
        if self.from_field is not None:
            g = self.from_field[:3, :3] @ g
        norm = np.sqrt(_dot(g, g))
        return g * np.divide(1.0, norm, out=np.zeros_like(norm), where=norm > 1e-12)

    def near_rows(self, q: np.ndarray, reach: np.ndarray) -> np.ndarray:
        """Which head-local points ``q`` (3, K) may lie within ``reach`` (K,) of the surface, by
        the grid's nearest node (one gather each; every point for the patent's rays): positions."""
        if isinstance(self.field, MeshField):
            return self.field.screen(self._field_rows(q).astype(np.float32), reach + self.field.slack)
        return np.arange(q.shape[1])

    def fast_distance(self, q: np.ndarray, rest: bool = False, direction: bool = False, at: float | None = 1.0):
        """The distance a dynamics layer's contacts read at every substep, where the frame's
        refinement reads exact distances once: at head-local points ``q`` (3, K), the grid's
        trilinear value (+inf beyond it) — on a collider that moved relative to the head since the
        frame before (a hand, a plate: ``sweep_from``), exact where the grid cannot be trusted to
        see the surface (``MeshField.contact_rows``: a part thinner than a cell, a seam) — or along
        the ray; with ``direction`` also the outward unit direction (3, K), head-local. ``at``: the
        fraction of the frame, where the collider is on its way from the frame before
        (``maps_at``); None: where it ends the frame, by its grid alone, as if it had kept still
        (``collision.contacts.contact_maps``' ``carry`` off). ``rest``: the collider as bound,
        where the groom's rest clearances are read by the same function, so a groom at rest meets
        no contact."""
        field = self.bound_field if rest else self.field
        maps = None if rest or not self.sweeping else self.maps_at(1.0 if at is None else at)
        f = q if maps is None else self._mapped_rows(maps[0], q)
        if isinstance(field, MeshField) and self.swept_from is not None and not rest and at is not None:
            d, g = field.contact_rows(f, direction)
        elif isinstance(field, MeshField):
            # a collider that has kept still relative to the head since the frame before (the head
            # itself): the grid alone, as the walk after the substeps reads exact distances where
            # it is thin
            if direction:
                d, g = field._lookup_rows(np.ascontiguousarray(f, np.float64))
                d, g = d.astype(np.float64), g.astype(np.float64)
            else:
                d, g = field.trilinear_rows(f.astype(np.float32)).astype(np.float64), None
        else:
            r, dirs, radius = field._polar(f.T)
            d, g = r - radius, dirs.T
        if not direction:
            return d
        if maps is not None:
            back = maps[1]
            g = np.stack([back[j, 0] * g[0] + back[j, 1] * g[1] + back[j, 2] * g[2] for j in range(3)])
        norm = np.sqrt(_dot(g, g))
        g *= np.divide(1.0, norm, out=np.zeros_like(norm), where=norm > 1e-12)
        return d, g

    @staticmethod
    def _mapped_rows(m: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Head-local rows ``q`` (3, K) through the map ``m`` (4, 4) with its entries rounded to
        float32 (as ``_field_rows``), by products and sums in the contacts kernels' order
        (``kernels.contacts._in_field``): the same bits."""
        m = m.astype(np.float32).astype(np.float64)
        return np.stack([m[j, 0] * q[0] + m[j, 1] * q[1] + m[j, 2] * q[2] + m[j, 3] for j in range(3)])

    def project_rows(self, p: np.ndarray, span: slice, mask: np.ndarray | None = None,
                     pushes: np.ndarray | None = None) -> np.ndarray:
        """``project_at`` on a block of points (3, C), the wig's points ``span``, only where
        ``mask`` (C,) is set: the grid's screen first (``near_at``). Returns the block positions
        moved; ``pushes`` (3, C): where given, each moved point's push direction written."""
        near = self._near_rows(p, span, mask)
        if near.size == 0:
            return near
        qn = _take_rows(p, near)
        normal = None if pushes is None else np.zeros((3, near.size))
        moved = self.project_at(qn, near + span.start, normal)
        p[:, near[moved]] = _take_rows(qn, moved)
        if pushes is not None:
            pushes[:, near[moved]] = normal[:, moved]
        return near[moved]

    def _near_rows(self, p: np.ndarray, span: slice, mask: np.ndarray | None) -> np.ndarray:
        """``near_at`` on the points of a block (3, C) where ``mask`` (C,) is set: block
        positions. A sparse mask screens only its points; a dense one, the block's rows."""
        if mask is None:
            return self.near_at(p, slice(span.start, span.start + p.shape[1]))
        local = np.flatnonzero(mask)
        if 4 * len(local) < len(mask):
            return local[self.near_at(_take_rows(p, local), local + span.start)]
        near = self.near_at(p, slice(span.start, span.start + p.shape[1]))
        return near[mask[near]]

    def depth_at(self, q: np.ndarray, index: np.ndarray):
        """The points among ``q`` (3, S) — wig points ``index`` — that may be inside their
        collision surface (positions into ``q``) and how far: ``limit − distance`` (K,), positive
        inside."""
        pick, x = self._in_field(q, index)
        if pick.size == 0:
            return pick, np.zeros(0)
        return pick, self.limit[index[pick]] - self.field.signed_distance(x)

    def held_depth(self, q: np.ndarray, index: np.ndarray) -> float:
        """How far (head-local units) points ``q`` (3, S) — wig points ``index`` — lie inside
        their collision surface at most (0 when none does), every point looked at: the grid's
        screen and its trilinear bound, then exact distances. Unlike the walk's screen no
        point is passed over for having moved less than half its room from rest — that rule
        trusts the distance to be 1-Lipschitz, and across a seam (an open mesh, shells that
        cross) its sign jumps: over Suzanne's brow a point 46 mm out moved 14 mm and was 44 mm
        inside, never looked at. What a bake reports is measured so (``Wig._held_depth``)."""
        limit = self.limit[index]
        rows = self._field_rows(q)
        if isinstance(self.field, MeshField):
            # per point, the screen, the bound and the exact distance: one kernel
            depth = self.field._depths(rows, limit)
            return float(max(depth.max(), 0.0)) if depth.size else 0.0
        if q.shape[1] == 0:
            return 0.0
        depth = limit - self.field.signed_distance(rows.T.astype(np.float64))
        return float(max(depth.max(), 0.0))
