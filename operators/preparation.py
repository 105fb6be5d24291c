"""The kernels' preparation as Blender sees it (``hair_wig.prepare``): started when the add-on is
enabled, watched by a timer without waiting for it, shown in the sidebar and the add-on's
preferences; a bake waits for the groups its wigs need, and a stopped preparation leaves bakes
to compile what they need themselves, as before.

First the kernels for any CPU of the platform (the package's prebuilt ones, or prepared here); once
they are there, where the artist asks for it (the preferences' Tune Kernels for This Computer, off
by default), in an interactive session, the same tuned for this very CPU, at a lower pace (half
the cores), which later sessions load instead. Whether tuned code is faster depends on the CPU
(``kernels.store.TUNED`` says what was measured; README, *Measured*)."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty

from ..hair_wig import LAYERS, prepare

_prep: prepare.Preparation | None = None
_note = ""          # why the last preparation did not end well, in an artist's words
_told = None        # the tuning preparation whose failure the console was told of
ADDON = __package__.rpartition(".")[0]


def _preferences():
    """The add-on's preferences, where Blender keeps them (not when registered by a script)."""
    addon = bpy.context.preferences.addons.get(ADDON)
    return None if addon is None else addon.preferences


def _tune() -> bool:
    """Whether the artist asked for kernels tuned for this CPU: then they are prepared, and
    loaded before the ones for any CPU (``kernels.store.TUNED``)."""
    prefs = _preferences()
    return prefs is not None and prefs.tune_kernels


def _tuning_asked(prefs) -> None:
    """The preference switched: tuned kernels loaded first from now on (or no longer), and, on,
    prepared if they are not."""
    prepare.store.TUNED = bool(prefs.tune_kernels)
    if prefs.tune_kernels:
        begin()
    elif tuning():
        _prep.cancel()                # code no longer loaded first: not worth half the cores


def begin(names=None) -> None:
    """Start preparing the groups ``names`` (every group by default) not yet prepared, unless a
    preparation is running; nothing when all are (a package's prebuilt kernels, a later
    session)."""
    global _prep, _note
    if _tune():
        prepare.store.TUNED = True
    if running():
        return
    try:
        # code for any CPU, whatever else is kept (a bake that compiled for this CPU while none
        # was prepared leaves code that is slower on some CPUs: loaded only where none is)
        todo, cpu, workers = prepare.missing(names, cpu=prepare.store.GENERIC), prepare.store.GENERIC, None
        if not todo and names is None and not bpy.app.background and _tune():
            # tuned for this CPU: not where a batch bake or a farm node runs (it would compete
            # with the bake for the cores, every job again in a fresh container)
            todo, cpu, workers = prepare.missing(cpu=prepare.HOST), prepare.HOST, max(1, prepare.worker_count() // 2)
        if not todo:
            return
        if cpu == prepare.store.GENERIC:
            _note = ""
        _prep = prepare.Preparation(todo, workers, cpu=cpu)
    except Exception as err:                 # noqa: BLE001 — enabling the add-on must not fail for it
        _prep = None
        _note = f"Hair kernels could not be prepared in the background ({err}); a bake compiles what it needs"
        print(f"Hair Wig: {_note}")
        return
    if not bpy.app.background and not bpy.app.timers.is_registered(_watch):
        bpy.app.timers.register(_watch, first_interval=0.5, persistent=True)


def running() -> bool:
    return _prep is not None and _prep.poll()


def tuning() -> bool:
    """Whether the running preparation tunes kernels for this CPU (nothing waits for it)."""
    return running() and _prep.cpu == prepare.HOST


def _settle() -> None:
    """Once the workers stopped: the note an artist reads if they did not end well (tuning that
    failed only costs later sessions some speed: the console says it)."""
    global _note, _told
    if _prep is None or _prep.poll() or not _prep.error:
        return
    if _prep.cpu == prepare.HOST:
        if _told is not _prep:
            _told = _prep
            print(f"Hair Wig: tuning the hair kernels for this computer stopped: {_prep.error} ({_prep.details})")
    elif not _note:
        _note = f"Preparing hair kernels failed: {_prep.error}. A bake compiles what it needs (slower to start)"
        print(f"Hair Wig: {_note} ({_prep.details})")


def _watch():
    """The timer: redraw what shows the progress while the workers run, show the frame previews
    and live wigs waited at once their kernels are ready, and stop when the workers end."""
    alive = running()
    _settle()
    if bpy.context.scene is not None:
        from . import preview

        preview.catch_up(bpy.context.scene)
    if not alive and _prep is not None and _prep.cpu == prepare.store.GENERIC and not _prep.error \
            and not _prep.cancelled:
        begin()                               # then tuned for this CPU
        alive = running()
    for window in getattr(bpy.context.window_manager, "windows", ()):
        for area in window.screen.areas:
            if area.type in {"VIEW_3D", "PREFERENCES"}:
                area.tag_redraw()
    return 0.5 if alive else None


def cancel() -> None:
    global _note
    if running():
        _prep.cancel()
        if _prep.cpu == prepare.store.GENERIC:
            _note = "Preparing hair kernels was cancelled: a bake compiles what it needs (slower to start)"
        elif _preferences() is not None:
            _preferences().tune_kernels = False          # stopped: not again every session


def end() -> None:
    """When the add-on is disabled: no worker outlives it (what they prepared stays)."""
    if running():
        _prep.cancel()
    if bpy.app.timers.is_registered(_watch):
        bpy.app.timers.unregister(_watch)


def tuned() -> str:
    """The preferences' line on kernels tuned for this CPU: how far, while they are made."""
    if not tuning():
        return ""
    done = len(_prep.done())
    return (f"Tuning hair kernels for this computer in the background: {done} of {len(_prep.names)} "
            "(used from the next session)")


def progress(names=None) -> tuple[int, int, list[str]]:
    """(groups prepared, groups, the ones being compiled now) of ``names`` (every group)."""
    want = list(prepare.GROUPS if names is None else names)
    now = _prep.working_on() if running() else []
    return sum(prepare.prepared([n]) for n in want), len(want), now


def status() -> str:
    """One line for the panel and preferences: the preparation's progress, or why it stopped;
    empty when there is nothing to say (tuning for this CPU is not waited for: ``tuned``)."""
    _settle()
    if running() and not tuning():
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


def gate(op, obs=()) -> bool:
    """Whether an operator that runs kernels (for the wigs ``obs``; every wig's groups without)
    may run now: not while they are being prepared, as it would compile them in Blender's own
    process, frozen meanwhile. In the background (a batch run, a script) it waits for them
    instead; in Blender the operator says so and stops."""
    names = needed(obs) if obs else prepare.EVERY_WIG
    if not waiting(names):
        return True
    if bpy.app.background:
        wait(names)
        return True
    done, total, _ = progress(names)
    op.report({"WARNING"}, f"Hair kernels are still being prepared ({done} of {total} ready; once after installing): "
                           "try again in a moment — the Hair Wig panel shows how far")
    return False


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
    if running() and not tuning():
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
    bl_idname = ADDON

    tune_kernels: BoolProperty(
        name="Tune Kernels for This Computer",
        description="Once the hair kernels are ready, prepare them again in the background, made for this "
                    "computer's processor, and use those in later sessions. Faster on some processors, "
                    "slower on others (measured: Springs up to 14 % faster on an Intel processor, 40 % "
                    "slower on an AMD Zen 4): switch it on only if your own shots play faster with it",
        default=False, update=lambda self, context: _tuning_asked(self))

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "tune_kernels")
        text = status()
        if text:
            draw(layout)
        elif prepare.prepared():
            layout.label(text="Hair kernels are ready", icon="CHECKMARK")
            if tuning():
                row = layout.row(align=True)
                row.label(text=tuned(), icon="TIME")
                row.operator("hair_wig.prepare_kernels", text="", icon="CANCEL").cancel = True
        else:
            layout.operator("hair_wig.prepare_kernels", icon="FILE_REFRESH")


classes = (HAIRWIG_OT_prepare_kernels, HAIRWIG_AddonPreferences)
