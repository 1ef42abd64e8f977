from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpreg.data import (
    BrownDGP,
    IVLinearDGP,
    LinearGaussianDGP,
    SyntheticDGP,
    dgp_names,
    make_dgp,
    register_dgp,
)
from dpreg.data.synthetic import draw_iv_truth_batch, sample_iv_batch
from dpreg.estimators.ols import two_sls_reference

SPECS = {
    "linear_gaussian": {"d": 4, "sigma": 0.5, "covariance": "anisotropic"},
    "iv_linear": {"p": 2, "q": 3, "r": 2},
    "brown2024": {"p": 4, "design": "anisotropic", "noise_mean": 1.0},
}


def _draw(name, seed, n=200):
    rng = np.random.default_rng(seed)
    dgp = make_dgp(name, rng=rng, **SPECS[name])
    return dgp, dgp.sample(n, rng=rng)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_same_seed_same_data_other_seed_different(name):
    (_, a), (_, b), (_, c) = _draw(name, 7), _draw(name, 7), _draw(name, 8)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.allclose(a.X, c.X)
    if a.Z is not None:
        np.testing.assert_array_equal(a.Z, b.Z)
    meta = json.loads(json.dumps(a.metadata()))
    assert meta["preprocessing"][0]["dgp"] == name
    assert meta["sources"] == [{"id": f"synthetic:{name}", "sha256": None}]


def test_registry():
    assert {"linear_gaussian", "iv_linear"} <= set(dgp_names())
    with pytest.raises(ValueError, match=r"unknown DGP 'nope'; known DGPs: .*iv_linear"):
        make_dgp("nope", rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="already registered"):
        register_dgp(IVLinearDGP)
    with pytest.raises(TypeError, match="SyntheticDGP"):
        register_dgp(dict)
    assert issubclass(LinearGaussianDGP, SyntheticDGP)


def test_linear_gaussian_model():
    rng = np.random.default_rng(1)
    dgp = LinearGaussianDGP.draw(rng=rng, d=3, sigma=0.0, theta_norm=2.0)
    assert np.isclose(np.linalg.norm(dgp.theta), 2.0) and dgp.cov is None
    ds = dgp.sample(50, rng=rng)
    np.testing.assert_allclose(ds.y, ds.X @ dgp.theta)  # sigma = 0: exact
    aniso = LinearGaussianDGP.draw(rng=rng, d=5, covariance="anisotropic", condition_number=100)
    ev = np.linalg.eigvalsh(aniso.cov)
    assert np.isclose(ev.max() / ev.min(), 100.0)
    big = aniso.sample(20000, rng=rng)
    # Gaussian rows: Var(S_ij) = (S_ii S_jj + S_ij^2) / n entrywise; five standard errors
    cov, n = aniso.cov, big.X.shape[0]
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / n)
    assert np.all(np.abs(np.cov(big.X.T) - cov) <= 5 * se)


def test_iv_linear_matches_liang2025_dgp():
    rng = np.random.default_rng(3)
    dgp = make_dgp("iv_linear", rng=rng, p=2, q=3, r=2)
    assert dgp.Theta.shape == (3, 2) and dgp.Phi.shape == (2, 2)
    assert np.all(np.abs(np.diag(dgp.Theta) - 5.0) < 5.0)  # 5 I + N(0, 1)
    ds = dgp.sample(20000, rng=rng)
    X, Z, y = ds.X, ds.Z, ds.y
    # 2SLS recovers beta; OLS is biased by the confounder.
    Xhat = Z @ np.linalg.lstsq(Z, X, rcond=None)[0]
    beta_2sls = np.linalg.solve(Xhat.T @ X, Xhat.T @ y)
    # within five of its (homoskedastic, asymptotic) standard errors
    se = two_sls_reference(y=y, X=X, Z=Z).std_errors
    assert np.all(np.abs(beta_2sls - dgp.beta) <= 5 * se)
    beta_ols = np.linalg.lstsq(X, y, rcond=None)[0]
    assert np.abs(beta_ols - dgp.beta).max() > 0.02
    truth = dgp.truth()
    assert set(truth) == {"beta", "Theta", "Phi", "phi"}


# ------------------------------------------ the batched Section 4.1 DGP (Liang et al.)


def test_dgp_moments_match_section_4_1():
    """E[z z^T] = I, Cov(x-error, y-error) = Phi^T phi, Cov(x-error) = Phi^T Phi + I."""
    dgp = IVLinearDGP.draw(rng=np.random.default_rng(3), p=3, q=4, r=2)
    truth = dgp.truth_batch()
    N = 200_000
    Z, X, y = sample_iv_batch(truth, n=N, trials=1, rng=np.random.default_rng(11))
    Z, X, y = Z[0], X[0], y[0]
    ex = X - Z @ dgp.Theta  # x-error: Phi^T u + eps_x
    ey = y - X @ dgp.beta  # y-error: phi^T u + eps_y

    def check(products: np.ndarray, expected: np.ndarray) -> None:
        mean = products.mean(axis=0)
        se = products.std(axis=0, ddof=1) / math.sqrt(N)
        assert np.all(np.abs(mean - expected) < 5 * se), (mean, expected, se)

    check(np.einsum("ni,nj->nij", Z, Z), np.eye(4))
    check(ex * ey[:, None], dgp.Phi.T @ dgp.phi)
    check(np.einsum("ni,nj->nij", ex, ex), dgp.Phi.T @ dgp.Phi + np.eye(3))
    check(Z * ey[:, None], np.zeros(4))  # exclusion restriction
    check(Z, np.zeros(4))


def test_truth_batch_distribution():
    m = 4000
    t = draw_iv_truth_batch(np.random.default_rng(0), p=2, q=3, r=4, trials=m)
    assert t["beta"].shape == (m, 2) and t["Theta"].shape == (m, 3, 2)
    assert t["Phi"].shape == (m, 4, 2) and t["phi"].shape == (m, 4)
    se = 1 / math.sqrt(m)  # standard error of the mean of m draws with sd 1
    # Standard error of the sample sd of m normal draws with sd 1: 1/sqrt(2(m - 1)) ~ 0.011,
    # so 5 SE ~ 0.056; an entry sd off by 10 % (0.1) fails.
    se_sd = 1 / math.sqrt(2 * (m - 1))
    np.testing.assert_allclose(t["Theta"].mean(axis=0), 5 * np.eye(3, 2), atol=5 * se)
    np.testing.assert_allclose(t["Theta"].std(axis=0, ddof=1), 1.0, atol=5 * se_sd)
    np.testing.assert_allclose(t["beta"].mean(axis=0), 0.0, atol=5 * se)


def test_batches_draw_in_the_order_of_the_dgp():
    """One trial of the batched draws is the DGP's draw and sample from the same generator."""
    dgp = IVLinearDGP.draw(rng=np.random.default_rng(8), p=2, q=3, r=4)
    batch = draw_iv_truth_batch(np.random.default_rng(8), p=2, q=3, r=4, trials=1)
    for key, value in dgp.truth_batch().items():
        np.testing.assert_array_equal(batch[key], value)
    ds = dgp.sample(50, rng=np.random.default_rng(9))
    Z, X, y = sample_iv_batch(dgp.truth_batch(), n=50, trials=1, rng=np.random.default_rng(9))
    np.testing.assert_array_equal(Z[0], ds.Z)
    np.testing.assert_allclose(X[0], ds.X, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y[0], ds.y, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda r: make_dgp("iv_linear", rng=r, p=3, q=2, r=1), ValueError, "q >= p"),
        (lambda r: make_dgp("iv_linear", rng=None, p=1, q=1, r=1), TypeError, "Generator"),
        (lambda r: make_dgp("linear_gaussian", rng=r, d=0), ValueError, "d must be"),
        (
            lambda r: make_dgp("linear_gaussian", rng=r, d=2, covariance="x"),
            ValueError,
            "covariance",
        ),
        (lambda r: make_dgp("linear_gaussian", rng=r, d=2).sample(0, rng=r), ValueError, "n must"),
        (
            lambda r: make_dgp("linear_gaussian", rng=r, d=2).sample(5, rng=1),
            TypeError,
            "Generator",
        ),
        (
            lambda r: LinearGaussianDGP(theta=[1.0, 2.0], cov=-np.eye(2)),
            ValueError,
            "positive definite",
        ),
        (lambda r: LinearGaussianDGP(theta=[1.0], sigma=-1), ValueError, "sigma"),
        (
            lambda r: IVLinearDGP(beta=[1.0], Theta=[[1.0]], Phi=[[1.0]], phi=[1.0, 2.0]),
            ValueError,
            "phi must have shape",
        ),
    ],
)
def test_bad_inputs(call, exc, match):
    with pytest.raises(exc, match=match):
        call(np.random.default_rng(0))


def test_brown2024_designs():
    """Brown et al. (2024), Section 4 / App. B: theta* on the sphere, the two designs."""
    rng = np.random.default_rng(0)
    dgp = BrownDGP.draw(rng=rng, p=6, design="anisotropic")
    data = dgp.sample(40000, rng=rng)
    X, y, theta = data.X, data.y, dgp.theta
    assert np.linalg.norm(theta) == pytest.approx(1.0)
    n, p = X.shape
    eig = np.linalg.eigvalsh(X.T @ X / n)
    # population spectrum {2, 1, U[1, 2]...}: the sample extremes move by O(lambda sqrt(p/n))
    # (Marchenko-Pastur edge); five times that scale
    edge = 5 * np.sqrt(p / n)
    assert eig.min() == pytest.approx(1.0, abs=1.0 * edge)
    assert eig.max() == pytest.approx(2.0, abs=2.0 * edge)
    resid = y - X @ theta  # N(0, 1) noise: SE of the mean 1/sqrt(n), of the sd 1/sqrt(2n)
    assert resid.mean() == pytest.approx(0.0, abs=5 / np.sqrt(n))
    assert resid.std() == pytest.approx(1.0, abs=5 / np.sqrt(2 * n))
    rng = np.random.default_rng(0)
    shifted = make_dgp("brown2024", rng=rng, p=p, noise_mean=1.0)
    data = shifted.sample(n, rng=rng)
    # entries of X'X/n: SE 1/sqrt(n) off the diagonal, sqrt(2/n) on it
    assert np.allclose(data.X.T @ data.X / n, np.eye(p), rtol=0, atol=5 * np.sqrt(2 / n))
    resid = data.y - data.X @ shifted.theta
    assert resid.mean() == pytest.approx(1.0, abs=5 / np.sqrt(n))
    assert shifted.params() == {"p": p, "design": "isotropic", "sigma": 1.0, "noise_mean": 1.0}
    with pytest.raises(ValueError, match="design"):
        BrownDGP.draw(rng=np.random.default_rng(0), p=2, design="sparse")
    with pytest.raises(ValueError, match="sigma"):
        BrownDGP.draw(rng=np.random.default_rng(0), p=2, sigma=-1.0)


@pytest.mark.parametrize("compiled_from", [0, 2**62])
@pytest.mark.parametrize("design", ["isotropic", "anisotropic"])
@pytest.mark.parametrize("p", [1, 2, 5])
def test_brown2024_draw_order_is_pinned(design, p, compiled_from, monkeypatch):
    """theta*, then the N(0, 1) design, then (anisotropic) u_3..u_p and U, then the noise.

    The Brown et al. studies draw every data set in this order from one Generator; a
    change of order would change every published table, so it is spelled out here.
    ``compiled_from = 0``: the normals are drawn by the compiled fill (large data sets),
    which must give numpy's values and leave the generator where numpy would.
    """
    from scipy.stats import special_ortho_group

    import dpreg.data.synthetic as synthetic

    monkeypatch.setattr(synthetic, "_COMPILED_MIN_DRAWS", compiled_from)

    n, sigma, mu = 30, 0.7, 0.3
    rng = np.random.default_rng([5, p])
    dgp = BrownDGP.draw(rng=rng, p=p, design=design, sigma=sigma, noise_mean=mu)
    data = dgp.sample(n, rng=rng)
    ref = np.random.default_rng([5, p])
    theta = ref.standard_normal(p)
    theta /= np.linalg.norm(theta)
    G = ref.standard_normal((n, p))
    if design == "anisotropic":
        lam = np.concatenate([[2.0, 1.0], ref.uniform(1.0, 2.0, size=max(p - 2, 0))])[:p]
        U = special_ortho_group.rvs(p, random_state=ref) if p > 1 else np.ones((1, 1))
        G = G @ (U * np.sqrt(lam)).T
    y = G @ theta + mu + sigma * ref.standard_normal(n)
    np.testing.assert_array_equal(dgp.theta, theta)
    np.testing.assert_array_equal(data.X, G)
    np.testing.assert_array_equal(data.y, y)
    assert rng.standard_normal() == ref.standard_normal()  # both streams at the same place


@pytest.mark.parametrize("compiled_from", [0, 2**62])
@pytest.mark.parametrize("design", ["isotropic", "anisotropic"])
@pytest.mark.parametrize("p", [1, 4])
def test_brown2024_sample_into_a_reused_buffer(design, p, compiled_from, monkeypatch):
    """``sample(out=buf)``: the same data and generator state as a fresh array, any contents.

    The buffer is reused over data sets (Figs. 2/8: one per trial), so a stale value left
    in it, or a draw skipped, would show as a difference from the fresh draw.
    """
    import dpreg.data.synthetic as synthetic

    monkeypatch.setattr(synthetic, "_COMPILED_MIN_DRAWS", compiled_from)
    n = 25
    buf = np.full((n, p), np.nan)
    rot = np.full((n, p), np.nan)
    for trial in range(6):  # later draws overwrite the first's values
        rotated = rot if trial >= 3 else None  # the anisotropic design's own buffer
        rng, ref = np.random.default_rng([7, trial]), np.random.default_rng([7, trial])
        dgp = BrownDGP.draw(rng=rng, p=p, design=design, noise_mean=0.5)
        fresh_dgp = BrownDGP.draw(rng=ref, p=p, design=design, noise_mean=0.5)
        data = dgp.sample(n, rng=rng, out=buf, rotated=rotated)
        fresh = fresh_dgp.sample(n, rng=ref)
        assert data.X.tobytes() == fresh.X.tobytes()
        assert data.y.tobytes() == fresh.y.tobytes()
        assert rng.bit_generator.state == ref.bit_generator.state
        # isotropic: the design is the buffer itself; anisotropic: a rotated copy of it,
        # written into ``rotated`` when given
        assert (data.X is buf) == (design == "isotropic")
        assert (data.X is rot) == (design == "anisotropic" and rotated is not None)


def test_brown2024_sample_rotated_buffer_is_checked():
    dgp = BrownDGP.draw(rng=np.random.default_rng(0), p=3, design="anisotropic")
    buf = np.empty((4, 3))
    with pytest.raises(ValueError, match="rotated must not share memory with out"):
        dgp.sample(4, rng=np.random.default_rng(1), out=buf, rotated=buf)
    with pytest.raises(ValueError, match=r"rotated must be a C-contiguous float64 ndarray"):
        dgp.sample(4, rng=np.random.default_rng(1), rotated=np.empty((3, 4)).T)


@pytest.mark.parametrize(
    ("out", "match"),
    [
        (np.empty((5, 3)), r"out must be a C-contiguous float64 ndarray of shape \(4, 3\)"),
        (np.empty((4, 3), dtype=np.float32), "out must be a C-contiguous float64"),
        (np.empty((3, 4)).T, "out must be a C-contiguous float64"),
        ([[0.0] * 3] * 4, "out must be a C-contiguous float64"),
    ],
)
def test_brown2024_sample_bad_buffer(out, match):
    dgp = BrownDGP.draw(rng=np.random.default_rng(0), p=3)
    with pytest.raises(ValueError, match=match):
        dgp.sample(4, rng=np.random.default_rng(1), out=out)
    frozen = np.empty((4, 3))
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="out must be writeable"):
        dgp.sample(4, rng=np.random.default_rng(1), out=frozen)
