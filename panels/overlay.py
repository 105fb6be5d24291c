"""Magnets drawn in the 3D viewport: each magnet's reach as a sphere of three circles (and, once
the magnet has moved, its reach at the rest pose, dimmer: that is where the hair it moves was
picked up — the reach is bound at rest, seed 000), and for a
dynamic magnet the patent's pair — a horseshoe at the keyed target, a small sphere where the
magnet actually acted (from the bake), and an arrow from one to the other. For a wig whose
solver is Wisps, with Show Wisps on, its wisps (seed 001): each wisp's skeleton and, at each of
its cross-sections, the envelope as a four-sided ring at its rest radii, following the hair as
Blender shows it now (a bake's frames too). Draw code only; the geometry is plain numpy so it
can be checked without a screen."""

from __future__ import annotations

import bpy
import numpy as np

from ..hair_wig import HairWigError, Wig, WigSettings
from ..hair_wig.spaces import rotation_of, transform_rows
from ..hair_wig.wisps import WispLayer
from ..operators import blender_io, scene_reader
from ..operators.properties import head_of
from .draw_handler import DrawHandler

SEGMENTS = 32
COLORS = {"reach": (0.9, 0.6, 0.1, 0.6), "rest": (0.9, 0.6, 0.1, 0.25), "target": (0.2, 0.8, 1.0, 0.9),
          "acted": (1.0, 0.3, 0.3, 0.9), "arrow": (1.0, 1.0, 1.0, 0.9),
          "envelope": (0.3, 0.9, 0.6, 0.35), "skeleton": (0.3, 1.0, 0.6, 0.9)}
WISPS = WispLayer.KEY          # the solver whose wisps Show Wisps draws


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


# object name -> (what it was bound with, the Wisps layer bound on its rest pose, whether at its rest pose)
_wisps: dict = {}


def _rest_matrices(ob, depsgraph):
    """The hair's and the head's world matrices at rest: the captured ones (Set Rest Pose), else
    where they are now (a draw cannot go to the rest frame)."""
    s = ob.hair_wig
    if s.rest_captured:
        return blender_io.stored_matrix(s, "hair_rest_matrix"), blender_io.stored_matrix(s, "head_rest_matrix")
    head = head_of(ob)
    hair = blender_io.evaluated_matrix(ob, depsgraph)
    return hair, (blender_io.evaluated_matrix(head, depsgraph) if head is not None else hair)


def bound_wisps(ob, depsgraph) -> WispLayer:
    """The Wisps layer of wig ``ob`` bound on its rest pose with its wisp settings, as a bake
    binds it — by the core's own ``Wig`` (without magnets, head or colliders, which the wisps'
    grouping, skeleton samples and rest envelope do not depend on): bound once, kept by the
    object's name, and bound again when what makes the wisps changes (Wisps From, Wisps, Seed,
    Wisp Attribute's values, Wisp Segments), its point count or its captured rest pose. Raises
    HairWigError naming the hair (e.g. Wisps From: Attribute without the attribute).

    Without a captured rest pose the rest is the rest frame's, where a draw cannot go: away from
    it the wisps are bound where hair and head are now — the same wisps (grouped in the head's
    space, where hair riding the head lies alike at every frame), their rings' turn about the
    spine picked there — and bound again as the bake binds them once the scene is at the rest
    frame."""
    s = ob.hair_wig
    settings = scene_reader.layer_settings(s)
    groups = None if settings.groups is None else np.asarray(settings.groups).tobytes()
    rest = (blender_io.stored_matrix(s, "hair_rest_matrix").tobytes(),
            blender_io.stored_matrix(s, "head_rest_matrix").tobytes()) if s.rest_captured else None
    key = (ob.data.as_pointer(), blender_io.point_count(ob), settings.source, settings.wisps, settings.seed,
           settings.segments, groups, rest)
    at_rest = s.rest_captured or depsgraph.scene.frame_current == s.rest_frame
    kept = _wisps.get(ob.name)
    if kept is not None and kept[0] == key and (kept[2] or not at_rest):
        return kept[1]
    hair_rest, head_rest = _rest_matrices(ob, depsgraph)
    wig = Wig(blender_io.read_hair(ob), hair_rest, head_rest,
              settings=WigSettings(dynamics=settings, use_length=False, use_collision=False))
    _wisps[ob.name] = (key, wig.layer, at_rest)
    return wig.layer


def _points_now(ob, depsgraph, count: int) -> np.ndarray:
    """(P, 3) the wig's own points as Blender shows them now, in the object's space: as its stack
    evaluates them (a bake's playback, the skin carrying them) when it shows as many as it
    has; else (children grown from them: Blender shows the children, not the wig's guides) the
    bake's nearest frame as the .blend stores it — for a stack that carries the hair with the
    skin, at the skin's rest place, off by how the skin itself deformed since the rest frame —,
    or the groom."""
    try:
        shown = blender_io.read_evaluated_points(ob, depsgraph)
    except (HairWigError, AttributeError):
        shown = None
    if shown is not None and len(shown) == count:
        return shown
    baked = blender_io.baked_frame(ob, depsgraph.scene.frame_current)
    if baked is not None and len(baked) == count:
        return baked
    return blender_io.read_hair(ob).points


def wisp_outline(ob, depsgraph) -> dict[str, np.ndarray]:
    """Line-segment pairs of the wisps of wig ``ob`` now, world space: ``skeleton`` (2·W·K, 3)
    and ``envelope`` (8·W·N, 3) (``WispSet.outline``), their cross-sections' frames turned with
    the head as the layer turns them."""
    layer = bound_wisps(ob, depsgraph)
    ws = layer.set
    points = _points_now(ob, depsgraph, ws.offsets[-1])
    hair_now = blender_io.evaluated_matrix(ob, depsgraph)
    world = transform_rows(hair_now, points.T.astype(np.float64), np.empty((3, len(points))))
    head = head_of(ob)
    turn = rotation_of(blender_io.evaluated_matrix(head, depsgraph) if head is not None else hair_now)
    bones, loops = ws.outline(world, turn @ layer.turn_rest.T)
    return {"skeleton": bones.astype(np.float32), "envelope": loops.astype(np.float32)}


def wisp_lines(scene, depsgraph=None) -> dict[str, np.ndarray]:
    """Line-segment pairs to draw for the wisps of every wig in ``scene`` whose solver is Wisps
    and that shows them (Show Wisps), by colour. A wig whose wisps cannot be made (Wisps From:
    Attribute without the attribute: the Dynamics panel says so) draws none."""
    depsgraph = bpy.context.evaluated_depsgraph_get() if depsgraph is None else depsgraph
    out = {"envelope": [], "skeleton": []}
    for ob in scene_reader.wigs_in(scene):
        s = ob.hair_wig
        if not (s.show_wisps and s.dynamics_layer == WISPS) or blender_io.no_curves(ob) is not None:
            continue
        try:
            lines = wisp_outline(ob, depsgraph)
        except HairWigError:
            continue
        for k, v in lines.items():
            out[k].append(v)
    return {k: np.concatenate(v) for k, v in out.items() if v}


def draw():
    """POST_VIEW draw callback."""
    import gpu
    from gpu_extras.batch import batch_for_shader

    context = bpy.context
    if context.scene is None or not scene_reader.wigs_in(context.scene):
        return
    shader = gpu.shader.from_builtin("UNIFORM_COLOR")
    gpu.state.blend_set("ALPHA")
    # the view layer's depsgraph as the viewport drew it (asking for an evaluated one could
    # update it from inside the draw)
    lines = wisp_lines(context.scene, context.view_layer.depsgraph)
    lines.update(magnet_lines(context.scene))
    for kind, coords in lines.items():
        batch = batch_for_shader(shader, "LINES", {"pos": coords})
        shader.uniform_float("color", COLORS[kind])
        batch.draw(shader)
    gpu.state.blend_set("NONE")




handler = DrawHandler(bpy.types.SpaceView3D, draw, "POST_VIEW")
register, unregister = handler.register, handler.unregister
