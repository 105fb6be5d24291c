"""The numba kernels (hair_wig/kernels; no bpy) against the plain numpy code they replace, on random
input — strands of mixed point counts, 1- and 2-point strands, squashed, folded and zero-length
segments — and the same bits with 1 and 2 threads."""

from pathlib import Path

import numba
import numpy as np
import pytest

from hair_wig import leader
from hair_wig.kernels import follow_chains, point_major, strand_major
from tolerance import EPS32, EPS64, FOLLOW, magnitude, rounding

NONE = np.empty((0, 3))


def _chains(seed, dtype=np.float64, strands=60):
    """Random strands (counts 1..14) as rest chains, then asked-for points that squash, stretch,
    fold and turn them, some segments of zero rest length: ``(rest, asked, offsets, length)``,
    ``length[j]`` the rest length of point ``j``'s segment."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 15, strands)
    counts[:3] = (1, 2, 2)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    P = offsets[-1]
    step = rng.normal(size=(P, 3))
    step /= np.linalg.norm(step, axis=1, keepdims=True)
    step *= rng.uniform(0.01, 0.1, (P, 1))
    step[rng.random(P) < 0.05] = 0.0                         # zero-length rest segments
    rest = np.empty((P, 3))
    for s in range(len(counts)):
        a, b = offsets[s], offsets[s + 1]
        rest[a:b] = rng.normal(size=3) + np.cumsum(step[a:b], axis=0)
    asked = rest + rng.normal(size=(P, 3)) * rng.choice([0.0, 0.005, 0.05], size=(P, 1))
    squash = rng.random(P) < 0.2                             # pulled back onto the point before
    asked[squash] = asked[np.maximum(np.arange(P)[squash] - 1, 0)] * 0.9 + asked[squash] * 0.1
    length = np.zeros(P)
    length[1:] = np.linalg.norm(np.diff(rest, axis=0), axis=1)
    length[offsets[:-1]] = 0.0
    return rest.astype(dtype), asked.astype(dtype), offsets, length.astype(dtype)


def _reference(p, offsets, length, guide, rest, e, turn_back, first):
    """leader.follow_the_leader, one point of one strand at a time (the numpy code the kernel
    replaces, rows of one)."""
    p = p.copy()
    for s in range(len(offsets) - 1):
        a, b = offsets[s], offsets[s + 1]
        if b - a <= first:
            continue
        came = p[a + first - 1].copy()
        for j in range(a + first, b):
            point = p[j].copy()
            g = point - came if guide is None else guide[j] - guide[j - 1]
            came = point
            r = None if rest is None else (rest[j] - rest[j - 1])[:, None]
            p[j] = leader.follow_the_leader(p[j - 1][:, None], point[:, None], length[j:j + 1], g[:, None],
                                            r, e, turn_back=turn_back)[:, 0]
    return p


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("turn_back,explicit,with_rest,e,first",
                         [(True, False, True, 0.0, 1), (True, False, False, 0.3, 1),
                          (False, True, True, 0.0, 1), (False, True, False, 0.0, 2)])
def test_follow_chains_is_the_numpy_follow_the_leader(seed, turn_back, explicit, with_rest, e, first):
    rest, asked, offsets, length = _chains(seed)
    rng = np.random.default_rng(100 + seed)
    guide = None
    if explicit:            # a dynamics layer's guide: where the strand was a substep ago
        guide = rest + rng.normal(size=rest.shape) * 0.01
    want = _reference(asked, offsets, length, guide, rest if with_rest else None, e, turn_back, first)
    got = asked.copy()
    follow_chains(got, *strand_major(offsets), np.arange(len(offsets) - 1), length, NONE if guide is None else guide,
                  rest if with_rest else NONE, e, turn_back, first, 4 * EPS64)
    # float64 both: a strand's walk carries each point's roundings on to the next, FOLLOW each
    # (its conditioning included), n points, values up to the coordinates' magnitude
    n = int(np.diff(offsets).max())
    tol = rounding(magnitude(want, asked), FOLLOW * n, eps=EPS64)
    assert np.abs(got - want).max() <= tol, (np.abs(got - want).max(), tol)
    held = np.concatenate([np.arange(a, min(a + first, b)) for a, b in zip(offsets[:-1], offsets[1:])])
    assert np.array_equal(got[held], asked[held])
    if e == 0.0:                           # every placed segment its rest length
        placed = np.ones(len(got), bool)
        placed[held] = False
        seg = np.linalg.norm(got - np.roll(got, 1, axis=0), axis=1)
        assert np.abs(seg - length)[placed].max() <= rounding(magnitude(got), 8, eps=EPS64)


def test_follow_chains_in_float32_and_a_groom_at_rest_comes_back_bit_for_bit():
    rest, asked, offsets, _ = _chains(7, np.float32)
    # the rest lengths as refinement binds them: float32, from the float32 rest points
    length = np.zeros(len(rest), np.float32)
    length[1:] = np.sqrt(np.einsum("pk,pk->p", np.diff(rest, axis=0), np.diff(rest, axis=0)))
    length[offsets[:-1]] = 0.0
    strands = np.arange(len(offsets) - 1)
    at_rest = rest.copy()
    follow_chains(at_rest, *strand_major(offsets), strands, length, NONE.astype(np.float32), rest, 0.0, True, 1, 4 * EPS32)
    assert np.array_equal(at_rest, rest)
    got = asked.copy()
    follow_chains(got, *strand_major(offsets), strands, length, NONE.astype(np.float32), rest, 0.0, True, 1, 4 * EPS32)
    want = _reference(asked, offsets, length, None, rest, 0.0, True, 1)
    # numpy places float32 rows in float32, the kernel in float64 rounded once: float32 roundings
    # of the inputs, FOLLOW a step, carried over the strand's n points
    n = int(np.diff(offsets).max())
    tol = rounding(magnitude(want, asked), FOLLOW * n, eps=EPS32)
    assert np.abs(got.astype(np.float64) - want).max() <= tol


def test_follow_chains_a_transposed_view_of_rows_and_a_subset_of_strands():
    """Rows (3, P) passed as their view ``.T`` are placed in place; strands not asked for keep
    every bit."""
    rest, asked, offsets, length = _chains(3)
    rows = np.ascontiguousarray(asked.T)
    some = np.arange(0, len(offsets) - 1, 2)
    follow_chains(rows.T, *strand_major(offsets), some, length, NONE, rest, 0.0, True, 1, 4 * EPS64)
    whole = asked.copy()
    follow_chains(whole, *strand_major(offsets), some, length, NONE, rest, 0.0, True, 1, 4 * EPS64)
    assert np.array_equal(rows.T, whole)
    untouched = np.concatenate([np.arange(offsets[s], offsets[s + 1]) for s in range(1, len(offsets) - 1, 2)])
    assert np.array_equal(whole[untouched], asked[untouched])


def test_follow_chains_same_bits_with_one_and_two_threads():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread on this machine")
    rest, asked, offsets, length = _chains(11, strands=4000)
    runs = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        try:
            p = asked.copy()
            follow_chains(p, *strand_major(offsets), np.arange(len(offsets) - 1), length, NONE, rest, 0.0, True, 1, 4 * EPS64)
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        runs.append(p)
    assert np.array_equal(runs[0], runs[1])


READ_ONLY = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
try:
    import plain                      # numba on its own, in the same read-only folder
    print("PLAIN loaded")
except RuntimeError as e:
    print("PLAIN refused:", e)
from hair_wig.kernels import follow_chains, point_major, strand_major
p = np.array([[0.0, 0, 0], [0, 0, 2.0]])
follow_chains(p, np.array([0]), np.array([2]), 1, np.array([0]), np.array([0.0, 1.0]), np.empty((0, 3)), np.empty((0, 3)),
              0.0, True, 1, 1e-15)
print("CACHE", follow_chains._cache._cache_path, p[1].tolist())
"""


def test_kernels_load_where_nothing_of_theirs_can_be_written(tmp_path):
    """Installed read-only (a farm node), with a read-only home: numba on its own refuses to load a
    module of cached kernels there; ours load, caching in the temporary folder, in a folder of the
    name the package was imported under."""
    import os
    import shutil
    import subprocess
    import sys

    from conftest import ROOT

    drop = []
    if os.geteuid() == 0:             # root writes anywhere: run without the capabilities that allow it
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a folder read-only to this process")
        drop = ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]
    site, home, tmp = tmp_path / "site", tmp_path / "home", tmp_path / "tmp"
    shutil.copytree(ROOT / "hair_wig", site / "hair_wig", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "plain.py").write_text("import numba\n@numba.njit(cache=True)\ndef f(x):\n    return x + 1\n")
    home.mkdir()
    tmp.mkdir()
    for folder in (site, home):
        for path in [folder, *folder.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
        env.update(HOME=str(home), TMPDIR=str(tmp))
        res = subprocess.run([*drop, sys.executable, "-c", READ_ONLY, str(site)], capture_output=True,
                             text=True, env=env, timeout=300)
    finally:
        for folder in (site, home):
            for path in [folder, *folder.rglob("*")]:
                path.chmod(path.stat().st_mode | 0o200)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "PLAIN refused: cannot cache function 'f': no locator available" in res.stdout, res.stdout
    cache = next(line for line in res.stdout.splitlines() if line.startswith("CACHE"))
    from hair_wig import kernels

    assert cache == f"CACHE {tmp / 'hair_wig_kernels' / Path(kernels.LOCAL).relative_to(kernels.ROOT)} [0.0, 0.0, 1.0]", \
        res.stdout
    assert any((tmp / "hair_wig_kernels").rglob("leader.follow_chains-*.nbi"))      # cached there


def test_after_warm_up_a_length_pass_compiles_nothing():
    """``prepare.warm_up`` compiles (or loads) every kernel for the argument types refinement
    passes, so a bake after it starts at once: whole rows, rows with this frame's rest pose, and a
    block of rows (strided) add no compiled version."""
    from hair_wig import HairSet, kernels, prepare
    from hair_wig.refinement import LengthControl

    steps = list(prepare.warm_up())
    assert [s[:2] for s in steps] == [(i + 1, len(prepare.GROUPS)) for i in range(len(prepare.GROUPS))]
    assert prepare.warmed()
    compiled = len(kernels.follow_chains.signatures)
    rng = np.random.default_rng(0)
    pts = np.cumsum(rng.normal(size=(64, 3)), axis=0).astype(np.float32)
    length = LengthControl(HairSet(pts, [16] * 4), 0.0, "SEGMENT")
    rows = np.ascontiguousarray(pts.T) + np.float32(0.01)
    length.apply_rows(rows)
    length.apply_rows(rows, base=np.ascontiguousarray(pts.T))
    wide = np.zeros((3, 128), np.float32)
    wide[:, :64] = pts.T
    length.apply_rows(wide[:, :64], base=wide[:, :64])
    assert len(kernels.follow_chains.signatures) == compiled


# one small kernel call (one compiled version) in a process of its own, saying where its code is
# kept and how many of the core's kernels that process compiled
_ONE_CALL = ("import numpy as np; c = kernels.store.count_compiles(kernels.__name__); p = np.array([[0.0, 0, 0], [0, 0, 2.0]]); "
             "kernels.follow_chains(p, np.array([0]), np.array([2]), 1, np.array([0]), np.array([0.0, 1.0]), np.empty((0, 3)), "
             "np.empty((0, 3)), 0.0, True, 1, 1e-15); assert p[1].tolist() == [0.0, 0.0, 1.0]; "
             "print(kernels.__name__, kernels.follow_chains._cache._cache_path, c.count)")


def test_the_kernels_compiled_under_one_name_of_the_core_load_under_any_other(tmp_path):
    """numba's cached code imports the module it was compiled in by name: the core's tests import
    the core as ``hair_wig``, Blender as ``bl_ext.….hair_wig.hair_wig``, the scripts as
    ``hair_wig_addon.hair_wig``. The kernels take a name of their sources' digest whatever the
    core's, so what one compiled the others load — nothing compiles again, and a process where
    ``hair_wig`` is not importable loads it (once: "No module named 'hair_wig'")."""
    import os
    import subprocess
    import sys

    from conftest import ROOT

    from hair_wig import kernel_home, kernels

    core = "import sys; sys.path.insert(0, sys.argv[1]); from hair_wig import kernels; " + _ONE_CALL
    other = ("import sys, importlib.util as u; s = u.spec_from_file_location('other_name', sys.argv[1] + "
             "'/hair_wig/__init__.py', submodule_search_locations=[sys.argv[1] + '/hair_wig']); "
             "m = u.module_from_spec(s); sys.modules['other_name'] = m; s.loader.exec_module(m); "
             "from other_name import kernels; assert 'hair_wig' not in sys.modules; " + _ONE_CALL)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_CPU_NAME")}
    env["HAIR_WIG_KERNEL_CACHE"] = str(tmp_path)
    seen = []
    for code in (core, other, other, core):
        res = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        seen.append(res.stdout.split()[-3:])
    folder = str(tmp_path / Path(kernels.LOCAL).relative_to(kernels.ROOT))
    assert [s[:2] for s in seen] == [[kernel_home.NAME, folder]] * 4, seen
    assert int(seen[0][2]) > 0 and [s[2] for s in seen[1:]] == ["0"] * 3, seen      # a kernel and its helpers, once


def test_two_names_of_the_core_in_one_process_share_one_set_of_kernels():
    """The add-on and the core's tests in one process (this suite) hold one kernels package: a
    kernel compiled for one is compiled for the other."""
    import addon

    from hair_wig import kernels

    assert addon.load().hair_wig.kernels is kernels
    assert sys_modules_of(kernels) >= {"hair_wig.kernels", f"{addon.PACKAGE}.hair_wig.kernels"}


def sys_modules_of(module) -> set:
    import sys

    return {name for name, m in sys.modules.items() if m is module}


def test_follow_chains_on_point_major_groups_is_the_strand_major_walk_bit_for_bit():
    """A dynamics layer's group ``(3, n, S)`` seen as ``rows.reshape(3, -1).T`` with
    ``point_major`` addressing: each strand is placed exactly as the same strand stored one after
    another (the same arithmetic in the same order), a guide of the layer's own included."""
    rng = np.random.default_rng(5)
    n, num = 9, 300
    rest = np.cumsum(rng.normal(size=(num, n, 3)) * 0.05, axis=1)
    asked = rest + rng.normal(size=rest.shape) * 0.02
    guide = rest + rng.normal(size=rest.shape) * 0.01
    L = np.linalg.norm(np.diff(rest, axis=1), axis=2)
    length = np.concatenate([np.zeros((num, 1)), L], axis=1)          # (S, n): the segment into each point
    offsets = np.arange(num + 1) * n
    flat = asked.reshape(-1, 3).copy()
    follow_chains(flat, *strand_major(offsets), np.arange(num), length.ravel(), guide.reshape(-1, 3),
                  rest.reshape(-1, 3), 0.0, False, 2, 4 * EPS64)
    group = np.ascontiguousarray(asked.transpose(2, 1, 0))              # (3, n, S)
    rows = group.reshape(3, -1)
    follow_chains(rows.T, *point_major(n, num), np.arange(num), np.ascontiguousarray(length.T).ravel(),
                  np.ascontiguousarray(guide.transpose(2, 1, 0)).reshape(3, -1).T,
                  np.ascontiguousarray(rest.transpose(2, 1, 0)).reshape(3, -1).T, 0.0, False, 2, 4 * EPS64)
    assert np.array_equal(group.transpose(2, 1, 0), flat.reshape(num, n, 3))
    assert not np.array_equal(flat, asked.reshape(-1, 3))


def test_a_length_pass_refuses_strands_it_does_not_have():
    """The kernel writes where it is told: a strand index out of range, or a mask of another
    size, is refused before it runs (it wrote into other points' memory and the process
    aborted), and a strand named twice is placed once."""
    from hair_wig import HairSet
    from hair_wig.refinement import LengthControl

    rng = np.random.default_rng(2)
    pts = np.cumsum(rng.normal(size=(40, 3)), axis=0).astype(np.float32)
    length = LengthControl(HairSet(pts, [10] * 4), 0.0, "SEGMENT")
    rows = np.ascontiguousarray(pts.T) * np.float32(1.1)
    for bad in ([4], [-1], np.ones(5, bool)):
        with pytest.raises(IndexError):
            length.apply_rows(rows.copy(), np.asarray(bad))
    twice, once = rows.copy(), rows.copy()
    length.apply_rows(twice, np.array([1, 1, 1, 3]))
    length.apply_rows(once, np.array([1, 3]))
    assert np.array_equal(twice, once)


def test_the_wig_output_kernels_map_rows_into_points():
    """``rows_to_points``: rows (3, C) through an affine map into (C, 3), against float64 (AFFINE
    roundings of |x| (1 + |m|)); ``rows_copy_to_points`` bit for bit; 1 or 2 threads alike."""
    import numba

    from hair_wig.kernels import rows_copy_to_points, rows_to_points
    from tolerance import AFFINE, magnitude, rounding

    rng = np.random.default_rng(5)
    rows = (rng.normal(size=(3, 20001)) * 3).astype(np.float32)
    m = np.eye(4)
    m[:3] = rng.normal(size=(3, 4))
    m32 = m[:3].astype(np.float32)
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            out, copy = np.empty((20001, 3), np.float32), np.empty((20001, 3), np.float32)
            rows_to_points(rows, m32, out)
            rows_copy_to_points(rows, copy)
            runs.append((out, copy))
    finally:
        numba.set_num_threads(was)
    want = rows.T.astype(np.float64) @ m32[:, :3].T.astype(np.float64) + m32[:, 3].astype(np.float64)
    size = magnitude(rows) * (1 + np.abs(m32).sum(axis=1).max())
    np.testing.assert_allclose(runs[0][0], want, rtol=0, atol=rounding(size, AFFINE))
    assert np.array_equal(runs[0][1], rows.T)
    assert all(np.array_equal(a, b) for a, b in zip(*runs))
