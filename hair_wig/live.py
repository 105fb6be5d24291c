"""Live dynamics (issue 37; SPEC §8): a wig's dynamics stepped one frame at a time as the timeline
plays, with a frame cache as Blender's own simulations keep one.

``FrameCache`` holds, per computed frame, the wig's state after it and the positions shown — a run
of frames from the wig's start frame with no gaps — within a memory budget, and knows from which
frame on it is outdated (a setting, a keyframe or the groom changed). ``LiveStepper`` shows a
frame: from the cache where it is current, else by stepping the wig from the last current frame
before it (each frame between is computed and kept), exactly as a bake steps it, so a frame shown
live equals the same frame baked, bit for bit. Core only: Blender's side (the handler, the panel)
drives it.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .errors import HairWigError


def state_bytes(state) -> int:
    """Memory a ``WigState`` holds in arrays (its magnets', where its points ended for continuous
    contact, and its layer's)."""
    if state is None:
        return 0
    total = sum(a.nbytes for a in state._arrays() if a is not None)
    if state.layer is not None:
        total += sum(np.asarray(v).nbytes for v in state.layer.values())
    return total


def extra_bytes(extra) -> int:
    """Memory the arrays in a frame's ``extra`` hold (arrays, nested in tuples, lists, dicts or
    an object's attributes)."""
    if extra is None:
        return 0
    if isinstance(extra, np.ndarray):
        return extra.nbytes
    if isinstance(extra, dict):
        return sum(extra_bytes(v) for v in extra.values())
    if isinstance(extra, (tuple, list)):
        return sum(extra_bytes(v) for v in extra)
    if hasattr(extra, "__dict__"):
        return extra_bytes(vars(extra))
    return 0


def wig_step(wig, inputs: Callable) -> Callable:
    """The step of a ``LiveStepper`` for ``wig`` fed by ``inputs(frame)`` (a ``FrameInput``):
    ``(frame, state) -> (shown, state, None)``."""
    def step(frame, state):
        out, state = wig.step(inputs(frame), state, measure=False)
        return out, state, None
    return step


class FrameCache:
    """Per computed frame, the state after it and the positions shown (float32), for frames
    ``start, start + 1, …`` with no gaps. Frames from ``outdated`` on are kept for show but are
    not current: the next playback computes them again. ``budget`` (bytes): no frame is kept
    past it (``store`` says so)."""

    def __init__(self, start: int, budget: int):
        if budget <= 0:
            raise HairWigError(f"the live cache's memory budget must be more than 0 bytes, got {budget}")
        self.start = int(start)
        self.budget = int(budget)
        self._frames: dict[int, tuple] = {}
        self.outdated: int | None = None
        self.bytes = 0
        self.full = False              # a frame was not kept: the budget was reached

    @property
    def last(self) -> int | None:
        """The last frame kept (current or not), or None."""
        return self.start + len(self._frames) - 1 if self._frames else None

    @property
    def last_current(self) -> int | None:
        """The last frame kept that is current, or None."""
        if not self._frames:
            return None
        last = self.last
        if self.outdated is not None:
            last = min(last, self.outdated - 1)
        return last if last >= self.start else None

    @property
    def next_frame(self) -> int:
        """The frame ``store`` takes next: the one after the last current frame."""
        last = self.last_current
        return self.start if last is None else last + 1

    def current(self, frame: int) -> bool:
        last = self.last_current
        return last is not None and self.start <= frame <= last

    def shown(self, frame: int):
        """The positions (P, 3) kept for ``frame``, current or not, or None."""
        entry = self._frames.get(int(frame))
        return None if entry is None else entry[1]

    def extra(self, frame: int):
        """What the step gave besides the state for ``frame`` (the bake's record of it), or None."""
        entry = self._frames.get(int(frame))
        return None if entry is None else entry[2]

    def state(self, frame: int):
        """The state kept after ``frame`` (a ``WigState``; copy it before stepping on), or None."""
        entry = self._frames.get(int(frame))
        return None if entry is None else entry[0]

    def store(self, frame: int, state, shown: np.ndarray, extra=None) -> bool:
        """Keep ``frame`` (the one after the last current one: frames stay without gaps; anything
        kept after it goes, being computed again). Returns False, keeping nothing, when it would
        take the cache past its budget."""
        frame = int(frame)
        expected = self.next_frame
        if frame != expected:
            raise HairWigError(f"the live cache keeps frames {self.start}… without gaps: frame {frame} came "
                               f"where {expected} was next")
        self.drop_from(frame)
        size = state_bytes(state) + shown.nbytes + extra_bytes(extra)
        if self.bytes + size > self.budget:        # (the outdated frames after it are gone first)
            self.full = True
            return False
        self._frames[frame] = (state, shown, extra, size)
        self.bytes += size
        return True

    def outdate(self, frame: int | None = None) -> None:
        """From ``frame`` on (everything where None), what is kept is no longer current."""
        frame = self.start if frame is None else max(int(frame), self.start)
        if self.last is None or frame > self.last:
            return                        # nothing kept from there: nothing to outdate
        self.outdated = frame if self.outdated is None else min(self.outdated, frame)

    def drop_from(self, frame: int) -> None:
        """Forget ``frame`` and every frame after it."""
        for f in [f for f in self._frames if f >= frame]:
            self.bytes -= self._frames.pop(f)[3]
        if self.outdated is not None and (self.last is None or self.outdated > self.last):
            self.outdated = None
        self.full = False

    def clear(self) -> None:
        self.drop_from(self.start)

    def set_budget(self, budget: int) -> None:
        """A new budget; frames past it go (the last ones first)."""
        if budget <= 0:
            raise HairWigError(f"the live cache's memory budget must be more than 0 bytes, got {budget}")
        grew = budget > self.budget
        self.budget = int(budget)
        while self.bytes > self.budget and self.last is not None:
            self.drop_from(self.last)
            self.full = True
        if grew:
            self.full = False                  # room again: playing on keeps frames

    def status(self) -> str:
        """What the panel says: the range kept, outdated or not, the memory used."""
        if self.last is None:
            return "nothing cached"
        mb = self.bytes / 2 ** 20
        text = f"frames {self.start}–{self.last} cached, {mb:.1f} MB of {self.budget / 2 ** 20:.0f} MB"
        if self.outdated is not None:
            text += f"; {self.outdated}–{self.last} outdated"
        if self.full:
            text += "; the budget is reached: later frames are computed but not kept"
        return text


class LiveStepper:
    """Shows a wig's frames as the timeline plays. ``step(frame, state)`` computes a frame from the
    state after the one before (None: the first, from rest), returning ``(shown, state, extra)``
    (``wig_step`` makes one from a wig and its inputs); ``cache`` keeps them. The first frame is
    preceded by ``preroll`` frames that settle the dynamics, as a bake's pre-roll: computed, never
    kept. ``steps`` counts the frames computed (a frame shown from the cache costs none)."""

    def __init__(self, step: Callable, cache: FrameCache, preroll: int = 0):
        self.step = step
        self.cache = cache
        self.preroll = int(preroll)
        self.steps = 0
        self._beyond = None           # (frame, state, shown): the last frame computed past the budget

    def rebind(self, step: Callable, frame: int | None = None) -> None:
        """A new step (a setting changed at ``frame``: everything from it is outdated; None: all)."""
        self.step = step
        self.cache.outdate(frame)
        self._beyond = None

    def _plan(self, frame: int):
        """Where showing ``frame`` (at or after the start) begins: ``(first frame to step, the
        state before it, None)``, or ``(None, None, positions)`` where nothing is to step (kept
        and current, or the last frame computed past the budget). Past the budget, playing on
        steps on from the last frame computed; with room again, from the cache."""
        if self.cache.current(frame):
            return None, None, self.cache.shown(frame)
        beyond = self._beyond if self.cache.full else None
        if beyond is not None and beyond[0] == frame:
            return None, None, beyond[2]
        last = self.cache.last_current
        f0 = self.cache.start if last is None else last + 1
        state = None if last is None else self.cache.state(last)
        if beyond is not None and f0 <= beyond[0] < frame:
            f0, state = beyond[0] + 1, beyond[1]
        return (f0 - self.preroll if f0 == self.cache.start else f0), state, None

    def to_compute(self, frame: int) -> int:
        """How many frames showing ``frame`` computes (0: none)."""
        frame = max(int(frame), self.cache.start)
        first = self._plan(frame)[0]
        return 0 if first is None else frame - first + 1

    def show(self, frame: int, progress: Callable | None = None) -> np.ndarray:
        """The positions (P, 3) float32 at ``frame``: kept and current, or stepped to from the last
        current frame before it (every frame between computed, and kept while the budget lasts;
        past it, playing on steps on from the last frame computed), ``progress(done, total)``
        after each. Before the start frame: the start frame's."""
        frame = max(int(frame), self.cache.start)
        first, state, out = self._plan(frame)
        if first is None:
            return out
        total = frame - first + 1
        for k, f in enumerate(range(first, frame + 1), 1):
            out, state, extra = self.step(f, state)
            self.steps += 1
            if f == self.cache.next_frame:     # refused past the budget (said by ``full``)
                self.cache.store(f, state, out, extra)
            if progress is not None:
                progress(k, total)
        self._beyond = None if self.cache.current(frame) else (frame, state, out)
        return out
