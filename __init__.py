# SPDX-License-Identifier: GPL-3.0-or-later
"""hair_wig: pose and animate hair, fur and grass with keyframed magnets (Blender extension)."""

from . import operators, panels


def register():
    operators.register()
    panels.register()


def unregister():
    panels.unregister()
    operators.unregister()
