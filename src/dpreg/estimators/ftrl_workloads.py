r"""Training workloads for the ME factorization: SGD with momentum and a learning-rate cooldown.

Table 3's error (Eq. 3) uses the prefix-sum workload :math:`A` (Eq. 12): the noise of
every step enters every later iterate with weight 1 (SGD with a constant learning rate).
The paper's CIFAR-10 runs (App. G.1, after Choquette-Choo et al. 2023b) train with
momentum 0.95 and "a linear learning rate cooldown [to] 0.05x the initial learning rate
over the last 500 steps" of 2000. Their workload follows from the recursion (noise
:math:`z_s` added to the gradient of step :math:`s`)

.. math::

    m_t = \beta m_{t-1} + g_t, \qquad \theta_{t+1} = \theta_t - \eta_t m_t,
    \qquad m_{-1} = 0,

so :math:`m_t = \sum_{s \le t}\beta^{t-s}z_s` (noise part) and
:math:`\theta_{t+1} - \theta_0 = -\sum_{r \le t}\eta_r m_r = -\sum_{s \le t} z_s
\sum_{r=s}^{t}\eta_r\beta^{r-s}`:

.. math::

    A_{ts} = \sum_{r=s}^{t} \eta_r\,\beta^{\,r-s} \quad (s \le t), \qquad 0 \text{ otherwise},

row :math:`t` being the iterate :math:`\theta_{t+1}` (the sign is irrelevant to
:math:`\|AB\|_F`). With :math:`\eta \equiv 1`,
:math:`A_{ts} = (1 - \beta^{t-s+1})/(1-\beta)`; with :math:`\beta = 0` it is the
prefix-sum matrix. The learning rate is relative to the initial one (a common scale
cancels in every ratio of errors).
"""

from __future__ import annotations

import numpy as np

from dpreg.estimators.ftrl_factorizations import _check_horizon

__all__ = ["PAPER_COOLDOWN", "cooldown_schedule", "momentum_cooldown_workload"]

PAPER_COOLDOWN = {"momentum": 0.95, "cooldown_fraction": 0.25, "final_lr_factor": 0.05}
"""App. G.1 (CIFAR-10): momentum 0.95, linear cooldown to 0.05x over the last 500 of 2000
steps (the fraction 0.25 carries the 500 steps to other horizons)."""


def _fraction(value: object, name: str, *, closed_low: bool) -> float:
    ok = isinstance(value, float | int) and not isinstance(value, bool)
    if ok:
        v = float(value)
        ok = (0 <= v if closed_low else 0 < v) and v <= 1
    if not ok:
        low = "[0" if closed_low else "(0"
        raise ValueError(f"{name} must be in {low}, 1]; got {value!r}")
    return float(value)


def cooldown_schedule(
    T: int, cooldown_fraction: float = 0.25, final_lr_factor: float = 0.05
) -> np.ndarray:
    r"""Learning rates :math:`\eta_0, \dots, \eta_{T-1}` relative to the initial one.

    Constant 1, then a linear decay over the last :math:`n_c =
    \mathrm{round}(\text{cooldown\_fraction}\cdot T)` steps reaching ``final_lr_factor``
    at the last step: :math:`\eta_{T-n_c+i} = 1 - (1 - f)(i+1)/n_c`, :math:`i < n_c`.
    The paper's setting (App. G.1): ``cooldown_fraction = 0.25`` (500 of 2000 steps),
    ``final_lr_factor = 0.05``; ``cooldown_fraction = 0`` is a constant learning rate.

    Examples
    --------
    >>> cooldown_schedule(8, 0.5, 0.2).round(2).tolist()
    [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2]
    """
    T = _check_horizon(T)
    frac = _fraction(cooldown_fraction, "cooldown_fraction", closed_low=True)
    final = _fraction(final_lr_factor, "final_lr_factor", closed_low=False)
    n_c = int(round(frac * T))
    eta = np.ones(T)
    if n_c:
        eta[T - n_c :] = 1.0 - (1.0 - final) * np.arange(1, n_c + 1) / n_c
    return eta


def momentum_cooldown_workload(
    T: int,
    momentum: float = 0.95,
    cooldown_fraction: float = 0.25,
    final_lr_factor: float = 0.05,
) -> np.ndarray:
    r"""Workload :math:`A` (T, T) of SGD with heavy-ball momentum and a linear cooldown.

    :math:`A_{ts} = \sum_{r=s}^{t}\eta_r\beta^{r-s}` (module docstring; tested against a
    direct simulation of the recursion with unit impulses), :math:`\eta` from
    :func:`cooldown_schedule`. Lower triangular with positive diagonal
    :math:`\eta_t`, hence of full rank (what
    :func:`~dpreg.estimators.ftrl_me.solve_me` needs).

    Parameters
    ----------
    T : int
    momentum : float
        :math:`\beta \in [0, 1)` (paper: 0.95).
    cooldown_fraction, final_lr_factor : float
        See :func:`cooldown_schedule` (paper: 0.25, 0.05).

    Examples
    --------
    >>> momentum_cooldown_workload(3, 0.5, 0.0).tolist()
    [[1.0, 0.0, 0.0], [1.5, 1.0, 0.0], [1.75, 1.5, 1.0]]
    """
    eta = cooldown_schedule(T, cooldown_fraction, final_lr_factor)
    if (
        isinstance(momentum, bool)
        or not isinstance(momentum, float | int)
        or not 0 <= float(momentum) < 1
    ):
        raise ValueError(f"momentum must be in [0, 1); got {momentum!r}")
    beta = float(momentum)
    n = len(eta)
    lag = np.subtract.outer(np.arange(n), np.arange(n))  # r - s
    # E[r, s] = eta_r beta^(r - s) for r >= s; A = cumulative sum over r (rows)
    E = np.where(lag >= 0, eta[:, None] * beta ** np.clip(lag, 0, None), 0.0)
    return np.cumsum(E, axis=0)
