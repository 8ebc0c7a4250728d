"""The README's snippet runs and prints exactly what the README says it prints."""

import contextlib
import io
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_snippet_prints_the_numbers_shown_in_the_readme():
    (code,) = _blocks("python")
    (expected,) = _blocks("text")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue() == expected


def test_readme_learning_table_matches_the_committed_report():
    from kmt_ref.learning.protocols import learning_headline as report

    rep = report()
    text = README.read_text()
    labels = r"Lloyd|learned, tokens `\[x \\\| y\]`|learned, tokens `\[x\]` only|seeds evaluated"
    row = dict(re.findall(rf"^\| ({labels}) \| ([0-9.]+) \|", text, flags=re.M))
    ranges = {label: (lo, hi) for label, lo, hi in
              re.findall(rf"^\| ({labels}) \| [0-9.]+ \| ([0-9.]+) – ([0-9.]+) \|", text, flags=re.M)}
    for label, key in (("Lloyd", "lloyd"), ("learned, tokens `[x \\| y]`", "learned"),
                       ("learned, tokens `[x]` only", "d_only")):
        assert row[label] == f"{rep[key + '_log_objective']:.3f}", label
        lo, hi = rep[key + "_log_objective_range"]
        assert ranges[label] == (f"{lo:.3f}", f"{hi:.3f}"), label
    assert row["seeds evaluated"] == str(rep["n_seeds"])
    # The README compares each model with Lloyd seed by seed (same seed, same held-out tasks):
    # "on every seed the learned [x | y] model ends below Lloyd's algorithm, by a - b, and the
    # [x]-only model above it, by c - d".
    assert rep["seeds"] == rep["d_only_seeds"]
    learned = [m - lloyd for m, lloyd in zip(rep["learned_final"], rep["lloyd_final"], strict=True)]
    d_only = [m - lloyd for m, lloyd in zip(rep["d_only_final"], rep["lloyd_final"], strict=True)]
    assert max(learned) < 0 < min(d_only)
    said = re.search(r"learned `\[x \| y\]` model ends below Lloyd's algorithm,\s+by ([0-9.]+)–([0-9.]+),"
                     r"\s+and the\s+`\[x\]`-only model above it, by ([0-9.]+)–([0-9.]+)", text)
    assert said.groups() == (f"{-max(learned):.2f}", f"{-min(learned):.2f}",
                             f"{min(d_only):.3f}", f"{max(d_only):.3f}")


def test_version_is_one_number_across_package_citation_and_changelog():
    import kmt_ref

    citation = (ROOT / "CITATION.cff").read_text()
    assert re.search(r"^version: (\S+)$", citation, re.M).group(1) == kmt_ref.__version__
    first_entry = re.search(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M).group(1)
    assert first_entry == kmt_ref.__version__
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()


def test_ci_runs_the_readme_commands():
    (commands,) = [b for b in _blocks("bash") if "pip install" in b]
    ci = (ROOT / ".ci" / "run").read_text() + (ROOT / ".ci" / "book.sh").read_text()
    for line in commands.strip().splitlines():
        for command in line.split(" && "):
            if not command.startswith(("python3 -m venv", ". .venv")):
                assert command in ci, command


def test_readme_training_times_are_the_committed_ones():
    text = (ROOT / "README.md").read_text()
    said = re.search(r"\((\d+)–(\d+) minutes of training per\s+`\[x \| y\]` model and (\d+)–(\d+) per `\[x\]` model",
                     text)
    minutes = []
    for name in ("learning", "ablation"):
        wall = json.loads((ROOT / "kmt_ref/results/learning/paper" / f"{name}.json").read_text())["train_wall_time"]
        minutes += [str(int(min(wall) // 60)), str(int(-(-max(wall) // 60)))]
    assert said is not None and list(said.groups()) == minutes


def test_readme_float32_numbers_are_the_committed_ones():
    text = (ROOT / "README.md").read_text()
    said = re.search(r"trained with float32 steps \(`train --precision float32`, seed (\d+); `reproduce precision\s+"
                     r"--report`\) ends at ([0-9.]+), the float64-trained one of that seed at ([0-9.]+)", text)
    prec = json.loads((ROOT / "kmt_ref/results/learning/paper/precision.json").read_text())
    f32, f64 = prec["float32"], prec["float64"]
    assert said is not None
    assert said.groups() == (str(f32["seeds"][0]), f"{f32['final'][0]:.3f}", f"{f64['final'][0]:.3f}")


def test_readme_eval_dropout_numbers_are_the_committed_ones():
    text = (ROOT / "README.md").read_text()
    said = re.search(r"evaluated\s+that way \(`reproduce eval-dropout --report`\), the `\[x \| y\]` models give "
                     r"([0-9.]+) \(([0-9.]+) – ([0-9.]+)\),\s+still below Lloyd's algorithm on every seed", text)
    drop = json.loads((ROOT / "kmt_ref/results/learning/paper/eval-dropout.json").read_text())
    values = drop["learned_dropout_final"]
    assert said is not None and said.groups() == tuple(f"{v:.3f}" for v in (drop["learned_dropout_log_objective"],
                                                                             min(values), max(values)))
    assert all(m < lloyd for m, lloyd in zip(values, drop["lloyd_final"], strict=True))


def test_readme_soft_kmeans_baseline_is_what_the_code_computes():
    from kmt_ref.learning.protocols import learning_headline, soft_kmeans_headline

    soft, rep = soft_kmeans_headline("paper"), learning_headline()
    text = README.read_text()
    assert f"beta = {soft['beta']:g}" in text
    assert f"ends at {soft['median']:.3f} ({soft['range'][0]:.3f} – {soft['range'][1]:.3f})" in text
    assert max(soft["final"]) < min(rep["learned_final"])  # "below the learned [x | y] layer on every seed"
