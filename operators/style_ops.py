"""Style Hair (seed 003): hair styled as cantilevers under gravity and a styling force, curled and
layered over the head, written as ordinary ``Curves`` hair. Thin: the scene is read by
``scene_reader.read_style``, styled by ``hair_wig.styling``, written by ``blender_io``."""

import time

import bpy

from ..hair_wig import HairWigError
from ..hair_wig.styling import style_strands
from . import blender_io, polls, preparation, preview, scene_reader


class HAIRWIG_OT_style_hair(bpy.types.Operator):
    """Style the hair by physics: each strand bends under gravity and the styling force as a beam of
    the stiffness set, slides over the surface, and curls; restyles the curves there are or grows new
    ones on the scalp"""
    bl_idname = "hair_wig.style_hair"
    bl_label = "Style Hair"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        ob = context.active_object
        if ob is None or ob.type != "CURVES":
            return polls.refuse(cls, "Select a Curves hair object (Add > Curves > Empty Hair makes one "
                                     "on the active mesh)")
        if context.mode not in {"OBJECT", "SCULPT_CURVES"}:
            return polls.refuse(cls, "Style Hair works in Object Mode or Sculpt Mode")
        return True

    def execute(self, context):
        ob = context.active_object
        if not preparation.gate(self):
            return {"CANCELLED"}
        try:
            if blender_io.is_baked(ob):
                raise HairWigError(f"'{ob.name}' is baked: clear the bake before styling it")
            uv_problem = scene_reader.style_uv_problem(ob)         # read before the hair is written
            if uv_problem is not None and uv_problem[1]:
                raise HairWigError(f"Style Hair: {uv_problem[0]}")
            start = time.perf_counter()
            job = scene_reader.read_style(context, ob)
            points = style_strands(job.roots, job.directions, job.lengths, job.counts, **job.settings)
        except HairWigError as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        if preview.is_previewing(ob):
            preview.stop(ob)
        blender_io.write_styled(ob, points, job.counts, job.uv, job.add, job.replace, job.surface, job.uv_map,
                                job.curves)
        if uv_problem is not None:
            self.report({"WARNING"}, f"Style Hair: {uv_problem[0]}")
        verb = "Grew and styled" if job.add else "Restyled"
        self.report({"INFO"}, f"{verb} {len(job.counts)} strands of '{ob.name}' in "
                              f"{time.perf_counter() - start:.2f} s")
        return {"FINISHED"}


classes = (HAIRWIG_OT_style_hair,)
