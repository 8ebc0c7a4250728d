"""Argument types and process settings shared by the command lines (``python -m kmt_ref ...``)."""

import argparse
import ctypes
import ctypes.util
import sys

from .._cli import ArgumentParser

__all__ = ["ArgumentParser", "integer_at_least", "positive_number", "keep_freed_memory"]

#: glibc ``mallopt`` parameters (``malloc.h``).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory():
    """Let glibc's ``malloc`` keep freed memory for reuse; whether it could (False off glibc).

    NumPy's temporaries in a training step are up to megabytes each. By
    default glibc maps such blocks fresh and returns them to the system when
    they are freed, so every step faults their pages in again, and page faults
    of two threads wait for each other. Blocks up to 32 MB (glibc's largest
    setting) now come from the heap, and the heap is not trimmed below 2 GB.
    Numbers do not change; only where arrays live.
    """
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_MMAP_THRESHOLD, 32 * 2**20)) and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))


def integer_at_least(low, high=None):
    """An argparse type: an integer ``>= low`` (and ``<= high``), with a message that says so."""
    what = "a positive integer" if low == 1 else "a non-negative integer" if low == 0 else f"an integer >= {low}"
    if high is not None:
        what += f" <= {high}"

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}; got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {what}; got {value}")
        return value

    parse.__name__ = what
    return parse


def positive_number(text):
    """An argparse type: a positive finite float, not subnormal (its reciprocal must be finite)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number; got {text!r}") from None
    if not sys.float_info.min <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number from {sys.float_info.min:g} to "
                                         f"{sys.float_info.max:g}; got {value}")
    return value
