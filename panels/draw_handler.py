"""A draw callback in an editor's main region while the add-on is registered: the magnets' and
wisps' overlay in the 3D Viewport, the live cache's strip in the Timeline."""

from __future__ import annotations


class DrawHandler:
    """``fn`` drawn in every ``space``'s WINDOW region at ``kind`` (POST_VIEW, POST_PIXEL) from
    ``register`` to ``unregister``; ``handle`` is Blender's while it is."""

    def __init__(self, space, fn, kind: str):
        self.space, self.fn, self.kind = space, fn, kind
        self.handle = None

    def register(self) -> None:
        if self.handle is None:
            self.handle = self.space.draw_handler_add(self.fn, (), "WINDOW", self.kind)

    def unregister(self) -> None:
        if self.handle is not None:
            self.space.draw_handler_remove(self.handle, "WINDOW")
            self.handle = None
