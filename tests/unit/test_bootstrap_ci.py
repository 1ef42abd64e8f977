"""Parametric-bootstrap intervals (dpreg.inference.bootstrap): release only, simulators, coverage.

The simulators are checked against the estimators themselves: fed the *exact* statistics
of a dataset in place of the noisy plug-ins, a bootstrap replicate has exactly the
distribution of the estimator run on that dataset, so means and spreads must agree
within their Monte Carlo standard errors. Coverage is checked on fresh datasets with a
tolerance from the binomial standard error.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpreg.estimators import get_estimator
from dpreg.estimators.methods import PublicInputs
from dpreg.inference import bootstrap as boot
from dpreg.inference.bootstrap import (
    BootstrapIntervals,
    CheckedRegime,
    PrivateRelease,
    UncheckedRegimeWarning,
    bootstrap_intervals,
)
from dpreg.privacy.budgets import ZCDP, ApproxDP
from dpreg.results import Fit

EPS, DELTA = 1.0, 1e-6

# Most calls here are outside the checked regime on purpose (small n); the tests of the
# warning itself use pytest.warns / an "error" filter, which override this.
pytestmark = pytest.mark.filterwarnings("ignore::dpreg.inference.bootstrap.UncheckedRegimeWarning")


def _data(seed: int = 0, n: int = 2000, d: int = 3, noise: float = 0.1):
    """Rows uniform in a cube inside the unit ball, |x'theta| <= 0.5, y = x'theta + e.

    With noise 0.1, P(|y| > 1) < 1e-6: the linear model holds, so its coefficient is the
    population target.
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / math.sqrt(d)
    theta = np.linspace(0.5, -0.5, d) / math.sqrt(d) * 0.9
    y = np.clip(X @ theta + noise * rng.standard_normal(n), -1, 1)
    return X, y, theta


def _public(n: int, d: int, epsilon: float = EPS) -> PublicInputs:
    return PublicInputs(n=n, d=d, epsilon=epsilon, delta=DELTA, bound_X=1.0, bound_y=1.0)


def _fit(name: str, X, y, *, trials: int = 3, seed: int = 0, **kw) -> Fit:
    return get_estimator(name)(
        X, y, budget=ApproxDP(EPS, DELTA), rng=np.random.default_rng(seed), trials=trials,
        bound_X=1.0, bound_y=1.0, **kw,
    )  # fmt: skip


def _boot(fit, public, **kw) -> BootstrapIntervals:
    kw.setdefault("rng", np.random.default_rng(1))
    kw.setdefault("replicates", 200)
    kw.setdefault("require_checked", False)
    return bootstrap_intervals(fit, public=public, **kw)


CASES = {
    "adassp": {"yty_share": 0.1},
    "linear_mixing": {},
    "sheffet_sketch": {},
    "ihm": {},
}
TARGETS = {
    "adassp": ("empirical", "population"),
    "linear_mixing": ("empirical", "population"),
    "sheffet_sketch": ("empirical", "population"),
    "ihm": ("empirical",),
}


# ---------------------------------------------------------------- the release only


def test_the_api_cannot_receive_data():
    params = set(inspect.signature(bootstrap_intervals).parameters)
    assert params == {
        "fit", "public", "rng", "alpha", "replicates", "target", "interval", "require_checked",
    }  # fmt: skip
    assert {f.name for f in dataclasses.fields(PrivateRelease)} == {
        "estimator",
        "theta",
        "diagnostics",
    }
    for simulate in set(boot._SIMULATORS.values()):
        assert list(inspect.signature(simulate).parameters) == [
            "rel", "public", "target", "B", "rng",
        ]  # fmt: skip


class _Poison(dict):
    """A mapping that fails on any read: a bootstrap touching it would raise."""

    def _fail(self, *args, **kwargs):
        raise AssertionError("the bootstrap read nonprivate_diagnostics")

    __getitem__ = __iter__ = __len__ = __contains__ = keys = items = values = get = _fail


@pytest.mark.parametrize("name", sorted(CASES))
def test_poisoned_nonprivate_diagnostics_change_nothing(name):
    X, y, _ = _data(1, n=800)
    fit = _fit(name, X, y, **CASES[name])
    poisoned = Fit(
        theta=fit.theta,
        budget_spent=fit.budget_spent,
        estimator=fit.estimator,
        path=fit.path,
        diagnostics=fit.diagnostics,
        nonprivate_diagnostics=_Poison(),
    )
    public = _public(800, 3)
    for target in TARGETS[name]:
        a = _boot(fit, public, target=target)
        b = _boot(poisoned, public, target=target)
        np.testing.assert_array_equal(a.lower, b.lower)
        np.testing.assert_array_equal(a.upper, b.upper)


# ---------------------------------------------------------------------- determinism


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixed_rng_gives_identical_intervals_and_another_seed_other_ones(name):
    X, y, _ = _data(2, n=800)
    fit = _fit(name, X, y, **CASES[name])
    public = _public(800, 3)
    for target in TARGETS[name]:
        a = _boot(fit, public, target=target, rng=np.random.default_rng(5))
        b = _boot(fit, public, target=target, rng=np.random.default_rng(5))
        c = _boot(fit, public, target=target, rng=np.random.default_rng(6))
        np.testing.assert_array_equal(a.estimates, b.estimates)
        np.testing.assert_array_equal(a.lower, b.lower)
        assert not np.array_equal(a.lower, c.lower)


def test_chunking_over_trials_keeps_every_trials_replicates(monkeypatch):
    # Trials are simulated in chunks bounded in memory; shapes and the fit's estimate as
    # the basic interval's pivot hold whatever the chunk size.
    X, y, _ = _data(3, n=600)
    fit = _fit("adassp", X, y, trials=5)
    monkeypatch.setattr(boot, "_CHUNK_ELEMENTS", 1)  # one trial per chunk
    ci = _boot(fit, _public(600, 3), replicates=50)
    assert ci.estimates.shape == (5, 50, 3)
    q_lo, q_hi = np.quantile(ci.estimates, [0.025, 0.975], axis=1)
    np.testing.assert_allclose(ci.lower, 2 * fit.theta - q_hi)
    np.testing.assert_allclose(ci.upper, 2 * fit.theta - q_lo)


def test_percentile_interval_is_the_quantiles_of_the_replicates():
    X, y, _ = _data(4, n=600)
    fit = _fit("sheffet_sketch", X, y)
    ci = _boot(fit, _public(600, 3), interval="percentile", alpha=0.1)
    q = np.quantile(ci.estimates, [0.05, 0.95], axis=1)
    np.testing.assert_allclose(ci.lower, q[0])
    np.testing.assert_allclose(ci.upper, q[1])
    assert ci.method == "parametric_bootstrap_percentile"


# -------------------------------------------------- simulators against the estimators


def _compare(sims: np.ndarray, draws: np.ndarray, k: float = 4.5) -> None:
    """Means and standard deviations agree within k Monte Carlo standard errors."""
    m1, m2 = sims.shape[0], draws.shape[0]
    se_mean = np.sqrt(sims.var(0, ddof=1) / m1 + draws.var(0, ddof=1) / m2)
    assert np.all(np.abs(sims.mean(0) - draws.mean(0)) < k * se_mean)
    # SE of a standard deviation: about sd / sqrt(2 (m - 1)) for near-normal draws; the
    # kurtosis of these ratios of Gaussians is absorbed by k.
    sd1, sd2 = sims.std(0, ddof=1), draws.std(0, ddof=1)
    se_sd = np.sqrt(sd1**2 / (2 * (m1 - 1)) + sd2**2 / (2 * (m2 - 1)))
    assert np.all(np.abs(sd1 - sd2) < k * se_sd)


def _exact_release(name: str, fit: Fit, X, y) -> PrivateRelease:
    """The fit's release with every noisy plug-in replaced by the exact statistic."""
    n, d = X.shape
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    D = dict(fit.diagnostics)
    t = fit.n_trials
    if name == "adassp":
        D["xtx_noisy"] = np.broadcast_to(X.T @ X, (t, d, d)).copy()
    elif name in ("linear_mixing", "sheffet_sketch"):
        A = np.column_stack([X, y]) / D["scale"]
        k = D["k"]
        eta2 = D["eta_tilde"] ** 2 if name == "linear_mixing" else np.full(t, D["gamma"])
        S = A.T @ A + eta2[:, None, None] * np.eye(d + 1)
        sxx, sxy = S[:, :d, :d], S[:, :d, d]
        schur = S[:, d, d] - np.einsum(
            "ti,ti->t", sxy, np.linalg.solve(sxx, sxy[..., None])[..., 0]
        )
        M = k * S
        M[:, d, d] -= d * schur  # so that the Schur rule k/(k-d) Schur(M/k) is exact
        D["sketch_gram"] = M
    else:
        D["sketch_hessian_mean"] = X.T @ X + D["eta2"][:, None, None] * np.eye(d)
    return PrivateRelease(name, np.broadcast_to(ols, (t, d)).copy(), D)


@pytest.mark.parametrize(
    ("name", "noise"),
    [(name, 0.1) for name in sorted(CASES)] + [("linear_mixing", 0.35)],
)
def test_a_replicate_from_the_exact_statistics_is_a_draw_of_the_estimator(name, noise):
    # The bootstrap re-runs the estimator's post-processing on a simulated release; from
    # the exact statistics (OLS = the plug-in estimate) the simulated release has the
    # distribution of the real one, so the replicates match fresh fits on the data.
    # Noise 0.35 at n = 2000 puts linear mixing's eigenvalue test in its active range
    # (0 < the released lambda < gamma: about 24 of 64), where it sets the mixing noise.
    X, y, _ = _data(5, n=2000, noise=noise)
    draws = 3000
    kw = {} if name == "adassp" else CASES[name]
    fits = _fit(name, X, y, trials=draws, seed=11, **kw)
    ref = _fit(name, X, y, trials=1, seed=12, **kw)
    release = _exact_release(name, ref, X, y)
    ci = _boot(release, _public(2000, 3), replicates=draws, rng=np.random.default_rng(13))
    _compare(ci.estimates[0], fits.theta)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    t=st.integers(1, 3),
    p=st.integers(1, 5),
    zeros=st.floats(0.0, 1.0),
    repeat=st.booleans(),
)
def test_factors_of_shifted_grams_equal_the_stacked_factor_bitwise(seed, t, p, zeros, repeat):
    """The factors the sketch simulator uses (one eigh per distinct (trial, shift), or
    per matrix of a stack without repeats) are _factor's bits: the same draws follow."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(t, p, p))
    base = A @ np.swapaxes(A, 1, 2) - 0.5 * np.eye(p)  # indefinite too: clamped at 0
    B = 12
    shift = np.where(rng.uniform(size=(t, B)) < zeros, 0.0, rng.uniform(0, 2, size=(t, B)))
    if repeat:
        shift = np.broadcast_to(shift[:, :1], (t, B))  # Sheffet: one shift per trial
    stack = np.broadcast_to(base[:, None], (t, B, p, p)) + shift[..., None, None] * np.eye(p)
    reference = boot._factor(stack)
    assert np.array_equal(boot._shifted_factor(base, shift), reference)
    assert np.array_equal(boot._eigen_factor(stack), reference)


def test_wishart_sampler_has_the_wishart_moments():
    # E W = k Sigma, Var W_ij = k (Sigma_ij^2 + Sigma_ii Sigma_jj); k = p = 3 (smallest df).
    rng = np.random.default_rng(3)
    S = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, -0.3], [0.0, -0.3, 0.5]])
    m, k = 20000, 3
    W = boot._wishart(np.broadcast_to(boot._factor(S), (m, 3, 3)), k, rng)
    var = k * (S**2 + np.outer(np.diag(S), np.diag(S)))
    assert np.all(np.abs(W.mean(0) - k * S) < 4.5 * np.sqrt(var / m))
    # SE of a variance estimate: sqrt((mu4 - var^2) / m); Wishart entries have kurtosis
    # below 12 at k = 3, so sqrt(11 / m) var bounds it.
    assert np.all(np.abs(W.var(0, ddof=1) - var) < 4.5 * math.sqrt(11 / m) * var)


@pytest.mark.parametrize("compiled", [False, True])
def test_wishart_draws_numpys_normals_compiled_or_not(compiled, monkeypatch):
    """The Wishart's normals by numba's fill (once numba is loaded) or by numpy: same bits."""
    monkeypatch.setattr(boot, "_compiled_normals", lambda: compiled)
    F = np.random.default_rng(0).standard_normal((2, 7, 4, 4))
    rng = np.random.default_rng(11)
    W = boot._wishart(F, 9, rng)
    ref = np.random.default_rng(11)
    B = np.zeros((2, 7, 4, 4))
    idx = np.arange(4)
    B[..., idx, idx] = np.sqrt(ref.chisquare(np.broadcast_to(9.0 - idx, (2, 7, 4))))
    rows, cols = np.tril_indices(4, -1)
    B[..., rows, cols] = ref.standard_normal((2, 7, rows.size))
    FB = F @ B
    expected = FB @ np.swapaxes(FB, -1, -2)
    np.testing.assert_array_equal(W, 0.5 * (expected + np.swapaxes(expected, -1, -2)))
    assert rng.standard_normal() == ref.standard_normal()


def test_population_replicates_add_the_sampling_spread_of_ols():
    # With the mechanism noise made negligible (epsilon huge), AdaSSP is OLS and the
    # population bootstrap reduces to OLS's fixed-design law N(theta, sigma^2 (X'X)^-1).
    X, y, _ = _data(6, n=1500, noise=0.1)
    n, d = X.shape
    fit = get_estimator("adassp")(
        X, y, budget=ApproxDP(1e7, DELTA), rng=np.random.default_rng(0), bound_X=1.0,
        bound_y=1.0, yty_share=0.5,
    )  # fmt: skip
    ci = _boot(fit, _public(n, d, 1e7), target="population", replicates=4000)
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    s2 = np.sum((y - X @ ols) ** 2) / (n - d)
    sd = np.sqrt(s2 * np.diag(np.linalg.inv(X.T @ X)))
    se_sd = sd / math.sqrt(2 * 3999)
    assert np.all(np.abs(ci.estimates[0].std(0, ddof=1) - sd) < 4 * se_sd)
    assert ci.metadata["residual_variance"][0] == pytest.approx(s2, rel=1e-3)


# --------------------------------------------------------------------------- coverage


def test_adassp_coverage_at_n5000_d3_eps1():
    # 400 fresh datasets, one AdaSSP release and one interval each. The mean over the 3
    # coordinates of a repetition has variance at most p(1 - p) whatever their
    # dependence, so SE <= sqrt(0.95 * 0.05 / 400) = 0.0109; tolerance 3 SE.
    reps, n, d = 400, 5000, 3
    covered = {"empirical": [], "population": []}
    public = _public(n, d)
    rng = np.random.default_rng(2024)
    for r in range(reps):
        X, y, theta = _data(10_000 + r, n=n, d=d)
        fit = _fit("adassp", X, y, trials=1, seed=r, yty_share=0.1)
        ols = np.linalg.lstsq(X, y, rcond=None)[0]
        for target, truth in (("empirical", ols), ("population", theta)):
            ci = _boot(fit, public, target=target, replicates=400, rng=rng)
            covered[target].append(ci.covers(truth).mean())
    tol = 3 * math.sqrt(0.95 * 0.05 / reps)
    for target, values in covered.items():
        assert abs(np.mean(values) - 0.95) < tol, (target, np.mean(values))


# ------------------------------------------------------------------ refusal and regime


def test_unchecked_estimator_is_refused_with_a_pointer_to_the_study(monkeypatch):
    monkeypatch.setattr(boot, "CHECKED_INTERVALS", {})
    X, y, _ = _data(7, n=600)
    fit = _fit("ihm", X, y)
    with pytest.raises(ValueError, match=r"'ihm'.*dpreg_ci_coverage"):
        bootstrap_intervals(fit, public=_public(600, 3), rng=np.random.default_rng(0))


def test_outside_the_checked_regime_warns_and_inside_does_not(monkeypatch):
    regime = CheckedRegime("adassp", "empirical", ((1000, 10, 1.0),), "toy design", "toy")
    monkeypatch.setattr(boot, "CHECKED_INTERVALS", {("adassp", "empirical"): regime})
    X, y, _ = _data(8, n=600)
    fit = _fit("adassp", X, y)
    with pytest.warns(UncheckedRegimeWarning, match="outside the regime"):
        ci = bootstrap_intervals(fit, public=_public(600, 3), rng=np.random.default_rng(0))
    assert not ci.checked
    X, y, _ = _data(8, n=1200)
    fit = _fit("adassp", X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ci = bootstrap_intervals(fit, public=_public(1200, 3), rng=np.random.default_rng(0))
    assert ci.checked and not ci.proven
    assert "(n=1000, d=10, eps=1)" in ci.metadata["checked_regime"]


def test_checked_table_entries_are_well_formed():
    for (estimator, target), regime in boot.CHECKED_INTERVALS.items():
        assert estimator in boot.BOOTSTRAP_ESTIMATORS and target in boot.TARGETS
        assert (regime.estimator, regime.target) == (estimator, target)
        assert regime.cells and all(n > d >= 1 and e > 0 for n, d, e in regime.cells)


# ---------------------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def adassp_fit():
    X, y, _ = _data(9, n=500)
    return _fit("adassp", X, y, trials=2, yty_share=0.2)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(alpha=st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0), st.just(math.nan)))
def test_alpha_outside_0_1_is_refused_by_name(adassp_fit, alpha):
    with pytest.raises((ValueError, TypeError), match="alpha"):
        _boot(adassp_fit, _public(500, 3), alpha=alpha)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    replicates=st.one_of(st.integers(max_value=9), st.floats(), st.booleans(), st.text(max_size=3))
)
def test_bad_replicates_are_refused_by_name(adassp_fit, replicates):
    with pytest.raises(ValueError, match="replicates"):
        _boot(adassp_fit, _public(500, 3), replicates=replicates)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    trials=st.integers(1, 4),
    d=st.integers(1, 4),
    replicates=st.integers(10, 60),
    alpha=st.floats(0.01, 0.5),
    name=st.sampled_from(sorted(CASES)),
)
def test_shapes_and_order_for_any_valid_call(trials, d, replicates, alpha, name):
    X, y, _ = _data(trials * 10 + d, n=300, d=d)
    fit = _fit(name, X, y, trials=trials, **CASES[name])
    ci = _boot(fit, _public(300, d), replicates=replicates, alpha=alpha)
    assert ci.lower.shape == ci.upper.shape == (trials, d)
    assert ci.estimates.shape == (trials, replicates, d)
    assert np.all(ci.lower <= ci.upper) and np.all(np.isfinite(ci.lower))
    assert ci.replicates == replicates and ci.estimator == name


@pytest.mark.parametrize(
    "fit",
    [None, {"theta": np.zeros((1, 2))}, np.zeros((1, 2))],
)
def test_a_fit_of_the_wrong_type_is_refused_by_name(fit):
    with pytest.raises(TypeError, match="fit must be a dpreg.results.Fit"):
        bootstrap_intervals(fit, public=_public(100, 2), rng=np.random.default_rng(0))


def test_a_fit_of_another_estimator_is_refused_by_name():
    X, y, _ = _data(10, n=200, d=2)
    fit = get_estimator("dp_gd")(
        X, y, budget=ZCDP(0.5), rng=np.random.default_rng(0), T=3, step=0.5, clip=1.0
    )
    with pytest.raises(ValueError, match=r"fit: no parametric bootstrap for estimator 'dp_gd'"):
        bootstrap_intervals(fit, public=_public(200, 2), rng=np.random.default_rng(0))


def test_a_fit_without_the_released_statistics_is_refused_by_name():
    fit = Fit(np.zeros((1, 2)), ApproxDP(1.0, 1e-6), "adassp", diagnostics={"ridge": 0.0})
    with pytest.raises(ValueError, match=r"fit: the adassp fit lacks .*xtx_noisy"):
        bootstrap_intervals(fit, public=_public(200, 2), rng=np.random.default_rng(0))


def test_bad_public_inputs_are_refused_by_name(adassp_fit):
    with pytest.raises(TypeError, match="public"):
        bootstrap_intervals(adassp_fit, public={"n": 500}, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="public: d=2"):
        _boot(adassp_fit, _public(500, 2))
    wrong = PublicInputs(n=500, d=3, epsilon=1.0, delta=DELTA, bound_X=2.0, bound_y=1.0)
    with pytest.raises(ValueError, match="public: bound_X and bound_y"):
        _boot(adassp_fit, wrong)
    with pytest.raises(TypeError, match="rng"):
        bootstrap_intervals(adassp_fit, public=_public(500, 3), rng=0)


@pytest.mark.parametrize(("key", "value"), [("target", "both"), ("interval", "bca")])
def test_unknown_options_are_refused_by_name(adassp_fit, key, value):
    with pytest.raises(ValueError, match=key):
        _boot(adassp_fit, _public(500, 3), **{key: value})


def test_population_target_needs_a_release_of_y():
    X, y, _ = _data(11, n=500)
    plain = _fit("adassp", X, y)
    with pytest.raises(ValueError, match="yty_share"):
        _boot(plain, _public(500, 3), target="population")
    ihm = _fit("ihm", X, y)
    with pytest.raises(ValueError, match="not available for IHM"):
        _boot(ihm, _public(500, 3), target="population")
    with pytest.raises(ValueError, match="n > d"):
        _boot(_fit("sheffet_sketch", X, y), _public(3, 3), target="population")


def test_dynamic_sketch_and_intercept_fits_are_refused():
    from dpreg.estimators.intercept import with_intercept

    X, y, _ = _data(12, n=500)
    dyn = _fit("linear_mixing", X, y, dynamic_k=True)
    with pytest.raises(ValueError, match="dynamic_k"):
        _boot(dyn, _public(500, 3))
    fit = with_intercept(
        get_estimator("adassp"), X / 2, y, bound_X=1.0, bound_y=1.0,
        budget=ApproxDP(EPS, DELTA), rng=np.random.default_rng(0),
    )  # fmt: skip
    with pytest.raises(ValueError, match="intercept"):
        _boot(fit, _public(500, 3))
