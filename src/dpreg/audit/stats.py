r"""Statistics of an empirical privacy audit: confidence bounds on what an observer can tell.

An audit runs a mechanism many times on two neighbouring datasets D and D' and scores
every output with a statistic s. Two kinds of evidence come out of the scores:

* **Model-free threshold test** (Kairouz, Oh & Viswanath 2015; Jagielski, Ullman & Oprea
  2020, "Auditing differentially private machine learning"): a rule "say D' when
  s > t" has false-positive rate FPR and false-negative rate FNR; (epsilon, delta)-DP
  forces ``FPR + e^epsilon FNR >= 1 - delta`` and ``FNR + e^epsilon FPR >= 1 - delta``,
  so Clopper--Pearson upper bounds on both rates give a lower bound on epsilon that holds
  with probability at least ``1 - alpha``. The threshold (and its direction) is chosen on
  one half of the runs and evaluated on the other half, so the choice does not bias it.
* **Gaussian DP** (Dong, Roth & Su 2022, "Gaussian differential privacy", Def. 2.6): when
  the statistic is exactly Gaussian with the same variance under D and D', the pair is
  ``mu``-GDP with ``mu = abs(m_1 - m_0) / s``. :func:`estimate_gdp_mu` estimates it with a
  confidence interval; :func:`gdp_mu_from_approx_dp` and :func:`gdp_mu_from_zcdp` give the
  largest ``mu`` a claim allows.

Every formula here is written from the cited definitions with :mod:`scipy.stats` only: it
shares no code with the estimators' calibration (:mod:`dpreg.privacy`), so that an error
there cannot hide itself here. See ``docs/privacy.md`` ("Empirical privacy audit").
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "GDPEstimate",
    "ThresholdTest",
    "clopper_pearson",
    "epsilon_from_rates",
    "estimate_gdp_mu",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu_from_approx_dp",
    "gdp_mu_from_zcdp",
    "threshold_test",
]


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided ``1 - alpha`` binomial confidence interval (Clopper & Pearson 1934).

    Each side holds with probability ``1 - alpha/2``.

    Examples
    --------
    >>> lo, hi = clopper_pearson(0, 100, 0.05)
    >>> lo, round(hi, 4)
    (0.0, 0.0362)
    """
    k, n = int(successes), int(trials)
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1; got {k}, {n}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1); got {alpha!r}")
    from scipy import stats  # imported on use: a config check builds the cases, not this

    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def epsilon_from_rates(fpr: float, fnr: float, delta: float) -> float:
    """Smallest epsilon an (epsilon, delta)-DP mechanism needs for a test with these rates.

    ``max(log((1 - delta - fnr)/fpr), log((1 - delta - fpr)/fnr), 0)`` (Kairouz et al.
    2015, Thm. 2.1). Upper bounds on the rates give a lower bound on epsilon.

    Examples
    --------
    >>> round(epsilon_from_rates(0.05, 0.05, 0.0), 4)
    2.9444
    """
    best = 0.0
    for a, b in ((fpr, fnr), (fnr, fpr)):
        num = 1.0 - delta - b
        if num > 0:
            best = max(best, math.inf if a <= 0 else math.log(num / a))
    return best


@dataclass(frozen=True)
class ThresholdTest:
    """A held-out threshold test between the outputs on D (label 0) and D' (label 1).

    Attributes
    ----------
    epsilon_lower : float
        Lower bound on epsilon at ``delta``, valid with probability >= ``1 - alpha``.
    epsilon_point : float
        The same from the held-out rates themselves (no confidence correction).
    threshold, direction : float, int
        The rule "say D' when ``direction * s > direction * threshold``".
    fpr, fnr : float
        Held-out error rates.
    n_holdout : int
        Runs per side in the held-out half.
    """

    epsilon_lower: float
    epsilon_point: float
    threshold: float
    direction: int
    fpr: float
    fnr: float
    n_holdout: int


def _best_threshold(s0: np.ndarray, s1: np.ndarray, delta: float) -> tuple[float, int]:
    """Threshold and direction with the largest point epsilon on the selection half."""
    grid = np.unique(np.quantile(np.concatenate([s0, s1]), np.linspace(0.001, 0.999, 399)))
    s0s, s1s = np.sort(s0), np.sort(s1)
    best = (-1.0, float(grid[0]), 1)
    for direction in (1, -1):
        # "say D'" when direction*s > direction*t
        if direction == 1:
            fpr = 1.0 - np.searchsorted(s0s, grid, side="right") / s0.size
            fnr = np.searchsorted(s1s, grid, side="right") / s1.size
        else:
            fpr = np.searchsorted(s0s, grid, side="left") / s0.size
            fnr = 1.0 - np.searchsorted(s1s, grid, side="left") / s1.size
        # a pseudo-count keeps the selection away from empty tails
        fpr = (fpr * s0.size + 1.0) / (s0.size + 2.0)
        fnr = (fnr * s1.size + 1.0) / (s1.size + 2.0)
        eps = np.maximum(
            np.log(np.maximum(1 - delta - fnr, 1e-300) / fpr),
            np.log(np.maximum(1 - delta - fpr, 1e-300) / fnr),
        )
        i = int(np.argmax(eps))
        if eps[i] > best[0]:
            best = (float(eps[i]), float(grid[i]), direction)
    return best[1], best[2]


def threshold_test(
    scores0: np.ndarray, scores1: np.ndarray, *, delta: float, alpha: float = 0.05
) -> ThresholdTest:
    """Model-free lower bound on epsilon from scores of runs on D (0) and D' (1).

    The first half of each side picks the threshold and its direction; the second half
    counts errors, and one-sided Clopper--Pearson upper bounds at level ``alpha/2`` per
    rate (``alpha`` in all, Bonferroni) enter :func:`epsilon_from_rates`. If the
    mechanism is (epsilon, delta)-DP, the returned ``epsilon_lower`` exceeds epsilon with
    probability at most ``alpha``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = threshold_test(rng.normal(0, 1, 20000), rng.normal(1, 1, 20000), delta=1e-5)
    >>> 1.0 < t.epsilon_lower < gdp_epsilon(1.0, 1e-5)  # mu = 1: the true epsilon is 4.38
    True
    """
    s0 = np.asarray(scores0, dtype=np.float64).ravel()
    s1 = np.asarray(scores1, dtype=np.float64).ravel()
    if s0.size < 4 or s1.size < 4:
        raise ValueError("need at least 4 runs on each side")
    if not (np.all(np.isfinite(s0)) and np.all(np.isfinite(s1))):
        raise ValueError("scores must be finite")
    h0, h1 = s0.size // 2, s1.size // 2
    threshold, direction = _best_threshold(s0[:h0], s1[:h1], delta)
    e0, e1 = s0[h0:], s1[h1:]
    says1_on0 = int(np.sum(direction * e0 > direction * threshold))
    says0_on1 = int(np.sum(direction * e1 <= direction * threshold))
    fpr_hi = clopper_pearson(says1_on0, e0.size, alpha)[1]
    fnr_hi = clopper_pearson(says0_on1, e1.size, alpha)[1]
    fpr, fnr = says1_on0 / e0.size, says0_on1 / e1.size
    return ThresholdTest(
        epsilon_lower=epsilon_from_rates(fpr_hi, fnr_hi, delta),
        epsilon_point=epsilon_from_rates(fpr, fnr, delta),
        threshold=threshold,
        direction=direction,
        fpr=fpr,
        fnr=fnr,
        n_holdout=int(min(e0.size, e1.size)),
    )


def gdp_delta(mu: float, epsilon: float) -> float:
    r"""Privacy profile of mu-GDP: ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``.

    Dong, Roth & Su (2022), Corollary 2.13; evaluated in log space so ``e^eps`` never
    overflows.

    Examples
    --------
    >>> round(gdp_delta(1.0, 1.0), 5)
    0.12694
    """
    if mu <= 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    from scipy import special

    a = special.log_ndtr(-epsilon / mu + mu / 2)
    b = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    if b >= a:
        return 0.0
    return float(math.exp(a) * -math.expm1(b - a))


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon >= 0 with ``gdp_delta(mu, epsilon) <= delta``.

    Examples
    --------
    >>> round(gdp_epsilon(1.0, 1e-5), 4)
    4.3772
    """
    if gdp_delta(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while gdp_delta(mu, hi) > delta:
        hi *= 2.0
        if hi > 1e6:
            return math.inf
    from scipy import optimize

    return float(optimize.brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, hi, xtol=1e-12))


@functools.lru_cache(maxsize=1024)
def gdp_mu_from_approx_dp(epsilon: float, delta: float) -> float:
    """Largest mu such that mu-GDP is (epsilon, delta)-DP (inverts :func:`gdp_delta` in mu).

    Remembered per ``(epsilon, delta)`` (a pure function of its public arguments): the
    workflow's config check builds every audit cell's cases, each asking for the same claims.

    A Gaussian release certified (epsilon, delta)-DP by an exact calibration has exactly
    this mu; any larger audited mu contradicts the claim.

    Examples
    --------
    >>> round(gdp_mu_from_approx_dp(1.0, 1e-5), 4)
    0.2681
    """
    if math.isinf(epsilon):
        return math.inf
    lo, hi = 1e-8, 1.0
    while gdp_delta(hi, epsilon) < delta:
        lo, hi = hi, hi * 2.0
        if hi > 1e6:
            return math.inf
    from scipy import optimize

    return float(optimize.brentq(lambda m: gdp_delta(m, epsilon) - delta, lo, hi, xtol=1e-13))


def gdp_mu_from_zcdp(rho: float) -> float:
    """Return the mu of a Gaussian release that is exactly rho-zCDP: ``sqrt(2 rho)``.

    Bun & Steinke (2016), Prop. 1.6 (``rho = Delta^2/(2 sigma^2)``) and Dong, Roth & Su
    (2022), Thm. 2.7 (``mu = Delta/sigma``).

    Examples
    --------
    >>> gdp_mu_from_zcdp(0.5)
    1.0
    """
    return math.sqrt(2.0 * rho)


@dataclass(frozen=True)
class GDPEstimate:
    """Estimated Gaussian-DP parameter of a pair of (assumed Gaussian) score laws.

    Attributes
    ----------
    mu : float
        ``|mean_1 - mean_0| / pooled sd``.
    lower, upper : float
        Two-sided ``1 - alpha`` confidence interval (normal approximation to the
        standardised mean difference, Hedges & Olkin 1985, eq. 5.15).
    sd_ratio : float
        sd_1 / sd_0: far from 1 means the equal-variance Gaussian model does not fit.
    """

    mu: float
    lower: float
    upper: float
    sd_ratio: float


def estimate_gdp_mu(
    scores0: np.ndarray, scores1: np.ndarray, *, alpha: float = 0.05
) -> GDPEstimate:
    """Estimate mu = abs(m_1 - m_0)/s from scores on D and D' with a confidence interval.

    The variance of the standardised difference d is ``1/n_0 + 1/n_1 + d^2/(2(n_0+n_1))``
    (Hedges & Olkin 1985); the interval is ``d -/+ z_{1-alpha/2} se``, folded at 0.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> est = estimate_gdp_mu(rng.normal(0, 2, 50000), rng.normal(2, 2, 50000))
    >>> est.lower < 1.0 < est.upper
    True
    """
    s0 = np.asarray(scores0, dtype=np.float64).ravel()
    s1 = np.asarray(scores1, dtype=np.float64).ravel()
    n0, n1 = s0.size, s1.size
    if n0 < 3 or n1 < 3:
        raise ValueError("need at least 3 runs on each side")
    v0, v1 = s0.var(ddof=1), s1.var(ddof=1)
    pooled = math.sqrt(((n0 - 1) * v0 + (n1 - 1) * v1) / (n0 + n1 - 2))
    if pooled == 0:
        raise ValueError("scores have zero variance: the release is not Gaussian")
    d = abs(float(s1.mean() - s0.mean())) / pooled
    se = math.sqrt(1 / n0 + 1 / n1 + d * d / (2 * (n0 + n1)))
    from scipy import stats

    z = float(stats.norm.ppf(1 - alpha / 2))
    return GDPEstimate(
        mu=d,
        lower=max(d - z * se, 0.0),
        upper=d + z * se,
        sd_ratio=math.sqrt(v1 / v0) if v0 > 0 else math.inf,
    )
