"""hair_wig core: the wig system's deformation and bake data, numpy only.

This package never imports ``bpy`` or ``mathutils``; it runs under plain Python and is what
the Blender operators feed with arrays read from the scene.
"""

from .cache import BakeCache, check_memory
from .dynamics import DynamicMagnet, SecondarySprings, ForceField, spring_step_coefficients
from .errors import HairWigError
from .hairset import HairSet
from .magnets import Magnet, MagnetWeights
from .pipeline import FrameInput, SecondarySettings, Wig, WigSettings, WigState
from .profiles import Profile
from .collision import Collider, ColliderMesh, MeshField
from .refinement import LengthControl, RadiusMap, compensate_compression
from .scalp import ScalpSpace, locate_uv
from .spaces import transform_points, transform_rows
from .rods import AngularRods, RodSettings
from .strands import StrandSettings, VerletStrands

__all__ = [
    "BakeCache", "DynamicMagnet", "FrameInput", "HairSet", "HairWigError", "LengthControl",
    "Collider", "ColliderMesh", "Magnet", "MagnetWeights", "MeshField", "Profile", "RadiusMap", "SecondarySettings", "ScalpSpace", "SecondarySprings", "locate_uv",
    "StrandSettings", "VerletStrands", "AngularRods", "RodSettings", "Wig", "WigSettings", "WigState", "ForceField", "compensate_compression",
    "check_memory", "spring_step_coefficients", "transform_points", "transform_rows",
]
