"""Hair over the rim of an open collider it grows on (hair_wig/collision/colliders.py: a grid
that covers the hair's reach where the mesh's inside reaches the grid's edge).

An open mesh is one-sided by its normals (angle-weighted pseudo-normals): all that lies under a
ground plane's level past its rim is inside it, however far. A field reads +inf beyond its
grid, so hair there was inside where neither a dynamics layer's contacts nor refinement could
see it: grass blown over the rim of the ground it grows on (scripts/grooms.py, 7 of 128 wind
seeds with Wisps) ended under the level 0.3 m past the rim, beyond the grid's 0.25 m."""

import numpy as np
import pytest

from hair_wig import FrameInput, HairSet, Wig, WigSettings
from hair_wig.collision import Collider, ColliderMesh, exact_signed_distance
from hair_wig.collision.colliders import hair_reach
from hair_wig.layers import LAYERS
from test_strands import G
from test_wig_core import sphere_mesh

HALF = 0.5          # the ground: a 1 x 1 plane at z = 0, normals up
LENGTH = 0.4        # the blades, rooted just inside its +x rim, far longer than its grid's pad


def ground(cuts=8):
    s = np.linspace(-HALF, HALF, cuts + 1)
    x, y = np.meshgrid(s, s, indexing="ij")
    v = np.stack([x.ravel(), y.ravel(), np.zeros(x.size)], 1)
    tris = []
    for i in range(cuts):
        for j in range(cuts):
            a, b = i * (cuts + 1) + j, (i + 1) * (cuts + 1) + j
            tris += [(a, b, b + 1), (a, b + 1, a + 1)]
    return v, np.array(tris)


def blades(strands=6, n=9):
    """Blades rooted 1-4 cm inside the +x rim, leaning out over it at 45 degrees."""
    y = np.linspace(-0.1, 0.1, strands)
    x = HALF - np.linspace(0.01, 0.04, strands)
    s = np.linspace(0, LENGTH, n)[:, None]
    lean = np.array([1.0, 0.0, 1.0]) / np.sqrt(2)
    pts = np.concatenate([np.array([x[k], y[k], 0.0]) + s * lean for k in range(strands)])
    return HairSet(pts.astype(np.float32), [n] * strands, name="Grass")


def test_the_grid_of_a_ground_the_hair_grows_on_reaches_as_far_as_the_hair_and_a_closed_head_does_not_grow():
    """The ground's inside (under its level) reaches its grid's edge: the collider the blades
    ride grows its grid to their reach, their roots' distance from its box plus their lengths
    (``hair_reach``: here the length), and reads a point under the level 0.3 m past the rim as
    inside, as the exact distance from every triangle does, within the grid's own error bound
    there; bound without the blades it read +inf (outside). A closed head's inside never reaches
    the edge: its grid is the same with its hair as without."""
    v, tris = ground()
    hair = blades()
    rides = (np.ascontiguousarray(hair.points.T), hair.offsets)
    mesh = ColliderMesh("Ground", v, tris)
    bare, grown = Collider(mesh, np.eye(4), 0.0), Collider(mesh, np.eye(4), 0.0, rides)
    assert bare.field.inside_at_edge and bare.field.pad < LENGTH
    assert hair_reach(*rides, *grown.field.box) == pytest.approx(LENGTH, rel=1e-6)    # float32 points
    assert grown.field.pad >= LENGTH
    q = np.array([[HALF + 0.3], [0.0], [-0.1]])
    exact = exact_signed_distance(q.T, v, tris)[0]
    assert exact < -0.3
    assert bare.fast_distance(q)[0] == np.inf
    d = grown.fast_distance(q)[0]
    assert abs(d - exact) <= grown.field.error_at(q.T)[0]
    head_v, head_t = sphere_mesh()
    head = ColliderMesh("Head", head_v, head_t)
    sphere_rides = (np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 3.0]]), np.array([0, 2]))   # a strand 2 long
    for c in (Collider(head, np.eye(4), 0.0), Collider(head, np.eye(4), 0.0, sphere_rides)):
        assert not c.field.inside_at_edge
        assert np.array_equal(c.field.dims, Collider(head, np.eye(4), 0.0).field.dims)


def wig_on_the_ground(layer):
    """Blades on the ground (the head and its collider) with ``layer`` at its defaults but no
    Hold (Settle still damps): they fall over the rim under gravity."""
    settings = LAYERS[layer].SETTINGS()
    settings.goal_stiffness = 0.0
    settings.hold_style = False
    return Wig(blades(), np.eye(4), np.eye(4), [], WigSettings(dynamics=settings, use_collision=True),
               head_mesh=ground())


def test_wisps_falling_over_the_rim_of_the_ground_they_grow_on_stay_out_of_it():
    """Blades with no Hold fall over the rim of the ground they grow on (the head and its only
    collider) and stay out of it by exact distances from every triangle with the pseudo-normal
    sign (``exact_signed_distance``, not the field): no point inside its collision surface
    ``min(offset, rest clearance)`` by more than the push's own float32 rounding
    (``Collider.tolerance``). Before the grid grew, the tips hung 0.27 m under the level past the
    rim (0.36 m inside by that rule) where the field, with 0.0625 m of pad, read +inf; now the
    head's grid reaches as far as the blades can: their roots lie on the ground, so their
    length. Two bakes in one process give the same bits."""
    v, tris = ground()
    bakes = []
    for _ in range(2):
        wig = wig_on_the_ground("WISPS")
        (c,) = wig.colliders
        state, frames, worst = None, [], -np.inf
        for f in range(24):
            out, state = wig.step(FrameInput(np.eye(4), np.eye(4), time=f / 24, gravity=G), state)
            frames.append(out.copy())
            d = exact_signed_distance(out.astype(np.float64), v, tris)
            worst = max(worst, float((c.limit - d).max()))
        assert worst <= c.tolerance, (worst, c.tolerance)
        assert c.field.pad >= LENGTH
        tips = out[wig.hair.offsets[1:] - 1]
        assert (tips[:, 0] > HALF).all() and tips[:, 2].max() < 0.5 * LENGTH      # they did fall over it
        bakes.append(np.stack(frames))
    assert np.array_equal(bakes[0], bakes[1])
