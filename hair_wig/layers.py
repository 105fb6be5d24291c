"""The registry of dynamics layers (SPEC §8): the wig's one Dynamics setting picks one of these by
its ``KEY``; the add-on's properties, panel and scene reader list them from here. A new layer is
one file (its settings and its ``DynamicsLayer``) and one line below.
"""

from __future__ import annotations

from .dynamics_layer import DynamicsLayer, settings_fields
from .errors import HairWigError
from .rods import RodLayer
from .springs import SpringLayer
from .strands import StrandLayer
from .wisps import WispLayer

# in the order the panel lists them; the first is the default
LAYERS: dict[str, type[DynamicsLayer]] = {layer.KEY: layer for layer in (
    SpringLayer,
    StrandLayer,
    RodLayer,
    WispLayer,
)}


def layer_for(settings) -> type[DynamicsLayer]:
    """The layer whose settings ``settings`` are."""
    for layer in LAYERS.values():
        if isinstance(settings, layer.SETTINGS):
            return layer
    raise HairWigError(f"no dynamics layer takes settings of type {type(settings).__name__}")


def keyed_props(layer: type[DynamicsLayer]) -> dict[str, str]:
    """The layer's keyed settings: field name → the wig property's name in Blender."""
    return {f.name: f.metadata["prop"] for f in settings_fields(layer.SETTINGS)
            if f.metadata.get("keyed")}
