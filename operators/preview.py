"""Live preview: the wig's pose at the current frame, written into the hair while the animator
scrubs or moves a magnet (primary movement, spaces and refinement; dynamics need a bake).

The rest positions are kept while a preview runs and written back bit for bit when it stops,
before the file is saved (and re-applied after), and when the add-on is unregistered. They are
also kept in the hair itself, in the hidden point attribute ``.hair_wig_rest``: Blender's undo
steps (and autosaves) taken during a preview record the previewed pose, and the attribute lets
an undo, a redo or a recovered file give that state's own rest pose back.
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np

from ..hair_wig import HairWigError
from . import blender_io, polls, scene_reader

_previews: dict[int, "Preview"] = {}
_busy = False              # our own write triggers a depsgraph update: do not answer it
REST_ATTRIBUTE = ".hair_wig_rest"


@dataclass
class Preview:
    name: str
    rest: np.ndarray                   # (P, 3) float32, the hair's own positions
    bound: object                      # scene_reader.Bound
    out: np.ndarray

    @property
    def wig(self):
        return self.bound.wig


def is_previewing(ob) -> bool:
    return ob is not None and ob.session_uid in _previews


def start(context, ob) -> None:
    """Start previewing the wig of ``ob`` (a Curves hair object, not baked)."""
    scene_reader.require_wig(ob)
    if ob.type != "CURVES":
        raise HairWigError(f"'{ob.name}': live preview works on Curves hair; bake legacy curves instead")
    if blender_io.is_baked(ob):
        raise HairWigError(f"'{ob.name}' is baked: clear the bake to preview")
    if ob.mode != "OBJECT":
        raise HairWigError(f"'{ob.name}' is in {ob.mode.replace('_', ' ').lower()} mode; preview works in object mode")
    if is_previewing(ob):
        return
    rest = blender_io.read_hair(ob).points.copy()
    if not ob.hair_wig.rest_captured:
        scene_reader.capture_rest(context, ob)
    _bind(context, ob, rest)
    _keep_rest(ob, rest)
    update(context.scene, context.evaluated_depsgraph_get())


def _bind(context, ob, rest: np.ndarray) -> None:
    bound = scene_reader.bind(context, ob, rest_points=rest, dynamics=False)
    wig = bound.wig
    if wig.hair.num_points != len(rest) or not np.array_equal(wig.hair.counts, blender_io.read_hair(ob).counts):
        raise HairWigError(f"'{ob.name}': its key poses have other curves than the hair itself; bake to see them")
    _previews[ob.session_uid] = Preview(ob.name, rest, bound, np.empty_like(rest))


def stop(ob, restore: bool = True) -> None:
    """Stop previewing ``ob``; put its rest positions back exactly (unless it was edited)."""
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
    global _busy
    _busy = True
    try:
        blender_io.write_positions(ob.data, points)
        ob.data.update_tag()
    finally:
        _busy = False


def update(scene, depsgraph=None) -> None:
    """Write every previewed wig's pose at the scene's current frame."""
    for uid, preview in list(_previews.items()):
        ob = _object(uid)
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
            inp = scene_reader.frame_input(bpy.context, ob, preview.bound, scene.frame_current, depsgraph)
            preview.wig.step(inp, None, out=preview.out)
        except (HairWigError, ReferenceError) as err:
            stop(ob)
            print(f"hair_wig: preview of '{preview.name}' stopped: {err}")
            continue
        _write(ob, preview.out)


@bpy.app.handlers.persistent
def on_frame_change(scene, depsgraph=None):
    if _previews and not _busy:
        update(scene, depsgraph)


@bpy.app.handlers.persistent
def on_depsgraph_update(scene, depsgraph):
    """A magnet, the head or the hair object moved: show the new pose (our own writes aside)."""
    if not _previews or _busy:
        return
    watched = set()
    for preview in _previews.values():
        watched.update(o.name for o in (preview.bound.head, *preview.bound.empties) if o is not None)
        watched.add(preview.name)
    for u in depsgraph.updates:
        if isinstance(u.id, bpy.types.Object) and u.id.name in watched and u.is_updated_transform:
            update(scene, depsgraph)
            return


def _unedited():
    """Every previewed object still there with the points it was previewed with, and its preview."""
    for uid, preview in _previews.items():
        ob = _object(uid)
        if ob is not None and len(ob.data.points) == len(preview.rest):
            yield ob, preview


@bpy.app.handlers.persistent
def on_save_pre(*_args):
    """The file gets the rest pose and no trace of the preview."""
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
    _previews.clear()         # the objects belong to the file being closed


@bpy.app.handlers.persistent
def on_load_post(*_args):
    """A file saved by Blender itself during a preview (an autosave, a recovered session) holds a
    previewed pose: give it its rest pose back."""
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
    magnets, head and hair as they were then); hair no longer previewed gets its rest pose back."""
    context = bpy.context
    for ob in bpy.data.objects:
        if ob.type != "CURVES":
            continue
        kept = _kept_rest(ob)
        if ob.session_uid in _previews:
            rest = kept if kept is not None else blender_io.read_hair(ob).points.copy()
            del _previews[ob.session_uid]
            try:
                _bind(context, ob, rest)
                _keep_rest(ob, rest)
                continue
            except HairWigError as err:
                print(f"hair_wig: preview of '{ob.name}' stopped: {err}")
        if kept is not None:
            _write(ob, kept)
            _drop_rest(ob)
    for uid in list(_previews):
        if _object(uid) is None:
            del _previews[uid]
    if _previews:
        update(context.scene, context.evaluated_depsgraph_get())


handlers = ((bpy.app.handlers.frame_change_post, on_frame_change),
            (bpy.app.handlers.depsgraph_update_post, on_depsgraph_update),
            (bpy.app.handlers.save_pre, on_save_pre),
            (bpy.app.handlers.save_post, on_save_post),
            (bpy.app.handlers.load_pre, on_load_pre),
            (bpy.app.handlers.load_post, on_load_post),
            (bpy.app.handlers.undo_post, on_undo_redo_post),
            (bpy.app.handlers.redo_post, on_undo_redo_post))


class HAIRWIG_OT_preview(bpy.types.Operator):
    """Show the wig's pose live while you scrub or move magnets (dynamics need a bake); press again to stop"""
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
            return {"FINISHED"}
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


classes = (HAIRWIG_OT_preview,)
