"""How far hair segments cut into a groom scene's head between their points, which refinement's
collision (point by point) does not see: each segment's quarter, middle and three-quarter points,
at every baked frame, measured with Blender's BVH and the winding number (``grooms._Exact``),
each against its own limit (the Head Offset, or where the groom itself has it deeper).

    ./run python scripts/segment_cuts.py [--scene long_hair] [--solvers SPRINGS STRANDS RODS WISPS]
                                         [--curve POLY|CATMULL_ROM]

``--curve``: the hair between its points as straight segments (the chords, what a Poly curve
shows), or as the uniform Catmull-Rom curve through them that Blender draws Curves hair with by
default (its neighbours the points either side, a strand's end point doubled), sampled at the
same three places.

Per solver: the deepest segment sample beyond its limit (mm and of the head's size), the deepest
point for comparison, the segment-frames cut deeper than 0.1 % of the head, and the share of the
samples cut deeper than 5 mm that lie beside Suzanne's ears (|x| > 0.8 m of her own space, a
2.66 m head), where hair passes between ear and head."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import numpy as np  # noqa: E402

import addon  # noqa: E402
import grooms  # noqa: E402


def cuts(scene: str, solver: str, curve: str = "POLY") -> dict:
    import bpy

    g = grooms.BUILDERS[scene]()
    if solver != "SCENE":
        grooms.use_solver(g, solver)
    cache, _ = grooms.bake(g)
    from hair_wig_addon.operators import blender_io

    first, last = g.frames
    bpy.context.scene.frame_set(first)
    hair = blender_io.read_hair(g.hair)
    groom = hair.points.astype(np.float64)
    first_of = np.zeros(len(groom), bool)
    first_of[hair.offsets[:-1]] = True
    seg_ok = ~first_of[1:]
    hv, _ = grooms.mesh_world(g.head)
    size = float((hv.max(0) - hv.min(0)).max())
    body = grooms._Exact(g.head)
    offset = g.hair.hair_wig.collision_offset

    last_of = np.zeros(len(groom), bool)
    last_of[hair.offsets[1:] - 1] = True
    i = np.flatnonzero(seg_ok)                      # each segment from point i to i + 1
    before = np.where(first_of[i], i, i - 1)        # its neighbours, the end point itself at a
    after = np.where(last_of[i + 1], i + 1, np.minimum(i + 2, len(groom) - 1))   # strand's ends

    def samples(p):
        a, b = p[i], p[i + 1]
        if curve == "POLY":
            return np.concatenate([a + t * (b - a) for t in (0.25, 0.5, 0.75)])
        # a uniform Catmull-Rom segment through a and b, its neighbours the points either side
        # (the end point doubled at a strand's ends), as Blender draws Curves hair by default
        z, d = p[before], p[after]
        return np.concatenate([0.5 * (2 * a + (b - z) * t + (2 * z - 5 * a + 4 * b - d) * t * t
                                      + (3 * a - z - 3 * b + d) * t ** 3) for t in (0.25, 0.5, 0.75)])

    lim_s = np.minimum(offset, body(grooms._to_world(g, samples(groom), first)))
    lim_p = np.minimum(offset, body(grooms._to_world(g, groom, first)))
    nseg = int(seg_ok.sum())
    deepest = deepest_point = 0.0
    cut = 0
    deep = []
    for f in range(first, last + 1):
        p = cache.frame(f).astype(np.float64)
        w = grooms._to_world(g, samples(p), f)
        d = lim_s - body(w)
        deepest_point = max(deepest_point, float((lim_p - body(grooms._to_world(g, p, f)))[~first_of].max()))
        deepest = max(deepest, float(d.max()))
        cut += np.unique(np.flatnonzero(d > 1e-3 * size) % nseg).size
        if (d > 5e-3).any():
            bpy.context.scene.frame_set(f)
            back = np.linalg.inv(np.array(g.head.matrix_world))
            deep.append(w[d > 5e-3] @ back[:3, :3].T + back[:3, 3])
    deep = np.concatenate(deep) if deep else np.zeros((0, 3))
    return {"solver": solver, "size": size, "segments": nseg, "frames": last - first + 1, "deepest": deepest,
            "deepest_point": deepest_point, "cut": cut, "deep": len(deep),
            "ears": int((np.abs(deep[:, 0]) > 0.8).sum())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene", default="long_hair", choices=list(grooms.BUILDERS))
    ap.add_argument("--solvers", nargs="+", default=["SPRINGS", "STRANDS", "RODS", "WISPS"])
    ap.add_argument("--curve", default="POLY", choices=("POLY", "CATMULL_ROM"),
                    help="how the hair is drawn between its points: straight segments, or the Catmull-Rom "
                         "curve Blender draws Curves hair with by default")
    args = ap.parse_args(argv)
    addon.ensure_registered()
    print("| solver | deepest segment sample beyond its limit | of the head | deepest point | segment-frames "
          "cut > 0.1 % of the head | samples > 5 mm deep, beside the ears |")
    print("|---|---|---|---|---|---|")
    for solver in args.solvers:
        r = cuts(args.scene, solver, args.curve)
        print(f"| {solver} | {r['deepest'] * 1e3:.1f} mm | {r['deepest'] / r['size']:.2e} | "
              f"{r['deepest_point'] * 1e3:.3f} mm | {r['cut']} of {r['segments'] * r['frames']} | "
              f"{r['ears']} of {r['deep']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
