"""Operators: enable a wig, bake, clear a bake. Thin: they call baking/blender_io and report."""

import bpy
from bpy.props import BoolProperty

from ..hair_wig import HairWigError
from . import baking, blender_io


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
        return _hair(context) is not None

    def execute(self, context):
        ob = _hair(context)
        ob.hair_wig.enabled = True
        if ob.hair_wig.head is None and ob.type == "CURVES" and ob.data.surface is not None:
            ob.hair_wig.head = ob.data.surface
        return {"FINISHED"}


class HAIRWIG_OT_bake(bpy.types.Operator):
    """Bake the wig's motion into keyframed playback data that needs no add-on to play"""
    bl_idname = "hair_wig.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    all_wigs: BoolProperty(name="All Wigs", description="Bake every wig in the scene", default=False)

    @classmethod
    def poll(cls, context):
        return baking.is_wig(_hair(context)) or bool(baking.wigs_in(context.scene))

    def execute(self, context):
        obs = baking.wigs_in(context.scene) if self.all_wigs else [_hair(context)]
        if not obs or not all(baking.is_wig(ob) for ob in obs):
            self.report({"ERROR"}, "Select a hair object with Wig enabled, or use Bake All Wigs")
            return {"CANCELLED"}
        caches = {}
        try:
            for ob in obs:
                first, last = baking.frame_range(context.scene, ob)
                caches[ob.name] = baking.compute(context, ob, first, last)
            for ob in obs:
                blender_io.write_bake(ob, caches[ob.name])
        except HairWigError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        frames = sum(c.num_frames for c in caches.values())
        self.report({"INFO"}, f"Baked {len(obs)} wig(s), {frames} frames")
        return {"FINISHED"}


class HAIRWIG_OT_clear_bake(bpy.types.Operator):
    """Remove the bake and show the hair's rest pose again, exactly as before baking"""
    bl_idname = "hair_wig.clear_bake"
    bl_label = "Clear Bake"
    bl_options = {"REGISTER", "UNDO"}

    all_wigs: BoolProperty(name="All Wigs", description="Clear every bake in the scene", default=False)

    @classmethod
    def poll(cls, context):
        ob = _hair(context)
        return (ob is not None and blender_io.is_baked(ob)) or any(
            blender_io.is_baked(o) for o in context.scene.objects)

    def execute(self, context):
        obs = context.scene.objects if self.all_wigs else [_hair(context)]
        cleared = sum(blender_io.clear_bake(ob) for ob in obs if ob is not None)
        if not cleared:
            self.report({"WARNING"}, "Nothing to clear: the selected hair has no bake")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Cleared {cleared} bake(s)")
        return {"FINISHED"}


classes = (HAIRWIG_OT_enable, HAIRWIG_OT_bake, HAIRWIG_OT_clear_bake)
