"""``verify`` section: the learnable parameter format runs hand-built models exactly.

The learned model and the constructions share one layer implementation; this
section checks the bridge between them. A faithful Theorem 2.1 model (all
Euclidean softmax) loaded with
:func:`~kmt_ref.learning.model.params_from_transformer` and run by the
learned model's batched evaluation (:func:`~kmt_ref.learning.model.run_steps`,
with re-embedding) must give the centers of the original
:meth:`~kmt_ref.layer.KMeansTransformer.run` to rounding, relative to the
size of the coordinates (the two paths round differently: the hand-built one
skips the zero rows of its weights, the learned one cannot).
"""

import numpy as np

from ..lloyd_transformer import lloyd_transformer
from ..trajectory import Trajectory
from .model import params_from_transformer, run_steps

__all__ = ["learnable_format_rows"]

TOL = 1e-10


def learnable_format_rows(quick=False):
    from ..verify import compare, datasets

    rows = []
    for data_name, (X, init, T) in datasets(quick).items():
        if X.shape[0] > 1000:
            continue  # the faithful layer is O(n^2); the bridge is size-independent
        d, k = X.shape[1], init.shape[0]
        tol = TOL * max(1.0, float(np.max(np.abs(X))))
        for gamma in (1e2, 1e4):
            built = lloyd_transformer(d, k, gamma, config="faithful")
            ref = built.run(X, init, T, reembed=True)
            theta, config = params_from_transformer(built)
            centers = run_steps(theta, X[None], init[None], config, T)[:, 0]
            ours = Trajectory(centers=centers, labels=ref.labels, assignments=None)
            rows.append(compare("learned format <- faithful", data_name, ours, ref, X, gamma,
                                f"same centers (dev <= {tol:g})", lambda dev, gap, tol=tol: dev <= tol, True))
    return rows
