"""A foot on the grass: curled blades on a ground plane squashed to a fifth of their height by a
magnet whose scale is keyed (an Empty scaled flat, as an animator steps on a lawn), baked three
ways — Keep Length off, Per Segment (the default), Whole Strand — and rendered side by side at
the squashed frame, with each bake's sharpest turn between consecutive segments against what the
squash itself asked for (Keep Length off).

    ./run python scripts/squash_demo.py [--blades 120] [--output docs/squash.png]

Issue 33: per segment, the textbook follow-the-leader folded squashed hair back on itself
(turns of up to 180°); the conditioned one (hair_wig/leader.py) bunches it along its own curve.
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

FRAMES = (1, 12)
POINTS = 12


def build(blades: int) -> grooms.Groom:
    ground = grooms.ground(0.8, 7, FRAMES)
    roots, normals, uv = grooms.scalp_roots(ground, blades, lambda c, n: np.ones(len(c), bool), seed=4)
    rng = np.random.default_rng(4)
    t = np.linspace(0, 1, POINTS)[None, :, None]
    phase = rng.uniform(0, 2 * np.pi, (blades, 1, 1))
    curl = rng.uniform(0.01, 0.03, (blades, 1, 1)) * t
    wave = np.concatenate([curl * np.cos(phase + 9 * t), curl * np.sin(phase + 9 * t), 0 * t + 0 * curl], -1)
    height = rng.uniform(0.25, 0.35, (blades, 1, 1))
    pts = roots[:, None] + height * normals[:, None] * t + wave
    hair = grooms._attach(ground, pts.reshape(-1, 3).astype(np.float32), np.full(blades, POINTS), uv, "Grass")
    foot = scenes.keyed_magnet(hair, "Foot", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), FRAMES, radius=3.0)
    foot.keyframe_insert("scale", frame=FRAMES[0])
    foot.scale = (1.0, 1.0, 0.2)
    foot.keyframe_insert("scale", frame=FRAMES[1])
    return grooms.Groom("grass squashed", hair, ground, frames=FRAMES)


def sharpest_turn(g: grooms.Groom, frame: int) -> float:
    """The sharpest turn (degrees) between consecutive segments of any blade at ``frame``."""
    from hair_wig_addon.operators import blender_io

    bpy.context.scene.frame_set(frame)
    p = blender_io.read_evaluated_points(g.hair, bpy.context.evaluated_depsgraph_get()).astype(np.float64)
    s = np.diff(p.reshape(-1, POINTS, 3), axis=1)
    s /= np.maximum(np.linalg.norm(s, axis=2, keepdims=True), 1e-30)
    return float(np.degrees(np.arccos(np.clip((s[:, 1:] * s[:, :-1]).sum(2), -1, 1))).max())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blades", type=int, default=120)
    p.add_argument("--output", default="docs/squash.png")
    args = p.parse_args(argv)
    import addon
    addon.ensure_registered()
    g = build(args.blades)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    tiles = []
    for label, use_length, mode in (("Keep Length off", False, "SEGMENT"), ("Per Segment", True, "SEGMENT"),
                                    ("Whole Strand", True, "STRAND")):
        s = g.hair.hair_wig
        s.use_length, s.length_mode = use_length, mode
        bpy.context.view_layer.objects.active = g.hair
        if bpy.ops.hair_wig.clear_bake.poll():
            bpy.ops.hair_wig.clear_bake()
        assert bpy.ops.hair_wig.bake() == {"FINISHED"}
        print(f"{label}: sharpest turn {sharpest_turn(g, FRAMES[1]):.1f} deg at frame {FRAMES[1]}")
        bpy.context.scene.frame_set(FRAMES[0])
        tiles.append(grooms.picture(g, out.with_name("_squash_tile.png"), FRAMES[1], size=420,
                                    view=(1.0, -1.2, 0.6)))
        out.with_name("_squash_tile.png").unlink()
    grooms.save_sheet(tiles, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]))
