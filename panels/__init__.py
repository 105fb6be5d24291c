"""Sidebar UI and the viewport display of magnets: draw code only."""

import bpy

from . import overlay, sidebar

_classes = sidebar.classes


def register():
    for cls in _classes:
        bpy.utils.register_class(cls)
    overlay.register()


def unregister():
    overlay.unregister()
    for cls in reversed(_classes):
        bpy.utils.unregister_class(cls)
