"""The ``eps_grid`` train MSE from a QR factor equals the residual pass to rounding.

``train_mse(..., "qr")`` scores a fit by :math:`\\|r\\|^2 - 2(R\\Delta)^\\top Q^\\top r +
\\|R\\Delta\\|^2` with :math:`X = QR` (issue 18: no (trials, n) residual matrix per pair);
``"rows"`` is the reference. The tolerance is a rounding bound, not a tuned number: a
computed sum of m products is within :math:`\\gamma_m = m u / (1 - m u)` of its exact value
relative to the sum of the products' absolute values (Higham, Lemma 3.4), Householder QR
is backward stable column by column (:math:`X + E = QR`, :math:`\\|E_j\\| \\le
\\tilde\\gamma_{nd}\\|X_j\\|`, Higham Thm 19.4; we take the constant 4), so
:math:`|\\|R\\Delta\\|^2 - \\|X\\Delta\\|^2| \\le 3\\sqrt d\\,\\gamma\\,\\||X||\\Delta|\\|^2`, and
every error of both paths is bounded by :math:`\\sum_i (|y_i| + |x_i|^\\top(|\\theta| +
2|\\theta_{ols}|))^2` times such a factor; we allow 16 sqrt(d) of them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.experiments.regression import OlsReference, ols_reference, run_eps_cell, train_mse

U = np.finfo(np.float64).eps / 2.0


def _bound(theta, X, y, ref) -> np.ndarray:
    n, d = X.shape
    m = 4 * n * d + 2 * n + 4 * d
    gamma = m * U / (1.0 - m * U)
    scale = np.abs(y)[None, :] + (np.abs(theta) + 2.0 * np.abs(ref.theta)) @ np.abs(X).T
    return 16.0 * np.sqrt(d) * gamma * np.einsum("ij,ij->i", scale, scale) / n


def _problem(seed: int, n: int, d: int, spread: float, collinear: bool):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.exp(spread * rng.normal(size=d))
    if collinear and d > 1:
        X[:, -1] = X[:, 0] + 1e-6 * rng.normal(size=n)  # badly conditioned X'X
    y = X @ rng.normal(size=d) + rng.normal(size=n)
    theta = np.linalg.lstsq(X, y, rcond=None)[0] + rng.normal(size=(5, d)) * np.exp(
        3.0 * rng.normal(size=(5, 1))
    )
    return X, y, theta


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 400),
    d=st.integers(1, 12),
    spread=st.floats(0.0, 3.0),
    collinear=st.booleans(),
)
def test_qr_score_equals_the_residual_pass_to_rounding(seed, n, d, spread, collinear):
    X, y, theta = _problem(seed, max(n, d), d, spread, collinear)
    ref = ols_reference(X, y)
    fast = train_mse(theta, X, y, ref, "qr")
    rows = train_mse(theta, X, y, ref, "rows")
    assert np.all(np.abs(fast - rows) <= _bound(theta, X, y, ref))


def test_any_reference_point_is_exact_algebra():
    # the moment term makes the identity exact for any theta_ref, not only OLS
    X, y, theta = _problem(5, 300, 4, 1.0, False)
    ref = ols_reference(X, y, theta_ols=np.ones(4))
    fast = train_mse(theta, X, y, ref, "qr")
    rows = train_mse(theta, X, y, ref, "rows")
    assert np.all(np.abs(fast - rows) <= _bound(theta, X, y, ref))
    # a control: without the moment term the score is wrong by far more than the bound
    broken = OlsReference(ref.theta, ref.mse, ref.factor, np.zeros(4))
    assert np.all(
        np.abs(train_mse(theta, X, y, broken, "qr") - rows) > 1e3 * _bound(theta, X, y, ref)
    )


def test_bad_scoring_name_is_refused():
    X, y, theta = _problem(1, 20, 2, 0.0, False)
    with pytest.raises(ValueError, match="scoring"):
        train_mse(theta, X, y, ols_reference(X, y), "fast")


@pytest.mark.parametrize("estimator", ["adassp", "ihm", "linear_mixing", "dp_gd"])
def test_rows_equal_but_for_the_scored_mse(estimator):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(3000, 5))
    X /= np.linalg.norm(X, axis=1).max()
    y = np.clip(X @ np.array([0.5, -0.3, 0.2, 0.1, 0.0]) + 0.1 * rng.normal(size=3000), -1, 1)
    kwargs = dict(estimator=estimator, epsilon=1.0, delta=1e-7, trials=64, seed=3, stream=1)
    fast = run_eps_cell(X, y, scoring="qr", **kwargs)
    rows = run_eps_cell(X, y, scoring="rows", **kwargs)
    scored = ["mse", "excess_mse"]
    pd.testing.assert_frame_equal(fast.drop(columns=scored), rows.drop(columns=scored))
    ref = ols_reference(X, y)
    assert fast["mse_ols"].iloc[0] == ref.mse
    # mse within the rounding bound (the fits are not returned: the bound takes
    # |theta_j| + 2 |theta_ols| <= 10 entrywise, far above these estimates at eps = 1);
    # excess_mse = mse - mse_ols in both
    n, d = X.shape
    gamma = (4 * n * d + 2 * n + 4 * d) * U
    bound = (
        16.0 * np.sqrt(d) * gamma * float(np.mean((np.abs(y) + 10.0 * np.abs(X).sum(axis=1)) ** 2))
    )
    assert np.all(np.abs(fast["mse"] - rows["mse"]) <= bound)
    assert np.all(fast["excess_mse"] == fast["mse"] - fast["mse_ols"])
    assert np.all(rows["param_error"] + 3.0 * np.linalg.norm(ref.theta) <= 10.0)
