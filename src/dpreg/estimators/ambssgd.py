r"""Varshney, Thakurta & Jain (2022), adaptive clipping: the registered estimators.

Paper: "(Nearly) optimal private linear regression via adaptive clipping" (COLT 2022).

=========================  ==========================================================
registry name              what
=========================  ==========================================================
``dp_ambssgd``             Algorithm 2 (DP-STAT adaptive clip), Theorem 3.6 accounting
``dp_ambssgd_fixedclip``   ablation: same schedule, constant clip, no DP-STAT
``dp_ambssgd_oracleclip``  ablation: Lemma 3.11's clip from the true :math:`w^*`
                           (non-private reference)
``ambssgd_sgd``            the same one-pass mini-batch SGD without clip or noise
``dp_ssgd``                Algorithm 1 (:mod:`dpreg.estimators.dp_ssgd`)
``dp_sgd_poisson``         DP-SGD baseline (:mod:`dpreg.estimators.dpsgd_poisson`)
=========================  ==========================================================

DP-STAT alone is :func:`dpreg.estimators.dp_stat.dp_stat`. The numerical core is
:mod:`dpreg.estimators.ambssgd_core`, the accounting
:mod:`dpreg.estimators.ambssgd_privacy`; ``docs/varshney2022.md`` records every decision
on the paper's ambiguities.

Public hyperparameters (docs/notes/varshney2022.md §2.4, §8 item 16): the paper assumes :math:`R_x`,
:math:`\|H\|`, :math:`\kappa` and the DP-STAT range :math:`B` known a priori. They are
*inputs* here (``x_norm_sq``, ``H_norm``, ``kappa``, ``stat_domain``), never read off the
data; :func:`dpreg.estimators.ambssgd_core.paper_hyperparameters` computes Theorem 3.7's
values from oracle distribution constants.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpreg._validation import (
    _as_real_array,
    check_choice,
    check_matrix,
    check_optional_bounds,
    check_positive,
    check_real,
    check_regression,
    check_rng,
    check_trials,
)
from dpreg.estimators import dp_ssgd as _dp_ssgd  # noqa: F401  (registers dp_ssgd)
from dpreg.estimators import dpsgd_poisson as _dpsgd_poisson  # noqa: F401  (registers)
from dpreg.estimators.ambssgd_core import (
    OracleInfo,
    PermutedRows,
    RunSpec,
    ambssgd_pass,
    block_layout,
)
from dpreg.estimators.ambssgd_privacy import (
    ACCOUNTINGS,
    NOISE_MULTIPLIER_RULES,
    ambssgd_ledger,
    ambssgd_noise_multiplier,
    fixed_clip_noise_multiplier,
    noise_multiplier_from_rho,
)
from dpreg.privacy.budgets import ZCDP, ApproxDP, Budget, check_budget
from dpreg.privacy.conversions import zcdp_to_eps
from dpreg.results import Fit

__all__ = [
    "ambssgd_noise_multipliers",
    "fit_ambssgd_sgd",
    "fit_dp_ambssgd",
    "fit_dp_ambssgd_fixedclip",
    "fit_dp_ambssgd_oracleclip",
]

DEFAULT_N_QUERIES = 20
"""Practical K (DP-STAT doublings): Delta = B 2^-K instead of B/N^200
(docs/notes/varshney2022.md §8 item 6)."""


def ambssgd_noise_multipliers(
    budget: Budget,
    clip_rule: str,
    *,
    rule: str = "exact",
    accounting: str = "paper",
) -> tuple[float, float | None, float]:
    r"""Gradient and DP-STAT multipliers for a budget, and the certified zCDP rho.

    * ``adaptive``, paper accounting: both mechanisms get :math:`\alpha` with
      :math:`1/\alpha^2 = \rho` (Theorem 3.6);
    * ``adaptive``, disjoint accounting: :math:`\alpha/\sqrt2` each (per-block rho is the
      max, :data:`~dpreg.estimators.ambssgd_privacy.ACCOUNTINGS`);
    * ``fixed`` / ``oracle``: gradient mechanism only, :math:`\alpha/\sqrt2`.

    For an :class:`ApproxDP` budget :math:`\alpha` comes from
    :func:`~dpreg.estimators.ambssgd_privacy.ambssgd_noise_multiplier` with ``rule``; for
    a :class:`ZCDP` budget :math:`\alpha = 1/\sqrt\rho`.

    Returns
    -------
    (alpha_gradient, alpha_stat or None, rho_certified)
        rho_certified is recomputed from the ledger (never copied from the target).
    """
    check_budget(budget, (ZCDP, ApproxDP))
    check_choice(rule, "noise_multiplier_rule", NOISE_MULTIPLIER_RULES)
    check_choice(accounting, "accounting", ACCOUNTINGS)
    if isinstance(budget, ZCDP):
        alpha = noise_multiplier_from_rho(budget.rho)
    else:
        alpha = ambssgd_noise_multiplier(budget.epsilon, budget.delta, rule)
    if alpha == 0.0:
        return 0.0, (0.0 if clip_rule == "adaptive" else None), math.inf
    if clip_rule == "adaptive":
        a = alpha if accounting == "paper" else fixed_clip_noise_multiplier(alpha)
        return a, a, ambssgd_ledger(a, a, DEFAULT_N_QUERIES, accounting=accounting).rho_total
    a = fixed_clip_noise_multiplier(alpha)
    return a, None, ambssgd_ledger(a, None, 1).rho_total


def _spent(rho: float, budget: Budget, rule: str) -> Budget:
    if isinstance(budget, ZCDP):
        return ZCDP(rho)
    if math.isinf(rho):
        return ApproxDP(math.inf, budget.delta)
    method = "tight" if rule == "tight" else "simple"
    return ApproxDP(zcdp_to_eps(rho, budget.delta, method), budget.delta)


def _int_or_none(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def _fit(
    X: Any,
    y: Any,
    *,
    clip_rule: str,
    budget: Budget | None,
    rng: np.random.Generator,
    trials: int,
    x_norm_sq: float,
    H_norm: float,
    stat_domain: float | None,
    fixed_clip: float | None,
    kappa: float,
    c1: float,
    T: int | None,
    eta: float | None,
    a: float,
    n_queries: int,
    noise_multiplier_rule: str,
    accounting: str,
    stat_margin: float,
    shuffle: bool,
    oracle: OracleInfo | None,
    oracle_sigma: float,
    name: str,
    bound_X: float | None = None,
    bound_y: float | None = None,
) -> Fit:
    X, y = check_regression(X, y, require_full_rank=False)
    check_optional_bounds(X, y, bound_X, bound_y)
    trials = check_trials(trials)
    check_rng(rng)
    n, d = X.shape
    x_norm_sq = check_positive(x_norm_sq, "x_norm_sq")
    H_norm = check_positive(H_norm, "H_norm")
    a = check_positive(a, "a")
    if not isinstance(shuffle, bool):
        raise ValueError(f"shuffle must be true or false; got {shuffle!r}")
    if not (stat_margin >= 0 and math.isfinite(stat_margin)):
        raise ValueError(f"stat_margin must be a finite number >= 0; got {stat_margin!r}")
    K = _int_or_none(n_queries, "n_queries")
    layout = block_layout(n, T=_int_or_none(T, "T"), kappa=kappa, c1=c1)
    step = layout.b / (x_norm_sq + (layout.b - 1) * H_norm) if eta is None else eta
    step = check_positive(step, "eta")
    log_n = math.log(n)
    log_factor = log_n**a
    x_norm = math.sqrt(x_norm_sq)
    if clip_rule == "adaptive":
        stat_domain = check_positive(stat_domain, "stat_domain")
    if clip_rule == "fixed":
        if fixed_clip is None:
            stat_domain = check_positive(stat_domain, "stat_domain")
            fixed_clip = x_norm * stat_domain * log_factor  # largest adaptive clip
        fixed_clip = check_positive(fixed_clip, "fixed_clip")

    if clip_rule == "none":
        alpha_g, alpha_s, rho = 0.0, None, math.inf
    else:
        if budget is None:
            raise TypeError(f"{name} needs a budget (ZCDP or ApproxDP)")
        alpha_g, alpha_s, rho = ambssgd_noise_multipliers(
            budget, clip_rule, rule=noise_multiplier_rule, accounting=accounting
        )
        if clip_rule == "adaptive":
            rho = (
                ambssgd_ledger(alpha_g, alpha_s, K, accounting=accounting).rho_total
                if alpha_g
                else math.inf
            )
    runs = RunSpec(
        clip_rule=(clip_rule,) * trials if not shuffle else (clip_rule,),
        noise_multiplier=alpha_g,
        stat_noise_multiplier=0.0 if alpha_s is None else alpha_s,
        fixed_clip=math.inf if fixed_clip is None else fixed_clip,
        stat_domain=1.0 if stat_domain is None else stat_domain,
        sigma=oracle_sigma,
    )
    # Independent permutations per trial (D = trials, R = 1), or one identity order
    # shared by all trials (D = 1, R = trials: faster; the noise still differs).
    source = PermutedRows(X, y, trials if shuffle else 1, rng, shuffle=shuffle)
    result = ambssgd_pass(
        source,
        layout=layout,
        runs=runs,
        eta=step,
        x_norm=x_norm,
        log_factor=log_factor,
        n_queries=K,
        rng=rng,
        stat_margin=stat_margin,
        oracle=oracle,
    )
    if shuffle:
        theta = result.w_bar[:, :, 0]
        steps = {k: v[:, 0, :] for k, v in result.steps.items()}
    else:
        theta = result.w_bar[0].T
        steps = {k: v[0] for k, v in result.steps.items()}
    if clip_rule == "none" or clip_rule == "oracle":
        spent = None
    else:
        spent = _spent(rho, budget, noise_multiplier_rule)
    diagnostics: dict[str, Any] = {
        "T": layout.T,
        "s": layout.s,
        "b": layout.b,
        "dropped_rows": layout.dropped,
        "eta": step,
        "noise_multiplier": alpha_g,
        "stat_noise_multiplier": alpha_s,
        "rho": rho,
        "n_queries": K,
        "stat_domain": stat_domain,
        "fixed_clip": fixed_clip,
        "clip_rule": clip_rule,
        "accounting": accounting,
        "noise_multiplier_rule": noise_multiplier_rule,
        "neighbours": "replace_one",
        **{f"step_{k}": v for k, v in steps.items()},
    }
    if clip_rule == "oracle":
        diagnostics["privacy_note"] = (
            "oracle clip uses the true w*: a non-private reference (it would be"
            f" {1 / (2 * alpha_g**2) if alpha_g else math.inf:.4g}-zCDP only if w* were public)"
        )
    return Fit(theta=theta, budget_spent=spent, estimator=name, diagnostics=diagnostics)


def fit_dp_ambssgd(
    X: Any,
    y: Any,
    *,
    budget: Budget,
    rng: np.random.Generator,
    trials: int = 1,
    x_norm_sq: float,
    H_norm: float,
    stat_domain: float,
    kappa: float = 1.0,
    c1: float = 1.0,
    T: int | None = None,
    eta: float | None = None,
    a: float = 0.5,
    n_queries: int = DEFAULT_N_QUERIES,
    noise_multiplier_rule: str = "exact",
    accounting: str = "paper",
    stat_margin: float = 0.0,
    shuffle: bool = True,
    bound_X: float | None = None,
    bound_y: float | None = None,
) -> Fit:
    r"""DP-AMBSSGD (Algorithm 2): one shuffled pass, DP-STAT clip norm, tail average.

    Each block of ``s + b`` rows runs DP-STAT on its first s rows (search range
    ``stat_domain`` = B, K doublings) to get :math:`\gamma_t`, sets
    :math:`\zeta_t = R_x\gamma_t\ln^aN`, and takes the clipped noisy step on its b
    rows; the output averages :math:`w_{\lfloor T/2\rfloor+1..T}`.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    y : ndarray, shape (n,)
    budget : ZCDP or ApproxDP
        Target guarantee (replace-one neighbours).
    rng : numpy.random.Generator
        Permutations and DP noise.
    trials : int
        Independent repetitions (own permutation and noise), vectorised.
    x_norm_sq : float
        Public :math:`R_x^2` (Gaussian: :math:`\mathrm{Tr}H + 2\|H\|`).
    H_norm : float
        Public :math:`\|H\|_2` (step size :math:`\eta = b/(R_x^2 + (b-1)\|H\|)`).
    stat_domain : float
        DP-STAT range B (public; Theorem 3.7: :math:`K_2R_x(\|w^*\|_H+\sigma)\ln^{2a}N`).
    kappa, c1 : float
        :math:`T = \lceil c_1\kappa\ln N\rceil` (ignored when ``T`` is given).
    T : int, optional
        Number of blocks.
    eta : float, optional
        Step size (default: Theorem 3.7's).
    a : float
        Tail exponent (:math:`\zeta_t = R_x\gamma_t\ln^a N`); 1/2 for sub-Gaussian data.
    n_queries : int
        DP-STAT's K (grid :math:`\Delta = B2^{-K}`; practical value,
        docs/notes/varshney2022.md §8 item 6).
    noise_multiplier_rule : {"exact", "paper", "paper_general", "tight"}
        See :func:`dpreg.estimators.ambssgd_privacy.ambssgd_noise_multiplier`.
    accounting : {"paper", "disjoint"}
        See :data:`dpreg.estimators.ambssgd_privacy.ACCOUNTINGS`.
    shuffle : bool
        True (Algorithm 2): an independent permutation per trial. False: the rows are read
        in the given order by every trial (only valid when that order is already random).
    stat_margin : float
        0: the paper's stop rule. > 0: non-paper margin (see
        :func:`dpreg.estimators.ambssgd_core.ambssgd_pass`).
    bound_X, bound_y : float or None, default None
        Public data bounds, accepted like every other estimator's and checked against
        the data (never clipped); the mechanism is set by ``x_norm_sq``, ``H_norm``
        and ``stat_domain``, so they change nothing else. ``None``: no bound declared.

    Returns
    -------
    Fit
        ``theta`` (trials, d); ``budget_spent`` recomputed from the per-mechanism ledger
        (:math:`1/\alpha^2`-zCDP, converted with Bun & Steinke Prop. 1.3, or CKS for
        ``rule="tight"``); diagnostics with per-step ``step_zeta``, ``step_gamma``,
        ``step_stop_index``, ``step_no_break``, ``step_clip_fraction`` of shape
        (trials, T).

    Notes
    -----
    *Privacy* (Theorem 3.6, replace-one): per block, DP-STAT is
    :math:`1/(2\alpha^2)`-zCDP (K queries, sensitivity 1, variance :math:`K\alpha^2`)
    and the step is :math:`1/(2\alpha^2)`-zCDP (sensitivity :math:`2\eta\zeta_t/b` --
    replacing one row moves one clipped term of norm :math:`\le\zeta_t` --, noise std
    :math:`2\eta\zeta_t\alpha/b`); :math:`\zeta_t` is itself a DP output. Blocks are
    disjoint and the leftover rows unused, so parallel composition gives
    :math:`1/\alpha^2`-zCDP for the pass, for any data (shuffling is not needed for
    privacy, docs/notes/varshney2022.md §8 item 23).

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ZCDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4000, 2))
    >>> y = X @ np.array([1.0, -1.0]) + 0.1 * rng.normal(size=4000)
    >>> fit = fit_dp_ambssgd(X, y, budget=ZCDP(0.5), rng=rng, trials=2, x_norm_sq=2.0, H_norm=1.0,
    ...                      stat_domain=20.0)
    >>> fit.theta.shape, fit.budget_spent
    ((2, 2), ZCDP(rho=0.5000000000000001))
    """
    return _fit(
        X, y, clip_rule="adaptive", budget=budget, rng=rng, trials=trials,
        x_norm_sq=x_norm_sq, H_norm=H_norm, stat_domain=stat_domain, fixed_clip=None,
        kappa=kappa, c1=c1, T=T, eta=eta, a=a, n_queries=n_queries,
        noise_multiplier_rule=noise_multiplier_rule, accounting=accounting,
        stat_margin=stat_margin, shuffle=shuffle, oracle=None, oracle_sigma=0.0,
        name="dp_ambssgd", bound_X=bound_X, bound_y=bound_y,
    )  # fmt: skip


def fit_dp_ambssgd_fixedclip(
    X: Any,
    y: Any,
    *,
    budget: Budget,
    rng: np.random.Generator,
    trials: int = 1,
    x_norm_sq: float,
    H_norm: float,
    stat_domain: float | None = None,
    fixed_clip: float | None = None,
    kappa: float = 1.0,
    c1: float = 1.0,
    T: int | None = None,
    eta: float | None = None,
    a: float = 0.5,
    noise_multiplier_rule: str = "exact",
    shuffle: bool = True,
    bound_X: float | None = None,
    bound_y: float | None = None,
) -> Fit:
    r"""Fixed-clip DP-AMBSSGD (ablation, docs/notes/varshney2022.md §5.1 method 3): no DP-STAT.

    Same blocks, step size and tail average; the clip is the constant ``fixed_clip``
    (default :math:`R_xB\ln^aN`, the adaptive rule's largest value). Only the gradient
    mechanism spends budget, so its multiplier is :math:`\alpha/\sqrt2`
    (:func:`~dpreg.estimators.ambssgd_privacy.fixed_clip_noise_multiplier`). The stat
    rows are read and ignored so that both variants see the same batches. Parameters as
    :func:`fit_dp_ambssgd`; ``stat_domain`` only sets the default ``fixed_clip``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ZCDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4000, 2))
    >>> y = X @ np.array([1.0, -1.0]) + 0.1 * rng.normal(size=4000)
    >>> fit = fit_dp_ambssgd_fixedclip(X, y, budget=ZCDP(0.5), rng=rng, x_norm_sq=2.0, H_norm=1.0,
    ...                                fixed_clip=5.0)
    >>> fit.theta.shape
    (1, 2)
    """
    return _fit(
        X, y, clip_rule="fixed", budget=budget, rng=rng, trials=trials,
        x_norm_sq=x_norm_sq, H_norm=H_norm, stat_domain=stat_domain, fixed_clip=fixed_clip,
        kappa=kappa, c1=c1, T=T, eta=eta, a=a, n_queries=DEFAULT_N_QUERIES,
        noise_multiplier_rule=noise_multiplier_rule, accounting="paper", stat_margin=0.0,
        shuffle=shuffle, oracle=None, oracle_sigma=0.0, name="dp_ambssgd_fixedclip",
        bound_X=bound_X, bound_y=bound_y,
    )  # fmt: skip


def fit_dp_ambssgd_oracleclip(
    X: Any,
    y: Any,
    *,
    budget: Budget,
    rng: np.random.Generator,
    trials: int = 1,
    x_norm_sq: float,
    H_norm: float,
    w_star: Any,
    H: Any,
    sigma: float,
    kappa: float = 1.0,
    K2: float = 1.0,
    c1: float = 1.0,
    T: int | None = None,
    eta: float | None = None,
    a: float = 0.5,
    noise_multiplier_rule: str = "exact",
    shuffle: bool = True,
) -> Fit:
    r"""Oracle-clip DP-AMBSSGD: **not private** (uses :math:`w^*`).

    Method 4 of docs/notes/varshney2022.md §5.1.

    :math:`\zeta_t = R_xK_2\ln^{2a}N(\sqrt\kappa\|w_t - w^*\|_H + \sigma)`, the bound of
    Lemma 3.11 that DP-STAT is meant to attain; gradient noise multiplier
    :math:`\alpha/\sqrt2` as for the fixed clip. ``budget_spent`` is None. ``w_star``,
    ``H`` (eigenvalues of a diagonal H, or H) and ``sigma`` are the population truth;
    other parameters as :func:`fit_dp_ambssgd`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ZCDP
    >>> rng = np.random.default_rng(0)
    >>> w = np.array([1.0, -1.0])
    >>> X = rng.normal(size=(4000, 2))
    >>> y = X @ w + 0.1 * rng.normal(size=4000)
    >>> fit = fit_dp_ambssgd_oracleclip(X, y, budget=ZCDP(0.5), rng=rng, x_norm_sq=2.0, H_norm=1.0,
    ...                                 w_star=w, H=np.eye(2), sigma=0.1)  # NOT private: uses w*
    >>> fit.theta.shape
    (1, 2)
    """
    X = check_matrix(X, "X")  # first, so a bad X is named as X
    d = X.shape[1]
    w_star = _as_real_array(w_star, "w_star")
    H = _as_real_array(H, "H")
    if w_star.shape != (d,) or not np.all(np.isfinite(w_star)):
        raise ValueError(f"w_star must be a finite vector of shape ({d},)")
    if H.shape not in ((d,), (d, d)) or not np.all(np.isfinite(H)):
        raise ValueError(f"H must be finite, of shape ({d},) (eigenvalues) or ({d}, {d})")
    sigma = check_real(sigma, "sigma")
    if not (sigma >= 0 and math.isfinite(sigma)):
        raise ValueError(f"sigma must be a finite number >= 0; got {sigma!r}")
    oracle = OracleInfo(w_star=w_star, H=H, kappa=float(kappa), K2=float(K2))
    return _fit(
        X, y, clip_rule="oracle", budget=budget, rng=rng, trials=trials,
        x_norm_sq=x_norm_sq, H_norm=H_norm, stat_domain=None, fixed_clip=None,
        kappa=kappa, c1=c1, T=T, eta=eta, a=a, n_queries=DEFAULT_N_QUERIES,
        noise_multiplier_rule=noise_multiplier_rule, accounting="paper", stat_margin=0.0,
        shuffle=shuffle, oracle=oracle, oracle_sigma=0.0, name="dp_ambssgd_oracleclip",
    )  # fmt: skip


def fit_ambssgd_sgd(
    X: Any,
    y: Any,
    *,
    rng: np.random.Generator,
    trials: int = 1,
    x_norm_sq: float,
    H_norm: float,
    budget: Budget | None = None,
    kappa: float = 1.0,
    c1: float = 1.0,
    T: int | None = None,
    eta: float | None = None,
    shuffle: bool = True,
) -> Fit:
    r"""Non-private one-pass shuffled mini-batch SGD with DP-AMBSSGD's schedule.

    :math:`\alpha = 0` and no clipping (docs/notes/varshney2022.md §5.1 method 1): the
    reference that isolates the cost of privacy. ``budget`` is ignored (accepted so that
    configs can pass one); ``budget_spent`` is None.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4000, 2))
    >>> y = X @ np.array([1.0, -1.0]) + 0.1 * rng.normal(size=4000)
    >>> fit = fit_ambssgd_sgd(X, y, rng=rng, x_norm_sq=2.0, H_norm=1.0)
    >>> fit.theta.shape, fit.budget_spent
    ((1, 2), None)
    """
    del budget
    return _fit(
        X, y, clip_rule="none", budget=None, rng=rng, trials=trials,
        x_norm_sq=x_norm_sq, H_norm=H_norm, stat_domain=None, fixed_clip=None,
        kappa=kappa, c1=c1, T=T, eta=eta, a=0.5, n_queries=DEFAULT_N_QUERIES,
        noise_multiplier_rule="exact", accounting="paper", stat_margin=0.0,
        shuffle=shuffle, oracle=None, oracle_sigma=0.0, name="ambssgd_sgd",
    )  # fmt: skip
