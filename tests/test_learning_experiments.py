import dataclasses
import functools
import json
import os
import re

import numpy as np
import pytest

from kmt_ref.__main__ import main
from kmt_ref.learning import protocols
from kmt_ref.learning.train import TrainState, load_result, train
from kmt_ref.programs import beyond, experiments, registry

TINY = dict(n_steps=12, seeds=(0, 1), eval_tasks=6, val_tasks=6, n_eval_steps=3, gen_n=(40,),
            train=dict(d=2, k=3, n=24, batch=3, eval_every=4))


@pytest.fixture
def tiny(monkeypatch, tmp_path):
    """The "quick" scale shrunk to seconds, writing under a temporary directory."""
    monkeypatch.setitem(protocols.SCALES, "quick", TINY)
    return str(tmp_path)


def test_reproduce_and_report_give_the_headline_numbers(tiny, capsys):
    assert main(["reproduce", "learning", "--quick", "--results-dir", tiny]) == 0
    assert main(["reproduce", "ablation", "--quick", "--results-dir", tiny]) == 0
    capsys.readouterr()
    assert main(["reproduce", "learning", "--report", "--json", "--results-dir", tiny]) == 0
    rep = json.loads(capsys.readouterr().out)
    for key in ("lloyd_log_objective", "learned_log_objective", "d_only_log_objective"):
        assert np.isfinite(rep[key])
    assert rep["n_seeds"] == 2 and rep["n_steps"] == 12 and rep["partial"] is False
    with open(os.path.join(tiny, "quick", "learning.json")) as f:
        saved = json.load(f)
    assert saved["command"].startswith("python -m kmt_ref") and saved["git_revision"]
    assert saved["learned_log_objective"] == rep["learned_log_objective"]
    assert len(saved["lloyd"]["median"]) == TINY["n_eval_steps"] + 1
    # Per-seed finals, in the order of the seeds, are what the median and the range summarize.
    for key, finals in (("lloyd", rep["lloyd_final"]), ("learned", rep["learned_final"]),
                        ("d_only", rep["d_only_final"])):
        assert len(finals) == rep["n_seeds"]
        assert rep[key + "_log_objective"] == pytest.approx(np.median(finals), rel=1e-15)
        assert rep[key + "_log_objective_range"] == [min(finals), max(finals)]
    with open(os.path.join(tiny, "quick", "ablation.json")) as f:
        assert json.load(f)["lloyd_final"] == rep["lloyd_final"]  # same seeds, same held-out tasks


def test_no_train_evaluates_unfinished_checkpoints_and_says_so(tiny):
    path = protocols.checkpoint_path("quick", "d+k", 0, tiny)
    os.makedirs(os.path.dirname(path))
    train(protocols.run_config("quick", "d+k", 0), path, stop_at=4, progress=False)
    out = registry.run_experiment("learning", "quick", tiny, train_missing=False, progress=False)
    assert out["partial"] and out["steps_done"] == [4] and out["n_seeds"] == 1
    rep = protocols.learning_headline(tiny)
    assert rep["partial"] and "PARTIAL" in rep["note"] and "d-only" in rep["note"]


@pytest.mark.slow
def test_every_experiment_runs_on_trained_checkpoints(tiny):
    for name in registry.LEARNING:
        if "quick" not in registry.EXPERIMENTS[name].scales:  # own scales: tests below
            continue
        out = registry.run_experiment(name, "quick", tiny, progress=False)
        assert out["experiment"] == name and out["n_seeds"] == 2 and not out["partial"]
        if name in ("generalization", "kmeanspp", "families"):
            rows = [v for v in out.values() if isinstance(v, dict) and "options" in v]
            assert rows
            for row in rows:
                assert len(row["lloyd_final"]) == len(row["learned_final"]) == 2


def test_training_curves_summarize_every_setting_and_layout_over_seeds(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(protocols.SCALES, "figures", TINY)
    monkeypatch.setattr(experiments, "FIGURE_SETTINGS", {
        "tau": [dict(k=3, d=2, tau=1.0), dict(k=3, d=2, tau=0.1)],
        "k": [dict(k=2, d=2, tau=0.1), dict(k=3, d=2, tau=0.1)],  # the second is shared with "tau"
    })
    # windows of 4 steps, so that the 12 training steps give three loss averages to check
    monkeypatch.setitem(registry.EXPERIMENTS, "training-curves",
                        dataclasses.replace(registry.EXPERIMENTS["training-curves"],
                                            run=functools.partial(experiments.training_curves, window=4)))
    out = registry.run_experiment("training-curves", "figures", str(tmp_path), progress=False)
    rows = out["panels"]["tau"] + out["panels"]["k"]
    assert len(rows) == 8 and {r["tokens"] for r in rows} == {"d+k", "d"}
    assert out["panels"]["tau"][2] is out["panels"]["k"][2] or out["panels"]["tau"][2] == out["panels"]["k"][2]
    for r in rows:
        assert r["seeds"] == [0, 1] and len(r["val_ratio_final"]) == 2
        assert len(r["val_ratio"]["median"]) == len(r["val_step"]) == 4  # steps 0, 4, 8, 12
        assert r["val_ratio"]["min"][-1] == min(r["val_ratio_final"])
        assert out["window"] == 4 and r["train_loss_step"] == [4, 8, 12]
        assert len(r["train_loss"]["median"]) == 3 and r["train_loss"]["min"][0] <= r["train_loss"]["max"][0]
    # 6 distinct (setting, layout) pairs x 2 seeds were trained, not 8 x 2
    assert len(list(tmp_path.rglob("*.npz"))) == 12
    assert main(["reproduce", "training-curves", "--report", "--results-dir", str(tmp_path)]) == 0
    assert "final validation ratio" in capsys.readouterr().out


def test_committed_training_curves_are_training_curves_that_train_nothing(monkeypatch, tmp_path):
    # the paper's own setting (ten committed seeds) and a figure setting committed at seed 0
    monkeypatch.setattr(experiments, "FIGURE_SETTINGS", {"own": [dict(k=10, d=32, tau=0.1)],
                                                         "tau": [dict(k=6, d=4, tau=1.0)]})
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        experiments.committed_training_curves("paper", (0, 1))  # the figure setting has no seed 1
    with pytest.raises(ValueError, match="seeds='0'"):
        experiments.committed_training_curves("paper", "0")
    read = experiments.training_curves("paper", str(tmp_path), train_missing=False, progress=False, seeds=(0,))
    assert experiments.committed_training_curves("paper", (0,)) == read
    assert not list(tmp_path.iterdir())
    final = protocols.committed_model("paper", "d", 0, k=6, d=4, tau=1.0).history["val_ratio"][-1]
    assert read["panels"]["tau"][1]["val_ratio_final"] == [final]
    # a committed checkpoint of another protocol is refused, not summarized or counted
    monkeypatch.setitem(protocols.SCALES, "paper", dict(protocols.SCALES["paper"], n_steps=5_000))
    with pytest.raises(ValueError, match="holds config"):
        experiments.committed_training_curves("paper", (0,))
    with pytest.raises(ValueError, match="holds config"):
        experiments.figures_whole("paper", 0)


def test_any_k_runs_one_tied_model_at_every_k_beside_per_k_models(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(protocols.SCALES, "beyond", TINY)
    monkeypatch.setattr(beyond, "ANY_K", (2, 3, 4))
    out = registry.run_experiment("any-k", "beyond", str(tmp_path), progress=False)
    assert out["ks"] == [2, 3, 4] and out["trained_at_k"] == 3
    for k, row in out["per_k"].items():
        assert row["seeds"] == [0, 1] and row["standard_model"].endswith(f"trained at k = {k[2:]}")
        for key in ("lloyd", "tied", "d_only", "standard"):
            assert len(row[key]["median"]) == TINY["n_eval_steps"] + 1
        assert row["learned_log_objective"] == row["tied_log_objective"]
    # one tied and one [x] model per seed, standard models at k = 2 and 4 besides the k = 3 one
    names = sorted(p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*.npz"))
    assert names == ["beyond", "beyond", "beyond", "beyond", "beyond-k2", "beyond-k2", "beyond-k4", "beyond-k4",
                     "beyond-tied", "beyond-tied"]
    assert main(["reproduce", "any-k", "--report", "--results-dir", str(tmp_path)]) == 0
    assert "standard (at k)" in capsys.readouterr().out


def test_multi_step_trains_through_each_number_of_layers(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(protocols.SCALES, "beyond", TINY)
    monkeypatch.setattr(beyond, "MULTI_STEP", (1, 2))
    monkeypatch.setattr(beyond, "MULTI_STEP_EVERY", (2,))
    out = registry.run_experiment("multi-step", "beyond", str(tmp_path), progress=False)
    assert list(out["per_n_layers"]) == ["T=1", "T=2", "T=2, loss on every step"]
    rows = out["per_n_layers"]
    assert rows["T=1"]["lloyd"] == rows["T=2"]["lloyd"] == rows["T=2, loss on every step"]["lloyd"]
    assert [(r["n_layers"], r["loss_on"]) for r in rows.values()] == [(1, "last"), (2, "last"), (2, "every")]
    assert (tmp_path / "beyond-n_layers2" / "dk-seed1.npz").exists()
    assert (tmp_path / "beyond-loss_on_every-n_layers2" / "dk-seed1.npz").exists()
    assert rows["T=2"]["learned"] != rows["T=2, loss on every step"]["learned"]
    assert main(["reproduce", "multi-step", "--report", "--results-dir", str(tmp_path)]) == 0
    assert "trained through" in capsys.readouterr().out


@pytest.mark.slow
def test_chaos_retrains_each_seed_from_perturbed_parameters_on_the_same_tasks(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(protocols.SCALES, "beyond", TINY)
    monkeypatch.setattr(beyond, "PERTURBATIONS", (0, 1, 3))
    models = {key: beyond.CHAOS_MODELS["beyond"][key] for key in ("standard", "tied", "d_only")}
    models["standard k=2"] = ("standard [x | y] at k = 2", "d+k", dict(k=2))
    models["every T=2"] = beyond.CHAOS_MODELS["beyond"]["T=2, loss on every step"]
    monkeypatch.setitem(beyond.CHAOS_MODELS, "beyond", models)
    monkeypatch.setattr(beyond, "DATASETS", {"iris": None, "breast_cancer": None})
    monkeypatch.setattr(beyond, "REAL_DATA_RESTARTS", 3)
    out = registry.run_experiment("chaos", "beyond", str(tmp_path), progress=False)
    assert list(out["models"]) == list(models) and out["seeds"] == list(TINY["seeds"])
    for key, (_, tokens, overrides) in models.items():
        entry = out["models"][key]
        assert list(entry["per_perturbation"]) == ["p=0", "p=1", "p=3"] and entry["k"] == overrides.get("k", 3)
        for p in (1, 3):
            for seed in TINY["seeds"]:
                path = protocols.checkpoint_path("beyond", tokens, seed, str(tmp_path), **overrides, perturb=p)
                rerun = load_result(path)
                own = load_result(protocols.checkpoint_path("beyond", tokens, seed, str(tmp_path), **overrides))
                assert rerun.config.perturb == p and own.config.perturb == 0
                assert rerun.config.tied == own.config.tied == (key == "tied")
                assert rerun.config.model.k == own.config.model.k == entry["k"]
                assert rerun.config.tokens == own.config.tokens == tokens
                assert (rerun.config.n_layers, rerun.config.loss_on) == (own.config.n_layers, own.config.loss_on) \
                    == (overrides.get("n_layers", 1), overrides.get("loss_on", "last"))
                # the rerun starts from other parameters (whether 2^-52 then changes the end is the CPU's rounding)
                start, own_start = TrainState.fresh(rerun.config).theta, TrainState.fresh(own.config).theta
                assert not np.array_equal(start, own_start)
                np.testing.assert_allclose(start, own_start, rtol=4 * p * 2.0**-52, atol=0)
        gaps = np.array([row["gap"] for row in entry["per_perturbation"].values()])
        assert entry["gap_spread"] == pytest.approx(gaps.max(axis=0) - gaps.min(axis=0), abs=0)
        assert entry["runs_below_lloyd"] == [int(n) for n in (gaps < 0).sum(axis=0)]
        finals = np.array([row["learned_final"] for row in entry["per_perturbation"].values()])
        assert gaps == pytest.approx(finals - np.array(entry["lloyd_final"]), abs=1e-12)
        for row in entry["per_perturbation"].values():  # the curves' last step is the final one
            assert row["learned"]["median"][-1] == pytest.approx(np.median(row["learned_final"]), abs=1e-12)
            assert len(row["learned"]["median"]) == TINY["n_eval_steps"] + 1
        assert entry["lloyd"]["median"][-1] == pytest.approx(np.median(entry["lloyd_final"]), abs=1e-12)
    # Lloyd at k = 2 is not Lloyd at k = 3: each model's own tasks
    assert out["models"]["standard k=2"]["lloyd_final"] != out["models"]["standard"]["lloyd_final"]
    assert out["models"]["d_only"]["lloyd_final"] == out["models"]["standard"]["lloyd_final"]
    # the real-data layers' runs on the real data sets: the seed's own run is the real-data experiment's
    real = registry.run_experiment("real-data", "beyond", str(tmp_path), progress=False)
    assert set(out["real_data_lloyd"]) == {"iris", "breast_cancer"}
    for key, entry in out["models"].items():
        runs_ = list(entry["per_perturbation"].values())
        if key not in beyond.CHAOS_REAL_DATA["beyond"]:
            assert all("real_data" not in r for r in runs_)
            continue
        # k = 3 = the tiny models' k: the standard layer runs on iris only; the diagnostic's layer: standard
        # on iris, tied on breast cancer
        assert list(runs_[0]["real_data"]) == (["iris"] if key == "standard" else ["iris", "breast_cancer"])
        for name, row in runs_[0]["real_data"].items():
            own = real["per_dataset"][name]
            lloyd_ = own["lloyd"]["log_objective"]
            assert out["real_data_lloyd"][name]["log_objective"] == lloyd_
            assert row["gap"] == pytest.approx([p["log_objective"] - lloyd_ for p in own[key]["per_seed"]], abs=0)
            assert row["ari"] == pytest.approx([p["ari"] for p in own[key]["per_seed"]], abs=0)
            assert ("spread_gap" in row) == (own["spread"]["model"] == key)
            if "spread_gap" in row:
                assert row["spread_gap"] == {f: v["gap_per_seed"] for f, v in own["spread"]["per_factor"].items()}
        assert [list(r["real_data"]) for r in runs_] == [list(runs_[0]["real_data"])] * len(runs_)
    assert main(["reproduce", "chaos", "--report", "--results-dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "spread" in printed and "on the real data sets" in printed and "breast_cancer" in printed


def test_real_data_checks_the_constructions_and_runs_every_learned_layer(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(protocols.SCALES, "beyond", TINY)
    monkeypatch.setattr(beyond, "DATASETS", {"iris": None, "breast_cancer": None})
    monkeypatch.setattr(beyond, "REAL_DATA_RESTARTS", 3)
    out = registry.run_experiment("real-data", "beyond", str(tmp_path), progress=False)
    iris = out["per_dataset"]["iris"]
    assert (iris["n"], iris["d"], iris["k"]) == (150, 4, 3)
    c = iris["construction"]["inf"]
    assert c["tie_free"] + c["with_ties"] == 3 and c["exact"] == c["tie_free"] and c["max_center_deviation"] < 1e-12
    for g in ("10000", "1e+06"):
        assert iris["construction"][g]["bound_holds"] and 0 <= iris["construction"][g]["certified"] <= 3
    # k = 3 = the tiny models' k: the standard layer runs too; breast cancer has k = 2: it does not
    assert {"tied", "d_only", "standard"} <= set(iris) and "standard" not in out["per_dataset"]["breast_cancer"]
    for key in ("lloyd", "tied", "d_only"):
        assert -1 <= iris[key]["ari"] <= 1 and np.isfinite(iris[key]["log_objective"])
    spread = iris["spread"]["per_factor"]
    assert iris["spread"]["model"] == "standard" and list(spread) == ["x1", "x2", "x3"]
    assert spread["x2"]["separation"] == pytest.approx(4 * iris["separation"])
    assert spread["x1"]["lloyd_log_objective"] == pytest.approx(iris["lloyd"]["log_objective"])
    assert out["training_separation"] > 1
    assert main(["reproduce", "real-data", "--report", "--results-dir", str(tmp_path)]) == 0
    assert "adjusted Rand index" in capsys.readouterr().out


def test_the_beyond_and_figures_scales_belong_to_their_experiments(capsys):
    # each experiment offers, in its help, only the scales it accepts
    for argv, offered in ((["reproduce", "learning"], ("--quick", "--paper")), (["reproduce", "any-k"], ("--beyond",)),
                          (["reproduce", "training-curves"], ("--figures",))):
        with pytest.raises(SystemExit):
            main(argv + ["--help"])
        shown = set(re.findall(r"--(quick|paper|figures|beyond)\b", capsys.readouterr().out))
        assert shown == {o[2:] for o in offered}
    for argv in (["reproduce", "learning", "--beyond"], ["reproduce", "any-k", "--paper"],
                 ["reproduce", "learning", "--figures"]):
        with pytest.raises(SystemExit):
            main(argv)
        assert "unrecognized arguments" in capsys.readouterr().err


def test_a_figure_is_whole_when_every_setting_has_a_finished_committed_model(monkeypatch):
    # the authors'-scale runs of Figure 9 and 10b are committed at seed 0 only
    assert experiments.figures_whole("paper", 0)[:2] == ["Figure 9 (k = 6, d = 4)", "Figure 9 (k = 6, d = 32)"]
    assert experiments.figures_whole("paper", 1) == []
    # the paper's own setting counts through the paper's models (ten seeds); the others have seed 0 at most
    monkeypatch.setattr(experiments, "FIGURE_SETTINGS", {"own": [dict(k=10, d=32, tau=0.1)],
                                                         "with d = 4": [dict(k=6, d=4, tau=1.0)]})
    assert experiments.figures_whole("paper", 9) == ["own"]
    assert experiments.figures_whole("paper", 0) == ["own", "with d = 4"]
    # a committed checkpoint that has not finished its steps does not count
    load = protocols.load_result
    monkeypatch.setattr(protocols, "load_result", lambda path: dataclasses.replace(
        load(path), finished="-d4-" not in path and load(path).finished))
    assert experiments.figures_whole("paper", 0) == ["own"]
    with pytest.raises(ValueError, match="seed=-1"):
        experiments.figures_whole("paper", -1)


def test_unknown_experiment_or_scale_raises(tiny):
    with pytest.raises(ValueError, match="name='nope'"):
        registry.run_experiment("nope", "quick", tiny)
    with pytest.raises(ValueError, match="scale"):
        registry.run_experiment("learning", "huge", tiny)


def test_report_without_results_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        protocols.learning_headline(str(tmp_path))


def test_seeds_option_restricts_the_experiment(tiny, capsys):
    assert main(["reproduce", "weights", "--quick", "--seeds", "1", "--json", "--results-dir", tiny]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seeds"] == [1] and out["n_seeds"] == 1


def test_an_exact_distance_tie_is_detected_and_is_where_hardmax_and_lloyd_part():
    import kmt_ref

    X = np.array([[0.0], [1.0], [2.0], [2.2]])
    init = np.array([[0.0], [2.0]])  # the point 1.0 is exactly as near to both centers
    ref = kmt_ref.lloyd(X, init, 2)
    assert beyond._has_tie(X, ref.centers)
    assert not beyond._has_tie(X + np.array([[0.0], [0.01], [0.0], [0.0]]), ref.centers)
    with pytest.warns(UserWarning, match="layer 1 shares point 1 between centers 0, 1"):
        run = kmt_ref.lloyd_transformer(1, 2).run(X, init, 2)
    # averaging hardmax splits the tied point between the two centers; Lloyd gives it to the first
    assert not np.allclose(run.centers[1], ref.centers[1])


def test_git_revision_is_the_packages_checkout_wherever_it_runs(monkeypatch, tmp_path):
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(experiments.__file__)))
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=root)
    if head.returncode != 0:
        pytest.skip("the package does not run from a git checkout")
    monkeypatch.chdir(tmp_path)  # not a repository: the revision must still be the package's
    assert experiments.git_revision().removesuffix("+dirty") == head.stdout.strip()


def test_precision_sets_float32_models_beside_the_float64_ones_of_the_same_seeds(tiny, capsys):
    out = registry.run_experiment("precision", "quick", tiny, progress=False)
    assert out["float32"]["seeds"] == out["float64"]["seeds"] == out["lloyd"]["seeds"] == [0, 1]
    assert protocols.load_result(protocols.checkpoint_path("quick", "d+k", 1, tiny, precision="float32")
                                 ).config.precision == "float32"
    assert protocols.load_result(protocols.checkpoint_path("quick", "d+k", 1, tiny)).config.precision == "float64"
    # same tasks and initial parameters, other arithmetic: close, not equal
    assert out["float32"]["final"] != out["float64"]["final"]
    np.testing.assert_allclose(out["float32"]["final"], out["float64"]["final"], rtol=0.05)
    assert all(t > 0 for t in out["float32"]["seconds_per_step"])
    assert main(["reproduce", "precision", "--quick", "--report", "--results-dir", tiny]) == 0
    assert "trained in float32" in capsys.readouterr().out


def test_an_experiment_told_not_to_train_names_the_models_it_lacks(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(protocols.SCALES, "beyond", TINY)
    monkeypatch.setattr(beyond, "MULTI_STEP", (1,))
    monkeypatch.setattr(beyond, "MULTI_STEP_EVERY", ())
    # none of the seeds' models: one line naming them, exit status 2, no traceback
    with pytest.raises(SystemExit) as stop:
        main(["reproduce", "multi-step", "--no-train", "--seeds", "7", "--results-dir", str(tmp_path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "no trained d+k model" in err and "at the beyond scale" in err and "for seeds [7]" in err
    assert "Traceback" not in err
    # some of them: evaluated without the others, which are named
    registry.run_experiment("multi-step", "beyond", str(tmp_path), progress=False, seeds=(0,))
    out = registry.run_experiment("multi-step", "beyond", str(tmp_path), train_missing=False, seeds=(0, 7))
    assert out["per_n_layers"]["T=1"]["seeds"] == [0]
    assert "seeds [7]: no trained d+k model" in capsys.readouterr().err


@pytest.mark.slow
def test_symmetric_measures_every_target_with_its_floor_and_the_verdicts_follow_the_numbers(tiny):
    from kmt_ref.programs import interpret, reports

    with pytest.raises(ValueError, match="reproduce interpret"):  # the tiny scale's 3 steps: no committed fit
        registry.run_experiment("symmetric", "quick", tiny, progress=False)
    os.makedirs(os.path.join(tiny, "quick"), exist_ok=True)
    with open(os.path.join(tiny, "quick", "interpret.json"), "w") as f:  # what it reads of an interpret run
        json.dump(dict(soft_beta=2.0, fits={"3": dict(beta=4.0, sharpness=6.0)}), f)
    out = registry.run_experiment("symmetric", "quick", tiny, progress=False)
    assert out["soft_beta"] == 2.0 and out["leaky_fit"] == dict(beta=4.0, sharpness=6.0)
    assert [r["seed"] for r in out["standard"]] == [r["seed"] for r in out["tied"]] == [0, 1]
    for row in out["standard"]:
        layer, averaged = row["fidelity"]["layer"], row["fidelity"]["label-averaged layer"]
        assert {"Lloyd", "circuit, distilled", "leaky, distilled", "soft k-means, distilled"} <= set(averaged)
        # the layer's own average is nearer the average than the layer (an untied tiny layer differs from both)
        floor = averaged["another label-averaged layer"]["one_step_ratio"]["median"]
        assert floor < averaged["layer"]["one_step_ratio"]["median"]
        assert np.isnan(layer["Lloyd"]["partial_correlation"])  # nothing of Lloyd's final is left to correlate
        assert -1 <= averaged["best-of restarts"]["final_correlation"] <= 1
    assert set(out["tied"][0]["fidelity"]["tied layer"]) >= {"standard layer", "circuit, distilled"}
    learning = registry.run_experiment("learning", "quick", tiny, progress=False)  # the same held-out tasks
    for i, row in enumerate(out["standard"]):
        assert set(row["final"]) == {"Lloyd", "layer", "soft k-means, beta = 2", "leaky, fitted through 3"}
        assert row["final"]["layer"] == learning["learned_final"][i]
        assert row["final"]["Lloyd"] == learning["lloyd_final"][i]
    summary = interpret.symmetric_summary(out)
    entry = summary["standard"]["label-averaged layer"]
    best = [min(entry["candidates"][n]["one_step_ratio"][i] for n in entry["closed_forms"]) for i in range(2)]
    assert [b[1] for b in entry["best"]] == best
    within = all(b - f <= interpret.FLOOR_MARGIN for b, f in zip(best, entry["floor"], strict=True))
    assert entry["within_floor"] == within
    assert "layer" not in entry["closed_forms"] and "circuit, summarized: values, SAX, CAC" not in entry["closed_forms"]
    lines = reports.symmetric(out)
    assert sum("target:" in line for line in lines) == 3 and any("floor on every seed" in line for line in lines)


def test_the_tied_verdict_names_the_closed_forms_that_meet_both_thresholds():
    from kmt_ref.programs import interpret

    def fid(f1, r):
        return {"one_step_ratio": {"median": f1}, "final_correlation": r, "partial_correlation": r,
                "gain_correlation": r}

    rows = [{"seed": s, "fidelity": {"tied layer": {"layer_gain": 0.1, "A": fid(0.2, 0.9), "B": fid(a, b),
                                                    "standard layer": fid(0.1, 0.99)}}}
            for s, (a, b) in enumerate([(0.1, 0.95), (0.3, 0.95)])]
    entry = interpret.symmetric_summary({"standard": [], "tied": rows})["tied"]["tied layer"]
    assert entry["describe"] == ["A"]  # B misses F1 on one seed; the standard layer is no closed form
    assert entry["best"] == [("B", 0.1), ("A", 0.2)]


def test_full_group_averages_both_layers_over_ids_coordinates_and_reflections(tiny):
    from kmt_ref.programs import interpret, reports

    os.makedirs(os.path.join(tiny, "quick"), exist_ok=True)
    with open(os.path.join(tiny, "quick", "interpret.json"), "w") as f:  # what it reads of an interpret run
        json.dump(dict(soft_beta=2.0, fits={"3": dict(beta=4.0, sharpness=6.0)}), f)
    out = registry.run_experiment("full-group", "quick", tiny, progress=False)
    assert [r["seed"] for r in out["standard"]] == [r["seed"] for r in out["tied"]] == [0, 1]
    for row in out["standard"] + out["tied"]:
        target = row["fidelity"]["fully averaged layer"]
        assert {"Lloyd", "layer", "transformed twin", "another fully averaged layer", "circuit, distilled",
                "leaky, distilled", "soft k-means, distilled"} <= set(target)
        # a second average is nearer the average than the layer itself (a tiny trained layer is not symmetric)
        assert target["another fully averaged layer"]["one_step_ratio"]["median"] < \
            target["layer"]["one_step_ratio"]["median"]
    summary = interpret.symmetric_summary(out)
    assert set(summary) == {"standard", "tied"} and "floor" in summary["tied"]["fully averaged layer"]
    assert "transformed twin" not in summary["standard"]["fully averaged layer"]["closed_forms"]
    lines = reports.full_group(out)
    assert sum("target:" in line for line in lines) == 2


def test_a_group_averaged_step_is_the_step_of_a_layer_that_has_the_symmetries():
    # The Lloyd construction in the learned format commutes with every relabelling, coordinate permutation and
    # reflection x -> 1 - x: its average over any sample of the group is its own step, to rounding.
    from kmt_ref import lloyd_transformer
    from kmt_ref.learning.model import params_from_transformer
    from kmt_ref.programs.fidelity import cube_symmetries, group_averaged_step

    theta, config = params_from_transformer(lloyd_transformer(3, 4, gamma=50.0, config="all-attention"))
    rng = np.random.default_rng(1)
    X, C = rng.random((2, 30, 3)), rng.random((2, 4, 3))
    elements = cube_symmetries(rng, 4, 3, 5)
    assert any(flips.any() for _, _, flips in elements) and any((coords != np.arange(3)).any()
                                                                for _, coords, _ in elements)
    own = group_averaged_step(theta, config, [(np.arange(4), np.arange(3), np.zeros(3, bool))])(X, C)
    np.testing.assert_allclose(group_averaged_step(theta, config, elements)(X, C), own, rtol=0, atol=1e-12)
    moved = group_averaged_step(theta, config, elements[:1])(X, C)
    np.testing.assert_allclose(moved, own, rtol=0, atol=1e-12)


def test_the_symmetric_layer_is_evaluated_beside_the_others_and_moves_by_rounding_under_the_group(tiny):
    from kmt_ref.programs import reports

    registry.run_experiment("learning", "quick", tiny, progress=False)  # the standard layers of the same seeds
    out = registry.run_experiment("symmetric-layer", "quick", tiny, progress=False)
    assert out["seeds"] == out["standard_seeds"] == [0, 1] and out["tied_seeds"] == []
    assert all(np.isfinite(v) for v in out["symmetric_final"] + out["lloyd_final"] + out["standard_final"])
    assert max(out["group_change_worst"]) < 1e-12  # equivariant by construction, to rounding
    assert set(out["scalars"][0]) == {"CAX", "SAX", "CAC", "SAC"}
    assert set(out["scalars"][0]["CAC"]["v"]) == {"alpha", "lambda", "nu", "kappa"}
    text = "\n".join(reports.symmetric_layer(out))
    assert "tied not trained" in text and "CAX: q " in text
