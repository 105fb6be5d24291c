"""Live preview: the wig's pose at the current frame, written into the hair while the animator
scrubs or moves a magnet (primary movement, spaces and refinement; dynamics need a bake).

The rest positions are kept in memory while a preview runs and written back bit for bit when it
stops, before the file is saved (and re-applied after), and when the add-on is unregistered.
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np

from ..hair_wig import HairWigError
from . import baking, blender_io

_previews: dict[int, "Preview"] = {}
_busy = False              # our own write triggers a depsgraph update: do not answer it


@dataclass
class Preview:
    name: str
    rest: np.ndarray                   # (P, 3) float32, the hair's own positions
    wig: object
    head: object
    empties: list
    surface: object
    out: np.ndarray


def is_previewing(ob) -> bool:
    return ob is not None and ob.session_uid in _previews


def start(context, ob) -> None:
    """Start previewing the wig of ``ob`` (a Curves hair object, not baked)."""
    baking.require_wig(ob)
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
        baking.capture_rest(context, ob)
    wig, head, empties, surface = baking.bind(context, ob, rest_points=rest, dynamics=False)
    _previews[ob.session_uid] = Preview(ob.name, rest, wig, head, empties, surface, np.empty_like(rest))
    update(context.scene, context.evaluated_depsgraph_get())


def stop(ob, restore: bool = True) -> None:
    """Stop previewing ``ob``; put its rest positions back exactly (unless it was edited)."""
    preview = _previews.pop(ob.session_uid, None)
    if preview is not None and restore:
        _write(ob, preview.rest)


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
        ob.data.attributes["position"].data.foreach_set("vector", points.ravel())
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
            inp = baking.frame_input(bpy.context, ob, preview.head, preview.empties, preview.surface,
                                     scene.frame_current, depsgraph, preview.wig)
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
        watched.update(o.name for o in (preview.head, *preview.empties) if o is not None)
        watched.add(preview.name)
    for u in depsgraph.updates:
        if isinstance(u.id, bpy.types.Object) and u.id.name in watched and u.is_updated_transform:
            update(scene, depsgraph)
            return


@bpy.app.handlers.persistent
def on_save_pre(*_args):
    for uid, preview in _previews.items():
        ob = _object(uid)
        if ob is not None and len(ob.data.points) == len(preview.rest):
            _write(ob, preview.rest)


@bpy.app.handlers.persistent
def on_save_post(*_args):
    if _previews:
        update(bpy.context.scene)


@bpy.app.handlers.persistent
def on_load_pre(*_args):
    _previews.clear()         # the objects belong to the file being closed


handlers = ((bpy.app.handlers.frame_change_post, on_frame_change),
            (bpy.app.handlers.depsgraph_update_post, on_depsgraph_update),
            (bpy.app.handlers.save_pre, on_save_pre),
            (bpy.app.handlers.save_post, on_save_post),
            (bpy.app.handlers.load_pre, on_load_pre))


class HAIRWIG_OT_preview(bpy.types.Operator):
    """Show the wig's pose live while you scrub or move magnets (dynamics need a bake); press again to stop"""
    bl_idname = "hair_wig.preview"
    bl_label = "Live Preview"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        ob = context.active_object
        return baking.is_wig(ob) and ob.type == "CURVES"

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
        return {"FINISHED"}


classes = (HAIRWIG_OT_preview,)
