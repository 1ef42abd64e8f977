"""Non-private references: OLS and two-stage least squares (2SLS).

* :func:`ols_reference` -- OLS with classical and HC1 standard errors, as statsmodels fits
  it (by numpy; statsmodels itself as the reference path);
* :func:`two_sls_reference` -- statsmodels' ``IV2SLS`` with homoskedastic and HC1
  standard errors and the first-stage coefficients;
* :func:`two_sls` -- the 2SLS estimator from one QR factorisation;
* :func:`fit_ols` -- OLS under the estimator contract (registry name ``"ols"``), the
  noiseless baseline of every DP regression study.

Naming follows docs/architecture.md: ``y`` is the outcome, ``X`` the regressors (endogenous in
2SLS), ``Z`` the excluded instruments and ``W`` the exogenous controls; statsmodels'
``endog``/``exog`` appear only at the call into statsmodels.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpreg._validation import check_matrix, check_regression, check_trials, check_vector
from dpreg.results import Fit

__all__ = [
    "OLS_SOLVERS",
    "OLSReference",
    "TwoSLSReference",
    "fit_ols",
    "ols_reference",
    "two_sls",
    "two_sls_reference",
]


def _jsonable(value: Any) -> Any:
    """Convert arrays and numpy scalars to lists/floats; non-finite floats to None."""
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        v = float(value)
        return v if math.isfinite(v) else None
    return value


@dataclass(frozen=True)
class OLSReference:
    r"""Non-private OLS fit of ``y`` on ``X`` (no intercept added).

    Attributes
    ----------
    params : ndarray, shape (d,)
        :math:`\hat\theta = X^+ y`, the minimum-norm least-squares solution (the
        unique OLS solution when ``rank == d``).
    std_errors : ndarray, shape (d,)
        Classical standard errors, square roots of the diagonal of
        :math:`\hat\sigma^2 (X^\top X)^{+}`.
    std_errors_hc1 : ndarray, shape (d,)
        Heteroskedasticity-robust HC1 standard errors (White's sandwich times
        :math:`n/(n-\mathrm{rank})`).
    residual_variance : float
        :math:`\hat\sigma^2 = \mathrm{SSR}/(n - \mathrm{rank})`.
    ssr : float
        Sum of squared residuals :math:`L(\hat\theta) = \|y - X\hat\theta\|^2`.
    n : int
        Number of rows.
    d : int
        Number of columns.
    rank : int
        Numerical rank of ``X``. When ``rank < d`` the parameters are not identified;
        ``params`` is the minimum-norm solution and its standard errors are those of
        that estimator (statsmodels' pseudo-inverse convention).
    """

    params: np.ndarray
    std_errors: np.ndarray
    std_errors_hc1: np.ndarray
    residual_variance: float
    ssr: float
    n: int
    d: int
    rank: int

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-able dict (arrays as lists, non-finite numbers as ``None``)."""
        return {key: _jsonable(value) for key, value in asdict(self).items()}


def ols_reference(X: Any, y: Any, *, backend: str = "numpy") -> OLSReference:
    r"""Non-private OLS of ``y`` on ``X``, as statsmodels' ``OLS(y, X).fit()`` computes it.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Regressors; include a column of ones yourself if you want an intercept (Lev et
        al. 2026, §5, fit without one). Rank deficiency is allowed (minimum-norm
        solution, as Lev et al.'s experiments use).
    y : array_like, shape (n,)
        Outcome.
    backend : {"numpy", "statsmodels"}, default "numpy"
        ``"statsmodels"`` fits with statsmodels' ``OLS`` (the reference path);
        ``"numpy"`` does the same arithmetic (pseudo-inverse by SVD with statsmodels'
        cutoff, the same products in the same order) without importing statsmodels,
        which costs about 0.5 s of CPU per workflow job (docs/scaling.md). The two
        give the same bits (``tests/unit/test_ols_references.py``).

    Returns
    -------
    OLSReference

    Raises
    ------
    ValueError
        On bad shapes, NaN/inf, ``n < d``, ``n == rank`` (no residual degrees of
        freedom for the standard errors) or an unknown ``backend``.

    Notes
    -----
    :math:`\hat\theta = \arg\min_\theta \|y - X\theta\|_2^2` (Lev et al. 2026, §1,
    the :math:`\theta^*` every DP estimator is compared with).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 3.0]])
    >>> ref = ols_reference(X, np.array([1.0, 3.0, 5.0, 7.5]))
    >>> ref.params.round(3).tolist(), ref.rank
    ([0.9, 2.15], 2)
    """
    if backend not in ("numpy", "statsmodels"):
        raise ValueError(f"backend must be 'numpy' or 'statsmodels'; got {backend!r}")
    X, y = check_regression(X, y, require_full_rank=False)
    n, d = X.shape
    fit = _ols_statsmodels(X, y) if backend == "statsmodels" else _ols_pinv(X, y)
    rank = fit["rank"]
    if n <= rank:
        raise ValueError(
            f"need more rows than the rank of X for standard errors: n={n}, rank={rank}"
        )
    return OLSReference(
        params=np.asarray(fit["params"], dtype=np.float64),
        std_errors=np.asarray(fit["bse"], dtype=np.float64),
        std_errors_hc1=np.asarray(fit["hc1"], dtype=np.float64),
        residual_variance=float(fit["scale"]),
        ssr=float(fit["ssr"]),
        n=n,
        d=d,
        rank=rank,
    )


def _ols_statsmodels(X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """Fit by statsmodels' ``OLS(y, X).fit()``: the reference path of :func:`ols_reference`."""
    # statsmodels is imported here, not at module level, and only its OLS (the class
    # statsmodels.api.OLS names): statsmodels.api costs ~0.3 s more per workflow job
    from statsmodels.regression.linear_model import OLS
    from statsmodels.tools.sm_exceptions import SingularMatrixWarning

    with warnings.catch_warnings():
        # rank deficiency is allowed and reported in ``rank``; no need to warn
        warnings.simplefilter("ignore", SingularMatrixWarning)
        result = OLS(y, X).fit()
    if int(result.model.rank) >= X.shape[0]:  # no residual degrees of freedom
        return {"rank": int(result.model.rank)}
    return {
        "params": result.params,
        "bse": result.bse,
        "hc1": result.HC1_se,
        "scale": result.scale,
        "ssr": result.ssr,
        "rank": int(result.model.rank),
    }


def _ols_pinv(X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    r""":func:`_ols_statsmodels` by numpy alone, operation for operation (same bits).

    The pseudo-inverse :math:`X^+` from the thin SVD, singular values at or below
    ``1e-15`` times the largest set to zero; the rank as ``matrix_rank`` of the diagonal
    of singular values; :math:`\hat\theta = X^+ y`, residuals :math:`u = y - X\hat\theta`;
    with ``nobs`` and ``df_resid = nobs - rank`` as floats: ``ssr = <u, u>``, the scale
    ``ssr / df_resid``, standard errors from the diagonal of :math:`X^+ X^{+\top}` times
    the scale, HC1 from :math:`X^+ \operatorname{diag}(\text{nobs}/\text{df} \cdot u^2)
    X^{+\top}`.
    """
    u, s, vt = np.linalg.svd(X, False)
    rank = int(np.linalg.matrix_rank(np.diag(s)))
    if rank >= X.shape[0]:  # no residual degrees of freedom
        return {"rank": rank}
    cutoff = 1e-15 * np.maximum.reduce(s)
    inv = np.zeros_like(s)
    kept = s > cutoff
    inv[kept] = 1.0 / s[kept]
    pinv = np.dot(np.transpose(vt), np.multiply(inv[:, np.newaxis], np.transpose(u)))
    params = np.dot(pinv, y)
    resid = y - np.dot(X, params)
    nobs = float(X.shape[0])
    df_resid = nobs - rank
    ssr = np.dot(resid, resid)
    scale = ssr / df_resid
    cov = np.dot(pinv, np.transpose(pinv)) * scale
    het_scale = nobs / df_resid * (resid**2)
    cov_hc1 = np.dot(pinv, het_scale[:, None] * pinv.T)
    return {
        "params": params,
        "bse": np.sqrt(np.diag(cov)),
        "hc1": np.sqrt(np.diag(cov_hc1)),
        "scale": scale,
        "ssr": ssr,
        "rank": rank,
    }


@dataclass(frozen=True)
class TwoSLSReference:
    r"""Non-private 2SLS fit of ``y`` on ``[X, W]`` with instruments ``[Z, W]``.

    Attributes
    ----------
    params : ndarray, shape (p + r,)
        Coefficients on the endogenous regressors ``X`` (first ``p``) then on the
        controls ``W`` (last ``r``).
    std_errors : ndarray, shape (p + r,)
        Homoskedastic standard errors as statsmodels' ``IV2SLS`` reports them:
        :math:`\hat\sigma^2 = \mathrm{SSR}/(n - p - r)` with residuals
        :math:`y - [X, W]\hat\beta` (Stata's ``small`` convention).
    std_errors_robust : ndarray, shape (p + r,)
        HC1 heteroskedasticity-robust standard errors,
        :math:`\frac{n}{n-p-r}(\hat D^\top\hat D)^{-1}\hat D^\top
        \mathrm{diag}(\hat u^2)\hat D(\hat D^\top\hat D)^{-1}` with
        :math:`\hat D = P_{[Z,W]}[X, W]`.
    first_stage : ndarray, shape (q + r, p)
        First-stage coefficients: column ``j`` regresses ``X[:, j]`` on ``[Z, W]``
        (the ``q`` instrument coefficients first).
    residual_variance : float
        :math:`\hat\sigma^2 = \mathrm{SSR}/(n - p - r)`.
    n : int
        Number of rows.
    n_endogenous : int
        ``p``, the number of columns of ``X``.
    n_instruments : int
        ``q``, the number of excluded instruments (columns of ``Z``).
    n_controls : int
        ``r``, the number of exogenous controls (columns of ``W``; 0 if none).
    """

    params: np.ndarray
    std_errors: np.ndarray
    std_errors_robust: np.ndarray
    first_stage: np.ndarray
    residual_variance: float
    n: int
    n_endogenous: int
    n_instruments: int
    n_controls: int

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-able dict (arrays as lists, non-finite numbers as ``None``)."""
        return {key: _jsonable(value) for key, value in asdict(self).items()}


def _as_columns(arr: Any, name: str, n: int | None) -> np.ndarray:
    """Validate a matrix of columns; a 1-D array is one column."""
    a = np.asarray(arr, dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    a = check_matrix(a, name)
    if n is not None and a.shape[0] != n:
        raise ValueError(f"{name} has {a.shape[0]} rows but y has {n}; they must match")
    return a


def _check_iv(
    y: Any, X: Any, Z: Any, W: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate an IV design; return ``y, regressors [X, W], instruments [Z, W], X``."""
    y_arr = np.asarray(y, dtype=np.float64)
    if y_arr.ndim == 2 and y_arr.shape[1] == 1:
        y_arr = y_arr[:, 0]
    if y_arr.ndim != 1:
        raise ValueError(f"y must be a 1-D array of length n; got shape {y_arr.shape}")
    n = y_arr.shape[0]
    y_arr = check_vector(y_arr, n, "y")
    X_arr = _as_columns(X, "X", n)
    Z_arr = _as_columns(Z, "Z", n)
    W_arr = np.empty((n, 0)) if W is None else _as_columns(W, "W", n)
    p, q, r = X_arr.shape[1], Z_arr.shape[1], W_arr.shape[1]
    if q < p:
        raise ValueError(
            f"under-identified: Z has q={q} excluded instruments but X has p={p} endogenous"
            " regressors; 2SLS needs q >= p"
        )
    regressors = np.hstack([X_arr, W_arr])
    instruments = np.hstack([Z_arr, W_arr])
    k, m = p + r, q + r
    if n <= k:
        raise ValueError(f"need more rows than regressors: n={n}, p + r={k}")
    rank_inst = np.linalg.matrix_rank(instruments)
    if rank_inst < m:
        raise ValueError(
            f"instruments [Z, W] are rank deficient (rank {rank_inst} < q + r={m});"
            " drop collinear instruments or controls"
        )
    # Rank condition: the projection of [X, W] on the instrument space has full rank.
    Q, _ = np.linalg.qr(instruments)
    rank_proj = np.linalg.matrix_rank(Q.T @ regressors)
    if rank_proj < k:
        raise ValueError(
            f"2SLS rank condition fails: the projection of [X, W] on [Z, W] has rank"
            f" {rank_proj} < p + r={k} (weak/irrelevant instruments or collinear regressors)"
        )
    return y_arr, regressors, instruments, X_arr


def two_sls(*, y: Any, X: Any, Z: Any, W: Any | None = None) -> np.ndarray:
    r"""2SLS coefficients :math:`(D^\top P D)^{-1} D^\top P y`, for one data set or a batch.

    Keyword-only, so that the outcome, the regressors and the instruments cannot be
    swapped silently (with :math:`p = q` a swap of ``X`` and ``Z`` would pass every
    shape check).

    Parameters
    ----------
    y : array_like, shape (n,) or (trials, n)
        Outcome.
    X : array_like, shape (n, p), (n,) or (trials, n, p)
        Endogenous regressors.
    Z : array_like, shape (n, q), (n,) or (trials, n, q)
        Excluded instruments, ``q >= p``.
    W : array_like, shape (n, r) or (trials, n, r), optional
        Exogenous controls, included in both stages (e.g. a column of ones).

    Returns
    -------
    ndarray, shape (p + r,) or (trials, p + r)
        Coefficients on ``[X, W]``.

    Notes
    -----
    With :math:`D = [X, W]`, :math:`M = [Z, W] = QR` (thin QR) and :math:`P = QQ^\top`
    the projection on the instrument space, :math:`D^\top P D = (Q^\top D)^\top
    (Q^\top D)` and :math:`D^\top P y = (Q^\top D)^\top Q^\top y`; the batch is one
    batched QR and one batched solve, no explicit inverse of :math:`M^\top M`. This is
    the 2SLS estimator of Liang et al. (2025), eq. (2), and Wooldridge (2010), §5.2. A
    single data set is validated in full (finite values, identification, rank
    condition); a batch is checked for shapes only (the simulation studies draw it).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(5000, 1))
    >>> X = Z + rng.normal(size=(5000, 1))
    >>> y = 2.0 * X[:, 0] + rng.normal(size=5000)
    >>> two_sls(y=y, X=X, Z=Z).round(1)
    array([2.])
    """
    y_arr = np.asarray(y, dtype=np.float64)
    if y_arr.ndim == 2 and np.ndim(X) == 3:  # a batch of data sets
        X_arr = np.asarray(X, dtype=np.float64)
        Z_arr = np.asarray(Z, dtype=np.float64)
        if Z_arr.ndim != 3 or X_arr.shape[:2] != y_arr.shape or Z_arr.shape[:2] != y_arr.shape:
            raise ValueError(
                "a batch needs y (trials, n), X (trials, n, p) and Z (trials, n, q); got"
                f" y {y_arr.shape}, X {X_arr.shape}, Z {Z_arr.shape}"
            )
        if W is not None:
            W_arr = np.asarray(W, dtype=np.float64)
            X_arr = np.concatenate([X_arr, W_arr], axis=-1)
            Z_arr = np.concatenate([Z_arr, W_arr], axis=-1)
        if Z_arr.shape[-1] < X_arr.shape[-1]:
            raise ValueError(
                f"under-identified: {Z_arr.shape[-1]} instruments for {X_arr.shape[-1]}"
                " regressors; 2SLS needs q >= p"
            )
        Q, _ = np.linalg.qr(Z_arr)
        QtX = np.swapaxes(Q, -1, -2) @ X_arr
        Qty = (np.swapaxes(Q, -1, -2) @ y_arr[..., None])[..., 0]
        A = np.swapaxes(QtX, -1, -2)
        return np.linalg.solve(A @ QtX, (A @ Qty[..., None]))[..., 0]
    y_arr, D, M, _ = _check_iv(y, X, Z, W)
    Q, _ = np.linalg.qr(M)
    return np.linalg.lstsq(Q.T @ D, Q.T @ y_arr, rcond=None)[0]


def two_sls_reference(
    *, y: Any, X: Any, Z: Any, W: Any | None = None, backend: str = "numpy"
) -> TwoSLSReference:
    r"""Non-private 2SLS as statsmodels' ``IV2SLS`` computes it (reference for the IV studies).

    Parameters
    ----------
    y : array_like, shape (n,)
        Outcome.
    X : array_like, shape (n, p) or (n,)
        Endogenous regressors.
    Z : array_like, shape (n, q) or (n,)
        Excluded instruments; ``q >= p`` (just- or over-identified).
    W : array_like, shape (n, r), optional
        Exogenous controls included in both stages (add a column of ones here for an
        intercept; none is added).
    backend : {"numpy", "statsmodels"}, default "numpy"
        ``"statsmodels"`` fits with statsmodels' ``IV2SLS`` (the reference path);
        ``"numpy"`` does its arithmetic (the same products, solves and inverse in the
        same order) without importing statsmodels, about 0.7 s of CPU per data job of a
        dataset with instruments (docs/scaling.md). The two give the same bits
        (``tests/unit/test_ols_references.py``).

    Returns
    -------
    TwoSLSReference

    Raises
    ------
    ValueError
        On NaN/inf, shape mismatch, under-identification (``q < p``), rank-deficient
        instruments, failure of the rank condition, ``n <= p + r`` or an unknown
        ``backend``.

    Notes
    -----
    statsmodels instruments every regressor, so the call is
    ``IV2SLS(y, [X, W], [Z, W])``. Its homoskedastic covariance uses
    :math:`\hat\sigma^2 = \mathrm{SSR}/(n-p-r)`; the unadjusted covariance of
    linearmodels (``debiased=False``) divides by :math:`n` instead, a factor
    :math:`n/(n-p-r)` in variance.
    """
    if backend not in ("numpy", "statsmodels"):
        raise ValueError(f"backend must be 'numpy' or 'statsmodels'; got {backend!r}")
    from scipy.linalg import solve_triangular  # lazy: job start-up (docs/scaling.md)

    y_arr, D, M, X_arr = _check_iv(y, X, Z, W)
    n, p = X_arr.shape
    k = D.shape[1]
    fit = _iv2sls_statsmodels(y_arr, D, M) if backend == "statsmodels" else _iv2sls(y_arr, D, M)
    params = np.asarray(fit["params"], dtype=np.float64)
    first_stage = np.asarray(fit["first_stage"], dtype=np.float64)[:, :p]

    # HC1 sandwich on the projected regressors (statsmodels' HC* for IV2SLS would use
    # the pseudo-inverse of the unprojected regressors, which is wrong for IV).
    Q, _ = np.linalg.qr(M)
    Q_hat, R = np.linalg.qr(Q @ (Q.T @ D))  # D_hat = P_M D = Q_hat R
    resid = y_arr - D @ params
    # (D_hat'D_hat)^{-1} D_hat' diag(u) = R^{-1} Q_hat' diag(u): one triangular solve.
    B = solve_triangular(R, (Q_hat * resid[:, None]).T, lower=False)
    cov_hc0 = B @ B.T
    cov_hc1 = cov_hc0 * n / (n - k)
    return TwoSLSReference(
        params=params,
        std_errors=np.asarray(fit["bse"], dtype=np.float64),
        std_errors_robust=np.sqrt(np.diag(cov_hc1)),
        first_stage=first_stage,
        residual_variance=float(fit["scale"]),
        n=n,
        n_endogenous=p,
        n_instruments=M.shape[1] - (k - p),
        n_controls=k - p,
    )


def _iv2sls_statsmodels(y: np.ndarray, D: np.ndarray, M: np.ndarray) -> dict[str, Any]:
    """Fit by statsmodels' ``IV2SLS(y, D, instrument=M).fit()``: the reference path."""
    from statsmodels.sandbox.regression.gmm import IV2SLS  # lazy: see ols_reference

    result = IV2SLS(y, D, instrument=M).fit()
    return {
        "params": result.params,
        "first_stage": result.model.xhatparams,
        "bse": result.bse,
        "scale": result.scale,
    }


def _iv2sls(y: np.ndarray, D: np.ndarray, M: np.ndarray) -> dict[str, Any]:
    r""":func:`_iv2sls_statsmodels` by numpy alone, operation for operation (same bits).

    statsmodels' ``IV2SLS.fit`` (Greene, 5th ed., Section 5.4): the first stage
    :math:`\hat\Pi = (M^\top M)^{-1} M^\top D` by ``solve``, :math:`F = M\hat\Pi`,
    :math:`\hat\beta = (F^\top F)^{-1} F^\top y` by ``solve``, the normalised covariance
    :math:`(F^\top D)^{-\top} F^\top F (F^\top D)^{-1}` with ``inv``; its results' scale
    :math:`\langle u, u\rangle / (n - k)` with :math:`u = y - D\hat\beta` (the integer
    ``df_resid``), and the standard errors the square roots of the scaled covariance's
    diagonal (a negative diagonal entry gives NaN without a warning, as there).
    """
    ztz = np.dot(M.T, M)
    ztx = np.dot(M.T, D)
    first_stage = np.linalg.solve(ztz, ztx)
    F = np.dot(M, first_stage)
    FtF = np.dot(F.T, F)
    Ftx = np.dot(F.T, D)
    Fty = np.dot(F.T, y)
    params = np.linalg.solve(FtF, Fty)
    Ftxinv = np.linalg.inv(Ftx)
    normalized_cov = np.dot(Ftxinv.T, np.dot(FtF, Ftxinv))
    resid = y - np.dot(D, params)
    scale = np.dot(resid, resid) / (D.shape[0] - D.shape[1])
    with np.errstate(invalid="ignore"):
        bse = np.sqrt(np.diag(normalized_cov * scale))
    return {"params": params, "first_stage": first_stage, "bse": bse, "scale": scale}


OLS_SOLVERS: tuple[str, ...] = ("gram", "lstsq")
"""Solvers of :func:`fit_ols`: ``"gram"`` (Cholesky when well conditioned), ``"lstsq"``."""

# The Gram solve is used when cond(X'X) <= this (cond(X) <= 1e3): its error relative to
# the SVD solution is then at most about cond(X'X) * eps ~ 1e-10, typically 1e-15.
_GRAM_MAX_CONDITION = 1e6


def _ols_solve(X: np.ndarray, y: np.ndarray, solver: str) -> tuple[np.ndarray, int]:
    r"""Minimum-norm least squares :math:`X^+ y` and the rank, by ``solver``.

    ``"lstsq"`` (the reference): ``numpy.linalg.lstsq`` (SVD, LAPACK ``gelsd``).
    ``"gram"``: the eigenvalues of :math:`G = X^\top X` decide; if
    :math:`\lambda_{\min}(G) > 0` and :math:`\lambda_{\max}/\lambda_{\min} \le 10^6`
    (so :math:`X` has full column rank and :math:`\kappa(X) \le 10^3`, far above
    ``lstsq``'s rank cut-off), the Cholesky solve of :math:`G\theta = X^\top y`
    (:math:`n d^2` flops against the SVD's several times that); otherwise ``lstsq``.
    """
    if solver == "gram" and X.shape[0] >= X.shape[1]:
        return _gram_solve(X, y, X.T @ X)
    theta, _, rank, _ = np.linalg.lstsq(X, y, rcond=None)
    return theta, int(rank)


def _gram_solve(X: np.ndarray, y: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, int]:
    """``solver="gram"`` of :func:`_ols_solve` given ``G = X.T @ X`` (finite data).

    LAPACK's ``potrf`` and ``potrs`` called directly: the routines, arguments and so the
    bits of ``scipy.linalg.cho_factor`` / ``cho_solve``, without their finiteness scans
    (the caller has proved the data finite) and wrapper overhead (about 20 us).
    """
    from scipy.linalg.lapack import dpotrf, dpotrs  # lazy: job start-up (docs/scaling.md)

    lam = np.linalg.eigvalsh(G)
    if lam[0] > 0 and lam[-1] <= _GRAM_MAX_CONDITION * lam[0]:
        factor, info = dpotrf(G, lower=0, clean=0)  # cho_factor(G)'s call
        if info != 0:  # pragma: no cover - positive definite with cond <= 1e6
            from scipy.linalg import cho_factor

            cho_factor(G)  # raises the reference's LinAlgError
        theta, info = dpotrs(factor, X.T @ y, lower=0)  # cho_solve's call
        if info != 0:  # pragma: no cover - arguments are valid by construction
            raise ValueError(f"illegal value in {-info}th argument of internal potrs")
        return theta, X.shape[1]
    theta, _, rank, _ = np.linalg.lstsq(X, y, rcond=None)
    return theta, int(rank)


def _gram_solve_unchecked(X: Any, y: Any) -> tuple[np.ndarray, int] | None:
    r"""``solver="gram"`` on unvalidated input, validated by its own Gram matrix, or None.

    For float64 ndarrays ``X`` (n, d), ``y`` (n,) with ``n >= d >= 1``,
    :math:`G = X^\top X` is computed first; its diagonal :math:`\sum_i x_{ij}^2` is a
    sum of non-negative terms, NaN or infinite as soon as one entry of column ``j`` is,
    so a finite trace proves ``X`` finite (and a finite sum of ``y`` proves ``y``
    finite) without the separate pass of :func:`dpreg._validation.check_regression`
    (0.1 ms at n = 20,000, d = 20). The same ``G`` and the same solve as after that
    check: bit for bit the reference's result (``tests/unit/test_ols_references.py``).
    ``None`` (anything else, or a non-finite or overflowing sum): the caller runs the
    reference, which raises its own errors.
    """
    if type(X) is not np.ndarray or type(y) is not np.ndarray:
        return None
    if X.dtype != np.float64 or y.dtype != np.float64 or X.ndim != 2 or y.ndim != 1:
        return None
    n, d = X.shape
    if d == 0 or n < d or y.shape[0] != n:
        return None
    with np.errstate(over="ignore", invalid="ignore"):  # the reference warns, if need be
        G = X.T @ X
        finite = math.isfinite(float(np.add.reduce(G.diagonal()))) and math.isfinite(
            float(np.add.reduce(y))
        )
    return _gram_solve(X, y, G) if finite else None


def fit_ols(
    X: Any,
    y: Any,
    *,
    rng: np.random.Generator | None = None,
    trials: int = 1,
    budget: Any = None,
    bound_X: float | None = None,
    bound_y: float | None = None,
    solver: str = "gram",
) -> Fit:
    r"""Non-private OLS under the estimator contract (the noiseless baseline).

    Parameters
    ----------
    X : array_like, shape (n, d)
        Regressors (no intercept added); rank deficiency gives the minimum-norm solution.
    y : array_like, shape (n,)
        Outcome.
    rng : numpy.random.Generator, optional
        Unused (deterministic); accepted for the uniform estimator signature.
    trials : int, default 1
        Number of rows of ``theta``; every row is the same OLS solution.
    budget : Budget, optional
        Unused; OLS spends no privacy and ``budget_spent`` is ``None``.
    bound_X, bound_y : float, optional
        Unused; accepted so that a study can call every estimator with the same
        keywords.
    solver : {"gram", "lstsq"}, default "gram"
        ``"lstsq"``: ``numpy.linalg.lstsq`` (the reference). ``"gram"``: a Cholesky
        solve of the normal equations when :math:`X^\top X` is well conditioned
        (condition number at most :math:`10^6`, decided from its eigenvalues), else
        ``lstsq``; the same solution to rounding.

    Returns
    -------
    Fit
        ``theta`` of shape (trials, d), ``budget_spent=None``, ``estimator="ols"``,
        diagnostics ``rank``.

    Notes
    -----
    :math:`\hat\theta = X^+ y` via ``numpy.linalg.lstsq`` (Lev et al. 2026, §1 and
    §5: the experiments' non-private baseline is the minimum-norm solution).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> y = X @ np.array([1.0, -2.0]) + 0.1 * rng.normal(size=200)
    >>> fit = fit_ols(X, y)
    >>> fit.theta.round(1), fit.budget_spent
    (array([[ 1., -2.]]), None)
    """
    # "gram" on float64 arrays: validated by the Gram matrix itself (no separate
    # finiteness pass); otherwise, or on any doubt, the checks then the solve (reference).
    # Errors are raised in the reference's order: data, trials, solver.
    solved = _gram_solve_unchecked(X, y) if solver == "gram" else None
    if solved is None:
        X, y = check_regression(X, y, require_full_rank=False)
    trials = check_trials(trials)
    if solver not in OLS_SOLVERS:
        raise ValueError(f"solver must be one of {OLS_SOLVERS}; got {solver!r}")
    theta, rank = _ols_solve(X, y, solver) if solved is None else solved
    return Fit(
        theta=np.repeat(theta[None, :], trials, axis=0),
        budget_spent=None,
        estimator="ols",
        diagnostics={"rank": int(rank)},
    )
