"""The one exception type the project raises for input a person can fix."""


class HairWigError(ValueError):
    """Bad input or settings, with a message that names the object, strand or setting at fault.

    Operators turn it into ``self.report({'ERROR'}, str(err))`` and leave the scene as it was;
    ``scripts/bake.py`` prints it as a one-line error and exits non-zero.
    """
