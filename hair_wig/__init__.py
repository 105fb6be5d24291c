"""hair_wig core: the wig system's deformation and bake data, numpy with numba kernels.

This package never imports ``bpy`` or ``mathutils``; it runs under plain Python and is what
the Blender operators feed with arrays read from the scene.
"""

from . import kernel_home

kernel_home.adopt(__name__)   # before any module of the core imports its kernels (kernel_home)

from .cache import BakeCache, check_memory
from .dynamics import DynamicMagnet, SecondarySprings, ForceField, spring_step_coefficients
from .errors import HairWigError
from .hairset import HairSet
from .magnets import Magnet, MagnetWeights
from .pipeline import FrameInput, Wig, WigSettings, WigState
from .dynamics_layer import DynamicsLayer, HairModel, LayerFrame
from .layers import LAYERS, layer_for
from .springs import SpringLayer, SpringSettings
from .profiles import Profile
from .collision import Collider, ColliderMesh, MeshField
from .refinement import LengthControl, RadiusMap, compensate_compression
from .scalp import ScalpSpace, locate_uv
from .spaces import transform_points, transform_rows
from .rods import AngularRods, RodLayer, RodSettings
from .strands import StrandLayer, StrandSettings, VerletStrands

__all__ = [
    "BakeCache", "DynamicMagnet", "FrameInput", "HairSet", "HairWigError", "LengthControl",
    "Collider", "ColliderMesh", "Magnet", "MagnetWeights", "MeshField", "Profile", "RadiusMap", "ScalpSpace", "SecondarySprings", "locate_uv",
    "StrandSettings", "VerletStrands", "AngularRods", "RodSettings", "StrandLayer", "RodLayer",
    "SpringLayer", "SpringSettings", "DynamicsLayer", "HairModel", "LayerFrame", "LAYERS", "layer_for", "Wig", "WigSettings", "WigState", "ForceField", "compensate_compression",
    "check_memory", "spring_step_coefficients", "transform_points", "transform_rows",
]
