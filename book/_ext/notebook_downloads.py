"""A Sphinx extension of this book: every page offers itself as a notebook.

The theme's download menu lists an ``.ipynb`` only when a launch service
(Binder, Colab, ...) is configured, which an offline book has not. MyST-NB
writes each executed page to ``_build/jupyter_execute/<page>.ipynb``; this
copies it next to the page's source and tells the theme, so the menu offers
the page as a notebook, with its outputs, for Jupyter.
"""

from pathlib import Path
from shutil import copy2


def _offer_notebook(app, pagename, templatename, context, doctree):
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not executed.is_file():
        return
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    copy2(executed, target)
    context["ipynb_source"] = f"{pagename}.ipynb"


def setup(app):
    # Before the theme builds its header buttons (priority 501).
    app.connect("html-page-context", _offer_notebook, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
