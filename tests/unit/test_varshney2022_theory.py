"""Bounds of Varshney et al. (2022) (:mod:`dpreg.theory.ambssgd`): hand values and limits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpreg.theory import ambssgd as th


def test_headline_rate_is_the_cai_lower_bound_shape():
    s, d, n, e = 0.3, np.array([10, 50]), np.array([1e4, 1e6]), 0.5
    np.testing.assert_allclose(th.headline_rate(s, d, n, e), th.lower_bound_rate(s, d, n, e))
    assert th.headline_rate(1.0, 10, 1000, 1.0) == pytest.approx(10 / 1000 * (1 + 10 / 1000))
    assert th.existing_rate(10, 1000, 1.0) == pytest.approx(1e3 / 1e6)
    assert th.cai_rate(0.0, 10, 1000, 1.0) == pytest.approx(10 * 100 / 1e6)


def test_ols_expected_excess_matches_monte_carlo():
    rng = np.random.default_rng(0)
    reps, n, d, sigma = 4000, 40, 5, 0.7
    X = rng.standard_normal((reps, n, d))
    z = sigma * rng.standard_normal((reps, n))
    err = np.linalg.solve(np.swapaxes(X, 1, 2) @ X, (np.swapaxes(X, 1, 2) @ z[..., None]))[..., 0]
    excess = 0.5 * (err**2).sum(axis=1)  # H = I, w* cancels
    expected = th.ols_expected_excess(sigma, d, n)
    assert abs(excess.mean() - expected) < 4 * excess.std() / math.sqrt(reps)


def test_theorem_3_7_by_hand():
    v = th.theorem_3_7_rate(0.1, 20, 1e5, 1.0, 1e-6, kappa=2.0, constant=3.0)
    by_hand = 1 / 1e500 + 8 * 0.01 * 20 / 1e5 + 3 * 0.01 * 4 * 400 * math.log(1e6) / 1e10
    assert v == pytest.approx(by_hand, rel=1e-12)


def test_lemma_3_5_by_hand_and_limits():
    lam = np.ones(4)  # R_x^2 = Tr H + 2 = 6, mu = 1
    v = th.lemma_3_5_bound(
        H_eigenvalues=lam, sigma=0.5, w_star_norm=1.0, n=1000, eta=0.05, clip=2.0,
        noise_multiplier=0.1,
    )  # fmt: skip
    c = 4 * 4 * 0.01
    by_hand = (
        3 * math.exp(-0.05 * 501) + 0.3 / 0.7 * 4 * (0.25 + c) / 1000 + (0.25 * 4 + c * 4) / 1000
    )
    assert v == pytest.approx(by_hand, rel=1e-12)
    with pytest.raises(ValueError, match="eta"):
        th.lemma_3_5_bound(
            H_eigenvalues=lam, sigma=0.5, w_star_norm=1.0, n=1000, eta=0.5, clip=2.0,
            noise_multiplier=0.1,
        )  # fmt: skip


def test_lemma_3_11_noiseless_limit_and_monotonicity():
    lam = np.ones(10)
    kw = dict(H_eigenvalues=lam, sigma=0.2, w_star_H_norm=1.0, n=1e5, T=12, eta=0.99, c1=1.0)
    v0 = th.lemma_3_11_bound(b=7000, noise_multiplier=0.0, **kw)
    # alpha = 0: the variance term is 8 sigma^2 d / (T b) plus a bias/variance product
    assert v0 >= 8 * 0.04 * 10 / (12 * 7000)
    v1 = th.lemma_3_11_bound(b=7000, noise_multiplier=7.0, **kw)
    v2 = th.lemma_3_11_bound(b=14000, noise_multiplier=7.0, **kw)
    assert v1 > v0 and v2 < v1
    ratio = th.lemma_3_11_batch_condition(
        H_eigenvalues=lam, b=7000, eta=0.99, noise_multiplier=7.0, n=1e5
    )
    need = 24 * 0.99 * 49 * 12 * math.log(1e5) ** 2 * 10
    assert ratio == pytest.approx(7000**2 / need, rel=1e-12)


def test_dp_stat_gamma_by_hand():
    assert th.dp_stat_gamma(2.0, 10, 0.01) == pytest.approx(
        2 * math.sqrt(2 * 10 * math.log(2) * math.log(10 * math.log(2) / 0.01))
    )


def test_theorem_3_7_layout_matches_the_estimator_layout():
    from dpreg.estimators.ambssgd_core import block_layout

    for n in (1000, 4321, 10_000, 99_999, 10**6, 3 * 10**7):
        lay = block_layout(n)
        assert th.theorem_3_7_layout(n) == (lay.T, lay.s, lay.b)


def test_lemma_3_11_crossover_is_where_the_ratios_cross_one():
    lam, sigma, alpha = np.ones(20), 0.1, 3.8
    out = th.lemma_3_11_crossover(
        H_eigenvalues=lam, sigma=sigma, noise_multiplier=alpha, n_min=1e4, n_max=1e12,
        per_decade=20,
    )  # fmt: skip
    rx2 = 22.0

    def ratios(n):
        T, _, b = th.theorem_3_7_layout(n)
        eta = b / (rx2 + b - 1)
        kw = dict(H_eigenvalues=lam, sigma=sigma, w_star_H_norm=1.0, n=n, T=T, b=b, eta=eta,
                  c1=1.0)  # fmt: skip
        priv = th.lemma_3_11_bound(noise_multiplier=alpha, **kw) - th.lemma_3_11_bound(
            noise_multiplier=0.0, **kw
        )
        batch = th.lemma_3_11_batch_condition(
            H_eigenvalues=lam, b=b, eta=eta, noise_multiplier=alpha, n=n
        )
        return priv / (sigma**2 * 20 / n), batch

    step = 10 ** (1 / 20)
    for key, which, good in (("n_privacy", 0, lambda v: v <= 1), ("n_batch", 1, lambda v: v >= 1)):
        n = out[key]
        assert 1e4 < n < 1e12
        assert good(ratios(n)[which]) and not good(ratios(n / step)[which])
    assert out["ratio_at_n_min"] == pytest.approx(ratios(1e4)[0], rel=1e-12)
    assert out["n_batch"] < out["n_privacy"]
    looser = th.lemma_3_11_crossover(
        H_eigenvalues=lam, sigma=sigma, noise_multiplier=alpha / 2, n_min=1e4, n_max=1e12,
        per_decade=20,
    )  # fmt: skip
    assert looser["n_privacy"] < out["n_privacy"]
