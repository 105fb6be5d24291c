"""Settings hair_wig keeps on a hair object (``Object.hair_wig``)."""

import bpy
from bpy.props import BoolProperty, IntProperty, PointerProperty, StringProperty


def _is_mesh(_self, ob):
    return ob.type == "MESH"


class HairWigSettings(bpy.types.PropertyGroup):
    enabled: BoolProperty(
        name="Wig",
        description="Animate this hair with hair_wig; baking picks up every hair object with this on",
        default=False, options=set())
    head: PointerProperty(
        name="Head",
        description="Mesh the hair grows from and follows (its local space). Empty: the hair "
                    "object's surface",
        type=bpy.types.Object, poll=_is_mesh, options=set())
    rest_frame: IntProperty(
        name="Rest Frame",
        description="Frame at which the hair's own shape is the rest pose for the head and magnets",
        default=1, options=set())
    selection_attribute: StringProperty(
        name="Selection",
        description="Optional boolean or float attribute (curve or point domain) picking the strands "
                    "the wig acts on. Empty: all strands",
        default="", options=set())
    use_scene_range: BoolProperty(
        name="Scene Range",
        description="Bake the scene's frame range; off: bake the range below",
        default=True, options=set())
    frame_start: IntProperty(
        name="Start", description="First frame to bake", default=1, options=set())
    frame_end: IntProperty(
        name="End", description="Last frame to bake", default=250, options=set())


def head_of(ob):
    """The head mesh of a wig: the chosen one, or a Curves object's surface."""
    settings = ob.hair_wig
    if settings.head is not None:
        return settings.head
    if ob.type == "CURVES":
        return ob.data.surface
    return None


def register():
    bpy.utils.register_class(HairWigSettings)
    bpy.types.Object.hair_wig = PointerProperty(type=HairWigSettings)


def unregister():
    del bpy.types.Object.hair_wig
    bpy.utils.unregister_class(HairWigSettings)
