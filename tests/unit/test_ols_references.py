"""Non-private references: statsmodels OLS / IV2SLS against closed forms and linearmodels."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from linearmodels.iv import IV2SLS as LinearModelsIV2SLS

from dpreg.estimators import get_estimator
from dpreg.estimators.ols import (
    OLSReference,
    TwoSLSReference,
    fit_ols,
    ols_reference,
    two_sls,
    two_sls_reference,
)
from dpreg.privacy.budgets import ApproxDP

# ---------------------------------------------------------------------------- data


def _ols_data(seed: int = 0, n: int = 300, d: int = 4):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, d - 1))])
    theta = rng.normal(size=d)
    # heteroskedastic errors, so classical and HC1 standard errors differ
    y = X @ theta + (0.5 + np.abs(X[:, 1])) * rng.normal(size=n)
    return X, y


def _iv_data(seed: int, n: int, p: int, q: int, with_controls: bool = True):
    """Simulated IV design: X endogenous through u, Z relevant, W = [1, w] exogenous."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, q))
    W = np.column_stack([np.ones(n), rng.normal(size=n)]) if with_controls else None
    u = rng.normal(size=n)
    Pi = rng.normal(size=(q, p)) + 0.5
    X = Z @ Pi + 0.8 * u[:, None] + rng.normal(size=(n, p))
    if W is not None:
        X = X + 0.3 * W[:, [1]]
    beta = np.linspace(1.0, -1.0, p)
    y = X @ beta + u * (1.0 + 0.5 * np.abs(Z[:, 0]))
    if W is not None:
        y = y + W @ np.array([0.5, -0.25])
    return y, X, Z, W


# ---------------------------------------------------------------------------- OLS


def test_ols_reference_matches_lstsq_and_closed_form_standard_errors():
    X, y = _ols_data()
    n, d = X.shape
    ref = ols_reference(X, y)
    assert isinstance(ref, OLSReference)
    theta = np.linalg.lstsq(X, y, rcond=None)[0]
    np.testing.assert_allclose(ref.params, theta, rtol=0, atol=1e-10)

    # independent closed form: sigma^2 (X'X)^{-1} with sigma^2 = SSR / (n - d)
    resid = y - X @ theta
    s2 = resid @ resid / (n - d)
    xtx_inv = np.linalg.inv(X.T @ X)  # well conditioned here (cond < 10)
    np.testing.assert_allclose(ref.std_errors, np.sqrt(s2 * np.diag(xtx_inv)), rtol=1e-10)
    np.testing.assert_allclose(ref.residual_variance, s2, rtol=1e-12)
    np.testing.assert_allclose(ref.ssr, resid @ resid, rtol=1e-12)
    # HC1: n/(n-d) (X'X)^{-1} X' diag(e^2) X (X'X)^{-1}
    meat = (X * resid[:, None] ** 2).T @ X
    hc1 = n / (n - d) * xtx_inv @ meat @ xtx_inv
    np.testing.assert_allclose(ref.std_errors_hc1, np.sqrt(np.diag(hc1)), rtol=1e-10)
    assert not np.allclose(ref.std_errors, ref.std_errors_hc1, rtol=1e-2)
    assert (ref.n, ref.d, ref.rank) == (n, d, d)


def test_ols_reference_to_dict_is_json_able():
    X, y = _ols_data()
    ref = ols_reference(X, y)
    out = json.loads(json.dumps(ref.to_dict()))
    assert set(out) == {
        "params",
        "std_errors",
        "std_errors_hc1",
        "residual_variance",
        "ssr",
        "n",
        "d",
        "rank",
    }
    np.testing.assert_allclose(out["params"], ref.params, rtol=1e-15)
    assert out["rank"] == 4 and isinstance(out["n"], int)


def test_ols_reference_rank_deficient_gives_minimum_norm_solution():
    X, y = _ols_data()
    X = np.column_stack([X, X[:, 1]])  # duplicate column: rank d - 1
    ref = ols_reference(X, y)
    assert ref.rank == X.shape[1] - 1
    np.testing.assert_allclose(ref.params, np.linalg.lstsq(X, y, rcond=None)[0], atol=1e-10)
    assert ref.params[1] == pytest.approx(ref.params[-1], abs=1e-10)


@pytest.mark.parametrize(
    ("X", "y", "match"),
    [
        (np.array([[1.0, np.nan], [2.0, 3.0], [4.0, 1.0]]), np.ones(3), "X contains NaN"),
        (np.eye(3), np.array([1.0, np.inf, 0.0]), "y contains NaN or infinite"),
        (np.eye(3), np.ones(4), "y has 4 rows but X has 3"),
        (np.ones(3), np.ones(3), "X must be a 2-D array"),
        (np.ones((2, 3)), np.ones(2), "at least as many rows as columns"),
        (np.eye(3), np.ones(3), "need more rows than the rank"),
    ],
)
def test_ols_reference_bad_input(X, y, match):
    with pytest.raises(ValueError, match=match):
        ols_reference(X, y)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 120),
    d=st.integers(1, 12),
    log_scale=st.floats(-6.0, 6.0),
    duplicated=st.booleans(),
    fortran=st.booleans(),
)
def test_ols_reference_numpy_path_is_bit_identical_to_statsmodels(
    seed, n, d, log_scale, duplicated, fortran
):
    # The workflow's references (results/references/*.json) are written by the numpy
    # path; statsmodels is the reference path: every field the same bits, also when X is
    # rank deficient (a duplicated column), badly scaled or in Fortran order.
    rng = np.random.default_rng(seed)
    d = min(d, n)
    X = rng.normal(size=(n, d)) * 10.0 ** (log_scale * rng.uniform(-1, 1, size=d))
    if duplicated and d > 1:
        X[:, -1] = 3.0 * X[:, 0]
    if fortran:
        X = np.asfortranarray(X)
    y = X @ rng.normal(size=d) + rng.standard_t(3, size=n)
    try:
        expected = ols_reference(X, y, backend="statsmodels")
    except ValueError as error:  # no residual degrees of freedom: both refuse alike
        with pytest.raises(ValueError, match="need more rows than the rank"):
            ols_reference(X, y)
        assert "need more rows than the rank" in str(error)
        return
    got = ols_reference(X, y)
    for field, value in vars(expected).items():
        np.testing.assert_array_equal(getattr(got, field), value, strict=True, err_msg=field)
    assert got.to_dict() == expected.to_dict()


def test_ols_reference_backend_is_checked():
    X, y = _ols_data()
    with pytest.raises(ValueError, match="backend must be 'numpy' or 'statsmodels'"):
        ols_reference(X, y, backend="scipy")


def test_fit_ols_contract():
    X, y = _ols_data()
    fit = fit_ols(X, y, trials=3)
    assert get_estimator("ols") is fit_ols
    assert fit.theta.shape == (3, X.shape[1])
    assert fit.budget_spent is None and fit.estimator == "ols"
    np.testing.assert_array_equal(fit.theta[0], fit.theta[2])
    np.testing.assert_allclose(fit.theta[0], ols_reference(X, y).params, atol=1e-10)
    # the uniform study call (budget, rng, bounds) is accepted and ignored
    fit2 = fit_ols(
        X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(0), bound_X=1, bound_y=1
    )
    np.testing.assert_array_equal(fit2.theta[0], fit.theta[0])
    with pytest.raises(ValueError, match="trials"):
        fit_ols(X, y, trials=0)


# ---------------------------------------------------------------------------- 2SLS


def _linearmodels(y, X, Z, W, **fit_kw):
    """linearmodels IV2SLS(dependent, exog, endog, instruments), reordered to [X, W]."""
    res = LinearModelsIV2SLS(y, W, X, Z).fit(**fit_kw)
    p = X.shape[1]
    r = 0 if W is None else W.shape[1]
    order = list(range(r, r + p)) + list(range(r))  # linearmodels puts exog first
    return res, res.params.to_numpy()[order], res.std_errors.to_numpy()[order]


@pytest.mark.parametrize(
    ("p", "q", "with_controls"),
    [(1, 1, True), (2, 2, True), (2, 4, True), (1, 3, False)],
    ids=["just-identified-p1", "just-identified-p2", "over-identified", "no-controls"],
)
def test_two_sls_statsmodels_linearmodels_closed_form_agree(p, q, with_controls):
    y, X, Z, W = _iv_data(seed=10 * p + q, n=500, p=p, q=q, with_controls=with_controls)
    n = y.shape[0]
    k = p + (0 if W is None else W.shape[1])
    ref = two_sls_reference(y=y, X=X, Z=Z, W=W)
    closed = two_sls(y=y, X=X, Z=Z, W=W)
    _, lm_params, lm_se_debiased = _linearmodels(y, X, Z, W, cov_type="unadjusted", debiased=True)
    np.testing.assert_allclose(ref.params, closed, rtol=0, atol=1e-8)
    np.testing.assert_allclose(ref.params, lm_params, rtol=0, atol=1e-8)
    # statsmodels divides SSR by n - k; linearmodels' unadjusted (debiased=False) by n.
    np.testing.assert_allclose(ref.std_errors, lm_se_debiased, rtol=1e-8)
    _, _, lm_se_n = _linearmodels(y, X, Z, W, cov_type="unadjusted", debiased=False)
    np.testing.assert_allclose(ref.std_errors, lm_se_n * np.sqrt(n / (n - k)), rtol=1e-8)
    # robust: HC1 equals linearmodels' robust covariance with the n/(n-k) correction
    _, _, lm_robust = _linearmodels(y, X, Z, W, cov_type="robust", debiased=True)
    np.testing.assert_allclose(ref.std_errors_robust, lm_robust, rtol=1e-8)
    # first stage: regress each column of X on [Z, W]
    M = Z if W is None else np.column_stack([Z, W])
    np.testing.assert_allclose(
        ref.first_stage, np.linalg.lstsq(M, X, rcond=None)[0], rtol=0, atol=1e-8
    )
    assert ref.first_stage.shape == (M.shape[1], p)
    assert (ref.n, ref.n_endogenous, ref.n_instruments) == (n, p, q)
    assert ref.n_controls == (0 if W is None else 2)
    assert isinstance(ref, TwoSLSReference)
    json.dumps(ref.to_dict())


def test_two_sls_equals_textbook_formula():
    y, X, Z, W = _iv_data(seed=3, n=300, p=2, q=3)
    D, M = np.column_stack([X, W]), np.column_stack([Z, W])
    P = M @ np.linalg.solve(M.T @ M, M.T)  # textbook projection, fine in a test
    beta = np.linalg.solve(D.T @ P @ D, D.T @ P @ y)
    np.testing.assert_allclose(two_sls(y=y, X=X, Z=Z, W=W), beta, rtol=0, atol=1e-10)


def test_two_sls_one_dimensional_inputs_are_single_columns():
    y, X, Z, W = _iv_data(seed=4, n=200, p=1, q=1)
    a = two_sls_reference(y=y, X=X[:, 0], Z=Z[:, 0], W=W)
    b = two_sls_reference(y=y, X=X, Z=Z, W=W)
    np.testing.assert_array_equal(a.params, b.params)


def test_two_sls_bad_input():
    y, X, Z, W = _iv_data(seed=5, n=200, p=2, q=3)
    with pytest.raises(ValueError, match="under-identified: Z has q=1 .* p=2"):
        two_sls_reference(y=y, X=X, Z=Z[:, :1], W=W)
    with pytest.raises(ValueError, match="under-identified"):
        two_sls(y=y, X=X, Z=Z[:, :1], W=W)
    Z_nan = Z.copy()
    Z_nan[7, 1] = np.nan
    with pytest.raises(ValueError, match="Z contains NaN"):
        two_sls_reference(y=y, X=X, Z=Z_nan, W=W)
    y_nan = y.copy()
    y_nan[0] = np.nan
    with pytest.raises(ValueError, match="y contains NaN"):
        two_sls_reference(y=y_nan, X=X, Z=Z, W=W)
    with pytest.raises(ValueError, match="X has 199 rows but y has 200"):
        two_sls_reference(y=y, X=X[:-1], Z=Z, W=W)
    with pytest.raises(ValueError, match="W has 199 rows"):
        two_sls_reference(y=y, X=X, Z=Z, W=W[:-1])
    with pytest.raises(ValueError, match="y must be a 1-D array"):
        two_sls_reference(y=np.column_stack([y, y]), X=X, Z=Z, W=W)
    # rank-deficient instruments: a duplicated instrument column
    with pytest.raises(ValueError, match="instruments .* rank deficient"):
        two_sls_reference(y=y, X=X, Z=np.column_stack([Z, Z[:, 0]]), W=W)
    # rank condition: an "endogenous" regressor that is a control
    with pytest.raises(ValueError, match="rank condition"):
        two_sls_reference(y=y, X=np.column_stack([X[:, 0], W[:, 1]]), Z=Z, W=W)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(6, 300),
    p=st.integers(1, 3),
    extra=st.integers(0, 3),
    with_controls=st.booleans(),
    log_scale=st.floats(-5.0, 5.0),
    fortran=st.booleans(),
    weak=st.booleans(),
)
def test_two_sls_numpy_path_is_bit_identical_to_statsmodels(
    seed, n, p, extra, with_controls, log_scale, fortran, weak
):
    # The workflow's 2SLS references (results/references/*.json of the datasets with
    # instruments) are written by the numpy path; statsmodels' IV2SLS is the reference
    # path: every field the same bits, for just- and over-identified designs, badly scaled
    # columns, Fortran order and nearly irrelevant instruments.
    q = p + extra
    y, X, Z, W = _iv_data(seed=seed % 2**31, n=max(n, p + q + 4), p=p, q=q,
                          with_controls=with_controls)  # fmt: skip
    rng = np.random.default_rng(seed)
    Z = Z * 10.0 ** (log_scale * rng.uniform(-1, 1, size=q))
    if weak:  # first stage close to rank deficient
        Z = Z * 1e-6 + rng.normal(size=Z.shape) * 1e-12
    if fortran:
        X, Z = np.asfortranarray(X), np.asfortranarray(Z)
    try:
        expected = two_sls_reference(y=y, X=X, Z=Z, W=W, backend="statsmodels")
    except (ValueError, np.linalg.LinAlgError) as error:  # both refuse alike
        with pytest.raises(type(error)):
            two_sls_reference(y=y, X=X, Z=Z, W=W)
        return
    got = two_sls_reference(y=y, X=X, Z=Z, W=W)
    for field, value in vars(expected).items():
        np.testing.assert_array_equal(getattr(got, field), value, strict=True, err_msg=field)
    assert got.to_dict() == expected.to_dict()


def test_two_sls_reference_backend_is_checked():
    y, X, Z, W = _iv_data(seed=7, n=50, p=1, q=1)
    with pytest.raises(ValueError, match="backend must be 'numpy' or 'statsmodels'"):
        two_sls_reference(y=y, X=X, Z=Z, W=W, backend="linearmodels")


def test_two_sls_takes_keywords_only_so_x_and_z_cannot_be_swapped():
    y, X, Z, W = _iv_data(seed=6, n=200, p=1, q=1)
    with pytest.raises(TypeError):
        two_sls(y, X, Z)  # positional: refused
    with pytest.raises(TypeError):
        two_sls_reference(y, X, Z, W)
    batch = two_sls(y=np.stack([y, y]), X=np.stack([X, X]), Z=np.stack([Z, Z]))
    np.testing.assert_allclose(batch[0], two_sls(y=y, X=X, Z=Z), rtol=1e-9)


# ---------------------------------------------------------------------- OLS solvers (issue 18)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(12, 400),
    d=st.integers(1, 12),
    log_scale=st.floats(0.0, 4.0),
)
def test_gram_solver_equals_lstsq(seed, n, d, log_scale):
    """Well conditioned or not, "gram" gives lstsq's minimum-norm solution and rank."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 10.0 ** rng.uniform(-log_scale, log_scale, size=d)
    y = X @ rng.normal(size=d) + rng.normal(size=n)
    gram = fit_ols(X, y, solver="gram")
    ref = fit_ols(X, y, solver="lstsq")
    scale = np.abs(ref.theta).max()
    np.testing.assert_allclose(gram.theta, ref.theta, rtol=0, atol=1e-9 * scale)
    assert gram.diagnostics["rank"] == ref.diagnostics["rank"]


def test_gram_solver_falls_back_on_rank_deficiency_and_ill_conditioning():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 3))
    deficient = np.column_stack([X, X[:, 0] + X[:, 1]])  # rank 3: the minimum-norm solution
    y = rng.normal(size=50)
    for design in (deficient, X * np.array([1.0, 1.0, 1e-5])):  # cond(X'X) = 1e10 > 1e6
        gram, ref = fit_ols(design, y, solver="gram"), fit_ols(design, y, solver="lstsq")
        np.testing.assert_array_equal(gram.theta, ref.theta)  # the same call: lstsq
        assert gram.diagnostics["rank"] == ref.diagnostics["rank"]
    assert fit_ols(deficient, y).diagnostics["rank"] == 3
    with pytest.raises(ValueError, match="solver"):
        fit_ols(X, y, solver="qr")


def _former_gram_ols(X, y):
    """The "gram" OLS as written before issue 18's seventh pass: checks, then scipy."""
    from scipy.linalg import cho_factor, cho_solve

    from dpreg._validation import check_regression

    X, y = check_regression(X, y, require_full_rank=False)
    G = X.T @ X
    lam = np.linalg.eigvalsh(G)
    if lam[0] > 0 and lam[-1] <= 1e6 * lam[0]:
        return cho_solve(cho_factor(G), X.T @ y), X.shape[1]
    theta, _, rank, _ = np.linalg.lstsq(X, y, rcond=None)
    return theta, int(rank)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 300),
    d=st.integers(1, 12),
    layout=st.sampled_from(["C", "F", "strided", "float32", "list", "column_y"]),
    log_scale=st.floats(0.0, 5.0),
)
def test_gram_ols_validated_by_its_gram_is_bit_identical_to_the_checked_path(
    seed, n, d, layout, log_scale
):
    """The Gram-validated path returns exactly the checks-then-scipy result, any layout."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2 * d)) * 10.0 ** rng.uniform(-log_scale, log_scale, size=2 * d)
    y = X[:, :d] @ rng.normal(size=d) + rng.normal(size=n)
    X_in, y_in = X[:, :d].copy(), y
    if layout == "F":
        X_in = np.asfortranarray(X_in)
    elif layout == "strided":
        X_in = X[:, ::2]
    elif layout == "float32":
        X_in = X_in.astype(np.float32)
    elif layout == "list":
        X_in, y_in = X_in.tolist(), y.tolist()
    elif layout == "column_y":
        y_in = y[:, None]
    if n < d:
        with pytest.raises(ValueError, match="at least as many rows"):
            fit_ols(X_in, y_in)
        return
    theta, rank = _former_gram_ols(X_in, y_in)
    fit = fit_ols(X_in, y_in, trials=2)
    assert fit.theta.tobytes() == np.repeat(theta[None, :], 2, axis=0).tobytes()
    assert fit.diagnostics["rank"] == rank


@pytest.mark.parametrize("where", ["X", "y"])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_gram_ols_refuses_non_finite_data_with_the_checks_message(where, value):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(40, 3)), rng.normal(size=40)
    (X if where == "X" else y)[7 if where == "y" else (7, 2)] = value
    with pytest.raises(ValueError, match=rf"^{where} contains NaN or infinite values"):
        fit_ols(X, y)
    with pytest.raises(ValueError, match=rf"^{where} contains NaN or infinite values"):
        fit_ols(X, y, trials=0)  # the data's error first, as before


def test_gram_ols_overflowing_trace_falls_back_to_the_checks():
    """Finite data whose Gram overflows: the reference decides (lstsq), no error."""
    X = np.array([[1e200, 0.0], [0.0, 1.0], [1.0, 1.0]])
    y = np.array([1.0, 2.0, 3.0])
    with pytest.warns(RuntimeWarning, match="overflow") as record:
        fit = fit_ols(X, y)
    assert len(record) == 1  # the reference's warning, once (as before)
    with pytest.warns(RuntimeWarning, match="overflow"):
        theta, rank = _former_gram_ols(X, y)
    assert fit.theta[0].tobytes() == theta.tobytes() and fit.diagnostics["rank"] == rank
