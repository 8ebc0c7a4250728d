"""Reference solution of exercise 22."""

import numpy as np


def adjusted_rand_index(labels_true, labels_pred):
    """Contingency table, pair counts, and the chance correction."""
    i = np.unique(labels_true, return_inverse=True)[1]
    j = np.unique(labels_pred, return_inverse=True)[1]
    table = np.zeros((i.max() + 1, j.max() + 1))
    np.add.at(table, (i, j), 1)

    def pairs(m):
        return np.sum(m * (m - 1)) / 2

    n = len(i)
    sum_a, sum_b = pairs(table.sum(axis=1)), pairs(table.sum(axis=0))
    expected = sum_a * sum_b / (n * (n - 1) / 2)
    top = (sum_a + sum_b) / 2
    return 1.0 if top == expected else float((pairs(table) - expected) / (top - expected))
