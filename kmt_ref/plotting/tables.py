"""Tables for the book: results shown as rendered tables, not printouts.

A :class:`Table` displays as a Markdown table in Jupyter (and in the built
book) and prints as aligned text elsewhere.
"""

import re

from .._text import unsigned_zeros

__all__ = ["Table"]


#: A hyphen a line is never broken at (U+2011): a number such as ``1e-3`` stays on one line.
NON_BREAKING_HYPHEN = "\u2011"


def _whole_numbers(text):
    """``text`` with the hyphens of its numbers (``1e-3``, ``-0.25``, ``5.0e-08``) made non-breaking."""
    return re.sub(r"(?<![A-Za-z])-?[0-9][0-9.,]*(?:e-?[0-9]+)?|(?<![A-Za-z0-9])-(?=[0-9])",
                  lambda m: m.group(0).replace("-", NON_BREAKING_HYPHEN), text)


class Table:
    """A table of already formatted cells.

    Parameters
    ----------
    header : sequence of str
        Column titles.
    rows : sequence of sequence
        One sequence per row, as many cells as ``header``; each cell is shown
        with ``str``, a number that rounds to zero without its minus (``0.000``,
        not ``-0.000``).
    """

    def __init__(self, header, rows):
        self.header = [str(h) for h in header]
        self.rows = [[unsigned_zeros(str(c)) for c in row] for row in rows]
        bad = [i for i, row in enumerate(self.rows) if len(row) != len(self.header)]
        if bad:
            raise ValueError(f"rows={bad[:5]} have not len(header)={len(self.header)} cells")

    def _repr_markdown_(self):
        def line(cells):
            return "| " + " | ".join(_whole_numbers(c).replace("|", "\\|") for c in cells) + " |"

        return "\n".join([line(self.header), "|" + "---|" * len(self.header), *map(line, self.rows)])

    def __str__(self):
        lines = [self.header, *self.rows]
        widths = [max(len(r[i]) for r in lines) for i in range(len(self.header))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in lines)

    __repr__ = __str__
