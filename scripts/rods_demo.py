"""Styled curls that keep their style while the head moves (seed 003): Style Hair's curled look
on a subdivided Suzanne (``style_demo``), the head turning quickly and then holding still, baked
with the Rods solver at its defaults; measured as the groom scenes are (rest move, stretch,
deepest inside) and rendered as a contact sheet of the swing and the settle.

    ./run python scripts/rods_demo.py [--density 400] [--output docs/rods_swing.png]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bpy  # noqa: E402
import grooms  # noqa: E402
import numpy as np  # noqa: E402
import scenes  # noqa: E402
import style_demo  # noqa: E402

TURN = (1, 9)                    # the head turns over these frames, then holds still
LAST = 48
TILES = (1, 5, 9, 12, 16, 20, 28, 48)


def build(density: float) -> grooms.Groom:
    head, hair = style_demo.build(density)
    style_demo.style(hair, **style_demo.LOOKS["curled"])
    bpy.context.view_layer.objects.active = hair
    assert bpy.ops.hair_wig.enable() == {"FINISHED"}
    scenes.keyed_head_turn(head, *TURN, angle=0.7, lift=0.05)
    s = hair.hair_wig
    s.use_secondary, s.dynamics_layer = True, "RODS"
    return grooms.Groom("curled, Rods", hair, head, frames=(1, LAST))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--density", type=float, default=400.0, help="strands per square metre of scalp")
    p.add_argument("--output", default=str(Path(__file__).resolve().parents[1] / "docs" / "rods_swing.png"))
    args = p.parse_args(argv)
    g = build(args.density)
    cache, seconds = grooms.bake(g)
    print(grooms.bake_line(g, cache, seconds), flush=True)
    offsets = np.r_[0, np.cumsum([c.points_length for c in g.hair.data.curves])]
    tips = offsets[1:] - 1
    settled = cache.frame(LAST)[tips].astype(np.float64)
    away = {f: float(np.linalg.norm(cache.frame(f)[tips] - settled, axis=1).max()) for f in (9, 12, 16, 20, 28)}
    print("tips farthest from where they rest at frame 48: "
          + ", ".join(f"frame {f} {d * 1000:.1f} mm" for f, d in away.items()), flush=True)
    from hair_wig_addon.operators import blender_io

    blender_io.write_bake(g.hair, cache)
    out = Path(args.output)
    grooms.frame_sheet(g, out, TILES, view=(1.0, -0.25, 0.3))
    print(f"wrote {out}: frames {', '.join(map(str, TILES))} (left to right, top row first)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
