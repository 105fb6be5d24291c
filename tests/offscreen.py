"""Drawing for real in background mode, for the probes (``overlay_probe``, ``timeline_probe``):
Blender's own GPU module into an offscreen buffer. Needs a bpy that can draw in background mode
(``gpu.init``, Blender 5.x); import it in a process of its own."""

import bpy  # first: the bpy module brings its gpu module
import gpu
import numpy as np
from mathutils import Matrix

assert hasattr(gpu, "init"), f"Blender {bpy.app.version_string}'s bpy cannot draw in background mode"
gpu.init()


def draw(width: int, height: int, projection, fn) -> np.ndarray:
    """The pixels (height, width, 4) float after ``fn()`` draws into a cleared offscreen buffer
    under ``projection`` (4, 4) and an identity model-view."""
    offscreen = gpu.types.GPUOffScreen(width, height)
    try:
        with offscreen.bind():
            fb = gpu.state.active_framebuffer_get()
            fb.clear(color=(0.0, 0.0, 0.0, 0.0))
            with gpu.matrix.push_pop(), gpu.matrix.push_pop_projection():
                gpu.matrix.load_matrix(Matrix.Identity(4))
                gpu.matrix.load_projection_matrix(Matrix(np.asarray(projection, float).tolist()))
                fn()
            return np.array(fb.read_color(0, 0, width, height, 4, 0, "FLOAT").to_list())
    finally:
        offscreen.free()
