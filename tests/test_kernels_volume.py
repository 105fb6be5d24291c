"""Hair–hair interaction through a volume (``kernels.volume``, ``interaction.Volume``; Petrovic,
Henne, Anderson 2005 §3): the nodes' gather against a plain numpy scatter, the same bits on one
and two threads, and physics with answers — a block moving as one is left alone, the friction
keeps the hair's momentum, two wisps driven into each other are kept apart, the groom at rest
stays — and the Strands layer in a wig with it."""

import numba
import numpy as np
import pytest

from hair_wig.interaction import Volume
from hair_wig.kernels import volume as kernels
from hair_wig.strands import StrandSettings, VerletStrands
from tolerance import EPS64, rounding

G = np.array([0.0, 0.0, -9.81])


def _scatter(q, vel, cell):
    """The nodes' density and momentum as a plain scatter (``np.add.at``) over the grid
    ``Volume`` makes: each point adds its trilinear weight to the 8 nodes of its cell."""
    scale = 1.0 / cell
    origin = np.floor(q.min(axis=1) * scale) - 1.0
    dims = (np.floor(q.max(axis=1) * scale) - origin + 2).astype(np.int64)
    fx = q * scale - origin[:, None]
    c = np.floor(fx).astype(np.int64)
    f = fx - c
    my, mz = dims[1] + 1, dims[2] + 1
    rho, mom = np.zeros(int(np.prod(dims + 1))), np.zeros((3, int(np.prod(dims + 1))))
    for di in (0, 1):
        for dj in (0, 1):
            for dk in (0, 1):
                w = ((f[0] if di else 1 - f[0]) * (f[1] if dj else 1 - f[1]) * (f[2] if dk else 1 - f[2]))
                node = ((c[0] + di) * my + c[1] + dj) * mz + c[2] + dk
                np.add.at(rho, node, w)
                for k in range(3):
                    np.add.at(mom[k], node, w * vel[k])
    return rho, mom


def _cloud(count=4000, seed=0, size=0.1):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.0, size, (3, count)) + 0.37, rng.normal(size=(3, count))


def test_the_nodes_gather_what_a_scatter_of_the_points_gives():
    """A node sums ``K`` points' weights (each: a subtraction and two products, 3 roundings,
    then the sum, 1): at most ``4 K`` roundings of values up to the node's density; its momentum
    one product more a term, of values up to density × the largest speed, and its velocity the
    momentum over the density: ``(4 K + 5 K + 1)`` roundings of the largest speed, on each side.
    ``K`` is read from the grid (the points of a node's eight cells). Compared where a point
    reaches (the kernel leaves the rest of the box alone)."""
    q, vel = _cloud()
    volume = Volume(q, 0.01)
    xs, _, _, (nx, ny, nz), rho, mom = volume._grid(q, vel)
    ref_rho, ref_mom = _scatter(q, vel, 0.01)
    cells = np.floor(xs.T).astype(np.int64)
    per_cell = np.bincount((cells[0] * ny + cells[1]) * nz + cells[2], minlength=nx * ny * nz)
    k = 8 * int(per_cell.max())
    reached = ref_rho > 0
    assert k > 8 and rho[reached].sum() == pytest.approx(q.shape[1])   # the weights share each point out
    assert np.abs(rho - ref_rho)[reached].max() <= rounding(ref_rho.max(), 4 * k, EPS64)
    ref_v = ref_mom[:, reached] / ref_rho[reached]
    assert np.abs(mom[reached].T - ref_v).max() <= rounding(np.abs(vel).max(), 2 * (9 * k + 1), EPS64)


def test_the_volume_gives_the_same_bits_on_one_and_two_threads_and_run_to_run():
    q, vel = _cloud(60_000, seed=1)
    rest = q + 0.002 * np.random.default_rng(2).normal(size=q.shape)
    volume = Volume(rest, 0.01)
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, 2, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            runs.append(volume.accel(q, vel, 2000.0, 0.3, 1 / 192))
    finally:
        numba.set_num_threads(was)
    assert np.abs(runs[0]).max() > 0
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0], other)


def _block(spacing, count, offset):
    """A lattice block of ``count``³ points ``spacing`` apart, its corner at ``offset``."""
    i = np.arange(count) * spacing
    return np.stack(np.meshgrid(i, i, i, indexing="ij")).reshape(3, -1) + np.asarray(offset)[:, None]


def test_a_block_of_hair_moving_as_one_is_left_alone():
    """Every point at the same velocity: every node's velocity is that one, so friction takes
    nothing; moved by whole cells the block has its groom's density at every point, so nothing
    pushes. Friction's residue: a node's velocity ``Σ w v / Σ w`` (``4 K + 2`` roundings of the
    speed, K ≤ 8 cells × 8 points), interpolated (4 × 8 more), times share / h."""
    cell, share, h = 0.01, 0.5, 1 / 192
    rest = _block(cell / 2, 12, (0.0123, -0.0071, 0.0049))
    volume = Volume(rest, cell)
    v = np.array([0.7, -0.3, 0.2])
    vel = np.broadcast_to(v[:, None], rest.shape).copy()
    residue = share / h * rounding(np.abs(v).max(), 4 * 64 + 2 + 32, EPS64)
    moved = rest + np.array([3, -2, 5])[:, None] * cell
    a = volume.accel(moved, vel, 2000.0, share, h)
    assert np.abs(a).max() <= residue
    # moved by any amount, the points inside (a cell or more from the block's faces) still have
    # the groom's density: a lattice of half cells sums to 8 at every node
    moved = rest + np.array([0.0037, 0.0011, -0.0029])[:, None]
    a = volume.accel(moved, vel, 2000.0, share, h)
    lo, hi = rest.min(axis=1) + 1.5 * cell, rest.max(axis=1) - 1.5 * cell
    inside = np.all((rest >= lo[:, None]) & (rest <= hi[:, None]), axis=0)
    assert inside.sum() > 100 and np.abs(a[:, inside]).max() <= residue


def test_the_friction_keeps_the_hairs_momentum():
    """``Σ_p V(x_p) = Σ_n M_n = Σ_p v_p`` (unit masses): the velocity changes ``a h`` sum to
    zero up to the roundings of every point's share (each ``4 K + 40`` of the largest speed)."""
    q, vel = _cloud(5000, seed=3)
    volume = Volume(q, 0.01)                    # at its groom's density: friction alone
    share, h = 0.4, 1 / 192
    dv = volume.accel(q, vel, 2000.0, share, h) * h
    assert np.abs(dv).max() > 0.1                                    # it does exchange momentum
    k = 64 * 8
    assert np.abs(dv.sum(axis=1)).max() <= share * rounding(np.abs(vel).max(), q.shape[1] * (4 * k + 40), EPS64)


def _wisps(gap, per_side=3, n=8, length=0.2, spacing=0.004):
    """Two wisps of ``per_side``² straight strands hanging ``spacing`` apart, their axes ``gap``
    apart along x: (3, n, S)."""
    s = (np.arange(per_side) - (per_side - 1) / 2) * spacing
    xs, ys = np.meshgrid(s, s, indexing="ij")
    z = -np.linspace(0.0, length, n)
    strands = []
    for side in (-0.5, 0.5):
        for x, y in zip(xs.ravel(), ys.ravel()):
            strands.append(np.stack([np.full(n, side * gap + x), np.full(n, y), z]))
    return np.ascontiguousarray(np.stack(strands, axis=2))


def test_two_wisps_driven_into_each_other_are_kept_apart():
    """Two wisps groomed 6 cm apart, their goal set 0.5 cm apart: without hair against hair
    they end where the goal is; with the Volume they are packed tighter than groomed and
    pushed apart, and their centres stay farther apart."""
    rest = _wisps(0.06)
    goal = _wisps(0.005)
    gaps = {}
    for on in (False, True):
        settings = StrandSettings(hair_hair=on, hair_hair_method="VOLUME", diameter=0.01, repulsion=4000.0,
                                  hair_friction=0.1, goal_stiffness=100.0)
        layer = VerletStrands(rest, settings)
        state = layer.initial_state(rest, G)
        for _ in range(36):
            out = layer.step(state, goal, 1 / 24, G)
        half = rest.shape[2] // 2
        free = out[:, 2:]
        gaps[on] = float(free[0, :, half:].mean() - free[0, :, :half].mean())
    assert gaps[False] == pytest.approx(0.005, abs=1e-3)
    assert gaps[True] > gaps[False] + 0.005, gaps


def test_the_groom_at_rest_stays_with_the_volume_on():
    """Nothing moving, 50 frames: the Volume finds the groom's own density (no push) and no
    velocity to share, so the strands do exactly as without it (within 1e-9 of the length,
    far below any push), and stay on the groom (``test_strands``' bound, 1e-5 of the length)."""
    from test_strands import hanging

    rest = hanging(60, 12)
    outs = {}
    for on in (False, True):
        layer = VerletStrands(rest, StrandSettings(hair_hair=on, hair_hair_method="VOLUME", diameter=0.02,
                                                   repulsion=1e5, hair_friction=1.0))
        state = layer.initial_state(rest, G)
        length = layer.length.sum(axis=0).max()
        for f in range(50):
            out = layer.step(state, rest, 1 / 24, G)
            assert np.abs(out - rest).max() <= 1e-5 * length, (on, f)
        outs[on] = out
    assert np.abs(outs[True] - outs[False]).max() <= 1e-9 * length
    assert layer.volume is not None and layer.contacts is None


def test_the_volume_refuses_a_grid_too_large_by_the_setting():
    from hair_wig.errors import HairWigError

    q = np.array([[0.0, 100.0], [0.0, 100.0], [0.0, 100.0]])
    with pytest.raises(HairWigError, match="raise Diameter"):
        Volume(q, 0.01)
    with pytest.raises(HairWigError, match="hair against hair method"):
        StrandSettings(hair_hair_method="GRID").check()
    with pytest.raises(HairWigError, match="hair friction"):
        StrandSettings(hair_friction=1.5).check()


def test_a_wig_with_volume_strands_bakes_the_same_bits_on_two_threads_and_when_resumed():
    """``test_strands``' bake on 1 and 2 threads and resumed, with the Volume."""
    from test_strands import _inputs, _wig, bake_on_two_threads_and_resumed

    inputs = _inputs(20, 12)
    one, frames = bake_on_two_threads_and_resumed(
        lambda: StrandSettings(hair_hair=True, hair_hair_method="VOLUME", diameter=0.05, links=2), inputs)
    layer = one.layer.groups[0][2]
    assert layer.volume is not None and layer.volume.nodes > 0
    # the volume changes the bake: it is on
    _, off = _wig(StrandSettings(diameter=0.05, links=2), sizes=(10,))
    state = None
    for inp in inputs:
        plain, state = off.step(inp, state)
    assert not np.array_equal(plain, frames[-1])


def test_the_warm_up_compiles_as_called():
    kernels._as_called()
    assert kernels.WARM_UPS[0][0] == "hair volume"
    from hair_wig import prepare

    assert prepare.GROUPS["hair volume"].call is kernels._as_called


def test_the_volume_inside_the_substeps_launch_refuses_a_grid_too_large_as_the_numpy_code_does():
    """Strands whose goals fly 100 m apart along x, y and z: the first substep's grid is the
    groom's, the next would be millions of cells of 3 cm. The one launch stops there and the
    layer refuses it by name (Diameter), with the cells the numpy code between launches names."""
    from hair_wig.errors import HairWigError
    from test_strands import hanging

    rest = hanging(4, 6)
    goal = rest.copy()
    for k in range(3):
        goal[k, :, k] += 100.0
    messages = []
    for in_launch in (True, False):
        layer = VerletStrands(rest, StrandSettings(hair_hair=True, hair_hair_method="VOLUME", diameter=0.03,
                                                   goal_stiffness=1e6))
        layer.HAIR_IN_LAUNCH = in_launch
        state = layer.initial_state(rest, G)
        with pytest.raises(HairWigError, match="raise Diameter") as err:
            layer.step(state, goal, 1 / 24, G)
        messages.append(str(err.value))
    assert messages[0] == messages[1]


def test_the_volume_inside_a_kernel_names_a_point_that_is_not_finite():
    """``strands_volume`` on points of which one is not a number: no grid is made, and it says
    why (the layer turns that into an error naming the Volume)."""
    from hair_wig.errors import HairWigError

    rest = np.ascontiguousarray(np.random.default_rng(2).random((3, 5, 4)))
    layer = VerletStrands(rest, StrandSettings(hair_hair=True, hair_hair_method="VOLUME", diameter=0.1))
    pos = rest.copy()
    pos[1, 3, 2] = np.nan
    vol, grids = layer.volume.launch_parts(pos[0].size, 1.0, 0.5, None)
    ok, *_ = kernels.strands_volume(pos, rest, pos.reshape(3, -1), 0.01, vol, *grids)
    assert not ok and vol[-1][4] == 2
    with pytest.raises(HairWigError, match="Volume.*not a finite number"):
        layer.volume.launch_kept(vol, grids)
    ok, *_ = kernels.strands_volume(rest, rest, rest.reshape(3, -1), 0.01, vol, *grids)
    assert ok and vol[-1][4] == 0 and vol[-1][3] > 0
