"""Stability under every setting the UI allows (property-based, hypothesis; core only, no bpy).

Random settings inside the sidebar's ranges and random keyed magnet motions drive a wig on a unit
sphere head; whatever they are, positions stay finite and bounded by the rest extent plus what the
magnets travel, roots stay on the scalp, and no vertex ends inside the head.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_wig_core import rotation, sphere_mesh, strands, translate

from hair_wig import DynamicMagnet, FrameInput, Magnet, Profile, SpringSettings, Wig, WigSettings
from tolerance import AFFINE, NORM, magnitude, rounding

CASES = 100
FRAMES = 24
HEAD = sphere_mesh(1.0, rings=16, segments=32)
# The mesh's faces lie inside the unit sphere (chords): the head's surface is at least this far out.
SURFACE = float(np.cos(np.pi / 16) * np.cos(np.pi / 32))

unit = st.floats(0.0, 1.0)
magnet_settings = st.fixed_dictionaries({
    "radius": st.floats(1e-4, 10.0), "exponent": st.floats(0.0, 20.0), "multiplier": st.floats(0.0, 2.0),
    "dynamic": st.booleans(), "mass": st.floats(1e-3, 10.0), "stiffness": st.floats(0.0, 1e4),
    "damping": st.floats(0.0, 1e4), "dynablend": unit, "substeps": st.integers(1, 64),
    "travel": st.floats(0.0, 0.5), "turn": st.floats(-1.0, 1.0), "shake": st.floats(0.0, 1.0),
})
wig_settings = st.fixed_dictionaries({
    "normalisation": st.sampled_from(["cap", "sum"]), "compression": unit, "use_length": st.booleans(),
    "elasticity": unit, "length_mode": st.sampled_from(["STRAND", "SEGMENT"]), "offset": st.floats(0.0, 0.1),
    "secondary": st.booleans(), "k2": st.floats(0.0, 1e4), "r2": st.floats(0.0, 1e4),
    "random": st.floats(0.0, 0.95), "dynablend2": unit, "fps": st.sampled_from([12, 24, 30, 60, 120]),
    "head_turn": st.floats(-1.0, 1.0),
})


def _motion(m, f):
    """A keyed magnet path: a turn about the magnet and a travel, with a per-frame shake (keys
    an animator might set on every frame)."""
    s = f / FRAMES
    wobble = m["shake"] * m["travel"] * np.sin(7.0 * f)
    return translate(m["travel"] * s + wobble, 0.3 * m["travel"] * s, -0.5 * m["travel"] * s) @ \
        rotation((0, 0, 1), m["turn"] * s, (0, 0, 1.3))


@settings(max_examples=CASES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(ms=st.lists(magnet_settings, min_size=1, max_size=4), w=wig_settings)
def test_any_ui_settings_keep_the_hair_finite_bounded_on_the_scalp_and_outside_the_head(ms, w):
    hair = strands(n=30, k=8, length=0.6)
    rest_radius = float(np.linalg.norm(hair.points, axis=1).max())
    magnets = []
    for i, m in enumerate(ms):
        dyn = DynamicMagnet(m["mass"], m["stiffness"], m["damping"], m["dynablend"], m["substeps"]) \
            if m["dynamic"] else None
        a = 2 * np.pi * i / len(ms)
        magnets.append(Magnet(f"M{i}", translate(1.3 * np.cos(a), 1.3 * np.sin(a), 0.8), m["multiplier"],
                              m["exponent"], m["radius"], dynamic=dyn))
    secondary = SpringSettings(w["k2"], w["r2"], random=w["random"], dynablend=w["dynablend2"]) \
        if w["secondary"] else None
    wig = Wig(hair, np.eye(4), np.eye(4), magnets, WigSettings(
        normalisation=w["normalisation"], compression=Profile.constant(w["compression"]),
        use_length=w["use_length"], elasticity=w["elasticity"], length_mode=w["length_mode"],
        collision_offset=w["offset"], dynamics=secondary), head_mesh=HEAD, head_centre=np.zeros(3))
    # How far any magnet can carry a point: its travel and its turn, over the whole rest extent.
    reach = max(m["travel"] * (1.2 + m["shake"]) + abs(m["turn"]) * (rest_radius + 1.3) for m in ms)
    head_reach = abs(w["head_turn"]) * rest_radius
    roots = hair.offsets[:-1]
    not_root = np.ones(hair.num_points, bool)
    not_root[roots] = False
    state = None
    for f in range(FRAMES):
        head = rotation((0, 1, 0), w["head_turn"] * f / FRAMES)
        mats = np.array([head @ _motion(m, f) @ mag.rest_matrix for m, mag in zip(ms, magnets)])
        inp = FrameInput(head, head, mats, dt=1.0 / w["fps"], time=f / w["fps"], gravity=np.zeros(3))
        p, state = wig.step(inp, state, keep_state=False)
        assert np.isfinite(p).all(), f"frame {f}"
        r = np.linalg.norm(p, axis=1)            # hair object = head: points are head-local
        # dynamic magnets can overshoot their keys by as much again, and the springs lag behind the
        # magnets' and the head's motion by at most as much again
        assert r.max() <= rest_radius + 4 * (reach + head_reach) + w["offset"] + 1e-3, f"frame {f}"
        # a root's flex, attachment and spring blend are 0: nothing moves it but the map to the
        # object (the identity here), 7 roundings of |x|
        np.testing.assert_allclose(p[roots], hair.points[roots], rtol=0, atol=rounding(rest_radius, AFFINE))
        # The last to place a point is the push-out: onto the exact surface in float64, stored as
        # float32 (1), or onto its tangent plane, which lies outside a convex head (its foot,
        # swing and sum: 5); |p| here (4): 10 roundings of |x|. SURFACE bounds the faceted
        # sphere from inside. A point the collision missed is inside by millimetres.
        inside = SURFACE - rounding(magnitude(p), 1 + 5 + NORM)
        assert r[not_root].min() >= inside, f"frame {f}: a vertex is inside the head"
