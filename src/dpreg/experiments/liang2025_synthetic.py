r"""Liang et al. (2025) on synthetic data: study kind ``iv_synthetic``.

The synthetic DGP of Section 4.1 (docs/notes/liang2025.md §5.1;
:class:`~dpreg.data.synthetic.IVLinearDGP`, drawn in batches by
:func:`~dpreg.data.synthetic.draw_iv_truth_batch` and
:func:`~dpreg.data.synthetic.sample_iv_batch`) with Algorithm 1 (DP-2S-GD), Algorithm 3
(DP-2S-GD-beta), Algorithm 2 (2S-GD) or closed-form 2SLS (eq. 2). Serves Fig. 3a/3b
(error against ``n``), Fig. 4a/4b (error against ``T``), Fig. 6 (Alg. 1 against Alg. 3
over ``T``) and Fig. 7 (2S-GD against 2SLS over ``n``); the paper's protocol is
docs/notes/liang2025.md §5.

A cell's keys, types and defaults are :class:`IVSyntheticParams` (tabulated in
``config/README.md``); :func:`check_iv_synthetic_cell` adds the rules across keys. The
budget columns of a row are described in :mod:`dpreg.experiments.liang2025_common`.
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
    budget_row,
    budget_spent_rho,
    check_budget_keys,
    clip_stats,
    finite,
    half_open_interval,
    iv_estimators,
    scalar_diag,
    stage_budgets,
    trial_count,
    zcdp_level,
)
from dpreg.experiments.params import (
    KindParams,
    at_least,
    choice,
    nonnegative,
    open_interval,
    param,
    positive_finite,
    positive_integer,
)
from dpreg.experiments.study_kind import StudyKind
from dpreg.privacy.conversions import CONVERSIONS, DEFAULT_CONVERSION
from dpreg.theory import iv as theory

__all__ = [
    "ALGORITHMS",
    "IVSyntheticParams",
    "IV_SYNTHETIC",
    "SYNTHETIC_DESIGN_COLUMNS",
    "SYNTHETIC_METRICS",
    "check_iv_synthetic_cell",
    "run_iv_synthetic",
    "summarise_iv_synthetic",
]

ALGORITHMS: tuple[str, ...] = ("dp_2s_gd", "dp_2s_gd_beta", "2s_gd", "2sls")
"""Algorithm 1, Algorithm 3, Algorithm 2 and closed-form 2SLS (eq. 2)."""

MEMORY_BUDGET_BYTES = 3 * 10**8
"""Approximate working memory of one vectorised block of trials (data and gradients)."""

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
class IVSyntheticParams(KindParams):
    r"""Cell keys of the ``iv_synthetic`` kind (Section 4.1; Figs. 3, 4, 6, 7).

    Besides the keys, the derived settings of a cell: :attr:`confounders`,
    :meth:`stage_budgets`, :meth:`explicit_clips` and :attr:`clip_rule`.
    """

    kind = "iv_synthetic"
    algorithm: str = param(
        doc="`dp_2s_gd` (Algorithm 1, DP-2S-GD), `dp_2s_gd_beta` (Algorithm 3),"
        " `2s_gd` (Algorithm 2, non-private) or `2sls` (closed form, eq. 2)",
        check=choice(*ALGORITHMS),
    )
    n: int = param(doc="rows n of each data set (n > q)", check=at_least(2))
    p: int = param(doc="endogenous regressors p (length of beta)", check=positive_integer)
    q: int = param(doc="instruments q (q >= p, Assumption 1)", check=positive_integer)
    T: int = param(doc="iterations T of the gradient descent", check=positive_integer)
    r: int | None = param(
        None, doc="confounder dimension r of u (none: r = p)", check=positive_integer
    )
    rho_split: list[float | str] | None = param(
        None,
        doc="the budget as a pair [rho1, rho2] (instead of `rho1`, `rho2`)",
        check=zcdp_level,
    )
    rho1: float | str = param(
        math.inf,
        doc="zCDP budget rho1 of the first stage (Theta); recorded as inf where the"
        " algorithm adds no first-stage noise (Algorithms 2, 3, 2SLS)",
        check=zcdp_level,
    )
    rho2: float | str = param(
        math.inf,
        doc="zCDP budget rho2 of the second stage (beta); recorded as inf for 2S-GD and 2SLS",
        check=zcdp_level,
    )
    calibration: str = param(
        "exact",
        doc="noise of the DP algorithms: `exact` (their own accounting) or `paper`"
        " (Prop. 3.1's lambda_k = 2 gamma_k sqrt(T/rho_k)/n, sqrt 2 more noise,"
        " docs/notes/liang2025.md §3.1)",
        check=choice(*CALIBRATIONS),
    )
    c0: float = param(
        1.0,
        doc="c0 of the clip threshold gamma = c0 (sqrt q + sqrt(tau + log nT))^2"
        " (eq. 4, docs/notes/liang2025.md P2)",
        check=positive_finite,
    )
    tau: float = param(
        1.0, doc="tau of the clip threshold (eq. 4) and of condition (5)", check=positive_finite
    )
    clip: float | None = param(
        None,
        doc="explicit clip threshold of both stages (instead of the eq. 4 formula)",
        check=positive_finite,
    )
    clip_theta: float | None = param(
        None,
        doc="explicit first-stage clip threshold gamma_1 (with `clip_beta`)",
        check=positive_finite,
    )
    clip_beta: float | None = param(
        None,
        doc="explicit second-stage clip threshold gamma_2 (with `clip_theta`)",
        check=positive_finite,
    )
    steps: str = param(
        "population",
        doc="`population`: eta = 1, alpha = 2/(‖Theta‖^2 + sigma_min(Theta)^2) of the true"
        " Theta (docs/notes/liang2025.md P1); `fixed`: `eta` and `alpha` given",
        check=choice("population", "fixed"),
    )
    eta: float | None = param(
        None,
        doc="step size eta of the first stage (Algorithm 1); overrides the population value",
        check=positive_finite,
    )
    alpha: float | None = param(
        None,
        doc="step size alpha of the second stage (Algorithm 1); overrides the population value",
        check=positive_finite,
    )
    alpha_scale: float = param(
        1.0,
        doc="factor on the population alpha, which sits at the edge of stability"
        " (Fig. 7 uses 0.5); not with `alpha`",
        check=positive_finite,
    )
    truth_seed: int = param(
        2025,
        doc="seed of the ground truth (beta, Theta, Phi, phi), drawn once per (p, q, r,"
        " truth_seed) by `IVLinearDGP.draw`",
        check=nonnegative,
    )
    redraw_truth: bool = param(
        False,
        doc="draw a fresh ground truth per trial instead (docs/notes/liang2025.md P12)",
    )
    instrument_strength: float = param(
        5.0, doc="s of Theta = s I + E (5 in Section 4.1)", check=finite
    )
    delta: float = param(
        1e-5, doc="delta of the recorded epsilon of rho1 + rho2", check=open_interval(0, 1)
    )
    conversion: str = param(
        DEFAULT_CONVERSION,
        doc="zCDP to (epsilon, delta) conversion of the recorded epsilon (the workflow"
        " sets the config's `conversion`)",
        check=choice(*CONVERSIONS),
    )
    metric: str = param(
        "err_hat",
        doc="what the figure draws: `err_hat` (distance to the same-sample 2SLS),"
        " `err_true` (to the true beta, Fig. 7) or `both`",
        check=choice("err_hat", "err_true", "both"),
    )
    t_max_line: bool = param(False, doc="draw T_max of condition (5) in the figure")
    eps_exponent: float = param(
        0.0,
        doc="the epsilon exponent of condition (5) (docs/notes/liang2025.md P15)",
        check=half_open_interval(0, 2),
    )

    @property
    def confounders(self) -> int:
        """The confounder dimension ``r`` (``p`` when not given)."""
        return self.p if self.r is None else self.r

    def stage_budgets(self) -> tuple[float, float]:
        """Return ``(rho1, rho2)`` as run: ``inf`` in a stage the algorithm adds no noise to.

        Algorithm 3 has no first-stage noise; 2S-GD and 2SLS none at all.
        """
        rho1, rho2 = stage_budgets(rho_split=self.rho_split, rho1=self.rho1, rho2=self.rho2)
        if self.algorithm == "dp_2s_gd_beta":
            rho1 = math.inf
        elif self.algorithm in ("2s_gd", "2sls"):
            rho1 = rho2 = math.inf
        return rho1, rho2

    def explicit_clips(self) -> tuple[float, float] | None:
        """Return the explicit ``(clip_theta, clip_beta)``, or ``None`` for the eq. 4 rule."""
        clip_theta = self.clip if self.clip_theta is None else self.clip_theta
        clip_beta = self.clip if self.clip_beta is None else self.clip_beta
        if clip_theta is None or clip_beta is None:
            return None
        return float(clip_theta), float(clip_beta)

    @property
    def clip_rule(self) -> str:
        """``"explicit"`` (given thresholds) or ``"c0_formula"`` (eq. 4)."""
        return "c0_formula" if self.explicit_clips() is None else "explicit"


def _checked_params(cell: Mapping[str, Any]) -> IVSyntheticParams:
    """Return the typed parameters of a cell after the checks across keys."""
    P = IVSyntheticParams.from_cell(cell)
    kind = P.kind
    check_budget_keys(kind, set(cell), rho_split=P.rho_split)
    if P.q < P.p:
        raise ValueError(f"{kind}: need q >= p instruments (Assumption 1); got p={P.p}, q={P.q}")
    if P.n <= P.q:
        raise ValueError(f"{kind}: need n > q rows for 2SLS; got n={P.n}, q={P.q}")
    if P.clip is not None and (P.clip_theta is not None or P.clip_beta is not None):
        raise ValueError(f"{kind}: give clip (both stages) or clip_theta/clip_beta, not both")
    if (P.clip_theta is None) != (P.clip_beta is None):
        raise ValueError(
            f"{kind}: give both clip_theta and clip_beta (or clip for both), or neither"
        )
    if P.steps == "fixed" and (P.eta is None or P.alpha is None):
        raise ValueError(f"{kind}: steps: fixed needs both eta and alpha")
    if "alpha_scale" in cell and P.alpha is not None:
        raise ValueError(f"{kind}: alpha_scale scales the population alpha; do not give alpha too")
    budget_row(1.0, 1.0, delta=P.delta, conversion=P.conversion)
    theory.t_max(P.n, P.p, P.q, 1.0, tau=float(P.tau), eps_exponent=float(P.eps_exponent))
    return P


def check_iv_synthetic_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``iv_synthetic`` cell: its typed spec, then the rules across keys.

    ``rho_split`` or ``rho1``/``rho2``, not both (and never ``rho``); ``q >= p``;
    ``n > q``; ``clip`` or the pair ``clip_theta``/``clip_beta``; ``steps: fixed`` with
    ``eta`` and ``alpha``; ``alpha_scale`` without ``alpha``; ``conversion`` and
    condition (5)'s arguments as :func:`dpreg.theory.iv.t_max` takes them. Raises
    ``ValueError`` naming the kind and the key.
    """
    _checked_params(cell)


def _steps_for(P: IVSyntheticParams, Theta: np.ndarray) -> tuple[float, float]:
    if P.eta is not None and P.alpha is not None:
        return float(P.eta), float(P.alpha)
    eta, alpha = iv_estimators().population_step_sizes(Theta)
    return (
        float(eta) if P.eta is None else float(P.eta),
        float(P.alpha_scale) * float(alpha) if P.alpha is None else float(P.alpha),
    )


def _clips_for(P: IVSyntheticParams) -> tuple[float, float]:
    explicit = P.explicit_clips()
    if explicit is not None:
        return explicit
    gamma = float(
        iv_estimators().default_clip_threshold(P.n, P.q, P.T, c0=float(P.c0), tau=float(P.tau))
    )
    return gamma, gamma


def _block_size(P: IVSyntheticParams, trials: int) -> int:
    per_trial = 8 * P.n * (2 * P.q + 3 * P.p + P.confounders + 4) * 2
    per_trial += 8 * P.T * 4  # clip fractions and paths of beta
    return max(1, min(trials, MEMORY_BUDGET_BYTES // max(per_trial, 1)))


def _fit_block(
    P: IVSyntheticParams,
    Z: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    *,
    rho1: float,
    rho2: float,
    eta: float,
    alpha: float,
    clip_theta: float,
    clip_beta: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, dict[str, np.ndarray], float]:
    """Run one algorithm on a block of data sets; return beta^(T), diagnostics, rho spent."""
    k = Z.shape[0]
    iv = iv_estimators()
    common = {"T": P.T, "step_theta": eta, "step_beta": alpha, "trials": k}
    if P.algorithm == "2s_gd":
        fit = iv.fit_two_stage_gd(Z, X, y, return_path=False, **common)
    elif P.algorithm == "dp_2s_gd":
        fit = iv.fit_dp_two_stage_gd(
            Z,
            X,
            y,
            rho1=rho1,
            rho2=rho2,
            rng=rng,
            clip_theta=clip_theta,
            clip_beta=clip_beta,
            calibration=P.calibration,
            return_path=False,
            **common,
        )
    else:
        fit = iv.fit_dp_two_stage_gd_beta(
            Z,
            X,
            y,
            rho2=rho2,
            rng=rng,
            clip_beta=clip_beta,
            calibration=P.calibration,
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

    The ground truth :math:`(\beta, \Theta, \Phi, \phi)` is drawn once per
    ``(p, q, r, truth_seed)`` by :meth:`~dpreg.data.synthetic.IVLinearDGP.draw`, or per
    trial by :func:`~dpreg.data.synthetic.draw_iv_truth_batch` with ``redraw_truth``
    (docs/notes/liang2025.md P12); the data sets by
    :func:`~dpreg.data.synthetic.sample_iv_batch`. Clip thresholds are explicit or
    :math:`\gamma = c_0(\sqrt q + \sqrt{\tau + \log nT})^2` (eq. 4,
    docs/notes/liang2025.md P2). With ``steps: population`` the step sizes are
    ``population_step_sizes`` of the true :math:`\Theta` (docs/notes/liang2025.md P1),
    :math:`\eta = 1` and :math:`\alpha = 2/(\|\Theta\|^2 + \sigma_{\min}^2)` times
    ``alpha_scale``: that :math:`\alpha` sits at the edge of stability
    (:math:`\alpha\|\Theta\|^2 \to 2` for ill-conditioned :math:`\Theta`), so sampling
    fluctuations of :math:`Z^\top Z/n` can make 2S-GD diverge; an explicit ``eta`` or
    ``alpha`` overrides the population value.

    Parameters
    ----------
    cell : mapping
        The keys of :class:`IVSyntheticParams` (checked by
        :func:`check_iv_synthetic_cell`).
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
        ``n`` with ``T <= T_max``), ``metric`` and ``t_max_line``. No timings: per-trial
        rows are deterministic.
    """
    P = _checked_params(cell)
    trials = trial_count(trials)
    r = P.confounders
    strength = float(P.instrument_strength)
    rho1, rho2 = P.stage_budgets()
    tau, eps_exponent = float(P.tau), float(P.eps_exponent)
    data_rng, noise_rng = np.random.default_rng(seed).spawn(2)

    shared = None
    if not P.redraw_truth:
        dgp = IVLinearDGP.draw(
            rng=np.random.default_rng(P.truth_seed),
            p=P.p,
            q=P.q,
            r=r,
            instrument_strength=strength,
        )
        shared = dgp.truth_batch()

    clip_theta, clip_beta = _clips_for(P)
    if P.algorithm == "2sls":
        clip_theta = clip_beta = math.nan
    block = 1 if (P.redraw_truth and P.steps == "population") else _block_size(P, trials)

    cols: dict[str, list[np.ndarray]] = {}

    def add(name: str, values: Any, k: int) -> None:
        cols.setdefault(name, []).append(np.broadcast_to(np.asarray(values), (k,)).copy())

    rho_spent = math.inf
    for lo in range(0, trials, block):
        k = min(block, trials - lo)
        if shared is None:
            truth = draw_iv_truth_batch(
                data_rng, p=P.p, q=P.q, r=r, trials=k, instrument_strength=strength
            )
        else:
            truth = shared
        Z, X, y = sample_iv_batch(truth, n=P.n, trials=k, rng=data_rng)
        beta_hat = two_sls(Z=Z, X=X, y=y)
        beta = np.broadcast_to(truth["beta"], (k, P.p))
        Theta0 = truth["Theta"][0]
        eta, alpha = _steps_for(P, Theta0) if P.algorithm != "2sls" else (math.nan,) * 2
        if P.algorithm == "2sls":
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
                P,
                Z,
                X,
                y,
                rho1=rho1,
                rho2=rho2,
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
        if P.algorithm == "2sls":
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

    budget = budget_row(rho1, rho2, delta=P.delta, conversion=P.conversion)
    if P.algorithm == "dp_2s_gd_beta":
        # Lemma F.1, unsupported under replace-one (docs/notes/liang2025.md P8)
        rho_claimed = rho2
    else:
        rho_claimed = rho1 + rho2
    frame = pd.DataFrame(
        {
            "trial": np.arange(first_trial, first_trial + trials, dtype=np.int64),
            "seed": np.full(trials, seed, dtype=np.uint64),
            "algorithm": P.algorithm,
            "n": P.n,
            "p": P.p,
            "q": P.q,
            "r": r,
            "T": P.T,
            **budget,
            "rho_claimed": rho_claimed,
            "rho_certified": rho_spent,
            "calibration": P.calibration,
            "c0": float(P.c0),
            "tau": tau,
            "clip_rule": P.clip_rule,
            "clip_theta": clip_theta,
            "clip_beta": clip_beta,
            "steps": P.steps,
            "alpha_scale": float(P.alpha_scale),
            "truth_seed": P.truth_seed,
            "redraw_truth": P.redraw_truth,
            "instrument_strength": strength,
            "metric": P.metric,
            "t_max_line": P.t_max_line,
        }
    )
    for name, parts in cols.items():
        frame[name] = np.concatenate(parts)
    frame["T_max_theory"] = theory.t_max(P.n, P.p, P.q, rho1, tau=tau, eps_exponent=eps_exponent)
    frame["n_min_theory"] = theory.n_min_for_T(
        P.T, P.p, P.q, rho1, tau=tau, eps_exponent=eps_exponent
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
    params=IVSyntheticParams,
    check_cell=check_iv_synthetic_cell,
)
