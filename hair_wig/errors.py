"""The one exception type the project raises for input a person can fix."""


# Said wherever a message numbers a strand: the numbers are the Spreadsheet's (its Curve domain's
# index, from 0), so an artist finds the strand there.
FROM_ZERO = " (strands count from 0, as the Spreadsheet's Curve index does)"


class HairWigError(ValueError):
    """Bad input or settings, with a message that names the object, strand or setting at fault.

    Operators turn it into ``self.report({'ERROR'}, str(err))`` and leave the scene as it was;
    ``scripts/bake.py`` prints it as a one-line error and exits non-zero.
    """
