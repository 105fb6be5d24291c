"""Magnets drawn in the 3D viewport: each magnet's reach as a sphere of three circles (and, once
the magnet has moved, its reach at the rest pose, dimmer: that is where the hair it moves was
picked up — the reach is bound at rest, seed 000), and for a
dynamic magnet the patent's pair — a horseshoe at the keyed target, a small sphere where the
magnet actually acted (from the bake), and an arrow from one to the other. Draw code only; the
geometry is plain numpy so it can be checked without a screen."""

from __future__ import annotations

import bpy
import numpy as np

from ..operators import blender_io, scene_reader
from ..operators.properties import head_of

SEGMENTS = 32
COLORS = {"reach": (0.9, 0.6, 0.1, 0.6), "rest": (0.9, 0.6, 0.1, 0.25), "target": (0.2, 0.8, 1.0, 0.9),
          "acted": (1.0, 0.3, 0.3, 0.9), "arrow": (1.0, 1.0, 1.0, 0.9)}


def circle(centre, radius, axis) -> np.ndarray:
    """Line-segment pairs (2·SEGMENTS, 3) of a circle around ``axis`` (0, 1 or 2)."""
    a = np.linspace(0, 2 * np.pi, SEGMENTS + 1)
    ring = np.zeros((SEGMENTS + 1, 3))
    u, v = [k for k in range(3) if k != axis]
    ring[:, u], ring[:, v] = radius * np.cos(a), radius * np.sin(a)
    ring += centre
    return np.stack([ring[:-1], ring[1:]], axis=1).reshape(-1, 3)


def sphere(centre, radius) -> np.ndarray:
    return np.concatenate([circle(centre, radius, k) for k in range(3)])


def horseshoe(centre, size) -> np.ndarray:
    """A 'U' open upwards: three quarters of a ring in the XZ plane plus two short legs."""
    a = np.linspace(np.pi * 0.75, np.pi * 2.25, SEGMENTS // 2 + 1)
    arc = np.stack([size * np.cos(a), np.zeros_like(a), size * np.sin(a) - 0.2 * size], axis=1) + centre
    lines = [np.stack([arc[:-1], arc[1:]], axis=1).reshape(-1, 3)]
    for end in (arc[0], arc[-1]):
        lines.append(np.array([end, end + (0, 0, 0.6 * size)]))
    return np.concatenate(lines)


def arrow(start, end) -> np.ndarray:
    d = np.asarray(end, float) - start
    length = np.linalg.norm(d)
    if length < 1e-9:
        return np.zeros((0, 3))
    d /= length
    side = np.cross(d, (0, 0, 1) if abs(d[2]) < 0.9 else (1, 0, 0))
    side /= np.linalg.norm(side)
    head = 0.2 * length
    tip = np.asarray(end, float)
    return np.array([start, tip, tip, tip - head * d + 0.5 * head * side,
                     tip, tip - head * d - 0.5 * head * side])


def magnet_lines(scene) -> dict[str, np.ndarray]:
    """Line-segment pairs to draw for every wig's magnets in ``scene``, by colour."""
    out = {k: [] for k in COLORS}
    for ob in scene_reader.wigs_in(scene):
        for slot in ob.hair_wig.magnets:
            m = slot.object
            if m is None or scene.objects.get(m.name) is None:
                continue
            where = np.array(m.matrix_world.translation)
            s = m.hair_wig_magnet
            out["reach"].append(sphere(where, s.radius))
            head = head_of(ob)
            if s.has_rest and head is not None and s.reach == "REST":   # the rest place, with the head
                rest = (np.array(head.matrix_world) @ blender_io.stored_matrix(s, "rest_matrix"))[:3, 3]
                if np.linalg.norm(rest - where) > 0.01 * s.radius:
                    out["rest"].append(sphere(rest, s.radius))
            if not s.dynamic:
                continue
            size = 0.15 * s.radius
            out["target"].append(horseshoe(where, size))
            acted = blender_io.baked_magnet_position(ob, m.name, scene.frame_current)
            if acted is not None:
                out["acted"].append(sphere(acted, 0.5 * size))
                out["arrow"].append(arrow(where, acted))
    return {k: np.concatenate(v).astype(np.float32) for k, v in out.items() if v}


def draw():
    """POST_VIEW draw callback."""
    import gpu
    from gpu_extras.batch import batch_for_shader

    context = bpy.context
    if context.scene is None or not scene_reader.wigs_in(context.scene):
        return
    shader = gpu.shader.from_builtin("UNIFORM_COLOR")
    gpu.state.blend_set("ALPHA")
    for kind, coords in magnet_lines(context.scene).items():
        batch = batch_for_shader(shader, "LINES", {"pos": coords})
        shader.uniform_float("color", COLORS[kind])
        batch.draw(shader)
    gpu.state.blend_set("NONE")


_handle = None


def register():
    global _handle
    if _handle is None:
        _handle = bpy.types.SpaceView3D.draw_handler_add(draw, (), "WINDOW", "POST_VIEW")


def unregister():
    global _handle
    if _handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handle, "WINDOW")
        _handle = None
