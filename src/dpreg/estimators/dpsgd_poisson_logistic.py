r"""DP-SGD with amplification by Poisson sampling for multinomial logistic regression.

The baseline of Choquette-Choo et al. (2023) §4 / Fig. 4 ("DP-SGD with amplification"):
each of the :math:`T` steps includes every training row independently with probability
:math:`q = b/n` (Poisson sampling), clips each per-example gradient
:math:`x(\mathrm{softmax}(W^\top x) - e_y)^\top` to Frobenius norm :math:`G`, adds
:math:`\mathcal N(0, \sigma^2G^2 I)` to the sum and divides by the *expected* batch size
:math:`b` (a data-independent normaliser):

.. math::

    W_{t+1} = W_t - \eta\,v_t,\qquad v_t = \mu v_{t-1} + \frac1b\Big(\sum_{i\in S_t}
    \mathrm{clip}(\cdot, G) + \sigma G w_t\Big).

:math:`\sigma` is calibrated for the :math:`T` compositions of the Poisson-subsampled
Gaussian with ``dp-accounting`` (PLD or RDP;
:func:`~dpreg.estimators.ambssgd_privacy.calibrate_poisson_dpsgd`, shared with
``dp_sgd_poisson``) under **add-or-remove-one** neighbours, the relation of amplification
by sampling (the DP-FTRL arms are zero-out, App. A.2: a zero-out neighbour is an
add-or-remove pair composed with a null row, so the two relations give guarantees of the
same strength for the comparison, as in the paper). The certified :math:`\varepsilon` is
recomputed from the :math:`\sigma` actually used. :math:`n` (hence :math:`q` and
:math:`T = E\lfloor n/b\rfloor`, the step count of the DP-FTRL arms) is treated as public,
as in the paper: the caller declares it as ``n_public`` (never read off the data: under
add-or-remove-one neighbours the row count is private, and computing :math:`q` or
:math:`T` from ``len(X)`` would let one row change the mechanism, as ``dp_sgd_poisson``
documents). The data may have any number of rows.

Vectorised over trials: every step draws each trial's Poisson batch as padded positions
with a mask (:func:`~dpreg.estimators.dpsgd_poisson.poisson_positions`); padding rows
contribute zero gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpreg._validation import (
    check_matrix,
    check_positive,
    check_rng,
    check_row_norm_bound,
    check_trials,
)
from dpreg.estimators.ambssgd_privacy import (
    ACCOUNTANTS,
    calibrate_poisson_dpsgd,
    poisson_dpsgd_epsilon,
)
from dpreg.estimators.dpsgd_poisson import poisson_positions
from dpreg.estimators.ftrl import check_epochs
from dpreg.estimators.ftrl_logistic import (
    ClassifierFit,
    _check_labels,
    _check_momentum,
    clipped_gradient_sum,
    momentum_step,
)
from dpreg.estimators.ftrl_workloads import cooldown_schedule
from dpreg.privacy.budgets import ApproxDP, check_approx_dp_budget

__all__ = ["train_dp_sgd_poisson_logistic"]


def train_dp_sgd_poisson_logistic(
    X: np.ndarray,
    labels: np.ndarray,
    *,
    n_classes: int,
    budget: ApproxDP,
    rng: np.random.Generator,
    trials: int = 1,
    eta: float,
    clip: float,
    batch_size: int,
    epochs: int = 1,
    momentum: float = 0.0,
    cooldown_fraction: float = 0.0,
    final_lr_factor: float = 0.05,
    bound_X: float | None = None,
    n_public: int,
    accountant: str = "pld",
) -> ClassifierFit:
    r"""Train a multinomial logistic regression with Poisson-sampled DP-SGD (amplified).

    See the module docstring for the update and the accounting.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Features (row norms checked against ``bound_X`` if given).
    labels : array_like of int, shape (n,)
        Classes in ``[0, n_classes)``.
    n_classes : int
        Number of classes :math:`K \ge 2`.
    budget : ApproxDP
        Target :math:`(\varepsilon, \delta)` per trial (add-or-remove-one neighbours).
    rng : numpy.random.Generator
        Source of the batches and the noise.
    trials : int
        Independent runs, vectorised.
    eta : float
        Learning rate.
    clip : float
        Per-example clip norm :math:`G` (finite).
    batch_size : int
        Expected batch size :math:`b`; :math:`q = b / n`.
    epochs : int
        :math:`E`: :math:`T = E\lfloor n/b\rfloor` steps.
    momentum : float
        Heavy-ball momentum in [0, 1) (post-processing).
    cooldown_fraction, final_lr_factor : float
        Learning-rate cooldown, as in
        :func:`~dpreg.estimators.ftrl_logistic.train_dp_ftrl_logistic` (public,
        post-processing; ``0``: constant).
    bound_X : float, optional
        Public bound on the row norms, checked.
    n_public : int
        The public number of rows :math:`n` (declared, not read off ``X``).
    accountant : {"pld", "rdp"}
        ``dp-accounting`` accountant of the calibration and the certificate.

    Returns
    -------
    ClassifierFit
        ``weights`` (trials, d, n_classes); ``budget_spent`` the certified
        :math:`(\varepsilon, \delta)`; ``diagnostics`` ``noise_multiplier``,
        ``sampling_rate``, ``steps``, ``epochs``, ``accountant``, ``epsilon_certified``,
        ``neighbours`` (``"add_remove"``); non-private ``clip_fraction`` and
        ``mean_batch`` (realised batch size).

    Raises
    ------
    ValueError
        For bad input, naming the argument.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 0.3, size=(200, 4))
    >>> labels = (X[:, 0] > X[:, 1]).astype(int)
    >>> fit = train_dp_sgd_poisson_logistic(X, labels, n_classes=2,
    ...     budget=ApproxDP(4.0, 1e-5), rng=rng, trials=3, eta=1.0, clip=1.0,
    ...     batch_size=20, epochs=2, n_public=200, accountant="rdp")
    >>> fit.weights.shape, fit.diagnostics["steps"], fit.diagnostics["sampling_rate"]
    ((3, 4, 2), 20, 0.1)
    >>> fit.budget_spent.epsilon <= 4.0
    True
    """
    X = check_matrix(X, "X")
    n, d = X.shape
    if isinstance(n_classes, bool) or not isinstance(n_classes, int | np.integer) or n_classes < 2:
        raise ValueError(f"n_classes must be an integer >= 2; got {n_classes!r}")
    n_classes = int(n_classes)
    labels = _check_labels(labels, n, n_classes)
    if bound_X is not None:
        check_row_norm_bound(X, bound_X, "X", "bound_X")
    epsilon, delta = check_approx_dp_budget(budget)
    check_rng(rng)
    eta = check_positive(eta, "eta")
    clip = check_positive(clip, "clip")
    momentum = _check_momentum(momentum)
    epochs = check_epochs(epochs)
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}; got {accountant!r}")
    n_pub = check_trials(n_public, name="n_public")
    batch_size = check_trials(batch_size, name="batch_size")
    if batch_size > n_pub:
        raise ValueError(f"batch_size={batch_size} exceeds the public number of rows {n_pub}")
    trials = check_trials(trials, bytes_per_trial=8 * (4 * d * n_classes + 4 * batch_size))
    q = batch_size / n_pub
    T = epochs * (n_pub // batch_size)
    sigma = calibrate_poisson_dpsgd(epsilon, delta, q, T, accountant)
    onehot = np.eye(n_classes)[labels]
    x_norm = np.linalg.norm(X, axis=1)
    W = np.zeros((trials, d, n_classes))
    velocity = np.zeros_like(W) if momentum > 0 else None
    schedule = eta * cooldown_schedule(T, cooldown_fraction, final_lr_factor)
    clipped = np.zeros(trials)
    sampled = np.zeros(trials)
    for t in range(T):
        idx, mask = poisson_positions(n, q, trials, rng)
        grad, n_clipped = clipped_gradient_sum(X, onehot, x_norm, idx, W, clip, mask)
        clipped += n_clipped
        sampled += mask.sum(axis=1)
        grad += rng.standard_normal(grad.shape) * (sigma * clip)
        grad /= batch_size
        W -= schedule[t] * momentum_step(velocity, grad, momentum)
    epsilon_certified = poisson_dpsgd_epsilon(sigma, q, T, delta, accountant)
    diagnostics: dict[str, Any] = {
        "noise_multiplier": sigma,
        "sampling_rate": q,
        "steps": T,
        "epochs": epochs,
        "batch_size": batch_size,
        "clip": clip,
        "eta": eta,
        "momentum": momentum,
        "cooldown_fraction": float(cooldown_fraction),
        "final_lr_factor": float(final_lr_factor),
        "accountant": accountant,
        "epsilon_certified": epsilon_certified,
        "neighbours": "add_remove",
        "correlation": "sgd_amplified",
    }
    return ClassifierFit(
        weights=W,
        budget_spent=ApproxDP(epsilon_certified, delta),
        diagnostics=diagnostics,
        nonprivate_diagnostics={
            "clip_fraction": clipped / np.maximum(sampled, 1.0),
            "mean_batch": sampled / T,
        },
    )
