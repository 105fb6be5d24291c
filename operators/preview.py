"""Live preview: the wig's pose at the current frame, written into the hair while the animator
scrubs or moves a magnet (primary movement, spaces and refinement). With Live Dynamics on
(``use_live_dynamics``, issue 37) the preview runs the wig's dynamics too, frame by frame as the
timeline plays, with a frame cache (``live.Session``).

The rest positions are kept while a preview runs and written back bit for bit when it stops,
before the file is saved (and re-applied after), and when the add-on is unregistered. They are
also kept in the hair itself, in the hidden point attribute ``.hair_wig_rest``: Blender's undo
steps (and autosaves) taken during a preview record the previewed pose, and the attribute lets
an undo, a redo or a recovered file give that state's own rest pose back.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

import bpy
import numpy as np

from ..hair_wig import HairWigError, prepare
from . import blender_io, live, polls, preparation, scene_reader

_previews: dict[int, "Preview"] = {}
_busy = False              # our own write or frame steps trigger handlers: do not answer them (``_quiet``)
_messages: dict[str, str] = {}     # hair name -> why its live dynamics stopped or cannot run
_baking: dict[str, int] = {}       # hair being baked (how many holds): no live dynamics meanwhile


@contextlib.contextmanager
def _quiet():
    """Within the block our handlers answer nothing: what it does (a write, frames stepped, a
    binding visiting the rest frame) is ours."""
    global _busy
    was, _busy = _busy, True
    try:
        yield
    finally:
        _busy = was


def hold(ob) -> None:
    """A bake of ``ob`` steps frames from now: no live wig starts or steps until as many
    ``release`` (a bake of several wigs holds them all, and each wig's computation again)."""
    _baking[ob.name] = _baking.get(ob.name, 0) + 1


def release(ob) -> None:
    left = _baking.pop(ob.name, 0) - 1
    if left > 0:
        _baking[ob.name] = left
REST_ATTRIBUTE = ".hair_wig_rest"


@dataclass
class Preview:
    name: str
    rest: np.ndarray                   # (P, 3) float32, the hair's own positions
    bound: object                      # scene_reader.Bound
    out: np.ndarray
    live: object = None                # live.Session: Live Dynamics on

    @property
    def wig(self):
        return self.bound.wig


def is_previewing(ob) -> bool:
    return ob is not None and ob.session_uid in _previews


def is_live(ob) -> bool:
    preview = _previews.get(ob.session_uid) if ob is not None else None
    return preview is not None and preview.live is not None


def start(context, ob, dynamics: bool | None = None) -> None:
    """Start previewing the wig of ``ob`` (a Curves hair object, not baked), with its dynamics
    where ``dynamics`` (None: where Live Dynamics is on)."""
    scene_reader.require_wig(ob)
    dynamics = ob.hair_wig.use_live_dynamics if dynamics is None else dynamics
    if ob.type != "CURVES":
        if dynamics:
            raise HairWigError(live.legacy_message(ob))
        raise HairWigError(f"'{ob.name}': live preview works on Curves hair; bake legacy curves instead")
    if blender_io.is_baked(ob):
        raise HairWigError(f"'{ob.name}' is baked: clear the bake to preview")
    if ob.mode != "OBJECT":
        raise HairWigError(f"'{ob.name}' is in {ob.mode.replace('_', ' ').lower()} mode; preview works in object mode")
    if is_previewing(ob):
        if is_live(ob) == dynamics:
            return
        stop(ob)
    _messages.pop(ob.name, None)
    rest = blender_io.read_hair(ob).points.copy()
    if not dynamics and not ob.hair_wig.rest_captured:
        # the kinematic preview's rest pose is the frame it starts at; live dynamics binds as a
        # bake binds (at the rest frame), changing no setting of the wig
        scene_reader.capture_rest(context, ob)
    _bind(context, ob, rest, dynamics)
    _keep_rest(ob, rest)
    update(context.scene, context.evaluated_depsgraph_get())


def _bind(context, ob, rest: np.ndarray, dynamics: bool = False) -> None:
    if dynamics:
        with _quiet():                        # binding may visit the rest frame
            session = live.Session(context, ob, rest, _write)
        bound = session.bound
    else:
        session, bound = None, scene_reader.bind(context, ob, rest_points=rest, dynamics=False)
    wig = bound.wig
    if wig.hair.num_points != len(rest) or not np.array_equal(wig.hair.counts, blender_io.read_hair(ob).counts):
        raise HairWigError(f"'{ob.name}': its key poses have other curves than the hair itself; bake to see them")
    _previews[ob.session_uid] = Preview(ob.name, rest, bound, np.empty_like(rest), session)


def stop(ob, restore: bool = True) -> None:
    """Stop previewing ``ob``; put its rest positions back exactly (unless it was edited)."""
    blender_io.unmute_for_frame(ob.name)
    preview = _previews.pop(ob.session_uid, None)
    if preview is not None and restore:
        _write(ob, preview.rest)
    _drop_rest(ob)


def _keep_rest(ob, rest: np.ndarray) -> None:
    attrs = ob.data.attributes
    attr = attrs.get(REST_ATTRIBUTE) or attrs.new(REST_ATTRIBUTE, "FLOAT_VECTOR", "POINT")
    attr.data.foreach_set("vector", rest.ravel())


def _kept_rest(ob) -> np.ndarray | None:
    attr = ob.data.attributes.get(REST_ATTRIBUTE) if ob.type == "CURVES" else None
    if attr is None:
        return None
    rest = np.empty((len(ob.data.points), 3), np.float32)
    attr.data.foreach_get("vector", rest.ravel())
    return rest


def _drop_rest(ob) -> None:
    attr = ob.data.attributes.get(REST_ATTRIBUTE) if ob.type == "CURVES" else None
    if attr is not None:
        ob.data.attributes.remove(attr)


def stop_all() -> None:
    blender_io.unmute_for_frame()
    for uid in list(_previews):
        ob = _object(uid)
        if ob is not None:
            stop(ob)
        _previews.pop(uid, None)


def _object(uid):
    for ob in bpy.data.objects:
        if ob.session_uid == uid:
            return ob
    return None


def _write(ob, points: np.ndarray) -> None:
    with _quiet():
        blender_io.write_positions(ob.data, points)
        ob.data.update_tag()


def _fail(ob, name: str, dynamics: bool, err, frame) -> None:
    """An error while playing the hair ``name``: its preview stops (its rest pose back); with
    ``dynamics``, Live Dynamics goes off and the panel says why, naming the wig."""
    stop(ob)
    kind = "live dynamics" if dynamics else "preview"
    if isinstance(err, ReferenceError):      # Blender's words for it name no object
        err = "an object it reads (its head, a magnet or a collider) was deleted"
    text = f"'{name}': {kind} stopped at frame {frame}: {err}"
    if dynamics:
        if ob.hair_wig.use_live_dynamics:
            ob.hair_wig.use_live_dynamics = False         # its update stops nothing more: stopped
        _messages[name] = text
    print(f"hair_wig: {text}")


def _live_show(context, ob, preview, frame, edited: bool = False) -> np.ndarray:
    """A live wig's frame (``edited``: after an edit outdated it, stepped once from the frame
    before where that is kept, for the edit to show at once)."""
    with _quiet():                            # its steps set frames: not ours to answer
        session = preview.live
        if not session.matches(context, ob):          # another frame range or pre-roll: start again
            del _previews[ob.session_uid]
            _bind(context, ob, preview.rest, True)
            preview = _previews[ob.session_uid]
            session = preview.live
        out = session.try_at(context, ob, frame) if edited else None
        return session.show(context, ob, frame) if out is None else out


def clear_live(ob) -> bool:
    """Forget a live wig's frames and show its groom again (Live Dynamics stays on: playing
    computes them anew). Whether there was a cache."""
    preview = _previews.get(ob.session_uid) if ob is not None else None
    if preview is None or preview.live is None:
        return False
    preview.live.clear()
    _write(ob, preview.rest)
    return True


def baked_message(ob) -> str:
    return f"'{ob.name}' is baked: the bake plays; clear it for live dynamics"


def status(ob) -> str | None:
    """What the panel says of a wig's live dynamics: why it stopped or cannot run, or its cache."""
    if ob is None:
        return None
    if ob.name in _messages:
        return _messages[ob.name]
    if ob.hair_wig.use_live_dynamics and ob.type != "CURVES":
        return live.legacy_message(ob)
    if ob.hair_wig.use_live_dynamics and blender_io.is_baked(ob):
        return baked_message(ob)
    preview = _previews.get(ob.session_uid)
    if preview is not None and preview.live is not None:
        return preview.live.status()
    return None


def live_warnings(ob) -> list[str]:
    """What a live wig's binding warned of (the panel lists them)."""
    preview = _previews.get(ob.session_uid) if ob is not None else None
    return [] if preview is None or preview.live is None else preview.live.warnings


def live_frames(context, ob, first: int, last: int, preroll: int):
    """For a bake of ``ob`` over ``first..last`` after ``preroll``: the live cache's frames it can
    take (``live.Reused``), or None."""
    preview = _previews.get(ob.session_uid)
    if preview is None or preview.live is None:
        return None
    with _quiet():
        return preview.live.reusable(context, ob, first, last, preroll)


_dirty = False              # a setting was set: the live wigs check what changed, once


def setting_changed(owner) -> None:
    """A hair_wig setting of ``owner`` (a wig or a magnet) was set: the live wigs check what
    changed — once, however many settings were set meanwhile (a dragged slider, an operator
    setting several): from a timer when Blender's event loop runs, else at the next depsgraph
    update or frame change."""
    global _dirty
    if _busy or _dirty or not any(p.live is not None for p in _previews.values()):
        return
    _dirty = True
    if not bpy.app.background:
        bpy.app.timers.register(_checked, first_interval=0.0)


def _checked():
    """The timer of ``setting_changed``."""
    global _dirty
    if _dirty and not _busy:
        _dirty = False
        context = bpy.context
        if context.scene is not None:
            _check_live(context, context.scene)
    return None


def _check_live(context, scene) -> bool:
    """Every live wig checks what changed (``live.Session.check``); whether any outdated frames."""
    global _dirty
    _dirty = False
    edited = False
    for uid, preview in list(_previews.items()):
        ob = _object(uid)
        if preview.live is None or ob is None or ob.mode != "OBJECT":
            continue                          # a wig out of object mode: update() stops it
        try:
            with _quiet():
                changed = preview.live.check(context, ob, scene.frame_current)
        except Exception as err:             # noqa: BLE001 — never out of a handler
            _fail(ob, preview.name, True, err, scene.frame_current)
            continue
        edited = edited or changed is not None
    if edited:
        update(scene, None, edited=True)
    return edited


def live_toggled(settings, context) -> None:
    """Live Dynamics switched on or off for a wig."""
    ob = settings.id_data
    if not isinstance(ob, bpy.types.Object) or not ob.hair_wig.enabled:
        return
    _messages.pop(ob.name, None)
    if not settings.use_live_dynamics:
        if is_live(ob):
            stop(ob)
        return
    if ob.type != "CURVES":
        return                                # status() says it needs a bake
    _start_live(context, ob)


def _start_live(context, ob) -> None:
    """Start a wig's live dynamics where it can run (not baked, in object mode; status() says
    why not)."""
    if blender_io.is_baked(ob) or ob.mode != "OBJECT" or _kernels_pending(context.scene):
        return                                # (kernels being prepared: started when they are)
    try:
        start(context, ob, dynamics=True)
    except Exception as err:                 # noqa: BLE001 — never out of a handler: say it
        _fail(ob, ob.name, True, err, context.scene.frame_current)


def _start_live_wigs(context, scene) -> None:
    """Wigs with Live Dynamics on and no session yet (a file opened, a bake cleared, an undo)."""
    for ob in scene.objects:
        s = ob.hair_wig
        if not (s.use_live_dynamics and s.enabled) or ob.session_uid in _previews or ob.name in _baking:
            continue
        if ob.type == "CURVES" and ob.name not in _messages:     # a stopped one waits to be switched on
            _start_live(context, ob)


def update(scene, depsgraph=None, edited: bool = False) -> None:
    """Write every previewed wig's pose at the scene's current frame (``edited``: after an edit,
    not a frame change)."""
    for uid, preview in list(_previews.items()):
        if preview.live is not None and _baking:
            continue                          # a bake's frames: live wigs wait for it
        ob = _object(uid)
        if ob is not None and preview.live is not None and blender_io.is_baked(ob):
            stop(ob)                          # baked meanwhile: the bake plays
            continue
        if ob is None or scene.objects.get(ob.name) is None:
            if ob is None:
                _previews.pop(uid, None)
            continue
        if ob.mode != "OBJECT":
            stop(ob)
            print(f"hair_wig: '{ob.name}' left object mode; its preview stopped and the rest pose is back")
            continue
        if len(ob.data.points) != len(preview.rest):
            stop(ob, restore=False)
            print(f"hair_wig: '{ob.name}' was edited while previewed ({len(preview.rest)} -> "
                  f"{len(ob.data.points)} points); preview stopped, the hair is left as edited")
            continue
        try:
            if preview.live is not None:
                out = _live_show(bpy.context, ob, preview, scene.frame_current, edited)
            else:
                inp = scene_reader.frame_input(bpy.context, ob, preview.bound, scene.frame_current, depsgraph)
                out = preview.wig.step(inp, None, out=preview.out, measure=False)[0]
        except Exception as err:             # noqa: BLE001 — never out of a handler: stop and say it
            _fail(ob, preview.name, preview.live is not None, err, scene.frame_current)
            continue
        _write(ob, out)


_skipped = []          # a frame not shown while kernels were prepared (``catch_up`` shows it)


def _shown_wigs(scene) -> list:
    return [ob for ob in scene.objects if ob.hair_wig.enabled
            and (ob.hair_wig.use_live_dynamics or ob.session_uid in _previews)]


def _kernels_pending(scene) -> bool:
    """Whether the kernels the wigs shown here need are still being prepared in the background:
    a frame then shows what it showed, as computing it would compile them in Blender's own
    process, frozen meanwhile (``catch_up`` shows it once they are ready)."""
    if not preparation.running():
        return False
    wigs = _shown_wigs(scene)
    pending = bool(wigs) and preparation.waiting(preparation.needed(wigs))
    if pending and not _skipped:
        _skipped.append(True)
    return pending


def catch_up(scene) -> None:
    """The frame skipped while the kernels were prepared, shown now that they are ready (not
    when the preparation stopped short: the next frame the artist asks for compiles them)."""
    if _skipped and not _kernels_pending(scene):
        _skipped.clear()
        if prepare.prepared(preparation.needed(_shown_wigs(scene))):
            on_frame_change(scene)


@bpy.app.handlers.persistent
def on_frame_change_pre(scene, depsgraph=None):
    """The previewed hair's modifiers off for the frame's first evaluation: its positions are
    written after it (``on_frame_change``), which evaluates the stack again
    (``blender_io.mute_for_frame``)."""
    if _busy or not _main_thread():
        return
    with _quiet():
        blender_io.unmute_for_frame()          # a frame change whose handlers were cut short
        if not _previews or _kernels_pending(scene):
            return
        obs = [ob for ob in map(_object, _previews) if ob is not None and ob.mode == "OBJECT"
               and ob.name not in _baking and scene.objects.get(ob.name) is not None]
        blender_io.mute_for_frame(obs)


def _main_thread() -> bool:
    """Whether this handler runs in Blender's main thread (a render job calls the frame-change
    handlers from its own: the viewport's modifiers are not its to switch)."""
    return threading.current_thread() is threading.main_thread()


@bpy.app.handlers.persistent
def on_frame_change(scene, depsgraph=None):
    if _busy:
        return
    try:
        if _kernels_pending(scene):
            return
        if _dirty:
            _checked()
        _start_live_wigs(bpy.context, scene)
        if _previews:
            update(scene, depsgraph)
    finally:
        if _main_thread():
            with _quiet():
                blender_io.unmute_for_frame()


@bpy.app.handlers.persistent
def on_depsgraph_update(scene, depsgraph):
    """A magnet, the head or the hair object moved: show the new pose (our own writes aside). A
    live wig: what changed outdates its cache from the first frame it affects (``live.Session.check``);
    the update our own write of a live wig's hair causes is not a change."""
    if not _previews or _busy:
        return
    context = bpy.context
    for uid, preview in list(_previews.items()):
        ob = _object(uid)
        if ob is not None and ob.mode != "OBJECT" and len(ob.data.points) == len(preview.rest):
            # into edit or sculpt mode: the groom back before a stroke can land on a shown pose
            stop(ob)
            print(f"hair_wig: '{ob.name}' left object mode; its preview stopped and the rest pose is back")
    if not _previews:
        return
    ours = {p.name for p in _previews.values() if p.live is not None}
    ours_data = {o.data.name for o in map(_object, _previews) if o is not None and o.name in ours}
    watched = set()
    for preview in _previews.values():
        if preview.live is None:
            watched.update(o.name for o in (preview.bound.head, *preview.bound.empties) if o is not None)
            watched.add(preview.name)
    moved = any(isinstance(u.id, bpy.types.Object) and u.id.name in watched and u.is_updated_transform
                for u in depsgraph.updates)
    other = any(not ((isinstance(u.id, bpy.types.Curves) and u.id.name in ours_data)
                     or (isinstance(u.id, bpy.types.Object) and u.id.name in ours and not u.is_updated_transform))
                for u in depsgraph.updates)
    if not (other and _check_live(context, scene)) and moved and not _kernels_pending(scene):
        update(scene, depsgraph)


def _unedited():
    """Every previewed object still there with the points it was previewed with, and its preview."""
    for uid, preview in _previews.items():
        ob = _object(uid)
        if ob is not None and len(ob.data.points) == len(preview.rest):
            yield ob, preview


@bpy.app.handlers.persistent
def on_save_pre(*_args):
    """The file gets the rest pose and no trace of the preview."""
    blender_io.unmute_for_frame()             # never left between a frame's handlers; to be sure
    for ob, preview in _unedited():
        _write(ob, preview.rest)
        _drop_rest(ob)


@bpy.app.handlers.persistent
def on_save_post(*_args):
    for ob, preview in _unedited():
        _keep_rest(ob, preview.rest)
    if _previews:
        update(bpy.context.scene)


@bpy.app.handlers.persistent
def on_load_pre(*_args):
    blender_io.unmute_for_frame()
    _previews.clear()         # the objects belong to the file being closed
    _messages.clear()


@bpy.app.handlers.persistent
def on_load_post(*_args):
    """A file saved by Blender itself during a preview (an autosave, a recovered session) holds a
    previewed pose: give it its rest pose back."""
    blender_io.restore_muted(bpy.data.objects)
    for ob in bpy.data.objects:
        rest = _kept_rest(ob)
        if rest is not None:
            _write(ob, rest)
            _drop_rest(ob)
            print(f"hair_wig: '{ob.name}' was saved during a live preview; its rest pose is back")


@bpy.app.handlers.persistent
def on_undo_redo_post(*_args):
    """Undo and redo load a recorded state of the file. A state recorded during a preview holds a
    previewed pose and, in ``.hair_wig_rest``, that state's rest pose; any other state holds the
    hair's own positions. A running preview carries on from the loaded state's rest pose (the
    magnets, head and hair as they were then); hair no longer previewed gets its rest pose back. A
    live wig with the same groom keeps its frames, outdated by what the undo changed."""
    context = bpy.context
    blender_io.restore_muted(bpy.data.objects)
    for ob in bpy.data.objects:
        if ob.type != "CURVES":
            continue
        kept = _kept_rest(ob)
        if ob.session_uid in _previews:
            rest = kept if kept is not None else blender_io.read_hair(ob).points.copy()
            preview = _previews.pop(ob.session_uid)
            if preview.live is not None and not ob.hair_wig.use_live_dynamics:
                preview = None                 # the state undone to had Live Dynamics off
            try:
                if preview is not None and preview.live is not None and np.array_equal(rest, preview.rest):
                    # the same groom: the frames stay, outdated by what the undo changed
                    _previews[ob.session_uid] = preview
                    with _quiet():
                        preview.live.check(context, ob, context.scene.frame_current)
                    _keep_rest(ob, rest)
                    continue
                if preview is not None:
                    _bind(context, ob, rest, preview.live is not None)
                    _keep_rest(ob, rest)
                    continue
            except Exception as err:         # noqa: BLE001 — never out of a handler
                _previews.pop(ob.session_uid, None)
                print(f"hair_wig: preview of '{ob.name}' stopped: {err}")
        if kept is not None:
            _write(ob, kept)
            _drop_rest(ob)
    for uid in list(_previews):
        if _object(uid) is None:
            del _previews[uid]
    if _previews:
        update(context.scene, context.evaluated_depsgraph_get())


handlers = ((bpy.app.handlers.frame_change_pre, on_frame_change_pre),
            (bpy.app.handlers.frame_change_post, on_frame_change),
            (bpy.app.handlers.depsgraph_update_post, on_depsgraph_update),
            (bpy.app.handlers.save_pre, on_save_pre),
            (bpy.app.handlers.save_post, on_save_post),
            (bpy.app.handlers.load_pre, on_load_pre),
            (bpy.app.handlers.load_post, on_load_post),
            (bpy.app.handlers.undo_post, on_undo_redo_post),
            (bpy.app.handlers.redo_post, on_undo_redo_post))


class HAIRWIG_OT_preview(bpy.types.Operator):
    """Show the wig's pose live while you scrub or move magnets (its dynamics too with Live Dynamics on); press again to stop"""
    bl_idname = "hair_wig.preview"
    bl_label = "Live Preview"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return polls.curves_wig(cls, context)

    def execute(self, context):
        ob = context.active_object
        if is_previewing(ob):
            stop(ob)
            if ob.hair_wig.use_live_dynamics:
                ob.hair_wig.use_live_dynamics = False
            return {"FINISHED"}
        if not preparation.gate(self, [ob]):
            return {"CANCELLED"}
        try:
            start(context, ob)
        except HairWigError as err:
            stop(ob)
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        bound = _previews[ob.session_uid].bound
        for warning in bound.wig.warnings() + bound.warnings + scene_reader.hidden_magnet_warnings(context, ob):
            self.report({"WARNING"}, warning)
        return {"FINISHED"}


class HAIRWIG_OT_clear_live_cache(bpy.types.Operator):
    """Forget the frames Live Dynamics computed and show the groom; playing computes them again"""
    bl_idname = "hair_wig.clear_live_cache"
    bl_label = "Clear Live Cache"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return is_live(context.active_object)

    def execute(self, context):
        clear_live(context.active_object)
        return {"FINISHED"}


classes = (HAIRWIG_OT_preview, HAIRWIG_OT_clear_live_cache)
