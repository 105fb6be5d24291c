"""Collider tuples that kernels read without counting references.

numba counts a reference to every array a kernel binds to a variable, passes on or takes out of a
typed List, atomically, and gives it back. A collider is a tuple of ~40 arrays
(``walk``'s module docstring), met at every point near it: on a groom lying on a body collider
(the bench's long hair on the shoulders, 800 000 points) perf put 38 % of the walk's time in those
two atomic instructions, and on two threads they fight over the counts.

``borrowed`` returns the same tuple with every array's owner (its meminfo and parent object)
cleared: numba's reference counting skips a null owner, so a borrowed array costs a compare. The
data stays owned by the arrays the tuple was made from; whoever holds the borrowed tuple (a typed
List of them, ``walk.threads_colliders``) must keep those alive as long, and never hand a
borrowed array back to Python: numba would box it as an array with no owner, which outlives the
data it shows. Nothing reads ``walk.threads_colliders``' Lists from Python (a List that refused
to be read could not be passed to a kernel: numba unboxes a List of its own class only).
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _borrowable(ty) -> bool:
    """Whether ``ty`` is an array, a plain scalar, or a tuple of those: nothing else that numba
    counts references to (a list, a string) may be in a borrowed tuple."""
    if isinstance(ty, types.Array):
        return True
    if isinstance(ty, types.BaseTuple):
        return all(_borrowable(t) for t in ty)
    return isinstance(ty, (types.Number, types.Boolean, types.NoneType))


def _cleared(context, builder, ty, value):
    """``value`` of type ``ty`` with every array's meminfo and parent set to null."""
    if isinstance(ty, types.Array):
        a = cgutils.create_struct_proxy(ty)(context, builder, value=value)
        a.meminfo = cgutils.get_null_value(a.meminfo.type)
        a.parent = cgutils.get_null_value(a.parent.type)
        return a._getvalue()
    if isinstance(ty, types.BaseTuple):
        out = cgutils.get_null_value(context.get_value_type(ty))
        for i, t in enumerate(ty):
            out = builder.insert_value(out, _cleared(context, builder, t, builder.extract_value(value, i)), i)
        return out
    return value


@intrinsic
def borrowed(typingctx, tup):
    """``tup`` (a tuple of arrays, scalars and such tuples) with no owner on any array."""
    if not (isinstance(tup, types.BaseTuple) and _borrowable(tup)):
        return None

    def codegen(context, builder, sig, args):
        return _cleared(context, builder, sig.args[0], args[0])

    return tup(tup), codegen
