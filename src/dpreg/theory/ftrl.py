r"""Asymptotic suboptimality of Noisy-SGD and Noisy-FTRL in closed form.

Choquette-Choo, Dvijotham, Pillutla, Ganesh, Steinke & Thakurta (2023), "Correlated
Noise Provably Beats Independent Noise for Differentially Private Learning" (ICLR
2024): §2 (mean estimation, Theorem 2.1, Fig. 1; linear regression, Theorem 2.2,
Table 1), App. C (Theorems C.14, C.15, C.18, Tables 2 and 4) and App. F (elliptic
integrals F.15, F.16).

Conventions (see ``docs/choquettechoo2023.md``):

* **Normalisation.** :math:`F(\theta) - F(\theta^\star) = \tfrac12\|\theta -
  \theta^\star\|_H^2` everywhere (linear regression, Eq. 8; mean estimation Eq. 6 with
  :math:`H = 1`). The paper's App. B (mean estimation) and the proof of C.18 use
  :math:`\|\cdot\|_H^2` without the ½; where a theorem is printed in that
  normalisation we say so and halve it. Ratios and slopes are unaffected.
* **Noise.** :math:`w_t \sim \mathcal N(0, \sigma_{dp}^2 G^2 I)` with
  :math:`\sigma_{dp}^2 = \gamma_\infty^2(\beta)/(2\rho)` (Theorem 2.2).
* **Elliptic integrals** in the paper's *modulus* convention :math:`K(k)`,
  :math:`E(k)`, :math:`\Pi(\alpha^2, k)` (Eqs. 94-96); SciPy takes the parameter
  :math:`m = k^2`. :math:`\Pi` comes from Carlson's symmetric forms,
  :math:`\Pi(n, m) = R_F(0, 1-m, 1) + \frac n3 R_J(0, 1-m, 1, 1-n)` (DLMF 19.25.2),
  which also covers :math:`n < 0`.

The "LTI" values are exact stationary errors of the linear time-invariant surrogate in
which :math:`x_tx_t^\top` is replaced by :math:`H` (the system of the lower bound,
Theorem C.18 and its proof, C.19); the random-design process is never below them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dpreg.estimators.ftrl_correlations import (
    ToeplitzCorrelation,
    anti_pgd,
    damped_anti_pgd,
    independent,
    nu_ftrl,
    optimal_cc,
)

__all__ = [
    "SPECTRUM_FAMILIES",
    "effective_dimension",
    "ellipe_modulus",
    "ellipk_modulus",
    "ellippi_modulus",
    "fig1_ratio",
    "fig1_table",
    "gaussian_kurtosis_constants",
    "h_function",
    "integral_f15",
    "integral_f15_quadrature",
    "integral_f16",
    "integral_f16_quadrature",
    "lti_suboptimality",
    "mean_estimation_suboptimality",
    "optimal_lti_suboptimality",
    "spectral_integral",
    "spectrum_eigenvalues",
    "table1",
    "table2",
    "table4",
    "theorem22_rates",
    "theorem_c14_upper",
    "theorem_c15_upper",
    "theorem_c18_lower",
    "universal_lower_bound",
]

_QUAD = {"epsabs": 0.0, "epsrel": 1e-13, "limit": 2000}


# ============================================================== elliptic integrals (F.4)


def ellipk_modulus(k: float | np.ndarray) -> float | np.ndarray:
    r"""Complete elliptic integral of the first kind :math:`K(k)`, modulus convention (94).

    ``scipy.special.ellipk(k**2)``, switching to ``ellipkm1(1 - k**2)`` for
    :math:`k^2 > 0.9` where forming :math:`k^2` loses the digits of :math:`1 - k^2`.
    """
    from scipy import special  # imported on first use: job start-up (docs/scaling.md)

    k = np.asarray(k, dtype=np.float64)
    one_minus_m = (1.0 - k) * (1.0 + k)
    out = np.where(k * k > 0.9, special.ellipkm1(one_minus_m), special.ellipk(k * k))
    return float(out) if out.ndim == 0 else out


def ellipe_modulus(k: float | np.ndarray) -> float | np.ndarray:
    r"""Complete elliptic integral of the second kind :math:`E(k)` (95): ``ellipe(k**2)``."""
    from scipy import special  # imported on first use: job start-up (docs/scaling.md)

    k = np.asarray(k, dtype=np.float64)
    out = special.ellipe(k * k)
    return float(out) if out.ndim == 0 else out


def ellippi_modulus(
    n: float | np.ndarray,
    k: float | np.ndarray | None,
    *,
    one_minus_k2: float | np.ndarray | None = None,
    one_minus_n: float | np.ndarray | None = None,
) -> float | np.ndarray:
    r"""Complete elliptic integral of the third kind :math:`\Pi(n, k)` (96).

    Here :math:`n = \alpha^2 < 1` (negative allowed).

    .. math::

        \Pi(n, k) = \int_0^{\pi/2}\frac{d\omega}{(1 - n\sin^2\omega)\sqrt{1 -
        k^2\sin^2\omega}} = R_F(0, 1-k^2, 1) + \frac n3 R_J(0, 1-k^2, 1, 1-n)

    (DLMF 19.25.2) with ``scipy.special.elliprf`` / ``elliprj``. ``one_minus_k2`` and
    ``one_minus_n`` may pass :math:`1 - k^2` and :math:`1 - n` computed without
    cancellation (both tend to 0 together in F.16 as :math:`a \to 0`).
    """
    from scipy import special  # imported on first use: job start-up (docs/scaling.md)

    n = np.asarray(n, dtype=np.float64)
    if one_minus_k2 is None:
        k = np.asarray(k, dtype=np.float64)
        one_minus_k2 = (1.0 - k) * (1.0 + k)
    c = np.asarray(one_minus_k2, dtype=np.float64)
    p = 1.0 - n if one_minus_n is None else np.asarray(one_minus_n, dtype=np.float64)
    if np.any(p <= 0):
        raise ValueError("ellippi_modulus needs n < 1 (no principal-value case here)")
    zero = np.zeros_like(c)
    one = np.ones_like(c)
    out = special.elliprf(zero, c, one) + n / 3.0 * special.elliprj(zero, c, one, p)
    return float(out) if np.ndim(out) == 0 else out


def integral_f15(a: float | np.ndarray) -> float | np.ndarray:
    r"""Lemma F.15, an integral as a complete elliptic integral of the first kind.

    :math:`\int_{-\pi}^{\pi}\frac{d\omega}{|1-a-e^{i\omega}|} =
    \frac{4}{2-a}K\Big(\frac{\sqrt{1-a}}{1-a/2}\Big)`, :math:`a \in (0, 1]`.

    Computed with :math:`1 - k^2 = a^2/(2-a)^2` exactly (``ellipkm1``); equal to
    :math:`4K(1-a)` by Landen's transformation.
    """
    from scipy import special  # imported on first use: job start-up (docs/scaling.md)

    a = np.asarray(a, dtype=np.float64)
    out = 4.0 / (2.0 - a) * special.ellipkm1((a / (2.0 - a)) ** 2)
    return float(out) if out.ndim == 0 else out


def integral_f16(a: float | np.ndarray, b: float | np.ndarray) -> float | np.ndarray:
    r"""Lemma F.16, :math:`\mathcal I(a, b)` via the third kind :math:`\Pi`.

    :math:`\mathcal I(a, b) = \int_{-\pi}^{\pi}\frac{|1-a-e^{i\omega}|}
    {|1-b-e^{i\omega}|^2}d\omega` for :math:`a, b \in (0, 1]`:

    .. math::

        \mathcal I(a, b) = \frac{2a^2}{b^2(1-a/2)}\,\Pi(\alpha^2, k),\quad
        \alpha^2 = \frac{b^2(1-a) - a^2(1-b)}{b^2(1-a/2)^2},\quad
        k = \frac{\sqrt{1-a}}{1-a/2}

    (square roots restored, docs/notes/choquettechoo2023.md §3.9). :math:`\mathcal I(a, a)`
    is F.15. Both :math:`1 - k^2 = a^2/(2-a)^2` and
    :math:`1 - \alpha^2 = \big(\frac{a(1-b/2)}{b(1-a/2)}\big)^2` are passed in closed form,
    so tiny :math:`a` keeps full accuracy.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if np.any(a <= 0) or np.any(a > 1) or np.any(b <= 0) or np.any(b > 1):
        raise ValueError("integral_f16 needs a, b in (0, 1]")
    half = 1.0 - a / 2.0
    one_minus_k2 = (a / (2.0 - a)) ** 2
    # 1 - alpha^2 in closed form; alpha^2 = (b^2(1-a) - a^2(1-b)) / (b^2 (1-a/2)^2)
    one_minus_n = (a * (1.0 - b / 2.0) / (b * half)) ** 2
    alpha2 = 1.0 - one_minus_n
    pi_val = ellippi_modulus(alpha2, None, one_minus_k2=one_minus_k2, one_minus_n=one_minus_n)
    out = 2.0 * a * a / (b * b * half) * np.asarray(pi_val)
    return float(out) if out.ndim == 0 else out


def _quad_peaked(func, scale: float) -> float:
    """Integral of an even function over [-pi, pi] peaked at 0 with width ``scale``."""
    from scipy import integrate  # imported on first use: job start-up (docs/scaling.md)

    pts = sorted({p for p in (scale, 10 * scale, 100 * scale) if 0 < p < math.pi})
    edges = [0.0, *pts, math.pi]
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        total += integrate.quad(func, lo, hi, **_QUAD)[0]
    return 2.0 * total


def _graded_quadrature(func, scale: float, *, panels: int = 240, order: int = 20) -> float:
    """Integral over [0, pi] of a vectorised ``func`` peaked at 0 with width ``scale``.

    Gauss-Legendre of ``order`` nodes on panels with log-spaced edges from
    ``scale / 1000`` to pi (plus [0, scale / 1000]): each panel spans a constant ratio, so
    features at every scale down to ``scale`` are resolved.
    """
    lo = max(min(scale / 1000.0, 1e-3), 1e-300)
    edges = np.concatenate([[0.0], np.geomspace(lo, math.pi, panels)])
    x, wts = np.polynomial.legendre.leggauss(order)
    half = 0.5 * np.diff(edges)
    mid = 0.5 * (edges[1:] + edges[:-1])
    nodes = (mid[:, None] + half[:, None] * x[None, :]).ravel()
    weights = (half[:, None] * wts[None, :]).ravel()
    return float(np.sum(weights * func(nodes)))


def integral_f15_quadrature(a: float) -> float:
    """F.15 by adaptive quadrature (independent check of :func:`integral_f15`)."""
    return _quad_peaked(lambda w: 1.0 / abs(1.0 - a - np.exp(1j * w)), a)


def integral_f16_quadrature(a: float, b: float) -> float:
    """F.16 by adaptive quadrature (independent check of :func:`integral_f16`)."""

    def f(w: float) -> float:
        e = np.exp(1j * w)
        return abs(1.0 - a - e) / abs(1.0 - b - e) ** 2

    return _quad_peaked(f, min(a, b))


# ======================================================= mean estimation (§2.1, App. B)


def mean_estimation_suboptimality(
    correlation: ToeplitzCorrelation,
    eta: float,
    *,
    rho: float = 1.0,
    clip: float = 1.0,
    sigma_sgd: float = 0.0,
) -> float:
    r"""Exact :math:`F_\infty` for mean estimation (App. B, Eq. 16-18), ½-normalised.

    .. math::

        F_\infty = \frac{\eta^2}{4\pi}\int_{-\pi}^{\pi}
        \frac{|B(\omega)|^2\frac{G^2}{2\rho}\gamma_\infty^2(B) + \sigma_{sgd}^2}
        {|1-\eta-e^{i\omega}|^2}\,d\omega

    (the paper's display is twice this: it uses :math:`\lim\mathbb E\delta_t^2`).
    Closed forms via :func:`spectral_integral` with :math:`H = 1`.
    """
    return lti_suboptimality(
        correlation, np.array([1.0]), eta, rho=rho, clip=clip, sigma_sgd=sigma_sgd
    )


def fig1_ratio(eta: float | np.ndarray) -> float | np.ndarray:
    r"""Fig. 1 (left): :math:`F_\infty(\beta^\star)/F_\infty(\beta^{sgd})` for mean estimation.

    :math:`R(\eta) = \frac{4}{\pi^2}\eta(2-\eta)K(1-\eta)^2` (ratio of the
    :math:`\rho^{-1}` terms; Theorem 2.1 with the closed forms of
    docs/notes/choquettechoo2023.md §3.2). Equals 1 at :math:`\eta = 1`.
    """
    from scipy import special  # imported on first use: job start-up (docs/scaling.md)

    eta = np.asarray(eta, dtype=np.float64)
    K = special.ellipkm1(eta * (2.0 - eta))
    out = 4.0 / np.pi**2 * eta * (2.0 - eta) * K * K
    return float(out) if out.ndim == 0 else out


def fig1_table(etas: Sequence[float], *, eta_panels: float = 0.1, T: int = 30) -> pd.DataFrame:
    r"""Fig. 1 as a tidy table.

    Ratio vs :math:`\eta`, :math:`\beta^\star_t` and :math:`|B^\star(\omega)|^2`.

    Returns rows with ``panel`` in ``{"ratio", "coefficients", "spectrum"}``:
    ``ratio`` has ``eta`` and ``value`` (:func:`fig1_ratio`), plus the exact
    suboptimalities of SGD and of :math:`\beta^\star` (``sgd``, ``optimal``);
    ``coefficients`` has ``t`` and :math:`\beta^\star_t` at ``eta_panels``;
    ``spectrum`` has ``omega`` and :math:`|B^\star(\omega)|^2 = |1-\eta-e^{i\omega}|`.
    """
    rows = []
    for eta in etas:
        sgd = mean_estimation_suboptimality(independent(), eta)
        opt = sgd if eta >= 1.0 else mean_estimation_suboptimality(nu_ftrl(eta), eta)
        rows.append(
            {"panel": "ratio", "eta": eta, "value": fig1_ratio(eta), "sgd": sgd, "optimal": opt}
        )
    beta = nu_ftrl(eta_panels).coefficients(T)
    rows += [
        {"panel": "coefficients", "eta": eta_panels, "t": t, "value": float(b)}
        for t, b in enumerate(beta)
    ]
    omega = np.linspace(-np.pi, np.pi, 201)
    spec = nu_ftrl(eta_panels).spectrum(omega)
    rows += [
        {"panel": "spectrum", "eta": eta_panels, "omega": float(w), "value": float(s)}
        for w, s in zip(omega, spec, strict=True)
    ]
    return pd.DataFrame(rows)


# ========================================================= linear regression (§2.2, C)


def effective_dimension(eigenvalues: np.ndarray) -> float:
    r""":math:`d_{eff} = \mathrm{Tr}[H]/\|H\|_2` (§2.2)."""
    lam = _eigs(eigenvalues)
    return float(lam.sum() / lam.max())


def gaussian_kurtosis_constants(eigenvalues: np.ndarray) -> tuple[float, float]:
    r""":math:`(R^2, C_{kurt})` of Assumption C.2 for :math:`x \sim \mathcal N(0, H)`.

    :math:`\mathbb E[\|x\|^2xx^\top] = 2H^2 + \mathrm{Tr}[H]H \preceq
    (\mathrm{Tr}H + 2\|H\|_2)H`, so :math:`R^2 = \mathrm{Tr}H + 2\|H\|_2` (at most
    :math:`3\mathrm{Tr}H`, Property C.3), and :math:`C_{kurt} = 3`.
    """
    lam = _eigs(eigenvalues)
    return float(lam.sum() + 2.0 * lam.max()), 3.0


def h_function(omega: np.ndarray, eigenvalues: np.ndarray, eta: float) -> np.ndarray:
    r""":math:`h(\omega) = \sum_j \lambda_j/|1 - e^{i\omega} - \eta\lambda_j|^2` (Eq. 21)."""
    lam = _eigs(eigenvalues)
    w = np.asarray(omega, dtype=np.float64)
    c = eta * lam
    # |1 - c - e^{iw}|^2 = c^2 + 4 (1 - c) sin^2(w/2), free of cancellation near w = 0
    s2 = np.sin(0.5 * w.reshape(-1, 1)) ** 2
    denom = c[None, :] ** 2 + 4.0 * (1.0 - c[None, :]) * s2
    return (lam[None, :] / denom).sum(axis=1).reshape(w.shape)


def _eigs(eigenvalues: np.ndarray) -> np.ndarray:
    lam = np.asarray(eigenvalues, dtype=np.float64).ravel()
    if lam.size == 0 or not np.all(np.isfinite(lam)) or np.any(lam <= 0):
        raise ValueError("eigenvalues must be a non-empty vector of finite positive numbers")
    return lam


def _per_direction_integrals(
    correlation: ToeplitzCorrelation, lam: np.ndarray, eta: float
) -> np.ndarray:
    r""":math:`J_j = \int_{-\pi}^{\pi}|B(\omega)|^2/|1-\eta\lambda_j-e^{i\omega}|^2 d\omega`."""
    c = eta * lam
    if np.any(c >= 2):
        raise ValueError("eta * lambda_max must be < 2 for a stable LTI system")
    if correlation.kind == "independent":
        return 2.0 * np.pi / (c * (2.0 - c))  # F.12
    if correlation.kind == "nu_ftrl" and correlation.nu > 0:
        if np.any(c > 1):
            raise ValueError("the nu-FTRL closed form (F.16) needs eta * lambda <= 1")
        return np.asarray(integral_f16(correlation.nu, c), dtype=np.float64).reshape(lam.shape)
    if correlation.kind == "anti_pgd":
        # |1-nu-e|^2 = (p/q)|1-c-e|^2 + (1 + p^2 - p(1+q^2)/q), p = 1-nu, q = 1-c; F.12.
        p, q = 1.0 - correlation.nu, 1.0 - c
        return 2.0 * np.pi * (p / q + (1.0 + p * p - p * (1.0 + q * q) / q) / (1.0 - q * q))
    out = np.empty_like(lam)
    for j, cj in enumerate(c):

        def f(w: float, cj: float = cj) -> float:
            return float(correlation.spectrum(w)) / abs(1.0 - cj - np.exp(1j * w)) ** 2

        out[j] = _quad_peaked(f, cj)
    return out


def spectral_integral(
    correlation: ToeplitzCorrelation, eigenvalues: np.ndarray, eta: float
) -> float:
    r""":math:`\int_{-\pi}^{\pi}|B(\omega)|^2h(\omega)\,d\omega` (Eq. 20/21, Theorem C.15).

    Closed forms: SGD :math:`\sum_j 2\pi/(\eta(2-\eta\lambda_j))` (F.12); ν-FTRL
    :math:`\sum_j\lambda_j\mathcal I(\nu, \eta\lambda_j)` (F.16); damped anti-PGD by
    partial fractions and F.12; any other :math:`\beta` by adaptive quadrature.
    """
    lam = _eigs(eigenvalues)
    return float(np.sum(lam * _per_direction_integrals(correlation, lam, eta)))


def lti_suboptimality(
    correlation: ToeplitzCorrelation,
    eigenvalues: np.ndarray,
    eta: float,
    *,
    rho: float = 1.0,
    clip: float = 1.0,
    sigma_sgd: float = 0.0,
) -> float:
    r"""Exact stationary :math:`F_\infty` of the LTI surrogate (½-normalised).

    .. math::

        F^{LTI}_\infty = \frac{\eta^2G^2\gamma_\infty^2(\beta)}{8\pi\rho}
        \int_{-\pi}^{\pi}|B|^2h\,d\omega
        + \frac{\eta\sigma_{sgd}^2}{2}\sum_j\frac{\lambda_j}{2-\eta\lambda_j}

    Special cases: SGD :math:`\frac{\eta G^2}{4\rho}\sum_j\frac{1}{2-\eta\lambda_j}`;
    ν-FTRL :math:`\frac{\eta^2G^2}{16\pi^2\rho}\mathcal I(\nu,\nu)\sum_j\lambda_j
    \mathcal I(\nu, \eta\lambda_j)`. This equals Theorem C.18's lower bound (printed
    without the ½) halved. Returns ``inf`` when :math:`\gamma_\infty = \infty`.
    """
    lam = _eigs(eigenvalues)
    gamma_sq = correlation.gamma_inf_sq
    label = 0.5 * eta * sigma_sgd**2 * float(np.sum(lam / (2.0 - eta * lam)))
    if math.isinf(gamma_sq):
        return math.inf
    integral = spectral_integral(correlation, lam, eta)
    return eta**2 * clip**2 * gamma_sq / (8.0 * math.pi * rho) * integral + label


def optimal_lti_suboptimality(
    eigenvalues: np.ndarray, eta: float, *, rho: float = 1.0, clip: float = 1.0
) -> float:
    r"""Smallest LTI suboptimality over all correlations (proof of Theorem C.18).

    :math:`\min_\beta F^{LTI}_\infty = \frac{\eta^2G^2}{16\pi^2\rho}
    \big(\int_{-\pi}^{\pi}\sqrt{h}\big)^2` (proof of C.18: Cauchy-Schwarz, equality at
    :math:`|B^\star|^2 \propto h^{-1/2}`), by graded Gauss-Legendre quadrature.
    """
    lam = _eigs(eigenvalues)
    root_integral = 2.0 * _graded_quadrature(
        lambda w: np.sqrt(h_function(w, lam, eta)), float(eta * lam.min())
    )
    return eta**2 * clip**2 / (16.0 * math.pi**2 * rho) * root_integral**2


def universal_lower_bound(
    eigenvalues: np.ndarray,
    eta: float,
    *,
    rho: float = 1.0,
    clip: float = 1.0,
    sigma_sgd: float = 0.0,
) -> float:
    r"""Theorem C.18's universal lower bound over all correlations, ½-normalised.

    :math:`\frac{\eta^2G^2}{16\rho}\mathrm{Tr}H + \frac{\eta\sigma_{sgd}^2}{4}\mathrm{Tr}H`.

    Printed (without the ½) as :math:`\frac14(2\eta\sigma_{sgd}^2 +
    \frac{\eta^2G^2}{2\rho})\mathrm{Tr}[H]`, from :math:`h \ge \mathrm{Tr}[H]/4`.
    """
    tr = float(_eigs(eigenvalues).sum())
    return eta**2 * clip**2 * tr / (16.0 * rho) + eta * sigma_sgd**2 * tr / 4.0


def theorem_c18_lower(
    correlation: ToeplitzCorrelation,
    eigenvalues: np.ndarray,
    eta: float,
    *,
    rho: float = 1.0,
    clip: float = 1.0,
    sigma_sgd: float = 0.0,
) -> float:
    r"""Theorem C.18 (lower bound for one correlation), ½-normalised.

    :math:`\frac{\eta\sigma_{sgd}^2}{4}\mathrm{Tr}H +
    \frac{\eta^2G^2\gamma_\infty^2}{8\pi\rho}\int|B|^2h`.

    Printed as :math:`\frac{\eta\sigma^2}{2}\mathrm{Tr}H + \frac{\eta^2G^2\gamma^2}
    {4\pi\rho}\int|B|^2h` for :math:`F = \mathrm{Tr}[H\,\mathbb E\theta\theta^\top]`
    (the proof's normalisation). Valid for Gaussian inputs with
    :math:`\mathbb E\xi^2 = \sigma_{sgd}^2` and :math:`\beta \in \ell_1`.
    """
    lam = _eigs(eigenvalues)
    gamma_sq = correlation.gamma_inf_sq
    if math.isinf(gamma_sq):
        return math.inf
    return eta * sigma_sgd**2 * float(lam.sum()) / 4.0 + (
        eta**2
        * clip**2
        * gamma_sq
        / (8.0 * math.pi * rho)
        * spectral_integral(correlation, lam, eta)
    )


def theorem_c15_upper(
    correlation: ToeplitzCorrelation,
    eigenvalues: np.ndarray,
    eta: float,
    *,
    rho: float = 1.0,
    clip: float = 1.0,
    sigma_sgd: float = 0.0,
) -> float:
    r"""Theorem C.15 (frequency-domain upper bound) for Gaussian inputs, as printed.

    .. math::

        F_\infty \le (1 + (1-\eta R^2)^{-2})\eta R^2\sigma_{sgd}^2
        + (1 + C_{kurt}(1-\eta R^2)^{-2})\frac{\eta^2G^2\gamma_\infty^2}{2\pi\rho}
        \int|B|^2h,

    with :math:`(R^2, C_{kurt})` from :func:`gaussian_kurtosis_constants`; needs
    :math:`\eta < 1/R^2` (else ``inf``).
    """
    lam = _eigs(eigenvalues)
    r2, ckurt = gaussian_kurtosis_constants(lam)
    gamma_sq = correlation.gamma_inf_sq
    if eta * r2 >= 1 or math.isinf(gamma_sq):
        return math.inf
    f = (1.0 - eta * r2) ** -2
    return (1.0 + f) * eta * r2 * sigma_sgd**2 + (1.0 + ckurt * f) * (
        eta**2
        * clip**2
        * gamma_sq
        / (2.0 * math.pi * rho)
        * spectral_integral(correlation, lam, eta)
    )


def theorem_c14_upper(
    correlation: ToeplitzCorrelation,
    eigenvalues: np.ndarray,
    eta: float,
    *,
    rho: float = 1.0,
    clip: float = 1.0,
    sigma_sgd: float = 0.0,
) -> float:
    r"""Theorem C.14 (time-domain upper bound) for Gaussian inputs, as printed.

    Second term :math:`(1 + C_{kurt}(1-\eta R^2)^{-2})\frac{\eta G^2\gamma_\infty^2}
    {2\rho}\langle\beta, T\beta\rangle`, with
    :math:`[T\beta]_t = \sum_\tau\beta_\tau\sum_j(1-\eta\lambda_j)^{|t-\tau|}`, evaluated
    through the exact identity (F.12) :math:`\langle\beta, T_j\beta\rangle =
    \frac{\eta\lambda_j(2-\eta\lambda_j)}{2\pi}\int\frac{|B|^2}{|1-\eta\lambda_j-e^{i\omega}|^2}`.
    """
    lam = _eigs(eigenvalues)
    r2, ckurt = gaussian_kurtosis_constants(lam)
    gamma_sq = correlation.gamma_inf_sq
    if eta * r2 >= 1 or math.isinf(gamma_sq):
        return math.inf
    c = eta * lam
    quad_form = float(
        np.sum(c * (2.0 - c) / (2.0 * np.pi) * _per_direction_integrals(correlation, lam, eta))
    )
    f = (1.0 - eta * r2) ** -2
    return (1.0 + f) * eta * r2 * sigma_sgd**2 + (1.0 + ckurt * f) * (
        eta * clip**2 * gamma_sq / (2.0 * rho) * quad_form
    )


def theorem22_rates(
    eigenvalues: np.ndarray,
    eta: float,
    nu: float,
    *,
    rho: float = 1.0,
    clip: float = 1.0,
    sigma_sgd: float = 0.0,
) -> dict[str, float]:
    r"""Theorem 2.2's rate expressions with unit constants.

    ``sgd``: :math:`\eta dG^2\rho^{-1} + \eta\sigma_{sgd}^2\mathrm{Tr}H`;
    ``nu_ftrl``: :math:`(\eta^2G^2\rho^{-1}\log^2\frac1\nu + \eta\sigma_{sgd}^2)\mathrm{Tr}H`;
    ``lower``: :math:`(\eta^2G^2\rho^{-1} + \eta\sigma_{sgd}^2)\mathrm{Tr}H`.
    """
    lam = _eigs(eigenvalues)
    d, tr = lam.size, float(lam.sum())
    return {
        "sgd": eta * d * clip**2 / rho + eta * sigma_sgd**2 * tr,
        "nu_ftrl": (eta**2 * clip**2 / rho * math.log(1.0 / nu) ** 2 + eta * sigma_sgd**2) * tr,
        "lower": (eta**2 * clip**2 / rho + eta * sigma_sgd**2) * tr,
    }


# ================================================================ Tables 1, 2 and 4

SPECTRUM_FAMILIES: tuple[str, ...] = (
    "flat",
    "inv_sqrt",
    "power_lt1",
    "inv",
    "inv_sq",
    "power_gt1",
)
"""Table 4's rows: :math:`1`, :math:`1/\\sqrt k`, :math:`k^{-a}` (a<1), :math:`1/k`,
:math:`1/k^2`, :math:`k^{-a}` (a>1)."""


def spectrum_eigenvalues(family: str, d: int, a: float | None = None) -> np.ndarray:
    r"""Eigenvalues :math:`\lambda_k`, :math:`k = 1..d`, of a Table 4 family (:math:`\|H\|_2 = 1`).

    ``a`` is the exponent of ``power_lt1`` (default 0.75) and ``power_gt1`` (default 3).
    """
    k = np.arange(1, d + 1, dtype=np.float64)
    if family == "flat":
        return np.ones(d)
    if family == "inv_sqrt":
        return k**-0.5
    if family == "inv":
        return 1.0 / k
    if family == "inv_sq":
        return k**-2.0
    if family == "power_lt1":
        a = 0.75 if a is None else a
        if not 0 < a < 1:
            raise ValueError(f"power_lt1 needs 0 < a < 1; got {a}")
        return k**-a
    if family == "power_gt1":
        a = 3.0 if a is None else a
        if a <= 1:
            raise ValueError(f"power_gt1 needs a > 1; got {a}")
        return k**-a
    raise ValueError(f"family must be one of {SPECTRUM_FAMILIES}; got {family!r}")


def _table4_rates(family: str, d: int, eta: float, a: float | None) -> dict[str, float]:
    """Table 4's printed rate expressions (unit constants, rho = 1)."""
    L = math.log(d / eta)
    if family == "flat":
        return {
            "d_eff_rate": d,
            "sgd_rate": eta * d,
            "ftrl_rate": eta**2 * d * math.log(1 / eta) ** 2,
            "ratio_rate": eta * math.log(1 / eta) ** 2,
        }
    if family == "inv_sqrt":
        return {
            "d_eff_rate": math.sqrt(d),
            "sgd_rate": eta * d,
            "ftrl_rate": eta**2 * math.sqrt(d) * L**2,
            "ratio_rate": eta / math.sqrt(d) * L**2,
        }
    if family == "power_lt1":
        a = 0.75 if a is None else a
        return {
            "d_eff_rate": d ** (1 - a) / (1 - a),
            "sgd_rate": eta * d,
            "ftrl_rate": eta**2 * d ** (1 - a) / (1 - a) * L**2,
            "ratio_rate": eta / ((1 - a) * d**a) * L**2,
        }
    if family == "inv":
        return {
            "d_eff_rate": math.log(d),
            "sgd_rate": eta * d,
            "ftrl_rate": eta**2 * L**3,
            "ratio_rate": eta / d * L**3,
        }
    if family == "inv_sq":
        return {
            "d_eff_rate": 1.0,
            "sgd_rate": eta * d,
            "ftrl_rate": eta**2 * L**2,
            "ratio_rate": eta / d * L**2,
        }
    a = 3.0 if a is None else a
    return {
        "d_eff_rate": a / (a - 1),
        "sgd_rate": eta * d,
        "ftrl_rate": a * a / (a - 1) * eta**2 * L**2,
        "ratio_rate": a * a / (a - 1) * eta / d * L**2,
    }


def table4(
    ds: Sequence[int],
    eta: float,
    *,
    families: Sequence[str] = SPECTRUM_FAMILIES,
    a_lt1: float = 0.75,
    a_gt1: float = 3.0,
    rho: float = 1.0,
) -> pd.DataFrame:
    r"""Table 4 computed.

    Per spectrum family and :math:`d`: exact LTI :math:`F_\infty` of
    Noisy-SGD and ν-Noisy-FTRL (:math:`\nu = \eta\mu`), their ratio, the optimal
    correlation, the universal lower bound and the paper's rate expressions.
    """
    rows = []
    for fam in families:
        a = a_lt1 if fam == "power_lt1" else a_gt1 if fam == "power_gt1" else None
        for d in ds:
            lam = spectrum_eigenvalues(fam, int(d), a)
            nu = eta * float(lam.min())
            sgd = lti_suboptimality(independent(), lam, eta, rho=rho)
            ftrl = lti_suboptimality(nu_ftrl(nu), lam, eta, rho=rho)
            rows.append(
                {
                    "family": fam,
                    "a": a,
                    "d": int(d),
                    "eta": eta,
                    "nu": nu,
                    "d_eff": effective_dimension(lam),
                    "sgd": sgd,
                    "nu_ftrl": ftrl,
                    "ratio": ftrl / sgd,
                    "optimal": optimal_lti_suboptimality(lam, eta, rho=rho),
                    "lower_bound": universal_lower_bound(lam, eta, rho=rho),
                    **_table4_rates(fam, int(d), eta, a),
                }
            )
    return pd.DataFrame(rows)


def table1(eigenvalues: np.ndarray, eta: float, *, rho: float = 1.0) -> pd.DataFrame:
    r"""Table 1 computed for one :math:`H`: exact LTI values, rates, ratio to the lower bound.

    Rows ``lower_bound`` (universal bound of C.18 and the exact optimum over
    :math:`\beta`), ``noisy_sgd``, ``nu_noisy_ftrl`` (:math:`\nu = \eta\mu`). Columns
    ``value`` (exact), ``rate`` (Table 1's expression, unit constants), ``ratio``
    (value / universal lower bound) and ``ratio_rate`` (:math:`\frac{d}{\eta d_{eff}}`,
    :math:`\log^2\frac{1}{\eta\mu}`).
    """
    lam = _eigs(eigenvalues)
    d, mu, deff = lam.size, float(lam.min()), effective_dimension(lam)
    lb = universal_lower_bound(lam, eta, rho=rho)
    nu = eta * mu
    entries = [
        ("lower_bound", lb, eta**2 / rho * deff, 1.0),
        (
            "optimal_correlation",
            optimal_lti_suboptimality(lam, eta, rho=rho),
            eta**2 / rho * deff,
            math.nan,
        ),
        (
            "noisy_sgd",
            lti_suboptimality(independent(), lam, eta, rho=rho),
            eta * d / rho,
            d / (eta * deff),
        ),
        (
            "nu_noisy_ftrl",
            lti_suboptimality(nu_ftrl(nu), lam, eta, rho=rho),
            eta**2 / rho * deff * math.log(1 / nu) ** 2,
            math.log(1 / nu) ** 2,
        ),
    ]
    return pd.DataFrame(
        [
            {
                "algorithm": name,
                "d": d,
                "d_eff": deff,
                "mu": mu,
                "eta": eta,
                "nu": nu,
                "value": v,
                "rate": r,
                "ratio": v / lb,
                "ratio_rate": rr,
            }
            for name, v, r, rr in entries
        ]
    )


def table2(
    eigenvalues: np.ndarray,
    eta: float,
    *,
    horizons: Sequence[int] = (10**2, 10**3, 10**4),
    rho: float = 1.0,
) -> pd.DataFrame:
    r"""Table 2 computed.

    Sensitivities :math:`\gamma_T^2`, :math:`\gamma_\infty^2` and LTI
    :math:`F_\infty` of Optimal CC (:math:`\nu = 0`), ν-FTRL (:math:`\nu = \eta\mu`),
    anti-PGD and damped anti-PGD (:math:`\nu = 1/\sqrt d`, Prop. C.24), with SGD for
    reference, and the printed rates.
    """
    lam = _eigs(eigenvalues)
    d, tr, mu = lam.size, float(lam.sum()), float(lam.min())
    nu = eta * mu
    nu_anti = 1.0 / math.sqrt(d)
    mechs = [
        (independent(), "1", eta * d / rho),
        (optimal_cc(), "log T", math.inf),
        (nu_ftrl(nu), "log(1/nu)", eta**2 / rho * tr * math.log(1 / nu) ** 2),
        (anti_pgd(), "T", math.inf),
        (damped_anti_pgd(nu_anti), "1/nu", eta**1.5 / rho * math.sqrt(d * tr)),
    ]
    rows = []
    for corr, gamma_rate, rate in mechs:
        row = {
            "mechanism": corr.name,
            "nu": corr.nu,
            "gamma_T_sq_rate": gamma_rate,
            "gamma_inf_sq": corr.gamma_inf_sq,
            "F_inf": lti_suboptimality(corr, lam, eta, rho=rho),
            "F_inf_rate": rate,
        }
        for T in horizons:
            row[f"gamma_T_sq_{T}"] = corr.sensitivity_sq(int(T))
        rows.append(row)
    return pd.DataFrame(rows)
