"""Speed measurement of DP-AMBSSGD (issue target: N = 10^6, d = 50 in < 2 s on one core).

Run ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m dpreg.experiments.varshney2022_speed``.
Prints the wall time of (a) streaming the data generation alone, (b) one DP-AMBSSGD pass
on data already in memory (the registered estimator, with its per-trial permutation) and
(c) one streamed pass that generates the data block by block. Timings are printed, never
asserted.
"""

from __future__ import annotations

import math
import time

import numpy as np


def main(n: int = 10**6, d: int = 50, repeats: int = 3) -> dict[str, float]:
    """Time the three measurements; return the best of ``repeats`` for each."""
    from dpreg.estimators import get_estimator
    from dpreg.estimators.ambssgd_core import (
        GaussianStream,
        RunSpec,
        ambssgd_pass,
        block_layout,
        paper_hyperparameters,
    )
    from dpreg.estimators.ambssgd_privacy import ambssgd_noise_multiplier
    from dpreg.privacy.budgets import ApproxDP

    lam = np.ones(d)
    w = np.random.default_rng(0).standard_normal(d)
    w /= np.linalg.norm(w)
    lay = block_layout(n)
    hp = paper_hyperparameters(n, lay.b, H_eigenvalues=lam, w_star_H_norm=1.0, sigma=0.1)
    out: dict[str, float] = {}

    def best(fn) -> float:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    out["generate_data_s"] = best(lambda: GaussianStream(1, [0], lam, w).take(n))
    X, base, z = GaussianStream(1, [0], lam, w).take(n)
    X, y = X[0], base[0] + 0.1 * z[0]
    out["estimator_pass_s"] = best(
        lambda: get_estimator("dp_ambssgd")(
            X,
            y,
            budget=ApproxDP(1.0, 1e-6),
            rng=np.random.default_rng(1),
            x_norm_sq=hp.x_norm_sq,
            H_norm=1.0,
            stat_domain=hp.stat_domain,
        )  # fmt: skip
    )
    a = ambssgd_noise_multiplier(1.0, 1e-6)
    runs = RunSpec(("adaptive",), a, a, hp.fixed_clip, hp.stat_domain, 0.1)

    def streamed() -> None:
        ambssgd_pass(
            GaussianStream(2, [0], lam, w), layout=lay, runs=runs, eta=hp.eta,
            x_norm=math.sqrt(hp.x_norm_sq), log_factor=hp.log_factor, n_queries=20,
            rng=np.random.default_rng(3),
        )  # fmt: skip

    out["streamed_pass_with_generation_s"] = best(streamed)
    for k, v in out.items():
        print(f"{k}: {v:.3f}")
    return out


if __name__ == "__main__":
    main()
