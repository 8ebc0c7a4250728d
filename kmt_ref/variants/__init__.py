"""Variants of the k-means transformer: change one mechanism, get another algorithm.

Importing the package registers every variant in :data:`~kmt_ref.variants.registry.VARIANTS`,
in the book's order.
"""

# isort: off
from . import soft, spherical, trimmed, robust, kmedoids, entmax, leaky  # noqa: F401  (each registers itself)
# isort: on
from .registry import VARIANTS, Variant, register_variant

__all__ = ["VARIANTS", "Variant", "register_variant"]
