"""Style Hair's core (seed 003, SPEC §7 "003"): strands bent as cantilevers under gravity and
styling forces (numpy only, no bpy)."""

import numpy as np
import pytest

from hair_wig.errors import HairWigError
from hair_wig.profiles import Profile
from hair_wig.styling import cantilever


def _tip(points):
    d = points[:, -1] - points[:, -2]
    return d / np.linalg.norm(d, axis=1, keepdims=True)


@pytest.mark.parametrize("length,stiffness", [(1.0, 1.0), (0.3, 2e-3)])
def test_small_deflection_gives_the_beams_tip_slope_and_deflection(length, stiffness):
    """A uniform load F per unit length across a straight strand of length L and rigidity EI,
    small deflection: tip slope F L³/(6 EI) and tip deflection F L⁴/(8 EI) (seed 003's closed
    forms), within 1 % at 64 segments."""
    force = 1e-5 * stiffness / length ** 3            # a slope of ~2e-6 rad
    p = cantilever(np.zeros((1, 3)), [1.0, 0.0, 0.0], length, 65, [0.0, 0.0, -force], stiffness)
    d = _tip(p)[0]
    slope, deflection = np.arctan2(-d[2], d[0]), -p[0, -1, 2]
    assert slope == pytest.approx(force * length ** 3 / (6 * stiffness), rel=0.01)
    assert deflection == pytest.approx(force * length ** 4 / (8 * stiffness), rel=0.01)
    # twice the load, twice the bend (linear for small deflections); a stiffer profile bends less
    twice = cantilever(np.zeros((1, 3)), [1.0, 0.0, 0.0], length, 65, [0.0, 0.0, -2 * force], stiffness)
    assert -twice[0, -1, 2] == pytest.approx(2 * deflection, rel=1e-4)
    stiff = cantilever(np.zeros((1, 3)), [1.0, 0.0, 0.0], length, 65, [0.0, 0.0, -force], stiffness,
                       Profile.linear(2.0, 1.0, "stiffness"))
    assert 0 < -stiff[0, -1, 2] < deflection


def test_every_segment_has_its_length_exactly_and_the_root_stays():
    rng = np.random.default_rng(3)
    roots = rng.normal(size=(50, 3))
    dirs = rng.normal(size=(50, 3))
    lengths = rng.uniform(0.05, 0.6, 50)
    load = rng.normal(size=(50, 24, 3))                  # a different push on every segment
    p = cantilever(roots, dirs, lengths, 25, load, 1e-3, Profile.linear(1.0, 0.1, "stiffness"))
    np.testing.assert_array_equal(p[:, 0], roots)
    seg = np.linalg.norm(np.diff(p, axis=1), axis=2)
    np.testing.assert_allclose(seg, np.repeat((lengths / 24)[:, None], 24, axis=1), rtol=1e-12)


def test_soft_hair_comes_to_rest_along_its_load_and_never_past_it():
    """However soft, a strand turns towards its load and stops there (the moment vanishes along
    it): strands grown sideways under gravity hang straight down at the tip, the angle to the
    load falling monotonically from root to tip."""
    dirs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.3], [-1.0, 0.5, -0.2]])
    p = cantilever(np.zeros((3, 3)), dirs, 0.5, 33, [0.0, 0.0, -9.81], 1e-6)
    np.testing.assert_allclose(_tip(p), np.tile([0.0, 0.0, -1.0], (3, 1)), atol=1e-9)
    seg = np.diff(p, axis=1)
    cos = -seg[..., 2] / np.linalg.norm(seg, axis=2)
    assert np.all(np.diff(cos, axis=1) >= -1e-12)
    # a styling force sideways lifts it: the tip leans towards the force's side
    styled = cantilever(np.zeros((3, 3)), dirs, 0.5, 33, [3.0, 0.0, -9.81], 1e-6)
    lean = _tip(styled)
    np.testing.assert_allclose(lean, np.tile(np.array([3.0, 0.0, -9.81]) / np.hypot(3.0, 9.81), (3, 1)),
                               atol=1e-9)


def test_bad_input_names_the_strand():
    with pytest.raises(HairWigError, match="strand 1 has no start direction"):
        cantilever(np.zeros((2, 3)), [[1.0, 0, 0], [0, 0, 0]], 0.3, 8, [0, 0, -1.0], 1e-3)
    with pytest.raises(HairWigError, match="strand 0 has length"):
        cantilever(np.zeros((2, 3)), [1.0, 0, 0], [0.0, 0.3], 8, [0, 0, -1.0], 1e-3)
    with pytest.raises(HairWigError, match="stiffness must be > 0"):
        cantilever(np.zeros((2, 3)), [1.0, 0, 0], 0.3, 8, [0, 0, -1.0], 0.0)
