"""Keyframed hairstyles (seed 002): record key poses of a Curves hair, manage them, build the
in-betweened style the bake and preview use, and make wisps of imitator strands around leaders."""

from __future__ import annotations

import bpy
import numpy as np
from bpy.props import FloatProperty, IntProperty

from ..hair_wig import HairSet, HairWigError, locate_uv
from ..hair_wig.keyposes import (KeyedStyle, KeyPose, LeaderFollow, StyleSettings, curve_point_index, imitate,
                                 imitator_roots_uv, nearest, root_frames)
from . import baking, blender_io

LEADER = "hair_wig_leader"         # bool, curve domain: the curve leads a wisp (key leader strand)
WISP = "hair_wig_wisp"             # int, curve domain: the leader an imitator was made from (-1: none)


def _curve_attribute(cv, name: str, dtype, default):
    a = cv.attributes.get(name)
    if a is None or a.domain != "CURVE":
        return np.full(len(cv.curves), default, dtype)
    out = np.empty(len(cv.curves), dtype)
    a.data.foreach_get("value", out)
    return out


def _set_curve_attribute(cv, name: str, kind: str, values) -> None:
    a = cv.attributes.get(name)
    if a is None or a.domain != "CURVE" or a.data_type != kind:
        if a is not None:
            cv.attributes.remove(a)
        a = cv.attributes.new(name, kind, "CURVE")
    a.data.foreach_set("vector" if kind == "FLOAT2" else "value", np.asarray(values).ravel())


def read_key_poses(ob, leaders_only: bool = False) -> list[KeyPose]:
    """The key poses of ``ob`` as core key poses, by frame; only their leader curves if asked."""
    out = []
    for item in ob.hair_wig.key_poses:
        what = f"{ob.name} key pose at frame {item.frame}"
        if item.curves is None:
            raise HairWigError(f"'{what}' has lost its curves; re-record it")
        hair = blender_io.read_curves_data(item.curves, what)
        if leaders_only:
            keep = _curve_attribute(item.curves, LEADER, bool, False)
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
    own = np.flatnonzero(_curve_attribute(ob.data, LEADER, bool, False))
    track_of = np.full(hair.num_strands, -1)
    track_of[own] = nearest(hair.points[hair.offsets[own]], track_roots)
    return LeaderFollow(style, hair, track_of[leader_of]), hair


def leaders_of(ob, hair: HairSet) -> np.ndarray:
    """(N,) the leader curve every curve follows: itself for a leader, its wisp's leader for an
    imitator, else the leader whose root is nearest (in UV when the hair has UVs)."""
    lead = _curve_attribute(ob.data, LEADER, bool, False)
    if not lead.any():
        raise HairWigError(f"'{ob.name}' has no leader curves; select curves in Sculpt Mode and use "
                           f"Mark Leaders or Make Wisps")
    wisp = _curve_attribute(ob.data, WISP, np.int32, -1)
    idx = np.flatnonzero(lead)
    sites = hair.surface_uv if hair.surface_uv is not None else hair.points[hair.offsets[:-1]]
    out = idx[nearest(sites, sites[idx])]
    ok = (wisp >= 0) & (wisp < hair.num_strands)
    out[ok] = wisp[ok]
    out[idx] = idx
    return out


def selected_curves(ob) -> np.ndarray:
    """Curves selected in Sculpt Mode (Blender's ``.selection``), as indices."""
    if ob.data.attributes.get(".selection") is None:
        return np.arange(len(ob.data.curves))        # Blender's default: everything selected
    return np.flatnonzero(blender_io.read_strand_set(ob, ".selection"))


def _hair_object(context):
    ob = context.active_object
    return ob if baking.is_curves_wig(ob) else None


def _store(ob, frame: int):
    """A hidden copy of the hair's own curves (never a previewed or baked pose)."""
    from . import preview

    if blender_io.is_baked(ob):
        raise HairWigError(f"'{ob.name}' is baked: clear the bake before recording key poses")
    preview.stop(ob)
    cv = ob.data.copy()
    cv.name = f".{ob.name} key pose {frame}"
    for name in [a.name for a in cv.attributes if a.name.startswith(".hair_wig")]:
        cv.attributes.remove(cv.attributes[name])
    return cv


def _drop(cv) -> None:
    if cv is not None and cv.users == 0:
        bpy.data.hair_curves.remove(cv)


def _replace_curves(item, cv) -> None:
    old, item.curves = item.curves, cv
    _drop(old)


class _OnHair:
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _hair_object(context) is not None


class HAIRWIG_OT_record_key_pose(_OnHair, bpy.types.Operator):
    """Record the hair as it is now as the key pose of this frame (re-records a key pose already here)"""
    bl_idname = "hair_wig.record_key_pose"
    bl_label = "Record Key Pose"

    def execute(self, context):
        ob = _hair_object(context)
        s = ob.hair_wig
        frame = context.scene.frame_current
        try:
            cv = _store(ob, frame)
        except HairWigError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        frames = [k.frame for k in s.key_poses]
        if frame in frames:
            index = frames.index(frame)
            _replace_curves(s.key_poses[index], cv)
        else:
            item = s.key_poses.add()
            item.frame, item.curves = frame, cv
            index = sum(f < frame for f in frames)
            s.key_poses.move(len(s.key_poses) - 1, index)
        s.key_pose_index = index
        s.use_key_poses = True
        self.report({"INFO"}, f"Key pose recorded at frame {frame} ({len(cv.curves)} curves)")
        return {"FINISHED"}


def _active_key(context):
    ob = _hair_object(context)
    if ob is None:
        return None, None
    s = ob.hair_wig
    if 0 <= s.key_pose_index < len(s.key_poses):
        return ob, s.key_poses[s.key_pose_index]
    return ob, None


class _OnActiveKey:
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _active_key(context)[1] is not None


class HAIRWIG_OT_rerecord_key_pose(_OnActiveKey, bpy.types.Operator):
    """Replace the active key pose's hairstyle with the hair as it is now (its frame stays)"""
    bl_idname = "hair_wig.rerecord_key_pose"
    bl_label = "Re-record Key Pose"

    def execute(self, context):
        ob, item = _active_key(context)
        try:
            _replace_curves(item, _store(ob, item.frame))
        except HairWigError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        return {"FINISHED"}


class HAIRWIG_OT_delete_key_pose(_OnActiveKey, bpy.types.Operator):
    """Delete the active key pose"""
    bl_idname = "hair_wig.delete_key_pose"
    bl_label = "Delete Key Pose"

    def execute(self, context):
        ob, item = _active_key(context)
        s = ob.hair_wig
        _replace_curves(item, None)
        s.key_poses.remove(s.key_pose_index)
        s.key_pose_index = min(s.key_pose_index, len(s.key_poses) - 1)
        return {"FINISHED"}


class HAIRWIG_OT_jump_to_key_pose(bpy.types.Operator):
    """Go to the frame of a key pose"""
    bl_idname = "hair_wig.jump_to_key_pose"
    bl_label = "Jump to Key Pose"
    bl_options = {"REGISTER"}

    index: IntProperty(name="Key Pose", default=-1)

    @classmethod
    def poll(cls, context):
        ob = _hair_object(context)
        return ob is not None and len(ob.hair_wig.key_poses) > 0

    def execute(self, context):
        s = _hair_object(context).hair_wig
        i = s.key_pose_index if self.index < 0 else self.index
        if not 0 <= i < len(s.key_poses):
            return {"CANCELLED"}
        s.key_pose_index = i
        context.scene.frame_set(s.key_poses[i].frame)
        return {"FINISHED"}


class HAIRWIG_OT_mark_leaders(_OnHair, bpy.types.Operator):
    """Make the curves selected in Sculpt Mode the leaders that key poses drive (Key Leaders Only);
    every other curve follows its nearest leader"""
    bl_idname = "hair_wig.mark_leaders"
    bl_label = "Mark Leaders"

    def execute(self, context):
        ob = _hair_object(context)
        sel = selected_curves(ob)
        if sel.size == 0:
            self.report({"ERROR"}, f"'{ob.name}': no curves are selected")
            return {"CANCELLED"}
        lead = _curve_attribute(ob.data, LEADER, bool, False)
        lead[sel] = True
        _set_curve_attribute(ob.data, LEADER, "BOOLEAN", lead)
        self.report({"INFO"}, f"{int(lead.sum())} leader curve(s)")
        return {"FINISHED"}


class HAIRWIG_OT_make_wisps(bpy.types.Operator):
    """Grow a wisp round every selected curve: rings of eight imitator curves (N, S, E, W and the
    diagonals) that copy their leader's shape and follow its motion"""
    bl_idname = "hair_wig.make_wisps"
    bl_label = "Make Wisps"
    bl_options = {"REGISTER", "UNDO"}

    rings: IntProperty(name="Rings", description="Rings of eight imitators round each leader", default=1, min=1,
                       soft_max=4)
    closeness: FloatProperty(name="Closeness", description="Distance between rings, in the surface's UV space "
                                                           "(object units without a UV map)",
                             default=0.01, min=1e-5, soft_max=0.1)
    fuzziness: FloatProperty(name="Fuzziness", description="Random wander of the imitators' points, as a "
                                                           "fraction of the closeness", default=0.3, min=0.0,
                             max=1.0)
    seed: IntProperty(name="Seed", default=0, min=0)

    @classmethod
    def poll(cls, context):
        ob = _hair_object(context)
        return ob is not None and context.mode in {"OBJECT", "SCULPT_CURVES"}

    def execute(self, context):
        ob = _hair_object(context)
        try:
            added, outside = make_wisps(context, ob, self.rings, self.closeness, self.fuzziness, self.seed)
        except HairWigError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        if outside:
            self.report({"WARNING"}, f"{added} imitator curves added; {outside} fell past a UV seam or the UV "
                                     f"map's edge and start at their leader's root")
        else:
            self.report({"INFO"}, f"{added} imitator curves added")
        return {"FINISHED"}


def make_wisps(context, ob, rings: int, closeness: float, fuzziness: float, seed: int) -> int:
    """Seed 002 §2.2 on ``ob``'s selected curves: imitators in rings round each, marked as the
    selected curves' wisps; the curves become Catmull-Rom. Returns how many curves were added and
    how many of them fell outside the UV map."""
    if blender_io.is_baked(ob):
        raise HairWigError(f"'{ob.name}' is baked: clear the bake before adding curves")
    from . import preview
    preview.stop(ob)
    hair = blender_io.read_hair(ob)
    sel = selected_curves(ob)
    if sel.size == 0:
        raise HairWigError(f"'{ob.name}': select the leader curves in Sculpt Mode first")
    per = 8 * rings
    roots = hair.points[hair.offsets[sel]].astype(np.float64)
    cv = ob.data
    uv_new = None
    if hair.surface_uv is not None and cv.surface is not None and cv.surface_uv_map:
        uv_new = imitator_roots_uv(hair.surface_uv[sel], closeness, rings).reshape(-1, 2)
        mesh = blender_io.read_mesh(cv.surface, None, cv.surface_uv_map)
        tri, bary = locate_uv(mesh.tri_uv, uv_new, ob.name, strict=False)
        on_surface = np.einsum("nk,nkd->nd", bary, mesh.positions[mesh.tri_verts[tri]])
        to_hair = np.linalg.solve(blender_io.matrix(ob), blender_io.matrix(cv.surface))
        new_roots = on_surface @ to_hair[:3, :3].T + to_hair[:3, 3]
        # Past a UV seam or the map's edge: that imitator sits on its leader's root, UV and all,
        # rather than nowhere (counted in the report).
        off = tri < 0
        leader_of_new = np.repeat(np.arange(len(sel)), per)
        new_roots[off] = roots[leader_of_new[off]]
        uv_new[off] = hair.surface_uv[sel][leader_of_new[off]]
        outside = int(off.sum())
    else:
        outside = 0
        # no UV map: the rings lie across each leader's first segment
        frames = root_frames(hair.points, hair.offsets)[sel].astype(np.float64)
        flat = imitator_roots_uv(np.zeros((1, 2)), closeness, rings)[0]          # (per, 2)
        new_roots = (roots[:, None, :] + flat[None, :, :1] * frames[:, None, :, 0]
                     + flat[None, :, 1:] * frames[:, None, :, 1]).reshape(-1, 3)
    rng = np.random.default_rng(seed)
    counts = hair.counts[sel]
    pieces = [imitate(hair.points[hair.offsets[c]:hair.offsets[c + 1]], new_roots[i * per:(i + 1) * per],
                      fuzziness, closeness, rng).reshape(-1, 3) for i, c in enumerate(sel)]
    new_counts = np.repeat(counts, per)
    lead = _curve_attribute(cv, LEADER, bool, False)
    wisp = _curve_attribute(cv, WISP, np.int32, -1)
    old_uv = hair.surface_uv
    n_old = hair.num_strands
    cv.add_curves(new_counts.tolist())
    pos = np.concatenate([hair.points, *pieces]).astype(np.float32)
    cv.attributes["position"].data.foreach_set("vector", pos.ravel())
    lead = np.concatenate([lead, np.zeros(len(new_counts), bool)])
    lead[sel] = True
    _set_curve_attribute(cv, LEADER, "BOOLEAN", lead)
    _set_curve_attribute(cv, WISP, "INT", np.concatenate([wisp, np.repeat(sel, per)]).astype(np.int32))
    if uv_new is not None:
        _set_curve_attribute(cv, "surface_uv_coordinate", "FLOAT2",
                             np.concatenate([old_uv, uv_new]).astype(np.float32))
    cv.set_types(type="CATMULL_ROM")
    cv.update_tag()
    return len(cv.curves) - n_old, outside


classes = (HAIRWIG_OT_record_key_pose, HAIRWIG_OT_rerecord_key_pose, HAIRWIG_OT_delete_key_pose,
           HAIRWIG_OT_jump_to_key_pose, HAIRWIG_OT_mark_leaders, HAIRWIG_OT_make_wisps)
