"""Where Blender data becomes core arrays and core arrays become Blender data.

Everything that touches hair data in a .blend goes through here: reading ``Curves`` and legacy
``Curve`` objects into a :class:`HairSet`, writing a :class:`BakeCache` into the keyframed
playback structures, and clearing them again. The structures written are plain Blender data
(attributes, a geometry-nodes group, shape keys, F-curves), so a baked file plays back with
the add-on disabled or absent.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass

import bpy
import numpy as np

from ..hair_wig import BakeCache, HairSet, HairWigError, ForceField
from ..hair_wig.children import Children
from ..hair_wig.errors import FROM_ZERO
from ..hair_wig.spaces import transform_points
from . import compat

BAKE_PREFIX = ".hw_bake_"          # dot: Blender keeps such attributes out of the UI lists
LEGACY_KEY_PREFIX = "hw_bake_"
PLAYBACK_GROUP = "HairWig Playback"
PLAYBACK_VERSION = 1
MODIFIER_NAME = "HairWig Bake"
RECORD = "_hair_wig_bake"          # underscore: hidden from the Custom Properties panel
HAIR_TYPES = {"CURVES", "CURVE"}
_SPLINE_POLY, _SPLINE_BEZIER, _SPLINE_NURBS = 0, 1, 4   # Spline.type as foreach_get gives it


def matrix(ob) -> np.ndarray:
    """(4, 4) float64 world matrix of ``ob``."""
    return np.array(ob.matrix_world, dtype=np.float64)


def evaluated_matrix(ob, depsgraph) -> np.ndarray:
    return np.array(ob.evaluated_get(depsgraph).matrix_world, dtype=np.float64)


def store_matrix(owner, attr: str, m: np.ndarray) -> None:
    """Keep a (4, 4) matrix in a 16-float MATRIX property (Blender stores those column-major)."""
    setattr(owner, attr, np.asarray(m, dtype=np.float64).T.ravel().tolist())


def stored_matrix(owner, attr: str) -> np.ndarray:
    return np.array(getattr(owner, attr), dtype=np.float64).reshape(4, 4)


# --------------------------------------------------------------------------------- reading

@dataclass(frozen=True)
class HairSource:
    """A hair object as read from Blender at one moment.

    ``hair`` holds the rest strands in the object's local space; ``matrix`` is the object's
    world matrix. ``surface`` is the mesh object a ``Curves`` hair is attached to (or ``None``),
    with its world matrix and the UV map the strands' ``surface_uv_coordinate`` refers to.
    """

    hair: HairSet
    matrix: np.ndarray
    surface: object = None
    surface_matrix: np.ndarray | None = None
    surface_uv_map: str = ""


def read_source(ob, selection_attribute: str = "", depsgraph=None) -> HairSource:
    """Read ``ob``'s rest hair with its object and surface matrices (evaluated ones when a
    depsgraph is given, so that animation at the current frame is seen)."""
    hair = read_hair(ob, selection_attribute)
    mat = (lambda o: evaluated_matrix(o, depsgraph)) if depsgraph is not None else matrix
    surface = ob.data.surface if ob.type == "CURVES" else None
    return HairSource(hair, mat(ob), surface, None if surface is None else mat(surface),
                      ob.data.surface_uv_map if surface is not None else "")


def read_hair(ob, selection_attribute: str = "") -> HairSet:
    """Read the rest hair of a ``Curves`` or legacy ``Curve`` object (its original data,
    not what modifiers or a bake make of it).

    ``selection_attribute`` names an optional boolean (or float, as Blender's own ``.selection``)
    attribute on the curve or point domain; a strand is selected when any of its points is.
    """
    if ob is None or ob.type not in HAIR_TYPES:
        kind = "nothing" if ob is None else f"a {ob.type.lower()} object"
        raise HairWigError(f"'{getattr(ob, 'name', '?')}' is {kind}, not hair (Curves or Curve)")
    if ob.type == "CURVES":
        return _read_curves(ob, selection_attribute)
    if selection_attribute:
        raise HairWigError(
            f"'{ob.name}': legacy Curve objects have no attributes; clear the selection "
            f"attribute '{selection_attribute}'")
    points, counts, _ = _legacy_arrays(ob)
    return HairSet(points, counts, name=ob.name)


def _curve_offsets(cv) -> np.ndarray:
    """(N + 1,) int32 first point of every curve of a Curves datablock, and the point count."""
    offsets = np.zeros(len(cv.curves) + 1, dtype=np.int32)
    if len(cv.curves):          # a Curves datablock without curves stores no offsets at all
        cv.curve_offset_data.foreach_get("value", offsets)
    return offsets


def no_curves(ob) -> tuple[str, str] | None:
    """Why hair object ``ob`` holds nothing for a wig to animate: (a short line for the panel,
    the whole story with what to do), or None when it has curves. Hair made by modifiers (Quick
    Fur without its guides applied, Generate Hair Curves) shows curves in the viewport that the
    object itself does not hold."""
    count = len(ob.data.curves) if ob.type == "CURVES" else len(ob.data.splines)
    if count:
        return None
    makers = [m.name for m in ob.modifiers if m.type == "NODES"]
    if makers:
        return (f"No curves of its own: apply '{makers[0]}'",
                f"'{ob.name}' holds no curves of its own: the hair you see is made by its modifiers "
                f"(first '{makers[0]}'). hair_wig animates the curves the object holds: apply "
                f"'{makers[0]}' (the modifier's menu > Apply) to turn what it makes into curves — "
                f"with Quick Fur these are its guides, and the rest of the stack still makes the "
                f"children from them")
    return ("No curves yet: add hair first",
            f"'{ob.name}' has no curves yet: add hair first (Sculpt Mode: the Add or Density brush)")


def _read_curves(ob, selection_attribute: str) -> HairSet:
    problem = no_curves(ob)
    if problem is not None:
        raise HairWigError(problem[1])
    return read_curves_data(ob.data, ob.name, selection_attribute)


def read_curves_data(cv, name: str, selection_attribute: str = "") -> HairSet:
    """A ``Curves`` datablock (an object's hair, or a recorded key pose) as a hair set named
    ``name`` in messages."""
    n = len(cv.curves)
    if n == 0:
        raise HairWigError(f"'{name}' has no hair curves")
    offsets = _curve_offsets(cv)
    counts = np.diff(offsets)
    points = np.empty(int(offsets[-1]) * 3, dtype=np.float32)
    cv.attributes["position"].data.foreach_get("vector", points)
    uv = None
    a = cv.attributes.get("surface_uv_coordinate")
    if a is not None and a.domain == "CURVE" and a.data_type == "FLOAT2":
        uv = np.empty(n * 2, dtype=np.float32)
        a.data.foreach_get("vector", uv)
        uv = uv.reshape(n, 2)
    selection = None
    if selection_attribute:
        selection = _read_selection(cv, name, selection_attribute, offsets)
    return HairSet(points.reshape(-1, 3), counts, name=name, selection=selection, surface_uv=uv)


def _read_selection(cv, owner: str, name: str, offsets: np.ndarray) -> np.ndarray:
    a = cv.attributes.get(name)
    if a is None:
        raise HairWigError(f"'{owner}' has no attribute '{name}' to select strands with")
    if a.data_type not in {"BOOLEAN", "FLOAT"} or a.domain not in {"CURVE", "POINT"}:
        raise HairWigError(
            f"'{owner}': selection attribute '{name}' is {a.data_type} on {a.domain}; it must "
            f"be a boolean or float attribute on the curve or point domain")
    vals = np.empty(len(a.data), dtype=bool if a.data_type == "BOOLEAN" else np.float32)
    a.data.foreach_get("value", vals)
    vals = vals > 0
    if a.domain == "POINT":
        vals = np.logical_or.reduceat(vals, offsets[:-1])
    return vals


def _legacy_arrays(ob):
    """Control points of a legacy Curve, flat, plus bezier handles when its splines are bezier.

    Returns ``points (P, 3) float32``, ``counts (N,) int32``, and ``None`` or the pair of handle
    arrays ``(left, right)``, each (P, 3). The per-spline loop runs once at bind, never per frame
    (``foreach_get`` on each spline's point collection; there is no flat accessor for curves).
    """
    cu = ob.data
    splines = cu.splines
    n = len(splines)
    if n == 0:
        raise HairWigError(f"'{ob.name}' has no splines")
    types = np.empty(n, dtype=np.int32)
    splines.foreach_get("type", types)
    counts = np.empty(n, dtype=np.int32)
    splines.foreach_get("point_count_u", counts)
    bezier = types == _SPLINE_BEZIER
    if bezier.any() and not bezier.all():
        raise HairWigError(
            f"'{ob.name}' mixes bezier splines with poly/NURBS splines; convert them to one type "
            f"(Curve > Set Spline Type) to use it as hair")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    if bezier.all():
        co = np.empty(total * 3, dtype=np.float32)
        left = np.empty_like(co)
        right = np.empty_like(co)
        for i, sp in enumerate(splines):
            s = slice(3 * offsets[i], 3 * offsets[i + 1])
            sp.bezier_points.foreach_get("co", co[s])
            sp.bezier_points.foreach_get("handle_left", left[s])
            sp.bezier_points.foreach_get("handle_right", right[s])
        return co.reshape(-1, 3), counts, (left.reshape(-1, 3), right.reshape(-1, 3))
    co4 = np.empty(total * 4, dtype=np.float32)
    for i, sp in enumerate(splines):
        sp.points.foreach_get("co", co4[4 * offsets[i]:4 * offsets[i + 1]])
    return np.ascontiguousarray(co4.reshape(-1, 4)[:, :3]), counts, None


@dataclass(frozen=True)
class MeshArrays:
    """A mesh as arrays, in its object's local space.

    positions (V, 3) float64; normals (C, 3) float64 face-corner normals; tri_verts and
    tri_corners (T, 3) int64; tri_uv (T, 3, 2) float64 or None.
    """

    positions: np.ndarray
    normals: np.ndarray
    tri_verts: np.ndarray
    tri_corners: np.ndarray
    tri_uv: np.ndarray | None


FACES_FOR_WIG = ("hair cannot collide with it or follow its skin; give it faces, or turn off Collide with "
                 "Head and Follow Skin")
FACES_FOR_STYLE = ("Style Hair grows hair on a surface's faces, slides it over them and takes their normals; "
                   "give it faces, or pick another surface")


def read_mesh(ob, depsgraph=None, uv_map: str = "", topology: bool = True, faceless: str = FACES_FOR_WIG) -> MeshArrays:
    """Read ``ob``'s mesh: the original data (no shape keys or modifiers) without a depsgraph,
    what Blender evaluates now with one. ``topology=False`` skips triangles and UVs (per frame).
    ``faceless``: what a mesh without faces cannot do, for the error."""
    if ob is None or ob.type != "MESH":
        raise HairWigError(f"'{getattr(ob, 'name', '?')}' is not a mesh object")
    mesh = ob.evaluated_get(depsgraph).data if depsgraph is not None else ob.data
    v = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", v)
    n = np.empty(len(mesh.loops) * 3, dtype=np.float32)
    mesh.corner_normals.foreach_get("vector", n)
    tri_verts = tri_corners = tri_uv = None
    if topology:
        tris = mesh.loop_triangles
        if len(tris) == 0:
            raise HairWigError(f"'{ob.name}' has no faces: {faceless}")
        tv = np.empty(len(tris) * 3, dtype=np.int32)
        tc = np.empty(len(tris) * 3, dtype=np.int32)
        tris.foreach_get("vertices", tv)
        tris.foreach_get("loops", tc)
        tri_verts, tri_corners = tv.reshape(-1, 3).astype(np.int64), tc.reshape(-1, 3).astype(np.int64)
        if uv_map:
            layer = mesh.uv_layers.get(uv_map)
            if layer is None:
                raise HairWigError(f"'{ob.name}' has no UV map '{uv_map}' (the hair's surface UV map)")
            uv = np.empty(len(mesh.loops) * 2, dtype=np.float32)
            layer.uv.foreach_get("vector", uv)
            tri_uv = uv.reshape(-1, 2).astype(np.float64)[tri_corners]
    return MeshArrays(v.reshape(-1, 3).astype(np.float64), n.reshape(-1, 3).astype(np.float64),
                      tri_verts, tri_corners, tri_uv)


def changes_topology(ob, depsgraph) -> bool:
    """Whether ``ob``'s modifiers give it another mesh than its own (Subdivision Surface, …)."""
    return len(ob.evaluated_get(depsgraph).data.vertices) != len(ob.data.vertices)


def read_rest_surface(ob, uv_map: str, frame: int) -> MeshArrays:
    """The skin hair attaches to when ``ob``'s modifiers change its topology: the mesh Blender
    evaluates (subdivided, say) at the wig's rest ``frame``, which is what the groom lies on.
    (Blender's Deform Curves on Surface takes the ``rest_position`` attribute instead, which a
    Subdivision Surface interpolates off its limit surface: it moves a groom 1 % of the head at
    rest.) The scene's frame is back as it was afterwards."""
    scene = bpy.context.scene
    with frame_kept(scene):
        if (scene.frame_current, scene.frame_subframe) != (int(frame), 0.0):
            scene.frame_set(int(frame))
        return read_mesh(ob, bpy.context.evaluated_depsgraph_get(), uv_map)


@contextlib.contextmanager
def frame_kept(scene):
    """Whatever frame the block sets, the scene's frame and sub-frame are back as they were after
    it (set again only where they changed: a frame set costs an evaluation of the scene)."""
    now = (scene.frame_current, scene.frame_subframe)
    try:
        yield
    finally:
        if (scene.frame_current, scene.frame_subframe) != now:
            scene.frame_set(now[0], subframe=now[1])


def write_positions(cv, points: np.ndarray) -> None:
    """Set the points of ``Curves`` data ``cv`` to ``points`` (P, 3) float32. Through
    ``position_data``: on Blender 5.2 a write through ``attributes['position']`` makes the next
    depsgraph update of 160k points take 21 ms instead of 0.7 (BLENDER_NOTES)."""
    cv.position_data.foreach_set("vector", np.ascontiguousarray(points, np.float32).ravel())


def span_of(offsets: np.ndarray, curves: np.ndarray) -> np.ndarray:
    """The point indices of ``curves`` (R,), curve after curve, in a hair of curve ``offsets``."""
    offsets = np.asarray(offsets, np.int64)
    counts = offsets[np.asarray(curves) + 1] - offsets[curves]
    start = np.repeat(offsets[curves] - np.r_[0, np.cumsum(counts)[:-1]], counts)
    return start + np.arange(int(counts.sum()))


def set_curve_attribute(cv, name: str, kind: str, values) -> None:
    """Write a CURVE-domain attribute of ``Curves`` data (made, or remade with the right type)."""
    a = cv.attributes.get(name)
    if a is None or a.domain != "CURVE" or a.data_type != kind:
        if a is not None:
            cv.attributes.remove(a)
        a = cv.attributes.new(name, kind, "CURVE")
    a.data.foreach_set("vector" if kind == "FLOAT2" else "value", np.asarray(values).ravel())


def read_face_selection(ob, depsgraph) -> np.ndarray:
    """(T,) whether each of the evaluated mesh's triangles lies in a face selected in Edit Mode."""
    mesh = ob.evaluated_get(depsgraph).data
    sel = np.empty(len(mesh.polygons), bool)
    mesh.polygons.foreach_get("select", sel)
    face = np.empty(len(mesh.loop_triangles), np.int32)
    mesh.loop_triangles.foreach_get("polygon_index", face)
    return sel[face]


def read_vertex_weights(ob, depsgraph, group: str) -> np.ndarray:
    """(V,) the evaluated mesh's weights in vertex group ``group`` (0 where a vertex is not in it)."""
    vg = ob.vertex_groups.get(group)
    if vg is None:
        raise HairWigError(f"'{ob.name}' has no vertex group '{group}'")
    mesh = ob.evaluated_get(depsgraph).data
    w = np.zeros(len(mesh.vertices))
    for v in mesh.vertices:            # once per Style Hair, not per frame: the API has no array of them
        for g in v.groups:
            if g.group == vg.index:
                w[v.index] = g.weight
    return w


def write_styled(ob, points: np.ndarray, counts: np.ndarray, uv: np.ndarray | None, add: bool,
                 replace: bool, surface=None, uv_map: str = "", curves: np.ndarray | None = None) -> None:
    """Style Hair's output into ``Curves`` object ``ob``: ``points`` (P, 3, world) in curves of
    ``counts`` (S,). Restyled (``add`` False): the same curves take the new points. Grown:
    the curves are added (after removing the ones there were, ``replace``) with their
    ``surface_uv_coordinate`` ``uv`` (S, 2); a hair without a surface is given ``surface`` and
    ``uv_map``, a hair on ``surface`` without a Surface UV Map ``uv_map``. ``curves`` (R,): the
    restyled curves when not all of them (``points`` theirs)."""
    cv = ob.data
    to_local = np.linalg.inv(matrix(ob))
    local = np.asarray(points, np.float64) @ to_local[:3, :3].T + to_local[:3, 3]
    if not add:
        if curves is not None:
            hair = read_curves_data(cv, ob.name)
            whole = hair.points.astype(np.float64)
            whole[span_of(hair.offsets, curves)] = local
            local = whole
        write_positions(cv, local)
        cv.update_tag()
        return
    kept = None
    if replace and len(cv.curves):
        cv.remove_curves()
    elif len(cv.curves):
        kept = read_curves_data(cv, ob.name)            # added to: the curves there are keep their attributes
    if surface is not None and (cv.surface is None or (cv.surface == surface and not cv.surface_uv_map)):
        cv.surface = surface                        # and the map the roots' UVs are on, if it has none
        cv.surface_uv_map = uv_map
    cv.add_curves(np.asarray(counts).tolist())
    write_positions(cv, local if kept is None else np.concatenate([kept.points, local]))
    if uv is not None:
        old_uv = None if kept is None else (kept.surface_uv if kept.surface_uv is not None
                                            else np.zeros((kept.num_strands, 2)))
        set_curve_attribute(cv, "surface_uv_coordinate", "FLOAT2",
                            np.asarray(uv if old_uv is None else np.concatenate([old_uv, uv]), np.float32))
    cv.update_tag()


def read_positions(ob, depsgraph) -> np.ndarray:
    """The evaluated vertex positions (V, 3) of a mesh object, in its own space."""
    mesh = ob.evaluated_get(depsgraph).data
    v = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", v)
    return v.reshape(-1, 3).astype(np.float64)


def deforms(ob) -> bool:
    """Whether a mesh object's shape can change from frame to frame: shape keys, or modifiers
    (armature, lattice, cloth …) other than the Collision modifier."""
    return ob.data.shape_keys is not None or any(m.type != "COLLISION" for m in ob.modifiers)


FIELD_KINDS = ("WIND", "TURBULENCE", "DRAG")


def read_force_fields(scene, depsgraph) -> list:
    """The scene's Wind, Turbulence and Drag force fields as core force fields (world space)."""
    forces = []
    for ob in scene.objects:
        field = ob.field
        if field is None or field.type not in FIELD_KINDS or not ob.visible_get():
            continue
        m = evaluated_matrix(ob, depsgraph)
        forces.append(ForceField(
            position=m[:3, 3].copy(), direction=m[:3, 2] / max(np.linalg.norm(m[:3, 2]), 1e-12),
            strength=float(field.strength), shape="PLANE" if field.shape == "PLANE" else "POINT",
            falloff_power=float(field.falloff_power),
            min_distance=float(field.distance_min) if field.use_min_distance else 0.0,
            max_distance=float(field.distance_max) if field.use_max_distance else np.inf,
            noise=float(field.noise), seed=int(field.seed), kind=field.type,
            size=float(field.size), global_coords=bool(field.use_global_coords),
            linear_drag=float(field.linear_drag), quadratic_drag=float(field.quadratic_drag)))
    return forces


def read_strand_set(ob, attribute: str) -> np.ndarray | None:
    """(N,) bool strands picked by a boolean/float attribute of a Curves hair object."""
    if not attribute:
        return None
    if ob.type != "CURVES":
        raise HairWigError(f"'{ob.name}': legacy Curve objects have no attribute '{attribute}'")
    return _read_selection(ob.data, ob.name, attribute, _curve_offsets(ob.data))


def read_strand_ints(ob, attribute: str) -> np.ndarray | None:
    """(N,) int64 one value a strand of the integer (or float, rounded) curve attribute
    ``attribute`` of a Curves hair object, or None where it has no such curve attribute."""
    if ob.type != "CURVES":
        raise HairWigError(f"'{ob.name}': legacy Curve objects have no attribute '{attribute}'")
    attr = ob.data.attributes.get(attribute)
    if attr is None or attr.domain != "CURVE":
        return None
    if attr.data_type not in ("INT", "INT8", "FLOAT", "BOOLEAN"):
        kind = attr.bl_rna.properties["data_type"].enum_items[attr.data_type].name      # as Blender's UI says it
        raise HairWigError(f"'{ob.name}': its attribute '{attribute}' holds {kind} values, not one number a "
                           "strand")
    n = len(ob.data.curves)
    if attr.data_type == "FLOAT":
        out = np.empty(n, np.float32)
        attr.data.foreach_get("value", out)
        return np.rint(out).astype(np.int64)
    out = np.empty(n, np.int32 if attr.data_type != "BOOLEAN" else bool)
    attr.data.foreach_get("value", out)
    return out.astype(np.int64)


def selected_curves(ob) -> np.ndarray:
    """Curves selected in Sculpt Mode (Blender's ``.selection``), as indices."""
    if ob.data.attributes.get(".selection") is None:
        return np.arange(len(ob.data.curves))        # Blender's default: everything selected
    return np.flatnonzero(read_strand_set(ob, ".selection"))


def read_evaluated_points(ob, depsgraph) -> np.ndarray:
    """(P, 3) float32 positions of ``ob``'s curves as Blender evaluates them now (after
    modifiers, shape keys and any bake), in the object's local space."""
    ob_eval = ob.evaluated_get(depsgraph)
    geometry = ob_eval.evaluated_geometry()    # keep a reference, or the curves are freed under us
    curves = geometry.curves
    if curves is None:
        raise HairWigError(f"'{ob.name}' evaluates to no curves")
    out = np.empty(len(curves.points) * 3, dtype=np.float32)
    curves.attributes["position"].data.foreach_get("vector", out)
    return out.reshape(-1, 3)


def read_children(ob, depsgraph) -> Children | None:
    """The hair grown from hair object ``ob``'s strands as guides, as it evaluates now: every
    evaluated curve's root (in its local space; its own strands' among them) and whether its
    Interpolate Hair Curves modifier turns the guides' shapes with the surface normal — or None
    when it evaluates to no more curves than it holds (no children: nothing to keep room for)
    or is a legacy Curve."""
    if ob.type != "CURVES":
        return None
    geometry = ob.evaluated_get(depsgraph).evaluated_geometry()
    curves = geometry.curves
    if curves is None or len(curves.curves) <= len(ob.data.curves):
        return None
    offsets = _curve_offsets(curves)
    out = np.empty(len(curves.points) * 3, dtype=np.float32)
    curves.attributes["position"].data.foreach_get("vector", out)
    return Children(out.reshape(-1, 3)[offsets[:-1]], _follows_normal(ob))


def _follows_normal(ob) -> bool:
    """Whether a shown geometry-nodes modifier of ``ob`` with a *Follow Surface Normal* input
    (Interpolate Hair Curves) has it on."""
    for md in ob.modifiers:
        if md.type != "NODES" or md.node_group is None or not md.show_viewport:
            continue
        for item in md.node_group.interface.items_tree:
            if (item.item_type == "SOCKET" and item.in_out == "INPUT"
                    and item.name == "Follow Surface Normal"):
                return bool(compat.modifier_input(md, item.identifier))
    return False


# --------------------------------------------------------------------------------- writing

def is_baked(ob) -> bool:
    return RECORD in ob.keys()


def edited_since_bake(ob) -> tuple[int, int] | None:
    """(baked, now) point counts when the hair was edited after it was baked, else None."""
    rec = ob.get(RECORD)
    if rec is None or "points" not in rec:
        return None
    now = int(_rest_counts(ob).sum())
    return None if now == int(rec["points"]) else (int(rec["points"]), now)


def bake_range(ob) -> tuple[int, int] | None:
    rec = ob.get(RECORD)
    return (int(rec["first"]), int(rec["last"])) if rec is not None else None


def outdated(ob) -> list[tuple[int, int]]:
    """The frame ranges of the bake on ``ob`` that a re-bake of frames before them left with the
    motion of an earlier run of the dynamics (``baking.rebake_frames``)."""
    rec = ob.get(RECORD)
    return [] if rec is None else [(int(a), int(b)) for a, b in rec.get("outdated", [])]


def mark_outdated(ob, ranges) -> None:
    """Record ``ranges`` ((first, last) pairs) as the bake's outdated frames (``outdated``); a
    bake written since holds none."""
    if ranges:
        ob[RECORD]["outdated"] = [list(r) for r in ranges]


def read_bake(ob):
    """The bake stored on ``ob`` read back exactly as it was written: ``(first, last)``, the
    positions (F, P, 3) float32 and the dynamic magnets' paths (name -> (F, 3))."""
    rec = ob.get(RECORD)
    if rec is None:
        raise HairWigError(f"'{ob.name}' has no bake")
    if rec["kind"] == "DISK":
        raise HairWigError(f"'{ob.name}' is baked to disk ({rec['path']}): Blender plays it from there; bake "
                           "it again to change frames")
    first, last = int(rec["first"]), int(rec["last"])
    points = int(rec["points"])
    out = np.empty((last - first + 1, points, 3), np.float32)
    for i, f in enumerate(range(first, last + 1)):
        if rec["kind"] == "CURVES":
            data = ob.data.attributes.get(f"{BAKE_PREFIX}{f}")
            field = "vector"
        else:
            key = ob.data.shape_keys
            data = None if key is None else key.key_blocks.get(f"{LEGACY_KEY_PREFIX}{f}")
            field = "co"
        if data is None or len(data.data) != points:
            raise HairWigError(f"'{ob.name}': the bake's frame {f} is missing or damaged; bake again")
        data.data.foreach_get(field, out[i].ravel())
    paths = {name: np.array(path, np.float64).reshape(-1, 3) for name, path in rec.get("magnets", {}).items()}
    return (first, last), out, paths


def check_bakeable(ob) -> None:
    """Refuse, before any work is done, objects a bake could not be written into safely."""
    if ob.type not in HAIR_TYPES:
        raise HairWigError(f"'{ob.name}' is not a hair object (Curves or Curve)")
    if ob.data.users > 1:
        raise HairWigError(
            f"'{ob.name}' shares its data '{ob.data.name}' with {ob.data.users - 1} other user(s); "
            f"make it single-user (Object > Relations > Make Single User) before baking")
    if ob.type == "CURVE" and ob.data.shape_keys is not None and not is_baked(ob):
        raise HairWigError(
            f"'{ob.name}' has shape keys of its own; hair_wig bakes legacy curves into shape keys "
            f"and will not overwrite them")


def write_bake(ob, cache: BakeCache) -> None:
    """Store ``cache`` on ``ob`` so Blender's timeline plays it back, replacing any earlier bake.

    ``Curves``: one hidden point attribute per frame and a geometry-nodes modifier, first in the
    stack, whose keyframed Frame input picks (and blends between) them. Legacy ``Curve``:
    absolute shape keys, one per frame, with a keyframed evaluation time. Either way the
    keyframes are linear, so a sub-frame shows the blend of its neighbouring frames, and they
    extrapolate constantly, so the frames before and after the bake hold its first and last.
    """
    check_bakeable(ob)
    cache.check_finite()
    counts = _rest_counts(ob)
    swap = getattr(cache, "new_topology", False) and ob.type == "CURVES"
    if swap:
        clear_bake(ob)
        if np.array_equal(_rest_counts(ob), cache.hair.counts):
            swap = False
    if not swap and not np.array_equal(counts, cache.hair.counts):
        if counts.size == cache.hair.num_strands:
            i = int(np.flatnonzero(counts != cache.hair.counts)[0])
            detail = f"strand {i} has {counts[i]} points, the bake {cache.hair.counts[i]}{FROM_ZERO}"
        else:
            detail = (f"it has {counts.size} strands and {int(counts.sum())} points, the bake "
                      f"{cache.hair.num_strands} and {cache.hair.num_points}")
        raise HairWigError(f"'{ob.name}' was edited after the bake was computed: {detail}; bake again")
    clear_bake(ob)
    original = None
    try:
        original = _swap_in_topology(ob, cache.hair) if swap else None
        if ob.type == "CURVES":
            _write_curves(ob, cache)
            if original is not None:
                ob[RECORD]["original_data"] = original.name
        else:
            _write_legacy(ob, cache)
        ob[RECORD]["magnets"] = {name: path.astype(np.float64).ravel().tolist()
                                 for name, path in cache.magnet_paths.items()}
    except BaseException:
        clear_bake(ob)
        if original is not None and ob.data is not original:
            _swap_back(ob, original)
        raise


def _swap_in_topology(ob, hair: HairSet):
    """Give ``ob`` new curve data with the topology of ``hair`` (a keyframed hairstyle whose key
    poses differ in curves or points), keeping its own data untouched, with a fake user, for
    ``clear_bake`` to give back."""
    original = ob.data
    cv = bpy.data.hair_curves.new(f"{original.name} Key Poses")
    cv.add_curves(hair.counts.tolist())
    write_positions(cv, hair.points)
    cv.surface = original.surface
    cv.surface_uv_map = original.surface_uv_map
    types = original.attributes.get("curve_type")         # absent: all Catmull-Rom, the default
    if types is not None and len(types.data):
        kinds = np.empty(len(types.data), np.int8)
        types.data.foreach_get("value", kinds)
        names = ("CATMULL_ROM", "POLY", "BEZIER", "NURBS")
        common = int(np.bincount(kinds, minlength=4).argmax())
        cv.set_types(type=names[common] if common < 4 else "POLY")
    for m in original.materials:
        cv.materials.append(m)
    original.use_fake_user = True
    ob.data = cv
    return original


def _swap_back(ob, original) -> None:
    made = ob.data
    ob.data = original
    original.use_fake_user = False
    if made is not original and made.users == 0:
        bpy.data.hair_curves.remove(made)


def baked_magnet_position(ob, magnet_name: str, frame: float) -> np.ndarray | None:
    """Where a dynamic magnet acted at ``frame`` in the bake of ``ob`` (world space), if baked."""
    rec = ob.get(RECORD)
    if rec is None or magnet_name not in rec.get("magnets", {}):
        return None
    path = np.array(rec["magnets"][magnet_name], dtype=np.float64).reshape(-1, 3)
    i = int(np.clip(round(frame) - int(rec["first"]), 0, len(path) - 1))
    return path[i]


def baked_frame(ob, frame: float) -> np.ndarray | None:
    """(P, 3) float32 the points of the bake stored in ``ob``'s .blend at the frame nearest
    ``frame`` (its first or last outside it), as stored: in the object's space, or — hair whose
    own stack carries it with the skin (Quick Fur) — in the skin's rest space, which differs from
    what the stack shows by how the skin itself deformed since the rest frame (``_stored_frame``).
    None when it holds no such bake (none, or on disk)."""
    rec = ob.get(RECORD)
    if rec is None or rec["kind"] != "CURVES":
        return None
    f = int(np.clip(round(frame), int(rec["first"]), int(rec["last"])))
    data = ob.data.attributes.get(f"{BAKE_PREFIX}{f}")
    if data is None or len(data.data) != int(rec["points"]):
        return None
    out = np.empty(len(data.data) * 3, np.float32)
    data.data.foreach_get("vector", out)
    return out.reshape(-1, 3)


def point_count(ob) -> int:
    """How many points the hair of ``ob`` has now (what a bake stores per frame)."""
    return int(_rest_counts(ob).sum())


def _rest_counts(ob) -> np.ndarray:
    """(N,) points per strand of the hair as it is now, read without reading positions."""
    if ob.type == "CURVES":
        return np.diff(_curve_offsets(ob.data))
    counts = np.empty(len(ob.data.splines), dtype=np.int32)
    ob.data.splines.foreach_get("point_count_u", counts)
    return counts


def _stored_frame(cache: BakeCache, f: int, strand: np.ndarray) -> np.ndarray:
    """Frame ``f`` as the bake stores it (``strand``: each point's strand): in the surface's rest
    space where the cache has the skin's motion (``to_surface_rest``)."""
    i = f - cache.first
    skin = cache.skin[i] if cache.skin is not None else None
    if skin is None or cache.stored[i]:
        return cache.frame(f)
    return to_surface_rest(cache.frame(f), skin, strand)


def to_surface_rest(points: np.ndarray, skin: tuple, strand: np.ndarray) -> np.ndarray:
    """Positions of hair whose own stack carries it with the skin, as that stack expects them: in
    the surface's rest space, each strand moved back by its root frame's change,
    ``q = R_fᵀ (p − o_f) + o_0`` in the head's space (SPEC §2), which Blender's stack then applies
    again — to the guides and to the children it grows from them. ``skin``: a frame's
    ``(R_f, o_0, o_f, head_from_hair)`` (``frames.FrameRecord.skin``)."""
    rot, o0, o1, head_from_hair = skin
    q = transform_points(points.astype(np.float64), head_from_hair)
    q -= o1[strand]
    q = np.einsum("pji,pj->pi", rot[strand].astype(np.float64), q)
    q += o0[strand]
    return transform_points(q, np.linalg.inv(head_from_hair)).astype(np.float32)


def _write_curves(ob, cache: BakeCache) -> None:
    cv = ob.data
    rest_space = cache.skin is not None
    # The record goes first so that clear_bake can find a half-written bake.
    ob[RECORD] = {"kind": "CURVES", "first": cache.first, "last": cache.last, "points": cache.hair.num_points,
                  "action_created": False, "disabled": [], "space": "SURFACE_REST" if rest_space else "OBJECT"}
    strand = cache.hair.strand_of_point() if rest_space else None
    for f in cache.frames:
        attr = cv.attributes.new(f"{BAKE_PREFIX}{f}", "FLOAT_VECTOR", "POINT")
        attr.data.foreach_set("vector", _stored_frame(cache, f, strand).ravel())
    group = playback_group()
    md = ob.modifiers.new(MODIFIER_NAME, "NODES")
    md.node_group = group
    # First, before anything that adds or removes curves. A new modifier goes in before any that
    # is pinned last (Blender 5.2's Quick Fur pins its Hair Dynamics), so move it from where it is.
    ob.modifiers.move(ob.modifiers.find(md.name), 0)
    ids = {item.name: item.identifier for item in group.interface.items_tree
           if item.item_type == "SOCKET" and item.in_out == "INPUT"}
    compat.set_modifier_input(md, ids["Frame"], float(cache.first))
    compat.set_modifier_input(md, ids["Last"], cache.last)
    # In rest space the stack's own surface deformation puts the hair on the skin; otherwise the
    # bake already has the skin's motion and such modifiers would add it a second time.
    ob[RECORD]["disabled"] = [] if rest_space else _disable_surface_deform(ob, md)
    ob[RECORD]["action_created"] = _key_linear(
        ob, compat.modifier_input_path(md, ids["Frame"]), cache.frames,
        np.arange(cache.first, cache.last + 1, dtype=np.float32), f"{ob.name} HairWig Bake")


def _write_legacy(ob, cache: BakeCache) -> None:
    _, _, handles = _legacy_arrays(ob)
    ob[RECORD] = {"kind": "CURVE", "first": cache.first, "last": cache.last, "points": cache.hair.num_points,
                  "action_created": False, "disabled": []}
    basis = ob.shape_key_add(name="Basis", from_mix=False)
    key = ob.data.shape_keys
    key.use_relative = False
    basis.interpolation = "KEY_LINEAR"
    rest = cache.hair.points
    key_frames = np.empty(cache.num_frames, dtype=np.float32)
    for i, f in enumerate(cache.frames):
        kb = ob.shape_key_add(name=f"{LEGACY_KEY_PREFIX}{f}", from_mix=False)
        kb.interpolation = "KEY_LINEAR"
        pos = cache.frame(f)
        kb.data.foreach_set("co", pos.ravel())
        if handles is not None:
            moved = pos - rest     # handles move with their control point
            kb.data.foreach_set("handle_left", (handles[0] + moved).ravel())
            kb.data.foreach_set("handle_right", (handles[1] + moved).ravel())
        key_frames[i] = kb.frame      # absolute keys sit at 10, 20, ... (with float drift)
    ob[RECORD]["disabled"] = _disable_surface_deform(ob, None)
    ob[RECORD]["action_created"] = _key_linear(
        key, "eval_time", cache.frames, key_frames, f"{ob.name} HairWig Bake")


def _key_linear(id_data, data_path: str, frames: range, values: np.ndarray, action_name: str) -> bool:
    """Key ``data_path`` of ``id_data`` with ``values`` at ``frames``, linear, held outside.

    Uses the ID's current action when it has one. Returns whether a new action was made.
    """
    ad = id_data.animation_data or id_data.animation_data_create()
    created = ad.action is None
    if created:
        ad.action = bpy.data.actions.new(action_name)
    fc = ad.action.fcurve_ensure_for_datablock(id_data, data_path)
    fc.keyframe_points.clear()
    n = len(frames)
    fc.keyframe_points.add(n)
    co = np.empty((n, 2), dtype=np.float32)
    co[:, 0] = np.arange(frames.start, frames.stop, dtype=np.float32)
    co[:, 1] = values
    fc.keyframe_points.foreach_set("co", co.ravel())
    linear = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value
    fc.keyframe_points.foreach_set("interpolation", np.full(n, linear, dtype=np.int32))
    fc.extrapolation = "CONSTANT"
    fc.update()
    return created


def _uses_node(group, kinds: tuple, seen=None) -> bool:
    """Whether a node group holds a node of one of ``kinds`` (bl_idname), nested groups included."""
    seen = set() if seen is None else seen
    if group is None or group.name in seen:
        return False
    seen.add(group.name)
    for node in group.nodes:
        if node.bl_idname in kinds:
            return True
        if node.bl_idname == "GeometryNodeGroup" and _uses_node(node.node_tree, kinds, seen):
            return True
    return False


_DEFORMS_ON_SURFACE = ("GeometryNodeDeformCurvesOnSurface",)
# Deform Curves on Surface, or (Blender 5.2's Interpolate Hair Curves) sampling the surface by UV
_ATTACHES_BY_UV = ("GeometryNodeDeformCurvesOnSurface", "GeometryNodeSampleUVSurface")


def simulating_modifiers(ob) -> list[str]:
    """The shown geometry-nodes modifiers of ``ob`` that simulate on their own (a Simulation zone,
    nested groups included: Blender's Hair Dynamics, which Quick Fur adds on 5.x): they run after
    the wig, on what it writes, so the hair Blender shows moves twice."""
    return [md.name for md in ob.modifiers
            if md.type == "NODES" and (md.show_viewport or md.show_render) and not _is_playback_group(md.node_group)
            and _uses_node(md.node_group, _SIMULATES)]


_SIMULATES = ("GeometryNodeSimulationOutput",)


def attaches_to_surface(ob) -> bool:
    """Whether ``ob``'s own modifier stack carries its curves with the skin of their surface
    (Quick Fur's: Surface Deform on 4.5, Interpolate Hair Curves on 5.2). Such a stack expects the
    hair in the surface's rest space and moves it — guides and children alike — onto the skin;
    it can only when the surface keeps its rest positions (Add Rest Position, which Quick Fur
    switches on: without it Blender's Deform Curves on Surface passes the hair through)."""
    surface = ob.data.surface if ob.type == "CURVES" else None
    return surface is not None and surface.add_rest_position_attribute and any(
        md.type == "NODES" and (md.show_viewport or md.show_render) and not _is_playback_group(md.node_group)
        and _uses_node(md.node_group, _ATTACHES_BY_UV) for md in ob.modifiers)


def _disable_surface_deform(ob, own_modifier) -> list:
    """Switch off modifiers that would move the baked hair a second time; return what to restore."""
    record = []
    for md in ob.modifiers:
        if md == own_modifier or md.type != "NODES" or not (md.show_viewport or md.show_render):
            continue
        if _uses_node(md.node_group, _DEFORMS_ON_SURFACE):
            record.append([md.persistent_uid, int(md.show_viewport), int(md.show_render)])
            md.show_viewport = False
            md.show_render = False
    return record


def mute_modifiers(obs, leave=frozenset()) -> list:
    """Switch off, in the viewport, every modifier of ``obs`` (hair being baked) and return what to
    switch back with :func:`unmute_modifiers`; ``leave``: the paths of modifiers' visibility to
    leave alone (``modifiers["name"].show_viewport``).

    A bake reads the hair's own curves and its object matrix, never what its modifiers make of it,
    while ``frame_set`` re-evaluates every shown modifier at every frame: Quick Fur's stack
    (Interpolate Hair Curves, noise, frizz ...) costs far more than the wig itself. Modifiers the
    user had switched off are left alone; nothing else about them is touched.
    """
    record = []
    for ob in obs:
        for md in ob.modifiers:
            if md.show_viewport and not (leave and md.path_from_id("show_viewport") in leave):
                record.append((ob, md.persistent_uid))
                md.show_viewport = False
    return record


_muted_for_frame: dict[str, list] = {}      # hair name -> the modifiers switched off, for one frame change
MUTED_FOR_FRAME = "_hair_wig_muted"         # on the hair object meanwhile: their persistent ids


def mute_for_frame(obs) -> None:
    """Switch off the viewport modifiers of hair shown live (``obs``) for the first evaluation of a
    frame change, until :func:`unmute_for_frame`.

    Blender evaluates a new frame, calls the frame-change handlers, and evaluates again whatever
    they changed. The live preview writes the hair in its handler, so without this the hair's whole
    stack (Quick Fur's children, noise, frizz: far more than the wig's own frame) ran twice a frame,
    the first time on the frame before's hair, never shown. The preview reads only the hair's own
    curves and its object matrix, and a binding that needs the stack's children switches it back
    on first (``scene_reader.bind``). A modifier whose visibility is keyed or driven is left to its
    animation. The object keeps the list of what was switched off meanwhile, so a state saved or
    recorded for undo before it is switched back (a frame change whose handlers were cut short)
    gets it back when loaded (:func:`restore_muted`)."""
    for ob in obs:
        if ob.name in _muted_for_frame:
            continue
        record = mute_modifiers([ob], leave=_animated_visibility(ob))
        if record:
            _muted_for_frame[ob.name] = record
            ob[MUTED_FOR_FRAME] = [uid for _, uid in record]


def unmute_for_frame(name: str | None = None) -> bool:
    """Switch back on what :func:`mute_for_frame` switched off, for hair ``name`` (None: all);
    whether there was any."""
    names = list(_muted_for_frame) if name is None else [name]
    records = [_muted_for_frame.pop(n) for n in names if n in _muted_for_frame]
    for record in records:
        unmute_modifiers(record)
        try:
            ob = record[0][0]
            if MUTED_FOR_FRAME in ob:
                del ob[MUTED_FOR_FRAME]
        except ReferenceError:          # the object was deleted meanwhile
            pass
    return any(records)


def restore_muted(objects) -> None:
    """Switch back on the modifiers :func:`mute_for_frame` left a list of on ``objects`` (a file
    or an undo state saved between a frame's two evaluations, now loaded: what was kept of the
    objects before is gone)."""
    _muted_for_frame.clear()
    for ob in objects:
        uids = ob.get(MUTED_FOR_FRAME)
        if uids is None:
            continue
        uids = set(uids)
        for md in ob.modifiers:
            if md.persistent_uid in uids:
                md.show_viewport = True
        del ob[MUTED_FOR_FRAME]


def _animated_visibility(ob) -> set:
    """The paths of ``ob``'s modifiers' viewport visibility that an action (its own or an NLA
    strip's) keys or a driver drives."""
    ad = ob.animation_data
    if ad is None:
        return set()
    actions = [ad.action] + [strip.action for track in ad.nla_tracks for strip in track.strips]
    curves = [fc for action in actions if action is not None for fc in compat.action_fcurves(action)]
    return {fc.data_path for fc in [*curves, *ad.drivers] if fc.data_path.endswith(".show_viewport")}


def unmute_modifiers(record: list) -> None:
    """Switch back on what :func:`mute_modifiers` switched off (found by their persistent ids, so
    a renamed or reordered modifier comes back too; one that was deleted meanwhile is skipped)."""
    for ob, uid in record:
        try:
            md = next((m for m in ob.modifiers if m.persistent_uid == uid), None)
        except ReferenceError:          # the object itself was deleted
            continue
        if md is not None:
            md.show_viewport = True


def clear_bake(ob) -> bool:
    """Remove every piece of bake data from ``ob`` and restore what the bake switched off.

    Returns whether there was a bake. The rest positions were never overwritten by the bake,
    so the hair is back exactly as it was.
    """
    rec = ob.get(RECORD)
    if rec is None:
        return False
    rec = rec.to_dict()
    if rec["kind"] == "DISK":
        _clear_disk_cache(ob, rec)
    elif rec["kind"] == "CURVES":
        names = {md.name for md in ob.modifiers
                 if md.type == "NODES" and _is_playback_group(md.node_group)}
        _remove_fcurves(ob, lambda path: any(path.startswith(f'modifiers["{n}"]') for n in names),
                        rec["action_created"])
        for name in names:
            group = ob.modifiers[name].node_group
            ob.modifiers.remove(ob.modifiers[name])
            if group is not None and group.users == 0:
                bpy.data.node_groups.remove(group)
        attrs = ob.data.attributes
        for name in [a.name for a in attrs if a.name.startswith(BAKE_PREFIX)]:
            attrs.remove(attrs[name])
    else:
        key = ob.data.shape_keys
        if key is not None:
            _remove_fcurves(key, lambda path: path == "eval_time", rec["action_created"])
            ob.shape_key_clear()
    by_uid = {md.persistent_uid: md for md in ob.modifiers}
    for uid, show_viewport, show_render in rec["disabled"]:
        md = by_uid.get(uid)
        if md is not None:
            md.show_viewport = bool(show_viewport)
            md.show_render = bool(show_render)
    original = rec.get("original_data")
    del ob[RECORD]
    if original is not None and original in bpy.data.hair_curves:
        _swap_back(ob, bpy.data.hair_curves[original])
    return True


def _remove_fcurves(id_data, matches, action_created: bool) -> None:
    from bpy_extras import anim_utils

    ad = id_data.animation_data
    if ad is None or ad.action is None:
        return
    action = ad.action
    bag = anim_utils.action_get_channelbag_for_slot(action, ad.action_slot)
    if bag is not None:
        for fc in [fc for fc in bag.fcurves if matches(fc.data_path)]:
            bag.fcurves.remove(fc)
    if action_created and _action_is_empty(action):
        ad.action = None
        bpy.data.actions.remove(action)
        if not ad.drivers and not ad.nla_tracks:
            id_data.animation_data_clear()


def _action_is_empty(action) -> bool:
    return not compat.action_fcurves(action)


# ------------------------------------------------------------------------- playback group

def _is_playback_group(group) -> bool:
    return group is not None and group.get("hair_wig_playback") == PLAYBACK_VERSION


def playback_group():
    """The geometry-nodes group that plays a bake back; built once per file, shared by all
    baked hair objects.

    Inputs: Frame (float, keyframed) and Last (the last baked frame). It reads the point
    attributes of frames ``floor(Frame)`` and ``min(floor(Frame) + 1, Last)``, blends them by the
    fraction of Frame, sets the positions, and removes every bake attribute from its output.
    """
    for group in bpy.data.node_groups:
        if _is_playback_group(group) and group.bl_idname == "GeometryNodeTree":
            return group
    g = bpy.data.node_groups.new(PLAYBACK_GROUP, "GeometryNodeTree")
    g["hair_wig_playback"] = PLAYBACK_VERSION
    g.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    g.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    frame = g.interface.new_socket("Frame", in_out="INPUT", socket_type="NodeSocketFloat")
    frame.description = "Baked frame to show; keyframed by hair_wig, fractions blend neighbours"
    last = g.interface.new_socket("Last", in_out="INPUT", socket_type="NodeSocketInt")
    last.description = "Last baked frame"
    nodes, links = g.nodes, g.links
    g_in = nodes.new("NodeGroupInput")
    g_out = nodes.new("NodeGroupOutput")

    def math(op, a, b=None):
        node = nodes.new("ShaderNodeMath")
        node.operation = op
        links.new(a, node.inputs[0])
        if isinstance(b, (int, float)):
            node.inputs[1].default_value = b
        elif b is not None:
            links.new(b, node.inputs[1])
        return node.outputs[0]

    def baked_position(frame_number):
        to_text = nodes.new("FunctionNodeValueToString")
        links.new(frame_number, to_text.inputs["Value"])
        prefix = nodes.new("FunctionNodeInputString")
        prefix.string = BAKE_PREFIX
        join = nodes.new("GeometryNodeStringJoin")
        # A multi-input lists the last link first: link the number, then the prefix.
        links.new(to_text.outputs[0], join.inputs["Strings"])
        links.new(prefix.outputs[0], join.inputs["Strings"])
        attr = nodes.new("GeometryNodeInputNamedAttribute")
        attr.data_type = "FLOAT_VECTOR"
        links.new(join.outputs[0], attr.inputs["Name"])
        return attr.outputs["Attribute"]

    this = math("FLOOR", g_in.outputs["Frame"])
    fraction = math("SUBTRACT", g_in.outputs["Frame"], this)
    following = math("MINIMUM", math("ADD", this, 1.0), g_in.outputs["Last"])
    mix = nodes.new("ShaderNodeMix")
    mix.data_type = "VECTOR"
    links.new(fraction, mix.inputs[0])
    links.new(baked_position(this), mix.inputs[4])
    links.new(baked_position(following), mix.inputs[5])
    set_pos = nodes.new("GeometryNodeSetPosition")
    links.new(g_in.outputs["Geometry"], set_pos.inputs["Geometry"])
    links.new(mix.outputs[1], set_pos.inputs["Position"])
    remove = nodes.new("GeometryNodeRemoveAttribute")
    compat.set_wildcard_pattern(remove)
    remove.inputs["Name"].default_value = BAKE_PREFIX + "*"
    links.new(set_pos.outputs[0], remove.inputs["Geometry"])
    links.new(remove.outputs[0], g_out.inputs["Geometry"])
    for i, node in enumerate(nodes):     # legible if someone opens it in the node editor
        node.location = (200 * (i % 8), -200 * (i // 8))
    return g


def read_grease_pencil_strokes(ob, frame: int) -> list[tuple[str, np.ndarray, np.ndarray | None]]:
    """The strokes of Grease Pencil object ``ob`` (Blender 4.5's and 5.2's Grease Pencil) shown
    at ``frame`` on its visible layers, in drawing order: ``(label, points (K, 3) world, times
    (K,) seconds from the stroke's start or None when the drawing kept none)``; ``label`` names
    the stroke for messages ("stroke 3 of layer 'Lines'")."""
    if ob is None or ob.type != "GREASEPENCIL":
        raise HairWigError(f"'{getattr(ob, 'name', '?')}' is not a Grease Pencil object")
    out = []
    world = matrix(ob)
    for layer in ob.data.layers:
        if layer.hide:
            continue
        drawing = None
        for f in sorted(layer.frames, key=lambda f: f.frame_number):
            if f.frame_number <= frame:
                drawing = f.drawing
        if drawing is None or len(drawing.strokes) == 0:
            continue
        m = world @ np.array(layer.matrix_local, dtype=np.float64)
        n = len(drawing.attributes["position"].data)
        pos = np.empty(n * 3, np.float32)
        drawing.attributes["position"].data.foreach_get("vector", pos)
        pos = pos.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
        times = None
        if "delta_time" in drawing.attributes:
            times = np.empty(n, np.float32)
            drawing.attributes["delta_time"].data.foreach_get("value", times)
        offsets = np.empty(len(drawing.strokes) + 1, np.int32)
        drawing.curve_offsets.foreach_get("value", offsets)
        for k in range(len(drawing.strokes)):
            a, b = int(offsets[k]), int(offsets[k + 1])
            t = None if times is None else times[a:b].astype(np.float64)
            if t is not None and not np.any(np.diff(t) > 0):
                t = None                   # drawn without timing (made by script, or a line tool)
            out.append((f"stroke {k + 1} of layer '{layer.name}'", pos[a:b], t))
    return out


def camera_view(scene):
    """The scene's active camera as a view: ``(eye (3,), forward (3,), perspective)``, world."""
    cam = scene.camera
    if cam is None:
        raise HairWigError(f"scene '{scene.name}' has no active camera to draw from")
    m = matrix(cam)
    forward = -m[:3, 2] / np.linalg.norm(m[:3, 2])
    return m[:3, 3].copy(), forward, getattr(cam.data, "type", "PERSP") != "ORTHO"


def region_view(region_3d):
    """A 3D viewport's view: ``(eye (3,), forward (3,), perspective)``, world."""
    m = np.linalg.inv(np.array(region_3d.view_matrix, dtype=np.float64))
    forward = -m[:3, 2] / np.linalg.norm(m[:3, 2])
    return m[:3, 3].copy(), forward, bool(region_3d.is_perspective)


def world_mesh(ob, depsgraph=None, uv_map: str = "") -> MeshArrays:
    """``read_mesh`` with the positions in world space."""
    mesh = read_mesh(ob, depsgraph, uv_map)
    m = matrix(ob) if depsgraph is None else evaluated_matrix(ob, depsgraph)
    return dataclasses.replace(mesh, positions=mesh.positions @ m[:3, :3].T + m[:3, 3])


def remove_curves(ob, curves) -> None:
    """Remove the curves ``curves`` (indices) of hair ``ob``; the others keep their points and
    attributes."""
    ob.data.remove_curves(indices=[int(c) for c in curves])
    ob.data.update_tag()


STREAM_MODIFIER = "HairWig Stream"
CACHE_MODIFIER = "HairWig Disk Cache"


def add_stream_modifier(ob):
    """A do-nothing geometry-nodes modifier that reads the scene time, so Blender's exporters
    take ``ob`` for animated and sample it every frame (a disk bake writes each frame's positions
    into the hair's data as the exporter reaches it). Returns it; ``remove_stream_modifier``."""
    tree = bpy.data.node_groups.new(".HairWig Stream", "GeometryNodeTree")
    tree.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    tree.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    gi, go = tree.nodes.new("NodeGroupInput"), tree.nodes.new("NodeGroupOutput")
    time = tree.nodes.new("GeometryNodeInputSceneTime")
    never = tree.nodes.new("FunctionNodeCompare")
    never.data_type, never.operation = "FLOAT", "LESS_THAN"
    never.inputs[1].default_value = -1e30                 # time is never below it: the geometry as it is
    pick = tree.nodes.new("GeometryNodeSwitch")
    pick.input_type = "GEOMETRY"
    tree.links.new(time.outputs["Seconds"], never.inputs[0])
    tree.links.new(never.outputs[0], pick.inputs["Switch"])
    tree.links.new(gi.outputs[0], pick.inputs["False"])
    tree.links.new(gi.outputs[0], pick.inputs["True"])
    tree.links.new(pick.outputs[0], go.inputs[0])
    md = ob.modifiers.new(STREAM_MODIFIER, "NODES")
    md.node_group = tree
    return md


def remove_stream_modifier(ob, md) -> None:
    tree = md.node_group
    ob.modifiers.remove(md)
    if tree is not None and tree.users == 0:
        bpy.data.node_groups.remove(tree)


def install_disk_cache(ob, path: str, first: int, last: int, points: int) -> None:
    """Play the Alembic cache at ``path`` (as the user gave it: ``//`` relative to the .blend) on
    ``ob`` with Blender's own Mesh Sequence Cache modifier, first in the stack, and record the
    disk bake (``clear_bake`` takes the modifier off; the file stays for Undo)."""
    # Blender makes a cache file only by importing one: import, keep its cache file and path, drop
    # what it imported
    before = set(bpy.data.objects)
    view_layer = bpy.context.view_layer
    active, selected = view_layer.objects.active, [o for o in view_layer.objects if o.select_get()]
    bpy.ops.wm.alembic_import(filepath=bpy.path.abspath(path), set_frame_range=False)
    made = [o for o in bpy.data.objects if o not in before]
    source = next((m for o in made for m in o.modifiers if m.type == "MESH_SEQUENCE_CACHE"), None)
    if source is None:
        for o in made:
            bpy.data.objects.remove(o)
        raise HairWigError(f"{path}: Blender could not read the cache it wrote")
    cache_file, pick = source.cache_file, source.object_path
    for o in made:
        data = o.data
        bpy.data.objects.remove(o)
        if data is not None and data.users == 0 and isinstance(data, bpy.types.Curves):
            bpy.data.hair_curves.remove(data)
    cache_file.filepath = path
    for o in selected:
        o.select_set(True)
    view_layer.objects.active = active
    ob[RECORD] = {"kind": "DISK", "first": first, "last": last, "points": points, "path": path,
                  "cache_file": cache_file.name, "action_created": False, "disabled": []}
    md = ob.modifiers.new(CACHE_MODIFIER, "MESH_SEQUENCE_CACHE")
    md.cache_file = cache_file
    md.object_path = pick
    ob.modifiers.move(ob.modifiers.find(md.name), 0)
    ob[RECORD]["disabled"] = _disable_surface_deform(ob, md)


def _clear_disk_cache(ob, rec: dict) -> None:
    for md in [m for m in ob.modifiers if m.type == "MESH_SEQUENCE_CACHE" and m.name.startswith(CACHE_MODIFIER)]:
        ob.modifiers.remove(md)
    cache_file = bpy.data.cache_files.get(rec.get("cache_file", ""))
    if cache_file is not None and cache_file.users == 0:
        bpy.data.batch_remove([cache_file])
    # The file stays: Undo brings the modifier back, and it must find its file. A new bake to
    # the same path replaces it.
