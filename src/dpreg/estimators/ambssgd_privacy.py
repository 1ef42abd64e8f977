r"""Privacy accounting of Varshney, Thakurta & Jain (2022): DP-AMBSSGD, DP-SSGD, DP-SGD.

Three mechanisms, each with its own unit and neighbouring relation (all stated below):

* **DP-AMBSSGD** (Algorithm 2, Theorem 3.6; Appendix B.1). Per block, DP-STAT (Algorithm
  3) is :math:`\frac{1}{2\alpha^2}`-zCDP (Lemma 3.10: K counting queries, sensitivity 1,
  variance :math:`K\alpha^2`) and the noisy clipped mini-batch step is
  :math:`\frac{1}{2\alpha^2}`-zCDP (sensitivity :math:`2\eta\zeta_t/b`, noise std
  :math:`2\eta\zeta_t\alpha/b`). Blocks are disjoint, so by parallel composition the whole
  pass is :math:`\frac{1}{\alpha^2}`-zCDP (paper accounting). The multiplier follows from
  the zCDP -> (epsilon, delta) conversion of Bun & Steinke (2016, Prop. 1.3):
  :math:`\alpha = 1/(\sqrt{L + \varepsilon} - \sqrt{L})`, :math:`L = \ln(1/\delta)`
  (``"exact"``, the default), or the paper's looser sufficient values
  :math:`2\sqrt{L+\varepsilon}/\varepsilon` (``"paper_general"``, Thm 3.6) and
  :math:`\sqrt{8L}/\varepsilon` (``"paper"``, Thm 3.7; only valid for
  :math:`\varepsilon \le L`, refused otherwise).
* **DP-SSGD** (Algorithm 1, Theorem 3.1; Appendix A.1). Each step is an
  :math:`(\varepsilon_0, \delta_0)`-DP local randomizer (Gaussian, replace-one sensitivity
  :math:`2\eta\zeta`, noise std :math:`2\eta\zeta\alpha`); amplification by shuffling
  (Feldman, McMillan & Talwar 2021, Theorems 3.1 and 3.8) gives the central guarantee.
  Valid only for :math:`\varepsilon_0 \le \ln(N / (16 \ln(2/\hat\delta)))`; outside that
  range the calibration refuses (N too small) or warns (target epsilon not reachable).
* **DP-SGD with Poisson subsampling** (Abadi et al. 2016), our baseline: RDP or PLD
  accounting from ``dp-accounting`` (add-or-remove-one neighbours, as dp-accounting
  requires for Poisson sampling; this favours the baseline, whose replace-one guarantee
  would be weaker).

Neighbouring relation of DP-AMBSSGD and DP-SSGD: replace one record
(docs/notes/varshney2022.md §8 item 14). The paper's alpha is a *noise multiplier*, named
``noise_multiplier`` here (item 24).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import warnings
from dataclasses import dataclass

from dpreg._validation import check_choice, check_positive, check_probability
from dpreg.privacy.conversions import eps_to_zcdp
from dpreg.privacy.gaussian import analytic_gaussian_sigma, gaussian_zcdp
from dpreg.privacy.poisson_pld import poisson_pld_epsilon
from dpreg.privacy.poisson_rdp import poisson_rdp_epsilon

__all__ = [
    "ACCOUNTINGS",
    "NOISE_MULTIPLIER_RULES",
    "AmbssgdLedger",
    "ShufflingRegimeWarning",
    "SsgdCalibration",
    "ambssgd_ledger",
    "ambssgd_noise_multiplier",
    "calibrate_dp_ssgd",
    "calibrate_poisson_dpsgd",
    "fixed_clip_noise_multiplier",
    "noise_multiplier_from_rho",
    "poisson_dpsgd_epsilon",
    "shuffle_delta",
    "shuffle_epsilon",
    "shuffle_max_local_epsilon",
]

NOISE_MULTIPLIER_RULES: tuple[str, ...] = ("exact", "paper", "paper_general", "tight")
"""``exact``: 1/(sqrt(L+eps) - sqrt(L)); ``paper``: sqrt(8 L)/eps (Thm 3.7);
``paper_general``: 2 sqrt(L+eps)/eps (Thm 3.6); ``tight``: from the Canonne, Kamath &
Steinke (2020) conversion (an extension, not in the paper)."""

ACCOUNTINGS: tuple[str, ...] = ("paper", "disjoint")
"""``paper``: per-block rho = rho_stat + rho_grad = 1/alpha^2 (Theorem 3.6).
``disjoint``: with the disjoint stat/gradient split (docs/notes/varshney2022.md §8 item 3)
one record is in only one of the two samples, so per-block rho = max(rho_stat, rho_grad) =
1/(2 alpha^2) (adaptive composition in which only one mechanism's input changes). Not in the
paper."""


class ShufflingRegimeWarning(UserWarning):
    """DP-SSGD was asked for a target outside the shuffling-amplification regime."""


# --------------------------------------------------------------------------- DP-AMBSSGD


def _log_inv_delta(delta: float) -> float:
    return -math.log(check_probability(delta, "delta"))


def noise_multiplier_from_rho(rho: float) -> float:
    """Noise multiplier alpha of a 1/alpha^2-zCDP mechanism: ``1/sqrt(rho)``."""
    rho = check_positive(rho, "rho", allow_inf=True)
    return 0.0 if math.isinf(rho) else 1.0 / math.sqrt(rho)


def ambssgd_noise_multiplier(epsilon: float, delta: float, rule: str = "exact") -> float:
    r"""Noise multiplier :math:`\alpha` making DP-AMBSSGD (epsilon, delta)-DP.

    DP-AMBSSGD is :math:`1/\alpha^2`-zCDP (Theorem 3.6). With
    :math:`L = \ln(1/\delta)`:

    * ``"exact"``: :math:`\alpha = 1/(\sqrt{L+\varepsilon} - \sqrt{L})
      = (\sqrt{L+\varepsilon} + \sqrt{L})/\varepsilon`, the smallest alpha for which
      Bun & Steinke (2016, Prop. 1.3), :math:`\varepsilon = \rho + 2\sqrt{\rho L}`,
      gives exactly the target (the proof of Theorem 3.6 uses this conversion);
    * ``"paper_general"``: :math:`2\sqrt{L+\varepsilon}/\varepsilon` (Theorem 3.6);
    * ``"paper"``: :math:`\sqrt{8L}/\varepsilon` (Theorem 3.7), sufficient only when
      :math:`\varepsilon \le L` -- refused otherwise;
    * ``"tight"``: :math:`1/\sqrt{\rho}` with :math:`\rho` from Canonne, Kamath &
      Steinke (2020, Cor. 13) (:func:`dpreg.privacy.conversions.eps_to_zcdp`), an
      extension: smaller than ``"exact"``.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0 (``inf`` gives 0: no noise).
    delta : float
        Target delta in (0, 1).
    rule : {"exact", "paper", "paper_general", "tight"}

    Returns
    -------
    float
        alpha >= 0.

    Raises
    ------
    ValueError
        Bad epsilon/delta/rule, or ``rule="paper"`` with ``epsilon > ln(1/delta)``.
    """
    epsilon = check_positive(epsilon, "epsilon", allow_inf=True)
    L = _log_inv_delta(delta)
    check_choice(rule, "rule", NOISE_MULTIPLIER_RULES)
    if math.isinf(epsilon):
        return 0.0
    if rule == "exact":
        # (sqrt(L+eps) + sqrt(L)) / eps == 1/(sqrt(L+eps) - sqrt(L)) without cancellation.
        return (math.sqrt(L + epsilon) + math.sqrt(L)) / epsilon
    if rule == "paper_general":
        return 2.0 * math.sqrt(L + epsilon) / epsilon
    if rule == "paper":
        if epsilon > L:
            raise ValueError(
                f"rule='paper' (alpha = sqrt(8 ln(1/delta))/epsilon, Theorem 3.7) needs"
                f" epsilon <= ln(1/delta) = {L:.4g}; got epsilon={epsilon!r}:"
                " use rule='exact' or 'paper_general'"
            )
        return math.sqrt(8.0 * L) / epsilon
    return noise_multiplier_from_rho(eps_to_zcdp(epsilon, delta, method="tight"))


def fixed_clip_noise_multiplier(alpha: float) -> float:
    r"""Multiplier of the fixed-clip ablation at the same budget: :math:`\alpha/\sqrt2`.

    Without DP-STAT only the gradient mechanism remains, whose zCDP is
    :math:`1/(2\alpha_{\rm fixed}^2)`; equating it to the adaptive algorithm's
    :math:`1/\alpha^2` gives :math:`\alpha_{\rm fixed} = \alpha/\sqrt2`
    (docs/notes/varshney2022.md §3.2).
    """
    return alpha / math.sqrt(2.0)


@dataclass(frozen=True)
class AmbssgdLedger:
    """zCDP ledger of one DP-AMBSSGD block (and, by parallel composition, of the pass).

    Attributes
    ----------
    rho_gradient : float
        zCDP of the noisy clipped mini-batch step (Gaussian mechanism).
    rho_stat_query : float
        zCDP of one DP-STAT counting query.
    n_stat_queries : int
        Upper bound on the number of DP-STAT queries (K).
    accounting : str
        ``"paper"`` (sum) or ``"disjoint"`` (max); see :data:`ACCOUNTINGS`.
    """

    rho_gradient: float
    rho_stat_query: float
    n_stat_queries: int
    accounting: str

    @property
    def rho_stat(self) -> float:
        """Return the zCDP of one DP-STAT call: K queries compose additively (Lemma 3.10)."""
        return self.n_stat_queries * self.rho_stat_query

    @property
    def rho_block(self) -> float:
        """Return the zCDP of one block: sum (paper) or max (disjoint) of the mechanisms."""
        if self.accounting == "paper":
            return self.rho_gradient + self.rho_stat
        return max(self.rho_gradient, self.rho_stat)

    @property
    def rho_total(self) -> float:
        """Return the zCDP of the whole pass: blocks are disjoint, parallel composition (max)."""
        return self.rho_block


def ambssgd_ledger(
    noise_multiplier_gradient: float,
    noise_multiplier_stat: float | None,
    n_stat_queries: int,
    *,
    accounting: str = "paper",
) -> AmbssgdLedger:
    r"""Return the zCDP of each mechanism of one DP-AMBSSGD block from its noise and sensitivity.

    Computed mechanism by mechanism with Bun & Steinke (2016, Prop. 1.6),
    :math:`\rho = \Delta^2/(2\sigma^2)` (:func:`dpreg.privacy.gaussian.gaussian_zcdp`):

    * gradient step: :math:`\Delta = 2\eta\zeta/b`, :math:`\sigma = 2\eta\zeta\alpha/b`
      (any positive :math:`\eta\zeta/b` gives the same rho; 1 is used);
    * DP-STAT query: :math:`\Delta = 1` (one replaced record moves a count by at most 1),
      :math:`\sigma = \alpha_{\rm stat}\sqrt K`.

    ``noise_multiplier_stat=None`` means no DP-STAT (fixed or oracle clip).
    """
    check_choice(accounting, "accounting", ACCOUNTINGS)
    alpha = check_positive(noise_multiplier_gradient, "noise_multiplier_gradient")
    rho_grad = gaussian_zcdp(2.0 * alpha, 2.0)
    if noise_multiplier_stat is None:
        return AmbssgdLedger(rho_grad, 0.0, 0, accounting)
    alpha_s = check_positive(noise_multiplier_stat, "noise_multiplier_stat")
    K = int(n_stat_queries)
    if K < 1:
        raise ValueError(f"n_stat_queries must be >= 1; got {n_stat_queries!r}")
    rho_query = gaussian_zcdp(alpha_s * math.sqrt(K), 1.0)
    return AmbssgdLedger(rho_grad, rho_query, K, accounting)


# ------------------------------------------------------------------------------ DP-SSGD


def shuffle_max_local_epsilon(n: int, delta: float) -> float:
    r"""Largest local epsilon covered by FMT21: :math:`\ln(n / (16\ln(2/\delta)))`.

    Feldman, McMillan & Talwar (2021), Theorem 3.1 / 3.8 hypothesis. May be <= 0
    (no amplification is certified for such small ``n``).
    """
    delta = check_probability(delta, "delta")
    return math.log(n / (16.0 * math.log(2.0 / delta)))


def shuffle_epsilon(epsilon0: float, n: int, delta: float) -> float:
    r"""Central epsilon after shuffling n adaptive epsilon0-DP local randomizers.

    Feldman, McMillan & Talwar (2021), "Hiding among the clones", Theorem 3.1 (and 3.8
    for adaptive (epsilon0, delta0) randomizers):

    .. math::
        \varepsilon = \ln\Big(1 + \frac{e^{\varepsilon_0}-1}{e^{\varepsilon_0}+1}
        \Big(\frac{8\sqrt{e^{\varepsilon_0}\ln(4/\delta)}}{\sqrt n}
        + \frac{8e^{\varepsilon_0}}{n}\Big)\Big),

    valid for :math:`\varepsilon_0 \le \ln(n/(16\ln(2/\delta)))`
    (:func:`shuffle_max_local_epsilon`); a ``ValueError`` outside it.
    """
    epsilon0 = check_positive(epsilon0, "epsilon0")
    delta = check_probability(delta, "delta")
    cap = shuffle_max_local_epsilon(n, delta)
    if epsilon0 > cap * (1 + 1e-12):
        raise ValueError(
            f"epsilon0={epsilon0:.6g} is outside the FMT21 range epsilon0 <= ln(n/(16"
            f" ln(2/delta))) = {cap:.6g} (n={n}, delta={delta:g})"
        )
    e0 = math.exp(epsilon0)
    inner = 8.0 * math.sqrt(e0 * math.log(4.0 / delta) / n) + 8.0 * e0 / n
    return math.log1p(math.expm1(epsilon0) / (e0 + 1.0) * inner)


def shuffle_delta(epsilon: float, epsilon0: float, delta0: float, n: int, delta: float) -> float:
    r"""Total delta of FMT21 Theorem 3.8.

    :math:`\delta + (e^\varepsilon+1)(1+e^{-\varepsilon_0}/2)\,n\,\delta_0`.
    """
    return delta + (math.exp(epsilon) + 1.0) * (1.0 + math.exp(-epsilon0) / 2.0) * n * delta0


LOCAL_MECHANISMS: tuple[str, ...] = ("classic", "analytic")


@dataclass(frozen=True)
class SsgdCalibration:
    r"""Noise calibration of DP-SSGD (Algorithm 1) by amplification by shuffling.

    Attributes
    ----------
    noise_multiplier : float
        alpha: per-step noise std ``2 eta zeta alpha`` on the iterate.
    epsilon0, delta0 : float
        Per-step local guarantee of the Gaussian randomizer.
    epsilon, delta : float
        Certified central (epsilon, delta) after shuffling (FMT21 Thm 3.8).
    target_epsilon, target_delta : float
        What was asked.
    in_regime : bool
        True if the target was reached inside FMT21's range (and, for the classic
        Gaussian, ``epsilon0 < 1``); False if the target was unreachable and the
        largest admissible epsilon0 was used (then ``epsilon < target_epsilon``).
    local_mechanism : str
        ``"classic"`` (Dwork & Roth Thm A.1, as the paper's Lemma A.1) or ``"analytic"``.
    paper_regime_epsilon : float
        :math:`\sqrt{\ln(N/\delta)/N}`, the order of epsilon Theorem 3.1 covers.
    """

    noise_multiplier: float
    epsilon0: float
    delta0: float
    epsilon: float
    delta: float
    target_epsilon: float
    target_delta: float
    in_regime: bool
    local_mechanism: str
    paper_regime_epsilon: float


def _local_noise_multiplier(epsilon0: float, delta0: float, mechanism: str) -> float:
    if mechanism == "classic":
        return math.sqrt(2.0 * math.log(1.25 / delta0)) / epsilon0
    return analytic_gaussian_sigma(epsilon0, delta0, 1.0)


def calibrate_dp_ssgd(
    epsilon: float,
    delta: float,
    n: int,
    *,
    local_mechanism: str = "classic",
    delta_split: float = 0.5,
) -> SsgdCalibration:
    r"""Noise multiplier of DP-SSGD for a central (epsilon, delta) target.

    The paper's Theorem 3.1 only gives :math:`\alpha = \Omega(\log(N/\delta)/(\varepsilon
    \sqrt N))` with unspecified constants (docs/notes/varshney2022.md §3.1, §8 item 17). We
    calibrate with the concrete FMT21 bound (inferred):

    1. :math:`\hat\delta = \text{delta\_split}\cdot\delta` goes to the shuffling bound,
       the rest to the local deltas: :math:`\delta_0 = (1-\text{delta\_split})\delta /
       ((e^{\varepsilon}+1)(1+e^{-\varepsilon_0}/2) N)` (Theorem 3.8);
    2. :math:`\varepsilon_0` is the largest value with
       :func:`shuffle_epsilon` :math:`(\varepsilon_0, N, \hat\delta) \le \varepsilon`,
       capped by FMT21's range and, for the classic Gaussian, by
       :math:`\varepsilon_0 < 1` (Dwork & Roth Thm A.1's hypothesis);
    3. :math:`\alpha = \sqrt{2\ln(1.25/\delta_0)}/\varepsilon_0` (classic, Lemma A.1)
       or the analytic Gaussian multiplier (Balle & Wang 2018).

    Outside the regime: if FMT21 covers no positive epsilon0 (N too small) a
    ``ValueError`` is raised; if the target epsilon exceeds what the largest admissible
    epsilon0 gives, a :class:`ShufflingRegimeWarning` is issued and the smaller
    epsilon that is actually certified is returned (``in_regime=False``).

    Parameters
    ----------
    epsilon, delta : float
        Central target.
    n : int
        Number of records (= steps).
    local_mechanism : {"classic", "analytic"}
    delta_split : float in (0, 1)

    Returns
    -------
    SsgdCalibration
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    check_choice(local_mechanism, "local_mechanism", LOCAL_MECHANISMS)
    delta_split = check_probability(delta_split, "delta_split")
    if isinstance(n, bool) or int(n) != n or n < 2:
        raise ValueError(f"n must be an integer >= 2; got {n!r}")
    n = int(n)
    delta_hat = delta_split * delta
    cap = shuffle_max_local_epsilon(n, delta_hat)
    if cap <= 0:
        raise ValueError(
            f"amplification by shuffling (FMT21) certifies nothing for n={n} at"
            f" delta={delta:g}: it needs epsilon0 <= ln(n/(16 ln(2/delta))) = {cap:.3g} <= 0;"
            " DP-SSGD is not covered here (use more data or DP-AMBSSGD)"
        )
    if local_mechanism == "classic":
        cap = min(cap, 1.0 - 1e-9)

    def central(e0: float) -> float:
        return shuffle_epsilon(e0, n, delta_hat)

    in_regime = True
    if central(cap) <= epsilon:
        e0 = cap
        in_regime = central(cap) >= epsilon * (1 - 1e-9)
    else:
        from scipy import optimize  # imported on first use: job start-up (docs/scaling.md)

        e0 = optimize.brentq(lambda e: central(e) - epsilon, 1e-12, cap, xtol=1e-14, rtol=1e-13)
        for _ in range(10_000):
            if central(e0) <= epsilon:
                break
            e0 *= 1 - 1e-12
    eps_central = central(e0)
    if not in_regime:
        warnings.warn(
            f"DP-SSGD: epsilon={epsilon:g} is outside the shuffling regime at n={n},"
            f" delta={delta:g} (local epsilon0 capped at {e0:.4g}); the certified epsilon"
            f" is {eps_central:.4g} < target: the run is over-noised (Theorem 3.1 covers"
            f" epsilon of order sqrt(ln(N/delta)/N) = {math.sqrt(math.log(n / delta) / n):.3g})",
            ShufflingRegimeWarning,
            stacklevel=2,
        )
    # delta0 uses the target epsilon (>= certified), so the delta bound is conservative.
    delta0 = (
        (1 - delta_split) * delta / ((math.exp(epsilon) + 1.0) * (1.0 + math.exp(-e0) / 2.0) * n)
    )
    alpha = _local_noise_multiplier(e0, delta0, local_mechanism)
    total_delta = shuffle_delta(eps_central, e0, delta0, n, delta_hat)
    return SsgdCalibration(
        noise_multiplier=alpha,
        epsilon0=e0,
        delta0=delta0,
        epsilon=eps_central,
        delta=total_delta,
        target_epsilon=epsilon,
        target_delta=delta,
        in_regime=in_regime,
        local_mechanism=local_mechanism,
        paper_regime_epsilon=math.sqrt(math.log(n / delta) / n),
    )


# ----------------------------------------------------------------- DP-SGD with Poisson


ACCOUNTANTS: tuple[str, ...] = ("rdp", "pld")

PLD_DISCRETIZATION = 1e-3
"""``value_discretization_interval`` of the PLD accountant."""

_PLD_PATH = "arrays"
"""``"arrays"``: :func:`dpreg.privacy.poisson_pld.poisson_pld_epsilon` (the accountant's
grid inversions as array operations); ``"accountant"``: a fresh ``PLDAccountant``,
the reference (the same float, tested in ``tests/unit/test_poisson_pld.py``)."""


def _poisson_event(sampling_rate: float, noise_multiplier: float, steps: int):
    import dp_accounting

    event = dp_accounting.PoissonSampledDpEvent(
        sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier)
    )
    return dp_accounting.SelfComposedDpEvent(event, steps)


def _fresh_accountant(accountant: str):
    if accountant == "rdp":
        from dp_accounting.rdp import RdpAccountant

        # dp-accounting's default orders: the dense grid of dpreg.privacy.rdp makes the
        # subsampled-Gaussian RDP series fail to converge at large fractional orders.
        return RdpAccountant()
    from dp_accounting.pld import PLDAccountant

    return PLDAccountant(value_discretization_interval=PLD_DISCRETIZATION)


@contextlib.contextmanager
def _quiet_absl():
    # dp-accounting logs one warning per RDP order whose series does not converge (those
    # orders are excluded, which only loosens the bound); keep run logs readable.
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def poisson_dpsgd_epsilon(
    noise_multiplier: float, sampling_rate: float, steps: int, delta: float, accountant: str = "rdp"
) -> float:
    """Epsilon at ``delta`` of ``steps`` Poisson-subsampled Gaussian mechanisms.

    ``dp_accounting`` RDP (Mironov, Talwar & Zhang 2019 for the subsampled Gaussian,
    converted with Canonne, Kamath & Steinke 2020) or PLD accounting; add-or-remove-one
    neighbours; ``noise_multiplier`` is noise std / clip norm on the gradient sum.
    """
    noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
    sampling_rate = check_positive(sampling_rate, "sampling_rate")
    if sampling_rate > 1:
        raise ValueError(f"sampling_rate must be in (0, 1]; got {sampling_rate!r}")
    delta = check_probability(delta, "delta")
    check_choice(accountant, "accountant", ACCOUNTANTS)
    return _accountant_epsilon(noise_multiplier, sampling_rate, int(steps), delta, accountant)


@functools.lru_cache(maxsize=1024)
def _accountant_epsilon(
    noise_multiplier: float, sampling_rate: float, steps: int, delta: float, accountant: str
) -> float:
    """One fresh accountant's epsilon; cached (a pure function of its public arguments).

    The calibration's bracket ends are evaluated again by ``brentq`` (its first two
    calls), and a fit certifies the noise it calibrated: those repeats cost nothing.
    RDP goes through :func:`dpreg.privacy.poisson_rdp.poisson_rdp_epsilon`, which returns
    the fresh ``RdpAccountant``'s float from the orders that can attain its minimum
    (the five calibrations of a benchmark job: 1.2-1.7 -> 0.26-0.38 s; tested equal).
    PLD goes through :func:`dpreg.privacy.poisson_pld.poisson_pld_epsilon` (``_PLD_PATH``),
    the fresh ``PLDAccountant``'s float with its grid inversions as array operations
    (``cc_fig4_digits``; tested equal).
    """
    if accountant == "rdp":
        # The full accountant's number, from the orders that can attain its minimum.
        with _quiet_absl():
            return poisson_rdp_epsilon(noise_multiplier, sampling_rate, steps, delta)
    if _PLD_PATH == "arrays":
        with _quiet_absl():
            return poisson_pld_epsilon(
                noise_multiplier, sampling_rate, steps, delta, PLD_DISCRETIZATION
            )
    acc = _fresh_accountant(accountant)
    with _quiet_absl():
        acc.compose(_poisson_event(sampling_rate, noise_multiplier, steps))
        return float(acc.get_epsilon(delta))


@functools.lru_cache(maxsize=256)
def calibrate_poisson_dpsgd(
    epsilon: float, delta: float, sampling_rate: float, steps: int, accountant: str = "rdp"
) -> float:
    """Smallest noise multiplier whose Poisson DP-SGD accounting gives <= epsilon.

    Bisection in log space on :func:`poisson_dpsgd_epsilon` (monotone decreasing), then
    the returned value is certified by one more accountant call. Cached (a pure
    function of its arguments).
    """
    epsilon = check_positive(epsilon, "epsilon")

    def gap(log_sigma: float) -> float:
        return (
            poisson_dpsgd_epsilon(math.exp(log_sigma), sampling_rate, steps, delta, accountant)
            - epsilon
        )

    lo, hi = math.log(0.05), math.log(2.0)
    for _ in range(60):  # sigma from 0.05 e^-60 to 2 e^60: far beyond any budget
        if gap(lo) > 0:
            break
        lo -= 1.0
    else:
        raise ValueError(f"epsilon={epsilon!r} is too large to calibrate DP-SGD")
    for _ in range(60):
        if gap(hi) <= 0:
            break
        hi += 1.0
    else:
        raise ValueError(f"epsilon={epsilon!r} is too small to calibrate DP-SGD")
    from scipy import optimize

    root = optimize.brentq(gap, lo, hi, xtol=1e-6)
    sigma = math.exp(root)
    for _ in range(100):
        if gap(math.log(sigma)) <= 0:
            return sigma
        sigma *= 1.0 + 1e-6
    raise ValueError(f"DP-SGD: could not certify epsilon={epsilon!r}")  # pragma: no cover
