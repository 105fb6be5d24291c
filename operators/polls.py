"""Why a button is greyed out. Each check returns whether an operator can run on the active
object and, when it cannot, says why in the button's tooltip (``poll_message_set``): what is
missing, on which object, and what to press to get it."""

from __future__ import annotations

from . import blender_io, scene_reader
from .properties import active_magnet, head_of


def refuse(cls, why: str) -> bool:
    cls.poll_message_set(why)
    return False


def hair_object(cls, context) -> bool:
    """The active object is a hair object, with curves or not yet (Style Hair grows them)."""
    ob = context.active_object
    if ob is None or ob.type not in blender_io.HAIR_TYPES:
        return refuse(cls, "Select a hair object first (Curves hair, or a Curve)")
    return True


def hair(cls, context) -> bool:
    """The active object is hair (``Curves``, or a legacy ``Curve``)."""
    ob = context.active_object
    if ob is None:
        return refuse(cls, "Select a hair object first (Curves hair, or a Curve)")
    if ob.type not in blender_io.HAIR_TYPES:
        return refuse(cls, f"'{ob.name}' is not hair: select a Curves hair object (or a Curve)")
    problem = blender_io.no_curves(ob)
    if problem is not None:
        return refuse(cls, problem[1])
    return True


def wig(cls, context) -> bool:
    """The active object is hair with the wig enabled."""
    if not hair(cls, context):
        return False
    ob = context.active_object
    if not ob.hair_wig.enabled:
        return refuse(cls, f"'{ob.name}' is not a wig yet: press Enable Wig")
    return True


def curves_wig(cls, context) -> bool:
    """A wig on ``Curves`` hair (live preview and key poses work on no other)."""
    if not wig(cls, context):
        return False
    ob = context.active_object
    if ob.type != "CURVES":
        return refuse(cls, f"'{ob.name}' is a legacy Curve: this works on Curves hair "
                           "(Object > Convert > Curves)")
    return True


def wig_with_head(cls, context) -> bool:
    """A wig whose head (the mesh its hair grows on) is chosen."""
    if not wig(cls, context):
        return False
    ob = context.active_object
    if head_of(ob) is None:
        return refuse(cls, f"Choose the Head of '{ob.name}' first: the mesh its hair grows on")
    return True


def active_magnet_slot(cls, context) -> bool:
    """A wig with a magnet selected in its list."""
    if not wig(cls, context):
        return False
    s = context.active_object.hair_wig
    if not 0 <= s.magnet_index < len(s.magnets):
        return refuse(cls, "Select a magnet in the list first (or add one: Add Magnet)")
    return True


def active_magnet_object(cls, context) -> bool:
    """A wig whose selected magnet slot holds an Empty."""
    if not active_magnet_slot(cls, context):
        return False
    if active_magnet(context.active_object.hair_wig) is None:
        return refuse(cls, "The selected magnet slot has no Empty")
    return True


def some_wig(cls, context) -> bool:
    """A wig to bake: the active object, or any in the scene."""
    if scene_reader.is_wig(context.active_object) or scene_reader.wigs_in(context.scene):
        return True
    return refuse(cls, "No wig in this scene: select hair and press Enable Wig")


def some_bake(cls, context) -> bool:
    """A bake to clear: on the active object, or on any in the scene."""
    ob = context.active_object
    if ob is not None and ob.type in blender_io.HAIR_TYPES and blender_io.is_baked(ob):
        return True
    if any(blender_io.is_baked(o) for o in context.scene.objects):
        return True
    return refuse(cls, "Nothing is baked in this scene")


def baked_wig(cls, context) -> bool:
    """A wig with a bake of its own (to re-bake some of its frames)."""
    if not wig(cls, context):
        return False
    ob = context.active_object
    if not blender_io.is_baked(ob):
        return refuse(cls, f"'{ob.name}' has no bake yet: press Bake first")
    return True
