"""Argument types shared by the command lines (``python -m kmt_ref ...``)."""

import argparse

__all__ = ["integer_at_least", "positive_number"]


def integer_at_least(low):
    """An argparse type: an integer ``>= low``, with a message that says so."""
    what = "a positive integer" if low == 1 else "a non-negative integer" if low == 0 else f"an integer >= {low}"

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}; got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {what}; got {value}")
        return value

    parse.__name__ = what
    return parse


def positive_number(text):
    """An argparse type: a positive finite float."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number; got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number; got {value}")
    return value
