"""Operators: enable a wig, bake, clear a bake. Thin: they call baking/blender_io and report."""

import time

import bpy
from bpy.props import BoolProperty, EnumProperty, IntProperty

from ..hair_wig import HairWigError, prepare
from . import baking, blender_io, polls, preparation, profile_curves, scene_reader


def _hair(context):
    ob = context.active_object
    return ob if ob is not None and ob.type in blender_io.HAIR_TYPES else None


class HAIRWIG_OT_enable(bpy.types.Operator):
    """Make the active hair object a wig, with its surface (if any) as the head"""
    bl_idname = "hair_wig.enable"
    bl_label = "Enable Wig"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return polls.hair(cls, context)

    def execute(self, context):
        ob = _hair(context)
        ob.hair_wig.enabled = True
        if ob.hair_wig.head is None and ob.type == "CURVES" and ob.data.surface is not None:
            ob.hair_wig.head = ob.data.surface
        profile_curves.ensure(ob.hair_wig, ob.name)
        return {"FINISHED"}


class HAIRWIG_OT_bake(bpy.types.Operator):
    """Bake the wig's motion into keyframed playback data that needs no add-on to play (Esc cancels)"""
    bl_idname = "hair_wig.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    all_wigs: BoolProperty(name="All Wigs", description="Bake every wig in the scene", default=False)

    _job = None
    _timer = None
    _warming = None
    _kernels = ()
    _look_at = 0.0
    _compiling = None

    @classmethod
    def poll(cls, context):
        return polls.some_wig(cls, context)

    def _start(self, context):
        obs = scene_reader.wigs_in(context.scene) if self.all_wigs else [_hair(context)]
        if not obs or not all(scene_reader.is_wig(ob) for ob in obs):
            raise HairWigError("Select a hair object with Wig enabled, or use Bake All Wigs")
        return baking.BakeJob(context, obs)

    def _done(self, job):
        frames = job.finish()
        for cache in job.caches:
            for warning in cache.warnings:
                self.report({"WARNING"}, warning)
        deepest = max((c.penetration for c in job.caches), default=0.0)
        collided = any(c.colliders for c in job.caches)
        self.report({"INFO"}, f"Baked {len(job.obs)} wig(s), {frames} frames"
                              + (f"; deepest point left inside a collider: {deepest:.2g} m" if collided else ""))
        return {"FINISHED"}

    def execute(self, context):
        try:
            job = self._start(context)
            names = preparation.needed(job.obs)
            preparation.wait(names)
            for _ in prepare.warm_up(names):
                pass
            job.advance(job.total + 1)
            return self._done(job)
        except HairWigError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}

    def invoke(self, context, event):
        if context.window is None:          # background: no event loop to drive a modal bake
            return self.execute(context)
        try:
            self._job = self._start(context)
        except HairWigError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        wm = context.window_manager
        wm.progress_begin(0, self._job.total)
        # the kernels its wigs need: waited for while the background preparation makes them,
        # then loaded (or, where it stopped, compiled) one group at a time between timer events
        self._kernels = preparation.needed(self._job.obs)
        self._warming = None if prepare.warmed(self._kernels) else prepare.warm_up(self._kernels)
        if self._warming is not None:
            context.workspace.status_text_set("Hair Wig: getting the hair kernels ready — Esc to cancel")
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _stop(self, context):
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        context.workspace.status_text_set(None)

    def modal(self, context, event):
        job = self._job
        if event.type == "ESC":
            job.cancel()
            self._stop(context)
            self.report({"WARNING"}, "Bake cancelled: nothing was changed")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        if self._warming is not None:
            now_ = time.monotonic()
            if now_ < self._look_at:              # the timer runs often; the workers are looked at 4 times a second
                return {"RUNNING_MODAL"}
            if preparation.waiting(self._kernels):
                self._look_at = now_ + 0.25
                done, total, now = preparation.progress(self._kernels)
                context.workspace.status_text_set(
                    f"Hair Wig: the bake starts when its hair kernels are ready, {done}/{total} prepared"
                    + (f" ({', '.join(now)})" if now else "") + " — once after installing — Esc to cancel")
                return {"RUNNING_MODAL"}
            if self._compiling is None:            # what the rest of the way is: loading, or compiling here
                self._compiling = not prepare.prepared(self._kernels)
            step = next(self._warming, None)
            if step is None:
                self._warming = None
            else:
                done, total, name = step
                context.workspace.status_text_set(
                    f"Hair Wig: compiling hair kernels here (the background preparation stopped; once, a minute "
                    f"or two), {done}/{total} ({name}) — Esc cancels after this one" if self._compiling else
                    f"Hair Wig: loading hair kernels, {done}/{total} ({name}) — Esc to cancel")
            return {"RUNNING_MODAL"}
        try:
            finished = job.advance(4)
        except HairWigError as err:
            job.cancel()
            self._stop(context)
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        context.window_manager.progress_update(job.done)
        context.workspace.status_text_set(
            f"Hair Wig: baking '{job.current.name}', {job.done}/{job.total} frames — Esc to cancel")
        if not finished:
            return {"RUNNING_MODAL"}
        self._stop(context)
        return self._done(job)


class HAIRWIG_OT_clear_bake(bpy.types.Operator):
    """Remove the bake and show the hair's rest pose again, exactly as before baking"""
    bl_idname = "hair_wig.clear_bake"
    bl_label = "Clear Bake"
    bl_options = {"REGISTER", "UNDO"}

    all_wigs: BoolProperty(name="All Wigs", description="Clear every bake in the scene", default=False)

    @classmethod
    def poll(cls, context):
        return polls.some_bake(cls, context)

    def execute(self, context):
        obs = context.scene.objects if self.all_wigs else [_hair(context)]
        cleared = sum(blender_io.clear_bake(ob) for ob in obs if ob is not None)
        if not cleared:
            self.report({"WARNING"}, "Nothing to clear: the selected hair has no bake")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Cleared {cleared} bake(s)")
        return {"FINISHED"}


class HAIRWIG_OT_rebake_frames(bpy.types.Operator):
    """Bake some frames again and keep the rest of the bake: after changing a magnet's keys in a
    few frames, say. The wig runs from the bake's start, so dynamics come out exactly as a whole
    re-bake would make them in these frames. The frames after them were made by the dynamics as
    they ran before: continue the re-bake to the end, keep them (marked outdated), or clear them"""
    bl_idname = "hair_wig.rebake_frames"
    bl_label = "Re-bake Frames"
    bl_options = {"REGISTER", "UNDO"}

    frame_start: IntProperty(name="From", description="First frame to bake again")
    frame_end: IntProperty(name="To", description="Last frame to bake again (included); past the bake's "
                                                  "end, the bake grows")
    after: EnumProperty(
        name="Frames After",
        description="What becomes of the baked frames after these: the dynamics that made them ran "
                    "through the frames before, as they were then",
        items=[("CONTINUE", "Continue to the End", "Bake on to the end of the bake, so the change carries "
                                                   "through the dynamics"),
               ("KEEP", "Keep (Outdated)", "Keep them as they are; the panel marks them outdated until "
                                           "they are baked again"),
               ("CLEAR", "Clear", "Remove them: the bake ends with these frames")],
        default="CONTINUE")

    @classmethod
    def poll(cls, context):
        return polls.baked_wig(cls, context)

    def invoke(self, context, event):
        scene = context.scene
        first, last = blender_io.bake_range(_hair(context))
        if scene.use_preview_range:          # the range the animator is working on
            lo, hi = scene.frame_preview_start, scene.frame_preview_end
        else:
            lo = hi = scene.frame_current
        self.frame_start = min(max(lo, first), last)
        self.frame_end = min(max(hi, self.frame_start), last)
        return context.window_manager.invoke_props_dialog(self)

    def execute(self, context):
        ob = _hair(context)
        if not preparation.gate(self, [ob]):
            return {"CANCELLED"}
        try:
            cache = baking.rebake_frames(context, ob, self.frame_start, self.frame_end, after=self.after)
        except HairWigError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        for warning in cache.warnings:
            self.report({"WARNING"}, warning)
        a, b = cache.rebaked
        done = f"Re-baked frames {a}..{b} of '{ob.name}' (bake {cache.first}..{cache.last})"
        if cache.cleared is not None:
            done += f"; cleared frames {cache.cleared[0]}..{cache.cleared[1]} after them"
        if cache.outdated:
            self.report({"WARNING"}, f"{done}; frames {baking.say_ranges(cache.outdated)} keep the motion of an "
                                     f"earlier bake (outdated): re-bake them, or Continue to the End")
        else:
            self.report({"INFO"}, done)
        return {"FINISHED"}


classes = (HAIRWIG_OT_enable, HAIRWIG_OT_bake, HAIRWIG_OT_clear_bake, HAIRWIG_OT_rebake_frames)
