"""numpy's BLAS on one thread while hair is computed, and as it was afterwards (no Blender)."""

import threading

import numpy as np
import pytest

from hair_wig import FrameInput, SpringSettings, Wig, WigSettings, blas, pipeline
from test_wig_core import rotation, sphere_mesh, strands


def _numpy_blas() -> str:
    """The BLAS numpy was built with, by its own account."""
    config = np.show_config(mode="dicts")
    return config["Build Dependencies"]["blas"]["name"].lower()


def test_numpy_s_openblas_is_found():
    """The wheels the add-on runs on (numpy's from PyPI) carry OpenBLAS: it must be found, or
    the rest of this file would test nothing."""
    if "openblas" not in _numpy_blas():
        pytest.skip(f"numpy here is built with {_numpy_blas()}, not OpenBLAS")
    assert blas.libraries(), "numpy's OpenBLAS was not found"


def test_one_thread_inside_and_the_count_given_back():
    before = blas.threads()
    for _, put in blas.libraries():
        put(2)
    try:
        with blas.one_thread:
            assert blas.threads() == [1] * len(blas.libraries())
            with blas.one_thread:                    # nested: still one, and not given back early
                assert blas.threads() == [1] * len(blas.libraries())
            assert blas.threads() == [1] * len(blas.libraries())
        assert blas.threads() == [2] * len(blas.libraries())
        with pytest.raises(ValueError):
            with blas.one_thread:
                raise ValueError("a failed frame")
        assert blas.threads() == [2] * len(blas.libraries())
    finally:
        for (_, put), n in zip(blas.libraries(), before):
            put(n)


def test_from_two_threads_the_count_is_given_back_when_the_last_leaves():
    before = blas.threads()
    entered, release = threading.Event(), threading.Event()
    seen = []

    def other():
        with blas.one_thread:
            entered.set()
            release.wait(10)
            seen.append(blas.threads())

    t = threading.Thread(target=other)
    t.start()
    assert entered.wait(10)
    with blas.one_thread:
        pass                      # this thread leaves first: the other is still computing
    seen.append(blas.threads())
    release.set()
    t.join(10)
    ones = [1] * len(blas.libraries())
    assert seen == [ones, ones]
    assert blas.threads() == before


def test_the_wig_binds_and_steps_with_one_blas_thread(monkeypatch):
    """What the wig's bind and frames run on (read from inside them), and the count after."""
    if not blas.libraries():
        pytest.skip("no OpenBLAS here")
    was = blas.threads()
    for _, put in blas.libraries():      # two, as on any machine of more than one core
        put(2)
    before = blas.threads()
    seen = {}
    layer_for, refine = pipeline.layer_for, pipeline.Wig.refine

    def bound(*args, **kwargs):
        seen.setdefault("bind", blas.threads())
        return layer_for(*args, **kwargs)

    def stepped(self, *args, **kwargs):
        seen.setdefault("step", blas.threads())
        return refine(self, *args, **kwargs)

    monkeypatch.setattr(pipeline, "layer_for", bound)
    monkeypatch.setattr(pipeline.Wig, "refine", stepped)
    v, tris = sphere_mesh(1.0)
    wig = Wig(strands(), np.eye(4), np.eye(4), [], WigSettings(dynamics=SpringSettings()), head_mesh=(v, tris))
    assert blas.threads() == before
    state = None
    for f in range(3):
        _, state = wig.step(FrameInput(np.eye(4), rotation((0, 0, 1), 0.2 * f), time=f / 24.0), state)
    ones = [1] * len(blas.libraries())
    try:
        assert seen == {"bind": ones, "step": ones}
        assert blas.threads() == before
    finally:
        for (_, put), n in zip(blas.libraries(), was):
            put(n)
