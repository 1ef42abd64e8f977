r"""Toeplitz noise correlations of DP-FTRL (Choquette-Choo et al. 2023, ICLR 2024).

DP-FTRL with a lower-triangular Toeplitz noise-coefficient matrix :math:`B`
(first column :math:`\beta`) adds the correlated noise
:math:`\tilde w_t = \sum_{\tau \le t} \beta_\tau w_{t-\tau}` to the gradient of step
:math:`t` (Algorithm 1 / Eq. 13). Each object here describes one choice of
:math:`\beta`:

* its decoder coefficients :math:`\beta_0, \dots, \beta_{T-1}`
  (:meth:`ToeplitzCorrelation.coefficients`);
* its encoder :math:`C = B^{-1}` (also lower-triangular Toeplitz, first column
  :math:`c`, :meth:`ToeplitzCorrelation.encoder`);
* its sensitivity :math:`\gamma_T^2(\beta) = \sum_{t<T} c_t^2` (Theorem 1.1 and
  Eq. 24: the largest column norm of :math:`B^{-1}` is that of its first column) and
  the limit :math:`\gamma_\infty^2 = \lim_T \gamma_T^2 =
  \frac{1}{2\pi}\int_{-\pi}^{\pi}|B(\omega)|^{-2}\,d\omega` (Eq. 5 / Property C.1);
* its spectrum :math:`|B(\omega)|^2`, :math:`B(\omega) = \sum_t \beta_t e^{-i\omega t}`
  (only :math:`|B|` enters any result, so the DTFT sign does not matter).

The correlations of the paper (Table 2, Table 3, Eq. 7, Theorem 2.1):

- :func:`independent`: :math:`\beta = (1, 0, 0, \dots)` (DP-SGD),
  :math:`\gamma_\infty^2 = 1`;
- :func:`nu_ftrl`: Eq. 7 with :math:`0 < \nu < 1`, :math:`\gamma_\infty^2 = \frac2\pi K(1-\nu)`;
- :func:`optimal_cc`: Eq. 7 with :math:`\nu = 0` (Fichtenberger et al. 2023),
  :math:`\gamma_\infty^2 = \infty`;
- :func:`optimal_mean_estimation`: Eq. 7 with :math:`\nu = \eta` (Theorem 2.1),
  :math:`\gamma_\infty^2 = \frac2\pi K(1-\eta)`;
- :func:`anti_pgd`: :math:`\beta = (1, -1, 0, \dots)`, :math:`\gamma_\infty^2 = \infty`;
- :func:`damped_anti_pgd`: :math:`\beta = (1, -(1-\nu), 0, \dots)`,
  :math:`\gamma_\infty^2 = 1/(\nu(2-\nu))`;
- :func:`finite_toeplitz`: any finite :math:`\beta` with :math:`\beta_0 \ne 0`,
  :math:`\gamma_\infty^2` by summation.

:math:`K` is the complete elliptic integral of the first kind in the *modulus*
convention of the paper (F.4); SciPy's ``ellipk`` takes the parameter
:math:`m = k^2`, and near :math:`m = 1` we use ``ellipkm1(1 - m)`` with
:math:`1 - m = \nu(2-\nu)` computed without cancellation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CORRELATIONS",
    "ToeplitzCorrelation",
    "anti_pgd",
    "correlation_from_name",
    "damped_anti_pgd",
    "finite_toeplitz",
    "independent",
    "nu_ftrl",
    "nu_ftrl_gamma_inf_sq",
    "optimal_cc",
    "optimal_mean_estimation",
]

_KINDS = ("independent", "nu_ftrl", "anti_pgd", "finite")


def nu_ftrl_gamma_inf_sq(nu: float | np.ndarray) -> float | np.ndarray:
    r"""Limiting sensitivity :math:`\gamma_\infty^2 = \frac{2}{\pi} K(k = 1-\nu)` of ν-FTRL.

    Lemma C.21(i) and F.15 with the Landen transformation:
    :math:`\frac{1}{2\pi}\int_{-\pi}^{\pi}\frac{d\omega}{|1-\nu-e^{i\omega}|}
    = \frac{2}{\pi}K(1-\nu)` (modulus convention). Computed as
    ``(2/pi) * ellipkm1(nu * (2 - nu))`` since :math:`1 - k^2 = \nu(2-\nu)`, accurate
    for tiny :math:`\nu`. Returns ``inf`` at :math:`\nu = 0`.

    Parameters
    ----------
    nu : float or ndarray
        Damping :math:`\nu \in [0, 1]`.

    Returns
    -------
    float or ndarray
    """
    from scipy import special  # imported on first use: job start-up (docs/scaling.md)

    nu_arr = np.asarray(nu, dtype=np.float64)
    out = (2.0 / np.pi) * special.ellipkm1(nu_arr * (2.0 - nu_arr))
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class ToeplitzCorrelation:
    r"""A lower-triangular Toeplitz noise correlation :math:`B` of DP-FTRL.

    Use the factories (:func:`independent`, :func:`nu_ftrl`, ...) rather than this
    constructor.

    Attributes
    ----------
    name : str
        Label (``"sgd"``, ``"nu_ftrl"``, ``"optimal_cc"``, ``"anti_pgd"``,
        ``"damped_anti_pgd"``, ``"optimal_mean_estimation"``, ``"finite"``).
    kind : {"independent", "nu_ftrl", "anti_pgd", "finite"}
        The family, which selects the closed forms.
    nu : float
        Damping :math:`\nu` (ν-FTRL, damped anti-PGD); 0 for the undamped limits.
    finite_beta : tuple of float
        The coefficients of a ``"finite"`` correlation (empty otherwise).
    """

    name: str
    kind: str
    nu: float = 0.0
    finite_beta: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}; got {self.kind!r}")
        nu = float(self.nu)
        if not (0.0 <= nu < 1.0) or math.isnan(nu):
            raise ValueError(f"nu must lie in [0, 1); got nu={self.nu!r}")
        object.__setattr__(self, "nu", nu)

    # ------------------------------------------------------------------ coefficients
    def coefficients(self, T: int) -> np.ndarray:
        r"""Return the decoder coefficients :math:`\beta_0, \dots, \beta_{T-1}` (first column of B).

        ν-FTRL (Eq. 7): :math:`\beta_t = (-1)^t\binom{1/2}{t}(1-\nu)^t`, by the
        recursion :math:`\beta_0 = 1`, :math:`\beta_t = \beta_{t-1}\frac{t-3/2}{t}(1-\nu)`.
        """
        T = _check_T(T)
        if self.kind == "independent":
            beta = np.zeros(T)
            beta[0] = 1.0
            return beta
        if self.kind == "nu_ftrl":
            t = np.arange(1, T, dtype=np.float64)
            ratios = (t - 1.5) / t * (1.0 - self.nu)
            return np.concatenate([[1.0], np.cumprod(ratios)])
        if self.kind == "anti_pgd":
            beta = np.zeros(T)
            beta[0] = 1.0
            if T > 1:
                beta[1] = -(1.0 - self.nu)
            return beta
        beta = np.zeros(T)
        k = min(T, len(self.finite_beta))
        beta[:k] = self.finite_beta[:k]
        return beta

    def encoder(self, T: int) -> np.ndarray:
        r"""Return the encoder coefficients :math:`c_0, \dots, c_{T-1}` (first column of B^-1).

        ν-FTRL: :math:`c_t = \binom{2t}{t}4^{-t}(1-\nu)^t`
        (docs/notes/choquettechoo2023.md §2.1, from :math:`(1-z)^{-1/2}`); damped anti-PGD:
        :math:`c_t = (1-\nu)^t`; a finite :math:`\beta`: by forward substitution
        :math:`c_t = -\beta_0^{-1}\sum_{k=1}^{t}\beta_k c_{t-k}`.
        """
        T = _check_T(T)
        if self.kind == "independent":
            c = np.zeros(T)
            c[0] = 1.0
            return c
        if self.kind == "nu_ftrl":
            t = np.arange(1, T, dtype=np.float64)
            ratios = (t - 0.5) / t * (1.0 - self.nu)
            return np.concatenate([[1.0], np.cumprod(ratios)])
        if self.kind == "anti_pgd":
            return (1.0 - self.nu) ** np.arange(T, dtype=np.float64)
        beta = self.coefficients(T)
        support = int(np.max(np.nonzero(beta)[0])) + 1
        c = np.zeros(T)
        c[0] = 1.0 / beta[0]
        for t in range(1, T):
            k = min(t, support - 1)
            c[t] = -np.dot(beta[1 : k + 1], c[t - 1 :: -1][:k]) / beta[0]
        return c

    # ------------------------------------------------------------------ sensitivity
    def sensitivity_sq(self, T: int) -> float:
        r"""Sensitivity :math:`\gamma_T^2(\beta) = \sum_{t<T} c_t^2` (Theorem 1.1, Eq. 24).

        Closed forms: 1 (independent); :math:`\frac{1-(1-\nu)^{2T}}{1-(1-\nu)^2}`
        (damped anti-PGD; :math:`T` for :math:`\nu = 0`).
        """
        T = _check_T(T)
        if self.kind == "independent":
            return 1.0
        if self.kind == "anti_pgd":
            if self.nu == 0.0:
                return float(T)
            q = (1.0 - self.nu) ** 2
            return float(-math.expm1(T * math.log(q)) / (self.nu * (2.0 - self.nu)))
        c = self.encoder(T)
        return float(math.fsum(c * c))

    @property
    def gamma_inf_sq(self) -> float:
        r""":math:`\gamma_\infty^2(\beta) = \lim_T\gamma_T^2` (Eq. 5); ``inf`` if it diverges.

        ν-FTRL: :func:`nu_ftrl_gamma_inf_sq`; damped anti-PGD:
        :math:`1/(\nu(2-\nu))`; ν = 0 (Optimal CC, undamped anti-PGD): ``inf``
        (Table 2). A finite :math:`\beta` with :math:`B(z)` having a zero in the closed
        unit disc gives ``inf``; otherwise the series is summed until its terms are
        below ``1e-17`` of the total.
        """
        if self.kind == "independent":
            return 1.0
        if self.kind in ("nu_ftrl", "anti_pgd") and self.nu == 0.0:
            return math.inf
        if self.kind == "nu_ftrl":
            return float(nu_ftrl_gamma_inf_sq(self.nu))
        if self.kind == "anti_pgd":
            return 1.0 / (self.nu * (2.0 - self.nu))
        beta = np.trim_zeros(np.asarray(self.finite_beta, dtype=np.float64), "b")
        roots = np.roots(beta[::-1]) if beta.size > 1 else np.array([])
        if roots.size and np.min(np.abs(roots)) <= 1.0 + 1e-12:
            return math.inf
        # c_t decays like |root_min|^{-t}; sum until negligible.
        rate = 1.0 / np.min(np.abs(roots)) if roots.size else 0.0
        T = 64 if rate == 0.0 else int(min(10**6, 64 + 40.0 / max(-math.log(rate), 1e-6)))
        return self.sensitivity_sq(T)

    # ------------------------------------------------------------------ spectrum
    def spectrum(self, omega: np.ndarray | float) -> np.ndarray:
        r"""Squared modulus :math:`|B(\omega)|^2` of the DTFT of :math:`\beta`.

        ν-FTRL: :math:`|1-\nu-e^{i\omega}|` (Eq. 19 with its square root restored);
        damped anti-PGD: :math:`|1-\nu-e^{i\omega}|^2`; independent: 1.
        """
        w = np.asarray(omega, dtype=np.float64)
        if self.kind == "independent":
            return np.ones_like(w)
        # |1 - nu - e^{iw}|^2 = nu^2 + 4 (1 - nu) sin^2(w/2), no cancellation near w = 0
        mod_sq = self.nu**2 + 4.0 * (1.0 - self.nu) * np.sin(0.5 * w) ** 2
        if self.kind == "nu_ftrl":
            return np.sqrt(mod_sq)
        if self.kind == "anti_pgd":
            return mod_sq
        beta = np.asarray(self.finite_beta, dtype=np.float64)
        t = np.arange(beta.size)
        value = np.exp(-1j * np.multiply.outer(w, t)) @ beta
        return np.abs(value) ** 2

    def label(self) -> str:
        """Human-readable label with the damping."""
        if self.kind in ("nu_ftrl", "anti_pgd") and self.nu > 0:
            return f"{self.name} (nu={self.nu:.3g})"
        return self.name


def _check_T(T: object) -> int:
    if isinstance(T, bool) or not isinstance(T, int | np.integer) or int(T) < 1:
        raise ValueError(f"T (number of steps) must be a positive integer; got {T!r}")
    return int(T)


def _check_nu(nu: object, *, allow_zero: bool = False) -> float:
    try:
        v = float(nu)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"nu must be a number in (0, 1); got {nu!r}") from None
    lo_ok = v >= 0.0 if allow_zero else v > 0.0
    if math.isnan(v) or not lo_ok or v >= 1.0:
        rng = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"nu must lie in {rng}; got nu={nu!r}")
    return v


def independent() -> ToeplitzCorrelation:
    r"""Independent noise :math:`\beta = (1, 0, \dots)`: DP-SGD / Noisy-SGD (Table 3)."""
    return ToeplitzCorrelation("sgd", "independent")


def nu_ftrl(nu: float) -> ToeplitzCorrelation:
    r"""ν-DP-FTRL (Eq. 7): :math:`\beta_t = (-1)^t\binom{1/2}{t}(1-\nu)^t`, :math:`0<\nu<1`.

    Theory uses :math:`\nu \le \eta\mu` (Theorem 2.2); ``nu=0`` is :func:`optimal_cc`.
    """
    return ToeplitzCorrelation("nu_ftrl", "nu_ftrl", _check_nu(nu))


def optimal_cc() -> ToeplitzCorrelation:
    r"""Fichtenberger et al. (2023) "Optimal CC": Eq. 7 with :math:`\nu = 0`.

    :math:`\gamma_T^2 \sim \frac1\pi\log T` and :math:`\gamma_\infty = \infty` (Table 2).
    """
    return ToeplitzCorrelation("optimal_cc", "nu_ftrl", 0.0)


def optimal_mean_estimation(eta: float) -> ToeplitzCorrelation:
    r"""Return the optimal correlation for mean estimation (Theorem 2.1): Eq. 7, ν = η."""
    return ToeplitzCorrelation("optimal_mean_estimation", "nu_ftrl", _check_nu(eta))


def anti_pgd() -> ToeplitzCorrelation:
    r"""Anti-PGD (Orvieto et al. 2022): :math:`\beta = (1, -1, 0, \dots)`.

    Its encoder is all ones, so :math:`\gamma_T^2 = T` and :math:`\gamma_\infty = \infty`.
    """
    return ToeplitzCorrelation("anti_pgd", "anti_pgd", 0.0)


def damped_anti_pgd(nu: float) -> ToeplitzCorrelation:
    r"""Anti-PGD with damping (§C.5): :math:`\beta = (1, -(1-\nu), 0, \dots)`."""
    return ToeplitzCorrelation("damped_anti_pgd", "anti_pgd", _check_nu(nu))


def finite_toeplitz(beta: object, name: str = "finite") -> ToeplitzCorrelation:
    r"""Any finitely supported :math:`\beta` with :math:`\beta_0 \neq 0` (general Toeplitz B)."""
    arr = np.asarray(beta, dtype=np.float64).ravel()
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"beta must be a non-empty finite sequence; got {beta!r}")
    if arr[0] == 0.0:
        raise ValueError("beta[0] must be non-zero (B must be invertible)")
    return ToeplitzCorrelation(name, "finite", 0.0, tuple(float(b) for b in arr))


CORRELATIONS: tuple[str, ...] = (
    "sgd",
    "nu_ftrl",
    "optimal_cc",
    "optimal_mean_estimation",
    "anti_pgd",
    "damped_anti_pgd",
)
"""Names accepted by :func:`correlation_from_name`."""


def correlation_from_name(
    name: str, *, nu: float | None = None, eta: float | None = None
) -> ToeplitzCorrelation:
    """Build a correlation from its name (config entry point).

    Parameters
    ----------
    name : str
        One of :data:`CORRELATIONS`.
    nu : float, optional
        Damping of ``"nu_ftrl"`` and ``"damped_anti_pgd"`` (required there).
    eta : float, optional
        Learning rate of ``"optimal_mean_estimation"`` (required there).

    Returns
    -------
    ToeplitzCorrelation
    """
    if name not in CORRELATIONS:
        raise ValueError(f"correlation must be one of {CORRELATIONS}; got {name!r}")
    if name == "sgd":
        return independent()
    if name == "optimal_cc":
        return optimal_cc()
    if name == "anti_pgd":
        return anti_pgd()
    if name == "optimal_mean_estimation":
        if eta is None:
            raise ValueError("correlation 'optimal_mean_estimation' needs eta")
        return optimal_mean_estimation(eta)
    if nu is None:
        raise ValueError(f"correlation {name!r} needs nu")
    return nu_ftrl(nu) if name == "nu_ftrl" else damped_anti_pgd(nu)
