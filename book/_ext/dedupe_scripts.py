"""A Sphinx extension of this book: each page loads each of its scripts once.

sphinx-thebe (loaded by Jupyter Book) registers its inline configuration
script once per reading pass; with executed notebooks that happens twice, the
page declares ``const THEBE_JS_URL`` twice and the browser reports a
SyntaxError on every page. This drops repeated script entries of a page.
"""


def _dedupe(app, pagename, templatename, context, doctree):
    seen, kept = set(), []
    for script in context.get("script_files", []):
        # Same file (or inline body: filename None or "") and attributes, whatever the priority.
        attributes = getattr(script, "attributes", {})
        name = str(getattr(script, "filename", script) or "")
        key = (name, tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
