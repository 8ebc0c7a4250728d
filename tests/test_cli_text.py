"""What a reader of the command line sees: help as plain text that fits, verify's last line, a bare
``train``, and no ``-0.000``."""

import contextlib
import io
import sys

import pytest

from kmt_ref.__main__ import main
from kmt_ref.exercises.__main__ import main as exercises_main
from kmt_ref.programs.registry import EXPERIMENTS

#: Every ``--help`` there is: the entry point and the arguments before ``--help``.
HELPS = [(main, []), *((main, [command]) for command in ("verify", "bench", "reproduce", "train")),
         *((main, ["reproduce", name]) for name in EXPERIMENTS),
         (exercises_main, []), *((exercises_main, [command]) for command in ("check", "list", "init"))]

#: Words a sentence does not end with.
DANGLING = {"a", "an", "and", "at", "by", "for", "from", "in", "of", "on", "or", "the", "to", "with"}


def _help(entry, argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        entry([*argv, "--help"])
    assert exited.value.code == 0
    return out.getvalue()


@pytest.mark.parametrize("entry, argv", HELPS, ids=[" ".join([e.__module__.split(".")[1], *a]) for e, a in HELPS])
def test_every_help_is_plain_text_within_100_columns_on_any_terminal(entry, argv, monkeypatch):
    for columns in ("300", "60"):  # a wide terminal, and a narrow one: at most 100 columns, and no line lost
        monkeypatch.setenv("COLUMNS", columns)
        text = _help(entry, argv)
        assert "`" not in text, text  # no RST markup from the docstrings
        assert max(map(len, text.splitlines())) <= 100, text


def test_no_experiment_is_described_by_a_cut_sentence():
    for name, experiment in EXPERIMENTS.items():
        last = experiment.describe().split()[-1].strip(".,;:)").lower()
        assert last not in DANGLING, f"{name}: {experiment.describe()!r}"


def test_verify_help_says_what_verify_checks_section_by_section(monkeypatch):
    from kmt_ref.programs.verify import SECTIONS

    monkeypatch.setenv("COLUMNS", "300")
    text = " ".join(_help(main, ["verify"]).split())
    assert "classical algorithm" in text and "computer algebra" in text and "exit status 1" in text
    assert all(" ".join(title.split()) in text for title in SECTIONS)


def test_verify_without_sympy_names_what_it_skipped_and_does_not_say_every_claim_holds(monkeypatch):
    import kmt_ref
    from kmt_ref.programs.proofs import symbolic_rows
    from kmt_ref.programs.verify import Row, summary_line

    # SymPy as if not installed: importing it (or a module that needs it) fails.
    monkeypatch.setitem(sys.modules, "sympy", None)
    for name in ("symbolic", "symbolic_formulas", "symbolic_library"):
        monkeypatch.delitem(sys.modules, f"kmt_ref.{name}", raising=False)
        monkeypatch.delattr(kmt_ref, name, raising=False)
    title = "Checked symbolically"
    results = {"Theorem 2.1": [Row("Thm 2.1", "data", 1e4, "claim", 0.0, 0.0, holds=True, expect=True)],
               title: symbolic_rows()}
    line = summary_line(results)
    assert "every claim holds" not in line
    assert "every claim checked holds" in line and f'skipped the section "{title}"' in line and "SymPy" in line
    with_sympy = {"Theorem 2.1": results["Theorem 2.1"]}
    assert summary_line(with_sympy).endswith("every claim holds.")


def test_train_without_arguments_prints_its_usage_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KMT_REF_RESULTS", raising=False)
    with pytest.raises(SystemExit) as exited:
        main(["train"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m kmt_ref train") and "--quick" in err
    assert list(tmp_path.iterdir()) == []


def test_a_number_that_rounds_to_zero_is_shown_without_its_minus():
    from kmt_ref._text import unsigned_zeros

    assert unsigned_zeros("-0.000 [-0.00, 0.40] (-0.000 to -0.001) =-0") == "0.000 [0.00, 0.40] (0.000 to -0.001) =0"
    # Not a zero, or not a number of its own: kept; in a column, the minus becomes a space.
    assert unsigned_zeros("-0.0001 -0.000e-05 x-0.0 10-0.0 +0.000") == "-0.0001 -0.000e-05 x-0.0 10-0.0 +0.000"
    assert unsigned_zeros("gap   -0.000") == "gap    0.000"


def test_every_committed_report_shows_no_negative_zero(capsys):
    import re

    for name in EXPERIMENTS:
        try:
            assert main(["reproduce", name, "--report"]) == 0
        except SystemExit:  # nothing committed for it yet: no report for a reader to see
            assert "results for" in capsys.readouterr().err
            continue
        text = capsys.readouterr().out
        assert not re.search(r"(?<![\w.])-0\.0*(?![\w.])", text), f"{name}:\n{text}"
