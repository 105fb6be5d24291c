"""The same answer at every place and scale (issue 33): a groom combed over a subdivided Suzanne,
onto shoulders, with a head turn, a keyed magnet pulling, a dynamic magnet, secondary springs,
compression, both length modes and collision on and off, baked as it is and again with the whole
scene moved up to 10 km, turned and scaled by 1e-2 ... 1e2, must give the same hair moved, turned
and scaled the same way — to the float32 rounding of the result, derived below, not fitted.

Property tests (hypothesis) draw the transforms; the suite runs a dozen cases per property
(a few seconds); ``HAIR_WIG_PROPERTY_EXAMPLES=10000 ./run tests tests/test_invariance.py`` runs
ten thousand.

The groom is built in Blender (Suzanne, subdivided; hair combed 5 mm over her scalp with
``scripts/grooms.py``'s brush) and baked by the core, frame by frame as the bake does.
"""

import os

import bpy
import grooms
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hair_wig import (ColliderMesh, DynamicMagnet, FrameInput, HairSet, Magnet, Profile, SecondarySettings,
                      Wig, WigSettings)

EPS32 = float(np.finfo(np.float32).eps)
EXAMPLES = int(os.environ.get("HAIR_WIG_PROPERTY_EXAMPLES", "5"))
FRAMES = 8
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 50,
                    suppress_health_check=list(HealthCheck))


def _rotation(axis, angle, about=(0.0, 0.0, 0.0)) -> np.ndarray:
    axis = np.asarray(axis, np.float64)
    axis = axis / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    m = np.eye(4)
    m[:3, :3] = np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k
    m[:3, 3] = np.asarray(about) - m[:3, :3] @ np.asarray(about)
    return m


def _translate(t) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = t
    return m


def _f32(m: np.ndarray) -> np.ndarray:
    """A matrix as Blender holds it (``matrix_world`` is float32)."""
    return np.asarray(m, np.float32).astype(np.float64)


@pytest.fixture(scope="module")
def groom(addon):
    return make_groom()


def make_groom():
    """Suzanne (one subdivision), 120 strands x 24 points combed 5 mm over her scalp and down
    past her ears, and a capsule of shoulders under her: arrays, world = her own space."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    head = grooms._subdivided_suzanne(1)
    body = grooms.shoulders()
    v, t = grooms.mesh_world(head)
    bv, bt = grooms.mesh_world(body)
    roots, normals, _ = grooms.scalp_roots(
        head, 120, lambda c, n: (c[:, 2] > 0.25) & (n[:, 2] > 0.1) & (c[:, 1] > -0.5), seed=7)
    pts = grooms.comb(np.concatenate([v, bv]), np.concatenate([t, bt + len(v)]), roots, normals, 24,
                      length=1.4, height=0.005)
    return dict(head=(v, t), body=(bv, bt), points=pts, counts=np.full(120, 24))


def bake(groom, x: np.ndarray, mode: str, collide: bool, rounded: bool, data: bool = False):
    """The groom's frames (F, P, 3) in its hair object's space, with the whole scene carried by
    ``x`` (4, 4; a similarity): the objects' matrices (``data=False``; ``rounded``: as float32,
    as Blender holds them) or the mesh and hair data themselves (``data=True``: transforms
    applied, the data stored in float32, every object at the identity)."""
    s = np.cbrt(abs(np.linalg.det(x[:3, :3])))
    v, t = groom["head"]
    bv, bt = groom["body"]
    eye = np.eye(4)
    if data:
        def place(p):
            return (np.asarray(p, np.float64) @ x[:3, :3].T + x[:3, 3]).astype(np.float32)
        pts, v, bv = place(groom["points"]), place(v).astype(np.float64), place(bv).astype(np.float64)
        obj, inside = eye, x              # objects at the identity; the scene's frame is in the data
    else:
        pts = groom["points"]
        obj, inside = (_f32(x) if rounded else x), eye
    hair = HairSet(pts, groom["counts"], name="Hair")
    neck = (0.0, 0.1, -0.6)
    # head-local rest matrices (the head's own space: the data's when it carries the scene)
    pull_rest = inside @ _translate((0.0, 0.9, 0.4))
    swing_rest = inside @ _translate((0.0, -0.6, 1.0))
    local = s if data else 1.0           # head-local units per the groom's (radii are head-local)
    magnets = [Magnet("Pull", pull_rest, radius=1.2 * local),
               Magnet("Swing", swing_rest, radius=1.0 * local,
                      dynamic=DynamicMagnet(stiffness=30.0, damping=4.0, gravity_max=9.81 * s))]
    wig_settings = WigSettings(secondary=SecondarySettings(), compression=Profile.constant(0.3),
                               length_mode=mode, use_collision=collide, collision_offset=0.01 * s)
    body = ColliderMesh("Shoulders", bv, bt, obj, offset=0.01 * s)
    # compression's centre: the head's box centre, in the head's own space (a box is not
    # carried by a turn: given, as the scene reader takes the head's own)
    centre = (np.asarray(groom["head"][0]).min(axis=0) + np.asarray(groom["head"][0]).max(axis=0)) / 2
    centre = inside[:3, :3] @ centre + inside[:3, 3]
    wig = Wig(hair, obj, obj, magnets, wig_settings, head_mesh=(v, t), head_name="Suzanne",
              colliders=[body], head_centre=centre)
    gravity = x[:3, :3] @ np.array([0.0, 0.0, -9.81])
    state, frames = None, []
    for f in range(FRAMES):
        turn = inside @ _rotation((0.2, 0.1, 1.0), 0.05 * f, neck) @ np.linalg.inv(inside)
        head = obj @ turn
        # keyed in each magnet's own space, which X scales with the rest of the scene
        pull = head @ pull_rest @ _translate(np.array([0.0, -0.045, -0.025]) * f)
        swing = head @ swing_rest @ _translate(np.array([0.06, 0.0, 0.0]) * f)
        if rounded and not data:
            head, pull, swing = _f32(head), _f32(pull), _f32(swing)
        inp = FrameInput(obj, head, np.array([pull, swing]), time=f / 24, gravity=gravity,
                         collider_matrices=np.array([obj]))
        out, state = wig.step(inp, state, keep_state=False)
        frames.append(out.astype(np.float64))
    return np.stack(frames), wig


_BASE = {}


def base(groom, mode, collide):
    key = (mode, collide)
    if key not in _BASE:
        _BASE[key] = bake(groom, np.eye(4), mode, collide, rounded=False)[0]
    return _BASE[key]


def similarity(t, axis, angle, scale) -> np.ndarray:
    return _translate(t) @ _rotation(axis, angle) @ np.diag([scale, scale, scale, 1.0])


transforms = st.tuples(
    st.tuples(*[st.floats(-1e4, 1e4)] * 3),
    st.tuples(*[st.floats(-1, 1)] * 3).filter(lambda a: np.linalg.norm(a) > 0.1),
    st.floats(-np.pi, np.pi),
    st.floats(-2, 2).map(lambda e: 10.0 ** e))

def test_the_groom_moves_under_the_bake(groom):
    """The scene is a real test: the head turns, the magnets pull, the hair meets the head (the
    collision moves it) and at the rest frame nothing has moved, bit for bit."""
    frames, wig = bake(groom, np.eye(4), "SEGMENT", True, rounded=False)
    free, _ = bake(groom, np.eye(4), "SEGMENT", False, rounded=False)
    np.testing.assert_array_equal(frames[0], groom["points"])
    np.testing.assert_array_equal(free[0], groom["points"])
    assert np.abs(frames[-1] - frames[0]).max() > 0.2
    assert np.abs(frames[-1] - free[-1]).max() > 0.01             # collision pushed hair out
    assert max(len(c.field.triangles) for c in wig.colliders) > 1000


# Both length modes, collision on and off, with secondary springs, a dynamic magnet and
# compression. The head turns 23° over the frames and the magnets drag hair into her brow and
# over her ears: pushes of a few cm.
MODES = [("SEGMENT", True), ("STRAND", True), ("SEGMENT", False), ("STRAND", False)]
# Placed as Blender places things (float32 matrices, float32 mesh data), collision is left out:
# its response still amplifies the half ulp of a placement (0.5 mm at 10 km) up to 15-100x at
# points whose contact flips — the hair dragged a few cm in, whose nearest surface, or the
# whole-strand mode's unconverged push-and-rescale, changes with a rounding — and data turned
# with the scene meets an axis-aligned grid turned the other way. Left open on issue 33 with
# these figures (the contact that flips is issue 34's).
FREE = [("SEGMENT", False), ("STRAND", False)]
ULP8 = 8          # the bound: 8 ulp of the coordinates compared (derivations below)


@pytest.mark.parametrize("mode, collide", MODES)
@PROPERTY
@given(transforms)
def test_moved_turned_and_scaled_objects_bake_the_same_hair(groom, mode, collide, xf):
    """The head, the hair, the magnets and the shoulders carried by one similarity X (objects'
    matrices, exact): the hair in its own object's space is the same hair. Nothing in the core
    depends on where the scene is: head-local space for the deformation and refinement, and the
    springs in world axes from where the wig was at rest. What is left is float32 rounding of
    coordinates of the hair's size, ordered differently (the springs' axes turn with X): per
    frame the spring step (4 roundings, half an ulp each, of a deviation no larger than the
    coordinates), the magnet blend and compression (a few, with weights <= 1) and the length
    pass (one placement a point, its direction error at most ~2x a rounding where the segment is
    not squashed, leader.py); the springs damp what a frame rounded before the next adds its own
    (their step contracts), so it does not pile up over the frames: 8 ulp of the coordinates.
    Before issue 33 the default length mode amplified a rounding by L / |d| (500 ulp)."""
    x = similarity(*xf)
    got, _ = bake(groom, x, mode, collide, rounded=False)
    want = base(groom, mode, collide)
    magnitude = np.abs(want).max()
    err = np.abs(got - want).max()
    assert err <= ULP8 * EPS32 * magnitude, (err / (EPS32 * magnitude), xf)


@pytest.mark.parametrize("mode, collide", FREE)
@PROPERTY
@given(transforms)
def test_a_scene_far_out_bakes_to_the_rounding_of_its_place(groom, mode, collide, xf):
    """The same, with the matrices as Blender holds them (float32): every object is then placed
    to half an ulp of its world coordinates, |X| = |t| + s |x|, and no bake can know the hair
    better than that. The head, hair and magnets each carry that rounding (3 placements, each
    moving the result by at most its own: magnet weights <= 1, springs follow a head moved by
    it), plus the computation's own rounding of the hair's size (above): 8 ulp of the world
    coordinates, read in the hair's own space (divided by s)."""
    x = similarity(*xf)
    t, _, _, s = xf
    got, _ = bake(groom, x, mode, collide, rounded=True)
    want = base(groom, mode, collide)
    world = np.abs(t).max() + s * np.abs(want).max()
    err = np.abs(got - want).max()
    assert err <= ULP8 * EPS32 * world / s, (err * s / (EPS32 * world), xf)


@pytest.mark.parametrize("mode, collide", FREE)
@PROPERTY
@given(transforms)
def test_a_groom_whose_data_lies_far_out_bakes_the_same_hair_there(groom, mode, collide, xf):
    """Transforms applied: the head's mesh, the shoulders' and the hair's points themselves lie
    at X (stored float32, as Blender stores them), every object at the identity. The data is
    then known to half an ulp of its world coordinates, and the bake must be as exact: head-local
    space is moved to an exact origin among the hair (``pipeline.exact_origin``), so nothing
    after the input loses digits to the distance (without it: 500-1300 ulp). Bound: the inputs'
    rounding (half an ulp each of the hair's points, the magnets and the output) through the
    same chain as above: 8 ulp of the world coordinates."""
    x = similarity(*xf)
    got, _ = bake(groom, x, mode, collide, rounded=True, data=True)
    want = base(groom, mode, collide) @ x[:3, :3].T + x[:3, 3]
    world = np.abs(want).max()
    err = np.abs(got - want).max()
    assert err <= ULP8 * EPS32 * world, (err / (EPS32 * world), xf)
