"""The regime designs' compiled projection (issue 18): numpy's rows, bit for bit.

Independent computation: the numpy expressions of the reference (division, ``np.linalg.norm``,
``np.maximum``, division), and whole draws of :func:`load_regime_split` through the
reference path.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpreg.data.regimes as regimes
from dpreg.data.regime_kernel import project_rows, project_rows_reference

#: Hypothesis strategies of a regime design's arguments.
_DESIGNS = dict(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 300),
    d=st.integers(1, 30),
    covariance=st.sampled_from(["isotropic", "anisotropic"]),
    noise=st.sampled_from(["gaussian", "student_t3"]),
    sigma=st.sampled_from([0.0, 0.5, 3.0]),
)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 40),
    d=st.integers(1, 140),
    scale=st.sampled_from([1e-3, 0.3, 1.0, 7.0, 1e3]),
    bound=st.sampled_from([0.5, 1.0, 2.0 * np.sqrt(10.0), 1e-3, 123.25]),
)
def test_projection_equals_numpy_bit_for_bit(seed, n, d, scale, bound):
    X = np.random.default_rng(seed).standard_normal((n, d)) * scale
    X[0, 0] = 0.0  # an exact zero and, below, a row of zeros and one on the sphere
    if n > 1:
        X[1] = 0.0
    if n > 2:
        X[2] = 0.0
        X[2, -1] = bound  # norm exactly 1 after the division
    ref = X / bound
    ref = ref / np.maximum(np.linalg.norm(ref, axis=1), 1.0)[:, None]
    np.testing.assert_array_equal(project_rows_reference(X, bound), ref)
    got = project_rows(X.copy(), bound)
    assert np.array_equal(got, ref)  # exact, not to rounding
    assert (np.linalg.norm(got, axis=1) <= 1.0 + 1e-15).all()


def test_projection_is_in_place_and_falls_back_unchanged():
    X = np.random.default_rng(1).standard_normal((30, 12)) * 3.0
    ref = project_rows_reference(X, 2.0)
    work = X.copy()
    assert project_rows(work, 2.0) is work
    np.testing.assert_array_equal(work, ref)
    strided = np.asfortranarray(X)  # not C-contiguous: the reference, input untouched
    out = project_rows(strided, 2.0)
    np.testing.assert_array_equal(out, project_rows_reference(strided, 2.0))
    np.testing.assert_allclose(out, ref, rtol=1e-15)
    np.testing.assert_array_equal(strided, X)


@pytest.mark.parametrize("bound", [0.0, -1.0, np.inf, np.nan])
def test_projection_rejects_bad_bound(bound):
    with pytest.raises(ValueError, match="bound_X"):
        project_rows(np.ones((2, 2)), bound)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(**_DESIGNS)
def test_regime_draws_equal_the_reference_path(monkeypatch, seed, n, d, covariance, noise, sigma):
    kwargs = dict(
        n=n, d=d, n_test=7, covariance=covariance, condition_number=50.0, noise=noise,
        sigma=sigma, seed=seed,
    )  # fmt: skip
    with monkeypatch.context() as m:  # the compiled pass, whether or not numba is loaded
        m.setattr(regimes, "_COMPILED_MIN_ENTRIES", 0)
        fast = regimes.load_regime_split(**kwargs)
    with monkeypatch.context() as m:
        m.setattr(regimes, "_PATH", "reference")
        ref = regimes.load_regime_split(**kwargs)
    for a, b in zip(fast, ref, strict=True):
        assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    # the projection is applied: rows in the unit ball, some projected at sigma = 3
    assert (np.linalg.norm(fast[0].X, axis=1) <= 1.0 + 1e-15).all()


def _draw_as_before(n, d, n_test, covariance, kappa, noise, sigma, seed):
    """load_regime_split's rows as it drew them before regime_rows (session 25): theta by
    its own generator, a second generator that skips theta's draw, numpy's normals."""
    theta = regimes.regime_theta(d=d, seed=seed)
    rng = np.random.default_rng(seed)
    rng.standard_normal(d)
    scales, rotation = np.ones(d), None
    if covariance == "anisotropic":
        scales = np.sqrt(kappa ** (-np.arange(d) / max(d - 1, 1)))
        scales *= np.sqrt(d) / np.linalg.norm(scales)
        rotation, r = np.linalg.qr(rng.standard_normal((d, d)))
        rotation *= np.sign(np.diag(r))
    m = n + n_test
    X = rng.standard_normal((m, d))
    if rotation is not None:
        X = (X * scales) @ rotation.T
    e = rng.standard_normal(m)
    if noise == "student_t3":
        e = rng.standard_t(3, size=m) / np.sqrt(3.0)
    y = X @ theta + sigma * e
    bound_X, bound_y = regimes.regime_bounds(d=d, sigma=sigma)
    return theta, project_rows_reference(X, bound_X), np.clip(y / bound_y, -1.0, 1.0)


@settings(max_examples=30, deadline=None)
@given(**_DESIGNS)
def test_regime_rows_are_the_loaders_draws_and_theta(seed, n, d, covariance, noise, sigma):
    """regime_rows (one generator, no Dataset) draws the rows load_regime_split returns and
    regime_theta's vector, bit for bit, and both equal the draws as made before."""
    kwargs = dict(covariance=covariance, condition_number=50.0, noise=noise, sigma=sigma)
    theta, X, y = regimes.regime_rows(n=n + 5, d=d, seed=seed, **kwargs)
    train, test = regimes.load_regime_split(n=n, d=d, n_test=5, seed=seed, **kwargs)
    assert np.array_equal(theta, regimes.regime_theta(d=d, seed=seed))
    assert np.array_equal(X[:n], train.X) and np.array_equal(y[:n], train.y)
    assert np.array_equal(X[n:], test.X) and np.array_equal(y[n:], test.y)
    before = _draw_as_before(n, d, 5, covariance, 50.0, noise, sigma, seed)
    for got, want in zip((theta, X, y), before, strict=True):
        assert np.array_equal(got, want)


def test_regime_rows_validate_like_the_loader():
    with pytest.raises(ValueError, match="covariance"):
        regimes.regime_rows(n=10, d=2, covariance="diagonal")
    with pytest.raises(ValueError, match="noise"):
        regimes.regime_rows(n=10, d=2, noise="cauchy")
    with pytest.raises(ValueError, match="seed"):
        regimes.regime_rows(n=10, d=2, seed=-1)
