"""The contacts' kernel (``kernels.contacts.surface_contacts``, ``SurfaceContacts.__call__``)
against their numpy form (``SurfaceContacts._call_numpy``): random strands pressed into a head
that turns through the substeps, alone and with a second collider that moves in the head's frame
(a hand: its field reached through this frame's map), substep after substep within frames, so
that the records of the last looks decide what is looked at; and the same bits on one and two
threads.
"""

import numba
import numpy as np
import pytest

from hair_wig.collision import Collider, ColliderMesh
from hair_wig.kernels import contacts as contact_kernels
from hair_wig.collision.contacts import SurfaceContacts
from test_collision import sphere
from test_kernels_walk import _groom
from tolerance import AFFINE, NORM, magnitude, rounding

N, STRANDS = 16, 320            # 5120 points: past the kernel's one-thread size (``contacts.SERIAL``)


def _turn(angle, shift=(0.0, 0.0, 0.0)):
    m = np.eye(4)
    c, s = np.cos(angle), np.sin(angle)
    m[:2, :2] = [[c, -s], [s, c]]
    m[:3, 3] = shift
    return m


def _rest(seed=5):
    """Strands (3, N, STRANDS) head-local rooted on the unit sphere's upper half, leaving it and
    curving back over it (the walk's test's groom)."""
    pts = _groom(STRANDS, N, seed).points.reshape(STRANDS, N, 3)
    return np.ascontiguousarray(pts.transpose(2, 1, 0), np.float64)


def _plate(half):
    """A box (vertices, triangles) of half-sizes ``half``."""
    v = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float) * half
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return v, np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])


def _colliders(rest, hand, thin=False):
    """The head (a sphere of radius 1, offset 1 cm) and, with ``hand``, a sphere of 0.4 beside
    it — or, ``thin``, a plate 4 mm thick and 3 m wide across the strands over the head, thinner
    than its grid's cells (the grid is in doubt there) — bound on the rest pose."""
    cs = [Collider(ColliderMesh("Head", *sphere(1.0, 24, 48)), np.eye(4), 0.01)]
    if hand:
        v, t = _plate((1.5, 1.5, 0.002)) if thin else sphere(0.4, 12, 24)
        at = _turn(0.0, (0.0, 0.0, 1.15) if thin else (0.9, 0.0, 0.7))
        cs.append(Collider(ColliderMesh("Plate" if thin else "Hand", v, t, at), at, 0.005))
    rows = rest.transpose(0, 2, 1).reshape(3, -1)          # the wig's points, strand by strand
    for c in cs:
        c.bind(rows)
    index = (np.arange(STRANDS) * N)[None, :] + np.arange(N)[:, None]
    return cs, index


def _substeps(rest, frames=3, substeps=4, seed=7):
    """Per frame the head's world → head-local maps (was, now) and, per substep, where the hand
    is (its head-local → field map) and the points (3, N, S) world before the contacts: pressed
    into the head and turned with it; a third of the strands still (their points skipped after
    the frame's first look), the others drifting in."""
    rng = np.random.default_rng(seed)
    speed = rng.choice([0.0, 0.5, 1.0], size=STRANDS)
    drift = rng.normal(size=rest.shape) * 0.004
    for f in range(frames):
        was, now = np.linalg.inv(_turn(0.05 * f)), np.linalg.inv(_turn(0.05 * (f + 1)))
        hand = _turn(0.1 * f, (-0.05 * f, 0.02 * f, -0.08 * (f + 1)))
        steps = []
        for i in range(1, substeps + 1):
            k = f * substeps + i
            local = rest * (1 - 0.004 * k * speed) + drift * k * speed
            head = np.linalg.inv(was) + i / substeps * (np.linalg.inv(now) - np.linalg.inv(was))
            world = np.einsum("ij,jns->ins", head[:3, :3], local) + head[:3, 3:4, None]
            steps.append((i / substeps, np.ascontiguousarray(world)))
        yield was, now, hand, steps


def _run(hand, fixed, numpy, swept=False, thin=False, doubt=True):
    """Every substep's push (None or (3, N, S) world) and the points and segments touched.
    ``swept``: the hand carried through each frame's substeps from where it was the frame before
    (``Collider.sweep_from``, as ``Wig.step`` does), not met where the frame ends from the first;
    ``doubt`` off: its grid taken at its word everywhere (no cell marked in doubt)."""
    rest = _rest()
    cs, index = _colliders(rest, hand, thin)
    if not doubt:
        cs[1].field.grid.doubt[:] = 1
    contacts = SurfaceContacts(cs, index, fixed)
    call = contacts._call_numpy if numpy else contacts
    out = []
    for f, (was, now, to_field, steps) in enumerate(_substeps(rest)):
        if hand:
            before = np.eye(4) if cs[1].to_field is None else cs[1].to_field.copy()
            cs[1].set_frame(to_field)
            if swept:
                cs[1].sweep_from(before if f else None)
        contacts.move(was, now)
        contacts.begin()
        for f, x in steps:
            out.append((call(x, f), contacts.touched))
    return out, contacts.looked


@pytest.mark.parametrize("fixed", [0, 1, 2])
def test_the_kernel_pushes_the_points_the_numpy_contacts_push(fixed):
    """With the head alone the kernel does the numpy code's operations in its order and types:
    the same bits, the same points and segments touched and looked at."""
    kernel, looked = _run(False, fixed, numpy=False)
    reference, reference_looked = _run(False, fixed, numpy=True)
    assert sum(t for _, t in reference) > 0
    assert looked == reference_looked < len(reference) * (2 * N - 1 - fixed) * STRANDS    # some were skipped
    for (a, ta), (b, tb) in zip(kernel, reference):
        assert ta == tb
        assert (a is None) == (b is None)
        if a is not None:
            assert np.array_equal(a, b)


@pytest.mark.parametrize("swept, thin", [(False, False), (True, False), (True, True)])
def test_the_kernel_meets_a_moving_collider_as_the_numpy_contacts_do(swept, thin):
    """Through a moving collider's map numpy and the kernel multiply and add in the same order
    (``Collider._mapped_rows``, ``kernels.contacts._in_field``); the bound allows each point's
    field-space place to differ by a float64 rounding or so, which reaches the float32 field's
    value only where a coordinate lies that near a float32 rounding's edge. A push is then off
    by the field's rounding at the point —
    the map's (AFFINE) and the gradient's turn and norm (NORM) in float32 of coordinates up to
    the points' (the hair's, up to ~1.3 from the head's centre) — times up to 2 (a segment's
    end takes at most twice its push), three pushes a point a collider (its own and its two
    segments'), two colliders; or, where a rounding decides whether a point counts as inside, by
    up to the collider's tolerance (the push then is shorter than it). ``swept``: the collider
    carried through the substeps (every point looked at; its map at each substep's fraction);
    ``thin``: a plate thinner than its grid's cells, read exactly where the grid is in doubt
    (``kernels.field.in_doubt``) — which the run meets: its pushes are not those of the same run
    with the grid taken at its word everywhere."""
    kernel, looked = _run(True, 1, numpy=False, swept=swept, thin=thin)
    reference, reference_looked = _run(True, 1, numpy=True, swept=swept, thin=thin)
    assert sum(t for _, t in reference) > 0
    rest = _rest()
    cs, _ = _colliders(rest, True, thin)
    if thin:
        trusting, _ = _run(True, 1, numpy=False, swept=swept, thin=thin, doubt=False)
        assert any((a is None) != (b is None) or (a is not None and not np.array_equal(a, b))
                   for (a, _), (b, _) in zip(kernel, trusting))
    if swept:
        assert looked == reference_looked
    tol = 2 * 3 * 2 * (rounding(magnitude(rest), AFFINE + NORM) + max(c.tolerance for c in cs))
    for (a, ta), (b, tb) in zip(kernel, reference):
        assert (a is None) == (b is None)
        if a is not None:
            assert np.abs(a - b).max() <= tol


@pytest.mark.parametrize("swept", [False, True])
def test_the_contacts_kernel_gives_the_same_bits_on_one_and_two_threads(swept):
    """Every strand is met by one iteration of the kernel, writing only its own points and its
    own records — a thin plate carried through the substeps too."""
    runs = []
    was = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            runs.append(_run(True, 1, numpy=False, swept=swept, thin=swept)[0])
    finally:
        numba.set_num_threads(was)
    assert N * STRANDS >= contact_kernels.SERIAL
    for (a, ta), (b, tb) in zip(*runs):
        assert ta == tb
        assert (a is None) == (b is None)
        assert a is None or np.array_equal(a, b)
