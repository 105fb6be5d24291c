"""Collision as a layer of its own (SPEC §6.3): colliders bound once in their own space, queried
by whoever needs them — refinement, the strand solvers of SPEC §8 (``contacts``), and hair that is
placed rather than moved: key poses, Style Hair, Draw Hair (``poses``).

A collider is a triangle mesh (the head, a body, shoulders, a ground plane, a hat). Its signed
distance is kept on a regular grid built at bind (``grid``): exact point-to-triangle distances in
a narrow band round the surface, carried to every other node by sweeping closest points through
the grid, and signed by the angle-weighted pseudo-normal of the closest feature (Bærentzen &
Aanæs 2005, ``triangles``), which is exact for a closed mesh — it has an inside — and makes an
open mesh (a ground plane, a scalp patch) one-sided: its normals say where outside is.

A point is pushed out along the distance gradient, never along a ray from a centre. Near the
surface the push is exact: each grid cell lists the triangles within its band, and the point
goes to its closest point on them plus its allowed clearance along the outward direction
(``field.MeshField`` decides which query answers where).

**The groom is sacred** (SPEC §6.3): at bind each vertex records its rest clearance ``d0`` to
every collider; its collision surface is ``min(offset, d0)`` (``colliders.groom_limits``, for
every client), so nothing moves at the rest frame.
"""

from .colliders import Collider, ColliderMesh, groom_limits, kernel_colliders
from .field import MeshField, RayField
from .poses import PoseContacts, SurfaceCollide
from . import solid
from .rows import _dot, _take_rows
from .triangles import (EDGE_AB, EDGE_BC, EDGE_CA, FACE, VERT_A, VERT_B, VERT_C, closest_feet, closest_on_triangles,
                        closest_rows, exact_signed_distance, is_closed, pseudo_normals, triangle_rows)

__all__ = [
    "Collider", "ColliderMesh", "groom_limits", "kernel_colliders", "MeshField", "RayField", "PoseContacts", "SurfaceCollide", "solid", "_dot", "_take_rows", "FACE", "VERT_A",
    "VERT_B", "VERT_C", "EDGE_AB", "EDGE_BC", "EDGE_CA", "closest_feet", "closest_on_triangles", "closest_rows",
    "exact_signed_distance", "is_closed", "pseudo_normals", "triangle_rows",
]
