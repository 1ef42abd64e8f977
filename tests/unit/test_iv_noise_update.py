"""The noise update of the 2S-GD recursion, in place, is the plain expressions bit for bit.

:func:`dpreg.estimators.iv._iterate` draws the step's noise into reused buffers
(``rng.standard_normal(out=...)``) and scales it in place (issue 18, docs/scaling.md);
the reference is the recursion of Liang et al. (2025), Algorithm 1, lines 5-6, written
as ``Theta - eta * G1 + eta * (lambda1 * standard_normal(...))`` with fresh draws.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpreg.estimators.iv as iv


def _replay(d, *, trials, T, eta, alpha, clip, lam1, lam2, seed, kernel):
    gradients = iv._gradient_function(d, clip, clip, kernel)
    rng = np.random.default_rng(seed)
    Theta, beta = np.zeros((trials, d.q, d.p)), np.zeros((trials, d.p))
    path = []
    for _ in range(T):
        g_theta, g_beta, _, _ = gradients(Theta, beta)
        Theta_next = Theta - eta * g_theta
        beta_next = beta - alpha * g_beta
        if lam1 > 0:
            Theta_next += eta * (lam1 * rng.standard_normal((trials, d.q, d.p)))
        if lam2 > 0:
            beta_next += alpha * (lam2 * rng.standard_normal((trials, d.p)))
        Theta, beta = Theta_next, beta_next
        path.append(beta)
    return Theta, np.stack(path, axis=1)


@pytest.mark.parametrize("kernel", ["rows", "fast"])
@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("lams", [(0.3, 0.2), (0.0, 0.2), (0.3, 0.0)])
def test_in_place_noise_update_is_the_plain_recursion(kernel, batched, lams):
    trials, n, q, p, T = 6, 50, 3, 2, 5
    rng = np.random.default_rng(4)
    shape = (trials, n) if batched else (n,)
    Z = rng.standard_normal((*shape, q))
    X = Z @ (np.eye(q, p) + 0.3 * rng.standard_normal((q, p))) + rng.standard_normal((*shape, p))
    y = X @ rng.standard_normal(p) + rng.standard_normal(shape)
    d = iv._prepare(Z, X, y, trials)
    lam1, lam2 = lams
    kw = dict(trials=trials, T=T, clip=1.5, lam1=lam1, lam2=lam2, seed=8, kernel=kernel)
    run = iv._iterate(
        d, trials=trials, T=T, step_theta=0.4, step_beta=0.3, clip_theta=1.5, clip_beta=1.5,
        lambda1=lam1, lambda2=lam2, rng=np.random.default_rng(8), return_path=True,
        kernel=kernel,
    )  # fmt: skip
    Theta, beta_path = _replay(d, eta=0.4, alpha=0.3, **kw)
    np.testing.assert_array_equal(run["Theta"], Theta)
    np.testing.assert_array_equal(run["beta_path"], beta_path)
    assert math.isfinite(float(np.abs(beta_path).max())) and np.abs(beta_path).max() > 0
