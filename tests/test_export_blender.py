"""Baked hair out of Blender (issue 18, real bpy): a baked Quick Fur groom — guides with their
Interpolate Hair Curves children — exported through Blender's Alembic and USD exporters, a point
sample per frame; read back (Alembic by Blender's own import, played by its Mesh Sequence Cache
modifier; USD with Pixar's usd-core, in a process of its own) every frame equals the bake as the
user sees it."""

import json
import subprocess
import sys

import bpy
import grooms
import numpy as np
import pytest
from test_batch import run
from test_split_blender import _shot
from tolerance import AFFINE, magnitude, rounding

READ_USD = r"""
import json, sys
import numpy as np
from pxr import Usd, UsdGeom
stage = Usd.Stage.Open(sys.argv[1])
out = {}
for prim in stage.Traverse():
    if prim.IsA(UsdGeom.BasisCurves):
        points = UsdGeom.BasisCurves(prim).GetPointsAttr()
        for t in points.GetTimeSamples():
            m = np.array(UsdGeom.XformCache(t).GetLocalToWorldTransform(prim)).T
            p = np.array(points.Get(t), np.float64) @ m[:3, :3].T + m[:3, 3]
            out.setdefault(str(int(t)), []).append(p.tolist())
print(json.dumps({"up": UsdGeom.GetStageUpAxis(stage), "frames": out}))
"""


def carried(want):
    """How far points can round on their way out through an exporter and back in: the exporter
    and the importer may carry the float32 points into another space and back (an axis
    conversion, the object's matrix; Blender's float32 products: 7 roundings each) before both
    sides take them to the world in float64, of coordinates up to |x|. A wrong frame or a lost
    point is off by millimetres at least."""
    return rounding(magnitude(want), 2 * AFFINE)


def _seen(ob, frame):
    """The hair as the user sees it at ``frame`` (its whole stack evaluated), world space."""
    bpy.context.scene.frame_set(frame)
    geometry = ob.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
    p = np.empty(len(geometry.curves.points) * 3, np.float32)
    geometry.curves.attributes["position"].data.foreach_get("vector", p)
    m = np.array(ob.matrix_world)
    return p.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]


# Blender 4.5's exporters evaluate a Quick Fur stack's children elsewhere than its viewport does
# (measured: 13 260 exported points against 13 296 shown, most of them in other places; the
# guides alone export exactly, see the last tests); 5.2's match what is shown exactly.
CHILDREN_EXACT = pytest.mark.xfail(bpy.app.version < (5, 0, 0), strict=True,
                                   reason="Blender 4.5's exporters evaluate Quick Fur's children differently")


@pytest.fixture
def baked_fur(addon):
    from hair_wig_addon.operators import blender_io

    g = grooms.quick_fur("LOW")
    cache, _ = grooms.bake(g)
    blender_io.write_bake(g.hair, cache)
    frames = range(g.frames[0], g.frames[1] + 1)
    seen = {f: _seen(g.hair, f) for f in frames}
    guides = len(g.hair.data.points)
    assert len(seen[frames[0]]) > 4 * guides                  # the children are in what is seen
    return g, seen


@CHILDREN_EXACT
def test_alembic_and_usd_carry_every_baked_frame_children_included(baked_fur, tmp_path):
    """One baked groom (baking it is the slow part), both formats."""
    from hair_wig_addon.operators import export_ops

    g, seen = baked_fur
    usd = tmp_path / "fur.usdc"
    export_ops.export_baked(bpy.context, [g.hair], str(usd))
    res = subprocess.run([sys.executable, "-c", READ_USD, str(usd)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    read = json.loads(res.stdout)
    assert read["up"] == "Z" and sorted(map(int, read["frames"])) == list(seen)
    for f, want in seen.items():
        (got,) = read["frames"][str(f)]
        np.testing.assert_allclose(np.array(got), want, rtol=0, atol=carried(want), err_msg=f"USD frame {f}")
    abc = tmp_path / "fur.abc"
    assert export_ops.export_baked(bpy.context, [g.hair], str(abc)) == g.frames
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.alembic_import(filepath=str(abc))
    (ob,) = [o for o in bpy.context.scene.objects if o.type == "CURVES"]
    assert [m.type for m in ob.modifiers] == ["MESH_SEQUENCE_CACHE"]
    for f, want in seen.items():
        np.testing.assert_allclose(_seen(ob, f), want, rtol=0, atol=carried(want), err_msg=f"Alembic frame {f}")


def test_export_refuses_unbaked_hair_and_other_formats(addon, tmp_path):
    from hair_wig_addon.hair_wig import HairWigError
    from hair_wig_addon.operators import export_ops

    g = grooms.quick_fur("LOW")
    with pytest.raises(HairWigError, match=f"'{g.hair.name}' is not baked hair: bake it first"):
        export_ops.export_baked(bpy.context, [g.hair], str(tmp_path / "x.abc"))
    with pytest.raises(HairWigError, match=r"x\.obj: export to \.abc \(Alembic\) or \.usd"):
        export_ops.export_baked(bpy.context, [g.hair], str(tmp_path / "x.obj"))


def test_bake_py_exports_after_a_bake_and_after_a_merge(addon, tmp_path):
    shot = tmp_path / "shot.blend"
    _shot(shot)
    res = run(shot, "--objects", "Hair", "--output", tmp_path / "a.blend", "--export", tmp_path / "a.abc")
    assert res.returncode == 0 and f"exported Hair (frames 1..16) to {tmp_path / 'a.abc'}" in res.stdout, res.stderr
    part = tmp_path / "p.npz"
    assert run(shot, "--objects", "Fur", "--part", part).returncode == 0
    res = run(shot, "--merge", part, "--output", tmp_path / "b.blend", "--export", tmp_path / "b.usdc")
    assert res.returncode == 0 and "exported Fur (frames 1..16)" in res.stdout, res.stderr
    assert (tmp_path / "a.abc").stat().st_size > 0 and (tmp_path / "b.usdc").stat().st_size > 0


@pytest.mark.parametrize("suffix", [".abc", ".usdc"])
def test_baked_guides_export_exactly_on_every_line(addon, tmp_path, suffix):
    """Hair without children (a wig on a turning head, springs): every frame read back equals
    the bake, on 4.5 as on 5.2."""
    from hair_wig_addon.operators import blender_io, export_ops

    shot = tmp_path / "shot.blend"
    _shot(shot)
    ob = bpy.data.objects["Hair"]
    bpy.context.view_layer.objects.active = ob
    assert bpy.ops.hair_wig.bake() == {"FINISHED"}
    seen = {f: _seen(ob, f) for f in range(1, 17)}
    assert blender_io.bake_range(ob) == (1, 16)
    out = tmp_path / f"hair{suffix}"
    export_ops.export_baked(bpy.context, [ob], str(out))
    if suffix == ".abc":
        bpy.ops.wm.read_factory_settings(use_empty=True)
        bpy.ops.wm.alembic_import(filepath=str(out))
        (back,) = [o for o in bpy.context.scene.objects if o.type == "CURVES"]
        got = {f: _seen(back, f) for f in seen}
    else:
        res = subprocess.run([sys.executable, "-c", READ_USD, str(out)], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        got = {f: np.array(c[0]) for f, c in ((int(k), v) for k, v in json.loads(res.stdout)["frames"].items())}
    assert sorted(got) == sorted(seen)
    for f in seen:
        np.testing.assert_allclose(got[f], seen[f], rtol=0, atol=carried(seen[f]), err_msg=f"frame {f}")
