"""Keyframed hairstyles (seed 002): record key poses of a Curves hair, manage them, and make wisps
of imitator strands around leaders. (Reading key poses into the in-betweened style the bake and
preview use is ``scene_reader``'s.)"""

from __future__ import annotations

import bpy
import numpy as np
from bpy.props import FloatProperty, IntProperty

from ..hair_wig import HairWigError, locate_uv
from ..hair_wig.keyposes import imitate, imitator_roots_uv, root_frames
from . import blender_io, polls, preparation, preview, scene_reader
from .scene_reader import LEADER, WISP, curve_attribute


def _hair_object(context):
    ob = context.active_object
    return ob if scene_reader.is_curves_wig(ob) else None


def _store(ob, frame: int):
    """A hidden copy of the hair's own curves (never a previewed or baked pose)."""

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
        return polls.curves_wig(cls, context)


class HAIRWIG_OT_record_key_pose(_OnHair, bpy.types.Operator):
    """Record the hair as it is now as the key pose of this frame (re-records a key pose already here)"""
    bl_idname = "hair_wig.record_key_pose"
    bl_label = "Record Key Pose"

    def execute(self, context):
        ob = _hair_object(context)
        if not preparation.gate(self):
            return {"CANCELLED"}
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
        if not polls.curves_wig(cls, context):
            return False
        if _active_key(context)[1] is None:
            return polls.refuse(cls, "Select a key pose in the list first (or record one: Record Key Pose)")
        return True


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
        if not polls.curves_wig(cls, context):
            return False
        ob = context.active_object
        if len(ob.hair_wig.key_poses) == 0:
            return polls.refuse(cls, f"'{ob.name}' has no key poses yet: Record Key Pose")
        return True

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
        sel = blender_io.selected_curves(ob)
        if sel.size == 0:
            self.report({"ERROR"}, f"'{ob.name}': no curves are selected")
            return {"CANCELLED"}
        lead = curve_attribute(ob.data, LEADER, bool, False)
        lead[sel] = True
        blender_io.set_curve_attribute(ob.data, LEADER, "BOOLEAN", lead)
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
        if not polls.curves_wig(cls, context):
            return False
        if context.mode not in {"OBJECT", "SCULPT_CURVES"}:
            return polls.refuse(cls, "Make Wisps works in Object Mode or Sculpt Mode")
        return True

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


def make_wisps(context, ob, rings: int, closeness: float, fuzziness: float, seed: int,
               curves: np.ndarray | None = None) -> int:
    """Seed 002 §2.2 on ``ob``'s selected curves (or the curves ``curves``): imitators in rings
    round each, marked as their wisps; the curves become Catmull-Rom. Returns how many curves
    were added and how many of them fell outside the UV map."""
    if blender_io.is_baked(ob):
        raise HairWigError(f"'{ob.name}' is baked: clear the bake before adding curves")
    preview.stop(ob)
    hair = blender_io.read_hair(ob)
    sel = blender_io.selected_curves(ob) if curves is None else np.asarray(curves, np.int64)
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
    lead = curve_attribute(cv, LEADER, bool, False)
    wisp = curve_attribute(cv, WISP, np.int32, -1)
    old_uv = hair.surface_uv
    n_old = hair.num_strands
    cv.add_curves(new_counts.tolist())
    pos = np.concatenate([hair.points, *pieces]).astype(np.float32)
    blender_io.write_positions(cv, pos)
    lead = np.concatenate([lead, np.zeros(len(new_counts), bool)])
    lead[sel] = True
    blender_io.set_curve_attribute(cv, LEADER, "BOOLEAN", lead)
    blender_io.set_curve_attribute(cv, WISP, "INT", np.concatenate([wisp, np.repeat(sel, per)]).astype(np.int32))
    if uv_new is not None:
        blender_io.set_curve_attribute(cv, "surface_uv_coordinate", "FLOAT2",
                             np.concatenate([old_uv, uv_new]).astype(np.float32))
    cv.set_types(type="CATMULL_ROM")
    cv.update_tag()
    return len(cv.curves) - n_old, outside


classes = (HAIRWIG_OT_record_key_pose, HAIRWIG_OT_rerecord_key_pose, HAIRWIG_OT_delete_key_pose,
           HAIRWIG_OT_jump_to_key_pose, HAIRWIG_OT_mark_leaders, HAIRWIG_OT_make_wisps)
