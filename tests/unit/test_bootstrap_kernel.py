"""The bootstrap's compiled replicates (dpreg.inference.bootstrap_kernel) against the reference.

Three levels: each kernel against the numpy computation it replaces (LAPACK eigenvalues,
the Wishart matrix formed and solved by the estimators' rule), equal to round-off; IHM's
whole bootstrap, whose draws are unchanged, equal to round-off; and linear mixing and
Sheffet's sketch, whose Wishart draws go through another square root of the same matrix
(the same law, not the same values), by two-sample tests against the reference path with
levels from their standard errors.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators import get_estimator
from dpreg.estimators.methods import PublicInputs
from dpreg.inference import bootstrap as boot
from dpreg.inference.bootstrap_kernel import (
    adassp_systems,
    adassp_systems_reference,
    bordered_min_eigenvalue,
    ihm_solutions,
    ihm_steps,
    ihm_steps_reference,
    interval_quantiles,
    sketch_solutions,
)
from dpreg.privacy.budgets import ApproxDP

U = np.finfo(np.float64).eps / 2


def _plug_in(rng: np.random.Generator, d: int, zeros: int, repeated: bool):
    """``G = V diag(w) V'`` with ``zeros`` eigenvalues clamped at 0 (and repeated ones)."""
    A = rng.normal(size=(d, d))
    w, V = np.linalg.eigh(A @ A.T)
    if repeated:
        w[:] = w[-1]
    w[:zeros] = 0.0
    return w, V


def _bartlett(rng: np.random.Generator, lead: tuple[int, ...], p: int, k: int):
    return boot._bartlett_draws(rng, lead, p, k)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 11),
    zeros=st.integers(0, 11),
    repeated=st.booleans(),
    log_scale=st.integers(-8, 2),
    in_range=st.booleans(),
)
def test_min_eigenvalue_of_the_bordered_gram_is_lapacks(
    seed, d, zeros, repeated, log_scale, in_range
):
    rng = np.random.default_rng(seed)
    w, V = _plug_in(rng, d, min(zeros, d), repeated)
    B = 40
    g = rng.normal(size=(B, d)) * 10.0**log_scale
    if in_range:  # g in the range of G (as the simulated X'y): no component on w = 0
        g = (V * w) @ rng.normal(size=(d, B)) * 10.0**log_scale
        g = g.T
    c = rng.uniform(0.0, 3.0, size=B) + np.einsum("bi,bi->b", g, g)
    S = np.empty((B, d + 1, d + 1))
    S[:, :d, :d] = (V * w) @ V.T
    S[:, :d, d] = S[:, d, :d] = g
    S[:, d, d] = c
    eig = np.linalg.eigvalsh(S)
    lam = bordered_min_eigenvalue(w[None], np.einsum("ji,bj->bi", V, g)[None], c[None])[0]
    norm = np.abs(eig).max(axis=1)
    np.testing.assert_array_less(np.abs(lam - eig[:, 0]), 64 * (d + 1) * U * norm + 1e-300)


def _bartlett_x(chi: np.ndarray, low: np.ndarray, d: int) -> np.ndarray:
    """x = B_xx^{-T} b from Bartlett draws of a (d + 1) x (d + 1) factor (numpy solve)."""
    lead = chi.shape[:-1]
    Bf = np.zeros((*lead, d + 1, d + 1))
    idx = np.arange(d + 1)
    Bf[..., idx, idx] = chi
    rows, cols = np.tril_indices(d + 1, -1)
    Bf[..., rows, cols] = low
    Bxx_t = np.swapaxes(Bf[..., :d, :d], -1, -2)
    return np.linalg.solve(Bxx_t, Bf[..., d, :d][..., None])[..., 0]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 10),
    zeros=st.integers(0, 10),
    repeated=st.booleans(),
    k_extra=st.integers(0, 300),
)
def test_sketch_solutions_solve_the_formed_wishart_system(seed, d, zeros, repeated, k_extra):
    """With x = B_xx^{-T} b, theta_b equals M_xx^{-1} M_xy for M = F B B' F' formed and
    solved by the estimators' rule, F the bordered factor (F F' = the shifted Gram)."""
    rng = np.random.default_rng(seed)
    w, V = _plug_in(rng, d, min(zeros, d), repeated)
    B, p, k = 50, d + 1, d + 1 + k_extra
    theta = rng.normal(size=d)
    g = (V * w) @ V.T @ theta + ((V * np.sqrt(w)) @ rng.normal(size=(d, B))).T  # (B, d)
    c = np.einsum("bi,i->b", g, theta) + rng.uniform(0.01, 1.0, size=B)
    eta = np.where(rng.uniform(size=B) < 0.3, 0.0, rng.uniform(0, 1, size=B))
    chi, low = _bartlett(rng, (B,), p, k)
    x = _bartlett_x(chi, low, d)
    est, ok = sketch_solutions(V[None], w[None], g[None], c[None], eta[None], x[None])
    mask = np.ones((1, B), dtype=bool)
    ref = boot._bordered_reference(V[None], w[None], g[None], c[None], eta[None], mask, chi, low)
    r = np.sqrt(w + eta[:, None])
    est, ok = est[0], ok[0]
    assert not ok[r.min(1) == 0].any()  # a zero in r is never solved here
    assert ok[(r.min(1) > 0) & (r.min(1) >= 1e-3 * r.max(1))].all()
    if ok.any():
        # forward errors of order u times the condition of M_xx, at most
        # (r_max / r_min)^2 kappa(W_xx)
        W = boot._wishart_from(np.broadcast_to(np.eye(p), (B, p, p)), chi, low)
        ratio = r.max(1)[ok] / r.min(1)[ok]  # r_min > 0 where ok
        cond = np.linalg.cond(W[:, :d, :d])[ok] * ratio**2
        tol = 64 * U * cond[:, None] * (np.abs(ref[ok]).max() + 1e-300)
        assert np.all(np.abs(est[ok] - ref[ok]) < tol)


@pytest.mark.parametrize(("d", "k"), [(1, 2), (3, 4), (3, 12), (10, 53)])
def test_the_solutions_noise_has_the_law_drawn(d, k):
    """x = B_xx^{-T} b (B Bartlett of Wishart_{d+1}(k, I)) has the law of
    z / sqrt(chi^2_{k-d+1}): 20,000 independent draws of each; z-tests of the mean of
    arctan x_j, (arctan x_j)^2 (bounded: x is heavy-tailed when k - d is small) and
    log|x|^2, and a KS test of log|x|^2 (family-wise level about 1e-3)."""
    m = 20_000
    rng = np.random.default_rng(d * 1000 + k)
    chi, low = boot._bartlett_draws(rng, (m,), d + 1, k)
    a = _bartlett_x(chi, low, d)
    b = rng.standard_normal((m, d)) / np.sqrt(rng.chisquare(k - d + 1, size=m))[:, None]
    # heavy tails at small k - d: compare bounded transforms (arctan) and log-norms
    fa = np.column_stack([np.arctan(a), np.arctan(a) ** 2, np.log((a * a).sum(1))])
    fb = np.column_stack([np.arctan(b), np.arctan(b) ** 2, np.log((b * b).sum(1))])
    se = np.sqrt(fa.var(0, ddof=1) / m + fb.var(0, ddof=1) / m)
    z = np.abs(fa.mean(0) - fb.mean(0)) / se
    assert np.all(z < 4.0), z
    assert _ks(fa[:, -1], fb[:, -1]) < 1.95


def test_the_bordered_factor_is_a_square_root_of_the_shifted_gram():
    rng = np.random.default_rng(3)
    d, B = 4, 20
    w, V = _plug_in(rng, d, 1, False)
    theta = rng.normal(size=d)
    g = np.broadcast_to((V * w) @ V.T @ theta, (B, d))
    c = g @ theta + 0.3
    eta = rng.uniform(0, 1, size=B)
    # with B = I (chi = 1, low = 0) the formed Wishart matrix is F F' itself
    chi, low = np.ones((B, d + 1)), np.zeros((B, d * (d + 1) // 2))
    theta_b, ok = sketch_solutions(
        V[None], w[None], g[None], c[None], eta[None], np.zeros((1, B, d))
    )
    exact = np.linalg.solve((V * w) @ V.T + eta[:, None, None] * np.eye(d), g[..., None])[..., 0]
    assert ok.all()
    np.testing.assert_allclose(theta_b[0], exact, rtol=1e-12)  # x = 0: Sigma_xx^{-1} Sigma_xy
    r = np.sqrt(w + eta[:, None])
    l = np.einsum("ji,bj->bi", V, g) / r  # noqa: E741
    F = np.zeros((B, d + 1, d + 1))
    F[:, :d, :d] = V * r[:, None, :]
    F[:, d, :d] = l
    F[:, d, d] = np.sqrt(c + eta - (l * l).sum(1))
    S = np.zeros((B, d + 1, d + 1))
    S[:, :d, :d] = (V * w) @ V.T + eta[:, None, None] * np.eye(d)
    S[:, :d, d] = S[:, d, :d] = g
    S[:, d, d] = c + eta
    np.testing.assert_allclose(boot._wishart_from(F, chi, low), S, atol=1e-13)


@pytest.mark.parametrize(("d", "k", "axis"), [(1, 3, 0), (3, 4, 1), (3, 20, 2), (10, 61, 3)])
def test_ihm_steps_have_the_law_of_the_formed_solve(d, k, axis):
    """k V diag(r)^{-1} W^{-1} v from the drawn W^{-1} e_1 and a reflection, against the
    formed H = F W F'/k solved by the estimators' rule (W Bartlett): 20,000 steps each for
    one (V, r, g) whose direction u is near e_1 (axis 0), near -e_1 or generic; z-tests of
    the mean and second moment of arctan of every coordinate and of the log norm, KS of
    the log norm (family-wise level about 1e-3)."""
    m = 20_000
    rng = np.random.default_rng(100 * d + k)
    w, V = _plug_in(rng, d, 0, False)
    r = np.broadcast_to(np.sqrt(w + 0.5), (1, m, d))
    v = [np.eye(d)[0], -np.eye(d)[0] + 1e-9, rng.normal(size=d), rng.normal(size=d)][axis]
    g = np.broadcast_to(V @ (r[0, 0] * v), (1, m, d))  # so diag(r)^{-1} V' g = v
    c1 = rng.chisquare(k - d + 1, size=m)
    q = np.column_stack([np.ones(m), rng.standard_normal((m, d - 1))])
    q[:, 1:] /= np.sqrt(rng.chisquare(k - d + 2, size=m))[:, None]
    step, ok = ihm_solutions(V[None], r, g, (q / c1[:, None])[None], k)
    assert ok.all()
    chi, low = boot._bartlett_draws(rng, (m,), d, k)
    F = V[None] * r[0][:, None, :]
    ref = boot._solve(boot._wishart_from(F, chi, low) / k, g[0])
    fa = np.column_stack(
        [np.arctan(step[0]), np.arctan(step[0]) ** 2, np.log((step[0] ** 2).sum(1))]
    )
    fb = np.column_stack([np.arctan(ref), np.arctan(ref) ** 2, np.log((ref**2).sum(1))])
    se = np.sqrt(fa.var(0, ddof=1) / m + fb.var(0, ddof=1) / m)
    z = np.abs(fa.mean(0) - fb.mean(0)) / se
    assert np.all(z < 4.0), z
    assert _ks(fa[:, -1], fb[:, -1]) < 1.95


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    t=st.integers(1, 3),
    nb=st.integers(1, 12),
    d=st.integers(1, 9),
    scale=st.sampled_from([0.0, 1e-3, 0.37, 5.0]),
    zero_ridge=st.booleans(),
)
def test_adassp_systems_equal_numpys_expression_bit_for_bit(seed, t, nb, d, scale, zero_ridge):
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((t, d, d))
    G = G @ np.swapaxes(G, 1, 2) / d  # symmetric only to rounding, as the plug-in Gram
    G[:, 0, -1] += 1e-3  # and explicitly asymmetric: (i, j) and (j, i) stay separate
    upper = rng.standard_normal((t, nb, d * (d + 1) // 2))
    ridge = np.zeros((t, nb)) if zero_ridge else rng.uniform(0.0, 2.0, (t, nb))
    got = adassp_systems(G, scale, upper, ridge)
    ref = adassp_systems_reference(G, scale, upper, ridge)
    assert got.shape == (t, nb, d, d)
    assert np.array_equal(got, ref)
    assert np.array_equal(np.signbit(got), np.signbit(ref))  # zeros' signs too
    # the independent statement: entry (i, j) is G_ij + scale * xi_ij (+ ridge on the diagonal)
    i, j = np.triu_indices(d)
    for a in range(t):
        for b in range(nb):
            xi = np.zeros((d, d))
            xi[i, j] = xi[j, i] = upper[a, b]
            np.testing.assert_allclose(
                got[a, b], G[a] + scale * xi + ridge[a, b] * np.eye(d), rtol=0, atol=1e-15
            )


def test_adassp_systems_reject_bad_shapes():
    with pytest.raises(ValueError, match="upper"):
        adassp_systems(np.eye(3)[None], 1.0, np.zeros((1, 2, 5)), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="ridge"):
        adassp_systems(np.eye(2)[None], 1.0, np.zeros((1, 2, 3)), np.zeros((1, 3)))


@pytest.mark.parametrize("target", ["empirical", "population"])
def test_adassp_bootstrap_is_the_reference_bit_for_bit(target, monkeypatch):
    """AdaSSP's compiled systems keep the draws and the values: the same intervals."""
    rng = np.random.default_rng(0)
    n, d = 2000, 4
    X = rng.uniform(-1, 1, size=(n, d)) / math.sqrt(d)
    y = np.clip(X @ np.linspace(0.4, -0.3, d) + 0.2 * rng.normal(size=n), -1, 1)
    fit = get_estimator("adassp")(
        X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(2), trials=3,
        bound_X=1.0, bound_y=1.0, yty_share=0.1,
    )  # fmt: skip
    public = PublicInputs(n=n, d=d, epsilon=1.0, delta=1e-6, bound_X=1.0, bound_y=1.0)
    fast = _run(fit, public, "fast", monkeypatch, 5, 200, target)
    ref = _run(fit, public, "reference", monkeypatch, 5, 200, target)
    assert np.array_equal(fast.estimates, ref.estimates)
    assert np.array_equal(fast.lower, ref.lower) and np.array_equal(fast.upper, ref.upper)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    t=st.integers(1, 3),
    nb=st.integers(1, 16),
    d=st.integers(1, 12),
    k_extra=st.integers(1, 40),
    paper=st.booleans(),
    sigma=st.sampled_from([0.0, 0.05, 2.0]),
)
def test_ihm_steps_equal_the_numpy_step_to_rounding(seed, t, nb, d, k_extra, paper, sigma):
    rng = np.random.default_rng(seed)
    V = np.linalg.qr(rng.standard_normal((t, d, d)))[0]
    G = V @ (rng.uniform(0.01, 2.0, (t, d, 1)) * np.swapaxes(V, 1, 2))
    theta = rng.standard_normal((t, d))
    th = rng.standard_normal((t, nb, d))
    eta2 = rng.uniform(0.0, 0.5, (t, nb))
    r = rng.uniform(0.1, 2.0, (t, nb, d))
    if d > 1:
        r[0, 0, 0] = 1e-6  # below MIN_RATIO: not solved here (ok False), as the reference
    q = rng.standard_normal((t, nb, d)) / (k_extra + 1.0)
    noise = rng.standard_normal((t, nb, d))
    args = (G, theta, th, eta2, paper, sigma, noise, V, r, q, d + k_extra)
    step, ok, g = ihm_steps(*args)
    ref_step, ref_ok, ref_g = ihm_steps_reference(*args)
    np.testing.assert_array_equal(ok, ref_ok)
    assert ok[0, 0] == (d == 1)
    np.testing.assert_allclose(g, ref_g, rtol=1e-12, atol=1e-12 * np.abs(ref_g).max())
    scale = np.abs(ref_step[ref_ok]).max(initial=0.0)
    np.testing.assert_allclose(step[ok], ref_step[ref_ok], rtol=1e-10, atol=1e-10 * scale)


def test_ihm_steps_reject_bad_shapes():
    one = np.ones((1, 2, 3))
    with pytest.raises(ValueError, match="noise"):
        ihm_steps(np.ones((1, 3, 3)), np.ones((1, 3)), one, np.ones((1, 2)), False, 1.0,
                  np.ones((1, 2, 2)), np.ones((1, 3, 3)), one, one, 5)  # fmt: skip


@pytest.mark.parametrize("variant", ["experiments", "paper"])
def test_ihm_bootstrap_compiled_steps_keep_the_draws(variant, monkeypatch):
    """The compiled step leaves every draw in place (the generator ends in the same
    state) and moves the estimates by rounding only, against the numpy step."""
    rng = np.random.default_rng(0)
    n, d = 3000, 5
    X = rng.uniform(-1, 1, size=(n, d)) / math.sqrt(d)
    y = np.clip(X @ np.linspace(0.4, -0.3, d) + 0.2 * rng.normal(size=n), -1, 1)
    fit = get_estimator("ihm")(
        X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(2), trials=3,
        bound_X=1.0, bound_y=1.0, variant=variant,
    )  # fmt: skip
    public = PublicInputs(n=n, d=d, epsilon=1.0, delta=1e-6, bound_X=1.0, bound_y=1.0)
    out = {}
    for name, threshold in (("compiled", 1), ("numpy", 10**9)):
        monkeypatch.setattr(boot, "COMPILED_MIN_BATCH", threshold)
        gen = np.random.default_rng(7)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", boot.UncheckedRegimeWarning)
            ci = boot.bootstrap_intervals(
                fit, public=public, rng=gen, replicates=300, require_checked=False
            )
        out[name] = (ci, gen.bit_generator.state)
    (ci, state), (ref, ref_state) = out["compiled"], out["numpy"]
    assert state == ref_state  # the same number and order of draws
    np.testing.assert_allclose(ci.estimates, ref.estimates, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(ci.lower, ref.lower, rtol=1e-10, atol=1e-13)
    assert not np.array_equal(ci.estimates, 0 * ref.estimates)


# ----------------------------------------------------------------- whole bootstraps


def _fit_and_public(estimator: str, n: int, d: int, trials: int, seed: int = 1):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(n, d)) / math.sqrt(d)
    y = np.clip(X @ np.linspace(0.4, -0.3, d) + 0.2 * rng.normal(size=n), -1, 1)
    kw = {"dynamic_k": False} if estimator == "linear_mixing" else {}
    fit = get_estimator(estimator)(
        X, y, budget=ApproxDP(1.0, 1e-6), rng=np.random.default_rng(seed), trials=trials,
        bound_X=1.0, bound_y=1.0, **kw,
    )  # fmt: skip
    public = PublicInputs(n=n, d=d, epsilon=1.0, delta=1e-6, bound_X=1.0, bound_y=1.0)
    return fit, public


def _run(fit, public, path, monkeypatch, seed, replicates, target="empirical"):
    monkeypatch.setattr(boot, "_PATH", path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", boot.UncheckedRegimeWarning)
        return boot.bootstrap_intervals(
            fit, public=public, rng=np.random.default_rng(seed), replicates=replicates,
            target=target, require_checked=False,
        )  # fmt: skip


def _paired_z(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|mean(a - b)| / SE per column; rows (trials) independent, a and b paired by row."""
    diff = a - b
    return np.abs(diff.mean(0)) / (diff.std(0, ddof=1) / math.sqrt(diff.shape[0]))


def _ks(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample Kolmogorov-Smirnov statistic times sqrt(m1 m2 / (m1 + m2))."""
    both = np.sort(np.concatenate([a, b]))
    fa = np.searchsorted(np.sort(a), both, side="right") / a.size
    fb = np.searchsorted(np.sort(b), both, side="right") / b.size
    return float(np.abs(fa - fb).max() * math.sqrt(a.size * b.size / (a.size + b.size)))


@pytest.mark.parametrize(
    ("estimator", "target", "solved_here"),
    [
        ("linear_mixing", "empirical", True),
        ("linear_mixing", "population", True),
        ("sheffet_sketch", "population", True),
        ("ihm", "empirical", True),
        ("linear_mixing", "population", False),
        ("ihm", "empirical", False),
    ],
)
def test_bootstrap_has_the_reference_law(estimator, target, solved_here, monkeypatch):
    """The fast path moves the draws, not their law: the simulated estimates and the
    interval lengths of 2,000 releases (one data set) agree with the reference's; also
    with every replicate sent to the fallback (``solved_here=False``: the Wishart matrix
    formed from the bordered factor or IHM's factor, and solved).

    Independent seeds per path. Per coordinate, paired by trial: z-tests of the mean and
    of the variance of the 50 replicates, of the interval length and of its square (12
    tests), and a two-sample KS test of all 100,000 estimates. Family-wise level about
    2e-3: z < 4.0 (two-sided 6e-5 per test) and KS < 1.95 (Kolmogorov law: 1e-3 per
    coordinate; conservative, since the pooled estimates are stratified by trial).
    """
    d, trials, replicates = 3, 2000, 50
    fit, public = _fit_and_public(estimator, 2000, d, trials)
    if not solved_here:
        import dpreg.inference.bootstrap_kernel as bk

        monkeypatch.setattr(bk, "MIN_RATIO", math.inf)
    fast = _run(fit, public, "fast", monkeypatch, 21, replicates, target)
    monkeypatch.undo()
    ref = _run(fit, public, "reference", monkeypatch, 22, replicates, target)
    # per trial (one fit each, independent draws per path): the replicates' mean and
    # variance, the interval length and its square; paired by trial across the paths
    z = np.concatenate(
        [
            _paired_z(fast.estimates.mean(1), ref.estimates.mean(1)),
            _paired_z(fast.estimates.var(1, ddof=1), ref.estimates.var(1, ddof=1)),
            _paired_z(fast.upper - fast.lower, ref.upper - ref.lower),
            _paired_z((fast.upper - fast.lower) ** 2, (ref.upper - ref.lower) ** 2),
        ]
    )
    assert np.all(z < 4.0), z
    est_f, est_r = fast.estimates.reshape(-1, d), ref.estimates.reshape(-1, d)
    ks = [_ks(est_f[:, j], est_r[:, j]) for j in range(d)]
    assert max(ks) < 1.95, ks


@pytest.mark.parametrize("estimator", ["linear_mixing", "sheffet_sketch"])
@pytest.mark.parametrize(("d", "trials", "replicates"), [(3, 4, 200), (6, 1, 30), (1, 2, 10)])
def test_population_target_factors_the_plug_in_once_with_the_same_bits(
    estimator, d, trials, replicates, monkeypatch
):
    """The plug-in Gram factored once per trial: the intervals of one solve per replicate.

    The reference solves ``G_xx`` against each replicate's ``u`` as its own system
    (the repeated matrices through ``solve_symmetric_batch``); the same draws and bits.
    Sizes on both sides of ``COMPILED_MIN_BATCH`` (the compiled and the numpy path).
    """
    fit, public = _fit_and_public(estimator, 3000, d, trials)
    fast = _run(fit, public, "fast", monkeypatch, 11, replicates, "population")

    def repeated(A, b, method="auto"):
        m, R, k = b.shape
        A = np.broadcast_to(A[:, None], (m, R, k, k)).reshape(-1, k, k)
        theta = boot.solve_symmetric_batch(A, b.reshape(-1, k), method=method)[0]
        return theta.reshape(m, R, k), None, None

    monkeypatch.setattr(boot, "solve_symmetric_shared", repeated)
    ref = _run(fit, public, "fast", monkeypatch, 11, replicates, "population")
    assert np.array_equal(fast.estimates, ref.estimates)
    assert np.array_equal(fast.lower, ref.lower) and np.array_equal(fast.upper, ref.upper)


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    t=st.integers(1, 3),
    nb=st.integers(10, 600),
    d=st.integers(1, 4),
    alpha=st.floats(0.001, 0.999),
    data=st.sampled_from(["normal", "ties", "zeros", "nan", "constant"]),
)
def test_interval_quantiles_are_numpys_bit_for_bit(seed, t, nb, d, alpha, data):
    """Order statistics by selection, numpy's interpolation: np.quantile's bits."""
    rng = np.random.default_rng(seed)
    est = rng.normal(size=(t, nb, d))
    if data == "ties":
        est = np.round(est, 1)
    elif data == "zeros":
        est[rng.random(est.shape) < 0.3] = 0.0
        est[rng.random(est.shape) < 0.3] = -0.0
    elif data == "nan":
        est[0, rng.integers(nb), 0] = np.nan
    elif data == "constant":
        est[:] = 2.5
    got = interval_quantiles(est, alpha / 2.0, 1.0 - alpha / 2.0)
    want = np.quantile(est, [alpha / 2.0, 1.0 - alpha / 2.0], axis=1)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)


def test_interval_quantiles_refuse_bad_arguments():
    with pytest.raises(ValueError, match="est must"):
        interval_quantiles(np.zeros((3, 4)), 0.1, 0.9)
    with pytest.raises(ValueError, match="lower < upper"):
        interval_quantiles(np.zeros((1, 20, 2)), 0.9, 0.1)


@pytest.mark.parametrize(("nb", "alpha"), [(11, 0.5), (501, 0.05), (21, 0.1), (500, 0.05)])
def test_interval_quantiles_at_half_weights(nb, alpha):
    """Weights of exactly 0.5 (B = 501, alpha = 0.05: index 12.5) take numpy's other branch."""
    est = np.random.default_rng(nb).normal(size=(2, nb, 3))
    got = interval_quantiles(est, alpha / 2.0, 1.0 - alpha / 2.0)
    np.testing.assert_array_equal(got, np.quantile(est, [alpha / 2.0, 1.0 - alpha / 2.0], axis=1))


@pytest.mark.parametrize("estimator", ["linear_mixing", "sheffet_sketch"])
def test_sketch_plug_in_reused_across_targets_keeps_the_bits(estimator, monkeypatch):
    """Both targets, twice, with the plug-in memo and with it recomputed: the same bits.

    The second call of each pair reuses the first's plug-in arrays; an in-place change of
    them by the first bootstrap would show as a difference.
    """
    fit, public = _fit_and_public(estimator, 3000, 4, 3)
    boot._PLUG_IN_MEMO.clear()
    order = ["empirical", "population", "population", "empirical"]
    got = [_run(fit, public, "fast", monkeypatch, 20 + i, 100, tg) for i, tg in enumerate(order)]
    monkeypatch.setattr(boot, "_sketch_plug_in_memo", boot._sketch_plug_in)
    want = [_run(fit, public, "fast", monkeypatch, 20 + i, 100, tg) for i, tg in enumerate(order)]
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g.estimates, w.estimates)
        assert np.array_equal(g.lower, w.lower) and np.array_equal(g.upper, w.upper)
        for key in w.metadata:
            if isinstance(w.metadata[key], np.ndarray):
                assert np.array_equal(g.metadata[key], w.metadata[key])


def test_sketch_plug_in_memo_keys_on_its_inputs():
    """A different release (or sketch size) is not served the previous plug-in."""
    rng = np.random.default_rng(4)
    A = rng.normal(size=(2, 40, 4))
    M = np.swapaxes(A, 1, 2) @ A
    theta, eta2 = rng.normal(size=(2, 3)), np.array([0.1, 0.2])
    first = boot._sketch_plug_in_memo(M, theta, eta2, 40)
    for args in [(M * 1.5, theta, eta2, 40), (M, theta + 1, eta2, 40), (M, theta, eta2 * 2, 40),
                 (M, theta, eta2, 41)]:  # fmt: skip
        boot._sketch_plug_in_memo(M, theta, eta2, 40)  # the memo holds this call
        got = boot._sketch_plug_in_memo(*args)
        want = boot._sketch_plug_in(*args)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
    again = boot._sketch_plug_in_memo(M, theta, eta2, 40)
    for g, w in zip(again, first, strict=True):
        np.testing.assert_array_equal(g, w)
