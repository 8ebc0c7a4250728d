"""The programs: everything ``python -m kmt_ref`` runs, built on the library below.

The library (constructions, variants, learning, kernels) never imports from
here; ``tests/test_architecture.py`` checks it. Modules: ``verify`` (every
claim, checked), ``bench`` and ``training_bench`` (speed, measured),
``sweep`` and ``paper_sweep`` (the gamma sweep and the authors' parameter
sweep), ``outliers`` (the contaminated-mixture experiment of the trimmed and
robust variants), ``experiments`` (the paper's learning experiments and the
ones beyond it), ``cli`` (the ``train`` and ``reproduce`` commands) and the
shared ``_cli`` argument types and ``_results`` output directories.
"""
