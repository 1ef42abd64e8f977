r"""Noise calibration of DP-FTRL with correlated noise (Choquette-Choo et al. 2023, Thm 1.1).

DP-FTRL releases the iterates of :math:`\theta_{t+1} = \theta_t - \eta(g_t + (Bw)_t)`,
:math:`w_t \sim \mathcal N(0, \sigma_{dp}^2 G^2 I_d)`, :math:`g_t` clipped to norm
:math:`G`. Writing :math:`C = B^{-1}` (the encoder), the iterates are post-processing
of the single Gaussian mechanism :math:`C\,(g_0; \dots; g_{T-1}) + (w_0; \dots;
w_{T-1})` (App. A.1, Eq. 11). Under zero-out neighbours (one gradient of the stream
replaced by the zero vector; App. A.2) its L2 sensitivity is :math:`G\,\gamma_T(B)`
with :math:`\gamma_T(B) = \max_t \|C_{:,t}\|_2` (Theorem 1.1; Denisov et al. 2022 show
that adaptively chosen streams are no worse). Hence

* :math:`\rho`-zCDP with :math:`\sigma_{dp} = \gamma_T / \sqrt{2\rho}` (Bun & Steinke
  2016, Prop. 1.6) -- :func:`ftrl_noise_multiplier` with a :class:`ZCDP` budget;
* :math:`(\varepsilon, \delta)`-DP either through zCDP and the conversion of App. A.2
  (``method="zcdp"``, the paper's route; Canonne, Kamath & Steinke 2020, Cor. 13) or
  exactly with the analytic Gaussian mechanism (``method="analytic"``; Balle & Wang
  2018, Thm 8), valid because the whole release is one Gaussian mechanism.

``sensitivity`` below is :math:`\gamma` (in units of the clip norm :math:`G`), the
*noise multiplier* :math:`\sigma_{dp}` is the standard deviation of :math:`w_t` per
unit of :math:`G` (the paper's unit). Replace-one neighbours double the sensitivity
(``neighbours="replace_one"``).
"""

from __future__ import annotations

import math

import numpy as np

from dpreg._validation import check_choice, check_positive
from dpreg.privacy._integer_gram import encoder_gram
from dpreg.privacy.budgets import ZCDP, ApproxDP, Budget, check_budget
from dpreg.privacy.conversions import CONVERSIONS, DEFAULT_CONVERSION, eps_to_zcdp, zcdp_to_eps
from dpreg.privacy.gaussian import analytic_gaussian_sigma, gaussian_epsilon

__all__ = [
    "CALIBRATIONS",
    "NEIGHBOURS",
    "ftrl_epsilon",
    "ftrl_noise_multiplier",
    "ftrl_zcdp",
    "matrix_sensitivity",
    "PARTICIPATION_SCHEMAS",
    "multi_participation_sensitivity_sq",
    "participation_patterns",
    "pattern_sensitivity_sq",
    "toeplitz_matrix",
]

CALIBRATIONS: tuple[str, ...] = ("zcdp", "analytic")
"""``"zcdp"``: via rho-zCDP (paper, App. A.2); ``"analytic"``: exact Gaussian profile."""

NEIGHBOURS: tuple[str, ...] = ("zero_out", "replace_one")
"""Zero-out (the paper's relation, App. A.2) or replace-one (sensitivity doubles)."""


def _neighbour_factor(neighbours: str) -> float:
    check_choice(neighbours, "neighbours", NEIGHBOURS)
    return 1.0 if neighbours == "zero_out" else 2.0


def ftrl_noise_multiplier(
    budget: Budget,
    sensitivity: float,
    *,
    method: str = "zcdp",
    conversion: str = DEFAULT_CONVERSION,
    neighbours: str = "zero_out",
) -> float:
    r"""Noise multiplier :math:`\sigma_{dp}` of DP-FTRL for a budget (Theorem 1.1).

    Parameters
    ----------
    budget : ZCDP or ApproxDP
        Target guarantee for the released iterates (one participation per example).
    sensitivity : float
        :math:`\gamma = \gamma_T(B)` (or :math:`\gamma_\infty` for an anytime
        guarantee), the largest column norm of the encoder :math:`B^{-1}`, > 0.
    method : {"zcdp", "analytic"}
        For an :class:`ApproxDP` budget: ``"zcdp"`` converts to the largest
        :math:`\rho` whose zCDP guarantee gives :math:`(\varepsilon,\delta)` (with
        ``conversion``) and uses :math:`\gamma/\sqrt{2\rho}`; ``"analytic"`` uses the
        analytic Gaussian mechanism (never larger). Ignored for a :class:`ZCDP` budget.
    conversion : {"tight", "simple"}
        zCDP to approximate-DP conversion for ``method="zcdp"``.
    neighbours : {"zero_out", "replace_one"}
        Neighbouring relation; ``"replace_one"`` doubles the sensitivity.

    Returns
    -------
    float
        :math:`\sigma_{dp}` (0 for an infinite budget).

    Raises
    ------
    TypeError
        If ``budget`` is not a budget.
    ValueError
        For a non-positive sensitivity or an unknown option.
    """
    check_budget(budget)
    gamma = check_positive(sensitivity, "sensitivity") * _neighbour_factor(neighbours)
    check_choice(method, "method", CALIBRATIONS)
    check_choice(conversion, "conversion", CONVERSIONS)
    if budget.is_infinite:
        return 0.0
    if isinstance(budget, ZCDP):
        return gamma / math.sqrt(2.0 * budget.rho)
    if method == "analytic":
        return float(analytic_gaussian_sigma(budget.epsilon, budget.delta, gamma))
    rho = eps_to_zcdp(budget.epsilon, budget.delta, conversion)
    return gamma / math.sqrt(2.0 * rho)


def ftrl_zcdp(noise_multiplier: float, sensitivity: float, neighbours: str = "zero_out") -> ZCDP:
    r"""Return the :math:`\rho`-zCDP of DP-FTRL: :math:`\rho = \gamma^2 / (2\sigma_{dp}^2)`.

    Parameters
    ----------
    noise_multiplier : float
        :math:`\sigma_{dp} > 0`.
    sensitivity : float
        :math:`\gamma > 0`.
    neighbours : {"zero_out", "replace_one"}

    Returns
    -------
    ZCDP
    """
    sigma = check_positive(noise_multiplier, "noise_multiplier")
    gamma = check_positive(sensitivity, "sensitivity") * _neighbour_factor(neighbours)
    return ZCDP(gamma * gamma / (2.0 * sigma * sigma))


def ftrl_epsilon(
    noise_multiplier: float,
    sensitivity: float,
    delta: float,
    *,
    method: str = "zcdp",
    conversion: str = DEFAULT_CONVERSION,
    neighbours: str = "zero_out",
) -> ApproxDP:
    r"""Return the :math:`(\varepsilon, \delta)`-DP of DP-FTRL at ``delta``.

    ``method="zcdp"``: :func:`ftrl_zcdp` converted with ``conversion``;
    ``"analytic"``: the smallest :math:`\varepsilon` with the exact Gaussian profile
    (Balle & Wang 2018, Thm 8) at most ``delta``
    (:func:`dpreg.privacy.gaussian.gaussian_epsilon`).

    Returns
    -------
    ApproxDP
        With epsilon at least the smallest positive float (a zero epsilon, i.e.
        (0, delta)-DP, is reported as that).
    """
    sigma = check_positive(noise_multiplier, "noise_multiplier")
    gamma = check_positive(sensitivity, "sensitivity") * _neighbour_factor(neighbours)
    check_choice(method, "method", CALIBRATIONS)
    if method == "zcdp":
        rho = gamma * gamma / (2.0 * sigma * sigma)
        eps = zcdp_to_eps(rho, delta, conversion)
    else:
        eps = float(gaussian_epsilon(sigma, delta, gamma))
    # 0 means (0, delta)-DP, which implies (eps', delta)-DP for every eps' > 0: report the
    # smallest positive float (ApproxDP needs eps > 0)
    return ApproxDP(max(eps, math.ulp(0.0)), delta)


def matrix_sensitivity(encoder: np.ndarray) -> float:
    r"""Single-participation sensitivity :math:`\max_t \|C_{:,t}\|_2` of any encoder matrix.

    Theorem 1.1 for a general (non-Toeplitz) factorisation, e.g. tree aggregation.

    Parameters
    ----------
    encoder : ndarray, shape (m, T)

    Returns
    -------
    float
    """
    C = np.asarray(encoder, dtype=np.float64)
    if C.ndim != 2 or not np.all(np.isfinite(C)):
        raise ValueError("encoder must be a finite 2-D array (m, T)")
    return float(np.sqrt(np.max(np.sum(C * C, axis=0))))


PARTICIPATION_SCHEMAS: tuple[str, ...] = ("min_sep", "fixed_epoch")
"""Multi-participation models: ``"min_sep"`` -- at most ``k`` participations, any two at
least ``b`` steps apart (Choquette-Choo et al. 2023a; Kalinin & Lampert 2024);
``"fixed_epoch"`` -- steps :math:`i, i+b, \\dots, i+(k-1)b` for one :math:`i < b`
(``k`` epochs of ``b`` steps in a fixed order, the multi-epoch setting of
Choquette-Choo et al. 2023b)."""

_MAX_PATTERNS = 200_000


def _check_participation(k: object, b: object, T: int, schema: str) -> tuple[int, int]:
    check_choice(schema, "schema", PARTICIPATION_SCHEMAS)
    for value, name in ((k, "k (participations)"), (b, "b (separation)")):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
    if T < 1:
        raise ValueError(f"the horizon T must be >= 1; got {T}")
    return int(k), int(b)


def participation_patterns(
    T: int, k: int, b: int, *, schema: str = "min_sep"
) -> list[tuple[int, ...]]:
    r"""Every maximal participation pattern of one example in ``T`` steps.

    ``"min_sep"``: sets of at most ``k`` steps, pairwise at least ``b`` apart, that
    cannot be extended (another step would break one of the two rules);
    ``"fixed_epoch"``: :math:`\{i + jb : j < k\} \cap [0, T)` for :math:`i < \min(b, T)`.
    Non-maximal patterns are never needed: the worst case over unit gradients does not
    decrease when a participation is added (give it a gradient orthogonal to the
    others), see :func:`pattern_sensitivity_sq`.

    Parameters
    ----------
    T : int
        Horizon (number of steps).
    k, b : int
        Maximum participations and separation, both >= 1.
    schema : {"min_sep", "fixed_epoch"}

    Returns
    -------
    list of tuple of int
        Sorted step indices of each pattern.

    Raises
    ------
    ValueError
        For bad arguments or more than 200 000 patterns (the brute force is for small T).
    """
    k, b = _check_participation(k, b, int(T), schema)
    T = int(T)
    if schema == "fixed_epoch":
        return [tuple(range(i, min(T, i + k * b), b)) for i in range(min(b, T))]
    out: list[tuple[int, ...]] = []

    def extend(current: list[int], start: int) -> None:
        if len(out) > _MAX_PATTERNS:
            raise ValueError(
                f"more than {_MAX_PATTERNS} participation patterns (T={T}, k={k}, b={b});"
                " the brute force is meant for small T"
            )
        if current:
            if len(current) == k:
                out.append(tuple(current))
                return
            if not any(all(abs(j - p) >= b for p in current) for j in range(T)):
                out.append(tuple(current))
        for j in range(start, T):
            extend([*current, j], j + b)

    extend([], 0)
    return out


def pattern_sensitivity_sq(gram_block: np.ndarray) -> float:
    r"""Worst case of :math:`\|\sum_{j\in\pi} C_{:,j}g_j^\top\|_F^2` over unit gradients.

    An example participating at the steps :math:`\pi` changes each of its gradients by
    a vector :math:`g_j` of norm at most 1 (zero-out neighbours, clip norm 1), in any
    direction, so the squared sensitivity of the pattern is

    .. math::

        \max_{\|g_j\|\le1}\Big\|\sum_{j\in\pi}C_{:,j}g_j^\top\Big\|_F^2
        = \max_{G\succeq0,\ \mathrm{diag}(G)=1}\langle X_\pi, G\rangle
        = \min_{y:\ \mathrm{Diag}(y)\succeq X_\pi}\mathbf 1^\top y,

    :math:`X_\pi = (C^\top C)_{\pi\pi}` (the Gram matrix of the gradients may be any
    correlation matrix once the dimension is at least :math:`|\pi|`; the last equality
    is SDP duality, Slater's condition holds at :math:`G = I`). If :math:`X_\pi \ge 0`
    entrywise the maximum is :math:`\mathbf 1^\top X_\pi\mathbf 1 =
    \|\sum_{j\in\pi}C_{:,j}\|^2` (all gradients aligned); for :math:`|\pi| \le 2` it is
    :math:`\mathrm{tr}X_\pi + 2|X_{12}|`. Otherwise the dual SDP is solved (cvxpy,
    CLARABEL) and its :math:`y` shifted by
    :math:`\max(0, -\lambda_{\min}(\mathrm{Diag}(y) - X_\pi))`, so the returned value is
    a certified upper bound (never below the worst case).

    Parameters
    ----------
    gram_block : ndarray, shape (p, p)
        :math:`X_\pi`, symmetric positive semi-definite.

    Returns
    -------
    float
    """
    M = np.asarray(gram_block, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.size == 0 or not np.all(np.isfinite(M)):
        raise ValueError("gram_block must be a finite non-empty square matrix")
    return float(_pattern_values(M[None])[0])


def _pattern_values(blocks: np.ndarray) -> np.ndarray:
    """Worst-case values of a stack of Gram blocks (n, p, p); see pattern_sensitivity_sq."""
    blocks = 0.5 * (blocks + np.swapaxes(blocks, 1, 2))
    n, p, _ = blocks.shape
    if p <= 2:
        diag = np.trace(blocks, axis1=1, axis2=2)
        return diag + (2.0 * np.abs(blocks[:, 0, 1]) if p == 2 else 0.0)
    values = np.empty(n)
    scale = max(float(np.max(np.abs(blocks))), 1e-300)
    easy = np.all(blocks >= -1e-14 * scale, axis=(1, 2))
    # sum |X_ij| bounds <X, G> for every correlation matrix G; equal when X >= 0
    values[easy] = np.abs(blocks[easy]).sum(axis=(1, 2))
    hard = np.flatnonzero(~easy)
    if hard.size:
        values[hard] = _elliptope_max_sdp(blocks[hard])
    return values


def _elliptope_max_sdp(blocks: np.ndarray) -> np.ndarray:
    """Certified upper bounds min 1'y s.t. Diag(y) >= X for each block (one cvxpy solve)."""
    import cvxpy as cp

    n, p, _ = blocks.shape
    Y = cp.Variable((n, p))
    constraints = [cp.diag(Y[i]) - blocks[i] >> 0 for i in range(n)]
    cp.Problem(cp.Minimize(cp.sum(Y)), constraints).solve(solver="CLARABEL")
    if Y.value is None:
        raise RuntimeError("the pattern-sensitivity SDP failed")
    y = np.asarray(Y.value)
    out = np.empty(n)
    for i in range(n):
        slack = np.diag(y[i]) - blocks[i]
        shift = max(0.0, -float(np.linalg.eigvalsh(0.5 * (slack + slack.T))[0]))
        out[i] = float(np.sum(y[i])) + p * shift
    return out


def toeplitz_matrix(first_column: np.ndarray) -> np.ndarray:
    """Lower-triangular Toeplitz matrix (T, T) with the given first column."""
    c = np.asarray(first_column, dtype=np.float64).ravel()
    lag = np.arange(c.size)[:, None] - np.arange(c.size)[None, :]
    return np.where(lag >= 0, c[np.clip(lag, 0, None)], 0.0)


def multi_participation_sensitivity_sq(
    encoder: np.ndarray, k: int, b: int, *, schema: str = "min_sep"
) -> float:
    r"""Squared sensitivity of an encoder when an example participates up to ``k`` times.

    Not part of this paper (Theorem 1.1 covers one participation;
    docs/notes/choquettechoo2023.md §2.5 item 3):
    :math:`\max_\pi\max_{\|g_j\|\le1}\|\sum_{j\in\pi}C_{:,j}g_j^\top\|_F^2` over the
    participation patterns :math:`\pi` of :func:`participation_patterns`, each pattern
    evaluated exactly by :func:`pattern_sensitivity_sq` (any signs; when the Gram
    entries are non-negative this is :math:`\max_\pi\|\sum_{j\in\pi}C_{:,j}\|^2`).

    Shortcut: a lower-triangular Toeplitz encoder given by its first column
    :math:`c \ge 0` has :math:`(C^\top C)_{ij} \ge 0`, non-increasing in
    :math:`\max(i, j)` at fixed :math:`|i-j|`, so the fixed-epoch worst case is the
    pattern :math:`0, b, 2b, \dots`; for ``"min_sep"`` the same pattern is the worst
    when :math:`c` is also non-increasing (Kalinin & Lampert 2024, Thm 2; true for
    ν-FTRL, Optimal CC, SGD and damped anti-PGD). Both shortcuts are checked against
    the brute force in the tests. Any other encoder (e.g. one with negative entries,
    where the first pattern need not be the worst) takes the brute force over all
    patterns, meant for small ``T``.

    Parameters
    ----------
    encoder : ndarray, shape (T,) or (m, T)
        First column :math:`c_0, \dots, c_{T-1}` of a lower-triangular Toeplitz encoder,
        or an explicit encoder matrix :math:`C`.
    k, b : int
        Maximum participations and separation (at most
        :math:`\lfloor (T-1)/b\rfloor + 1` participations fit in ``T`` steps).
    schema : {"min_sep", "fixed_epoch"}
        See :data:`PARTICIPATION_SCHEMAS`.

    Returns
    -------
    float
    """
    C = np.asarray(encoder, dtype=np.float64)
    if C.ndim not in (1, 2) or C.size == 0 or not np.all(np.isfinite(C)):
        raise ValueError("encoder must be a finite non-empty vector (T,) or matrix (m, T)")
    T = C.shape[-1]
    k, b = _check_participation(k, b, T, schema)
    if C.ndim == 1:
        nonneg = bool(np.all(C >= 0))
        monotone = bool(np.all(np.diff(C) <= 1e-15 * max(float(C[0]), 1e-300)))
        if nonneg and (schema == "fixed_epoch" or monotone):
            col = np.zeros(T)
            for j in range(min(k, (T - 1) // b + 1)):
                col[j * b :] += C[: T - j * b]
            return float(np.dot(col, col))
        C = toeplitz_matrix(C)
    X = encoder_gram(C)  # C.T @ C bit for bit (sparse for TreeAgg's integer encoder)
    patterns = participation_patterns(T, k, b, schema=schema)
    best = 0.0
    for size in sorted({len(p) for p in patterns}):
        idx = np.array([p for p in patterns if len(p) == size], dtype=np.intp)
        blocks = X[idx[:, :, None], idx[:, None, :]]
        best = max(best, float(np.max(_pattern_values(blocks))))
    return best
