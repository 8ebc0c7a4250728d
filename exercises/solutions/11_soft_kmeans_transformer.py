"""Reference solution of exercise 11."""

from kmt_ref import Block, KMeansTransformer, TokenLayout
from kmt_ref.lloyd_transformer import equation5_weights


def soft_kmeans_transformer(d, k, beta):
    """Softmax CAX at gamma = beta, linear CAC on y_i . e_j, exact (identity) resets."""
    layout = TokenLayout(d, k)
    W = equation5_weights(layout)
    blocks = {
        "CAX": Block(*W["CAX"], score="euclidean", normalizer="softmax", gamma=beta),
        "SAX": Block(*W["SAX"], normalizer="identity"),
        "CAC": Block(*W["CAC"], score="dot", normalizer="linear"),
        "SAC": Block(*W["SAC"], normalizer="identity"),
    }
    return KMeansTransformer(layout, blocks, name=f"soft k-means (beta={beta:g})")
