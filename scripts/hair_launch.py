"""Hair against hair inside the Strands substeps' one launch, against a launch a substep with its
accelerations computed between in numpy (the reference the one launch is tested against): two
wigs of the bench's groom (``bench.strands_one``: strands combed down from a sphere head's crown,
the head turning, collision on), stepped frame by frame, alternately, in one process, so that
both see the same machine; every frame's points are checked equal, bit for bit.

    ./run python scripts/hair_launch.py [--strands 5000] [--frames 16] [--method VOLUME|PAIRS]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

import bench  # noqa: E402
from hair_wig import FrameInput, HairSet, Magnet, Wig, WigSettings  # noqa: E402
from hair_wig.strands import StrandSettings  # noqa: E402


def wig(strands: int, method: str) -> Wig:
    pts = bench._strands_groom(strands, bench.POINTS)
    hair = HairSet(np.ascontiguousarray(pts.transpose(2, 1, 0)).reshape(-1, 3).astype(np.float32),
                   np.full(strands, bench.POINTS), name="bench")
    settings = WigSettings(dynamics=StrandSettings(hair_hair=True, diameter=0.005, hair_hair_method=method),
                           use_collision=True)
    return Wig(hair, np.eye(4), np.eye(4), [Magnet("M", np.eye(4), radius=0.01)], settings,
               head_mesh=bench.sphere_mesh())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--strands", type=int, default=5000)
    p.add_argument("--frames", type=int, default=16)
    p.add_argument("--method", default="VOLUME", choices=("VOLUME", "PAIRS"))
    a = p.parse_args()
    wigs = [wig(a.strands, a.method), wig(a.strands, a.method)]
    for _, _, layer in wigs[1].layer.groups:
        layer.HAIR_IN_LAUNCH = False
    states, times = [None, None], [[], []]
    for f in range(a.frames + 1):
        head = np.eye(4)
        c, s = np.cos(0.9 * f / a.frames), np.sin(0.9 * f / a.frames)
        head[:2, :2] = [[c, -s], [s, c]]
        outs = {}
        for k in (0, 1) if f % 2 else (1, 0):            # who goes first alternates
            t = time.perf_counter()
            outs[k], states[k] = wigs[k].step(FrameInput(np.eye(4), head, np.array([np.eye(4)]), time=f / 24),
                                              states[k], keep_state=False)
            if f:                                          # the first frame compiles and binds
                times[k].append(time.perf_counter() - t)
        if not np.array_equal(outs[0], outs[1]):
            sys.exit(f"frame {f}: the one launch and the launches between differ")
    one, between = (1e3 * float(np.median(t)) for t in times)
    print(f"{a.method}, {a.strands} x {bench.POINTS}: one launch {one:.1f} ms a frame, a launch a substep "
          f"{between:.1f} ms (median of {a.frames} frames); the same bits every frame")


if __name__ == "__main__":
    main()
