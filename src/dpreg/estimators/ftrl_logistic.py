r"""Multi-epoch DP-FTRL / DP-SGD for multinomial logistic regression (a classifier).

Choquette-Choo et al. (2023), Algorithm 1 with a Toeplitz noise correlation (Eq. 13)
applied to a model that is learned, not to a quadratic: the scaled-down analogue of the
paper's Fig. 4 (docs/choquettechoo2023.md). The released weights
:math:`W \in \mathbb R^{d\times K}` follow

.. math::

    W_{t+1} = W_t - \eta\Big(\frac1b\sum_{i\in\text{batch}_t}
    \mathrm{clip}\big(x_i(\mathrm{softmax}(W_t^\top x_i) - e_{y_i})^\top, G\big)
    + \frac{\sigma_{dp}G}{b}\sum_{\tau\le t}\beta_\tau w_{t-\tau}\Big),
    \qquad w_\tau \sim \mathcal N(0, I_{d\times K}),

with :math:`T = E\lfloor n/b\rfloor` steps: ``epochs`` :math:`E` passes over the rows in
one order drawn before the first epoch (the fixed-epoch participation schema, each row in
:math:`E` batches :math:`\lfloor n/b\rfloor` steps apart). Per-example gradients are
clipped in Frobenius norm at the public :math:`G`.

Everything about the noise and the privacy is the project's DP-FTRL stream, not a copy:
the correlation (:func:`~dpreg.estimators.ftrl.resolve_correlation`), the multi-epoch
sensitivity and the noise multiplier (:func:`~dpreg.estimators.ftrl.stream_calibration`,
i.e. :func:`~dpreg.estimators.ftrl.multi_epoch_sensitivity_sq` and
:func:`~dpreg.privacy.correlated.ftrl_noise_multiplier`), the noise
(:func:`~dpreg.estimators.ftrl.stream_noise`) and the certificate
(:func:`~dpreg.estimators.ftrl.stream_certificate`). The release is post-processing of
the Gaussian mechanism :math:`C(\sum_{i\in\text{batch}_t}\mathrm{clip}(\cdot))_t + w`;
under zero-out neighbours a row changes its :math:`E` batch sums by at most :math:`G`
each (any direction in :math:`\mathbb R^{d\times K}`), whatever the model, so the
sensitivity of the linear-regression stream carries over unchanged.

The noise may also come from a Table 3 factorization built for the run's :math:`T` (ME,
TreeAgg, FFT), whose fixed-epoch sensitivity is computed from its encoder by the same
helper; ``momentum`` applies heavy-ball momentum to the noisy gradients (post-processing).
DP-SGD with amplification by Poisson sampling, the paper's baseline, is
:mod:`dpreg.estimators.dpsgd_poisson_logistic` (same gradients:
:func:`clipped_gradient_sum`).

This is a classifier (integer labels, weights of shape ``(trials, d, classes)``), not a
regression estimator of the registry's contract (``docs/architecture.md``), so it is a
library function used by the study kind ``ftrl_digits``
(:mod:`dpreg.experiments.choquettechoo2023_digits`), not in ``ESTIMATORS``.
"""

from __future__ import annotations

import contextlib
import math
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpreg._validation import (
    check_choice,
    check_matrix,
    check_positive,
    check_rng,
    check_row_norm_bound,
    check_trials,
)
from dpreg.estimators.ftrl import (
    MAX_STEPS,
    check_epochs,
    resolve_correlation,
    stream_calibration,
    stream_certificate,
    stream_noise,
)
from dpreg.estimators.ftrl_correlations import ToeplitzCorrelation
from dpreg.estimators.ftrl_factorizations import FFTFactorization, MatrixFactorization
from dpreg.estimators.ftrl_workloads import cooldown_schedule
from dpreg.estimators.permutations import uniform_key_permutations
from dpreg.privacy.budgets import ZCDP, ApproxDP
from dpreg.privacy.conversions import CONVERSIONS, DEFAULT_CONVERSION
from dpreg.privacy.correlated import CALIBRATIONS, NEIGHBOURS

__all__ = [
    "ClassifierFit",
    "clipped_gradient_sum",
    "momentum_step",
    "noise_replay",
    "replayed_stream_noise",
    "softmax_accuracy",
    "train_dp_ftrl_logistic",
]


REPLAY_MAX_BYTES = 1 << 27
"""Bytes of unscaled stream noise :func:`replayed_stream_noise` keeps (128 MiB: the five
epsilons of one ``ftrl_digits`` method at 20 trials take 91 MB)."""

_NOISE_REPLAY: list[OrderedDict[tuple[Any, ...], tuple[Any, np.ndarray, dict[str, Any]]]] = []
"""The open :func:`noise_replay` block's draws, oldest first: key -> (corr, noise,
generator state after the draws); empty outside a block."""


@contextlib.contextmanager
def noise_replay() -> Iterator[None]:
    """Within the block, :func:`train_dp_ftrl_logistic` replays identical noise draws.

    See :func:`replayed_stream_noise`. The kept draws are dropped when the outermost block
    exits, so nothing is kept outside it (tests that patch the noise see fresh draws).

    Examples
    --------
    >>> with noise_replay():
    ...     pass
    """
    if _NOISE_REPLAY:  # nested: share the outer block's draws
        yield
        return
    _NOISE_REPLAY.append(OrderedDict())
    try:
        yield
    finally:
        _NOISE_REPLAY.clear()


def _generator_key(rng: np.random.Generator) -> tuple[Any, ...]:
    bitgen = rng.bit_generator
    return (type(bitgen).__name__, repr(bitgen.state))


def _correlation_key(corr: Any, T: int) -> tuple[Any, ...]:
    if isinstance(corr, ToeplitzCorrelation) and not isinstance(
        corr, MatrixFactorization | FFTFactorization
    ):  # stream_noise uses only its coefficients
        return ("toeplitz", np.asarray(corr.coefficients(T), dtype=float).tobytes())
    return ("object", id(corr))  # the entry holds corr, so its id cannot be reused


def replayed_stream_noise(
    corr: Any,
    T: int,
    columns: int,
    rng: np.random.Generator,
    *,
    scale: float = 1.0,
    replay: bool = True,
) -> np.ndarray:
    r"""Return :func:`~dpreg.estimators.ftrl.stream_noise`, replaying a recent identical draw.

    The noise is a function of the generator's state and of public inputs only (the
    correlation, ``T``, ``columns``; never of data). When a call comes with the same
    bit-generator state (its full ``state``, not a seed) and the same public inputs as one
    of the last calls (up to :data:`REPLAY_MAX_BYTES` of noise kept, oldest dropped
    first), its draws are returned and the generator is set to the state the draws left
    it in: the same numbers and the same final state as drawing again, bit for bit. The
    noise comes back times ``scale``, a new array (the same products as scaling the
    draws in place), so the kept draws are never copied nor changed. The Fig. 4 analogue
    (``ftrl_digits``) trains each method and epsilon at four learning rates from the same
    seed, so three of every four draws are replays
    (:func:`~dpreg.experiments.choquettechoo2023_digits.run_digits` runs in a
    :func:`noise_replay` block). Outside such a block, or with ``replay=False`` (the
    reference path), every call draws.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg.estimators.ftrl_correlations import independent
    >>> with noise_replay():
    ...     a = replayed_stream_noise(independent(), 4, 3, np.random.default_rng(5))
    ...     b = replayed_stream_noise(independent(), 4, 3, np.random.default_rng(5))
    >>> bool(np.array_equal(a, b)), a is b
    (True, False)
    """
    if not replay or not _NOISE_REPLAY:
        noise = stream_noise(corr, T, columns, rng)
        noise *= scale
        return noise
    kept = _NOISE_REPLAY[0]
    key = (stream_noise, _correlation_key(corr, T), int(T), int(columns), _generator_key(rng))
    hit = kept.get(key)
    if hit is not None:
        kept.move_to_end(key)
        rng.bit_generator.state = hit[2]
        return hit[1] * scale
    noise = stream_noise(corr, T, columns, rng)
    if noise.nbytes > REPLAY_MAX_BYTES:
        noise *= scale
        return noise
    kept[key] = (corr, noise, rng.bit_generator.state)
    while sum(entry[1].nbytes for entry in kept.values()) > REPLAY_MAX_BYTES:
        kept.popitem(last=False)
    return noise * scale


@dataclass(frozen=True)
class ClassifierFit:
    """The output of :func:`train_dp_ftrl_logistic`, vectorised over trials.

    Attributes
    ----------
    weights : ndarray, shape (trials, d, classes)
        Released weights of each trial.
    budget_spent : ZCDP or ApproxDP or None
        Certified per trial from the noise actually added (``None``: not private).
    diagnostics : dict
        Public inputs and noise calibration (``noise_multiplier``, ``sensitivity_sq``,
        ``steps``, ``epochs``, ``participations``, ``separation``, ...).
    nonprivate_diagnostics : dict
        ``clip_fraction`` (trials,): computed from the data without noise, outside the
        guarantee.
    path : ndarray, shape (trials, T, d, classes), or None
        The weights after every step (``return_path=True``): every iterate is released
        and covered by the guarantee.
    """

    weights: np.ndarray
    budget_spent: ZCDP | ApproxDP | None
    diagnostics: dict[str, Any] = field(default_factory=dict)
    nonprivate_diagnostics: dict[str, Any] = field(default_factory=dict)
    path: np.ndarray | None = None

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Return the predicted classes, shape (trials, m): the argmax of the scores."""
        X = check_matrix(X, "X")
        return np.argmax(np.einsum("md,tdk->tmk", X, self.weights), axis=2)

    def accuracy(self, X: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Return the share of rows classified correctly, per trial, shape (trials,)."""
        return softmax_accuracy(self.weights, X, labels)


def softmax_accuracy(weights: np.ndarray, X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Accuracy of linear classifiers ``weights`` (trials, d, classes) on ``(X, labels)``.

    Examples
    --------
    >>> import numpy as np
    >>> W = np.zeros((1, 2, 2)); W[0, 0, 1] = 1.0
    >>> softmax_accuracy(W, np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([1, 0]))
    array([1.])
    """
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 3:
        raise ValueError(f"weights must have shape (trials, d, classes); got {weights.shape}")
    X = check_matrix(X, "X")
    labels = _check_labels(labels, X.shape[0], weights.shape[2])
    pred = np.argmax(np.einsum("md,tdk->tmk", X, weights), axis=2)
    return np.mean(pred == labels[None, :], axis=1)


def _check_momentum(momentum: Any) -> float:
    if isinstance(momentum, bool) or not isinstance(momentum, int | float | np.floating):
        raise ValueError(f"momentum must be a number in [0, 1); got {momentum!r}")
    if not 0.0 <= float(momentum) < 1.0:
        raise ValueError(f"momentum must lie in [0, 1); got {momentum!r}")
    return float(momentum)


def _check_labels(labels: Any, n: int, n_classes: int) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"labels must be integers in [0, {n_classes}); got dtype {arr.dtype}")
    if arr.shape != (n,):
        raise ValueError(f"labels must have shape ({n},) like the rows of X; got {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= n_classes):
        raise ValueError(f"labels must lie in [0, {n_classes}) (n_classes={n_classes})")
    return arr.astype(np.int64)


def train_dp_ftrl_logistic(
    X: np.ndarray,
    labels: np.ndarray,
    *,
    n_classes: int,
    budget: ZCDP | ApproxDP | None,
    rng: np.random.Generator | Sequence[np.random.Generator],
    trials: int = 1,
    eta: float,
    clip: float,
    correlation: ToeplitzCorrelation | MatrixFactorization | FFTFactorization | str = "nu_ftrl",
    nu: float | None = None,
    batch_size: int,
    epochs: int = 1,
    bound_X: float | None = None,
    method: str = "zcdp",
    conversion: str = DEFAULT_CONVERSION,
    neighbours: str = "zero_out",
    noise_multiplier: float | None = None,
    momentum: float = 0.0,
    cooldown_fraction: float = 0.0,
    final_lr_factor: float = 0.05,
    return_path: bool = False,
) -> ClassifierFit:
    r"""Train a multinomial logistic regression with DP-FTRL (correlated) or DP-SGD noise.

    Algorithm 1 of Choquette-Choo et al. (2023) with Toeplitz :math:`B` (Eq. 13) on the
    softmax cross-entropy, minibatches of ``batch_size`` rows, ``epochs`` passes in one
    order per trial (module docstring). Zero-out neighbouring relation (App. A.2;
    ``neighbours="replace_one"`` doubles the sensitivity). Public inputs: ``clip``,
    ``eta``, ``batch_size``, ``epochs``, ``nu``, ``n_classes``, ``bound_X`` and the
    number of rows :math:`n`; the labels' range ``[0, n_classes)``.

    Privacy: :math:`\gamma^2` = :func:`~dpreg.estimators.ftrl.multi_epoch_sensitivity_sq`
    (fixed-epoch schema, :math:`k = E` participations :math:`\lfloor n/b\rfloor` apart;
    DP-SGD: :math:`\gamma^2 = E`), :math:`\sigma_{dp}` from the budget by
    :func:`~dpreg.privacy.correlated.ftrl_noise_multiplier` (``method="zcdp"``: the
    largest :math:`\rho` whose ``conversion`` gives the requested
    :math:`(\varepsilon, \delta)`, App. A.2), and ``budget_spent`` recomputed from the
    :math:`\sigma_{dp}` actually used (:math:`\rho = \gamma^2/(2\sigma_{dp}^2)`, then
    :math:`\varepsilon` by the same conversion). Every iterate is covered.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Features; with ``bound_X`` every row norm is checked to be at most it (never
        clipped silently).
    labels : array_like of int, shape (n,)
        Classes in ``[0, n_classes)``.
    n_classes : int
        Number of classes :math:`K \ge 2` (public).
    budget : ZCDP or ApproxDP or None
        Target per trial; ``None`` with ``noise_multiplier`` instead.
    rng : numpy.random.Generator or sequence of Generator
        Source of the noise and then of each trial's order. A sequence of ``trials``
        generators gives trial ``j`` its own stream ``rng[j]`` (its noise, then its
        order), so a vectorised call equals a loop of one-trial calls with the same
        generators.
    trials : int
        Independent runs (own order and noise), vectorised along the leading axis.
    eta : float
        Learning rate :math:`\eta` (constant).
    clip : float
        Per-example clip norm :math:`G` (Frobenius norm of :math:`x(p - e_y)^\top`).
    correlation : ToeplitzCorrelation, MatrixFactorization, FFTFactorization or str
        ``"nu_ftrl"`` (needs ``nu``), ``"sgd"`` (DP-SGD: independent noise),
        ``"optimal_cc"``, ``"damped_anti_pgd"`` (needs ``nu``), ``"anti_pgd"``, a
        :class:`~dpreg.estimators.ftrl_correlations.ToeplitzCorrelation`, or a
        factorization of Table 3 built for :math:`T = E\lfloor n/b\rfloor`
        (:func:`~dpreg.estimators.ftrl_factorizations.tree_aggregation`,
        :func:`~dpreg.estimators.ftrl_factorizations.fft_factorization`, ME by
        ``dpreg.estimators.ftrl_me.solve_me(T, k=E, b=n // b).factorization()``): its
        fixed-epoch sensitivity is its own ``multi_participation_sensitivity_sq``.
    nu : float, optional
        Damping of ν-FTRL (Eq. 7).
    batch_size : int
        Rows per step :math:`b \le n`; the last :math:`n \bmod b` rows of each trial's
        order are not used.
    epochs : int
        Passes :math:`E \ge 1`.
    bound_X : float, optional
        Public bound on the row norms, checked.
    method, conversion, neighbours : str
        Calibration, see :func:`~dpreg.privacy.correlated.ftrl_noise_multiplier`.
    noise_multiplier : float, optional
        Use this :math:`\sigma_{dp} \ge 0` (then ``budget=None``); 0 is a non-private run
        (``budget_spent=None``), e.g. the non-private reference with ``clip=inf``.
    momentum : float
        Heavy-ball momentum :math:`\mu \in [0, 1)` applied to the noisy gradients,
        :math:`v_t = \mu v_{t-1} + \tilde g_t`, :math:`W_{t+1} = W_t - \eta v_t`
        (post-processing of the released noisy gradients; 0: plain steps).
    cooldown_fraction, final_lr_factor : float
        Learning-rate schedule :math:`\eta_t = \eta\,s_t`: constant, then a linear decay
        over the last ``cooldown_fraction`` of the T steps to ``final_lr_factor`` times
        :math:`\eta` (:func:`dpreg.estimators.ftrl_workloads.cooldown_schedule`; the
        paper's App. G.1: 0.25 and 0.05). Public, post-processing; ``0`` (default):
        constant :math:`\eta`.
    return_path : bool
        Also return the weights after every step (``ClassifierFit.path``).

    Returns
    -------
    ClassifierFit
        ``weights`` (trials, d, n_classes), ``budget_spent`` (as requested: ApproxDP or
        ZCDP; ``None`` without clipping or noise), ``diagnostics`` ``noise_multiplier``,
        ``sensitivity_sq``, ``steps``, ``epochs``, ``participations``, ``separation``,
        ``participation_schema``, ``batch_size``, ``correlation``, ``nu``, ``clip``,
        ``rho_certified`` (and ``epsilon_certified``); non-private ``clip_fraction``.

    Raises
    ------
    ValueError
        For bad input, naming the argument, before any work.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg import ApproxDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 0.3, size=(200, 4))
    >>> labels = (X[:, 0] > X[:, 1]).astype(int)
    >>> fit = train_dp_ftrl_logistic(X, labels, n_classes=2, budget=ApproxDP(4.0, 1e-5),
    ...     rng=rng, trials=3, eta=1.0, clip=1.0, correlation="nu_ftrl", nu=0.05,
    ...     batch_size=20, epochs=2)
    >>> fit.weights.shape, fit.diagnostics["steps"], fit.diagnostics["participations"]
    ((3, 4, 2), 20, 2)
    >>> fit.budget_spent.epsilon <= 4.0
    True
    >>> fit.accuracy(X, labels).shape, fit.predict(X[:5]).shape
    ((3,), (3, 5))
    """
    X = check_matrix(X, "X")
    n, d = X.shape
    if isinstance(n_classes, bool) or not isinstance(n_classes, int | np.integer) or n_classes < 2:
        raise ValueError(f"n_classes must be an integer >= 2; got {n_classes!r}")
    n_classes = int(n_classes)
    labels = _check_labels(labels, n, n_classes)
    if bound_X is not None:
        check_row_norm_bound(X, bound_X, "X", "bound_X")
    epochs = check_epochs(epochs)
    batch_size = check_trials(batch_size, name="batch_size")
    if batch_size > n:
        raise ValueError(f"batch_size={batch_size} exceeds the number of rows n={n}")
    steps_per_epoch = n // batch_size
    T = epochs * steps_per_epoch
    if T > MAX_STEPS:
        raise ValueError(
            f"epochs={epochs} passes of {steps_per_epoch} steps make T = {T} steps, more than"
            f" MAX_STEPS = {MAX_STEPS}"
        )
    # noise (T d K), weights and order per trial
    per_trial = T * d * n_classes * (2 if return_path else 1) + 3 * d * n_classes + n
    trials = check_trials(trials, bytes_per_trial=8 * per_trial)
    if isinstance(rng, list | tuple):
        if len(rng) != trials:
            raise ValueError(
                f"rng: a sequence needs one generator per trial ({trials}); got {len(rng)}"
            )
        rngs = [check_rng(r) for r in rng]
    else:
        rngs = None
        check_rng(rng)
    eta = check_positive(eta, "eta")
    clip = check_positive(clip, "clip", allow_inf=True)
    if not isinstance(
        correlation, ToeplitzCorrelation | MatrixFactorization | FFTFactorization | str
    ):
        raise ValueError(
            "correlation must be a ToeplitzCorrelation, a MatrixFactorization or"
            f" FFTFactorization built for T = epochs * (n // batch_size), or a name; got"
            f" {correlation!r}"
        )
    momentum = _check_momentum(momentum)
    corr = resolve_correlation(correlation, nu, eta)
    check_choice(method, "method", CALIBRATIONS)
    check_choice(conversion, "conversion", CONVERSIONS)
    check_choice(neighbours, "neighbours", NEIGHBOURS)
    gamma_sq, sigma_dp = stream_calibration(
        corr,
        steps_per_epoch=steps_per_epoch,
        epochs=epochs,
        sensitivity="finite",
        budget=budget,
        noise_multiplier=noise_multiplier,
        method=method,
        conversion=conversion,
        neighbours=neighbours,
        allow_zero_noise=True,
    )
    gamma = math.sqrt(gamma_sq)
    columns = d * n_classes
    noise = None
    noise_scale = sigma_dp * (1.0 if math.isinf(clip) else clip) / batch_size
    used = steps_per_epoch * batch_size
    if rngs is None:
        if sigma_dp > 0:
            noise = replayed_stream_noise(corr, T, trials * columns, rng, scale=noise_scale)
            noise = noise.reshape(T, trials, d, n_classes)
        # argsort(rng.random((trials, n))): the same permutations and rng state
        order = uniform_key_permutations(rng, trials, n)[:, :used]
    else:
        if sigma_dp > 0:
            noise = np.stack([stream_noise(corr, T, columns, r) for r in rngs], axis=1)
            noise = noise.reshape(T, trials, d, n_classes)
            noise *= noise_scale
        order = np.stack([np.argsort(r.random(n))[:used] for r in rngs])
    order = order.reshape(trials, steps_per_epoch, batch_size)
    onehot = np.eye(n_classes)[labels]
    x_norm = np.linalg.norm(X, axis=1)
    W = np.zeros((trials, d, n_classes))
    velocity = np.zeros_like(W) if momentum > 0 else None
    schedule = eta * cooldown_schedule(T, cooldown_fraction, final_lr_factor)
    path = np.empty((trials, T, d, n_classes)) if return_path else None
    clipped = np.zeros(trials)
    for t in range(T):
        idx = order[:, t % steps_per_epoch, :]  # (trials, b)
        grad, n_clipped = clipped_gradient_sum(X, onehot, x_norm, idx, W, clip)
        clipped += n_clipped
        _noisy_step(W, grad, None if noise is None else noise[t], velocity, momentum,
                    batch_size, schedule[t])  # fmt: skip
        if path is not None:
            path[:, t] = W
    private = not math.isinf(clip) and sigma_dp > 0
    spent, rho_certified, epsilon_certified = stream_certificate(
        sigma_dp,
        gamma,
        budget,
        private=private,
        method=method,
        conversion=conversion,
        neighbours=neighbours,
    )
    diagnostics: dict[str, Any] = {
        "noise_multiplier": sigma_dp,
        "sensitivity_sq": gamma_sq,
        "steps": T,
        "epochs": epochs,
        "participations": epochs,
        "separation": steps_per_epoch,
        "participation_schema": "fixed_epoch",
        "batch_size": batch_size,
        "correlation": corr.name,
        "nu": getattr(corr, "nu", math.nan),
        "clip": clip,
        "eta": eta,
        "cooldown_fraction": float(cooldown_fraction),
        "final_lr_factor": float(final_lr_factor),
        "rho_certified": rho_certified,
        "neighbours": neighbours,
    }
    if private and isinstance(budget, ApproxDP):
        diagnostics["epsilon_certified"] = epsilon_certified
    return ClassifierFit(
        weights=W,
        budget_spent=spent,
        diagnostics=diagnostics,
        nonprivate_diagnostics={"clip_fraction": clipped / (T * batch_size)},
        path=path,
    )


def _noisy_step(
    W: np.ndarray,
    grad: np.ndarray,
    noise_t: np.ndarray | None,
    velocity: np.ndarray | None,
    momentum: float,
    batch_size: int,
    lr: float,
) -> None:
    r"""One step of Algorithm 1 in place: :math:`W \leftarrow W - \eta_t\,\mathrm{dir}`.

    ``grad /= b``, ``grad += noise_t`` (if any), the heavy-ball direction
    (:func:`momentum_step`) and ``W -= lr * direction``: numpy's statements (the
    reference), or one compiled pass with the same IEEE operations per entry in the same
    order (:func:`dpreg.estimators._logistic_grad_jit.noisy_step`; the same bits) on
    C-contiguous float64 arrays from :data:`_GRADIENT_COMPILED_MIN` entries on. The
    four arrays are distinct (the training loop's own: the weights, a fresh gradient, a
    row of the noise and the velocity).
    """
    if (
        _GRADIENT_PATH == "compiled"
        and grad.size >= _GRADIENT_COMPILED_MIN
        and all(
            a is None or (a.dtype == np.float64 and a.flags.c_contiguous and a.shape == W.shape)
            for a in (W, grad, noise_t, velocity)
        )
    ):
        from dpreg.estimators._logistic_grad_jit import noisy_step

        dummy = np.empty((1,) * W.ndim)  # not read
        noisy_step(
            W,
            grad,
            dummy if noise_t is None else noise_t,
            noise_t is not None,
            dummy if velocity is None else velocity,
            velocity is not None,
            float(momentum),
            int(batch_size),
            float(lr),
        )
        return
    grad /= batch_size
    if noise_t is not None:
        grad += noise_t
    W -= lr * momentum_step(velocity, grad, momentum)


def momentum_step(velocity: np.ndarray | None, grad: np.ndarray, momentum: float) -> np.ndarray:
    r"""Heavy-ball direction: :math:`v \leftarrow \mu v + g` (in place), or ``grad`` if none.

    Post-processing of the noisy gradients (public :math:`\mu`), the same for every
    mechanism.

    Examples
    --------
    >>> import numpy as np
    >>> v = np.zeros(2)
    >>> momentum_step(v, np.ones(2), 0.5), momentum_step(v, np.ones(2), 0.5)
    (array([1., 1.]), array([1.5, 1.5]))
    """
    if velocity is None:
        return grad
    velocity *= momentum
    velocity += grad
    return velocity.copy()


#: "compiled": :func:`clipped_gradient_sum` does the elementwise passes in two compiled
#: kernels (:mod:`dpreg.estimators._logistic_grad_jit`) from :data:`_GRADIENT_COMPILED_MIN`
#: entries of the (trials, b, classes) residual on; "reference": always numpy's passes.
#: The same bits either way (``tests/unit/test_logistic_grad_kernel.py``).
_GRADIENT_PATH = "compiled"
_GRADIENT_COMPILED_MIN = 1024  # below: a few numpy calls, not worth numba's import


def clipped_gradient_sum(
    X: np.ndarray,
    onehot: np.ndarray,
    x_norm: np.ndarray,
    idx: np.ndarray,
    W: np.ndarray,
    clip: float,
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Sum over a batch of the clipped softmax gradients :math:`x(p - e_y)^\top`, per trial.

    ``idx`` (trials, b) indexes the rows of each trial's batch; ``mask`` (trials, b)
    marks the rows that are in it (padding of a Poisson batch is ``False``: its
    gradient is zero). Each gradient is scaled to Frobenius norm at most ``clip``
    (``inf``: none). Returns the sum, shape (trials, d, classes), and the number of
    clipped rows per trial (a non-private diagnostic).

    The two batched products and the exponential are numpy's; the other passes (row
    maximum, softmax normaliser, residual, norms, clipping) run compiled
    (:mod:`dpreg.estimators._logistic_grad_jit`) on float64 inputs of at most 128
    classes from :data:`_GRADIENT_COMPILED_MIN` residual entries on, with the same
    IEEE operations in the same order as :func:`clipped_gradient_sum_reference`: the
    same bits (issue 18, docs/scaling.md).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[3.0, 4.0]]); onehot = np.eye(2)[[0]]
    >>> g, c = clipped_gradient_sum(X, onehot, np.array([5.0]), np.zeros((1, 1), int),
    ...     np.zeros((1, 2, 2)), 1.0)
    >>> round(float(np.linalg.norm(g)), 12), c
    (1.0, array([1]))
    """
    if not (
        _GRADIENT_PATH == "compiled"
        and idx.ndim == 2
        and idx.size * onehot.shape[-1] >= _GRADIENT_COMPILED_MIN
    ):
        return clipped_gradient_sum_reference(X, onehot, x_norm, idx, W, clip, mask)
    return _clipped_gradient_sum_compiled(X, onehot, x_norm, idx, W, clip, mask)


_NO_MASK = np.ones((1, 1), dtype=np.bool_)


def _clipped_gradient_sum_compiled(
    X: np.ndarray,
    onehot: np.ndarray,
    x_norm: np.ndarray,
    idx: np.ndarray,
    W: np.ndarray,
    clip: float,
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`clipped_gradient_sum` with the compiled passes where the inputs allow them."""
    Xb = X[idx]  # (trials, b, d)
    logits = np.matmul(Xb, W)
    K = logits.shape[-1] if logits.ndim == 3 else 0
    if not (
        logits.ndim == 3
        and logits.dtype == np.float64
        and logits.flags.c_contiguous
        and 1 <= K <= 128
        and logits.shape[:2] == idx.shape
        and onehot.dtype == np.float64
        and onehot.ndim == 2
        and onehot.shape == (X.shape[0], K)
        and x_norm.shape == (X.shape[0],)
        and x_norm.dtype == np.float64
        and idx.dtype.kind in "iu"
        and (mask is None or (mask.dtype == np.bool_ and mask.shape == idx.shape))
    ):
        return clipped_gradient_sum_reference(X, onehot, x_norm, idx, W, clip, mask)
    from dpreg.estimators._logistic_grad_jit import residual_clip, shift_by_row_max

    shift_by_row_max(logits)
    p = np.exp(logits)  # a new array, as in the reference (numpy's exp fixes the bits)
    n_clipped = np.zeros(idx.shape[0], dtype=np.int64)
    clipped = not math.isinf(clip)
    use_mask = mask is not None
    # one compiled signature for every caller (fewer compilations in a fresh clone):
    # C-contiguous int64 indices and a C-contiguous boolean mask (unread without one)
    residual_clip(
        p,
        onehot,
        x_norm,
        np.ascontiguousarray(idx, dtype=np.int64),
        np.ascontiguousarray(mask) if use_mask else _NO_MASK,
        use_mask,
        float(clip),
        clipped,
        n_clipped,
    )
    return np.matmul(np.swapaxes(Xb, 1, 2), p), n_clipped


def clipped_gradient_sum_reference(
    X: np.ndarray,
    onehot: np.ndarray,
    x_norm: np.ndarray,
    idx: np.ndarray,
    W: np.ndarray,
    clip: float,
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r""":func:`clipped_gradient_sum` in numpy passes (the reference of the compiled path).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[3.0, 4.0]]); onehot = np.eye(2)[[0]]
    >>> g, c = clipped_gradient_sum_reference(X, onehot, np.array([5.0]),
    ...     np.zeros((1, 1), int), np.zeros((1, 2, 2)), 1.0)
    >>> round(float(np.linalg.norm(g)), 12), c
    (1.0, array([1]))
    """
    Xb = X[idx]  # (trials, b, d)
    logits = np.matmul(Xb, W)
    logits -= logits.max(axis=2, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=2, keepdims=True)
    r = p - onehot[idx]  # per-example gradient x r^T, Frobenius norm |x| |r|
    if mask is not None:
        r *= mask[:, :, None]
    n_clipped = np.zeros(idx.shape[0], dtype=np.int64)
    if not math.isinf(clip):
        norms = x_norm[idx] * np.linalg.norm(r, axis=2)
        n_clipped = np.count_nonzero(norms > clip, axis=1)
        r *= (clip / np.maximum(norms, clip))[:, :, None]
    return np.matmul(np.swapaxes(Xb, 1, 2), r), n_clipped
