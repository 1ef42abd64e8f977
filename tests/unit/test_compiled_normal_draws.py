"""The IV batches and the regime designs draw numpy's normals, compiled or not (issue 18).

:func:`dpreg.data.synthetic.sample_iv_batch` and
:func:`dpreg.data.regimes.load_regime_split` draw their normals through
``dpreg.data.synthetic._standard_normal`` (numba's fill of numpy's ziggurat for large
draws or once numba is loaded). Both paths must give the arrays that plain
``rng.standard_normal`` gives, bit for bit, and leave the generator where numpy would.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpreg.data.synthetic as synthetic
from dpreg.data.regimes import load_regime_split, regime_bounds, regime_theta
from dpreg.data.synthetic import IVLinearDGP, draw_iv_truth_batch, sample_iv_batch


@pytest.mark.parametrize("compiled_from", [0, 2**62])
@pytest.mark.parametrize("shared", [True, False])
def test_sample_iv_batch_is_numpy_draws(compiled_from, shared, monkeypatch):
    monkeypatch.setattr(synthetic, "_COMPILED_MIN_DRAWS", compiled_from)
    trials, n, p, q, r = 3, 40, 2, 3, 2
    if shared:
        truth = IVLinearDGP.draw(rng=np.random.default_rng(1), p=p, q=q, r=r).truth_batch()
    else:
        truth = draw_iv_truth_batch(np.random.default_rng(1), p=p, q=q, r=r, trials=trials)
    rng = np.random.default_rng([7, int(shared)])
    Z, X, y = sample_iv_batch(truth, n=n, trials=trials, rng=rng, sigma_x=0.5, sigma_y=2.0)
    ref = np.random.default_rng([7, int(shared)])
    Zr = ref.standard_normal((trials, n, q))
    Ur = ref.standard_normal((trials, n, r))
    Xr = Zr @ truth["Theta"] + Ur @ truth["Phi"] + 0.5 * ref.standard_normal((trials, n, p))
    yr = (
        (Xr @ truth["beta"][..., None])[..., 0]
        + (Ur @ truth["phi"][..., None])[..., 0]
        + 2.0 * ref.standard_normal((trials, n))
    )
    np.testing.assert_array_equal(Z, Zr)
    np.testing.assert_array_equal(X, Xr)
    np.testing.assert_array_equal(y, yr)
    assert rng.standard_normal() == ref.standard_normal()


@pytest.mark.parametrize("compiled_from", [0, 2**62])
@pytest.mark.parametrize("covariance", ["isotropic", "anisotropic"])
def test_load_regime_split_is_numpy_draws(compiled_from, covariance, monkeypatch):
    monkeypatch.setattr(synthetic, "_COMPILED_MIN_DRAWS", compiled_from)
    n, n_test, d, sigma, seed = 50, 7, 4, 0.5, 123
    train, test = load_regime_split(
        n=n, d=d, n_test=n_test, sigma=sigma, seed=seed, covariance=covariance,
        condition_number=10.0,
    )  # fmt: skip
    ref = np.random.default_rng(seed)
    theta = ref.standard_normal(d)
    theta /= np.linalg.norm(theta)
    np.testing.assert_array_equal(theta, regime_theta(d=d, seed=seed))
    scales = np.ones(d)
    rotation = None
    if covariance == "anisotropic":
        scales = np.sqrt(10.0 ** (-np.arange(d) / (d - 1)))
        scales *= math.sqrt(d) / np.linalg.norm(scales)
        rotation, upper = np.linalg.qr(ref.standard_normal((d, d)))
        rotation *= np.sign(np.diag(upper))
    X = ref.standard_normal((n + n_test, d)) * scales
    if rotation is not None:
        X = X @ rotation.T
    y = X @ theta + sigma * ref.standard_normal(n + n_test)
    bound_X, bound_y = regime_bounds(d=d, sigma=sigma)
    X = X / bound_X
    X = X / np.maximum(np.linalg.norm(X, axis=1), 1.0)[:, None]
    y = np.clip(y / bound_y, -1.0, 1.0)
    np.testing.assert_array_equal(np.vstack([train.X, test.X]), X)
    np.testing.assert_array_equal(np.concatenate([train.y, test.y]), y)
