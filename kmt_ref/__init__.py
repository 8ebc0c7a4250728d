"""kmt_ref: a readable NumPy reference for "Transformer Circuits Can Realize
Clustering Algorithms" (Clarkson, Horesh, Ito, Park, Ram; ICML 2026, arXiv:2506.19125).

Start with :func:`lloyd` (classical.py), then :func:`lloyd_transformer`
(lloyd_transformer.py, Theorem 2.1) and the layer it is built from (layer.py);
:func:`dot_product_lloyd_transformer` (dot_product_transformer.py) is Theorem 2.2.
"""

from .attention import NORMALIZERS, Block, attend
from .certificate import Certificate, exactness_certificate, min_gamma
from .classical import EMPTY_CLUSTER_POLICIES, kmeans_objective, kmeans_plusplus, lloyd
from .dot_product_transformer import dot_product_lloyd_transformer
from .engine import Engine
from .feedforward import FeedForward
from .layer import BLOCK_NAMES, KMeansTransformer, transformer_layer
from .lloyd_transformer import lloyd_transformer
from .tasks import figure3_data, gaussian_mixture
from .tokens import TokenLayout
from .trajectory import Trajectory, iterate
from .variants.kmedoids import kmedoids, kmedoids_transformer, randomized_kmedoids
from .variants.robust import robust_kmeans, robust_kmeans_transformer
from .variants.soft import soft_kmeans, soft_kmeans_transformer
from .variants.spherical import spherical_kmeans, spherical_kmeans_transformer
from .variants.trimmed import gap_trimmed_kmeans, trimmed_kmeans, trimmed_kmeans_transformer

__version__ = "0.9.0.dev0"

__all__ = [
    "BLOCK_NAMES",
    "Block",
    "Certificate",
    "EMPTY_CLUSTER_POLICIES",
    "Engine",
    "FeedForward",
    "KMeansTransformer",
    "NORMALIZERS",
    "TokenLayout",
    "Trajectory",
    "iterate",
    "attend",
    "dot_product_lloyd_transformer",
    "exactness_certificate",
    "figure3_data",
    "gaussian_mixture",
    "kmeans_objective",
    "kmeans_plusplus",
    "lloyd",
    "lloyd_transformer",
    "min_gamma",
    "gap_trimmed_kmeans",
    "kmedoids",
    "kmedoids_transformer",
    "randomized_kmedoids",
    "robust_kmeans",
    "robust_kmeans_transformer",
    "trimmed_kmeans",
    "trimmed_kmeans_transformer",
    "soft_kmeans",
    "soft_kmeans_transformer",
    "spherical_kmeans",
    "spherical_kmeans_transformer",
    "transformer_layer",
]
