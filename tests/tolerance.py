"""Tolerances for results that round differently, derived from the problem (issue 33).

The rule. Two results that should agree but are computed by different builds (numpy 1.26 on 4.5,
numpy 2 on 5.2, Blender's C++ against our numpy), different code paths, or on a CPU whose SIMD
path picks another summation order, agree only up to their rounding. A tolerance for them is
never a number fitted to the bits one machine gave: it is

    eps × magnitude × operations

* ``eps``: the precision the result is computed in (``EPS32`` for the core's float32 arrays and
  Blender's float3 positions, ``EPS64`` for float64 math);
* ``magnitude``: the largest value the rounding acts on, read from the data compared (its largest
  |coordinate|, the head's size, the strand's length) — never from the error observed;
* ``operations``: how many roundings reach the number compared — roundings per step × the steps
  that carry them (frames a dynamics layer remembers, the points of a root-to-tip walk, substeps)
  × the conditioning that amplifies them (a division by a short segment, say).

One rounding of a value up to 2 × magnitude is off by at most half its ulp, eps × magnitude (a
point's three coordinates rounded once move it by at most √3/2 of that), so counting each rounding
once and adding them (the worst case, not a random walk) bounds the error.
The derivation is written beside each assertion. What a tolerance must still catch is a real bug,
which moves hair by millimetres to centimetres: the derived bound stays orders of magnitude below
that.

Exact comparisons stay exact where the design makes them so (same process and code, 1 vs N
threads, split vs whole bake, saved and reopened arrays); tolerances of a formula against an
analytic answer (a discretisation, an approximation) are physics, not rounding, and are not
derived here.

``HAIR_WIG_TOLERANCE_MARGIN=4`` divides every derived tolerance by 4: a run that passes so has
at least that margin on this machine (a check for whoever derives a new one, not for CI).
"""

import os

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)     # 2**-23 ≈ 1.19e-7
EPS64 = float(np.finfo(np.float64).eps)     # 2**-52 ≈ 2.2e-16
_MARGIN = float(os.environ.get("HAIR_WIG_TOLERANCE_MARGIN", "1"))

# Roundings of the steps that recur, each of values up to the coordinates' magnitude:
AFFINE = 7     # x' = A x + t in float32: A rounded to float32 (1), 3 products, 3 sums
NORM = 4       # |d| of a 3-vector in float32: 3 products and 2 sums under a square root
# How many times the conditioned follow-the-leader (hair_wig/leader.py) can multiply a rounding
# of its inputs into a point's direction: 1 / R0 = 4 where the way to the point is not trusted,
# plus its blend weights' slopes, ~7 in all (the textbook step multiplied it by L / |d|, hundreds
# of times on squashed strands).
CONDITION = 7
# One follow-the-leader step placing a point: d = p − leader (1 rounding), multiplied into the
# direction CONDITION times; the direction's norm, division and blend (~6); the scale and the add
# (2). A walk carries each point's error on to the next one: n points give n x FOLLOW.
FOLLOW = 1 + CONDITION + 6 + 2
# What one step leaves in its own segment's length: the direction's error turns the segment but
# does not stretch it, so only the scale, the add and the unit direction's norm count (~8).
SEGMENT = 8


def rounding(magnitude, operations, eps: float = EPS32):
    """The most ``operations`` roundings of values up to ``magnitude`` can move a result computed
    in precision ``eps``: ``eps * magnitude * operations`` (see the module docstring for how to
    count). ``magnitude`` may be an array (one per point compared): the bound is then per point."""
    bound = float(eps) * np.asarray(magnitude, dtype=np.float64) * float(operations) / _MARGIN
    return float(bound) if bound.ndim == 0 else bound


def magnitude(*arrays, at_least: float = 0.0) -> float:
    """The largest |value| among the finite entries of ``arrays`` (at least ``at_least``): the size
    of what a rounding acts on."""
    m = float(at_least)
    for a in arrays:
        a = np.abs(np.asarray(a, dtype=np.float64))
        a = a[np.isfinite(a)]
        if a.size:
            m = max(m, float(a.max()))
    return m
