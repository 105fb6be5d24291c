"""The force fields' kernel (hair_wig/kernels/fields.py) against the numpy it replaced
(``ForceField.force``, summed in the fields' order, kept as its reference): every kind (wind,
turbulence, drag with and without velocities), both shapes, falloffs with and without powers and
distances, noise gusts, global coordinates, several fields at once, none at all — and the same
bits with 1 or 2 threads.

Tolerance. The kernel does the reference's float64 operations in its order; where the two still
round differently is the falloff: numpy takes a plane's distance ``|rel · d|`` through BLAS (which
may fuse and reorder its 3 products and 2 sums) and its own SIMD ``power``, the kernel the plain
sums and libm's ``pow``. The distance is then off by at most NORM64 = 5 roundings of ``|rel|``;
``fac = (1 + r − r_min)^−power`` moves by at most ``power`` times that (its slope is at most
``power``: the base is at least 1), plus each ``pow``'s own rounding of ``fac`` ≤ 1 (2 each side,
4); the force ``S · fac · u`` (``|u|`` ≤ 1 for wind and the noise, times the strength ``S``; for
drag, which has no strength, the gust times ``(lin + quad |v|) |v|``) carries that times ``|S u|``,
and 3 products and a sum round the result (4 of ``|F|``). With
no falloff power (``fac`` exactly 1 or 0) the kernel is the reference bit for bit — the noise's
integer hash included, checked far out where its int64 products wrap."""

import zlib

import numpy as np
import pytest

from hair_wig.dynamics import ForceField, pack_fields, turbulence
from hair_wig.dynamics_layer import LayerFrame
from hair_wig.kernels import field_accel
from tolerance import EPS64, rounding

NORM64 = 5


def _field(rng, kind, shape, power=0.0, near=0.0, far=np.inf, noise=0.0, glob=False):
    return ForceField(rng.normal(size=3), rng.normal(size=3), float(rng.uniform(-6, 6)), shape=shape,
                      falloff_power=power, min_distance=near, max_distance=far, noise=noise,
                      seed=int(rng.integers(1000)), kind=kind, size=float(rng.uniform(0.05, 2.0)),
                      global_coords=glob, linear_drag=float(rng.uniform(0, 2.5)),
                      quadratic_drag=float(rng.uniform(0, 2.5)))


def _reference(fields, x, v, time):
    """The numpy sum of the fields' forces at rows ``x`` (3, P), as ``LayerFrame.accel`` did."""
    pts = np.moveaxis(x, 0, -1)
    vel = None if v is None else np.moveaxis(v, 0, -1)
    return np.moveaxis(sum(f.force(pts, time, vel) for f in fields), -1, 0)


def _kernel(fields, x, v, time):
    out = np.full(x.shape, np.nan)
    field_accel(x, np.zeros((3, 0)) if v is None else v, out, *pack_fields(fields, time))
    return out


def _within(got, ref, fields, x, v, time):
    """``got`` is ``ref`` to the bound of the module docstring, per point (summed over the fields)."""
    bound = np.broadcast_to(_tolerance(fields, x, v, time, ref), ref.shape)
    np.testing.assert_array_less(np.abs(got - ref), bound + 1e-300)


def _tolerance(fields, x, v, time, total):
    """Per point (P,): the bound of the module docstring summed over the fields."""
    speed = np.zeros(x.shape[1]) if v is None else np.linalg.norm(v, axis=0)
    bound = rounding(np.abs(total).sum(axis=0), 4 * len(fields), EPS64)
    for f in fields:
        reach = np.linalg.norm(x - f.position[:, None], axis=0)
        # |S u|: drag has no strength, its size is the gust times (lin + quad |v|) |v|
        if f.kind == "DRAG":
            size = abs(f.gust(time)) * (min(f.linear_drag, 2.0) + min(f.quadratic_drag, 2.0) * speed) * speed
        else:
            size = abs(f.strength * f.gust(time))
        bound = bound + rounding(size * (f.falloff_power * NORM64 * reach + 4), 1, EPS64)
    return bound


def _points(rng, n=5000, scale=2.0):
    return rng.normal(size=(3, n)) * scale, rng.normal(size=(3, n)) * 1.5


@pytest.mark.parametrize("kind", ["WIND", "TURBULENCE", "DRAG"])
@pytest.mark.parametrize("shape", ["PLANE", "POINT"])
@pytest.mark.parametrize("power", [0.0, 1.0, 2.0, 1.37])
def test_one_field_of_every_kind_is_its_numpy_force(kind, shape, power):
    # a seed of the case's own (Python's hash of a str changes from process to process)
    rng = np.random.default_rng(zlib.crc32(f"{kind} {shape} {power}".encode()))
    x, v = _points(rng)
    for near, far, noise, glob in ((0.0, np.inf, 0.0, False), (0.7, 2.5, 0.6, True), (0.3, np.inf, 0.3, False)):
        fields = [_field(rng, kind, shape, power, near, far, noise, glob)]
        for vel in (v, None):
            ref, got = _reference(fields, x, vel, 0.41), _kernel(fields, x, vel, 0.41)
            if power == 0.0:
                assert got.tobytes() == ref.tobytes()
            else:
                _within(got, ref, fields, x, vel, 0.41)
            if kind == "DRAG" and vel is None:
                assert not got.any()


def test_every_field_at_once_is_their_sum_in_order():
    rng = np.random.default_rng(7)
    x, v = _points(rng, 20000, 3.0)
    fields = [_field(rng, kind, shape, power, near, far, noise, glob)
              for kind in ("WIND", "TURBULENCE", "DRAG") for shape in ("PLANE", "POINT")
              for power, near, far, noise, glob in ((0.0, 0.0, np.inf, 0.0, False), (1.5, 0.4, 4.0, 0.5, True))]
    rng.shuffle(fields)
    ref, got = _reference(fields, x, v, 1.3), _kernel(fields, x, v, 1.3)
    _within(got, ref, fields, x, v, 1.3)
    flat = [f for f in fields if f.falloff_power == 0.0]
    assert _kernel(flat, x, v, 1.3).tobytes() == _reference(flat, x, v, 1.3).tobytes()


def test_no_fields_give_zeros_and_no_accel():
    x, v = _points(np.random.default_rng(1), 100)
    assert not _kernel([], x, v, 0.0).any()
    frame = LayerFrame(1 / 24, 0.0, np.zeros(3), [], np.eye(4), np.eye(4), np.eye(4))
    assert frame.accel() is None


def test_the_noise_hash_wraps_as_numpy_int64_far_out():
    """Noise coordinates up to 1e12 (products of the hash past 2^63) and negative ones (arithmetic
    shifts): bit for bit, and the noise itself as ``turbulence`` gives it."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (3, 4000)) * np.array([1e12, 3e9, 1e5])[:, None] * rng.uniform(0, 1, (1, 4000))
    for glob in (False, True):
        fields = [ForceField(rng.normal(size=3), np.array([0, 0, 1.0]), 1.0, kind="TURBULENCE", size=0.7, seed=11,
                             global_coords=glob, shape="POINT")]
        got = _kernel(fields, x, None, 0.0)
        assert got.tobytes() == _reference(fields, x, None, 0.0).tobytes()
        at = (x if glob else x - fields[0].position[:, None]) / 0.7
        assert got.tobytes() == np.moveaxis(turbulence(np.moveaxis(at, 0, -1), 11), -1, 0).tobytes()


def test_the_layers_accel_takes_any_rows_and_an_output():
    """``LayerFrame.accel`` as the layers call it: rows (3, n, S), possibly strided, velocities or
    none, into a given output."""
    rng = np.random.default_rng(5)
    fields = [_field(rng, "WIND", "PLANE"), _field(rng, "TURBULENCE", "POINT", noise=0.4), _field(rng, "DRAG", "POINT")]
    frame = LayerFrame(1 / 24, 0.75, np.zeros(3), fields, np.eye(4), np.eye(4), np.eye(4))
    accel = frame.accel()
    x, v = rng.normal(size=(3, 7, 40)), rng.normal(size=(3, 7, 40))
    ref = _reference(fields, x.reshape(3, -1), v.reshape(3, -1), 0.75).reshape(x.shape)
    assert accel(x, v).tobytes() == ref.tobytes()
    assert accel(x[:, :, ::2], v[:, :, ::2]).tobytes() == ref[:, :, ::2].tobytes()
    out = np.empty(x.shape)
    assert accel(x, None, out=out) is out
    assert out.tobytes() == _reference(fields, x.reshape(3, -1), None, 0.75).reshape(x.shape).tobytes()


def test_the_fields_kernel_gives_the_same_bits_on_one_and_two_threads():
    import numba

    rng = np.random.default_rng(9)
    x, v = _points(rng, 50000)
    fields = [_field(rng, k, s, 1.2, 0.3, 5.0, 0.5) for k in ("WIND", "TURBULENCE", "DRAG") for s in ("PLANE", "POINT")]
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            runs.append(_kernel(fields, x, v, 0.2))
    finally:
        numba.set_num_threads(was)
    assert runs[0].tobytes() == runs[1].tobytes()
