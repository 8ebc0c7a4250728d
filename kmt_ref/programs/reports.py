"""The text report of each learning experiment: lines under the header ``reproduce`` prints.

Each function takes the JSON-able dict the experiment returned (or its
committed file) and returns lines of text; :mod:`kmt_ref.programs.registry`
attaches them to their experiments.
"""

import numpy as np

from ..learning.protocols import PAPER_LEARNING

__all__ = ["learning", "precision", "tied", "relabelled", "symmetries", "symmetric", "full_group", "symmetric_layer",
           "eval_dropout",
           "ablation", "shifted", "training_curves",
           "any_k", "multi_step", "real_data", "weights", "dissection", "chaos"]


def _fmt(value):
    return "diverged" if value is None else f"{value:.3f}"


def _gap_table(rows, title="mean log k-means objective after 20 steps, median over seeds (lower is better):",
               label="tasks", width=28):
    """Lloyd and learned log objectives per setting, and their difference."""
    lines = [title, f"  {label:<{width}}{'Lloyd':>8}{'learned':>10}{'learned - Lloyd':>17}"]
    for setting, row in rows.items():
        learned, lloyd = row["learned_log_objective"], row["lloyd_log_objective"]
        gap = "" if learned is None else f"{learned - lloyd:+.3f}"
        lines.append(f"  {setting:<{width}}{lloyd:8.3f}{_fmt(learned):>10}{gap:>17}")
    return lines


def learning(result):
    lines = ["mean log k-means objective after 20 steps on held-out tasks (lower is better);",
             "median over seeds, [min, max] over seeds, and the paper's value:"]
    for label, key in (("Lloyd", "lloyd"), ("learned, tokens [x | y]", "learned"),
                       ("learned, tokens [x] only", "d_only")):
        value = result.get(f"{key}_log_objective")
        if value is None:
            continue
        # A report has the [min, max] range; a fresh run has the per-step summaries.
        spread = result.get(f"{key}_log_objective_range") or [result[key]["min"][-1], result[key]["max"][-1]]
        lines.append(f"  {label:<26}{value:8.3f}   [{spread[0]:.3f}, {spread[1]:.3f}]   paper "
                     f"~{PAPER_LEARNING[key + '_log_objective']:.2f}")
    if result["scale"] != "paper":
        lines.append("(the quick scale trains for minutes, not hours: the learned layer is not expected "
                     "to beat Lloyd there)")
    if result.get("note"):
        lines.append("note: " + result["note"])
    return lines


def precision(result):
    lines = ["the [x | y] layer trained with float32 steps beside the float64-trained one (same seed, same tasks);",
             "mean log k-means objective after 20 steps on held-out tasks, final validation ratio, seconds per step:"]
    for i, seed in enumerate(result["float32"]["seeds"]):
        lines.append(f"  seed {seed}: Lloyd {_fmt(result['lloyd']['final'][i])}")
        for arithmetic in ("float64", "float32"):
            r = result[arithmetic]
            lines.append(f"    trained in {arithmetic}: {_fmt(r['final'][i])}   validation ratio "
                         f"{r['val_ratio_final'][i]:.3f}   {r['seconds_per_step'][i]:.3f} s/step "
                         f"({r['steps_done'][i]:,} of {r['n_steps']:,} steps)")
    return lines


def tied(result):
    lines = ["the id-equivariant (tied) layer beside the standard one, on each seed's held-out tasks;",
             "mean log k-means objective after 20 steps, then the one step's change when the starts' ids are "
             f"permuted ({result['relabellings']} relabellings; median over tasks, its median and the worst task):"]
    for i, seed in enumerate(result["seeds"]):
        lines.append(f"  seed {seed}: Lloyd {_fmt(result['lloyd_final'][i])}   tied {_fmt(result['tied_final'][i])}   "
                     f"standard {_fmt(result['standard_final'][i])}   soft k-means (beta = {result['soft_beta']:g}) "
                     f"{_fmt(result['soft_final'][i])}")
        for key in ("tied", "standard"):
            r = result[f"{key}_relabelled"][i]
            lines.append(f"    {key} relabelled: median {np.median(r['median']):.3g}, worst task {r['worst']:.3g}")
    if result.get("partial"):
        lines.append("note: some tied models stopped before n_steps (see steps_done)")
    return lines


def relabelled(result):
    lines = [f"the standard layer's one step with the ids of its starts permuted ({result['relabellings']} "
             "relabellings), mapped back, relative to the step (median over tasks: its median over relabellings, "
             "and the worst task):"]
    for seed, r in zip(result["seeds"], result["relabelled"], strict=True):
        lines.append(f"  seed {seed}: median {np.median(r['median']):.3f} [{min(r['median']):.3f}, "
                     f"{max(r['median']):.3f}], worst task {r['worst']:.2f}")
    return lines


def symmetries(result):
    lines = [f"the standard layer against itself under the task law's symmetries, on {result['n_tasks']} held-out "
             f"tasks per seed: one-step ratio (median over tasks; median over {result['relabellings']} relabellings "
             f"or {result['transforms']} coordinate transforms), and the correlations over tasks of the relabelled "
             f"run's gain over Lloyd and final log objective with the run's; beside, the gain correlation (F2) of "
             f"a candidate with the same final value on every task and of Lloyd at its best of {result['restarts']} "
             "restarts:",
             f"  {'seed':>4}  {'ids':>6}  {'coords':>6}  {'signs':>6}  {'gain r':>6}  {'final r':>7}  "
             f"{'F2 const':>8}  {'F2 best-of':>10}"]
    for seed, p in zip(result["seeds"], result["per_seed"], strict=True):
        rel, co = p["relabelled"], p["coordinates"]
        lines.append(f"  {seed:>4}  {np.median(rel['one_step']):6.3f}  {np.median(co['permuted']):6.3f}  "
                     f"{np.median(co['reflected']):6.3f}  {np.median(rel['gain_correlation']):6.3f}  "
                     f"{np.median(rel['final_correlation']):7.3f}  {p['constant_final_f2']:8.3f}  "
                     f"{p['lloyd_restarts_f2']:10.3f}")
    return lines


def ablation(result):
    return _gap_table({"tokens [x] only": dict(lloyd_log_objective=result["lloyd_log_objective"],
                                               learned_log_objective=result["d_only_log_objective"])})


def shifted(result):
    """Generalization, k-means++ starts, families: one row per setting."""
    return _gap_table({k: v for k, v in result.items() if isinstance(v, dict) and "learned_log_objective" in v})


def eval_dropout(result):
    lines = [f"mean log k-means objective after 20 steps on held-out tasks, median [min, max] over seeds; "
             f"attention dropout p = {result['dropout']:g} on every block:"]
    for label, key in (("Lloyd", "lloyd"), ("learned, no dropout", "learned"),
                       ("learned, dropout on", "learned_dropout")):
        v = result[f"{key}_final"]
        lines.append(f"  {label:<26}{np.median(v):8.3f}   [{min(v):.3f}, {max(v):.3f}]")
    gap = [a - b for a, b in zip(result["learned_dropout_final"], result["lloyd_final"], strict=True)]
    lines.append(f"  dropout on, minus Lloyd, per seed: [{min(gap):+.3f}, {max(gap):+.3f}]")
    return lines


def training_curves(result):
    st = result["setting"]
    lines = [f"{st['n']} points, batches of {st['batch']}, {st['n_steps']} steps; final validation ratio "
             "(objective after the layer / after one Lloyd step), median [min, max] over seeds:"]
    for panel, rows in result["panels"].items():
        lines.append(f"  {panel}")
        for r in rows:
            v = r["val_ratio_final"]
            lines.append(f"    tokens {r['tokens']:<4} k={r['k']:<3} d={r['d']:<3} tau={r['tau']:<6g}"
                         f"{np.median(v):7.3f} [{min(v):.3f}, {max(v):.3f}]")
    return lines


def any_k(result):
    lines = ["mean log k-means objective after 20 steps, median over seeds (lower is better):",
             f"  {'k':<6}{'Lloyd':>8}{'tied (k=10)':>13}{'[x] (k=10)':>12}{'standard (at k)':>17}"]
    for key, row in result["per_k"].items():
        lines.append(f"  {key[2:]:<6}{row['lloyd_log_objective']:8.3f}{_fmt(row['tied_log_objective']):>13}"
                     f"{_fmt(row['d_only_log_objective']):>12}{_fmt(row['standard_log_objective']):>17}")
    return lines


def multi_step(result):
    title = "mean log k-means objective after 20 re-embedded steps, median over seeds:"
    return _gap_table(result["per_n_layers"], title, "trained through", 30)


def chaos(result):
    lines = ["each seed's model and its reruns from initial parameters multiplied by 1 + p 2^-52: final mean log "
             "objective minus Lloyd's on the seed's held-out tasks (negative: better than Lloyd), its spread over "
             "the runs, the runs below Lloyd, and the spread of the final validation ratio:"]
    for entry in result["models"].values():
        runs = list(entry["per_perturbation"])
        lines.append(f"  {entry['label']}")
        lines.append(f"    {'seed':<6}" + "".join(f"{r:>10}" for r in runs)
                     + f"{'spread':>10}{'below Lloyd':>13}{'val ratio spread':>18}")
        for i, seed in enumerate(result["seeds"]):
            gaps = [entry["per_perturbation"][r]["gap"][i] for r in runs]
            lines.append(f"    {seed:<6}" + "".join(f"{'diverged' if g is None else f'{g:+.3f}':>10}" for g in gaps)
                         + f"{_fmt(entry['gap_spread'][i]):>10}{entry['runs_below_lloyd'][i]:>8} of {len(runs)}"
                         + f"{entry['val_ratio_spread'][i]:>18.3f}")
    real = {key: entry for key, entry in result["models"].items()
            if "real_data" in next(iter(entry["per_perturbation"].values()))}
    if real:
        lines.append("on the real data sets: log objective minus Lloyd's after the evaluation steps, median over "
                     "seeds, per run (in brackets, where the layer is the data set's separation diagnostic: with the "
                     "class means moved farthest apart):")
        for entry in real.values():
            rows = [r["real_data"] for r in entry["per_perturbation"].values()]
            lines.append(f"  {entry['label']}")
            for name in rows[0]:
                cells = []
                for row in rows:
                    gap = row[name]["gap"]
                    cell = _fmt(None if None in gap else float(np.median(gap)))
                    if "spread_gap" in row[name]:
                        far = list(row[name]["spread_gap"].values())[-1]
                        cell += f" [{_fmt(None if None in far else float(np.median(far)))}]"
                    cells.append(f"{cell:>18}")
                lines.append(f"    {name:<15}" + "".join(cells))
    return lines


def real_data(result):
    lines = [f"{result['restarts']} random initializations per data set; after {result['n_eval_steps']} steps: "
             "mean log objective / adjusted Rand index with the classes (median over seeds):",
             f"  {'data set':<15}{'k':>3}{'Lloyd':>15}{'tied':>15}{'[x] only':>15}{'standard':>15}"
             f"{'gamma=inf exact':>17}"]
    for key, row in result["per_dataset"].items():
        cells = [f"{row[m]['log_objective']:.3f} / {row[m]['ari']:.2f}" if m in row else "-"
                 for m in ("lloyd", "tied", "d_only", "standard")]
        c = row["construction"]["inf"]
        exact = f"{c['exact']}/{c['tie_free']}"
        lines.append(f"  {key:<15}{row['k']:>3}" + "".join(f"{c:>15}" for c in cells) + f"{exact:>17}")
    lines.append("(last column: runs equal to Lloyd at gamma = inf / runs without an exact distance tie)")
    return lines


def weights(result):
    lines = ["data-block diagonal mean of each learned matrix, per seed (construction in brackets):"]
    for key, entry in result["per_seed"][0].items():
        values = ", ".join(f"{s[key]['diag_mean']:+.3f}" for s in result["per_seed"])
        lines.append(f"  {key:<8} {values}   [{entry.get('construction_diag_mean', float('nan')):+.1f}]")
    return lines


def dissection(result):
    gain = result["gain"]
    lines = [f"{result['n_tasks']} held-out tasks per seed, {result['n_eval_steps']} steps; the learned layer's gain "
             f"over Lloyd (mean log objective): median {np.median(gain):.3f} [{min(gain):.3f}, {max(gain):.3f}] over "
             "seeds", "change of the final mean log objective when one part is changed (positive: worse), median "
             "[min, max] over seeds, and the median share of the gain it costs:"]
    for name, row in result["ablations"].items():
        lines.append(f"  {name:<28}{row['median']:+8.3f}  [{row['min']:+.3f}, {row['max']:+.3f}]"
                     f"{row['share_of_gain']:8.1f}x")
    lines.append("the first application of the layer, median [min, max] over seeds:")
    for key, values in result["quantities"].items():
        v = [x for x in values if x is not None]
        lines.append(f"  {key:<28}" + (f"{np.median(v):8.3f}  [{min(v):.3f}, {max(v):.3f}]" if v else "   (none)"))
    return lines


def _ranges(fits):
    """``beta [lo, hi], eta [lo, hi]`` of a list of fits."""
    return ", ".join(f"{label} [{min(f[key] for f in fits):.3f}, {max(f[key] for f in fits):.3f}]"
                     for label, key in (("beta", "beta"), ("eta", "sharpness")))


def interpret(result):
    fits = result["fits"]
    lines = [f"{result['n_tasks']} held-out tasks per seed, {result['n_eval_steps']} steps; soft k-means at its best "
             f"stiffness on training tasks, beta = {result['soft_beta']:g}; leaky soft k-means fitted on the training "
             "distribution: " + "; ".join(f"through {u} step(s) beta = {f['beta']:.3f}, sharpness eta = "
                                          f"{f['sharpness']:.3f}" for u, f in fits.items()),
             "final mean log objective, median [min, max] over seeds, and the median share of the learned layer's "
             "gain over Lloyd it recovers:"]
    for u, f in fits.items():
        if "restarts" in f:  # the grid-and-refine fit: how far its start and its sample move it
            lines.insert(-1, f"  the fit through {u} step(s) from its {len(f['restarts'])} best grid points: "
                         + _ranges(f["restarts"]) + f"; on {len(f['subsets'])} disjoint slices of its sample: "
                         + _ranges(f["subsets"]))
    for name in result["per_seed"][0]["final"]:
        v = [p["final"][name] for p in result["per_seed"]]
        share = f"{np.median(result['recovered'][name]):8.2f}x" if name in result["recovered"] else ""
        lines.append(f"  {name:<30}{np.median(v):8.3f}  [{min(v):.3f}, {max(v):.3f}]{share}")
    centers = {kind: sum(p["centers"][kind] for p in result["per_seed"]) for kind in ("owns", "shares")}
    lines.append("one step from the first centers: each center's move over Lloyd's (1: as far as Lloyd), median and "
                 f"90th percentile, median over seeds; {centers['owns']} centers own their points, "
                 f"{centers['shares']} share them:")
    for name in result["per_seed"][0]["stride"]:
        cells = []
        for kind in ("owns", "shares"):
            v = np.array([p["stride"][name][kind] for p in result["per_seed"] if p["stride"][name][kind] is not None])
            cells.append(f"{kind} {np.median(v[:, 0]):.2f} (90%: {np.median(v[:, 1]):.2f})" if len(v) else f"{kind} -")
        lines.append(f"  {name:<30}" + "   ".join(cells))
    if "fidelity" in result:
        lines += _fidelity_lines(result)
        lines.append("  the same layer against itself with its starts' ids, coordinates or signs changed, and the "
                     "nulls of F2: `reproduce symmetries`; the candidates against the layer averaged over its "
                     "starts' ids and against the tied layer, by final-objective correlation: `reproduce symmetric`")
    lines.append("off the training distribution (the tasks of the committed experiments): final mean log objective, "
                 "median over seeds, and the median share of sharing centers at the start:")
    for experiment, conditions in result["shifted"].items():
        for condition, row in conditions.items():
            cells = [f"lloyd {_median_or_dash(row['lloyd_final'])}",
                     f"learned {_median_or_dash([row['learned_median']])}",
                     f"leaky {_median_or_dash(row['leaky_final'])}"]
            lines.append(f"  {experiment + ': ' + condition:<42}" + "  ".join(cells)
                         + f"  shares {_median_or_dash(row['shares'], '.2f')}")
    lines.append("from starts made to test the explanation (each seed's held-out tasks), the same columns:")
    for kind, row in result["made"].items():
        cells = [f"{name} {_median_or_dash(row[name + '_final'])}" for name in ("lloyd", "learned", "leaky")]
        lines.append(f"  {kind:<42}" + "  ".join(cells) + f"  shares {_median_or_dash(row['shares'], '.2f')}")
    lines.append("real data sets (the real-data experiment's starts and width): mean log objective / adjusted Rand "
                 "index with the classes (learned: median over seeds), and the share of sharing centers at the start:")
    for name, row in result["real_data"].items():
        cells = [f"{key} {row[key]['log_objective']:.3f}/{row[key]['ari']:.2f}"
                 for key in ("lloyd", "soft k-means", "leaky", "learned") if key in row]
        label = f"{name} (k={row['k']})"
        lines.append(f"  {label:<24}" + "  ".join(cells) + f"  shares {row['shares']:.2f}")
    return lines


def _fidelity_lines(result):
    """The fidelity of each candidate to the layer, task by task (:mod:`kmt_ref.programs.fidelity`)."""
    starts = [[e["loss"] for e in p["distilled"]["starts"]] for p in result["per_seed"]]
    lines = ["fidelity to the layer, task by task: F1, one step's distance from the layer's centers over the layer's "
             "move (median over tasks; 0: where the layer goes); F2, correlation over tasks of the gain over Lloyd "
             "with the layer's (1: wins where the layer wins); [min, max] over seeds:"]
    for name, v in result["fidelity"].items():
        f2 = [x for x in v["gain_correlation"] if x is not None and np.isfinite(x)]
        f2_text = f"[{min(f2):.2f}, {max(f2):.2f}]" if f2 else "undefined (no gain)"
        lines.append(f"  {name:<44}F1 {np.median(v['one_step_ratio']):.2f} [{min(v['one_step_ratio']):.2f}, "
                     f"{max(v['one_step_ratio']):.2f}]   "
                     f"F2 {f2_text}")
    distilled = [(p["distilled"]["beta"], p["distilled"]["sharpness"]) for p in result["per_seed"]]
    lines.append(f"  (distilled from each seed's layer: beta {min(b for b, _ in distilled):.2f}-"
                 f"{max(b for b, _ in distilled):.2f}, sharpness {min(s for _, s in distilled):.2f}-"
                 f"{max(s for _, s in distilled):.2f}; best of {len(starts[0])} starts, the others ending "
                 f"{max(max(s) - min(s) for s in starts):.2g} higher in relative squared distance at most)")
    if "circuit" in result["per_seed"][0]:
        lines += _circuit_lines(result["per_seed"])
    return lines


def _circuit_lines(per_seed):
    """The block summaries fitted on each seed's layer, and how far the fit on a slice of the tasks moves F1, F2."""
    fits = [p["circuit"] for p in per_seed]

    def span(values, fmt=".3g"):
        return f"{min(values):{fmt}} to {max(values):{fmt}}"
    lines = ["  the circuit's summaries fitted on each seed's layer (range over seeds; r2: share of the block's "
             "centered log-weights, of the centers' moves for the values, that the summary explains):"]
    for key, block in (("beta", "CAX"), ("inv_width", "SAX"), ("sharpness", "CAC"), ("penalty", "CAC")):
        lines.append(f"    {key:<10}{span([f[key] for f in fits]):<20} r2 {block} "
                     f"{span([f['r2'][block] for f in fits], '.2f')}")
    for i in range(3):
        lines.append(f"    mu_{i:<7}{span([f['mu'][i] for f in fits])}")
    lines.append(f"    r2 of the values {span([f['r2']['values'] for f in fits], '.3f')}")
    slices = [s for f in fits for s in f["subsets_fidelity"]]
    lines.append(f"  fitted on one of {len(fits[0]['subsets'])} disjoint slices of the tasks instead, the circuit "
                 f"around the layer's CAX has F1 {span([s['one_step_ratio']['median'] for s in slices], '.2f')}, "
                 f"F2 {span([s['gain_correlation'] for s in slices], '.2f')} (every seed and slice)")
    return lines


def _median_or_dash(values, fmt=".3f"):
    v = [x for x in values if x is not None]
    return format(float(np.median(v)), fmt) if v else "-"


def symmetric_layer(result):
    lines = ["the symmetric layer (every symmetry of the task law: ids, coordinate permutations, reflections; 48 "
             "scalars) "
             "on each seed's held-out tasks: mean log k-means objective after 20 steps, and its one step's largest "
             "change under a symmetry of the task law, relative to the step:"]
    def other(kind, i, seed):
        return _fmt(result[f"{kind}_final"][i]) if seed in result[f"{kind}_seeds"] else "not trained"

    for i, seed in enumerate(result["seeds"]):
        lines.append(f"  seed {seed}: Lloyd {_fmt(result['lloyd_final'][i])}   symmetric "
                     f"{_fmt(result['symmetric_final'][i])}   standard {other('standard', i, seed)}   tied "
                     f"{other('tied', i, seed)}   soft k-means (beta = {result['soft_beta']:g}) "
                     f"{_fmt(result['soft_final'][i])}   moved by the group {result['group_change_worst'][i]:.1e}")
    for i, seed in enumerate(result["seeds"]):
        lines.append(f"  seed {seed}, scalars (alpha, lambda, nu, kappa) of each block's q, k, v:")
        for block, maps in result["scalars"][i].items():
            lines.append(f"    {block}: " + "   ".join(
                f"{m} " + " ".join(f"{v:+.3f}" for v in values.values()) for m, values in maps.items()))
    if result.get("partial"):
        lines.append("note: some symmetric models stopped before n_steps (see steps_done)")
    return lines


def symmetric(result):
    return _against_targets(result, f"the closed forms against the standard layer, its label-averaged version "
                            f"({result['relabellings']} relabellings of the starts' ids) and the tied layer")


def full_group(result):
    return _against_targets(result, f"the closed forms against the standard and the tied layer averaged over "
                            f"{result['averaged']} draws of every symmetry of the task law (ids, coordinate "
                            "permutations, reflections x -> 1 - x)")


def _against_targets(result, what):
    from .interpret import DESCRIBES, FLOOR_MARGIN, symmetric_summary

    lines = [f"{what}, on {result['n_tasks']} held-out tasks per seed: "
             "F1, one step's distance from the target's over its move (median over tasks); final r, the correlation "
             f"over tasks of the log objective after {result['n_eval_steps']} steps with the target's, and partial r "
             "the same given Lloyd's; F2, the gain correlation; each median [min, max] over seeds:"]
    for kind, targets in symmetric_summary(result).items():
        seeds = [row["seed"] for row in result[kind]]
        for target, entry in targets.items():
            lines.append(f"  target: the {target} ({kind} layer, seeds {', '.join(map(str, seeds))})")
            for name, v in entry["candidates"].items():
                cells = [f"{label} {_spread(v[key])}" for label, key in (
                    ("F1", "one_step_ratio"), ("final r", "final_correlation"), ("partial r", "partial_correlation"),
                    ("F2", "gain_correlation")) if key in v]
                lines.append(f"    {name:<40}" + "  ".join(cells))
            best = ", ".join(f"{n} {f:.2f}" for n, f in entry["best"])
            lines.append(f"    closest closed form per seed: {best}")
            if "floor" in entry:
                lines.append(f"    within {FLOOR_MARGIN:g} of the floor on every seed: "
                             f"{'yes' if entry['within_floor'] else 'no'}")
            if "describe" in entry:
                lines.append(f"    F1 <= {DESCRIBES['one_step_ratio']:g} and final r >= "
                             f"{DESCRIBES['final_correlation']:g} on every seed: "
                             + (", ".join(entry["describe"]) if entry["describe"] else "none"))
    return lines


def _spread(values):
    v = [x for x in values if x is not None and np.isfinite(x)]
    return f"{np.median(v):.2f} [{min(v):.2f}, {max(v):.2f}]" if v else "undefined"
