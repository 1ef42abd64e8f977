r"""Experiments of Liang et al. (2025), DP two-stage gradient descent for IV regression.

Three study kinds are registered (see :mod:`dpreg.experiments.kinds`):

``iv_synthetic``
    The synthetic DGP of Section 4.1 (docs/notes/liang2025.md §5.1) with Algorithm 1 (DP-2S-GD),
    Algorithm 3 (DP-2S-GD-beta), Algorithm 2 (2S-GD) or closed-form 2SLS. Serves
    Fig. 3a/3b (error against ``n``), Fig. 4a/4b (error against ``T``), Fig. 6
    (Alg. 1 against Alg. 3 over ``T``) and Fig. 7 (2S-GD against 2SLS over ``n``).
``iv_angrist``
    Figs. 5, 8, 9: Algorithm 1 with ``T = 20`` on the prepared Angrist-Evans sample,
    many runs of fresh DP noise on the same data; per-step paths of
    :math:`\beta^{(t)}` and :math:`\Theta^{(t)}`.
``iv_bound_curve``
    Fig. 2: bound (7) of Theorem 3.1 with unit constants against ``T``
    (:mod:`dpreg.theory.iv`).

Cell keys (from a study's ``params`` or ``grid``) are listed in :data:`SYNTHETIC_KEYS`,
:data:`ANGRIST_KEYS` and :data:`BOUND_KEYS`; defaults are documented at the run
functions. A privacy budget is given as ``rho_split: [rho1, rho2]`` or as separate
``rho1`` / ``rho2`` (``iv_angrist`` also accepts ``rho`` for ``rho1 = rho2 = rho``);
``.inf`` or ``"inf"`` means no noise in that stage.

Privacy bookkeeping (every row): ``rho1``, ``rho2``, ``rho = rho1 + rho2`` (the
composed zCDP level of the released trajectories, Prop. 3.1) and its ``epsilon`` at
the cell's ``delta`` with the cell's ``conversion``. Stages that add no noise record
``inf``; in particular Algorithm 3 records ``rho1 = inf`` and hence ``rho = inf``:
its "rho2-zCDP" claim (Lemma F.1) is not supported under replace-one neighbours
because the non-private :math:`\Theta^{(t)}` enters every per-sample gradient
(docs/notes/liang2025.md §3.4, P8). The paper's claim is kept in ``rho_claimed``.
``rho_certified`` is what the estimator's accountant certifies (with
``calibration="paper"`` the paper's noise is :math:`\sqrt 2` larger than its own
accounting needs, so it certifies ``(rho1 + rho2) / 2``; docs/notes/liang2025.md §3.1,
P7).
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
from dpreg.experiments.budgets import budget_columns
from dpreg.experiments.study_kind import StudyKind
from dpreg.privacy.conversions import DEFAULT_CONVERSION
from dpreg.theory import iv as theory

__all__ = [
    "ALGORITHMS",
    "ANGRIST_KEYS",
    "BOUND_KEYS",
    "IV_ANGRIST",
    "IV_BOUND_CURVE",
    "IV_SYNTHETIC",
    "SYNTHETIC_DESIGN_COLUMNS",
    "SYNTHETIC_KEYS",
    "SYNTHETIC_METRICS",
    "angrist_clip_thresholds",
    "run_iv_angrist",
    "run_iv_bound_curve",
    "run_iv_synthetic",
    "summarise_iv_angrist",
    "summarise_iv_bound_curve",
    "summarise_iv_synthetic",
]

ALGORITHMS: tuple[str, ...] = ("dp_2s_gd", "dp_2s_gd_beta", "2s_gd", "2sls")
"""Algorithm 1, Algorithm 3, Algorithm 2 and closed-form 2SLS (eq. 2)."""

CALIBRATIONS: tuple[str, ...] = ("exact", "paper")
DEFAULT_DELTA = 1e-5
DEFAULT_TRUTH_SEED = 2025
MEMORY_BUDGET_BYTES = 3 * 10**8
"""Approximate working memory of one vectorised block of trials (data and gradients)."""

_INF_STRINGS = {"inf", "+inf", ".inf", "infinity"}


# ----------------------------------------------------------------------- parsing helpers


def _float(value: Any, name: str, *, allow_inf: bool = False, positive: bool = True) -> float:
    if isinstance(value, str) and value.strip().lower() in _INF_STRINGS:
        value = math.inf
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number; got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number; got {value!r}") from None
    if math.isnan(v) or (math.isinf(v) and not allow_inf) or (positive and v <= 0):
        what = "a positive number" if positive else "a finite number"
        raise ValueError(f"{name} must be {what}{' or inf' if allow_inf else ''}; got {value!r}")
    return v


def _int(value: Any, name: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer; got {value!r}")
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an integer; got {value!r}") from None
    if v != value or v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return v


def _choice(value: Any, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}; got {value!r}")
    return str(value)


def _bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be true or false; got {value!r}")
    return bool(value)


def parse_rho(cell: Mapping[str, Any], *, allow_rho: bool = False) -> tuple[float, float]:
    """Return ``(rho1, rho2)`` from ``rho_split`` or ``rho1``/``rho2`` (default ``inf``).

    With ``allow_rho``, a key ``rho`` sets both stages (``rho1 = rho2 = rho``, as in the
    real-data figures).
    """
    given = [k for k in ("rho_split", "rho1", "rho2", "rho") if k in cell]
    if "rho" in given and not allow_rho:
        raise ValueError("use rho_split: [rho1, rho2] or rho1/rho2, not rho")
    if "rho_split" in given:
        if len(given) > 1:
            raise ValueError(f"give rho_split or rho1/rho2, not both; got {given}")
        split = cell["rho_split"]
        if not isinstance(split, list | tuple) or len(split) != 2:
            raise ValueError(f"rho_split must be a pair [rho1, rho2]; got {split!r}")
        return (
            _float(split[0], "rho_split[0]", allow_inf=True),
            _float(split[1], "rho_split[1]", allow_inf=True),
        )
    if "rho" in given:
        if len(given) > 1:
            raise ValueError(f"give rho (both stages) or rho1/rho2, not both; got {given}")
        r = _float(cell["rho"], "rho", allow_inf=True)
        return r, r
    return (
        _float(cell.get("rho1", math.inf), "rho1", allow_inf=True),
        _float(cell.get("rho2", math.inf), "rho2", allow_inf=True),
    )


def _budget_row(rho1: float, rho2: float, cell: Mapping[str, Any]) -> dict[str, Any]:
    delta = _float(cell.get("delta", DEFAULT_DELTA), "delta")
    if delta >= 1:
        raise ValueError(f"delta must lie in (0, 1); got {delta!r}")
    conversion = str(cell.get("conversion", DEFAULT_CONVERSION))
    cols = budget_columns(rho=rho1 + rho2, delta=delta, conversion=conversion)
    return {"rho1": rho1, "rho2": rho2, **cols}


def _budget_spent_rho(fit: Any) -> float:
    spent = getattr(fit, "budget_spent", None)
    if spent is None:
        return math.inf
    rho = getattr(spent, "rho", None)
    return float(rho) if rho is not None else math.nan


def _iv():
    # Imported lazily so that this module (and the kind registry) loads without it.
    from dpreg.estimators import iv

    return iv


# ----------------------------------------------------------------------- iv_synthetic

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
    _budget_row(1.0, 1.0, cell)
    theory.t_max(spec.n, spec.p, spec.q, 1.0, tau=spec.tau, eps_exponent=spec.eps_exponent)


def _steps_for(spec: _SyntheticSpec, Theta: np.ndarray) -> tuple[float, float]:
    if spec.eta is not None and spec.alpha is not None:
        return spec.eta, spec.alpha
    eta, alpha = _iv().population_step_sizes(Theta)
    return (
        float(eta) if spec.eta is None else spec.eta,
        spec.alpha_scale * float(alpha) if spec.alpha is None else spec.alpha,
    )


def _clips_for(spec: _SyntheticSpec) -> tuple[float, float]:
    if spec.clip_theta is not None and spec.clip_beta is not None:
        return spec.clip_theta, spec.clip_beta
    gamma = float(_iv().default_clip_threshold(spec.n, spec.q, spec.T, c0=spec.c0, tau=spec.tau))
    return gamma, gamma


def _block_size(spec: _SyntheticSpec, trials: int) -> int:
    per_trial = 8 * spec.n * (2 * spec.q + 3 * spec.p + spec.r + 4) * 2
    per_trial += 8 * spec.T * 4  # clip fractions and paths of beta
    return max(1, min(trials, MEMORY_BUDGET_BYTES // max(per_trial, 1)))


def _clip_stats(diag: Mapping[str, Any], key: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    frac = diag.get(key)
    if frac is None:
        return np.full(k, np.nan), np.full(k, np.nan)
    frac = np.asarray(frac, dtype=np.float64).reshape(k, -1)
    return frac.mean(axis=1), frac[:, -1]


def _scalar_diag(diag: Mapping[str, Any], key: str, k: int) -> np.ndarray:
    v = diag.get(key)
    if v is None:
        return np.full(k, np.nan)
    return np.broadcast_to(np.asarray(v, dtype=np.float64).reshape(-1), (k,)).copy()


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
    iv = _iv()
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
    out["clip_frac_theta_mean"], out["clip_frac_theta_last"] = _clip_stats(
        clips, "clip_fraction_theta", k
    )
    out["clip_frac_beta_mean"], out["clip_frac_beta_last"] = _clip_stats(
        clips, "clip_fraction_beta", k
    )
    out["lambda1"] = _scalar_diag(diag, "lambda1", k)
    out["lambda2"] = _scalar_diag(diag, "lambda2", k)
    return np.asarray(fit.theta, dtype=np.float64).reshape(k, -1), out, _budget_spent_rho(fit)


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

    budget = _budget_row(spec.rho1, spec.rho2, cell)
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


# ------------------------------------------------------------------------ iv_angrist

ANGRIST_REQUIRED = frozenset({"dataset"})
ANGRIST_OPTIONAL = frozenset(
    {
        "rho",
        "rho_split",
        "rho1",
        "rho2",
        "T",
        "eta",
        "alpha",
        "calibration",
        "clip_rule",
        "clip_theta",
        "clip_beta",
        "c0",
        "tau",
        "z_bound",
        "x_bound",
        "y_bound",
        "theta_bound",
        "beta_bound",
        "delta",
        "conversion",
    }
)
ANGRIST_KEYS = ANGRIST_REQUIRED | ANGRIST_OPTIONAL
"""Cell keys of ``iv_angrist`` (see :func:`run_iv_angrist`)."""

ANGRIST_CLIP_RULES: tuple[str, ...] = ("public_range", "c0_formula", "explicit")

#: Public design defaults of the real-data runs (docs/notes/liang2025.md P9); see
#: :func:`run_iv_angrist`.
ANGRIST_DEFAULTS: dict[str, float] = {
    "T": 20,
    "eta": 4.0,
    "alpha": 700.0,
    "z_bound": 1.0,
    "x_bound": 1.0,
    "y_bound": 52.0,
    "theta_bound": 0.1,
    "beta_bound": 20.0,
}


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
    """
    for v, nm in (
        (z_bound, "z_bound"),
        (x_bound, "x_bound"),
        (y_bound, "y_bound"),
        (theta_bound, "theta_bound"),
        (beta_bound, "beta_bound"),
    ):
        _float(v, nm)
    g1 = z_bound * (z_bound * theta_bound + x_bound)
    g2 = theta_bound * z_bound * (z_bound * theta_bound * beta_bound + y_bound)
    return float(g1), float(g2)


@dataclass(frozen=True)
class _AngristSpec:
    rho1: float
    rho2: float
    T: int
    eta: float
    alpha: float
    calibration: str
    clip_rule: str
    clip_theta: float | None
    clip_beta: float | None
    c0: float
    tau: float
    bounds: dict[str, float]


def _angrist_spec(cell: Mapping[str, Any]) -> _AngristSpec:
    d = ANGRIST_DEFAULTS
    rho1, rho2 = parse_rho(cell, allow_rho=True)
    clip_rule = _choice(cell.get("clip_rule", "public_range"), "clip_rule", ANGRIST_CLIP_RULES)
    has_explicit = "clip_theta" in cell or "clip_beta" in cell
    if clip_rule == "explicit" and not ("clip_theta" in cell and "clip_beta" in cell):
        raise ValueError("clip_rule: explicit needs clip_theta and clip_beta")
    if clip_rule != "explicit" and has_explicit:
        raise ValueError("clip_theta/clip_beta need clip_rule: explicit")
    bounds = {
        k: _float(cell.get(k, d[k]), k)
        for k in ("z_bound", "x_bound", "y_bound", "theta_bound", "beta_bound")
    }
    return _AngristSpec(
        rho1=rho1,
        rho2=rho2,
        T=_int(cell.get("T", d["T"]), "T"),
        eta=_float(cell.get("eta", d["eta"]), "eta"),
        alpha=_float(cell.get("alpha", d["alpha"]), "alpha"),
        calibration=_choice(cell.get("calibration", "exact"), "calibration", CALIBRATIONS),
        clip_rule=clip_rule,
        clip_theta=_float(cell["clip_theta"], "clip_theta") if has_explicit else None,
        clip_beta=_float(cell["clip_beta"], "clip_beta") if has_explicit else None,
        c0=_float(cell.get("c0", 1.0), "c0"),
        tau=_float(cell.get("tau", 1.0), "tau"),
        bounds=bounds,
    )


def check_iv_angrist_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``iv_angrist`` cell (raises ``ValueError`` naming the key)."""
    if not isinstance(cell.get("dataset"), str):
        raise ValueError(f"dataset must be a dataset name; got {cell.get('dataset')!r}")
    _angrist_spec(cell)
    _budget_row(1.0, 1.0, cell)


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

    Parameters
    ----------
    cell : mapping
        ``dataset`` (required); budget as ``rho`` (both stages, the paper's
        :math:`\rho_1 = \rho_2`), ``rho_split`` or ``rho1``/``rho2``; ``T`` (20);
        ``calibration`` (``"exact"``); ``delta`` (1e-5), ``conversion``.

        **Step sizes (public design choices, docs/notes/liang2025.md P9).** ``eta`` (4)
        and ``alpha`` (700). :math:`\eta = 1/\mathrm{Var}(z)` with
        :math:`\mathrm{Var}(z) = 1/4` for a same-sex indicator (the sex of children is a
        fair coin, known without the data).
        :math:`\alpha = 2/(\mathrm{Var}(z)(\theta_{lo}^2 + \theta_{hi}^2))`
        is the optimal gradient step over a *published* range of first-stage effects
        :math:`\Theta \in [0.04, 0.10]` (Angrist and Evans 1998 report about 0.06-0.07):
        :math:`2/(0.25 \times 0.0116) \approx 690`, rounded to 700. The "alpha about
        1000" (:math:`1/\hat H`) of docs/notes/liang2025.md P9 is read off the data (a
        leak the paper ignores) and diverges (:math:`\alpha\hat H > 2`) on subsamples
        with :math:`\hat\Theta > 0.09`, which occur at ``n = 8065``.

        **Clipping.** ``clip_rule``: ``"public_range"`` (default;
        :func:`angrist_clip_thresholds` from ``z_bound`` (1), ``x_bound`` (1),
        ``y_bound`` (52 weeks), ``theta_bound`` (0.1), ``beta_bound`` (20)),
        ``"c0_formula"`` (the theory's :math:`c_0(\sqrt q + \sqrt{\tau + \log nT})^2`
        with ``c0``, ``tau``; about 21 here) or ``"explicit"`` (``clip_theta``,
        ``clip_beta``).
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
    spec = _angrist_spec(cell)
    trials = _int(trials, "trials")
    n = data.n
    if spec.clip_rule == "public_range":
        g1, g2 = angrist_clip_thresholds(**spec.bounds)
    elif spec.clip_rule == "c0_formula":
        g1 = g2 = float(_iv().default_clip_threshold(n, 1, spec.T, c0=spec.c0, tau=spec.tau))
    else:
        assert spec.clip_theta is not None and spec.clip_beta is not None
        g1, g2 = spec.clip_theta, spec.clip_beta
    fit = _iv().fit_dp_two_stage_gd(
        data.Z,
        data.X,
        data.y,
        rho1=spec.rho1,
        rho2=spec.rho2,
        rng=np.random.default_rng(seed),
        T=spec.T,
        step_theta=spec.eta,
        step_beta=spec.alpha,
        clip_theta=g1,
        clip_beta=g2,
        trials=trials,
        calibration=spec.calibration,
        return_path=True,
    )
    ref = two_sls_reference(y=data.y, X=data.X, Z=data.Z)
    beta_path = np.asarray(fit.path, dtype=np.float64).reshape(trials, spec.T)
    theta_path = np.asarray(fit.diagnostics["theta_path"], dtype=np.float64).reshape(trials, spec.T)
    diag = fit.diagnostics
    clips = fit.nonprivate_diagnostics  # clip fractions: outside the guarantee
    ct_mean, ct_last = _clip_stats(clips, "clip_fraction_theta", trials)
    cb_mean, cb_last = _clip_stats(clips, "clip_fraction_beta", trials)
    frame = pd.DataFrame(
        {
            "trial": np.arange(first_trial, first_trial + trials, dtype=np.int64),
            "seed": np.full(trials, seed, dtype=np.uint64),
            "dataset": str(cell["dataset"]),
            "n": n,
            **_budget_row(spec.rho1, spec.rho2, cell),
            "rho_certified": _budget_spent_rho(fit),
            "T": spec.T,
            "eta": spec.eta,
            "alpha": spec.alpha,
            "calibration": spec.calibration,
            "clip_rule": spec.clip_rule,
            "clip_theta": g1,
            "clip_beta": g2,
            "lambda1": _scalar_diag(diag, "lambda1", trials),
            "lambda2": _scalar_diag(diag, "lambda2", trials),
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
    paths = {f"beta_{t + 1}": beta_path[:, t] for t in range(spec.T)}
    paths.update({f"theta_{t + 1}": theta_path[:, t] for t in range(spec.T)})
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
    required=ANGRIST_REQUIRED,
    optional=ANGRIST_OPTIONAL,
    check_cell=check_iv_angrist_cell,
)


# -------------------------------------------------------------------- iv_bound_curve

BOUND_REQUIRED = frozenset({"n", "p", "q"})
BOUND_OPTIONAL = frozenset(
    {"rho_split", "rho1", "rho2", "kappa", "tau", "eps_exponent", "T_min", "T_max_grid", "num"}
)
BOUND_KEYS = BOUND_REQUIRED | BOUND_OPTIONAL
"""Cell keys of ``iv_bound_curve`` (see :func:`run_iv_bound_curve`)."""

BOUND_PARAMS = (
    "n",
    "p",
    "q",
    "rho1",
    "rho2",
    "kappa",
    "tau",
    "eps_exponent",
    "T_min",
    "T_max_grid",
    "num",
)


def _bound_params(cell: Mapping[str, Any]) -> dict[str, Any]:
    rho1, rho2 = parse_rho(cell)
    params = {
        "n": _float(cell.get("n"), "n"),
        "p": _int(cell.get("p"), "p"),
        "q": _int(cell.get("q"), "q"),
        "rho1": rho1,
        "rho2": rho2,
        "kappa": float(cell.get("kappa", 0.8)),
        "tau": _float(cell.get("tau", 1.0), "tau"),
        "eps_exponent": _float(cell.get("eps_exponent", 0.0), "eps_exponent", positive=False),
        "T_min": _float(cell.get("T_min", 1.0), "T_min"),
        "T_max_grid": _float(cell.get("T_max_grid", 1e5), "T_max_grid"),
        "num": _int(cell.get("num", 200), "num", minimum=2),
    }
    # Validate through the theory module (raises ValueError naming the argument).
    theory.bound_curve(**{**params, "num": 2})
    return params


def check_iv_bound_cell(cell: Mapping[str, Any]) -> None:
    """Validate an ``iv_bound_curve`` cell."""
    _bound_params(cell)


def run_iv_bound_curve(
    cell: Mapping[str, Any],
    *,
    trials: int,
    first_trial: int,
    seed: int,
    data: Dataset | None = None,
) -> pd.DataFrame:
    r"""Fig. 2's parameters and thresholds, one row per (deterministic) trial.

    The bound (7) is deterministic; the study should use ``trials: 1``. The row holds
    the parameters (``n``, ``p``, ``q``, ``rho1``, ``rho2``, ``kappa`` (0.8), ``tau``
    (1), ``eps_exponent`` (0), grid ``T_min`` (1), ``T_max_grid`` (1e5), ``num`` (200))
    and the scalars ``A``, ``B``, ``T1``, ``T2``, ``T_max``, ``T_opt``,
    ``bound_at_T_opt``; :func:`summarise_iv_bound_curve` expands the curve.
    """
    params = _bound_params(cell)
    trials = _int(trials, "trials")
    curve = theory.bound_curve(**{**params, "num": 2})
    first = curve.iloc[0]
    row = {
        **params,
        **{k: float(first[k]) for k in ("A", "B", "T1", "T2", "T_max", "bound_at_T_opt")},
        "T_opt": int(first["T_opt"]),
    }
    frame = pd.DataFrame([row] * trials)
    frame.insert(0, "trial", np.arange(first_trial, first_trial + trials, dtype=np.int64))
    frame.insert(1, "seed", np.full(trials, seed, dtype=np.uint64))
    return frame


def summarise_iv_bound_curve(
    runs: pd.DataFrame, references: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    """Expand each distinct parameter set of the runs into its Fig. 2 curve.

    Returns
    -------
    DataFrame
        :func:`dpreg.theory.iv.bound_curve` rows (``T``, ``bound``, the three terms,
        ``dominant``, ``regime``, ``T1``, ``T2``, ``T_max``, ``T_opt``, ...) with a
        ``curve`` index per parameter set.
    """
    params = runs[list(BOUND_PARAMS)].drop_duplicates().sort_values(list(BOUND_PARAMS))
    parts = []
    for i, (_, row) in enumerate(params.iterrows()):
        kw = row.to_dict()
        kw["p"], kw["q"], kw["num"] = int(kw["p"]), int(kw["q"]), int(kw["num"])
        curve = theory.bound_curve(**kw)
        curve.insert(0, "curve", i)
        parts.append(curve)
    return pd.concat(parts, ignore_index=True)


def _figure_bound(table: pd.DataFrame, *, title: str | None = None) -> Any:
    from dpreg.plotting.liang2025 import plot_bound_curve

    return plot_bound_curve(table, title=title)


IV_BOUND_CURVE = StudyKind(
    name="iv_bound_curve",
    run=run_iv_bound_curve,
    summarise=summarise_iv_bound_curve,
    figure=_figure_bound,
    required=BOUND_REQUIRED,
    optional=BOUND_OPTIONAL,
    check_cell=check_iv_bound_cell,
)
