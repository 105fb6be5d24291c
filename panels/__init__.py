"""Sidebar UI: draw code only."""

import bpy

from . import sidebar

_classes = sidebar.classes


def register():
    for cls in _classes:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(_classes):
        bpy.utils.unregister_class(cls)
