r"""Liang et al. (2025) on synthetic data: study kind ``iv_synthetic``.

The synthetic DGP of Section 4.1 (docs/notes/liang2025.md §5.1) with Algorithm 1
(DP-2S-GD), Algorithm 3 (DP-2S-GD-beta), Algorithm 2 (2S-GD) or closed-form 2SLS. Serves
Fig. 3a/3b (error against ``n``), Fig. 4a/4b (error against ``T``), Fig. 6 (Alg. 1
against Alg. 3 over ``T``) and Fig. 7 (2S-GD against 2SLS over ``n``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg.data.datasets import Dataset
from dpreg.data.synthetic import IVLinearDGP, draw_iv_truth_batch, sample_iv_batch
from dpreg.estimators.ols import two_sls
from dpreg.experiments.liang2025_common import (
    CALIBRATIONS,
    _bool,
    _choice,
    _float,
    _int,
    budget_row,
    budget_spent_rho,
    clip_stats,
    iv_estimators,
    parse_rho,
    scalar_diag,
)
from dpreg.experiments.study_kind import StudyKind
from dpreg.theory import iv as theory

__all__ = [
    "ALGORITHMS",
    "IV_SYNTHETIC",
    "SYNTHETIC_DESIGN_COLUMNS",
    "SYNTHETIC_METRICS",
    "check_iv_synthetic_cell",
    "run_iv_synthetic",
    "summarise_iv_synthetic",
]

ALGORITHMS: tuple[str, ...] = ("dp_2s_gd", "dp_2s_gd_beta", "2s_gd", "2sls")
"""Algorithm 1, Algorithm 3, Algorithm 2 and closed-form 2SLS (eq. 2)."""

DEFAULT_TRUTH_SEED = 2025
MEMORY_BUDGET_BYTES = 3 * 10**8
"""Approximate working memory of one vectorised block of trials (data and gradients)."""


SYNTHETIC_REQUIRED = frozenset({"algorithm", "n", "p", "q", "T"})
SYNTHETIC_OPTIONAL = frozenset(
    {
        "r",
        "rho_split",
        "rho1",
        "rho2",
        "calibration",
        "c0",
        "tau",
        "clip",
        "clip_theta",
        "clip_beta",
        "steps",
        "eta",
        "alpha",
        "alpha_scale",
        "truth_seed",
        "redraw_truth",
        "instrument_strength",
        "delta",
        "conversion",
        "metric",
        "t_max_line",
        "eps_exponent",
    }
)
SYNTHETIC_KEYS = SYNTHETIC_REQUIRED | SYNTHETIC_OPTIONAL
"""Cell keys of ``iv_synthetic`` (see :func:`run_iv_synthetic`)."""

SYNTHETIC_METRICS: tuple[str, ...] = (
    "err_hat",
    "err_true",
    "err_2sls",
    "clip_frac_theta_mean",
    "clip_frac_theta_last",
    "clip_frac_beta_mean",
    "clip_frac_beta_last",
)
"""Per-trial metrics of ``iv_synthetic`` summarised by :func:`summarise_iv_synthetic`."""

SYNTHETIC_DESIGN_COLUMNS: tuple[str, ...] = (
    "algorithm",
    "n",
    "p",
    "q",
    "r",
    "T",
    "rho1",
    "rho2",
    "rho",
    "epsilon",
    "delta",
    "conversion",
    "calibration",
    "c0",
    "tau",
    "clip_rule",
    "steps",
    "alpha_scale",
    "truth_seed",
    "redraw_truth",
    "instrument_strength",
)
"""Columns identifying a cell in the summary table (grouping keys)."""


@dataclass(frozen=True)
class _SyntheticSpec:
    algorithm: str
    n: int
    p: int
    q: int
    r: int
    T: int
    rho1: float
    rho2: float
    calibration: str
    c0: float
    tau: float
    clip_theta: float | None
    clip_beta: float | None
    steps: str
    eta: float | None
    alpha: float | None
    alpha_scale: float
    truth_seed: int
    redraw_truth: bool
    strength: float
    metric: str
    t_max_line: bool
    eps_exponent: float

    @property
    def clip_rule(self) -> str:
        return "explicit" if self.clip_theta is not None else "c0_formula"


def _synthetic_spec(cell: Mapping[str, Any]) -> _SyntheticSpec:
    algorithm = _choice(cell.get("algorithm"), "algorithm", ALGORITHMS)
    n, p, q = (
        _int(cell.get("n"), "n", minimum=2),
        _int(cell.get("p"), "p"),
        _int(cell.get("q"), "q"),
    )
    if q < p:
        raise ValueError(f"need q >= p instruments (Assumption 1); got p={p}, q={q}")
    if n <= q:
        raise ValueError(f"need n > q rows for 2SLS; got n={n}, q={q}")
    r = _int(cell.get("r", p), "r")
    T = _int(cell.get("T"), "T")
    rho1, rho2 = parse_rho(cell)
    if algorithm == "dp_2s_gd_beta":
        rho1 = math.inf  # no first-stage noise (Algorithm 3)
    elif algorithm in ("2s_gd", "2sls"):
        rho1 = rho2 = math.inf
    clip = cell.get("clip")
    clip_theta = cell.get("clip_theta", clip)
    clip_beta = cell.get("clip_beta", clip)
    if (clip_theta is None) != (clip_beta is None):
        raise ValueError("give both clip_theta and clip_beta (or clip for both), or neither")
    if clip is not None and ("clip_theta" in cell or "clip_beta" in cell):
        raise ValueError("give clip (both stages) or clip_theta/clip_beta, not both")
    steps = _choice(cell.get("steps", "population"), "steps", ("population", "fixed"))
    eta = None if cell.get("eta") is None else _float(cell["eta"], "eta")
    alpha = None if cell.get("alpha") is None else _float(cell["alpha"], "alpha")
    if steps == "fixed" and (eta is None or alpha is None):
        raise ValueError("steps: fixed needs both eta and alpha")
    if "alpha_scale" in cell and alpha is not None:
        raise ValueError("alpha_scale scales the population alpha; do not give alpha too")
    return _SyntheticSpec(
        algorithm=algorithm,
        n=n,
        p=p,
        q=q,
        r=r,
        T=T,
        rho1=rho1,
        rho2=rho2,
        calibration=_choice(cell.get("calibration", "exact"), "calibration", CALIBRATIONS),
        c0=_float(cell.get("c0", 1.0), "c0"),
        tau=_float(cell.get("tau", 1.0), "tau"),
        clip_theta=None if clip_theta is None else _float(clip_theta, "clip_theta"),
        clip_beta=None if clip_beta is None else _float(clip_beta, "clip_beta"),
        steps=steps,
        eta=eta,
        alpha=alpha,
        alpha_scale=_float(cell.get("alpha_scale", 1.0), "alpha_scale"),
        truth_seed=_int(cell.get("truth_seed", DEFAULT_TRUTH_SEED), "truth_seed", minimum=0),
        redraw_truth=_bool(cell.get("redraw_truth", False), "redraw_truth"),
        strength=_float(
            cell.get("instrument_strength", 5.0), "instrument_strength", positive=False
        ),
        metric=_choice(cell.get("metric", "err_hat"), "metric", ("err_hat", "err_true", "both")),
        t_max_line=_bool(cell.get("t_max_line", False), "t_max_line"),
        eps_exponent=_float(cell.get("eps_exponent", 0.0), "eps_exponent", positive=False),
    )


def check_iv_synthetic_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``iv_synthetic`` cell (raises ``ValueError`` naming the key)."""
    spec = _synthetic_spec(cell)
    budget_row(1.0, 1.0, cell)
    theory.t_max(spec.n, spec.p, spec.q, 1.0, tau=spec.tau, eps_exponent=spec.eps_exponent)


def _steps_for(spec: _SyntheticSpec, Theta: np.ndarray) -> tuple[float, float]:
    if spec.eta is not None and spec.alpha is not None:
        return spec.eta, spec.alpha
    eta, alpha = iv_estimators().population_step_sizes(Theta)
    return (
        float(eta) if spec.eta is None else spec.eta,
        spec.alpha_scale * float(alpha) if spec.alpha is None else spec.alpha,
    )


def _clips_for(spec: _SyntheticSpec) -> tuple[float, float]:
    if spec.clip_theta is not None and spec.clip_beta is not None:
        return spec.clip_theta, spec.clip_beta
    gamma = float(
        iv_estimators().default_clip_threshold(spec.n, spec.q, spec.T, c0=spec.c0, tau=spec.tau)
    )
    return gamma, gamma


def _block_size(spec: _SyntheticSpec, trials: int) -> int:
    per_trial = 8 * spec.n * (2 * spec.q + 3 * spec.p + spec.r + 4) * 2
    per_trial += 8 * spec.T * 4  # clip fractions and paths of beta
    return max(1, min(trials, MEMORY_BUDGET_BYTES // max(per_trial, 1)))


def _fit_block(
    spec: _SyntheticSpec,
    Z: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    *,
    eta: float,
    alpha: float,
    clip_theta: float,
    clip_beta: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, dict[str, np.ndarray], float]:
    """Run one algorithm on a block of data sets; return beta^(T), diagnostics, rho spent."""
    k = Z.shape[0]
    iv = iv_estimators()
    common = {"T": spec.T, "step_theta": eta, "step_beta": alpha, "trials": k}
    if spec.algorithm == "2s_gd":
        fit = iv.fit_two_stage_gd(Z, X, y, return_path=False, **common)
    elif spec.algorithm == "dp_2s_gd":
        fit = iv.fit_dp_two_stage_gd(
            Z,
            X,
            y,
            rho1=spec.rho1,
            rho2=spec.rho2,
            rng=rng,
            clip_theta=clip_theta,
            clip_beta=clip_beta,
            calibration=spec.calibration,
            return_path=False,
            **common,
        )
    else:
        fit = iv.fit_dp_two_stage_gd_beta(
            Z,
            X,
            y,
            rho2=spec.rho2,
            rng=rng,
            clip_beta=clip_beta,
            calibration=spec.calibration,
            return_path=False,
            **common,
        )
    diag = fit.diagnostics
    clips = fit.nonprivate_diagnostics  # clip fractions: outside the guarantee
    out: dict[str, np.ndarray] = {}
    out["clip_frac_theta_mean"], out["clip_frac_theta_last"] = clip_stats(
        clips, "clip_fraction_theta", k
    )
    out["clip_frac_beta_mean"], out["clip_frac_beta_last"] = clip_stats(
        clips, "clip_fraction_beta", k
    )
    out["lambda1"] = scalar_diag(diag, "lambda1", k)
    out["lambda2"] = scalar_diag(diag, "lambda2", k)
    return np.asarray(fit.theta, dtype=np.float64).reshape(k, -1), out, budget_spent_rho(fit)


def run_iv_synthetic(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    r"""Run one seed block of trials of an ``iv_synthetic`` cell (Figs. 3, 4, 6, 7).

    The paper's protocol is docs/notes/liang2025.md §5. The workflow calls this once per
    seed block (:func:`dpreg.experiments.studies.run_chunk`), so a trial's draws depend
    on its block's seed only, never on how the blocks are grouped into chunks.

    Parameters
    ----------
    cell : mapping
        Required keys: ``algorithm`` (``dp_2s_gd`` = Alg. 1, ``dp_2s_gd_beta`` = Alg. 3,
        ``2s_gd`` = Alg. 2, ``2sls`` = closed form), ``n``, ``p``, ``q``, ``T``.
        Optional keys and defaults:

        * ``r`` (= ``p``): confounder dimension;
        * ``rho_split: [rho1, rho2]`` or ``rho1``, ``rho2`` (``inf``); ignored where an
          algorithm adds no noise in a stage (recorded as ``inf``);
        * ``calibration`` (``"exact"``; ``"paper"`` uses Prop. 3.1's
          :math:`\lambda_k = 2\gamma_k\sqrt{T/\rho_k}/n`);
        * clipping: ``c0`` (1) and ``tau`` (1) in
          :math:`\gamma = c_0(\sqrt q + \sqrt{\tau + \log nT})^2` (eq. 4,
          docs/notes/liang2025.md P2), or explicit ``clip`` (both stages) /
          ``clip_theta`` and ``clip_beta``;
        * ``steps`` (``"population"``: ``population_step_sizes`` of the true
          :math:`\Theta`, docs/notes/liang2025.md P1; ``"fixed"`` needs ``eta`` and
          ``alpha``); an explicit ``eta`` or ``alpha`` overrides the population value;
          ``alpha_scale`` (1) multiplies the population :math:`\alpha = 2/(\|\Theta\|^2 +
          \sigma_{\min}^2)`, which sits at the edge of stability
          (:math:`\alpha\|\Theta\|^2 \to 2` for ill-conditioned :math:`\Theta`) so that
          sampling fluctuations of :math:`Z^\top Z/n` can make 2S-GD diverge;
        * ``truth_seed`` (2025): the ground truth :math:`(\beta, \Theta, \Phi, \phi)` is
          drawn once per ``(p, q, r, truth_seed)`` with
          :meth:`~dpreg.data.synthetic.IVLinearDGP.draw`; ``redraw_truth`` (false)
          draws a fresh truth per trial instead (docs/notes/liang2025.md P12);
        * ``instrument_strength`` (5): the ``5`` of :math:`\Theta = 5I + E`;
        * ``delta`` (1e-5) and ``conversion`` (the workflow's) for ``epsilon``;
        * ``metric`` (``"err_hat"``; ``"err_true"`` for Fig. 7; ``"both"``) and ``t_max_line``
          (false): what the figure draws; ``eps_exponent`` (0) of condition (5).
    trials : int
        Trials of this seed block (vectorised; data sets and DP noise are redrawn per
        trial).
    first_trial : int
        Global index of the block's first trial.
    seed : int
        Seed of the block (:func:`dpreg.seeds.block_seed` of the study, the cell and the
        block index). Two independent child generators are spawned from it: one draws
        the data sets (and the ground truths when ``redraw_truth`` is set), the other
        the DP noise, trial after trial.
    data : None
        Unused (synthetic).

    Returns
    -------
    DataFrame
        One row per trial: ``trial``, ``seed``, the design columns
        (:data:`SYNTHETIC_DESIGN_COLUMNS`), budget columns (``rho_claimed``,
        ``rho_certified``), metrics :data:`SYNTHETIC_METRICS` --
        ``err_hat`` :math:`=\|\beta^{(T)} - \hat\beta\|` (2SLS of the trial's data),
        ``err_true`` :math:`=\|\beta^{(T)} - \beta\|`, ``err_2sls``
        :math:`=\|\hat\beta - \beta\|`, clip fractions of both stages (mean over the
        ``T`` steps and at the last step) -- and the settings ``eta``, ``alpha``,
        ``clip_theta``, ``clip_beta``, ``lambda1``, ``lambda2``, ``kappa`` (population
        contraction rate, docs/notes/liang2025.md §4.1), ``sigma_min_theta``, ``norm_theta``,
        ``T_max_theory`` (condition (5), unit constant), ``n_min_theory`` (smallest
        ``n`` with ``T <= T_max``). No timings: per-trial rows are deterministic.
    """
    spec = _synthetic_spec(cell)
    trials = _int(trials, "trials")
    data_rng, noise_rng = np.random.default_rng(seed).spawn(2)

    shared = None
    if not spec.redraw_truth:
        dgp = IVLinearDGP.draw(
            rng=np.random.default_rng(spec.truth_seed),
            p=spec.p,
            q=spec.q,
            r=spec.r,
            instrument_strength=spec.strength,
        )
        shared = dgp.truth_batch()

    clip_theta, clip_beta = _clips_for(spec)
    if spec.algorithm == "2sls":
        clip_theta = clip_beta = math.nan
    block = 1 if (spec.redraw_truth and spec.steps == "population") else _block_size(spec, trials)

    cols: dict[str, list[np.ndarray]] = {}

    def add(name: str, values: Any, k: int) -> None:
        cols.setdefault(name, []).append(np.broadcast_to(np.asarray(values), (k,)).copy())

    rho_spent = math.inf
    for lo in range(0, trials, block):
        k = min(block, trials - lo)
        if shared is None:
            truth = draw_iv_truth_batch(
                data_rng, p=spec.p, q=spec.q, r=spec.r, trials=k, instrument_strength=spec.strength
            )
        else:
            truth = shared
        Z, X, y = sample_iv_batch(truth, n=spec.n, trials=k, rng=data_rng)
        beta_hat = two_sls(Z=Z, X=X, y=y)
        beta = np.broadcast_to(truth["beta"], (k, spec.p))
        Theta0 = truth["Theta"][0]
        eta, alpha = _steps_for(spec, Theta0) if spec.algorithm != "2sls" else (math.nan,) * 2
        if spec.algorithm == "2sls":
            beta_T = beta_hat
            nan = np.full(k, np.nan)
            extra = {
                "clip_frac_theta_mean": nan,
                "clip_frac_theta_last": nan,
                "clip_frac_beta_mean": nan,
                "clip_frac_beta_last": nan,
                "lambda1": nan,
                "lambda2": nan,
            }
        else:
            beta_T, extra, rho_spent = _fit_block(
                spec,
                Z,
                X,
                y,
                eta=eta,
                alpha=alpha,
                clip_theta=clip_theta,
                clip_beta=clip_beta,
                rng=noise_rng,
            )
        add("err_hat", np.linalg.norm(beta_T - beta_hat, axis=1), k)
        add("err_true", np.linalg.norm(beta_T - beta, axis=1), k)
        add("err_2sls", np.linalg.norm(beta_hat - beta, axis=1), k)
        for key, v in extra.items():
            add(key, v, k)
        sv = np.linalg.svd(truth["Theta"], compute_uv=False)
        add("sigma_min_theta", sv[:, -1], k)
        add("norm_theta", sv[:, 0], k)
        add("eta", eta, k)
        add("alpha", alpha, k)
        if spec.algorithm == "2sls":
            add("kappa", math.nan, k)
        else:
            # Population contraction rate (docs/notes/liang2025.md §4.1), vectorised over
            # the truths.
            s_min2, s_max2 = sv[:, -1] ** 2, sv[:, 0] ** 2
            kap = np.maximum.reduce(
                [
                    np.full_like(s_min2, abs(1.0 - eta)),
                    np.abs(1.0 - alpha * s_min2 / 2.0),
                    np.abs(1.0 - alpha * (2.0 * s_max2 + s_min2) / 2.0),
                ]
            )
            add("kappa", kap, k)
        del Z, X, y

    budget = budget_row(spec.rho1, spec.rho2, cell)
    if spec.algorithm == "dp_2s_gd_beta":
        # Lemma F.1, unsupported under replace-one (docs/notes/liang2025.md P8)
        rho_claimed = spec.rho2
    else:
        rho_claimed = spec.rho1 + spec.rho2
    frame = pd.DataFrame(
        {
            "trial": np.arange(first_trial, first_trial + trials, dtype=np.int64),
            "seed": np.full(trials, seed, dtype=np.uint64),
            "algorithm": spec.algorithm,
            "n": spec.n,
            "p": spec.p,
            "q": spec.q,
            "r": spec.r,
            "T": spec.T,
            **budget,
            "rho_claimed": rho_claimed,
            "rho_certified": rho_spent,
            "calibration": spec.calibration,
            "c0": spec.c0,
            "tau": spec.tau,
            "clip_rule": spec.clip_rule,
            "clip_theta": clip_theta,
            "clip_beta": clip_beta,
            "steps": spec.steps,
            "alpha_scale": spec.alpha_scale,
            "truth_seed": spec.truth_seed,
            "redraw_truth": spec.redraw_truth,
            "instrument_strength": spec.strength,
            "metric": spec.metric,
            "t_max_line": spec.t_max_line,
        }
    )
    for name, parts in cols.items():
        frame[name] = np.concatenate(parts)
    frame["T_max_theory"] = theory.t_max(
        spec.n, spec.p, spec.q, spec.rho1, tau=spec.tau, eps_exponent=spec.eps_exponent
    )
    frame["n_min_theory"] = theory.n_min_for_T(
        spec.T, spec.p, spec.q, spec.rho1, tau=spec.tau, eps_exponent=spec.eps_exponent
    )
    return frame


def _describe(values: pd.Series, prefix: str) -> dict[str, float]:
    v = values.to_numpy(dtype=np.float64)
    v = v[~np.isnan(v)]
    m = v.size
    if m == 0:
        return {f"{prefix}_{s}": math.nan for s in ("mean", "se", "sd", "median", "q25", "q75")}
    sd = float(np.std(v, ddof=1)) if m > 1 else math.nan
    q25, med, q75 = np.quantile(v, [0.25, 0.5, 0.75])
    return {
        f"{prefix}_mean": float(np.mean(v)),
        f"{prefix}_se": sd / math.sqrt(m) if m > 1 else math.nan,
        f"{prefix}_sd": sd,
        f"{prefix}_median": float(med),
        f"{prefix}_q25": float(q25),
        f"{prefix}_q75": float(q75),
    }


def summarise_iv_synthetic(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    """Aggregate ``iv_synthetic`` trials per cell (Figs. 3, 4, 6, 7: mean ± SE over runs).

    Parameters
    ----------
    runs : DataFrame
        Rows of :func:`run_iv_synthetic` (any number of seed blocks and cells).
    references : sequence of mapping
        Unused (the 2SLS reference is computed per trial).

    Returns
    -------
    DataFrame
        One row per cell (:data:`SYNTHETIC_DESIGN_COLUMNS` present in ``runs``):
        ``trials``; for every metric in :data:`SYNTHETIC_METRICS` its ``_mean``,
        ``_se`` (sd / sqrt(trials), the paper's bars), ``_sd``, ``_median``, ``_q25``,
        ``_q75``; the deterministic settings ``clip_theta``, ``clip_beta``,
        ``lambda1``, ``lambda2``, ``eta``, ``alpha``, ``kappa`` (means),
        ``sigma_min_theta``; ``T_max_theory``, ``n_min_theory``, ``metric``,
        ``t_max_line``. No timings (deterministic).
    """
    keys = [c for c in SYNTHETIC_DESIGN_COLUMNS if c in runs.columns]
    rows = []
    for group, part in runs.groupby(keys, sort=True, dropna=False):
        row = dict(zip(keys, group, strict=True))
        row["trials"] = int(len(part))
        for metric in SYNTHETIC_METRICS:
            row.update(_describe(part[metric], metric))
        for col in (
            "clip_theta",
            "clip_beta",
            "lambda1",
            "lambda2",
            "eta",
            "alpha",
            "kappa",
            "sigma_min_theta",
            "norm_theta",
            "rho_claimed",
            "rho_certified",
            "T_max_theory",
            "n_min_theory",
        ):
            vals = part[col].to_numpy(dtype=np.float64)
            row[col] = float(np.mean(vals)) if not np.isnan(vals).all() else math.nan
        row["metric"] = str(part["metric"].iloc[0])
        row["t_max_line"] = bool(part["t_max_line"].iloc[0])
        rows.append(row)
    return pd.DataFrame(rows)


def _figure_synthetic(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.liang2025 import plot_iv_synthetic

    return plot_iv_synthetic(table, title=title)


IV_SYNTHETIC = StudyKind(
    name="iv_synthetic",
    run=run_iv_synthetic,
    summarise=summarise_iv_synthetic,
    figure=_figure_synthetic,
    required=SYNTHETIC_REQUIRED,
    optional=SYNTHETIC_OPTIONAL,
    check_cell=check_iv_synthetic_cell,
)
