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


def test_a_curl_round_a_straight_axis_has_the_radius_and_pitch_set():
    """Wound round a straight axis, each point lies exactly the radius from it, and the curl
    climbs the axis by its length over the turns per turn (the pitch); a radius of 0 at the root
    keeps the root where it grows."""
    from hair_wig.styling import curl

    n, turns, length, r = 121, 4.0, 0.4, 0.02
    axis = np.zeros((2, n, 3))
    axis[0, :, 2] = np.linspace(0, length, n)                     # straight up
    axis[1, :, 0] = np.linspace(0, length, n)                     # sideways
    radius = np.full(n, r)
    radius[0] = 0.0
    p = curl(axis, radius, turns, phase=[0.0, 1.0])
    np.testing.assert_array_equal(p[:, 0], axis[:, 0])
    away = p - axis
    np.testing.assert_allclose(np.linalg.norm(away[:, 1:], axis=2), r, rtol=1e-12)
    along = np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])
    for s in range(2):
        np.testing.assert_allclose(away[s] @ along[s], 0.0, atol=1e-12)   # square to the axis
        # the angle round the axis, unwrapped: it grows by 2π per pitch = length / turns
        e1 = away[s, 1] / np.linalg.norm(away[s, 1])
        e2 = np.cross(along[s], e1)
        angle = np.unwrap(np.arctan2(away[s, 1:] @ e2, away[s, 1:] @ e1))
        height = axis[s, 1:] @ along[s]
        np.testing.assert_allclose(np.diff(angle) / np.diff(height), 2 * np.pi * turns / length, rtol=1e-9)
    # round a styled (bent) axis the curl keeps its radius, square to the axis's direction
    bent = cantilever(np.zeros((3, 3)), [[1.0, 0, 0], [0, 1.0, 0.5], [0, 0, 1.0]], 0.5, 41,
                      [0.5, 0.0, -9.81], 1e-4)
    c = curl(bent, 0.015, [3.0, 5.0, 2.0])
    np.testing.assert_allclose(np.linalg.norm(c - bent, axis=2), 0.015, rtol=1e-12)
    assert np.isfinite(c).all()


def _sphere_roots(num, seed=5):
    """Roots on the unit sphere's upper part (from the crown down to 30° below the equator)."""
    rng = np.random.default_rng(seed)
    z = rng.uniform(-0.5, 1.0, num)
    a = rng.uniform(0, 2 * np.pi, num)
    ring = np.sqrt(1 - z * z)
    return np.stack([ring * np.cos(a), ring * np.sin(a), z], axis=1)


def test_styled_on_a_head_the_hair_lies_over_it_and_crown_hair_over_lower_hair():
    """Soft hair grown along the scalp's normals under gravity, styled with the head (a unit
    sphere) pushing it out: no point ends inside its layer, lengths stay exact, and with layered
    volume each strand lies on its own shell — the crown's highest — so where a crown strand
    covers a lower one it lies outside it."""
    from hair_wig.styling import layer_offsets

    roots = _sphere_roots(200)
    offset = layer_offsets(roots, [0, 0, 1], 0.05)
    assert offset.max() == pytest.approx(0.05) and offset.min() == 0.0

    def head(points, k):
        r = np.linalg.norm(points, axis=1, keepdims=True)
        shell = 1.0 + offset[:, None]
        return np.where(r < shell, points * shell / r, points)

    p = cantilever(roots, roots, 0.8, 33, [0.0, 0.0, -9.81], 1e-5, collide=head)
    seg = np.linalg.norm(np.diff(p, axis=1), axis=2)
    np.testing.assert_allclose(seg, 0.8 / 32, rtol=1e-12)
    r = np.linalg.norm(p[:, 1:], axis=2)
    assert np.all(r >= 1.0 - 1e-9)                                      # nothing inside the head
    # outside its own shell once the strand has climbed to it from the scalp (a few segments)
    climbed = np.arange(1, 33) * (0.8 / 32) >= 3 * offset[:, None]
    assert np.all(r[climbed] >= (1.0 + offset[:, None] - 1e-5)[climbed.nonzero()[0], 0])
    on_head = np.abs(r - (1.0 + offset[:, None])) < 1e-3                # lying on it
    assert on_head.sum() > 500                                          # the hair does lie on the head
    # a crown strand's points lying on the head are farther out than those of the lowest strand
    # that lies on it, by the difference of their layers
    lying = np.flatnonzero(on_head.sum(axis=1) >= 5)
    crown, low = lying[np.argmax(offset[lying])], lying[np.argmin(offset[lying])]
    assert offset[crown] - offset[low] > 0.03
    assert r[crown][on_head[crown]].min() > r[low][on_head[low]].max() + offset[crown] - offset[low] - 2e-3
    # without a head, the same hair falls through where the head is
    free = cantilever(roots, roots, 0.8, 33, [0.0, 0.0, -9.81], 1e-5)
    assert (np.linalg.norm(free, axis=2) < 0.99).any()
