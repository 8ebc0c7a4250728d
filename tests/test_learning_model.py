import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from autograd.test_util import check_grads

from kmt_ref import lloyd_transformer
from kmt_ref.engine import REFERENCE, Engine
from kmt_ref.kernels import euclidean_softmax_attention, project
from kmt_ref.learning.config import TrainConfig
from kmt_ref.learning.model import (
    ModelConfig,
    forward,
    init_params,
    params_from_transformer,
    run_steps,
    to_transformer,
    unflatten,
)
from kmt_ref.learning.train import batch_loss
from kmt_ref.tasks import gaussian_mixture, sample_tasks


@pytest.mark.parametrize("rows", [5, 2])
def test_fused_attention_vjp_passes_check_grads(rows):
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(2, 5, 3)), rng.normal(size=(2, 7, 3)), rng.normal(size=(2, 7, 4))
    check_grads(lambda q, k, v: euclidean_softmax_attention(q, k, v, 0.7, rows), modes=["rev"], order=1)(q, k, v)


def test_fused_attention_in_chunks_has_the_gradient_of_its_chunks_as_separate_nodes():
    # The chunks' key and value gradients are summed in the order autograd sums separate nodes.
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(2, 7, 3)), rng.normal(size=(2, 6, 3)), rng.normal(size=(2, 6, 4))
    weight = rng.normal(size=(2, 7, 4))

    def chunked(q, k, v):
        return anp.sum(euclidean_softmax_attention(q, k, v, 0.7, 2) * weight)

    def separate(q, k, v):
        parts = [euclidean_softmax_attention(q[:, a : a + 2], k, v, 0.7, 2) for a in range(0, 7, 2)]
        return anp.sum(anp.concatenate(parts, axis=1) * weight)

    for i in range(3):
        np.testing.assert_array_equal(autograd.grad(chunked, i)(q, k, v), autograd.grad(separate, i)(q, k, v))


@pytest.mark.parametrize("shape", [(3, 5, 4), (5, 4)])
def test_projection_gradient_is_autograds_bit_for_bit(shape):
    rng = np.random.default_rng(2)
    Z, W, b = rng.normal(size=shape), rng.normal(size=(6, 4)), rng.normal(size=6)
    G = rng.normal(size=shape[:-1] + (6,))
    check_grads(project, modes=["rev"], order=1)(Z, W, b)
    for i in range(3):
        ours = autograd.grad(lambda *a: anp.sum(project(*a) * G), i)(Z, W, b)
        plain = autograd.grad(lambda Z, W, b: anp.sum((anp.matmul(Z, anp.swapaxes(W, -1, -2)) + b) * G), i)(Z, W, b)
        np.testing.assert_array_equal(ours, plain)
    np.testing.assert_array_equal(project(Z, W, None), Z @ W.T)


def _tiny():
    config = TrainConfig(d=2, k=3, n=12, batch=2, tau=0.5)
    rng = np.random.default_rng(1)
    theta = init_params(config.model, rng)
    X, init = sample_tasks(rng, config.batch, **config.task_kwargs())
    return config, theta, X, init


def test_training_loss_gradient_passes_check_grads_on_a_tiny_model():
    config, theta, X, init = _tiny()
    check_grads(lambda th: batch_loss(th, X, init, config), modes=["rev"], order=1)(theta)


def test_fused_and_reference_attention_give_the_same_loss_and_gradient():
    config, theta, X, init = _tiny()
    grad = autograd.value_and_grad(batch_loss)
    fused = grad(theta, X, init, config, Engine())
    generic = grad(theta, X, init, config, REFERENCE)
    np.testing.assert_allclose(fused[0], generic[0], rtol=1e-12)
    np.testing.assert_allclose(fused[1], generic[1], rtol=1e-9, atol=1e-12)


def test_loaded_hand_built_model_reproduces_lloyd_transformer():
    d, k = 2, 3
    built = lloyd_transformer(d, k, gamma=30.0, config="all-attention")
    theta, config = params_from_transformer(built)
    assert config == ModelConfig(d, k, "d+k")
    X, init = sample_tasks(np.random.default_rng(2), 3, 15, d, k)
    ours = run_steps(theta, X, init, config, 4, reembed=True)
    for t in range(3):
        # far from Lloyd at gamma = 30 (the run would say so): compared as it is
        ref = built.run(X[t], init[t], 4, reembed=True, warn=False).centers
        np.testing.assert_allclose(ours[:, t], ref, atol=1e-12)
    np.testing.assert_allclose(forward(theta, X, init, config), ours[1], atol=1e-12)
    # and back: the learnable parameters as a KMeansTransformer run the same way
    again = to_transformer(theta, config).run(X[0], init[0], 4, reembed=True).centers
    np.testing.assert_allclose(again, ours[:, 0], atol=1e-12)


def test_learned_format_scales_query_and_key_by_the_sqrt_d_factor():
    built = lloyd_transformer(2, 3, gamma=4.0, config="all-attention")
    theta, config = params_from_transformer(built)
    p = unflatten(theta, config)
    s = np.sqrt(4.0 * np.sqrt(config.width))
    np.testing.assert_allclose(p["CAX"]["Wq"], s * built.blocks["CAX"].Wq)
    np.testing.assert_allclose(p["SAC"]["Wv"], built.blocks["SAC"].Wv)


def test_only_euclidean_softmax_models_can_be_loaded():
    with pytest.raises(ValueError, match="softmax"):
        params_from_transformer(lloyd_transformer(2, 3))  # hardmax / identity / linear blocks


def test_d_only_model_has_tokens_of_width_d():
    config = ModelConfig(4, 3, "d")
    assert config.width == 4 and config.n_params == 4 * 3 * (16 + 4)
    X, init = sample_tasks(np.random.default_rng(0), 2, 10, 4, 3)
    out = forward(init_params(config, np.random.default_rng(0)), X, init, config)
    assert out.shape == (2, 3, 4)


@pytest.mark.parametrize("kwargs, match", [(dict(d=0, k=3), "d"), (dict(d=2, k=3, tokens="onehot"), "tokens")])
def test_bad_model_config_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ModelConfig(**kwargs)


def test_wrong_parameter_vector_raises():
    with pytest.raises(ValueError, match="theta"):
        unflatten(np.zeros(5), ModelConfig(2, 3))


def test_training_step_timing_compares_fused_and_generic_gradients():
    from kmt_ref.programs.training_bench import format_training_step, time_training_step

    res = time_training_step(n=16, d=2, k=3, batch=4, repeats=1, threads=(1, 2))
    assert res["max_grad_difference"] < 1e-9
    assert res["threads_identical"] is True
    assert res["fused"]["step"] > 0 and res["generic"]["step"] > 0 and res["fused, 2 threads"]["step"] > 0
    text = format_training_step(res)
    assert "speed-up" in text and "fused, 2 threads" in text


def test_attention_maps_of_the_construction_are_hard_assignments():
    from kmt_ref.geometry import nearest_center
    from kmt_ref.learning.analysis import attention_maps

    X, init = sample_tasks(np.random.default_rng(5), 1, 30, 2, 3)
    maps = attention_maps(lloyd_transformer(2, 3), X[0], init[0])  # hardmax / identity / linear
    labels = nearest_center(X[0], init[0])
    assert np.array_equal(maps["CAX"], np.eye(3)[labels])
    assert np.array_equal(maps["SAX"], np.eye(30))
    # CAC: center j averages its members (linear attention on the ids)
    counts = np.bincount(labels, minlength=3)
    expected = (np.eye(3)[labels] / np.maximum(counts, 1)).T
    np.testing.assert_allclose(maps["CAC"][counts > 0], expected[counts > 0], atol=1e-12)
    for A in maps.values():
        np.testing.assert_allclose(A.sum(axis=1), 1.0)


def test_evaluation_does_not_depend_on_how_many_tasks_share_a_chunk():
    config = ModelConfig(32, 10)
    theta = init_params(config, np.random.default_rng(1))
    X = np.random.default_rng(2).normal(size=(6, 512, 32))
    init = X[:, :10].copy()
    together = run_steps(theta, X, init, config, 2, chunk=6)
    for chunk in (1, 4):
        np.testing.assert_array_equal(run_steps(theta, X, init, config, 2, chunk=chunk), together)


def test_attention_dropout_is_pytorch_s_on_the_weights_and_off_by_default():
    from kmt_ref.attention import softmax, softmax_dropout

    scores = np.random.default_rng(0).standard_normal((400, 50))
    w = softmax_dropout(scores, 0.25, np.random.default_rng(1))
    dropped = w == 0
    assert 0.23 < dropped.mean() < 0.27  # each weight dropped with probability p
    np.testing.assert_allclose(w[~dropped], softmax(scores)[~dropped] / 0.75, rtol=1e-15)  # survivors scaled
    np.testing.assert_array_equal(w, softmax_dropout(scores, 0.25, np.random.default_rng(1)))  # the rng decides


def test_run_steps_with_dropout_needs_a_generator_and_is_reproducible():
    from kmt_ref.learning.model import ModelConfig, init_params, run_steps

    config = ModelConfig(d=2, k=3)
    theta = init_params(config, np.random.default_rng(0))
    X, init, _ = gaussian_mixture(np.random.default_rng(1), n=30, d=2, k=3)
    X, init = X[None], init[None]
    plain = run_steps(theta, X, init, config, 3)
    np.testing.assert_array_equal(plain, run_steps(theta, X, init, config, 3, dropout=0.0))
    with pytest.raises(ValueError, match="rng"):
        run_steps(theta, X, init, config, 3, dropout=0.01)
    with pytest.raises(ValueError, match="dropout must be in"):
        run_steps(theta, X, init, config, 3, dropout=1.0, rng=np.random.default_rng(0))
    a = run_steps(theta, X, init, config, 3, dropout=0.3, rng=np.random.default_rng(2))
    np.testing.assert_array_equal(a, run_steps(theta, X, init, config, 3, dropout=0.3, rng=np.random.default_rng(2)))
    assert not np.array_equal(a, plain)


def _paper_like(precision, tokens="d+k", tied=False, n_layers=1):
    config = TrainConfig(d=3, k=4, n=40, batch=6, tau=0.3, precision=precision, tokens=tokens, tied=tied,
                         n_layers=n_layers)
    rng = np.random.default_rng(5)
    theta = init_params(config.model, rng)
    X, init = sample_tasks(rng, config.batch, **config.task_kwargs())
    return config, theta, X, init


@pytest.mark.parametrize("tokens, tied, n_layers", [("d+k", False, 1), ("d", False, 1), ("d+k", True, 2)])
def test_a_float32_step_computes_in_float32_and_gives_the_float64_gradient_to_float32_rounding(
        monkeypatch, tokens, tied, n_layers):
    import kmt_ref.kernels.softmax as ks

    seen = []
    for fn in ("_esa_forward", "_esa_chunk_backward", "affine"):
        real = getattr(ks, fn)

        def spy(*args, real=real):
            out = real(*args)
            seen.extend(np.result_type(a) for a in (args + (out if isinstance(out, tuple) else (out,)))
                        if isinstance(a, np.ndarray))
            return out
        monkeypatch.setattr(ks, fn, spy)
    grad = autograd.value_and_grad(batch_loss)
    config, theta, X, init = _paper_like("float32", tokens, tied, n_layers)
    loss32, g32 = grad(theta, X, init, config)
    assert seen and set(seen) == {np.dtype(np.float32)}  # every array the kernels saw or made
    assert g32.dtype == np.float64 and np.result_type(loss32) == np.float32
    seen.clear()
    loss64, g64 = grad(theta, X, init, TrainConfig(**{**config.to_dict(), "precision": "float64"}))
    assert set(seen) == {np.dtype(np.float64)}
    assert abs(loss32 - loss64) < 1e-5 * abs(loss64)
    assert np.max(np.abs(g32 - g64)) < 1e-4 * np.max(np.abs(g64))
    assert np.max(np.abs(g32 - g64)) > 0  # float32 arithmetic really ran


def test_a_float32_step_is_the_same_on_one_thread_and_two():
    config, theta, X, init = _paper_like("float32")
    grad = autograd.value_and_grad(batch_loss)
    one, two = grad(theta, X, init, config, Engine(1)), grad(theta, X, init, config, Engine(2))
    assert one[0] == two[0] and np.array_equal(one[1], two[1])


def test_the_pytorch_step_computes_our_loss_and_gradient():
    pytest.importorskip("torch")
    from kmt_ref.programs.training_bench import torch_step

    config, theta, X, init = _paper_like("float64")
    loss, g = autograd.value_and_grad(batch_loss)(theta, X, init, config)
    torch_loss, torch_grad = torch_step(theta, X, init, config)()
    assert abs(torch_loss - loss) < 1e-5 * abs(loss)
    assert np.max(np.abs(torch_grad - g)) < 1e-4 * np.max(np.abs(g))


def test_the_step_timing_sets_float32_beside_float64_and_says_when_pytorch_is_missing(monkeypatch):
    import sys

    from kmt_ref.programs.training_bench import format_training_step, time_training_step

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    res = time_training_step(n=16, d=2, k=3, batch=4, repeats=1, threads=(1, 2), generic=False,
                             precisions=("float64", "float32"), torch=True)
    assert res["threads_identical"] is True and res["setting"]["torch"] is False
    assert 0 < res["float32_grad_difference"] < 1e-4 and "torch float32" not in res
    text = format_training_step(res)
    assert "float32, 2 threads" in text and "PyTorch not installed" in text
    with pytest.raises(ValueError, match="precisions"):
        time_training_step(n=16, d=2, k=3, batch=4, repeats=1, precisions=("float32",))
