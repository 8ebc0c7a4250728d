"""The README's snippet runs and prints exactly what the README says it prints."""

import contextlib
import io
import re
from pathlib import Path

import pytest

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


def test_readme_fits_on_one_screen_and_names_the_books_core_path():
    text = README.read_text()
    assert len(text.split()) <= 1200
    titles = ("The construction at a glance", "The k-means transformer (Theorem 2.1)", "Learning a clustering layer")
    assert all(title in text for title in titles)


@pytest.mark.slow
def test_readme_soft_kmeans_baseline_is_what_the_code_computes():
    from kmt_ref.learning.protocols import learning_headline, soft_kmeans_headline

    soft, rep = soft_kmeans_headline("paper"), learning_headline()
    text = README.read_text()
    assert f"beta = {soft['beta']:g}" in text
    assert f"ends at {soft['median']:.3f} ({soft['range'][0]:.3f} – {soft['range'][1]:.3f})" in text
    assert max(soft["final"]) < min(rep["learned_final"])  # "below the learned [x | y] layer on every seed"


def test_readme_speed_ratios_are_the_committed_grid():
    # "the Theorem 2.1 and 2.2 transformers took at most Ax and Bx `lloyd`'s time": the largest ratios of
    # the committed bench --grid, at gamma = inf.
    from kmt_ref.programs.bench import committed_grid

    rows = committed_grid()["rows"]
    said = re.search(r"took at most ([0-9.]+)x \(Theorem 2\.1\) and ([0-9.]+)x \(Theorem 2\.2\)\s+`lloyd`'s time",
                     README.read_text())
    assert said is not None
    for value, name in zip(said.groups(), ("2.1 gamma=inf", "2.2 gamma=inf"), strict=True):
        assert value == f"{max(r['ratios'][name] for r in rows):.2f}", name


def test_readme_default_engine_ratios_are_the_committed_engines_record():
    # "that took A–Bx `lloyd`'s time (Theorem 2.1) and C–Dx (Theorem 2.2)": the range over the committed
    # bench --grid --engines of the blocks on tokens, the default engine.
    from kmt_ref.programs.bench import COMMITTED_ENGINES, committed_grid

    rows = committed_grid(COMMITTED_ENGINES)["rows"]
    said = re.search(r"that took ([0-9.]+)–([0-9.]+)x `lloyd`'s time\s+\(Theorem 2\.1\) and ([0-9.]+)–([0-9.]+)x "
                     r"\(Theorem 2\.2\)", README.read_text())
    assert said is not None
    for (low, high), name in zip((said.groups()[:2], said.groups()[2:]), ("2.1 blocks", "2.2 blocks"), strict=True):
        ratios = [r["ratios"][name] for r in rows]
        assert (low, high) == (f"{min(ratios):.2f}", f"{max(ratios):.2f}"), name
