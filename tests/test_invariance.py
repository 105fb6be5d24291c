"""The same answer at every place and scale (issue 33): a groom combed over a subdivided Suzanne,
onto shoulders, with a head turn, a keyed magnet pulling, a dynamic magnet, secondary springs,
compression, both length modes and collision on and off, baked as it is and again with the whole
scene moved up to 10 km, turned and scaled by 1e-2 ... 1e2, must give the same hair moved, turned
and scaled the same way — to the float32 rounding of the result, derived below, not fitted.

Property tests (hypothesis) draw the transforms; the suite runs a dozen cases per property
(a few seconds); ``HAIR_WIG_PROPERTY_EXAMPLES=10000 ./run tests tests/test_invariance.py`` runs
ten thousand.

The groom is built in Blender (Suzanne, subdivided; hair combed 5 mm over her scalp with
``scripts/grooms.py``'s brush) and baked by the core, frame by frame as the bake does
(``scripts/invariance.py``, which also prints the figures).
"""

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from invariance import EPS32, FRAMES, bake, make_groom, similarity
from hair_wig.kernels.walk import SEGMENT_AT, SEGMENT_TURN

EXAMPLES = int(os.environ.get("HAIR_WIG_PROPERTY_EXAMPLES", "5"))
# no shrinking: a failing case is reported as drawn (shrinking one bake after another takes minutes)
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 50,
                    suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])


@pytest.fixture(scope="module")
def groom(addon):
    return make_groom()


_BASE = {}


def base(groom, mode, collide):
    """The scene as it is, baked once per mode."""
    key = (mode, collide)
    if key not in _BASE:
        _BASE[key] = bake(groom, np.eye(4), mode, collide, rounded=False)[0]
    return _BASE[key]


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
# Placed as Blender places things (float32 matrices, float32 mesh data), the input itself is
# rounded to half an ulp of the world, and with collision on the hair's answer is not always as
# well-conditioned as that: a point a magnet drags a few cm into the head lands where its
# nearest surface is, and on a thin part (an ear, a brow's fold) or where the whole-strand mode's
# push-and-rescale leaves it inside (its residual), a rounding can change which side — up to 15x
# (per segment) and 100x (whole strand) the input's rounding here. What the bake itself adds is
# what the tests bound with collision on: the same held input, carried back to the origin,
# gives the same hair (``bake(back=True)``). The forward figures are printed by
# scripts/invariance.py.
FREE = [("SEGMENT", False), ("STRAND", False)]
ULP8 = 8          # the bound: 8 ulp of the coordinates compared (derivations below)


def carried(wig, frames: int = FRAMES) -> float:
    """How many frames' worth of one frame's push rounding a frame can show at most, with
    collision on: the Springs layer takes a deep push back into its spring
    (``SpringLayer.absorb``), so a push's rounding reappears in the frames after it, carried by
    the spring's exact step ``(y, v) → M (y, v)`` (``spring_follow``'s e11, e12, e21, e22; the
    shown point is ``b y``, the spring moved by the push over b): the frame's own push plus, for
    each earlier one, ``|(Mᵏ)₀₀|`` (k = 1 … frames − 1) times the most the share taken back
    changes with the push (``Wig._contacts_only``: ``out · clip(2 out / reach − 1, 0, 1)``,
    whose slope is at most 1 + 2 = 3) — the largest over the ``wig``'s springs at 24 frames a
    second. The push's direction is the walk's own, taken from where the point lay deep in the
    head: its rounding is of that depth's conditioning, within the push's. A segment met between
    its points swings its point by the push of a sample ``t`` of the way along it over ``t``
    (``kernels.walk._segment_against``), so a push's rounding reaches a point times up to
    1 / min(SEGMENT_AT) = 4: that factor is in the count too. Where a swing goes farther than
    ``SEGMENT_TURN`` it is turned back to that (``kernels.walk._turn_at_most``): the point set
    along the part of the swung direction square to where the segment pointed, over its length
    ``sin θ`` for a swing of ``θ`` — at least ``sin SEGMENT_TURN`` for swings up to 180° less
    that, so the direction's rounding reaches the point times up to ``1 / sin SEGMENT_TURN``
    (2.9): in the count too."""
    e11, e12, e21, e22 = (np.asarray(c, np.float64) for c in wig.layer.springs.coefficients(1.0 / 24.0)[:4])
    m = np.array([[e11, e12], [e21, e22]]).transpose(2, 0, 1)              # (P, 2, 2)
    later, power = np.zeros(len(e11)), np.repeat(np.eye(2)[None], len(e11), axis=0)
    for _ in range(frames - 1):
        power = power @ m
        later += np.abs(power[:, 0, 0])
    return float(1.0 + 3.0 * later.max()) / min(SEGMENT_AT) / math.sin(SEGMENT_TURN)


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
    Before issue 33 the default length mode amplified a rounding by L / |d| (500 ulp).
    With collision, a point pushed out of the head lands where its closest surface point is, a
    map whose slope is rho / (rho − depth) inside a concave fold of radius rho: this groom's
    pushes reach 1 cm in Suzanne's eye sockets and brow, folds of about 2 cm, so at most twice:
    16 ulp (3-6 measured, 9 the worst hypothesis found) — carried into the frames after it by
    the springs where a push is deep (``carried``: 16 ulp times about 10 over these 8 frames;
    the largest seen: 102 ulp, a scene far out at 1/20 scale)."""
    x = similarity(*xf)
    got, wig = bake(groom, x, mode, collide, rounded=False)
    want = base(groom, mode, collide)
    magnitude = np.abs(want).max()
    err = np.abs(got - want).max()
    bound = 2 * ULP8 * carried(wig) if collide else ULP8
    assert err <= bound * EPS32 * magnitude, (err / (EPS32 * magnitude), bound, xf)


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


@pytest.mark.parametrize("mode", ["SEGMENT", "STRAND"])
@PROPERTY
@given(transforms)
def test_a_scene_far_out_bakes_with_collision_what_its_held_input_gives(groom, mode, xf):
    """Collision on, the matrices as Blender holds them (float32) far out: the hair is what the
    same held matrices, carried back to the origin by X⁻¹ (float64), give there. The wig reads
    only relative placement (head-local = hair⁻¹ · head, which X⁻¹ carries away to float64
    rounding), so what is left is the springs' world axes turned and scaled with X, as for the
    exact placement above: 16 ulp of the hair's coordinates, ``carried`` by the springs."""
    x = similarity(*xf)
    got, wig = bake(groom, x, mode, True, rounded=True)
    want, _ = bake(groom, x, mode, True, rounded=True, back=True)
    magnitude = np.abs(want).max()
    err = np.abs(got - want).max()
    assert err <= 2 * ULP8 * carried(wig) * EPS32 * magnitude, (err / (EPS32 * magnitude), xf)


@PROPERTY
@given(transforms)
def test_a_groom_far_out_bakes_with_collision_what_its_data_gives_at_the_origin(groom, xf):
    """Collision on, per segment, the data itself far out (float32) and turned: the hair is
    what that same data, carried back to the origin (float64), gives there, carried out again.
    The bake runs in a head-local frame turned with the data and moved to an exact origin among
    the hair, so its own rounding is of the hair's size and differs from the origin's only in
    order: as for the exact placement (16 ulp of the hair's coordinates, each at most an ulp of
    the world's, ``carried`` by the springs). Whole-strand mode is left out: its push-and-rescale leaves points deep in
    Suzanne's brow (the residual it reports) where a rounding of the turned frame moves them up
    to ~100 ulp (scripts/invariance.py); issue 34's contacts."""
    x = similarity(*xf)
    t, _, _, s = xf
    got, wig = bake(groom, x, "SEGMENT", True, rounded=True, data=True)
    got = (got - x[:3, 3]) @ np.linalg.inv(x[:3, :3]).T
    want, _ = bake(groom, x, "SEGMENT", True, rounded=True, data=True, back=True)
    world = np.abs(t).max() + s * np.abs(want).max()
    err = np.abs(got - want).max()
    assert err <= 2 * ULP8 * carried(wig) * EPS32 * world / s, (err * s / (EPS32 * world), xf)
