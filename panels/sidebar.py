"""The "Hair Wig" tab of the 3D Viewport sidebar."""

import bpy

from ..operators import baking, blender_io, preparation, preview, profile_curves, scene_reader
from ..hair_wig import LAYERS
from ..hair_wig.dynamics_layer import settings_fields
from ..operators.properties import active_magnet
from . import overlay


class VIEW3D_PT_hair_wig(bpy.types.Panel):
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Hair Wig"
    bl_label = "Hair Wig"

    @classmethod
    def poll(cls, context):
        ob = context.active_object
        return ob is not None and ob.type in blender_io.HAIR_TYPES

    def draw(self, context):
        layout = self.layout
        ob = context.active_object
        s = ob.hair_wig
        preparation.draw(layout)
        empty = blender_io.no_curves(ob)
        if empty is not None:
            layout.label(text=empty[0], icon="ERROR")
        if not s.enabled:
            layout.operator("hair_wig.enable", icon="CURVES")
            return
        layout.use_property_split = True
        layout.prop(s, "enabled")
        layout.prop(s, "head")
        gone = scene_reader.deleted_head(ob)
        if gone is not None:
            layout.label(text=gone, icon="ERROR")
        row = layout.row(align=True)
        row.prop(s, "rest_frame")
        row.operator("hair_wig.set_rest_pose", text="", icon="ARMATURE_DATA")
        if ob.type == "CURVES":
            layout.prop_search(s, "selection_attribute", ob.data, "attributes")
            layout.operator("hair_wig.preview", icon="HIDE_OFF", depress=preview.is_previewing(ob))


class _WigSubPanel:
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Hair Wig"
    bl_parent_id = "VIEW3D_PT_hair_wig"

    @classmethod
    def poll(cls, context):
        return scene_reader.is_wig(context.active_object)


def list_with_buttons(layout, list_type, owner, items, index, add, remove, extra):
    """A UI list of ``owner.items`` with add and remove buttons beside it, then ``extra``
    (operator, icon)."""
    row = layout.row()
    row.template_list(list_type, "", owner, items, owner, index, rows=3)
    col = row.column(align=True)
    col.operator(add, icon="ADD", text="")
    col.operator(remove, icon="REMOVE", text="")
    col.separator()
    col.operator(extra[0], icon=extra[1], text="")


class HAIRWIG_UL_magnets(bpy.types.UIList):
    """The wig's magnets: the Empty's name, and whether it is dynamic."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):
        empty = item.object
        if empty is None:
            layout.label(text="(deleted)", icon="ERROR")
            return
        layout.prop(empty, "name", text="", emboss=False,
                    icon="FORCE_HARMONIC" if empty.hair_wig_magnet.dynamic else "EMPTY_AXIS")
        layout.prop(empty.hair_wig_magnet, "dynamic", text="", icon="PHYSICS")


class VIEW3D_PT_hair_wig_magnets(_WigSubPanel, bpy.types.Panel):
    bl_label = "Magnets"

    def draw(self, context):
        layout = self.layout
        s = context.active_object.hair_wig
        list_with_buttons(layout, "HAIRWIG_UL_magnets", s, "magnets", "magnet_index",
                          "hair_wig.add_magnet", "hair_wig.remove_magnet",
                          ("hair_wig.select_magnet", "RESTRICT_SELECT_OFF"))
        layout.use_property_split = True
        layout.prop(s, "normalisation")
        empty = active_magnet(s)
        if empty is None:
            return
        m = empty.hair_wig_magnet
        col = layout.column(align=True)
        col.prop(m, "multiplier")
        col.prop(m, "exponent")
        col.prop(m, "radius")
        col = layout.column(align=True)
        col.prop(m, "reach")
        if m.reach == "FOLLOW":
            col.prop(m, "trail")
        draw_profile(layout, m, "falloff")
        layout.prop(m, "strand_attribute")
        layout.prop(m, "dynamic")
        if m.dynamic:
            col = layout.column(align=True)
            for name in ("mass", "stiffness", "damping", "dynablend", "substeps", "gravity"):
                col.prop(m, name)


def draw_profile(layout, owner, name):
    """A profile's curve widget with its preset buttons (or the button that makes the curves)."""
    title, what, _default = (profile_curves.MAGNET_PROFILES | profile_curves.WIG_PROFILES)[name]
    node = profile_curves.node(owner, name)
    box = layout.box()
    box.label(text=f"{title}: {what}")
    if node is None:
        box.operator("hair_wig.add_profiles", icon="FCURVE")
        return
    box.template_curve_mapping(node, "mapping")
    row = box.row(align=True)
    for preset, text in (("LINEAR", "Linear"), ("CONSTANT", "Constant"), ("EASE", "Ease"),
                         ("EASE_OUT", "Ease Out"), ("RESET", "Reset")):
        op = row.operator("hair_wig.profile_preset", text=text)
        op.profile, op.preset = name, preset


class VIEW3D_PT_hair_wig_profiles(_WigSubPanel, bpy.types.Panel):
    bl_label = "Profiles"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        s = context.active_object.hair_wig
        for name in profile_curves.WIG_PROFILES:
            if name not in profile_curves.DYNAMICS_PROFILES + profile_curves.STYLE_PROFILES:
                draw_profile(self.layout, s, name)


class VIEW3D_PT_hair_wig_dynamics(_WigSubPanel, bpy.types.Panel):
    bl_label = "Dynamics"

    def draw_header(self, context):
        self.layout.prop(context.active_object.hair_wig, "use_secondary", text="")

    def draw(self, context):
        layout = self.layout
        ob = context.active_object
        s = ob.hair_wig
        layout.use_property_split = True
        draw_live(layout, ob)
        layout = layout.column()
        layout.active = s.use_secondary
        layout.prop(s, "dynamics_layer")
        layer = LAYERS.get(s.dynamics_layer)
        if layer is None:
            return
        curves = []
        fields = {f.name: f for f in settings_fields(layer.SETTINGS)}
        for f in fields.values():
            if "profile" in f.metadata:
                curves.append(f.metadata["profile"])
                continue
            row = layout
            if f.metadata.get("when") is not None:
                row = layout.column()
                row.active = scene_reader.setting_acts(s, fields, f.name)
            if f.metadata.get("reads") and ob.type == "CURVES":     # a curve attribute, picked from the hair's
                row.prop_search(s, f.metadata["prop"], ob.data, "attributes")
            else:
                row.prop(s, f.metadata["prop"])
        for problem in scene_reader.attribute_problems(ob):
            layout.label(text=problem, icon="ERROR")
        for name in curves:
            draw_profile(layout, s, name)
        if s.dynamics_layer == overlay.WISPS:
            layout.prop(s, "show_wisps")


def draw_live(layout, ob) -> None:
    """Live Dynamics: the checkbox, the cache's budget and its status line (or why it cannot run)."""
    s = ob.hair_wig
    box = layout.box()
    if ob.type != "CURVES":
        box.label(text="Live dynamics plays Curves hair; legacy curves show their dynamics in a bake",
                  icon="INFO")
        return
    row = box.row(align=True)
    row.prop(s, "use_live_dynamics")
    row.operator("hair_wig.clear_live_cache", text="", icon="TRASH")
    col = box.column()
    col.active = s.use_live_dynamics
    col.prop(s, "live_memory")
    text = preview.status(ob)
    if text:
        stopped = "stopped" in text or "legacy" in text or "baked" in text
        col.label(text=text, icon="ERROR" if stopped else "PHYSICS")
    elif s.use_live_dynamics:
        col.label(text="Play or step the timeline to simulate", icon="PLAY")
    for warning in preview.live_warnings(ob):
        col.label(text=warning, icon="ERROR")


class VIEW3D_PT_hair_wig_refinement(_WigSubPanel, bpy.types.Panel):
    bl_label = "Refinement"

    def draw(self, context):
        layout = self.layout
        s = context.active_object.hair_wig
        layout.use_property_split = True
        layout.prop(s, "use_scalp")
        skin = scene_reader.follow_skin_problem(context.active_object)
        if skin is not None:
            layout.label(text=skin[0], icon="ERROR")
        layout.prop(s, "compression")
        layout.prop(s, "use_length")
        col = layout.column()
        col.active = s.use_length
        col.prop(s, "elasticity")
        col.prop(s, "length_mode")
        layout.prop(s, "use_collision")
        col = layout.column()
        col.active = s.use_collision
        col.prop(s, "collision_method")
        col.prop(s, "collision_offset")
        col.prop(s, "use_children_room")
        others = [o.name for o in scene_reader.collider_objects(context.scene, context.active_object)]
        col.label(text=("Also: " + ", ".join(others[:3]) + (" …" if len(others) > 3 else "")) if others
                  else "Other colliders: meshes with Collision physics", icon="MOD_PHYSICS")


class HAIRWIG_UL_key_poses(bpy.types.UIList):
    """Key poses by frame: the frame (edit it to retime), curve count, and a jump button."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):
        row = layout.row(align=True)
        here = item.frame == context.scene.frame_current
        row.prop(item, "frame", text="", emboss=False, icon="KEYFRAME_HLT" if here else "KEYFRAME")
        count = len(item.curves.curves) if item.curves is not None else 0
        row.label(text=f"{count} curves" if item.curves is not None else "lost", icon="NONE" if count else "ERROR")
        row.operator("hair_wig.jump_to_key_pose", text="", icon="TIME", emboss=False).index = index


class VIEW3D_PT_hair_wig_key_poses(_WigSubPanel, bpy.types.Panel):
    bl_label = "Key Poses"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        ob = context.active_object
        return scene_reader.is_curves_wig(ob)

    def draw_header(self, context):
        self.layout.prop(context.active_object.hair_wig, "use_key_poses", text="")

    def draw(self, context):
        layout = self.layout
        s = context.active_object.hair_wig
        list_with_buttons(layout, "HAIRWIG_UL_key_poses", s, "key_poses", "key_pose_index",
                          "hair_wig.record_key_pose", "hair_wig.delete_key_pose",
                          ("hair_wig.rerecord_key_pose", "FILE_REFRESH"))
        layout.use_property_split = True
        col = layout.column()
        col.active = s.use_key_poses
        col.prop(s, "key_path")
        col.prop(s, "key_slow_in_out")
        col.prop(s, "key_unmatched")
        sub = col.column(align=True)
        sub.prop(s, "key_noise")
        sub.prop(s, "key_noise_period")
        sub.prop(s, "key_noise_seed")
        col.prop(s, "use_key_leaders")
        row = layout.row(align=True)
        row.operator("hair_wig.mark_leaders")
        row.operator("hair_wig.make_wisps")


class VIEW3D_PT_hair_wig_bake(_WigSubPanel, bpy.types.Panel):
    bl_label = "Bake"

    def draw(self, context):
        layout = self.layout
        ob = context.active_object
        s = ob.hair_wig
        layout.use_property_split = True
        layout.prop(s, "use_scene_range")
        col = layout.column(align=True)
        col.enabled = not s.use_scene_range
        col.prop(s, "frame_start")
        col.prop(s, "frame_end")
        baked = blender_io.bake_range(ob)
        row = layout.row(align=True)
        row.operator("hair_wig.bake", text="Bake" if baked is None else "Bake Again", icon="REC")
        row.operator("hair_wig.clear_bake", icon="TRASH")
        layout.operator("hair_wig.bake", text="Bake All Wigs").all_wigs = True
        row = layout.row(align=True)
        row.prop(ob.hair_wig, "cache_path", text="")
        row.operator("hair_wig.bake_to_disk", icon="DISK_DRIVE")
        layout.prop(context.scene, "hair_wig_memory_limit")
        if baked is not None:
            layout.label(text=f"Baked frames {baked[0]}..{baked[1]}", icon="CHECKMARK")
            stale = blender_io.outdated(ob)
            if stale:
                layout.label(text=f"Frames {baking.say_ranges(stale)} outdated: re-bake them", icon="ERROR")
            layout.operator("hair_wig.rebake_frames", icon="FILE_REFRESH")
            layout.operator("hair_wig.export_baked", icon="EXPORT")
            edited = blender_io.edited_since_bake(ob)
            if edited is not None:
                layout.label(text=f"Hair edited since the bake ({edited[0]} → {edited[1]} points): "
                                  f"bake again", icon="ERROR")


class _HairToolPanel:
    """A sub-panel of a tool that works on any Curves hair, a wig or not (closed at first)."""
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Hair Wig"
    bl_parent_id = "VIEW3D_PT_hair_wig"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        ob = context.active_object
        return ob is not None and ob.type == "CURVES"


class VIEW3D_PT_hair_wig_style(_HairToolPanel, bpy.types.Panel):
    """Style Hair (seed 003): on any Curves hair, a wig or not."""
    bl_label = "Style Hair"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        ob = context.active_object
        st = ob.hair_wig.style
        layout.prop(st, "roots")
        if st.roots == "GROW":
            col = layout.column(align=True)
            col.prop(st, "grow_on")
            if st.grow_on == "GROUP":
                surface = ob.data.surface or ob.hair_wig.head
                if surface is not None:
                    col.prop_search(st, "vertex_group", surface, "vertex_groups")
                else:
                    col.label(text="Set the hair's Surface first", icon="ERROR")
            col.prop(st, "density")
            col.prop(st, "length")
            col.prop(st, "length_random")
            col.prop(st, "points")
            col.prop(st, "replace")
        else:
            layout.prop(st, "start")
            layout.prop(st, "only_selected")
        col = layout.column(align=True)
        col.prop(st, "stiffness")
        col.prop(st, "weight")
        draw_profile(layout, ob.hair_wig, "style_stiffness")
        layout.prop(st, "force")
        if st.force != "NONE":
            col = layout.column(align=True)
            if st.force == "DIRECTION":
                col.prop(st, "force_direction")
            elif st.force == "OBJECT":
                col.prop(st, "force_object")
            col.prop(st, "force_strength")
        layout.prop(st, "collide")
        if st.collide:
            col = layout.column(align=True)
            col.prop(st, "clearance")
            col.prop(st, "volume")
        layout.prop(st, "curl")
        if st.curl != "NONE":
            col = layout.column(align=True)
            col.prop(st, "curl_turns")
            col.prop(st, "curl_radius" if st.curl == "HELIX" else "curl_strength")
            if st.curl == "HELIX":
                draw_profile(layout, ob.hair_wig, "curl_radius")
                draw_profile(layout, ob.hair_wig, "curl_turns")
        layout.prop(st, "seed")
        uv_problem = scene_reader.style_uv_problem(ob)
        if uv_problem is not None:
            layout.label(text=uv_problem[0], icon="ERROR" if uv_problem[1] else "INFO")
        layout.operator("hair_wig.style_hair", icon="OUTLINER_DATA_CURVES")


class VIEW3D_PT_hair_wig_draw(_HairToolPanel, bpy.types.Panel):
    """Draw Hair (seed 002): strands sketched on the head, loops made curls; on any Curves hair
    with a surface."""
    bl_label = "Draw Hair"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        ob = context.active_object
        d = ob.hair_wig.draw
        if ob.data.surface is None:
            layout.label(text="Set the hair's Surface to the head first", icon="ERROR")
        col = layout.column(align=True)
        col.prop(d, "points")
        col.prop(d, "time_step")
        layout.prop(d, "curls")
        layout.prop(d, "keep_outside")
        if d.keep_outside:
            layout.prop(d, "clearance")
        col = layout.column(align=True)
        col.prop(d, "rings")
        if d.rings:
            col.prop(d, "closeness")
            col.prop(d, "fuzziness")
            col.prop(d, "seed")
        layout.prop(d, "show_previous")
        layout.operator("hair_wig.draw_hair", icon="GREASEPENCIL")
        layout.separator()
        layout.prop(d, "strokes")
        layout.prop(d, "view")
        layout.operator("hair_wig.strokes_to_hair", icon="OUTLINER_OB_GREASEPENCIL")


classes = (HAIRWIG_UL_magnets, HAIRWIG_UL_key_poses, VIEW3D_PT_hair_wig, VIEW3D_PT_hair_wig_magnets,
           VIEW3D_PT_hair_wig_profiles, VIEW3D_PT_hair_wig_dynamics, VIEW3D_PT_hair_wig_key_poses,
           VIEW3D_PT_hair_wig_refinement, VIEW3D_PT_hair_wig_bake, VIEW3D_PT_hair_wig_style,
           VIEW3D_PT_hair_wig_draw)
