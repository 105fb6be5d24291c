"""A bake that lives on disk, not in the .blend (issue 18): the wig is stepped frame by frame as
Blender's own Alembic exporter reaches each frame — the exporter drives the solver, and writes
each frame's hair to the file as it goes — so memory holds the wig and one frame however long
the shot. Blender's Mesh Sequence Cache modifier then plays the file; nothing of hair_wig is
needed to play, render or reopen it. Baking again replaces the file; clearing the bake takes the
modifier off and leaves the file (Undo must find it); a failed or cancelled bake leaves the
scene, any earlier bake and its file as they were."""

from __future__ import annotations

import os
import time
from pathlib import Path

import bpy
import numpy as np

from ..hair_wig import HairWigError
from . import blender_io, preview, scene_reader


def cache_path(ob) -> str:
    """Where ``ob``'s disk bake goes: its setting, or ``//hair_wig/<object>.abc`` beside the .blend."""
    return ob.hair_wig.cache_path or f"//hair_wig/{bpy.path.clean_name(ob.name)}.abc"


def bake_to_disk(context, ob, first: int | None = None, last: int | None = None, path: str | None = None,
                 progress=None) -> dict:
    """Bake ``ob``'s wig over its frames into an Alembic file at ``path`` (default ``cache_path``)
    and play it with a Mesh Sequence Cache modifier. ``progress(done, total)`` after every frame.
    Returns ``{"first", "last", "path", "bytes", "seconds"}``."""
    scene_reader.require_wig(ob)
    blender_io.check_bakeable(ob)
    if ob.type != "CURVES":
        raise HairWigError(f"'{ob.name}' is a legacy Curve: disk bakes are for Curves hair")
    path = path or cache_path(ob)
    if path.startswith("//") and not bpy.data.filepath:
        raise HairWigError(f"save the .blend first: '{ob.name}''s disk cache {path} goes beside it")
    out = Path(bpy.path.abspath(path))
    out.parent.mkdir(parents=True, exist_ok=True)
    first, last = scene_reader.frame_range(context.scene, ob, first, last)
    preroll = ob.hair_wig.preroll
    preview.stop(ob)
    preview.hold(ob)                          # the exporter's frame steps start or step no live wig
    scene = context.scene
    frame, subframe = scene.frame_current, scene.frame_subframe
    selection = [(o, o.select_get()) for o in context.view_layer.objects]
    rest = np.array(blender_io.read_curves_data(ob.data, ob.name).points, np.float32)
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.tmp{out.suffix}")
    try:
        children = scene_reader.children_roots(context, ob)     # read before the stack is switched off
        muted = blender_io.mute_modifiers([ob])
    except BaseException:
        preview.release(ob)
        raise
    stream = None
    shown = []
    step = {"state": None, "next": first, "error": None}
    start = time.perf_counter()
    try:
        shown = scene_reader.evaluate_magnets(context, [ob])
        bound = scene_reader.bind(context, ob, children=children)
        wig = bound.wig
        if wig.keyed is not None:
            raise HairWigError(f"'{ob.name}' bakes a keyed hairstyle whose curves change: bake it into the .blend")
        out_frame = np.empty_like(rest)
        total = last - first + 1 + preroll
        for done, f in enumerate(range(first - preroll, first), start=1):
            scene.frame_set(f)
            inp = scene_reader.frame_input(context, ob, bound, f)
            _, step["state"] = wig.step(inp, step["state"], out=out_frame, keep_state=False)
            if progress is not None:
                progress(done, total)
        stream = blender_io.add_stream_modifier(ob)

        def on_frame(scene_now, depsgraph=None):
            f = scene_now.frame_current
            if f != step["next"] or step["error"] is not None:
                return                        # the exporter's own restore of the frame, after the last
            try:
                inp = scene_reader.frame_input(context, ob, bound, f, depsgraph=depsgraph)
                _, step["state"] = wig.step(inp, step["state"], out=out_frame, keep_state=False)
                if not np.isfinite(out_frame).all():
                    raise HairWigError(f"'{ob.name}': the solution is not finite at frame {f}; nothing was written")
                blender_io.write_positions(ob.data, out_frame)
                ob.data.update_tag()
                if depsgraph is not None:
                    depsgraph.update()
                step["next"] = f + 1
                if progress is not None:
                    progress(preroll + f - first + 1, total)
            except Exception as err:          # raised here it would be lost in the exporter: carried out
                step["error"] = err

        for o, _ in selection:
            o.select_set(o == ob)
        bpy.app.handlers.frame_change_post.append(on_frame)
        try:
            done = bpy.ops.wm.alembic_export(filepath=str(tmp), start=first, end=last, selected=True,
                                             evaluation_mode="VIEWPORT")
        finally:
            bpy.app.handlers.frame_change_post.remove(on_frame)
        if step["error"] is not None:
            raise step["error"]
        if done != {"FINISHED"} or step["next"] != last + 1 or not tmp.is_file():
            raise HairWigError(f"'{ob.name}': Blender's Alembic exporter stopped at frame {step['next']}; "
                               "nothing was written")
    except BaseException:
        preview.release(ob)
        tmp.unlink(missing_ok=True)
        raise
    finally:
        blender_io.write_positions(ob.data, rest)          # the groom, exactly as it was
        ob.data.update_tag()
        if stream is not None:
            blender_io.remove_stream_modifier(ob, stream)
        blender_io.unmute_modifiers(muted)
        scene_reader.restore_magnets(context, shown)
        for o, s in selection:
            o.select_set(s)
        scene.frame_set(frame, subframe=subframe)
    try:
        blender_io.clear_bake(ob)               # the earlier bake goes only now that this one is whole
        os.replace(tmp, out)
        blender_io.install_disk_cache(ob, path, first, last, len(rest))
    finally:
        preview.release(ob)
    return {"first": first, "last": last, "path": path, "bytes": out.stat().st_size,
            "seconds": time.perf_counter() - start}


class HAIRWIG_OT_bake_to_disk(bpy.types.Operator):
    """Bake this wig into an Alembic cache on disk instead of the .blend: the frames stream to the file
    as they are computed, so memory stays small however long the shot; Blender's Mesh Sequence Cache
    modifier plays it, with or without hair_wig"""
    bl_idname = "hair_wig.bake_to_disk"
    bl_label = "Bake to Disk"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        from . import polls

        return polls.curves_wig(cls, context)

    def execute(self, context):
        from . import preparation

        ob = context.active_object
        if not preparation.gate(self, [ob]):
            return {"CANCELLED"}
        wm = context.window_manager
        wm.progress_begin(0, 1)
        try:
            done = bake_to_disk(context, ob, progress=lambda d, t: wm.progress_update(d / max(t, 1)))
        except HairWigError as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        finally:
            wm.progress_end()
        self.report({"INFO"}, f"Baked '{ob.name}' frames {done['first']}..{done['last']} to {done['path']} "
                              f"({done['bytes'] / 2**20:.1f} MB) in {done['seconds']:.1f} s")
        return {"FINISHED"}


classes = (HAIRWIG_OT_bake_to_disk,)
