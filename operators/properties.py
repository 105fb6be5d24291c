"""Settings hair_wig keeps on a hair object (``Object.hair_wig``)."""

import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty,
                       FloatVectorProperty, IntProperty, PointerProperty, StringProperty)

from ..hair_wig import LAYERS
from ..hair_wig.dynamics_layer import default_of, settings_fields


def _is_mesh(_self, ob):
    return ob.type == "MESH"


def _is_empty(_self, ob):
    return ob.type == "EMPTY"


class HairWigMagnet(bpy.types.PropertyGroup):
    """A magnet's settings, kept on its Empty (``Object.hair_wig_magnet``)."""

    multiplier: FloatProperty(
        name="Weight", description="How strongly the magnet pulls the hair it reaches: 1 moves the hair "
                                   "at its centre all the way with it, 0 not at all. Key it to fade the "
                                   "magnet in or out", default=1.0, min=0.0, soft_max=2.0)
    exponent: FloatProperty(
        name="Sharpness", description="How much more the magnet pulls the hair close to it than the hair "
                                      "farther out, on top of the Falloff curve. 0: the curve alone; "
                                      "higher: a tight grip near the centre that fades fast (the pull is "
                                      "divided by distance to this power)",
        default=0.0, min=0.0, max=20.0, soft_max=4.0, options=set())
    radius: FloatProperty(
        name="Radius", description="How far the magnet reaches. At Rest (the default Reach): the hair "
                                   "within this distance of where the magnet rests is what it moves, "
                                   "wherever it goes later (hair it sweeps past is not picked up; once it "
                                   "has moved, the viewport draws its reach at rest too). Follows Magnet: "
                                   "the hair within this distance of where it is now",
        default=0.5, min=1e-4, soft_max=10.0, subtype="DISTANCE", unit="LENGTH", options=set())
    reach: EnumProperty(
        name="Reach", description="Which hair the magnet moves",
        items=[("REST", "At Rest", "The hair within its radius of where it rests, moved by its motion since "
                                   "then wherever it goes (the classic magnet: key it to pose the hair)"),
               ("FOLLOW", "Follows Magnet", "The hair within its radius of where it is now, moved by its "
                                            "motion over the last Trail frames: it takes what it sweeps "
                                            "through and lets it go once it has passed (a hand through "
                                            "grass or fur). Shows in a bake; the live preview keeps no frames")],
        default="REST", options=set())
    trail: IntProperty(
        name="Trail", description="How many frames of the magnet's motion a following reach passes on: "
                                  "more bends what it sweeps through further",
        default=4, min=1, soft_max=24, max=240, options=set())
    strand_attribute: StringProperty(
        name="Strands", description="Optional boolean attribute of the hair picking the strands this "
                                    "magnet acts on (a set of hairs). Empty: all strands", default="",
        options=set())
    dynamic: BoolProperty(
        name="Dynamic", description="The magnet trails its keyed motion on a damped spring, with gravity and wind",
        default=False, options=set())
    mass: FloatProperty(
        name="Mass", description="Heavier magnets swing wider and settle slower", default=1.0,
        min=1e-3, soft_max=10.0, unit="MASS", options=set())
    stiffness: FloatProperty(
        name="Stiffness", description="How hard the spring pulls the magnet back to its keyed position",
        default=60.0, min=0.0, max=1e4, soft_max=500.0, options=set())
    damping: FloatProperty(
        name="Damping", description="How quickly the swinging dies down", default=6.0, min=0.0,
        max=1e4, soft_max=100.0, options=set())
    dynablend: FloatProperty(
        name="Dynablend", description="How much of the swing the hair shows: 0 follows the keyed magnet "
                                       "exactly, 1 shows the whole spring motion. Key it to calm the hair "
                                       "for a shot or let it loose",
        default=1.0, min=0.0, max=1.0, subtype="FACTOR")
    substeps: IntProperty(
        name="Substeps", description="Spring steps per frame: raise it when a stiff, light magnet jitters "
                                     "or flies off", default=1, min=1, max=64, options=set())
    gravity: FloatProperty(
        name="Gravity", description="Scale of the scene's gravity on this magnet when the head is upside down "
                                    "(no sag when upright)", default=1.0, min=0.0, soft_max=2.0,
        subtype="FACTOR", options=set())
    rest_matrix: FloatVectorProperty(
        name="Rest Pose", description="The magnet's transform in its head's space when the rest pose was set",
        size=16, subtype="MATRIX", default=[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1], options=set())
    has_rest: BoolProperty(name="Has Rest Pose", description="The magnet's rest pose was captured",
                           default=False, options=set())
    profiles: PointerProperty(name="Profiles", description="The falloff curve's hidden node group",
                              type=bpy.types.NodeTree, options=set())


class HairWigMagnetSlot(bpy.types.PropertyGroup):
    object: PointerProperty(
        name="Magnet", description="Empty acting as a magnet on this wig", type=bpy.types.Object,
        poll=_is_empty, options=set())


class HairWigKeyPose(bpy.types.PropertyGroup):
    """A hairstyle recorded at a frame (seed 002, §4.1): a hidden copy of the hair's curves."""

    frame: IntProperty(name="Frame", description="The frame this hairstyle is reached at; edit to retime it",
                       options=set())
    curves: PointerProperty(type=bpy.types.Curves, name="Hairstyle",
                            description="The recorded curves (a hidden copy of the hair's data)", options=set())


class HairWigStyle(bpy.types.PropertyGroup):
    """Style Hair's settings (seed 003: hair styled as cantilevers under gravity and a styling
    force, curled, layered over the head)."""
    roots: EnumProperty(
        name="Roots", description="Which hair Style Hair styles",
        items=[("EXISTING", "Restyle Curves", "Style the curves there are, from their own roots: same "
                                              "curves, points, lengths and surface attachment"),
               ("GROW", "Grow on Scalp", "Grow new strands on the surface (replacing or adding to the "
                                         "curves there are) and style them")],
        default="EXISTING", options=set())
    grow_on: EnumProperty(
        name="Grow On", description="Where on the surface new hair grows",
        items=[("ALL", "Whole Surface", "Everywhere on the surface mesh"),
               ("SELECTED", "Selected Faces", "The faces selected in the surface mesh's Edit Mode"),
               ("GROUP", "Vertex Group", "The surface's vertex group below, denser where it weighs more")],
        default="SELECTED", options=set())
    vertex_group: StringProperty(name="Vertex Group", description="The surface's vertex group hair grows on",
                                 default="", options=set())
    replace: BoolProperty(name="Replace Curves", description="Grown hair replaces the curves there are "
                                                             "(off: it is added to them)",
                          default=True, options=set())
    density: FloatProperty(name="Density", description="Strands per square metre of scalp (world units)",
                           default=2000.0, min=0.0, soft_max=200000.0, options=set())
    length: FloatProperty(name="Length", description="Length of a grown strand", default=0.3, min=1e-4,
                          soft_max=2.0, subtype="DISTANCE", unit="LENGTH", options=set())
    length_random: FloatProperty(name="Length Randomness", description="Grown strands are up to this "
                                                                       "much shorter, at random",
                                 default=0.2, min=0.0, max=1.0, subtype="FACTOR", options=set())
    points: IntProperty(name="Points", description="Points per grown strand", default=16, min=2, max=256,
                        options=set())
    only_selected: BoolProperty(name="Selected Curves Only", description="Restyle only the curves selected "
                                                                         "in Sculpt Mode; the rest stay as they are",
                                default=False, options=set())
    start: EnumProperty(
        name="Start", description="Which way each strand leaves its root",
        items=[("NORMAL", "Surface Normal", "Straight out of the scalp"),
               ("GROOM", "Groom", "As the curve's first segment points now (restyled curves only)")],
        default="NORMAL", options=set())
    stiffness: FloatProperty(
        name="Stiffness", description="How stiffly the hair bends, relative to its weight and length (the "
                                      "same look at any scale): about 1 holds a strand out straight, 0.01 "
                                      "lets it hang", default=0.02, min=1e-4, soft_max=2.0, options=set())
    weight: FloatProperty(name="Weight", description="How much the scene's gravity weighs on the hair",
                          default=1.0, min=0.0, soft_max=5.0, options=set())
    force: EnumProperty(
        name="Styling Force", description="A force that combs the hair besides gravity",
        items=[("NONE", "None", "Gravity only"),
               ("DIRECTION", "Direction", "The same push everywhere, along a direction (world)"),
               ("OBJECT", "Toward Object", "A pull toward an object (an Empty, say)"),
               ("FIELDS", "Force Fields", "The scene's Wind and Turbulence fields where the hair is")],
        default="NONE", options=set())
    force_direction: FloatVectorProperty(name="Direction", description="Which way the styling force pushes "
                                                                       "(world)", default=(0.0, -1.0, 0.0),
                                         subtype="DIRECTION", size=3, options=set())
    force_object: PointerProperty(name="Object", description="The object the hair is pulled toward",
                                  type=bpy.types.Object, options=set())
    force_strength: FloatProperty(name="Strength", description="The styling force, in gravities (1: as "
                                                               "strong as the hair's weight)",
                                  default=1.0, min=0.0, soft_max=10.0, options=set())
    collide: BoolProperty(name="Collide with Surface", description="Hair slides over the surface it grows "
                                                                   "on instead of passing into it",
                          default=True, options=set())
    clearance: FloatProperty(name="Clearance", description="How far hair keeps from the surface",
                             default=0.005, min=0.0, soft_max=0.1, subtype="DISTANCE", unit="LENGTH",
                             options=set())
    volume: FloatProperty(name="Volume", description="Layered volume: hair from the crown lies this much "
                                                     "farther out than hair from the lowest roots",
                          default=0.02, min=0.0, soft_max=0.5, subtype="DISTANCE", unit="LENGTH",
                          options=set())
    curl: EnumProperty(
        name="Curls", description="How the hair curls",
        items=[("NONE", "None", "Straight hair"),
               ("HELIX", "Helix", "Wound round a cylinder along the styled strand (radius and turns along "
                                  "the strand from the profiles)"),
               ("FORCE", "Rotating Force", "A force turning round the strand, growing to the tip: the "
                                           "strand bends into a spiral as it is styled")],
        default="NONE", options=set())
    curl_radius: FloatProperty(name="Curl Radius", description="The curls' radius (times its profile)",
                               default=0.02, min=0.0, soft_max=0.2, subtype="DISTANCE", unit="LENGTH",
                               options=set())
    curl_turns: FloatProperty(name="Turns", description="Turns of the curl over the whole strand",
                              default=3.0, min=0.0, soft_max=20.0, options=set())
    curl_strength: FloatProperty(
        name="Curl Force", description="The rotating force at the tip, in gravities: the strand winds into "
                                       "curls that grow tighter with it (and looser with more Stiffness or "
                                       "Turns); about 130 coils the tip flat at Stiffness 0.02 and 3 Turns "
                                       "(8 times that at 6 Turns); more curls it no tighter",
        default=80.0, min=0.0, soft_max=400.0, options=set())
    seed: IntProperty(name="Seed", description="Where grown roots fall, and each curl's phase", default=0,
                      min=0, options=set())


def _is_grease_pencil(_self, ob) -> bool:
    return ob.type == "GREASEPENCIL"


class HairWigDraw(bpy.types.PropertyGroup):
    """Draw Hair's settings (seed 002, ch. 3: hair sketched on the head, loops made curls)."""
    points: IntProperty(name="Points", description="Points in each drawn strand", default=16, min=2, max=256,
                        options=set())
    curls: BoolProperty(name="Loops Make Curls", description="A loop drawn in a stroke becomes a curl: it is "
                                                             "lifted out of the drawing into one turn of a "
                                                             "helix", default=True, options=set())
    time_step: FloatProperty(
        name="Sample Every", description="The stroke is sampled at this even time step (seconds): draw slowly "
                                         "where the strand should follow your hand closely. 0: where the "
                                         "pen reported", default=0.02, min=0.0, max=1.0, subtype="TIME_ABSOLUTE",
        unit="TIME_ABSOLUTE", options=set())
    keep_outside: BoolProperty(name="Keep Outside", description="Drawn hair that passes into the head is lifted "
                                                                "out onto it, at its length", default=True,
                               options=set())
    clearance: FloatProperty(name="Clearance", description="How far drawn hair keeps from the head",
                             default=0.005, min=0.0, soft_max=0.05, subtype="DISTANCE", options=set())
    rings: IntProperty(name="Wisp Rings", description="Each drawn strand leads a wisp of this many rings of "
                                                      "eight strands (0: the strand alone)", default=0, min=0,
                       soft_max=4, options=set())
    closeness: FloatProperty(name="Closeness", description="Distance between a wisp's rings, in the surface's UV "
                                                           "space", default=0.01, min=1e-5, soft_max=0.1,
                             options=set())
    fuzziness: FloatProperty(name="Fuzziness", description="Random wander of a wisp's strands, as a fraction of "
                                                           "the closeness", default=0.3, min=0.0, max=1.0,
                             options=set())
    seed: IntProperty(name="Seed", description="Seed of the wisps' wander", default=0, min=0, options=set())
    strokes: PointerProperty(name="Grease Pencil", description="The Grease Pencil drawing Convert Strokes to "
                                                               "Hair turns into hair", type=bpy.types.Object,
                             poll=_is_grease_pencil, options=set())
    view: EnumProperty(
        name="Drawn From", description="The view the Grease Pencil strokes were drawn from",
        items=[("VIEW", "This View", "The 3D view you press Convert in"),
               ("CAMERA", "Active Camera", "The scene's active camera")],
        default="CAMERA", options=set())
    show_previous: BoolProperty(name="Show Last Key Pose", description="While drawing, show where the roots "
                                                                       "of the key pose before this frame "
                                                                       "are, to redraw each wisp from its "
                                                                       "place", default=True, options=set())


class HairWigSettings(bpy.types.PropertyGroup):
    enabled: BoolProperty(
        name="Wig",
        description="Animate this hair with hair_wig; baking picks up every hair object with this on",
        default=False, options=set())
    head: PointerProperty(
        name="Head",
        description="Mesh the hair grows from and follows (its local space). Empty: the hair "
                    "object's surface",
        type=bpy.types.Object, poll=_is_mesh, options=set())
    rest_frame: IntProperty(
        name="Rest Frame",
        description="Frame at which the hair's own shape is the rest pose for the head and magnets",
        default=1, options=set())
    rest_captured: BoolProperty(
        name="Rest Pose Set", description="The rest pose of hair, head and magnets was captured "
                                          "(Set Rest Pose); otherwise it is read at the rest frame",
        default=False, options=set())
    hair_rest_matrix: FloatVectorProperty(name="Hair Rest", description="The hair object's transform in the rest pose",
                                          size=16, subtype="MATRIX", options=set(),
                                          default=[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1])
    head_rest_matrix: FloatVectorProperty(name="Head Rest", description="The head's transform in the rest pose",
                                          size=16, subtype="MATRIX", options=set(),
                                          default=[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1])
    selection_attribute: StringProperty(
        name="Selection",
        description="Optional boolean or float attribute (curve or point domain) picking the strands "
                    "the wig acts on. Empty: all strands",
        default="", options=set())
    use_scene_range: BoolProperty(
        name="Scene Range",
        description="Bake the scene's frame range; off: bake the range below",
        default=True, options=set())
    frame_start: IntProperty(
        name="Start", description="First frame to bake", default=1, options=set())
    frame_end: IntProperty(
        name="End", description="Last frame to bake", default=250, options=set())
    preroll: IntProperty(
        name="Pre-roll", description="Frames simulated before the first baked frame so that dynamics "
                                     "have settled when it starts", default=0, min=0, soft_max=100,
        options=set())
    profiles: PointerProperty(name="Profiles", description="Hidden node group holding the wig's profile curves",
                              type=bpy.types.NodeTree, options=set())
    style: PointerProperty(type=HairWigStyle, name="Style Hair", description="Style Hair's settings",
                           options=set())
    draw: PointerProperty(type=HairWigDraw, name="Draw Hair", description="Draw Hair's settings",
                          options=set())
    cache_path: StringProperty(
        name="Disk Cache", description="Where Bake to Disk writes this hair's Alembic cache (empty: "
                                       "hair_wig/<object>.abc beside the .blend)", default="",
        subtype="FILE_PATH", options=set())
    magnets: CollectionProperty(type=HairWigMagnetSlot, name="Magnets", options=set(),
                                description="The Empties that move this hair when you key them")
    magnet_index: IntProperty(name="Active Magnet", description="The magnet shown below the list",
                              default=0, options=set())
    normalisation: EnumProperty(
        name="Overlap", description="How the pulls of overlapping magnets combine",
        items=[("cap", "Cap", "Add the pulls, but never more than a full pull (smooth at every magnet's edge)"),
               ("sum", "Share", "Share one full pull among the magnets reaching a point: where two "
                                "overlap each gets half, so the hair there never moves more than one magnet")],
        default="cap", options=set())
    use_scalp: BoolProperty(
        name="Follow Skin", description="Hair follows the surface's own deformation (shape keys, armature) "
                                        "at its roots, like Deform Curves on Surface", default=True, options=set())
    use_secondary: BoolProperty(
        name="Secondary Dynamics", description="Every strand lags behind the motion and settles on its "
                                               "own, a little differently from its neighbours",
        default=False, options=set())
    dynamics_layer: EnumProperty(
        name="Solver", description="How the strands move on top of the magnets",
        items=[(layer.KEY, layer.LABEL, layer.DESCRIPTION) for layer in LAYERS.values()],
        default=next(iter(LAYERS)), options=set())
    use_live_dynamics: BoolProperty(
        name="Live Dynamics", description="Simulate the wig's dynamics as the timeline plays, as Blender's own "
                                          "simulations do: frames computed once are cached, scrubbing back "
                                          "shows them at once, a change recomputes from the first frame it "
                                          "affects, and Bake keeps what is cached. Curves hair only; the file "
                                          "never stores the cache",
        default=False, options=set(), update=lambda self, context: _live_toggled(self, context))
    live_memory: FloatProperty(
        name="Cache Memory", description="Most memory, in MB, the live cache of this wig keeps; frames past it "
                                         "are computed as you play but not kept", default=2048.0, min=0.01,
        soft_max=16384.0, options=set())
    show_wisps: BoolProperty(
        name="Show Wisps", description="Draw the wisps the Wisps solver groups the strands into, in the "
                                       "viewport: each wisp's spine, and rings showing how thick it is "
                                       "along it. They follow the hair as it plays (a bake too)",
        default=False, options=set())
    # every layer's own settings are added below from its settings' fields (layer_properties)
    compression: FloatProperty(
        name="Compression", description="Keeps magnets from squashing hair into the scalp: 0 lets hair be "
                                        "pushed in towards the head, 1 keeps all of it at its groomed "
                                        "height (its sideways motion stays)", default=0.0, min=0.0, max=1.0,
        subtype="FACTOR", options=set())
    use_length: BoolProperty(name="Keep Length", description="Keep strands at their rest length",
                             default=True, options=set())
    elasticity: FloatProperty(
        name="Elasticity", description="0: strands keep their groomed length exactly; higher lets them "
                                        "stretch with the magnets (1: freely)",
        default=0.0, min=0.0, max=1.0, subtype="FACTOR", options=set())
    length_mode: EnumProperty(
        name="Length Mode", description="How Keep Length holds the strands to their groomed length",
        items=[("SEGMENT", "Per Segment", "Every segment keeps its own length, root to tip: nothing "
                                          "stretches, not even under dynamics or collision"),
               ("STRAND", "Whole Strand", "Scale each strand about its root back to its groomed length: "
                                          "the strand keeps its length while single segments may stretch or "
                                          "squash")],
        default="SEGMENT", options=set())
    use_collision: BoolProperty(
        name="Collide", description="Keep hair out of the head and out of every mesh with Collision physics "
                                    "(Physics tab; its Outer thickness is the distance kept). Hair the groom "
                                    "already has closer, or inside, stays where it is",
        default=True, options=set())
    collision_offset: FloatProperty(
        name="Head Offset", description="Distance kept from the head (hair the groom has closer stays as "
                                        "close)", default=0.0, min=0.0,
        soft_max=0.1, subtype="DISTANCE", unit="LENGTH", options=set())
    use_children_room: BoolProperty(
        name="Keep Children Out", description="Keep the hair grown from these strands (Interpolate Hair "
                                              "Curves children, as Quick Fur makes) out of the head and "
                                              "colliders as well: each strand keeps the room the children "
                                              "it leads need there, so it may stand farther out than alone",
        default=True, options=set())
    collision_method: EnumProperty(
        name="Head Shape", description="How the head's inside is told from its outside",
        items=[("FIELD", "Any Shape", "The distance to the head's surface, whatever its shape (ears, nose, "
                                      "neck): hair is pushed out the shortest way"),
               ("RAY", "Round Head", "Inside or outside along straight lines from the head's centre: "
                                     "faster, for heads round enough that every point of their surface can "
                                     "be seen from the centre (no ears, no nose)")],
        default="FIELD", options=set())
    # Keyframed hairstyles (seed 002)
    key_poses: CollectionProperty(type=HairWigKeyPose, name="Key Poses", options=set(),
                                  description="Hairstyles recorded at frames; the hair is in-betweened "
                                              "from one to the next")
    key_pose_index: IntProperty(name="Active Key Pose", default=0, options=set(),
                                description="The key pose selected in the list")
    use_key_poses: BoolProperty(
        name="Animate Key Poses", description="The hairstyle in-betweened from the key poses is the rest pose the "
                                              "magnets, dynamics and refinement deform, frame by frame",
        default=False, options=set())
    key_path: EnumProperty(
        name="Path", description="How each point travels from key pose to key pose",
        items=[("LINEAR", "Linear", "Straight from key pose to key pose (the thesis' path)"),
               ("SMOOTH", "Smooth", "A Catmull-Rom spline in time through all key poses")],
        default="SMOOTH", options=set())
    key_slow_in_out: BoolProperty(
        name="Slow In/Out", description="Ease in and out of a key pose on the axes where a wisp turns back "
                                        "(swinging); keep going on the others", default=True, options=set())
    key_unmatched: EnumProperty(
        name="Unmatched", description="Curves of one key pose with no partner in the next",
        items=[("GROW", "Grow / Shrink", "They grow from their root, or shrink into it"),
               ("SPLIT", "Split / Merge", "They split off their nearest curve, or merge into it")],
        default="GROW", options=set())
    key_noise: FloatProperty(
        name="Air Drag Noise", description="How far the tips wander (smoothly) about their path",
        default=0.0, min=0.0, soft_max=0.05, subtype="DISTANCE", unit="LENGTH", options=set())
    key_noise_period: FloatProperty(
        name="Noise Period", description="Frames between the noise's turns", default=12.0, min=1.0,
        soft_max=48.0, options=set())
    key_noise_seed: IntProperty(name="Noise Seed", description="Another number gives the tips another "
                                                               "wander; the same number, the same bake",
                                default=0, min=0, options=set())
    use_key_leaders: BoolProperty(
        name="Key Leaders Only", description="Only the leader curves (marked by Make Wisps or Mark Leaders) "
                                             "follow the key poses; every other curve follows its leader",
        default=False, options=set())


def _setting_changed(group, context):
    from . import preview              # not at the top: preview reaches this module through scene_reader
    preview.setting_changed(group.id_data)


def _watch_settings(cls) -> None:
    """Every setting of ``cls`` tells live dynamics it changed (Blender sends no depsgraph update
    for an add-on's own properties): its Blender property made again with an update callback."""
    for name, prop in list(cls.__annotations__.items()):
        fn = getattr(prop, "function", None)
        # values only: a pointer with an update callback tags its owner, and the depsgraph handler
        # that drops deleted magnets' slots would then run before a bake could name the empty slot
        if fn in (CollectionProperty, PointerProperty) or fn is None or "update" in prop.keywords:
            continue
        cls.__annotations__[name] = fn(**prop.keywords, update=_setting_changed)


def _live_toggled(settings, context):
    from . import preview              # not at the top: preview reaches this module through scene_reader
    preview.live_toggled(settings, context)


def layer_properties() -> dict:
    """Every dynamics layer's settings an artist sets, as the wig's Blender properties: made from
    the layers' settings fields (``hair_wig.dynamics_layer.setting``), so a new layer needs nothing
    here. A keyed setting is animatable; the rest are not (a bake reads them once). A setting two
    layers share (Friction) is one property."""
    made = {}
    for layer in LAYERS.values():
        for f in settings_fields(layer.SETTINGS):
            if "prop" not in f.metadata or f.metadata["prop"] in made:
                continue
            ui = dict(f.metadata["ui"])
            ui.setdefault("default", default_of(f))
            if not f.metadata["keyed"]:
                ui["options"] = set()
            kind = "enum" if "items" in ui else f.type
            prop = {"float": FloatProperty, "int": IntProperty, "bool": BoolProperty, "enum": EnumProperty,
                    "str": StringProperty}.get(kind)
            if prop is None:
                raise TypeError(f"{layer.LABEL}: setting {f.name} of type {f.type} has no Blender property kind")
            made[f.metadata["prop"]] = prop(**ui)
    return made


HairWigSettings.__annotations__.update(layer_properties())
for _cls in (HairWigMagnet, HairWigKeyPose, HairWigSettings):
    _watch_settings(_cls)


def active_magnet(settings):
    """The Empty of the wig's active magnet slot, or None (no slot, or its Empty was deleted)."""
    if 0 <= settings.magnet_index < len(settings.magnets):
        return settings.magnets[settings.magnet_index].object
    return None


def head_of(ob):
    """The head mesh of a wig: the chosen one, or a Curves object's surface."""
    settings = ob.hair_wig
    if settings.head is not None:
        return settings.head
    if ob.type == "CURVES":
        return ob.data.surface
    return None


_classes = (HairWigMagnet, HairWigMagnetSlot, HairWigKeyPose, HairWigStyle, HairWigDraw, HairWigSettings)


def register():
    for cls in _classes:
        bpy.utils.register_class(cls)
    bpy.types.Object.hair_wig = PointerProperty(type=HairWigSettings)
    bpy.types.Object.hair_wig_magnet = PointerProperty(type=HairWigMagnet)
    bpy.types.Scene.hair_wig_memory_limit = FloatProperty(
        name="Memory Limit", description="Largest bake, in GiB, that Bake starts: a bake keeps every frame in "
                                         "memory and then writes as much again into the file",
        default=4.0, min=0.05, soft_max=64.0, options=set())


def unregister():
    del bpy.types.Scene.hair_wig_memory_limit
    del bpy.types.Object.hair_wig_magnet
    del bpy.types.Object.hair_wig
    for cls in reversed(_classes):
        bpy.utils.unregister_class(cls)
