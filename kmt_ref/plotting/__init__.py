"""Plotting functions used by the book (matplotlib: ``pip install kmt-ref[plot]``).

One module per topic; every function takes data or results and returns a
``matplotlib.figure.Figure``, so tests can call it without a display.
"""
