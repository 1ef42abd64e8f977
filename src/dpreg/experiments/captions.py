"""Report captions, one per study, built from the study's own config entry.

A caption says what this study is (its title, paper, kind and grid), what the figure or
table of its kind shows, where its data bounds come from, and where its claims are
checked. Nothing in a caption is shared by studies that differ: two studies of one kind
still differ in title, grid and fixed parameters, and an ``eps_grid`` study says
whether its datasets' bounds are public or read off the data.

The workflow passes :func:`study_caption` as the rule parameters ``table_caption`` and
``figure_caption`` of ``study_table`` (which writes the table and draws the figure) and
of the view rules (``workflow/report/study_table.rst`` and ``study_figure.rst`` print them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["FIGURE_DESCRIPTIONS", "TABLE_DESCRIPTIONS", "study_caption"]

#: What the figure of each study kind draws (axes, marks, bands, reference lines).
FIGURE_DESCRIPTIONS: dict[str, str] = {
    "eps_grid": (
        "Train MSE against epsilon (log axes), one panel per dataset and one line per "
        "estimator (a label of `variants` is the estimator it names, run with the label's "
        "own hyper block): mean over trials with a 95% band (mean +/- 1.96 SE); the dashed "
        "line is non-private OLS."
    ),
    "lev_table2": (
        "Per-dataset quantities of Lev et al. Table 2 computed on our data (n, d, L/n, "
        "the eigenvalue indicator and the IHM/AdaSSP error ratios) beside the paper's "
        "printed values."
    ),
    "lev_clipping": (
        "Left: fraction of rows IHM clips against epsilon; right: train MSE of each "
        "estimator against epsilon with a 95% band, on the synthetic MLP-feature data."
    ),
    "lev_gamma_sweep": (
        "IHM's train MSE against its mixing level gamma relative to the exact (smallest "
        "certifying) gamma (log x), one panel per dataset at a fixed epsilon: mean with a "
        "95% band; the dotted line and square mark the authors' code's gamma, the dashed "
        "line the train MSE of theta = 0 (IHM's limit as gamma grows)."
    ),
    "ftrl_epochs": (
        "Test MSE (train MSE where a dataset holds no rows out) against the number of "
        "epochs E (log axes), one panel per dataset: nu-DP-FTRL solid, DP-SGD dashed, one "
        "colour per epsilon, mean with a 95% band; the dotted line is non-private OLS."
    ),
    "iv_bound_curve": (
        "The error bound (7) of Liang et al. against the number of iterations T (log "
        "axes), evaluated with unit constants; it shows the trend, not a value."
    ),
    "iv_synthetic": (
        "Error of the IV estimate against the study's x-axis (log axes), one line per "
        "series of the grid: mean over trials with error bars of the standard error."
    ),
    "iv_angrist": (
        "DP-2S-GD on the Angrist-Evans sample: the iterates of beta over t (mean with a "
        "standard-error band) against the non-private 2SLS estimate (dashed)."
    ),
    "brown_error_vs_dim": (
        "Error of DP-GD and the baselines against the dimension p at n = 100 p (log x), "
        "mean with a 95% band."
    ),
    "brown_cost_of_privacy": (
        "Mean error against n (log axes) of DP-GD, AdaSSP and OLS: the cost of privacy "
        "is the gap to OLS."
    ),
    "brown_clip_heatmap": (
        "Fraction of per-example gradients clipped by DP-GD, over the dimension p "
        "(n = 100 p) and the clipping threshold gamma."
    ),
    "brown_bias_variance": (
        "Squared error of DP-GD against the clipping threshold gamma (log axes); labels "
        "give the percentage of gradients clipped."
    ),
    "brown_error_vs_clipping": (
        "Mean distance of DP-GD's last iterate to OLS against the fraction of gradients "
        "clipped (log y), one line per number of steps T."
    ),
    "brown_ci": (
        "Left: coverage of the confidence intervals for theta_j against the total number "
        "of gradient iterations N = mT (nominal level solid; the Huber target dotted); "
        "right: mean interval length (log axes) with the non-private OLS length dashed."
    ),
    "varshney_sim": (
        "Excess risk (half the squared H-norm of w - w_star) of each method against the "
        "study's x-axis (log axes): median with a 10-90% quantile band over trials; for E5 "
        "the sample size N_star(d) at which the median is within twice the non-private one."
    ),
    "varshney_diagnostics": (
        "The adaptive clip of DP-AMBSSGD over steps t against the quantities it tracks: "
        "median with a 10-90% quantile band over trials."
    ),
    "ftrl_mean_ratio": (
        "Mean estimation: ratio of the asymptotic error of the optimal correlated noise "
        "to DP-SGD's against the learning rate eta, the optimal coefficients beta_star_t and "
        "their spectrum."
    ),
    "ftrl_theory_table": (
        "The closed-form quantities of the table (asymptotic suboptimality or the "
        "prefix-sum error of each mechanism) drawn as bars or lines per mechanism."
    ),
    "ftrl_linreg_sim": (
        "Asymptotic suboptimality F_inf of each mechanism against the study's x-axis "
        "(log axes): simulated mean with standard-error bars beside the exact LTI value "
        "and the finite-time upper bound of Theorem D.11 at the tail's first step (dotted)."
    ),
    "ftrl_iterate_bounds": (
        "Left: the largest ratio of a simulated squared norm to its bound, over trials "
        "and steps t >= 1, for each high-probability bound of App. D.2 (Theorem D.4's "
        "iterates and gradients, Propositions D.6-D.8; explicit constants, probability "
        "1 - p) against d (log axes, dashed line at 1). Right: Lemma D.12, the simulated "
        "E||theta_{T-1} - theta*||^2 of the noise process from the optimum (mean with SE "
        "bars), its exact value (solid) and the lemma's trace bound (dotted)."
    ),
    "ftrl_socp_bound": (
        "Theorem 3.1's bound on F_inf against the condition number kappa (log axes) per "
        "mechanism, and its ratio to Noisy-SGD. Crosses: the bound re-solved by the "
        "cross-check solver, drawn only where that solve converged (column "
        "cross_check_status; at kappa = 1 the infimum is not attained and SCS stops "
        "unconverged: the star, the exact quadratic value, is the check there)."
    ),
    "ftrl_digits": (
        "Scaled-down analogue of Fig. 4: multinomial logistic regression on digits, not the "
        "paper's CIFAR-10/StackOverflow. Test accuracy against epsilon (log x) at matched "
        "(epsilon, delta), one line per method (DP-SGD with independent noise, with or "
        "without amplification by sampling, nu-DP-FTRL, ME, TreeAgg, FFT, other "
        "correlations), mean over trials with 95% bars (mean +/- 1.96 SE); the dashed "
        "line is the non-private reference trained on the same schedule. With a "
        "learning-rate grid, the rate of each method and epsilon is selected on a "
        "validation split read without noise (outside the guarantee)."
    ),
    "ftrl_quoted": (
        "Accuracies QUOTED from the paper's deep-learning experiments (not reproduced: "
        "out of CPU scope), drawn as bars."
    ),
    "benchmark": (
        "Performance profile of the private regression benchmark (docs/benchmark.md), one "
        "panel per epsilon (delta = 1/n^2): for each method, the share of datasets on "
        "which its mean test MSE is within a factor tau of the best private method's on "
        "that dataset (tau = 1: the share of wins). Every hyperparameter is set from public "
        "inputs only (dpreg.estimators.methods); non-private OLS is not ranked; a method "
        "that did not run on a dataset (outside its regime) never counts as within tau."
    ),
    "iv_table": (
        "DP-2S-GD (Liang et al. 2025, Algorithm 1) with every hyperparameter from public "
        "inputs only (dpreg.estimators.iv_methods) on a user's table with instruments, "
        "delta = 1/n^2 unless the study sets it: the coefficient of each endogenous "
        "regressor in the codebook's original units against epsilon (log x), one panel per "
        "dataset and regressor; points are the mean over releases with error bars of "
        "+/- 1.96 SE of that mean, the shaded band is +/- 1 sd (the spread of one "
        "release), the dashed line the non-private 2SLS coefficient of the same rows. "
        "Trials are repeated releases on the same rows: publishing several composes their "
        "budgets. A gap to the line beyond the error bars is a bias of the public rule "
        "(finitely many steps of a public size, gradients clipped at public thresholds), "
        "not noise."
    ),
    "ci_coverage": (
        "Coverage of the parametric-bootstrap intervals (docs/inference.md) against epsilon, "
        "one column of panels per (n, d): one line per estimator (colour) and target (solid: "
        "the OLS fit of the trial's data, dashed: the bounded population's coefficient), "
        "error bars of 2 standard errors, the nominal level with its 2-SE binomial band; "
        "below, the interval width over the non-private OLS interval's."
    ),
    "privacy_audit": (
        "Empirical privacy audit (docs/privacy.md, 'Empirical privacy audit'). One row per "
        "estimator, canary and claim: a bar at the epsilon the claim allows at the audit's "
        "delta, and the audited lower bounds on epsilon from the held-out threshold test "
        "(circles, valid with probability 1 - alpha) and, for releases that are exactly "
        "Gaussian given the data, from the Gaussian-DP interval (squares); green pass, "
        "red fail, orange expected-fail. An audit is a lower bound: events of probability "
        "about delta are invisible to it, and canaries are designed, not searched."
    ),
}

#: What the table of each study kind holds (beyond the study's grid columns).
TABLE_DESCRIPTIONS: dict[str, str] = {
    "ftrl_iterate_bounds": (
        "One row per dimension, mechanism and bound of App. D.2-D.3: for the "
        "high-probability bounds the fraction of trials exceeding the bound at some step "
        "with its limit p + 3 binomial SE and the largest simulation / bound ratio; for "
        "Lemma D.12 the simulated mean and SE of the noise process's squared distance at "
        "step T - 1, its exact value and the lemma's trace bound."
    ),
    "ftrl_epochs": (
        "One row per dataset, method, epsilon and number of epochs: mean test and train "
        "MSE with SEs over independent trials, the batch, steps and step size the public "
        "rule chose, the difference to the same method at one epoch with its SE and z, "
        "the certified epsilon and the non-private OLS errors."
    ),
    "lev_gamma_sweep": (
        "One row per dataset, epsilon and mixing level gamma of IHM: gamma, gamma / "
        "gamma_exact, the code's factor, mean train MSE with its SE over trials, and the "
        "paired differences (common random numbers) to the exact gamma and to the next "
        "smaller gamma with their SEs, the certified epsilon, and the train MSE of OLS and "
        "of theta = 0."
    ),
    "ftrl_digits": (
        "Scaled-down analogue of Fig. 4 (digits, multinomial logistic regression): test "
        "accuracy per method and epsilon over independent trials (mean, SE), the paired "
        "difference to DP-SGD (and to amplified DP-SGD) at the same epsilon and trial with "
        "its SE and z, the noise multiplier, the multi-epoch sensitivity, nu, the certified "
        "epsilon, the learning rate (selected on a validation split read without noise, "
        "outside the guarantee, when a grid ran) and the non-private reference accuracy."
    ),
    "eps_grid": (
        "Train MSE per dataset, estimator and epsilon over independent trials: mean, "
        "standard deviation, standard error, 95% band (mean +/- 1.96 SE), median, and "
        "the non-private OLS train MSE."
    ),
    "benchmark": (
        "One row per dataset, method and epsilon: mean train and test MSE with standard "
        "errors over trials, the non-private OLS fit's on the same rows, the ratio of the "
        "scored error (test where the dataset has held-out rows) to OLS's, the rank among "
        "the private methods that ran, the ratio to the best, the hyperparameters the "
        "public rule chose, the budget certified (both units) and, for a method outside "
        "its regime, the reason it did not run."
    ),
    "iv_table": (
        "One row per dataset, method, epsilon and term (each endogenous regressor, then "
        "the intercept), in the codebook's original units: the mean, sd, SE (sd / sqrt of "
        "the releases) and median of the released coefficient, the non-private 2SLS value "
        "of the same rows, the bias and RMSE to it; per epsilon the mean distance of the "
        "regressors' coefficients to 2SLS with its SE, the RMSE with a delta-method SE, "
        "the budget (target and certified, both units), the rule's rho1, rho2 and T and, "
        "outside the guarantee, the mean clip fractions."
    ),
    "ci_coverage": (
        "Per estimator, target, n, d and epsilon: the coverage of the bootstrap intervals "
        "with its standard errors (from per-trial averages and binomial at the nominal "
        "level), the coverage of coordinate 0 alone, the mean width, the non-private OLS "
        "interval's width and coverage, and the coverage of the other target."
    ),
    "privacy_audit": (
        "One row per estimator, canary and claim: the neighbouring relation, the claim, "
        "trials per side, the claimed epsilon at delta, the audited lower bound "
        "(threshold test, Clopper-Pearson), the Gaussian-DP estimate mu with its "
        "interval against the claimed mu where the release is Gaussian, and the verdict."
    ),
}

#: What each extra view of a kind holds or draws (``StudyKind.views`` and ``view_figures``).
VIEW_DESCRIPTIONS: dict[tuple[str, str], str] = {
    ("benchmark", "leaderboard"): (
        "Leaderboard per epsilon: for each private method, the datasets it ran on, its mean "
        "rank by mean test MSE (1 = best) with the standard error across datasets, its wins, "
        "and the geometric mean over datasets of its test MSE divided by non-private "
        "OLS's, with a 95% band from the spread across datasets."
    ),
    ("benchmark", "profile"): (
        "The performance profile's curves as numbers: per epsilon, method and factor tau, "
        "the share of datasets on which the method's mean test MSE is within tau of the "
        "best private method's."
    ),
    ("benchmark", "recommendation"): (
        "Recommendation map: for each region of n/d and each epsilon, the private method "
        "with the best mean rank over the region's datasets, its mean rank and wins, the "
        "runner-up and its mean rank, and how many datasets are the evidence."
    ),
    ("benchmark", "heatmap"): (
        "log10 of each private method's mean test MSE over the best private method's on "
        "the same dataset (0: the best; the colour saturates at 1, ten times the best), per "
        "dataset (rows, ordered by n/d) and method (columns, by mean rank), one panel per "
        "epsilon; blank: not run (outside the method's regime). The ratios to non-private "
        "OLS are in the study table (column ratio)."
    ),
}

#: Kinds that run the lev2026 estimators on prepared datasets (their bounds matter).
_REGRESSION_DATA_KINDS = frozenset({"eps_grid", "lev_table2", "lev_gamma_sweep", "benchmark"})

_GENERIC_TABLE = (
    "Per grid cell, the aggregates over trials of what the figure draws (mean, standard "
    "error and the kind's own statistics); every column is deterministic."
)


def _rst_text(text: str) -> str:
    """Escape the characters that reStructuredText would read as markup."""
    for char in ("\\", "*", "|", "`"):
        text = text.replace(char, "\\" + char)
    return text


def _values(values: Any) -> str:
    if isinstance(values, Mapping):
        return "{" + ", ".join(f"{k}: {_values(v)}" for k, v in values.items()) + "}"
    values = values if isinstance(values, list) else [values]
    shown = [str(v) for v in values[:8]]
    more = f", ... ({len(values)} values)" if len(values) > 8 else ""
    return ", ".join(shown) + more


def _bounds_sentence(study: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    datasets = (study.get("grid") or {}).get("dataset") or (study.get("params") or {}).get(
        "dataset"
    )
    if datasets is None:
        return ""
    names = datasets if isinstance(datasets, list) else [datasets]
    specs = config.get("datasets") or {}
    derived = [
        n
        for n in names
        if ((specs.get(n) or {}).get("options") or {}).get("bounds") == "data_derived"
        or (specs.get(n) or {}).get("preprocessing") == "lev2026"
    ]
    if not derived:
        return (
            " Data bounds are public constants (docs/lev2026-data.md), inside the "
            "privacy guarantee."
        )
    if len(derived) == len(names):
        return (
            " Rows are scaled to max norm 1 and y to max abs(y) 1 with factors read off the "
            "data, as the authors' code does: these bounds are NOT private "
            "(docs/deviations.md)."
        )
    return (
        f" Datasets {', '.join(derived)} use bounds read off the data (NOT private, "
        "docs/deviations.md); the others use public bounds."
    )


def study_caption(
    name: str,
    config: Mapping[str, Any],
    what: Literal["figure", "table"] = "figure",
    view: str | None = None,
) -> str:
    """Return the report caption of one study's figure or table.

    Parameters
    ----------
    name : str
        The study's name (a key of ``config["studies"]``).
    config : mapping
        The whole workflow config (the study's datasets are looked up in it).
    what : {"figure", "table"}
        Which artifact the caption is for.
    view : str, optional
        An extra view of the study's kind (``StudyKind.views`` / ``view_figures``)
        instead of its main table or figure.

    Returns
    -------
    str
        reStructuredText: the study's title and name, its paper and kind, what the
        artifact shows, the grid and fixed parameters, the trials per cell and where
        the paper's claims are checked.

    Examples
    --------
    >>> cfg = {"studies": {"s": {"kind": "eps_grid", "paper": "lev2026", "title": "T",
    ...        "grid": {"epsilon": [0.1, 1]}, "params": {"trials": 10}}}}
    >>> print(study_caption("s", cfg).splitlines()[0])
    **T** (study ``s``, paper ``lev2026``, kind ``eps_grid``).
    """
    if what not in ("figure", "table"):
        raise ValueError(f"what must be 'figure' or 'table'; got {what!r}")
    study = config["studies"][name]
    kind, paper = study["kind"], study.get("paper", "")
    title = _rst_text(str(study.get("title") or name))
    lines = [f"**{title}** (study ``{name}``, paper ``{paper}``, kind ``{kind}``)."]
    if view is not None:
        text = VIEW_DESCRIPTIONS.get((kind, view))
        if text is None:
            raise KeyError(f"no description for view {view!r} of kind {kind!r} (captions.py)")
    elif what == "figure":
        text = FIGURE_DESCRIPTIONS.get(kind)
        if text is None:
            raise KeyError(f"no figure description for study kind {kind!r} (captions.py)")
    else:
        text = TABLE_DESCRIPTIONS.get(kind, _GENERIC_TABLE)
    lines.append("")
    bounds = _bounds_sentence(study, config) if kind in _REGRESSION_DATA_KINDS else ""
    lines.append(text + bounds)
    grid = study.get("grid") or {}
    params = study.get("params") or {}
    lines.append("")
    if grid:
        axes = "; ".join(f"{axis}: {_values(v)}" for axis, v in grid.items())
        lines.append(f"Grid ({axis_count(grid)} cells): {axes}.")
    else:
        lines.append("One cell (no grid).")
    fixed = {k: v for k, v in params.items() if k not in ("title",)}
    if fixed:
        shown = ", ".join(f"{k}={_values(v)}" for k, v in sorted(fixed.items()))
        lines.append(f"Fixed: {shown}.")
    if "trials" in study:
        lines.append(f"Trials per cell: {study['trials']}.")
    lines.append(
        f"Claims of this paper are checked in ``results/tables/{paper}/claims/`` (rows with "
        f"study ``{name}``); per-trial rows in ``results/tables/{paper}/{name}.trials.parquet``."
    )
    return "\n".join(lines)


def axis_count(grid: Mapping[str, Any]) -> int:
    """Return the number of cells of a grid (the product of its axes' lengths)."""
    count = 1
    for values in grid.values():
        count *= len(values) if isinstance(values, list) else 1
    return count
