"""The API reference shows a module constant's value only when it reads as a value.

Autodoc prints every constant's repr after its name; for a registry (a dict of
normalizers, of variants holding functions) that is many lines of ``<function
... at 0x...>`` that say nothing. A value whose repr is long, spans lines or
names an object by its address is left out: the constant's own comment says
what it holds.
"""

from sphinx.ext.autodoc import DataDocumenter
from sphinx.util.inspect import object_description

#: Longest repr shown after a constant's name.
LONGEST = 60


class ShortValueDocumenter(DataDocumenter):
    """Autodoc's documenter of module data, suppressing long or opaque values."""

    priority = DataDocumenter.priority + 1

    def should_suppress_value_header(self):
        if super().should_suppress_value_header():
            return True
        try:
            text = object_description(self.object)
        except ValueError:
            return True
        return len(text) > LONGEST or "\n" in text or " at 0x" in text or "<" in text


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")
    app.add_autodocumenter(ShortValueDocumenter, override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
