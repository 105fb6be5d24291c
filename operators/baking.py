"""Running a wig over a frame range and writing the result: shared by the Bake operator and
``scripts/bake.py``. Binds at the wig's rest frame, reads the scene frame by frame (the animator's
keyed magnets and head, scene gravity, Wind fields, the deforming surface), lets the core step,
and writes once at the end, so a failure anywhere before the write leaves the scene as it was."""

from __future__ import annotations

import os
import time
from dataclasses import replace

import numpy as np

from ..hair_wig import check_memory as core_check_memory
from ..hair_wig import (BakeCache, DynamicMagnet, FrameInput, HairWigError, Magnet, Profile,
                        ScalpSpace, SecondarySettings, Wig, WigSettings)
from . import blender_io, profiles
from .properties import head_of


THREADS = min(4, os.cpu_count() or 1)     # strand blocks stepped in parallel (both cores here)


def is_wig(ob) -> bool:
    return ob is not None and ob.type in blender_io.HAIR_TYPES and ob.hair_wig.enabled


def is_curves_wig(ob) -> bool:
    """A wig on ``Curves`` hair: what live preview and key poses work on."""
    return is_wig(ob) and ob.type == "CURVES"


def require_wig(ob) -> None:
    if not is_wig(ob):
        raise HairWigError(f"'{ob.name}' has no hair_wig settings (enable Wig on it first)")


def require_head(ob):
    """The wig's head mesh, or an error naming the wig."""
    head = head_of(ob)
    if head is None:
        raise HairWigError(f"'{ob.name}' has no head: set a head mesh or give the hair a surface")
    return head


def wigs_in(scene) -> list:
    return [ob for ob in scene.objects if is_wig(ob)]


def frame_range(scene, ob, first=None, last=None) -> tuple[int, int]:
    """The range to bake: explicit, else the wig's own, else the scene's."""
    s = ob.hair_wig
    if first is None:
        first = scene.frame_start if s.use_scene_range else s.frame_start
    if last is None:
        last = scene.frame_end if s.use_scene_range else s.frame_end
    if int(last) < int(first):
        raise HairWigError(f"'{ob.name}': frame range {first}..{last} is empty (end before start)")
    return int(first), int(last)


def check_memory(scene, obs, ranges) -> None:
    """Refuse bakes over the scene's memory limit before anything is computed."""
    core_check_memory([(ob.name, blender_io.point_count(ob), last - first + 1)
                       for ob, (first, last) in zip(obs, ranges)], scene.hair_wig_memory_limit)


def magnet_objects(scene, ob) -> list:
    """The wig's magnet Empties, checked: every slot filled, every magnet in this scene."""
    obs = []
    for i, slot in enumerate(ob.hair_wig.magnets):
        m = slot.object
        if m is None:
            raise HairWigError(f"'{ob.name}': magnet slot {i + 1} is empty (its Empty was deleted); "
                               f"remove the slot")
        if scene.objects.get(m.name) is None:
            raise HairWigError(f"'{ob.name}': magnet '{m.name}' is not in scene '{scene.name}'")
        obs.append(m)
    return obs


def capture_rest(context, ob) -> None:
    """Set the rest pose of a wig now: the hair's and the head's world matrices, and every magnet's
    transform in the head's space (seed 000: the magnet's rest matrix ``Mi``, taken at bind)."""
    s = ob.hair_wig
    head = require_head(ob)
    depsgraph = context.evaluated_depsgraph_get()
    head_m = blender_io.evaluated_matrix(head, depsgraph)
    for e in magnet_objects(context.scene, ob):
        capture_magnet_rest(e, head_m, depsgraph)
    blender_io.store_matrix(s, "hair_rest_matrix", blender_io.evaluated_matrix(ob, depsgraph))
    blender_io.store_matrix(s, "head_rest_matrix", head_m)
    s.rest_frame = context.scene.frame_current
    s.rest_captured = True


def capture_magnet_rest(empty, head_matrix, depsgraph) -> None:
    ms = empty.hair_wig_magnet
    blender_io.store_matrix(ms, "rest_matrix",
                            np.linalg.solve(head_matrix, blender_io.evaluated_matrix(empty, depsgraph)))
    ms.has_rest = True


def _magnets(ob, empties, head_rest, depsgraph, selection, gravity: float, captured: bool) -> list:
    """Core magnets from the wig's Empties; their rest matrices (head-local) are the captured ones,
    or read now (at the rest frame) when the wig's rest pose was never set. ``gravity``: the
    scene's (m/s²)."""
    to_local = np.linalg.inv(head_rest)
    gravity_profile = profiles.read(ob.hair_wig, "gravity")
    magnets = []
    for e in empties:
        ms = e.hair_wig_magnet
        if captured:
            if not ms.has_rest:
                raise HairWigError(f"'{ob.name}': magnet '{e.name}' has no rest pose; press Set Rest Pose")
            rest = blender_io.stored_matrix(ms, "rest_matrix")
        else:
            rest = to_local @ blender_io.evaluated_matrix(e, depsgraph)
        strands = blender_io.read_strand_set(ob, ms.strand_attribute)
        if selection is not None:
            strands = selection if strands is None else strands & selection
        dynamic = None
        if ms.dynamic:
            dynamic = DynamicMagnet(mass=ms.mass, stiffness=ms.stiffness, damping=ms.damping,
                                    dynablend=ms.dynablend, substeps=ms.substeps,
                                    gravity_max=gravity * ms.gravity,
                                    gravity_profile=gravity_profile)
        magnets.append(Magnet(e.name, rest,
                              multiplier=ms.multiplier, exponent=ms.exponent, radius=ms.radius,
                              falloff=profiles.read(ms, "falloff"), strands=strands, dynamic=dynamic))
    return magnets


def _settings(s, dynamics: bool = True) -> WigSettings:
    secondary = None
    if s.use_secondary and dynamics:
        secondary = SecondarySettings(stiffness=s.secondary_stiffness, damping=s.secondary_damping,
                                      random=s.secondary_random, seed=s.secondary_seed,
                                      dynablend=s.secondary_dynablend,
                                      blend_profile=profiles.read(s, "secondary_blend"))
    compression = None
    if s.compression > 0:     # α(t) = 1 − amount · c(t): 1 keeps the inward motion, 0 holds it all
        c = profiles.read(s, "compression")
        compression = Profile(np.stack([np.linspace(0, 1, len(c.lut)), 1.0 - s.compression * c.lut], 1),
                              "LINEAR", "compression")
    return WigSettings(
        normalisation=s.normalisation, secondary=secondary, compression=compression,
        flex=profiles.read(s, "flex"), length_profile=profiles.read(s, "length"),
        attachment=profiles.read(s, "attachment"),
        use_length=s.use_length, elasticity=s.elasticity, length_mode=s.length_mode,
        use_collision=s.use_collision, collision_offset=s.collision_offset)


class _Surface:
    """The hair's surface as scalp space sees it: head-local positions and corner normals."""

    def __init__(self, surface, head):
        self.surface = surface
        self.head = head

    def to_head(self, mesh, depsgraph):
        m = np.linalg.solve(blender_io.evaluated_matrix(self.head, depsgraph),
                            blender_io.evaluated_matrix(self.surface, depsgraph))
        pos = mesh.positions @ m[:3, :3].T + m[:3, 3]
        nrm = mesh.normals @ np.linalg.inv(m[:3, :3])
        nrm /= np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-12)
        return pos, nrm

    def bind(self, source, depsgraph):
        rest = blender_io.read_mesh(self.surface, None, source.surface_uv_map)
        pos, nrm = self.to_head(rest, depsgraph)
        self.vertex_count = len(rest.positions)
        return ScalpSpace(rest.tri_verts, rest.tri_corners, rest.tri_uv, pos, nrm,
                          source.hair.surface_uv, source.hair.name)

    def now(self, depsgraph):
        mesh = blender_io.read_mesh(self.surface, depsgraph, topology=False)
        if len(mesh.positions) != self.vertex_count:
            raise HairWigError(
                f"'{self.surface.name}': its modifiers change its vertex count; the hair can only "
                f"follow a surface that deforms (shape keys, armature) — turn off Follow Skin")
        return self.to_head(mesh, depsgraph)


def bind(context, ob, rest_points=None, dynamics: bool = True):
    """The wig of ``ob`` bound to its rest pose: the captured one (Set Rest Pose), else the one at
    its rest frame (the scene's current frame is then left there). ``rest_points`` (P, 3) stands in
    for the hair's own positions (live preview keeps them while it writes over them);
    ``dynamics=False`` leaves out the secondary springs (live preview shows no dynamics)."""
    s = ob.hair_wig
    head = require_head(ob)
    scene = context.scene
    depsgraph = context.evaluated_depsgraph_get()
    empties = magnet_objects(scene, ob)
    if not s.rest_captured:
        scene.frame_set(s.rest_frame)
    source = blender_io.read_source(ob, s.selection_attribute, depsgraph)
    if rest_points is not None:
        if len(rest_points) != source.hair.num_points:
            raise HairWigError(f"'{ob.name}' was edited while previewed: it has {source.hair.num_points} "
                               f"points, its rest pose {len(rest_points)}")
        source = replace(source, hair=replace(source.hair, points=rest_points))
    keyed = None
    if s.use_key_poses and len(s.key_poses):
        from . import keypose_ops
        keyed, styled = keypose_ops.build_style(ob, source.hair)
        source = replace(source, hair=styled)
    if s.rest_captured:
        hair_rest = blender_io.stored_matrix(s, "hair_rest_matrix")
        head_rest = blender_io.stored_matrix(s, "head_rest_matrix")
    else:
        hair_rest = source.matrix
        head_rest = blender_io.evaluated_matrix(head, depsgraph)
    gravity = float(np.linalg.norm(scene.gravity)) if scene.use_gravity else 0.0
    magnets = _magnets(ob, empties, head_rest, depsgraph, source.hair.selection, gravity, s.rest_captured)
    head_mesh = None
    if s.use_collision:
        mesh = blender_io.read_mesh(head, depsgraph)
        head_mesh = (mesh.positions, mesh.tri_verts)
    surface = None
    scalp = None
    if (s.use_scalp and source.surface is not None and source.surface_uv_map
            and source.hair.surface_uv is not None):
        surface = _Surface(source.surface, head)
        scalp = surface.bind(source, depsgraph)
    wig = Wig(source.hair, hair_rest, head_rest, magnets, _settings(s, dynamics), head_mesh, scalp=scalp,
              threads=THREADS, head_name=head.name)
    wig.keyed = keyed          # the keyframed hairstyle (seed 002) giving each frame's rest pose
    return wig, head, empties, surface


def frame_input(context, ob, head, empties, surface, frame: int, depsgraph=None, wig=None) -> FrameInput:
    """What the wig needs from the scene at ``frame`` (already set and evaluated; pass the
    depsgraph from inside a handler). With ``wig``, keyed settings (magnet weights and dynablends)
    are read at this frame too."""
    scene = context.scene
    depsgraph = context.evaluated_depsgraph_get() if depsgraph is None else depsgraph
    fps = scene.render.fps / scene.render.fps_base
    gravity = np.array(scene.gravity, dtype=np.float64) if scene.use_gravity else np.zeros(3)
    mats = np.array([blender_io.evaluated_matrix(e, depsgraph) for e in empties]).reshape(-1, 4, 4)
    inp = FrameInput(blender_io.evaluated_matrix(ob, depsgraph),
                     blender_io.evaluated_matrix(head, depsgraph), mats, dt=1.0 / fps,
                     time=frame / fps, gravity=gravity, winds=blender_io.read_winds(scene, depsgraph))
    # Keyable settings, as the animation has them at this frame.
    if wig is not None:
        bound = np.array([m.multiplier for m in wig.magnets])
        now = np.array([e.hair_wig_magnet.multiplier for e in empties])
        if not np.array_equal(bound, now):
            inp.magnet_strength = np.divide(now, bound, out=np.zeros_like(now), where=bound > 0)
        inp.magnet_dynablend = np.array([empties[i].hair_wig_magnet.dynablend for i in wig.dynamic_index])
        inp.secondary_dynablend = ob.hair_wig.secondary_dynablend
    if surface is not None:
        inp.surface_positions, inp.surface_normals = surface.now(depsgraph)
    if wig is not None and wig.keyed is not None:
        inp.rest_points = wig.keyed.pose(frame)
    return inp


def compute_steps(context, ob, first: int, last: int, preroll: int | None = None, others=()):
    """Step the wig of ``ob`` over ``first..last`` (after ``preroll`` frames that settle the
    dynamics, by default the wig's own), writing nothing: a generator that yields
    ``(done, total)`` after every frame and returns the cache. The hair's own modifiers are off
    while it runs (``blender_io.mute_modifiers``). Closing it early (a cancelled bake) or an
    error leaves the scene's current frame and the modifiers as they were. ``others``: more hair
    objects whose modifiers are off meanwhile (the other wigs of a bake of several).
    """
    require_wig(ob)
    blender_io.check_bakeable(ob)
    from . import preview      # (preview builds on this module)

    preview.stop(ob)           # a bake starts from the hair's own rest pose, not a previewed one
    scene = context.scene
    preroll = ob.hair_wig.preroll if preroll is None else int(preroll)
    frame, subframe = scene.frame_current, scene.frame_subframe
    muted = blender_io.mute_modifiers([ob, *(o for o in others if o != ob)])   # never read
    try:
        wig, head, empties, surface = bind(context, ob)
        cache = BakeCache(wig.hair, first, last)
        cache.new_topology = wig.keyed is not None      # key poses may have other curves than the hair
        cache.warnings = [f"'{ob.name}': {w}" for w in wig.warnings()]
        total = cache.num_frames + preroll
        state = None
        scratch = np.empty_like(wig.hair.points)
        for done, f in enumerate(range(first - preroll, last + 1), start=1):
            scene.frame_set(f)
            out = cache.frame(f) if f >= first else scratch
            _, state = wig.step(frame_input(context, ob, head, empties, surface, f, wig=wig), state, out=out,
                                keep_state=False)
            if f >= first:
                cache.check_finite(f)
                for k, i in enumerate(wig.dynamic_index):
                    path = cache.magnet_paths.setdefault(wig.magnets[i].name, np.empty((cache.num_frames, 3)))
                    path[f - first] = state.magnet_shown[k]
            yield done, total
    finally:
        # The frame first, while the stack is still off: switching it back on only tags the hair,
        # and Blender evaluates the stack once, when something next looks at the hair.
        scene.frame_set(frame, subframe=subframe)
        blender_io.unmute_modifiers(muted)
    return cache


def compute(context, ob, first: int, last: int, progress=None, preroll: int | None = None,
            others=()) -> BakeCache:
    """Run ``compute_steps`` to the end; ``progress(done, total)`` after every frame (it may raise
    to cancel)."""
    steps = compute_steps(context, ob, first, last, preroll, others)
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
    first, last = frame_range(context.scene, ob, first, last)
    cache = compute(context, ob, first, last, progress)
    blender_io.write_bake(ob, cache)
    return cache


class BakeJob:
    """Bakes of several wigs, advanced a frame at a time so a modal operator can show progress and
    be cancelled. Nothing is written until ``finish``; ``cancel`` (or an error) leaves the scene
    exactly as it was."""

    def __init__(self, context, obs):
        self.context = context
        self.obs = list(obs)
        self.ranges = [frame_range(context.scene, ob) for ob in self.obs]
        check_memory(context.scene, self.obs, self.ranges)
        self.total = sum(last - first + 1 + ob.hair_wig.preroll
                         for ob, (first, last) in zip(self.obs, self.ranges))
        self.done = 0
        self.caches = []
        self._index = 0
        self._steps = None

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
        return self._index >= len(self.obs)

    def finish(self) -> int:
        """Write every computed bake; returns the number of baked frames."""
        for ob, cache in zip(self.obs, self.caches):
            blender_io.write_bake(ob, cache)
        return sum(c.num_frames for c in self.caches)

    def cancel(self) -> None:
        if self._steps is not None:
            self._steps.close()          # restores the scene's frame
            self._steps = None
        self.caches = []
        self._index = len(self.obs)


class Rate:
    """Frames per second of a running bake, for progress lines."""

    def __init__(self):
        self.start = time.perf_counter()

    def fps(self, frames: int) -> float:
        return frames / max(time.perf_counter() - self.start, 1e-9)
