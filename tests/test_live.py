"""Live dynamics' frame cache and stepper in the core (issue 37; hair_wig/live.py): frames shown as
the timeline plays equal a bake's bit for bit, scrubbing back costs no step, a setting changed at a
frame recomputes from there and equals a fresh bake with it, and the memory budget holds. No bpy;
Blender's side is tested in tests/test_live_blender.py."""

import numpy as np
import pytest

from hair_wig.errors import HairWigError
from hair_wig.live import FrameCache, LiveStepper, state_bytes, wig_step
from test_layers import _bake, _frames, _wig

N = 16


def _inputs():
    inputs = _frames(N + 1, drag=0.5)
    return lambda f: inputs[f - 1]            # frame 1 is the first input


@pytest.mark.parametrize("key", ["STRANDS", "WISPS"])
def test_playing_forward_equals_a_bake_bit_for_bit(key):
    _, wig = _wig(key)
    baked, state = _bake(wig, _frames(N + 1, drag=0.5)[:N])
    _, wig = _wig(key)
    live = LiveStepper(wig_step(wig, _inputs()), FrameCache(1, 2 ** 30))
    shown = [live.show(f).copy() for f in range(1, N + 1)]
    assert all(np.array_equal(a, b) for a, b in zip(shown, baked)) and live.steps == N
    assert live.cache.state(N) == state


def test_scrubbing_back_and_forth_shows_cached_frames_without_stepping():
    _, wig = _wig("STRANDS")
    live = LiveStepper(wig_step(wig, _inputs()), FrameCache(1, 2 ** 30))
    live.show(10)                                  # a jump: frames 1..10 computed and kept
    assert live.steps == 10 and live.cache.last_current == 10
    for f in (3, 9, 1, 10, 5):
        before = live.cache.shown(f)
        assert live.show(f) is before
    assert live.steps == 10
    live.show(12)
    assert live.steps == 12                        # on from 10: two more


def test_a_setting_changed_at_a_frame_recomputes_from_it_as_a_fresh_bake():
    """Bend changed at frame 7: frames 7… are outdated, the replay from 7 steps on from frame 6's
    state with the new binding and equals a bake that had the new setting from frame 7 (the same
    two bindings, switched at 7)."""
    _, wig = _wig("STRANDS")
    live = LiveStepper(wig_step(wig, _inputs()), FrameCache(1, 2 ** 30))
    live.show(N)
    _, changed = _wig("STRANDS", bend=0.0)
    live.rebind(wig_step(changed, _inputs()), 7)
    assert live.cache.outdated == 7 and live.cache.last_current == 6
    assert "7–16 outdated" in live.cache.status()
    steps = live.steps
    shown = live.show(N).copy()
    assert live.steps - steps == N - 6 and live.cache.outdated is None
    _, a = _wig("STRANDS")
    inputs = _frames(N + 1, drag=0.5)
    frames, state = _bake(a, inputs[:6])
    _, b = _wig("STRANDS", bend=0.0)
    more, _ = _bake(b, inputs[6:N], state)
    assert np.array_equal(shown, more[-1])


def _one_frame() -> int:
    """The bytes one frame of the STRANDS wig takes in the cache."""
    _, wig = _wig("STRANDS")
    probe = LiveStepper(wig_step(wig, _inputs()), FrameCache(1, 2 ** 30))
    probe.show(1)
    return probe.cache.bytes


def test_the_memory_budget_keeps_what_fits_and_says_so():
    one = _one_frame()
    _, wig = _wig("STRANDS")
    live = LiveStepper(wig_step(wig, _inputs()), FrameCache(1, int(4.5 * one)))
    shown = [live.show(f).copy() for f in range(1, 9)]
    assert live.cache.last == 4 and live.cache.full and "budget is reached" in live.cache.status()
    assert live.steps == 8                         # past the budget, playing on steps on from the last
    _, wig = _wig("STRANDS")
    baked, _ = _bake(wig, _frames(N + 1, drag=0.5)[:8])
    assert all(np.array_equal(a, b) for a, b in zip(shown, baked))
    assert live.cache.bytes <= int(4.5 * one)
    with pytest.raises(HairWigError, match="budget"):
        FrameCache(1, 0)
    assert state_bytes(None) == 0


def test_a_preroll_settles_before_the_first_frame_kept_as_a_bake_s_preroll():
    """Start frame 4 with 3 frames of pre-roll: frames 1..3 are stepped, never kept, and frame 4…
    equal a bake that ran from frame 1 (a bake's pre-roll)."""
    _, wig = _wig("STRANDS")
    baked, _ = _bake(wig, _frames(N + 1, drag=0.5)[:N])
    _, wig = _wig("STRANDS")
    live = LiveStepper(wig_step(wig, _inputs()), FrameCache(4, 2 ** 30), preroll=3)
    assert live.to_compute(N) == N
    shown = live.show(N).copy()
    assert live.steps == N and live.cache.last == N and live.cache.shown(3) is None
    assert np.array_equal(shown, baked[-1])
    assert all(np.array_equal(live.cache.shown(f), baked[f - 1]) for f in range(4, N + 1))
    assert live.to_compute(N) == 0 and live.to_compute(N + 2) == 2


def test_a_smaller_budget_drops_the_last_frames():
    _, wig = _wig("STRANDS")
    live = LiveStepper(wig_step(wig, _inputs()), FrameCache(1, 2 ** 30))
    live.show(8)
    one = live.cache.bytes // 8
    live.cache.set_budget(3 * one + one // 2)
    assert live.cache.last == 3 and live.cache.bytes <= live.cache.budget and live.cache.full
    with pytest.raises(HairWigError, match="budget"):
        live.cache.set_budget(0)


def test_past_the_budget_an_outdated_tail_makes_room_and_a_larger_budget_keeps_frames_again():
    """Full at frame 4 of 8: a change at frame 3 frees the outdated frames as they are computed
    again (kept), and raising the budget lets playing on keep frames."""
    one = _one_frame()
    _, wig = _wig("STRANDS")
    live = LiveStepper(wig_step(wig, _inputs()), FrameCache(1, int(4.5 * one)))
    live.show(8)
    assert live.cache.last == 4 and live.cache.full
    _, changed = _wig("STRANDS", bend=0.0)
    live.rebind(wig_step(changed, _inputs()), 3)
    live.show(8)
    assert live.cache.last == 4 and live.cache.outdated is None      # 3 and 4 computed again and kept
    live.cache.set_budget(2 ** 30)
    assert not live.cache.full
    live.show(8)
    assert live.cache.last == 8 and live.cache.last_current == 8
