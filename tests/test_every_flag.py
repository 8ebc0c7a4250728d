"""Every flag a command's ``--help`` documents is run, and the command accepts it.

The flags are read from the help itself, so a flag added to a parser without a
run here fails ``test_every_documented_flag_has_a_run``. Each run is the
cheapest command line that uses the flag for real (a quick scale, one or two
steps, a temporary results folder). Running a learning experiment evaluates
models for minutes, so there the command line runs for real up to
``registry.run_experiment``, which records what it was given (the
experiments themselves are tested in test_learning_experiments.py). The few
flags that cannot run in a test are listed in ``NOT_RUN`` with the reason.
"""

import contextlib
import io
import json
import re

import pytest

from kmt_ref.__main__ import main as kmt_main
from kmt_ref.exercises.__main__ import main as exercises_main
from kmt_ref.learning import protocols
from kmt_ref.programs import cli
from kmt_ref.programs.registry import EXPERIMENTS

#: Experiments whose options are the learning experiments' (``reproduce NAME -h``).
LEARNING = [name for name in EXPERIMENTS if name not in ("sweep", "paper-sweep")]

#: The commands and the entry point that runs them.
COMMANDS = {
    ("verify",): kmt_main,
    ("bench",): kmt_main,
    ("train",): kmt_main,
    **{("reproduce", name): kmt_main for name in EXPERIMENTS},
    ("check",): exercises_main,
    ("init",): exercises_main,
    ("list",): exercises_main,
}

#: Flags that are documented but not run here, and why.
NOT_RUN = {
    ("reproduce", "paper-sweep", "--out"): "it runs the authors' whole grid (hours); the sweep code runs on a "
                                          "small grid in test_paper_sweep.py",
    ("reproduce", "paper-sweep", "--workers"): "it runs the committed cells (an hour); test_jobs.py runs a small "
                                              "grid on a local Dask cluster",
    ("reproduce", "paper-sweep", "--scheduler"): "the same; test_jobs.py runs a small grid on a cluster's scheduler",
    ("train", "--scheduler"): "needs a running scheduler: test_jobs.py starts one and runs train --scheduler",
    **{("reproduce", name, flag): "a Dask cluster per experiment would take minutes here: test_jobs.py runs an "
       "experiment whose models are trained on a cluster, and the options' checks"
       for name in LEARNING for flag in ("--workers", "--scheduler")},
}


def runs(tmp):
    """``(entry, argv)`` of every run; ``{tmp}`` is a fresh folder."""
    out = str(tmp)
    table = [
        (kmt_main, ["verify", "--quick", "--json", "--jobs", "1"]),
        (kmt_main, ["bench", "--quick", "--repeats", "1", "--threads", "1"]),
        (kmt_main, ["bench", "--grid", "--quick", "--repeats", "1", "--out", f"{out}/grid.json"]),
        (kmt_main, ["bench", "--grid", "--engines", "--quick", "--repeats", "1"]),
        (kmt_main, ["train", "--quick", "--tokens", "d", "--seed", "3", "--n", "24", "--d", "2", "--k", "3",
                    "--tau", "0.5", "--steps", "2", "--lr", "0.001", "--threads", "2", "--results-dir", out]),
        (kmt_main, ["train", "--paper", "--n", "24", "--steps", "1", "--precision", "float32", "--results-dir", out]),
        (kmt_main, ["train", "--figures", "--n", "24", "--steps", "1", "--perturb", "1", "--results-dir", out]),
        (kmt_main, ["train", "--figures", "--figure-settings", "--n", "32", "--steps", "1", "--results-dir", out]),
        (kmt_main, ["train", "--quick", "--seeds", "1,2", "--tokens", "d+k,d", "--n", "24", "--d", "2", "--k", "3",
                    "--steps", "1", "--workers", "2", "--results-dir", out]),
        (kmt_main, ["train", "--beyond", "--tied", "--n-layers", "2", "--loss-on", "every", "--n", "24",
                    "--steps", "1", "--results-dir", out]),
        (kmt_main, ["train", "--quick", "--symmetric", "--n", "24", "--steps", "1", "--results-dir", out]),
        (kmt_main, ["reproduce", "sweep", "--quick", "--out", f"{out}/sweep.json", "--figure", f"{out}/sweep.png"]),
        (kmt_main, ["reproduce", "sweep", "--report", "--json"]),
        (kmt_main, ["reproduce", "paper-sweep", "--report", "--json"]),
        # the committed cells kept and gathered: nothing computed
        (kmt_main, ["reproduce", "paper-sweep", "--full", "--finished-only", "--resume-from", "committed",
                    "--out", f"{out}/paper-sweep/paper_sweep.json"]),
        (exercises_main, ["init", f"{out}/workbook"]),
        (exercises_main, ["check", "--dir", f"{out}/workbook/solutions", "--timeout", "600", "01"]),
        (exercises_main, ["list"]),
        (kmt_main, ["reproduce", "chaos", "--figures", "--report"]),  # its second scale
    ]
    for name in LEARNING:
        table += [(kmt_main, ["reproduce", name, "--report"]), (kmt_main, ["reproduce", name, "--report", "--json"]),
                  (kmt_main, ["reproduce", name, f"--{SCALES[name]}", "--report"])]
        if name in DEFAULT_SCALES:  # its one scale
            table.append((kmt_main, ["reproduce", name, f"--{SCALES[name]}", "--no-train", "--seeds", "0",
                                     "--threads", "2", "--results-dir", out, "--json"]))
        else:
            table.append((kmt_main, ["reproduce", name, "--quick", "--no-train", "--seeds", "0", "--threads", "2",
                                     "--results-dir", out, "--json"]))
    return table


#: The experiments that have one scale of their own, and that scale.
DEFAULT_SCALES = {"training-curves": "figures", "any-k": "beyond", "multi-step": "beyond", "real-data": "beyond",
                  "chaos": "beyond"}
#: A scale flag each learning experiment documents besides --quick, run with --report.
SCALES = {name: "paper" for name in LEARNING} | DEFAULT_SCALES


def documented_flags(command):
    """The ``--flags`` that ``command --help`` lists."""
    entry = COMMANDS[command]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), pytest.raises(SystemExit):
        entry([*command, "--help"])
    options = buffer.getvalue().split("options:", 1)[1]
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", options)) - {"--help"}


def command_of(entry, argv):
    key = tuple(argv[:2]) if argv[0] == "reproduce" else (argv[0],)
    assert COMMANDS[key] is entry, argv
    return key


@pytest.mark.parametrize("command", list(COMMANDS), ids=" ".join)
def test_every_documented_flag_has_a_run(command, tmp_path):
    used = {flag for entry, argv in runs(tmp_path) if command_of(entry, argv) == command
            for flag in argv if flag.startswith("--")}
    exempt = {key[-1] for key in NOT_RUN if key[:-1] == command}
    missing = documented_flags(command) - used - exempt
    assert not missing, f"{' '.join(command)}: documented but never run here: {sorted(missing)}"
    assert used <= documented_flags(command), f"runs use undocumented flags: {sorted(used - documented_flags(command))}"


@pytest.mark.slow
def test_every_run_succeeds(tmp_path, monkeypatch):
    # train --workers starts a Dask cluster; sweep --figure draws
    pytest.importorskip("distributed", reason="needs Dask (distributed), of the dask extra: pip install -e '.[dask]'")
    pytest.importorskip("matplotlib", reason="needs matplotlib, of the plot extra: pip install -e '.[plot]'")
    monkeypatch.setenv("KMT_REF_RESULTS", str(tmp_path / "default-results"))
    calls = []

    def run_experiment(name, scale, results_dir, train_missing=True, seeds=None, engine=None):
        calls.append((name, scale, results_dir, train_missing, seeds, engine.threads))
        return {"scale": scale, "seeds": seeds}

    monkeypatch.setattr(cli, "run_experiment", run_experiment)
    failed = []
    for entry, argv in runs(tmp_path):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            code = entry(argv)
        if code != 0:
            failed.append((argv, code, buffer.getvalue()[-500:]))
    assert not failed, failed
    # Each learning experiment got the scale, folder, seeds, --no-train and --threads its command line gave.
    assert sorted(calls) == sorted((name, DEFAULT_SCALES.get(name, "quick"), str(tmp_path), False, [0], 2)
                                   for name in LEARNING)


def test_train_says_when_the_committed_run_is_already_finished(tmp_path, capsys):
    assert kmt_main(["train", "--quick", "--results-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    line = json.loads(out)
    assert line["trained"] is False and line["finished"] is True
    assert line["checkpoint"].startswith(protocols.RESULTS_DIR)
    assert "nothing to train" in err and not any(tmp_path.rglob("*.npz"))
