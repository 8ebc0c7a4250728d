"""Where results are read from and written to.

The results committed with the package (``kmt_ref/results/``) are read-only
inputs: the book and the reports read them, and no command writes there.
Everything a command computes goes to an output directory of the user's:
``$KMT_REF_RESULTS`` if set, else ``./kmt_ref_results`` under the current
directory. A training run that resumes a committed checkpoint copies it there
first.
"""

import os

__all__ = ["COMMITTED_DIR", "output_dir", "check_output_dir"]

#: The committed results, shipped inside the package.
COMMITTED_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")


def output_dir():
    """The default output directory: ``$KMT_REF_RESULTS`` or ``./kmt_ref_results``."""
    return os.path.abspath(os.environ.get("KMT_REF_RESULTS", "kmt_ref_results"))


def check_output_dir(path, name="results_dir"):
    """``path`` as an absolute path, refused if it lies inside the committed results."""
    path = os.path.abspath(os.fspath(path))
    committed = os.path.realpath(COMMITTED_DIR)
    real = os.path.realpath(path)
    if real == committed or real.startswith(committed + os.sep):
        raise ValueError(
            f"{name} must not be inside the committed results ({committed}): they are read-only inputs; "
            f"got {name}={path!r}. Write to another directory (default ./kmt_ref_results) and copy "
            "finished results in deliberately."
        )
    return path
