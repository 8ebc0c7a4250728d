"""Input checks, in one place (with ``kmt_ref._paths``, the checks of the paths a command reads or writes).

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
    "check_dims",
    "check_fraction",
    "check_finite",
    "check_int",
    "check_bool",
    "check_problem",
    "check_rng",
    "check_choice",
    "check_batch",
    "float_type",
    "MAX_STEPS",
]

#: Most iterations or layers one call may run (its trajectory keeps every one).
MAX_STEPS = 10**6


def _describe(value):
    """A short repr of a bad value for an error message."""
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_instance(value, name, cls):
    """Refuse a ``value`` that is not a ``cls`` (a model, a layout, a config ...)."""
    if not isinstance(value, cls):
        article = "an" if cls.__name__[0] in "AEIOU" else "a"
        raise ValueError(f"{name} must be {article} {cls.__name__}; got {name}={_describe(value)}")
    return value


def check_callable(value, name):
    """Validate a function argument (a step, a classical twin ...)."""
    if not callable(value):
        raise ValueError(f"{name} must be callable; got {name}={_describe(value)}")
    return value


def check_finite(A, name):
    """Refuse an array with a nan or an infinite entry, naming ``name``, the first such entry's index and its
    value; an ``autograd`` box is checked by its value. Returns ``A`` as given."""
    value = np.asarray(getattr(A, "_value", A))
    if not np.all(np.isfinite(value)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(value))[0])
        raise ValueError(f"{name} must be finite; got {name}[{', '.join(map(str, bad))}]={value[bad]}")
    return A


def check_name(value, name="name"):
    """Refuse anything but a non-empty string (a registry key)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string; got {name}={_describe(value)}")
    return value


def _as_float_array(name, value, shape="(n, d)", copy=True):
    """``value`` as a float64 array of the shape named by ``shape`` (``"(n, d)"`` or ``"(B, n, d)"``).

    Refuses what cannot be one: ragged, complex, string and object input, the
    wrong number of axes, empty axes, non-finite entries and entries above
    :data:`MAX_ABS`. A batch's errors name the task. ``copy=False`` returns
    ``value`` itself when it is already a float64 array; ``value`` may be an
    ``autograd`` box, whose value is checked and returned as given.
    """
    boxed = hasattr(value, "_value")
    try:
        arr = np.asarray(value._value if boxed else value)
    except ValueError:  # NumPy refuses ragged nested lists
        raise ValueError(f"{name} must be a rectangular numeric array; got {name}={_describe(value)}") from None
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating)
        or np.issubdtype(arr.dtype, np.integer)
        or arr.dtype == bool
    ):
        raise ValueError(
            f"{name} must be a real numeric array; got {name}={_describe(value)}"
        )
    ndim = shape.count(",") + 1
    if arr.ndim != ndim:
        raise ValueError(
            f"{name} must be {ndim}-D of shape {shape}; got {name}.ndim={arr.ndim} "
            f"({name}.shape={arr.shape})"
        )
    if min(arr.shape) < 1:
        raise ValueError(f"{name} must be non-empty; got {name}.shape={arr.shape}")
    # np.array copies: callers may modify the result without touching the input.
    out = np.array(arr, dtype=np.float64) if copy else np.asarray(arr, dtype=np.float64)
    if -MAX_ABS <= np.min(out) and np.max(out) <= MAX_ABS:  # two reductions; a nan fails both comparisons
        return value if boxed else out
    where = (lambda bad: f" (task {bad[0]})") if ndim == 3 else (lambda bad: "")
    finite = np.isfinite(out)
    if not finite.all():
        bad = tuple(int(i) for i in np.argwhere(~finite)[0])
        raise ValueError(f"{name} must be finite; got {name}{list(bad)}={out[bad]}{where(bad)}")
    big = np.abs(out) > MAX_ABS
    if big.any():
        bad = tuple(int(i) for i in np.argwhere(big)[0])
        raise ValueError(
            f"{name} must have every |entry| <= {MAX_ABS:g} (its squared distances must be finite in "
            f"float64); got {name}{list(bad)}={out[bad]:g}{where(bad)}: rescale the data"
        )
    return value if boxed else out


def _column_range(X, width=4096):
    """``np.ptp(X, axis=-2)``, each coordinate's largest minus its least value, for ``X`` of shape (..., n, d).

    NumPy reduces along the points axis a row of ``d`` numbers at a time (at ``d = 2`` that is 15 times
    slower than a reduction of the same numbers in long rows), so ``X`` is read as rows of ``width``
    numbers, ``width // d`` points each, and those rows' maxima and minima are reduced again: the same
    values (a maximum does not round).
    """
    n, d = X.shape[-2:]
    batch = X.shape[:-2]
    r = max(1, width // d)  # points per long row
    full = n // r * r
    rows = X[..., :full, :].reshape(batch + (full // r, r * d))
    hi, lo = np.full(batch + (d,), -np.inf), np.full(batch + (d,), np.inf)
    if full:
        hi = np.max(rows, axis=-2).reshape(batch + (r, d)).max(axis=-2)
        lo = np.min(rows, axis=-2).reshape(batch + (r, d)).min(axis=-2)
    if full < n:
        hi = np.maximum(hi, np.max(X[..., full:, :], axis=-2))
        lo = np.minimum(lo, np.min(X[..., full:, :], axis=-2))
    return hi - lo


def _check_spread(X):
    """Refuse points that differ by less than 1e-150 in every coordinate without being identical
    (their squared distances underflow to 0); ``X`` of shape (n, d) or (B, n, d), per task."""
    spread = np.max(_column_range(X), axis=-1)  # () or (B,)
    tiny = (spread > 0) & (spread < 1e-150)
    if np.any(tiny):
        task = f" in task {int(np.argwhere(tiny)[0][0])}" if np.ndim(spread) else ""
        raise ValueError(
            f"X must spread more than 1e-150 in some coordinate (its squared distances underflow to 0 "
            f"otherwise); got a largest spread of {float(np.max(np.where(tiny, spread, 0))):g}{task}: "
            "rescale the data"
        )


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
    X = _as_float_array("X", X)
    _check_spread(X)
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
    C = _as_float_array(name, init)
    if C.shape[1] != d:
        raise ValueError(
            f"{name} must have d={d} columns like X; got {name}.shape={C.shape}"
        )
    if k is not None and C.shape[0] != k:
        raise ValueError(f"{name} must have k={k} rows; got {name}.shape={C.shape}")
    return C


def check_k(k, n, name="k"):
    """Validate a number of clusters: an integer with ``1 <= k <= n``."""
    k = _scalar(k)
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise ValueError(f"{name} must be an integer; got {name}={_describe(k)}")
    if k < 1:
        raise ValueError(f"{name} must be >= 1; got {name}={k}")
    if n is not None and k > n:
        raise ValueError(f"{name} must be <= n={n} (number of points); got {name}={k}")
    return int(k)


def check_dims(d, k):
    """The dimension and number of centers of a construction: two integers ``>= 1``, as ``(d, k)``."""
    return check_int(d, "d", low=1), check_int(k, "k", low=1)


def check_n_steps(value, name):
    """Validate an iteration or layer count: an integer in ``[0, MAX_STEPS]`` (0-d arrays too)."""
    value = _scalar(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(
            f"{name} must be a non-negative integer; got {name}={_describe(value)}"
        )
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer; got {name}={value}")
    if value > MAX_STEPS:
        raise ValueError(f"{name} must be at most {MAX_STEPS} (every step is kept); got {name}={value}")
    return int(value)


def _scalar(value):
    """A 0-d NumPy array as its scalar (``np.array(3)`` means 3); anything else as given."""
    return value[()] if isinstance(value, np.ndarray) and value.ndim == 0 else value


def is_batch(X):
    """Whether ``X`` is a batch of tasks, an array of shape (B, n, d) (anything else: the
    one-task checks, which name what is wrong)."""
    try:
        return np.ndim(X) == 3
    except ValueError:  # a ragged nested list
        return False


def check_problem(X, init, n_steps, name="n_iter", batch=False):
    """Validate a clustering problem: data, initial centers (``k <= n``) and a step count.

    ``batch=True`` also accepts a batch of tasks, ``X`` of shape (B, n, d)
    with ``init`` of shape (B, k, d).

    Returns
    -------
    X : ndarray, shape (n, d) or (B, n, d)
    C : ndarray, shape (k, d) or (B, k, d)
        Float64 copies.
    n_steps : int
    """
    if batch and is_batch(X):
        X = check_batch(X, init).copy()
        C = np.array(init, dtype=np.float64)
        check_k(C.shape[1], X.shape[1], name="k (rows of init)")
        return X, C, check_n_steps(n_steps, name)
    X = check_data(X)
    C = check_centers(init, X.shape[1])
    check_k(C.shape[0], X.shape[0], name="k (rows of init)")
    return X, C, check_n_steps(n_steps, name)


def check_positive(value, name, allow_inf=False):
    """Validate a strictly positive real number (``gamma``, ``beta``, ``tau`` ...)."""
    value = _scalar(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a positive number; got {name}={_describe(value)}")
    value = float(value)
    if np.isnan(value) or value <= 0 or (np.isinf(value) and not allow_inf):
        allowed = "a positive number or numpy.inf" if allow_inf else "a positive finite number"
        raise ValueError(f"{name} must be {allowed}; got {name}={value}")
    return value


def check_positive_values(values, name):
    """Validate a non-empty 1-D sequence of positive finite numbers (a list of ``gamma`` values ...)."""
    try:
        out = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        out = None
    if out is None or out.ndim != 1 or out.size < 1 or not np.all(np.isfinite(out) & (out > 0)):
        raise ValueError(f"{name} must be a non-empty 1-D array of positive finite numbers; "
                         f"got {name}={_describe(values)}")
    return out


def check_fraction(value, name, low=0.0, high=1.0):
    """Validate a real number in the half-open interval ``[low, high)``."""
    value = _scalar(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number in [{low}, {high}); got {name}={_describe(value)}")
    value = float(value)
    if not (low <= value < high):
        raise ValueError(f"{name} must be in [{low}, {high}); got {name}={value}")
    return value


def check_int(value, name, low=None, high=None):
    """Validate an integer (Python or NumPy, not bool) in ``[low, high]``."""
    value = _scalar(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer; got {name}={_describe(value)}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f">= {low}" if high is None else (f"<= {high}" if low is None else f"in [{low}, {high}]")
        raise ValueError(f"{name} must be an integer {bounds}; got {name}={value}")
    return value


def check_projection(Z, W, b):
    """Validate the operands of ``Z @ W.T + b``: ``Z`` (..., m, D), ``W`` (D', D), ``b`` (D',) or None."""
    zs, ws, bs = np.shape(Z), np.shape(W), None if b is None else np.shape(b)
    if len(zs) < 2 or len(ws) != 2 or zs[-1] != ws[1] or (bs is not None and bs != ws[:1]):
        raise ValueError("a projection needs Z of shape (..., m, D), W of shape (D', D) and b of shape (D',) "
                         f"or None; got Z.shape={zs}, W.shape={ws}, b.shape={bs}")


def check_bool(value, name):
    """Validate a flag: Python or NumPy bool only (no strings, no numbers)."""
    value = _scalar(value)
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {name}={_describe(value)}")
    return bool(value)


def check_rng(rng, name="rng", why=""):
    """Validate a random generator: a ``numpy.random.Generator`` (the only source of draws)."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"{name} must be a numpy.random.Generator{why}; got {name}={_describe(rng)}")
    return rng


def check_choice(value, name, choices):
    """Validate one of a fixed set of options (strings such as a family or a policy)."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}; got {name}={_describe(value)}")
    return value


def check_batch(X, centers, centers_name="init", finite_centers=True):
    """Validate a batch of tasks: ``X`` of shape (B, n, d), centers of shape (B, k, d).

    Each task gets the checks of a single task (:func:`check_data`,
    :func:`check_centers`), and an error names the task. Learning code calls
    this inside training, so nothing is copied and ``centers`` may be an
    ``autograd`` array box (its value is checked). ``finite_centers=False``
    lets non-finite centers through (an evaluation reports a diverged
    iteration instead of refusing it), finite ones still within :data:`MAX_ABS`.

    Returns
    -------
    X : ndarray, shape (B, n, d)
        As a float64 array (no copy when it already is one).
    """
    X = _as_float_array("X", X, "(B, n, d)", copy=False)
    _check_spread(X)
    value = np.asarray(getattr(centers, "_value", centers))
    if value.ndim != 3:
        raise ValueError(f"X and {centers_name} must have shapes (B, n, d) and (B, k, d); "
                         f"got X.shape={X.shape}, {centers_name}.shape={value.shape}")
    if value.shape[0] != X.shape[0] or value.shape[2] != X.shape[2]:
        raise ValueError(f"{centers_name} must have X's batch size and dimension (B={X.shape[0]}, "
                         f"d={X.shape[2]}); got {centers_name}.shape={value.shape}")
    if finite_centers:
        _as_float_array(centers_name, value, "(B, k, d)", copy=False)
    elif value.dtype == object or not np.issubdtype(value.dtype, np.number) or np.iscomplexobj(value):
        raise ValueError(f"{centers_name} must be a real numeric array; got {centers_name}={_describe(centers)}")
    else:  # non-finite centers pass (a diverged task); finite ones must still be in range
        with np.errstate(invalid="ignore"):
            huge = np.isfinite(value) & (np.abs(value) > MAX_ABS)
        if np.any(huge):
            bad = tuple(int(i) for i in np.argwhere(huge)[0])
            raise ValueError(f"{centers_name} must be non-finite (a diverged task) or of magnitude at most "
                             f"{MAX_ABS:g}; got {centers_name}{list(bad)}={value[bad]}")
    return X


def float_type(value):
    """``numpy.float32`` if ``value`` (or the array an ``autograd`` box holds) is float32, else ``numpy.float64``:
    the precision a computation on it runs in (float32 only in a float32 training step)."""
    while hasattr(value, "_value"):
        value = value._value
    return np.float32 if np.result_type(value) == np.float32 else np.float64
