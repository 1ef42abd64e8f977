"""The first stage of an IV per-trial block in one compiled pass: numpy's bits (issue 18).

:func:`dpreg.estimators.iv_block.first_stage` against the reference's lines
(``dpreg.estimators.iv._first_stage_reference``), value for value, and whole per-trial
gradients with ``_FIRST_STAGE_PATH`` "fused" against "reference".
"""

from __future__ import annotations

import numba  # noqa: F401 - the compiled pass runs only once numba is loaded
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators import iv, iv_block


def _bits(a):
    return np.ascontiguousarray(a).view(np.int64)


def test_available_on_this_build():
    assert iv_block.available(iv._first_stage_reference)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 41),
    p=st.integers(2, 70),
    log_scale=st.floats(-3, 3),
    quantile=st.sampled_from([0.0, 0.3, 0.9, 1.0]),
    want_w=st.booleans(),
)
def test_first_stage_is_the_reference(seed, m, p, log_scale, quantile, want_w):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((m, p)) * 10.0**log_scale
    X = W + rng.standard_normal((m, p)) * 10.0 ** rng.uniform(-2, 2, size=p)
    zn = np.abs(rng.standard_normal(m)) + 0.5
    a = zn * np.sqrt(np.einsum("ij,ij->i", W - X, W - X))
    clip = float(np.quantile(a, quantile)) or 1.0  # ties with the threshold included
    R_ref = W.copy()
    w_ref, c_ref = iv._first_stage_reference(R_ref, X, zn, clip, want_w)
    R = W.copy()
    w_new, c_new = iv_block.first_stage(R, X, zn, clip, want_w)
    assert c_new == c_ref
    assert np.array_equal(_bits(R), _bits(R_ref))
    if want_w:
        assert np.array_equal(_bits(w_new), _bits(w_ref))


@pytest.mark.parametrize(("n", "q", "p"), [(300, 16, 16), (257, 50, 50), (90, 70, 3)])
def test_per_trial_gradients_fused_against_reference(monkeypatch, n, q, p):
    rng = np.random.default_rng(n + q + p)
    trials = 3
    Z = rng.standard_normal((trials, n, q))
    X = Z @ (np.eye(q, p) + 0.3 * rng.standard_normal((q, p))) + rng.standard_normal((trials, n, p))
    y = X @ rng.standard_normal(p) + rng.standard_normal((trials, n))
    Theta = 0.5 * rng.standard_normal((trials, q, p))
    beta = rng.standard_normal((trials, p))
    monkeypatch.setattr(iv, "_PER_TRIAL_MIN_WORK", 0)
    monkeypatch.setattr(iv, "_ROW_SCALE_MIN", 0)
    out = {}
    for path in ("reference", "fused"):
        monkeypatch.setattr(iv, "_FIRST_STAGE_PATH", path)
        for clips in ((3.0, 3.0), (30.0, np.inf), (np.inf, 5.0)):
            out[path, clips] = iv.clipped_gradient_means(
                Z, X, y, Theta, beta, clip_theta=clips[0], clip_beta=clips[1]
            )
    for (path, clips), got in out.items():
        if path == "fused":
            for a, b in zip(out["reference", clips], got, strict=True):
                assert np.array_equal(_bits(a), _bits(b))
