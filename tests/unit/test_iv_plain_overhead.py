"""2S-GD's per-call overhead trims (issue 18) give the former code's output bit for bit.

The former path on shared data, frozen below: every check first (``_prepare_checked``),
the compiled recursion for one trial (its arithmetic written out here in Python floats:
the same IEEE operations in the same order), finiteness by ``np.isfinite``, the run
repeated along the trials axis and the clip fractions moved by ``Fit``. The new path
validates the data by their own sufficient statistics, runs the recursion and the copies
in one compiled call and builds the ``Fit`` directly; coefficients, paths and every
diagnostic must be the same bytes, and bad data the same errors.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators.iv import (
    _prepare,
    _prepare_checked,
    _shared_design_unchecked,
    fit_two_stage_gd,
)
from dpreg.estimators.iv_kernel import plain_recursion, plain_recursion_trials
from dpreg.results import Fit


def _data(seed: int, n: int, q: int, p: int, scale: float = 1.0):
    rng = np.random.default_rng(seed)
    Theta = 5.0 * np.eye(q, p) + rng.normal(size=(q, p))
    Z = scale * rng.normal(size=(n, q))
    u = rng.normal(size=(n, 1))
    X = Z @ Theta + u + rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + u[:, 0] + rng.normal(size=n)
    return Z, X, y


def _former_recursion(ZtZ, ZtX, Zty, n, T, eta, alpha, return_path):
    """The former compiled kernel's loops, in Python floats (IEEE double, no fused ops)."""
    q, p = ZtX.shape
    Theta = [[0.0] * p for _ in range(q)]
    beta = [0.0] * p
    theta_path, beta_path = [], []
    n = float(n)
    for _ in range(T):
        v = []
        for m in range(q):
            s = 0.0
            for j in range(p):
                s += Theta[m][j] * beta[j]
            v.append(s)
        S2 = [0.0] * q
        G1 = [[0.0] * p for _ in range(q)]
        for m in range(q):
            s = 0.0
            for k in range(q):
                s += float(ZtZ[m, k]) * v[k]
            S2[m] = s - float(Zty[m])
            for j in range(p):
                s = 0.0
                for k in range(q):
                    s += float(ZtZ[m, k]) * Theta[k][j]
                G1[m][j] = s - float(ZtX[m, j])
        for j in range(p):
            s = 0.0
            for m in range(q):
                s += Theta[m][j] * S2[m]
            beta[j] = beta[j] - alpha * (s / n)
        for m in range(q):
            for j in range(p):
                Theta[m][j] = Theta[m][j] - eta * (G1[m][j] / n)
        if return_path:
            theta_path.append([row[:] for row in Theta])
            beta_path.append(beta[:])
    final = (np.array(Theta).reshape(q, p), np.array(beta))
    if not return_path:
        return *final, None, None
    return *final, np.array(theta_path).reshape(T, q, p), np.array(beta_path).reshape(T, p)


def _former_fit(Z, X, y, *, T, step_theta, step_beta, trials, return_path, kernel="auto"):
    """The former ``fit_two_stage_gd`` on shared data with the compiled recursion."""
    d = _prepare_checked(Z, X, y, trials)
    assert d.shared
    with np.errstate(over="ignore", invalid="ignore"):
        Theta, beta, theta_path, beta_path = _former_recursion(
            d.ZtZ, d.ZtX, d.Zty, d.n, T, step_theta, step_beta, return_path
        )
    finite = bool(np.isfinite(beta).all() and np.isfinite(Theta).all())
    run = {
        "beta": beta[None],
        "Theta": Theta[None],
        "beta_path": None if beta_path is None else beta_path[None],
        "theta_path": None if theta_path is None else theta_path[None],
        "clip_fraction_theta": np.zeros((1, T)),
        "clip_fraction_beta": np.zeros((1, T)),
        "n_nonfinite": 0 if finite else 1,
    }
    run = {k: v if v is None or k == "n_nonfinite" else np.repeat(v, trials, axis=0)
           for k, v in run.items()}  # fmt: skip
    run["n_nonfinite"] *= trials
    diag = {
        "theta_path": run["theta_path"],
        "theta_final": run["Theta"],
        "clip_fraction_theta": run["clip_fraction_theta"],
        "clip_fraction_beta": run["clip_fraction_beta"],
        "n_nonfinite": run["n_nonfinite"],
        "n": d.n,
        "q": d.q,
        "p": d.p,
        "shared_data": d.shared,
        "algorithm": "Liang et al. 2025, Algorithm 2 (2S-GD)",
        "T": T,
        "step_theta": step_theta,
        "step_beta": step_beta,
        "clip_theta": math.inf,
        "clip_beta": math.inf,
        "lambda1": 0.0,
        "lambda2": 0.0,
        "calibration": None,
        "kernel": kernel,
        "rho_claimed": math.inf,
        "rho_certified": math.inf,
        "privacy_note": "non-private (Algorithm 2)",
    }
    path = run["beta_path"] if return_path else None
    return Fit(theta=run["beta"], budget_spent=None, estimator="2s_gd", path=path,
               diagnostics=diag)  # fmt: skip


class _Subclass(np.ndarray):
    """An ndarray subclass (the unchecked path takes plain ndarrays only)."""


def _same_bytes(a, b, where: str) -> None:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), where
        assert (a.dtype, a.shape) == (b.dtype, b.shape), where
        assert a.tobytes() == b.tobytes(), where
    else:
        assert type(a) is type(b) and (a == b or a is b or (a != a and b != b)), where


def _assert_same_fit(new: Fit, old: Fit) -> None:
    _same_bytes(new.theta, old.theta, "theta")
    _same_bytes(new.path, old.path, "path")
    assert (new.estimator, new.budget_spent, new.intercept) == (
        old.estimator, old.budget_spent, old.intercept
    )  # fmt: skip
    for name in ("diagnostics", "nonprivate_diagnostics"):
        a, b = getattr(new, name), getattr(old, name)
        assert list(a) == list(b), name  # same keys in the same order
        for key in a:
            _same_bytes(a[key], b[key], f"{name}[{key!r}]")


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    q=st.integers(1, 7),
    p_less=st.integers(0, 6),
    extra=st.integers(0, 300),
    trials=st.integers(1, 9),
    T=st.integers(1, 40),
    return_path=st.booleans(),
    layout=st.sampled_from(["C", "F", "strided"]),
)
def test_2s_gd_is_the_former_code_bit_for_bit(
    seed, q, p_less, extra, trials, T, return_path, layout
):
    p = max(1, q - p_less)
    Z, X, y = _data(seed, q + extra, q, p)
    if layout == "F":
        Z, X = np.asfortranarray(Z), np.asfortranarray(X)
    elif layout == "strided":  # every other row of a larger array
        Z2, X2, y2 = _data(seed, 2 * (q + extra), q, p)
        Z, X, y = Z2[::2], X2[::2], y2[::2]
    rng = np.random.default_rng(seed)
    eta, alpha = rng.uniform(0.05, 1.0), rng.uniform(0.001, 0.05)
    kw = dict(T=T, step_theta=eta, step_beta=alpha, trials=trials, return_path=return_path)
    _assert_same_fit(fit_two_stage_gd(Z, X, y, **kw), _former_fit(Z, X, y, **kw))
    fast = fit_two_stage_gd(Z, X, y, kernel="fast", **kw)
    _assert_same_fit(fast, _former_fit(Z, X, y, kernel="fast", **kw))


def test_divergent_and_overflowing_runs_are_the_former_code():
    """Steps too large: non-finite final iterates counted per trial, the same bytes; data
    whose statistics overflow take the checked path (the same statistics)."""
    Z, X, y = _data(3, 40, 2, 2)
    kw = dict(T=2000, step_theta=5.0, step_beta=5.0, trials=3, return_path=False)
    new, old = fit_two_stage_gd(Z, X, y, **kw), _former_fit(Z, X, y, **kw)
    assert new.diagnostics["n_nonfinite"] == 3
    _assert_same_fit(new, old)
    Zb, Xb, yb = 1e160 * Z, 1e160 * X, 1e160 * y  # finite, but Z'Z overflows
    assert _shared_design_unchecked(Zb, Xb, yb) is None
    kw = dict(T=5, step_theta=0.1, step_beta=0.1, trials=2, return_path=True)
    with np.errstate(over="ignore", invalid="ignore"):
        new, old = fit_two_stage_gd(Zb, Xb, yb, **kw), _former_fit(Zb, Xb, yb, **kw)
    _assert_same_fit(new, old)


@pytest.mark.parametrize("T", [1, 7, 60])
@pytest.mark.parametrize("shape", [(3, 3), (5, 2), (1, 1), (12, 9)])
def test_compiled_recursion_is_the_former_loops(T, shape):
    """The compiled kernel against the former loops in Python floats, paths included."""
    q, p = shape
    Z, X, y = _data(T + q, 5 * q + 3, q, p)
    d = _prepare_checked(Z, X, y, 1)
    old = _former_recursion(d.ZtZ, d.ZtX, d.Zty, d.n, T, 0.7, 0.02, True)
    new = plain_recursion(d.ZtZ, d.ZtX, d.Zty, d.n, T=T, step_theta=0.7, step_beta=0.02,
                          return_path=True)  # fmt: skip
    for a, b in zip(new, old, strict=True):
        _same_bytes(a, b, "recursion")
    Theta, beta, tp, bp, finite = plain_recursion_trials(
        d.ZtZ, d.ZtX, d.Zty, d.n, T=T, step_theta=0.7, step_beta=0.02, return_path=False,
        trials=4,
    )  # fmt: skip
    assert finite and tp is None and bp is None
    _same_bytes(Theta, np.repeat(old[0][None], 4, axis=0), "Theta")
    _same_bytes(beta, np.repeat(old[1][None], 4, axis=0), "beta")


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_unchecked_design_has_the_checked_statistics(layout):
    Z, X, y = _data(5, 500, 4, 3)
    if layout == "F":
        Z, X = np.asfortranarray(Z), np.asfortranarray(X)
    elif layout == "strided":
        Z, X, y = Z[::3], X[::3], y[::3]
    new, ref = _shared_design_unchecked(Z, X, y), _prepare_checked(Z, X, y, 7)
    assert new is not None and new.shared and (new.n, new.q, new.p) == (ref.n, ref.q, ref.p)
    for key in ("ZtZ", "ZtX", "Zty", "zn"):
        _same_bytes(getattr(new, key), getattr(ref, key), key)
    assert new.Z is Z and new.X is X and new.y is y


def test_unchecked_design_declines_everything_but_valid_shared_float64_arrays():
    Z, X, y = _data(6, 50, 3, 2)
    declined = [
        (Z.tolist(), X, y),  # not an ndarray
        (Z, X.astype(np.float32), y),  # not float64
        (Z, X, y.astype(">f8")),  # float64 of the other byte order
        (Z[None], X, y),  # batched
        (Z, X[:, None], y),
        (Z, X, y[:, None]),
        (Z[:, :1], X, y),  # q < p
        (Z[:2], X[:2], y[:2]),  # n < q
        (Z, X[:-1], y),  # rows differ
        (Z, X, y[:-1]),
        (Z[:, :0], X[:, :0], y),  # empty
        (Z.view(_Subclass), X, y),  # an ndarray subclass
    ]
    for args in declined:
        assert _shared_design_unchecked(*args) is None
    assert _shared_design_unchecked(np.asarray(Z.view(_Subclass)), X, y) is not None


@pytest.mark.parametrize("name", ["Z", "X", "y"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("on_zero_row", [False, True])
def test_non_finite_data_raise_the_reference_error_without_warnings(name, bad, on_zero_row):
    """A NaN or infinity anywhere (also on a row of Z that is all zeros, where only
    0 * inf = NaN carries it into the statistics) gives the reference's error."""
    Z, X, y = _data(8, 60, 3, 2)
    row = 17
    if on_zero_row:
        Z[row] = 0.0
    data = {"Z": Z, "X": X, "y": y}
    target = data[name]
    target[(row, 1) if target.ndim == 2 else row] = bad
    assert _shared_design_unchecked(Z, X, y) is None
    with pytest.raises(ValueError) as ref:
        _prepare_checked(Z, X, y, 1)
    assert str(ref.value).startswith(f"{name} contains NaN or infinite values")
    kw = dict(T=3, step_theta=0.5, step_beta=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as new:
            fit_two_stage_gd(Z, X, y, **kw)
        with pytest.raises(ValueError) as prepared:
            _prepare(Z, X, y, 1)
    assert str(new.value) == str(prepared.value) == str(ref.value)


def test_argument_errors_come_before_data_errors():
    """The reference's order: T, steps, trials, return_path, kernel, then the data."""
    Z, X, y = _data(9, 30, 2, 2)
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="T must be a positive integer"):
        fit_two_stage_gd(Z, X, y, T=0, step_theta=0.5, step_beta=0.1)
    with pytest.raises(ValueError, match="kernel must be one of"):
        fit_two_stage_gd(Z, X, y, T=3, step_theta=0.5, step_beta=0.1, kernel="numba")
    with pytest.raises(ValueError, match="X contains NaN"):
        fit_two_stage_gd(Z, X, y, T=3, step_theta=0.5, step_beta=0.1)
