"""Reference solution of exercise 17 (the helpers are those of the starter file)."""

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


def smoothed_loss(X, centers, tau=0.1):
    """Exercise 16: mean over tasks of sum_ij softmax_j(-r_ij / tau) r_ij."""
    r = anp.sum((X[..., :, None, :] - centers[..., None, :, :]) ** 2, axis=-1)
    s = -r / tau
    e = anp.exp(s - anp.max(s, axis=-1, keepdims=True))
    return anp.mean(anp.sum(anp.sum(e * r, axis=-1) / anp.sum(e, axis=-1), axis=-1))


def train_tiny_model(rng, n_steps=100, batch=16, lr=0.01):
    """100 Adam steps on the smoothed loss, from the Equation 5 warm start."""
    params, gamma = initial_params()

    def loss(params, X, init):
        return smoothed_loss(X, centers_after_one_layer(params, gamma, X, init))

    loss_grad = grad(loss)
    m = [np.zeros_like(W) for W in params]
    v = [np.zeros_like(W) for W in params]
    for t in range(1, n_steps + 1):
        X, init = make_tasks(rng, batch)
        for i, g in enumerate(loss_grad(params, X, init)):
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g**2
            params[i] = params[i] - lr * (m[i] / (1 - 0.9**t)) / (np.sqrt(v[i] / (1 - 0.999**t)) + 1e-8)
    return model_from_params(params, gamma)
