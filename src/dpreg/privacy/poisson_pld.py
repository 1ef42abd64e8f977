r"""The PLD epsilon of composed Poisson-subsampled Gaussians, its grid inverted as arrays.

``dp-accounting``'s ``PLDAccountant`` (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi
2022, "Connect the dots"; add-or-remove-one neighbours) builds the privacy loss
distribution of one Poisson-subsampled Gaussian step for each adjacency direction: at
every grid loss :math:`\varepsilon_i = i\,\Delta` of its range (:math:`\Delta` the
discretisation interval) it inverts the privacy loss,

.. math::

    x_i = -\tfrac12 s - \sigma^2\,\ell_i / s \;(+\,s\ \text{for ADD}),\qquad
    \ell_i = \pm\log\bigl(1 + (e^{\pm\varepsilon_i} - 1)/q\bigr),

and takes the hockey-stick divergence at :math:`x_i` (its ``get_delta_for_epsilon``),
then self-composes the distribution :math:`T` times and reads the epsilon at
:math:`\delta`. The inversion is one scalar Python call per grid point (about 17,000 per
direction at :math:`\sigma \approx 1`, :math:`\Delta = 10^{-3}`; 1.75 million in the
five calibrations of ``cc_fig4_digits``, a third of their time; issue 18).
:func:`poisson_pld_epsilon` computes the same :math:`\ell_i` and :math:`x_i` as array
expressions (:func:`losses_without_subsampling`: the same numpy ufuncs and IEEE
operations per element, in the same order) and leaves everything else (tails, the
connect-the-dots PMF, the composition, the epsilon) to ``dp-accounting``'s own code,
called as its accountant calls it, so the returned float is the accountant's, bit for
bit (``tests/unit/test_poisson_pld.py``; :func:`poisson_pld_epsilon_full` is the
accountant, the reference).
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

__all__ = [
    "losses_without_subsampling",
    "poisson_pld_epsilon",
    "poisson_pld_epsilon_full",
]


def poisson_pld_epsilon_full(
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    delta: float,
    value_discretization_interval: float,
) -> float:
    """Epsilon of a fresh ``PLDAccountant`` (the reference for :func:`poisson_pld_epsilon`)."""
    import dp_accounting
    from dp_accounting.pld import PLDAccountant

    acc = PLDAccountant(value_discretization_interval=value_discretization_interval)
    event = dp_accounting.PoissonSampledDpEvent(
        sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier)
    )
    acc.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    return float(acc.get_epsilon(delta))


def _loss_without_subsampling(privacy_loss: float, q: float, add: bool) -> float:
    """``dp-accounting``'s ``_inverse_privacy_loss_add``/``_remove`` up to the unsampled inverse.

    Returns the loss whose unsampled inverse is the subsampled inverse at
    ``privacy_loss`` (``inf`` or ``-inf`` where ``dp-accounting`` inverts those); the same
    scalar operations in the same order (dp-accounting 0.4.4 to 0.6). The reference of
    :func:`losses_without_subsampling`.
    """
    from dp_accounting.pld import common

    if q == 1.0:
        return privacy_loss
    if add:
        if math.isclose(privacy_loss, -math.log(1 - q)):
            return math.inf
        if privacy_loss > -math.log(1 - q):
            raise ValueError(f"privacy_loss ({privacy_loss}) is above -log(1 - q)")
        return -common.log_a_times_exp_b_plus_c(1 / q, -privacy_loss, 1 - 1 / q)
    if math.isclose(privacy_loss, math.log(1 - q)):
        return -math.inf
    if privacy_loss <= math.log(1 - q):
        raise ValueError(f"privacy_loss ({privacy_loss}) is at most log(1 - q)")
    return common.log_a_times_exp_b_plus_c(1 / q, privacy_loss, 1 - 1 / q)


def _isclose(values: np.ndarray, target: float) -> np.ndarray:
    """``math.isclose(value, target)`` (rel_tol 1e-9, abs_tol 0) per finite value."""
    diff = np.abs(target - values)
    return (values == target) | (diff <= abs(1e-9 * target)) | (diff <= np.abs(1e-9 * values))


def losses_without_subsampling(epsilons: np.ndarray, q: float, add: bool) -> np.ndarray:
    """:func:`_loss_without_subsampling` at each of ``epsilons``, as array operations.

    For ``0 < q < 1`` and finite losses, ``log_a_times_exp_b_plus_c(1/q, b, 1 - 1/q)``
    of ``dp-accounting`` is ``b + log(1/q)`` followed by its ``_log_sub`` against
    ``log(1/q - 1)`` (``1 - 1/q < 0``), or ``log(1/q + 1 - 1/q)`` where ``b == 0``: the
    same numpy ufuncs (``log``, ``exp``, ``log1p``; numpy's loop for an array and for a
    scalar is one function, so the same float per element) and the same IEEE additions.
    Anything else (``q = 1``, ``1 - 1/q`` not negative, a loss that is not finite) takes
    the scalar reference per element.
    """
    eps = np.asarray(epsilons, dtype=np.float64)
    a = 1 / q
    c = 1 - 1 / q
    if not (0 < q < 1 and c < 0 and np.all(np.isfinite(eps))):
        return np.array([_loss_without_subsampling(e, q, add) for e in eps.tolist()], dtype=float)
    bound = -math.log(1 - q) if add else math.log(1 - q)
    close = _isclose(eps, bound)
    refused = (eps > bound) if add else (eps <= bound)
    if np.any(refused & ~close):
        raise ValueError(f"a privacy loss beyond the subsampled range ({bound})")
    b = -eps if add else eps
    d = b + np.log(a)
    log_minus_c = np.log(-c)
    zero = b == 0
    if np.any((log_minus_c >= d) & ~zero & ~close):
        raise ValueError("a must be greater than b")  # dp-accounting's _log_sub refuses
    with np.errstate(invalid="ignore", divide="ignore"):
        out = d + np.log1p(-np.exp(log_minus_c - d))
    out[zero] = np.log(a + c)
    if add:
        out = -out
    out[close] = math.inf if add else -math.inf
    return out


@functools.cache
def _array_gaussian_loss_class():
    """``GaussianPrivacyLoss`` whose ``get_delta_for_epsilon`` inverts as arrays."""
    from dp_accounting.pld import privacy_loss_mechanism as plm

    class _ArrayInverseGaussianLoss(plm.GaussianPrivacyLoss):
        def get_delta_for_epsilon(self, epsilon):
            # dp-accounting's AdditiveNoisePrivacyLoss.get_delta_for_epsilon, with the
            # per-point inverse_privacy_loss of the ADD / REMOVE types done as array
            # operations: the loss without subsampling, then the unsampled inverse.
            is_scalar = isinstance(epsilon, numbers.Number)
            epsilons = np.array([epsilon]) if is_scalar else np.asarray(epsilon)
            deltas = np.zeros_like(epsilons, dtype=float)
            add = self.adjacency_type == plm.AdjacencyType.ADD
            if self.sampling_prob == 1.0:
                inverse_indices = np.full_like(epsilons, True, dtype=bool)
            elif add:
                inverse_indices = epsilons < -math.log1p(-self.sampling_prob)
            else:
                inverse_indices = epsilons > math.log1p(-self.sampling_prob)
                other_indices = np.logical_not(inverse_indices)
                deltas[other_indices] = -np.expm1(epsilons[other_indices])
            losses = losses_without_subsampling(epsilons[inverse_indices], self.sampling_prob, add)
            if add:
                x_cutoffs = self._inverse_privacy_loss_without_subsampling_add(losses)
            else:
                x_cutoffs = self._inverse_privacy_loss_without_subsampling_remove(losses)
            x_cutoffs = np.asarray(x_cutoffs, dtype=np.float64)
            deltas[inverse_indices] = self.mu_upper_cdf(x_cutoffs) - np.exp(
                epsilons[inverse_indices] + self.mu_lower_log_cdf(x_cutoffs)
            )
            deltas = np.clip(deltas, 0, 1)
            return float(deltas[0]) if is_scalar else deltas

    return _ArrayInverseGaussianLoss


def poisson_pld_epsilon(
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    delta: float,
    value_discretization_interval: float,
) -> float:
    """:func:`poisson_pld_epsilon_full`'s float, the grid's inversion as array operations.

    The accountant's construction (``from_gaussian_mechanism`` with its defaults:
    sensitivity 1, pessimistic, truncation :math:`e^{-50}`, connect-the-dots; the
    composition with the identity PLD; ``get_epsilon_for_delta``) with
    ``GaussianPrivacyLoss.get_delta_for_epsilon`` as in the module docstring. Outside
    ``noise_multiplier > 0``, ``0 < sampling_rate <= 1`` (where the accountant takes
    other branches) it is :func:`poisson_pld_epsilon_full`.
    """
    if not (noise_multiplier > 0 and 0 < sampling_rate <= 1):
        return poisson_pld_epsilon_full(
            noise_multiplier, sampling_rate, steps, delta, value_discretization_interval
        )
    from dp_accounting.pld import privacy_loss_distribution as pld_module

    loss_class = _array_gaussian_loss_class()
    interval = value_discretization_interval

    def single(adjacency_type):
        return pld_module._create_pld_pmf_from_monotone_privacy_loss(
            loss_class(
                noise_multiplier,
                sensitivity=1,
                pessimistic_estimate=True,
                log_mass_truncation_bound=-50,
                sampling_prob=sampling_rate,
                adjacency_type=adjacency_type,
            ),
            pessimistic_estimate=True,
            value_discretization_interval=interval,
            use_connect_dots=True,
        )

    pld = pld_module._pld_for_subsampled_mechanism(single, sampling_rate).self_compose(steps)
    composed = pld_module.identity(value_discretization_interval=interval).compose(pld)
    return float(composed.get_epsilon_for_delta(delta))
