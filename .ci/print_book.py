"""Print the whole book to one PDF a reader can navigate, and check that PDF.

Usage (after the strict HTML build and ``jupyter-book build book --builder
singlehtml``, which reuses its executed pages; see .ci/book.sh)::

    python .ci/print_book.py --singlehtml book/_build/singlehtml --html-dir book/_build/html \
        --toc book/_toc.yml --config book/_config.yml --out book/_build/html/kmt_ref-book.pdf

Route: Sphinx's single-page builder joins every page of the table of contents
into one document. A print copy of it gets a title page (with the paper it
reproduces, from CITATION.cff, and the date of the commit), a contents page,
print rules (A4, the page number at the foot of every page but the title page,
every chapter from a new page, what scrolls sideways on screen wrapped) and
its links rewritten: a link into the book
becomes a link inside the PDF; a link that only means something on the web
(a download, the search page, this PDF) loses its target. Chromium prints the
copy twice with its document outline (bookmarks from the headings): the first
print gives the page of every chapter, the second prints the contents with
those pages. pypdf adds the metadata.

Checks, each failing with what and where: the title page carries the title,
the citation and the date; no page is blank; every word of the print copy is
in the PDF's text as often (none cut off at the page's edge);
the contents list every chapter of ``_toc.yml`` with the page its bookmark
goes to, and that page starts with the chapter's title; a bookmark for every
chapter and more bookmarks than chapters (sections); the outline's top level
holds the first chapter and every part, each part its chapters; every page but the first
carries its own number; Title, Author, Subject and Keywords are set; no
link points to this machine (localhost, 127.0.0.1, file:), internal links
exist and each goes to a page; no raw TeX is left in the text; the first page
of the web book links to the PDF.
"""

import argparse
import collections
import datetime
import html
import logging
import re
import subprocess
import sys
import tempfile
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from pypdf import PdfReader, PdfWriter
from pypdf.generic import NameObject, TextStringObject

sys.path.insert(0, str(Path(__file__).parent))
from check_pages import RAW_TEX, chromium_binary, run_chromium  # noqa: E402

#: Print rules added to the print copy (Chromium 131+ draws @page margin boxes).
PRINT_CSS = """
@page { size: A4; margin: 16mm 15mm 18mm 15mm;
  @bottom-center { content: counter(page); font: 9pt sans-serif; color: #444; } }
@page :first { @bottom-center { content: none; } }
#kmt-title-page { break-after: page; text-align: center; padding-top: 28vh; }
#kmt-title-page h1 { font-size: 2.4em; margin-bottom: 0.6em; }
#kmt-title-page p { font-size: 1.1em; margin: 0.4em 0; }
#kmt-title-page p.kmt-cited { font-style: italic; margin: 0.4em 10% 2em; }
#kmt-contents { break-after: page; }
#kmt-contents ol { list-style: none; padding-left: 0; }
#kmt-contents li.part { font-weight: bold; margin-top: 0.8em; }
#kmt-contents li.chapter { display: flex; padding-left: 1.2em; }
#kmt-contents li.chapter a { flex: 1; }
/* The chapter's (empty) marker starts the page, not its section: an empty line box after a full page would
   otherwise spill onto a page of its own before the section's break. */
span[id^="document-"] { display: block; break-before: page; }
/* The theme hides each page's first h1 in print (it prints the title apart): one document, keep them. */
.bd-main .bd-content .bd-article h1:first-of-type { display: block !important; }
/* Paper does not scroll: what scrolls sideways on screen wraps inside the page instead of being cut at its edge. */
.pst-scrollable-table-container, .table-wrapper, .cell_output, .output, div.highlight, pre {
  overflow: visible !important; }
table { width: 100% !important; max-width: 100% !important; }
td, th { overflow-wrap: anywhere; }
pre { white-space: pre-wrap !important; overflow-wrap: anywhere; }
#jb-print-docs-body, .headerlink, .prev-next-area, .bd-header-article, .bd-footer-article,
.bd-footer-content, .bd-sidebar-secondary, #kmt-probe { display: none !important; }
"""

#: Where the contents pages go: from page 2, after the title page.
FIRST_CONTENTS_PAGE = 2


def normalize(text):
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", text)).replace("#", "").split())


MATH = re.compile(r"\\\((.*?)\\\)")
#: The TeX of the book's headings, as text (a bookmark is plain text).
TEX_TEXT = {r"\gamma": "γ", r"\infty": "∞", r"\tau": "τ", r"\beta": "β", r"\alpha": "α", r"\Delta": "Δ"}


def key(title):
    """A title without its spaces and formulas: Chromium's bookmarks lose the space where a
    heading wraps, and the formulas (typeset by MathJax) altogether."""
    return "".join(MATH.sub("", title).split())


def same_title(bookmark, title):
    # Chromium may repeat a heading's text in its bookmark: whole (a heading that wraps inside a link), or
    # in pieces around an emphasized part ("<em>k</em>-means++ seeding" became "kk-means++ seeding-means++
    # seeding"). Accept the title, once, with at most twice its length again made of its own characters.
    b, t = key(bookmark), key(title)
    return b == t or (t in b and len(b) <= 3 * len(t) and set(b) <= set(t))


def plain(title):
    """A heading as plain text: ``Verification at \\(\\gamma = \\infty\\)`` -> ``Verification at γ = ∞``."""
    def text(match):
        tex = match.group(1)
        for macro, symbol in TEX_TEXT.items():
            tex = tex.replace(macro, symbol)
        return tex.replace("{", "").replace("}", "").replace("\\", "")
    return MATH.sub(text, title)


def headings(document):
    """The text of every heading of ``document``, in order, formulas in TeX."""
    return [normalize(text) for _, text in re.findall(r"<h([1-6])[^>]*>(.*?)</h\1>", document, re.S)]


def retitle_bookmarks(writer, titles):
    """Give every bookmark the text of its heading (``titles``, in document order), spaces included."""
    at = 0

    def walk(item):
        nonlocal at
        while item is not None:
            item = item.get_object()
            for i in range(at, len(titles)):
                if same_title(str(item["/Title"]), titles[i]):
                    item[NameObject("/Title")] = TextStringObject(plain(titles[i]))
                    at = i + 1
                    break
            if "/First" in item:
                walk(item["/First"])
            item = item.get("/Next")

    walk(writer.root_object["/Outlines"].get_object().get("/First"))


def chapter_titles(document, pages):
    """``{page: (anchor, title)}`` of every chapter, from the single document."""
    found = {}
    for page in pages:
        match = re.search(
            rf'<span id="document-{re.escape(page)}"></span>\s*<section[^>]*id="([^"]+)"[^>]*>\s*<h\d[^>]*>(.*?)</h\d>',
            document, re.S)
        if match is None and page == pages[0]:  # the root page is not marked: its first section
            match = re.search(r'<section[^>]*id="([^"]+)"[^>]*>\s*<h1[^>]*>(.*?)</h1>', document, re.S)
        if match is not None:
            found[page] = (match.group(1), normalize(match.group(2)))
    return found


def parts(toc):
    """``[(caption, [page, ...]), ...]`` of ``_toc.yml``; the root page first, without a caption."""
    text = Path(toc).read_text(encoding="utf-8")
    root = re.search(r"^root:\s*(\S+)", text, re.M).group(1)
    grouped = [("", [root])]
    for line in text.splitlines():
        caption = re.match(r"^\s*- caption:\s*(.+?)\s*$", line)
        page = re.match(r"^\s*- file:\s*(\S+)", line)
        if caption:
            grouped.append((caption.group(1).strip("\"'"), []))
        elif page:
            grouped[-1][1].append(page.group(1))
    return grouped


def rewrite_links(document, root):
    """Links into the book stay inside the document; web-only links lose their target."""
    def anchor(match):
        tag = match.group(0)
        href = re.search(r'\shref="([^"]*)"', tag)
        if href is None:
            return tag
        target = html.unescape(href.group(1))
        if target.startswith(f"{root}.html#"):
            return tag.replace(href.group(0), f' href="{html.escape(target[len(root) + 5:])}"')
        if target.startswith(("#", "http://", "https://", "mailto:")):
            return tag
        return tag.replace(href.group(0), "")

    return re.sub(r"<a\s[^>]*>", anchor, document)


def contents_html(grouped, titles, page_of):
    rows = []
    for caption, pages in grouped:
        if caption:
            rows.append(f'<li class="part">{html.escape(caption)}</li>')
        for page in pages:
            anchor, title = titles[page]
            number = page_of.get(page, "000")
            rows.append(f'<li class="chapter"><a href="#{anchor}">{html.escape(title)}</a><span>{number}</span></li>')
    return '<div id="kmt-contents"><h1>Contents</h1><ol>' + "".join(rows) + "</ol></div>"


def citation(cff):
    """The paper the book reproduces, as one line, from CITATION.cff's preferred citation."""
    paper = yaml.safe_load(Path(cff).read_text(encoding="utf-8"))["preferred-citation"]
    names = [a["family-names"] for a in paper["authors"]]
    ids = ", ".join(i["value"] for i in paper.get("identifiers", []))
    return (f"{', '.join(names[:-1])} and {names[-1]}, \u201c{paper['title']}\u201d, "
            f"{paper['collection-title']}, {paper['year']}" + (f" ({ids})" if ids else ""))


def edition_date():
    """The date of the commit the book is built from (the day it was printed, outside a git checkout)."""
    done = subprocess.run(["git", "log", "-1", "--format=%cs"], capture_output=True, text=True)
    date = done.stdout.strip()
    if done.returncode != 0 or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        date = datetime.date.today().isoformat()
    return date


def print_copy(document, config, version, contents, cited, date):
    title = re.search(r'^title:\s*"?(.+?)"?\s*$', config, re.M).group(1)
    author = re.search(r'^author:\s*"?(.+?)"?\s*$', config, re.M).group(1)
    title_page = (f'<div id="kmt-title-page"><h1>{html.escape(title)}</h1>'
                  f"<p>A readable NumPy reference, tutorial and workbook of</p>"
                  f'<p class="kmt-cited">{html.escape(cited)}</p>'
                  f"<p>{html.escape(author)}</p><p>kmt_ref {html.escape(version)}, {html.escape(date)}</p></div>")
    document = re.sub(r"<title>.*?</title>", f"<title>{html.escape(title)}</title>", document, count=1, flags=re.S)
    document = document.replace("</head>", f"<style>{PRINT_CSS}</style></head>", 1)
    article = re.search(r'<article class="bd-article"[^>]*>', document)
    if article is None:
        sys.exit("print_book: no <article class=\"bd-article\"> in the single-page book")
    return document[: article.end()] + title_page + contents + document[article.end():], title, author


def bookmarks(reader):
    """``[(depth, title, page index), ...]`` of the PDF's bookmarks, in order, titles as Chromium wrote them."""
    flat = []

    def walk(items, depth):
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
            else:
                flat.append((depth, str(item.title), reader.get_destination_page_number(item)))

    walk(reader.outline, 0)
    return flat


def outline(reader):
    """:func:`bookmarks` with the titles normalized, for comparing them with headings."""
    return [(depth, normalize(title), index) for depth, title, index in bookmarks(reader)]


def chapter_bookmarks(flat, pages, titles):
    """``{page: index in flat}`` of each chapter's bookmark: the next one with its title, in order, after the
    front matter (the title page repeats the first chapter's title). ``flat`` from :func:`outline`."""
    front = [i for i, (_, title, _) in enumerate(flat) if title == "Contents"]
    found, at = {}, front[0] + 1 if front else 0
    for page in pages:
        for i in range(at, len(flat)):
            if same_title(flat[i][1], titles[page][1]):
                found[page], at = i, i + 1
                break
    return found


def chapter_pages(flat, pages, titles):
    """The page number (from 1) of each chapter's bookmark (:func:`chapter_bookmarks`)."""
    return {page: flat[i][2] + 1 for page, i in chapter_bookmarks(flat, pages, titles).items()}


def regroup_outline(reader, grouped, titles):
    """A writer of ``reader``'s PDF whose outline has the book's parts and chapters at the top: the front
    matter, the root chapter, then each part of ``_toc.yml`` (its caption, at its first chapter's page) with
    its chapters under it, and each chapter's sections under the chapter as Chromium nested them. Chromium
    nests every chapter under the first one (the single page's first heading)."""
    flat = bookmarks(reader)
    pages = [page for _, group in grouped for page in group]
    start = chapter_bookmarks(outline(reader), pages, titles)
    writer = PdfWriter(clone_from=reader)
    del writer.root_object[NameObject("/Outlines")]
    first = min(start.values()) if start else len(flat)
    for _, title, index in flat[:first]:
        writer.add_outline_item(title=title, page_number=index)
    order = sorted(start.values()) + [len(flat)]
    for caption, group in grouped:
        found = [page for page in group if page in start]
        if not found:
            continue
        part = writer.add_outline_item(title=caption, page_number=flat[start[found[0]]][2]) if caption else None
        for page in found:
            i = start[page]
            depth, title, index = flat[i]
            stack = [(depth, writer.add_outline_item(title=title, page_number=index, parent=part))]
            for d, t, n in flat[i + 1 : order[order.index(i) + 1]]:
                while len(stack) > 1 and stack[-1][0] >= d:
                    stack.pop()
                stack.append((d, writer.add_outline_item(title=t, page_number=n, parent=stack[-1][1])))
    return writer


def chromium_print(binary, source, out):
    run_chromium(binary, [f"--print-to-pdf={out}", "--no-pdf-header-footer", "--generate-pdf-document-outline"],
                 source.resolve().as_uri(), timeout=900)
    if not out.is_file():
        sys.exit(f"print_book: Chromium wrote no PDF for {source}")
    return PdfReader(out)


def link_problems(reader):
    problems, internal = [], 0
    named = {str(name).lstrip("/") for name in reader.named_destinations}
    for number, page in enumerate(reader.pages, start=1):
        for annotation in page.get("/Annots") or []:
            annotation = annotation.get_object()
            if annotation.get("/Subtype") != "/Link":
                continue
            action = annotation.get("/A")
            uri = action.get_object().get("/URI") if action is not None else None
            if uri is None:
                internal += 1
                target = annotation.get("/Dest")
                if target is None and action is not None:
                    target = action.get_object().get("/D")
                if target is None:
                    problems.append(f"PDF page {number}: a link with neither a target nor an address")
                elif isinstance(target, str) and target.lstrip("/") not in named:
                    problems.append(f"PDF page {number}: a link to {target}, which is no destination of the PDF")
                continue
            parts_ = urlsplit(str(uri))
            if parts_.scheme not in ("http", "https", "mailto") or parts_.hostname in ("localhost", "127.0.0.1"):
                problems.append(f"PDF page {number}: a link to this machine or a local file: {uri}")
    if internal == 0:
        problems.append("PDF: no internal link (the contents and cross-references should be links)")
    return problems, internal


class BookText(HTMLParser):
    """The words a reader of the print copy sees: its article's text without what print hides (scripts,
    closed folds, heading links, the footer, an animation's player, printed as its last frame) and without
    formulas (MathJax draws them, not as words)."""

    HIDDEN = {"script", "style", "details", "button", "template", "mjx-assistive-mml"}
    HIDDEN_CLASSES = {"math", "headerlink", "prev-next-area", "toggle-details", "bd-footer-content", "animation"}
    VOID = {"br", "img", "hr", "input", "meta", "link", "source", "wbr", "col", "area", "embed", "track"}

    def __init__(self):
        super().__init__()
        self.open, self.hidden, self.text = [], 0, []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        attrs = dict(attrs)
        hides = (tag in self.HIDDEN or attrs.get("id") == "jb-print-docs-body"
                 or bool(self.HIDDEN_CLASSES & set((attrs.get("class") or "").split())))
        self.open.append(hides)
        self.hidden += hides

    def handle_endtag(self, tag):
        if tag not in self.VOID and self.open:
            self.hidden -= self.open.pop()

    def handle_data(self, data):
        if not self.hidden:
            self.text.append(data)


WORD = re.compile(r"[A-Za-z]{3,}")


def missing_words(copy, texts):
    """Words of the print copy's article the PDF shows fewer times than the copy has them: text cut off
    at the edge of the page (a box that scrolls on screen clips on paper), or lost otherwise."""
    parser = BookText()
    parser.feed(copy[copy.index('<article class="bd-article"'):])
    wanted = collections.Counter(WORD.findall(" ".join(parser.text)))
    printed = collections.Counter(WORD.findall(unicodedata.normalize("NFKC", " ".join(texts))))
    return {word: n - printed[word] for word, n in wanted.items() if n > printed[word]}


def check(reader, title, grouped, titles, page_of, all_headings, copy, cited, date):
    problems = []
    texts = [page.extract_text() or "" for page in reader.pages]
    front = " ".join(texts[0].split())
    for what, shown in (("title", title), ("citation of the paper", cited), ("date", date)):
        if shown not in front:
            problems.append(f"PDF: the title page does not show the {what} {shown!r}")
    blank = [n for n, (page, text) in enumerate(zip(reader.pages, texts, strict=True), start=1)
             if text.strip() in ("", str(n)) and not page.images]
    if blank:
        problems.append(f"PDF: blank pages {blank} (nothing on them but the page number)")
    lost = missing_words(copy, texts)
    if lost:
        problems.append(f"PDF: {sum(lost.values())} words of the book are missing from the PDF's text (cut off "
                        f"at the page's edge?), e.g. {sorted(lost)[:12]}")
    pages = [page for _, group in grouped for page in group]
    flat = outline(reader)
    bookmarked = chapter_pages(flat, pages, titles)
    for page in pages:
        if page not in bookmarked:
            problems.append(f"PDF: no bookmark for the chapter {page} ({titles[page][1]!r})")
        elif page_of.get(page) != bookmarked[page]:
            problems.append(f"PDF: the contents give {page} page {page_of.get(page)}, "
                            f"its bookmark page {bookmarked[page]}")
        elif titles[page][1].split()[0] not in texts[bookmarked[page] - 1]:
            problems.append(f"PDF: page {bookmarked[page]} does not show the chapter title {titles[page][1]!r}")
    captions = {caption for caption, _ in grouped if caption}
    top = [t for depth, t, _ in flat if depth == 0]
    if not captions <= set(top):
        problems.append(f"PDF: the outline's top level lacks the parts {sorted(captions - set(top))}")
    if titles[pages[0]][1] not in {normalize(t) for t in top}:
        problems.append(f"PDF: the outline's top level lacks the first chapter {titles[pages[0]][1]!r}")
    garbled = [t for _, t, _ in flat if t not in {plain(h) for h in all_headings} | captions]
    if garbled:
        problems.append(f"PDF: {len(garbled)} bookmarks do not read as their heading, e.g. {garbled[:3]}")
    if len(flat) <= len(pages):
        problems.append(f"PDF: {len(flat)} bookmarks for {len(pages)} chapters: the sections have none")
    contents = " ".join(" ".join(texts[FIRST_CONTENTS_PAGE - 1: FIRST_CONTENTS_PAGE + 1]).split())
    missing = [titles[p][1] for p in pages if titles[p][1] not in contents]
    if missing:
        problems.append(f"PDF: the contents pages do not list {missing}")
    for number, text in enumerate(texts[1:], start=2):
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if str(number) not in (lines[:1] + lines[-1:]):  # the footer comes first or last in the text
            problems.append(f"PDF page {number}: no page number in its footer "
                            f"(first and last lines {lines[:1] + lines[-1:]!r})")
    for field in ("/Title", "/Author", "/Subject", "/Keywords"):
        if not (reader.metadata or {}).get(field):
            problems.append(f"PDF: no {field[1:]} in the metadata")
    links, internal = link_problems(reader)
    problems += links
    body = "\n".join(texts)
    # MathJax's delimiters left in the text mean a formula was not typeset; ``\begin{`` may be code.
    for delim in (d for d in RAW_TEX if d != "\\begin{"):
        at = body.find(delim)
        if at >= 0:
            problems.append(f"PDF: raw TeX {delim!r} in the text: ...{body[max(0, at - 60): at + 60]!r}")
    return problems, len(flat), internal


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--singlehtml", type=Path, required=True, help="the singlehtml build of the book")
    parser.add_argument("--html-dir", type=Path, required=True, help="the web book, whose first page links the PDF")
    parser.add_argument("--toc", type=Path, required=True)
    parser.add_argument("--config", type=Path, required=True, help="_config.yml: the title and the author")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # Chromium's PDFs draw harmless trailer warnings

    grouped = parts(args.toc)
    pages = [page for _, group in grouped for page in group]
    root = pages[0]
    document = (args.singlehtml / f"{root}.html").read_text(encoding="utf-8")
    titles = chapter_titles(document, pages)
    missing = [page for page in pages if page not in titles]
    if missing:
        sys.exit(f"print_book: chapters not found in the single-page book: {missing}")
    init = Path("kmt_ref/__init__.py").read_text(encoding="utf-8")
    version = re.search(r'^__version__ = "(.+)"', init, re.M).group(1)
    cited, date = citation("CITATION.cff"), edition_date()
    config = args.config.read_text(encoding="utf-8")
    document = rewrite_links(document, root)
    binary = chromium_binary()

    copy = args.singlehtml / "kmt-print.html"
    with tempfile.TemporaryDirectory(prefix="kmt-print-") as tmp:
        try:
            page_of = {}
            for attempt in ("pages", "contents"):
                text, title, author = print_copy(document, config, version, contents_html(grouped, titles, page_of),
                                                 cited, date)
                copy.write_text(text, encoding="utf-8")
                reader = chromium_print(binary, copy, Path(tmp) / f"{attempt}.pdf")
                found = chapter_pages(outline(reader), pages, titles)
                if attempt == "contents" and found != page_of:
                    sys.exit("print_book: the contents with page numbers moved the chapters")
                page_of = found
        finally:
            copy.unlink(missing_ok=True)
        writer = regroup_outline(reader, grouped, titles)
        retitle_bookmarks(writer, headings(text))
        writer.add_metadata({
            "/Title": title,
            "/Author": author,
            "/Subject": "Transformers with explicit weights that run Lloyd's k-means and its variants; "
                        "a reproduction of Clarkson, Horesh, Ito, Park and Ram, ICML 2026 (arXiv:2506.19125)",
            "/Keywords": "k-means, transformers, attention, clustering, Lloyd's algorithm",
            "/Creator": "kmt_ref .ci/print_book.py (Chromium)",
        })
        with open(args.out, "wb") as handle:
            writer.write(handle)

    reader = PdfReader(args.out)
    problems, bookmarks, internal = check(reader, title, grouped, titles, page_of, headings(text), text, cited,
                                          date)
    linked = "".join((args.html_dir / name).read_text(encoding="utf-8") for name in ("index.html", f"{root}.html"))
    if f'href="{args.out.name}"' not in linked:
        problems.append(f"PDF: the first page of the web book does not link to {args.out.name}")
    if problems:
        print("PDF check FAILED:", *problems, sep="\n  ")
        return 1
    print(f"PDF: {args.out}, {len(reader.pages)} pages, {bookmarks} bookmarks, {internal} internal links; "
          f"title page, contents with page numbers, page numbers and metadata checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
