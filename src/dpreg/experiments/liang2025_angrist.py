r"""Liang et al. (2025) on the Angrist-Evans data: study kind ``iv_angrist``.

Figs. 5, 8, 9: Algorithm 1 (DP-2S-GD) with ``T = 20`` on the prepared Angrist-Evans
sample (docs/notes/liang2025.md §5.8), many runs of fresh DP noise on the same data;
per-step paths of :math:`\beta^{(t)}` and :math:`\Theta^{(t)}`.

A cell's keys, types and defaults are :class:`IVAngristParams` (tabulated in
``config/README.md``); :func:`check_iv_angrist_cell` adds the rules across keys. The
budget columns of a row are described in :mod:`dpreg.experiments.liang2025_common`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpreg._validation import check_positive
from dpreg.data.datasets import Dataset
from dpreg.experiments.liang2025_common import (
    CALIBRATIONS,
    budget_row,
    budget_spent_rho,
    check_budget_keys,
    clip_stats,
    iv_estimators,
    scalar_diag,
    stage_budgets,
    trial_count,
    zcdp_level,
)
from dpreg.experiments.params import (
    KindParams,
    choice,
    open_interval,
    param,
    positive_finite,
    positive_integer,
)
from dpreg.experiments.study_kind import StudyKind
from dpreg.privacy.conversions import CONVERSIONS, DEFAULT_CONVERSION

__all__ = [
    "ANGRIST_CLIP_RULES",
    "IVAngristParams",
    "IV_ANGRIST",
    "angrist_clip_thresholds",
    "check_iv_angrist_cell",
    "run_iv_angrist",
    "summarise_iv_angrist",
]

ANGRIST_CLIP_RULES: tuple[str, ...] = ("public_range", "c0_formula", "explicit")
"""Clip threshold rules of ``iv_angrist`` (see :func:`run_iv_angrist`)."""


def angrist_clip_thresholds(
    *,
    z_bound: float,
    x_bound: float,
    y_bound: float,
    theta_bound: float,
    beta_bound: float,
) -> tuple[float, float]:
    r"""Data-independent clipping thresholds for a scalar IV model from public ranges.

    With :math:`|z| \le z_b`, :math:`|x| \le x_b`, :math:`|y| \le y_b` (centred
    variables of known range) and design bounds :math:`|\Theta| \le \theta_b`,
    :math:`|\beta| \le \beta_b` on the iterates of interest, the per-sample gradients
    of Algorithm 1 satisfy

    * :math:`|z(z\Theta - x)| \le z_b(z_b\theta_b + x_b) =: \gamma_1`,
    * :math:`|\Theta z(z\Theta\beta - y)| \le \theta_b z_b(z_b\theta_b\beta_b + y_b)
      =: \gamma_2`.

    Clipping at these values leaves every gradient untouched while the iterates stay in
    the design box (docs/notes/liang2025.md P9: the theory's :math:`\gamma \approx 21`
    over-noises by an order of magnitude on these data). Nothing is read from the data.

    Parameters
    ----------
    z_bound, x_bound, y_bound : float
        Public bounds on the centred :math:`|z|`, :math:`|x|`, :math:`|y|` (> 0).
    theta_bound, beta_bound : float
        Design bounds on :math:`|\Theta|` and :math:`|\beta|` (> 0).

    Returns
    -------
    (float, float)
        :math:`(\gamma_1, \gamma_2)`.

    Examples
    --------
    >>> angrist_clip_thresholds(
    ...     z_bound=1.0, x_bound=1.0, y_bound=52.0, theta_bound=0.1, beta_bound=20.0
    ... )
    (1.1, 5.4)
    """
    for v, nm in (
        (z_bound, "z_bound"),
        (x_bound, "x_bound"),
        (y_bound, "y_bound"),
        (theta_bound, "theta_bound"),
        (beta_bound, "beta_bound"),
    ):
        check_positive(v, nm)
    g1 = z_bound * (z_bound * theta_bound + x_bound)
    g2 = theta_bound * z_bound * (z_bound * theta_bound * beta_bound + y_bound)
    return float(g1), float(g2)


@dataclass(frozen=True)
class IVAngristParams(KindParams):
    r"""Cell keys of the ``iv_angrist`` kind (Figs. 5, 8, 9).

    The step sizes and clip bounds are public design choices (docs/notes/liang2025.md
    P9), never read from the data. Besides the keys, the derived settings of a cell:
    :meth:`stage_budgets`, :meth:`bounds`.
    """

    kind = "iv_angrist"
    dataset: str = param(
        doc="a prepared IV dataset with p = q = 1 (centred; `preprocessing: liang2025`)"
    )
    rho: float | str | None = param(
        None,
        doc="zCDP budget of each stage, rho1 = rho2 = rho (the paper's real-data figures);"
        " instead of `rho_split` or `rho1`/`rho2`",
        check=zcdp_level,
    )
    rho_split: list[float | str] | None = param(
        None, doc="the budget as a pair [rho1, rho2]", check=zcdp_level
    )
    rho1: float | str = param(
        math.inf, doc="zCDP budget rho1 of the first stage (Theta)", check=zcdp_level
    )
    rho2: float | str = param(
        math.inf, doc="zCDP budget rho2 of the second stage (beta)", check=zcdp_level
    )
    T: int = param(20, doc="iterations T of Algorithm 1", check=positive_integer)
    eta: float = param(
        4.0,
        doc="step size eta of the first stage: 1/Var(z), Var(z) = 1/4 for a same-sex"
        " indicator (a fair coin)",
        check=positive_finite,
    )
    alpha: float = param(
        700.0,
        doc="step size alpha of the second stage: 2/(Var(z)(theta_lo^2 + theta_hi^2)) over"
        " the published first-stage range [0.04, 0.10], about 690",
        check=positive_finite,
    )
    calibration: str = param(
        "exact",
        doc="noise of Algorithm 1: `exact` (its own accounting) or `paper` (Prop. 3.1's"
        " lambda, sqrt 2 more noise, docs/notes/liang2025.md §3.1)",
        check=choice(*CALIBRATIONS),
    )
    clip_rule: str = param(
        "public_range",
        doc="clip thresholds: `public_range` (`angrist_clip_thresholds` of the five bounds),"
        " `c0_formula` (eq. 4 with `c0`, `tau`, about 21 here) or `explicit`"
        " (`clip_theta`, `clip_beta`)",
        check=choice(*ANGRIST_CLIP_RULES),
    )
    clip_theta: float | None = param(
        None, doc="first-stage clip threshold of `clip_rule: explicit`", check=positive_finite
    )
    clip_beta: float | None = param(
        None, doc="second-stage clip threshold of `clip_rule: explicit`", check=positive_finite
    )
    c0: float = param(
        1.0, doc="c0 of the eq. 4 threshold (`clip_rule: c0_formula`)", check=positive_finite
    )
    tau: float = param(
        1.0, doc="tau of the eq. 4 threshold (`clip_rule: c0_formula`)", check=positive_finite
    )
    z_bound: float = param(1.0, doc="public bound on the centred abs(z)", check=positive_finite)
    x_bound: float = param(1.0, doc="public bound on the centred abs(x)", check=positive_finite)
    y_bound: float = param(
        52.0, doc="public bound on the centred abs(y) (weeks worked)", check=positive_finite
    )
    theta_bound: float = param(
        0.1, doc="design bound on abs(Theta) (first stage)", check=positive_finite
    )
    beta_bound: float = param(20.0, doc="design bound on abs(beta)", check=positive_finite)
    delta: float = param(
        1e-5, doc="delta of the recorded epsilon of rho1 + rho2", check=open_interval(0, 1)
    )
    conversion: str = param(
        DEFAULT_CONVERSION,
        doc="zCDP to (epsilon, delta) conversion of the recorded epsilon (the workflow"
        " sets the config's `conversion`)",
        check=choice(*CONVERSIONS),
    )

    def stage_budgets(self) -> tuple[float, float]:
        """Return ``(rho1, rho2)`` from ``rho_split``, ``rho`` or ``rho1``/``rho2``."""
        return stage_budgets(rho_split=self.rho_split, rho1=self.rho1, rho2=self.rho2, rho=self.rho)

    def bounds(self) -> dict[str, float]:
        """Return the keyword arguments of :func:`angrist_clip_thresholds`."""
        return {
            "z_bound": float(self.z_bound),
            "x_bound": float(self.x_bound),
            "y_bound": float(self.y_bound),
            "theta_bound": float(self.theta_bound),
            "beta_bound": float(self.beta_bound),
        }


def _checked_params(cell: Mapping[str, Any]) -> IVAngristParams:
    """Return the typed parameters of a cell after the checks across keys."""
    P = IVAngristParams.from_cell(cell)
    kind = P.kind
    check_budget_keys(kind, set(cell), rho_split=P.rho_split, allow_rho=True)
    explicit = (P.clip_theta is not None, P.clip_beta is not None)
    if P.clip_rule == "explicit" and not all(explicit):
        raise ValueError(f"{kind}: clip_rule: explicit needs clip_theta and clip_beta")
    if P.clip_rule != "explicit" and any(explicit):
        raise ValueError(f"{kind}: clip_theta/clip_beta need clip_rule: explicit")
    budget_row(1.0, 1.0, delta=P.delta, conversion=P.conversion)
    return P


def check_iv_angrist_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``iv_angrist`` cell: its typed spec, then the rules across keys.

    One of ``rho``, ``rho_split`` or ``rho1``/``rho2``; ``clip_theta`` and ``clip_beta``
    exactly with ``clip_rule: explicit``; ``conversion`` as the budget columns take it.
    Raises ``ValueError`` naming the kind and the key.
    """
    _checked_params(cell)


def run_iv_angrist(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None,
) -> pd.DataFrame:
    r"""Run one seed block of runs of an ``iv_angrist`` cell (Figs. 5, 8, 9).

    The paper's protocol is docs/notes/liang2025.md §5.8. The workflow calls this once per
    seed block (:func:`dpreg.experiments.studies.run_chunk`).

    Algorithm 1 on one prepared data set (subsampled and centred by
    :func:`dpreg.data.preprocess.preprocess_liang2025`; ``p = q = 1``), ``trials``
    independent runs of fresh DP noise on the same data.

    **Step sizes (public design choices, docs/notes/liang2025.md P9).** ``eta`` (4) and
    ``alpha`` (700). :math:`\eta = 1/\mathrm{Var}(z)` with :math:`\mathrm{Var}(z) = 1/4`
    for a same-sex indicator (the sex of children is a fair coin, known without the
    data). :math:`\alpha = 2/(\mathrm{Var}(z)(\theta_{lo}^2 + \theta_{hi}^2))` is the
    optimal gradient step over a *published* range of first-stage effects
    :math:`\Theta \in [0.04, 0.10]` (Angrist and Evans 1998 report about 0.06-0.07):
    :math:`2/(0.25 \times 0.0116) \approx 690`, rounded to 700. The "alpha about 1000"
    (:math:`1/\hat H`) of docs/notes/liang2025.md P9 is read off the data (a leak the
    paper ignores) and diverges (:math:`\alpha\hat H > 2`) on subsamples with
    :math:`\hat\Theta > 0.09`, which occur at ``n = 8065``.

    **Clipping.** ``clip_rule``: ``"public_range"`` (:func:`angrist_clip_thresholds`
    from ``z_bound``, ``x_bound``, ``y_bound`` (52 weeks), ``theta_bound``,
    ``beta_bound``), ``"c0_formula"`` (the theory's
    :math:`c_0(\sqrt q + \sqrt{\tau + \log nT})^2` of eq. 4 with ``c0``, ``tau``; about
    21 here) or ``"explicit"`` (``clip_theta``, ``clip_beta``).

    Parameters
    ----------
    cell : mapping
        The keys of :class:`IVAngristParams` (checked by :func:`check_iv_angrist_cell`).
    trials, first_trial, seed
        Number of runs in this seed block, global index of its first run, and the
        block's seed (:func:`dpreg.seeds.block_seed`), from which the DP noise of all its
        runs is drawn.
    data : Dataset
        The prepared sample (``X``, ``Z`` one column each, centred).

    Returns
    -------
    DataFrame
        One row per run: ``trial``, ``seed``, ``dataset``, ``n``, budget columns, the
        settings, ``beta_T``, ``theta_T`` (final iterates), the same-sample non-private
        references ``beta_2sls``, ``se_2sls`` (homoskedastic), ``se_2sls_robust``
        (HC1), ``theta_2sls`` (first stage), clip fractions, and the paths in wide form
        ``beta_1 .. beta_T`` and ``theta_1 .. theta_T``.
    """
    from dpreg.estimators.ols import two_sls_reference

    if data is None or data.Z is None:
        raise ValueError("an iv_angrist cell needs an IV dataset (set the cell's dataset)")
    if data.X.shape[1] != 1 or data.Z.shape[1] != 1:
        raise ValueError(
            f"iv_angrist expects p = q = 1 (x = morekids, z = samesex) after centring; got "
            f"X {data.X.shape}, Z {data.Z.shape}: load the data without controls or intercept"
        )
    P = _checked_params(cell)
    trials = trial_count(trials)
    rho1, rho2 = P.stage_budgets()
    eta, alpha = float(P.eta), float(P.alpha)
    n = data.n
    if P.clip_rule == "public_range":
        g1, g2 = angrist_clip_thresholds(**P.bounds())
    elif P.clip_rule == "c0_formula":
        g1 = g2 = float(
            iv_estimators().default_clip_threshold(n, 1, P.T, c0=float(P.c0), tau=float(P.tau))
        )
    else:
        assert P.clip_theta is not None and P.clip_beta is not None
        g1, g2 = float(P.clip_theta), float(P.clip_beta)
    fit = iv_estimators().fit_dp_two_stage_gd(
        data.Z,
        data.X,
        data.y,
        rho1=rho1,
        rho2=rho2,
        rng=np.random.default_rng(seed),
        T=P.T,
        step_theta=eta,
        step_beta=alpha,
        clip_theta=g1,
        clip_beta=g2,
        trials=trials,
        calibration=P.calibration,
        return_path=True,
    )
    ref = two_sls_reference(y=data.y, X=data.X, Z=data.Z)
    beta_path = np.asarray(fit.path, dtype=np.float64).reshape(trials, P.T)
    theta_path = np.asarray(fit.diagnostics["theta_path"], dtype=np.float64).reshape(trials, P.T)
    diag = fit.diagnostics
    clips = fit.nonprivate_diagnostics  # clip fractions: outside the guarantee
    ct_mean, ct_last = clip_stats(clips, "clip_fraction_theta", trials)
    cb_mean, cb_last = clip_stats(clips, "clip_fraction_beta", trials)
    frame = pd.DataFrame(
        {
            "trial": np.arange(first_trial, first_trial + trials, dtype=np.int64),
            "seed": np.full(trials, seed, dtype=np.uint64),
            "dataset": P.dataset,
            "n": n,
            **budget_row(rho1, rho2, delta=P.delta, conversion=P.conversion),
            "rho_certified": budget_spent_rho(fit),
            "T": P.T,
            "eta": eta,
            "alpha": alpha,
            "calibration": P.calibration,
            "clip_rule": P.clip_rule,
            "clip_theta": g1,
            "clip_beta": g2,
            "lambda1": scalar_diag(diag, "lambda1", trials),
            "lambda2": scalar_diag(diag, "lambda2", trials),
            "beta_T": beta_path[:, -1],
            "theta_T": theta_path[:, -1],
            "beta_2sls": float(ref.params[0]),
            "se_2sls": float(ref.std_errors[0]),
            "se_2sls_robust": float(ref.std_errors_robust[0]),
            "theta_2sls": float(ref.first_stage[0, 0]),
            "clip_frac_theta_mean": ct_mean,
            "clip_frac_theta_last": ct_last,
            "clip_frac_beta_mean": cb_mean,
            "clip_frac_beta_last": cb_last,
        }
    )
    paths = {f"beta_{t + 1}": beta_path[:, t] for t in range(P.T)}
    paths.update({f"theta_{t + 1}": theta_path[:, t] for t in range(P.T)})
    return pd.concat([frame, pd.DataFrame(paths)], axis=1)


ANGRIST_GROUP = (
    "dataset",
    "n",
    "rho1",
    "rho2",
    "rho",
    "epsilon",
    "delta",
    "conversion",
    "T",
    "eta",
    "alpha",
    "calibration",
    "clip_rule",
    "clip_theta",
    "clip_beta",
)


def _box_stats(v: np.ndarray) -> dict[str, float]:
    q25, med, q75 = np.quantile(v, [0.25, 0.5, 0.75])
    iqr = q75 - q25
    inside_lo = v[v >= q25 - 1.5 * iqr]
    inside_hi = v[v <= q75 + 1.5 * iqr]
    sd = float(np.std(v, ddof=1)) if v.size > 1 else math.nan
    return {
        "mean": float(np.mean(v)),
        "sd": sd,
        "se": sd / math.sqrt(v.size) if v.size > 1 else math.nan,
        "median": float(med),
        "q25": float(q25),
        "q75": float(q75),
        "iqr": float(iqr),
        "whisker_low": float(inside_lo.min()),
        "whisker_high": float(inside_hi.max()),
        "min": float(v.min()),
        "max": float(v.max()),
        "n_outliers": int(np.sum((v < q25 - 1.5 * iqr) | (v > q75 + 1.5 * iqr))),
    }


def summarise_iv_angrist(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    r"""Summarise the real-data runs (Figs. 5, 8, 9): final-iterate spread and mean paths.

    Parameters
    ----------
    runs : DataFrame
        Rows of :func:`run_iv_angrist`.
    references : sequence of mapping
        Reference JSONs (``dataset``, ``two_sls: {params, std_errors}``); when one
        matches the dataset its 2SLS estimate is added as ``beta_2sls_reference`` and
        ``se_2sls_reference`` (it should equal the same-sample ``beta_2sls``).

    Returns
    -------
    DataFrame
        Long table, one row per budget and ``quantity``:

        * ``"beta_final"`` (``t = T``): the distribution of :math:`\beta^{(T)}` over
          runs -- ``runs``, ``mean``, ``sd``, ``se`` (sd / sqrt(runs)), ``median``,
          ``q25``, ``q75``, ``iqr``, Tukey whiskers (1.5 IQR), ``min``, ``max``,
          ``n_outliers`` (the boxplot of panel (a));
        * ``"beta_path"`` and ``"theta_path"`` (``t = 1..T``): the same statistics of
          :math:`\beta^{(t)}`, :math:`\Theta^{(t)}` per step (panel (b) draws mean ±
          SE, docs/notes/liang2025.md P11 for the SE/sd question);

        with the same-sample non-private ``beta_2sls``, ``se_2sls``,
        ``se_2sls_robust``, ``theta_2sls`` and the mean clip fractions.
    """
    keys = [c for c in ANGRIST_GROUP if c in runs.columns]
    ref_by_name = {
        str(r.get("dataset")): r for r in references if isinstance(r, Mapping) and "two_sls" in r
    }
    rows = []
    for group, part in runs.groupby(keys, sort=True, dropna=False):
        base = dict(zip(keys, group, strict=True))
        base["runs"] = int(len(part))
        for col in ("beta_2sls", "se_2sls", "se_2sls_robust", "theta_2sls"):
            base[col] = float(part[col].iloc[0])
        ref = ref_by_name.get(str(base.get("dataset")))
        base["beta_2sls_reference"] = float(ref["two_sls"]["params"][0]) if ref else math.nan
        base["se_2sls_reference"] = float(ref["two_sls"]["std_errors"][0]) if ref else math.nan
        for col in ("clip_frac_theta_mean", "clip_frac_beta_mean", "lambda1", "lambda2"):
            base[col] = float(part[col].mean())
        T = int(base.get("T", part["T"].iloc[0]))
        rows.append(
            {**base, "quantity": "beta_final", "t": T, **_box_stats(part["beta_T"].to_numpy())}
        )
        for qty, prefix in (("beta_path", "beta"), ("theta_path", "theta")):
            for t in range(1, T + 1):
                v = part[f"{prefix}_{t}"].to_numpy(dtype=np.float64)
                rows.append({**base, "quantity": qty, "t": t, **_box_stats(v)})
    return pd.DataFrame(rows)


def _figure_angrist(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.liang2025 import plot_iv_angrist

    return plot_iv_angrist(table, title=title)


IV_ANGRIST = StudyKind(
    name="iv_angrist",
    run=run_iv_angrist,
    summarise=summarise_iv_angrist,
    figure=_figure_angrist,
    params=IVAngristParams,
    check_cell=check_iv_angrist_cell,
)
