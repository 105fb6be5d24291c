"""Split bakes (issue 18, numpy only): a wig stepped on a part of its strands gives those strands'
points bit for bit as the whole wig does; where strands depend on each other the split is
refused by name."""

import numpy as np
import pytest

from hair_wig import DynamicMagnet, FrameInput, Magnet, SpringSettings, Wig, WigSettings
from hair_wig.errors import HairWigError
from hair_wig.rods import RodSettings
from test_strands import G, _turn, _wig_hair
from test_wig_core import numba_threads, sphere_mesh


def _wig(sizes=(10,), **kw):
    hair = _wig_hair(strands=60, sizes=sizes)
    magnets = [Magnet("Pull", np.eye(4), radius=1.5),
               Magnet("Dyn", np.eye(4), radius=1.0, dynamic=DynamicMagnet(stiffness=40.0, damping=3.0))]
    settings = dict(dynamics=SpringSettings(), use_collision=True)
    settings.update(kw)
    return hair, Wig(hair, np.eye(4), np.eye(4), magnets, WigSettings(**settings), head_mesh=sphere_mesh(0.98))


def _frames(n=16):
    out = []
    for f in range(n):
        pull = np.eye(4)
        pull[:3, 3] = [0.3 * np.sin(f / 4), 0.0, -0.2 * f / n]
        dyn = np.eye(4)
        dyn[:3, 3] = [0.0, 0.2 * (f > 5), 0.0]
        out.append(FrameInput(np.eye(4), _turn(0.5 * min(f, 8) / 8), np.array([pull, dyn]), time=f / 24, gravity=G))
    return out


def _bake(wig, part=None):
    if part is not None:
        wig.restrict(*part)
    state, frames = None, []
    for inp in _frames():
        out = np.full(wig.hair.points.shape, np.nan, np.float32)
        _, state = wig.step(inp, state, out=out, keep_state=False)
        frames.append(out)
    return np.array(frames)


@pytest.mark.parametrize("threads", [1, 2])
def test_parts_of_a_wig_give_its_strands_bit_for_bit(threads):
    hair, whole = _wig()
    expected = _bake(whole)
    assert np.isfinite(expected).all()
    off = hair.offsets
    got = np.full_like(expected, np.nan)
    for a, b in ((0, 17), (17, 40), (40, 60)):                   # parts of uneven sizes
        _, wig = _wig()
        with numba_threads(threads):
            part = _bake(wig, (a, b))
        assert np.isnan(part[:, off[b]:]).all() and np.isnan(part[:, :off[a]]).all()   # the rest: not computed
        got[:, off[a]:off[b]] = part[:, off[a]:off[b]]
    assert np.array_equal(got, expected)


def test_splitting_strands_that_depend_on_each_other_is_refused_by_name():
    with pytest.raises(HairWigError, match="'Hair': its Rods dynamics layer steps the whole wig at once; split"):
        _wig(dynamics=RodSettings())[1].restrict(0, 10)
    with pytest.raises(HairWigError, match="'Hair': its strand-length control works on all its strands together"):
        _wig(sizes=(10, 6))[1].restrict(0, 10)
    with pytest.raises(HairWigError, match="strands 50:70 are not a part of its 0:60"):
        _wig()[1].restrict(50, 70)
