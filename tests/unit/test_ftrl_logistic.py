"""DP-FTRL / DP-SGD multinomial logistic regression and the ``ftrl_digits`` kind (issue 17).

The budget against an independent computation (explicit encoder, explicit patterns, the
zCDP calibration by hand), the noise actually added measured on a model whose gradients
vanish (and a halved noise caught by that measurement), the no-noise limit on the digits,
trials vectorised = a loop of one-trial calls, bad input, and the kind's chunk invariance
and summary.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators.ftrl_logistic as ftrl_logistic
from dpreg import ZCDP, ApproxDP
from dpreg.config import study_cells
from dpreg.data.digits import load_digits_split
from dpreg.estimators.ftrl_correlations import independent, nu_ftrl, optimal_cc
from dpreg.estimators.ftrl_logistic import softmax_accuracy, train_dp_ftrl_logistic
from dpreg.experiments.choquettechoo2023_claims import check
from dpreg.experiments.choquettechoo2023_digits import (
    FtrlDigitsParams,
    check_digits_cell,
    select_learning_rates,
    summarise_digits,
)
from dpreg.experiments.studies import run_chunk
from dpreg.privacy.conversions import eps_to_zcdp, zcdp_to_eps
from dpreg.privacy.correlated import multi_participation_sensitivity_sq, toeplitz_matrix

SMOKE = Path(__file__).resolve().parents[2] / "config" / "smoke.yaml"


@pytest.fixture(scope="module")
def digits():
    return load_digits_split(0, 0.2)


def _toy(n=60, d=3, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(n, d)) / math.sqrt(d)
    return X, rng.integers(0, k, size=n)


def _brute_force_sensitivity_sq(encoder: np.ndarray, steps_per_epoch: int, epochs: int):
    """Max over the fixed-epoch patterns {i, i+S, ...} of |sum of encoder columns|^2.

    Valid for an encoder with non-negative entries (every Gram entry >= 0, so aligned
    gradient changes are the worst case; docs/choquettechoo2023.md deviation 15).
    """
    C = toeplitz_matrix(encoder)
    assert np.all(C >= 0)
    return max(
        float(np.sum(C[:, [i + j * steps_per_epoch for j in range(epochs)]].sum(axis=1) ** 2))
        for i in range(steps_per_epoch)
    )


# ----------------------------------------------------------------------- privacy


@pytest.mark.parametrize("corr", [independent(), nu_ftrl(0.05), optimal_cc()])
@pytest.mark.parametrize("eps", [0.5, 4.0])
def test_budget_equals_an_independent_computation(corr, eps):
    X, labels = _toy(n=60)
    batch, epochs = 6, 3
    S = 60 // batch
    fit = train_dp_ftrl_logistic(
        X, labels, n_classes=3, budget=ApproxDP(eps, 1e-6), rng=np.random.default_rng(1),
        trials=2, eta=0.5, clip=0.7, correlation=corr, batch_size=batch, epochs=epochs,
    )  # fmt: skip
    gamma_sq = _brute_force_sensitivity_sq(corr.encoder(epochs * S), S, epochs)
    project = multi_participation_sensitivity_sq(
        corr.encoder(epochs * S), epochs, S, schema="fixed_epoch"
    )
    assert project == pytest.approx(gamma_sq, rel=1e-12)
    if corr.name == "sgd":
        assert gamma_sq == epochs
    rho = eps_to_zcdp(eps, 1e-6, "tight")
    sigma = math.sqrt(gamma_sq / (2 * rho))
    assert fit.diagnostics["sensitivity_sq"] == pytest.approx(gamma_sq, rel=1e-12)
    assert fit.diagnostics["noise_multiplier"] == pytest.approx(sigma, rel=1e-9)
    assert fit.diagnostics["rho_certified"] == pytest.approx(rho, rel=1e-9)
    assert fit.budget_spent.epsilon == pytest.approx(zcdp_to_eps(rho, 1e-6, "tight"), rel=1e-9)
    assert fit.budget_spent.epsilon <= eps * (1 + 1e-9)
    assert fit.diagnostics["participations"] == epochs
    assert fit.diagnostics["separation"] == S


@settings(max_examples=25, deadline=None)
@given(
    eps=st.floats(0.05, 30.0),
    epochs=st.integers(1, 4),
    batch=st.integers(1, 20),
    which=st.sampled_from(["sgd", "nu_ftrl", "optimal_cc"]),
    nu=st.floats(0.001, 0.9),
)
def test_certified_epsilon_is_the_target_for_any_design(eps, epochs, batch, which, nu):
    X, labels = _toy(n=40)
    fit = train_dp_ftrl_logistic(
        X, labels, n_classes=3, budget=ApproxDP(eps, 1e-6), rng=np.random.default_rng(0),
        eta=0.5, clip=1.0, correlation=which, nu=nu, batch_size=batch, epochs=epochs,
    )  # fmt: skip
    assert fit.budget_spent.epsilon <= eps * (1 + 1e-9)
    assert fit.budget_spent.epsilon >= eps * (1 - 1e-6)
    rho = fit.diagnostics["sensitivity_sq"] / (2 * fit.diagnostics["noise_multiplier"] ** 2)
    assert fit.diagnostics["rho_certified"] == pytest.approx(rho, rel=1e-12)


def test_zcdp_budget_and_replace_one():
    X, labels = _toy()
    kw = dict(n_classes=3, rng=np.random.default_rng(0), eta=0.5, clip=1.0, batch_size=6)
    zo = train_dp_ftrl_logistic(X, labels, budget=ZCDP(0.5), correlation="sgd", epochs=2, **kw)
    assert zo.diagnostics["noise_multiplier"] == pytest.approx(math.sqrt(2 / (2 * 0.5)))
    assert isinstance(zo.budget_spent, ZCDP) and zo.budget_spent.rho == pytest.approx(0.5)
    ro = train_dp_ftrl_logistic(
        X, labels, budget=ZCDP(0.5), correlation="sgd", epochs=2, neighbours="replace_one", **kw
    )
    assert ro.diagnostics["noise_multiplier"] == pytest.approx(
        2 * zo.diagnostics["noise_multiplier"]
    )


def _noise_check(fit, corr, *, eta, clip, batch, T) -> tuple[float, float]:
    """Empirical / expected variance of the final weights when every gradient is 0.

    With x = 0 every gradient vanishes, so W_T = -eta (sigma G / b) sum_t (B w)_t and each
    coordinate has variance (eta sigma G / b)^2 |1^T B|^2. Returns the ratio and its
    standard error sqrt(2 / N) (N Gaussian coordinates).
    """
    B = toeplitz_matrix(corr.coefficients(T))
    scale = eta * fit.diagnostics["noise_multiplier"] * clip / batch
    expected = scale**2 * float(np.sum(B.sum(axis=0) ** 2))
    w = fit.weights.ravel()
    return float(np.mean(w**2) / expected), math.sqrt(2.0 / w.size)


@pytest.mark.parametrize("corr", [independent(), nu_ftrl(0.1)])
def test_noise_actually_added_matches_the_calibration_and_halving_is_caught(corr, monkeypatch):
    n, d, k, batch, epochs = 40, 2, 3, 8, 2
    X = np.zeros((n, d))
    labels = np.arange(n) % k
    kw = dict(
        n_classes=k, budget=ApproxDP(2.0, 1e-5), trials=400, eta=0.3, clip=0.5,
        correlation=corr, batch_size=batch, epochs=epochs,
    )  # fmt: skip
    T = epochs * (n // batch)
    fit = train_dp_ftrl_logistic(X, labels, rng=np.random.default_rng(7), **kw)
    ratio, se = _noise_check(fit, corr, eta=0.3, clip=0.5, batch=batch, T=T)
    assert abs(ratio - 1) < 4 * se
    real = ftrl_logistic.stream_noise
    monkeypatch.setattr(ftrl_logistic, "stream_noise", lambda *a: 0.5 * real(*a))
    halved = train_dp_ftrl_logistic(X, labels, rng=np.random.default_rng(7), **kw)
    ratio_h, se_h = _noise_check(halved, corr, eta=0.3, clip=0.5, batch=batch, T=T)
    assert not abs(ratio_h - 1) < 4 * se_h  # the same check fails: a quarter of the variance


def test_no_clipping_or_no_noise_is_not_private(digits):
    kw = dict(n_classes=10, rng=np.random.default_rng(0), eta=1.0, batch_size=64, trials=2)
    X, y = digits.X_train, digits.y_train
    none = train_dp_ftrl_logistic(
        X, y, budget=None, noise_multiplier=0.0, clip=1.0, correlation="sgd", **kw
    )
    assert none.budget_spent is None and none.diagnostics["noise_multiplier"] == 0
    unclipped = train_dp_ftrl_logistic(
        X, y, budget=ZCDP(1.0), clip=math.inf, correlation="sgd", **kw
    )
    assert unclipped.budget_spent is None


# ----------------------------------------------------------------------- learning


@pytest.mark.parametrize("corr", ["sgd", "nu_ftrl"])
def test_huge_epsilon_reaches_nonprivate_accuracy_on_digits(digits, corr):
    fit = train_dp_ftrl_logistic(
        digits.X_train, digits.y_train, n_classes=10, budget=ApproxDP(1e7, 1e-6),
        rng=np.random.default_rng(3), trials=3, eta=8.0, clip=1.0, correlation=corr,
        nu=0.05, batch_size=32, epochs=10, bound_X=1.0,
    )  # fmt: skip
    acc = fit.accuracy(digits.X_test, digits.y_test)
    assert acc.shape == (3,)
    assert np.all(acc > 0.9), acc
    np.testing.assert_array_equal(fit.predict(digits.X_test).shape, (3, digits.X_test.shape[0]))


def test_trials_vectorised_equal_a_loop_of_single_trials():
    X, labels = _toy(n=50, d=4, k=3)
    kw = dict(
        n_classes=3, budget=ApproxDP(3.0, 1e-6), eta=0.8, clip=0.5, correlation="nu_ftrl",
        nu=0.05, batch_size=5, epochs=3,
    )  # fmt: skip
    seeds = [11, 12, 13]
    batch = train_dp_ftrl_logistic(
        X, labels, rng=[np.random.default_rng(s) for s in seeds], trials=3, **kw
    )
    assert batch.weights.shape == (3, 4, 3)
    for j, s in enumerate(seeds):
        one = train_dp_ftrl_logistic(X, labels, rng=[np.random.default_rng(s)], trials=1, **kw)
        np.testing.assert_allclose(batch.weights[j], one.weights[0], rtol=1e-12, atol=1e-14)
        one_gen = train_dp_ftrl_logistic(X, labels, rng=np.random.default_rng(s), trials=1, **kw)
        np.testing.assert_allclose(one_gen.weights, one.weights, rtol=1e-12, atol=1e-14)
    assert not np.allclose(batch.weights[0], batch.weights[1])


def test_softmax_accuracy_by_hand():
    W = np.zeros((2, 2, 3))
    W[0, 0, 2] = 1.0  # trial 0: class 2 for the first row, ties (class 0) for the second
    W[1, 1, 0] = 1.0  # trial 1: class 0 for both rows
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(softmax_accuracy(W, X, np.array([2, 0])), [1.0, 0.5])
    np.testing.assert_allclose(softmax_accuracy(W, X, np.array([2, 2])), [0.5, 0.0])


# ----------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"labels": np.full(60, 0.5)}, "labels"),
        ({"labels": np.full(60, 3)}, "labels"),
        ({"labels": np.zeros(59, dtype=int)}, "labels"),
        ({"n_classes": 1}, "n_classes"),
        ({"X": np.full((60, 3), np.nan)}, "X"),
        ({"bound_X": 0.1}, "bound_X"),
        ({"batch_size": 61}, "batch_size"),
        ({"batch_size": 0}, "batch_size"),
        ({"epochs": 0}, "epochs"),
        ({"epochs": 1.5}, "epochs"),
        ({"eta": -1.0}, "eta"),
        ({"clip": 0.0}, "clip"),
        ({"correlation": "nope"}, "correlation"),
        ({"correlation": 3}, "correlation"),
        ({"correlation": "nu_ftrl", "nu": None}, "nu"),
        ({"noise_multiplier": 1.0}, "budget or noise_multiplier"),
        ({"budget": None}, "budget"),
        ({"budget": 1.0}, "budget"),
        ({"trials": 0}, "trials"),
        ({"rng": 0}, "rng"),
        ({"rng": [np.random.default_rng(0)]}, "rng"),
        ({"method": "exact"}, "method"),
        ({"neighbours": "add_remove"}, "neighbours"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(change, match):
    X, labels = _toy(n=60)
    kw = dict(
        X=X, labels=labels, n_classes=3, budget=ApproxDP(1.0, 1e-6),
        rng=np.random.default_rng(0), trials=2, eta=0.5, clip=1.0, correlation="sgd",
        batch_size=6, epochs=2,
    )  # fmt: skip
    kw.update(change)
    with pytest.raises((ValueError, TypeError), match=match):
        train_dp_ftrl_logistic(**kw)


def test_digits_split_is_public_and_in_the_unit_ball():
    a, b = load_digits_split(0, 0.2), load_digits_split(1, 0.2)
    assert a.X_train.shape == (1438, 64) and a.X_test.shape == (359, 64)
    assert np.linalg.norm(a.X_train, axis=1).max() <= 1.0
    assert a.X_train.min() >= 0.0
    np.testing.assert_array_equal(a.X_train, load_digits_split(0, 0.2).X_train)
    assert not np.array_equal(a.y_test, b.y_test)
    assert set(np.unique(a.y_train)) == set(range(10))
    for bad in ({"split_seed": -1}, {"split_seed": 1.5}, {"test_fraction": 1.0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            load_digits_split(**{"split_seed": 0, "test_fraction": 0.2, **bad})


# ----------------------------------------------------------------------- the kind


def _smoke_rows(config: dict) -> pd.DataFrame:
    study = "cc_fig4_digits"
    parts = []
    for cell in study_cells(config, study):
        blocks = cell.seeded_blocks(config["seed"])
        parts.append(run_chunk("ftrl_digits", cell.params(config), blocks=blocks))
    return (
        pd.concat(parts, ignore_index=True)
        .sort_values(["method", "epsilon", "trial"], kind="stable")
        .reset_index(drop=True)
    )


def _config(trials, chunk, block):
    config = yaml.safe_load(SMOKE.read_text())
    out = copy.deepcopy(config)
    out["studies"] = {"cc_fig4_digits": out["studies"]["cc_fig4_digits"]}
    out["studies"]["cc_fig4_digits"].update(trials=trials, chunk_size=chunk, seed_block=block)
    out["studies"]["cc_fig4_digits"]["params"]["epsilons"] = [4.0]
    return out


def test_kind_chunk_invariance_and_summary():
    one = _smoke_rows(_config(4, 4, 2))
    two = _smoke_rows(_config(4, 2, 2))
    pd.testing.assert_frame_equal(one, two)
    other = _smoke_rows(_config(4, 4, 4))
    assert not np.allclose(one["accuracy"], other["accuracy"])
    assert {"sgd", "sgd_amplified", "nu_ftrl", "me", "nonprivate"} <= set(one["method"])
    table = summarise_digits(one)
    sgd = table[table["method"] == "sgd"].iloc[0]
    assert sgd["diff_vs_sgd"] == 0 and sgd["runs"] == 4
    nu = table[table["method"] == "nu_ftrl"].iloc[0]
    chosen = select_learning_rates(one)  # the smoke config runs a learning-rate grid
    paired = (
        chosen[chosen["method"] == "nu_ftrl"]["accuracy"].to_numpy()
        - chosen[chosen["method"] == "sgd"]["accuracy"].to_numpy()
    )
    assert nu["diff_vs_sgd"] == pytest.approx(paired.mean())
    assert nu["diff_vs_sgd_se"] == pytest.approx(paired.std(ddof=1) / 2)
    assert nu["epsilon_certified"] <= 4.0 * (1 + 1e-9)
    assert table["status"].str.contains("scaled-down analogue").all()
    assert np.isfinite(table["nonprivate_accuracy"]).all()


def _table(diffs, se):
    rows = [
        {"method": "nu_ftrl", "epsilon": e, "diff_vs_sgd": v, "diff_vs_sgd_se": se, "runs": 10}
        for e, v in diffs.items()
    ]
    return pd.DataFrame(rows)


def test_claim_passes_and_fails_on_synthetic_tables():
    good = check({"s": _table({1.0: 0.05, 4.0: -0.01}, 0.01)})["claims"]
    assert list(good["passed"]) == ["yes", "yes"]
    bad = check({"s": _table({1.0: 0.05, 4.0: -0.03}, 0.01)})["claims"]
    assert list(bad["passed"]) == ["yes", "NO"]
    assert "eps=4" in bad["claim"].iloc[1]


def test_kind_params_refuse_bad_cells():
    cell = {"epsilons": [1.0, 2.0]}
    FtrlDigitsParams.from_cell(cell)
    for bad, match in [
        ({"epsilons": [1.0, 1.0]}, "epsilons"),
        ({"epsilons": []}, "epsilons"),
        ({"epsilons": [1.0], "methods": ["sgd", "zzz"]}, "methods"),
        ({"epsilons": [1.0], "batch_size": 5000}, "batch_size"),
        ({"epsilons": [1.0], "nu": "auto"}, "nu"),
        ({"epsilons": [-1.0]}, "epsilons"),
    ]:
        with pytest.raises(ValueError, match=match):
            check_digits_cell(bad)
