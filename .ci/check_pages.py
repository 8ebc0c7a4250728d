"""Check the built book as a reader sees it, and print it to one PDF.

Usage (the book must be built; see .ci/book.sh)::

    python .ci/check_pages.py --html-dir book/_build/html --artifacts .ci/artifacts --toc book/_toc.yml

The pages are served from ``--html-dir`` by a server of this script on
127.0.0.1; every HTML response gets a small probe script that measures the
page in the browser after MathJax has finished and writes its findings into
the DOM. Checks, each failing with a message that says what and where:

1. Static: no built HTML page loads a script, stylesheet, font, image or frame
   from an absolute http(s) or protocol-relative URL, and no CSS file in
   ``_static`` imports one. (Plain links, ``<a href>``, are allowed.)
2. Figures: every code cell whose last line calls a plotting function
   (``plot_*``, ``*heatmaps``, ...) has an image in its output (a page that
   switched matplotlib to a non-inline backend once lost every later figure),
   and every image a cell shows has a numbered caption.
3. Browser: EVERY page of the book is opened in headless Chromium at 1280 px
   with every host but 127.0.0.1 unresolvable, so a CDN could not rescue it.
   It fails on: raw TeX delimiters (``$$``, ``\\(``, ``\\[``) outside code, or
   no MathJax output (``mjx-container``) on a page whose source has math; an
   uncaught error in the browser console; an ``<img>`` not served with status
   200 and content; any request the page made to a host other than 127.0.0.1
   (the browser's Resource Timing entries, failed requests included); an
   element of the content column wider than the column, or a scrolling box
   (code output, table, display math) whose content is wider than the box, so
   that part of it hides behind a horizontal scrollbar, or a box that hides
   its overflow with content wider than itself (cut off), or a word or number
   of a table cell broken across two lines. At a phone's 390 px, where a wide
   box may scroll, it fails on what runs off the screen, on a box that cuts
   its content off and on an equation number drawn over its formula.
   Screenshots of every page, whole (in slices of 14,000 px), at both widths,
   are saved to the artifacts folder.
4. Text: no MyST role left raw (``{glue:text}`` inside a code span), no TeX
   whose ``\\n`` an escape turned into a line break, no "1 seconds", no
   paragraph all in bold.
The PDF is printed and checked by .ci/print_book.py.
"""

import argparse
import functools
import html
import http.server
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

#: Built pages that are not chapters of the book (Sphinx's own).
NOT_CHAPTERS = {"genindex.html", "search.html", "prf-prf.html"}
#: A cell that ends with one of these calls shows a figure.
PLOT_CALL = re.compile(r"(^|[\s.=])(plot\w*|\w*heatmaps|gap_collapse|bound_vs_measured|imshow|subplots)\(")

#: The reader's window width, in pixels; and a phone's, for the screenshots.
WIDTH = 1280
PHONE_WIDTH = 390
#: Injected into every served page (see probe.js).
PROBE = "<script>" + (Path(__file__).parent / "probe.js").read_text(encoding="utf-8") + "</script>"

#: Height of the full-page screenshot, in pixels (Chromium caps textures at 16384).
SCREENSHOT_MAX_HEIGHT = 14000

REMOTE = re.compile(r"^(https?:)?//", re.IGNORECASE)
CSS_REMOTE = re.compile(r"(url\(\s*['\"]?(https?:)?//|@import\s+['\"](https?:)?//)", re.IGNORECASE)
RAW_TEX = ("$$", "\\(", "\\)", "\\[", "\\]", "\\begin{")

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    # Offline for real: any host other than the local server fails to resolve.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    # Let MathJax (asynchronous) finish before the DOM is dumped or the shot taken.
    "--virtual-time-budget=20000",
]


class ResourceParser(HTMLParser):
    """Collect resource URLs (what a browser would load) and visible text outside code."""

    LOADS = {"script": "src", "img": "src", "iframe": "src", "source": "src", "video": "src", "audio": "src"}
    SKIP_TEXT = {"script", "style", "pre", "code", "mjx-container", "textarea", "svg"}

    def __init__(self):
        super().__init__()
        self.resources = []  # (tag, url)
        self.images = []
        self.text = []
        self.math_containers = 0
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in self.LOADS and attrs.get(self.LOADS[tag]):
            self.resources.append((tag, attrs[self.LOADS[tag]]))
        if tag == "link" and attrs.get("href"):
            rel = (attrs.get("rel") or "").lower()
            if any(r in rel for r in ("stylesheet", "preload", "icon", "prefetch", "manifest")):
                self.resources.append(("link", attrs["href"]))
        if tag == "img" and attrs.get("src"):
            self.images.append(attrs["src"])
        if tag == "mjx-container":
            self.math_containers += 1
        if tag in self.SKIP_TEXT:
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in self.SKIP_TEXT and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


def parse(html):
    p = ResourceParser()
    p.feed(html)
    return p


def static_check(html_dir):
    """Problems with remote resources in the built HTML and CSS."""
    problems = []
    for page in sorted(html_dir.rglob("*.html")):
        for tag, url in parse(page.read_text(encoding="utf-8", errors="replace")).resources:
            if REMOTE.match(url.strip()):
                problems.append(f"{page.relative_to(html_dir)}: <{tag}> loads {url}")
    for css in sorted((html_dir / "_static").rglob("*.css")):
        for m in CSS_REMOTE.finditer(css.read_text(encoding="utf-8", errors="replace")):
            problems.append(f"{css.relative_to(html_dir)}: remote import near {m.group(0)!r}")
    return problems


#: A MyST role left as text (in prose or inside a code span, where MyST does not expand it).
RAW_ROLE = re.compile(r"\{(glue(:\w+)?|doc|ref|numref|eq|term|download|cite(:\w+)?|prf:ref)\}")
#: A TeX command whose backslash-n became a line break on its way into the source (``\\neq`` as "eq").
EATEN_TEX = re.compile(r"\n(eq|abla|otin|ewline|eg|u|ot)\b")
#: A count of one with a plural noun ("in 1 seconds"), as a formatted number produces it.
ONE_PLURAL = re.compile(r"(?<![\d.,])1 (seconds|minutes|hours|steps|layers|points|tasks|seeds|cells|runs)\b")
#: A Python object shown as its raw repr, a namedtuple's generated field doc, or RST literal markup left as text:
#: what an API page shows when a docstring or a constant's value was not written for a reader.
RAW_REPR = re.compile(r"<function [\w.<>]+ at|<locals>|object at 0x[0-9a-f]+|Alias for field number|``\w")
#: A paragraph in bold from end to end: emphasis that lost its own end (or a generated text that never had one).
BOLD_PARAGRAPH = re.compile(r"<p>\s*<strong>((?:(?!</?strong>|</p>).)*)</strong>\s*</p>", re.S)


def source_check(html_dir):
    """Problems of the text a reader sees: MyST roles left raw, TeX mangled by an escape, "1 seconds", a
    paragraph all in bold, a raw repr or RST markup (API pages). In the built pages (the API's too), and for the
    mangled TeX in the pages' sources."""
    problems = []
    for page in sorted([*html_dir.glob("*.html"), *html_dir.glob("api/*.html")]):
        # Tags off first, entities after: an escaped "<function f at 0x...>" is text, not a tag.
        text = re.sub(r"<(script|style)\b.*?</\1>", "", page.read_text(encoding="utf-8", errors="replace"),
                      flags=re.S)
        # Python source (cell inputs, listings of the library's code) shows its docstrings' markup as written.
        prose = html.unescape(_strip_tags(re.sub(r'<div class="highlight-(?:python|ipython3)[^"]*">.*?</pre>', "",
                                                  text, flags=re.S)))
        visible = html.unescape(_strip_tags(text))
        for pattern, what, where in ((RAW_ROLE, "a MyST role left raw", visible),
                                     (ONE_PLURAL, "a plural after 1", visible),
                                     (RAW_REPR, "a raw repr or RST markup as text", prose)):
            for m in pattern.finditer(where):
                problems.append(f"{page.relative_to(html_dir)}: {what}: "
                                f"...{where[max(0, m.start() - 50):m.end() + 20]!r}")
        for m in BOLD_PARAGRAPH.finditer(text):
            if len(_strip_tags(m.group(1))) > 60:  # a title in bold ("Proof of Theorem 2.1.") is no paragraph
                problems.append(f"{page.relative_to(html_dir)}: a paragraph all in bold: "
                                f"{_strip_tags(m.group(1))[:80]!r}")
        source = html_dir / "_sources" / page.with_suffix(".md").name
        if source.is_file():
            for m in re.finditer(r"\$[^$]*\$", source.read_text(encoding="utf-8")):
                if EATEN_TEX.search(m.group(0)):
                    problems.append(f"{source.name}: TeX with a backslash-n eaten by an escape: {m.group(0)!r}")
    return problems


def _strip_tags(html):
    return re.sub(r"<[^>]+>", "", html).replace("&quot;", '"').replace("&gt;", ">").replace("&lt;", "<")


def figure_check(html_dir):
    """Problems: code cells that end in a plotting call but show no image, or show one without a
    numbered caption ("Book figure N")."""
    problems = []
    for page in sorted(html_dir.glob("*.html")):
        if page.name in NOT_CHAPTERS:
            continue
        html = page.read_text(encoding="utf-8", errors="replace")
        for i, cell in enumerate(html.split('<div class="cell docutils container">')[1:], start=1):
            code = re.search(r'<div class="cell_input docutils container">(.*?)</pre>', cell, re.S)
            if code is None:
                continue
            lines = [line for line in _strip_tags(code.group(1)).splitlines() if line.strip()]
            if lines and PLOT_CALL.search(lines[-1]) and "<img" not in cell:
                problems.append(f"{page.name}: code cell {i} ends in {lines[-1].strip()!r} but shows no image")
            if "<img" in cell and 'class="caption-number"' not in cell:
                problems.append(f"{page.name}: code cell {i} ({lines[-1].strip() if lines else 'hidden'!r}) shows a "
                                "figure without a numbered caption (give the cell mystnb figure metadata)")
    return problems


class ProbingHandler(http.server.SimpleHTTPRequestHandler):
    """Serve the built book; HTML pages get the probe script before ``</body>``."""

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.suffix != ".html" or not path.is_file():
            return super().send_head()
        body = path.read_bytes().replace(b"</body>", PROBE.encode() + b"</body>", 1)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)

    def log_message(self, format, *args):  # quiet: the checks report what matters
        pass


def serve(html_dir):
    """Start serving ``html_dir`` on 127.0.0.1 (a free port); returns the server and its URL."""
    handler = functools.partial(ProbingHandler, directory=str(html_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("check_pages: no chromium binary on PATH (apt-get install chromium)")


def run_chromium(binary, args, url, timeout=180):
    """Chromium's stdout, and the console messages it logged (``CONSOLE`` lines of its stderr)."""
    profile = tempfile.mkdtemp(prefix="kmt-chromium-")
    try:
        cmd = [binary, *CHROMIUM_FLAGS, "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}", *args, url]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"chromium exited {done.returncode} on {url}: {done.stderr[-2000:]}")
        console = [line for line in done.stderr.splitlines() if "CONSOLE" in line]
        return done.stdout, console
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, len(response.read())
    except urllib.error.HTTPError as err:
        return err.code, 0


def _probe(dom):
    """The probe's findings in a dumped DOM, or None when it did not report."""
    probe = re.search(r'<pre id="kmt-probe"[^>]*>(.*?)</pre>', dom, re.S)
    return None if probe is None else json.loads(html.unescape(probe.group(1)))


def browser_check(binary, base_url, html_dir, artifacts, page, needs_math):
    """Problems on one page; saves its DOM and screenshots to ``artifacts``."""
    url = f"{base_url.rstrip('/')}/{page}"
    dom, console = run_chromium(binary, ["--dump-dom", f"--window-size={WIDTH},1600"], url)
    phone_dom, _ = run_chromium(binary, ["--dump-dom", f"--window-size={PHONE_WIDTH},1600"], url)
    stem = Path(page).with_suffix("").as_posix().replace("/", "-")  # api/attention -> api-attention
    (artifacts / f"{stem}.dom.html").write_text(dom, encoding="utf-8")
    parsed = parse(dom)
    found, phone = _probe(dom), _probe(phone_dom)
    problems = [f"{page}: console error: {line.split('CONSOLE', 1)[1][:300]}" for line in console
                if "Uncaught" in line or "Error" in line]
    # The top of the page, and the whole page at both widths, in slices of SCREENSHOT_MAX_HEIGHT (figures included).
    shots = {stem: (f"{WIDTH},1600", url)}
    for name, width, probed in ((f"{stem}.full", WIDTH, found), (f"{stem}.phone", PHONE_WIDTH, phone)):
        height = probed["height"] if probed else SCREENSHOT_MAX_HEIGHT
        for s in range(max(1, -(-height // SCREENSHOT_MAX_HEIGHT))):
            sliced = url if s == 0 else f"{url}?kmt-slice={s}&kmt-height={SCREENSHOT_MAX_HEIGHT}"
            shots[name if s == 0 else f"{name}-{s + 1}"] = (f"{width},{SCREENSHOT_MAX_HEIGHT}", sliced)
    for name, (size, shot_url) in shots.items():
        run_chromium(binary, [f"--screenshot={artifacts / (name + '.png')}", f"--window-size={size}"], shot_url)
        if not (artifacts / f"{name}.png").is_file():
            problems.append(f"{page}: no screenshot {name}.png was written")
    if phone is None:
        problems.append(f"{page}: the probe did not report at {PHONE_WIDTH} px (the page did not finish loading)")
    else:  # on a phone a wide box may scroll (it shows that it does); nothing may run off the screen
        problems += [f"{page}: wider than the screen at {PHONE_WIDTH} px: {w}" for w in phone["wide"]]
        problems += [f"{page}: cut off by a box that hides its overflow at {PHONE_WIDTH} px: {c}" for c in phone["cut"]]
        problems += [f"{page}: an equation number over its formula at {PHONE_WIDTH} px: {o}" for o in phone["overlap"]]
    if found is None:
        problems.append(f"{page}: the probe did not report (the page did not finish loading)")
    else:
        problems += [f"{page}: wider than the content column at {WIDTH} px: {w}" for w in found["wide"]]
        problems += [f"{page}: hidden behind a horizontal scrollbar at {WIDTH} px: {h}" for h in found["hidden"]]
        problems += [f"{page}: cut off by a box that hides its overflow at {WIDTH} px: {c}" for c in found["cut"]]
        problems += [f"{page}: a word or number of a table cell broken across lines at {WIDTH} px: {b}"
                     for b in found["broken"]]
        problems += [f"{page}: request leaves 127.0.0.1: {r}" for r in found["requests"]
                     if urlsplit(r).scheme in ("http", "https", "ws", "wss") and urlsplit(r).hostname != "127.0.0.1"]
    if needs_math and parsed.math_containers == 0:
        problems.append(f"{page}: no MathJax output (mjx-container) in the rendered DOM")
    text = "".join(parsed.text)
    for delim in RAW_TEX:
        at = text.find(delim)
        if at >= 0:
            context = text[max(0, at - 60) : at + 60]
            problems.append(f"{page}: raw TeX {delim!r} left in the rendered text: ...{context!r}")
    for table in re.findall(r"\|\s*(?:-{3,}|—+)\s*\|", text)[:1]:
        problems.append(f"{page}: a Markdown table was left unrendered (its rule {table!r} shows as text)")
    for src in parsed.images:
        if src.startswith("data:"):  # embedded (the animation's frames): nothing to fetch
            if len(src) < 100:
                problems.append(f"{page}: an embedded image is empty")
            continue
        status, size = fetch(urljoin(url, src))
        if status != 200 or size == 0:
            problems.append(f"{page}: image {src} served with status {status}, {size} bytes")
    print(f"  {page}: {parsed.math_containers} typeset formulas, {len(parsed.images)} images, "
          f"screenshots {', '.join(str(artifacts / (name + '.png')) for name in shots)}")
    return problems


def chapters(toc):
    """The pages of the book in reading order, from ``_toc.yml`` (root first)."""
    text = Path(toc).read_text(encoding="utf-8")
    root = re.search(r"^root:\s*(\S+)", text, re.M).group(1)
    return [root, *re.findall(r"^\s*- file:\s*(\S+)", text, re.M)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html-dir", type=Path, required=True)
    parser.add_argument("--artifacts", type=Path, required=True)
    parser.add_argument("--toc", type=Path, required=True, help="_toc.yml: every page it lists is checked")
    args = parser.parse_args(argv)
    args.artifacts.mkdir(parents=True, exist_ok=True)

    problems = static_check(args.html_dir)
    print(f"static check: {len(list(args.html_dir.rglob('*.html')))} HTML pages scanned for remote resources")
    problems += figure_check(args.html_dir)
    problems += source_check(args.html_dir)
    binary = chromium_binary()
    server, base_url = serve(args.html_dir)
    try:
        checked = 0
        listed = [f"{page}.html" for page in chapters(args.toc)]
        missing = [page for page in listed if not (args.html_dir / page).is_file()]
        problems += [f"{page}: listed in {args.toc} but not built" for page in missing]
        others = [p.name for p in args.html_dir.glob("*.html") if p.name not in NOT_CHAPTERS]
        for page in sorted(set(listed) - set(missing) | set(others)):
            source = args.html_dir / "_sources" / Path(page).with_suffix(".md")
            text = source.read_text(encoding="utf-8") if source.is_file() else ""
            needs_math = "$" in text or "{math}" in text
            problems += browser_check(binary, base_url, args.html_dir, args.artifacts, page, needs_math)
            checked += 1
    finally:
        server.shutdown()
    if problems:
        # a stray surrogate in a page's text (MathJax's letters) must not stop the report
        problems = [p.encode("utf-8", "backslashreplace").decode("utf-8") for p in problems]
        print("book check FAILED:", *problems, sep="\n  ")
        return 1
    print(f"book check: no remote resources; {checked} pages typeset, their figures served, nothing too wide")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
