"""Registering and unregistering twice in a row leaves nothing behind."""

import bpy


def _footprint():
    return {
        "object_prop": hasattr(bpy.types.Object, "hair_wig"),
        "types": sorted(n for n in dir(bpy.types) if "hair_wig" in n.lower() or "HAIRWIG" in n),
        "ops": sorted(dir(bpy.ops.hair_wig)),
        "handlers": {n: len(getattr(bpy.app.handlers, n)) for n in dir(bpy.app.handlers)
                     if not n.startswith("_") and isinstance(getattr(bpy.app.handlers, n), list)},
    }


def test_register_unregister_twice_leaves_nothing(addon):
    registered = _footprint()
    assert registered["object_prop"] and "hair_wig_settings" not in registered["types"]
    assert {"bake", "clear_bake", "enable"} <= set(registered["ops"])
    assert "VIEW3D_PT_hair_wig" in registered["types"]
    addon.unregister()
    clean = _footprint()
    try:
        assert not clean["object_prop"] and clean["types"] == [] and clean["ops"] == []
        for _ in range(2):
            addon.register()
            assert _footprint() == registered
            addon.unregister()
            assert _footprint() == clean
    finally:
        addon.register()
