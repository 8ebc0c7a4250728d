"""Numbers as a reader meets them: the book's tables and the command line's reports."""

import re

__all__ = ["unsigned_zeros"]

#: The minus of a number that prints as zero (-0.000, -0.00, -0; not -0.001 or -0.000e-05), or its
#: non-breaking twin (U+2011).
_NEGATIVE_ZERO = re.compile(r"(?<![\w.])[-\u2011](?=0(?:\.0*)?(?![\w.]))")


def unsigned_zeros(text):
    """``text`` with the minus of each number that rounds to zero dropped: a tiny negative value reads
    ``0.000``, not ``-0.000``. After a space the minus becomes a space, so that columns stay aligned."""
    return _NEGATIVE_ZERO.sub(lambda m: " " if text[max(m.start() - 1, 0):m.start()] == " " else "", text)
