"""Long hair while Suzanne turns her head, measured frame by frame: the hair combed over a 2 m
subdivided Suzanne onto the shoulders (``grooms.long_hair``), the head turning 90° over frames 1–21 and holding
still to 48, baked with a dynamics solver at its defaults (Rods unless told).

    .venv-5.2/bin/python scripts/rods_turn.py [--strands 784] [--points 24] [--solver RODS] [--set NAME=VALUE ...]

Per frame: the segments under half their rest length, the deepest point inside a collider beyond
the groom's own clearance there (exact distances from Blender's BVH tree and the mesh's
pseudo-normals, ``grooms.measure``'s), what the bake reported for that frame, the largest
tip move since the frame before, and the points that pop. Then the totals: segment-frames under
half their length, the deepest point, the bake's figure, the largest tip move from the frame
after the head stops and from ten frames later, and what an artist sees flicker:

* **pops** — a point that goes out and comes back: at frame f farther than 5 % of the head's size
  from the middle of where it was at f − 1 and f + 1, and farther than twice their half distance
  (a swing passes through that middle; a fold that flips and flips back does not): point-frames
  during the turn and after it, and the largest;
* **tip snaps** after the stop — a tip that moves more than 4 % of the head's size in one frame
  and more than three times as far as in the frames either side.
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

TURN = (1, 21)                   # the head turns a quarter over these frames, then holds still
LAST = 48
POP = 0.05                       # a pop: a point out and back by this share of the head's size
SNAP = 0.04                      # a tip snap: a tip's one-frame move of this share of it


def build(strands: int = 784, points: int = 24, solver: str = "RODS", last: int = LAST, turn=TURN,
          closed: bool = False) -> grooms.Groom:
    """The artist's scene: ``grooms.long_hair`` with the head's turn keyed 90° over ``TURN``,
    baked over frames 1 to ``last`` with ``solver`` at its defaults."""
    g = grooms.long_hair(strands=strands, points=points, closed=closed)
    g.head.animation_data_clear()
    scenes.keyed_head_turn(g.head, *turn, angle=0.5 * np.pi, lift=0.05)
    g.frames = (1, last)
    bpy.context.scene.frame_end = last
    grooms.use_solver(g, solver)
    return g


def per_frame(g: grooms.Groom, cache, reported, buried: float | None = None) -> list[dict]:
    """Each frame's figures (see the module's docstring); ``reported``: the bake's figure per
    frame (world units), as the wig gave it. ``buried``: leave out the points the groom itself
    has deeper inside a collider than this (world units; the field holds those to its grid's
    distance, not the exact one)."""
    from hair_wig_addon.operators import blender_io

    scene = bpy.context.scene
    first, last = g.frames
    scene.frame_set(first)
    hair = blender_io.read_hair(g.hair)
    groom = hair.points.astype(np.float64)
    starts, ends = hair.offsets[:-1], hair.offsets[1:] - 1
    root = np.zeros(len(groom), bool)
    root[starts] = True
    seg0 = np.linalg.norm(np.diff(groom, axis=0), axis=1)
    real = ~root[1:]                                     # segments within a strand
    bodies = [(grooms._Exact(g.head), g.hair.hair_wig.collision_offset)]
    bodies += [(grooms._Exact(c), c.collision.thickness_outer) for c in g.colliders]
    rest_world = grooms._to_world(g, groom, first)
    limits = [np.minimum(offset, body(rest_world)) for body, offset in bodies]
    counted = ~root
    if buried is not None:
        for limit in limits:
            counted &= limit >= -buried
    rows, before, world = [], None, []
    for f in range(first, last + 1):
        p = cache.frame(f).astype(np.float64)
        seg = np.linalg.norm(np.diff(p, axis=0), axis=1)
        short = int((seg[real] < 0.5 * seg0[real]).sum())
        pw = grooms._to_world(g, p, f)
        world.append(pw)
        deep = max(float((limit - body(pw))[counted].max()) for (body, _), limit in zip(bodies, limits))
        tips = pw[ends]
        jump = 0.0 if before is None else float(np.linalg.norm(tips - before, axis=1).max())
        before = tips
        rows.append({"frame": f, "short": short, "inside": deep, "reported": reported.get(f, float("nan")),
                     "tip_jump": jump, "buried": int((~counted & ~root).sum()), "pops": 0, "pop": 0.0,
                     "tip_snaps": 0})
    hv, _ = grooms.mesh_world(g.head)
    size = float((hv.max(axis=0) - hv.min(axis=0)).max())
    for k in range(1, len(world) - 1):
        out = np.linalg.norm(world[k] - 0.5 * (world[k - 1] + world[k + 1]), axis=1)
        half = 0.5 * np.linalg.norm(world[k + 1] - world[k - 1], axis=1)
        pop = (out > POP * size) & (out > 2 * half)
        rows[k]["pops"], rows[k]["pop"] = int(pop.sum()), float(out[pop].max(initial=0.0))
        move = [np.linalg.norm(world[i][ends] - world[i - 1][ends], axis=1) for i in (k, k + 1)]
        before_move = np.linalg.norm(world[k - 1][ends] - world[k - 2][ends], axis=1) if k >= 2 else move[1]
        rows[k]["tip_snaps"] = int(((move[0] > SNAP * size) & (move[0] > 3 * np.maximum(before_move, move[1]))).sum())
    return rows


def bake_reporting(g: grooms.Groom):
    """Bake ``g`` as the Bake operator does, keeping what the wig reported at every frame."""
    import addon

    pipeline = addon.load().hair_wig.pipeline
    reported = {}
    original = pipeline.Wig.step

    def step(self, inp, *args, **kwargs):
        result = original(self, inp, *args, **kwargs)
        reported[int(bpy.context.scene.frame_current)] = self.penetration
        return result

    pipeline.Wig.step = step
    try:
        cache, seconds = grooms.bake(g)
    finally:
        pipeline.Wig.step = original
    return cache, seconds, reported


def summary(rows: list[dict], stop: int = TURN[1]) -> dict:
    """The totals over ``rows``: segment-frames under half their length, the deepest point
    (m), the largest reported figure (m), the largest tip move into a frame after ``stop`` and
    after ``stop`` + 10 (m), the pops (point-frames) up to ``stop`` and after it with the largest
    of each (m), and the tip snaps after ``stop``."""
    after = [r for r in rows if r["frame"] > stop]
    during = [r for r in rows if r["frame"] <= stop]
    return {"short": sum(r["short"] for r in rows), "inside": max(r["inside"] for r in rows),
            "reported": max(r["reported"] for r in rows),
            "tip_move_after": max((r["tip_jump"] for r in after), default=0.0),
            "tip_jump_after": max((r["tip_jump"] for r in after if r["frame"] > stop + 10), default=0.0),
            "pops_turn": sum(r["pops"] for r in during), "pop_turn": max((r["pop"] for r in during), default=0.0),
            "pops_after": sum(r["pops"] for r in after), "pop_after": max((r["pop"] for r in after), default=0.0),
            "tip_snaps_after": sum(r["tip_snaps"] for r in after)}


def main(argv=None) -> int:
    import addon

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--strands", type=int, default=784)
    p.add_argument("--points", type=int, default=24)
    p.add_argument("--solver", choices=("SPRINGS", "STRANDS", "RODS", "WISPS"), default="RODS")
    p.add_argument("--turn", type=int, default=TURN[1] - TURN[0], help="frames the quarter turn takes")
    p.add_argument("--closed", action="store_true", help="Suzanne with her eye sockets filled (a closed mesh)")
    p.add_argument("--last", type=int, default=LAST)
    p.add_argument("--render", default="", help="a contact sheet of the bake, written to this .png")
    p.add_argument("--frames", type=int, nargs="*", default=[], help="the frames the contact sheet shows")
    p.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                   help="wig settings to change from their defaults, e.g. rods_response=0.3")
    args = p.parse_args(argv)
    addon.ensure_registered()
    turn = (TURN[0], TURN[0] + args.turn)
    g = build(args.strands, args.points, args.solver, args.last, turn, args.closed)
    for item in args.set:
        name, _, value = item.partition("=")
        setattr(g.hair.hair_wig, name, type(getattr(g.hair.hair_wig, name))(value))
    cache, seconds, reported = bake_reporting(g)
    rows = per_frame(g, cache, reported)
    print(f"{args.strands} strands x {args.points}, {args.solver}, frames {g.frames[0]}-{g.frames[1]}, "
          f"bake {seconds:.1f} s")
    print("| frame | segments < L/2 | deepest inside (mm, exact) | bake reported (mm) | largest tip move (mm) "
          "| points that pop (largest, mm) | tip snaps |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['frame']} | {r['short']} | {1e3 * r['inside']:.2f} | {1e3 * r['reported']:.2e} | "
              f"{1e3 * r['tip_jump']:.1f} | {r['pops']} ({1e3 * r['pop']:.0f}) | {r['tip_snaps']} |")
    s = summary(rows, turn[1])
    print(f"segment-frames under half their length: {s['short']}; deepest inside {1e3 * s['inside']:.2f} mm "
          f"(exact); the bake reported {1e3 * s['reported']:.2e} mm; largest tip move after the head stops "
          f"(frame {turn[1]}) {1e3 * s['tip_move_after']:.1f} mm, from frame {turn[1] + 11} on "
          f"{1e3 * s['tip_jump_after']:.1f} mm; pops during the turn {s['pops_turn']} point-frames (largest "
          f"{1e3 * s['pop_turn']:.0f} mm), after it {s['pops_after']} ({1e3 * s['pop_after']:.0f} mm); tip snaps "
          f"after it {s['tip_snaps_after']}", flush=True)
    if args.render:
        from hair_wig_addon.operators import blender_io

        blender_io.write_bake(g.hair, cache)
        grooms.frame_sheet(g, Path(args.render), tuple(args.frames) or (1, 8, 14, 21, 26, 31, 38, 48), view=(0.2, -1.0, 0.25))
        print(f"wrote {args.render}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
