"""Plotting functions used by the book (matplotlib: ``pip install kmt-ref[plot]``).

One module per topic; every function takes data or results and returns a
``matplotlib.figure.Figure``, so tests can call it without a display.

Figures are built with ``matplotlib.figure.Figure`` rather than pyplot, so no
global figure state is touched and nothing is drawn twice in a notebook. In
IPython/Jupyter, importing this package registers a PNG display for such
figures (what ``%matplotlib inline`` does for pyplot figures), so a cell
ending in ``plots.plot_figure3(...)`` shows the figure.
"""


try:
    import matplotlib  # noqa: F401
except ImportError:
    raise ImportError("kmt_ref.plotting draws with matplotlib, which is not installed: "
                      "pip install 'kmt-ref[plot]'") from None


def _register_notebook_display():
    try:
        from IPython import get_ipython
    except ImportError:  # not running under IPython: nothing to register
        return
    shell = get_ipython()
    if shell is None:
        return
    from IPython.core.pylabtools import print_figure
    from matplotlib.figure import Figure

    shell.display_formatter.formatters["image/png"].for_type(
        Figure, lambda fig: print_figure(fig, "png", bbox_inches="tight")
    )


_register_notebook_display()
