"""Every difference between the Blender lines hair_wig supports, in one place.

hair_wig runs on Blender 4.5 LTS and 5.2 LTS from one code base. Where the Python API differs,
the code asks Blender what it has (a feature check) rather than comparing version numbers, and
the answer lives here, one function per API change, each saying which Blender changed it. When a
new Blender changes something else, this module is its home.

API changes handled here:

* 5.0 — the Remove Named Attribute node's ``pattern_mode`` property became the menu input
  socket "Pattern Mode" (values ``'Exact'`` / ``'Wildcard'``): :func:`set_wildcard_pattern`.
* 5.2 — geometry-nodes modifier inputs are no longer ID properties of the modifier
  (``md["Socket_2"] = v`` raises ``TypeError``); they are RNA properties at
  ``md.properties.inputs.<identifier>.value``, and an F-curve animating one has the data path
  ``modifiers["Name"].properties.inputs.<identifier>.value``: :func:`set_modifier_input`,
  :func:`modifier_input`, :func:`modifier_input_path`. (Blender 5.2 rewrites the 4.x paths of a
  file it opens, so a bake made on 4.5 plays on 5.2.)
* 5.0 — ``Action.fcurves`` is gone: F-curves live in channelbags, one per action slot, in the
  strips of the action's layers (slotted actions arrived in 4.4, so 4.5 has both forms and the
  add-on only ever uses channelbags): :func:`action_fcurves`.
"""

from __future__ import annotations


# -------------------------------------------------------------- geometry-nodes modifier inputs

def _modifier_inputs(md):
    """The RNA collection of a geometry-nodes modifier's inputs (Blender 5.2+), or None (4.5,
    where they are ID properties of the modifier itself)."""
    interface = getattr(md, "properties", None)
    return None if interface is None else interface.inputs


def set_modifier_input(md, identifier: str, value) -> None:
    """Set the value of the group input ``identifier`` (e.g. ``"Socket_2"``) of the geometry-nodes
    modifier ``md``."""
    inputs = _modifier_inputs(md)
    if inputs is None:
        md[identifier] = value
    else:
        getattr(inputs, identifier).value = value


def modifier_input(md, identifier: str):
    """The value of the group input ``identifier`` of the geometry-nodes modifier ``md``."""
    inputs = _modifier_inputs(md)
    return md[identifier] if inputs is None else getattr(inputs, identifier).value


def modifier_input_path(md, identifier: str) -> str:
    """The data path, from the object, that an F-curve animating the input ``identifier`` of the
    geometry-nodes modifier ``md`` must have."""
    inputs = _modifier_inputs(md)
    if inputs is None:
        return f'modifiers["{md.name}"]["{identifier}"]'
    return getattr(inputs, identifier).path_from_id("value")


# -------------------------------------------------------------- Remove Named Attribute node

def set_wildcard_pattern(node) -> None:
    """Make a Remove Named Attribute node take its Name as a wildcard pattern."""
    socket = node.inputs.get("Pattern Mode")
    if socket is not None:                      # Blender 5.0+: a menu socket
        socket.default_value = "Wildcard"
    else:                                       # Blender 4.x: a node property
        node.pattern_mode = "WILDCARD"


# -------------------------------------------------------------- actions

def action_fcurves(action) -> list:
    """Every F-curve of ``action``, in all its layers, strips and slots' channelbags."""
    return [fc for layer in action.layers for strip in layer.strips
            for bag in strip.channelbags for fc in bag.fcurves]
