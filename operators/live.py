"""Live dynamics in Blender (issue 37): a wig's dynamics stepped as the timeline plays, with a frame
cache, as Blender's own simulations behave. ``Session`` binds the wig as a bake binds it, steps it
one frame at a time through ``frames.step_frame`` (the bake's own step, so a frame played live
equals the frame baked bit for bit) and keeps the frames in a ``hair_wig.live.FrameCache``.

What makes frames outdated: a setting the wig reads when it binds (the wig's, its magnets', its
profile curves, the colliders' and head's shapes) changed — it acts on every frame, so everything;
a keyframe the wig reads changed — from the first frame whose value changed (the F-curves of every
object the wig reads, sampled over the cached frames); anything else that changes what a frame
reads from the scene (an object moved without a key, a force field's strength, a driver) —
caught by comparing the current frame's input with the one it was computed from, and, where the
frame cannot be known, everything. ``preview`` owns the sessions, the handlers and the writes.
"""

from __future__ import annotations

import time
import zlib

import bpy
import numpy as np

from ..hair_wig import HairWigError
from ..hair_wig.live import FrameCache, LiveStepper
from . import blender_io, compat, frames, scene_reader

MB = 2 ** 20
PROGRESS_AFTER = 0.5        # seconds of catching up before the progress is shown
# Wig settings that do not change what the dynamics compute (the panel's, the bake's output's)
NOT_READ = {"rna_type", "name", "magnet_index", "key_pose_index", "show_wisps", "use_live_dynamics",
            "live_memory", "style", "draw", "cache_path", "frame_start", "frame_end", "use_scene_range",
            "preroll", "enabled"}


def _value(v):
    if isinstance(v, bpy.types.ID):
        return ("ID", v.name)
    if isinstance(v, str) or not hasattr(v, "__len__"):
        return v
    return tuple(_value(x) for x in v)


def rna_values(group, skip=frozenset(), animated=frozenset(), prefix="") -> list:
    """Every property value of a property group (nested groups and collections walked, IDs by
    name), but those in ``skip`` and the paths in ``animated`` (their F-curves are sampled)."""
    out = []
    for p in group.bl_rna.properties:
        k = p.identifier
        path = prefix + k
        if k in skip or k == "rna_type" or path in animated:
            continue
        v = getattr(group, k)
        if p.type == "POINTER" and v is not None and not isinstance(v, bpy.types.ID):
            out.append((k, rna_values(v, prefix=path + ".")))
        elif p.type == "COLLECTION":
            out.append((k, [rna_values(item, prefix=f"{path}[{i}].") for i, item in enumerate(v)]))
        else:
            out.append((k, _value(v)))
    return out


def _profile_values(tree) -> list:
    """The points of every curve in a profile node group (``profile_curves``)."""
    if tree is None:
        return []
    return [(n.name, [[tuple(pt.location) + (pt.handle_type,) for pt in c.points] for c in n.mapping.curves])
            for n in tree.nodes if getattr(n, "mapping", None) is not None]


def _mesh_digest(ob) -> int:
    """A checksum of a mesh object's own vertices (not evaluated: its animation is per frame)."""
    if ob is None or ob.type != "MESH":
        return 0
    co = np.empty(len(ob.data.vertices) * 3, np.float32)
    ob.data.vertices.foreach_get("co", co)
    return zlib.crc32(co.tobytes(), len(ob.data.polygons))


def animated_paths(id_data, group: str) -> set:
    """The paths within ``id_data``'s property group ``group`` that its action animates."""
    ad = getattr(id_data, "animation_data", None)
    if ad is None or ad.action is None:
        return set()
    head = group + "."
    return {fc.data_path[len(head):] for fc in compat.action_fcurves(ad.action) if fc.data_path.startswith(head)}


def field_objects(scene) -> list:
    return [o for o in scene.objects if o.field is not None and o.field.type != "NONE"]


def _drivers_targets(o) -> list:
    ad = o.animation_data
    if ad is None:
        return []
    return [t.id for d in ad.drivers for v in d.driver.variables for t in v.targets
            if isinstance(t.id, bpy.types.Object)]


def read_objects(scene, ob, bound) -> list:
    """Every object the wig of ``ob`` reads from the scene: the hair, its head, magnets, colliders
    and force fields, and what moves them: their parents, the armatures that bend them, their
    constraints' targets and their drivers' objects."""
    obs = [ob, bound.head, *bound.empties, *bound.colliders, *field_objects(scene)]
    seen, out = set(), []
    while obs:
        o = obs.pop()
        if o is None or o.name in seen:
            continue
        seen.add(o.name)
        out.append(o)
        obs.append(o.parent)
        obs.extend(md.object for md in getattr(o, "modifiers", ()) if md.type == "ARMATURE")
        obs.extend(getattr(c, "target", None) for c in o.constraints)
        obs.extend(_drivers_targets(o))
    return sorted(out, key=lambda o: o.name)


def signature(context, ob, bound, objects) -> int:
    """A checksum of what the wig of ``ob`` reads and no keyframe animates: its settings, its
    magnets', their profile curves, the head's mesh, the colliders' settings and meshes, the force
    fields' settings, where every object it reads (``objects``) without keys is put, and which
    magnets Blender does not evaluate."""
    scene = context.scene
    s = ob.hair_wig
    parts = [rna_values(s, NOT_READ, animated_paths(ob, "hair_wig")), _profile_values(s.profiles),
             s.rest_frame, _mesh_digest(bound.head),
             [o.name for o in scene_reader.unevaluated(context, bound.empties)]]
    for o in objects:
        if o.animation_data is None or o.animation_data.action is None:
            parts.append((o.name, tuple(tuple(row) for row in o.matrix_basis)))
    for o in field_objects(scene):
        parts.append((o.name, rna_values(o.field, animated=animated_paths(o, "field"))))
    for e in bound.empties:
        parts.append((e.name, rna_values(e.hair_wig_magnet, animated=animated_paths(e, "hair_wig_magnet")),
                      _profile_values(e.hair_wig_magnet.profiles)))
    for c in scene_reader.collider_objects(scene, ob):
        parts.append((c.name, rna_values(c.collision), _mesh_digest(c)))
    return zlib.crc32(repr(parts).encode())


def fcurves_of(objects) -> dict:
    """Every F-curve of the objects (and of their meshes' shape keys), by (object, owner, data
    path, index)."""
    out = {}
    for o in objects:
        owners = [o]
        keys = getattr(getattr(o, "data", None), "shape_keys", None)
        if keys is not None:
            owners.append(keys)
        for owner in owners:
            ad = owner.animation_data
            if ad is None or ad.action is None:
                continue
            for fc in compat.action_fcurves(ad.action):
                out[(o.name, owner.name, fc.data_path, fc.array_index)] = fc
    return out


def curve_digest(fc) -> int:
    """A checksum of what an F-curve evaluates from: its keys (frames, values, handles, their
    interpolation and easing), its extrapolation, whether it is muted, and its modifiers."""
    n = len(fc.keyframe_points)
    arrays = np.empty((3, 2 * n), np.float32)
    for row, name in enumerate(("co", "handle_left", "handle_right")):
        fc.keyframe_points.foreach_get(name, arrays[row])
    crc = zlib.crc32(arrays.tobytes())
    rest = ([(k.interpolation, k.easing) for k in fc.keyframe_points], fc.extrapolation, fc.mute,
            [rna_values(m) for m in fc.modifiers])
    return zlib.crc32(repr(rest).encode(), crc)


def samples_of(fc, frames_) -> np.ndarray:
    return np.array([fc.evaluate(f) for f in frames_])


def first_change(old: np.ndarray, new: np.ndarray, frames_) -> int | None:
    """The first of ``frames_`` where a sampled curve changed, or None."""
    diff = np.flatnonzero(old != new)
    return frames_[int(diff[0])] if len(diff) else None


def legacy_message(ob) -> str:
    return f"'{ob.name}' is a legacy Curve object: live dynamics plays Curves hair; bake it to see its dynamics"


def budget_of(ob) -> int:
    return max(int(ob.hair_wig.live_memory * MB), 1)


class Session:
    """The live dynamics of one wig: its binding, its stepper and frame cache, and what they were
    computed from. ``write(points)`` puts positions into the hair (the preview's own write)."""

    def __init__(self, context, ob, rest: np.ndarray, write):
        if ob.type != "CURVES":
            raise HairWigError(legacy_message(ob))
        s = ob.hair_wig
        self.name = ob.name
        self.rest = rest
        self.write = write
        self.first, self.last = scene_reader.frame_range(context.scene, ob)
        self.preroll = s.preroll
        self.cache = FrameCache(self.first, budget_of(ob))
        self.stepper = LiveStepper(self._step, self.cache, self.preroll)
        self._ob = ob
        self._last = None             # the record of the frame last computed
        self.pre = {}                 # the records of the pre-roll frames
        self._bind(context, ob)

    # -- binding -----------------------------------------------------------------------------------
    def _bind(self, context, ob) -> None:
        """Bind the wig to its rest pose as a bake binds it (the hair holding its groom meanwhile,
        as at a bake's start) and note what it was bound from."""
        scene = context.scene
        self.write(ob, self.rest)
        with blender_io.frame_kept(scene):
            self.bound = scene_reader.bind(context, ob, rest_points=self.rest)
        wig = self.bound.wig
        self.skin = blender_io.attaches_to_surface(ob) and wig.scalp is not None
        self.warnings = wig.warnings() + list(self.bound.warnings) + [
            f"magnet '{m.name}' is disabled in viewports or in an excluded collection: Blender does not move "
            f"it, so live dynamics cannot (a bake does, and computes its frames anew)"
            for m in scene_reader.unevaluated(context, self.bound.empties)]
        objects = read_objects(scene, ob, self.bound)
        self.objects = [o.name for o in objects]
        self.signature = signature(context, ob, self.bound, objects)
        # every key the wig reads: a checksum of each F-curve and its values at every frame of the
        # range (sampled once a binding: a check then samples only the curves that changed)
        curves, frames_ = fcurves_of(self._objects()), self._sampled()
        self.curves = {k: curve_digest(fc) for k, fc in curves.items()}
        self.samples = {k: samples_of(fc, frames_) for k, fc in curves.items()}

    def _objects(self):
        return [o for o in (bpy.data.objects.get(n) for n in self.objects) if o is not None]

    def _sampled(self) -> list:
        return list(range(self.first - self.preroll, self.last + 1))

    def matches(self, context, ob) -> bool:
        """Whether the session was made for the wig's present frame range and pre-roll."""
        try:
            first, last = scene_reader.frame_range(context.scene, ob)
        except HairWigError:
            return False
        return (first, last, ob.hair_wig.preroll) == (self.first, self.last, self.preroll)

    def check(self, context, ob, here: int | None = None) -> str | None:
        """Something changed (not the frame): outdate what it affects and bind again. ``here``:
        the frame shown, whose input is compared with the one it was computed from. Returns what
        was outdated (for the status and the tests), or None. With nothing cached it binds again
        all the same where a setting or key changed."""
        scene = context.scene
        self.cache.set_budget(budget_of(ob))
        sig = signature(context, ob, self.bound, read_objects(scene, ob, self.bound))
        if sig != self.signature:
            return self._outdate(context, ob, None, "a setting")
        curves = fcurves_of(self._objects())
        f = None
        if curves.keys() != self.curves.keys():
            f = self.first                    # a curve came or went: it was a constant before
        for k, fc in curves.items():
            if f == self.first:
                break
            digest = curve_digest(fc)
            if k in self.curves and digest != self.curves[k]:
                frames_ = self._sampled()
                g = first_change(self.samples[k], samples_of(fc, frames_), frames_)
                f = g if f is None or (g is not None and g < f) else f
                if g is None:
                    self.curves[k] = digest   # changed where no frame reads it (a handle between frames)
        if f is not None:
            s = ob.hair_wig
            if not s.rest_captured and f <= s.rest_frame:
                return self._outdate(context, ob, None, "a keyframe at the rest frame")
            return self._outdate(context, ob, f, "a keyframe")
        if here is not None and self.cache.current(here):
            inp = scene_reader.frame_input(context, ob, self.bound, here)
            if frames.input_digest(inp) != self.cache.extra(here).digest:
                return self._outdate(context, ob, None, "the scene")
        return None

    def _outdate(self, context, ob, frame, why: str) -> str:
        self._bind(context, ob)
        self.stepper.rebind(self._step, frame)
        return f"{why} changed: outdated from frame {self.cache.start if frame is None else frame}"

    # -- stepping ----------------------------------------------------------------------------------
    def _step(self, f: int, state):
        """One frame, as a bake steps it (``frames.step_frame``), at frame ``f`` set in the scene."""
        context = bpy.context
        scene = context.scene
        if scene.frame_current != f or scene.frame_subframe != 0.0:
            scene.frame_set(f)
        out = np.empty_like(self.rest)
        state, record = frames.step_frame(context, self._ob, self.bound, f, state, out, skin=self.skin,
                                          keep_state=True, digest=True, measure=False)
        self._last = record
        if f < self.first:
            self.pre[f] = record              # a pre-roll frame: a bake takes its warnings, checks its input
        return out, state, record

    def _shown(self, out: np.ndarray, record) -> np.ndarray:
        """Positions as the hair shows them: where its own stack carries it with the skin, in the
        surface's rest space, as a bake stores them (``blender_io.to_surface_rest``)."""
        if record is None or record.skin is None:
            return out
        return blender_io.to_surface_rest(out, record.skin, self.bound.wig.hair.strand_of_point())

    def show(self, context, ob, frame: int) -> np.ndarray:
        """The positions at ``frame`` (within the wig's frame range: before it the first frame's,
        after it the last's), computed where they are not cached and current; the scene's frame is
        back where it was after."""
        target = min(max(int(frame), self.first), self.last)
        total = self.stepper.to_compute(target)
        self._ob = ob
        wm = context.window_manager
        clock = time.perf_counter()
        shown = [False]

        def progress(done, total):
            if not shown[0] and time.perf_counter() - clock > PROGRESS_AFTER:
                shown[0] = True
                wm.progress_begin(0, total)
                print(f"hair_wig: '{self.name}': live dynamics computing {total} frames to frame {target}")
            if shown[0]:
                wm.progress_update(done)

        try:
            with blender_io.frame_kept(context.scene):
                out = self.stepper.show(target, progress if total > 1 else None)
        finally:
            if shown[0]:
                wm.progress_end()
        record = self.cache.extra(target) if self.cache.shown(target) is out else self._last
        return self._shown(out, record)

    def try_at(self, context, ob, frame: int) -> np.ndarray | None:
        """After an edit at ``frame`` outdated it: the frame stepped from the state kept before it
        (current or not), shown but not kept, so that an edit shows at once; None where no state
        is kept before it."""
        frame = min(max(int(frame), self.first), self.last)
        if self.cache.current(frame) or frame == self.first or self.cache.state(frame - 1) is None:
            return None
        self._ob = ob
        with blender_io.frame_kept(context.scene):
            out, _state, record = self._step(frame, self.cache.state(frame - 1))
        return self._shown(out, record)

    # -- a bake from the cache -----------------------------------------------------------------
    def reusable(self, context, ob, first: int, last: int, preroll: int):
        """The frames a bake of ``first..last`` with ``preroll`` may take from the cache: those
        current from its first frame on, made with the same start, pre-roll and binding, every
        magnet evaluated. The bake then reads each one's input again and takes them only up to
        the first that differs (``Reused.verified``). None where there are none."""
        if (first, preroll) != (self.first, self.preroll):
            return None
        if scene_reader.unevaluated(context, self.bound.empties) or (preroll and len(self.pre) < preroll):
            return None
        self.check(context, ob)
        upto = self.cache.last_current
        if upto is None:
            return None
        return Reused(self.cache, min(upto, last), dict(self.pre))

    def clear(self) -> None:
        """Forget every frame (the binding stays)."""
        self.cache.clear()
        self.stepper.rebind(self._step, None)

    def status(self) -> str:
        return self.cache.status()


class Reused:
    """A bake's view of the live cache's frames ``cache.start..last`` and of the pre-roll frames'
    records ``pre``."""

    def __init__(self, cache: FrameCache, last: int, pre: dict):
        self.cache, self.last, self.pre = cache, last, pre

    @property
    def first(self) -> int:
        return self.cache.start

    def state(self, f: int):
        return self.cache.state(f)

    def shown(self, f: int) -> np.ndarray:
        return self.cache.shown(f)

    def record(self, f: int):
        return self.pre[f] if f < self.cache.start else self.cache.extra(f)

    def verified(self, digest_at) -> int | None:
        """The last frame taken: every frame from the first pre-roll frame on whose input, read
        again by ``digest_at(frame)`` (the frame set), is what it was computed from — up to the
        first that is not. None: not even the first frame."""
        begin = self.first - len(self.pre)
        for f in range(begin, self.last + 1):
            if digest_at(f) != self.record(f).digest:
                return None if f <= self.first else f - 1
        return self.last
