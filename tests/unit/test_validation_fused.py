"""The compiled one-pass validation of a bounded design against the numpy reference.

``check_bounded_design(method="compiled")`` must return the same arrays and raise the
same errors (type, message, argument names) as ``method="reference"`` on every input:
NaN, inf, rows on, just above and just below the public bounds, bad bounds, bad shapes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpreg import _validation
from dpreg._validation import _bounded_design_compiled, check_bounded_design


def _outcome(X, y, bound_X, bound_y, method):
    """(``"ok"``, X, y) or (exception type, message) of one validation call."""
    try:
        Xo, yo, trials, _ = check_bounded_design(
            X,
            y,
            bound_X=bound_X,
            bound_y=bound_y,
            trials=3,
            rng=np.random.default_rng(0),
            method=method,
        )
    except (TypeError, ValueError) as err:
        return type(err), str(err)
    assert trials == 3
    return "ok", Xo, yo


def _assert_same(X, y, bound_X, bound_y):
    ref = _outcome(X, y, bound_X, bound_y, "reference")
    fused = _outcome(X, y, bound_X, bound_y, "compiled")
    assert ref[0] == fused[0]
    if ref[0] == "ok":
        # the same arrays, not copies: downstream arithmetic is byte-identical
        np.testing.assert_array_equal(ref[1], fused[1])
        np.testing.assert_array_equal(ref[2], fused[2])
        assert fused[1].dtype == ref[1].dtype and fused[1].shape == ref[1].shape
    else:
        assert ref[1] == fused[1]
    return ref[0]


_values = st.one_of(
    st.floats(-2.0, 2.0, allow_nan=False),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, 1e200, -1e-300]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    X=arrays(np.float64, st.tuples(st.integers(1, 12), st.integers(1, 4)), elements=_values),
    data=st.data(),
    bound_X=st.one_of(st.floats(0.1, 5.0), st.sampled_from([0.0, -1.0, math.inf, math.nan])),
    bound_y=st.one_of(st.floats(0.1, 5.0), st.sampled_from([0.0, -1.0, math.inf, math.nan])),
)
def test_compiled_equals_reference_on_random_designs(X, data, bound_X, bound_y):
    n = X.shape[0]
    y = data.draw(arrays(np.float64, (n,), elements=_values), label="y")
    _assert_same(X, y, bound_X, bound_y)


@settings(max_examples=200, deadline=None)
@given(
    X=arrays(
        np.float64,
        st.tuples(st.integers(1, 15), st.integers(1, 6)),
        elements=st.floats(-3.0, 3.0, allow_nan=False),
    ),
    rel=st.sampled_from([-1e-9, -1e-12, -1e-13, -1e-15, 0.0, 1e-15, 1e-13, 1e-12, 2e-12, 1e-9]),
    y_rel=st.sampled_from([-1e-12, 0.0, 1e-12, 1.1e-12, 1e-9]),
)
def test_compiled_equals_reference_at_the_bounds(X, rel, y_rel):
    """Bounds placed on, just inside and just outside the data's largest norms."""
    y = np.linspace(-1.0, 1.0, X.shape[0])
    worst = float(np.sqrt(np.einsum("ij,ij->i", X, X).max()))
    if worst == 0.0:
        return
    _assert_same(X, y, worst * (1.0 + rel), 1.0 + y_rel)


def test_compiled_path_accepts_valid_data_and_refuses_the_rest():
    """The fast path is taken on a valid design (the comparisons above are not vacuous)."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(500, 5)) / math.sqrt(5)
    y = rng.uniform(-1, 1, size=500)
    assert _bounded_design_compiled(X, y, 1.0, 1.0) is not None
    for bad in (math.nan, math.inf):
        Xb = X.copy()
        Xb[17, 2] = bad
        assert _bounded_design_compiled(Xb, y, 1.0, 1.0) is None
        yb = y.copy()
        yb[3] = bad
        assert _bounded_design_compiled(X, yb, 1.0, 1.0) is None
    assert _bounded_design_compiled(X, y, 0.5, 1.0) is None  # rows above bound_X
    # a row norm within the round-off band of the threshold: the reference decides
    worst = float(np.sqrt(np.einsum("ij,ij->i", X, X).max()))
    assert _bounded_design_compiled(X, y, worst / (1 + 1e-12), 1.0) is None
    assert _bounded_design_compiled(X, y, worst * (1 + 1e-12), 1.0) is not None
    assert _bounded_design_compiled(X, y, 1.0, 0.5) is None  # |y| above bound_y
    assert _bounded_design_compiled(np.asfortranarray(X), y, 1.0, 1.0) is None
    assert _bounded_design_compiled(X[::2], y[::2], 1.0, 1.0) is None


@pytest.mark.parametrize(
    ("X", "y"),
    [
        (np.ones((3, 2)).tolist(), [0.0, 0.0, 0.0]),  # lists
        (np.ones((3, 2), dtype=np.int64), np.zeros(3, dtype=np.int64)),
        (np.asfortranarray(np.full((4, 2), 0.5)), np.zeros(4)),
        (np.full((4, 2), 0.5), np.zeros((4, 1))),  # y as a column
        (np.full((4, 2), 0.5), np.zeros(5)),  # length mismatch
        (np.full((1, 2), 0.5), np.zeros(1)),  # n < d
        (np.full(4, 0.5), np.zeros(4)),  # 1-D X
        (np.zeros((0, 2)), np.zeros(0)),  # empty
        (np.full((4, 2), 0.5) + 0j, np.zeros(4)),  # complex
        (np.array([["a", "b"]] * 3), np.zeros(3)),  # text
    ],
)
def test_compiled_equals_reference_on_unusual_inputs(X, y):
    _assert_same(X, y, 2.0, 1.0)


def test_method_is_checked_and_auto_takes_the_compiled_pass(monkeypatch):
    X, y = np.full((4, 2), 0.5), np.zeros(4)
    with pytest.raises(ValueError, match="method must be one of"):
        check_bounded_design(
            X, y, bound_X=1.0, bound_y=1.0, trials=1, rng=np.random.default_rng(0), method="x"
        )
    calls = []
    kernel = _validation._scan_kernel()

    def spy(*args):
        calls.append(1)
        return kernel(*args)

    monkeypatch.setattr(_validation, "_scan_kernel", lambda: spy)
    big = np.full((_validation.COMPILED_MIN_ELEMENTS, 1), 0.5)
    yb = np.zeros(big.shape[0])
    check_bounded_design(big, yb, bound_X=1.0, bound_y=1.0, trials=1, rng=np.random.default_rng(0))
    assert calls == [1]  # numba is loaded (by the kernel above): auto compiles
    check_bounded_design(X, y, bound_X=1.0, bound_y=1.0, trials=1, rng=np.random.default_rng(0))
    assert calls == [1]  # small: the numpy reference


def _gram_outcome(X, y, bound_X, bound_y, method):
    from dpreg._validation import check_bounded_design_gram

    try:
        Xo, yo, _, _, gram = check_bounded_design_gram(
            X,
            y,
            bound_X=bound_X,
            bound_y=bound_y,
            trials=3,
            rng=np.random.default_rng(0),
            method=method,
        )
    except (TypeError, ValueError) as err:
        return type(err), str(err)
    return "ok", Xo, yo, gram


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    X=arrays(np.float64, st.tuples(st.integers(1, 300), st.integers(1, 8)), elements=_values),
    data=st.data(),
    bound_X=st.one_of(st.floats(0.1, 5.0), st.sampled_from([0.0, math.inf])),
)
def test_fused_gram_pass_equals_reference(X, data, bound_X):
    """Compiled validation + Gram against the numpy checks + BLAS: same decisions, same
    errors, Gram equal to round-off (every d mod 3, n across the 128-row blocks)."""
    n = X.shape[0]
    y = data.draw(arrays(np.float64, (n,), elements=_values), label="y")
    ref = _gram_outcome(X, y, bound_X, 2.0, "reference")
    fused = _gram_outcome(X, y, bound_X, 2.0, "compiled")
    assert ref[0] == fused[0]
    if ref[0] != "ok":
        assert ref[1] == fused[1]
        return
    np.testing.assert_array_equal(ref[1], fused[1])
    np.testing.assert_array_equal(ref[2], fused[2])
    A = np.abs(np.column_stack([X, y]))
    tol = 4 * (n + 2) * np.finfo(float).eps * (A.T @ A)  # two sums of n products
    assert np.all(np.abs(fused[3] - ref[3]) <= tol)
    np.testing.assert_array_equal(fused[3], fused[3].T)


def test_fused_gram_pass_is_taken_by_auto_from_64_trials(monkeypatch):
    from dpreg._validation import GRAM_COMPILED_MIN_TRIALS, check_bounded_design_gram

    calls = []
    kernel = _validation._scan_gram_kernel()

    def spy(*args):
        calls.append(1)
        return kernel(*args)

    monkeypatch.setattr(_validation, "_scan_gram_kernel", lambda: spy)
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.2, 0.2, size=(_validation.COMPILED_MIN_ELEMENTS // 4, 3))
    y = rng.uniform(-1, 1, size=X.shape[0])
    for trials, expected in ((GRAM_COMPILED_MIN_TRIALS - 1, []), (GRAM_COMPILED_MIN_TRIALS, [1])):
        calls.clear()
        gram = check_bounded_design_gram(X, y, bound_X=1.0, bound_y=1.0, trials=trials, rng=rng)[4]
        assert calls == expected
        np.testing.assert_allclose(gram, np.column_stack([X, y]).T @ np.column_stack([X, y]))


@pytest.mark.parametrize("n", [1, 2, 127, 128, 129, 300, 1000])
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 6, 7, 20, 26])
def test_fused_gram_on_accepted_designs(n, d):
    """Every block split and every padding of d + 1 to a multiple of 3, data accepted."""
    if n < d:
        return
    rng = np.random.default_rng(100 * n + d)
    X = rng.uniform(-1, 1, size=(n, d)) / math.sqrt(d)
    y = rng.uniform(-1, 1, size=n)
    fused = _gram_outcome(X, y, 1.0, 1.0, "compiled")
    assert fused[0] == "ok"
    A = np.column_stack([X, y])
    tol = 4 * (n + 2) * np.finfo(float).eps * (np.abs(A).T @ np.abs(A))
    assert np.all(np.abs(fused[3] - A.T @ A) <= tol)


@settings(max_examples=60, deadline=None)
@given(
    X=arrays(
        np.float64,
        st.tuples(st.integers(1, 6), st.integers(1, 4)),
        elements=st.sampled_from([0.0, -1.5, 2.0, 1e308, -1e308, math.nan, math.inf, -math.inf]),
    )
)
def test_finite_check_by_sum_agrees_with_isfinite(X):
    """The one-pass check (a finite sum proves every entry finite) refuses exactly the
    arrays with a NaN or infinite entry, also where the sum of finite values overflows."""
    bad = not np.all(np.isfinite(X))
    if bad:
        with pytest.raises(ValueError, match="X contains NaN or infinite values"):
            _validation.check_matrix(X, "X")
    else:
        np.testing.assert_array_equal(_validation.check_matrix(X, "X"), X)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    X=arrays(np.float64, st.tuples(st.integers(1, 700), st.integers(1, 27)), elements=_values),
    data=st.data(),
)
def test_fused_gram_kernel_four_row_copy_is_bit_identical_to_the_row_copy(X, data):
    """The default kernel (four rows per sweep into the transposed block) and the
    reference (one row at a time): the same Gram bits, maxima and finiteness flag, for
    every n mod 4 and mod 128, every padding of d + 1, NaN and inf included."""
    n, d = X.shape
    y = data.draw(arrays(np.float64, (n,), elements=_values), label="y")
    P = (d + 1) + (-(d + 1)) % 3
    outcomes = []
    for kernel in (_validation._scan_gram_kernel(), _validation._scan_gram_rows_kernel()):
        gram = np.zeros((P, P))
        outcomes.append((kernel(X, y, gram, 128), gram.tobytes()))
    (fast, fast_gram), (ref, ref_gram) = outcomes
    assert fast_gram == ref_gram
    assert np.array_equal(np.array(fast[:2]), np.array(ref[:2]), equal_nan=True)
    assert fast[2] == ref[2]


@settings(max_examples=150, deadline=None)
@given(
    tiles=arrays(
        np.float64,
        st.integers(1, 9).map(lambda D: (D + (-D) % 3, D + (-D) % 3)),
        elements=st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.sampled_from([0.0, -0.0]),
        ),
    ),
    data=st.data(),
)
def test_gram_mirror_is_bit_identical_to_the_triu_reference(tiles, data):
    """The fused pass's mirror (a cached mask, then + 0.0) writes the bytes of the former
    ``triu`` pair (:func:`_triu_mirror`) for every D <= P, signed zeros and NaN included."""
    D = data.draw(st.integers(1, tiles.shape[0]), label="D")
    fast = np.where(_validation._upper_mask(D), tiles[:D, :D], tiles[:D, :D].T)
    fast += 0.0
    ref = _validation._triu_mirror(tiles[:D, :D])
    assert fast.tobytes() == ref.tobytes()


def test_fused_gram_returned_is_the_mirrored_tiles(monkeypatch):
    """check_bounded_design_gram returns exactly ``_triu_mirror`` of the kernel's tiles."""
    from dpreg._validation import check_bounded_design_gram

    kernel = _validation._scan_gram_kernel()
    seen = []

    def spy(X, y, tiles, block):
        out = kernel(X, y, tiles, block)
        seen.append(tiles)
        return out

    monkeypatch.setattr(_validation, "_scan_gram_kernel", lambda: spy)
    rng = np.random.default_rng(3)
    for d in (1, 2, 3, 20):
        X = rng.uniform(-1, 1, size=(500, d)) / math.sqrt(d)
        y = rng.uniform(-1, 1, size=500)
        seen.clear()
        gram = check_bounded_design_gram(
            X, y, bound_X=1.0, bound_y=1.0, trials=100, rng=rng, method="compiled"
        )[4]
        assert len(seen) == 1
        ref = _validation._triu_mirror(seen[0][: d + 1, : d + 1])
        assert gram.tobytes() == ref.tobytes()
