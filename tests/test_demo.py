"""The README's main command runs end to end in its own process and writes both files."""

import subprocess
import sys

import bpy
from conftest import ROOT


def test_demo_writes_a_baked_blend_and_a_picture(addon, tmp_path):
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py"), "--output", str(tmp_path),
                          "--strands", "300", "--size", "64"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    blend, picture = tmp_path / "demo.blend", tmp_path / "demo_contact_sheet.png"
    assert blend.stat().st_size > 100_000
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = bpy.data.images.load(str(picture))
    assert tuple(image.size) == (3 * 64, 2 * 64)
    bpy.data.images.remove(image)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    hair = bpy.data.objects["Hair"]
    assert hair["_hair_wig_bake"]["first"] == 1 and hair["_hair_wig_bake"]["last"] == 48
    assert len(hair.hair_wig.magnets) == 3
    assert "demo: wrote" in res.stdout
