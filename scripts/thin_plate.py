"""A thin plate swept through hanging hair, the scene continuous contact is for: 400 straight
strands of 16 points hang 1 m from a small head; a box collider (2 m wide, 0.3 m high, ``--thick``
thick) crosses them at ``--speed`` metres a frame, from 0.4 m in front to ``--to`` behind. With
collision decided at each frame's positions alone, a point the plate's middle passes is pushed
out of its nearer face, the far one, and the plate goes through the hair; continuous contact
holds it on the face it came from. A plate carried 0.4 m on drags the hair until it is pulled
round its edges (``--to 0.1``: it stops 10 cm past the hair).

    ./run python scripts/thin_plate.py [--thick 0.02] [--speed 0.004 0.01 0.05 0.2] [--to 0.4]
        [--solvers SPRINGS STRANDS RODS WISPS]

Per solver and speed: the strands that pierce the plate — a segment from a point ahead of its
middle to one behind it, crossing the middle 2 cm or more in from its edges, at any frame: hair
seen through it — and the deepest point inside it (2 cm in from its edges). Then the strands
whose points hop through it between frames — a point ahead of its middle at one frame and behind
it at the next, over its face both times (a pop, though no frame shows hair through it).
Hair the plate drags until it slips round an edge is not counted: "over its face" is a segment's
length (6.7 cm) in from its edges, because a strand pulled over an edge by the points before it
(they lead: follow-the-leader) takes a point up to a segment from the edge with it in one frame.
The hops counted 2 cm from the edges are shown beside them: what those add. Last, the strands
with a point whose way from one frame to the next, seen from the plate, passes through its middle
2 cm or more in from its edges, wherever the point ends: a strand that drops from the plate's face
to hanging straight behind it in one frame went through the plate, though it ends clear of it.
No Blender: the numpy core with its kernels.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import numpy as np  # noqa: E402

STRANDS, POINTS, DROP = 400, 16, 1.0
BAND = (-1.2, -0.9)                       # the plate's height
SEGMENT = DROP / (POINTS - 1)
MARGINS = (SEGMENT, 0.02)                 # away from its edges: round which hair may slip


def _box(hx, hy, hz):
    v = np.array([[sx * hx, sy * hy, sz * hz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return v, np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])


def sweep(solver: str, thick: float, speed: float, to: float = 0.4) -> tuple[int, tuple[int, ...], float]:
    import bench
    from hair_wig import LAYERS, FrameInput, HairSet, Magnet, Wig, WigSettings
    from hair_wig.collision import ColliderMesh

    ys = np.linspace(-0.5, 0.5, STRANDS)
    pts = np.zeros((STRANDS, POINTS, 3))
    pts[:, :, 1] = ys[:, None]
    pts[:, :, 2] = -0.3 - np.linspace(0.0, DROP, POINTS)[None]
    hair = HairSet(pts.reshape(-1, 3).astype(np.float32), np.full(STRANDS, POINTS), name="Hair")
    v, t = _box(thick / 2, 1.0, (BAND[1] - BAND[0]) / 2)
    centre_z = sum(BAND) / 2

    def at(x):
        m = np.eye(4)
        m[:3, 3] = (x, 0.0, centre_z)
        return m

    settings = WigSettings(dynamics=LAYERS[solver].SETTINGS())
    wig = Wig(hair, np.eye(4), np.eye(4), [Magnet("M", np.eye(4), radius=0.001)], settings,
              head_mesh=bench.sphere_mesh(0.25), colliders=[ColliderMesh("Plate", v, t, at(-0.4))])
    state, deepest, was = None, 0.0, None
    through = np.zeros((len(MARGINS), STRANDS), bool)
    passed = np.zeros(STRANDS, bool)
    pierced = np.zeros(STRANDS, bool)
    edge = MARGINS[-1]
    for f in range(int(round((to + 0.4) / speed)) + 1):
        x = -0.4 + speed * f
        out, state = wig.step(FrameInput(np.eye(4), np.eye(4), np.array([np.eye(4)]), time=f / 24,
                                         collider_matrices=np.array([at(x)])), state)
        p = np.asarray(out).reshape(STRANDS, POINTS, 3)
        faces = [(p[..., 2] > BAND[0] + m) & (p[..., 2] < BAND[1] - m) & (np.abs(p[..., 1]) < 1.0 - m)
                 for m in MARGINS]
        rel = p[..., 0] - x
        inside = faces[-1] & (np.abs(rel) < thick / 2)
        # a segment across the plate's middle: where it crosses it, over the face?
        a, b = rel[:, :-1], rel[:, 1:]
        across = (a > 0) != (b > 0)
        t = np.where(across, a / np.where(across, a - b, 1.0), 0.0)
        yz = p[:, :-1, 1:] + t[..., None] * (p[:, 1:, 1:] - p[:, :-1, 1:])
        pierced |= (across & (yz[..., 1] > BAND[0] + edge) & (yz[..., 1] < BAND[1] - edge)
                    & (np.abs(yz[..., 0]) < 1.0 - edge)).any(axis=1)
        if inside.any():
            deepest = max(deepest, float((thick / 2 - np.abs(rel))[inside].max()))
        if was is not None:
            # a point ahead of the plate's middle, then behind it, over its face both times:
            # through it (not round an edge)
            for k, face in enumerate(faces):
                through[k] |= (was[1][k] & face & (was[0] > 0) & (rel < 0)).any(axis=1)
            # a point whose way from one frame to the next, seen from the plate, crosses its
            # middle 2 cm or more in from its edges: through it, wherever it ends (a strand that
            # drops from the plate's face to hanging straight behind it in one frame)
            r0, y0, z0 = was[0], was[2][..., 1], was[2][..., 2]
            way = (r0 > 0) & (rel < 0)
            t = np.where(way, r0 / np.where(way, r0 - rel, 1.0), 0.0)
            yc, zc = y0 + t * (p[..., 1] - y0), z0 + t * (p[..., 2] - z0)
            passed |= (way & (zc > BAND[0] + edge) & (zc < BAND[1] - edge) & (np.abs(yc) < 1.0 - edge)).any(axis=1)
        was = (rel, faces, p)
    return int(pierced.sum()), (*(int(t.sum()) for t in through), int(passed.sum())), deepest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--thick", type=float, default=0.02)
    ap.add_argument("--speed", type=float, nargs="+", default=[0.004, 0.01, 0.05, 0.2])
    ap.add_argument("--to", type=float, default=0.4, help="where the plate stops (m; the hair hangs at 0)")
    ap.add_argument("--solvers", nargs="+", default=["SPRINGS", "STRANDS", "RODS", "WISPS"])
    args = ap.parse_args(argv)
    print(f"| solver | plate thickness | speed (m a frame) | strands piercing it (of {STRANDS}) | deepest inside (m) "
          f"| strands hopping through it | … counting 2 cm from its edges | strands passing through it |")
    print("|---|---|---|---|---|---|---|---|")
    for solver in args.solvers:
        for speed in args.speed:
            pierced, (behind, near_edge, passed), deepest = sweep(solver, args.thick, speed, args.to)
            print(f"| {solver} | {args.thick:g} | {speed:g} | {pierced} | {deepest:.3g} | {behind} | {near_edge} "
                  f"| {passed} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
