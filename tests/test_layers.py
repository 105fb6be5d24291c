"""The dynamics-layer contract (SPEC §8, hair_wig/dynamics_layer.py), run for every layer in the
registry (``hair_wig.layers.LAYERS``) rather than one copy per solver: at rest the groom, lengths
kept, nothing inside the head, dynablend 0 the goal, a saved state resumes bit for bit, and 1 or 2
threads give the same bits with collision, force fields and hair–hair on. A new layer registered
is tested by this file without a line added to it. Plus what the interface newly gives the
Springs: they feel the scene's force fields, checked against the damped spring's closed form."""

from dataclasses import fields, replace

import numpy as np
import pytest

from hair_wig import FrameInput, ForceField, Magnet, Wig, WigSettings
from hair_wig.collision import exact_signed_distance
from hair_wig.dynamics_layer import settings_fields
from hair_wig.layers import LAYERS, keyed_props, layer_for
from hair_wig.springs import SpringSettings
from test_strands import G, _turn, _wig_hair
from test_wig_core import numba_threads, sphere_mesh
from tolerance import AFFINE, FOLLOW, SEGMENT, magnitude, rounding

HEAD = sphere_mesh(0.98)
KEYS = list(LAYERS)


def _wig(key, hair=None, threads=1, collision=True, **over):
    hair = _wig_hair(sizes=(10, 6)) if hair is None else hair
    settings = replace(LAYERS[key].SETTINGS(), **over)
    wig = Wig(hair, np.eye(4), np.eye(4), [Magnet("Drag", np.eye(4), radius=3.0)],
              WigSettings(dynamics=settings, use_collision=collision), head_mesh=HEAD if collision else None,
              threads=threads)
    return hair, wig


def _frames(n=20, turn=0.8, drag=0.0, forces=()):
    """The head turns by ``turn`` over 8 frames and stops; the magnet pulls the hair ``drag`` down
    (through the head: collision) over 8 frames."""
    out = []
    for f in range(n):
        m = np.eye(4)
        m[2, 3] = -drag * min(f, 8) / 8
        out.append(FrameInput(np.eye(4), _turn(turn * min(f, 8) / 8), np.array([m]), time=f / 24, gravity=G,
                              forces=list(forces)))
    return out


def _wind():
    return [ForceField(np.zeros(3), np.array([1.0, 0.0, 0.0]), 6.0),
            ForceField(np.zeros(3), np.array([0.0, 0.0, 1.0]), 3.0, kind="TURBULENCE", size=0.3, seed=4)]


def _bake(wig, inputs, state=None):
    frames = []
    for inp in inputs:
        out, state = wig.step(inp, state)
        frames.append(out.copy())
    return frames, state


def test_every_layer_is_registered_with_what_the_panel_and_the_reader_need():
    """Each layer names its key, label, settings and keyed settings; every keyed setting is a
    setting an artist sets; every setting names a property of its own (one shared: Friction)."""
    assert KEYS[0] == "SPRINGS" and {"SPRINGS", "STRANDS", "RODS"} <= set(KEYS)
    props = {}
    for key, layer in LAYERS.items():
        assert layer.KEY == key and layer.LABEL and layer.DESCRIPTION
        names = {f.name for f in fields(layer.SETTINGS)}
        assert "dynablend" in names and set(layer.KEYED) <= names
        assert set(keyed_props(layer)) == set(layer.KEYED)
        assert layer_for(layer.SETTINGS()) is layer
        for f in settings_fields(layer.SETTINGS):
            if "prop" in f.metadata:
                props.setdefault(f.metadata["prop"], set()).add(key)
    assert {p for p, owners in props.items() if len(owners) > 1} == {"strands_friction"}


@pytest.mark.parametrize("key", KEYS)
def test_at_rest_every_layer_shows_the_groom(key):
    """Nothing moves but gravity, which the groom was combed under: every frame is the groom. Each
    frame the goal goes into the layer's space and back (1 + 7 roundings), the length walk
    re-places points root to tip (FOLLOW each, up to 10), and the store (1); of |x|."""
    hair, wig = _wig(key)
    held = rounding(magnitude(hair.points), 2 * AFFINE + 1 + FOLLOW * int(hair.counts.max()))
    frames, _ = _bake(wig, _frames(30, turn=0.0))
    for out in frames:
        np.testing.assert_allclose(out, hair.points, rtol=0, atol=held)


@pytest.mark.parametrize("key", KEYS)
def test_every_layer_keeps_lengths_and_leaves_nothing_inside_the_head(key):
    """The head turns and a magnet drags the hair down through it: every segment keeps its length
    (refinement's per-segment follow-the-leader: its step (SEGMENT) and the store at each end, of
    |x| over the shortest segment), and no point but the roots is inside the head, by exact
    distance, deeper than what the wig reports (``penetration``, measured on what it holds: to the
    roundings of the map to the object and back, AFFINE + 1 of |x|), which stays within the
    collision's allowance (1e-3 of the head's size, as tests/test_grooms.py holds real grooms to;
    measured: at most 3.7e-5 here)."""
    hair, wig = _wig(key)
    inputs = _frames(20, drag=0.8, forces=_wind())
    t = hair.vertex_t()
    rest = np.linalg.norm(np.diff(hair.points.astype(np.float64), axis=0), axis=1)[t[1:] > 0]
    state = None
    for f, inp in enumerate(inputs):
        out, state = wig.step(inp, state)
        seg = np.linalg.norm(np.diff(out.astype(np.float64), axis=0), axis=1)[t[1:] > 0]
        kept = rounding(magnitude(out) / rest.min(), SEGMENT + 2)
        assert np.abs(seg / rest - 1).max() <= kept, (f, np.abs(seg / rest - 1).max())
        head = inp.head_matrix           # the head's mesh is where the head is (the hair's object at rest)
        local = (out[t > 0].astype(np.float64) - head[:3, 3]) @ head[:3, :3]
        depth = -exact_signed_distance(local, *HEAD).min()
        assert depth <= wig.penetration + rounding(magnitude(out), AFFINE + 1), (f, depth, wig.penetration)
        assert wig.penetration <= 1e-3 * 2 * 0.98, (f, wig.penetration)
    frames = [out]
    moved = np.linalg.norm(frames[-1] - hair.points, axis=1)
    assert moved[t == 1].mean() > 0.05            # the drag and the turn did move the hair


@pytest.mark.parametrize("key", KEYS)
def test_dynablend_zero_shows_the_goal(key):
    """Dynablend 0: the wig shows what it shows without a dynamics layer — the goal into the
    layer's space and back (1 + 7 roundings) before refinement, whose walk (FOLLOW a point, up to
    10) then rounds its own way in each wig; of |x|."""
    hair, still = _wig(key, dynablend=0.0)
    plain = Wig(hair, np.eye(4), np.eye(4), [Magnet("Drag", np.eye(4), radius=3.0)],
                WigSettings(dynamics=None, use_collision=True), head_mesh=HEAD)
    inputs = _frames(16, forces=_wind())
    a, _ = _bake(still, inputs)
    b, _ = _bake(plain, inputs)
    for f, (x, y) in enumerate(zip(a, b)):
        np.testing.assert_allclose(x, y, rtol=0, atol=rounding(magnitude(y), AFFINE + 1 + 2 * FOLLOW * 10))
    _, free = _wig(key)
    c, _ = _bake(free, inputs)
    assert np.abs(c[-1] - a[-1]).max() > 0.01     # with dynablend 1 the layer does show


@pytest.mark.parametrize("key", KEYS)
def test_every_layer_resumes_from_a_saved_state_bit_for_bit(key):
    hair, wig = _wig(key)
    inputs = _frames(16, drag=0.5, forces=_wind())
    frames, state = [], None
    for f, inp in enumerate(inputs):
        out, state = wig.step(inp, state)
        frames.append(out.copy())
        if f == 7:
            saved = state.copy()
    _, again = _wig(key)
    resumed, state2 = _bake(again, inputs[8:], saved)
    assert all(np.array_equal(x, y) for x, y in zip(resumed, frames[8:])) and state2 == state


@pytest.mark.parametrize("key", KEYS)
def test_every_layer_gives_the_same_bits_on_one_and_two_threads(key):
    """Collision, force fields (wind and turbulence) and, where the layer has it, hair–hair on:
    the kernels on two numba threads give the bits of one."""
    extra = {"hair_hair": True, "diameter": 0.05, "links": 2} if key == "STRANDS" else {}
    inputs = _frames(12, drag=0.5, forces=_wind())
    runs = []
    for threads in (1, 2):
        with numba_threads(threads):
            _, wig = _wig(key, threads=threads, **extra)
            runs.append(_bake(wig, inputs))
    (one, s1), (two, s2) = runs
    assert all(np.array_equal(x, y) for x, y in zip(one, two)) and s1 == s2


def test_springs_feel_a_wind_as_a_damped_spring_does():
    """A steady wind on the Springs layer (its force fields, SPEC §8): each point's spring is a
    damped oscillator driven by a constant acceleration a from rest, whose deviation is
    ``y(t) = a/ω₀² (1 − e^{−ζω₀t} (cos ω_d t + ζω₀/ω_d sin ω_d t))``; shown it is scaled by the
    point's blend. The layer steps it exactly (``dynamics.forced_coefficient``), so the shown
    offset from the same bake without wind follows the closed form frame by frame, settling at
    a m / k. float32 springs: a handful of roundings of |y| a frame, carried over 48 frames."""
    hair = _wig_hair(strands=8, sizes=(6,))
    k, r = 60.0, 4.0
    settings = SpringSettings(stiffness=k, damping=r, random=0.0)
    wind = ForceField(np.zeros(3), np.array([1.0, 0.0, 0.0]), 2.0)
    runs = []
    for forces in ((), (wind,)):
        wig = Wig(hair, np.eye(4), np.eye(4), [], WigSettings(dynamics=settings, use_collision=False,
                                                               use_length=False))
        runs.append(_bake(wig, [FrameInput(np.eye(4), np.eye(4), time=f / 24, forces=list(forces))
                                for f in range(48)])[0])
    a = 2.0 / settings.mass
    w0 = np.sqrt(k / settings.mass)
    zeta = r / (2 * np.sqrt(k * settings.mass))
    wd = w0 * np.sqrt(1 - zeta ** 2)
    blend = settings.blend_profile(hair.vertex_t()).astype(np.float64)
    blend[hair.vertex_t() == 0] = 0.0
    for f in range(48):
        t = f / 24        # the first frame is at rest; the wind acts from it on
        y = a / w0 ** 2 * (1 - np.exp(-zeta * w0 * t) * (np.cos(wd * t) + zeta * w0 / wd * np.sin(wd * t)))
        shown = (runs[1][f] - runs[0][f]).astype(np.float64)
        want = np.zeros_like(shown)
        want[:, 0] = blend * y
        tol = rounding(magnitude(hair.points) + a / w0 ** 2, 8 * (f + 1))
        np.testing.assert_allclose(shown, want, rtol=0, atol=tol, err_msg=f"frame {f}")
    assert abs(y - a / w0 ** 2) < 0.01 * a / w0 ** 2      # settled downwind by a m / k
