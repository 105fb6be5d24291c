"""The collision walk's kernel (``kernels.walk.walk_strands``) against the walk's numpy form
(``CollisionWalk._walk``, which the children's keep-out still runs): the same contacts on random
strands pulled into a head, with a second collider that moves (a shoulder: its field reached
through this frame's map), a crease where two shells meet (the swing out of a pocket), strands of
two points, with a layer that lifts (Strands: a contact met head-on lifts the chain, in the kernel
as in numpy), and with children grown from the strands
as guides (their shapes kept out on the children's roots, turned with the surface normal or not). And the same bits on one and two threads.
"""

import numba
import numpy as np
import pytest

from hair_wig import FrameInput, HairSet, Magnet, Wig, WigSettings
from hair_wig.children import Children
from hair_wig.collision import ColliderMesh
from hair_wig.strands import StrandSettings
from hair_wig import chain
from hair_wig import walk as walk_module
from hair_wig.walk import CollisionWalk
from test_chain import _constraints
from test_collision import sphere
from tolerance import FOLLOW, rounding


def _groom(strands, n, seed):
    """Strands rooted on the unit sphere's upper half, leaving it and curving back over it."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=(strands, 3)) * (1, 1, 0.4) + (0, 0, 1.0)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    t = np.cross(u, rng.normal(size=(strands, 3)))
    t /= np.linalg.norm(t, axis=1, keepdims=True)
    s = np.linspace(0, 1, n)[None, :, None]
    r = 1 + 0.25 * np.sin(np.pi * s) + 0.01 * (s > 0)
    pts = (u[:, None] * np.cos(1.2 * s) + t[:, None] * np.sin(1.2 * s)) * r
    return HairSet(pts.reshape(-1, 3).astype(np.float32), [n] * strands, name="Groom")


def _scene(n=12, strands=120, lifts=False, seed=3, children=None):
    """The groom on a head with an ear (a second shell sunk into it: a crease where they meet)
    and a shoulder box that rises into the hair, pulled down into both by a magnet."""
    hv, ht = sphere(1.0, 24, 48)
    ev, et = sphere(0.35, 10, 20)
    ev = ev + (0.95, 0.0, 0.35)
    head = (np.concatenate([hv, ev]), np.concatenate([ht, et + len(hv)]))
    bv, bt = sphere(0.6, 10, 20)
    shoulder = ColliderMesh("Shoulder", bv, bt, _at(0.0, -1.75, 0.3))
    settings = WigSettings(dynamics=StrandSettings() if lifts else None)
    kids = None
    if children is not None:                 # children rooted on the head among the guides
        rng = np.random.default_rng(seed + 1)
        roots = rng.normal(size=(4 * strands, 3)) * (1, 1, 0.4) + (0, 0, 1.0)
        kids = Children(roots / np.linalg.norm(roots, axis=1, keepdims=True), follow_normal=children)
    wig = Wig(_groom(strands, n, seed), np.eye(4), np.eye(4), [Magnet("M", np.eye(4), radius=3.0)], settings,
              head_mesh=head, colliders=[shoulder], children=kids)
    return wig, head


def _at(x, y, z):
    m = np.eye(4)
    m[:3, 3] = (x, y, z)
    return m


def _frames(count=4):
    out = []
    for f in range(count):
        pull = _at(0.15 * np.sin(f), 0.05 * f, -0.35 - 0.05 * f)      # down into the head
        out.append(FrameInput(np.eye(4), np.eye(4), np.array([pull]), time=f / 24.0,
                              collider_matrices=np.array([_at(0.0, -1.75 + 0.04 * f, 0.3 + 0.04 * f)])))
    return out


def _bake(wig, frames, residuals=None, crossed=None, pushes=None):
    state, outs = None, []
    for inp in frames:
        out, state = wig.step(inp, state)
        outs.append(out.copy())
        if residuals is not None:
            residuals.append(wig.residual)
        if crossed is not None:
            crossed.append(wig.crossed)
        if pushes is not None:
            pushes.append(wig.walk.pushes.copy())
    return outs


@pytest.mark.parametrize("n, lifts, children", [(12, False, None), (2, False, None), (12, True, None),
                                               (12, False, True), (12, True, False)])
def test_the_walk_kernel_meets_the_contacts_the_numpy_walk_meets(monkeypatch, n, lifts, children):
    """Each frame the kernel's walk and the numpy walk place every point alike, to their
    roundings: the numpy walk rounds its follow-the-leader in float32 (FOLLOW roundings of the
    coordinates a point), its push, its set-back on the tangent plane and its swing (~10 more
    a round, three rounds); the kernel in float64. A point's error is carried on to the next
    point of its strand: n points. Coordinates up to ~1.6 (the head and the hair over it). Both
    leave no point inside its collision surface (``Wig.residual``) and keep every segment's length; the kernel looked up points
    and met the crease (swings) and, with Strands, lifted chains."""
    frames = _frames()
    wig, _ = _scene(n=n, lifts=lifts, children=children)
    residuals = []
    crossed, pushes = [], []
    kernel = _bake(wig, frames, residuals, crossed, pushes)
    looked, stops = wig.walk.looked, wig.walk.stops
    assert (wig.walk.children is not None) == (children is not None)
    lifted = [1.0]                       # the worst conditioning of a lift's constraints
    with monkeypatch.context() as m:
        m.setattr(CollisionWalk, "_walk_kernel",
                  lambda self, p, base, span, first, *last: self._walk(p, base, span, first, *last))
        # the numpy walk lifts the same chains, to the roundings below: their conditioning
        m.setattr(walk_module, "least_motion", _conditioning(lifted))
        numpy_wig, _ = _scene(n=n, lifts=lifts, children=children)
        numpy_crossed, numpy_pushes = [], []
        reference = _bake(numpy_wig, frames, crossed=numpy_crossed, pushes=numpy_pushes)
    # the same chains lifted, but where a rounding decides whether a lift is one to take
    assert abs(stops - numpy_wig.walk.stops) <= max(1, 0.01 * stops)
    # continuous contact meets the shoulder alone (the head keeps still relative to itself), and
    # no path crosses it: it rises slower than it is thick (tests/test_continuous_contact.py)
    assert crossed == numpy_crossed == [0] * len(frames)
    # the points a contact pushed and the way it pushed them (what Springs takes back): the same
    # but where a point grazes its surface and one walk's roundings push it and the other's do
    # not, and there the same contact's direction (the same closest point, to the roundings
    # above over a depth of at least a few of them: within a degree)
    assert sum((a != 0).any(axis=0).sum() for a in pushes) > 0
    for a, b in zip(pushes, numpy_pushes):
        on_a, on_b = (a != 0).any(axis=0), (b != 0).any(axis=0)
        assert (on_a != on_b).sum() <= max(2, 0.01 * on_a.sum())
        both = on_a & on_b
        assert (np.einsum("kp,kp->p", a[:, both], b[:, both]) >= np.cos(np.radians(1))).all()
    assert looked > 0
    if lifts:
        assert stops > 0
    rest = np.linalg.norm(np.diff(wig.hair.points.reshape(-1, n, 3), axis=1), axis=2)
    # a lifted chain is solved from points that differ by the roundings above, and its solution
    # moves by them times the conditioning of its constraints (``chain.least_motion``: a least
    # motion onto rows of unit vectors, first order), carried on along the strand from there
    tol = rounding(1.6, n * (FOLLOW + 3 * 10)) * lifted[0]
    for a, b, inside in zip(kernel, reference, residuals):
        assert np.abs(a - b).max() <= tol
        # how deep any point lies inside its collision surface (the groom's clearance where it
        # lay inside the ear at rest), measured on the points as written
        assert inside <= wig.colliders[0].tolerance + tol
        seg = np.linalg.norm(np.diff(a.reshape(-1, n, 3), axis=1), axis=2)
        assert np.abs(seg - rest).max() <= rounding(1.6, 2 * FOLLOW)


def _conditioning(worst):
    """``chain.least_motion`` that also keeps, in ``worst[0]``, the largest condition number of
    the constraints it solved (each lifted chain's, at its answer)."""
    def least_motion(x, fixed, length, normal, reach, **kw):
        y = chain.least_motion(x, fixed, length, normal, reach, **kw)
        for a in _constraints(y, fixed, normal):
            worst[0] = max(worst[0], float(np.linalg.cond(a)))
        return y
    return least_motion


def test_the_walk_kernel_gives_the_same_bits_on_one_and_two_threads():
    """Every strand is walked by one iteration of the kernel, writing only its own points."""
    frames = _frames()
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            wig, _ = _scene(lifts=True)
            runs.append(_bake(wig, frames))
    finally:
        numba.set_num_threads(was)
    assert all(np.array_equal(a, b) for a, b in zip(*runs))
