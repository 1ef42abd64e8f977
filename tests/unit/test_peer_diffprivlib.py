"""The diffprivlib peer of the benchmark, and its known sensitivity defect (issue #105)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpreg.data.regimes import load_regime_split
from dpreg.estimators import peer_diffprivlib as peer
from dpreg.estimators.methods import METHODS, fit_method
from dpreg.privacy.budgets import ApproxDP, PureDP

lr = pytest.importorskip("diffprivlib.models.linear_regression")


def _squares_noise(bounds_X, seed):
    """The noisy sums of squares diffprivlib releases, minus the exact ones."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, size=(500, 3))
    y = rng.uniform(-1.0, 1.0, size=500)
    _, noisy = lr._construct_regression_obj(
        X,
        y,
        bounds_X,
        (np.array([-1.0]), np.array([1.0])),
        epsilon=1.0,
        alpha=0.0,
        random_state=seed,
    )
    squares = noisy[2]
    return np.diag(squares) - np.einsum("ij,ij->j", X, X), squares - X.T @ X


def test_issue_105_squared_terms_get_no_noise_with_bounds_from_zero():
    """diffprivlib#105: the sensitivity of sum_i x_ij^2 uses the lower bound twice.

    With bounds (0, 1) it is max(|0|, |0|)^2 = 0: the released sums of squares are the
    exact ones whatever the seed (no privacy for them), while the cross terms are noisy.
    """
    lower, upper = np.zeros(3), np.ones(3)
    for seed in (1, 2, 3):
        diag, full = _squares_noise((lower, upper), seed)
        np.testing.assert_allclose(diag, 0.0, atol=1e-9)  # the defect: exact release
        off = full[~np.eye(3, dtype=bool)]
        assert np.abs(off).min() > 1e-6  # the cross terms do get noise


def test_the_benchmarks_symmetric_bounds_are_not_affected():
    for seed in (1, 2, 3):
        diag, _ = _squares_noise((-np.ones(3), np.ones(3)), seed)
        assert np.abs(diag).min() > 1e-6


def test_the_peer_is_pure_dp_and_labelled_in_the_methods_table():
    method = METHODS["diffprivlib"]
    assert method.peer and method.guarantee == "pure epsilon"
    train, test = load_regime_split(n=2000, d=4, seed=0)
    fit = fit_method("diffprivlib", train.X, train.y, epsilon=1.0, delta=1e-6, bound_X=1.0,
                     bound_y=1.0, rng=np.random.default_rng(0), trials=3)  # fmt: skip
    assert fit.theta.shape == (3, 4) and fit.budget_spent == PureDP(1.0)
    assert fit.budget_spent.to_zcdp().rho == pytest.approx(0.5)
    assert not np.allclose(fit.theta[0], fit.theta[1])  # independent trials
    with pytest.raises(ValueError, match="bound_X"):
        fit_method("diffprivlib", train.X * 3, train.y, epsilon=1.0, delta=1e-6, bound_X=1.0,
                   bound_y=1.0, rng=np.random.default_rng(0))  # fmt: skip


# --- dpreg's vectorised implementation against the library (the reference) ---------


def _design(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d)) / np.sqrt(d)
    y = np.clip(X @ np.linspace(-1.0, 1.0, d) + 0.2 * rng.normal(size=n), -1.0, 1.0)
    return X, y


def _library_model(X, y, epsilon, seed, B=1.0, C=1.0):
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import LinearRegression

    d = X.shape[1]
    model = LinearRegression(epsilon=epsilon, bounds_X=(-B * np.ones(d), B * np.ones(d)),
                             bounds_y=(-C, C), fit_intercept=False, random_state=seed,
                             accountant=BudgetAccountant())  # fmt: skip
    return model.fit(X, y)


@settings(max_examples=25, deadline=None)
@given(
    d=st.integers(1, 6),
    epsilon=st.floats(0.01, 100.0),
    B=st.floats(0.1, 10.0),
    C=st.floats(0.1, 10.0),
)
def test_scales_are_the_ones_the_librarys_mechanisms_use(monkeypatch_scales, d, epsilon, B, C):
    """The scale of every mechanism the library builds, in its order, read from it."""
    record = monkeypatch_scales
    record.clear()
    X, y = _design(50, d, 0)
    lr._construct_regression_obj(X * B, y * C, (-B * np.ones(d), B * np.ones(d)),
                                 (np.array([-C]), np.array([C])), epsilon=epsilon, alpha=0.0,
                                 random_state=1)  # fmt: skip
    scales, folded = peer.functional_mechanism_scales(d, epsilon, B, C)
    assert len(record) == scales.size == 1 + d + d * (d + 1) // 2
    np.testing.assert_array_equal(scales, [s / e for s, e, _ in record])
    np.testing.assert_array_equal(folded, [f for _, _, f in record])
    # and the budget split: the mechanisms' epsilons add up to epsilon
    assert sum(e for _, e, _ in record) == pytest.approx(epsilon, rel=1e-12)


@pytest.fixture(scope="module")
def monkeypatch_scales():
    """Record (sensitivity, epsilon, folded) of each Laplace mechanism the library builds."""
    record = []

    class Laplace(lr.Laplace):
        def randomise(self, value):
            record.append((self.sensitivity, self.epsilon, False))
            return super().randomise(value)

    class LaplaceFolded(lr.LaplaceFolded):
        def randomise(self, value):
            record.append((self.sensitivity, self.epsilon, True))
            return super().randomise(value)

    mp = pytest.MonkeyPatch()
    mp.setattr(lr, "Laplace", Laplace)
    mp.setattr(lr, "LaplaceFolded", LaplaceFolded)
    yield record
    mp.undo()


CASES = [(500, 1, 1.0), (800, 3, 0.1), (800, 3, 10.0), (2000, 12, 1.0), (1500, 40, 3.0)]


@pytest.mark.parametrize(("n", "d", "epsilon"), CASES)
def test_same_seed_same_noisy_coefficients_and_same_fit(n, d, epsilon):
    X, y = _design(n, d, d)
    scales, folded = peer.functional_mechanism_scales(d, epsilon, 1.0, 1.0)
    values = peer._monomial_coefficients(X, y)
    for seed in (3, 17, 2**31 - 2):
        model = _library_model(X, y, epsilon, seed)
        c0, c1, c2 = peer._noisy_coefficients(values, d, seed, scales, folded)
        l0, l1, l2 = model._obj_coefs
        np.testing.assert_array_equal(c0, l0[0])
        np.testing.assert_array_equal(c1, l1[:, 0])
        np.testing.assert_array_equal(c2, l2)
        # the minimisation, given the library's own noisy coefficients
        np.testing.assert_array_equal(peer._minimise_noisy_objective(l0[0], l1[:, 0], l2),
                                      model.coef_)  # fmt: skip


@pytest.mark.parametrize(("epsilon", "convex"), [(0.3, False), (1e4, True)])
def test_the_two_implementations_return_the_same_fits_convex_or_not(epsilon, convex):
    X, y = _design(800, 5, 1)
    fits = {
        impl: peer.run_diffprivlib_linear_regression(
            X,
            y,
            budget=ApproxDP(epsilon, 1e-6),
            rng=np.random.default_rng(8),
            trials=40,
            bound_X=1.0,
            bound_y=1.0,
            impl=impl,
        )  # fmt: skip
        for impl in peer.PEER_IMPLEMENTATIONS
    }
    np.testing.assert_array_equal(fits["vectorised"].theta, fits["library"].theta)
    assert fits["vectorised"].budget_spent == fits["library"].budget_spent == PureDP(epsilon)
    assert fits["vectorised"].diagnostics == fits["library"].diagnostics
    # the cases cover indefinite noisy objectives (no minimum: BFGS stops where it
    # stops, no closed form would do) and convex ones
    values = peer._monomial_coefficients(X, y)
    scales, folded = peer.functional_mechanism_scales(5, epsilon, 1.0, 1.0)
    seeds = np.random.default_rng(8).integers(0, 2**31 - 1, size=40)
    quadratics = [peer._noisy_coefficients(values, 5, int(s), scales, folded)[2] for s in seeds]
    smallest = [np.linalg.eigvalsh(q)[0] for q in quadratics]
    assert (min(smallest) > 0) if convex else (max(smallest) < 0)


def test_the_two_implementations_agree_in_law_with_independent_seeds():
    """Two-sample KS tests per coordinate (fixed seeds; level 1e-3 each)."""
    X, y = _design(2000, 2, 2)
    a, b = (
        peer.run_diffprivlib_linear_regression(
            X,
            y,
            budget=ApproxDP(30.0, 1e-6),
            rng=np.random.default_rng(seed),
            trials=400,
            bound_X=1.0,
            bound_y=1.0,
            impl=impl,
        ).theta  # fmt: skip
        for seed, impl in ((11, "vectorised"), (12, "library"))
    )
    assert not np.array_equal(a, b)
    for j in range(2):
        assert stats.ks_2samp(a[:, j], b[:, j]).pvalue > 1e-3


def test_the_noise_is_laplace_with_the_stated_scale():
    """Standardised noise of the vectorised path: mean 0, variance 2, E|Z| = 1 (4 SE)."""
    d, epsilon = 3, 1.0
    X, y = _design(300, d, 3)
    scales, folded = peer.functional_mechanism_scales(d, epsilon, 1.0, 1.0)
    values = peer._monomial_coefficients(X, y)
    z = []
    for seed in range(400):
        c0, c1, c2 = peer._noisy_coefficients(values, d, seed, scales, folded)
        z.append((c1 - values[1 : 1 + d]) / scales[1 : 1 + d])  # the unfolded ones
        z.append(
            (c2[np.triu_indices(d, 1)] - values[1 + d :][~folded[1 + d :]]) / scales[~folded][d:]
        )
    z = np.concatenate(z)
    se = np.sqrt(np.array([2.0, 24.0 - 4.0, 1.0]) / z.size)  # Var Z, Var Z^2, Var |Z|
    assert abs(z.mean()) < 4 * se[0]
    assert abs((z**2).mean() - 2.0) < 4 * se[1]
    assert abs(np.abs(z).mean() - 1.0) < 4 * se[2]


def test_bad_impl_is_named():
    X, y = _design(100, 2, 0)
    with pytest.raises(ValueError, match="impl"):
        peer.run_diffprivlib_linear_regression(X, y, budget=ApproxDP(1.0, 1e-6),
                                               rng=np.random.default_rng(0), bound_X=1.0,
                                               bound_y=1.0, impl="fast")  # fmt: skip


def test_availability_is_looked_up_without_importing_the_library():
    # Importing diffprivlib loads scikit-learn (~1 s per benchmark job); the check and
    # the default implementation need neither (issue 18).
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from dpreg.estimators.peer_diffprivlib import diffprivlib_available\n"
        "assert diffprivlib_available()\n"
        "print('diffprivlib' in sys.modules, 'sklearn' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_missing_library_gives_the_install_hint(monkeypatch):
    import importlib.util

    from dpreg.estimators.methods import PublicInputs, get_method

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert not peer.diffprivlib_available()
    public = PublicInputs(n=100, d=2, epsilon=1.0, delta=1e-4, bound_X=1.0, bound_y=1.0)
    assert get_method("diffprivlib").reason_not_run(public) == peer.PEER_INSTALL_HINT
