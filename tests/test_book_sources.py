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
    """Pages as _toc.yml names them: ``notation``, ``api/classical``."""
    found = [*BOOK.glob("*.md"), *(BOOK / "api").glob("*.md")]
    return sorted(p.relative_to(BOOK).with_suffix("").as_posix() for p in found if p.name != "README.md")


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


def test_the_text_check_flags_raw_reprs_and_markup_but_not_python_source(check_pages, tmp_path):
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "x.html").write_text(
        "<p>VARIANTS = {'soft': &lt;function soft at 0x7f&gt;}</p><p>Alias for field number 0</p>"
        "<pre>t (``t`` is the argument)</pre><p>in 1 seconds</p>"
        '<div class="highlight-python notranslate"><pre>"""a docstring with ``code``."""</pre></div>')
    (tmp_path / "page.html").write_text("<p>draw = &lt;function _location_scale.&lt;locals&gt;.draw&gt;</p>")
    problems = check_pages.source_check(tmp_path)
    assert sum("raw repr" in p for p in problems) == 4 and sum("plural" in p for p in problems) == 1
    assert all(p.startswith(("api/x.html", "page.html")) for p in problems)
    assert not any("``code``" in p and "raw repr" in p for p in problems)


# The API reference: book/api/*.md document modules with ``automodule`` (autodoc).
AUTOMODULE = re.compile(r"\.\. automodule:: (\S+)\n((?:   :[\w-]+:.*\n)*)")
#: Modules of the package that are not library API: programs, plotting, the
#: workbook, the speed wing (same numbers as the reference attention) and private modules.
NOT_API = ("kmt_ref.programs", "kmt_ref.plotting", "kmt_ref.exercises", "kmt_ref.data", "kmt_ref.kernels")


def api_modules():
    """``{module: excluded member names}`` of every automodule on the API pages."""
    documented = {}
    for page in (BOOK / "api").glob("*.md"):
        for module, options in AUTOMODULE.findall(page.read_text()):
            assert module not in documented, f"{module} documented twice"
            excluded = re.search(r":exclude-members: (.*)", options)
            documented[module] = {n.strip() for n in excluded.group(1).split(",")} if excluded else set()
    return documented


def library_modules():
    import pkgutil

    import kmt_ref

    return sorted(
        m.name for m in pkgutil.walk_packages(kmt_ref.__path__, "kmt_ref.")
        if not m.ispkg and not m.name.startswith(NOT_API)
        and not any(part.startswith("_") for part in m.name.split("."))
    )


def _needs_every_library_module():
    """Importing every library module needs the plotting and the symbolic ones' packages, of the book extra."""
    for module in ("matplotlib", "sympy"):
        pytest.importorskip(module, reason=f"needs {module}, of the book extra: pip install -e '.[book]'")


def test_the_api_reference_documents_every_library_module_and_public_name_once():
    _needs_every_library_module()
    documented = api_modules()
    missing = sorted(set(library_modules()) - set(documented))
    assert not missing, f"library modules with no page in book/api/: {missing}"
    seen = {}
    for module, excluded in documented.items():
        mod = importlib.import_module(module)
        assert excluded <= set(mod.__all__), f"{module}: excludes names it does not have: {excluded}"
        for name in sorted(set(mod.__all__) - excluded):
            obj = getattr(mod, name)
            if callable(obj):  # a function or class is documented where it is defined, once
                assert getattr(obj, "__module__", module) == module, f"{module}.{name} is defined elsewhere"
                assert id(obj) not in seen, f"{module}.{name} is also documented as {seen[id(obj)]}"
                seen[id(obj)] = f"{module}.{name}"
    import kmt_ref

    exported = {id(getattr(kmt_ref, n)) for n in kmt_ref.__all__ if callable(getattr(kmt_ref, n))}
    assert exported <= set(seen), "a name of the top-level package has no entry in the API reference"


def test_source_listings_cut_every_docstring_to_its_plain_first_line():
    pytest.importorskip("docutils", reason="needs docutils, of the book extra: pip install -e '.[book]'")
    spec = importlib.util.spec_from_file_location("source_listing", BOOK / "_ext" / "source_listing.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    source = '''class A:
    """Uses :func:`~kmt_ref.lloyd` and ``X``.

    Parameters
    ----------
    X : ndarray
    """

    def f(self):
        """See :meth:`A.g <kmt_ref.A.g>`."""
        return 1
'''
    assert module.without_docstrings(source) == '''class A:
    """Uses lloyd and X."""

    def f(self):
        """See A.g."""
        return 1
'''


def test_every_entry_of_the_api_reference_has_a_docstring():
    """A public function, class, method or property without one would be an empty entry."""
    import inspect

    _needs_every_library_module()

    empty = []
    for module, excluded in api_modules().items():
        mod = importlib.import_module(module)
        for name in sorted(set(mod.__all__) - excluded):
            obj = getattr(mod, name)
            if callable(obj) and not inspect.getdoc(obj):
                empty.append(f"{module}.{name}")
            if inspect.isclass(obj):
                for attr, value in vars(obj).items():
                    function = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
                    if not attr.startswith("_") and callable(function) and not (function.__doc__ or "").strip():
                        empty.append(f"{module}.{name}.{attr}")
    assert not empty, f"public definitions without a docstring: {empty}"


def test_the_reproduction_map_and_the_experiment_registry_agree():
    # The map of the paper's results (book/reproduction.md) names its commands; every one is a registered
    # experiment, and every experiment that reproduces a figure of the paper is on the map.
    from kmt_ref.programs.registry import EXPERIMENTS

    text = (BOOK / "reproduction.md").read_text()
    table = text[text.index("| paper | what it shows |"):text.index("## The numbers")]
    named = set(re.findall(r"reproduce ([\w-]+)", table))
    assert named <= set(EXPERIMENTS), named - set(EXPERIMENTS)
    of_the_paper = {name for name, e in EXPERIMENTS.items() if e.paper.startswith("paper")}
    assert of_the_paper <= named, of_the_paper - named


def markdown_headings(text):
    """The headings of a page's Markdown, code cells and fenced blocks left out (their ``#`` are comments)."""
    found, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            found.append(line)
    return found


@pytest.mark.parametrize("page", pages())
def test_headings_write_k_in_italics(page):
    """One typography for the k of k-means and k-medoids in every title: *k*, as the first chapters have it."""
    plain = [h for h in markdown_headings((BOOK / f"{page}.md").read_text())
             if re.search(r"(?<![*$\w])k-(means|medoids)|\$k\$-", h)]
    assert not plain, f"{page}: headings with a plain k: {plain}"


def test_every_lemma_proposition_and_theorem_has_a_symbolic_check_cell():
    """Each statement box is followed by a cell that runs its check by computer algebra (kmt_ref.symbolic* on the
    weights, kmt_ref.symbolic_formulas on the formulas) after its proof and before the next statement; a statement
    whose proof comes right before the next statement's box may share that one's check, and a statement proved
    later ("Proof of ...") is checked after that proof."""
    box = re.compile(r"```\{prf:(lemma|proposition|theorem|corollary)\}[^\n]*\n:label: (\S+)")
    check = re.compile(r"symbolic(_formulas|_variants|_engines)?\.\w+\(")
    unchecked = []
    for page in pages():
        text = (BOOK / f"{page}.md").read_text()
        found = list(box.finditer(text))
        ends = [text.index("\n```\n", m.end()) + 5 for m in found]
        starts = [m.start() for m in found[1:]] + [len(text)]
        for i, m in enumerate(found):
            label, end, stop = m.group(2), ends[i], starts[i]
            deferred = re.search(r"Proof of \{prf:ref\}`[^`]*<" + re.escape(label) + ">`", text)
            if "```{prf:proof}" not in text[end:stop] and deferred:  # proved later: checked after that proof
                end = deferred.end()
                stop = next((s for s in starts if s > end), len(text))
            between = text[end:stop]
            if check.search(between):
                continue
            alone = re.sub(r"```\{prf:proof\}.*?\n```\n", "", between, count=1, flags=re.S).strip()
            if not alone and i + 1 < len(found) and check.search(text[ends[i + 1]:starts[i + 1]]):
                continue  # adjacent to the next statement, whose check follows it
            unchecked.append(f"{page}: {label}")
    assert not unchecked, f"statements without a symbolic check cell: {unchecked}"
