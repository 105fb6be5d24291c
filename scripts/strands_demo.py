"""Long hair swinging with the Strands solver: the groom scene's long hair (combed over a
subdivided Suzanne, ears and all, onto a shoulders collider) with the head turning quickly and
then holding still, baked with the Strands solver (Hold 60 and Settle 3, looser than the
defaults, so the swing shows; the rest at their defaults); measured as the groom
scenes are (rest move, stretch, deepest inside) and rendered as a contact sheet of the swing and
the settle.

    ./run python scripts/strands_demo.py [--strands 1500] [--output docs/strands_swing.png]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bpy  # noqa: E402
import grooms  # noqa: E402
import scenes  # noqa: E402

TURN = (1, 9)                    # the head turns over these frames, then holds still
LAST = 48
TILES = (1, 5, 9, 12, 16, 20, 28, 48)
HOLD, SETTLE = 60.0, 3.0


def build(strands: int, points: int = 36) -> grooms.Groom:
    g = grooms.long_hair(strands, points)
    for ob in [o for o in bpy.data.objects if o.type == "EMPTY"]:       # the scene's magnet
        bpy.data.objects.remove(ob)
    g.hair.hair_wig.magnets.clear()                    # the swing is the solver's alone
    g.head.animation_data_clear()
    scenes.keyed_head_turn(g.head, *TURN, angle=0.7, lift=0.05)
    g.frames = (1, LAST)
    s = g.hair.hair_wig
    s.use_secondary = True
    s.dynamics_layer = "STRANDS"
    # a looser hold and a slower settle than the defaults (150, 10), so the swing shows more
    s.strands_stiffness, s.strands_goal_damping = HOLD, SETTLE
    return g


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--strands", type=int, default=1500)
    p.add_argument("--output", default="docs/strands_swing.png")
    args = p.parse_args(argv)
    grooms.addon.ensure_registered()
    g = build(args.strands)
    cache, seconds = grooms.bake(g)
    print(grooms.bake_line(g, cache, seconds), flush=True)
    from hair_wig_addon.operators import blender_io

    blender_io.write_bake(g.hair, cache)
    out = Path(args.output)
    grooms.frame_sheet(g, out, TILES, view=(0.25, 1.0, 0.2))
    print(f"wrote {out}: frames {', '.join(map(str, TILES))} (left to right, top row first)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
