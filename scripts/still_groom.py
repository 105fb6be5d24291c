"""A still groom under the Strands layer with and without Hair Against Hair (issue 34 part 2):
long hair combed over a subdivided Suzanne onto shoulders (``grooms.long_hair``), every
animation cleared (a still head, still magnets), baked over 12 frames; prints how far any point
moves from the groom, how many tips move more than 1 cm at frames 2 and 12, and the bake's time.

    ./run python scripts/still_groom.py [--strands 400]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bpy  # noqa: E402
import grooms  # noqa: E402
import numpy as np  # noqa: E402

POINTS = 24


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--strands", type=int, default=400)
    args = p.parse_args(argv)
    import addon
    addon.ensure_registered()
    n = args.strands
    for hair_hair in (True, False):
        g = grooms.long_hair(n, POINTS)
        for ob in bpy.data.objects:
            ob.animation_data_clear()
        g.frames = (1, 12)
        grooms.use_solver(g, "STRANDS")
        g.hair.hair_wig.strands_hair_hair = hair_hair
        cache, seconds = grooms.bake(g)
        rest = cache.frame(1)
        move = max(float(np.linalg.norm(cache.frame(f) - rest, axis=1).max()) for f in range(1, 13))
        tips = np.arange(POINTS - 1, n * POINTS, POINTS)
        far = [int((np.linalg.norm(cache.frame(f)[tips] - rest[tips], axis=1) > 0.01).sum()) for f in (2, 12)]
        print(f"hair against hair {'on ' if hair_hair else 'off'}: {n} x {POINTS}, largest move from the groom "
              f"{move * 1000:.2f} mm, tips over 1 cm at frames 2 and 12: {far[0]}, {far[1]}; bake {seconds:.1f} s",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]))
