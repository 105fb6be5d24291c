"""Run in a fresh Python with bpy and WITHOUT hair_wig: open a baked .blend, play every baked
frame and every half frame, and print how far Blender's evaluated positions are from the
expected ones, as JSON. Usage: python playback_probe.py FILE.blend EXPECTED.npz"""

import json
import sys

import bpy
import numpy as np

path, expected_path = sys.argv[1:3]
bpy.ops.wm.open_mainfile(filepath=path)
expected = np.load(expected_path)
depsgraph = bpy.context.evaluated_depsgraph_get()
scene = bpy.context.scene
report = {"registered": hasattr(bpy.types.Object, "hair_wig"),
          "addon_modules": sorted(m for m in sys.modules if "hair_wig" in m), "objects": {}}


def points(ob):
    geometry = ob.evaluated_get(depsgraph).evaluated_geometry()
    curves = geometry.curves
    out = np.empty(len(curves.points) * 3, np.float32)
    curves.attributes["position"].data.foreach_get("vector", out)
    return out.reshape(-1, 3), sorted(a.name for a in curves.attributes)


for name in [k[:-len("/positions")] for k in expected.files if k.endswith("/positions")]:
    ob = bpy.data.objects[name]
    pos = expected[f"{name}/positions"]
    first = int(expected[f"{name}/first"])
    frame_err, half_err, exact, names = 0.0, 0.0, True, []
    for i in range(pos.shape[0]):
        scene.frame_set(first + i)
        got, names = points(ob)
        frame_err = max(frame_err, float(np.abs(got - pos[i]).max()))
        exact &= bool(np.array_equal(got, pos[i]))
        if i + 1 < pos.shape[0]:
            scene.frame_set(first + i, subframe=0.5)
            got, _ = points(ob)
            half_err = max(half_err, float(np.abs(got - 0.5 * (pos[i] + pos[i + 1])).max()))
    report["objects"][name] = {"frame_err": frame_err, "half_err": half_err, "exact": exact,
                               "attributes": names, "magnitude": float(np.abs(pos).max())}
print("REPORT " + json.dumps(report))
