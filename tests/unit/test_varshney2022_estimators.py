"""DP-STAT, DP-AMBSSGD and baselines of Varshney et al. (2022).

Independent computations: brute-force counts, hand-written loops of Algorithm 2 without
noise, Monte Carlo checks of noise scales and of Lemma 3.10 with tolerances from the
binomial standard error.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.data.streams import GaussianStream
from dpreg.estimators import get_estimator
from dpreg.estimators.ambssgd_core import (
    PermutedRows,
    RunSpec,
    ambssgd_pass,
    block_layout,
    paper_hyperparameters,
)
from dpreg.estimators.ambssgd_privacy import ShufflingRegimeWarning, ambssgd_noise_multiplier
from dpreg.estimators.dp_stat import dp_stat, dp_stat_counts
from dpreg.estimators.dpsgd_poisson import poisson_positions
from dpreg.privacy.budgets import ZCDP, ApproxDP
from dpreg.theory.ambssgd import dp_stat_gamma


def _data(n=4000, d=5, sigma=0.3, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    X = rng.standard_normal((n, d))
    return X, X @ w + sigma * rng.standard_normal(n), w


def _hyper(n, d, sigma, T=None):
    lay = block_layout(n, T=T)
    hp = paper_hyperparameters(n, lay.b, H_eigenvalues=np.ones(d), w_star_H_norm=1.0, sigma=sigma)
    return lay, hp


# ------------------------------------------------------------------------------ DP-STAT


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-30, 40), min_size=1, max_size=40),
    st.integers(1, 12),
)
def test_counts_equal_brute_force_including_grid_ties(exps, K):
    # magnitudes on and around the grid points 2^i * Delta (ties are the hard case)
    delta = 0.37
    a = np.array([math.ldexp(delta, e // 4) * (1 + (e % 4 - 1) * 1e-16) for e in exps])
    counts = dp_stat_counts(a, delta, K)
    brute = np.array([(a <= math.ldexp(delta, i)).sum() for i in range(K)])
    np.testing.assert_array_equal(counts, brute)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1e3), min_size=2, max_size=30), st.floats(0, 1e3), st.integers(0, 29))
def test_count_sensitivity_is_one(a, new, j):
    """Replacing one record moves every count by at most 1 (Lemma 3.10's sensitivity)."""
    a = np.array(a)
    b = a.copy()
    b[j % a.size] = new
    diff = dp_stat_counts(a, 0.01, 20) - dp_stat_counts(b, 0.01, 20)
    assert np.abs(diff).max() <= 1


def test_noiseless_dp_stat_returns_first_grid_point_above_the_maximum():
    rng = np.random.default_rng(1)
    a = np.abs(rng.standard_normal((50, 300)))
    # threshold s - 1/2: with alpha -> 0 the rule "count >= s" would be a coin flip at
    # c = s (the overshoot of the paper's rule, see the Lemma 3.10 test below).
    res = dp_stat(
        a, domain=64.0, n_queries=20, noise_multiplier=1e-12, rng=rng,
        threshold_fraction=1 - 0.5 / 300,
    )  # fmt: skip
    Delta = 64.0 / 2**20
    expected = np.ldexp(Delta, np.ceil(np.log2(a.max(axis=1) / Delta)).astype(int))
    np.testing.assert_allclose(res.gamma, expected)
    assert not res.no_break.any()
    big = dp_stat(np.full((1, 10), 1e9), domain=64.0, n_queries=20, noise_multiplier=1e-12, rng=rng)
    assert big.no_break.all() and big.gamma[0] == 64.0  # no break returns 2^K Delta = B


def test_lemma_3_10_first_claim_and_the_failure_of_the_second():
    """Monte Carlo of Lemma 3.10 with alpha of (1, 1e-6)-DP, K = 20, s = 757, beta = 0.05.

    Claim 1 (count(a <= gamma) >= s - Gamma) holds. Claim 2 (count(a <= gamma/2) < s -
    Gamma) fails about half the time: once gamma exceeds every residual the noisy count
    passes each further query only with probability 1/2 (a finding; docs §pitfalls 4-8).
    """
    rng = np.random.default_rng(7)
    reps, s, K, beta = 4000, 757, 20, 0.05
    alpha = ambssgd_noise_multiplier(1.0, 1e-6)
    a = np.abs(rng.standard_normal((reps, s)))
    res = dp_stat(a, domain=100.0, n_queries=K, noise_multiplier=alpha, rng=rng)
    gamma_slack = dp_stat_gamma(alpha, K, beta)
    below = (a <= res.gamma[:, None]).sum(axis=1)
    fail1 = np.mean(below < s - gamma_slack)
    assert fail1 <= beta + 4 * math.sqrt(beta * (1 - beta) / reps)
    half = (a <= np.maximum(res.gamma, 100.0 / 2**K)[:, None] / 2).sum(axis=1)
    fail2 = np.mean(half >= s - gamma_slack)
    assert fail2 > 0.3  # far above beta: the second claim does not hold as stated


def test_dp_stat_rejects_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="non-negative"):
        dp_stat(np.array([1.0, np.nan]), domain=1, n_queries=3, noise_multiplier=1, rng=rng)
    with pytest.raises(ValueError, match="n_queries"):
        dp_stat(np.ones(3), domain=1, n_queries=0, noise_multiplier=1, rng=rng)
    with pytest.raises(ValueError, match="domain"):
        dp_stat(np.ones(3), domain=-1, n_queries=3, noise_multiplier=1, rng=rng)


# ------------------------------------------------------------------------- block layout


def test_layout_blocks_are_disjoint_and_follow_theorem_3_7():
    lay = block_layout(100_000)
    assert lay.T == math.ceil(math.log(100_000))
    assert lay.s == (100_000 // lay.T) // 11 and lay.b == 100_000 // lay.T - lay.s
    rows = []
    for t in range(lay.T):
        rows += list(lay.stat_rows(t)) + list(lay.batch_rows(t))
        assert lay.stat_rows(t).stop == lay.batch_rows(t).start
    assert rows == list(range(lay.used))  # every used row exactly once, in order
    assert lay.dropped == 100_000 - lay.used >= 0
    with pytest.raises(ValueError, match="s=0"):
        block_layout(100, T=20)


# ----------------------------------------------------------------- the pass, no noise


def _brute_force_sgd(X, y, lay, eta, clip):
    """Algorithm 2 with alpha = 0 and a fixed clip, written row by row."""
    w = np.zeros(X.shape[1])
    tail = []
    for t in range(lay.T):
        g = np.zeros_like(w)
        for i in lay.batch_rows(t):
            v = X[i] * (X[i] @ w - y[i])
            g += v * min(1.0, clip / np.linalg.norm(v))  # min, not max (pitfall 2)
        w = w - eta * g / lay.b
        if t + 1 >= lay.T // 2 + 1:
            tail.append(w)
    return np.mean(tail, axis=0)


@pytest.mark.parametrize("clip", [math.inf, 0.3])
def test_noiseless_pass_equals_hand_written_loop(clip):
    X, y, _ = _data(n=3000, d=4)
    lay = block_layout(3000, T=5)
    rng = np.random.default_rng(0)
    src = PermutedRows(X, y, 1, rng, shuffle=False)
    rule = "none" if math.isinf(clip) else "fixed"
    runs = RunSpec((rule,), 0.0, 0.0, clip, 1.0, 0.0)
    res = ambssgd_pass(
        src, layout=lay, runs=runs, eta=0.7, x_norm=1.0, log_factor=1.0, n_queries=8, rng=rng
    )
    np.testing.assert_allclose(
        res.w_bar[0, :, 0], _brute_force_sgd(X, y, lay, 0.7, clip), rtol=1e-10
    )
    assert src.pos == lay.used  # one pass, leftover rows unread
    if not math.isinf(clip):
        assert res.steps["clip_fraction"][0, 0].max() > 0


def test_gradient_noise_std_is_two_eta_alpha_zeta_over_b():
    """X = 0, y = 0: w_1 = -eta * alpha * 2 zeta / b * g exactly (T = 1 block)."""
    n, d, trials = 1100, 6, 400
    X, y = np.zeros((n, d)), np.zeros(n)
    fit = get_estimator("dp_ambssgd_fixedclip")(
        X, y, budget=ZCDP(0.5), rng=np.random.default_rng(3), trials=trials,
        x_norm_sq=d, H_norm=1.0, fixed_clip=2.0, T=1, eta=0.8,
    )  # fmt: skip
    b = fit.diagnostics["b"]
    alpha = fit.diagnostics["noise_multiplier"]
    assert alpha == pytest.approx(1 / math.sqrt(2 * 0.5))  # rho = 1/(2 alpha^2)
    expected = 0.8 * alpha * 2 * 2.0 / b
    sd = fit.theta.std()
    m = fit.theta.size
    assert abs(sd / expected - 1) < 4 / math.sqrt(2 * m)


# ------------------------------------------------------------------------- estimators


def test_nonprivate_schedule_attains_statistical_rate():
    n, d, sigma, trials = 20_000, 10, 0.5, 20
    X, y, w = _data(n=n, d=d, sigma=sigma, seed=4)
    lay, hp = _hyper(n, d, sigma)
    fit = get_estimator("ambssgd_sgd")(
        X, y, rng=np.random.default_rng(5), trials=trials, x_norm_sq=hp.x_norm_sq, H_norm=1.0
    )
    excess = 0.5 * ((fit.theta - w) ** 2).sum(axis=1)  # H = I
    ratio = excess.mean() / (sigma**2 * d / n)
    # docs/notes/varshney2022.md §7: "within a factor of roughly 2-8" of sigma^2 d / N
    assert 0.3 < ratio < 8
    assert fit.budget_spent is None


def test_dp_ambssgd_spends_the_budget_and_is_reproducible():
    n, d, sigma = 20_000, 5, 0.3
    X, y, w = _data(n=n, d=d, sigma=sigma)
    lay, hp = _hyper(n, d, sigma)
    kw = dict(x_norm_sq=hp.x_norm_sq, H_norm=1.0, stat_domain=hp.stat_domain, trials=3)
    f1 = get_estimator("dp_ambssgd")(
        X, y, budget=ApproxDP(2.0, 1e-6), rng=np.random.default_rng(9), **kw
    )
    f2 = get_estimator("dp_ambssgd")(
        X, y, budget=ApproxDP(2.0, 1e-6), rng=np.random.default_rng(9), **kw
    )
    f3 = get_estimator("dp_ambssgd")(
        X, y, budget=ApproxDP(2.0, 1e-6), rng=np.random.default_rng(10), **kw
    )
    np.testing.assert_array_equal(f1.theta, f2.theta)
    assert not np.allclose(f1.theta, f3.theta)
    assert f1.budget_spent.epsilon == pytest.approx(2.0, rel=1e-9)
    assert f1.diagnostics["rho"] == pytest.approx(1 / ambssgd_noise_multiplier(2.0, 1e-6) ** 2)
    assert f1.diagnostics["step_zeta"].shape == (3, lay.T)
    # the stop index is in 0..K and gamma = zeta / (R_x log^a N)
    assert (
        (f1.diagnostics["step_stop_index"] >= 0) & (f1.diagnostics["step_stop_index"] <= 20)
    ).all()
    z = ZCDP(0.05)
    fz = get_estimator("dp_ambssgd")(X, y, budget=z, rng=np.random.default_rng(1), **kw)
    assert fz.budget_spent.rho == pytest.approx(0.05, rel=1e-12)
    fd = get_estimator("dp_ambssgd")(
        X, y, budget=z, rng=np.random.default_rng(1), accounting="disjoint", **kw
    )
    assert fd.budget_spent.rho == pytest.approx(0.05, rel=1e-12)
    assert fd.diagnostics["noise_multiplier"] == pytest.approx(
        fz.diagnostics["noise_multiplier"] / math.sqrt(2)
    )


def test_oracle_and_fixed_variants_run_and_label_privacy():
    n, d, sigma = 10_000, 4, 0.2
    X, y, w = _data(n=n, d=d, sigma=sigma)
    lay, hp = _hyper(n, d, sigma)
    fo = get_estimator("dp_ambssgd_oracleclip")(
        X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0), trials=2,
        x_norm_sq=hp.x_norm_sq, H_norm=1.0, w_star=w, H=np.ones(d), sigma=sigma,
    )  # fmt: skip
    assert fo.budget_spent is None and "non-private" in fo.diagnostics["privacy_note"]
    ff = get_estimator("dp_ambssgd_fixedclip")(
        X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0), trials=2,
        x_norm_sq=hp.x_norm_sq, H_norm=1.0, stat_domain=hp.stat_domain,
    )  # fmt: skip
    assert ff.diagnostics["fixed_clip"] == pytest.approx(hp.fixed_clip)
    assert ff.budget_spent.epsilon == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (dict(X="nan"), "NaN"),
        (dict(y="short"), "rows"),
        (dict(budget=ApproxDP(1.0, 0.5), noise_multiplier_rule="nope"), "rule"),
        (dict(T=5000), "s=0"),
        (dict(stat_domain=-1.0), "stat_domain"),
        (dict(stat_margin=-1.0), "stat_margin"),
        (dict(x_norm_sq=0.0), "x_norm_sq"),
    ],
)
def test_dp_ambssgd_rejects_bad_input(change, match):
    X, y, _ = _data(n=2000, d=3)
    kw = dict(
        budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0), x_norm_sq=5.0, H_norm=1.0,
        stat_domain=10.0,
    )  # fmt: skip
    if change.pop("X", None):
        X = X.copy()
        X[0, 0] = np.nan
    if change.pop("y", None):
        y = y[:-1]
    kw.update(change)
    with pytest.raises(ValueError, match=match):
        get_estimator("dp_ambssgd")(X, y, **kw)


def test_dp_ambssgd_rejects_bad_budget_and_rng():
    X, y, _ = _data(n=2000, d=3)
    with pytest.raises(TypeError, match="Generator"):
        get_estimator("dp_ambssgd")(
            X, y, budget=ApproxDP(1.0, 1e-6), rng=0, x_norm_sq=5.0, H_norm=1.0, stat_domain=1.0
        )
    with pytest.raises(ValueError, match="epsilon"):
        ApproxDP(-1.0, 1e-6)


def test_gaussian_stream_is_paired_whatever_the_read_sizes():
    lam, w = np.array([1.0, 0.5, 0.25]), np.array([1.0, 0.0, -1.0])
    a = GaussianStream(5, [0, 1], lam, w, chunk_rows=64)
    b = GaussianStream(5, [1], lam, w, chunk_rows=64)
    Xa = np.concatenate([a.take(k)[0] for k in (10, 100, 3, 77)], axis=1)
    Xb = b.take(190)[0]
    np.testing.assert_array_equal(Xa[1], Xb[0])
    assert abs(Xb[0].var(axis=0) / lam - 1).max() < 0.5


# --------------------------------------------------------------------------- baselines


def test_dp_ssgd_noiseless_matches_loop_and_warns_outside_regime():
    X, y, w = _data(n=600, d=3)
    fit = get_estimator("dp_ssgd")(
        X, y, budget=ApproxDP(math.inf, 1e-6), rng=np.random.default_rng(2), clip=1e9, eta=0.05
    )
    perm = np.argsort(np.random.default_rng(2).random((1, 600)), axis=1)[0]
    v, tail = np.zeros(3), []
    for t, i in enumerate(perm):
        v = v - 0.05 * X[i] * (X[i] @ v - y[i])
        if t + 1 >= 301:
            tail.append(v)
    np.testing.assert_allclose(fit.theta[0], np.mean(tail, axis=0), rtol=1e-10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = get_estimator("dp_ssgd")(
            X[:500], y[:500], budget=ApproxDP(2.0, 1e-3), rng=np.random.default_rng(2),
            clip=1.0, eta=0.01,
        )  # fmt: skip
    assert any(issubclass(c.category, ShufflingRegimeWarning) for c in caught)
    assert f.budget_spent.epsilon < 2.0


def test_poisson_positions_have_inclusion_rate_q():
    rng = np.random.default_rng(0)
    n, q, trials = 500, 0.05, 400
    pos, mask = poisson_positions(n, q, trials, rng)
    hits = np.zeros(n)
    for k in range(trials):
        p = pos[k][mask[k]]
        assert np.all(np.diff(p) > 0) and p.max(initial=0) < n
        hits[p] += 1
    rate = hits.sum() / (n * trials)
    assert abs(rate - q) < 4 * math.sqrt(q * (1 - q) / (n * trials))


def test_dp_sgd_poisson_certifies_its_budget():
    X, y, _ = _data(n=2000, d=3)
    fit = get_estimator("dp_sgd_poisson")(
        X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0), trials=2, clip=1.0,
        eta=0.5, batch_size=200, n_public=2000, epochs=1.0,
    )  # fmt: skip
    assert fit.budget_spent.epsilon <= 1.0
    assert fit.diagnostics["steps"] == 10
    with pytest.raises(ValueError, match="batch_size"):
        get_estimator("dp_sgd_poisson")(
            X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0), clip=1.0, eta=0.5,
            batch_size=5000, n_public=2000,
        )  # fmt: skip
