"""The symmetric layer: every symmetry of the task law (ids, coordinate permutations, reflections x_l -> 1 - x_l)
by construction, four scalars a map."""

import numpy as np
import pytest

from kmt_ref import lloyd_transformer
from kmt_ref.learning.model import ModelConfig, init_params, params_from_transformer, run_steps
from kmt_ref.learning.sharing import symmetric_scalars, tie
from kmt_ref.programs.fidelity import cube_symmetries, group_averaged_step
from kmt_ref.tasks import sample_tasks


def test_forty_eight_scalars_at_every_size_and_an_initialization_that_does_not_depend_on_k():
    assert {ModelConfig(d, k, symmetric=True).n_params for d in (1, 2, 32) for k in (1, 3, 10)} == {48}
    a = init_params(ModelConfig(4, 3, symmetric=True), np.random.default_rng(0))
    b = init_params(ModelConfig(4, 9, symmetric=True), np.random.default_rng(0))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="symmetric=True"):
        ModelConfig(2, 3, tied=True, symmetric=True)
    with pytest.raises(ValueError, match="symmetric=True"):
        ModelConfig(2, 3, tokens="d", symmetric=True)


def test_the_layer_commutes_with_every_symmetry_of_the_task_law():
    config = ModelConfig(3, 4, symmetric=True)
    theta = 3 * init_params(config, np.random.default_rng(1))  # far from 0: every scalar matters
    X, init = sample_tasks(np.random.default_rng(2), 5, 30, 3, 4)
    own = run_steps(theta, X, init, config, 2)[1:]
    for element in cube_symmetries(np.random.default_rng(3), 4, 3, 6):
        step = group_averaged_step(theta, config, [element])
        np.testing.assert_allclose(step(X, init), own[0], rtol=0, atol=1e-13)
    # and the untied layer does not (a random one moves by a large part of its step)
    untied = ModelConfig(3, 4)
    theta_u = init_params(untied, np.random.default_rng(1))
    one = run_steps(theta_u, X, init, untied, 1)[1]
    other = group_averaged_step(theta_u, untied, cube_symmetries(np.random.default_rng(4), 4, 3, 1))(X, init)
    assert np.max(np.abs(other - one)) > 1e-3


def test_the_construction_is_a_symmetric_layer():
    # Equation 5's all-attention weights at a finite gamma: every map alpha I on x and lambda I + nu 1 1^T on the
    # ids, the biases 0; as a symmetric layer its x biases are -alpha / 2, which cancel (q against k; the
    # update's -1/2 against the reset's +1/2): the same centers, to rounding.
    phi, tied = tie(*params_from_transformer(lloyd_transformer(2, 3, gamma=30.0, config="all-attention")))
    d, pieces = 2, []
    for b in range(4):
        block = phi[b * 3 * (d * d + 2 * d + 2 + d + 1) :]
        mats = [block[i * (d * d + 2 * d + 2) : (i + 1) * (d * d + 2 * d + 2)] for i in range(3)]
        biases = [block[3 * (d * d + 2 * d + 2) + i * (d + 1) : 3 * (d * d + 2 * d + 2) + (i + 1) * (d + 1)]
                  for i in range(3)]
        for m in mats:
            assert m[1] == m[2] == 0 and np.all(m[d * d : d * d + 2 * d] == 0)  # alpha I, no x-id maps
            pieces += [m[0], m[-2], m[-1]]
        pieces += [bias[-1] for bias in biases]
    config = ModelConfig(2, 3, symmetric=True)
    theta = np.array(pieces)
    X, init = sample_tasks(np.random.default_rng(5), 4, 25, 2, 3)
    np.testing.assert_allclose(run_steps(theta, X, init, config, 3), run_steps(phi, X, init, tied, 3),
                               rtol=0, atol=1e-12)
    named = symmetric_scalars(theta, config)
    assert named["CAC"]["v"]["alpha"] == 1.0 and named["SAC"]["v"]["alpha"] == -1.0


def test_the_step_written_out_in_its_scalars_is_the_layer_s_step():
    # symmetric_step is the layer's algorithm in 48 scalars (four softmaxes and three means); the library runs
    # the tokens through transformer_layer. Random scalars, far from 0, and a second size.
    from kmt_ref.learning.sharing import symmetric_step

    for d, k, seed in ((3, 4, 1), (5, 2, 6)):
        config = ModelConfig(d, k, symmetric=True)
        theta = 3 * init_params(config, np.random.default_rng(seed))
        X, init = sample_tasks(np.random.default_rng(seed + 1), 4, 30, d, k)
        step = run_steps(theta, X, init, config, 1)[1]
        assert np.max(np.abs(step - init)) > 0.05
        np.testing.assert_allclose(symmetric_step(theta, config, X, init), step, rtol=0, atol=1e-13)


def test_the_written_out_step_refuses_what_it_cannot_read():
    from kmt_ref.learning.sharing import symmetric_step

    config = ModelConfig(2, 3, symmetric=True)
    theta = init_params(config, np.random.default_rng(0))
    X, init = sample_tasks(np.random.default_rng(1), 2, 10, 2, 3)
    with pytest.raises(ValueError, match="init"):
        symmetric_step(theta, config, X, init[:1])
    with pytest.raises(ValueError, match="symmetric"):
        symmetric_scalars(init_params(ModelConfig(2, 3), np.random.default_rng(0)), ModelConfig(2, 3))
