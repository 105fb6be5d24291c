"""The Rods core (seed 003's angular dynamics; numpy only, no bpy): a chain of rigid segments
whose bend angles follow the central-difference update, with eq. 6's style-preserving rest
angles."""

import numpy as np
import pytest

from hair_wig.errors import HairWigError
from hair_wig.rods import AngularRods, RodSettings, angles_of, build, root_normal


def _strands(num=5, n=9, seed=0):
    rng = np.random.default_rng(seed)
    roots = rng.normal(size=(num, 3))
    d = rng.normal(size=(num, n - 1, 3)) * 0.3 + np.array([1.0, 0.0, 0.5])
    d /= np.linalg.norm(d, axis=2, keepdims=True)
    return np.concatenate([roots[:, None], roots[:, None] + 0.05 * np.cumsum(d, axis=1)], axis=1)


def test_angles_and_forward_kinematics_are_inverse_and_lengths_exact():
    p = _strands()
    root_dir = p[:, 1] - p[:, 0]
    e1 = root_normal(root_dir)
    a = angles_of(p, root_dir, e1)
    back, _, _ = build(p[:, 0], root_dir, e1, a, np.full(len(p), 0.05))
    np.testing.assert_allclose(back, p, atol=1e-12)
    bent = a + 0.3
    q, _, _ = build(p[:, 0], root_dir, e1, bent, np.full(len(p), 0.05))
    np.testing.assert_allclose(np.linalg.norm(np.diff(q, axis=1), axis=2), 0.05, rtol=1e-12)


def test_small_oscillation_period_is_two_pi_over_root_beta_k():
    """One segment, no load, tipped by 1e-3 rad from its rest: it swings with period
    2π/√(βk) (seed 003) — within 1 % (measured from the zero crossings over 20 periods)."""
    beta, k = 50.0, 2.0
    rods = AngularRods(np.array([[[0.0, 0, 0], [0.0, 0, 0.1]]]), RodSettings(stiffness=k, beta=beta, damping=0.0,
                                                                                      courant=0.25))
    goal = np.array([[[0.0, 0, 0], [0.0, 0, 0.1]]])
    state = rods.initial_state(goal)
    state["angles"] = state["angles"] + np.array([1e-3, 0.0])
    state["last"] = state["angles"].copy()
    dt = 1 / 60
    trace = []
    for _ in range(int(20 * 2 * np.pi / np.sqrt(beta * k) / dt) + 10):
        rods.step(state, goal, dt, np.zeros(3))
        trace.append(state["angles"][0, 0, 0])
    x = np.array(trace)
    t = (np.arange(len(x)) + 1) * dt
    cross = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))
    tc = t[cross] + dt * x[cross] / (x[cross] - x[cross + 1])               # linear between samples
    period = np.diff(tc).mean()
    assert period == pytest.approx(2 * np.pi / np.sqrt(beta * k), rel=0.01)
    assert np.abs(x).max() == pytest.approx(1e-3, rel=0.01)                  # no damping: no loss


def test_the_style_is_the_equilibrium_under_gravity_for_100_frames():
    """Eq. 6: bound on a styled goal under gravity, the angles stay at their start to
    round-off for 100 frames (the hair does not sag); without eq. 6 (rest angles = the goal's)
    the same rods sag."""
    goal = _strands(20, 13, seed=3)
    rods = AngularRods(goal, RodSettings(stiffness=5.0, beta=100.0))
    state = rods.initial_state(goal)
    start = state["angles"].copy()
    for _ in range(100):
        pts = rods.step(state, goal, 1 / 24, np.array([0.0, 0.0, -9.81]))
    assert np.abs(state["angles"] - start).max() < 1e-9
    assert np.abs(pts - goal).max() < 1e-9
    sag = rods.initial_state(goal)
    rods.rest_angles = lambda g, r, e, load, k=None: sag["angles"].copy()      # no eq. 6
    for _ in range(24):
        pts = rods.step(sag, goal, 1 / 24, np.array([0.0, 0.0, -9.81]))
    assert np.abs(pts - goal).max() > 0.01


def test_displaced_it_comes_back_to_the_style_and_stays_stable_at_the_settings_maximum():
    goal = _strands(10, 9, seed=4)
    for settings, frames in ((RodSettings(), 96), (RodSettings(stiffness=1e4, beta=1e4, damping=1e3, max_substeps=16), 24)):
        rods = AngularRods(goal, settings)
        state = rods.initial_state(goal)
        state["angles"] = state["angles"] + 0.1
        state["last"] = state["angles"].copy()
        for _ in range(frames):
            pts = rods.step(state, goal, 1 / 24, np.array([0.0, 0.0, -9.81]))
            assert np.isfinite(pts).all()
            np.testing.assert_allclose(np.linalg.norm(np.diff(pts, axis=1), axis=2), 0.05, rtol=1e-9)
        if not rods.clamped:
            assert np.abs(pts - goal).max() < 1e-3               # back to the style
    # the second: √(βk) far past 16 substeps a frame: the stiffness is clamped, and it stays stable
    assert rods.clamped and np.abs(state["angles"]).max() < 10


def test_resume_is_bit_identical_and_bad_settings_name_themselves():
    goal = _strands(6, 7, seed=5)
    rods = AngularRods(goal, RodSettings())
    state = rods.initial_state(goal)
    state["angles"] += 0.2
    load = np.array([0.3, 0.0, -9.81])
    for _ in range(5):
        rods.step(state, goal, 1 / 24, load)
    saved = {k: v.copy() for k, v in state.items()}
    a = [rods.step(state, goal, 1 / 24, load) for _ in range(5)]
    b = [rods.step(saved, goal, 1 / 24, load) for _ in range(5)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    with pytest.raises(HairWigError, match="courant must stay below 2"):
        RodSettings(courant=2.5)
    with pytest.raises(HairWigError, match="stiffness must be > 0"):
        RodSettings(stiffness=0.0)
