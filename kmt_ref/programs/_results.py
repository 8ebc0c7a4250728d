"""Where results are read from and written to.

The results committed with the package (``kmt_ref/results/``) are read-only
inputs: the book and the reports read them, and no command writes there.
Everything a command computes goes to an output directory of the user's:
``$KMT_REF_RESULTS`` if set, else ``./kmt_ref_results`` under the current
directory. A training run that resumes a committed checkpoint copies it there
first.
"""

import os

from .._paths import COMMITTED_RESULTS, check_not_committed

__all__ = ["COMMITTED_DIR", "output_dir", "check_output_dir"]

#: The committed results, shipped inside the package.
COMMITTED_DIR = COMMITTED_RESULTS


def output_dir():
    """The default output directory: ``$KMT_REF_RESULTS`` or ``./kmt_ref_results``."""
    return os.path.abspath(os.environ.get("KMT_REF_RESULTS", "kmt_ref_results"))


def check_output_dir(path, name="results_dir"):
    """``path`` as an absolute path, refused if it lies inside the committed results (links followed).

    Every file a command writes is checked again where it is written
    (:func:`kmt_ref._paths.check_not_committed`): a folder below ``path``
    may be a link into the committed results.
    """
    return check_not_committed(path, name)
