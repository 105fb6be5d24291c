"""A wig's whole input, read from Blender, in one place: which objects are wigs, their head,
magnets, settings and profile curves, their key poses, the deforming surface, and, frame by frame,
what the core needs (matrices, gravity, Wind fields, keyed settings, the surface now).

Everything that binds or steps a wig (bake, live preview, key poses, panels) reads through here.
This module imports no operator module, so reading never goes round in a circle; it changes
nothing in the scene but the rest pose it is asked to capture (``capture_rest``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..hair_wig import (LAYERS, ColliderMesh, DynamicMagnet, FrameInput, HairSet, HairWigError, Magnet, MeshField,
                        Profile, ScalpSpace, Wig, WigSettings)
from ..hair_wig.collision import SurfaceCollide
from ..hair_wig.dynamics_layer import settings_fields
from ..hair_wig import styling
from ..hair_wig.spaces import scale_of
from ..hair_wig.keyposes import (KeyedStyle, KeyPose, LeaderFollow, StyleSettings, curve_point_index,
                                 nearest)
from . import blender_io, profile_curves
from .properties import head_of

LEADER = "hair_wig_leader"         # bool, curve domain: the curve leads a wisp (key leader strand)
WISP = "hair_wig_wisp"             # int, curve domain: the leader an imitator was made from (-1: none)


def is_wig(ob) -> bool:
    return ob is not None and ob.type in blender_io.HAIR_TYPES and ob.hair_wig.enabled


def is_curves_wig(ob) -> bool:
    """A wig on ``Curves`` hair: what live preview and key poses work on."""
    return is_wig(ob) and ob.type == "CURVES"


def require_wig(ob) -> None:
    if not is_wig(ob):
        raise HairWigError(f"'{ob.name}' has no hair_wig settings (enable Wig on it first)")
    gone = deleted_head(ob)
    if gone is not None:
        raise HairWigError(gone)


def deleted_head(ob) -> str | None:
    """What to say when the wig's head (or its hair's surface) was deleted — it lingers in no
    scene, held only by the reference to it — else None. A deleted magnet is taken off the wig
    (``magnet_ops.drop_deleted_magnets``); a deleted head cannot be, so the wig refuses to bake."""
    head = head_of(ob)
    if head is None or head.users_scene:
        return None
    which = "Head" if ob.hair_wig.head is not None else "hair's Surface"
    return (f"'{ob.name}': its head '{head.name}' was deleted (it is in no scene): pick the head again as "
            f"the wig's {which}, or clear it")


def require_head(ob):
    """The wig's head mesh, or an error naming the wig."""
    head = head_of(ob)
    if head is None:
        raise HairWigError(f"'{ob.name}' has no head: set a head mesh or give the hair a surface")
    return head


def wigs_in(scene) -> list:
    return [ob for ob in scene.objects if is_wig(ob)]


def frame_range(scene, ob, first=None, last=None) -> tuple[int, int]:
    """The range to bake: explicit, else the wig's own, else the scene's."""
    s = ob.hair_wig
    if first is None:
        first = scene.frame_start if s.use_scene_range else s.frame_start
    if last is None:
        last = scene.frame_end if s.use_scene_range else s.frame_end
    if int(last) < int(first):
        raise HairWigError(f"'{ob.name}': frame range {first}..{last} is empty (end before start)")
    return int(first), int(last)


def collider_objects(scene, ob) -> list:
    """The meshes the wig of ``ob`` collides with besides its head: every mesh in the scene with
    Collision physics switched on (Physics tab), by name."""
    head = head_of(ob)
    return sorted((o for o in scene.objects
                   if o.type == "MESH" and o != head and o != ob and o.collision is not None and o.collision.use),
                  key=lambda o: o.name)


def read_colliders(scene, ob, depsgraph) -> tuple[list, list[ColliderMesh]]:
    """The extra colliders as the core takes them: shape, world matrix now (the rest frame) and
    the Collision settings' Outer thickness as the distance kept."""
    obs = collider_objects(scene, ob)
    meshes = []
    for o in obs:
        mesh = blender_io.read_mesh(o, depsgraph)
        meshes.append(ColliderMesh(o.name, mesh.positions, mesh.tri_verts, blender_io.evaluated_matrix(o, depsgraph),
                                   offset=o.collision.thickness_outer))
    return obs, meshes


def follow_skin_problem(ob) -> tuple[str, str] | None:
    """Why Follow Skin, ticked on ``ob``, cannot follow the skin: (a short line for the panel, the
    whole story for the bake's report), or None when it can (or is off)."""
    if not ob.hair_wig.use_scalp:
        return None
    if ob.type != "CURVES":
        return ("Follow Skin needs Curves hair",
                f"Follow Skin is on, but '{ob.name}' is a legacy Curve, which has no surface to "
                f"follow: its hair follows the head only (convert it to Curves hair to follow the skin)")
    surface = ob.data.surface
    if surface is None:
        return ("Follow Skin: the hair has no Surface",
                f"Follow Skin is on, but '{ob.name}' has no Surface (Object properties > Curves "
                f"Surface): its hair follows the head only")
    uv_map = ob.data.surface_uv_map
    if not uv_map or surface.type != "MESH" or surface.data.uv_layers.get(uv_map) is None:
        which = (f"the Surface UV Map of '{ob.name}' is empty" if not uv_map else
                 f"'{surface.name}' has no UV map '{uv_map}' (the Surface UV Map of '{ob.name}')")
        return (f"Follow Skin: '{surface.name}' has no UV map set",
                f"Follow Skin is on, but {which}: with no UV map the roots cannot find their place on "
                f"'{surface.name}', so the hair follows the head only. Give '{surface.name}' a UV map "
                f"and pick it as the hair's Surface UV Map (Object properties > Curves Surface), or "
                f"turn Follow Skin off")
    if ob.data.attributes.get("surface_uv_coordinate") is None:
        return ("Follow Skin: the roots have no surface UVs",
                f"Follow Skin is on, but the curves of '{ob.name}' have no surface UVs "
                f"(surface_uv_coordinate): in Sculpt Mode use Curves > Snap to Nearest Surface, so "
                f"each root knows where it sits on '{surface.name}'; until then the hair follows "
                f"the head only")
    return None


def magnet_objects(scene, ob) -> list:
    """The wig's magnet Empties, checked: every slot filled, every magnet in this scene."""
    obs = []
    for i, slot in enumerate(ob.hair_wig.magnets):
        m = slot.object
        if m is None:
            raise HairWigError(f"'{ob.name}': magnet slot {i + 1} is empty (its Empty was deleted); "
                               f"remove the slot")
        if scene.objects.get(m.name) is None:
            raise HairWigError(f"'{ob.name}': magnet '{m.name}' is not in scene '{scene.name}'")
        obs.append(m)
    return obs


def unevaluated(context, obs) -> list:
    """Those of ``obs`` Blender does not evaluate in this view layer — disabled in viewports (the
    monitor icon), or only in excluded or disabled collections — so their animation does not move
    them (hidden with the eye, they still move)."""
    depsgraph = context.evaluated_depsgraph_get()
    shown = {o.original.name for o in depsgraph.objects}
    return [o for o in obs if o.name not in shown]


def evaluate_magnets(context, obs) -> list:
    """Make Blender evaluate the magnets of the wigs ``obs`` that it would not (``unevaluated``):
    a magnet's effect must not depend on whether it is shown. Switches off "Disable in
    Viewports" and, for one only in excluded or disabled collections, links it into the scene's
    own collection too. Returns what to undo with :func:`restore_magnets`."""
    scene = context.scene
    empties = {m.name: m for ob in obs for m in magnet_objects(scene, ob)}
    record = []
    try:
        for m in unevaluated(context, list(empties.values())):
            if m.hide_viewport:
                m.hide_viewport = False
                record.append(("hide_viewport", m))
        context.view_layer.update()
        for m in unevaluated(context, list(empties.values())):
            scene.collection.objects.link(m)
            record.append(("linked", m))
        context.view_layer.update()
    except BaseException:
        restore_magnets(context, record)
        raise
    return record


def restore_magnets(context, record: list) -> None:
    """Undo :func:`evaluate_magnets` exactly."""
    for what, m in reversed(record):
        try:
            if what == "hide_viewport":
                m.hide_viewport = True
            elif context.scene.collection.objects.get(m.name) is m:
                context.scene.collection.objects.unlink(m)
        except ReferenceError:         # deleted meanwhile: nothing left to put back
            continue
    if record:
        context.view_layer.update()


def flat_magnets(empties, inp: FrameInput) -> list[str]:
    """The magnets whose transform this frame is scaled to nothing (a controller scaled to zero to
    hide them): Blender cannot tell how they are turned, so their pull loses its rotation. By name."""
    mats = np.asarray(inp.magnet_matrices, np.float64).reshape(-1, 4, 4)
    if not len(mats):
        return []
    size = np.abs(np.linalg.det(mats[:, :3, :3]))
    return [e.name for e, s in zip(empties, size) if s < 1e-12]


def hidden_magnet_warnings(context, ob) -> list[str]:
    """What the live preview cannot show: magnets Blender does not move (it does not evaluate
    them), by name. A bake moves them all the same."""
    empties = magnet_objects(context.scene, ob)
    return [f"magnet '{m.name}' is disabled in viewports or in an excluded collection: Blender does "
            f"not move it, so the live preview cannot (a bake does); show it to preview its effect"
            for m in unevaluated(context, empties)] + [
        f"magnet '{m.name}' has a reach that follows it: what it sweeps through moves by its last "
        f"frames of motion, which the live preview does not keep — bake to see it"
        for m in empties if m.hair_wig_magnet.reach == "FOLLOW"]


def capture_rest(context, ob) -> None:
    """Set the rest pose of a wig now: the hair's and the head's world matrices, and every magnet's
    transform in the head's space (seed 000: the magnet's rest matrix ``Mi``, taken at bind)."""
    s = ob.hair_wig
    head = require_head(ob)
    depsgraph = context.evaluated_depsgraph_get()
    head_m = blender_io.evaluated_matrix(head, depsgraph)
    for e in magnet_objects(context.scene, ob):
        capture_magnet_rest(e, head_m, depsgraph)
    blender_io.store_matrix(s, "hair_rest_matrix", blender_io.evaluated_matrix(ob, depsgraph))
    blender_io.store_matrix(s, "head_rest_matrix", head_m)
    s.rest_frame = context.scene.frame_current
    s.rest_captured = True


def capture_magnet_rest(empty, head_matrix, depsgraph) -> None:
    ms = empty.hair_wig_magnet
    blender_io.store_matrix(ms, "rest_matrix",
                            np.linalg.solve(head_matrix, blender_io.evaluated_matrix(empty, depsgraph)))
    ms.has_rest = True


def read_magnets(ob, empties, head_rest, depsgraph, selection, gravity: float, captured: bool) -> list:
    """Core magnets from the wig's Empties; their rest matrices (head-local) are the captured ones,
    or read now (at the rest frame) when the wig's rest pose was never set. ``gravity``: the
    scene's (m/s²)."""
    to_local = np.linalg.inv(head_rest)
    scale = scale_of(head_rest)          # a magnet's radius is a world distance; weights are head-local
    gravity_profile = profile_curves.read(ob.hair_wig, "gravity")
    magnets = []
    for e in empties:
        ms = e.hair_wig_magnet
        if captured:
            if not ms.has_rest:
                raise HairWigError(f"'{ob.name}': magnet '{e.name}' has no rest pose; press Set Rest Pose")
            rest = blender_io.stored_matrix(ms, "rest_matrix")
        else:
            rest = to_local @ blender_io.evaluated_matrix(e, depsgraph)
        strands = blender_io.read_strand_set(ob, ms.strand_attribute)
        if selection is not None:
            strands = selection if strands is None else strands & selection
        dynamic = None
        if ms.dynamic:
            dynamic = DynamicMagnet(mass=ms.mass, stiffness=ms.stiffness, damping=ms.damping,
                                    dynablend=ms.dynablend, substeps=ms.substeps,
                                    gravity_max=gravity * ms.gravity,
                                    gravity_profile=gravity_profile)
        magnets.append(Magnet(e.name, rest,
                              multiplier=ms.multiplier, exponent=ms.exponent, radius=ms.radius / scale,
                              falloff=profile_curves.read(ms, "falloff"), strands=strands, dynamic=dynamic,
                              follow=ms.reach == "FOLLOW", trail=ms.trail))
    return magnets


def setting_acts(s, fields: dict, name: str) -> bool:
    """Whether the layer setting ``name`` (``fields``: the layer's settings fields by name) acts
    with the wig's settings ``s``: its ``when`` holds, and the setting that ``when`` names acts
    too (Hair Friction needs the Volume, which needs Hair Against Hair on)."""
    when = fields[name].metadata.get("when")
    if when is None:
        return True
    other, value = when
    now = getattr(s, fields[other].metadata["prop"])
    return (bool(now) if value is True else now == value) and setting_acts(s, fields, other)


def layer_settings(s):
    """The settings of the wig's dynamics layer (``s.dynamics_layer``, one of ``hair_wig.LAYERS``)
    from its properties and profile curves, as the layer's settings name them. A setting naming
    a curve attribute (``reads``) has it read only while the setting acts (Wisp Attribute with
    Wisps From: Attribute): an attribute the layer does not use cannot stop a bake."""
    layer = LAYERS[s.dynamics_layer]
    values = {}
    fields = {f.name: f for f in settings_fields(layer.SETTINGS)}
    for f in fields.values():
        if "profile" in f.metadata:
            values[f.name] = profile_curves.read(s, f.metadata["profile"])
        else:
            values[f.name] = getattr(s, f.metadata["prop"])
            if f.metadata.get("reads") and values[f.name] and setting_acts(s, fields, f.name):
                # an integer curve attribute the layer reads, one value a strand (None: the hair has none)
                values[f.metadata["reads"]] = blender_io.read_strand_ints(s.id_data, values[f.name])
    try:
        return layer.SETTINGS(**values)
    except HairWigError as err:
        raise HairWigError(f"'{s.id_data.name}': {err}") from None


def attribute_problems(ob) -> list[str]:
    """What keeps the wig's dynamics layer from reading the curve attributes its acting settings
    name (``reads``: Wisp Attribute), each naming the hair and the attribute, for the panel; the
    bake refuses with the layer's own words."""
    s = ob.hair_wig
    layer = LAYERS.get(s.dynamics_layer)
    if layer is None:
        return []
    fields = {f.name: f for f in settings_fields(layer.SETTINGS)}
    out = []
    for f in fields.values():
        if not f.metadata.get("reads") or not setting_acts(s, fields, f.name):
            continue
        name = getattr(s, f.metadata["prop"])
        try:
            values = blender_io.read_strand_ints(ob, name) if name else None
        except HairWigError as err:
            out.append(str(err))
            continue
        if values is None:
            out.append(f"'{ob.name}' has no integer curve attribute '{name}' ({f.metadata['ui']['name']})")
    return out


def keyed_settings(s, key: str) -> dict:
    """The keyable settings of the dynamics layer ``key`` (the one the wig was bound with) as the
    animation has them now, by the settings' names (``FrameInput.keyed``)."""
    layer = LAYERS[key]
    return {f.name: getattr(s, f.metadata["prop"]) for f in settings_fields(layer.SETTINGS)
            if f.metadata.get("keyed")}


def read_settings(s, dynamics: bool = True) -> WigSettings:
    layer = layer_settings(s) if s.use_secondary and dynamics else None
    compression = None
    if s.compression > 0:     # α(t) = 1 − amount · c(t): 1 keeps the inward motion, 0 holds it all
        c = profile_curves.read(s, "compression")
        compression = Profile(np.stack([np.linspace(0, 1, len(c.lut)), 1.0 - s.compression * c.lut], 1),
                              "LINEAR", "compression")
    return WigSettings(
        normalisation=s.normalisation, dynamics=layer, compression=compression,
        flex=profile_curves.read(s, "flex"), length_profile=profile_curves.read(s, "length"),
        attachment=profile_curves.read(s, "attachment"),
        use_length=s.use_length, elasticity=s.elasticity, length_mode=s.length_mode,
        use_collision=s.use_collision, collision_offset=s.collision_offset,
        collision_method=s.collision_method)


class Surface:
    """The hair's surface as scalp space sees it: head-local positions and corner normals."""

    def __init__(self, surface, head):
        self.surface = surface
        self.head = head

    def to_head(self, mesh, depsgraph):
        m = np.linalg.solve(blender_io.evaluated_matrix(self.head, depsgraph),
                            blender_io.evaluated_matrix(self.surface, depsgraph))
        pos = mesh.positions @ m[:3, :3].T + m[:3, 3]
        nrm = mesh.normals @ np.linalg.inv(m[:3, :3])
        nrm /= np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-12)
        return pos, nrm

    def bind(self, source, depsgraph, rest_frame: int):
        """Roots bound to the surface's own mesh, or — when its modifiers change its topology (a
        Subdivision Surface after the armature, the usual head) — to the mesh Blender evaluates
        at the rest frame, the skin the groom lies on; each frame then follows the evaluated skin."""
        if blender_io.changes_topology(self.surface, depsgraph):
            self.rest = rest = blender_io.read_rest_surface(self.surface, source.surface_uv_map, rest_frame)
        else:
            self.rest = rest = blender_io.read_mesh(self.surface, None, source.surface_uv_map)
        pos, nrm = self.to_head(rest, depsgraph)
        self.vertex_count = len(rest.positions)
        return ScalpSpace(rest.tri_verts, rest.tri_corners, rest.tri_uv, pos, nrm,
                          source.hair.surface_uv, source.hair.name)

    def now(self, depsgraph):
        mesh = blender_io.read_mesh(self.surface, depsgraph, topology=False)
        if len(mesh.positions) != self.vertex_count:
            raise HairWigError(
                f"'{self.surface.name}': its modifiers change its vertex count from frame to frame "
                f"({self.vertex_count} at rest, {len(mesh.positions)} now), so the roots lose their "
                f"place on it; turn off Follow Skin, or keep its modifiers' topology fixed")
        return self.to_head(mesh, depsgraph)


def children_roots(context, ob):
    """The children ``ob``'s modifiers grow from its strands (Interpolate Hair Curves) at its rest
    frame (``blender_io.read_children``), for collision to keep room for (``Wig(children=...)``);
    None when it grows none or Keep Children Out is off. Read before a bake switches the modifiers
    off; leaves the scene at the rest frame, as ``bind`` does."""
    s = ob.hair_wig
    if not (s.use_collision and s.use_children_room):
        return None
    if not s.rest_captured:
        context.scene.frame_set(s.rest_frame)
    return blender_io.read_children(ob, context.evaluated_depsgraph_get())


READ_NOW = object()          # bind's children: not read beforehand, read them now


@dataclass
class Bound:
    """A wig bound to its scene: the core's ``Wig`` and the Blender objects each frame's input is
    read from (the core never holds a Blender object). ``colliders``: the objects whose matrices
    and shapes the wig's colliders follow (the head first when it collides); ``warnings``: what
    the scene keeps from working, in the artist's words."""

    wig: Wig
    head: object
    empties: list
    surface: "Surface | None"
    colliders: list
    warnings: list


def bind(context, ob, rest_points=None, dynamics: bool = True, children=READ_NOW) -> Bound:
    """The wig of ``ob`` bound to its rest pose: the captured one (Set Rest Pose), else the one at
    its rest frame (the scene's current frame is then left there). ``rest_points`` (P, 3) stands in
    for the hair's own positions (live preview keeps them while it writes over them);
    ``dynamics=False`` leaves out the secondary springs (live preview shows no dynamics).
    ``children``: ``children_roots`` as read before the hair's modifiers were switched off (None:
    there are none), else they are read now."""
    s = ob.hair_wig
    head = require_head(ob)
    scene = context.scene
    blender_io.unmute_for_frame(ob.name)      # its stack's children are read from what it evaluates
    depsgraph = context.evaluated_depsgraph_get()
    empties = magnet_objects(scene, ob)
    if not s.rest_captured:
        scene.frame_set(s.rest_frame)
    source = blender_io.read_source(ob, s.selection_attribute, depsgraph)
    if rest_points is not None:
        if len(rest_points) != source.hair.num_points:
            raise HairWigError(f"'{ob.name}' was edited while previewed: it has {source.hair.num_points} "
                               f"points, its rest pose {len(rest_points)}")
        source = replace(source, hair=replace(source.hair, points=rest_points))
    keyed = None
    if s.use_key_poses and len(s.key_poses):
        keyed, styled = build_style(ob, source.hair)
        source = replace(source, hair=styled)
    if s.rest_captured:
        hair_rest = blender_io.stored_matrix(s, "hair_rest_matrix")
        head_rest = blender_io.stored_matrix(s, "head_rest_matrix")
    else:
        hair_rest = source.matrix
        head_rest = blender_io.evaluated_matrix(head, depsgraph)
    gravity = float(np.linalg.norm(scene.gravity)) if scene.use_gravity else 0.0
    magnets = read_magnets(ob, empties, head_rest, depsgraph, source.hair.selection, gravity, s.rest_captured)
    head_mesh = None
    collider_obs, colliders = [], []
    if s.use_collision:
        mesh = blender_io.read_mesh(head, depsgraph)
        head_mesh = (mesh.positions, mesh.tri_verts)
        collider_obs, colliders = read_colliders(scene, ob, depsgraph)
        if children is READ_NOW:
            children = children_roots(context, ob)
    surface = None
    scalp = None
    skin = follow_skin_problem(ob)
    if s.use_scalp and skin is None and source.hair.surface_uv is not None:
        surface = Surface(source.surface, head)
        scalp = surface.bind(source, depsgraph, s.rest_frame)
    wig = Wig(source.hair, hair_rest, head_rest, magnets, read_settings(s, dynamics), head_mesh, scalp=scalp,
              head_name=head.name, colliders=colliders, children=children, keyed=keyed)
    if keyed is not None:
        bind_style(keyed, wig, source, hair_rest, head, head_rest, surface)
    # Each frame's input reads the colliders again: where they are, and their shape if they deform.
    warnings = [skin[1]] if skin is not None else []
    warnings += [f"'{name}' simulates '{ob.name}' again after the wig (Blender's own hair dynamics): the hair "
                 f"it shows moves twice; switch the modifier off to see the wig's motion alone"
                 for name in blender_io.simulating_modifiers(ob)]
    return Bound(wig, head, empties, surface, ([head] if head_mesh is not None else []) + collider_obs, warnings)


def bind_style(keyed, wig, source, hair_rest, head, head_rest, surface=None) -> None:
    """In-betweens of the keyed style on the scalp and out of the colliders: roots travel on the
    hair's surface by their UVs, every other point keeps out of the wig's colliders (its fields,
    in the wig's field space, with their offsets). ``surface``: the bound scalp's, if any (its
    rest mesh is not read again)."""
    style = getattr(keyed, "style", keyed)           # leaders only: their own keyed style
    if source.surface is not None and source.surface_uv_map:
        mesh = surface.rest if surface is not None else blender_io.read_mesh(
            source.surface, None, source.surface_uv_map)
        surface_rest = head_rest if source.surface == head else blender_io.matrix(source.surface)
        to_hair = np.linalg.solve(hair_rest, surface_rest)
        style.set_surface(mesh.tri_uv, mesh.tri_verts, mesh.positions @ to_hair[:3, :3].T + to_hair[:3, 3])
    if wig.colliders:
        style.set_collider([c.bound_field for c in wig.colliders], wig.to_local, [c.offset for c in wig.colliders])


def frame_input(context, ob, bound: Bound, frame: int, depsgraph=None) -> FrameInput:
    """What the wig ``bound`` needs from the scene at ``frame`` (already set and evaluated; pass
    the depsgraph from inside a handler), keyed settings (magnet weights, dynablends, the layer's
    keyed settings) as the animation has them at this frame."""
    wig, head, empties, surface = bound.wig, bound.head, bound.empties, bound.surface
    scene = context.scene
    depsgraph = context.evaluated_depsgraph_get() if depsgraph is None else depsgraph
    fps = scene.render.fps / scene.render.fps_base
    gravity = np.array(scene.gravity, dtype=np.float64) if scene.use_gravity else np.zeros(3)
    mats = np.array([blender_io.evaluated_matrix(e, depsgraph) for e in empties]).reshape(-1, 4, 4)
    inp = FrameInput(blender_io.evaluated_matrix(ob, depsgraph),
                     blender_io.evaluated_matrix(head, depsgraph), mats, dt=1.0 / fps,
                     time=frame / fps, gravity=gravity, forces=blender_io.read_force_fields(scene, depsgraph))
    # Keyable settings, as the animation has them at this frame.
    was = np.array([m.multiplier for m in wig.magnets])
    now = np.array([e.hair_wig_magnet.multiplier for e in empties])
    if not np.array_equal(was, now):
        inp.magnet_strength = np.divide(now, was, out=np.zeros_like(now), where=was > 0)
    inp.magnet_dynablend = np.array([empties[i].hair_wig_magnet.dynablend for i in wig.dynamic_index])
    if wig.layer is not None:
        inp.keyed = keyed_settings(ob.hair_wig, wig.layer.KEY)
    if surface is not None:
        inp.surface_positions, inp.surface_normals = surface.now(depsgraph)
    if wig.colliders:
        obs = bound.colliders
        inp.collider_matrices = np.array([blender_io.evaluated_matrix(o, depsgraph)
                                          for o in obs[len(obs) - wig.extra_colliders:]]).reshape(-1, 4, 4)
        inp.collider_vertices = [blender_io.read_positions(o, depsgraph) if blender_io.deforms(o) else None
                                 for o in obs]
    if wig.keyed is not None:
        inp.rest_points = wig.keyed.pose(frame)
    return inp


# ----------------------------------------------------------------------- key poses (seed 002)

def curve_attribute(cv, name: str, dtype, default):
    a = cv.attributes.get(name)
    if a is None or a.domain != "CURVE":
        return np.full(len(cv.curves), default, dtype)
    out = np.empty(len(cv.curves), dtype)
    a.data.foreach_get("value", out)
    return out


def read_key_poses(ob, leaders_only: bool = False) -> list[KeyPose]:
    """The key poses of ``ob`` as core key poses, by frame; only their leader curves if asked."""
    out = []
    for item in ob.hair_wig.key_poses:
        what = f"{ob.name} key pose at frame {item.frame}"
        if item.curves is None:
            raise HairWigError(f"'{what}' has lost its curves; re-record it")
        hair = blender_io.read_curves_data(item.curves, what)
        if leaders_only:
            keep = curve_attribute(item.curves, LEADER, bool, False)
            if not keep.any():
                raise HairWigError(f"'{what}' has no leader curves; mark leaders (Make Wisps or Mark "
                                   f"Leaders) before recording, or turn off Key Leaders Only")
            idx = np.flatnonzero(keep)
            uv = None if hair.surface_uv is None else hair.surface_uv[idx]
            out.append(KeyPose(item.frame, hair.points[curve_point_index(hair.offsets, idx)], hair.counts[idx],
                               uv, what))
        else:
            out.append(KeyPose(item.frame, hair.points, hair.counts, hair.surface_uv, what))
    return out


def style_settings(s) -> StyleSettings:
    return StyleSettings(path=s.key_path, slow_in_out=s.key_slow_in_out, unmatched=s.key_unmatched,
                         noise=s.key_noise, noise_period=s.key_noise_period, noise_seed=s.key_noise_seed)


def build_style(ob, hair: HairSet):
    """The keyed style of ``ob`` for the bind: ``(style, hair)`` where ``style.pose(frame)`` gives
    each frame's rest pose and ``hair`` is its topology posed at the first key (the hair itself
    when only leaders are keyed)."""
    s = ob.hair_wig
    if not s.use_key_leaders:
        style = KeyedStyle(read_key_poses(ob), style_settings(s), ob.name)
        # a selection attribute picks the hair's own curves: it holds when the tracks are them
        same = np.array_equal(style.counts, hair.counts) and (
            style.roots_uv is None or hair.surface_uv is None or np.array_equal(style.roots_uv, hair.surface_uv))
        return style, HairSet(style.shapes[0], style.counts, name=ob.name,
                              selection=hair.selection if same else None, surface_uv=style.roots_uv)
    style = KeyedStyle(read_key_poses(ob, leaders_only=True), style_settings(s), ob.name)
    leader_of = leaders_of(ob, hair)
    # each of the hair's leader curves to the track that starts nearest it
    track_roots = style.shapes[0][style.offsets[:-1]]
    own = np.flatnonzero(curve_attribute(ob.data, LEADER, bool, False))
    track_of = np.full(hair.num_strands, -1)
    track_of[own] = nearest(hair.points[hair.offsets[own]], track_roots)
    return LeaderFollow(style, hair, track_of[leader_of]), hair


def leaders_of(ob, hair: HairSet) -> np.ndarray:
    """(N,) the leader curve every curve follows: itself for a leader, its wisp's leader for an
    imitator, else the leader whose root is nearest (in UV when the hair has UVs)."""
    lead = curve_attribute(ob.data, LEADER, bool, False)
    if not lead.any():
        raise HairWigError(f"'{ob.name}' has no leader curves; select curves in Sculpt Mode and use "
                           f"Mark Leaders or Make Wisps")
    wisp = curve_attribute(ob.data, WISP, np.int32, -1)
    idx = np.flatnonzero(lead)
    sites = hair.surface_uv if hair.surface_uv is not None else hair.points[hair.offsets[:-1]]
    out = idx[nearest(sites, sites[idx])]
    ok = (wisp >= 0) & (wisp < hair.num_strands)
    out[ok] = wisp[ok]
    out[idx] = idx
    return out


@dataclass
class StyleJob:
    """What Style Hair styles, read from the scene (world space): the strands' ``roots``,
    start ``directions``, ``lengths`` and point ``counts``; ``uv`` (S, 2) of grown roots;
    whether the strands are new (``add``, ``replace`` the curves there were); the ``surface``
    grown on and its ``uv_map``; ``style_strands``' keyword settings; and the ``curves``
    restyled when only some are (the Sculpt Mode selection)."""
    roots: np.ndarray
    directions: np.ndarray
    lengths: np.ndarray
    counts: np.ndarray
    uv: np.ndarray | None
    add: bool
    replace: bool
    surface: object
    uv_map: str
    settings: dict
    curves: np.ndarray | None = None


def _rows_to(m: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return rows @ m[:3, :3].T + m[:3, 3]


def style_uv_problem(ob) -> tuple[str, bool] | None:
    """What keeps Grow on Scalp from attaching the roots it grows — each by its UV on the hair's
    Surface UV Map, which Deform Curves on Surface and Follow Skin read — said by name, and
    whether Style Hair refuses for it (True) or goes on, giving the hair the head's active map
    (False); None when nothing does (or when restyling, which needs no UV map)."""
    if ob.type != "CURVES" or ob.hair_wig.style.roots != "GROW":
        return None
    head, cv = head_of(ob), ob.data
    if head is None or head.type != "MESH":
        return None                                  # read_style refuses these in its own words
    if cv.surface is not None and cv.surface != head:
        return (f"'{ob.name}' would grow on '{head.name}' (the wig's Head) but its Surface is "
                f"'{cv.surface.name}', where the roots' UVs would be looked up: make them the same mesh", True)
    uv = head.data.uv_layers
    if uv.active is None:
        return (f"'{head.name}' has no UV map: hair grown on it needs one to stay attached (add one in "
                f"its UV Maps)", True)
    if cv.surface == head and cv.surface_uv_map and uv.get(cv.surface_uv_map) is None:
        return (f"'{head.name}' has no UV map '{cv.surface_uv_map}' (the Surface UV Map of '{ob.name}'): "
                f"pick one it has", True)
    if cv.surface == head and not cv.surface_uv_map:
        return (f"the Surface UV Map of '{ob.name}' is empty: grown roots take '{uv.active.name}' of "
                f"'{head.name}', and it becomes the hair's Surface UV Map", False)
    return None


def read_style(context, ob) -> StyleJob:
    """Everything Style Hair needs from the scene for hair object ``ob`` (its ``hair_wig.style``
    settings, its surface, gravity, the styling force's object or fields, the profiles)."""
    st = ob.hair_wig.style
    if ob.type != "CURVES":
        raise HairWigError(f"'{ob.name}' is a legacy Curve: Style Hair makes Curves hair "
                           "(Object > Convert > Curves)")
    grow = st.roots == "GROW"
    if not grow and len(ob.data.curves) == 0:
        raise HairWigError(f"'{ob.name}' has no curves to restyle: choose Grow on Scalp")
    head = head_of(ob)
    if head is None and (grow or st.collide or st.start == "NORMAL"):
        raise HairWigError(f"'{ob.name}' has no surface: set its Surface (or the wig's Head) to grow on, "
                           "collide with and take normals from")
    if head is not None and head.type != "MESH":
        raise HairWigError(f"'{ob.name}': its surface '{head.name}' is not a mesh")
    scene = context.scene
    depsgraph = context.evaluated_depsgraph_get()
    field = verts = mesh = None
    uv_map = ""
    if head is not None:
        if grow:
            cv = ob.data
            uv_map = cv.surface_uv_map if cv.surface is head and cv.surface_uv_map else ""
            if not uv_map:
                active = head.data.uv_layers.active
                if active is None:
                    raise HairWigError(f"'{head.name}' has no UV map: hair grown on it needs one to stay "
                                       "attached (add one in its UV Maps)")
                uv_map = active.name
        mesh = blender_io.read_mesh(head, depsgraph, uv_map, faceless=blender_io.FACES_FOR_STYLE)
        hm = blender_io.evaluated_matrix(head, depsgraph)
        verts = _rows_to(hm, mesh.positions)
        margin = st.clearance + st.volume + 0.05 * float(np.ptp(verts, axis=0).max())
        field = MeshField.of_solid(verts, mesh.tri_verts, margin=margin, name=head.name)
    gravity = np.array(scene.gravity, np.float64) * st.weight if scene.use_gravity else np.zeros(3)
    uv = None
    if grow:
        weight = None
        if st.grow_on == "SELECTED":
            weight = blender_io.read_face_selection(head, depsgraph).astype(np.float64)
            if not weight.any():
                raise HairWigError(f"No faces of '{head.name}' are selected: select the scalp in its Edit "
                                   "Mode, or grow on the Whole Surface")
        elif st.grow_on == "GROUP":
            if not st.vertex_group:
                raise HairWigError(f"'{ob.name}': choose the vertex group of '{head.name}' to grow on")
            weight = blender_io.read_vertex_weights(head, depsgraph, st.vertex_group)[mesh.tri_verts].mean(axis=1)
        inv_t = np.linalg.inv(hm[:3, :3]).T                      # normals turn by the inverse transpose
        corner_normals = (mesh.normals @ inv_t.T)[mesh.tri_corners]
        roots, normals, uv, _ = styling.grow_roots(verts, mesh.tri_verts, st.density, st.seed, weight,
                                                   mesh.tri_uv, corner_normals, points=st.points,
                                                   limit_gib=scene.hair_wig_memory_limit,
                                                   name=f"Style Hair on '{ob.name}'")
        directions = normals
        lengths = styling.strand_lengths(len(roots), st.length, st.length_random, st.seed)
        counts = np.full(len(roots), st.points, np.int64)
        layer = np.ones(len(roots), bool)
        every_root = roots
    else:
        hair = blender_io.read_hair(ob)
        points = _rows_to(blender_io.matrix(ob), hair.points.astype(np.float64))
        curves = np.arange(hair.num_strands)
        if st.only_selected:
            curves = blender_io.selected_curves(ob)
            if curves.size == 0:
                raise HairWigError(f"'{ob.name}': no curves are selected (select them in Sculpt Mode, or "
                                   "turn off Selected Curves Only)")
        every_root = points[hair.offsets[:-1]]
        layer = np.zeros(hair.num_strands, bool)
        layer[curves] = True
        first = hair.offsets[:-1][curves]
        roots = points[first]
        counts = hair.counts.astype(np.int64)[curves]
        lengths = styling.arc_lengths(points, hair.offsets)[curves]
        if np.any(lengths <= 0):
            raise HairWigError(f"'{ob.name}': curve {int(curves[np.flatnonzero(lengths <= 0)[0]])} has no "
                               "length to style")
        directions = points[first + 1] - roots
        if st.start == "NORMAL":
            _sd, _closest, outward, known = field.exact(roots)
            directions = np.where(known[:, None], outward, directions)
    settings = dict(gravity=gravity, stiffness=st.stiffness,
                    stiffness_profile=profile_curves.read(ob.hair_wig, "style_stiffness"), seed=st.seed)
    if st.force == "DIRECTION":
        d = np.array(st.force_direction, np.float64)
        if not np.linalg.norm(d) > 0:
            raise HairWigError(f"'{ob.name}': the styling force's direction is zero")
        settings["force"] = st.force_strength * d / np.linalg.norm(d)
    elif st.force == "OBJECT":
        if st.force_object is None:
            raise HairWigError(f"'{ob.name}': choose the object the styling force pulls toward")
        settings["force_at"] = styling.pull_toward(blender_io.evaluated_matrix(st.force_object, depsgraph)[:3, 3],
                                                   st.force_strength)
    elif st.force == "FIELDS":
        fields = blender_io.read_force_fields(scene, depsgraph)
        if not fields:
            raise HairWigError(f"'{ob.name}': the styling force is Force Fields, but the scene has no visible "
                               "Wind or Turbulence field")
        settings["force_at"] = styling.field_force(fields, st.force_strength)
    if st.collide:
        up = -gravity if np.linalg.norm(gravity) > 0 else np.array([0.0, 0.0, 1.0])
        layers = styling.layer_offsets(every_root, up, st.volume)[layer]      # on the whole hair's scale
        settings["collide"] = SurfaceCollide(field, st.clearance + layers)
    if st.curl == "HELIX":
        settings.update(curl_radius=st.curl_radius, curl_turns=st.curl_turns,
                        curl_radius_profile=profile_curves.read(ob.hair_wig, "curl_radius"),
                        curl_turns_profile=profile_curves.read(ob.hair_wig, "curl_turns"))
    elif st.curl == "FORCE":
        settings.update(curl_force=st.curl_strength, curl_turns=st.curl_turns)
    return StyleJob(roots, directions, lengths, counts, uv, grow, grow and st.replace, head, uv_map, settings,
                    None if grow or not st.only_selected else curves)
