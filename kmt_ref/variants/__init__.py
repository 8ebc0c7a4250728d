"""Variants of the k-means transformer: change one mechanism, get another algorithm."""
