"""The kernels' preparation as Blender sees it (``hair_wig.prepare``): started when the add-on is
enabled, watched by a timer without waiting for it, shown in the sidebar and the add-on's
preferences; a bake waits for the groups its wigs need, and a stopped preparation leaves bakes
to compile what they need themselves, as before."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty

from ..hair_wig import LAYERS, prepare

_prep: prepare.Preparation | None = None
_note = ""          # why the last preparation did not end well, in an artist's words


def begin(names=None) -> None:
    """Start preparing the groups ``names`` (every group by default) not yet prepared, unless a
    preparation is running; nothing when all are (a package's prebuilt kernels, a later
    session)."""
    global _prep, _note
    if running():
        return
    todo = prepare.missing(names)
    if not todo:
        return
    _note = ""
    try:
        _prep = prepare.Preparation(todo)
    except OSError as err:
        _prep = None
        _note = f"Hair kernels could not be prepared in the background ({err}); a bake compiles what it needs"
        return
    if not bpy.app.background and not bpy.app.timers.is_registered(_watch):
        bpy.app.timers.register(_watch, first_interval=0.5, persistent=True)


def running() -> bool:
    return _prep is not None and _prep.poll()


def _settle() -> None:
    """Once the workers stopped: the note an artist reads if they did not end well."""
    global _note
    if _prep is not None and not _prep.poll() and _prep.error and not _note:
        _note = f"Preparing hair kernels failed: {_prep.error}. A bake compiles what it needs (slower to start)"
        print(f"Hair Wig: {_note}")


def _watch():
    """The timer: redraw what shows the progress while the workers run, show the frame previews
    and live wigs waited at once their kernels are ready, and stop when the workers end."""
    alive = running()
    _settle()
    if bpy.context.scene is not None:
        from . import preview

        preview.catch_up(bpy.context.scene)
    for window in getattr(bpy.context.window_manager, "windows", ()):
        for area in window.screen.areas:
            if area.type in {"VIEW_3D", "PREFERENCES"}:
                area.tag_redraw()
    return 0.5 if alive else None


def cancel() -> None:
    global _note
    if running():
        _prep.cancel()
        _note = "Preparing hair kernels was cancelled: a bake compiles what it needs (slower to start)"


def end() -> None:
    """When the add-on is disabled: no worker outlives it (what they prepared stays)."""
    if running():
        _prep.cancel()
    if bpy.app.timers.is_registered(_watch):
        bpy.app.timers.unregister(_watch)


def progress(names=None) -> tuple[int, int, list[str]]:
    """(groups prepared, groups, the ones being compiled now) of ``names`` (every group)."""
    want = list(prepare.GROUPS if names is None else names)
    now = _prep.working_on() if running() else []
    return sum(prepare.prepared([n]) for n in want), len(want), now


def status() -> str:
    """One line for the panel and preferences: the preparation's progress, or why it stopped;
    empty when there is nothing to say."""
    _settle()
    if running():
        done, total, now = progress(_prep.names)
        return (f"Preparing hair kernels in the background: {done} of {total}"
                + (f" ({', '.join(now)})" if now else "") + " — once after installing")
    return _note


def needed(obs) -> tuple[str, ...]:
    """The groups the wigs ``obs`` need (their dynamics layers')."""
    return prepare.needed({LAYERS[ob.hair_wig.dynamics_layer] for ob in obs if ob.hair_wig.dynamics_layer in LAYERS})


def waiting(names) -> bool:
    """Whether a bake of ``names`` should wait: they are being prepared and not all ready."""
    return not prepare.warmed(names) and not prepare.prepared(names) and running()


def wait(names) -> None:
    """Block until ``names`` are prepared or the preparation stops (a bake with no event loop:
    the batch bake, a script), saying how far on the console."""
    if not waiting(names):
        return
    print("Hair Wig: waiting for the hair kernels being prepared in the background")
    _prep.wait(names, lambda done, total, now: print(f"Hair Wig: hair kernels {done}/{total} prepared"
                                                     + (f" ({', '.join(now)})" if now else ""), flush=True))
    _settle()


def draw(layout) -> None:
    """The preparation's line, with a button to cancel or to start again, where there is one."""
    text = status()
    if not text:
        return
    row = layout.row(align=True)
    if running():
        row.label(text=text, icon="TIME")
        row.operator("hair_wig.prepare_kernels", text="", icon="CANCEL").cancel = True
    else:
        row.label(text=text, icon="ERROR")
        row.operator("hair_wig.prepare_kernels", text="", icon="FILE_REFRESH")


class HAIRWIG_OT_prepare_kernels(bpy.types.Operator):
    """Prepare the hair kernels in the background now (they are compiled once after installing),
    or stop preparing them"""
    bl_idname = "hair_wig.prepare_kernels"
    bl_label = "Prepare Hair Kernels"

    cancel: BoolProperty(name="Cancel", description="Stop preparing (a bake then compiles what it needs)",
                         default=False, options={"SKIP_SAVE"})

    def execute(self, context):
        global _note
        if self.cancel:
            cancel()
            return {"FINISHED"}
        _note = ""
        begin()
        return {"FINISHED"}


class HAIRWIG_AddonPreferences(bpy.types.AddonPreferences):
    bl_idname = __package__.rpartition(".")[0]

    def draw(self, context):
        layout = self.layout
        text = status()
        if text:
            draw(layout)
        elif prepare.prepared():
            layout.label(text="Hair kernels are ready", icon="CHECKMARK")
        else:
            layout.operator("hair_wig.prepare_kernels", icon="FILE_REFRESH")


classes = (HAIRWIG_OT_prepare_kernels, HAIRWIG_AddonPreferences)
