"""Bind (Set Rest Pose), bake, clear and live preview each survive save → reopen and undo → redo
(real bpy). Operators are called with ``undo=True`` so they push an undo step as a click in the
UI does; a magnet moved by hand is followed by an explicit push, as Blender's transform does."""

import bpy
import numpy as np
import pytest
import scenes

FRAMES = range(1, 11)


@pytest.fixture
def glue(addon):
    from hair_wig_addon.operators import baking, blender_io, preview
    return baking, blender_io, preview


def hair():
    return bpy.data.objects["Hair"]


def positions(ob):
    p = np.empty(len(ob.data.points) * 3, np.float32)
    ob.data.attributes["position"].data.foreach_get("vector", p)
    return p.reshape(-1, 3)


def played(io, ob):
    """The evaluated hair at every frame, as playback shows it."""
    out = []
    for f in FRAMES:
        bpy.context.scene.frame_set(f)
        out.append(io.read_evaluated_points(ob, bpy.context.evaluated_depsgraph_get()))
    return np.stack(out)


def footprint(ob):
    """Everything a bake or a preview could leave in the file."""
    return (sorted(a.name for a in ob.data.attributes), [m.name for m in ob.modifiers],
            sorted(g.name for g in bpy.data.node_groups), sorted(a.name for a in bpy.data.actions),
            sorted(bpy.data.shape_keys.keys()), ob.get("_hair_wig_bake") is not None)


def reopen(tmp_path, name="wig.blend"):
    path = str(tmp_path / name)
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    bpy.context.view_layer.objects.active = hair()
    return hair()


def push(message):
    bpy.ops.ed.undo_push(message=message)


def rest_record(ob):
    """What Set Rest Pose stores: frame, hair and head matrices, each magnet's head-local matrix."""
    s = ob.hair_wig
    copy = lambda m: np.array(m, dtype=np.float64).ravel().tolist()     # not views into Blender's data
    return (s.rest_frame, s.rest_captured, copy(s.hair_rest_matrix), copy(s.head_rest_matrix),
            [copy(slot.object.hair_wig_magnet.rest_matrix) for slot in s.magnets])


def test_set_rest_pose_survives_save_reopen_and_undo_redo(scene, glue, tmp_path):
    baking, _, _ = glue
    ob, head, magnet = scenes.keyed_wig()
    scene.frame_set(1)
    push("wig")
    assert bpy.ops.hair_wig.set_rest_pose("EXEC_DEFAULT", True) == {"FINISHED"}
    at1 = rest_record(ob), baking.compute(bpy.context, ob, 1, 10).positions
    scene.frame_set(6)                            # head turned, magnet moved: a different rest pose
    assert bpy.ops.hair_wig.set_rest_pose("EXEC_DEFAULT", True) == {"FINISHED"}
    at6 = rest_record(hair()), baking.compute(bpy.context, hair(), 1, 10).positions
    assert at6[0] != at1[0] and np.abs(at6[1] - at1[1]).max() > 1e-3

    bpy.ops.ed.undo()
    assert rest_record(hair()) == at1[0]
    assert np.array_equal(baking.compute(bpy.context, hair(), 1, 10).positions, at1[1])
    bpy.ops.ed.redo()
    assert rest_record(hair()) == at6[0]
    ob = reopen(tmp_path)
    assert rest_record(ob) == at6[0]
    assert np.array_equal(baking.compute(bpy.context, ob, 1, 10).positions, at6[1])


def baked_wig(io):
    """A keyed wig baked through the operator with an undo step before and after; returns its rest
    positions, its unbaked footprint and what the bake plays."""
    ob, head, magnet = scenes.keyed_wig()
    rest, before = positions(ob), footprint(ob)
    push("before bake")
    assert bpy.ops.hair_wig.bake("EXEC_DEFAULT", True) == {"FINISHED"}
    baked = played(io, hair())
    assert np.abs(baked - rest).max() > 0.05
    return rest, before, baked


def test_bake_survives_undo_redo_and_save_reopen(scene, glue, tmp_path):
    _, io, _ = glue
    rest, before, baked = baked_wig(io)

    bpy.ops.ed.undo()
    assert not io.is_baked(hair()) and footprint(hair()) == before
    assert np.array_equal(positions(hair()), rest)
    bpy.ops.ed.redo()
    assert io.bake_range(hair()) == (1, 10)
    assert np.array_equal(played(io, hair()), baked)
    ob = reopen(tmp_path)
    assert io.bake_range(ob) == (1, 10)
    assert np.array_equal(played(io, ob), baked)


def test_clear_bake_survives_undo_redo_and_save_reopen(scene, glue, tmp_path):
    _, io, _ = glue
    rest, before, baked = baked_wig(io)
    bpy.context.view_layer.objects.active = hair()
    assert bpy.ops.hair_wig.clear_bake("EXEC_DEFAULT", True) == {"FINISHED"}
    assert footprint(hair()) == before and np.array_equal(positions(hair()), rest)

    bpy.ops.ed.undo()
    assert io.is_baked(hair()) and np.array_equal(played(io, hair()), baked)
    bpy.ops.ed.redo()
    assert not io.is_baked(hair()) and footprint(hair()) == before
    assert np.array_equal(positions(hair()), rest)
    ob = reopen(tmp_path)
    assert footprint(ob) == before and np.array_equal(positions(ob), rest)
    assert (played(io, ob) == rest).all()                       # nothing left animating the hair


def test_preview_survives_save_reopen(scene, glue, tmp_path):
    _, _, preview = glue
    ob, head, magnet = scenes.keyed_wig()
    rest, before = positions(ob), footprint(ob)
    assert bpy.ops.hair_wig.preview() == {"FINISHED"}
    scene.frame_set(7)
    shown = positions(ob)
    assert np.abs(shown - rest).max() > 0.01
    ob = reopen(tmp_path)
    assert not preview._previews                                    # a preview is not part of the file
    assert np.array_equal(positions(ob), rest) and footprint(ob) == before
    bpy.context.scene.frame_set(7)
    assert bpy.ops.hair_wig.preview() == {"FINISHED"}
    assert np.array_equal(positions(ob), shown)                     # the same pose, restarted
    bpy.ops.hair_wig.preview()
    assert np.array_equal(positions(ob), rest) and footprint(ob) == before


def test_undo_redo_during_and_after_a_preview_never_leaves_a_previewed_pose(scene, glue):
    _, _, preview = glue
    ob, head, magnet = scenes.keyed_wig()
    rest, before = positions(ob), footprint(ob)
    scene.frame_set(7)
    push("before preview")                                          # S0: the hair's own positions
    assert bpy.ops.hair_wig.preview() == {"FINISHED"}
    shown = positions(ob)
    magnet.location.z += 0.3
    bpy.context.view_layer.update()
    push("move magnet")                                             # S1: recorded during the preview
    moved = positions(ob)
    assert np.abs(moved - shown).max() > 1e-3

    bpy.ops.ed.undo()                                               # back to S0: preview carries on
    assert preview.is_previewing(hair())
    assert np.array_equal(positions(hair()), shown)
    bpy.ops.ed.redo()                                               # S1: magnet moved again
    assert preview.is_previewing(hair())
    assert np.array_equal(positions(hair()), moved)

    bpy.context.view_layer.objects.active = hair()
    bpy.ops.hair_wig.preview()                                      # stop: rest, no trace
    assert np.array_equal(positions(hair()), rest) and footprint(hair()) == before
    hair().location.x += 1.0
    push("move hair")                                               # S2: after the preview
    bpy.ops.ed.undo()                                               # S1 holds a previewed pose
    assert not preview.is_previewing(hair())
    assert np.array_equal(positions(hair()), rest) and footprint(hair()) == before
    bpy.ops.ed.undo()
    assert np.array_equal(positions(hair()), rest) and footprint(hair()) == before
    bpy.ops.ed.redo()
    bpy.ops.ed.redo()
    assert np.array_equal(positions(hair()), rest) and footprint(hair()) == before
    assert hair().location.x == pytest.approx(1.0)


def test_a_file_saved_by_blender_during_a_preview_gets_its_rest_pose_back(scene, glue, tmp_path, capsys):
    """Autosave and crash recovery write the undo state, not through save handlers: simulated by
    writing what such a state holds (a previewed pose and the kept rest) with the add-on's save
    handlers out of the way."""
    _, _, preview = glue
    ob, head, magnet = scenes.keyed_wig()
    rest, before = positions(ob), footprint(ob)
    bpy.ops.hair_wig.preview()
    scene.frame_set(7)
    shown = positions(ob)
    saved = list(preview._previews.items())
    preview._previews.clear()                  # the save handlers see no preview
    try:
        bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "autosave.blend"))
    finally:
        preview._previews.update(saved)
    assert np.array_equal(positions(ob), shown)
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "autosave.blend"))
    assert np.array_equal(positions(hair()), rest) and footprint(hair()) == before
    assert "'Hair' was saved during a live preview; its rest pose is back" in capsys.readouterr().out
