"""Static checks of the book's sources and of its browser check (no build needed).

The strict build catches these too, but only after executing every page; here
they fail in a second, with the file to fix.
"""

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"


def toc_files():
    """Pages listed in _toc.yml (commented lines are not entries)."""
    text = (BOOK / "_toc.yml").read_text()
    root = re.search(r"^root:\s*(\S+)", text, re.MULTILINE).group(1)
    return [root] + re.findall(r"^\s*-\s*file:\s*(\S+)", text, re.MULTILINE)


def pages():
    return sorted(p.stem for p in BOOK.glob("*.md") if p.name != "README.md")


def bib_keys():
    return set(re.findall(r"^@\w+\{([^,\s]+),", (BOOK / "references.bib").read_text(), re.MULTILINE))


def test_every_toc_entry_is_a_page():
    missing = [f for f in toc_files() if not (BOOK / f"{f}.md").is_file()]
    assert not missing, f"_toc.yml lists pages that do not exist: {missing}"


def test_every_page_is_in_the_toc():
    unlisted = sorted(set(pages()) - set(toc_files()))
    assert not unlisted, f"pages not in book/_toc.yml (they would not be built): {unlisted}"


def test_every_citation_has_a_bibtex_entry():
    keys = bib_keys()
    unknown = {}
    for page in pages():
        text = (BOOK / f"{page}.md").read_text()
        for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", text):
            for key in (k.strip() for k in group.split(",")):
                if key not in keys:
                    unknown.setdefault(page, []).append(key)
    assert not unknown, f"citations without an entry in book/references.bib: {unknown}"


def test_the_paper_is_in_the_bibliography():
    assert "clarkson2026transformer" in bib_keys()


def test_every_notebook_page_declares_the_python3_kernel():
    for page in pages():
        text = (BOOK / f"{page}.md").read_text()
        if "{code-cell}" in text:
            assert text.startswith("---\n") and "name: python3" in text.split("---")[1], page


@pytest.fixture(scope="module")
def check_pages():
    spec = importlib.util.spec_from_file_location("check_pages", ROOT / ".ci" / "check_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_static_check_flags_remote_scripts_styles_and_css_imports(check_pages, tmp_path):
    (tmp_path / "_static").mkdir()
    (tmp_path / "page.html").write_text(
        '<script src="https://cdn.example.org/mathjax.js"></script>'
        '<link rel="stylesheet" href="//fonts.example.org/font.css">'
        '<a href="https://arxiv.org/abs/2506.19125">a plain link is fine</a>'
        '<script src="_static/local.js"></script>'
    )
    (tmp_path / "_static" / "theme.css").write_text("@import url('https://fonts.example.org/x.css');")
    problems = check_pages.static_check(tmp_path)
    assert len(problems) == 3
    assert not any("arxiv" in p or "local.js" in p for p in problems)


def test_rendered_text_ignores_code_and_finds_raw_tex(check_pages):
    parsed = check_pages.parse(
        "<p>typeset <mjx-container>x</mjx-container> but raw \\(k\\) here</p>"
        "<pre>print('$$ in code is fine')</pre><img src='_images/a.png'>"
    )
    text = "".join(parsed.text)
    assert parsed.math_containers == 1
    assert "\\(" in text and "$$" not in text
    assert parsed.images == ["_images/a.png"]
