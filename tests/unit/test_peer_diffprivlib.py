"""The diffprivlib peer of the benchmark, and its known sensitivity defect (issue #105)."""

from __future__ import annotations

import numpy as np
import pytest

from dpreg.data.regimes import load_regime_split
from dpreg.estimators.methods import METHODS, fit_method
from dpreg.privacy.budgets import PureDP

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
