"""Sidebar UI, the viewport display of magnets and wisps, and the live cache in the Timeline: draw
code only."""

import bpy

from . import overlay, sidebar, timeline

_classes = sidebar.classes


def register():
    for cls in _classes:
        bpy.utils.register_class(cls)
    overlay.register()
    timeline.register()


def unregister():
    timeline.unregister()
    overlay.unregister()
    for cls in reversed(_classes):
        bpy.utils.unregister_class(cls)
