"""Running a wig over a frame range and writing the result: shared by the Bake operator and
``scripts/bake.py``. Binds at the wig's rest frame and reads the scene frame by frame through
``scene_reader`` (the animator's keyed magnets and head, scene gravity, Wind fields, the deforming
surface), lets the core step, and writes once at the end, so a failure anywhere before the write
leaves the scene as it was."""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from ..hair_wig import BakeCache, HairWigError
from ..hair_wig import check_memory as core_check_memory
from . import blender_io, frames, preview, scene_reader


def check_memory(scene, obs, ranges) -> None:
    """Refuse bakes over the scene's memory limit before anything is computed."""
    core_check_memory([(ob.name, blender_io.point_count(ob), last - first + 1)
                       for ob, (first, last) in zip(obs, ranges)], scene.hair_wig_memory_limit)


def _keep(cache, ob, wig, f, first, record: frames.FrameRecord, flat: set, noted: set) -> None:
    """Note frame ``f``'s record in the bake ``cache`` (pre-roll frames: only their warnings)."""
    for name in set(record.flat) - flat:
        flat.add(name)
        cache.warnings.append(
            f"'{ob.name}': magnet '{name}' is scaled to nothing at frame {f}, so Blender cannot "
            f"tell how it is turned and its pull loses its turn; hide it with Disable in "
            f"Viewports instead of scaling it (or its parent) to zero")
    for note in record.notes:
        if note not in noted:            # once a bake, from the frame it first came
            noted.add(note)
            cache.warnings.append(f"'{ob.name}': {note} (from frame {f})")
    if f < first:
        return
    if cache.skin is not None and record.skin is not None:
        cache.skin[f - first] = record.skin
    cache.check_finite(f)
    cache.penetration = max(cache.penetration, record.penetration)
    for k, i in enumerate(wig.dynamic_index):
        path = cache.magnet_paths.setdefault(wig.magnets[i].name, np.empty((cache.num_frames, 3)))
        path[f - first] = record.magnet_shown[k]


def compute_steps(context, ob, first: int, last: int, preroll: int | None = None, others=(), strands=None):
    """Step the wig of ``ob`` over ``first..last`` (after ``preroll`` frames that settle the
    dynamics, by default the wig's own), writing nothing (only its strands ``strands``,
    ``(start, stop)``, for a part of a split bake: the rest of the cache is zeros): a generator that yields
    ``(done, total)`` after every frame and returns the cache. The hair's own modifiers are off
    while it runs (``blender_io.mute_modifiers``). Closing it early (a cancelled bake) or an
    error leaves the scene's current frame and the modifiers as they were. ``others``: more hair
    objects whose modifiers are off meanwhile (the other wigs of a bake of several).
    """
    scene_reader.require_wig(ob)
    blender_io.check_bakeable(ob)
    scene = context.scene
    preroll = ob.hair_wig.preroll if preroll is None else int(preroll)
    # Live dynamics' frames, where current and made as this bake would make them, are this bake's
    reused = preview.live_frames(context, ob, first, last, preroll) if strands is None else None
    preview.stop(ob)           # a bake starts from the hair's own rest pose, not a previewed one
    preview.hold(ob)           # its frame steps (the rest frame's too) start or step no live wig meanwhile
    frame, subframe = scene.frame_current, scene.frame_subframe
    try:
        carried = blender_io.attaches_to_surface(ob)        # read before the stack is switched off
        children = scene_reader.children_roots(context, ob)
        muted = blender_io.mute_modifiers([ob, *(o for o in others if o != ob)])   # never read
    except BaseException:
        preview.release(ob)
        raise
    shown = []
    try:
        shown = scene_reader.evaluate_magnets(context, [ob])        # hidden magnets move too
        bound = scene_reader.bind(context, ob, children=children)
        wig = bound.wig
        if strands is not None:
            wig.restrict(*strands)
        cache = BakeCache(wig.hair, first, last)
        if strands is not None:
            cache.positions[...] = 0.0             # the strands not computed: finite, never written
        cache.new_topology = wig.keyed is not None      # key poses may have other curves than the hair
        cache.warnings = [f"'{ob.name}': {w}" for w in wig.warnings()] + bound.warnings
        cache.penetration = 0.0
        cache.colliders = [c.name for c in wig.colliders]
        # The stack carries the hair with the skin: the bake keeps each frame's skin motion (from
        # the skin the roots were bound on at the rest frame) to be stored in the skin's rest
        # space, and the stack carries it as it carried the groom. On a subdivided head Blender's
        # own stack shifts the groom at rest (it measures the skin from its rest_position, off
        # the limit surface); stored so, the bake shows that same groom at rest, children too.
        if carried and wig.scalp is not None:
            cache.skin = [None] * cache.num_frames
        total = cache.num_frames + preroll
        state = None
        flat = set()                 # magnets already reported scaled to nothing
        noted = set()                # the dynamics layer's warnings already given
        scratch = np.empty_like(wig.hair.points)
        begin = first - preroll
        upto = None
        measured = {}
        if reused is not None:       # the live cache's frames first..upto, each frame's input read again
            def digest_at(f):
                scene.frame_set(f)
                inp = scene_reader.frame_input(context, ob, bound, f)
                if f >= first and reused.record(f).penetration is None:
                    # played live, where nothing is measured: how deep it is held, measured now
                    measured[f] = wig.penetration_of(reused.shown(f), inp)
                return frames.input_digest(inp)
            upto = reused.verified(digest_at)
        if upto is not None:
            state = reused.state(upto).copy()
            for f in range(first - preroll, upto + 1):
                record = reused.record(f)
                if f >= first:
                    cache.frame(f)[...] = reused.shown(f)
                    if record.penetration is None:
                        record = dataclasses.replace(record, penetration=measured[f])
                _keep(cache, ob, wig, f, first, record, flat, noted)
            begin = upto + 1
            yield upto - first + 1 + preroll, total
        for done, f in enumerate(range(begin, last + 1), start=begin - (first - preroll) + 1):
            scene.frame_set(f)
            out = cache.frame(f) if f >= first else scratch
            state, record = frames.step_frame(context, ob, bound, f, state, out, skin=cache.skin is not None)
            _keep(cache, ob, wig, f, first, record, flat, noted)
            yield done, total
    finally:
        # The frame first, while the stack is still off: switching it back on only tags the hair,
        # and Blender evaluates the stack once, when something next looks at the hair.
        scene.frame_set(frame, subframe=subframe)
        blender_io.unmute_modifiers(muted)
        scene_reader.restore_magnets(context, shown)
        preview.release(ob)
    return cache


def compute(context, ob, first: int, last: int, progress=None, preroll: int | None = None,
            others=(), strands=None) -> BakeCache:
    """Run ``compute_steps`` to the end; ``progress(done, total)`` after every frame (it may raise
    to cancel)."""
    steps = compute_steps(context, ob, first, last, preroll, others, strands)
    try:
        while True:
            done, total = next(steps)
            if progress is not None:
                progress(done, total)
    except StopIteration as finished:
        return finished.value
    finally:
        steps.close()


def bake(context, ob, first=None, last=None, progress=None) -> BakeCache:
    """Compute and write the bake of one wig; replaces an earlier bake only once it succeeded."""
    first, last = scene_reader.frame_range(context.scene, ob, first, last)
    cache = compute(context, ob, first, last, progress)
    blender_io.write_bake(ob, cache)
    return cache


AFTER = ("KEEP", "CONTINUE", "CLEAR")


def rebake_frames(context, ob, first: int, last: int, progress=None, after: str = "KEEP") -> BakeCache:
    """Re-bake frames ``first..last`` of the bake on ``ob`` and keep its other frames. The wig is
    stepped from the bake's start (with its pre-roll; from ``first`` when that is earlier),
    exactly as a whole bake steps it, so the frames re-baked equal those of a whole re-bake bit
    for bit, dynamics and all. The range may reach past the bake's end (the bake grows). The
    bake's frames after the range were made by the dynamics as they ran before: ``after``
    says what becomes of them — ``KEEP`` them, marked outdated (``outdated``; the panel and the
    batch baker say so), ``CONTINUE`` the re-bake to the bake's end, or ``CLEAR`` them.
    Nothing is written unless it succeeds."""
    if after not in AFTER:
        raise HairWigError(f"'{ob.name}': after must be one of {', '.join(AFTER)}, got {after!r}")
    baked = blender_io.bake_range(ob)
    if baked is None:
        raise HairWigError(f"'{ob.name}' has no bake to re-bake frames of; bake it first")
    first, last = int(first), int(last)
    if last < first:
        raise HairWigError(f"'{ob.name}': frames {first}..{last} are empty (end before start)")
    edited = blender_io.edited_since_bake(ob)
    if edited is not None:
        raise HairWigError(f"'{ob.name}' was edited after the bake ({edited[0]} -> {edited[1]} points); "
                           f"bake the whole range again")
    _, positions, paths = blender_io.read_bake(ob)
    space = ob[blender_io.RECORD].get("space", "OBJECT")
    # a range apart from the bake takes the frames between too: a bake has no holes
    first, last = min(first, baked[1] + 1), max(last, baked[0] - 1)
    start = min(first, baked[0])
    end = max(last, baked[1]) if after == "CONTINUE" else last
    fresh = compute(context, ob, start, end, progress)
    if ("SURFACE_REST" if fresh.skin is not None else "OBJECT") != space:
        raise HairWigError(f"'{ob.name}': its modifiers or Follow Skin changed since the bake, so "
                           f"its frames would not fit together; bake the whole range again")
    if positions.shape[1] != fresh.hair.num_points:
        raise HairWigError(f"'{ob.name}': its bake has {positions.shape[1]} points, the hair "
                           f"{fresh.hair.num_points}; bake the whole range again")
    top = end if after == "CLEAR" else max(end, baked[1])
    merged = BakeCache(fresh.hair, start, top)
    old = np.arange(max(baked[0], start), min(baked[1], top) + 1)       # frames of the old bake kept
    old = old[(old < first) | (old > end)]
    merged.positions[old - start] = positions[old - baked[0]]
    merged.stored[old - start] = True       # the old frames go back exactly as they were stored
    new = slice(first - start, end - start + 1)
    merged.positions[new] = fresh.positions[first - start:end - start + 1]
    if fresh.skin is not None:
        merged.skin = [None] * merged.num_frames
        merged.skin[new] = fresh.skin[first - start:end - start + 1]
    for name, path in fresh.magnet_paths.items():
        whole = np.repeat(path[-1:], merged.num_frames, axis=0)         # held past what was computed
        whole[:len(path)] = path
        before = paths.get(name)
        if before is not None and len(before) == baked[1] - baked[0] + 1:
            whole[old - start] = np.asarray(before, np.float64)[old - baked[0]]
        merged.magnet_paths[name] = whole
    merged.new_topology = fresh.new_topology
    merged.warnings, merged.colliders = fresh.warnings, fresh.colliders
    merged.penetration = fresh.penetration
    # outdated: what was before, less what was re-baked, plus what the dynamics ran past
    stale = [r for a, b in blender_io.outdated(ob) for r in ((a, min(b, first - 1)), (max(a, end + 1), b))
             if r[0] <= r[1]]
    if after == "KEEP" and end < baked[1]:
        stale.append((end + 1, baked[1]))
    stale = _union([(a, min(b, top)) for a, b in stale if a <= top])
    blender_io.write_bake(ob, merged)
    blender_io.mark_outdated(ob, stale)
    merged.outdated = stale
    merged.cleared = (end + 1, baked[1]) if after == "CLEAR" and end < baked[1] else None
    merged.rebaked = (first, end)
    return merged


def _union(ranges):
    out = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def say_ranges(ranges) -> str:
    """Frame ranges as an artist reads them: "9..24, 30..31"."""
    return ", ".join(f"{a}..{b}" if a != b else f"{a}" for a, b in ranges)


class BakeJob:
    """Bakes of several wigs, advanced a frame at a time so a modal operator can show progress and
    be cancelled. Nothing is written until ``finish``; ``cancel`` (or an error) leaves the scene
    exactly as it was."""

    def __init__(self, context, obs):
        self.context = context
        self.obs = list(obs)
        self.ranges = [scene_reader.frame_range(context.scene, ob) for ob in self.obs]
        check_memory(context.scene, self.obs, self.ranges)
        self.total = sum(last - first + 1 + ob.hair_wig.preroll
                         for ob, (first, last) in zip(self.obs, self.ranges))
        self.done = 0
        self.caches = []
        self._index = 0
        self._steps = None
        self._held = list(self.obs)          # no live wig of the job plays until it is written
        for ob in self._held:
            preview.hold(ob)

    def _release(self) -> None:
        for ob in self._held:
            preview.release(ob)
        self._held = []

    @property
    def current(self):
        return self.obs[min(self._index, len(self.obs) - 1)]

    def advance(self, frames: int = 1) -> bool:
        """Step up to ``frames`` frames; return whether every wig has been computed."""
        while frames > 0 and self._index < len(self.obs):
            if self._steps is None:
                first, last = self.ranges[self._index]
                self._steps = compute_steps(self.context, self.obs[self._index], first, last,
                                            others=self.obs)
            try:
                next(self._steps)
                self.done += 1
                frames -= 1
            except StopIteration as finished:
                self.caches.append(finished.value)
                self._steps = None
                self._index += 1
            except BaseException:
                self._release()
                raise
        return self._index >= len(self.obs)

    def finish(self) -> int:
        """Write every computed bake; returns the number of baked frames."""
        try:
            for ob, cache in zip(self.obs, self.caches):
                blender_io.write_bake(ob, cache)
        finally:
            self._release()
        return sum(c.num_frames for c in self.caches)

    def cancel(self) -> None:
        if self._steps is not None:
            self._steps.close()          # restores the scene's frame
            self._steps = None
        self.caches = []
        self._index = len(self.obs)
        self._release()


class Rate:
    """Frames per second of a running bake, for progress lines."""

    def __init__(self):
        self.start = time.perf_counter()

    def fps(self, frames: int) -> float:
        return frames / max(time.perf_counter() - self.start, 1e-9)
