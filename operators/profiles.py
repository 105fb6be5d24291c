"""Operators on profile curves: presets and Reset for one curve, and profile curves for a wig and
its magnets (the curves themselves are ``profile_curves``)."""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty, StringProperty

from . import polls, profile_curves
from .properties import active_magnet


class HAIRWIG_OT_profile_preset(bpy.types.Operator):
    """Set a profile curve to a preset shape (Reset: its default)"""
    bl_idname = "hair_wig.profile_preset"
    bl_label = "Profile Preset"
    bl_options = {"REGISTER", "UNDO"}

    profile: StringProperty(name="Profile")
    preset: EnumProperty(name="Preset", items=[
        ("LINEAR", "Linear", "Rising straight from 0 to 1 (root → tip)"),
        ("CONSTANT", "Constant", "1 everywhere"),
        ("EASE", "Ease", "Rising smoothly from 0 to 1"),
        ("EASE_OUT", "Ease Out", "Falling smoothly from 1 to 0"),
        ("PINNED", "Pinned Root", "0 at the root, rising to 1 over the first fifth, then 1"),
        ("RESET", "Reset", "The profile's default shape")])

    @classmethod
    def poll(cls, context):
        return polls.hair_object(cls, context)      # Style Hair's profiles are on hair not yet a wig

    def execute(self, context):
        ob = context.active_object
        s = ob.hair_wig
        owner, label = s, ob.name
        if self.profile in profile_curves.MAGNET_PROFILES:
            empty = active_magnet(s)
            if empty is None:
                self.report({"ERROR"}, "Select a magnet first")
                return {"CANCELLED"}
            owner, label = empty.hair_wig_magnet, empty.name
        specs = profile_curves.specs(owner)
        if self.profile not in specs:
            self.report({"ERROR"}, f"No profile named '{self.profile}'")
            return {"CANCELLED"}
        profile_curves.ensure(owner, label)
        profile_curves.set_preset(profile_curves.node(owner, self.profile), specs[self.profile][2] if self.preset == "RESET" else self.preset)
        return {"FINISHED"}


class HAIRWIG_OT_add_profiles(bpy.types.Operator):
    """Give this hair (and its magnets) editable profile curves"""
    bl_idname = "hair_wig.add_profiles"
    bl_label = "Add Profile Curves"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return polls.hair_object(cls, context)

    def execute(self, context):
        ob = context.active_object
        profile_curves.ensure(ob.hair_wig, ob.name)
        for slot in ob.hair_wig.magnets:
            if slot.object is not None:
                profile_curves.ensure(slot.object.hair_wig_magnet, slot.object.name)
        return {"FINISHED"}


classes = (HAIRWIG_OT_profile_preset, HAIRWIG_OT_add_profiles)
