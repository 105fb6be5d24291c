"""Style Hair on a head (seed 003): hair grown on a subdivided Suzanne's scalp and styled by
physics — bent under gravity as cantilevers, slid over the head with layered volume, curled —
measured (strands, seconds, segment lengths against the set length, nearest point to the head)
and rendered: straight, combed back by a styling force, curled round a cylinder, and curled by a
rotating force at its default strength.

    ./run python scripts/style_demo.py [--density 800] [--output docs/style_hair.png]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import addon  # noqa: E402
import bpy  # noqa: E402
import grooms  # noqa: E402
import numpy as np  # noqa: E402
import scenes  # noqa: E402

LOOKS = {
    "hanging": dict(force="DIRECTION", force_direction=(0.0, 1.0, -0.5), force_strength=0.5, curl="NONE"),
    "combed back": dict(force="DIRECTION", force_direction=(0.0, 1.0, -0.3), force_strength=1.2, curl="NONE"),
    "curled": dict(force="DIRECTION", force_direction=(0.0, 1.0, -0.3), force_strength=0.8, curl="HELIX",
                   curl_radius=0.04, curl_turns=4.0, points=49),
    # the Rotating Force at its defaults (Curl Force, Turns): curled by the force alone
    "curled by force": dict(force="DIRECTION", force_direction=(0.0, 1.0, -0.3), force_strength=0.8, curl="FORCE",
                            points=49),
}


def scalp(head) -> None:
    """Select the scalp: the top of the head behind the brow and the back, ears excepted (Suzanne
    is open round her eyes: hair falling over them could slip in between eye and socket)."""
    mesh = head.data
    centre = np.empty(len(mesh.polygons) * 3)
    mesh.polygons.foreach_get("center", centre)
    c = centre.reshape(-1, 3)
    pick = (((c[:, 2] > 0.35) & (c[:, 1] > -0.3)) | ((c[:, 1] > 0.1) & (c[:, 2] > -0.45))) & (np.abs(c[:, 0]) < 0.85)
    mesh.polygons.foreach_set("select", pick)


def build(density: float, points: int = 25):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon.ensure_registered()
    head = grooms._subdivided_suzanne()
    scalp(head)
    hair = scenes.empty_hair(head)
    st = hair.hair_wig.style
    st.roots, st.grow_on, st.density, st.points = "GROW", "SELECTED", density, points
    st.length, st.length_random, st.stiffness = 1.1, 0.15, 0.02
    st.volume, st.clearance = 0.04, 0.01
    return head, hair


def style(hair, **look) -> float:
    for k, v in look.items():
        setattr(hair.hair_wig.style, k, v)
    start = time.perf_counter()
    assert bpy.ops.hair_wig.style_hair() == {"FINISHED"}
    return time.perf_counter() - start


def measure(head, hair) -> dict:
    collision = grooms._core().collision

    cv = hair.data
    pts = np.empty(len(cv.points) * 3, np.float32)
    cv.attributes["position"].data.foreach_get("vector", pts)
    pts = pts.reshape(-1, 3).astype(np.float64)
    off = np.r_[0, np.cumsum([c.points_length for c in cv.curves])]
    v, t = grooms.mesh_world(head)
    d = collision.MeshField(v, t, margin=0.1, name=head.name).signed_distance(pts)    # exact near it
    roots = np.zeros(len(pts), bool)
    roots[off[:-1]] = True
    seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)[~roots[1:]]
    return dict(strands=len(cv.curves), points=len(pts), nearest=float(d[~roots].min()),
                inside=int((d[~roots] < 0).sum()), tips_inside=int((d[off[1:] - 1] < 0).sum()),
                seg=(float(seg.min()), float(seg.max())))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--density", type=float, default=800.0, help="strands per square metre of scalp")
    p.add_argument("--output", default=str(Path(__file__).resolve().parents[1] / "docs" / "style_hair.png"))
    args = p.parse_args(argv)
    tiles = []
    for name, look in LOOKS.items():
        head, hair = build(args.density)
        seconds = style(hair, **look)
        m = measure(head, hair)
        print(f"{name}: {m['strands']} strands x {m['points'] // m['strands']} points styled in {seconds:.2f} s; segments "
              f"{m['seg'][0]:.5f}..{m['seg'][1]:.5f}; points past the root nearest the head "
              f"{m['nearest'] * 1000:.1f} mm (clearance 10 mm), inside {m['inside']} of {m['points']}, "
              f"tips inside {m['tips_inside']}")
        g = grooms.Groom(name, hair, head, frames=(1, 1))
        tiles.append(grooms.picture(g, Path(args.output).with_suffix(f".{name.replace(' ', '_')}.png"), 1,
                                    size=420, view=(1.0, -0.25, 0.3)))
    grooms.save_sheet(tiles, Path(args.output))
    for name in LOOKS:
        Path(args.output).with_suffix(f".{name.replace(' ', '_')}.png").unlink(missing_ok=True)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
