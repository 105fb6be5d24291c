"""Split bakes from the command line (issue 18, real bpy in separate processes): parts of a shot —
one object's strand ranges, another object whole — baked by ``scripts/bake.py --part``, merged
by ``--merge``, play back exactly as the one-process bake; parts that do not fit are refused by
name and leave the file as it was."""

import bpy
import numpy as np
import pytest
import scenes
from test_batch import digest, one_error_line, run


def _shot(path):
    """A turning sphere head with two wigs: 'Hair' (springs, a magnet, a dynamic magnet,
    collision) and 'Fur' (the Rods layer: split by object only)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0, segments=32, ring_count=16)
    head = bpy.context.active_object
    head.name = "Head"
    scenes.keyed_head_turn(head, 1, 10, angle=0.8)
    hair, _ = scenes.uv_hair_on(head, 120, name="Hair", points=8, length=0.5)
    hair.hair_wig.use_secondary = True
    scenes.keyed_magnet(hair, "Pull", (0.0, -0.8, 0.6), (0.3, -0.3, 0.0), (1, 12), 0.8)
    scenes.keyed_magnet(hair, "Swing", (0.5, 0.0, 0.8), (0.0, 0.4, 0.0), (1, 12), 0.7, dynamic=(30.0, 2.0, 1.0))
    fur, _ = scenes.uv_hair_on(head, 60, name="Fur", points=6, length=0.3)
    fur.hair_wig.use_secondary, fur.hair_wig.dynamics_layer = True, "RODS"
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 16
    bpy.ops.wm.save_as_mainfile(filepath=str(path))


def _baked(path):
    """Every baked frame attribute of both wigs, as stored."""
    bpy.ops.wm.open_mainfile(filepath=str(path))
    out = {}
    for name in ("Hair", "Fur"):
        attrs = bpy.data.objects[name].data.attributes
        for a in attrs:
            if a.name.startswith(".hw_bake_"):
                v = np.empty(len(a.data) * 3, np.float32)
                a.data.foreach_get("vector", v)
                out[(name, a.name)] = v
    return out


def test_a_split_bake_merges_into_the_one_process_bake_bit_for_bit(addon, tmp_path):
    shot = tmp_path / "shot.blend"
    _shot(shot)
    whole = tmp_path / "whole.blend"
    assert run(shot, "--output", whole).returncode == 0
    parts = []
    for k, span in enumerate(("0:45", "45:100", "100:120")):
        parts.append(tmp_path / f"hair_{k}.npz")
        res = run(shot, "--objects", "Hair", "--strands", span, "--part", parts[-1])
        assert res.returncode == 0 and f"wrote {parts[-1]} (Hair, strands {span})" in res.stdout, res.stderr
    parts.append(tmp_path / "fur.npz")
    assert run(shot, "--objects", "Fur", "--part", parts[-1]).returncode == 0
    before = digest(shot)
    merged = tmp_path / "merged.blend"
    res = run(shot, "--merge", *parts, "--output", merged)
    assert res.returncode == 0 and "merged Hair (3 parts), Fur (1 parts)" in res.stdout, res.stderr
    assert digest(shot) == before
    a, b = _baked(whole), _baked(merged)
    assert len(a) == 2 * 16 and a.keys() == b.keys()
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_parts_that_do_not_fit_are_refused_by_name(addon, tmp_path):
    shot = tmp_path / "shot.blend"
    _shot(shot)
    one_error_line(run(shot, "--objects", "Fur", "--strands", "0:30", "--part", tmp_path / "f.npz"),
                   r"'Fur': its Rods dynamics layer steps the whole wig at once; split this bake by object")
    p0, p1 = tmp_path / "a.npz", tmp_path / "b.npz"
    assert run(shot, "--objects", "Hair", "--strands", "0:50", "--part", p0).returncode == 0
    assert run(shot, "--objects", "Hair", "--strands", "60:120", "--part", p1).returncode == 0
    before = digest(shot)
    one_error_line(run(shot, "--merge", p0, p1), r"'Hair': strands 50:60 are in no part")
    assert digest(shot) == before
    one_error_line(run(shot, "--strands", "0:10", "--part", p0), r"--part bakes one object")
