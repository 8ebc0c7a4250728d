"""Check the built book: nothing loads from the network, and pages render in a real browser.

Usage (the book must be built and served on 127.0.0.1; see .ci/book.sh)::

    python .ci/check_pages.py --html-dir book/_build/html --url http://127.0.0.1:PORT \
        --artifacts .ci/artifacts

Checks, each failing with a message that says what and where:

1. Static: no built HTML page loads a script, stylesheet, font, image or frame
   from an absolute http(s) or protocol-relative URL, and no CSS file in
   ``_static`` imports one. (Plain links, ``<a href>``, are allowed.)
2. Figures: every code cell whose last line calls a plotting function
   (``plot_*``, ``*heatmaps``, ...) has an image in its output. (A page that
   switched matplotlib to a non-inline backend once lost every later figure.)
3. Browser: EVERY page of the book is opened in headless Chromium with every
   host but 127.0.0.1 unresolvable, so a CDN could not rescue it. Its
   rendered DOM (``--dump-dom``) must have no raw TeX delimiters (``$$``,
   ``\\(``, ``\\[``) outside code, and MathJax output (``mjx-container``) if its
   source has math; the browser console must report no uncaught error; every
   ``<img>`` must be served with status 200 and non-empty content. Screenshots
   of every page are saved to the artifacts folder.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

#: Built pages that are not chapters of the book (Sphinx's own).
NOT_CHAPTERS = {"genindex.html", "search.html", "prf-prf.html"}
#: A cell that ends with one of these calls shows a figure.
PLOT_CALL = re.compile(r"(^|[\s.=])(plot\w*|\w*heatmaps|gap_collapse|bound_vs_measured|imshow|subplots)\(")

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


def _strip_tags(html):
    return re.sub(r"<[^>]+>", "", html).replace("&quot;", '"').replace("&gt;", ">").replace("&lt;", "<")


def figure_check(html_dir):
    """Problems: code cells that end in a plotting call but show no image."""
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
    return problems


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


def browser_check(binary, base_url, html_dir, artifacts, page, needs_math):
    """Problems on one page; saves its DOM and screenshot to ``artifacts``."""
    url = f"{base_url.rstrip('/')}/{page}"
    dom, console = run_chromium(binary, ["--dump-dom"], url)
    stem = Path(page).stem
    (artifacts / f"{stem}.dom.html").write_text(dom, encoding="utf-8")
    parsed = parse(dom)
    # The top of the page, and the whole page in one tall shot (figures included).
    shots = {stem: "1280,1600", f"{stem}.full": f"1280,{SCREENSHOT_MAX_HEIGHT}"}
    problems = [f"{page}: console error: {line.split('CONSOLE', 1)[1][:300]}" for line in console
                if "Uncaught" in line or "Error" in line]
    for name, size in shots.items():
        run_chromium(binary, [f"--screenshot={artifacts / (name + '.png')}", f"--window-size={size}"], url)
        if not (artifacts / f"{name}.png").is_file():
            problems.append(f"{page}: no screenshot {name}.png was written")
    if needs_math and parsed.math_containers == 0:
        problems.append(f"{page}: no MathJax output (mjx-container) in the rendered DOM")
    text = "".join(parsed.text)
    for delim in RAW_TEX:
        at = text.find(delim)
        if at >= 0:
            context = text[max(0, at - 60) : at + 60]
            problems.append(f"{page}: raw TeX {delim!r} left in the rendered text: ...{context!r}")
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html-dir", type=Path, required=True)
    parser.add_argument("--url", required=True, help="where --html-dir is served, e.g. http://127.0.0.1:8000")
    parser.add_argument("--artifacts", type=Path, required=True)
    args = parser.parse_args(argv)
    args.artifacts.mkdir(parents=True, exist_ok=True)

    problems = static_check(args.html_dir)
    print(f"static check: {len(list(args.html_dir.rglob('*.html')))} HTML pages scanned for remote resources")
    problems += figure_check(args.html_dir)
    binary = chromium_binary()
    checked = 0
    for page in sorted(p.name for p in args.html_dir.glob("*.html") if p.name not in NOT_CHAPTERS):
        source = args.html_dir / "_sources" / (Path(page).stem + ".md")
        text = source.read_text(encoding="utf-8") if source.is_file() else ""
        needs_math = "$" in text or "{math}" in text
        problems += browser_check(binary, args.url, args.html_dir, args.artifacts, page, needs_math)
        checked += 1
    if problems:
        print("book check FAILED:", *problems, sep="\n  ")
        return 1
    print(f"book check: no remote resources; {checked} pages typeset and their figures served")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
