"""The wig: bind once against the rest pose, then step frame by frame (seed 000, FIG. 1).

The wig system's inputs are the surface model, the hairs and the pose controllers; its output
is the deformed hairs. This pipeline currently carries the hair in the head's local space
(seed 000, "Reference Spaces"); magnets, dynamics and refinement extend ``step``.
"""

from __future__ import annotations

import numpy as np

from .hairset import HairSet
from .spaces import as_matrix, follow_matrix, transform_points


class Wig:
    """A hair set bound to its head at rest.

    Parameters
    ----------
    hair : HairSet
        Rest hair, points in the hair object's local space.
    hair_matrix : (4, 4) float64
        The hair object's world matrix at rest (``H_0``).
    head_matrix : (4, 4) float64
        The head (surface) object's world matrix at rest (``L_0``).
    """

    def __init__(self, hair: HairSet, hair_matrix, head_matrix):
        self.hair = hair
        self.hair_rest = as_matrix(hair_matrix, f"'{hair.name}' rest matrix")
        self.head_rest = as_matrix(head_matrix, f"'{hair.name}' head rest matrix")

    def step(self, hair_matrix, head_matrix, out: np.ndarray | None = None) -> np.ndarray:
        """Deformed positions for one frame.

        Parameters
        ----------
        hair_matrix, head_matrix : (4, 4) float64
            Current world matrices of the hair object (``H_f``) and the head (``L_f``).
        out : (P, 3) float32, optional
            Where to write the result (a frame of a ``BakeCache``, say).

        Returns
        -------
        (P, 3) float32 positions in the hair object's current local space.
        """
        name = self.hair.name
        m = follow_matrix(self.hair_rest, self.head_rest,
                          as_matrix(head_matrix, f"'{name}' head matrix"),
                          as_matrix(hair_matrix, f"'{name}' matrix"))
        if out is None:
            out = np.empty_like(self.hair.points)
        # Far below float32 resolution: the hair is parented to the head (or neither moved),
        # and copying keeps a still frame bit-identical to the rest pose.
        if np.allclose(m, np.eye(4), rtol=0.0, atol=1e-9):
            out[...] = self.hair.points
            return out
        return transform_points(self.hair.points, m, out=out)
