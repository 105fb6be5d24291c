"""Bakes that live on disk (issue 18, real bpy): the wig stepped as Blender's Alembic exporter
reaches each frame, the file played by Blender's own Mesh Sequence Cache modifier — every frame
as the .blend bake shows it, the groom untouched, the file playing in a Blender without
hair_wig; Clear Bake takes it off; a cancelled bake leaves everything, the earlier bake
included, as it was."""

import subprocess
import sys

import bpy
import numpy as np
import pytest
from test_export_blender import _seen, carried
from test_split_blender import _shot

PLAY = r"""
import json, sys
import bpy
import numpy as np
bpy.ops.wm.open_mainfile(filepath=sys.argv[1])
ob = bpy.data.objects["Hair"]
out = {}
for f in (1, 8, 16):
    bpy.context.scene.frame_set(f)
    g = ob.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
    p = np.empty(len(g.curves.points) * 3, np.float32)
    g.curves.attributes["position"].data.foreach_get("vector", p)
    out[f] = p.tolist()
print("PLAYED " + json.dumps({"modules": sorted(bpy.context.preferences.addons.keys()), "frames": out}))
"""


def _rest(ob):
    p = np.empty(len(ob.data.points) * 3, np.float32)
    ob.data.position_data.foreach_get("vector", p)
    return p


def _baked_in_blend(tmp_path):
    """The shot saved and opened, its 'Hair' baked into the .blend: ``(shot, hair, its rest positions)``."""
    shot = tmp_path / "shot.blend"
    _shot(shot)
    bpy.ops.wm.open_mainfile(filepath=str(shot))
    ob = bpy.data.objects["Hair"]
    rest = _rest(ob)
    bpy.context.view_layer.objects.active = ob
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    return shot, ob, rest


def test_a_disk_bake_plays_what_the_blend_bake_plays_without_the_addon(addon, tmp_path):
    from hair_wig_addon.operators import blender_io, disk_bake

    shot, ob, rest = _baked_in_blend(tmp_path)
    in_blend = {f: _seen(ob, f) for f in range(1, 17)}
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 40                    # the scene's own range: left alone
    done = disk_bake.bake_to_disk(bpy.context, ob, 1, 16)          # replaces the .blend bake
    cache = tmp_path / "hair_wig" / "Hair.abc"
    assert done["path"] == "//hair_wig/Hair.abc" and cache.is_file() and done["bytes"] == cache.stat().st_size
    assert [m.type for m in ob.modifiers][:1] == ["MESH_SEQUENCE_CACHE"] and blender_io.bake_range(ob) == (1, 16)
    assert not [a.name for a in ob.data.attributes if a.name.startswith(".hw_bake_")]   # nothing in the .blend
    np.testing.assert_array_equal(_rest(ob), rest)                                    # the groom untouched
    assert (scene.frame_start, scene.frame_end) == (1, 40) and bpy.context.view_layer.objects.active == ob
    # the wig stepped again by the same code in the same process (the same bits), its frames
    # through Alembic and Blender's Mesh Sequence Cache (carried: their float32 conversions)
    for f, want in in_blend.items():
        np.testing.assert_allclose(_seen(ob, f), want, rtol=0, atol=carried(want), err_msg=f"frame {f}")
    bpy.ops.wm.save_as_mainfile(filepath=str(shot))
    # a Blender without hair_wig plays it from the file
    res = subprocess.run([sys.executable, "-c", PLAY, str(shot)], capture_output=True, text=True, timeout=120)
    line = next(l for l in res.stdout.splitlines() if l.startswith("PLAYED "))
    import json

    played = json.loads(line[len("PLAYED "):])
    assert not any("hair_wig" in m for m in played["modules"])
    for f, p in played["frames"].items():
        np.testing.assert_allclose(np.array(p).reshape(-1, 3), in_blend[int(f)], rtol=0,
                                   atol=carried(in_blend[int(f)]))
    # Clear Bake: the groom shows again, exactly
    assert blender_io.clear_bake(ob) and not any(m.type == "MESH_SEQUENCE_CACHE" for m in ob.modifiers)
    np.testing.assert_array_equal(_seen(ob, 8).astype(np.float32).ravel(), rest)


def test_a_cancelled_disk_bake_leaves_everything_as_it_was(addon, tmp_path):
    from hair_wig_addon.hair_wig import HairWigError
    from hair_wig_addon.operators import blender_io, disk_bake

    shot, ob, rest = _baked_in_blend(tmp_path)
    before = {f: _seen(ob, f) for f in (1, 9)}
    stack = [(m.name, m.type, m.show_viewport) for m in ob.modifiers]

    def cancel(done, total):
        if done == 5:
            raise HairWigError("cancelled")

    with pytest.raises(HairWigError, match="cancelled"):
        disk_bake.bake_to_disk(bpy.context, ob, progress=cancel)
    assert [(m.name, m.type, m.show_viewport) for m in ob.modifiers] == stack
    assert not list((tmp_path / "hair_wig").glob("*")) and blender_io.bake_range(ob) == (1, 16)
    np.testing.assert_array_equal(_rest(ob), rest)
    for f, want in before.items():
        np.testing.assert_array_equal(_seen(ob, f), want)                           # the earlier bake plays on
    assert not [n for n in bpy.data.node_groups if n.name.startswith(".HairWig Stream")]


def test_bake_py_bakes_every_wig_to_disk_and_saves_the_shot_that_plays_them(addon, tmp_path):
    from test_batch import run

    shot = tmp_path / "shot.blend"
    _shot(shot)
    out = tmp_path / "baked.blend"
    res = run(shot, "--disk", "--output", out)
    assert res.returncode == 0, res.stderr
    assert "Hair: 16 frames (1..16) to //hair_wig/Hair.abc" in res.stdout and "Fur: 16 frames" in res.stdout
    assert (tmp_path / "hair_wig" / "Hair.abc").is_file() and (tmp_path / "hair_wig" / "Fur.abc").is_file()
    bpy.ops.wm.open_mainfile(filepath=str(out))
    for name in ("Hair", "Fur"):
        ob = bpy.data.objects[name]
        assert ob.modifiers[0].type == "MESH_SEQUENCE_CACHE", name
        assert not [a for a in ob.data.attributes if a.name.startswith(".hw_bake_")]
    moved = _seen(bpy.data.objects["Hair"], 12) - _seen(bpy.data.objects["Hair"], 1)
    assert np.abs(moved).max() > 0.05                                # it plays the head's turn
