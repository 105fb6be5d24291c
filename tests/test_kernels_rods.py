"""The angular rods' kernels (hair_wig/kernels/rods.py) against the plain numpy code they
replace (kept here as the reference, as it was in hair_wig/rods.py): forward and inverse
kinematics, the loads' moments, whole substeps against the numpy substep loop — on random
strands of several point counts, 1-segment strands among them — and the same bits with 1 or 2
threads.

Tolerances: the kernels do the reference's float64 arithmetic with sums in another order
(a strand's moments summed tip to root per joint rather than as cumulative sums; a turn scaled
after the arctangent rather than before): each value differs by a few roundings of the values
it sums, eps64 × magnitude × the roundings along a strand (a joint's frame carries every turn
before it: 10 per joint, n joints)."""

import numpy as np
import pytest

from hair_wig.kernels import rod_angles, rod_build, rod_moments, rod_substeps
from hair_wig.rods import AngularRods, RodSettings, angles_of, build, moments, root_normal
from tolerance import EPS64, rounding


def _unit(v):
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-300)


def _per_segment(seg, m):
    seg = np.asarray(seg, np.float64)
    return np.broadcast_to(seg[:, None] if seg.ndim == 1 else seg, (len(seg), m))


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``u × v`` over the last axis, written out (``np.cross`` copies its inputs)."""
    out = np.empty(np.broadcast_shapes(u.shape, v.shape))
    out[..., 0] = u[..., 1] * v[..., 2] - u[..., 2] * v[..., 1]
    out[..., 1] = u[..., 2] * v[..., 0] - u[..., 0] * v[..., 2]
    out[..., 2] = u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]
    return out


def _rotate(v: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Vectors ``v`` (S, 3) turned by rotation vectors ``r`` (S, 3) (Rodrigues)."""
    angle = np.linalg.norm(r, axis=1, keepdims=True)
    axis = np.divide(r, angle, out=np.zeros_like(r), where=angle > 0)
    cos, sin = np.cos(angle), np.sin(angle)
    return (v * cos + np.cross(axis, v) * sin
            + axis * np.einsum("sk,sk->s", axis, v)[:, None] * (1 - cos))


def ref_angles_of(points: np.ndarray, root_dir: np.ndarray, e1: np.ndarray) -> np.ndarray:
    """The bend angles (S, m, 2) of strands ``points`` (S, n, 3) whose root frame is
    ``root_dir``, ``e1`` (S, 3): inverse kinematics, each segment against its parent."""
    seg = _unit(np.diff(points, axis=1))
    t, a = _unit(root_dir), e1.copy()
    out = np.empty(seg.shape[:2] + (2,))
    for i in range(seg.shape[1]):
        d = seg[:, i]
        axis = np.cross(t, d)
        size = np.linalg.norm(axis, axis=1, keepdims=True)
        r = np.divide(axis, size, out=np.zeros_like(axis), where=size > 0) * np.arctan2(
            size, np.einsum("sk,sk->s", t, d)[:, None])
        b = np.cross(t, a)
        out[:, i, 0] = np.einsum("sk,sk->s", r, a)
        out[:, i, 1] = np.einsum("sk,sk->s", r, b)
        a = _unit(_rotate(a, r))
        t = d
    return out



def ref_build(roots: np.ndarray, root_dir: np.ndarray, e1: np.ndarray, angles: np.ndarray, seg: np.ndarray):
    """Forward kinematics: points (S, n, 3) of strands from ``roots`` (S, 3) with bend
    ``angles`` (S, m, 2) and segment lengths ``seg`` ((S,) or (S, m)); also each joint's parent frame
    ``e₁``, ``e₂`` (S, m, 3) each (the axes the angles turn about).

    The turn ``r = α₁ a + α₂ b`` lies in the frame's normal plane, so its cross products with
    the frame are the frame again (``a × t = −b``, ``b × t = a``, ``b × a = −t``): every joint is
    a few scaled sums of component rows, (3, S), no cross product."""
    num, m = angles.shape[:2]
    pts = np.empty((m + 1, 3, num))
    pts[0] = roots.T
    ax1, ax2 = np.empty((m, 3, num)), np.empty((m, 3, num))
    t = _unit(root_dir).T.copy()
    a = e1.T.copy()
    b = np.cross(t, a, axis=0)
    al = np.ascontiguousarray(angles.transpose(1, 2, 0))          # (m, 2, S)
    step = np.ascontiguousarray(_per_segment(seg, m).T)            # (m, S)
    for i in range(m):
        ax1[i], ax2[i] = a, b
        p, q = al[i, 0], al[i, 1]
        theta = np.hypot(p, q)
        cos, sin = np.cos(theta), np.sin(theta)
        sinc = np.divide(sin, theta, out=np.ones_like(theta), where=theta > 0)            # sin θ / θ
        cosc = np.divide(1 - cos, theta * theta, out=np.full_like(theta, 0.5), where=theta > 0)
        # Rodrigues with r = p a + q b: t' = cos t + sinc (q a − p b); a' = cos a − sinc q t +
        # cosc p r; b' = cos b + sinc p t + cosc q r
        r = p * a + q * b
        t_new = cos * t + sinc * (q * a - p * b)
        a_new = cos * a - (sinc * q) * t + (cosc * p) * r
        b_new = cos * b + (sinc * p) * t + (cosc * q) * r
        t, a, b = t_new, a_new, b_new
        pts[i + 1] = pts[i] + step[i] * t
    return (pts.transpose(2, 0, 1), np.ascontiguousarray(ax1.transpose(2, 0, 1)),
            np.ascontiguousarray(ax2.transpose(2, 0, 1)))


def ref_moments(points: np.ndarray, load: np.ndarray, seg: np.ndarray, ax1: np.ndarray, ax2: np.ndarray):
    """The generalised forces (S, m, 2): about each joint, the moment of the loads per unit
    length ``load`` ((3,), (S, 3) or (S, m, 3)) on the segments beyond it, levers from the
    present ``points`` (S, n, 3), along the joint's axes ``ax1``, ``ax2``; ``seg`` the segment
    lengths ((S,) or (S, m))."""
    num, n = points.shape[:2]
    f = np.asarray(load, np.float64)
    f = np.broadcast_to(f[:, None, :] if f.ndim == 2 else f, (num, n - 1, 3))
    force = f * _per_segment(seg, n - 1)[:, :, None]                # per segment
    mid = 0.5 * (points[:, 1:] + points[:, :-1])
    # Σ_{j≥i} (mid_j − x_i) × F_j = Σ_{j≥i} mid_j × F_j − x_i × Σ_{j≥i} F_j
    own = np.cumsum(_cross(mid, force)[:, ::-1], axis=1)[:, ::-1]
    total = np.cumsum(force[:, ::-1], axis=1)[:, ::-1]
    tau = own - _cross(points[:, :-1], total)
    return np.stack([np.einsum("smk,smk->sm", tau, ax1), np.einsum("smk,smk->sm", tau, ax2)], axis=2)




def _strands(num, n, seed):
    """Random wavy strands (S, n, 3) with their root frames."""
    rng = np.random.default_rng(seed)
    steps = rng.normal(size=(num, n - 1, 3)) * 0.3 + np.array([0.0, 0.0, -1.0])
    steps *= rng.uniform(0.01, 0.1, size=(num, n - 1, 1)) / np.linalg.norm(steps, axis=2, keepdims=True)
    pts = np.concatenate([rng.normal(size=(num, 1, 3)), steps], axis=1).cumsum(axis=1)
    root_dir = pts[:, 1] - pts[:, 0]
    return pts, root_dir, root_normal(root_dir)


@pytest.mark.parametrize("n", [2, 3, 9, 25])
def test_kinematics_and_moments_match_the_numpy_reference(n):
    pts, root_dir, e1 = _strands(200, n, seed=n)
    seg = np.linalg.norm(np.diff(pts, axis=1), axis=2)
    ops = rounding(1.0, 10 * n, eps=EPS64)
    want = ref_angles_of(pts, root_dir, e1)
    got = angles_of(pts, root_dir, e1)
    np.testing.assert_allclose(got, want, rtol=0, atol=np.pi * ops)
    size = np.abs(pts).max()
    for a, b in zip(build(pts[:, 0], root_dir, e1, want, seg), ref_build(pts[:, 0], root_dir, e1, want, seg)):
        np.testing.assert_allclose(a, b, rtol=0, atol=size * ops)
    rebuilt = build(pts[:, 0], root_dir, e1, got, seg)[0]
    np.testing.assert_allclose(rebuilt, pts, rtol=0, atol=size * ops)          # IK then FK: the strands
    load = np.random.default_rng(1).normal(size=(200, n - 1, 3))
    p, ax1, ax2 = ref_build(pts[:, 0], root_dir, e1, want, seg)
    for f in (load, load[:, 0], np.array([0.0, 0.0, -9.81])):
        m_ref = ref_moments(p, f, seg, ax1, ax2)
        scale = size * np.abs(f).max() * seg.sum(axis=1).max()
        np.testing.assert_allclose(moments(p, f, seg, ax1, ax2), m_ref, rtol=0, atol=scale * ops)


def _numpy_substeps(a, last, rest, k, c, hb, load, seg, roots, root_dir, e1, count):
    """The substep loop as AngularRods.step ran it in numpy."""
    pts, ax1, ax2 = ref_build(roots, root_dir, e1, a, seg)
    for _ in range(count):
        force = ref_moments(pts, load, seg, ax1, ax2) - k * (a - rest)
        a, last = a + c * (a - last) + hb * force, a
        pts, ax1, ax2 = ref_build(roots, root_dir, e1, a, seg)
    return a, last, pts


@pytest.mark.parametrize("n", [2, 7, 16])
def test_substeps_match_the_numpy_loop_and_do_not_depend_on_threads(n):
    """Eight substeps of strands pushed off their rest angles under gravity: the kernel's angles
    and points against the numpy loop's — a stable update carries each substep's roundings on
    without growing them (Courant number below 1), so 8 substeps add 8 × the kinematics' — and
    1 or 2 threads give the same bits."""
    import numba

    pts, root_dir, e1 = _strands(150, n, seed=10 + n)
    seg = np.linalg.norm(np.diff(pts, axis=1), axis=2)
    rods = AngularRods(pts, RodSettings())
    count, k = rods.substeps(1 / 24)
    h = 1 / 24 / count
    m = n - 1
    c = np.maximum(0.0, 1.0 - h * (4.0 + 0.5 * np.sqrt(rods.beta * k)))
    per_joint = [np.ascontiguousarray(np.broadcast_to(x, (1, m, 1)).reshape(m)) for x in (k, c, h * h * rods.beta)]
    rest = ref_angles_of(pts, root_dir, e1)
    a0 = rest + 0.05
    load = np.ascontiguousarray(np.broadcast_to([0.0, 0.0, -9.81], (150, m, 3)))
    roots = np.ascontiguousarray(pts[:, 0])
    want = _numpy_substeps(a0, a0.copy(), rest, k, c, h * h * rods.beta, load, seg, roots, root_dir, e1, 8)
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            a, last = a0.copy(), a0.copy()
            p, ax1, ax2 = build(roots, root_dir, e1, a, seg)
            rod_substeps(a, last, rest, *per_joint, load, seg, roots, root_dir, e1, 8, p, ax1, ax2)
            runs.append((a, last, p))
    finally:
        numba.set_num_threads(was)
    ops = rounding(1.0, 8 * 10 * n, eps=EPS64)
    np.testing.assert_allclose(runs[0][0], want[0], rtol=0, atol=ops * 10)
    np.testing.assert_allclose(runs[0][2], want[2], rtol=0, atol=ops * np.abs(pts).max())
    assert all(np.array_equal(x, y) for x, y in zip(runs[0], runs[1]))
