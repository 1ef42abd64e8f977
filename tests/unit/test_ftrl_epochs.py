"""Multi-epoch DP-FTRL / DP-SGD-stream on a dataset (``fit_dp_ftrl(..., epochs=E)``).

Privacy under several participations is not in Choquette-Choo et al. (2023) (Theorem 1.1
covers one); the fixed-epoch schema and its sensitivity are docs/notes/choquettechoo2023.md
§2.5 item 3 and deviation 15 of docs/choquettechoo2023.md.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import dpreg.estimators.ftrl as ftrl
from dpreg.audit import audit_cases, run_audit
from dpreg.audit.stats import gdp_epsilon
from dpreg.estimators.ftrl import (
    MAX_STEPS,
    _resolve_correlation,
    correlated_noise,
    fit_dp_ftrl,
    fit_dp_sgd_stream,
    multi_epoch_sensitivity_sq,
)
from dpreg.estimators.ftrl_correlations import (
    damped_anti_pgd,
    finite_toeplitz,
    independent,
    nu_ftrl,
    optimal_cc,
)
from dpreg.estimators.ftrl_factorizations import (
    FFTFactorization,
    MatrixFactorization,
    fft_factorization,
    optimal_multi_participation_factorization,
    tree_aggregation,
)
from dpreg.privacy.budgets import ZCDP, ApproxDP
from dpreg.privacy.correlated import (
    ftrl_epsilon,
    ftrl_noise_multiplier,
    ftrl_zcdp,
    participation_patterns,
    pattern_sensitivity_sq,
)

# ----------------------------------------------- the single pass before epochs (frozen)


def _single_pass_reference(
    X, y, *, budget, rng, trials=1, eta, clip, correlation="nu_ftrl", nu=None,
    batch_size=1, ridge=0.0, theta0=None, sensitivity="finite", method="zcdp",
    conversion="tight", neighbours="zero_out", noise_multiplier=None, return_path=False,
    shuffle=True,
) -> dict[str, Any]:  # fmt: skip
    """``fit_dp_ftrl`` as it was before ``epochs`` (commit 39737cd), without the checks.

    A verbatim copy of its computation (same RNG draws in the same order), so that
    ``epochs=1`` can be compared bit for bit with the single pass it must reproduce.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    corr = _resolve_correlation(correlation, nu, eta)
    T = n // batch_size
    if isinstance(corr, MatrixFactorization | FFTFactorization):
        gamma_sq = corr.sensitivity_sq
    else:
        gamma_sq = corr.sensitivity_sq(T) if sensitivity == "finite" else corr.gamma_inf_sq
    gamma = math.sqrt(gamma_sq)
    if noise_multiplier is not None:
        sigma_dp = noise_multiplier
    else:
        sigma_dp = ftrl_noise_multiplier(
            budget, gamma, method=method, conversion=conversion, neighbours=neighbours
        )
    theta = np.zeros((trials, d))
    if theta0 is not None:
        theta[:] = np.asarray(theta0, dtype=np.float64).ravel()
    noise_std = sigma_dp * (1.0 if math.isinf(clip) else clip) / batch_size
    if noise_std > 0 and isinstance(corr, MatrixFactorization | FFTFactorization):
        noise = corr.noise(rng, trials * d).reshape(T, trials, d)
        noise *= noise_std
    elif noise_std > 0:
        w = rng.standard_normal((T, trials * d))
        noise = correlated_noise(corr.coefficients(T), w).reshape(T, trials, d)
        noise *= noise_std
        del w
    else:
        noise = None
    if shuffle:
        order = np.argsort(rng.random((trials, n)), axis=1)[:, : T * batch_size]
    else:
        order = np.broadcast_to(np.arange(T * batch_size), (trials, T * batch_size))
    order = order.reshape(trials, T, batch_size)
    path = np.empty((trials, T, d)) if return_path else None
    clipped = np.zeros(trials)
    for t in range(T):
        idx = order[:, t, :]
        Xb = X[idx]
        resid = np.einsum("tbd,td->tb", Xb, theta) - y[idx]
        if not math.isinf(clip):
            norms = np.abs(resid) * np.linalg.norm(Xb, axis=2)
            clipped += np.count_nonzero(norms > clip, axis=1)
            resid = resid * (clip / np.maximum(norms, clip))
        grad = np.einsum("tbd,tb->td", Xb, resid) / batch_size
        if ridge > 0:
            grad += ridge * theta
        if noise is not None:
            grad += noise[t]
        theta = theta - eta * grad
        if path is not None:
            path[:, t] = theta
    private = not math.isinf(clip) and sigma_dp > 0
    rho = ftrl_zcdp(sigma_dp, gamma, neighbours).rho if private else math.inf
    spent: ZCDP | ApproxDP | None
    if not private:
        spent = None
    elif isinstance(budget, ApproxDP):
        eps = ftrl_epsilon(
            sigma_dp, gamma, budget.delta, method=method, conversion=conversion,
            neighbours=neighbours,
        ).epsilon  # fmt: skip
        spent = ApproxDP(eps if eps > 0 else budget.epsilon, budget.delta)
    else:
        spent = ZCDP(rho)
    return {
        "theta": theta,
        "path": path,
        "budget_spent": spent,
        "noise_multiplier": sigma_dp,
        "sensitivity_sq": gamma_sq,
        "steps": T,
        "clip_fraction": clipped / (T * batch_size),
        "rho_certified": rho,
    }


def _dataset(n: int = 60, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    return X, X @ np.linspace(0.5, -0.5, d) + 0.1 * rng.standard_normal(n)


SINGLE_PASS_CALLS: dict[str, dict[str, Any]] = {
    "nu_ftrl zcdp": {"budget": ZCDP(0.5), "nu": 0.05, "trials": 3},
    "sgd approx analytic batch 4 path": {
        "budget": ApproxDP(1.0, 1e-5), "correlation": "sgd", "method": "analytic",
        "batch_size": 4, "return_path": True, "trials": 2,
    },
    "optimal_cc row order ridge theta0": {
        "budget": ZCDP(2.0), "correlation": "optimal_cc", "shuffle": False, "ridge": 0.1,
        "theta0": [0.1, 0.2, -0.1], "trials": 2,
    },
    "damped anti-pgd infinite replace-one": {
        "budget": ApproxDP(2.0, 1e-6), "correlation": "damped_anti_pgd", "nu": 0.2,
        "sensitivity": "infinite", "neighbours": "replace_one", "batch_size": 3,
    },
    "noise multiplier unclipped": {
        "budget": None, "noise_multiplier": 0.7, "clip": math.inf, "nu": 0.1, "trials": 4,
    },
    "fft factorization": {"budget": ZCDP(1.0), "correlation": "fft", "batch_size": 5},
}  # fmt: skip


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("call", sorted(SINGLE_PASS_CALLS))
def test_one_epoch_is_bit_for_bit_the_single_pass(call, seed):
    X, y = _dataset()
    kw = {"eta": 0.2, "clip": 0.5, **SINGLE_PASS_CALLS[call]}
    if kw.get("correlation") == "fft":
        kw["correlation"] = fft_factorization(X.shape[0] // kw["batch_size"])
    ref = _single_pass_reference(X, y, rng=np.random.default_rng(seed), **kw)
    fits = [fit_dp_ftrl(X, y, rng=np.random.default_rng(seed), **kw)]  # default epochs
    fits.append(fit_dp_ftrl(X, y, rng=np.random.default_rng(seed), epochs=1, **kw))
    for fit in fits:
        np.testing.assert_array_equal(fit.theta, ref["theta"])
        if ref["path"] is not None:
            np.testing.assert_array_equal(fit.path, ref["path"])
        assert fit.budget_spent == ref["budget_spent"]
        for key in ("noise_multiplier", "sensitivity_sq", "steps", "rho_certified"):
            assert fit.diagnostics[key] == ref[key], key
        np.testing.assert_array_equal(
            fit.nonprivate_diagnostics["clip_fraction"], ref["clip_fraction"]
        )


# ------------------------------------------------------------- sensitivity by brute force


def _explicit_encoder(correlation: Any, T: int) -> np.ndarray:
    """C = B^-1 from the decoder coefficients (Toeplitz) or the explicit factorization."""
    if isinstance(correlation, MatrixFactorization | FFTFactorization):
        return np.asarray(correlation.encoder, dtype=np.float64)
    beta = correlation.coefficients(T)
    B = sum(np.diag(np.full(T - lag, b), -lag) for lag, b in enumerate(beta))
    return np.linalg.inv(B)


def _brute_force_sensitivity_sq(C: np.ndarray, k: int, b: int) -> float:
    """max over fixed-epoch patterns pi of max over unit gradients (pattern_sensitivity_sq)."""
    patterns = participation_patterns(C.shape[1], k, b, schema="fixed_epoch")
    return max(pattern_sensitivity_sq(C[:, p].T @ C[:, p]) for p in map(list, patterns))


CORRELATIONS = {
    "nu_ftrl": lambda T: nu_ftrl(0.1),
    "sgd": lambda T: independent(),
    "optimal_cc": lambda T: optimal_cc(),
    "damped_anti_pgd": lambda T: damped_anti_pgd(0.3),
    "alternating encoder": lambda T: finite_toeplitz([1.0, 0.7]),  # c_t = (-0.7)^t
    "fft": fft_factorization,
    "tree_aggregation": tree_aggregation,
}


@pytest.mark.parametrize(("steps_per_epoch", "epochs"), [(4, 3), (5, 2), (3, 4), (6, 1)])
@pytest.mark.parametrize("name", sorted(CORRELATIONS))
def test_multi_epoch_sensitivity_equals_brute_force_over_patterns(name, steps_per_epoch, epochs):
    T = steps_per_epoch * epochs
    corr = CORRELATIONS[name](T)
    expected = _brute_force_sensitivity_sq(_explicit_encoder(corr, T), epochs, steps_per_epoch)
    got = multi_epoch_sensitivity_sq(corr, steps_per_epoch, epochs)
    assert got == pytest.approx(expected, rel=1e-9)
    if name == "sgd":
        assert got == epochs  # independent noise: k participations, sensitivity^2 = k
    # the estimator runs E passes of n // b = steps_per_epoch steps and reports the same
    batch = 3
    n = steps_per_epoch * batch + 2  # two rows left over, never used
    X, y = _dataset(n)
    fit = fit_dp_ftrl(
        X, y, budget=ZCDP(1.0), rng=np.random.default_rng(0), trials=2, eta=0.1, clip=1.0,
        correlation=corr, batch_size=batch, epochs=epochs,
    )  # fmt: skip
    d = fit.diagnostics
    assert d["sensitivity_sq"] == pytest.approx(expected, rel=1e-9)
    assert (d["steps"], d["epochs"], d["participations"], d["separation"]) == (
        T,
        epochs,
        epochs,
        steps_per_epoch,
    )
    assert d["participation_schema"] == "fixed_epoch"
    assert d["noise_multiplier"] == pytest.approx(math.sqrt(got / 2.0), rel=1e-12)


def test_multi_epoch_sensitivity_grows_with_epochs_and_sgd_is_k():
    single = nu_ftrl(0.05).sensitivity_sq(300)
    values = [multi_epoch_sensitivity_sq(nu_ftrl(0.05), 100, e) for e in (1, 2, 3)]
    assert values[0] == nu_ftrl(0.05).sensitivity_sq(100)
    assert values[0] < values[1] < values[2]
    # the three participations overlap in the slowly decaying encoder: more than 3x, less
    # than the fully aligned 9x of one participation at horizon 300
    assert 3 * values[0] < values[2] < 9 * single
    X, y = _dataset(30)
    sgd = fit_dp_sgd_stream(
        X, y, budget=ZCDP(0.5), rng=np.random.default_rng(0), eta=0.1, clip=1.0, epochs=4
    )
    assert sgd.diagnostics["sensitivity_sq"] == 4.0
    assert sgd.diagnostics["steps"] == 120
    assert sgd.budget_spent.rho == pytest.approx(0.5, rel=1e-12)


def test_multi_participation_me_for_fixed_epochs_has_unit_sensitivity():
    me = optimal_multi_participation_factorization(12, 3, 4, schema="fixed_epoch")
    X, y = _dataset(17)
    fit = fit_dp_ftrl(
        X, y, budget=ZCDP(1.0), rng=np.random.default_rng(0), eta=0.1, clip=1.0,
        correlation=me, batch_size=4, epochs=3,
    )  # fmt: skip
    assert fit.diagnostics["sensitivity_sq"] == pytest.approx(1.0, abs=1e-5)
    assert np.all(np.isfinite(fit.theta))


def test_large_horizons_use_no_quadratic_memory():
    import tracemalloc

    tracemalloc.start()
    try:
        toeplitz = multi_epoch_sensitivity_sq(nu_ftrl(0.01), 10_000, 5)  # T = 50 000
        fft = multi_epoch_sensitivity_sq(fft_factorization(50_000), 10_000, 5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20  # a T x T float64 matrix would be 20 GB
    # nu = 0.01: the encoder has decayed long before 10 000 steps, so the 5 participations
    # barely overlap; FFT's flat encoder overlaps across the epochs
    single = nu_ftrl(0.01).sensitivity_sq(10_000)
    assert toeplitz == pytest.approx(5 * single, rel=1e-6)
    assert fft > 5 * fft_factorization(50_000).sensitivity_sq


# ------------------------------------------------------------------ the participations


def test_each_row_participates_once_per_epoch_at_a_fixed_offset():
    # Row r is x = e_r with y = -1, no noise: coordinate r of theta moves exactly at the
    # steps where row r is in the batch. Those must be {i, i + S, ..., i + (E-1) S}.
    n, batch, epochs, trials = 11, 2, 3, 4
    steps = n // batch  # S = 5 steps per epoch; row order of length 10, one row unused
    X, y = np.eye(n), -np.ones(n)
    fit = fit_dp_ftrl(
        X, y, budget=ZCDP(math.inf), rng=np.random.default_rng(3), trials=trials, eta=0.1,
        clip=10.0, correlation="sgd", batch_size=batch, epochs=epochs, return_path=True,
    )  # fmt: skip
    path = np.concatenate([np.zeros((trials, 1, n)), fit.path], axis=1)
    moved = np.diff(path, axis=1) != 0  # (trials, T, n)
    assert moved.shape == (trials, epochs * steps, n)
    for t in range(trials):
        unused = [r for r in range(n) if not moved[t, :, r].any()]
        assert len(unused) == n - steps * batch
        for r in set(range(n)) - set(unused):
            where = np.flatnonzero(moved[t, :, r])
            assert list(where) == [where[0] + j * steps for j in range(epochs)], (t, r)
    # shuffled once per trial: the trials do not share one order
    assert len({tuple(np.flatnonzero(moved[t, 0])) for t in range(trials)}) > 1


# ------------------------------------------------------------------ budget_spent


@pytest.mark.parametrize("correlation", ["sgd", "nu_ftrl", "optimal_cc"])
def test_multi_epoch_budget_spent_follows_the_noise_actually_added(correlation, monkeypatch):
    X, y = _dataset(64, d=2)
    kw = {
        "rng": np.random.default_rng(0), "trials": 2, "eta": 0.1, "clip": 1.0, "nu": 0.05,
        "correlation": correlation, "epochs": 3, "batch_size": 2,
    }  # fmt: skip
    fit = fit_dp_ftrl(X, y, budget=ZCDP(0.3), **kw)
    sigma, gamma_sq = fit.diagnostics["noise_multiplier"], fit.diagnostics["sensitivity_sq"]
    corr = _resolve_correlation(correlation, 0.05, 0.1)
    assert gamma_sq == pytest.approx(
        _brute_force_sensitivity_sq(_explicit_encoder(corr, 96), 3, 32), rel=1e-9
    )
    assert gamma_sq > corr.sensitivity_sq(96)  # more than one participation's
    assert fit.budget_spent.rho == pytest.approx(gamma_sq / (2 * sigma**2), rel=1e-12)
    assert fit.budget_spent.rho == pytest.approx(0.3, rel=1e-12)
    fit = fit_dp_ftrl(X, y, budget=ApproxDP(1.0, 1e-5), **kw)
    sigma = fit.diagnostics["noise_multiplier"]
    exact = gdp_epsilon(math.sqrt(fit.diagnostics["sensitivity_sq"]) / sigma, 1e-5)
    assert exact <= fit.budget_spent.epsilon <= 1.0 + 1e-9
    # a given noise multiplier is certified with the multi-epoch sensitivity
    given = fit_dp_ftrl(X, y, budget=None, noise_multiplier=2.0, **kw)
    assert given.budget_spent.rho == pytest.approx(gamma_sq / 8.0, rel=1e-12)
    # half the noise: four times the rho, a larger epsilon
    real = ftrl.ftrl_noise_multiplier
    monkeypatch.setattr(ftrl, "ftrl_noise_multiplier", lambda *a, **k: real(*a, **k) / 2)
    halved = fit_dp_ftrl(X, y, budget=ZCDP(0.3), **kw)
    assert halved.budget_spent.rho == pytest.approx(4 * 0.3, rel=1e-9)
    halved = fit_dp_ftrl(X, y, budget=ApproxDP(1.0, 1e-5), **kw)
    assert halved.budget_spent.epsilon > 1.5


# ------------------------------------------------------------------ empirical audit


@pytest.mark.parametrize("estimator", ["dp_ftrl", "dp_sgd_stream"])
def test_audit_of_the_multi_epoch_canary_matches_the_claim(estimator, monkeypatch):
    (case,) = [c for c in audit_cases([estimator]) if c.canary == "row-in-every-epoch"]
    trials = 20_000
    result = run_audit(case, trials=trials, rng=np.random.default_rng(11), alpha=0.01)
    assert result.verdict == "pass", result
    # the canary sits at the worst pattern, so the audited mu is the claimed one: within
    # 4 standard errors of the standardised mean difference (Hedges & Olkin)
    se = math.sqrt(2 / trials + result.mu_claim**2 / (4 * trials))
    assert abs(result.mu - result.mu_claim) < 4 * se, (result.mu, result.mu_claim, se)
    # broken variants are caught at 4000 runs: half the noise; half the multi-epoch
    # sensitivity; the single-participation sensitivity used for E epochs
    real_sigma = ftrl.ftrl_noise_multiplier
    real_sens = ftrl.multi_participation_sensitivity_sq
    broken = {
        "halved noise": ("ftrl_noise_multiplier", lambda *a, **k: real_sigma(*a, **k) / 2),
        "halved sensitivity": (
            "multi_participation_sensitivity_sq",
            lambda *a, **k: real_sens(*a, **k) / 4,
        ),
        "one participation": (
            "multi_participation_sensitivity_sq",
            lambda c, k, b, **kw: real_sens(c, 1, b, **kw),
        ),
    }
    for label, (name, replacement) in broken.items():
        with monkeypatch.context() as m:
            m.setattr(ftrl, name, replacement)
            bad = run_audit(case, trials=4000, rng=np.random.default_rng(12), alpha=0.01)
        assert bad.verdict == "fail", (label, bad)


# ------------------------------------------------------------------ utility


def test_more_epochs_reduce_the_training_error_on_an_easy_problem():
    # Noiseless responses, small step: one pass stops far from the optimum, five passes
    # get much closer; at rho = 1e4 the DP noise is small. Margin: 5 SE of the difference.
    X, y = _dataset(200, d=3, seed=4)
    y = X @ np.array([0.5, -0.3, 0.2])
    kw = {"budget": ZCDP(1e4), "trials": 60, "eta": 0.05, "clip": 1.0, "nu": 0.05}

    def error(epochs: int) -> np.ndarray:
        fit = fit_dp_ftrl(X, y, rng=np.random.default_rng(epochs), epochs=epochs, **kw)
        return np.mean((fit.theta @ X.T - y) ** 2, axis=1)

    one, five = error(1), error(5)
    diff = one - five
    se = diff.std(ddof=1) / math.sqrt(diff.size)
    assert diff.mean() > 5 * se
    assert five.mean() < 0.5 * one.mean()


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("bad", [0, -1, 1.5, 2.0, "2", True, None, np.float64(3.0)])
@pytest.mark.parametrize("fit", [fit_dp_ftrl, fit_dp_sgd_stream])
def test_bad_epochs_are_refused_before_any_work(fit, bad):
    X, y = _dataset(40)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match="epochs"):
        fit(X, y, budget=ZCDP(1.0), rng=rng, eta=0.1, clip=1.0, nu=0.1, epochs=bad)
    assert rng.bit_generator.state == state  # nothing drawn


def test_too_many_steps_and_other_epoch_conflicts_are_refused(monkeypatch):
    X, y = _dataset(40)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    kw = {"budget": ZCDP(1.0), "rng": rng, "eta": 0.1, "clip": 1.0, "nu": 0.1}
    limit = MAX_STEPS // 40
    with pytest.raises(ValueError, match=rf"epochs={limit + 1}.*MAX_STEPS"):
        fit_dp_ftrl(X, y, epochs=limit + 1, **kw)
    with pytest.raises(ValueError, match="epochs=1000000000000.*MAX_STEPS"):
        fit_dp_sgd_stream(X, y, epochs=10**12, budget=kw["budget"], rng=rng, eta=0.1, clip=1.0)
    with pytest.raises(ValueError, match="epochs=2.*sensitivity='finite'"):
        fit_dp_ftrl(X, y, epochs=2, sensitivity="infinite", **kw)
    with pytest.raises(ValueError, match="epochs=2.*build it for T=80"):
        fit_dp_ftrl(X, y, epochs=2, **{**kw, "correlation": fft_factorization(40)})
    # a Toeplitz encoder with negative entries beyond the brute-force horizon
    with pytest.raises(ValueError, match="epochs=3.*negative"):
        fit_dp_ftrl(
            np.zeros((1000, 2)), np.zeros(1000), epochs=3,
            **{**kw, "correlation": finite_toeplitz([1.0, 0.7])},
        )  # fmt: skip
    assert rng.bit_generator.state == state
    # the limit itself is allowed (a smaller limit, to keep the test fast)
    monkeypatch.setattr(ftrl, "MAX_STEPS", 400)
    assert fit_dp_ftrl(X, y, epochs=10, **kw).diagnostics["steps"] == 400
    with pytest.raises(ValueError, match="epochs=11.*MAX_STEPS = 400"):
        fit_dp_ftrl(X, y, epochs=11, **kw)
