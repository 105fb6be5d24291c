"""hair_wig core: the wig system's deformation and bake data, numpy only.

This package never imports ``bpy`` or ``mathutils``; it runs under plain Python and is what
the Blender operators feed with arrays read from the scene.
"""

from .errors import HairWigError
from .hairset import HairSet
from .spaces import transform_points, follow_matrix
from .cache import BakeCache
from .pipeline import Wig

__all__ = ["HairWigError", "HairSet", "transform_points", "follow_matrix", "BakeCache", "Wig"]
