"""Files move between the Blender lines hair_wig supports (4.5 LTS and 5.2 LTS).

A wig is baked here, in this process's Blender, saved, and opened by every other line's Blender in
a fresh process without the add-on (tests/playback_probe.py). ``./run tests`` makes every line's
environment and says where its Python is (``HAIR_WIG_BPY_4_5``, ``HAIR_WIG_BPY_5_2``), so on CI the
4.5 run checks 4.5 -> 5.2 and the 5.2 run checks 5.2 -> 4.5. Run for one line alone
(``HAIR_WIG_BLENDER=5.2 ./run tests``), the other line's tests are skipped when its environment
has not been made yet.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest
import scenes
from conftest import ROOT
from tolerance import FOLLOW, rounding

PROBE = Path(__file__).with_name("playback_probe.py")
BAKE = ROOT / "scripts" / "bake.py"
FRAMES, POINTS, MAGNETS = 10, 8, 1          # bake_wig's shot
THIS = f"{bpy.app.version[0]}.{bpy.app.version[1]}"
LINES = sorted(re.fullmatch(r"requirements-(\d+\.\d+)\.txt", p.name)[1]
               for p in ROOT.glob("requirements-[0-9]*.txt"))
OTHERS = [line for line in LINES if line != THIS]


def version(line: str) -> tuple:
    return tuple(map(int, line.split(".")))


def python_of(line: str) -> str:
    py = os.environ.get(f"HAIR_WIG_BPY_{line.replace('.', '_')}")
    if not py:
        pytest.skip(f"Blender {line}'s environment is not made; `./run tests` (every line) makes it")
    return py


def bake_wig(path: Path) -> np.ndarray:
    """Bake a wig with a keyed magnet, a dynamic magnet and secondary dynamics on a turning head
    through the Bake operator; save it to ``path``; return what Blender plays, (frames, P, 3)."""
    from hair_wig_addon.operators import blender_io as io

    hair, _, magnet = scenes.keyed_wig(strands=60, points=POINTS, frames=(1, FRAMES))
    magnet.hair_wig_magnet.dynamic = True
    hair.hair_wig.use_secondary = True
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    depsgraph = bpy.context.evaluated_depsgraph_get()
    played = []
    for f in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(f)
        played.append(io.read_evaluated_points(hair, depsgraph))
    return np.stack(played)


def probe(python: str, blend: Path, expected: np.ndarray, tmp_path: Path) -> dict:
    npz = tmp_path / f"{blend.stem}_expected.npz"
    np.savez(npz, **{"Hair/positions": expected, "Hair/first": 1})
    run = subprocess.run([python, str(PROBE), str(blend), str(npz)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads(next(l for l in run.stdout.splitlines() if l.startswith("REPORT "))[7:])
    assert report["registered"] is False and report["addon_modules"] == []
    return report["objects"]["Hair"]


@pytest.mark.parametrize("other", OTHERS)
def test_a_bake_opened_by_the_other_line(scene, addon, tmp_path, other):
    """A newer line plays an older line's bake exactly (Blender rewrites the animation path of the
    modifier input). An older line opening a newer line's file cannot follow that path: the hair
    holds the first baked frame, exactly, and shows none of the bake's attributes."""
    python = python_of(other)
    blend = tmp_path / f"baked_on_{THIS}.blend"
    played = bake_wig(blend)
    assert np.abs(played[-1] - played[0]).max() > 0.05          # the bake moves the hair
    if version(other) > version(THIS):
        got = probe(python, blend, played, tmp_path)
        print(f"observed on {THIS} -> {other}: half_err {got['half_err']:.3g}, "
              f"magnitude {got['magnitude']:.3g}")
        assert got["exact"], got
        # Half frames: Blender's Mix (vector) s a + t b (s = 1 − t) in float32, t = 0.5 exactly
        # (the Frame input is keyed on every whole frame), against numpy's 0.5 (a + b): 3 + 1
        # roundings of coordinates up to the positions' largest |x| (at least the 1 m head they
        # sit on); blending the wrong frames would be off by a frame's motion, centimetres.
        assert got["half_err"] <= rounding(max(1.0, got["magnitude"]), operations=4), got
    else:
        got = probe(python, blend, np.broadcast_to(played[:1], played.shape), tmp_path)
        assert got["exact"] and got["half_err"] == 0.0, got
    assert not [a for a in got["attributes"] if "hw_bake" in a], got["attributes"]


@pytest.mark.parametrize("other", OTHERS)
def test_the_other_line_bakes_the_same_wig_alike(scene, addon, tmp_path, other):
    """The other line, given this line's file, bakes it again with scripts/bake.py (what a render
    farm on that line does) and plays what this line baked, to float32 precision: the same wig
    gives the same hair on 4.5 (numpy 1.26) and 5.2 (numpy 2)."""
    python = python_of(other)
    blend = tmp_path / f"baked_on_{THIS}.blend"
    played = bake_wig(blend)
    out = tmp_path / f"rebaked_on_{other}.blend"
    run = subprocess.run([python, str(BAKE), str(blend), "--output", str(out)], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "Hair: 10/10 frames" in run.stdout, run.stdout
    got = probe(python, out, played, tmp_path)
    print(f"observed on {THIS} -> {other}: frame_err {got['frame_err']:.3g}, "
          f"magnitude {got['magnitude']:.3g}")
    # Each line rounds its own way (numpy 1.26 or 2, BLAS and SIMD paths per CPU, Blender's own
    # float32 matrices of the keyed head and magnet). Per frame and point: ~12 roundings for the
    # magnet blend and head transform (one magnet), ~13 for the world-space secondary spring step
    # there and back, ~7 for compression and the output transform: 32; the per-segment length
    # walk adds FOLLOW = 16 per point (difference, direction — whose rounding the conditioned
    # follow-the-leader multiplies at most CONDITION = 7 times, not L/|d| — scale, add) and
    # carries each point's error on to the next, so the tip gathers FOLLOW x POINTS. The springs
    # and the dynamic magnet remember every frame: x FRAMES. Coordinates up to the positions'
    # largest |x| (head and magnets sit within it, at least the 1 m head).
    # 10 x (32 + 16 x 8) = 1600 eps32 x 1.34 m = 0.26 mm: a wrong bake moves this hair by
    # centimetres (the magnet travels 0.3 m, the head turns 0.8 rad).
    operations = FRAMES * (12 * MAGNETS + 13 + 7 + FOLLOW * POINTS)
    assert got["frame_err"] <= rounding(max(1.0, got["magnitude"]), operations), got
