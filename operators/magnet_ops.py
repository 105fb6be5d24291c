"""Operators for a wig's magnets: add (as an Empty), remove, select, and set the rest pose."""

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty

from ..hair_wig import HairWigError
from . import blender_io, polls, profile_curves, scene_reader
from .properties import active_magnet, head_of


def _wig(context):
    ob = context.active_object
    return ob if scene_reader.is_wig(ob) else None


class HAIRWIG_OT_add_magnet(bpy.types.Operator):
    """Add an Empty as a magnet of the active wig: key it like any object to pull the hair near it"""
    bl_idname = "hair_wig.add_magnet"
    bl_label = "Add Magnet"
    bl_options = {"REGISTER", "UNDO"}

    place: EnumProperty(
        name="Place", items=[("CURSOR", "3D Cursor", "At the 3D cursor"),
                             ("CENTROID", "Hair Centre", "At the centre of the hair")],
        default="CURSOR")
    space: EnumProperty(
        name="Follow", items=[("HEAD", "Head", "Parent the magnet to the head so it rides along"),
                              ("WORLD", "World", "Leave the magnet in the world")],
        default="HEAD")
    radius: FloatProperty(name="Radius", description="How far the magnet reaches, measured where it is "
                                                     "now (its rest pose): the hair within it is what it moves",
                          default=0.5, min=1e-4, soft_max=10.0, subtype="DISTANCE", unit="LENGTH")
    dynamic: BoolProperty(name="Dynamic", description="Trail the keyed motion on a damped spring",
                          default=False)

    @classmethod
    def poll(cls, context):
        return polls.wig_with_head(cls, context)

    def execute(self, context):
        ob = _wig(context)
        head = head_of(ob)
        try:
            if self.place == "CENTROID":
                hair = blender_io.read_hair(ob)
                centre = hair.points.astype(np.float64).mean(axis=0)
                location = blender_io.matrix(ob) @ np.append(centre, 1.0)
                location = location[:3]
            else:
                location = np.array(context.scene.cursor.location)
            empty = bpy.data.objects.new(f"Magnet {ob.name}", None)
            empty.empty_display_type = "SPHERE"
            empty.empty_display_size = self.radius
            (ob.users_collection[0] if ob.users_collection else context.scene.collection).objects.link(empty)
            empty.location = location
            if self.space == "HEAD":
                empty.parent = head
                empty.matrix_parent_inverse = head.matrix_world.inverted()
            settings = empty.hair_wig_magnet
            settings.radius = self.radius
            settings.dynamic = self.dynamic
            profile_curves.ensure(settings, empty.name)
            ob.hair_wig.magnets.add().object = empty
            ob.hair_wig.magnet_index = len(ob.hair_wig.magnets) - 1
            context.view_layer.update()
            if ob.hair_wig.rest_captured:
                depsgraph = context.evaluated_depsgraph_get()
                scene_reader.capture_magnet_rest(empty, blender_io.evaluated_matrix(head, depsgraph), depsgraph)
            else:
                scene_reader.capture_rest(context, ob)
        except HairWigError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        return {"FINISHED"}


class HAIRWIG_OT_remove_magnet(bpy.types.Operator):
    """Take the active magnet off the wig (and delete its Empty if asked)"""
    bl_idname = "hair_wig.remove_magnet"
    bl_label = "Remove Magnet"
    bl_options = {"REGISTER", "UNDO"}

    delete_object: BoolProperty(name="Delete Empty", description="Also delete the magnet's Empty",
                                default=False)

    @classmethod
    def poll(cls, context):
        return polls.active_magnet_slot(cls, context)

    def execute(self, context):
        s = _wig(context).hair_wig
        empty = active_magnet(s)
        s.magnets.remove(s.magnet_index)
        s.magnet_index = min(s.magnet_index, len(s.magnets) - 1)
        if self.delete_object and empty is not None:
            bpy.data.objects.remove(empty)
        return {"FINISHED"}


class HAIRWIG_OT_select_magnet(bpy.types.Operator):
    """Select the active magnet's Empty in the viewport (the wig stays active)"""
    bl_idname = "hair_wig.select_magnet"
    bl_label = "Select Magnet"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return polls.active_magnet_object(cls, context)

    def execute(self, context):
        empty = active_magnet(_wig(context).hair_wig)
        if empty.name not in context.view_layer.objects:
            self.report({"ERROR"}, f"Magnet '{empty.name}' is not in this view layer")
            return {"CANCELLED"}
        empty.select_set(True)
        return {"FINISHED"}


class HAIRWIG_OT_set_rest_pose(bpy.types.Operator):
    """Make the current frame's pose of hair, head and magnets the rest pose the magnets' motion is measured from"""
    bl_idname = "hair_wig.set_rest_pose"
    bl_label = "Set Rest Pose"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return polls.wig(cls, context)

    def execute(self, context):
        try:
            scene_reader.capture_rest(context, _wig(context))
        except HairWigError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Rest pose set at frame {context.scene.frame_current}")
        return {"FINISHED"}


@bpy.app.handlers.persistent
def drop_deleted_magnets(scene=None, _depsgraph=None):
    """Deleting a magnet's Empty takes it off every wig: its slot is empty (the Empty was
    removed) or holds an Empty in no scene at all (deleted in the viewport or outliner, kept
    alive only by the slot's own reference)."""
    for ob in bpy.data.objects:
        settings = getattr(ob, "hair_wig", None)
        if settings is None or not settings.enabled:
            continue
        empty = [i for i, slot in enumerate(settings.magnets) if slot.object is None or not slot.object.users_scene]
        for i in reversed(empty):
            settings.magnets.remove(i)
        if empty:
            settings.magnet_index = min(settings.magnet_index, len(settings.magnets) - 1)


classes = (HAIRWIG_OT_add_magnet, HAIRWIG_OT_remove_magnet, HAIRWIG_OT_select_magnet,
           HAIRWIG_OT_set_rest_pose)
