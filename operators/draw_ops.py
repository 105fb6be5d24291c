"""Draw Hair (seed 002, ch. 3): strands sketched onto the head in the 3D viewport — press on the
scalp to root a strand, drag to draw it, release to make it — and Grease Pencil strokes converted
the same way. Loops drawn in a stroke become curls. Thin: strokes cross in as view rays, the
core (``hair_wig.sketch``) makes the strands, ``blender_io`` writes them."""

from __future__ import annotations

import time

import bpy
import numpy as np

from ..hair_wig import HairWigError
from ..hair_wig.collision import MeshField
from ..hair_wig.sketch import NotOnScalp, SketchSettings, StrokeRefused, keep_outside, ray_hit, sketch_strand
from . import blender_io, polls, preparation, preview
from .keypose_ops import make_wisps
from .scene_reader import LEADER, curve_attribute


class Scalp:
    """The hair's surface as drawing meets it: its world triangles and UVs, and (made when first
    asked, kept for the session) its collision field for Keep Outside."""

    def __init__(self, ob, depsgraph=None):
        surface = ob.data.surface
        if surface is None or surface.type != "MESH":
            raise HairWigError(f"'{ob.name}' has no surface mesh: set the hair's Surface (Object "
                               "properties ▸ Surface) to the head to draw on it")
        self.surface = surface
        self.uv_map = ob.data.surface_uv_map
        self.mesh = blender_io.world_mesh(surface, depsgraph, self.uv_map)
        self._field = None

    @property
    def field(self) -> MeshField:
        if self._field is None:
            self._field = MeshField.of_solid(self.mesh.positions, self.mesh.tri_verts, margin=0.1,
                                             name=self.surface.name)
        return self._field

    def hit(self, origin, direction):
        """Where the ray meets the scalp, or None."""
        return ray_hit(origin, direction, self.mesh.positions, self.mesh.tri_verts)

    def uv(self, tri: int, bary: np.ndarray):
        return None if self.mesh.tri_uv is None else bary @ self.mesh.tri_uv[tri]


def rays(points, view) -> tuple[np.ndarray, np.ndarray]:
    """The view rays through world ``points`` (K, 3) for a view ``(eye, forward, perspective)``."""
    eye, forward, perspective = view
    p = np.asarray(points, np.float64)
    if perspective:
        d = p - eye
        return np.repeat(np.asarray(eye, np.float64)[None], len(p), axis=0), d / np.linalg.norm(d, axis=1, keepdims=True)
    d = np.repeat(np.asarray(forward, np.float64)[None], len(p), axis=0)
    return p - d * (np.linalg.norm(p - eye, axis=1, keepdims=True) + 1.0), d


def settings_of(ob) -> SketchSettings:
    d = ob.hair_wig.draw
    return SketchSettings(points=d.points, time_step=d.time_step or None, curls=d.curls)


def make_strands(strokes, view, scalp: Scalp, ob):
    """Strands from ``strokes`` (``(label, origins, directions, times)``) seen from ``view``:
    ``(points (S, n, 3) world, uv (S, 2) or None, refused {(why, why_many): labels})``; a stroke
    that does not start on the scalp, or has no length (a tap), is refused, not made."""
    s = settings_of(ob)
    made, uv, refused = [], [], {}
    for label, origins, directions, times in strokes:
        try:
            out = sketch_strand(origins, directions, times, view[1], scalp.mesh.positions, scalp.mesh.tri_verts,
                                s, name=label)
        except StrokeRefused as e:
            refused.setdefault((e.why, e.why_many), []).append(label)
            continue
        made.append(out.points)
        uv.append(scalp.uv(out.tri, out.bary))
    if not made:
        return np.zeros((0, s.points, 3)), None, refused
    points = np.stack(made)
    if ob.hair_wig.draw.keep_outside:
        points = keep_outside(points, scalp.field, ob.hair_wig.draw.clearance)
    return points, (None if uv[0] is None else np.stack(uv)), refused


def left_out(refused, drawing: str) -> list[str]:
    """``make_strands``' refused strokes of ``drawing`` said, one line per reason: "stroke 2 of
    layer 'Lines' of 'Drawing' has no length (a tap)"."""
    out = []
    for (one, many), labels in refused.items():
        shown = ", ".join(labels[:5]) + (f" and {len(labels) - 5} more" if len(labels) > 5 else "")
        out.append(f"{shown} of '{drawing}' {one if len(labels) == 1 else many}")
    return out


def add_drawn(context, ob, points, uv, scalp: Scalp) -> np.ndarray:
    """Write drawn strands (S, n, 3) world into hair ``ob`` as new Catmull-Rom curves attached to
    the surface, marked as leaders, with wisps round them if asked; the new curves' indices."""
    if blender_io.is_baked(ob):
        raise HairWigError(f"'{ob.name}' is baked: clear the bake before drawing hair on it")
    if preview.is_previewing(ob):
        preview.stop(ob)
    cv = ob.data
    first = len(cv.curves)
    lead = curve_attribute(cv, LEADER, bool, False)
    counts = np.full(len(points), points.shape[1])
    blender_io.write_styled(ob, points.reshape(-1, 3), counts, uv, True, False, scalp.surface, scalp.uv_map)
    new = np.arange(first, len(cv.curves))
    blender_io.set_curve_attribute(cv, LEADER, "BOOLEAN", np.concatenate([lead, np.ones(len(new), bool)]))
    cv.set_types(type="CATMULL_ROM")
    d = ob.hair_wig.draw
    if d.rings:
        leaders = len(cv.curves)
        make_wisps(context, ob, d.rings, d.closeness, d.fuzziness, d.seed, curves=new)
        if d.keep_outside:             # the wisps' strands wander: lift them out as their leaders were
            hair = blender_io.read_curves_data(cv, ob.name)
            m = blender_io.matrix(ob)
            span = slice(int(hair.offsets[leaders]), len(hair.points))
            world = hair.points[span].astype(np.float64) @ m[:3, :3].T + m[:3, 3]
            n = int(hair.counts[leaders])
            world = keep_outside(world.reshape(-1, n, 3), scalp.field, d.clearance).reshape(-1, 3)
            whole = hair.points.astype(np.float64)
            inv = np.linalg.inv(m)
            whole[span] = world @ inv[:3, :3].T + inv[:3, 3]
            blender_io.write_positions(cv, whole)
    cv.update_tag()
    return np.arange(first, len(cv.curves))


def strokes_from_grease_pencil(gp, frame: int, view):
    """Grease Pencil strokes as view rays: ``(label, origins, directions, times)``; a stroke
    drawn without timing is taken as drawn at an even pace (60 samples a second)."""
    out = []
    for label, points, times in blender_io.read_grease_pencil_strokes(gp, frame):
        if len(points) < 2:
            continue
        o, d = rays(points, view)
        out.append((label, o, d, np.arange(len(points)) / 60.0 if times is None else times))
    return out


def previous_key_pose_roots(ob, frame: int) -> np.ndarray:
    """The roots (R, 3) world of the key pose before ``frame`` (the last one at or before it
    when drawing a later pose), or none: where to redraw each wisp from (thesis ch. 4)."""
    before = [k for k in ob.hair_wig.key_poses if k.curves is not None and k.frame < frame]
    if not before:
        return np.zeros((0, 3))
    cv = max(before, key=lambda k: k.frame).curves
    hair = blender_io.read_curves_data(cv, ob.name)
    roots = hair.points[hair.offsets[:-1]].astype(np.float64)
    m = blender_io.matrix(ob)
    return roots @ m[:3, :3].T + m[:3, 3]


def _hair(context):
    ob = context.active_object
    return ob if ob is not None and ob.type == "CURVES" else None


def _poll(cls, context, what: str) -> bool:
    ob = _hair(context)
    if ob is None:
        return polls.refuse(cls, "Select a Curves hair object (Add > Curves > Empty Hair makes one on the "
                                 "active mesh)")
    if ob.data.surface is None:
        return polls.refuse(cls, f"Set '{ob.name}''s Surface to the head to {what} on it")
    if context.mode not in {"OBJECT", "SCULPT_CURVES"}:
        return polls.refuse(cls, f"{what.capitalize()} works in Object Mode or Sculpt Mode")
    return True


class HAIRWIG_OT_strokes_to_hair(bpy.types.Operator):
    """Turn the Grease Pencil drawing's strokes into hair on the head, as Draw Hair makes it: each
    stroke must start on the scalp, loops become curls"""
    bl_idname = "hair_wig.strokes_to_hair"
    bl_label = "Convert Strokes to Hair"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if not _poll(cls, context, "convert strokes"):
            return False
        if context.active_object.hair_wig.draw.strokes is None:
            return polls.refuse(cls, "Pick the Grease Pencil drawing to convert (Draw Hair ▸ Grease Pencil)")
        return True

    def execute(self, context):
        ob = context.active_object
        if not preparation.gate(self):
            return {"CANCELLED"}
        d = ob.hair_wig.draw
        start = time.perf_counter()
        try:
            if d.view == "VIEW":
                space = context.space_data
                if space is None or space.type != "VIEW_3D":
                    raise HairWigError("Drawn From: This View needs a 3D view; use Active Camera from here")
                # the view's own region (pressed from the sidebar, the region is the sidebar's)
                view = blender_io.region_view(space.region_3d)
            else:
                view = blender_io.camera_view(context.scene)
            scalp = Scalp(ob)
            strokes = strokes_from_grease_pencil(d.strokes, context.scene.frame_current, view)
            if not strokes:
                raise HairWigError(f"'{d.strokes.name}' has no strokes on a visible layer at this frame")
            points, uv, refused = make_strands(strokes, view, scalp, ob)
            if not len(points) and list(refused) == [(NotOnScalp.why, NotOnScalp.why_many)]:
                raise HairWigError(f"no stroke of '{d.strokes.name}' starts on '{scalp.surface.name}' as seen "
                                   f"from the {'view' if d.view == 'VIEW' else 'camera'}: start strokes on the head")
            if not len(points):
                raise HairWigError(f"no stroke of '{d.strokes.name}' makes a strand: "
                                   + "; ".join(left_out(refused, d.strokes.name)))
            new = add_drawn(context, ob, points, uv, scalp)
        except HairWigError as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        for said in left_out(refused, d.strokes.name):
            self.report({"WARNING"}, f"{said}: left out")
        self.report({"INFO"}, f"Made {len(points)} strands ({len(new)} curves) of '{ob.name}' from "
                              f"'{d.strokes.name}' in {time.perf_counter() - start:.2f} s")
        return {"FINISHED"}


class DrawSession:
    """One Draw Hair session's state, apart from Blender's events (so it can be driven and
    timed without a window): the stroke being drawn as view rays and times, and the curves each
    finished stroke added (for Ctrl+Z)."""

    def __init__(self, context, ob, view_of):
        self.ob = ob
        self.view_of = view_of                # () -> (eye, forward, perspective) now
        self.scalp = Scalp(ob)
        self.origins, self.directions, self.times = [], [], []
        self.view = None
        self.added: list[np.ndarray] = []
        self.refused: str | None = None           # why the last stroke made nothing, if it did
        self.context = context

    @property
    def drawing(self) -> bool:
        return bool(self.origins)

    def press(self, origin, direction, now: float) -> bool:
        """Start a stroke at the ray ``origin``/``direction``; False when it misses the scalp."""
        hit = self.scalp.hit(origin, direction)
        if hit is None:
            return False
        self.root = np.asarray(origin) + hit[0] * np.asarray(direction)
        self.view = self.view_of()
        self.origins, self.directions, self.times = [np.asarray(origin)], [np.asarray(direction)], [now]
        return True

    def move(self, origin, direction, now: float) -> None:
        if self.drawing and now > self.times[-1]:
            self.origins.append(np.asarray(origin))
            self.directions.append(np.asarray(direction))
            self.times.append(now)

    def stroke_points(self) -> np.ndarray:
        """The stroke so far on its drawing plane (K, 3), for the overlay."""
        if not self.drawing:
            return np.zeros((0, 3))
        o, d = np.array(self.origins), np.array(self.directions)
        normal = -np.asarray(self.view[1])
        k = ((self.root - o) @ normal) / (d @ normal)
        return o + k[:, None] * d

    def release(self) -> np.ndarray:
        """Make the stroke a strand; the curves added (none for a stroke of one sample, or one
        refused: ``refused`` then says why, for the status bar)."""
        strokes = [("the stroke", np.array(self.origins), np.array(self.directions), np.array(self.times))]
        self.cancel()
        self.refused = None
        if len(strokes[0][1]) < 2:
            return np.zeros(0, np.int64)
        points, uv, refused = make_strands(strokes, self.view, self.scalp, self.ob)
        if refused or not len(points):
            self.refused = f"The stroke {next(iter(refused), ('makes no strand',))[0]}: left out"
            return np.zeros(0, np.int64)
        new = add_drawn(self.context, self.ob, points, uv, self.scalp)
        self.added.append(new)
        return new

    def cancel(self) -> None:
        self.origins, self.directions, self.times = [], [], []

    def undo(self) -> int:
        """Remove the last stroke's curves; how many."""
        if not self.added:
            return 0
        last = self.added.pop()
        blender_io.remove_curves(self.ob, last)
        return len(last)


class HAIRWIG_OT_draw_hair(bpy.types.Operator):
    """Draw strands on the head: press on the scalp to root a strand, drag to draw it, release to
    make it; a loop in a stroke becomes a curl. Ctrl+Z takes the last stroke back; Esc or right-click
    cancels the stroke being drawn, or ends drawing"""
    bl_idname = "hair_wig.draw_hair"
    bl_label = "Draw Hair"
    bl_options = {"REGISTER", "UNDO"}

    STATUS = "Draw Hair: press on the scalp and drag to draw a strand · Ctrl+Z undo the last · Esc/right-click end"

    @classmethod
    def poll(cls, context):
        if context.area is None or context.area.type != "VIEW_3D":
            return polls.refuse(cls, "Draw Hair draws in a 3D view")
        return _poll(cls, context, "draw hair")

    def invoke(self, context, event):
        ob = context.active_object
        if not preparation.gate(self):
            return {"CANCELLED"}
        try:
            rv3d = context.region_data
            self.session = DrawSession(context, ob, lambda: blender_io.region_view(rv3d))
        except HairWigError as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        if ob.hair_wig.draw.keep_outside:
            self.session.scalp.field                # built now, not at the first stroke's release
        self.previous = (previous_key_pose_roots(ob, context.scene.frame_current)
                         if ob.hair_wig.draw.show_previous else np.zeros((0, 3)))
        self._handle = bpy.types.SpaceView3D.draw_handler_add(_draw_session, (self,), "WINDOW", "POST_VIEW")
        context.workspace.status_text_set(self.STATUS)
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _ray(self, context, event):
        from bpy_extras import view3d_utils
        co = (event.mouse_region_x, event.mouse_region_y)
        origin = view3d_utils.region_2d_to_origin_3d(context.region, context.region_data, co)
        direction = view3d_utils.region_2d_to_vector_3d(context.region, context.region_data, co)
        return np.array(origin, np.float64), np.array(direction, np.float64)

    def modal(self, context, event):
        s = self.session
        context.area.tag_redraw()
        if event.type in {"ESC", "RIGHTMOUSE"} and event.value == "PRESS":
            if s.drawing:
                s.cancel()
                return {"RUNNING_MODAL"}
            return self._end(context, {"FINISHED"} if s.added else {"CANCELLED"})
        if event.type == "Z" and event.ctrl and event.value == "PRESS":
            n = s.undo()
            context.workspace.status_text_set(f"Took back the last stroke ({n} curves)" if n else
                                              "Nothing drawn to take back")
            return {"RUNNING_MODAL"}
        if event.type == "LEFTMOUSE" and event.value == "PRESS":
            origin, direction = self._ray(context, event)
            if not s.press(origin, direction, time.perf_counter()):
                context.workspace.status_text_set("Start the stroke on the scalp: it is the strand's root")
            return {"RUNNING_MODAL"}
        if event.type in {"MOUSEMOVE", "INBETWEEN_MOUSEMOVE"} and s.drawing:
            s.move(*self._ray(context, event), time.perf_counter())
            return {"RUNNING_MODAL"}
        if event.type == "LEFTMOUSE" and event.value == "RELEASE" and s.drawing:
            try:
                s.release()
            except HairWigError as e:
                self.report({"ERROR"}, str(e))
            context.workspace.status_text_set(s.refused or self.STATUS)
            return {"RUNNING_MODAL"}
        return {"PASS_THROUGH"}

    def _end(self, context, result):
        bpy.types.SpaceView3D.draw_handler_remove(self._handle, "WINDOW")
        context.workspace.status_text_set(None)
        context.area.tag_redraw()
        return result


def _draw_session(op) -> None:
    """POST_VIEW: the stroke being drawn, and the last key pose's roots to redraw from."""
    import gpu
    from gpu_extras.batch import batch_for_shader

    shader = gpu.shader.from_builtin("UNIFORM_COLOR")
    gpu.state.blend_set("ALPHA")
    stroke = op.session.stroke_points()
    if len(stroke) >= 2:
        shader.uniform_float("color", (1.0, 0.8, 0.3, 1.0))
        batch_for_shader(shader, "LINE_STRIP", {"pos": stroke.astype(np.float32)}).draw(shader)
    if len(op.previous):
        gpu.state.point_size_set(6.0)
        shader.uniform_float("color", (0.3, 0.8, 1.0, 0.8))
        batch_for_shader(shader, "POINTS", {"pos": op.previous.astype(np.float32)}).draw(shader)
    gpu.state.blend_set("NONE")


classes = (HAIRWIG_OT_strokes_to_hair, HAIRWIG_OT_draw_hair)
