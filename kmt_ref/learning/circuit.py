"""The trained layer distilled block by block: each block's summary fitted to that block's own outputs.

With re-embedded tokens (points ``[x_i | 0]``, centers ``[c_j | e_j]``) one application of the layer is
three attention maps and the values they average::

    A = CAX's weights   (n, k)  each point over the centers
    S = SAX's weights   (n, n)  each point over the points
    W = CAC's weights   (k, n)  each center over the points, as CAX and SAX rewrote them
    c_j' = the x coordinates of c_j + (CAC's write)_j + (SAC's write)_j

Each block is replaced by a summary with a scalar or two, fitted on training tasks to what the block itself
computes there (least squares; a softmax's log-weights, centered over the keys of each query, are linear in
the summary's scalars)::

    values  c_j' = mu_0 c_j + sum_i W_ji (mu_1 x_i + mu_2 (S X)_i)    mu (3): the layer's moves c' - c
    SAX     S_il = softmax_l(-w ||x_i - x_l||^2)                        w:  SAX's log-weights
    CAC     W_ji = softmax_i(eta A_ij - zeta ||A_i||^2)                 eta, zeta: CAC's log-weights, A CAX's
    CAX     A_ij = softmax_j(-beta ||x_i - c_j||^2)                     beta: CAX's log-weights
                   (- alpha ||c_j||^2, a term shared by every id, when a fit gives center_penalty)

(the values' ``mu`` given the layer's own ``W`` and ``S``). Why these forms: composed through the blocks,
the value maps that carry ``x`` into a center (:func:`value_maps`) are each a multiple of the identity and a
rest, and the rests nearly cancel in their sum; what CAC's scores read of the points' keys is, to first
order, the assignment CAX wrote into them (the cross term, ``eta A_ij``) and its square (the keys' norm,
``zeta ||A_i||^2``). :data:`SUMMARIES` are the blocks that may be summarized; :func:`circuit_step` runs the
layer's own maps for the others, so that the fidelity lost by each summary is measured on its own
(``kmt_ref.programs.fidelity``). With SAX, CAC and the values summarized the circuit is built back into
exact transformer weights around the layer's own CAX, or around soft k-means's CAX at ``beta``
(:func:`circuit_transformer`).
"""

import numpy as np

from .._validation import check_batch, check_choice, check_instance, check_int
from ..attention import Block, attention_weights, softmax
from ..engine import Engine
from ..geometry import center_distances, squared_distances
from ..kernels.softmax import euclidean_softmax_attention
from ..layer import KMeansTransformer, transformer_layer
from ..tasks import draw_tasks
from ..variants.soft import responsibilities, soft_kmeans_transformer
from .analysis import attention_maps
from .config import TrainConfig
from .model import ModelConfig, blocks_from_params, to_transformer

__all__ = ["SUMMARIES", "FIT_SUBSETS", "value_maps", "fit_circuit", "circuit_step", "circuit_transformer"]

#: Query rows of the summarized SAX kernel computed at once (bounds its memory at ``ROWS * n``).
ROWS = 256
#: Disjoint slices of the fitting tasks, each fitted on its own (the spread over samples).
FIT_SUBSETS = 4
#: What a circuit may summarize; ``"values"`` always, ``"CAX"`` only with ``"CAC"`` (whose summary reads it).
SUMMARIES = ("values", "SAX", "CAC", "CAX")


def _centered(L):
    """Log-weights centered over the keys of each query (the last axis)."""
    return L - L.mean(axis=-1, keepdims=True)


class _LeastSquares:
    """Normal equations accumulated over tasks: ``target ~ sum_f coef_f feature_f``."""

    def __init__(self, n_features):
        self.gram, self.rhs, self.square = np.zeros((n_features, n_features)), np.zeros(n_features), 0.0

    def add(self, features, target):
        F = np.stack([f.ravel() for f in features], axis=1)
        self.gram += F.T @ F
        self.rhs += F.T @ target.ravel()
        self.square += float(np.sum(target * target))

    def __add__(self, other):
        total = _LeastSquares(len(self.rhs))
        total.gram, total.rhs = self.gram + other.gram, self.rhs + other.rhs
        total.square = self.square + other.square
        return total

    def solve(self):
        """The coefficients and the share of the target's square they explain."""
        coef = np.linalg.solve(self.gram, self.rhs)
        residual = self.square - 2 * coef @ self.rhs + coef @ self.gram @ coef
        return coef, float(1.0 - residual / self.square)


def _softmax_fit(weights, features):
    """Rows of ``weights`` (a softmax over the last axis) whose every weight is positive, their centered
    log-weights and the centered features there (a weight that underflowed to 0 has no logarithm)."""
    with np.errstate(divide="ignore"):
        L = np.log(weights)
    rows = np.all(np.isfinite(L), axis=-1)
    return [_centered(f)[rows] for f in features], _centered(L[rows])


def value_maps(theta, model_config):
    """The linear maps by which the layer's values carry ``x`` into the new centers, composed through the blocks.

    With SAC attending to its own center (a reset) and the values read off the blocks' ``Wv`` (their biases
    add a constant), a center's new ``x`` is ``keep c_j + sum_i W_ji (own x_i + smoothed (S X)_i +
    assignment (A C)_i)``, each map ``(d, d)``:

    * ``keep = I + Wv_SAC[x, x]``;
    * ``own = Wv_CAC[x, x]`` (CAC's values read a point's ``x``);
    * ``smoothed = Wv_CAC[x, :] Wv_SAX[:, x]`` (... the ``x`` and ``y`` SAX wrote from its neighbours' ``x``);
    * ``assignment = Wv_CAC[x, :] Wv_CAX[:, x]`` (... what CAX wrote from the centers' ``x``).

    The circuit's values are these maps as multiples of the identity (``mu_0, mu_1, mu_2``; the last map is
    left out).

    Parameters
    ----------
    theta : ndarray, shape (n_params,)
        The trained layer.
    model_config : ModelConfig
        Its shape (tokens ``[x | y]``).

    Returns
    -------
    dict
        ``{"keep", "own", "smoothed", "assignment": ndarray, shape (d, d)}``.
    """
    check_instance(model_config, "model_config", ModelConfig)
    if model_config.tokens != "d+k":
        raise ValueError(f"value_maps reads the [x | y] layer; got tokens={model_config.tokens!r}")
    blocks = blocks_from_params(theta, model_config)
    x = model_config.layout.slices["x"]
    V = {name: block.Wv for name, block in blocks.items()}
    return {"keep": np.eye(model_config.d) + V["SAC"][x, x], "own": V["CAC"][x, x],
            "smoothed": V["CAC"][x, :] @ V["SAX"][:, x], "assignment": V["CAC"][x, :] @ V["CAX"][:, x]}


def fit_circuit(theta, config, n_tasks=32, fit_seed=20_262, subsets=FIT_SUBSETS):
    """Each block's summary (module docstring) fitted to the trained layer's own outputs on training tasks.

    ``theta``, ``config``: the layer and its run's :class:`~kmt_ref.learning.config.TrainConfig`
    (tokens ``[x | y]``). Tasks are drawn from the training distribution with a stream of their own
    (``fit_seed``: no run's training, validation or evaluation tasks). Every fit is linear least squares: one
    minimum, whatever the start. The same fits on each of ``subsets`` disjoint slices of the tasks measure how
    much the sample matters.

    Parameters
    ----------
    theta : ndarray, shape (n_params,)
        The trained layer.
    config : TrainConfig
        Its run (the task distribution; tokens ``[x | y]``).
    n_tasks : int
        Training tasks fitted (each ``(n, d)`` points from its first ``k`` as centers).
    fit_seed : int
        Seed of the tasks' stream.
    subsets : int
        Disjoint slices of the tasks fitted on their own (1 to ``n_tasks``).

    Returns
    -------
    dict
        ``beta``, ``inv_width`` (``w``), ``sharpness`` (``eta``), ``penalty`` (``zeta``), ``mu`` (three
        floats, ``mu_0, mu_1, mu_2``); ``r2``: for each of
        ``"CAX"``, ``"SAX"``, ``"CAC"`` the share of the block's centered log-weights its summary explains, for
        ``"values"`` the share of the centers' moves ``c' - c``; ``subsets``: the scalars fitted on each slice;
        ``n_tasks``, ``fit_seed``.
    """
    check_instance(config, "config", TrainConfig)
    n_tasks = check_int(n_tasks, "n_tasks", low=1)
    subsets = check_int(subsets, "subsets", low=1, high=n_tasks)
    if config.model.tokens != "d+k":
        raise ValueError(f"the circuit reads the assignment CAX writes into y: tokens must be 'd+k'; "
                         f"got tokens={config.model.tokens!r}")
    X, init = draw_tasks(np.random.default_rng(fit_seed), n_tasks, init="first", **config.task_kwargs())
    model = to_transformer(theta, config.model)
    parts = [_fit_tasks(model, X[part], init[part]) for part in np.array_split(np.arange(n_tasks), subsets)]
    total = {name: sum((p[name] for p in parts[1:]), parts[0][name]) for name in parts[0]}
    fit, r2 = _solve(total)
    return dict(fit, r2=r2, subsets=[_solve(p)[0] for p in parts], n_tasks=n_tasks, fit_seed=fit_seed)


def _fit_tasks(model, X, init):
    """The normal equations of every summary on the tasks ``X`` (B, n, d), ``init`` (B, k, d)."""
    fits = {"CAX": _LeastSquares(1), "SAX": _LeastSquares(1), "CAC": _LeastSquares(2), "values": _LeastSquares(3)}
    for Xt, Ct in zip(X, init, strict=True):
        maps = attention_maps(model, Xt, Ct)
        A, S, W = maps["CAX"], maps["SAX"], maps["CAC"]
        fits["CAX"].add(*_softmax_fit(A, [-squared_distances(Xt, Ct)]))
        fits["SAX"].add(*_softmax_fit(S, [-squared_distances(Xt, Xt)]))
        fits["CAC"].add(*_softmax_fit(W, [A.T, -np.broadcast_to(np.sum(A * A, axis=1), W.shape)]))
        # the move c' - c on c (mu_0 - 1), W X and W S X
        fits["values"].add([Ct, W @ Xt, W @ (S @ Xt)], model.run(Xt, Ct, 1).centers[1] - Ct)
    return fits


def _solve(fits):
    (beta,), r2_cax = fits["CAX"].solve()
    (inv_width,), r2_sax = fits["SAX"].solve()
    (sharpness, penalty), r2_cac = fits["CAC"].solve()
    mu, r2_values = fits["values"].solve()
    scalars = dict(beta=float(beta), inv_width=float(inv_width), sharpness=float(sharpness),
                   penalty=float(penalty),
                   mu=[float(mu[0] + 1.0), float(mu[1]), float(mu[2])])
    return scalars, dict(CAX=r2_cax, SAX=r2_sax, CAC=r2_cac, values=r2_values)


def _check_summarized(summarized):
    summarized = tuple(summarized)
    for name in summarized:
        check_choice(name, "summarized", SUMMARIES)
    if "values" not in summarized or ("CAX" in summarized and "CAC" not in summarized):
        raise ValueError(f"summarized must hold 'values', and 'CAC' with 'CAX' (CAC's summary is what reads "
                         f"CAX's); got summarized={summarized!r}")
    return summarized


def _summary_cax(X, C, fit):
    """CAX's summary: ``softmax_j(-beta ||x_i - c_j||^2 - alpha ||c_j||^2)``, ``alpha`` (``center_penalty``) a
    term shared by every id, 0 unless a fit gives it."""
    alpha = fit.get("center_penalty", 0.0)
    if not alpha:
        return responsibilities(X, C, fit["beta"])
    return softmax(-fit["beta"] * center_distances(X, C) - alpha * np.sum(C * C, axis=-1)[..., None, :])


def circuit_step(theta, model_config, fit, X, C, summarized, engine=None):
    """One step of the circuit: the layer's own maps, the blocks in ``summarized`` replaced by their summaries.

    Parameters
    ----------
    theta : ndarray, shape (n_params,)
        The trained layer.
    model_config : ModelConfig
    fit : dict
        :func:`fit_circuit`'s scalars.
    X : ndarray, shape (B, n, d)
    C : ndarray, shape (B, k, d)
    summarized : sequence of str
        Members of :data:`SUMMARIES`: ``"values"``, and ``"CAC"`` with ``"CAX"``.
    engine : Engine, optional

    Returns
    -------
    ndarray, shape (B, k, d)
    """
    summarized = _check_summarized(summarized)
    check_instance(model_config, "model_config", ModelConfig)
    X = check_batch(X, C, "C")
    C = np.asarray(C, dtype=np.float64)
    engine = Engine() if engine is None else engine
    layout = model_config.layout
    blocks = blocks_from_params(theta, model_config)
    P, Q = layout.embed(X, C)
    if "SAX" in summarized:  # the kernel computed in rows of queries, for a fitted w of either sign
        SX = euclidean_softmax_attention(X, X, X, fit["inv_width"], rows=ROWS)
    else:
        sax = blocks["SAX"]
        SX = layout.read(engine.attend(P, P, Block(sax.Wq, sax.Wk, layout.projector("x"), gamma=sax.gamma,
                                                   bq=sax.bq, bk=sax.bk)), "x")
    if "CAC" in summarized:
        A = _summary_cax(X, C, fit) if "CAX" in summarized else attention_weights(P, Q, blocks["CAX"])
        W = softmax(fit["sharpness"] * np.swapaxes(A, -1, -2) - fit["penalty"] * np.sum(A * A, axis=-1)[..., None, :])
    else:
        P_new, _ = transformer_layer(P, Q, blocks, engine=engine)
        W = attention_weights(Q, P_new, blocks["CAC"])
    mu = fit["mu"]
    return mu[0] * C + W @ (mu[1] * X + mu[2] * SX)


def circuit_transformer(theta, model_config, fit, cax="layer"):
    """The circuit with SAX, CAC and the values summarized, as exact transformer weights.

    ``cax="layer"``: around the layer's own CAX (its scores; its values write the ids, so each point's ``y``
    becomes its weights ``A_i``); ``cax="summary"``: around soft k-means's CAX at ``beta``. Then SAX (the
    Gaussian kernel at ``w``) adds ``(mu_2 / mu_1) (S X)_i`` to each point's ``x``; CAC's Euclidean scores
    ``-||a e_j - b A_i||^2 = -a^2 + 2 a b A_ij - b^2 ||A_i||^2`` with ``b = sqrt(zeta)`` and
    ``a = eta / (2 b)`` are the summary's up to a constant per center, and its values ``mu_1 x'_i``; SAC's
    identity reset writes ``(mu_0 - 1) c_j``. The new centers are :func:`circuit_step`'s (tested). Needs
    ``w > 0`` and, around soft k-means's CAX, ``beta > 0`` (a softmax over distances prefers the nearest),
    ``zeta > 0`` (a norm is no negative penalty) and ``mu_1 != 0``. Code names: ``w`` is ``inv_width``,
    ``eta`` ``sharpness`` (as in leaky soft k-means), ``zeta`` ``penalty``.

    Parameters
    ----------
    theta : ndarray, shape (n_params,)
        The trained layer.
    model_config : ModelConfig
        Its shape (tokens ``[x | y]``, width ``d + k``).
    fit : dict
        :func:`fit_circuit`'s scalars.
    cax : {"layer", "summary"}

    Returns
    -------
    KMeansTransformer
        Token layout ``[x | y]`` of width ``d + k``; ``run(X, C, 1)`` gives the circuit's step.
    """
    check_instance(model_config, "model_config", ModelConfig)
    check_choice(cax, "cax", ("layer", "summary"))
    positive = ("inv_width", "penalty") + (("beta",) if cax == "summary" else ())
    if any(not fit[key] > 0 for key in positive) or fit["mu"][1] == 0:
        raise ValueError(f"the circuit's weights need {', '.join(positive)} > 0 (a kernel's width, a norm) and "
                         f"mu_1 != 0; got " + ", ".join(f"{key}={fit[key]}" for key in positive + ("mu",)))
    layout = model_config.layout
    P_x, P_y = layout.projector("x"), layout.projector("y")
    layer = blocks_from_params(theta, model_config)["CAX"]
    b = np.sqrt(fit["penalty"])
    mu = fit["mu"]
    blocks = {
        "CAX": (Block(layer.Wq, layer.Wk, P_y, gamma=layer.gamma, bq=layer.bq, bk=layer.bk) if cax == "layer"
                else soft_kmeans_transformer(model_config.d, model_config.k, fit["beta"]).blocks["CAX"]),
        "SAX": Block(P_x, P_x, (mu[2] / mu[1]) * P_x, gamma=fit["inv_width"]),  # the Gaussian kernel at w
        "CAC": Block(fit["sharpness"] / (2 * b) * P_y, b * P_y, mu[1] * P_x),
        "SAC": Block(P_y, P_y, (mu[0] - 1.0) * P_x, normalizer="identity"),
    }
    name = "the layer's CAX" if cax == "layer" else f"soft k-means's CAX (beta={fit['beta']:.3g})"
    return KMeansTransformer(layout, blocks, name=f"circuit around {name}")
