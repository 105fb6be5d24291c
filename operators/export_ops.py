"""Baked hair out of Blender (issue 18): Alembic or USD through Blender's own exporters, a point
sample per baked frame, the hair as the user sees it — the bake's playback, guides and their
Interpolate Hair Curves children, whatever the hair's modifiers make of it. Unreal's groom
importer and Houdini read either (README: "Hair that leaves Blender")."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import bpy
from bpy.props import EnumProperty, StringProperty

from ..hair_wig import HairWigError
from . import blender_io, polls

FORMATS = {".abc": "ALEMBIC", ".usd": "USD", ".usda": "USD", ".usdc": "USD", ".usdz": "USD"}


def format_of(path: str) -> str:
    kind = FORMATS.get(Path(path).suffix.lower())
    if kind is None:
        raise HairWigError(f"{path}: export to .abc (Alembic) or .usd, .usda, .usdc, .usdz (USD)")
    return kind


@contextlib.contextmanager
def _only_selected(context, obs, frames):
    """``obs`` alone selected, the scene's range the bake's, for the exporter; restored after."""
    scene = context.scene
    kept = [(o, o.select_get()) for o in context.view_layer.objects]
    was = scene.frame_start, scene.frame_end, scene.frame_current
    try:
        for o, _ in kept:
            o.select_set(o in obs)
        scene.frame_start, scene.frame_end = frames
        yield
    finally:
        for o, s in kept:
            o.select_set(s)
        scene.frame_start, scene.frame_end = was[0], was[1]
        scene.frame_set(was[2])


def export_baked(context, obs, path: str, evaluation: str = "VIEWPORT") -> tuple[int, int]:
    """Export the baked hair objects ``obs`` to ``path`` (its suffix picks Alembic or USD), every
    frame of their bakes, as the viewport shows them (``evaluation`` VIEWPORT) or as they render
    (RENDER: the render's children counts, where a groom's modifiers thin them in the viewport);
    the frames written. Hair not baked is refused by name."""
    kind = format_of(path)
    if not obs:
        raise HairWigError("select the baked hair objects to export")
    ranges = []
    for ob in obs:
        r = blender_io.bake_range(ob) if ob.type in ("CURVES", "CURVE") else None
        if r is None:
            raise HairWigError(f"'{ob.name}' is not baked hair: bake it first (or leave it out)")
        ranges.append(r)
    frames = (min(r[0] for r in ranges), max(r[1] for r in ranges))
    out = Path(bpy.path.abspath(path))
    if not out.parent.is_dir():
        raise HairWigError(f"{out}: its folder does not exist")
    with _only_selected(context, obs, frames):
        if kind == "ALEMBIC":
            done = bpy.ops.wm.alembic_export(filepath=str(out), start=frames[0], end=frames[1], selected=True,
                                             evaluation_mode=evaluation)
        else:
            done = bpy.ops.wm.usd_export(filepath=str(out), selected_objects_only=True, export_animation=True,
                                         evaluation_mode=evaluation)
    if done != {"FINISHED"} or not out.is_file():
        raise HairWigError(f"Blender's {kind.title()} exporter wrote nothing to {out}")
    return frames


class HAIRWIG_OT_export_baked(bpy.types.Operator):
    """Export the selected baked hair, every baked frame, to Alembic (.abc) or USD (.usd, .usdc) for
    Unreal, Houdini or another package: the hair as you see it, children included"""
    bl_idname = "hair_wig.export_baked"
    bl_label = "Export Baked Hair"
    bl_options = {"REGISTER"}

    filepath: StringProperty(subtype="FILE_PATH", options={"SKIP_SAVE"})
    filter_glob: StringProperty(default="*.abc;*.usd;*.usda;*.usdc;*.usdz", options={"HIDDEN"})
    evaluation: EnumProperty(
        name="Hair As", description="Which of the hair's modifier results to write",
        items=[("VIEWPORT", "Viewport", "The hair as the viewport shows it"),
               ("RENDER", "Render", "The hair as it renders (children at their render density)")],
        default="RENDER")

    @classmethod
    def poll(cls, context):
        if not any(blender_io.bake_range(o) is not None for o in context.selected_objects
                   if o.type in ("CURVES", "CURVE")):
            return polls.refuse(cls, "Select baked hair to export")
        return True

    def invoke(self, context, event):
        if not self.filepath:
            stem = Path(bpy.data.filepath).stem if bpy.data.filepath else "hair"
            self.filepath = f"//{stem}_hair.abc"
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        obs = [o for o in context.selected_objects if o.type in ("CURVES", "CURVE") and blender_io.bake_range(o)]
        start = time.perf_counter()
        try:
            first, last = export_baked(context, obs, self.filepath, self.evaluation)
        except HairWigError as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Exported {len(obs)} hair object(s), frames {first}..{last}, to {self.filepath} "
                              f"in {time.perf_counter() - start:.2f} s")
        return {"FINISHED"}


classes = (HAIRWIG_OT_export_baked,)
