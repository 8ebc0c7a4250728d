"""Input checks, in one place.

Every public function calls these before doing any work, so a bad argument
fails with a ``ValueError`` that names the argument and the offending value
(``name=value``), and the caller's arrays are never modified: a checked array
is always a fresh float64 copy.
"""

import numbers

import numpy as np

#: Largest magnitude accepted in a data or center array: squared distances of
#: such values (up to ``D * (2 * 1e150)^2``) stay finite in float64.
MAX_ABS = 1e150

__all__ = [
    "check_data",
    "check_centers",
    "check_n_steps",
    "check_positive",
    "check_k",
    "check_fraction",
    "check_int",
    "check_bool",
]


def _describe(value):
    """A short repr of a bad value for an error message."""
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _as_float_matrix(name, value):
    """Convert ``value`` to a fresh float64 2-D array, refusing what cannot be."""
    arr = np.asarray(value)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating)
        or np.issubdtype(arr.dtype, np.integer)
        or arr.dtype == bool
    ):
        raise ValueError(
            f"{name} must be a real numeric array; got {name}={_describe(value)}"
        )
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D of shape (n, d); got {name}.ndim={arr.ndim} "
            f"({name}.shape={arr.shape})"
        )
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} must be non-empty; got {name}.shape={arr.shape}")
    # np.array copies: callers may modify the result without touching the input.
    out = np.array(arr, dtype=np.float64)
    if not np.all(np.isfinite(out)):
        bad = np.argwhere(~np.isfinite(out))[0]
        raise ValueError(
            f"{name} must be finite; got {name}[{bad[0]}, {bad[1]}]="
            f"{out[bad[0], bad[1]]}"
        )
    big = np.abs(out) > MAX_ABS
    if big.any():
        bad = np.argwhere(big)[0]
        raise ValueError(
            f"{name} must have every |entry| <= {MAX_ABS:g} (its squared distances must be finite in "
            f"float64); got {name}[{bad[0]}, {bad[1]}]={out[bad[0], bad[1]]:g}: rescale the data"
        )
    return out


def check_data(X):
    """Validate the data matrix.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Points as rows. Integer, boolean and float32 input is converted to
        float64; anything else (complex, strings, objects) is refused.

    Returns
    -------
    ndarray, shape (n, d)
        A float64 copy of ``X``.

    Raises
    ------
    ValueError
        Also when an entry exceeds :data:`MAX_ABS` in magnitude, or when the
        points differ by less than ``1e-150`` in every coordinate without
        being identical (squared distances would underflow to 0).
    """
    X = _as_float_matrix("X", X)
    spread = float(np.max(np.ptp(X, axis=0)))
    if 0.0 < spread < 1e-150:
        raise ValueError(
            f"X must spread more than 1e-150 in some coordinate (its squared distances underflow to 0 "
            f"otherwise); got a largest spread of {spread:g}: rescale the data"
        )
    return X


def check_centers(init, d, name="init", k=None):
    """Validate a center matrix against the data dimension ``d``.

    Parameters
    ----------
    init : array_like, shape (k, d)
    d : int
        Dimension the centers must have.
    name : str
        Argument name used in error messages.
    k : int, optional
        Number of centers required (a model built for ``k`` centers).

    Returns
    -------
    ndarray, shape (k, d)
        A float64 copy of ``init``.
    """
    C = _as_float_matrix(name, init)
    if C.shape[1] != d:
        raise ValueError(
            f"{name} must have d={d} columns like X; got {name}.shape={C.shape}"
        )
    if k is not None and C.shape[0] != k:
        raise ValueError(f"{name} must have k={k} rows; got {name}.shape={C.shape}")
    return C


def check_k(k, n, name="k"):
    """Validate a number of clusters: an integer with ``1 <= k <= n``."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise ValueError(f"{name} must be an integer; got {name}={_describe(k)}")
    if k < 1:
        raise ValueError(f"{name} must be >= 1; got {name}={k}")
    if n is not None and k > n:
        raise ValueError(f"{name} must be <= n={n} (number of points); got {name}={k}")
    return int(k)


def check_n_steps(value, name):
    """Validate an iteration or layer count: a non-negative integer."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(
            f"{name} must be a non-negative integer; got {name}={_describe(value)}"
        )
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer; got {name}={value}")
    return int(value)


def check_positive(value, name, allow_inf=False):
    """Validate a strictly positive real number (``gamma``, ``beta``, ``tau`` ...)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a positive number; got {name}={_describe(value)}")
    value = float(value)
    if np.isnan(value) or value <= 0 or (np.isinf(value) and not allow_inf):
        allowed = "a positive number or numpy.inf" if allow_inf else "a positive finite number"
        raise ValueError(f"{name} must be {allowed}; got {name}={value}")
    return value


def check_fraction(value, name, low=0.0, high=1.0):
    """Validate a real number in the half-open interval ``[low, high)``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number in [{low}, {high}); got {name}={_describe(value)}")
    value = float(value)
    if not (low <= value < high):
        raise ValueError(f"{name} must be in [{low}, {high}); got {name}={value}")
    return value


def check_int(value, name, low=None, high=None):
    """Validate an integer (Python or NumPy, not bool) in ``[low, high]``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer; got {name}={_describe(value)}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f">= {low}" if high is None else (f"<= {high}" if low is None else f"in [{low}, {high}]")
        raise ValueError(f"{name} must be an integer {bounds}; got {name}={value}")
    return value


def check_bool(value, name):
    """Validate a flag: Python or NumPy bool only (no strings, no numbers)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {name}={_describe(value)}")
    return bool(value)
