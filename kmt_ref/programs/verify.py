"""``python -m kmt_ref verify``: numerical verification of the paper's claims.

Each *section* compares one construction with its classical algorithm on the
Figure 3 data and a few other shapes, at several ``gamma``, and reports

* ``max_center_dev``: largest absolute coordinate difference between the
  transformer's centers and the classical ones, over all layers;
* ``log_obj_gap``: largest absolute difference of the log k-means objective,
  over all layers;

and whether the row's claim holds. A row's ``expect`` says what the theory
predicts: ``True`` (the claim must hold: a failure is a bug and makes the
command exit non-zero), ``False`` (a documented failure mode, shown rather
than hidden) or ``None`` (reported only).
"""

import json
import time
from dataclasses import asdict

import numpy as np

from ..classical import lloyd
from ..dot_product_transformer import dot_product_lloyd_transformer
from ..engine import LABELS
from ..learning.model import params_from_transformer, run_steps
from ..learning.sharing import tie
from ..lloyd_transformer import lloyd_transformer
from ..tasks import FIGURE3_PAPER_LOG_OBJECTIVES, figure3_data, gaussian_mixture
from ..trajectory import Trajectory
from ..variants import VARIANTS
from ..variants.kmedoids import kmedoids, kmedoids_transformer
from ..variants.registry import EXACT_TOL
from ..variants.soft import soft_kmeans
from ..variants.trimmed import gap_trimmed_kmeans, trimmed_kmeans
from .proofs import symbolic_rows
from .rows import Row

__all__ = ["Row", "compare", "datasets", "run_verification", "format_table", "format_section", "verdict",
           "summary_line", "LEGEND", "SECTIONS"]

#: This project's tolerance for the finite-gamma rows (the paper states none).
LOG_OBJ_TOL = 1e-3
GAMMAS = (1e2, 1e4, np.inf)


def datasets(quick=False):
    """Named verification data sets ``{name: (X, init, n_layers)}``.

    ``fig3`` is a NumPy draw of the paper's Figure 3 setting (n=10,000, d=2,
    k=5, 10 layers; the authors' own draw has a row of its own, see
    :func:`figure3_row`); the others vary d, k and the offset from the origin.
    ``quick`` shrinks ``fig3`` to n=1,000 (for tests).
    """
    out = {}
    if quick:
        X, init, _ = gaussian_mixture(np.random.default_rng(0), n=1_000, d=2, k=5)
        out["fig3-small n=1000 d=2 k=5"] = (X, init, 10)
    else:
        X, init = figure3_data(seed=0)
        out["fig3 NumPy draw seed 0 n=10000 d=2 k=5"] = (X, init, 10)
    rng = np.random.default_rng(1)
    X, init, _ = gaussian_mixture(rng, n=500, d=8, k=10)
    out["n=500 d=8 k=10"] = (X, init, 10)
    X, init, _ = gaussian_mixture(rng, n=400, d=1, k=3)
    out["n=400 d=1 k=3"] = (X, init, 10)
    X, init, _ = gaussian_mixture(rng, n=300, d=4, k=4)
    out["n=300 d=4 k=4 offset 1e3"] = (X + 1e3, init + 1e3, 10)
    return out


def compare(name, data_name, trajectory, reference, X, value, claim, holds_if, expect, parameter="gamma"):
    """Build a :class:`Row` from a transformer and a classical trajectory.

    ``holds_if(max_center_dev, log_obj_gap) -> bool`` decides the claim
    (``None``: nothing to decide, the row reports a difference);
    ``value`` is the construction's ``parameter``.
    """
    dev = float(np.max(np.abs(trajectory.centers - reference.centers)))
    gap = float(np.max(np.abs(trajectory.log_objectives(X) - reference.log_objectives(X))))
    holds = holds_if(dev, gap)
    return Row(name, data_name, float(value), claim, dev, gap, None if holds is None else bool(holds), expect,
               parameter)


def figure3_row():
    """Figure 3 on the authors' own draw: the numbers their notebook prints, reproduced.

    The validated configuration at gamma = 1e4 for 10 layers; the claim is
    that its log objectives, rounded to two decimals, are the ones the
    authors' notebook prints (:data:`FIGURE3_PAPER_LOG_OBJECTIVES`).
    """
    X, init = figure3_data()
    traj = lloyd_transformer(2, 5, 1e4).run(X, init, 10)
    printed = np.round(traj.log_objectives(X), 2)
    same = bool(np.array_equal(printed, FIGURE3_PAPER_LOG_OBJECTIVES))
    return compare("Thm 2.1 validated", "fig3, the authors' draw", traj, lloyd(X, init, 10), X, 1e4,
                   "the authors' notebook's log objectives (2 dp)", lambda dev, gap: same, True)


def _gamma_claim(gamma):
    """``(claim, rule, expect)`` of a construction at ``gamma``: exact at infinity (a claim), else a
    log-objective gap within the tolerance (a measurement unless the caller makes it a claim)."""
    if np.isinf(gamma):
        return f"exact (dev <= {EXACT_TOL:g})", lambda dev, gap: dev <= EXACT_TOL, True
    return f"log-objective gap <= {LOG_OBJ_TOL:g}", lambda dev, gap: gap <= LOG_OBJ_TOL, None


def theorem21_rows(quick=False):
    """Theorem 2.1, every configuration, against :func:`lloyd`.

    The paper's configuration runs at ``gamma = inf`` only, the theorem's
    setting: at finite gamma its softmax point reset can leave negative
    assignment weights, on which its linear center update is undefined (the
    book, "What breaks at finite gamma").
    """
    rows = [] if quick else [figure3_row()]
    for data_name, (X, init, T) in datasets(quick).items():
        n, d = X.shape
        k = init.shape[0]
        ref = lloyd(X, init, T)
        is_fig3 = data_name.startswith("fig3")
        for config in ("paper", "validated", "all-attention"):
            for gamma in (np.inf,) if config == "paper" else GAMMAS:
                model = lloyd_transformer(d, k, gamma, config=config)
                # a finite gamma's distance from Lloyd is what the row measures: no warning of it
                traj = model.run(X, init, T, warn="ties" if np.isinf(gamma) else False)
                claim, rule, expect = _gamma_claim(gamma)
                if is_fig3 and gamma == 1e4 and not quick:
                    # On this NumPy draw of the Figure 3 setting the validated configuration stays
                    # within this project's 1e-3 (the authors' draw is figure3_row's); the
                    # all-attention SAX cannot separate 10,000 points at this gamma.
                    expect = config == "validated"
                rows.append(compare(f"Thm 2.1 {config}", data_name, traj, ref, X, gamma, claim, rule, expect))
    return rows


def certificate_rows(quick=False):
    """The exactness certificate: measured deviation <= certified bound (validated config)."""
    from ..certificate import exactness_certificate, min_gamma

    rows = []
    for data_name, (X, init, T) in datasets(quick).items():
        d, k = X.shape[1], init.shape[0]
        ref = lloyd(X, init, T)
        # The paper's gammas, and the smallest gamma certified for a deviation of 1e-6.
        for gamma in GAMMAS + (min_gamma(X, init, T, 1e-6),):
            traj = lloyd_transformer(d, k, gamma).run(X, init, T, warn=False)  # the row measures its distance
            cert = exactness_certificate(X, init, T, gamma)
            bound = float(cert.bound.max())
            if bound >= float(np.ptp(X, axis=0).max()):
                note = " (vacuous: the data's span)"
            else:
                note = " (assignments exact)" if cert.assignments_exact else ""
            claim = f"dev <= certified {bound:.2e}{note}"
            rows.append(compare("certificate", data_name, traj, ref, X, gamma, claim,
                                lambda dev, gap, b=bound: dev <= b, True))
    return rows


#: Gammas of the Theorem 2.2 section.
GAMMAS_22 = (1e2, 1e4, 1e6, np.inf)
#: Smallest gamma at which Theorem 2.2 "validated" agrees with Lloyd to LOG_OBJ_TOL on the NumPy
#: draw ``figure3_data(seed=0)`` (pinned in tests/test_dot_product_transformer.py; on the authors'
#: draw the gap first falls below 1e-3 at 1e5).
THRESHOLD_22_FIG3 = 2e3


def theorem22_rows(quick=False):
    """Theorem 2.2 (dot-product attention + relu^2 FFN), both configurations.

    Against :func:`lloyd`; and, for the validated configuration at finite
    gamma, against Theorem 2.1 validated: its only softmax (CAX) is the
    Euclidean one, so the two agree to rounding on data near the origin.
    """
    rows = []
    for data_name, (X, init, T) in datasets(quick).items():
        d, k = X.shape[1], init.shape[0]
        ref = lloyd(X, init, T)
        is_fig3 = data_name.startswith("fig3") and not quick
        near_origin = "offset" not in data_name
        for config in ("validated", "all-attention"):
            for gamma in GAMMAS_22:
                traj = dot_product_lloyd_transformer(d, k, gamma, config=config).run(
                    X, init, T, warn="ties" if np.isinf(gamma) else False)  # the row measures a finite gamma's gap
                name = f"Thm 2.2 {config}"
                claim, rule, expect = _gamma_claim(gamma)
                if is_fig3 and not np.isinf(gamma):
                    # validated: agreement from THRESHOLD_22_FIG3 on; all-attention: SAX cannot
                    # separate 10,000 points in the unit square at these gammas.
                    expect = config == "validated" and gamma >= THRESHOLD_22_FIG3
                rows.append(compare(name, data_name, traj, ref, X, gamma, claim, rule, expect))
                if config == "validated" and not np.isinf(gamma):
                    euclid = lloyd_transformer(d, k, gamma, config="validated").run(X, init, T, warn=False)
                    rows.append(
                        compare(f"{name} vs 2.1", data_name, traj, euclid, X, gamma,
                                f"= Thm 2.1 validated (dev <= {EXACT_TOL:g})",
                                lambda dev, gap: dev <= EXACT_TOL, True if near_origin else None)
                    )
    return rows


def variant_rows(quick=False):
    """Every registered variant's transformer against its classical twin, at each of its parameter values.

    The rows come from :data:`~kmt_ref.variants.registry.VARIANTS`: a variant
    declares its twin, its parameter values and its float64 allowance, and
    each row claims the two agree within it. Spherical k-means runs on the
    centred data (directions need an origin) and reports the objectives of
    the normalized points; a variant is skipped below its ``min_d``.
    """
    rows = []
    for data_name, (X, init, T) in datasets(quick).items():
        for v in VARIANTS.values():
            if X.shape[1] < v.min_d:
                continue
            Xv, _ = v.problem(X, init)
            points = Xv if v.objective_points is None else v.objective_points(Xv)
            for value in v.values:
                traj, ref = v.run_both(X, init, T, value)
                tol = v.allowed(Xv, value)
                rows.append(compare(v.name, data_name + (" centred" if v.centered else ""), traj, ref, points,
                                    np.inf if v.parameter is None else value,
                                    f"exact to rounding (dev <= {tol:.1e})", lambda dev, gap, tol=tol: dev <= tol,
                                    True, v.parameter or "gamma"))
    return rows


def textbook_rows(quick=False):
    """The variants' rules beside the textbook algorithms they approximate: reported, not claimed.

    Soft k-means at ``beta = 1e4`` against Lloyd; the gap rule of trimmed
    k-means against the 1997 trimmed k-means; randomized k-medoids against
    Voronoi-iteration k-medoids, and at temperature 1e-12, where its medoids
    must stay put (a claim: nothing moves).
    """
    rows = []
    reported = "none: different algorithms, difference shown"
    anything = lambda dev, gap: None  # noqa: E731
    for data_name, (X, init, T) in datasets(quick).items():
        d, k = X.shape[1], init.shape[0]
        beta = VARIANTS["soft k-means"].values[-1]
        rows.append(compare("soft (beta) vs Lloyd", data_name, soft_kmeans(X, init, T, beta), lloyd(X, init, T), X,
                            beta, f"log-objective gap <= {LOG_OBJ_TOL:g}", lambda dev, gap: gap <= LOG_OBJ_TOL, None,
                            "beta"))
        rows.append(compare("gap rule vs 1997 a=.05", data_name, gap_trimmed_kmeans(X, init, T, 1.0),
                            trimmed_kmeans(X, init, T, 0.05), X, 1.0, reported, anything, None, "threshold"))
        temperature = VARIANTS["k-medoids (Gumbel)"].values[0]
        traj = kmedoids_transformer(d, k, temperature).run(X, init, T, rng=np.random.default_rng(0))
        frozen = Trajectory(centers=np.broadcast_to(init, (T + 1,) + init.shape), labels=traj.labels)
        cold = kmedoids_transformer(d, k, 1e-12).run(X, init, T, rng=np.random.default_rng(0))
        stay = VARIANTS["k-medoids (Gumbel)"].allowed(X, 1e-12)  # one rounding of reading a medoid back
        rows.append(compare("k-medoids T->0", data_name, cold, frozen, X, 1e-12,
                            f"medoids stay (dev <= {stay:.0e})", lambda dev, gap, b=stay: dev <= b, True,
                            "temperature"))
        rows.append(compare("rand. vs k-medoids", data_name, traj, kmedoids(X, init, T), X, temperature,
                            reported, anything, None, "temperature"))
    return rows


def labels_rows(quick=False):
    """The labels run (:data:`~kmt_ref.engine.LABELS`, the engine the experiments name for speed) against the
    layer's four blocks on tokens (the default engine), on the same data: the theorem rows above run the
    blocks, so a wrong labels run fails these rows and no theorem row."""
    rows = []
    for data_name, (X, init, T) in datasets(quick).items():
        d, k = X.shape[1], init.shape[0]
        for name, build in (("Thm 2.1", lloyd_transformer), ("Thm 2.2", dot_product_lloyd_transformer)):
            model = build(d, k)
            layer, fast = model.run(X, init, T), model.run(X, init, T, engine=LABELS)
            same = bool(np.array_equal(fast.labels, layer.labels))
            rows.append(compare(f"{name} labels run", data_name, fast, layer, X, np.inf,
                                f"= the layer: same labels, dev <= {EXACT_TOL:g}",
                                lambda dev, gap, same=same: same and dev <= EXACT_TOL, True))
    return rows


#: Verification sections, in the order they are printed. Later modules add theirs.
SECTIONS = {
    "Theorem 2.1 (Euclidean attention)": theorem21_rows,
    "Theorem 2.2 (dot-product attention + relu^2 FFN)": theorem22_rows,
    "Exactness certificate (validated configuration)": certificate_rows,
    "The labels run (the fast engine at gamma = inf) against the layer": labels_rows,
    "Variants: each transformer against its classical twin": variant_rows,
    "Variants beside the textbook algorithms": textbook_rows,
}


#: Tolerance of the learnable-format rows, relative to the size of the coordinates.
LEARNABLE_TOL = 1e-10


def learnable_format_rows(quick=False):
    """The learnable parameter formats run hand-built models exactly.

    An all-attention Theorem 2.1 model (all Euclidean softmax) loaded with
    :func:`~kmt_ref.learning.model.params_from_transformer` and run as a
    learned model is evaluated (:func:`~kmt_ref.learning.model.run_steps`,
    with re-embedding) must give the centers of the original
    :meth:`~kmt_ref.layer.KMeansTransformer.run` to rounding, relative to the
    size of the coordinates (the two paths round differently: the hand-built one
    skips the zero rows of its weights, the learned one cannot). The tied
    format's pieces, read from the construction built for ``k + 1`` centers,
    must run the construction at ``k`` (its parameters do not depend on k).
    """
    rows = []
    for data_name, (X, init, T) in datasets(quick).items():
        if X.shape[0] > 1000:
            continue  # the all-attention layer is O(n^2); the bridge is size-independent
        d, k = X.shape[1], init.shape[0]
        tol = LEARNABLE_TOL * max(1.0, float(np.max(np.abs(X))))
        for gamma in (1e2, 1e4):
            built = lloyd_transformer(d, k, gamma, config="all-attention")
            ref = built.run(X, init, T, reembed=True, warn=False)  # the reference here, not Lloyd's twin
            theta, config = params_from_transformer(built)
            centers = run_steps(theta, X[None], init[None], config, T)[:, 0]
            ours = Trajectory(centers=centers, labels=ref.labels, assignments=None)
            rows.append(compare("learned format <- all-attention", data_name, ours, ref, X, gamma,
                                f"same centers (dev <= {tol:g})", lambda dev, gap, tol=tol: dev <= tol, True))
        # The tied layer's pieces, taken from the construction at another k, run it at this k.
        phi, tied = tie(*params_from_transformer(lloyd_transformer(d, k + 1, 1e4, config="all-attention")))
        ref = lloyd_transformer(d, k, 1e4, config="all-attention").run(X, init, T, reembed=True, warn=False)
        centers = run_steps(phi, X[None], init[None], tied.at_k(k), T)[:, 0]
        ours = Trajectory(centers=centers, labels=ref.labels, assignments=None)
        rows.append(compare("tied format (k+1) -> k", data_name, ours, ref, X, 1e4,
                            f"same centers (dev <= {tol:g})", lambda dev, gap, tol=tol: dev <= tol, True))
    return rows


SECTIONS["Learned-model format runs the construction"] = learnable_format_rows


SECTIONS["Checked symbolically and exactly: the library's weights, code, normalizers, formulas"] = symbolic_rows


def run_verification(quick=False, on_section=None, on_start=None, jobs=1):
    """All rows of all sections, ``{section: [Row, ...]}``.

    ``on_start(title)`` and ``on_section(title, rows, seconds)``, if given, are
    called as each section starts and finishes (the command line prints a
    line and the section's table then, so a long run shows its progress).
    ``jobs > 1`` runs the sections in that many processes; they are still
    reported in order, and the rows are the same.
    """
    results = {}
    if jobs == 1:
        for title, fn in SECTIONS.items():
            if on_start is not None:
                on_start(title)
            start = time.perf_counter()
            results[title] = fn(quick)
            if on_section is not None:
                on_section(title, results[title], time.perf_counter() - start)
        return results
    from concurrent.futures import ProcessPoolExecutor

    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {title: pool.submit(_timed_section, title, quick) for title in SECTIONS}
        for title, future in futures.items():
            if on_start is not None:
                on_start(title)
            results[title], seconds = future.result()
            if on_section is not None:
                on_section(title, results[title], seconds)
    return results


def _timed_section(title, quick):
    start = time.perf_counter()
    rows = SECTIONS[title](quick)
    return rows, time.perf_counter() - start


#: Printed above the tables: what a row is and what its verdict means.
LEGEND = """\
How to read these tables. Each row runs a construction on a data set and compares its centers,
layer by layer, with the classical algorithm it should equal: "center dev" is the largest
coordinate difference over all layers, "log-obj gap" the largest difference of the log k-means
objective. Every row is one of four kinds:
  claim          a result of the paper or of this project; its verdict is "holds" or "FAILS";
  proof          a statement proved for every input by computer algebra, on the weights the library
                 builds or on a formula it computes, or decided in exact arithmetic on the library's
                 own blocks, layer and normalizers ("proved" or "FAILS"; no deviation to show);
  known failure  a documented case where the result does not hold ("fails, as documented");
  measurement    a number shown without a claim; the verdict says whether it meets the condition
                 shown ("within" / "outside"), or is "-" when the row only shows a difference.
Tolerances (1e-10 exact, 1e-3 log objective) are this project's; the paper states none."""


def verdict(row):
    """The row's kind and verdict in words (see :data:`LEGEND`)."""
    if row.kind == "proof":
        return "proof", {True: "proved", False: "FAILS", None: "-"}[row.holds]
    if row.expect is True:
        return "claim", "holds" if row.holds else "FAILS"
    if row.expect is False:
        return "known failure", "HOLDS (documented to fail)" if row.holds else "fails, as documented"
    return "measurement", {None: "-", True: "within", False: "outside"}[row.holds]


def format_section(title, rows):
    """One section of the verification table, columns sized to its rows."""
    cells = [(r.construction, r.data, f"{r.parameter}={r.value:g}" if r.parameter else "-",
              *(("-", "-") if r.kind == "proof" else (f"{r.max_center_dev:.2e}", f"{r.log_obj_gap:.2e}")),
              r.claim, *verdict(r)) for r in rows]
    header = ("construction", "data", "parameter", "center dev", "log-obj gap", "condition", "kind", "verdict")
    widths = [max(len(str(c[i])) for c in cells + [header]) for i in range(len(header))]
    right = {3, 4}

    def line(c):
        return "  ".join(f"{str(v):>{w}}" if i in right else f"{str(v):<{w}}"
                         for i, (v, w) in enumerate(zip(c, widths, strict=True))).rstrip()

    rule = "-" * len(line(header))
    return "\n".join([title, rule, line(header)] + [line(c) for c in cells])


def summary_line(results):
    """The closing line: how many rows, and whether every claim holds."""
    rows = [r for rows in results.values() for r in rows]
    bad = [r for r in rows if not r.ok]
    claims = sum(r.expect is True for r in rows)
    # A proof row that decided nothing stands for a section that could not run (SymPy not installed).
    skipped = "".join(f'; skipped the section "{title}" ({r.construction.strip("()")}: {r.claim})'
                      for title, section in results.items() for r in section if r.kind == "proof" and r.holds is None)
    if bad:
        return (f"{len(rows)} rows, {claims} claims: {len(bad)} claim(s) FAIL: "
                + "; ".join(f"{r.construction} on {r.data}" for r in bad) + skipped)
    return f"{len(rows)} rows, {claims} claims: " + (f"every claim checked holds{skipped}." if skipped else
                                                     "every claim holds.")


def format_table(results):
    """A plain-text report of :func:`run_verification` results: legend, sections, summary."""
    parts = [LEGEND] + [format_section(title, rows) for title, rows in results.items()]
    return "\n\n".join(parts + [summary_line(results)])


def to_json(results):
    return json.dumps(
        {title: [dict(asdict(r), ok=r.ok) for r in rows] for title, rows in results.items()},
        indent=2,
        default=float,
    )
