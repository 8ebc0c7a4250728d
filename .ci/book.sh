#!/usr/bin/env bash
# Build the book strictly (every page executed, zero warnings), then open every
# page in headless Chromium (.ci/check_pages.py: math typeset, figures served,
# no console error, no request off 127.0.0.1, nothing wider than the column)
# and print the whole book to book/_build/html/kmt_ref-book.pdf
# (.ci/print_book.py: title page, contents, bookmarks, page numbers, links).
#
# Needs: an activated venv with `pip install -e ".[book]"` done. Installs the
# Debian package `chromium` when it is missing (CI runs as root).
# Artifacts (screenshots, rendered DOMs): .ci/artifacts/
set -euo pipefail
cd "$(dirname "$0")/.."

artifacts=.ci/artifacts
mkdir -p "$artifacts"

kernel_prefix=""
cleanup() {
    if [ -n "$kernel_prefix" ]; then rm -rf "$kernel_prefix"; fi
}
trap cleanup EXIT

command -v jupyter-book >/dev/null || { echo "book.sh: jupyter-book not found; pip install -e '.[book]'" >&2; exit 1; }
# The kernel that executes the pages must be this venv's python, with kmt_ref
# importable. A kernelspec for exactly this python, first on JUPYTER_PATH,
# wins over any user- or system-wide "python3" kernel of the machine.
python -c "import kmt_ref, ipykernel; print('kmt_ref from', kmt_ref.__file__)"
kernel_prefix=$(mktemp -d)
python -m ipykernel install --prefix "$kernel_prefix" --name python3 --display-name "Python 3" >/dev/null
export JUPYTER_PATH="$kernel_prefix/share/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}"
python - <<'PY'
import sys
from jupyter_client.kernelspec import KernelSpecManager
argv = KernelSpecManager().get_kernel_spec("python3").argv
print("book kernel:", " ".join(argv[:3]))
if argv[0] != sys.executable:
    sys.exit(f"book.sh: kernel python3 runs {argv[0]}, not this environment's {sys.executable}")
PY
# Build matplotlib's font cache now: its first-use message goes to stderr, and
# stderr from a page is a build error.
python -c "import matplotlib.pyplot"

# A clean build, so that every page is executed (Sphinx skips unchanged pages).
rm -rf book/_build
start=$(date +%s)
jupyter-book build book -W -n --keep-going
echo "book: built with every page executed in $(( $(date +%s) - start )) s"
# The same pages joined into one document, for the PDF: Sphinx reuses the
# executed pages it just stored, so nothing runs again.
jupyter-book build book --builder singlehtml -W -n --keep-going

if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null && ! command -v google-chrome >/dev/null; then
    echo "book.sh: installing chromium (Debian package)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

# Serves the pages itself (127.0.0.1) and opens every one.
python .ci/check_pages.py --html-dir book/_build/html --artifacts "$artifacts" --toc book/_toc.yml
# Prints the single-page build to the PDF the first page links to, and checks it.
python .ci/print_book.py --singlehtml book/_build/singlehtml --html-dir book/_build/html \
    --toc book/_toc.yml --config book/_config.yml --out book/_build/html/kmt_ref-book.pdf
cp book/_build/html/kmt_ref-book.pdf "$artifacts/"
