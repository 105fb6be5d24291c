"""Profile curves as Blender curve widgets (seed 000's flex, length, falloff, attachment,
compression, gravity and secondary-blend profiles): which profiles there are, making them,
setting them to a preset and sampling them into core profiles.

Blender cannot construct a ``CurveMapping`` on its own, so each wig (and each magnet, for its
falloff) keeps a hidden node group of Float Curve nodes, one per profile; the panel draws their
curve widgets, and bind samples them. No operators here (they are in ``profiles``), so the scene
reader can sample profiles without importing an operator module.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..hair_wig import LAYERS, Profile
from ..hair_wig.dynamics_layer import settings_fields
from .properties import HairWigMagnet

# name: (label, what it maps, default preset)
WIG_PROFILES = {
    "flex": ("Flex", "How much each vertex follows the magnets, root (left) to tip (right)", "LINEAR"),
    "length": ("Length", "How much strands follow the magnets, shortest (left) to longest (right)", "CONSTANT"),
    "attachment": ("Attachment", "How much each vertex follows the skin, root to tip", "CONSTANT"),
    "compression": ("Compression", "Where along the strand compression is held back, root to tip", "CONSTANT"),
    "gravity": ("Gravity", "Sag of dynamic magnets by head tilt: upright (left) to upside down (right)", "LINEAR"),
    "style_stiffness": ("Stiffness Along Strand", "Style Hair's stiffness, root (left) to tip (right), "
                                                  "times Stiffness", "CONSTANT"),
    "curl_radius": ("Curl Radius Along Strand", "The curls' radius, root to tip, times Curl Radius "
                                                "(0 at the root keeps the root in place)", "CURL"),
    "curl_turns": ("Curl Turns Along Strand", "Where the turns come, root to tip: higher winds tighter",
                   "CONSTANT"),
}
# the dynamics layers' own profiles, drawn beside their settings (the Dynamics panel), not among
# the wig's shaping profiles: from the layers' settings (``hair_wig.dynamics_layer.profile``)
_LAYER_PROFILES = {
    f.metadata["profile"]: (f.metadata["ui"]["name"], f.metadata["ui"]["description"], f.metadata["ui"]["preset"])
    for layer in LAYERS.values() for f in settings_fields(layer.SETTINGS) if "profile" in f.metadata}
DYNAMICS_PROFILES = tuple(_LAYER_PROFILES)
WIG_PROFILES.update(_LAYER_PROFILES)
# drawn in the Style Hair panel
STYLE_PROFILES = ("style_stiffness", "curl_radius", "curl_turns")
MAGNET_PROFILES = {
    "falloff": ("Falloff", "Pull from the magnet's centre (left) to its radius (right)", "EASE_OUT"),
}
PRESETS = {
    "LINEAR": ((0.0, 0.0), (1.0, 1.0)),
    "CONSTANT": ((0.0, 1.0), (1.0, 1.0)),
    "EASE": ((0.0, 0.0), (0.25, 0.1), (0.75, 0.9), (1.0, 1.0)),        # slow in, slow out
    "EASE_OUT": ((0.0, 1.0), (0.25, 0.9), (0.75, 0.1), (1.0, 0.0)),
    # pinned at the root, full from a fifth of the strand on: the patent's dynablend is uniform
    # along the strand, only the root must not swing
    "PINNED": ((0.0, 0.0), (0.2, 1.0), (1.0, 1.0)),
    # held fully at the root, a quarter of it at the tip: the strands' own default goal profile
    "HOLD": ((0.0, 1.0), (1.0, 0.25)),
    # a curl grows from nothing at the root to its radius a fifth of the way out
    "CURL": ((0.0, 0.0), (0.2, 1.0), (1.0, 1.0)),
}
SMOOTH_PRESETS = {"EASE", "EASE_OUT"}
SAMPLES = 257


def specs(owner) -> dict:
    return MAGNET_PROFILES if isinstance(owner, HairWigMagnet) else WIG_PROFILES


def ensure(owner, label: str):
    """The owner's profile node group, made with every profile at its default when missing."""
    group = owner.profiles
    if group is None:
        group = bpy.data.node_groups.new(f".HairWig Profiles {label}", "GeometryNodeTree")
        owner.profiles = group
    for name, (_title, _what, preset) in specs(owner).items():
        if group.nodes.get(name) is None:
            node = group.nodes.new("ShaderNodeFloatCurve")
            node.name = name
            set_preset(node, preset)
    return group


def node(owner, name: str):
    group = owner.profiles
    return None if group is None else group.nodes.get(name)


def set_preset(node, preset: str) -> None:
    mapping = node.mapping
    curve = mapping.curves[0]
    while len(curve.points) > 2:
        curve.points.remove(curve.points[1])
    points = PRESETS[preset]
    curve.points[0].location = points[0]
    curve.points[1].location = points[-1]
    for x, y in points[1:-1]:
        curve.points.new(x, y)
    handle = "AUTO" if preset in SMOOTH_PRESETS else "VECTOR"
    for p in curve.points:
        p.handle_type = handle
    mapping.use_clip = True
    mapping.update()


def read(owner, name: str) -> Profile:
    """The profile ``name`` of a wig or magnet as a core profile (sampled from its curve widget),
    or its default when the owner has no profile curves."""
    n = node(owner, name)
    if n is None:
        title, _, preset = specs(owner)[name]
        return Profile(PRESETS[preset], "SMOOTH" if preset in SMOOTH_PRESETS else "LINEAR", title.lower())
    mapping = n.mapping
    mapping.initialize()
    curve = mapping.curves[0]
    x = np.linspace(0.0, 1.0, SAMPLES)
    y = np.array([mapping.evaluate(curve, float(v)) for v in x])
    return Profile(np.stack([x, y], axis=1), "LINEAR", specs(owner)[name][0].lower())
