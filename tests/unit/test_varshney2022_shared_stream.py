"""One draw of the Varshney et al. (2022) stream shared by its consumers (issue 18).

Independent computation: the reference path of each consumer reading a stream of its own
(``SHARE_STREAM = False``; ``dp_ssgd_stream_pass`` pulling its rows), on the same rows and
seeds: the results must be bit-identical, and the shared path must draw each chunk once.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.data.streams import GaussianStream
from dpreg.estimators.dp_ssgd import DpSsgdFeed, dp_ssgd_stream_pass
from dpreg.experiments import varshney2022 as study


def _options(seed):
    return {
        "eta": np.array([0.05, 0.02]),
        "clip": np.array([0.5, 2.0]),
        "noise_multiplier": np.array([0.3, 1.0]),
        "sigma": np.array([0.1, 0.0]),
        "rng": np.random.default_rng(seed),
    }


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(1, 700),
    chunk_rows=st.integers(1, 300),
    chunk=st.integers(1, 200),
    kernel=st.sampled_from(["numba", "numpy"]),
)
def test_feed_equals_the_pulling_pass_bit_for_bit(n, chunk_rows, chunk, kernel):
    lam, w = np.array([1.0, 0.5, 0.25]), np.array([0.3, -0.2, 0.5])
    want = dp_ssgd_stream_pass(
        GaussianStream(4, [0, 3], lam, w, chunk_rows=chunk_rows), n, chunk=chunk,
        kernel=kernel, **_options(9),
    )  # fmt: skip
    feed = DpSsgdFeed(2, 3, n, chunk=chunk, kernel=kernel, **_options(9))
    src = GaussianStream(4, [0, 3], lam, w, chunk_rows=chunk_rows, observers=[feed])
    assert feed.result is None
    src.drain(n)
    for got, ref in zip(feed.result, want, strict=True):
        np.testing.assert_array_equal(got, ref)


def test_drain_feeds_every_chunk_once_and_stops_at_n():
    seen = []
    src = GaussianStream(1, [5], np.ones(2), np.ones(2), chunk_rows=8,
                         observers=[lambda X, b, z: seen.append(X.copy())])  # fmt: skip
    first = src.take(5)[0]
    src.drain(20)
    assert len(seen) == math.ceil(20 / 8)
    np.testing.assert_array_equal(seen[0][:, :5], first)
    ref = GaussianStream(1, [5], np.ones(2), np.ones(2), chunk_rows=8).take(24)[0]
    np.testing.assert_array_equal(np.concatenate(seen, axis=1), ref)


def _cell(**kw):
    base = {"d": 3, "n": 40_000, "sigma": [0.1, 0.0], "epsilon": [0.5, 8.0],
            "methods": ["ambssgd", "sgd", "dp_ssgd", "adassp"], "adassp_stream": True}  # fmt: skip
    return {**base, **kw}


@pytest.mark.parametrize("cap", [None, 4])  # 4: DP-SSGD on a subset of the chunk's trials
def test_shared_stream_rows_equal_the_separate_streams(monkeypatch, cap):
    cell = _cell() if cap is None else _cell(dpssgd_trials=cap)
    draws = {"n": 0}
    draw = GaussianStream._draw_chunk

    def counting(self, *a, **k):
        draws["n"] += self.n_replicates
        return draw(self, *a, **k)

    monkeypatch.setattr(GaussianStream, "_draw_chunk", counting)
    shared = study.run_sim_cell(cell, trials=3, first_trial=2, seed=7)
    shared_draws, draws["n"] = draws["n"], 0
    monkeypatch.setattr(study, "SHARE_STREAM", False)
    separate = study.run_sim_cell(cell, trials=3, first_trial=2, seed=7)
    pd.testing.assert_frame_equal(shared, separate, check_exact=True)
    ssgd = shared[(shared["method"] == "dp_ssgd") & (shared["status"] != "not_run")]
    assert len(ssgd) == (3 if cap is None else 2) * 2 * 2
    assert np.isfinite(ssgd["excess_risk"]).all()
    chunks = math.ceil(40_000 / study.BLOCK_ROWS)
    assert shared_draws == 3 * chunks  # every trial's chunks drawn once
    assert draws["n"] == (3 + 3 + (3 if cap is None else 2)) * chunks
