"""The live cache in the Timeline (issue 37), as Blender draws a simulation's cache there: a strip
along the bottom over the frames the active wig's Live Dynamics keeps — current frames bright,
outdated ones dim. Draw code only; the runs are plain data so they can be checked without a
screen."""

from __future__ import annotations

import bpy

from ..operators import preview
from .draw_handler import DrawHandler

COLORS = {"current": (1.0, 0.55, 0.1, 0.8), "outdated": (1.0, 0.55, 0.1, 0.3)}
HEIGHT = 4                  # pixels, as Blender's own cache strip


def runs(cache) -> list[tuple[int, int, str]]:
    """The cache's frames as ``(first, last, kind)`` runs: the current ones, then the outdated."""
    if cache.last is None:
        return []
    out = []
    if cache.last_current is not None:
        out.append((cache.start, cache.last_current, "current"))
    if cache.outdated is not None:
        out.append((cache.outdated, cache.last, "outdated"))
    return out


def rectangles(frame_runs, to_region) -> list[tuple[tuple[float, float, float, float], str]]:
    """Pixel rectangles ``(x0, y0, x1, y1)`` along the region's bottom for ``frame_runs``, each
    frame from half a frame before it to half after; ``to_region(frame)`` gives its x."""
    return [((to_region(a - 0.5), 0.0, to_region(b + 0.5), float(HEIGHT)), kind) for a, b, kind in frame_runs]


def draw():
    context = bpy.context
    ob = context.active_object
    if not preview.is_live(ob):
        return
    session = preview._previews[ob.session_uid].live
    view = context.region.view2d
    draw_rectangles(rectangles(runs(session.cache), lambda f: view.view_to_region(f, 0.0, clip=False)[0]))


def draw_rectangles(rects) -> None:
    """Fill ``rectangles``' output in the current pixel space, each in its kind's colour."""
    if not rects:
        return
    import gpu
    from gpu_extras.batch import batch_for_shader

    shader = gpu.shader.from_builtin("UNIFORM_COLOR")
    gpu.state.blend_set("ALPHA")
    for (x0, y0, x1, y1), kind in rects:
        batch = batch_for_shader(shader, "TRIS", {"pos": [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]},
                                 indices=[(0, 1, 2), (0, 2, 3)])
        shader.uniform_float("color", COLORS[kind])
        batch.draw(shader)
    gpu.state.blend_set("NONE")


handler = DrawHandler(bpy.types.SpaceDopeSheetEditor, draw, "POST_PIXEL")
register, unregister = handler.register, handler.unregister
