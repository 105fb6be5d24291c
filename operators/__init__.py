"""Blender-facing side of hair_wig: settings, operators and Blender <-> core I/O."""

import bpy

from . import bake_ops, properties

_classes = bake_ops.classes


def register():
    properties.register()
    for cls in _classes:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(_classes):
        bpy.utils.unregister_class(cls)
    properties.unregister()
