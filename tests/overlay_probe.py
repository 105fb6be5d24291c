"""Run in a fresh Python with bpy: draw hair_wig's magnet overlay into an offscreen buffer, looking
down the z axis with an orthographic camera over [-2, 2]², and print where it drew, as JSON.
Needs a Blender whose bpy can draw in background mode (``gpu.init``, Blender 5.x).

Cases: one magnet of radius 0.7 at (1, 0, 0); the same magnet moved to (-1, 0.5, 0); the wig
disabled. Usage: python overlay_probe.py"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import addon  # noqa: E402
import bpy  # noqa: E402
import gpu  # noqa: E402
import numpy as np  # noqa: E402
import offscreen  # noqa: E402  (it starts Blender's GPU module)
import scenes  # noqa: E402

SIZE, EXTENT = 128, 2.0

addon.ensure_registered()
from hair_wig_addon.panels import overlay  # noqa: E402

bpy.ops.wm.read_factory_settings(use_empty=True)
scene = bpy.context.scene
bpy.ops.mesh.primitive_uv_sphere_add(radius=0.2, location=(0, 0, -5))
head = bpy.context.active_object
hair, _ = scenes.wig_on(head, 20, 5)
scene.cursor.location = (1.0, 0.0, 0.0)
bpy.ops.hair_wig.add_magnet(radius=0.7, space="WORLD")
magnet = hair.hair_wig.magnets[0].object


def drawn() -> list:
    """World (x, y) of every pixel the overlay coloured."""
    bpy.context.view_layer.update()
    projection = np.diag([1 / EXTENT, 1 / EXTENT, -0.1, 1.0])
    pixels = offscreen.draw(SIZE, SIZE, projection, overlay.draw)
    rows, cols = np.nonzero(pixels[..., 3] > 0.05)
    to_world = lambda i: (i + 0.5) / SIZE * 2 * EXTENT - EXTENT
    return np.stack([to_world(cols), to_world(rows)], 1).tolist()


report = {"renderer": gpu.platform.renderer_get(), "pixel": 2 * EXTENT / SIZE}
report["at_1_0"] = drawn()
magnet.location = (-1.0, 0.5, 0.0)
report["at_-1_0.5"] = drawn()
hair.hair_wig.enabled = False
report["disabled"] = drawn()
print("REPORT " + json.dumps(report))
