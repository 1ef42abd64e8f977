r"""Theorem 3.1's convex program for strongly convex functions, as an SOCP (Fig. 3).

Choquette-Choo et al. (2023), §3 and App. E (Theorem E.1). For a :math:`\mu`-strongly
convex, :math:`L`-smooth :math:`F` and noise :math:`\zeta = Bw` with power spectral
density :math:`S(\omega) = G^2\gamma_\infty^2|B(\omega)|^2/(2\rho) + \sigma_{sgd}^2`,
any :math:`\psi \ge 0` and Zames-Falb multiplier :math:`\lambda` satisfying the
frequency-wise LMI (90)

.. math::

    A(\omega)^*\tilde M_\lambda(\omega)A(\omega) \preceq
    \begin{pmatrix}-\eta^2 & 0\\ 0 & \psi(\omega)\end{pmatrix}

give :math:`\lim\mathbb E\|\theta_t - \theta^\star\|^2 \le
\frac{d}{\eta^2}\frac{1}{2\pi}\int\psi S`, hence (§E.1,
:math:`F - F^\star \le \frac L2\|\cdot\|^2`)

.. math::

    F_\infty \le \frac{Ld}{2\eta^2}\cdot\frac{1}{2\pi}\int_{-\pi}^{\pi}
    \psi(\omega)S(\omega)\,d\omega .

**Normalisation.** This is the bound in the normalisation in which, for
:math:`\mu = L` (a quadratic), it *equals* the exact stationary suboptimality
:math:`\frac L2\mathbb E\|\theta - \theta^\star\|^2` (tested). The displays of Eq. (10),
Theorem E.1 and §E.1 differ from it and from each other by factors of 2 and
:math:`\eta^2` (docs/notes/choquettechoo2023.md §7 item 4); ratios between mechanisms are
unaffected.

**Per-frequency SOC.** Everything is a Kronecker product with :math:`I_d`, so the LMI
is a 2x2 Hermitian condition per :math:`\omega`: with :math:`x + iy = \Lambda(\omega)`,
:math:`c = 1 - e^{i\omega}`, :math:`m_{11} = -2\mu Lx`, :math:`m_{22} = -2x`,
:math:`m_{12} = (\mu+L)x + i(\mu-L)y`, the entries of :math:`M = A^*\tilde MA` are
:math:`M_{11} = \eta^2m_{11} + 2\eta\,\mathrm{Re}(m_{12}c) + |c|^2m_{22}`,
:math:`M_{12} = -\eta^2m_{12} - \eta\bar c\,m_{22}`, :math:`M_{22} = \eta^2m_{22}`, and
(90) is :math:`a = -\eta^2 - M_{11} \ge 0`, :math:`b = \psi - M_{22} \ge 0`,
:math:`ab \ge |M_{12}|^2`, i.e. the cone
:math:`\|(2\mathrm{Re}M_{12}, 2\mathrm{Im}M_{12}, a-b)\|_2 \le a + b`; all affine in
:math:`(\lambda, \psi)`. The conditions at :math:`\pm\omega` are complex conjugates,
so :math:`\omega \in [0, \pi]` suffices.

**Multiplier sign (documented choice).** :math:`\Lambda(\omega) = \sum_{|\tau|\le
T_{max}} s_\tau\lambda_\tau e^{-i\omega\tau}`, :math:`\lambda_\tau \ge 0`:

* ``"standard"`` (default): :math:`s_0 = 1`, :math:`s_{\tau\ne0} = -1`,
  :math:`\sum_{\tau\ne0}\lambda_\tau \le \lambda_0` -- the Zames-Falb / O'Shea
  multiplier valid for all slope-restricted (gradient) maps (Heath & Wills 2005);
* ``"paper"``: :math:`s_\tau = +1`, :math:`\sum_\tau\lambda_\tau \le 2\lambda_0` as
  printed in Theorem E.1, guaranteed only for odd nonlinearities.

Both coincide for :math:`T_{max} = 0` (the circle criterion), the default.

**Discretisation.** :math:`\psi` is piecewise constant on a grid of :math:`[0, \pi]`
(the paper: :math:`k` uniform points, :math:`k = 1000`); :func:`frequency_grid` adds
log-spaced points near 0, where the resonance of width :math:`\eta\mu` sits.

**Optimised correlation.** Given :math:`\psi`, :math:`\min_B\gamma_\infty^2(B)\int
|B|^2\psi = \frac1{2\pi}(\int\sqrt\psi)^2` at :math:`|B|^2 \propto \psi^{-1/2}`
(Cauchy-Schwarz); alternating this with the SOCP in :math:`\psi` is the paper's
"Optimized" curve.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpreg.estimators.ftrl_correlations import independent, nu_ftrl
from dpreg.theory.ftrl import lti_suboptimality

__all__ = [
    "CONVERGED",
    "MECHANISMS",
    "MULTIPLIERS",
    "SocpBound",
    "SCS_MAX_ITERS",
    "SocpProblem",
    "frequency_grid",
    "socp_curve",
]

MULTIPLIERS: tuple[str, ...] = ("standard", "paper")
MECHANISMS: tuple[str, ...] = ("sgd", "nu_ftrl", "optimized")
SOLVERS: tuple[str, ...] = ("CLARABEL", "SCS")

SCS_MAX_ITERS = 20_000
r"""Iteration cap of SCS (tolerances 1e-9). Where the optimum is attained SCS needs 475 to
3,625 iterations on Fig. 3's grid (κ = 10, 100); at κ = 1 the infimum needs
:math:`\lambda_0 \to \infty`, so no cap is enough (200,000 iterations still stopped
``optimal_inaccurate``): a solve that stops at the cap is reported with its status, and
a cross-check counts only with status ``optimal`` (:data:`CONVERGED`; issue 18)."""

CONVERGED = "optimal"
"""cvxpy status of a converged solve (``optimal_inaccurate`` is not)."""


def frequency_grid(
    scale: float, *, n_uniform: int = 200, n_log: int = 200
) -> tuple[np.ndarray, np.ndarray]:
    r"""Nodes on :math:`[0, \pi]` and the widths of their cells (summing to :math:`\pi`).

    ``n_uniform`` uniform nodes plus ``n_log`` nodes log-spaced from ``scale / 100`` to
    1 (``scale`` = :math:`\eta\mu`, the width of the resonance at :math:`\omega = 0`).
    Cells are bounded by the midpoints between neighbouring nodes.
    """
    if not scale > 0:
        raise ValueError(f"scale must be > 0; got {scale!r}")
    uniform = (np.arange(n_uniform) + 0.5) * (np.pi / n_uniform)
    log = np.geomspace(min(scale / 100.0, 0.5), 1.0, n_log) if n_log > 0 else np.array([])
    nodes = np.unique(np.concatenate([uniform, log]))
    edges = np.concatenate([[0.0], 0.5 * (nodes[1:] + nodes[:-1]), [np.pi]])
    return nodes, np.diff(edges)


@dataclass(frozen=True)
class SocpBound:
    """One solved bound: value, the certificate and the solver status."""

    bound: float
    psi: np.ndarray
    lam: np.ndarray
    status: str


class SocpProblem:
    r"""The discretised program for fixed :math:`(\mu, L, \eta)`, compiled once.

    The objective weights :math:`S(\omega_j)` are a cvxpy parameter, so the SGD,
    ν-FTRL and every "Optimized" iteration reuse one compiled problem.

    Parameters
    ----------
    mu, L : float
        Strong convexity and smoothness, :math:`0 < \mu \le L`.
    eta : float
        Learning rate, :math:`0 < \eta \le 1/L` is the useful range.
    omega, widths : ndarray
        Grid of :func:`frequency_grid`.
    t_max : int
        Support :math:`T_{max}` of the multiplier.
    multiplier : {"standard", "paper"}
        Sign convention (module docstring).
    d : int
        Dimension (the bound is linear in it).
    """

    def __init__(
        self,
        *,
        mu: float,
        L: float,
        eta: float,
        omega: np.ndarray,
        widths: np.ndarray,
        t_max: int = 0,
        multiplier: str = "standard",
        d: int = 1,
    ) -> None:
        import cvxpy as cp

        if not (0 < mu <= L) or not math.isfinite(L):
            raise ValueError(f"need 0 < mu <= L < inf; got mu={mu!r}, L={L!r}")
        if not eta > 0:
            raise ValueError(f"eta must be > 0; got {eta!r}")
        if multiplier not in MULTIPLIERS:
            raise ValueError(f"multiplier must be one of {MULTIPLIERS}; got {multiplier!r}")
        if int(t_max) != t_max or t_max < 0:
            raise ValueError(f"t_max must be an integer >= 0; got {t_max!r}")
        self.mu, self.L, self.eta, self.d = float(mu), float(L), float(eta), int(d)
        self.omega, self.widths = np.asarray(omega, float), np.asarray(widths, float)
        taus = np.arange(-t_max, t_max + 1)
        signs = np.ones(taus.size) if multiplier == "paper" else np.where(taus == 0, 1.0, -1.0)
        cos_w, sin_w = np.cos(self.omega), np.sin(self.omega)
        Cx = np.cos(np.outer(self.omega, taus)) * signs  # x = Re Lambda = Cx @ lam
        Cy = -np.sin(np.outer(self.omega, taus)) * signs  # y = Im Lambda = Cy @ lam
        e = self.eta
        one_c = 1.0 - cos_w
        alpha = -2 * e * e * mu * L + 2 * e * (mu + L) * one_c - 4.0 * one_c
        A_a = alpha[:, None] * Cx + (2 * e * (mu - L) * sin_w)[:, None] * Cy  # M11
        A_re = (-e * e * (mu + L) + 2 * e * one_c)[:, None] * Cx
        A_im = (2 * e * sin_w)[:, None] * Cx - e * e * (mu - L) * Cy
        A_22 = -2 * e * e * Cx  # M22
        k = self.omega.size
        # Scaling for conditioning: psi = s_j psi~ with s_j = eta^4 / |1 - eta mu - e^{iw}|^2
        # (the exact psi of the curvature-mu quadratic), lambda = lam~ / (mu L), and each
        # cone rescaled to (a / eta^2, b / s_j, M12 / (eta sqrt(s_j))), which leaves
        # a >= 0, b >= 0, ab >= |M12|^2 unchanged.
        c = e * mu
        self._psi_scale = e**4 / (c * c + 4.0 * (1.0 - c) * np.sin(0.5 * self.omega) ** 2)
        lam_scale = 1.0 / (mu * L)
        self._lam_scale = lam_scale
        self._lam = cp.Variable(taus.size, nonneg=True)
        self._psi = cp.Variable(k, nonneg=True)
        self._weights = cp.Parameter(k, nonneg=True)
        root = np.sqrt(self._psi_scale)
        a = (-e * e - lam_scale * A_a @ self._lam) / (e * e)
        b = self._psi - (lam_scale * A_22 / self._psi_scale[:, None]) @ self._lam
        re = (lam_scale * A_re / (e * root[:, None])) @ self._lam
        im = (lam_scale * A_im / (e * root[:, None])) @ self._lam
        stacked = cp.vstack([2 * re, 2 * im, a - b])
        zero = int(np.flatnonzero(taus == 0)[0])
        # standard: sum_{tau != 0} lam <= lam_0; paper: sum_tau lam <= 2 lam_0. Both
        # read sum_tau lam <= 2 lam_0; the conventions differ only in the signs s_tau.
        lam_constraint = cp.sum(self._lam) <= 2 * self._lam[zero]
        self._problem = cp.Problem(
            cp.Minimize(self._weights @ self._psi),
            [cp.SOC(a + b, stacked, axis=0), lam_constraint],
        )
        self.scale = self.L * self.d / (2.0 * self.eta**2 * math.pi)

    def solve(self, spectral_density: np.ndarray, *, solver: str = "CLARABEL") -> SocpBound:
        r"""Bound for noise with density :math:`S(\omega_j)` (``spectral_density``, (k,))."""
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}; got {solver!r}")
        S = np.asarray(spectral_density, dtype=np.float64)
        if S.shape != self.omega.shape or np.any(S < 0) or not np.all(np.isfinite(S)):
            raise ValueError("spectral_density must be finite, >= 0, one value per node")
        raw = S * self.widths * self._psi_scale
        norm = float(raw.sum()) or 1.0
        self._weights.value = raw / norm
        kwargs = (
            {"max_iters": SCS_MAX_ITERS, "eps_abs": 1e-9, "eps_rel": 1e-9}
            if solver == "SCS"
            else {}
        )
        self._problem.solve(solver=solver, **kwargs)
        value = self._problem.value
        if value is None or not np.isfinite(value):
            return SocpBound(
                math.inf,
                np.full(self.omega.size, np.nan),
                np.full(self._lam.size, np.nan),
                str(self._problem.status),
            )
        psi = np.asarray(self._psi.value) * self._psi_scale
        lam = np.asarray(self._lam.value) * self._lam_scale
        return SocpBound(self.scale * norm * float(value), psi, lam, str(self._problem.status))

    def exact_quadratic(self, mechanism: str, *, nu: float, rho: float, clip: float) -> float:
        """Exact stationary value for the quadratic with curvature ``L`` (valid at mu = L)."""
        corr = independent() if mechanism == "sgd" else nu_ftrl(nu)
        return self.d * lti_suboptimality(corr, np.array([self.L]), self.eta, rho=rho, clip=clip)


def _density(
    gamma_sq: float, spec: np.ndarray, rho: float, clip: float, sigma_sgd: float
) -> np.ndarray:
    return clip**2 * gamma_sq * spec / (2.0 * rho) + sigma_sgd**2


def socp_curve(
    kappas: Sequence[float],
    *,
    L: float = 1.0,
    eta: float = 0.5,
    rho: float = 1.0,
    clip: float = 1.0,
    sigma_sgd: float = 0.0,
    mechanisms: Sequence[str] = MECHANISMS,
    t_max: int = 0,
    multiplier: str = "standard",
    n_uniform: int = 200,
    n_log: int = 200,
    optimize_iterations: int = 5,
    solver: str = "CLARABEL",
) -> pd.DataFrame:
    r"""Fig. 3: the bound of Theorem 3.1 against :math:`\kappa = L/\mu` per mechanism.

    ν-FTRL uses :math:`\nu = \eta\mu` (the theory's choice; Fig. 3 does not state it).
    "optimized" starts from the ν-FTRL certificate and alternates
    :math:`|B|^2 \propto \psi^{-1/2}` with the SOCP ``optimize_iterations`` times,
    keeping the best bound. At :math:`\kappa = 1` the column ``exact`` holds the exact
    quadratic value the bound must equal.

    Returns
    -------
    DataFrame
        ``kappa, mu, mechanism, bound, ratio_to_sgd, status, exact, nu, iterations``.
    """
    rows = []
    for kappa in kappas:
        mu = L / float(kappa)
        omega, widths = frequency_grid(eta * mu, n_uniform=n_uniform, n_log=n_log)
        prob = SocpProblem(
            mu=mu, L=L, eta=eta, omega=omega, widths=widths, t_max=t_max, multiplier=multiplier
        )
        nu = eta * mu
        results: dict[str, SocpBound] = {}
        iters: dict[str, int] = {}
        needs_ftrl = "nu_ftrl" in mechanisms or "optimized" in mechanisms
        if "sgd" in mechanisms:
            results["sgd"] = prob.solve(
                _density(1.0, np.ones_like(omega), rho, clip, sigma_sgd), solver=solver
            )
        if needs_ftrl and nu < 1:
            corr = nu_ftrl(nu)
            results["nu_ftrl"] = prob.solve(
                _density(corr.gamma_inf_sq, corr.spectrum(omega), rho, clip, sigma_sgd),
                solver=solver,
            )
        elif needs_ftrl:  # nu = 1: nu-FTRL is SGD
            results["nu_ftrl"] = prob.solve(
                _density(1.0, np.ones_like(omega), rho, clip, sigma_sgd), solver=solver
            )
        if "optimized" in mechanisms:
            best = results["nu_ftrl"]
            current = best
            n_done = 0
            for _ in range(optimize_iterations):
                psi = np.maximum(current.psi, 1e-300)
                if not np.all(np.isfinite(psi)):
                    break
                spec = psi**-0.5
                spec /= spec.max()
                gamma_sq = float(np.sum(widths / spec) / math.pi)
                current = prob.solve(_density(gamma_sq, spec, rho, clip, sigma_sgd), solver=solver)
                n_done += 1
                if current.bound < best.bound:
                    best = current
            results["optimized"] = best
            iters["optimized"] = n_done
        sgd_bound = results["sgd"].bound if "sgd" in results else math.nan
        for mech in mechanisms:
            res = results[mech]
            exact = math.nan
            if float(kappa) == 1.0:
                # quadratic: Theorem 2.1's optimum is nu-FTRL with nu = eta L
                exact = (
                    prob.exact_quadratic("sgd", nu=nu, rho=rho, clip=clip)
                    if mech == "sgd" or nu >= 1
                    else prob.exact_quadratic("nu_ftrl", nu=nu, rho=rho, clip=clip)
                )
            rows.append(
                {
                    "kappa": float(kappa),
                    "mu": mu,
                    "L": L,
                    "eta": eta,
                    "mechanism": mech,
                    "bound": res.bound,
                    "ratio_to_sgd": res.bound / sgd_bound,
                    "status": res.status,
                    "exact": exact,
                    "nu": nu if mech == "nu_ftrl" else math.nan,
                    "iterations": iters.get(mech, 0),
                    "t_max": t_max,
                    "multiplier": multiplier,
                    "grid_points": omega.size,
                    "solver": solver,
                }
            )
    return pd.DataFrame(rows)
