"""Style Hair's core (seed 003, SPEC §7 "003"): strands bent as cantilevers under gravity and
styling forces (numpy only, no bpy)."""

import numpy as np
import pytest

from hair_wig.errors import HairWigError
from hair_wig.profiles import Profile
from hair_wig.styling import cantilever
from tolerance import EPS64, NORM, magnitude, rounding

# Style Hair's core is float64. Its 1e-9 checks (a soft strand along its load, angles, the
# scaled groom) sit far above float64's rounding and far below a wrong shape (millimetres);
# those of exact lengths, radii and right angles are derived: a length or a radius read from
# coordinates rounds like the coordinates, |x|, so relative to it the rounding grows as |x| / L.


def kept(points, length, ends=2, unit=2 * NORM):
    """Relative rounding of a length ``length`` measured between two float64 points up to
    |points|: each end rounded once when placed (``ends``), and the unit direction it was built
    along and its norm measured here (``unit``)."""
    return rounding(magnitude(points) / length, ends, eps=EPS64) + rounding(1.0, unit, eps=EPS64)


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
    # linear to slope² ~ 1e-11 and float64 rounding over 64 segments of a micro-deflection
    # (1e-8 relative): 1e-4 is far above both and far below a load that is not linear (1)
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
    np.testing.assert_allclose(seg, np.repeat((lengths / 24)[:, None], 24, axis=1),
                               rtol=kept(p, lengths.min() / 24))


def test_soft_hair_comes_to_rest_along_its_load_and_never_past_it():
    """However soft, a strand turns towards its load and stops there (the moment vanishes along
    it): strands grown sideways under gravity hang straight down at the tip, the angle to the
    load falling monotonically from root to tip."""
    dirs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.3], [-1.0, 0.5, -0.2]])
    p = cantilever(np.zeros((3, 3)), dirs, 0.5, 33, [0.0, 0.0, -9.81], 1e-6)
    np.testing.assert_allclose(_tip(p), np.tile([0.0, 0.0, -1.0], (3, 1)), atol=1e-9)
    seg = np.diff(p, axis=1)
    cos = -seg[..., 2] / np.linalg.norm(seg, axis=2)
    # each cosine from a segment whose ends round (2 of |x|), its norm and the division (5),
    # two of them differenced: relative to the segment, float64
    assert np.all(np.diff(cos, axis=1) >= -2 * kept(p, 0.5 / 32, unit=NORM + 1))
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
    # a point: the axis plus r (cos e1 + sin e2) (the frame's unit vectors, the sine and cosine:
    # ~8 roundings of 1), and p − axis here: 2 roundings of |x| relative to r
    np.testing.assert_allclose(np.linalg.norm(away[:, 1:], axis=2), r, rtol=kept(p, r, unit=8 + NORM))
    along = np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])
    for s in range(2):
        np.testing.assert_allclose(away[s] @ along[s], 0.0,                 # square to the axis
                                   atol=rounding(magnitude(p), 4, eps=EPS64))
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
    np.testing.assert_allclose(np.linalg.norm(c - bent, axis=2), 0.015, rtol=kept(c, 0.015, unit=8 + NORM))
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
    np.testing.assert_allclose(seg, 0.8 / 32, rtol=kept(p, 0.8 / 32))
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


def test_grown_roots_lie_on_the_chosen_faces_with_their_uv_and_the_density_set():
    """A plane of 8 x 8 quads in x, y (UV = x, y): the count is density x weighted area, roots lie
    on faces of weight > 0 only, their UV is where they are, normals the plane's; the same seed
    gives the same roots."""
    from hair_wig.styling import grow_roots

    g = np.stack(np.meshgrid(np.linspace(0, 1, 9), np.linspace(0, 1, 9), indexing="ij"), -1).reshape(-1, 2)
    verts = np.c_[g, np.zeros(len(g))]
    i, j = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    a = (i * 9 + j).ravel()
    tris = np.concatenate([np.stack([a, a + 9, a + 10], 1), np.stack([a, a + 10, a + 1], 1)])
    tri_uv = verts[tris][:, :, :2]
    weight = np.where(verts[tris][:, :, 0].mean(axis=1) < 0.5, 1.0, 0.0)      # the left half
    roots, normals, uv, at = grow_roots(verts, tris, 2000, seed=4, weight=weight, tri_uv=tri_uv)
    assert len(roots) == 1000                                 # 2000 per unit area x 0.5
    # a root is Σ bary · corner (3 products, 2 sums of coordinates <= 1, float64); its UV the
    # same sum over the corners' UVs, in its own order: twice that
    on_face = rounding(magnitude(verts), 5, eps=EPS64)
    assert np.all(roots[:, 0] <= 0.5 + on_face) and np.all(weight[at] == 1)
    np.testing.assert_allclose(uv, roots[:, :2], atol=2 * on_face)
    np.testing.assert_allclose(np.abs(normals[:, 2]), 1.0)
    again = grow_roots(verts, tris, 2000, seed=4, weight=weight, tri_uv=tri_uv)[0]
    np.testing.assert_array_equal(roots, again)
    # spread evenly: each of the 32 weighted quads (two triangles each) holds about its share, 31
    per_quad = np.bincount(at % 64, minlength=64)[weight[:64] == 1]
    assert per_quad.min() > 10 and per_quad.max() < 60
    with pytest.raises(HairWigError, match="no roots"):
        grow_roots(verts, tris, 2000, weight=np.zeros(len(tris)))


def test_curl_moments_turn_square_to_the_axis_grow_to_the_tip_and_stop_at_a_flat_coil():
    """The rotating force's moments: square to the strand's axis, −F/ω² along the load (F
    growing from the root, ω = 2π turns / L), turning the turns set root to tip, held at EI ω
    (κ = ω, the flat coil) past it; Turns 0 is refused by name."""
    from hair_wig.styling import curl_moments, slope_stations

    axis = np.zeros((2, 41, 3))
    axis[0, :, 2] = axis[1, :, 0] = np.linspace(0.0, 0.5, 41)                 # along z and along x
    d = np.array([[0, 0, 1.0], [1.0, 0, 0]])
    ei = np.full(40, 0.01)
    w = curl_moments(axis, 2.0, 3.0, ei)
    assert w.shape == (2, 40, 3)
    # built on the carried frame's unit vectors (cross products, normalisation, sine and cosine:
    # ~8 roundings), dotted here (5), of moments up to F / ω² (float64)
    omega = 2 * np.pi * 3.0 / 0.5
    t = slope_stations(40)
    size = 2.0 * t / omega ** 2
    np.testing.assert_allclose(np.einsum("smk,sk->sm", w, d), 0, atol=rounding(size.max(), 13, eps=EPS64))
    np.testing.assert_allclose(np.linalg.norm(w, axis=2), size[None].repeat(2, 0), rtol=rounding(1.0, 8 + NORM + 1, eps=EPS64))
    # the load's angle about the strand climbs 3 turns root to tip
    e = w[0] / np.linalg.norm(w[0], axis=1, keepdims=True)
    ang = np.unwrap(np.arctan2(e[:, 1], e[:, 0]))
    # two arctan2 of normalised float64 vectors (8 roundings each) of angles up to 3 turns
    assert abs(abs(ang[-1] - ang[0]) - 2 * np.pi * 3 * (t[-1] - t[0])) <= rounding(2 * np.pi * 3, 16, eps=EPS64)
    # a force past the flat coil (κ = F / (EI ω²) > ω) is held there: |M| = EI ω
    strong = curl_moments(axis, 1e4, 3.0, ei)
    # EI ω times a unit vector (normalised: 8 roundings) and its norm (NORM), float64
    assert np.linalg.norm(strong, axis=2)[0, -1] == pytest.approx(0.01 * omega, rel=rounding(1.0, 8 + NORM, eps=EPS64))
    with pytest.raises(HairWigError, match="Rotating Force needs Turns above 0"):
        curl_moments(axis, 2.0, 0.0, ei)


@pytest.mark.parametrize("points", [61, 121])
def test_the_rotating_force_curls_a_strand_into_the_seeds_helix(points):
    """Issue 34 (part 10). A rod (no twisting moment) under a load F per unit length turning at
    ω = 2π turns / L about a straight axis is in balance as a helix of curvature κ = F / (EI ω²),
    torsion √(ω² − κ²), radius κ / ω², ``turns`` turns over the strand (seed 003's rotating
    force; the Kirchhoff equations, ``curl_moments``). Styled weightless at the default Curl
    Force (80 gravities at the tip, Turns 3, Stiffness 0.02: κ / ω = 0.6 there, a visible curl),
    the strand's curvature at every joint is the closed form's for the load there. (Before, the
    far loads' moments, summed with straight lever arms, bent it to one side: curvature 17 /m at
    the root and 0.04 /m at the tip against 37 /m, 25 cm off its axis.)"""
    from hair_wig.styling import style_strands

    length, turns, stiffness, strength = 0.3, 3.0, 0.02, 80.0
    p = style_strands(np.zeros((1, 3)), [[0.0, 0.0, -1.0]], [length], [points], gravity=np.zeros(3),
                      stiffness=stiffness, curl_force=strength, curl_turns=turns, tilt=0.0)
    seg = np.diff(p, axis=0)
    step = length / (points - 1)
    u = seg / np.linalg.norm(seg, axis=1, keepdims=True)
    kappa = np.arccos(np.clip(np.einsum("ik,ik->i", u[1:], u[:-1]), -1, 1)) / step       # joints 1 … m − 1
    x = np.arange(1, points - 1) * step
    omega = 2 * np.pi * turns / length
    ei = stiffness * 9.81 * length ** 3
    closed = strength * 9.81 * (x / length) / (ei * omega ** 2)
    assert closed.max() / omega == pytest.approx(0.6, abs=0.02)
    # The march turns segment k by |T × W| l / EI = κ l √(1 − c²), c = T_{k−1} · Ŵ_k: on the helix
    # (tilt sin α = κ / ω) the load at the joint leads the segment before it by half a segment,
    # ω l / 2 of its turn, so c ≤ (κ/ω) sin(ω l / 2); a load growing from 0 at the root leaves the
    # helix's axis off the start direction by at most 2 κ' / ω² (κ' = dκ/dx: the integral of the
    # growing load's turning, ∫ κ' s e^{iωs} ds, leaves −κ' (1 − cos ωs) / ω² along the load). The
    # curvature falls short by 1 − √(1 − c²) ≤ c² (c² ≤ ¾), never over (the arccos here rounds
    # ~1e-15 of angles ~0.1)
    c = (closed / omega) * np.sin(omega * step / 2) + 2 * (closed[-1] / x[-1]) / omega ** 2
    # the measured angle's own rounding: the unit tangents carry the march's roundings of
    # coordinates up to |p| over a segment (2 NORM each, float64), and arccos turns the dot
    # product's 8 roundings into 8 eps / sin θ of angle
    angle_tol = rounding(magnitude(p) / step, 2 * NORM, eps=EPS64) + rounding(1.0, 8, eps=EPS64) / np.sin(closed * step)
    assert np.all(kappa <= closed + angle_tol / step)
    assert np.all(kappa >= closed * (1 - c ** 2))
    # and the tangent winds round the axis as the load does: over the tip half, the turns set
    # for it, give or take where the drifting axis leaves the tangent (asin(2 / (ω x)) at each end)
    half = np.arange((points - 1) // 2, points - 1)
    azimuth = np.unwrap(np.arctan2(u[half, 1], u[half, 0]))
    wound = abs(azimuth[-1] - azimuth[0])
    assert wound == pytest.approx(omega * step * (len(half) - 1), abs=2 * np.arcsin(2 / (omega * length / 2)))


def test_curl_turns_profile_places_the_turns_and_keeps_their_count():
    """Turns only on the tip half (profile 0 then 1): the root half does not wind, and the turns
    still add up to the number set."""
    from hair_wig.styling import curl

    axis = np.zeros((1, 201, 3))
    axis[0, :, 2] = np.linspace(0, 1, 201)
    step = Profile(((0.0, 0.0), (0.499, 0.0), (0.501, 1.0), (1.0, 1.0)), "LINEAR", "turns")
    c = curl(axis, 0.01, 4.0, 0.0, step)
    ang = np.unwrap(np.arctan2(c[0, :, 1], c[0, :, 0]))
    assert abs(ang[95] - ang[0]) < 1e-3                                # the root half: still
    assert abs(ang[-1] - ang[0]) == pytest.approx(2 * np.pi * 4, rel=1e-3)


def test_style_strands_keeps_lengths_mixed_counts_and_looks_the_same_at_any_scale():
    """Mixed point counts are styled in one call, curve after curve; every segment has its
    length; an upright strand under gravity falls to a side (the seeded tilt) rather than
    standing as a column; a groom ten times bigger is the same shape ten times bigger (relative
    stiffness)."""
    from hair_wig.styling import style_strands

    roots = np.array([[0.0, 0, 0], [1.0, 0, 0], [2.0, 0, 0]])
    dirs = np.array([[0, 0, 1.0], [1.0, 0, 0], [0, 1.0, 1.0]])
    counts = np.array([33, 17, 9])
    g = [0, 0, -9.81]
    p = style_strands(roots, dirs, [0.4, 0.5, 0.3], counts, gravity=g, stiffness=0.01, seed=2)
    off = np.r_[0, np.cumsum(counts)]
    for s, length in enumerate([0.4, 0.5, 0.3]):
        strand = p[off[s]:off[s + 1]]
        np.testing.assert_allclose(strand[0], roots[s])
        np.testing.assert_allclose(np.linalg.norm(np.diff(strand, axis=0), axis=1), length / (counts[s] - 1),
                                   rtol=kept(strand, length / (counts[s] - 1)))
    upright = p[off[0]:off[1]]
    assert upright[-1, 2] < 0.2                                          # fell over
    big = style_strands(10 * roots, dirs, [4.0, 5.0, 3.0], counts, gravity=g, stiffness=0.01, seed=2)
    np.testing.assert_allclose(big, 10 * p, atol=1e-9)


def test_style_strands_leans_toward_a_place_and_curls_round_its_axis():
    """A force toward a point (evaluated where the strand is, styled again) leans the hair to it;
    a helix curl keeps its radius from the styled axis."""
    from hair_wig.styling import style_strands

    roots = np.array([[0.0, 0, 0]])
    target = np.array([1.0, 0.0, 0.5])

    def toward(mid):
        v = target - mid
        return 3.0 * v / np.linalg.norm(v, axis=-1, keepdims=True)

    plain = style_strands(roots, [[0, 0, 1.0]], 0.6, [25], gravity=[0, 0, -9.81], stiffness=0.2)
    lean = style_strands(roots, [[0, 0, 1.0]], 0.6, [25], gravity=[0, 0, -9.81], stiffness=0.2,
                         force_at=toward)
    assert np.linalg.norm(lean[-1] - target) < np.linalg.norm(plain[-1] - target) - 0.1
    curled = style_strands(roots, [[0, 0, 1.0]], 0.6, [49], gravity=[0, 0, -9.81], stiffness=0.2,
                           curl_radius=0.02, curl_turns=4)
    axis = style_strands(roots, [[0, 0, 1.0]], 0.6, [49], gravity=[0, 0, -9.81], stiffness=0.2)
    np.testing.assert_allclose(np.linalg.norm(curled - axis, axis=1), 0.02, rtol=1e-9)
