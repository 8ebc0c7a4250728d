"""The list of workbook exercises, in book order."""

from . import (
    attention_checks,
    beyond_checks,
    certificate_checks,
    leaky_checks,
    learning_checks,
    lloyd_checks,
    thm21_checks,
    thm22_checks,
    variants_checks,
)
from .runner import Exercise

__all__ = ["CHAPTERS", "EXERCISES"]

#: Book chapters the exercises belong to, in reading order.
CHAPTERS = (
    "k-means and Lloyd's algorithm",
    "Attention as a soft nearest-neighbour lookup",
    "The k-means transformer (Theorem 2.1)",
    "Dot-product attention and the FFN (Theorem 2.2)",
    "How large must γ be?",
    "Soft k-means",
    "Spherical k-means",
    "Trimmed k-means from norm-max attention",
    "Robust k-means from sparsemax attention",
    "Randomized k-medoids from Gumbel attention",
    "Learning a clustering layer",
    "Beyond the paper",
    "A closed form for the layer's gain: leaky soft k-means",
)
_LLOYD, _ATTN, _T21, _T22, _CERT, _SOFT, _SPHERE, _TRIM, _ROBUST, _MEDOIDS, _LEARN, _BEYOND, _LEAKY = CHAPTERS

EXERCISES = tuple(
    Exercise(stem[:2], stem, function, chapter, level, summary, check)
    for stem, function, chapter, level, summary, check in (
        ("01_lloyd_step", "lloyd_step", _LLOYD, "warm-up",
         "one Lloyd iteration, with ties and an empty cluster", lloyd_checks.check_lloyd_step),
        ("02_euclidean_scores", "euclidean_scores", _ATTN, "warm-up",
         "the Euclidean attention scores -gamma ||q - k||^2", attention_checks.check_euclidean_scores),
        ("03_averaging_hardmax", "averaging_hardmax", _ATTN, "warm-up",
         "the averaging hardmax (uniform over the arg-max set)", attention_checks.check_averaging_hardmax),
        ("04_cax_weights", "cax_weights", _T21, "medium",
         "the Equation 5 weights of the CAX block", thm21_checks.check_cax_weights),
        ("05_sax_reset", "sax_reset", _T21, "medium",
         "prove by code that SAX resets the assignments (duplicates too)", thm21_checks.check_sax_reset),
        ("06_cac_block", "cac_block", _T21, "medium",
         "a CAC block that averages the members of each cluster", thm21_checks.check_cac_block),
        ("07_smallest_gamma", "smallest_gamma", _T21, "hard",
         "the smallest gamma at which soft CAX is within eps of Lloyd's assignment",
         thm21_checks.check_smallest_gamma),
        ("08_dot_cax_weights", "dot_cax_weights", _T22, "hard",
         "dot-product CAX weights that reproduce Euclidean attention", thm22_checks.check_dot_cax_weights),
        ("09_sqnorm_ffn", "sqnorm_ffn", _T22, "medium",
         "a relu^2 FFN that maintains the centers' squared norms", thm22_checks.check_sqnorm_ffn),
        ("10_softmax_gap_bound", "softmax_gap_bound", _CERT, "medium",
         "the softmax-hardmax bound the certificate applies, checked against measured distances",
         certificate_checks.check_softmax_gap_bound),
        ("11_soft_kmeans_transformer", "soft_kmeans_transformer", _SOFT, "medium",
         "derive the soft k-means transformer from Theorem 2.1",
         variants_checks.check_soft_kmeans_transformer),
        ("12_spherical_normalize", "spherical_normalize", _SPHERE, "medium",
         "a spherical normalization that leaves the id block intact",
         variants_checks.check_spherical_normalize),
        ("13_normmax_inf", "normmax_inf", _TRIM, "medium",
         "inf-norm normmax from its definition (a linear program checks it)", variants_checks.check_normmax_inf),
        ("14_sparsemax", "sparsemax", _ROBUST, "medium",
         "sparsemax, the Euclidean projection onto the simplex", variants_checks.check_sparsemax),
        ("15_medoid_law", "medoid_law", _MEDOIDS, "medium",
         "the law of the next medoids, checked against the Gumbel transformer's draws",
         variants_checks.check_medoid_law),
        ("16_smoothed_loss", "smoothed_loss", _LEARN, "medium",
         "the smoothed k-means loss, an upper bound of the objective", learning_checks.check_smoothed_loss),
        ("17_train_tiny_model", "train_tiny_model", _LEARN, "hard",
         "train a one-layer model for 100 steps and beat one Lloyd step",
         learning_checks.check_train_tiny_model),
        ("18_name_block", "name_block", _LEARN, "medium",
         "name the block of a disguised Equation 5 weight triple", learning_checks.check_name_block),
        ("19_without_reembedding", "without_reembedding", _LEARN, "medium",
         "feed the trained layer its own tokens and watch it diverge", learning_checks.check_without_reembedding),
        ("20_assignment_basis", "assignment_basis", _LEARN, "warm-up",
         "read the assignment channel's basis from the weights", learning_checks.check_assignment_basis),
        ("21_untie", "untie", _BEYOND, "medium",
         "the full matrix of a tied map, the same at every k", beyond_checks.check_untie),
        ("22_adjusted_rand_index", "adjusted_rand_index", _BEYOND, "warm-up",
         "the adjusted Rand index, against counting pairs of points", beyond_checks.check_adjusted_rand_index),
        ("23_leaky_step", "leaky_step", _LEAKY, "medium",
         "one leaky soft k-means step, against the transformer that runs it", leaky_checks.check_leaky_step),
        ("24_farthest_first", "farthest_first", _LEAKY, "warm-up",
         "spread-out initial centers, the starts of the explanation's prediction", leaky_checks.check_farthest_first),
    )
)
