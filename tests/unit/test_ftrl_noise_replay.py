"""Replay of identical stream-noise draws (issue 18): the same bits as drawing again.

:func:`dpreg.estimators.ftrl_logistic.replayed_stream_noise` returns kept draws when the
generator's full state and the public inputs (correlation, T, columns) repeat inside a
:func:`~dpreg.estimators.ftrl_logistic.noise_replay` block; these tests compare it with
fresh draws (the reference path) value for value and generator state for generator state,
and check that any other input misses.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg.estimators.ftrl_logistic as ftrl_logistic
import dpreg.experiments.choquettechoo2023_digits as digits_kind
from dpreg import ApproxDP
from dpreg.config import study_cells
from dpreg.estimators.ftrl_correlations import independent, nu_ftrl, optimal_cc
from dpreg.estimators.ftrl_factorizations import fft_factorization, tree_aggregation
from dpreg.estimators.ftrl_logistic import (
    noise_replay,
    replayed_stream_noise,
    train_dp_ftrl_logistic,
)
from dpreg.experiments.studies import run_chunk

SMOKE = Path(__file__).resolve().parents[2] / "config" / "smoke.yaml"


def _fresh(corr, T, columns, seed):
    rng = np.random.default_rng(seed)
    noise = replayed_stream_noise(corr, T, columns, rng, replay=False)
    return noise, rng.bit_generator.state


def _kept():
    return len(ftrl_logistic._NOISE_REPLAY[0]) if ftrl_logistic._NOISE_REPLAY else 0


@pytest.mark.parametrize(
    "make", [independent, lambda: nu_ftrl(0.1), optimal_cc, lambda: tree_aggregation(12)]
)
def test_replay_equals_fresh_draws_and_generator_state(make):
    corr = make()
    T, columns = 12, 7
    ref, ref_state = _fresh(corr, T, columns, 3)
    with noise_replay():
        for call in range(3):  # a miss, then two replays
            rng = np.random.default_rng(3)
            out = replayed_stream_noise(corr, T, columns, rng)
            assert np.array_equal(out, ref), call
            assert rng.bit_generator.state == ref_state, call
            # the generator continues exactly as after fresh draws
            after = np.random.default_rng(3)
            replayed_stream_noise(corr, T, columns, after, replay=False)
            assert rng.random() == after.random()
            out *= 2.0  # the caller scales in place: the kept draws must not move
        assert _kept() == 1
    assert _kept() == 0  # nothing kept outside the block


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    other=st.sampled_from(["seed", "advanced", "T", "columns", "corr", "nu"]),
)
def test_other_inputs_miss_and_draw_their_own_noise(seed, other):
    T, columns, corr = 10, 4, nu_ftrl(0.1)
    changed = {"seed": seed, "T": T, "columns": columns, "corr": corr}
    if other == "seed":
        changed["seed"] = seed + 1
    elif other == "T":
        changed["T"] = T + 1
    elif other == "columns":
        changed["columns"] = columns + 1
    elif other == "corr":
        changed["corr"] = independent()
    elif other == "nu":
        changed["corr"] = nu_ftrl(0.2)
    with noise_replay():
        first = replayed_stream_noise(corr, T, columns, np.random.default_rng(seed))
        rng = np.random.default_rng(changed["seed"])
        if other == "advanced":  # same seed, generator moved on: a different state
            rng.random()
        out = replayed_stream_noise(changed["corr"], changed["T"], changed["columns"], rng)
        assert _kept() == 2  # a miss: drawn and kept
    ref_rng = np.random.default_rng(changed["seed"])
    if other == "advanced":
        ref_rng.random()
    ref = replayed_stream_noise(
        changed["corr"], changed["T"], changed["columns"], ref_rng, replay=False
    )
    assert np.array_equal(out, ref)
    assert rng.bit_generator.state == ref_rng.bit_generator.state
    assert out.shape != first.shape or not np.array_equal(out, first)


@settings(max_examples=20, deadline=None)
@given(scale=st.floats(1e-6, 1e6), seed=st.integers(0, 2**32 - 1))
def test_scaled_replays_are_the_scaled_fresh_draws(scale, seed):
    corr, T, columns = nu_ftrl(0.05), 9, 5
    ref, ref_state = _fresh(corr, T, columns, seed)
    ref *= scale  # the reference scales in place
    with noise_replay():
        for _ in range(3):
            rng = np.random.default_rng(seed)
            out = replayed_stream_noise(corr, T, columns, rng, scale=scale)
            assert np.array_equal(out, ref)
            assert rng.bit_generator.state == ref_state
        rng = np.random.default_rng(seed)
        unscaled = replayed_stream_noise(corr, T, columns, rng)  # the kept draws unchanged
        assert np.array_equal(unscaled, _fresh(corr, T, columns, seed)[0])


def test_factorizations_are_told_apart_and_the_byte_cap_evicts(monkeypatch):
    T, columns = 16, 3
    tree, fft = tree_aggregation(T), fft_factorization(T)
    with noise_replay():
        a = replayed_stream_noise(tree, T, columns, np.random.default_rng(1))
        b = replayed_stream_noise(fft, T, columns, np.random.default_rng(1))
        assert _kept() == 2
        assert np.array_equal(b, _fresh(fft, T, columns, 1)[0])
        assert not np.array_equal(a[:T], b[:T])
        monkeypatch.setattr(ftrl_logistic, "REPLAY_MAX_BYTES", a.nbytes + b.nbytes - 1)
        replayed_stream_noise(tree, T, columns, np.random.default_rng(2))
        kept = ftrl_logistic._NOISE_REPLAY[0]
        assert sum(v[1].nbytes for v in kept.values()) <= a.nbytes + b.nbytes - 1
        assert _kept() == 1  # the two oldest dropped


def test_a_patched_noise_function_is_not_served_kept_draws(monkeypatch):
    corr = nu_ftrl(0.1)
    with noise_replay():
        real = replayed_stream_noise(corr, 8, 2, np.random.default_rng(4))
        original = ftrl_logistic.stream_noise
        monkeypatch.setattr(ftrl_logistic, "stream_noise", lambda *a: 0.5 * original(*a))
        halved = replayed_stream_noise(corr, 8, 2, np.random.default_rng(4))
    assert np.array_equal(halved, 0.5 * real)


def test_training_at_several_learning_rates_is_bit_for_bit_the_reference():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(60, 3)) / np.sqrt(3)
    labels = rng.integers(0, 3, size=60)
    kw = dict(
        n_classes=3, budget=ApproxDP(2.0, 1e-6), trials=3, clip=0.5, correlation="nu_ftrl",
        nu=0.05, batch_size=6, epochs=2, momentum=0.9, cooldown_fraction=0.25,
    )  # fmt: skip
    etas = [0.1, 0.3, 0.9]
    ref = [
        train_dp_ftrl_logistic(X, labels, rng=np.random.default_rng(9), eta=e, **kw) for e in etas
    ]
    with noise_replay():
        fast = [
            train_dp_ftrl_logistic(X, labels, rng=np.random.default_rng(9), eta=e, **kw)
            for e in etas
        ]
        assert _kept() == 1  # one draw, replayed twice
    for r, f in zip(ref, fast, strict=True):
        assert np.array_equal(r.weights, f.weights)
        assert r.diagnostics == f.diagnostics
        assert r.budget_spent == f.budget_spent


def test_the_digits_kind_is_bit_for_bit_its_reference(monkeypatch):
    config = copy.deepcopy(yaml.safe_load(SMOKE.read_text()))
    config["studies"] = {"cc_fig4_digits": config["studies"]["cc_fig4_digits"]}
    config["studies"]["cc_fig4_digits"]["params"]["methods"] = ["sgd", "nu_ftrl", "me"]

    def rows():
        parts = []
        for cell in study_cells(config, "cc_fig4_digits"):
            blocks = cell.seeded_blocks(config["seed"])
            parts.append(run_chunk("ftrl_digits", cell.params(config), blocks=blocks))
        return pd.concat(parts, ignore_index=True)

    draws = []
    original = ftrl_logistic.stream_noise
    monkeypatch.setattr(ftrl_logistic, "stream_noise", lambda *a: draws.append(1) or original(*a))
    fast = rows()
    assert len(draws) == 3  # three noisy methods at one epsilon: one draw each
    monkeypatch.setattr(digits_kind, "noise_replay", _no_replay)
    ref = rows()
    assert len(draws) == 3 + 3 * 2  # the reference draws at both learning rates
    pd.testing.assert_frame_equal(fast, ref, check_exact=True)
    assert fast.equals(ref)


class _no_replay:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
