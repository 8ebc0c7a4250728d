"""Exercise 17 (hard) - chapter "Learning a clustering layer".

Check your answer: ``python -m kmt_ref.exercises check 17``

The helpers below are complete; write ``train_tiny_model``.
"""

import autograd.numpy as anp
import numpy as np
from autograd import grad

from kmt_ref import BLOCK_NAMES, Block, KMeansTransformer, TokenLayout, gaussian_mixture, transformer_layer
from kmt_ref.lloyd_transformer import equation5_weights

D_DATA, K, N_POINTS = 2, 3, 32
LAYOUT = TokenLayout(D_DATA, K)


def make_tasks(rng, n_tasks):
    """A batch of tasks: X (n_tasks, 32, 2) and initial centers (n_tasks, 3, 2)."""
    tasks = [gaussian_mixture(rng, n=N_POINTS, d=D_DATA, k=K)[:2] for _ in range(n_tasks)]
    return np.array([t[0] for t in tasks]), np.array([t[1] for t in tasks])


def initial_params(gamma=10.0):
    """A warm start: the Equation 5 weights, as a flat list of 12 matrices, and gamma."""
    W = equation5_weights(LAYOUT)
    return [np.array(W[b][i], dtype=float) for b in BLOCK_NAMES for i in range(3)], gamma


def model_from_params(params, gamma):
    """The one-layer model: four Euclidean softmax blocks with the given 12 matrices."""
    blocks = {
        b: Block(*params[3 * i : 3 * i + 3], score="euclidean", normalizer="softmax", gamma=gamma)
        for i, b in enumerate(BLOCK_NAMES)
    }
    return KMeansTransformer(LAYOUT, blocks, name="tiny learned model")


def centers_after_one_layer(params, gamma, X, init):
    """Differentiable forward pass on a batch: centers (B, k, d) after one layer."""
    model = model_from_params(params, gamma)
    P, Q = LAYOUT.embed(X, init)
    P, Q = transformer_layer(P, Q, model.blocks)
    return Q[..., : D_DATA]


def train_tiny_model(rng):
    """Train the one-layer model for 100 steps so that it beats one Lloyd step.

    Loss: the smoothed k-means loss of exercise 16 (tau = 0.1) of the centers
    after one layer, averaged over a batch of 16 fresh tasks per step. Start
    from ``initial_params()``, take 100 Adam steps (learning rate 0.01,
    betas 0.9 / 0.999) on the 12 matrices with ``autograd.grad``, and return
    ``model_from_params(params, gamma)``.

    The check runs the model for one layer on 64 held-out tasks and passes if
    the mean k-means objective is at least 1% LOWER than after one Lloyd step
    from the same initial centers (the exact construction only ties). Keep it
    to a few seconds.

    Parameters
    ----------
    rng : numpy.random.Generator
        All randomness (the training tasks) must come from it.

    Returns
    -------
    kmt_ref.KMeansTransformer

    Hint: ``grad(loss)(params, X, init)`` differentiates with respect to the
    first argument, a list of arrays, and returns a list of the same shapes.
    Adam, per matrix: ``m = 0.9 m + 0.1 g``; ``v = 0.999 v + 0.001 g**2``;
    ``W -= lr * (m / (1 - 0.9**t)) / (sqrt(v / (1 - 0.999**t)) + 1e-8)``.
    """
    raise NotImplementedError("exercise 17: write train_tiny_model")
