"""Profile curves as Blender curve widgets (seed 000's flex, length, falloff, attachment,
compression, gravity and secondary-blend profiles).

Blender cannot construct a ``CurveMapping`` on its own, so each wig (and each magnet, for its
falloff) keeps a hidden node group of Float Curve nodes, one per profile; the panel draws their
curve widgets, and bind samples them into core profiles.
"""

from __future__ import annotations

import bpy
import numpy as np
from bpy.props import EnumProperty, StringProperty

from ..hair_wig import Profile
from .properties import HairWigMagnet, active_magnet

# name: (label, what it maps, default preset)
WIG_PROFILES = {
    "flex": ("Flex", "How much each vertex follows the magnets, root (left) to tip (right)", "LINEAR"),
    "length": ("Length", "How much strands follow the magnets, shortest (left) to longest (right)", "CONSTANT"),
    "attachment": ("Attachment", "How much each vertex follows the skin, root to tip", "CONSTANT"),
    "compression": ("Compression", "Where along the strand compression is held back, root to tip", "CONSTANT"),
    "gravity": ("Gravity", "Sag of dynamic magnets by head tilt: upright (left) to upside down (right)", "LINEAR"),
    "secondary_blend": ("Secondary Blend", "How much each vertex lags, root to tip", "LINEAR"),
}
MAGNET_PROFILES = {
    "falloff": ("Falloff", "Pull from the magnet's centre (left) to its radius (right)", "EASE_OUT"),
}
PRESETS = {
    "LINEAR": ((0.0, 0.0), (1.0, 1.0)),
    "CONSTANT": ((0.0, 1.0), (1.0, 1.0)),
    "EASE": ((0.0, 0.0), (0.25, 0.1), (0.75, 0.9), (1.0, 1.0)),        # slow in, slow out
    "EASE_OUT": ((0.0, 1.0), (0.25, 0.9), (0.75, 0.1), (1.0, 0.0)),
}
SMOOTH_PRESETS = {"EASE", "EASE_OUT"}
SAMPLES = 257


def _specs(owner) -> dict:
    return MAGNET_PROFILES if isinstance(owner, HairWigMagnet) else WIG_PROFILES


def ensure(owner, label: str):
    """The owner's profile node group, made with every profile at its default when missing."""
    group = owner.profiles
    if group is None:
        group = bpy.data.node_groups.new(f".HairWig Profiles {label}", "GeometryNodeTree")
        owner.profiles = group
    for name, (_title, _what, preset) in _specs(owner).items():
        if group.nodes.get(name) is None:
            node = group.nodes.new("ShaderNodeFloatCurve")
            node.name = name
            set_preset(node, preset)
    return group


def node(owner, name: str):
    group = owner.profiles
    return None if group is None else group.nodes.get(name)


def set_preset(node, preset: str) -> None:
    mapping = node.mapping
    curve = mapping.curves[0]
    while len(curve.points) > 2:
        curve.points.remove(curve.points[1])
    points = PRESETS[preset]
    curve.points[0].location = points[0]
    curve.points[1].location = points[-1]
    for x, y in points[1:-1]:
        curve.points.new(x, y)
    handle = "AUTO" if preset in SMOOTH_PRESETS else "VECTOR"
    for p in curve.points:
        p.handle_type = handle
    mapping.use_clip = True
    mapping.update()


def read(owner, name: str) -> Profile:
    """The profile ``name`` of a wig or magnet as a core profile (sampled from its curve widget),
    or its default when the owner has no profile curves."""
    n = node(owner, name)
    if n is None:
        title, _, preset = _specs(owner)[name]
        return Profile(PRESETS[preset], "SMOOTH" if preset in SMOOTH_PRESETS else "LINEAR", title.lower())
    mapping = n.mapping
    mapping.initialize()
    curve = mapping.curves[0]
    x = np.linspace(0.0, 1.0, SAMPLES)
    y = np.array([mapping.evaluate(curve, float(v)) for v in x])
    return Profile(np.stack([x, y], axis=1), "LINEAR", _specs(owner)[name][0].lower())


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
        ("RESET", "Reset", "The profile's default shape")])

    @classmethod
    def poll(cls, context):
        from .baking import is_wig      # (baking reads profiles)
        return is_wig(context.active_object)

    def execute(self, context):
        ob = context.active_object
        s = ob.hair_wig
        owner, label = s, ob.name
        if self.profile in MAGNET_PROFILES:
            empty = active_magnet(s)
            if empty is None:
                self.report({"ERROR"}, "Select a magnet first")
                return {"CANCELLED"}
            owner, label = empty.hair_wig_magnet, empty.name
        specs = _specs(owner)
        if self.profile not in specs:
            self.report({"ERROR"}, f"No profile named '{self.profile}'")
            return {"CANCELLED"}
        ensure(owner, label)
        set_preset(node(owner, self.profile), specs[self.profile][2] if self.preset == "RESET" else self.preset)
        return {"FINISHED"}


class HAIRWIG_OT_add_profiles(bpy.types.Operator):
    """Give this wig (and its magnets) editable profile curves"""
    bl_idname = "hair_wig.add_profiles"
    bl_label = "Add Profile Curves"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        from .baking import is_wig      # (baking reads profiles)
        return is_wig(context.active_object)

    def execute(self, context):
        ob = context.active_object
        ensure(ob.hair_wig, ob.name)
        for slot in ob.hair_wig.magnets:
            if slot.object is not None:
                ensure(slot.object.hair_wig_magnet, slot.object.name)
        return {"FINISHED"}


classes = (HAIRWIG_OT_profile_preset, HAIRWIG_OT_add_profiles)
