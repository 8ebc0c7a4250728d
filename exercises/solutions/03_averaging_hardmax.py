"""Reference solution of exercise 03."""

import numpy as np


def averaging_hardmax(scores):
    """Uniform weights over the arg-max set of each row (last axis)."""
    mask = (scores == scores.max(axis=-1, keepdims=True)).astype(float)
    return mask / mask.sum(axis=-1, keepdims=True)
