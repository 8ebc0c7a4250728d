"""A Sphinx extension of this book: the single-page build writes every node the web build does.

The PDF is printed from Sphinx's ``singlehtml`` build (.ci/print_book.py).
Several extensions (sphinx-proof's theorem and proof boxes, myst-nb's hidden
code cells, sphinx-design) register how their nodes are written for the
``html`` builder only, so the single page would fail on an "unknown node
type". ``singlehtml`` writes HTML with the same translator, so it gets the
same writers, for the nodes that have none of their own.
"""


def _share_html_writers(app):
    if app.builder.name != "singlehtml":
        return
    handlers = app.registry.translation_handlers
    for node, visitors in handlers.get("html", {}).items():
        handlers.setdefault("singlehtml", {}).setdefault(node, visitors)


def setup(app):
    app.connect("builder-inited", _share_html_writers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
