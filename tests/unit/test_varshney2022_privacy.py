"""Privacy accounting of Varshney et al. (2022), checked against independent computations.

References: the test vectors of docs/notes/varshney2022.md §3.2 (natural logs), Bun &
Steinke (2016) Prop. 1.3 (``zcdp_to_eps(..., "simple")``), dp-accounting's RDP/PLD
accountants, Balle & Wang (2018)'s exact Gaussian privacy profile, and FMT21 Theorem 3.1
evaluated by hand.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpreg.estimators.ambssgd_privacy import (
    ShufflingRegimeWarning,
    ambssgd_ledger,
    ambssgd_noise_multiplier,
    calibrate_dp_ssgd,
    calibrate_poisson_dpsgd,
    fixed_clip_noise_multiplier,
    poisson_dpsgd_epsilon,
    shuffle_delta,
    shuffle_epsilon,
    shuffle_max_local_epsilon,
)
from dpreg.privacy.conversions import zcdp_to_eps
from dpreg.privacy.gaussian import gaussian_delta
from dpreg.privacy.rdp import gaussian_rdp_epsilon

# (epsilon, delta, alpha exact, 2 sqrt(L+eps)/eps, sqrt(8L)/eps, rho)
# -- the table of docs/notes/varshney2022.md §3.2
VECTORS = [
    (0.1, 1e-5, 68.008, 68.156, 95.971, 2.16e-4),
    (0.5, 1e-5, 13.718, 13.864, 19.194, 5.314e-3),
    (1.0, 1e-5, 6.930, 7.075, 9.597, 0.02082),
    (1.0, 1e-6, 7.566, 7.698, 10.513, 0.01747),
    (2.0, 1e-6, 3.847, 3.977, 5.257, 0.06757),
    (5.0, 1e-6, 1.611, 1.735, 2.103, 0.3853),
    (10.0, 1e-6, 0.860, 0.976, 1.051, 1.353),
]


@pytest.mark.parametrize(("eps", "delta", "exact", "general", "paper", "rho"), VECTORS)
def test_noise_multipliers_match_notes_table(eps, delta, exact, general, paper, rho):
    a = ambssgd_noise_multiplier(eps, delta, "exact")
    assert a == pytest.approx(exact, abs=1.5e-3)
    assert 1 / a**2 == pytest.approx(rho, rel=2e-3)
    assert ambssgd_noise_multiplier(eps, delta, "paper_general") == pytest.approx(
        general, abs=1.5e-3
    )
    if eps <= math.log(1 / delta):
        assert ambssgd_noise_multiplier(eps, delta, "paper") == pytest.approx(paper, abs=1.5e-3)


@pytest.mark.parametrize(("eps", "delta"), [(v[0], v[1]) for v in VECTORS] + [(0.01, 1e-9)])
def test_exact_multiplier_converts_back_to_epsilon(eps, delta):
    a = ambssgd_noise_multiplier(eps, delta, "exact")
    # Bun & Steinke Prop. 1.3: eps = rho + 2 sqrt(rho L) with rho = 1/alpha^2.
    assert zcdp_to_eps(1 / a**2, delta, "simple") == pytest.approx(eps, rel=1e-9)
    assert ambssgd_noise_multiplier(eps, delta, "paper_general") >= a
    assert ambssgd_noise_multiplier(eps, delta, "tight") <= a
    tight = ambssgd_noise_multiplier(eps, delta, "tight")
    assert zcdp_to_eps(1 / tight**2, delta, "tight") <= eps * (1 + 1e-9)


def test_paper_multiplier_refused_outside_its_validity():
    L = math.log(1e6)
    assert ambssgd_noise_multiplier(L, 1e-6, "paper") >= ambssgd_noise_multiplier(L, 1e-6)
    with pytest.raises(ValueError, match="epsilon <= ln"):
        ambssgd_noise_multiplier(L * 1.01, 1e-6, "paper")


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan])
def test_multiplier_rejects_bad_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon"):
        ambssgd_noise_multiplier(bad, 1e-6)


def test_multiplier_rejects_bad_delta_and_rule():
    with pytest.raises(ValueError, match="delta"):
        ambssgd_noise_multiplier(1.0, 1.0)
    with pytest.raises(ValueError, match="rule"):
        ambssgd_noise_multiplier(1.0, 1e-6, "sqrt3")


@pytest.mark.parametrize("K", [1, 20, 200])
def test_ledger_is_one_over_alpha_squared(K):
    a = 7.566
    paper = ambssgd_ledger(a, a, K, accounting="paper")
    assert paper.rho_gradient == pytest.approx(1 / (2 * a**2), rel=1e-12)
    assert paper.rho_stat == pytest.approx(1 / (2 * a**2), rel=1e-12)
    assert paper.rho_total == pytest.approx(1 / a**2, rel=1e-12)
    disjoint = ambssgd_ledger(a, a, K, accounting="disjoint")
    assert disjoint.rho_total == pytest.approx(1 / (2 * a**2), rel=1e-12)
    fixed = ambssgd_ledger(fixed_clip_noise_multiplier(a), None, 1)
    assert fixed.rho_total == pytest.approx(1 / a**2, rel=1e-12)


@pytest.mark.parametrize(("eps", "delta"), [(1.0, 1e-6), (0.5, 1e-5), (8.0, 1e-6)])
def test_block_composition_against_dp_accounting(eps, delta):
    """One block = 1 Gaussian (multiplier alpha) + K Gaussians (multiplier alpha sqrt K)."""
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    K = 20
    a = ambssgd_noise_multiplier(eps, delta)
    acc = RdpAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(a))
    acc.compose(dp_accounting.GaussianDpEvent(a * math.sqrt(K)), K)
    eps_rdp = acc.get_epsilon(delta)
    # RDP of the composition is exactly (1/alpha^2) * order; CKS conversion <= simple one.
    assert eps_rdp <= eps * (1 + 1e-9)
    assert eps_rdp >= 0.75 * eps


def test_shuffle_epsilon_matches_hand_formula():
    n, delta, e0 = 10**5, 1e-6, 0.5
    x = math.exp(e0)
    by_hand = math.log(
        1 + (x - 1) / (x + 1) * (8 * math.sqrt(x * math.log(4 / delta) / n) + 8 * x / n)
    )
    assert shuffle_epsilon(e0, n, delta) == pytest.approx(by_hand, rel=1e-14)
    assert shuffle_max_local_epsilon(n, delta) == pytest.approx(
        math.log(n / (16 * math.log(2 / delta))), rel=1e-14
    )
    with pytest.raises(ValueError, match="FMT21"):
        shuffle_epsilon(shuffle_max_local_epsilon(n, delta) + 0.1, n, delta)


@pytest.mark.parametrize("mechanism", ["classic", "analytic"])
def test_dp_ssgd_calibration_is_certified(mechanism):
    n, eps, delta = 20000, 0.05, 1e-6
    cal = calibrate_dp_ssgd(eps, delta, n, local_mechanism=mechanism)
    assert cal.in_regime
    assert cal.epsilon <= eps * (1 + 1e-9)
    assert cal.epsilon >= eps * (1 - 1e-6)
    assert cal.delta <= delta * (1 + 1e-9)
    # Total delta recomputed from FMT21 Thm 3.8.
    assert shuffle_delta(cal.epsilon, cal.epsilon0, cal.delta0, n, delta / 2) == pytest.approx(
        cal.delta, rel=1e-12
    )
    # Each step is an (eps0, delta0)-DP Gaussian with multiplier alpha: Balle & Wang profile.
    assert gaussian_delta(cal.noise_multiplier, cal.epsilon0, 1.0) <= cal.delta0
    if mechanism == "classic":
        assert cal.noise_multiplier == pytest.approx(
            math.sqrt(2 * math.log(1.25 / cal.delta0)) / cal.epsilon0, rel=1e-12
        )


def test_dp_ssgd_calibration_refuses_and_warns_outside_regime():
    with pytest.raises(ValueError, match="shuffling"):
        calibrate_dp_ssgd(0.1, 1e-6, 200)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cal = calibrate_dp_ssgd(2.0, 1e-6, 10**4)
    assert any(issubclass(w.category, ShufflingRegimeWarning) for w in caught)
    assert not cal.in_regime
    assert cal.epsilon < 2.0
    assert cal.epsilon0 < 1.0


def test_poisson_dpsgd_calibration_against_accountants():
    q, steps, eps, delta = 0.01, 200, 1.0, 1e-6
    sigma = calibrate_poisson_dpsgd(eps, delta, q, steps, "rdp")
    assert poisson_dpsgd_epsilon(sigma, q, steps, delta, "rdp") <= eps
    assert poisson_dpsgd_epsilon(sigma * 0.98, q, steps, delta, "rdp") > eps
    # PLD is tighter than RDP for the subsampled Gaussian.
    assert poisson_dpsgd_epsilon(sigma, q, steps, delta, "pld") <= eps * 1.01


def test_poisson_with_full_sampling_is_composed_gaussian():
    sigma, steps, delta = 3.0, 10, 1e-5
    assert poisson_dpsgd_epsilon(sigma, 1.0, steps, delta, "rdp") == pytest.approx(
        gaussian_rdp_epsilon(sigma, steps, delta), rel=0.02
    )


def test_poisson_calibration_rejects_bad_rate():
    with pytest.raises(ValueError, match="sampling_rate"):
        poisson_dpsgd_epsilon(1.0, 1.5, 10, 1e-6)
    assert np.isfinite(poisson_dpsgd_epsilon(1.0, 0.5, 10, 1e-6))
