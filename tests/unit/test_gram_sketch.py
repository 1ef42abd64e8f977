"""Gram-matrix sketch samplers: exact in distribution versus the explicit sketch S A + eta xi."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpreg.estimators.gram_sketch import (
    direct_sketch,
    direct_sketch_gram,
    gram_factor,
    sample_sketch_gram,
    sample_sketch_rows,
)


def _matrix(seed: int = 0, n: int = 40, p: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, p)) @ np.diag([1.0, 0.5, 0.2][:p])
    return A / np.linalg.norm(A, axis=1).max()


def _wishart_moments(sigma: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean k Sigma, entrywise variance k (Sigma_ij^2 + Sigma_ii Sigma_jj) of Wishart(k, Sigma)."""
    diag = np.diag(sigma)
    return k * sigma, k * (sigma**2 + np.outer(diag, diag))


@pytest.mark.parametrize("method", ["bartlett", "rows", "direct"])
def test_gram_moments_match_the_wishart_law(method):
    # The sketch Gram matrix is Wishart_p(k, A'A + eta^2 I): check mean and variance of
    # every entry within 4 Monte Carlo standard errors (the variance's SE uses the
    # Wishart fourth moment bound 3x, so 4 SE of a chi-square-like variable is generous).
    A = _matrix()
    k, eta, m = 7, 0.6, 4000
    sigma = A.T @ A + eta**2 * np.eye(3)
    mean, var = _wishart_moments(sigma, k)
    rng = np.random.default_rng(11)
    etas = np.full(m, eta)
    if method == "direct":
        W = direct_sketch_gram(A, etas, k, rng)
    else:
        W = sample_sketch_gram(gram_factor(A), etas, k, rng, method=method)
    assert W.shape == (m, 3, 3)
    np.testing.assert_array_equal(W, W.transpose(0, 2, 1))
    se_mean = np.sqrt(var / m)
    assert np.all(np.abs(W.mean(0) - mean) <= 4 * se_mean)
    emp_var = W.var(0, ddof=1)
    # SE of a sample variance is about var * sqrt(2 / (m - 1)) * sqrt(kurtosis factor);
    # Wishart entries are sums of k products of Gaussians: kurtosis factor <= 1 + 3 (1 + 6/k).
    se_var = var * math.sqrt((2.0 + 3.0 * (1.0 + 6.0 / k)) / (m - 1))
    assert np.all(np.abs(emp_var - var) <= 4 * se_var)


def test_bartlett_and_direct_agree_in_distribution():
    # Two-sample KS tests (fixed seeds, Bonferroni over 4 statistics) on functionals of the
    # Gram matrix, including the inverse used by IHM's Newton step.
    A = _matrix(3, n=60)
    k, m = 12, 3000
    etas = np.random.default_rng(0).uniform(0.0, 1.0, size=m)  # per-trial noise levels
    Wg = sample_sketch_gram(gram_factor(A), etas, k, np.random.default_rng(1))
    Wd = direct_sketch_gram(A, etas, k, np.random.default_rng(2))
    for f in (
        lambda W: W[:, 0, 0],
        lambda W: W[:, 0, 2],
        lambda W: np.linalg.eigvalsh(W)[:, 0],
        lambda W: np.linalg.inv(W)[:, 1, 1],
    ):
        assert stats.ks_2samp(f(Wg), f(Wd)).pvalue > 0.01 / 4


def test_rows_sampler_covariance():
    A = _matrix(5)
    k, m = 4, 5000
    rows = sample_sketch_rows(gram_factor(A), np.full(m, 0.3), k, np.random.default_rng(3))
    assert rows.shape == (m, k, 3)
    flat = rows.reshape(-1, 3)
    target = A.T @ A + 0.09 * np.eye(3)
    cov = flat.T @ flat / flat.shape[0]
    se = np.sqrt((target**2 + np.outer(np.diag(target), np.diag(target))) / flat.shape[0])
    assert np.all(np.abs(cov - target) <= 4 * se)


def test_singular_gram_and_zero_noise_are_supported():
    A = np.zeros((10, 3))
    A[:, 0] = 0.5  # rank one
    W = sample_sketch_gram(gram_factor(A), np.zeros(5), 6, np.random.default_rng(0))
    assert np.all(np.isfinite(W))
    np.testing.assert_allclose(W[:, 1:, :], 0.0, atol=1e-12)  # no mass off the column space
    assert np.all(W[:, 0, 0] > 0)


def test_bartlett_falls_back_to_rows_when_k_below_p():
    A = _matrix()
    W = sample_sketch_gram(gram_factor(A), np.full(3, 0.1), 2, np.random.default_rng(0))
    assert np.linalg.matrix_rank(W[0]) == 2  # Wishart with k=2 < p=3 is singular


def test_direct_sketch_blocks_match_one_matrix(monkeypatch):
    # Block accumulation sum_J S_J A_J equals S A for the S made of the same blocks.
    from dpreg.estimators import gram_sketch

    monkeypatch.setattr(gram_sketch, "_BLOCK_ELEMENTS", 6)  # k=3: blocks of 2 rows
    A = _matrix(n=25)
    k = 3
    out = direct_sketch(A, 0.5, k, np.random.default_rng(4))
    rng = np.random.default_rng(4)
    S = np.hstack([rng.standard_normal((k, min(2, 25 - s))) for s in range(0, 25, 2)])
    xi = rng.standard_normal((k, 3))
    np.testing.assert_allclose(out, S @ A + 0.5 * xi, rtol=1e-12, atol=1e-12)


def test_reproducible_and_validated():
    A = _matrix()
    f = gram_factor(A)
    a = sample_sketch_gram(f, np.ones(4), 5, np.random.default_rng(9))
    b = sample_sketch_gram(f, np.ones(4), 5, np.random.default_rng(9))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(gram_factor(gram=A.T @ A).eigenvalues, f.eigenvalues)
    with pytest.raises(ValueError, match="exactly one"):
        gram_factor()
    with pytest.raises(ValueError, match="exactly one"):
        gram_factor(A, gram=A.T @ A)
    with pytest.raises(ValueError, match="method"):
        sample_sketch_gram(f, np.ones(2), 5, np.random.default_rng(0), method="qr")
    with pytest.raises(ValueError, match="noise_std"):
        sample_sketch_gram(f, np.array([-1.0]), 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="noise_std"):
        sample_sketch_gram(f, np.array([np.nan]), 5, np.random.default_rng(0))


@pytest.mark.parametrize("method", ["bartlett", "rows", "direct"])
def test_per_trial_sketch_sizes(method):
    # One sketch size per trial (Lev et al. 2026, Algorithm 5): a constant array gives the
    # draws of the scalar size, and mixed sizes have per-trial Wishart means k_t Sigma.
    A = _matrix(2)
    f = gram_factor(A)

    def draw(etas, k, seed):
        rng = np.random.default_rng(seed)
        if method == "direct":
            return direct_sketch_gram(A, etas, k, rng)
        return sample_sketch_gram(f, etas, k, rng, method=method)

    np.testing.assert_array_equal(draw(np.full(4, 0.3), 5, 1), draw(0.3, np.full(4, 5), 1))
    m = 1500 if method == "direct" else 4000
    ks = np.repeat([4, 9], m)
    W = draw(0.4, ks, 2)
    sigma = A.T @ A + 0.16 * np.eye(3)
    for k, block in ((4, W[:m]), (9, W[m:])):
        mean, var = _wishart_moments(sigma, k)
        assert np.all(np.abs(block.mean(0) - mean) <= 4 * np.sqrt(var / m))
    with pytest.raises(ValueError, match="one integer per trial"):
        draw(0.4, np.array([4.5, 5.0]), 0)
    with pytest.raises(ValueError, match="entries"):
        draw(np.ones(3), np.array([4, 5]), 0)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    p=st.integers(1, 30),
    trials=st.integers(1, 6),
    rank=st.integers(0, 30),
    log_eta=st.floats(-8.0, 2.0),
)
@pytest.mark.parametrize("kernel", ["numba", "blas"])
def test_compiled_bartlett_product_equals_the_numpy_reference(
    kernel, seed, p, trials, rank, log_eta
):
    # Same draws (the generator ends in the same state), same matrices to round-off, and
    # exactly symmetric; singular Gram matrices and per-trial sketch sizes included.
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(max(p, 2) + 3, p)) * (rng.uniform(size=p) < 0.8)
    A[:, min(rank, p) :] = 0.0
    f = gram_factor(A)
    etas = 10.0 ** (log_eta + rng.uniform(-1, 1, size=trials))
    ks = rng.integers(p, 6 * p + 2, size=trials)
    rng_fast, rng_ref = np.random.default_rng(seed + 1), np.random.default_rng(seed + 1)
    fast = sample_sketch_gram(f, etas, ks, rng_fast, kernel=kernel)
    ref = sample_sketch_gram(f, etas, ks, rng_ref, kernel="numpy")
    assert rng_fast.bit_generator.state == rng_ref.bit_generator.state
    np.testing.assert_array_equal(fast, fast.transpose(0, 2, 1))
    # rounding of sums of p products: at most a few p eps sqrt(W_ii W_jj) (Cauchy-Schwarz)
    diag = np.sqrt(np.einsum("tii->ti", ref))
    bound = 8 * p * np.finfo(float).eps * diag[:, :, None] * diag[:, None, :]
    assert np.all(np.abs(fast - ref) <= bound)


def test_unknown_bartlett_kernel_is_refused():
    f = gram_factor(_matrix())
    with pytest.raises(ValueError, match="kernel"):
        sample_sketch_gram(f, np.ones(2), 5, np.random.default_rng(0), kernel="lapack")


@pytest.mark.parametrize("kernel", ["numba", "blas", "numpy"])
def test_bartlett_normals_drawn_compiled_equal_numpys(kernel, monkeypatch):
    """The strictly-lower Bartlett entries come from the compiled normal fill: the same
    values and generator state as numpy's own draw, so the same Gram samples bit for bit."""
    import dpreg.estimators.gram_sketch as gs

    A = np.random.default_rng(1).standard_normal((40, 5))
    factor = gs.gram_factor(A)
    monkeypatch.setattr(gs, "_COMPILED_MIN_DRAWS", 0)
    out = []
    for fill in (gs.standard_normal_fill, lambda rng, buf: rng.standard_normal(out=buf)):
        monkeypatch.setattr(gs, "standard_normal_fill", fill)
        rng = np.random.default_rng(9)
        out.append((gs.sample_sketch_gram(factor, 0.3, 12, rng, kernel=kernel), rng.random()))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    assert out[0][1] == out[1][1]


def test_auto_takes_blas_from_its_dimension_with_the_same_draws(monkeypatch):
    """``kernel="auto"`` switches to BLAS at ``BLAS_MIN_DIM`` columns: same draws and the
    same matrices as the forced kernel, bit for bit."""
    import dpreg.estimators.gram_sketch as gs

    factor = gs.gram_factor(np.random.default_rng(3).standard_normal((30, 6)))
    monkeypatch.setattr(gs, "BLAS_MIN_DIM", 6)
    auto = gs.sample_sketch_gram(factor, np.full(3, 0.5), 40, np.random.default_rng(2))
    blas = gs.sample_sketch_gram(
        factor, np.full(3, 0.5), 40, np.random.default_rng(2), kernel="blas"
    )
    np.testing.assert_array_equal(auto, blas)
    monkeypatch.setattr(gs, "BLAS_MIN_DIM", 7)
    numpy = gs.sample_sketch_gram(factor, np.full(3, 0.5), 40, np.random.default_rng(2))
    np.testing.assert_allclose(
        numpy, blas, rtol=0, atol=48 * np.finfo(float).eps * np.abs(blas).max()
    )


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    p=st.integers(1, 41),
    trials=st.integers(1, 5),
    rank=st.integers(0, 41),
    log_eta=st.floats(-8.0, 2.0),
)
def test_padded_bartlett_kernel_is_bit_identical_to_the_row_kernel(seed, p, trials, rank, log_eta):
    """The SIMD-padded kernel and the reference loops: every entry the same IEEE
    operations in the same order, so the same bits (every p mod 4, singular Grams)."""
    from dpreg.estimators.gram_sketch import _bartlett_kernel, _bartlett_rows_kernel

    rng = np.random.default_rng(seed)
    A = rng.normal(size=(p + 3, p)) * (rng.uniform(size=p) < 0.8)
    A[:, min(rank, p) :] = 0.0
    f = gram_factor(A)
    var = (10.0 ** (log_eta + rng.uniform(-1, 1, size=trials))) ** 2
    diagonal = np.sqrt(rng.chisquare(rng.integers(p, 6 * p + 2) - np.arange(p), (trials, p)))
    below = rng.standard_normal((trials, p * (p - 1) // 2))
    outs = []
    for kernel in (_bartlett_kernel(), _bartlett_rows_kernel()):
        out = np.full((trials, p, p), np.nan)
        kernel(f.eigenvectors, f.eigenvalues, var, diagonal, below, out)
        outs.append(out.tobytes())
    assert outs[0] == outs[1]


@pytest.mark.parametrize("per_trial", [False, True])
def test_bartlett_degrees_of_freedom_give_the_broadcast_reference_draws(per_trial):
    """The chi-square degrees of freedom k_t - i (filled in place) are the former
    ``broadcast_to(...).astype`` values: the same Gram samples and generator state."""
    import dpreg.estimators.gram_sketch as gs

    factor = gs.gram_factor(_matrix(4, 60, 3))
    trials, p = 9, 3
    k = np.arange(5, 5 + trials) if per_trial else 7
    noise = np.linspace(0.0, 1.0, trials)
    rng = np.random.default_rng(11)
    got = gs.sample_sketch_gram(factor, noise, k, rng, kernel="numpy")
    state = rng.random()
    # the reference: the former draw order written out with broadcast_to + astype
    ref_rng = np.random.default_rng(11)
    ks = np.asarray(k, dtype=np.int64)
    df = np.broadcast_to(ks[..., None] - np.arange(p), (trials, p)).astype(np.float64)
    diagonal = np.sqrt(ref_rng.chisquare(df))
    below = ref_rng.standard_normal((trials, p * (p - 1) // 2))
    L = factor.factor(noise * noise)
    B = np.zeros((trials, p, p))
    B[:, np.arange(p), np.arange(p)] = diagonal
    rows, cols = np.tril_indices(p, -1)
    B[:, rows, cols] = below
    LB = L @ B
    out = LB @ LB.transpose(0, 2, 1)
    np.testing.assert_array_equal(got, 0.5 * (out + out.transpose(0, 2, 1)))
    assert state == ref_rng.random()
