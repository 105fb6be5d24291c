"""Hair that is placed rather than moved meets the colliders here (SPEC §6, §7): the in-betweens of
keyed hairstyles (``keyposes.KeyedStyle``), the strands Style Hair grows and Draw Hair draws
(``styling.relay`` and ``cantilever`` through ``SurfaceCollide``).

A pose has no velocity, so its contact has no friction and no carry: a point closer to a collider
than its limit is pushed out to that limit — exactly from its closest point near the surface,
along the grid's gradient beyond (``MeshField.project``, the push the wig's own colliders use in
``Collider.project_at``) — and pushed again, up to ``ROUNDS`` times, while a push moves it. A push
along the grid's gradient from far inside stops short of the limit by the grid's error there
(``short``), so it never carries a point past it: a pose through the head's middle comes out
onto its limit, not a grid error beyond it; the next push from near the surface is exact.
"""

from __future__ import annotations

import numpy as np

from ..spaces import transform_points


class PoseContacts:
    """The colliders' fields (``MeshField`` or ``RayField``) as a pose meets them. ``to_field``
    (4, 4): the pose's space into the fields' (None: the same space). Points are float64 (N, 3)
    in the pose's space; limits (N,) per field, in field units."""

    ROUNDS = 4

    def __init__(self, fields, to_field: np.ndarray | None = None):
        self.fields = list(fields)
        self.to_field = None if to_field is None else np.asarray(to_field, np.float64)
        self.from_field = None if to_field is None else np.linalg.inv(self.to_field)

    def _in_field(self, x: np.ndarray) -> np.ndarray:
        """``x`` in the fields' space: a float64 copy, the pushes' to write into."""
        if self.to_field is None:
            return np.array(x, np.float64)
        return transform_points(np.asarray(x, np.float64), self.to_field)

    def clearances(self, x: np.ndarray) -> list:
        """Each field's signed distance (N,) float32 at points ``x`` (N, 3): a groom's rest
        clearance, read by the distance the pose will be pushed by (``groom_limits``)."""
        f = self._in_field(x)
        return [field.signed_distance(f).astype(np.float32) for field in self.fields]

    def push(self, x: np.ndarray, limits) -> tuple:
        """Points ``x`` (N, 3) pushed out to ``limits`` (one (N,) per field, in order): the new
        positions (N, 3) float64 in the pose's space and which were pushed (N,) bool. Points no
        field pushes come back as given, bit for bit."""
        f = self._in_field(x)
        hit = np.zeros(len(f), bool)
        for field, limit in zip(self.fields, limits):
            for _ in range(self.ROUNDS):
                new, moved = field.project(f, limit, short=True)
                if moved.size == 0:
                    break
                f[moved] = new
                hit[moved] = True
        out = np.array(x, np.float64)
        out[hit] = f[hit] if self.from_field is None else transform_points(f[hit], self.from_field)
        return out, hit


class SurfaceCollide:
    """A ``collide`` callback for Style Hair's ``cantilever`` and ``relay``: the points of strand
    ``s`` closer to the collider ``field`` (in the strands' space) than ``limit[s]`` are pushed
    out to it (``PoseContacts``) — the clearance the artist asks for plus each strand's layer
    (``styling.layer_offsets``). The hair is being made, so it has no rest to keep
    (``groom_limits`` is for grooms): the limit is the one asked for."""

    def __init__(self, field, limit):
        self.contacts = field if isinstance(field, PoseContacts) else PoseContacts([field])
        self.limit = np.asarray(limit, np.float64)

    def for_rows(self, pick) -> "SurfaceCollide":
        """The same collider for the strands ``pick`` only."""
        return SurfaceCollide(self.contacts, self.limit[pick])

    def __call__(self, x, _k):
        new, hit = self.contacts.push(x, [self.limit])
        return new if hit.any() else x
