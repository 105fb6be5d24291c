"""Every property the sidebar's draw code names exists (checked by drawing into a recording
layout, since there is no window in background mode)."""

import bpy
import pytest
import scenes


# The icon names this Blender knows (icons come and go between versions; a name Blender does not
# know raises only when the panel is drawn in a window).
ICONS = set(bpy.types.UILayout.bl_rna.functions["prop"].parameters["icon"].enum_items.keys())


def check_icon(kw):
    assert kw.get("icon", "NONE") in ICONS, f"Blender {bpy.app.version_string} has no icon {kw['icon']!r}"


class Recorder:
    """Stands in for UILayout: records every (data, property) the draw code asks for, and checks
    every operator, property and icon it names."""

    def __init__(self, seen):
        self.seen = seen
        self.use_property_split = False
        self.active = True
        self.enabled = True

    def prop(self, data, name, **kw):
        check_icon(kw)
        self.seen.append((data, name))

    def prop_search(self, data, name, search_data, search_name, **kw):
        check_icon(kw)
        self.seen.append((data, name))
        self.seen.append((search_data, search_name))

    def operator(self, idname, **kw):
        check_icon(kw)
        module, name = idname.split(".")
        assert name in dir(getattr(bpy.ops, module)), idname
        allowed = set(getattr(getattr(bpy.ops, module), name).get_rna_type().properties.keys())

        class Props:            # accepts only the operator's own properties
            def __setattr__(self, key, value):
                assert key in allowed, (idname, key)
                object.__setattr__(self, key, value)
        return Props()

    def template_curve_mapping(self, data, name, **_kw):
        self.seen.append((data, name))
        assert data.bl_rna.properties[name].fixed_type.identifier == "CurveMapping"

    def label(self, **kw):
        check_icon(kw)

    def separator(self, **_kw):
        pass

    def template_list(self, list_type, _list_id, data, name, active_data, active_name, **_kw):
        assert list_type in dir(bpy.types), list_type
        self.seen.append((data, name))
        self.seen.append((active_data, active_name))

    def column(self, **_kw):
        return self

    row = box = column


@pytest.mark.parametrize("dynamic, curves, layer", [(False, False, "SPRINGS"), (True, True, "RODS"),
                                                    (False, True, "STRANDS"), (True, False, "WISPS")])
def test_panels_draw_only_existing_properties(scene, addon, dynamic, curves, layer):
    from hair_wig_addon.operators import profile_curves
    from hair_wig_addon.panels import sidebar

    pts, counts = scenes.straight_strands(3, 4)
    ob = scenes.curves_hair("Hair", pts, counts)
    ob.hair_wig.enabled = True
    st = ob.hair_wig.style
    ob.hair_wig.dynamics_layer = layer
    if layer == "STRANDS":   # every setting of the Strands solver drawn, and Style Hair's growing ones
        ob.hair_wig.strands_method = "JAKOBSEN"
        ob.hair_wig.strands_links = 2
        st.roots, st.grow_on, st.force, st.curl = "GROW", "GROUP", "OBJECT", "HELIX"
    elif layer == "WISPS":   # the attribute picked from the hair's, and the warning that it has none
        ob.hair_wig.wisps_source = "ATTRIBUTE"
        ob.hair_wig.show_wisps = True
        st.force, st.curl = "FIELDS", "NONE"
    elif dynamic:
        st.force, st.curl = "DIRECTION", "FORCE"
    empty = bpy.data.objects.new("Magnet", None)
    scene.collection.objects.link(empty)
    empty.hair_wig_magnet.dynamic = dynamic
    ob.hair_wig.magnets.add().object = empty
    if curves:
        profile_curves.ensure(ob.hair_wig, ob.name)
        profile_curves.ensure(empty.hair_wig_magnet, empty.name)
    ob.hair_wig.magnets.add()          # an empty slot draws its warning
    bpy.context.view_layer.objects.active = ob
    assert bpy.ops.hair_wig.record_key_pose() == {"FINISHED"}
    ob.hair_wig.key_poses.add()        # a key pose whose curves were lost draws its warning
    lists = {"HAIRWIG_UL_magnets": ("magnets", "magnet_index"),
             "HAIRWIG_UL_key_poses": ("key_poses", "key_pose_index")}
    seen = []
    for cls in sidebar.classes:
        if issubclass(cls, bpy.types.UIList):
            items, active = lists.pop(cls.__name__)
            for index, item in enumerate(getattr(ob.hair_wig, items)):
                cls.draw_item(None, bpy.context, Recorder(seen), ob.hair_wig, item, 0, ob.hair_wig, active, index)
            continue
        panel = type("PanelSelf", (), {"layout": Recorder(seen)})()   # draw only uses .layout
        assert cls.poll(bpy.context)
        if hasattr(cls, "draw_header"):
            cls.draw_header(panel, bpy.context)
        cls.draw(panel, bpy.context)
    assert not lists and len(seen) > 20
    for data, name in seen:
        assert name in data.bl_rna.properties, (type(data).__name__, name)


class ActiveRecorder(Recorder):
    """A layout that records, for each property drawn, whether it is drawn active."""

    def __init__(self, seen, active=True):
        super().__init__(seen)
        self.active = active

    def prop(self, data, name, **kw):
        self.seen.append((name, self.active))

    def prop_search(self, data, name, search_data, search_name, **kw):
        self.seen.append((name, self.active))

    def column(self, **_kw):
        return ActiveRecorder(self.seen, self.active)


@pytest.mark.parametrize("on, method, friction", [(False, "VOLUME", False), (True, "VOLUME", True),
                                                  (True, "PAIRS", False)])
def test_a_setting_is_drawn_active_only_when_what_it_needs_acts(scene, addon, on, method, friction):
    """Hair Friction acts only with the Volume, and the Volume only with Hair Against Hair on: the
    Dynamics panel draws it greyed unless both hold (its ``when`` names the method; the method's
    names Hair Against Hair)."""
    from hair_wig_addon.panels import sidebar

    pts, counts = scenes.straight_strands(3, 4)
    ob = scenes.curves_hair("Hair", pts, counts)
    ob.hair_wig.enabled = True
    ob.hair_wig.use_secondary = True
    ob.hair_wig.dynamics_layer = "STRANDS"
    ob.hair_wig.strands_hair_hair = on
    ob.hair_wig.strands_hair_hair_method = method
    bpy.context.view_layer.objects.active = ob
    seen = []
    panel = type("PanelSelf", (), {"layout": ActiveRecorder(seen)})()
    sidebar.VIEW3D_PT_hair_wig_dynamics.draw(panel, bpy.context)
    drawn = dict(seen)
    assert drawn["strands_hair_friction"] is friction
    assert drawn["strands_hair_hair_method"] is on
    assert drawn["strands_diameter"] is on


class WordsRecorder(ActiveRecorder):
    """An ``ActiveRecorder`` that also keeps what the panel says (its labels) and how it draws
    each property (``prop`` or ``prop_search`` over which collection)."""

    def __init__(self, seen, active=True, said=None, how=None):
        super().__init__(seen, active)
        self.said = [] if said is None else said
        self.how = {} if how is None else how

    def prop(self, data, name, **kw):
        super().prop(data, name, **kw)
        self.how[name] = "prop"

    def prop_search(self, data, name, search_data, search_name, **kw):
        super().prop_search(data, name, search_data, search_name, **kw)
        self.how[name] = ("prop_search", search_data, search_name)

    def label(self, text="", **kw):
        self.said.append((text, kw.get("icon", "NONE")))

    def column(self, **_kw):
        return WordsRecorder(self.seen, self.active, self.said, self.how)


def _draw_dynamics(ob):
    from hair_wig_addon.panels import sidebar

    bpy.context.view_layer.objects.active = ob
    seen = []
    layout = WordsRecorder(seen)
    sidebar.VIEW3D_PT_hair_wig_dynamics.draw(type("PanelSelf", (), {"layout": layout})(), bpy.context)
    return dict(seen), layout


@pytest.mark.parametrize("source, interact", [("GROOM", True), ("ATTRIBUTE", True), ("GROOM", False),
                                              ("ATTRIBUTE", False)])
def test_the_dynamics_panel_draws_every_wisps_setting_active_when_it_acts(scene, addon, source, interact):
    """Solver: Wisps draws every setting of the Wisps layer, by the names and tooltips an artist
    reads (no field names, no seed's letters), and Show Wisps; Wisp Attribute is picked from the
    hair's own attributes and is active only with Wisps From: Attribute, Wisps and Seed only with
    Groom, Viscosity and Meet Every only with Wisps Meet on; with Wisps From: Attribute and no
    such attribute the panel says so, naming the hair and the attribute (and with it, not)."""
    import re

    from hair_wig_addon.hair_wig.dynamics_layer import settings_fields
    from hair_wig_addon.hair_wig.wisps import WispSettings

    pts, counts = scenes.straight_strands(3, 4)
    ob = scenes.curves_hair("Hair", pts, counts)
    s = ob.hair_wig
    s.enabled = s.use_secondary = True
    s.dynamics_layer = "WISPS"
    s.wisps_source = source
    s.wisps_interact = interact
    drawn, layout = _draw_dynamics(ob)
    props = [f.metadata["prop"] for f in settings_fields(WispSettings)]
    assert set(drawn) == {"use_live_dynamics", "live_memory", "dynamics_layer", "show_wisps", *props}
    rna = type(s).bl_rna.properties
    for name in props:
        p = rna[name]
        assert re.fullmatch(r"[A-Z][a-z]+( [A-Z][a-z]+)*", p.name), (name, p.name)     # words, not a field
        assert "_" not in p.description and len(p.description) > 20, (name, p.description)
    assert rna["wisps_attribute"].type == "STRING"
    assert layout.how["wisps_attribute"] == ("prop_search", ob.data, "attributes")
    attribute = source == "ATTRIBUTE"
    assert drawn["wisps_attribute"] is attribute
    assert drawn["wisps_count"] is drawn["wisps_seed"] is drawn["wisps_max_width"] is (not attribute)
    assert drawn["wisps_viscosity"] is drawn["wisps_interact_every"] is interact
    for always in ("wisps_source", "wisps_segments", "wisps_stiffness", "wisps_interact", "strands_friction"):
        assert drawn[always] is True, always
    errors = [text for text, icon in layout.said if icon == "ERROR"]
    if attribute:
        assert errors == ["'Hair' has no integer curve attribute 'wisp' (Wisp Attribute)"]
        ob.data.attributes.new("wisp", "INT", "CURVE")
        assert not [t for t, icon in _draw_dynamics(ob)[1].said if icon == "ERROR"]
        ob.data.attributes.remove(ob.data.attributes["wisp"])
        ob.data.attributes.new("wisp", "FLOAT_VECTOR", "CURVE")          # there, but no number a strand
        errors = [t for t, icon in _draw_dynamics(ob)[1].said if icon == "ERROR"]
        assert errors == ["'Hair': its attribute 'wisp' holds Vector values, not one number a strand"]
    else:
        assert errors == []          # an attribute Groom does not read is never looked for
    # Show Wisps is the Wisps solver's only: another solver does not draw it
    s.dynamics_layer = "STRANDS"
    assert "show_wisps" not in _draw_dynamics(ob)[0]


def test_every_setting_says_in_words_what_it_does(addon):
    """Issue 14 part 8: every setting an artist sees has a tooltip, and none speaks in the seeds'
    letters and formulas ("(a)", "distance^-exponent", "the patent's way")."""
    import re

    from hair_wig_addon.operators import properties

    seen = 0
    for group in (properties.HairWigSettings, properties.HairWigMagnet, properties.HairWigKeyPose,
                  properties.HairWigStyle, properties.HairWigDraw):
        for prop in group.bl_rna.properties:
            if prop.identifier in ("rna_type", "name") or prop.is_hidden:
                continue
            seen += 1
            words = " ".join([prop.description] + [i.description for i in getattr(prop, "enum_items", [])])
            assert prop.description.strip(), f"{group.__name__}.{prop.identifier} has no tooltip"
            assert not re.search(r"\([a-d]\)|\^|patent's way|seed 00", words), (prop.identifier, words)
    assert seen > 40


# The dynamics layers' properties as saved files have held them since each layer came (their
# names and defaults must not change: a .blend keeps only values that differ from the default).
SAVED = {"secondary_stiffness": 120.0, "secondary_damping": 8.0, "secondary_random": 0.2, "secondary_seed": 0,
         "secondary_dynablend": 1.0, "strands_stiffness": 150.0, "strands_goal_damping": 10.0,
         "strands_bend": 1000.0, "strands_drag": 0.5, "strands_substeps": 8, "strands_method": "FTL",
         "strands_iterations": 20, "strands_friction": 0.3, "strands_hair_hair": False,
         "strands_hair_hair_method": "PAIRS", "strands_hair_friction": 0.1, "strands_diameter": 0.005, "strands_repulsion": 2000.0, "strands_links": 0,
         "strands_link_stiffness": 50.0, "strands_dynablend": 1.0, "rods_stiffness": 10.0,
         "rods_response": 100.0, "rods_damping": 4.0, "rods_wobble": 0.25, "rods_max_substeps": 64,
         "rods_dynablend": 1.0, "wisps_count": 64, "wisps_max_width": 0.1, "wisps_source": "GROOM",
         "wisps_attribute": "wisp", "wisps_seed": 0, "wisps_segments": 8, "wisps_substeps": 8, "wisps_stiffness": 150.0,
         "wisps_goal_damping": 10.0, "wisps_stretch_stiffness": 4000.0, "wisps_max_stretch": 0.05,
         "wisps_damping": 40.0, "wisps_bend": 1000.0, "wisps_bend_damping": 20.0, "wisps_volume_stiffness": 1000.0,
         "wisps_volume_damping": 100.0, "wisps_drag": 0.5, "wisps_dynablend": 1.0, "wisps_interact": True,
         "wisps_viscosity": 5.0, "wisps_interact_every": 1, "wisps_contact_distance": 0.005}
KEYED = {"secondary_dynablend", "strands_stiffness", "strands_dynablend", "rods_stiffness", "rods_dynablend",
         "wisps_dynablend", "wisps_stiffness", "wisps_viscosity"}


def test_the_layers_properties_are_made_from_the_registry_as_saved_files_know_them(addon):
    """Every dynamics layer's settings are the wig's properties (made from ``hair_wig.LAYERS``):
    the names and defaults files were saved with, the keyed ones animatable and the rest not, and
    the Solver menu lists the registry's layers in its order."""
    from hair_wig_addon.hair_wig import LAYERS
    from hair_wig_addon.hair_wig.dynamics_layer import settings_fields

    props = bpy.types.Object.bl_rna.properties["hair_wig"].fixed_type.properties
    made = {f.metadata["prop"] for layer in LAYERS.values() for f in settings_fields(layer.SETTINGS)
            if "prop" in f.metadata}
    assert made == set(SAVED)
    for name, default in SAVED.items():
        p = props[name]
        assert p.default == (pytest.approx(default) if isinstance(default, float) else default), name
        assert p.is_animatable == (name in KEYED), name
    assert [i.identifier for i in props["dynamics_layer"].enum_items] == list(LAYERS)


def test_the_dynamics_panel_draws_live_dynamics_and_its_status(scene, addon):
    """Live Dynamics (issue 37): its checkbox and budget, active whatever the solver's checkbox,
    and a status line: what to do when it is on and nothing is cached, the cache as it plays; a
    legacy Curve object says it needs a bake instead of offering the checkbox."""
    pts, counts = scenes.straight_strands(3, 4)
    ob = scenes.curves_hair("Hair", pts, counts)
    ob.hair_wig.enabled = True
    drawn, layout = _draw_dynamics(ob)
    assert drawn["use_live_dynamics"] is True and drawn["live_memory"] is False
    legacy = scenes.legacy_hair("Legacy", pts, counts)
    legacy.hair_wig.enabled = True
    drawn, layout = _draw_dynamics(legacy)
    assert "use_live_dynamics" not in drawn
    assert any("legacy curves show their dynamics in a bake" in text for text, _ in layout.said)


class SaidRecorder(Recorder):
    """A layout that records the text and icon of each label and the operators drawn."""

    def label(self, **kw):
        check_icon(kw)
        self.seen.append(("label", kw.get("text", ""), kw.get("icon", "NONE")))

    def operator(self, idname, **kw):
        self.seen.append(("operator", idname, kw.get("icon", "NONE")))
        return super().operator(idname, **kw)


class Running:
    """Stands in for a preparation whose workers are on two groups of five, two done (its poll,
    what is done and what it is working on are all the panel reads)."""

    names = ["collision walk", "springs", "magnets", "output", "scalp space"]
    cpu = "generic"

    def poll(self):
        return True

    def done(self):
        return ["springs", "output"]

    def working_on(self):
        return ["collision walk", "magnets"]


def test_the_kernels_preparation_shows_in_the_panel_and_the_preferences(scene, addon, monkeypatch):
    """While the kernels prepare the Hair Wig panel and the add-on's preferences say how far, with
    a button to stop; after a failure they say why, with a button to try again; once ready the
    preferences say so and the panel says nothing — while they are tuned for this CPU too (only
    the preferences show that, with a button to stop it)."""
    from hair_wig_addon.operators import preparation
    from hair_wig_addon.panels import sidebar

    prepare = preparation.prepare               # the add-on's core (not the tests' ``hair_wig``)
    pts, counts = scenes.straight_strands(3, 4)
    ob = scenes.curves_hair("Hair", pts, counts)
    ob.hair_wig.enabled = True
    bpy.context.view_layer.objects.active = ob
    monkeypatch.setattr(preparation, "_prep", Running())
    monkeypatch.setattr(prepare, "prepared", lambda names=None: list(names or ()) in (["springs"], ["output"]))

    def drawn(draw):
        seen = []
        draw(SaidRecorder(seen))
        return [s for s in seen if s[0] in ("label", "operator")]

    panel = lambda layout: sidebar.VIEW3D_PT_hair_wig.draw(type("P", (), {"layout": layout})(), bpy.context)
    prefs = lambda layout: preparation.HAIRWIG_AddonPreferences.draw(type("P", (), {"layout": layout})(), bpy.context)
    running = [("label", "Preparing hair kernels in the background: 2 of 5 (collision walk, magnets) — once after "
                         "installing", "TIME"), ("operator", "hair_wig.prepare_kernels", "CANCEL")]
    assert drawn(panel)[:2] == running and drawn(prefs) == running
    monkeypatch.setattr(preparation, "_prep", None)
    monkeypatch.setattr(preparation, "_note", "Preparing hair kernels failed: a worker stopped with exit status -9. "
                                              "A bake compiles what it needs (slower to start)")
    failed = [("label", preparation._note, "ERROR"), ("operator", "hair_wig.prepare_kernels", "FILE_REFRESH")]
    assert drawn(panel)[:2] == failed and drawn(prefs) == failed
    monkeypatch.setattr(preparation, "_note", "")
    monkeypatch.setattr(prepare, "prepared", lambda names=None: True)
    assert all(s[1] != "hair_wig.prepare_kernels" and "kernels" not in s[1] for s in drawn(panel))
    assert drawn(prefs) == [("label", "Hair kernels are ready", "CHECKMARK")]
    tuning = Running()
    tuning.cpu = "host"
    monkeypatch.setattr(preparation, "_prep", tuning)
    assert all(s[1] != "hair_wig.prepare_kernels" and "kernels" not in s[1] for s in drawn(panel))
    assert drawn(prefs) == [("label", "Hair kernels are ready", "CHECKMARK"),
                            ("label", "Tuning hair kernels for this computer in the background: 2 of 5 (used from the "
                                      "next session)", "TIME"), ("operator", "hair_wig.prepare_kernels", "CANCEL")]


def test_kernels_for_any_cpu_are_prepared_whatever_else_is_kept_and_tuning_waits_to_be_asked(addon, monkeypatch):
    """What the add-on prepares when it is enabled: the kernels for any CPU even where code
    compiled for this CPU is kept (a bake that compiled while none was prepared: slower on some
    CPUs, so loaded only where nothing else is), and tuned kernels only where the artist asks for
    them — the preference is off by default, and an add-on registered by a script has none."""
    from hair_wig_addon.operators import preparation

    prepare = preparation.prepare
    asked = []
    monkeypatch.setattr(preparation, "_prep", None)
    monkeypatch.setattr(prepare, "missing", lambda names=None, cpu=None: asked.append(cpu) or [])
    monkeypatch.setattr(prepare.store, "TUNED", False)
    preparation.begin()
    assert asked == [prepare.store.GENERIC]
    assert preparation.HAIRWIG_AddonPreferences.bl_rna.properties["tune_kernels"].default is False
    assert not preparation._tune() and prepare.store.TUNED is False
