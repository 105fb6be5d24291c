"""A baked file plays back in a fresh Blender that has never loaded hair_wig."""

import json
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest
import scenes
from tolerance import rounding
PROBE = Path(__file__).with_name("playback_probe.py")


def test_saved_bake_plays_back_without_addon(scene, addon, tmp_path):
    """Baked Curves and legacy curves play their bake; a wig that was never baked (magnet settings,
    rest pose and all) opens as the hair's own rest pose."""
    from hair_wig_addon.hair_wig import BakeCache
    from hair_wig_addon.operators import blender_io as io

    expected = {}
    rng = np.random.default_rng(7)
    pts, counts = scenes.straight_strands(30, 8)
    objects = [scenes.curves_hair("Curves Hair", pts, counts),
               scenes.legacy_hair("Poly Hair", pts, counts, "POLY"),
               scenes.legacy_hair("Bezier Hair", pts, counts, "BEZIER")]
    for first, ob in zip((-2, 1, 5), objects):   # negative frames too
        ob.hair_wig.enabled = True   # the file carries hair_wig settings the fresh Blender ignores
        hair = io.read_hair(ob)
        pos = hair.points[None] + rng.normal(0, 0.1, (12, hair.num_points, 3)).astype(np.float32)
        io.write_bake(ob, BakeCache.from_positions(hair, first, pos))
        expected[f"{ob.name}/positions"] = pos
        expected[f"{ob.name}/first"] = first
    wig, _, _ = scenes.keyed_wig()
    bpy.ops.hair_wig.set_rest_pose()
    expected["Hair/positions"] = np.broadcast_to(io.read_hair(wig).points, (4, len(wig.data.points), 3))
    expected["Hair/first"] = 1
    objects.append(wig)
    blend, npz = tmp_path / "baked.blend", tmp_path / "expected.npz"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    np.savez(npz, **expected)

    run = subprocess.run([sys.executable, str(PROBE), str(blend), str(npz)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(next(l for l in run.stdout.splitlines() if l.startswith("REPORT "))[7:])
    assert report["registered"] is False and report["addon_modules"] == []
    got = report["objects"]
    assert set(got) == {ob.name for ob in objects}
    assert got["Curves Hair"]["exact"], got["Curves Hair"]
    assert got["Hair"]["exact"], got["Hair"]
    # Curves: Blender's Mix s a + t b (3 roundings), t = 0.5 exactly (the Frame input is keyed on
    # every whole frame), against numpy's 0.5 (a + b) (1), of the positions' magnitude
    assert got["Curves Hair"]["half_err"] <= rounding(got["Curves Hair"]["magnitude"], 3 + 1)
    for name, r in got.items():
        # Legacy curves: absolute shape keys at 10, 20, ... blended by (1 − t) a + t b (4
        # roundings, and numpy's half 1 more), t a fraction of float32 key positions around
        # eval_time / 100: up to 4 roundings of (keys + 1) key spacings off, times how far the
        # points move from one frame to the next. A wrong frame is off by that whole move.
        pos = expected[f"{name}/positions"]
        step = float(np.abs(np.diff(pos, axis=0)).max()) if len(pos) > 1 else 0.0
        slip = rounding(len(pos) + 1, 4) * step if name in ("Poly Hair", "Bezier Hair") else 0.0
        assert r["frame_err"] <= rounding(r["magnitude"], 4) + slip, (name, r)
        assert r["half_err"] <= rounding(r["magnitude"], 4 + 1) + slip, (name, r)
        assert not [a for a in r["attributes"] if "hw_bake" in a], (name, r["attributes"])
