"""The README's snippet runs and prints exactly what the README says it prints."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_snippet_prints_the_numbers_shown_in_the_readme():
    (code,) = _blocks("python")
    (expected,) = _blocks("text")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue() == expected


def test_readme_quick_start_uses_the_commands_ci_runs():
    text = README.read_text()
    assert "python -m kmt_ref verify" in text
    assert 'pip install -e ".[test]" && python -m pytest' in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert "python -m pytest" in ci and "python -m kmt_ref verify" in ci


def test_readme_learning_table_matches_the_committed_report():
    from kmt_ref.learning.experiments import report

    rep = report()
    text = README.read_text()
    labels = r"Lloyd|learned, tokens `\[x \\\| y\]`|learned, tokens `\[x\]` only|seeds trained so far"
    row = dict(re.findall(rf"^\| ({labels}) \| ([0-9.]+) \|", text, flags=re.M))
    ranges = {label: (lo, hi) for label, lo, hi in
              re.findall(rf"^\| ({labels}) \| [0-9.]+ \| ([0-9.]+) – ([0-9.]+) \|", text, flags=re.M)}
    for label, key in (("Lloyd", "lloyd"), ("learned, tokens `[x \\| y]`", "learned"),
                       ("learned, tokens `[x]` only", "d_only")):
        assert row[label] == f"{rep[key + '_log_objective']:.3f}", label
        lo, hi = rep[key + "_log_objective_range"]
        assert ranges[label] == (f"{lo:.3f}", f"{hi:.3f}"), label
    assert row["seeds trained so far"] == str(rep["n_seeds"])
    # The README says: on every seed the learned [x | y] model ends below Lloyd and the [x]-only model above.
    assert rep["learned_log_objective_range"][1] < rep["lloyd_log_objective_range"][0]
    assert rep["d_only_log_objective_range"][0] > rep["lloyd_log_objective_range"][1]
