"""Blender-facing side of hair_wig: settings, operators and Blender <-> core I/O."""

import bpy

from . import (bake_ops, disk_bake, draw_ops, export_ops, keypose_ops, magnet_ops, preparation, preview, profiles, properties,
               style_ops)

_classes = (bake_ops.classes + magnet_ops.classes + keypose_ops.classes + preview.classes
            + profiles.classes + style_ops.classes + draw_ops.classes + export_ops.classes
            + disk_bake.classes + preparation.classes)
_handlers = ((bpy.app.handlers.depsgraph_update_post, magnet_ops.drop_deleted_magnets),
             (bpy.app.handlers.load_post, magnet_ops.drop_deleted_magnets)) + preview.handlers


def register():
    properties.register()
    for cls in _classes:
        bpy.utils.register_class(cls)
    for handlers, fn in _handlers:
        if fn not in handlers:
            handlers.append(fn)
    preparation.begin()         # the kernels, in other processes: Blender goes on at once


def unregister():
    preparation.end()
    preview.stop_all()          # the hair goes back to its rest pose, bit for bit
    for handlers, fn in _handlers:
        while fn in handlers:
            handlers.remove(fn)
    for cls in reversed(_classes):
        bpy.utils.unregister_class(cls)
    properties.unregister()
