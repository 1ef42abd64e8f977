"""The roofline counts of ``benchmarks/roofline.py`` (issue 18); no timing is asserted."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import estimators as bench  # noqa: E402
import roofline as rl  # noqa: E402

from dpreg.estimators import ESTIMATORS, get_estimator  # noqa: E402
from dpreg.estimators.ambssgd_core import block_layout  # noqa: E402
from dpreg.privacy.budgets import ZCDP  # noqa: E402


class CountingGenerator(np.random.Generator):
    """A PCG64 generator that counts the standard normals it hands out."""

    def __init__(self, seed: int) -> None:
        super().__init__(np.random.PCG64(seed))
        self.normals = 0

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        draws = super().standard_normal(size, dtype=dtype, out=out)
        self.normals += int(np.size(draws))
        return draws


# ------------------------------------------------------------------ coverage


def test_every_registered_and_benchmarked_estimator_has_a_formula():
    missing = sorted(set(ESTIMATORS) - set(rl.FORMULAS))
    assert not missing, f"registered estimators without a roofline formula: {missing}"
    for quick in (True, False):
        for w in bench.workloads(quick):
            counted = rl.work(w.estimator, w.shape())
            assert counted.flops > 0 and counted.bytes > 0, w.estimator


def test_no_formula_for_an_unknown_estimator():
    with pytest.raises(KeyError, match="no roofline formula"):
        rl.work("not_an_estimator", rl.Shape(10, 2, None, 1))
    with pytest.raises(TypeError, match="Shape"):
        rl.work("ols", (10, 2, None, 1))


# ------------------------------------------------------------------ independent counts


def instrumented_gram(n: int, p: int) -> int:
    """Flops of the symmetric half of A'A counted loop by loop (2 per multiply-add)."""
    flops = 0
    for _ in range(n):
        for j in range(p):
            for _k in range(j + 1):
                flops += 2
    return flops


@pytest.mark.parametrize(("n", "p"), [(1, 1), (3, 2), (7, 4)])
def test_gram_flops_match_a_loop_count(n, p):
    assert rl.gram(n, p) == instrumented_gram(n, p)


def instrumented_dp_gd(X, y, T: int, trials: int, clip: float) -> dict[str, int]:
    """A reference clipped-gradient DP-GD written with loops, counting its operations."""
    n, d = X.shape
    count = {"flops": 0, "reads": 0, "draws": 0}
    rng = np.random.default_rng(0)
    theta = np.zeros((trials, d))
    for _ in range(T):
        for i in range(n):  # one pass shared by all trials: each row read once a step
            count["reads"] += d + 1
            row, target = X[i], y[i]
            for t in range(trials):
                r = target
                for j in range(d):
                    r -= row[j] * theta[t, j]
                    count["flops"] += 2
                scale = min(1.0, clip / max(abs(r) * np.linalg.norm(row), 1e-300))
                count["flops"] += 3  # |r| * ||x_i|| (norm precomputed), compare, r * scale
                for j in range(d):
                    theta[t, j] += 0.0 * row[j] * r * scale  # accumulate: one multiply-add
                    count["flops"] += 2
        count["draws"] += int(np.size(rng.standard_normal((trials, d))))
    return count


def test_dp_gd_formula_matches_an_instrumented_reference():
    rng = np.random.default_rng(1)
    n, d, T, m = 6, 3, 2, 2
    X, y = rng.standard_normal((n, d)), rng.standard_normal(n)
    count = instrumented_dp_gd(X, y, T, m, clip=1.0)
    counted = rl.work("dp_gd", rl.Shape(n, d, T, m))
    assert counted.flops == count["flops"]
    assert counted.bytes == 8 * count["reads"]
    assert counted.draws == count["draws"]


def test_bartlett_draws_are_the_lower_triangle():
    p = 5
    rows, cols = np.tril_indices(p)
    s = rl.Shape(100, p - 1, None, 3)
    counted = rl.work("linear_mixing", s)
    assert counted.draws == 3 * (rows.size + 1)  # + the noise z of each trial


@pytest.mark.parametrize("n", [5000, 100_000])
def test_ambssgd_layout_matches_the_estimators_layout(n):
    layout = block_layout(n)
    T, stat, b = rl._layout(rl.Shape(n, 4, layout.T, 1))
    assert (T, stat, b) == (layout.T, layout.s, layout.b)


def test_noise_draws_match_what_the_estimators_draw():
    """DP-GD and the independent-noise stream draw exactly the counted normals."""
    data = np.random.default_rng(2)
    n, d, m = 40, 3, 2
    X, y = data.standard_normal((n, d)), data.standard_normal(n)
    rng = CountingGenerator(3)
    get_estimator("dp_gd")(
        X, y, budget=ZCDP(1.0), T=4, step=0.1, clip=1.0, bound_X=None, bound_y=None,
        rng=rng, trials=m,
    )  # fmt: skip
    assert rng.normals == rl.work("dp_gd", rl.Shape(n, d, 4, m)).draws
    rng = CountingGenerator(4)
    get_estimator("dp_sgd_stream")(X, y, budget=ZCDP(1.0), eta=0.1, clip=1.0, rng=rng, trials=m)
    assert rng.normals == rl.work("dp_sgd_stream", rl.Shape(n, d, n, m)).draws


#: Normals the count includes that are not ``standard_normal`` calls: the chi draws on
#: the diagonal of a Bartlett factor (d per Wishart draw).
CHI_DIAGONALS = {
    "ihm": lambda w: w.T * w.d,
    "linear_mixing": lambda w: w.d + 1,
    "sheffet_sketch": lambda w: w.d + 1,
}


@pytest.mark.parametrize(
    "name",
    ["adassp", "ihm", "linear_mixing", "sheffet_sketch", "dp_gd", "dp_2s_gd", "dp_2s_gd_beta"],
)
def test_counted_draws_match_the_quick_workloads(name):
    """Counted normals = what the estimator draws at the quick workloads (+ chi diagonals)."""
    for w in (w for w in bench.workloads(True) if w.estimator == name):
        args, kwargs = w.build(np.random.default_rng(5))
        rng = CountingGenerator(6)
        get_estimator(name)(*args, rng=rng, trials=w.trials, **kwargs)
        chi = CHI_DIAGONALS.get(name, lambda w: 0)(w)
        assert rng.normals + w.trials * chi == rl.work(name, w.shape()).draws, w.paper


def test_counted_ffts_match_what_the_ftrl_noise_transforms(monkeypatch):
    """nu-DP-FTRL's flops beyond the steps = the 1-D real FFTs its noise really does."""
    from scipy import fft as sp_fft

    from dpreg.estimators import ftrl_noise

    # the public transforms, counted here (the buffered path makes the same calls through
    # scipy's pocketfft module with out=: tests/unit/test_ftrl_noise.py checks the bits)
    monkeypatch.setattr(ftrl_noise, "_pocketfft", lambda: None)
    series: list[int] = []
    for fname in ("rfft", "irfft"):
        original = getattr(sp_fft, fname)

        def counted(x, *args, _f=original, **kwargs):
            axis = kwargs.get("axis", -1)
            series.append(int(np.prod(np.shape(x))) // np.shape(x)[axis])
            return _f(x, *args, **kwargs)

        monkeypatch.setattr(sp_fft, fname, counted)
    (w,) = (w for w in bench.workloads(True) if w.estimator == "dp_ftrl")
    args, kwargs = w.build(np.random.default_rng(5))
    get_estimator("dp_ftrl")(*args, rng=np.random.default_rng(6), trials=w.trials, **kwargs)
    s = w.shape()
    steps = s.trials * s.n * (4 * s.d + 3)
    transforms = (rl.work("dp_ftrl", s).flops - steps) / rl.fft_flops(s.n)
    assert sum(series) == 2 * s.trials * s.d + 1 == pytest.approx(transforms)


def test_deterministic_estimators_count_once_and_private_ones_per_trial():
    one, many = rl.Shape(1000, 5, 10, 1), rl.Shape(1000, 5, 10, 50)
    for name in ("ols", "2s_gd"):
        assert rl.work(name, one) == rl.work(name, many)
    for name in ("adassp", "dp_gd", "dp_ssgd", "dp_ftrl"):
        assert rl.work(name, many).flops > rl.work(name, one).flops
        assert rl.work(name, many).draws == 50 * rl.work(name, one).draws


# ------------------------------------------------------------------ bound and ratio


def test_bound_is_a_roofline_plus_the_noise():
    rates = rl.Rates(1e9, 1e8, 1e6)
    compute_bound = rl.Work(flops=2e9, bytes=1e8, draws=5e5)
    assert rl.bound_seconds(compute_bound, rates) == pytest.approx(2.0 + 0.5)
    memory_bound = rl.Work(flops=1e8, bytes=3e8, draws=0.0)
    assert rl.bound_seconds(memory_bound, rates) == pytest.approx(3.0)
    assert rl.roofline_ratio(6.0, 2.0) == 3.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: rl.Shape(0, 2, None, 1), "n must be a positive integer"),
        (lambda: rl.Shape(10, 2, 0, 1), "T must be a positive integer or None"),
        (lambda: rl.Shape(10, 2, None, 1.5), "trials must be a positive integer"),
        (lambda: rl.Work(-1.0, 0.0, 0.0), "flops must be a finite number"),
        (lambda: rl.Work(1.0, math.nan, 0.0), "bytes must be a finite number"),
        (lambda: rl.Rates(0.0, 1.0, 1.0), "gemm_flops_per_s must be a finite positive"),
        (lambda: rl.roofline_ratio(1.0, 0.0), "bound must be a finite positive"),
        (lambda: rl.roofline_ratio(math.inf, 1.0), "measured_seconds must be"),
        (lambda: rl.work("dp_gd", rl.Shape(10, 2, None, 1)), "T must be given"),
        (lambda: rl.work("dp_sgd_poisson", rl.Shape(10, 2, 1, 1)), "batch must be given"),
        (lambda: rl.measure_rates(quick=True, repeats=0), "repeats must be a positive"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_rates_are_positive_and_finite():
    rates = rl.measure_rates(quick=True, repeats=1)
    for value in (rates.gemm_flops_per_s, rates.bandwidth_bytes_per_s, rates.normals_per_s):
        assert math.isfinite(value) and value > 0


def test_ols_counts_the_eigenvalues_that_certify_its_cholesky_solve():
    s = rl.Shape(50, 4, None, 7)  # deterministic: the same work for any trial count
    assert rl.work("ols", s).flops == rl.gram(50, 5) + rl.eig(4) + rl.solve(4)
    assert rl.work("ols", s) == rl.work("ols", rl.Shape(50, 4, None, 1))


def test_linear_mixing_workload_needs_one_covariance_factor():
    """The bound counts one factor of A'A + eta_t^2 I: at the benchmark's workload every
    trial's noisy eigenvalue is clamped at 0, so eta_t = sqrt(gamma) in all trials (a
    distinct eta_t would need its own factor)."""
    (w,) = [w for w in bench.lev_workloads(20_000, 20, 100) if w.estimator == "linear_mixing"]
    args, kwargs = w.build(np.random.default_rng([bench.SEED, 0]))
    fit = get_estimator("linear_mixing")(
        *args, rng=np.random.default_rng([bench.SEED, 1]), trials=w.trials, **kwargs
    )
    assert np.all(fit.diagnostics["lambda_tilde"] == 0.0)
    assert np.all(fit.diagnostics["eta_tilde"] == math.sqrt(fit.diagnostics["gamma"]))
