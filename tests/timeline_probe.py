"""Run in a fresh Python with bpy: draw the Timeline's live cache strip (frames 1–6 current, 7–10
outdated, 10 pixels a frame) into an offscreen buffer in pixel space and print the colour of
every pixel column along its bottom rows, as JSON. Needs a Blender whose bpy can draw in
background mode (``gpu.init``, Blender 5.x). Usage: python timeline_probe.py"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import addon  # noqa: E402
import offscreen  # noqa: E402

W, H = 128, 16

addon.ensure_registered()
from hair_wig_addon.panels import timeline  # noqa: E402

# pixel (x, y) -> normalised device coordinates, as a region's POST_PIXEL space
projection = ((2 / W, 0, 0, -1), (0, 2 / H, 0, -1), (0, 0, -1, 0), (0, 0, 0, 1))
pixels = offscreen.draw(W, H, projection, lambda: timeline.draw_rectangles(
    timeline.rectangles([(1, 6, "current"), (7, 10, "outdated")], lambda f: 10.0 * f)))
print("REPORT " + json.dumps({"alpha": pixels[..., 3].tolist()}))
