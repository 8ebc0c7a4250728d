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
