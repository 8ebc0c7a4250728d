"""Bad input gets a clear ValueError naming the argument and the value, before any work."""

import re

import numpy as np
import pytest

import kmt_ref
from kmt_ref import kmeans_objective, kmeans_plusplus, lloyd, lloyd_transformer

X_OK = np.arange(20, dtype=float).reshape(10, 2)
INIT_OK = X_OK[:3].copy()


@pytest.mark.parametrize(
    "X,init,n_iter,match",
    [
        (np.where(np.eye(10, 2) > 0, np.nan, X_OK), INIT_OK, 3, r"X must be finite; got X\[0, 0\]=nan"),
        (np.where(np.eye(10, 2) > 0, np.inf, X_OK), INIT_OK, 3, r"X must be finite; got X\[0, 0\]=inf"),
        (X_OK, np.array([[np.nan, 0.0]]), 3, r"init must be finite; got init\[0, 0\]=nan"),
        (np.arange(10.0), INIT_OK, 3, r"X must be 2-D of shape \(n, d\); got X.ndim=1"),
        (X_OK[None], INIT_OK, 3, r"shapes \(B, n, d\) and \(B, k, d\); got X.shape=\(1, 10, 2\), init.shape=\(3, 2\)"),
        (X_OK[None, None], INIT_OK, 3, r"X.ndim=4"),
        (np.zeros((0, 2)), INIT_OK, 3, r"X must be non-empty; got X.shape=\(0, 2\)"),
        (X_OK[:2], INIT_OK, 3, r"k \(rows of init\) must be <= n=2 \(number of points\); got k \(rows of init\)=3"),
        (X_OK, np.zeros((3, 5)), 3, r"init must have d=2 columns like X; got init.shape=\(3, 5\)"),
        (X_OK, INIT_OK, 2.5, r"n_iter must be a non-negative integer; got n_iter=2.5"),
        (X_OK, INIT_OK, -1, r"n_iter must be a non-negative integer; got n_iter=-1"),
        (X_OK, INIT_OK, True, r"n_iter must be a non-negative integer; got n_iter=True"),
        (X_OK.astype(complex), INIT_OK, 3, r"X must be a real numeric array"),
        (np.array([["a", "b"]]), INIT_OK, 3, r"X must be a real numeric array"),
    ],
)
def test_lloyd_rejects_bad_input(X, init, n_iter, match):
    with pytest.raises(ValueError, match=match):
        lloyd(X, init, n_iter)


def test_lloyd_rejects_an_unknown_empty_cluster_policy():
    with pytest.raises(ValueError, match=r"empty_cluster must be one of .*; got empty_cluster='drop'"):
        lloyd(X_OK, INIT_OK, 1, empty_cluster="drop")


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(d=2, k=3, gamma=0.0), r"gamma must be a positive number or numpy.inf; got gamma=0.0"),
        (dict(d=2, k=3, gamma=-1.0), r"got gamma=-1.0"),
        (dict(d=2, k=3, gamma=float("nan")), r"got gamma=nan"),
        (dict(d=2, k=3, gamma="big"), r"gamma must be a positive number; got gamma='big'"),
        (dict(d=0, k=3), r"d must be an integer >= 1; got d=0"),
        (dict(d=2, k=0), r"k must be an integer >= 1; got k=0"),
        (dict(d=2, k=2.0), r"k must be an integer; got k=2.0"),
        (dict(d=2, k=3, config="fast"),
         r"config must be one of \['all-attention', 'paper', 'validated'\]; got config='fast'"),
    ],
)
def test_lloyd_transformer_rejects_bad_construction_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        lloyd_transformer(**kwargs)


@pytest.mark.parametrize(
    "X,init,n_layers,match",
    [
        (np.zeros((10, 3)), INIT_OK, 2, r"this model was built for d=2; got X with d=3"),
        (X_OK, X_OK[:4], 2, r"init must have k=3 rows; got init.shape=\(4, 2\)"),
        (X_OK[:2], INIT_OK, 2, r"must be <= n=2"),
        (X_OK, INIT_OK, -3, r"n_layers must be a non-negative integer; got n_layers=-3"),
        (X_OK, INIT_OK, "3", r"n_layers must be a non-negative integer; got n_layers='3'"),
        (np.full((10, 2), np.nan), INIT_OK, 2, r"X must be finite"),
    ],
)
def test_a_model_rejects_data_of_other_shapes_and_bad_depths(X, init, n_layers, match):
    with pytest.raises(ValueError, match=match):
        lloyd_transformer(2, 3).run(X, init, n_layers)


def test_kmeans_objective_and_plusplus_reject_bad_input():
    with pytest.raises(ValueError, match=r"centers must have d=2 columns like X"):
        kmeans_objective(X_OK, np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"k must be <= n=10 \(number of points\); got k=11"):
        kmeans_plusplus(X_OK, 11, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"rng must be a numpy.random.Generator; got rng=0"):
        kmeans_plusplus(X_OK, 2, 0)


def test_validation_happens_before_any_work_and_inputs_stay_untouched():
    X = X_OK.copy()
    X.flags.writeable = False  # any in-place write would raise
    traj = lloyd_transformer(2, 3).run(X, INIT_OK, 2)
    assert traj.centers.shape == (3, 3, 2)


def test_checks_routed_through_the_validation_module_name_argument_and_value():
    from kmt_ref import kernels, min_gamma
    from kmt_ref.engine import Engine
    from kmt_ref.normalizers import normmax_inf
    pytest.importorskip("matplotlib", reason="needs matplotlib, of the plot extra: pip install -e '.[plot]'")
    from kmt_ref.plotting.attention import plot_temperature_sweep
    from kmt_ref.programs.paper_sweep import authors_task
    from kmt_ref.programs.training_bench import time_training_step
    from kmt_ref.real_data import load_dataset

    X = np.random.default_rng(0).normal(size=(20, 2))
    cases = [
        (lambda: Engine(0), r"threads must be an integer >= 1; got threads=0"),
        (lambda: Engine(1, reference="yes"), r"reference must be True or False"),
        (lambda: kmt_ref.lloyd_transformer(2, 2).run(X, X[:2], 1, engine=2), r"engine must be an Engine; got engine=2"),
        (lambda: min_gamma(X, X[:2], 2, 1e-3, target="labels"), r"target must be one of .*got target='labels'"),
        (lambda: load_dataset("mnist"), r"name must be one of .*got name='mnist'"),
        (lambda: normmax_inf(np.zeros((2, 3)), threshold=-1.0), r"threshold must be a positive finite number"),
        (lambda: plot_temperature_sweep([0.0, 1.0], [1.0, -2.0]), r"gammas must be a non-empty 1-D array"),
        (lambda: authors_task(np.random.default_rng(0), 3, 2, 5, 1.0), r"k must be <= n=3"),
        (lambda: kernels.project(np.ones((2, 5, 3)), np.ones((4, 2)), None), r"got Z.shape=\(2, 5, 3\), W.shape"),
        (lambda: kernels.project(np.ones((5, 3)), np.ones((4, 3)), np.ones(3)), r"b.shape=\(3,\)"),
        (lambda: kernels.euclidean_softmax_attention(X[:3], X, X, 1.0, 0), r"rows must be an integer >= 1; got rows=0"),
        (lambda: time_training_step(threads=(1, 1)), r"threads must be distinct"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()


def _batch_entry_points():
    from kmt_ref.learning.model import ModelConfig, forward, init_params, run_steps

    config = ModelConfig(d=1, k=2)
    theta = init_params(config, np.random.default_rng(0))
    return {
        "lloyd": lambda X, C: kmt_ref.lloyd(X, C, 1),
        "kmeans_objective": lambda X, C: kmt_ref.kmeans_objective(X, C),
        "KMeansTransformer.run": lambda X, C: kmt_ref.lloyd_transformer(1, 2).run(X, C, 1),
        "run_steps": lambda X, C: run_steps(theta, X, C, config, 1),
        "forward": lambda X, C: forward(theta, X, C, config),
    }


GOOD_X = np.array([[0.0], [1.0], [3.0]])
GOOD_C = np.array([[0.0], [3.0]])


@pytest.mark.parametrize("entry", list(_batch_entry_points()))
@pytest.mark.parametrize("X, C, match", [
    # the reproducers of the reliability review: each is refused for a single task too
    (np.array([[0.0], [1e155], [3e155]]), np.array([[0.0], [3e155]]),
     r"\|entry\| <= 1e\+150.*X\[1, 1, 0\].*\(task 1\)"),
    (np.array([[0.0], [1e-155], [3e-155]]), np.array([[0.0], [3e-155]]), r"spread more than 1e-150.*in task 1"),
    (GOOD_X + 1j, GOOD_C, "X must be a real numeric array"),
    (np.array([["0"], ["1"], ["3"]]), GOOD_C, "X must be a real numeric array"),
])
def test_every_batch_entry_point_checks_each_task_like_a_single_task(entry, X, C, match):
    with pytest.raises(ValueError):
        kmt_ref.lloyd(X, C, 1)  # the single-task check refuses the task
    with pytest.raises(ValueError, match=match):  # and so does every batch entry point, naming it
        _batch_entry_points()[entry](np.stack([GOOD_X, X]), np.stack([GOOD_C, C]))


@pytest.mark.parametrize("entry", ["lloyd", "KMeansTransformer.run", "run_steps"])
def test_batch_centers_get_the_single_task_center_checks(entry):
    X = np.stack([GOOD_X, GOOD_X])
    C = np.stack([GOOD_C, np.array([[0.0], [2e150]])])
    with pytest.raises(ValueError, match=r"init\[1, 1, 0\].*\(task 1\)"):
        _batch_entry_points()[entry](X, C)


@pytest.mark.parametrize("kwargs, match", [
    (dict(values=(float("inf"),)), "positive finite numbers"),
    (dict(values=(True,)), "positive finite numbers"),
    (dict(min_d=-1), "min_d must be an integer >= 1"),
    (dict(needs_rng="no"), "needs_rng must be"),
])
def test_variant_declarations_are_checked(kwargs, match):
    from kmt_ref.variants import Variant
    from kmt_ref.variants.entmax import entmax_kmeans, entmax_kmeans_transformer

    with pytest.raises(ValueError, match=match):
        Variant("x", entmax_kmeans, entmax_kmeans_transformer, "a", **{"values": (1.0,), "change": "-", **kwargs})


@pytest.mark.parametrize("n_layers", [True, 0, 1.5])
def test_forward_refuses_a_bad_layer_count(n_layers):
    from kmt_ref.learning.model import ModelConfig, forward, init_params

    config = ModelConfig(d=2, k=2)
    theta = init_params(config, np.random.default_rng(0))
    X = np.random.default_rng(0).random((1, 5, 2))
    with pytest.raises(ValueError, match="n_layers must be an integer"):
        forward(theta, X, X[:, :2], config, n_layers=n_layers)


def test_a_non_finite_weight_is_refused_not_run_into_nan_centers():
    from autograd import grad

    from kmt_ref.attention import Block
    from kmt_ref.learning.model import ModelConfig, forward, init_params, run_steps

    config = ModelConfig(d=2, k=2)
    theta = init_params(config, np.random.default_rng(0))
    X = np.random.default_rng(1).random((1, 5, 2))
    for value in (np.nan, np.inf):
        bad = theta.copy()
        bad[7] = value
        with pytest.raises(ValueError, match=rf"theta must be finite; got theta\[7\]={value}"):
            run_steps(bad, X, X[:, :2], config, 1)
        with pytest.raises(ValueError, match="theta must be finite"):  # under autograd too
            grad(lambda t: np.sum(forward(t, X, X[:, :2], config)))(bad)
        with pytest.raises(ValueError, match=rf"Wv must be finite; got Wv\[1, 0\]={value}"):
            Block(np.eye(2), np.eye(2), np.array([[1.0, 0.0], [value, 1.0]]))
    assert np.all(np.isfinite(run_steps(theta, X, X[:, :2], config, 1)))


@pytest.mark.parametrize("argv, match", [
    (["train", "--quick", "--lr", "1e308"], r"lr must be in \(0, 1\]"),
    (["train", "--quick", "--d", "100000"], "GiB, more than"),
    (["reproduce", "learning", "--report", "--results-dir", "/nonexistent/kmt"], "is not a directory"),
])
def test_command_line_user_errors_are_messages_not_tracebacks(argv, match, capsys, tmp_path):
    from kmt_ref.__main__ import main

    if argv[0] == "train":
        argv = argv + ["--results-dir", str(tmp_path)]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert re.search(match, err) and "Traceback" not in err


def test_the_last_unchecked_doors_refuse_bad_input_with_a_value_error():
    # each of these once gave an answer, a nan or another exception
    import kmt_ref
    from kmt_ref.attention import Normalizer
    from kmt_ref.geometry import exact_nearest, nearest_center
    from kmt_ref.normalizers import entmax15, normmax2, normmax_inf, sparsemax
    from kmt_ref.tokens import TokenLayout
    from kmt_ref.trajectory import iterate
    from kmt_ref.variants.registry import Variant

    X = np.random.default_rng(0).random((2, 6, 2))
    with pytest.raises(ValueError, match="magnitude"):
        kmt_ref.kmeans_objective(X, np.full((2, 2, 2), 1e200))
    diverged = X[:, :2].copy()
    diverged[1] = np.nan
    assert kmt_ref.kmeans_objective(X, diverged)[1] == np.inf  # a diverged task is reported, as documented
    bad = X[0].copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"X must be finite.*X\[3, 1\]"), np.errstate(invalid="ignore"):
        nearest_center(bad, X[0, :2])
    with pytest.raises(ValueError, match="C must be finite"), np.errstate(invalid="ignore"):
        nearest_center(X[0], np.array([[0.0, 0.0], [np.inf, 0.0]]))
    for x in (np.array([np.nan, 0.0]), np.array([np.inf, 0.0])):
        with pytest.raises(ValueError, match="finite"):
            exact_nearest(x, X[0, :2])
    with pytest.raises(ValueError, match="d must be an integer"):
        TokenLayout(2.5, 3)
    for fn in (entmax15, sparsemax, normmax2, normmax_inf):
        with pytest.raises(ValueError, match="scores must be finite"):
            fn(np.array([[0.0, np.nan, 1.0], [0.0, 1.0, 2.0]]))
        with pytest.raises(ValueError, match="scores must be finite"):
            fn(np.array([[0.0, np.inf, 1.0]]))
    with pytest.raises(ValueError, match=r"labels in \[0, 2\)"):
        iterate(lambda C, t: (C, np.full(6, 2)), X[0], X[0, :2], 1)
    with pytest.raises(ValueError, match="initial centers"):
        iterate(lambda C, t: (C, np.zeros(6, dtype=int)), X[0], np.array([[np.nan, 0.0], [0.0, 0.0]]), 1)
    with pytest.raises(ValueError, match="uses_gamma"):
        Normalizer(np.abs, uses_gamma="yes")
    with pytest.raises(ValueError, match="average"):
        Normalizer(np.abs, average=3)
    good = dict(name="x", classical=kmt_ref.lloyd, transformer=kmt_ref.lloyd_transformer, parameter=None,
                values=(None,), change="nothing")
    for field, value in (("tolerance", 1e-3), ("objective_points", "X"), ("change", 3), ("parameter", "")):
        with pytest.raises(ValueError, match=field):
            Variant(**dict(good, **{field: value}, **({"values": (1.0,)} if field == "parameter" else {})))


def test_a_seed_for_rng_a_string_for_a_flag_and_a_runaway_layer_count_are_refused_by_name():
    from kmt_ref.layer import transformer_layer
    from kmt_ref.learning import ModelConfig, forward, init_params
    from kmt_ref.learning.config import TrainConfig

    X = np.random.default_rng(0).random((10, 2))
    model = kmt_ref.lloyd_transformer(2, 3)
    with pytest.raises(ValueError, match="rng must be a numpy.random.Generator or None; got rng=5"):
        model.run(X, X[:3], 1, rng=5)  # a seed would be ignored: the model draws nothing
    P, Q = model._embed(X, X[:3])
    with pytest.raises(ValueError, match="overwrite"):
        transformer_layer(P, Q, model.blocks, overwrite="yes")
    config = ModelConfig(2, 3)
    with pytest.raises(ValueError, match="every_step"):
        forward(init_params(config, np.random.default_rng(0)), X[None], X[None, :3], config, every_step="yes")
    with pytest.raises(ValueError, match="n_layers"):
        TrainConfig(n_layers=10**6)
    assert TrainConfig(n_layers=3).n_layers == 3


def _garbage_cases():
    from kmt_ref.attention import Block, attend
    from kmt_ref.feedforward import FeedForward
    from kmt_ref.geometry import exact_nearest, nearest_center
    from kmt_ref.kernels import attend as fast_attend
    from kmt_ref.layer import transformer_layer
    from kmt_ref.trajectory import Trajectory

    C = np.ones((2, 2))
    eye = np.eye(3)
    return {
        "nearest_center, entries past MAX_ABS": (lambda: nearest_center(np.full((3, 2), 1e200), C),
                                                 r"\|entry\| <= 1e\+150"),
        "nearest_center, complex": (lambda: nearest_center(np.ones((3, 2)) * 1j, C), "X must be a real numeric array"),
        "nearest_center, 4-D": (lambda: nearest_center(np.ones((2, 2, 3, 2)), np.ones((2, 2, 2, 2))), "X.ndim=4"),
        "nearest_center, no points": (lambda: nearest_center(np.ones((0, 2)), C), "X must be non-empty"),
        "nearest_center, no centers": (lambda: nearest_center(np.ones((3, 2)), np.ones((0, 2))), "C must be non-empty"),
        "nearest_center, None": (lambda: nearest_center(None, C), "X must be a real numeric array; got X=None"),
        "nearest_center, a scalar": (lambda: nearest_center(3.0, C), "X.ndim=0"),
        "nearest_center, objects": (lambda: nearest_center(np.ones((2, 2), dtype=object), C), "dtype object"),
        "nearest_center, ragged": (lambda: nearest_center([[1, 2], [3]], C), "rectangular"),
        "nearest_center, other d": (lambda: nearest_center(np.ones((3, 2)), np.ones((2, 3))), "C must have d=2"),
        "nearest_center, ties='yes'": (lambda: nearest_center(np.ones((3, 2)), C, ties="yes"), "ties"),
        "nearest_center, a frame of nothing": (lambda: nearest_center(np.ones((3, 2)), C, frame=3), "frame"),
        "exact_nearest, past MAX_ABS": (lambda: exact_nearest(np.full(2, 1e200), C), r"\|entry\| <= 1e\+150"),
        "exact_nearest, complex": (lambda: exact_nearest(np.ones(2) * 1j, C), "x must be a real numeric array"),
        "exact_nearest, no centers": (lambda: exact_nearest(np.ones(2), np.ones((0, 2))), "C must be non-empty"),
        "exact_nearest, a scalar point": (lambda: exact_nearest(1.0, C), r"x of shape \(d,\)"),
        "Block, a 1-D Wq": (lambda: Block(np.ones(3), eye, eye), r"Wq must have shape \(3, 3\)"),
        "Block, a bias of another width": (lambda: Block(eye, eye, eye, bq=np.ones(2)), r"bq must have shape \(3,\)"),
        "Trajectory, lengths that disagree": (lambda: Trajectory(np.zeros((3, 2, 2)), np.zeros((5, 4), int)),
                                              "n_iter \\+ 1 centers and n_iter labels"),
        "transformer_layer, P and Q of other widths": (
            lambda: transformer_layer(np.zeros((4, 5)), np.zeros((2, 6)), lloyd_transformer(3, 2).blocks),
            r"Zk must be tokens of shape \(\.\.\., m, 5\)"),
        "transformer_layer, a block missing": (
            lambda: transformer_layer(np.zeros((4, 5)), np.zeros((2, 5)),
                                      dict(CAX=lloyd_transformer(3, 2).blocks["CAX"])), "missing"),
        "FeedForward, a NaN bias": (lambda: FeedForward(np.eye(2), np.array([np.nan, 0]), np.eye(2), np.zeros(2)),
                                    "b1 must be finite"),
        "attend, no block": (lambda: attend(np.zeros((3, 2)), np.zeros((3, 2)), None), "block must be a Block"),
        "kernels.attend, no block": (lambda: fast_attend(np.zeros((3, 2)), np.zeros((3, 2)), "CAX"),
                                     "block must be a Block"),
        "kernels.attend, tokens of another width": (lambda: fast_attend(np.zeros((3, 2)), np.zeros((3, 2)),
                                                                        Block(eye, eye, eye)), "Zq must be tokens"),
    }


@pytest.mark.parametrize("case", list(_garbage_cases()))
def test_the_low_level_entries_refuse_garbage_by_name(case):
    call, said = _garbage_cases()[case]
    with pytest.raises(ValueError, match=said):
        call()
