r"""Table 3 of Choquette-Choo et al. (2023): the DP-FTRL variants compared at one horizon.

For each variant of Table 3 the squared sensitivity (one or several participations),
the prefix-sum error :math:`\|AB\|_F^2` and their product (the error of Eq. 3 at a fixed
privacy level). The mechanisms themselves are in :mod:`dpreg.estimators.ftrl_factorizations`
and :mod:`dpreg.estimators.ftrl_correlations`; this module only evaluates them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpreg.estimators._ftrl_checks import signed_pair_product
from dpreg.estimators.ftrl_banded import solve_banded_me
from dpreg.estimators.ftrl_correlations import (
    ToeplitzCorrelation,
    independent,
    nu_ftrl,
    optimal_cc,
)
from dpreg.estimators.ftrl_factorizations import (
    FFTFactorization,
    MatrixFactorization,
    _check_horizon,
    fft_factorization,
    optimal_factorization,
    optimal_multi_participation_factorization,
    tree_aggregation,
)
from dpreg.estimators.ftrl_me import DEFAULT_GAP_TOL, check_gap_tol, solve_me
from dpreg.estimators.ftrl_workloads import PAPER_COOLDOWN, momentum_cooldown_workload
from dpreg.privacy.correlated import PARTICIPATION_SCHEMAS, multi_participation_sensitivity_sq

__all__ = [
    "BANDED_VARIANT",
    "ME_SOLVERS",
    "PAPER_ME_COST",
    "TABLE3",
    "WORKLOADS",
    "check_me_solver",
    "table3",
    "toeplitz_prefix_error",
    "toeplitz_workload_error",
    "toeplitz_workload_error_reference",
    "toeplitz_workload_error_from_sums",
    "tuned_nu",
    "workload_diagonal_sums",
    "workload_spectrum",
]

WORKLOADS: tuple[str, ...] = ("prefix", "momentum_cooldown")
"""Workload of the error: ``prefix`` (Eq. 3, Table 3) or ``momentum_cooldown``
(:func:`~dpreg.estimators.ftrl_workloads.momentum_cooldown_workload`, the training
workload of the paper's CIFAR-10 runs, App. G.1)."""

ME_PREFIX_VARIANT = "ME (prefix-sum workload)"
"""Extra row under a non-prefix workload: the prefix-sum ME evaluated on that workload."""

ME_SOLVERS: tuple[str, ...] = ("auto", "sdp", "fixed_point", "banded")
"""How ME is computed: ``sdp`` (cvxpy, small T), ``fixed_point``
(:func:`~dpreg.estimators.ftrl_me.solve_me`, large T), ``auto`` (SDP up to
:data:`SDP_MAX_T`, the fixed point above) or ``banded``
(:func:`~dpreg.estimators.ftrl_banded.solve_banded_me`, ``min_sep`` at any T: an upper
bound on the ME optimum, row :data:`BANDED_VARIANT`)."""

BANDED_VARIANT = "banded ME (upper bound on the min-sep optimum)"
"""Label of the ME row when ``me_solver="banded"``: not the exact ME."""

SDP_MAX_T = {1: 128, 2: 64}
"""Largest T of the ME SDPs (one participation; several)."""

FIXED_POINT_MAX_T = 4096
"""Largest T of the fixed-point ME solver (one T x T eigendecomposition per iteration)."""

ME_BLOCK_START = "uniform"
"""Start of the fixed-epoch ME dual in Table 3 (``block_start`` of
:func:`~dpreg.estimators.ftrl_me.solve_me`): fewer evaluations than the default
``scaled`` on both Table 3 problems measured (issue 18); certified alike."""

PAPER_ME_COST = "B for T = 10^4 takes around 24 hours (paper Sec. 4, citing 2023b)"
"""The only number the paper prints about ME's cost (Table 3 prints O(T^3))."""


TABLE3: tuple[dict[str, object], ...] = (
    {
        "variant": "DP-SGD",
        "citation": "Abadi et al. (2016)",
        "matrix": "Identity",
        "anytime": True,
        "generation_cost": "O(1)",
        "training_cost": "O(1)",
        "builder": "sgd",
    },
    {
        "variant": "Honaker/TreeAgg",
        "citation": "Kairouz et al. (2021a)",
        "matrix": "Lower-Triangular",
        "anytime": True,
        "generation_cost": "O(1)",
        "training_cost": "O(log T)",
        "builder": "tree",
    },
    {
        "variant": "Optimal CC",
        "citation": "Fichtenberger et al. (2023)",
        "matrix": "Toeplitz & LT",
        "anytime": True,
        "generation_cost": "O(1)",
        "training_cost": "O(T)",
        "builder": "optimal_cc",
    },
    {
        "variant": "nu-DP-FTRL",
        "citation": "Ours",
        "matrix": "Toeplitz & LT",
        "anytime": True,
        "generation_cost": "O(1)",
        "training_cost": "O(T)",
        "builder": "nu_ftrl",
    },
    {
        "variant": "FFT",
        "citation": "Choquette-Choo et al. (2023b)",
        "matrix": "Toeplitz",
        "anytime": False,
        "generation_cost": "O(1)",
        "training_cost": "O(T log^2 T) (ambiguous)",
        "builder": "fft",
    },
    {
        "variant": "Full Honaker",
        "citation": "Honaker (2015)",
        "matrix": "Arbitrary",
        "anytime": False,
        "generation_cost": "O(T^2)",
        "training_cost": "O(T^2)",
        "builder": "full_honaker",
    },
    {
        "variant": "Multi-Epoch (ME)",
        "citation": "Choquette-Choo et al. (2023b)",
        "matrix": "Arbitrary",
        "anytime": False,
        "generation_cost": "O(T^3)",
        "training_cost": "O(T^2)",
        "builder": "optimal",
    },
)
"""Table 3 as printed (the "O(T log 2 T)" of FFT is ambiguous,
docs/notes/choquettechoo2023.md §7 item 12). FFT is our reading
(:class:`FFTFactorization`); ME is :func:`optimal_factorization` (one participation) or
:func:`optimal_multi_participation_factorization`."""


def _sensitivity_sq(
    f: MatrixFactorization | FFTFactorization | ToeplitzCorrelation,
    T: int,
    k: int,
    b: int | None,
    schema: str,
) -> float:
    """Single- or multi-participation squared sensitivity of any mechanism at horizon T."""
    if isinstance(f, ToeplitzCorrelation):
        if k == 1:
            return f.sensitivity_sq(T)
        return multi_participation_sensitivity_sq(f.encoder(T), k, int(b), schema=schema)
    if k == 1:
        return f.sensitivity_sq
    return f.multi_participation_sensitivity_sq(k, int(b), schema=schema)


def toeplitz_prefix_error(correlation: ToeplitzCorrelation, T: int) -> float:
    r"""Return :math:`\|AB\|_F^2` of a Toeplitz mechanism without the T x T matrices.

    :math:`(AB)_{t\tau} = \sum_{s=0}^{t-\tau}\beta_s` depends on :math:`t - \tau`
    only, so :math:`\|AB\|_F^2 = \sum_{l<T}(T - l)(\sum_{s\le l}\beta_s)^2`
    (Eq. 3; O(T)).

    Examples
    --------
    >>> round(toeplitz_prefix_error(independent(), 4), 6)  # ||A||_F^2 = 1 + 2 + 3 + 4
    10.0
    """
    T = _check_horizon(T)
    partial = np.cumsum(correlation.coefficients(T))
    return float(np.sum((T - np.arange(T)) * partial**2))


def workload_spectrum(A: np.ndarray) -> np.ndarray:
    r"""Real FFT of the reversed rows of ``A`` (T, T), as :func:`toeplitz_workload_error` needs.

    Several Toeplitz decoders evaluated against one workload share the FFT of ``A``, so
    it is computed once here (the same call ``scipy.signal.fftconvolve`` makes, hence the
    same numbers bit for bit). :func:`tuned_nu` and :func:`table3` now use
    :func:`workload_diagonal_sums` instead (one quadratic form per decoder); this FFT path
    is the reference it is tested against.
    """
    from scipy import fft as sp_fft

    A = np.asarray(A, dtype=np.float64)
    n_fft = sp_fft.next_fast_len(2 * A.shape[1] - 1, True)
    return sp_fft.rfftn(A[:, ::-1], [n_fft], axes=[1])


def toeplitz_workload_error(
    correlation: ToeplitzCorrelation, A: np.ndarray, *, spectrum: np.ndarray | None = None
) -> float:
    r"""Return :math:`\|AB\|_F^2` for a Toeplitz decoder :math:`B` and any workload ``A``.

    :math:`(AB)_{t\tau} = \sum_s A_{ts}\beta_{s-\tau}`, a correlation of each row of
    ``A`` with :math:`\beta`, computed for all rows by FFT (O(T^2 log T)): the steps of
    ``scipy.signal.fftconvolve`` (the reference, :func:`toeplitz_workload_error_reference`,
    equal bit for bit), with the FFT of ``A`` given as ``spectrum``
    (:func:`workload_spectrum`) when several decoders share one workload.

    Examples
    --------
    >>> from dpreg.estimators.ftrl_factorizations import prefix_matrix
    >>> T = 6
    >>> bool(np.isclose(toeplitz_workload_error(nu_ftrl(0.1), prefix_matrix(T)),
    ...                 toeplitz_prefix_error(nu_ftrl(0.1), T)))
    True
    """
    from scipy import fft as sp_fft

    A = np.asarray(A, dtype=np.float64)
    T = A.shape[1]
    if spectrum is None:
        spectrum = workload_spectrum(A)
    n_fft = sp_fft.next_fast_len(2 * T - 1, True)
    if spectrum.shape != (A.shape[0], n_fft // 2 + 1):
        raise ValueError("spectrum must be workload_spectrum(A)")
    beta = correlation.coefficients(T)
    beta_hat = sp_fft.rfftn(beta[None, :], [n_fft], axes=[1])
    full = sp_fft.irfftn(spectrum * beta_hat, [n_fft], axes=[1])  # index T-1-tau
    return float(np.sum(full[:, :T] ** 2))


def workload_diagonal_sums(A: np.ndarray) -> np.ndarray:
    r"""Tail sums :math:`K_{ab} = \sum_{\tau\ge0} W_{a+\tau,\,b+\tau}` of :math:`W = A^\top A`.

    For a lower-triangular Toeplitz decoder :math:`B_{s\tau} = \beta_{s-\tau}`
    (:math:`s \ge \tau`),

    .. math::

        \|AB\|_F^2 = \mathrm{tr}(B^\top WB) = \sum_\tau\sum_{a,b\ge0}\beta_a\beta_b
        W_{a+\tau,\,b+\tau} = \beta^\top K\beta

    (indices below ``T``), so the error (3) of every Toeplitz mechanism under one workload
    is a quadratic form in its coefficients (:func:`toeplitz_workload_error_from_sums`):
    :math:`O(T^2)` per mechanism instead of :func:`toeplitz_workload_error`'s FFTs of all
    ``T`` rows (:math:`O(T^2\log T)`, about 40x the time at T = 2000). ``K`` is computed
    once per workload from the bottom-right corner up, :math:`K_{ab} = W_{ab} +
    K_{a+1,b+1}` (one row operation per row; issue 18, docs/scaling.md).

    Examples
    --------
    >>> A = np.linalg.cholesky(np.array([[2.0, 1.0], [1.0, 2.0]])).T
    >>> workload_diagonal_sums(A).round(12).tolist()  # W = [[2, 1], [1, 2]]
    [[4.0, 1.0], [1.0, 2.0]]
    """
    A = np.asarray(A, dtype=np.float64)
    K = A.T @ A
    for a in range(K.shape[0] - 2, -1, -1):
        K[a, :-1] += K[a + 1, 1:]
    return K


def toeplitz_workload_error_from_sums(correlation: ToeplitzCorrelation, sums: np.ndarray) -> float:
    r"""Return :math:`\|AB\|_F^2 = \beta^\top K\beta`, ``sums`` = :func:`workload_diagonal_sums`.

    The same error as :func:`toeplitz_workload_error` (its FFTs are the reference), to
    round-off (a quadratic form instead of FFTs: the sums are added in another order;
    ``tests/unit/test_ftrl_table3_speed.py``).

    Examples
    --------
    >>> from dpreg.estimators.ftrl_factorizations import prefix_matrix
    >>> A = prefix_matrix(6)
    >>> fast = toeplitz_workload_error_from_sums(nu_ftrl(0.1), workload_diagonal_sums(A))
    >>> bool(np.isclose(fast, toeplitz_workload_error(nu_ftrl(0.1), A), rtol=1e-12))
    True
    """
    sums = np.asarray(sums, dtype=np.float64)
    if sums.ndim != 2 or sums.shape[0] != sums.shape[1]:
        raise ValueError(f"sums must be a square (T, T) matrix; got shape {sums.shape}")
    beta = correlation.coefficients(sums.shape[0])
    return float(beta @ (sums @ beta))


def toeplitz_workload_error_reference(correlation: ToeplitzCorrelation, A: np.ndarray) -> float:
    """:func:`toeplitz_workload_error` by ``scipy.signal.fftconvolve`` (reference path).

    Examples
    --------
    >>> from dpreg.estimators.ftrl_factorizations import prefix_matrix
    >>> A = prefix_matrix(5)
    >>> toeplitz_workload_error_reference(nu_ftrl(0.2), A) == toeplitz_workload_error(
    ...     nu_ftrl(0.2), A)
    True
    """
    from scipy.signal import fftconvolve

    A = np.asarray(A, dtype=np.float64)
    T = A.shape[1]
    beta = correlation.coefficients(T)
    full = fftconvolve(A[:, ::-1], beta[None, :], axes=1)  # index T-1-tau
    return float(np.sum(full[:, :T] ** 2))


def _workload_error(
    f: MatrixFactorization | FFTFactorization | ToeplitzCorrelation,
    T: int,
    A: np.ndarray | None,
    sums: np.ndarray | None = None,
) -> float:
    """||AB||_F^2 of any mechanism (``A=None``: the prefix-sum workload).

    A Toeplitz mechanism under a workload ``A`` uses ``sums``
    (:func:`workload_diagonal_sums` of ``A``; computed here if not given).
    """
    if A is None:
        if isinstance(f, ToeplitzCorrelation):
            return toeplitz_prefix_error(f, T)
        return f.prefix_error
    if isinstance(f, ToeplitzCorrelation):
        if sums is None:
            sums = workload_diagonal_sums(A)
        return toeplitz_workload_error_from_sums(f, sums)
    # TreeAgg's decoder (two entries +-1 per column): the product's values without BLAS
    G = signed_pair_product(A, f.decoder)
    if G is None:
        G = A @ f.decoder
    return float(np.sum(G**2))


def workload_matrix(
    workload: str,
    T: int,
    *,
    momentum: float = PAPER_COOLDOWN["momentum"],
    cooldown_fraction: float = PAPER_COOLDOWN["cooldown_fraction"],
    final_lr_factor: float = PAPER_COOLDOWN["final_lr_factor"],
) -> np.ndarray | None:
    """Return the workload ``A`` of :data:`WORKLOADS` (``None`` for ``prefix``: O(T) paths)."""
    if workload not in WORKLOADS:
        raise ValueError(f"workload must be one of {WORKLOADS}; got {workload!r}")
    if workload == "prefix":
        return None
    return momentum_cooldown_workload(T, momentum, cooldown_fraction, final_lr_factor)


def check_me_solver(
    me_solver: str, T: int, participations: int, separation: int | None, schema: str
) -> str:
    """Resolve ``me_solver`` (``auto`` -> ``sdp`` or ``fixed_point``) and check T against it."""
    if me_solver not in ME_SOLVERS:
        raise ValueError(f"me_solver must be one of {ME_SOLVERS}; got {me_solver!r}")
    k = int(participations)
    sdp_max = SDP_MAX_T[min(k, 2)]
    if me_solver == "auto":
        me_solver = "sdp" if T <= sdp_max else "fixed_point"
    if me_solver == "sdp" and T > sdp_max:
        raise ValueError(
            f"T = {T} > {sdp_max}: the ME SDP is for small T (participations={k});"
            " use me_solver='fixed_point'"
        )
    if me_solver == "banded":
        if k == 1 or schema != "min_sep":
            raise ValueError(
                "me_solver='banded' is for min_sep participation (participations > 1,"
                " schema='min_sep')"
            )
        if T > FIXED_POINT_MAX_T:
            raise ValueError(f"T = {T} > {FIXED_POINT_MAX_T} for the banded ME solver")
    if me_solver == "fixed_point":
        if T > FIXED_POINT_MAX_T:
            raise ValueError(f"T = {T} > {FIXED_POINT_MAX_T} for the fixed-point ME solver")
        if k > 1 and schema != "fixed_epoch":
            raise ValueError(
                "the fixed-point ME solver needs schema='fixed_epoch' with participations > 1"
            )
        if k > 1 and (separation is None or T % int(separation) or T > k * int(separation)):
            raise ValueError(
                f"the fixed-point ME solver needs T (= {T}) a multiple of the separation"
                f" b (= {separation}) and T <= k b"
            )
    return me_solver


def tuned_nu(
    T: int,
    grid: np.ndarray | None = None,
    *,
    participations: int = 1,
    separation: int | None = None,
    schema: str = "min_sep",
    workload: np.ndarray | None = None,
    sums: np.ndarray | None = None,
) -> float:
    r"""Return the ν of ν-DP-FTRL minimising the prefix-sum error (3) at horizon ``T``.

    The paper tunes ν this way for StackOverflow (§4, App. G.2); grid search over
    ``grid`` (default 60 log-spaced values in :math:`[10^{-4}, 0.5]`), with the
    sensitivity of ``participations`` participations ``separation`` apart, and the
    error of ``workload`` (a (T, T) matrix; default the prefix sum). ``sums``:
    :func:`workload_diagonal_sums` of ``workload`` if the caller has it already
    (:func:`table3` shares it with its Toeplitz rows); computed here otherwise.
    """
    grid = np.geomspace(1e-4, 0.5, 60) if grid is None else np.asarray(grid, float)
    if workload is not None and sums is None:
        sums = workload_diagonal_sums(workload)  # shared by all nu
    errors = []
    for v in grid:
        corr = nu_ftrl(float(v))
        prefix = _workload_error(corr, T, workload, sums)
        errors.append(_sensitivity_sq(corr, T, participations, separation, schema) * prefix)
    return float(grid[int(np.argmin(errors))])


def table3(
    T: int,
    *,
    nu: float | str = "tuned",
    participations: int = 1,
    separation: int | None = None,
    schema: str = "min_sep",
    me_solver: str = "auto",
    me_tol: float = 1e-6,
    me_max_iter: int = 200,
    me_gap_tol: float = DEFAULT_GAP_TOL,
    workload: str = "prefix",
    momentum: float = PAPER_COOLDOWN["momentum"],
    cooldown_fraction: float = PAPER_COOLDOWN["cooldown_fraction"],
    final_lr_factor: float = PAPER_COOLDOWN["final_lr_factor"],
    me_bands: int | None = None,
    me_relaxation: float = 1.0,
) -> pd.DataFrame:
    r"""Table 3 with computed sensitivity and prefix-sum error at horizon ``T``.

    Columns of the printed table plus ``sensitivity_sq`` (:math:`\gamma^2` under the
    participation model), ``prefix_error`` (:math:`\|AB\|_F^2`), ``total_error`` (their
    product, Eq. 3 at a fixed privacy level) and ``relative_to_optimal``. ME is
    :func:`optimal_factorization` (one participation) or
    :func:`optimal_multi_participation_factorization`; FFT is
    :func:`fft_factorization`. ``nu="tuned"`` picks ν by :func:`tuned_nu` under the same
    participation model (recorded in column ``nu``).

    The ME row also carries ``me_solver``, ``me_lower_bound`` (a certified lower bound on
    the optimal total error, the fixed point's dual value; NaN for the SDP),
    ``me_relative_gap``, ``me_iterations`` (no wall-clock time: rows are deterministic;
    :attr:`~dpreg.estimators.ftrl_me.MESolution.seconds` has it), ``me_method`` (the
    algorithm of :func:`~dpreg.estimators.ftrl_me.solve_me`, ``lbfgs`` or
    ``fixed_point``, certified alike) and ``paper_quoted``
    (:data:`PAPER_ME_COST`, the paper's only printed number on ME).

    Parameters
    ----------
    T : int
        Horizon (SDP: at most 128 for one participation, 64 for several; fixed point:
        at most 4096).
    nu : float or "tuned"
    participations : int
        :math:`k \ge 1`; with :math:`k > 1` every row's sensitivity is the
        multi-participation one (brute force over patterns) and ME is re-optimised.
    separation : int, optional
        :math:`b`, required when ``participations > 1``.
    schema : {"min_sep", "fixed_epoch"}
    me_solver : {"auto", "sdp", "fixed_point"}
        ``fixed_point`` (:func:`~dpreg.estimators.ftrl_me.solve_me`) needs one
        participation or ``schema="fixed_epoch"`` with T a multiple of b, T <= k b.
        Its algorithm is ``solve_me``'s ``method="auto"``: L-BFGS on the dual for one
        participation (``me_relaxation`` 1), Denisov et al.'s fixed point otherwise.
    me_tol, me_max_iter
        Relative duality gap and iteration cap of the fixed point.
    me_gap_tol : float
        Certificate check of the fixed point (default
        :data:`~dpreg.estimators.ftrl_me.DEFAULT_GAP_TOL`): a solve whose certified
        relative gap exceeds it raises
        :class:`~dpreg.estimators.ftrl_me.MECertificateError` instead of being reported
        as ME. At least ``me_tol``.
    workload : {"prefix", "momentum_cooldown"}
        The error's workload :math:`A` (:data:`WORKLOADS`); every row's error is
        :math:`\gamma^2\|AB\|_F^2` (column ``prefix_error`` holds
        :math:`\|AB\|_F^2`), ν is tuned and ME optimised for it, and a non-prefix
        workload adds the row :data:`ME_PREFIX_VARIANT` (the prefix-sum ME evaluated on
        it; fixed point only).
    momentum, cooldown_fraction, final_lr_factor : float
        Of ``momentum_cooldown`` (defaults: the paper's App. G.1,
        :data:`~dpreg.estimators.ftrl_workloads.PAPER_COOLDOWN`).
    me_relaxation : float
        Over-relaxation of the fixed point (``relaxation`` of
        :func:`~dpreg.estimators.ftrl_me.solve_me`; 1 is Denisov et al.'s iteration; one
        participation only).
    me_bands : int, optional
        ``me_solver="banded"``: bands of :math:`C` (at most, and by default, ``b``); the
        ME row is then :data:`BANDED_VARIANT` (``me_max_iter`` L-BFGS iterations,
        ``me_tol`` its relative tolerance on the objective), an
        upper bound on the ``min_sep`` optimum. Rows whose ``min_sep`` sensitivity needs
        the brute force over patterns (TreeAgg, FFT, Full Honaker) are not built above
        ``T = 64`` (``built = False``, error NaN).
    """
    if (
        isinstance(participations, bool)
        or not isinstance(participations, int | np.integer)
        or participations < 1
    ):
        raise ValueError(f"participations must be an integer >= 1; got {participations!r}")
    k = int(participations)
    if schema not in PARTICIPATION_SCHEMAS:
        raise ValueError(f"schema must be one of {PARTICIPATION_SCHEMAS}; got {schema!r}")
    if k > 1 and separation is None:
        raise ValueError("participations > 1 needs the separation b")
    T = _check_horizon(T, FIXED_POINT_MAX_T)
    solver = check_me_solver(me_solver, T, k, separation, schema)
    gap_tol = check_gap_tol(me_gap_tol, "me_gap_tol")
    if gap_tol < me_tol:
        raise ValueError(f"me_gap_tol (= {gap_tol:g}) must be at least me_tol (= {me_tol:g})")
    A = workload_matrix(
        workload,
        T,
        momentum=momentum,
        cooldown_fraction=cooldown_fraction,
        final_lr_factor=final_lr_factor,
    )
    if me_bands is not None and solver != "banded":
        raise ValueError("me_bands is for me_solver='banded'")
    if A is not None and solver != "fixed_point":
        raise ValueError("workload other than 'prefix' needs me_solver='fixed_point'")
    # one O(T^3) computation shared by tuned_nu and the Toeplitz rows (issue 18)
    sums = None if A is None else workload_diagonal_sums(A)
    if nu == "tuned":
        nu = tuned_nu(
            T, participations=k, separation=separation, schema=schema, workload=A, sums=sums
        )
    nu = float(nu)
    me_info: dict[str, object] = {"me_solver": solver}
    sep = None if k == 1 else int(separation)

    banded_sens: list[float] = []

    def build_me() -> MatrixFactorization:
        if solver == "banded":
            sol = solve_banded_me(
                T, k, int(separation), bands=me_bands, max_iter=me_max_iter, tol=me_tol
            )
            banded_sens.append(sol.sensitivity_sq)  # exact (dynamic programme)
            me_info.update(
                me_bands=sol.bands,
                me_iterations=sol.iterations,
                me_banded_toeplitz_error=sol.warm_start_error,
            )
            return sol.factorization()
        if solver == "fixed_point":
            sol = solve_me(
                T,
                k,
                sep,
                workload=A,
                tol=me_tol,
                max_iter=me_max_iter,
                gap_tol=gap_tol,
                block_start=ME_BLOCK_START,
            )
            lower = sol.dual_bound * sol.sensitivity_sq
            me_info.update(
                me_lower_bound=lower,
                me_relative_gap=sol.relative_gap,
                me_iterations=sol.iterations,
                me_method=sol.method,
                me_certified=sol.relative_gap <= gap_tol,
                me_gap_tol=gap_tol,
            )
            return sol.factorization(gap_tol)
        f = (
            optimal_factorization(T)
            if k == 1
            else optimal_multi_participation_factorization(T, k, int(separation), schema=schema)
        )
        return f

    builders = {
        "sgd": lambda: independent(),
        "tree": lambda: tree_aggregation(T),
        "optimal_cc": lambda: optimal_cc(),
        "nu_ftrl": lambda: nu_ftrl(nu),
        "fft": lambda: fft_factorization(T),
        "full_honaker": lambda: tree_aggregation(T, full_honaker=True),
        "optimal": build_me,
        "optimal_prefix": lambda: solve_me(
            T, k, sep, tol=me_tol, max_iter=me_max_iter, gap_tol=gap_tol, relaxation=me_relaxation
        ).factorization(gap_tol),
    }
    entries = list(TABLE3)
    if A is not None:
        entries.append(
            {
                **TABLE3[-1],
                "variant": ME_PREFIX_VARIANT,
                "builder": "optimal_prefix",
            }
        )
    # min_sep sensitivity of a non-Toeplitz matrix: brute force over patterns, small T only
    skip_matrix = k > 1 and schema == "min_sep" and T > SDP_MAX_T[2]
    rows = []
    best = None
    for entry in entries:
        row = {key: v for key, v in entry.items() if key != "builder"}
        row.update(T=T, participations=k, separation=separation if k > 1 else math.nan)
        row["schema"] = schema if k > 1 else "single"
        row["workload"] = workload
        builder = str(entry["builder"])
        row["nu"] = nu if builder == "nu_ftrl" else math.nan
        if builder == "optimal" and solver == "banded":
            row.update(
                variant=BANDED_VARIANT,
                citation="banded class (not in the paper; docs deviation 20)",
                matrix="Banded (<= b bands) & LT",
                generation_cost="L-BFGS, O(T^3) per iteration",
            )
        if skip_matrix and builder in ("tree", "fft", "full_honaker"):
            row.update(
                sensitivity_sq=math.nan, prefix_error=math.nan, total_error=math.nan, built=False
            )
            rows.append(row)
            continue
        f = builders[builder]()
        prefix = _workload_error(f, T, A, sums)
        if builder == "optimal" and banded_sens:
            sens = banded_sens[0]  # the brute force over min_sep patterns is for small T
        else:
            sens = _sensitivity_sq(f, T, k, separation, schema)
        row.update(sensitivity_sq=sens, prefix_error=prefix, total_error=sens * prefix, built=True)
        if builder == "optimal":
            best = sens * prefix
            row.update(me_info)
            row["paper_quoted"] = PAPER_ME_COST if solver != "banded" else math.nan
        rows.append(row)
    out = pd.DataFrame(rows)
    out["relative_to_optimal"] = out["total_error"] / best
    return out
