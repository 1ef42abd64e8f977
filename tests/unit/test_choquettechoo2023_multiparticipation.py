"""Multi-participation sensitivity and ME (Choquette-Choo et al. 2023b).

Not in this paper; see docs/notes/choquettechoo2023.md §2.5 item 3.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpreg.estimators.ftrl import fit_dp_ftrl
from dpreg.estimators.ftrl_correlations import (
    damped_anti_pgd,
    finite_toeplitz,
    independent,
    nu_ftrl,
    optimal_cc,
)
from dpreg.estimators.ftrl_factorizations import (
    fft_factorization,
    optimal_factorization,
    optimal_multi_participation_factorization,
    toeplitz_factorization,
    tree_aggregation,
)
from dpreg.privacy.budgets import ZCDP
from dpreg.privacy.correlated import (
    multi_participation_sensitivity_sq,
    participation_patterns,
    pattern_sensitivity_sq,
    toeplitz_matrix,
)
from dpreg.theory.ftrl_table3 import tuned_nu

# ------------------------------------------------------------------ independent references


def _all_patterns(T: int, k: int, b: int, schema: str) -> list[tuple[int, ...]]:
    """Every (not only maximal) pattern, by itertools (independent of the library)."""
    if schema == "fixed_epoch":
        return [tuple(range(i, min(T, i + k * b), b)) for i in range(min(b, T))]
    out = []
    for size in range(1, k + 1):
        for pos in itertools.combinations(range(T), size):
            if np.all(np.diff(pos) >= b):
                out.append(pos)
    return out


def _brute_aligned(C: np.ndarray, T: int, k: int, b: int, schema: str) -> float:
    """max_pi ||sum_{j in pi} C[:, j]||^2 (the worst case when the Gram matrix is >= 0)."""
    return max(
        float(np.sum(C[:, list(p)].sum(axis=1) ** 2)) for p in _all_patterns(T, k, b, schema)
    )


def _ascent_value(X: np.ndarray, restarts: int = 16, seed: int = 0) -> float:
    """max over unit vectors g_j in R^p of sum_ij X_ij <g_i, g_j> by block-coordinate ascent.

    Each update g_i <- normalise(sum_{j != i} X_ij g_j) cannot decrease the objective; the
    best of several random starts (vectorised) is a lower bound, tight in practice.
    """
    p = X.shape[0]
    G = np.random.default_rng(seed).standard_normal((restarts, p, p))
    G /= np.linalg.norm(G, axis=2, keepdims=True)
    for _ in range(300):
        for i in range(p):
            v = np.einsum("j,rjd->rd", X[i], G) - X[i, i] * G[:, i]
            n = np.linalg.norm(v, axis=1, keepdims=True)
            G[:, i] = np.where(n > 0, v / np.maximum(n, 1e-300), G[:, i])
    return float(np.max(np.einsum("ij,rid,rjd->r", X, G, G)))


# ------------------------------------------------------------------ sensitivity


@pytest.mark.parametrize("schema", ["min_sep", "fixed_epoch"])
@pytest.mark.parametrize(
    "corr",
    [nu_ftrl(0.2), optimal_cc(), damped_anti_pgd(0.3), independent()],
    ids=lambda c: c.label(),
)
def test_toeplitz_shortcut_equals_brute_force(corr, schema):
    T = 14
    c = corr.encoder(T)
    C = toeplitz_matrix(c)
    for k, b in [(1, 3), (2, 5), (3, 4), (4, 3), (5, 4)]:
        brute = _brute_aligned(C, T, k, b, schema)
        assert multi_participation_sensitivity_sq(c, k, b, schema=schema) == pytest.approx(
            brute, rel=1e-12
        )
        # the general (matrix) path agrees
        assert multi_participation_sensitivity_sq(C, k, b, schema=schema) == pytest.approx(
            brute, rel=1e-12
        )


def test_single_participation_and_too_many_participations():
    c = nu_ftrl(0.1).encoder(14)
    assert multi_participation_sensitivity_sq(c, 1, 4) == pytest.approx(np.dot(c, c))
    # only (14 - 1) // 4 + 1 = 4 participations fit, whatever k says
    assert multi_participation_sensitivity_sq(c, 9, 4) == multi_participation_sensitivity_sq(
        c, 4, 4
    )
    assert multi_participation_sensitivity_sq(independent().encoder(10), 3, 2) == 3.0
    with pytest.raises(ValueError, match="participations"):
        multi_participation_sensitivity_sq(c, 0, 4)
    with pytest.raises(ValueError, match="separation"):
        multi_participation_sensitivity_sq(c, 2, 0)
    with pytest.raises(ValueError, match="schema"):
        multi_participation_sensitivity_sq(c, 2, 3, schema="cyclic")
    with pytest.raises(ValueError, match="encoder"):
        multi_participation_sensitivity_sq(np.array([1.0, np.nan]), 2, 1)


def test_first_pattern_is_not_always_the_worst():
    # non-monotone c >= 0: participations 5 apart overlap, 4 apart do not
    c = np.zeros(12)
    c[0] = c[5] = 1.0
    first = float(np.sum(toeplitz_matrix(c)[:, [0, 4, 8]].sum(axis=1) ** 2))
    worst = multi_participation_sensitivity_sq(c, 3, 4)
    assert worst == pytest.approx(_brute_aligned(toeplitz_matrix(c), 12, 3, 4, "min_sep"))
    assert worst > first + 1
    # alternating signs: aligned gradients at an odd separation cancel; the worst case
    # flips them (|X_12|), which the aligned formula misses
    alt = finite_toeplitz([1.0, 0.7]).encoder(12)  # c_t = (-0.7)^t
    C = toeplitz_matrix(alt)
    X = C.T @ C
    value = multi_participation_sensitivity_sq(alt, 2, 3)
    pairs = [p for p in _all_patterns(12, 2, 3, "min_sep") if len(p) == 2]
    expected = max(X[i, i] + X[j, j] + 2 * abs(X[i, j]) for i, j in pairs)
    assert value == pytest.approx(expected, rel=1e-12)
    assert value > _brute_aligned(C, 12, 2, 3, "min_sep") + 0.1


def test_pattern_value_exceeds_sign_flips_for_frustrated_gram():
    # three unit columns at 120 degrees: X = 1.5 I - 0.5 11'; the worst gradients are
    # also at 120 degrees: <X, X> = 4.5 = lambda_max * trace, while the best signs give 4
    X = 1.5 * np.eye(3) - 0.5 * np.ones((3, 3))
    signs = max(
        float(u @ X @ u) for u in (np.array(s) for s in itertools.product([-1, 1], repeat=3))
    )
    assert signs == pytest.approx(4.0)
    assert pattern_sensitivity_sq(X) == pytest.approx(4.5, rel=1e-7)
    assert pattern_sensitivity_sq(X) >= 4.5  # certified upper bound


def test_general_encoder_against_coordinate_ascent():
    rng = np.random.default_rng(5)
    T, k, b = 9, 3, 2
    C = rng.standard_normal((10, T))
    X = C.T @ C
    value = multi_participation_sensitivity_sq(C, k, b)
    reference = max(_ascent_value(X[np.ix_(p, p)]) for p in _all_patterns(T, k, b, "min_sep"))
    assert value >= reference * (1 - 1e-9)  # an upper bound ...
    assert value == pytest.approx(reference, rel=1e-6)  # ... and tight


def test_participation_patterns_are_the_maximal_valid_sets():
    T, k, b = 13, 3, 4
    got = set(participation_patterns(T, k, b))
    every = _all_patterns(T, k, b, "min_sep")
    for p in got:
        assert p in every
    for p in every:  # every valid pattern extends to a returned one
        assert any(set(p) <= set(q) for q in got)
    for p in got:  # none extends further
        assert len(p) == k or not any(
            all(abs(j - q) >= b for q in p) for j in range(T) if j not in p
        )
    assert participation_patterns(10, 3, 4, schema="fixed_epoch") == [
        (0, 4, 8),
        (1, 5, 9),
        (2, 6),
        (3, 7),
    ]


# ------------------------------------------------------------------ multi-participation ME


@pytest.fixture(scope="module")
def me_fixed():
    return optimal_multi_participation_factorization(12, 3, 4, schema="fixed_epoch")


@pytest.mark.parametrize("schema", ["fixed_epoch", "min_sep"])
def test_multi_participation_me_beats_every_mechanism(schema, me_fixed):
    T, k, b = 12, 3, 4
    me = (
        me_fixed
        if schema == "fixed_epoch"
        else optimal_multi_participation_factorization(T, k, b, schema=schema)
    )
    np.testing.assert_allclose(me.encoder, np.tril(me.encoder), atol=1e-12)
    sens = me.multi_participation_sensitivity_sq(k, b, schema=schema)  # brute force
    assert sens <= 1 + 1e-6
    me_error = sens * me.prefix_error
    others = [
        toeplitz_factorization(c, T)
        for c in (
            independent(),
            optimal_cc(),
            nu_ftrl(0.05),
            nu_ftrl(0.3),
            nu_ftrl(tuned_nu(T, participations=k, separation=b, schema=schema)),
            damped_anti_pgd(0.5),
        )
    ]
    others += [
        tree_aggregation(T),
        tree_aggregation(T, full_honaker=True),
        fft_factorization(T).as_matrix(),
        optimal_factorization(T),
    ]
    for f in others:
        total = f.multi_participation_sensitivity_sq(k, b, schema=schema) * f.prefix_error
        assert me_error <= total * (1 + 1e-5), f.name
    # single-participation optimum is beaten clearly under k = 3
    single = optimal_factorization(T)
    single_total = single.multi_participation_sensitivity_sq(k, b, schema=schema)
    assert me_error < 0.99 * single_total * single.prefix_error


def test_multi_participation_me_formulations_and_limits(me_fixed):
    T, k, b = 12, 3, 4
    nonneg = optimal_multi_participation_factorization(
        T, k, b, schema="fixed_epoch", nonnegative=True
    )
    exact_err = me_fixed.multi_participation_sensitivity_sq(k, b, schema="fixed_epoch")
    exact_err *= me_fixed.prefix_error
    nonneg_err = nonneg.multi_participation_sensitivity_sq(k, b, schema="fixed_epoch")
    nonneg_err *= nonneg.prefix_error
    assert exact_err <= nonneg_err * (1 + 1e-5)  # the exact constraint set is larger
    # fixed epochs are a subset of min-sep patterns: the min-sep optimum is not better
    min_sep = optimal_multi_participation_factorization(T, k, b, schema="min_sep")
    assert min_sep.prefix_error >= me_fixed.prefix_error * (1 - 1e-5)
    # k = 1 is the single-participation optimum
    one = optimal_multi_participation_factorization(T, 1, b)
    assert one.total_error == pytest.approx(optimal_factorization(T).total_error, rel=1e-5)
    with pytest.raises(ValueError, match="T must"):
        optimal_multi_participation_factorization(100, 2, 10)


def test_dp_ftrl_runs_with_fft_and_multi_participation_factorizations(me_fixed):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((48, 2)) / 2
    y = X @ np.array([0.3, -0.2])
    for f in (fft_factorization(12), me_fixed):
        fit = fit_dp_ftrl(
            X,
            y,
            budget=ZCDP(1.0),
            rng=rng,
            trials=2,
            eta=0.1,
            clip=1.0,
            correlation=f,
            batch_size=4,
        )
        assert fit.diagnostics["sensitivity_sq"] == pytest.approx(f.sensitivity_sq)
        assert fit.theta.shape == (2, 2) and np.all(np.isfinite(fit.theta))
    quiet = fit_dp_ftrl(
        X,
        y,
        budget=ZCDP(math.inf),
        rng=np.random.default_rng(1),
        eta=0.1,
        clip=1.0,
        correlation=fft_factorization(12),
        batch_size=4,
    )
    sgd = fit_dp_ftrl(
        X,
        y,
        budget=ZCDP(math.inf),
        rng=np.random.default_rng(1),
        eta=0.1,
        clip=1.0,
        correlation="sgd",
        batch_size=4,
    )
    np.testing.assert_allclose(quiet.theta, sgd.theta)


@pytest.mark.parametrize(
    ("T", "k", "b"), [(12, 3, 4), (15, 3, 5), (16, 5, 3), (10, 1, 10), (9, 2, 4)]
)
def test_fft_fixed_epoch_shortcut_equals_the_explicit_encoder(T, k, b):
    # the circulant Gram shortcut (no N x T matrix) against the brute force over patterns
    f = fft_factorization(T)
    shortcut = f.multi_participation_sensitivity_sq(k, b, schema="fixed_epoch")
    explicit = multi_participation_sensitivity_sq(f.encoder, k, b, schema="fixed_epoch")
    assert shortcut == pytest.approx(explicit, rel=1e-12)
    # min_sep still takes the brute force
    assert f.multi_participation_sensitivity_sq(k, b) == pytest.approx(
        multi_participation_sensitivity_sq(f.encoder, k, b), rel=1e-12
    )
    with pytest.raises(ValueError, match="participations"):
        f.multi_participation_sensitivity_sq(0, b, schema="fixed_epoch")
