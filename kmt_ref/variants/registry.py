"""The variants as data: each is a classical algorithm and the transformer that realizes it.

A variant module describes itself with a :class:`Variant` and registers it
(:func:`register_variant`). Everything that treats the variants alike reads
:data:`VARIANTS`: ``python -m kmt_ref verify`` checks each transformer
against its classical twin at each of its parameter values, the common test
(``tests/test_variants_common.py``) does the same on random problems, and the
book's table of variants lists what each one changes in Theorem 2.1.

Adding a variant (the walk-through is entmax-1.5 k-means, ``entmax.py``): write
its normalizer (registered with :func:`kmt_ref.attention.register_normalizer`
if it is new), its classical algorithm and transformer in one module ending in
``register_variant(Variant(...))``, import that module in
``kmt_ref/variants/__init__.py``, and give it a book page.
"""

import numbers
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._validation import check_bool, check_callable, check_instance, check_int, check_name

__all__ = ["Variant", "VARIANTS", "register_variant", "EXACT_TOL", "validated_mechanisms"]

#: Tolerance of an "exact" claim (the transformer and its twin agree to rounding).
EXACT_TOL = 1e-10


@dataclass(frozen=True)
class Variant:
    """One variant of the k-means transformer.

    Attributes
    ----------
    name : str
        Short label (``verify`` rows, tables), e.g. ``"robust (sparsemax)"``.
    classical : callable
        ``classical(X, init, n_iter, **{parameter: value})`` (and ``rng=``
        when ``needs_rng``) -> :class:`~kmt_ref.trajectory.Trajectory`. One
        task, ``X`` of shape (n, d): a batch is refused with a ``ValueError``
        (the classical twins are the readable statement of each algorithm;
        the transformer runs batches, each task as it runs alone; both are
        checked by the common test).
    transformer : callable
        ``transformer(d, k, **{parameter: value})`` -> the
        :class:`~kmt_ref.layer.KMeansTransformer` that realizes ``classical``.
    parameter : str or None
        The variant's parameter (``"beta"``, ``"a"``, ...), or None.
    values : tuple of float
        The parameter values that are checked (``(None,)`` without a parameter).
    change : str
        What changes from Theorem 2.1, in a line.
    tolerance : callable, optional
        ``tolerance(X, value)``: the float64 deviation allowed between the two
        (default :data:`EXACT_TOL`).
    needs_rng : bool
        Both sides draw random numbers; they are given generators with the same seed.
    centered : bool
        The variant works on centred data (spherical k-means: directions need an origin).
    min_d : int
        Smallest dimension the claim covers.
    objective_points : callable, optional
        ``objective_points(X)``: the points whose objective is reported (default ``X``).
    init_in_data : bool
        The initial centers must be rows of ``X`` (k-medoids: a center is a data point).
    assumes_unique_nearest : bool
        The exactness claim assumes every point has a unique nearest center
        (hard assignments; ``False`` for soft k-means, whose softmax is continuous).
    mechanisms : callable, optional
        ``mechanisms(d, value)``: what the variant's proposition states of each block at ``value``, the
        parameter its classical twin takes (:func:`validated_mechanisms` and the lemma that reads it,
        :func:`kmt_ref.symbolic_variants.mechanism_lemma`): "soft k-means at beta = 3" is CAX's softmax at
        ``gamma = 3``, and a model built at 6 fails it.
    """

    name: str
    classical: Callable
    transformer: Callable
    parameter: str | None
    values: tuple
    change: str
    tolerance: Callable | None = None
    needs_rng: bool = False
    centered: bool = False
    min_d: int = 1
    objective_points: Callable | None = None
    init_in_data: bool = False
    assumes_unique_nearest: bool = True
    mechanisms: Callable | None = None

    def __post_init__(self):
        check_name(self.name)
        for field in ("classical", "transformer"):
            check_callable(getattr(self, field), field)
        for field in ("tolerance", "objective_points", "mechanisms"):
            if getattr(self, field) is not None:
                check_callable(getattr(self, field), field)
        if not isinstance(self.change, str):
            raise ValueError(f"change must be a string (what the variant changes, in a line); "
                             f"got change={self.change!r}")
        if self.parameter is not None:
            check_name(self.parameter, "parameter")
        if self.parameter is None:
            if tuple(self.values) != (None,):
                raise ValueError(f"a variant without a parameter has values=(None,); got values={self.values!r}")
        elif not self.values or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) and 0 < v < np.inf
                                        for v in self.values):
            raise ValueError(f"values must be positive finite numbers of {self.parameter}; got values={self.values!r}")
        check_int(self.min_d, "min_d", low=1)
        for field in ("needs_rng", "centered", "init_in_data", "assumes_unique_nearest"):
            check_bool(getattr(self, field), field)
        object.__setattr__(self, "values", tuple(self.values))

    def _kwargs(self, value):
        return {} if self.parameter is None else {self.parameter: value}

    def build(self, d, k, value=None):
        """The transformer for ``d, k`` at ``value`` (default: the first of ``values``)."""
        return self.transformer(d, k, **self._kwargs(self.values[0] if value is None else value))

    def allowed(self, X, value):
        """The deviation allowed on data ``X`` at ``value``.

        An exact variant is allowed rounding: ``EXACT_TOL`` relative to the data's largest
        coordinate (at least 1), since far from the origin one unit in the last place is larger.
        """
        if self.tolerance is None:
            return EXACT_TOL * max(1.0, float(np.max(np.abs(X))))
        return float(self.tolerance(X, value))

    def problem(self, X, init):
        """The data and initial centers the variant runs on (centred when it needs an origin)."""
        if not self.centered:
            return X, init
        mean = X.mean(axis=0)
        return X - mean, init - mean

    def run_both(self, X, init, n_iter, value, seed=0):
        """``(transformer trajectory, classical trajectory)`` on the same problem and, if needed, the same draws."""
        X, init = self.problem(np.asarray(X, dtype=float), np.asarray(init, dtype=float))
        model = self.build(X.shape[1], init.shape[0], value)
        if self.needs_rng:
            return (model.run(X, init, n_iter, rng=np.random.default_rng(seed)),
                    self.classical(X, init, n_iter, **self._kwargs(value), rng=np.random.default_rng(seed)))
        return model.run(X, init, n_iter), self.classical(X, init, n_iter, **self._kwargs(value))


def validated_mechanisms(**changed):
    """The mechanisms of the validated Theorem 2.1 layer at ``gamma = inf`` (Euclidean hardmax CAX, identity
    SAX and SAC, linear CAC on dot scores), with the ``changed`` blocks (``CAX={...}``) and, as ``norm``, a
    normalization between layers: a variant's statement of its blocks (``Variant.mechanisms``). A CAC
    on Euclidean scores also states its id weight ``G`` and distance weight ``eps``."""
    base = {"CAX": {"score": "euclidean", "normalizer": "hardmax"}, "SAX": {"normalizer": "identity"},
            "CAC": {"score": "dot", "normalizer": "linear"}, "SAC": {"normalizer": "identity"}}
    return {**base, **changed}


#: Registered variants by name, in registration order.
VARIANTS = {}


def register_variant(variant):
    """Add ``variant`` to :data:`VARIANTS` (a name may be registered once)."""
    check_instance(variant, "variant", Variant)
    if variant.name in VARIANTS:
        raise ValueError(f"name={variant.name!r} is already a registered variant")
    VARIANTS[variant.name] = variant
    return variant
