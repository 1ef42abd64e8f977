"""numpy's BLAS and libm's pow called from numba give numpy's bits (issue 18)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpreg.estimators import numpy_blas_kernel as nbk

pytestmark = pytest.mark.skipif(
    not nbk.blas_available(), reason="numpy is not built on scipy-openblas64 here"
)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 150), seed=st.integers(0, 2**32 - 1), scale=st.floats(-8.0, 8.0))
def test_each_call_is_numpys_to_the_bit(n, seed, scale):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n) * 10.0**scale, rng.normal(size=n)
    A, B = rng.normal(size=(n, n)), rng.normal(size=(n, n)) * 10.0**-scale
    check, _ = nbk._checks()
    dot, mv, mm, mat = np.zeros(1), np.zeros(n), np.zeros(n), np.zeros((n, n))
    check(a, b, A, B, dot, mv, mm, mat)
    assert dot[0].tobytes() == np.dot(a, b).tobytes()
    assert mv.tobytes() == np.dot(A, b).tobytes()
    assert mm.tobytes() == np.matmul(A, b).tobytes()
    assert mat.tobytes() == np.dot(A, B).tobytes()


def test_the_dot_of_numpy_adds_to_plus_zero():
    # numpy's DOUBLE_dot starts from 0.0: a dot of -0.0 products is +0.0
    check, _ = nbk._checks()
    a, b = np.array([-0.0, -0.0]), np.array([1.0, 1.0])
    dot, m = np.zeros(1), np.zeros((2, 2))
    check(a, b, m, m, dot, np.zeros(2), np.zeros(2), np.zeros((2, 2)))
    assert np.signbit(np.dot(a, b)) == np.signbit(dot[0]) == False  # noqa: E712


def test_libm_pow_is_the_scalar_power_not_a_product():
    """``x ** 2`` of a float64 scalar is libm's pow, which is not always ``x * x``."""
    _, powers = nbk._checks()
    x = np.random.default_rng(3).normal(size=20_000) * 10.0 ** np.random.default_rng(4).uniform(
        -50, 50, size=20_000
    )
    got = powers(x)
    want = np.array([[np.float64(v) ** 2 for v in x], [np.float64(v) ** 3 for v in x],
                     [abs(np.float64(v)) ** 0.5 for v in x]])  # fmt: skip
    assert got.tobytes() == want.tobytes()
    # the test has teeth: somewhere the power differs from the product / the root
    assert np.any(got[0] != x * x) and np.any(got[2] != np.sqrt(np.abs(x)))
