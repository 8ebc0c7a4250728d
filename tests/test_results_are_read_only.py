"""No command writes to the committed results: they are inputs, and user runs go elsewhere."""

import hashlib
import os
from pathlib import Path

import pytest

import kmt_ref
from kmt_ref.__main__ import main

PACKAGE = Path(kmt_ref.__file__).resolve().parent


def _snapshot():
    files = sorted(p for d in ("results", "data") for p in (PACKAGE / d).rglob("*") if p.is_file())
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def test_writing_commands_leave_the_committed_results_unchanged(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KMT_REF_RESULTS", raising=False)
    before = _snapshot()
    assert main(["reproduce", "sweep", "--quick"]) == 0
    assert main(["reproduce", "weights", "--quick"]) == 0  # reads the committed quick checkpoint
    assert main(["train", "--quick", "--n", "20", "--d", "2", "--k", "2", "--steps", "2"]) == 0
    assert main(["train", "--quick"]) == 0  # the committed quick model is finished: nothing to write
    assert _snapshot() == before
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert "kmt_ref_results/sweep/sweep.json" in written
    assert "kmt_ref_results/learning/quick/weights.json" in written
    assert any(p.startswith("kmt_ref_results/learning/quick-") and p.endswith("dk-seed0.npz") for p in written)


@pytest.mark.parametrize("argv", [
    ["reproduce", "weights", "--quick", "--results-dir", str(PACKAGE / "results" / "learning")],
    ["train", "--quick", "--results-dir", str(PACKAGE / "results" / "learning")],
    ["reproduce", "sweep", "--quick", "--out", str(PACKAGE / "results" / "sweep" / "sweep.json")],
])
def test_writing_into_the_committed_results_is_refused(argv, capsys):
    before = _snapshot()
    with pytest.raises(SystemExit) as err:
        main(argv)
    assert err.value.code == 2
    assert "committed results" in capsys.readouterr().err
    assert _snapshot() == before


def test_kmt_ref_results_variable_chooses_the_output_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("KMT_REF_RESULTS", str(tmp_path / "mine"))
    from kmt_ref.programs._results import output_dir

    assert output_dir() == os.path.abspath(tmp_path / "mine")


def test_committed_results_name_no_machine_paths():
    import re

    for path in (PACKAGE / "results").rglob("*"):
        if path.suffix in (".json", ".log"):
            assert not re.search(r"(?<![\w.])/(work|tmp|home|root|Users)/", path.read_text()), path


@pytest.mark.slow
def test_a_link_below_the_results_dir_into_the_committed_results_is_refused(tmp_path):
    from kmt_ref._paths import COMMITTED_RESULTS
    from kmt_ref.programs.registry import run_experiment

    os.symlink(os.path.join(COMMITTED_RESULTS, "learning", "quick"), tmp_path / "quick")
    before = sorted(os.listdir(os.path.join(COMMITTED_RESULTS, "learning", "quick")))
    with pytest.raises(ValueError, match="committed results"):
        run_experiment("learning", "quick", str(tmp_path), train_missing=False, progress=False)
    assert sorted(os.listdir(os.path.join(COMMITTED_RESULTS, "learning", "quick"))) == before


def test_a_workbook_is_never_made_inside_the_committed_results(tmp_path):
    from kmt_ref._paths import COMMITTED_RESULTS
    from kmt_ref.exercises.runner import copy_workbook

    with pytest.raises(ValueError, match="committed results"):
        copy_workbook(os.path.join(COMMITTED_RESULTS, "wb"))
    os.symlink(COMMITTED_RESULTS, tmp_path / "results")
    with pytest.raises(ValueError, match="committed results"):
        copy_workbook(tmp_path / "results" / "wb")
    assert not os.path.exists(os.path.join(COMMITTED_RESULTS, "wb"))
