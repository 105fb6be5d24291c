"""The Strands layer's substep kernel (hair_wig/kernels/verlet.py) against the plain numpy
substeps it replaced (``VerletStrands._substeps_numpy``, still Jakobsen's path): random wavy
strands of several point counts (1-segment strands among them) pulled toward a moving goal, with
and without the bend, force-field accelerations, contacts with a plane and the static links —
and the same bits with 1 or 2 threads.

The kernel does the numpy code's float64 operations in the same order, point by point, and the
same follow-the-leader (``kernels.leader.place``): it gives the same bits where every segment is
sound, and differs by an ulp where a contact squashes one (the blended direction's roundings
differ). Each frame is stepped from the same state, and the comparison allows a frame's
roundings: a few eps64 of |x| per point placed, carried root to tip (FOLLOW per point), over its
8 substeps — not their growth over a run, which a chaotic system multiplies."""

import numpy as np
import pytest

from hair_wig.collision.contacts import SurfaceContacts
from hair_wig.dynamics import ForceField
from hair_wig.dynamics_layer import LayerFrame
from hair_wig import strands as strands_module
from hair_wig.strands import StrandSettings, VerletStrands
from test_kernels_contacts import _colliders as _contact_colliders
from test_kernels_contacts import _rest as _contact_rest
from test_kernels_contacts import _turn
from tolerance import AFFINE, EPS64, FOLLOW, NORM, magnitude, rounding

G = np.array([0.0, 0.0, -9.81])


def _groom(n, num, seed):
    rng = np.random.default_rng(seed)
    steps = rng.normal(size=(3, n - 1, num)) * 0.3 + np.array([0.0, 0.0, -1.0])[:, None, None]
    steps *= 0.05 / np.linalg.norm(steps, axis=0, keepdims=True)
    root = rng.normal(size=(3, 1, num))
    return np.ascontiguousarray(np.concatenate([root, root + steps.cumsum(axis=1)], axis=1))


def _floor(z):
    """A contact with the plane z = ``z``: how far points below it are pushed up."""
    def contact(x, _f):
        push = np.zeros_like(x)
        push[2] = np.maximum(z - x[2], 0.0)
        return push if push.any() else None
    return contact


def _wind(x, v):
    return np.broadcast_to(np.array([2.0, 0.0, 0.0])[:, None, None], x.shape) - 0.5 * v


@pytest.mark.parametrize("n", [2, 5, 16])
@pytest.mark.parametrize("case", ["plain", "no bend", "fields", "contacts", "links"])
def test_the_substep_kernel_is_the_numpy_substep(n, case):
    rest = _groom(n, 120, seed=n)
    settings = StrandSettings(bend=0.0 if case == "no bend" else 1000.0, links=2 if case == "links" else 0)
    accel = _wind if case == "fields" else None
    contact = _floor(float(np.median(rest[2]))) if case == "contacts" else None
    # a frame's 8 substeps, each placing n points root to tip (FOLLOW roundings a point, carried
    # on along the strand), of |x|
    tol = rounding(magnitude(rest, at_least=1.0), 8 * FOLLOW * n, eps=EPS64)
    if contact is not None:
        # a contact's give (``chain.give``: the least motion of the chain, a banded solve along
        # the strand) multiplies what comes in by its condition number, which grows as n² for a
        # chain of n points: n more than the walk's n
        tol *= n
    # each frame from the same state (the reference's), so what is compared is one frame's
    # roundings, not their growth over a chaotic run
    kernel, numpy_ = VerletStrands(rest, settings), VerletStrands(rest, settings)
    numpy_._substeps = numpy_._substeps_numpy
    state = numpy_.initial_state(rest, G)
    for f in range(6):
        goal = rest + np.array([0.05 * f, 0.0, 0.02 * f])[:, None, None]
        mine = {k: v.copy() for k, v in state.items()}
        got = kernel.step(mine, goal, 1 / 24, G, accel=accel, contact=contact)
        want = numpy_.step(state, goal, 1 / 24, G, accel=accel, contact=contact)
        for a, b in ((got, want), (mine["pos"], state["pos"]), (mine["prev"], state["prev"])):
            np.testing.assert_allclose(a, b, rtol=0, atol=tol)
    assert np.abs(want - rest).max() > 0.01               # the strands did move


def test_the_substep_kernel_gives_the_same_bits_on_one_and_two_threads():
    import numba

    rest = _groom(16, 300, seed=3)
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            strands = VerletStrands(rest, StrandSettings())
            state = strands.initial_state(rest, G)
            for f in range(4):
                out = strands.step(state, rest + 0.03 * f, 1 / 24, G)
            runs.append((out, state["pos"].copy(), state["prev"].copy()))
    finally:
        numba.set_num_threads(was)
    assert all(np.array_equal(a, b) for a, b in zip(*runs))


# ---------------------------------------------------------------- the colliders met inside the kernel
class _Between(SurfaceContacts):
    """The contacts met between one-substep launches (``VerletStrands._meet``: the contacts'
    own kernel, ``collision.contacts.respond``, ``chain.give``), as the layer met them before
    its kernel met them itself; counts every point and segment it pushed."""

    pushed = 0

    def substep_parts(self, shape, substeps):
        return None

    def __call__(self, x, f=1.0):
        out = super().__call__(x, f)
        self.pushed += self.touched
        return out


def _sweeping_head(hand, turn, frames=5):
    """Strands on a unit-sphere head that moves through them (the contacts' test's groom and
    colliders, with a hand beside it), pulled onto it by gravity: per frame the head's world →
    head-local maps (was, now) and the goal (3, N, S) world; the colliders, their strands' wig
    points and the rest (head-local). ``turn``: the head turns 0.15 rad a frame as it moves;
    else it only moves, by steps a power of two, so that its maps through the substeps
    (``SurfaceContacts._head_at``) are exact and every way of applying them gives the same
    bits."""
    rest = _contact_rest()
    cs, index = _contact_colliders(rest, hand)
    out = []
    was = np.eye(4)
    for f in range(1, frames + 1):
        head = _turn(0.15 * f, (0.03 * f, 0.0, -0.02 * f)) if turn else _turn(0.0, (2.0 ** -5 * f, 0.0, -2.0 ** -6 * f))
        goal = np.einsum("ij,jns->ins", head[:3, :3], rest) + head[:3, 3, None, None]
        now = np.linalg.inv(head)
        out.append((was, now, np.ascontiguousarray(goal)))
        was = now
    return rest, cs, index, out


def _fixed(settings):
    return (1 + bool(settings.root_direction)) if settings.pinned else 0


def _met_both_ways(hand, turn, settings, tol, accel=None, reference_accel=None):
    """Every frame of ``_sweeping_head`` stepped from the same state by the substeps that meet
    the colliders inside their kernel and by launches with the contacts between them, compared
    at ``tol``, with the force fields ``accel`` (``reference_accel``: the reference's, by default
    the same); returns the reference's contacts."""
    rest, cs, index, frames = _sweeping_head(hand, turn)
    fused, between = SurfaceContacts(cs, index, _fixed(settings)), _Between(cs, index, _fixed(settings))
    kernel, reference = VerletStrands(rest, settings), VerletStrands(rest, settings)
    state = reference.initial_state(rest, G)
    for was, now, goal in frames:
        mine = {k: v.copy() for k, v in state.items()}
        for c in (fused, between):
            c.move(was, now)
            c.begin()
        got = kernel.step(mine, goal, 1 / 24, G, accel=accel, contact=fused)
        want = reference.step(state, goal, 1 / 24, G, accel=reference_accel or accel, contact=between)
        for a, b in ((got, want), (mine["pos"], state["pos"]), (mine["prev"], state["prev"])):
            np.testing.assert_allclose(a, b, rtol=0, atol=tol)
    assert np.abs(want - goal).max() > 0.01                    # the strands did move
    assert fused.looked == between.looked
    return between


@pytest.mark.parametrize("hand, fields", [(False, False), (True, False), (True, True)])
def test_the_substep_kernel_meets_the_colliders_as_the_launches_between_them_did(hand, fields, monkeypatch):
    """The substeps that meet the colliders inside their kernel (``verlet_substeps_met``) against
    the same substeps launched one at a time with the contacts, their response and the chain's
    give between them, the head moving through strands gravity presses on it (and a hand beside
    it, reached through its own map; with force fields, whose accelerations need every strand,
    each substep its own launch, the contacts inside it). The head's maps are exact, so the two differ only in the
    response's normal (numpy's einsum against x² + y² + z²): a float64 rounding, carried as the
    substep kernel's own test carries it (8 substeps of n follow-the-leader steps, and the give's
    condition n more); each frame starts from the reference's state."""
    gave = []
    give = strands_module.give

    def counting(*args, **kwargs):
        at, moved = give(*args, **kwargs)
        gave.append(at.size)
        return at, moved

    monkeypatch.setattr(strands_module, "give", counting)
    settings = StrandSettings()
    rest = _contact_rest()
    n = rest.shape[1]
    tol = rounding(magnitude(rest, at_least=1.0), settings.substeps * FOLLOW * n, eps=EPS64) * n
    between = _met_both_ways(hand, False, settings, tol, _wind if fields else None)
    assert between.pushed > 500                                 # the head met the strands, often
    if hand:
        assert sum(gave) > 50                                   # and chains gave


def test_the_substep_kernel_meets_a_turning_head_as_the_launches_between_them_did():
    """As above, the head turning: its maps at the substeps are not exact, and numpy applies them
    by a matrix product (BLAS, which may fuse a product and a sum) where the kernel multiplies
    and adds — a float64 rounding of the head-local points, which reaches the float32 field's
    value where a coordinate lies at a float32 rounding's edge. A push is then off by the
    field's rounding (AFFINE + NORM in float32 of coordinates up to the hair's), up to twice at
    a segment's end, three pushes a point and collider — or by up to the collider's tolerance
    where a rounding decides whether a point counts as inside — and the give's condition (n)
    multiplies it. One substep a frame: a substep's offset becomes the next one's velocity, and
    over 8 the worst case grows 36 times past what a wrong turn of the push would show."""
    settings = StrandSettings(substeps=1)
    rest = _contact_rest()
    cs, _ = _contact_colliders(rest, True)
    n = rest.shape[1]
    mag = magnitude(rest, at_least=1.0)
    push = 2 * 3 * len(cs) * (rounding(mag, AFFINE + NORM) + max(c.tolerance for c in cs))
    tol = n * push + rounding(mag, FOLLOW * n, eps=EPS64) * n
    assert tol < 1e-3                          # a push turned the wrong way is millimetres off
    between = _met_both_ways(True, True, settings, tol)
    assert between.pushed > 200


def test_the_substep_kernel_meeting_colliders_gives_the_same_bits_on_one_and_two_threads():
    import numba

    rest, cs, index, frames = _sweeping_head(True, True)
    settings = StrandSettings()
    runs = []
    was_threads = numba.get_num_threads()
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            contacts = SurfaceContacts(cs, index, _fixed(settings))
            strands = VerletStrands(rest, settings)
            state = strands.initial_state(rest, G)
            for was, now, goal in frames:
                contacts.move(was, now)
                contacts.begin()
                out = strands.step(state, goal, 1 / 24, G, contact=contacts)
            runs.append((out, state["pos"].copy(), state["prev"].copy(), contacts.looked))
    finally:
        numba.set_num_threads(was_threads)
    assert all(np.array_equal(a, b) for a, b in zip(runs[0][:3], runs[1][:3]))
    assert runs[0][3] == runs[1][3]


def _scene_fields(time=0.3):
    """A wind, a turbulence and a drag as a scene's force fields: ``LayerFrame.accel``'s function
    (its fields packed for the kernel), and the same function without them (a plain function of
    every point, as a test's ``_wind``: met between one-substep launches)."""
    fields = [ForceField(np.array([0.0, -3.0, 0.0]), np.array([0.2, 1.0, 0.1]), 4.0, shape="PLANE", kind="WIND"),
              ForceField(np.array([0.1, 0.0, 0.3]), np.array([0.0, 0.0, 1.0]), 2.0, shape="POINT", kind="TURBULENCE",
                         size=0.3, seed=5, falloff_power=1.0, min_distance=0.2, max_distance=3.0),
              ForceField(np.zeros(3), np.array([0.0, 0.0, 1.0]), 1.0, kind="DRAG", linear_drag=0.7,
                         quadratic_drag=0.4)]
    frame = LayerFrame(1 / 24, time, G, fields, np.eye(4), np.eye(4), np.eye(4))
    packed = frame.accel()
    assert packed.packed[0].shape[0] == 3

    def plain(x, v):
        return packed(x, v)
    return packed, plain


@pytest.mark.parametrize("met", [False, True])
def test_force_fields_taken_inside_the_substep_kernel_give_the_launches_bits(met, monkeypatch):
    """The scene's force fields taken point by point inside the substep kernel (all of a frame's
    substeps one launch: ``kernels.verlet._fields`` with ``kernels.fields.accel_at``) against
    the same fields computed for every point between one-substep launches, as the layer did
    (``field_accel``, then the kernel): the same float64 operations in the same order, so the
    same bits — without colliders, and with a moving head the kernel meets inside it (against
    the contacts met between launches, at that test's own bound)."""
    packed, plain = _scene_fields()
    settings = StrandSettings()
    launches = []
    for name in ("verlet_substeps", "verlet_substeps_met"):
        kernel = getattr(strands_module, name)
        monkeypatch.setattr(strands_module, name, lambda *a, _k=kernel: (launches.append(a[6]), _k(*a))[1])
    if not met:
        rest = _groom(16, 200, seed=3)
        goal = rest + np.array([0.05, -0.02, 0.01])[:, None, None]
        fused, between = VerletStrands(rest, settings), VerletStrands(rest, settings)
        a, b = fused.initial_state(rest, G), between.initial_state(rest, G)
        for _ in range(3):
            launches.clear()
            got = fused.step(a, goal, 1 / 24, G, accel=packed)
            assert launches == [settings.substeps]               # the frame's substeps, one launch
            want = between.step(b, goal, 1 / 24, G, accel=plain)
            assert launches[1:] == [1] * settings.substeps        # one a substep
            assert got.tobytes() == want.tobytes()
            assert a["pos"].tobytes() == b["pos"].tobytes() and a["prev"].tobytes() == b["prev"].tobytes()
        assert np.abs(want - goal).max() > 1e-3                  # the fields moved the strands
        return
    rest = _contact_rest()
    n = rest.shape[1]
    tol = rounding(magnitude(rest, at_least=1.0), settings.substeps * FOLLOW * n, eps=EPS64) * n
    between = _met_both_ways(True, False, settings, tol, packed, reference_accel=plain)
    assert between.pushed > 500
    assert settings.substeps in launches                        # the fused frames: one launch each


@pytest.mark.parametrize("met, fields, pairs", [(False, False, True), (False, True, True), (True, False, True),
                                                (True, True, True), (True, False, False), (False, False, "VOLUME"),
                                                (True, True, "VOLUME")])
def test_hair_against_hair_inside_the_substep_kernel_gives_the_launches_bits(met, fields, pairs):
    """Hair against hair — the repulsion of segments of other strands closer than the diameter,
    found by the Verlet list, and the static links — taken inside the substeps' one launch
    (``kernels.verlet.hair_hair``) against a launch a substep with them computed between in
    numpy (``HAIR_IN_LAUNCH`` off, the reference): the same bits, frame after frame, the head
    moving and turning through the strands (with its colliders met inside the kernel, and the
    scene's force fields: packed inside, the same fields as a plain function between), the list
    kept and searched again alike; with the links alone (no pairs), the same; with the hair felt
    as a volume (its grid in the head's frame, friction and push), the same."""
    volume = pairs == "VOLUME"
    rest, cs, index, frames = _sweeping_head(True, volume)
    settings = StrandSettings(hair_hair=bool(pairs), diameter=0.03, links=2)
    if volume:
        # a push strong enough to move strands packed by the head within a frame
        settings = StrandSettings(hair_hair=True, hair_hair_method="VOLUME", diameter=0.03, links=2,
                                  repulsion=2000.0, hair_friction=0.5)
    packed, plain = _scene_fields() if fields else (None, None)
    kernel, reference = VerletStrands(rest, settings), VerletStrands(rest, settings)
    reference.HAIR_IN_LAUNCH = False
    both = [SurfaceContacts(cs, index, _fixed(settings)) for _ in range(2)] if met else [None, None]
    mine = kernel.initial_state(rest, G)
    state = reference.initial_state(rest, G)
    acted = touched = 0
    for was, now, goal in frames:
        for c in both:
            if c is not None:
                c.move(was, now)
                c.begin()
        got = kernel.step(mine, goal, 1 / 24, G, accel=packed, contact=both[0], frame=now)
        want = reference.step(state, goal, 1 / 24, G, accel=plain, contact=both[1], frame=now)
        for a, b in ((got, want), (mine["pos"], state["pos"]), (mine["prev"], state["prev"])):
            assert np.array_equal(a, b)
        assert kernel.pairs == reference.pairs
        acted += kernel.pairs
        touched += both[0].touched if met else 0
        if volume:
            assert kernel.volume.nodes == reference.volume.nodes > 0
    if volume:
        # the volume acted: the same frames without it end elsewhere
        plain_layer = VerletStrands(rest, StrandSettings(hair_hair=False, diameter=0.03, links=2))
        other = plain_layer.initial_state(rest, G)
        c = SurfaceContacts(cs, index, _fixed(settings)) if met else None
        for was, now, goal in frames:
            if c is not None:
                c.move(was, now)
                c.begin()
            away = plain_layer.step(other, goal, 1 / 24, G, accel=packed, contact=c, frame=now)
        assert np.abs(away - got).max() > 0.01                # by centimetres (0.19–0.25 here)
    elif pairs:
        assert kernel.contacts.searches == reference.contacts.searches
        assert kernel.contacts.served == reference.contacts.served
        assert acted > 0                                        # strands pushed each other
    assert kernel.link_a.size                                   # and links pulled
    assert np.abs(want - goal).max() > 0.01                    # the strands did move
    if met:
        assert both[0].looked == both[1].looked and touched > 0      # the head met the strands
