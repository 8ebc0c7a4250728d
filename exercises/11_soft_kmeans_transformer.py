"""Exercise 11 (medium) - chapter "Soft k-means".

Check your answer: ``python -m kmt_ref.exercises check 11``
"""

import numpy as np

from kmt_ref import Block, KMeansTransformer, TokenLayout


def soft_kmeans_transformer(d, k, beta):
    """Derive, from Theorem 2.1, a transformer that runs soft k-means exactly.

    Soft k-means with stiffness ``beta`` (MacKay): responsibilities
    ``r_ij = softmax_j(-beta ||x_i - c_j||^2)``, then each center becomes the
    responsibility-weighted mean ``sum_i r_ij x_i / sum_i r_ij``. Each layer
    of your model must perform one such iteration EXACTLY (to 1e-9), for any
    number of layers.

    Parameters
    ----------
    d, k : int
    beta : float
        Stiffness, > 0.

    Returns
    -------
    kmt_ref.KMeansTransformer
        ``KMeansTransformer(TokenLayout(d, k), {"CAX": Block(...), "SAX": ...,
        "CAC": ..., "SAC": ...})``. Build the four blocks yourself.

    Hint: keep the Equation 5 weights (``kmt_ref.lloyd_transformer.
    equation5_weights``) and change mechanisms only. CAX should be a softmax
    at ``gamma = beta``. CAC must weight point i by ``y_ij`` (which normalizer
    divides scores by their sum?). A reset computed with softmax would blur
    points together: which normalizer makes a token attend to itself only?
    """
    raise NotImplementedError("exercise 11: write soft_kmeans_transformer")
