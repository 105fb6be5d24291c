"""How exactly a bake repeats itself when the whole scene is moved, turned and scaled (issue 33):
a groom combed over a subdivided Suzanne onto shoulders, a head turn, a keyed magnet, a dynamic
magnet, secondary springs, compression, baked by the core as it is and again with the scene
carried by a similarity X — placed exactly, placed as Blender holds it (float32 matrices), or
with the transforms applied to the data (float32 mesh and hair far out). Prints the largest
difference in ulp of the coordinates compared, per length mode, with collision on and off.

    ./run python scripts/invariance.py [--frames 8]

``tests/test_invariance.py`` draws the transforms with hypothesis on the same scene.
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

from hair_wig import (ColliderMesh, DynamicMagnet, FrameInput, HairSet, Magnet, Profile,  # noqa: E402
                      SpringSettings, Wig, WigSettings)

EPS32 = float(np.finfo(np.float32).eps)
FRAMES = 8


def _rotation(axis, angle, about=(0.0, 0.0, 0.0)) -> np.ndarray:
    axis = np.asarray(axis, np.float64)
    axis = axis / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    m = np.eye(4)
    m[:3, :3] = np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k
    m[:3, 3] = np.asarray(about) - m[:3, :3] @ np.asarray(about)
    return m


def _translate(t) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = t
    return m


def _f32(m: np.ndarray) -> np.ndarray:
    """A matrix as Blender holds it (``matrix_world`` is float32)."""
    return np.asarray(m, np.float32).astype(np.float64)


def make_groom():
    """Suzanne (one subdivision), 120 strands x 24 points combed 5 mm over her scalp and down
    past her ears, and a capsule of shoulders under her: arrays, world = her own space."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    head = grooms._subdivided_suzanne(1)
    body = grooms.shoulders()
    v, t = grooms.mesh_world(head)
    bv, bt = grooms.mesh_world(body)
    roots, normals, _ = grooms.scalp_roots(
        head, 120, lambda c, n: (c[:, 2] > 0.25) & (n[:, 2] > 0.1) & (c[:, 1] > -0.5), seed=7)
    pts = grooms.comb(np.concatenate([v, bv]), np.concatenate([t, bt + len(v)]), roots, normals, 24,
                      length=1.4, height=0.005)
    return dict(head=(v, t), body=(bv, bt), points=pts, counts=np.full(120, 24))


def bake(groom, x: np.ndarray, mode: str, collide: bool, rounded: bool, data: bool = False,
         back: bool = False):
    """The groom's frames (F, P, 3) in its hair object's space, with the whole scene carried by
    ``x`` (4, 4; a similarity): the objects' matrices (``data=False``; ``rounded``: as float32,
    as Blender holds them) or the mesh and hair data themselves (``data=True``: transforms
    applied, the data stored in float32, every object at the identity). ``back``: that same
    input — the float32 values Blender would hold — carried back to the origin by X⁻¹ in float64
    and baked there: what the scene baked at the origin would give from the input the moved scene
    holds, which the moved bake, carried, must match whatever the conditioning of the problem."""
    s = np.cbrt(abs(np.linalg.det(x[:3, :3])))
    xb = np.linalg.inv(x) if back else None

    def carry(m):
        return m if xb is None else xb @ m
    v, t = groom["head"]
    bv, bt = groom["body"]
    eye = np.eye(4)
    if data:
        def place(p):
            return (np.asarray(p, np.float64) @ x[:3, :3].T + x[:3, 3]).astype(np.float32)
        pts, v, bv = place(groom["points"]), place(v).astype(np.float64), place(bv).astype(np.float64)
        obj, inside = eye, x              # objects at the identity; the scene's frame is in the data
        if back:
            pts, v, bv = (a.astype(np.float64) @ xb[:3, :3].T + xb[:3, 3] for a in (pts, v, bv))
            inside = eye
    else:
        pts = groom["points"]
        obj, inside = (_f32(x) if rounded else x), eye
    if back:
        s = 1.0
    hair = HairSet(pts, groom["counts"], name="Hair")
    neck = (0.0, 0.1, -0.6)
    # head-local rest matrices (the head's own space: the data's when it carries the scene)
    pull_rest = inside @ _translate((0.0, 0.9, 0.4))
    swing_rest = inside @ _translate((0.0, -0.6, 1.0))
    local = s if data else 1.0           # head-local units per the groom's (radii are head-local)
    magnets = [Magnet("Pull", pull_rest, radius=1.2 * local),
               Magnet("Swing", swing_rest, radius=1.0 * local,
                      dynamic=DynamicMagnet(stiffness=30.0, damping=4.0, gravity_max=9.81 * s))]
    wig_settings = WigSettings(dynamics=SpringSettings(), compression=Profile.constant(0.3),
                               length_mode=mode, use_collision=collide, collision_offset=0.01 * s)
    held = carry(obj) if not data else obj          # the objects' matrices as the wig reads them
    body = ColliderMesh("Shoulders", bv, bt, held, offset=0.01 * s)
    # compression's centre: the head's box centre, in the head's own space (a box is not
    # carried by a turn: given, as the scene reader takes the head's own)
    centre = (np.asarray(groom["head"][0]).min(axis=0) + np.asarray(groom["head"][0]).max(axis=0)) / 2
    centre = inside[:3, :3] @ centre + inside[:3, 3]
    wig = Wig(hair, held, held, magnets, wig_settings, head_mesh=(v, t), head_name="Suzanne",
              colliders=[body], head_centre=centre)
    gravity = (np.eye(3) if back else x[:3, :3]) @ np.array([0.0, 0.0, -9.81])
    state, frames = None, []
    for f in range(FRAMES):
        turn = inside @ _rotation((0.2, 0.1, 1.0), 0.05 * f, neck) @ np.linalg.inv(inside)
        head = obj @ turn
        # keyed in each magnet's own space, which X scales with the rest of the scene
        pull = head @ pull_rest @ _translate(np.array([0.0, -0.045, -0.025]) * f)
        swing = head @ swing_rest @ _translate(np.array([0.06, 0.0, 0.0]) * f)
        if rounded and not data:
            head, pull, swing = _f32(head), _f32(pull), _f32(swing)
        if not data:
            head, pull, swing = carry(head), carry(pull), carry(swing)
        inp = FrameInput(held, head, np.array([pull, swing]), time=f / 24, gravity=gravity,
                         collider_matrices=np.array([held]))
        out, state = wig.step(inp, state, keep_state=False)
        frames.append(out.astype(np.float64))
    return np.stack(frames), wig


def similarity(t, axis, angle, scale) -> np.ndarray:
    """The similarity (4, 4) moving by ``t``, turning by ``angle`` about ``axis``, scaling by
    ``scale``."""
    return _translate(t) @ _rotation(axis, angle) @ np.diag([scale, scale, scale, 1.0])


CASES = [((1000.0, -300.0, 700.0), (0.3, -0.5, 0.9), 0.7, 1.0), ((1e4, 1e4, -1e4), (1, 0, 0), 2.0, 1.0),
         ((0.0, 0.0, 0.0), (0, 0, 1), 0.0, 100.0), ((5.0, 3.0, 1.0), (0.2, 1, 0), 1.0, 0.01),
         ((-9000.0, 20.0, 3.0), (0, 1, 1), -2.5, 37.0)]


def errors(g, mode: str, collide: bool, xf) -> tuple[float, ...]:
    """The largest difference, in ulp of the coordinates compared, of the scene carried by
    ``xf`` (t, axis, angle, scale) from the scene as it is: objects placed exactly (ulp of the
    hair's coordinates); as Blender holds them (float32 matrices), and data far out (float32
    mesh and hair), both in ulp of the world coordinates — each against the scene as it is
    and against the same held input carried back to the origin (``bake(back=True)``): the
    first is what an artist sees, the second what the bake itself adds, the rest being the
    input's rounding times the problem's own conditioning."""
    want = bake(g, np.eye(4), mode, collide, rounded=False)[0]
    x = similarity(*xf)
    t, _, _, s = xf
    exact = np.abs(bake(g, x, mode, collide, rounded=False)[0] - want).max() / (EPS32 * np.abs(want).max())
    world = np.abs(t).max() + s * np.abs(want).max()
    ulp = EPS32 * world / s                          # one ulp of the world, in the hair's units
    placed = bake(g, x, mode, collide, rounded=True)[0]
    held = bake(g, x, mode, collide, rounded=True, back=True)[0]
    far = bake(g, x, mode, collide, rounded=True, data=True)[0]
    far = (far - x[:3, 3]) @ np.linalg.inv(x[:3, :3]).T
    held_data = bake(g, x, mode, collide, rounded=True, data=True, back=True)[0]
    return (float(exact), float(np.abs(placed - want).max() / ulp), float(np.abs(placed - held).max() / ulp),
            float(np.abs(far - want).max() / ulp), float(np.abs(far - held_data).max() / ulp))


def main(argv=None) -> int:
    global FRAMES
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=FRAMES)
    args = p.parse_args(argv)
    FRAMES = args.frames
    import addon
    addon.ensure_registered()
    g = make_groom()
    print(f"{'length':8} {'collide':8} {'t':>24} {'scale':>6}   exact  float32 (held)   data (held)   ulp")
    for mode, collide in (("SEGMENT", False), ("STRAND", False), ("SEGMENT", True), ("STRAND", True)):
        for xf in CASES:
            e = errors(g, mode, collide, xf)
            t = ",".join(f"{v:g}" for v in xf[0])
            print(f"{mode:8} {str(collide):8} {t:>24} {xf[3]:>6g}   {e[0]:5.1f}  {e[1]:7.1f} ({e[2]:4.1f})  "
                  f"{e[3]:6.1f} ({e[4]:4.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]))
