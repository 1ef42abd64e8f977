"""The compiled kernels load from numba's on-disk cache in a new process (issue 18).

A kernel calling kernels held in a closure is missed by numba's cache in every new
process (the closure's dispatchers pickle with a per-process id) and a recursive one
crashes on loading: each process then paid seconds of compilation (docs/scaling.md,
"numba's cache"). Independent check: two fresh interpreters sharing an empty cache
directory; the second must compile nothing (``stats.cache_misses`` empty, hits > 0).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")

_SCRIPT = r"""
import json
import numpy as np
from dpreg.estimators import adassp_stream_kernel as ak, _adassp_stream_jit as aj
from dpreg.estimators import normal32_kernel as nk, _normal32_jit as nj
from dpreg.data import counter_kernel as ck, _counter_jit as cj
from dpreg.experiments import choquettechoo2023_iterates as it, _ftrl_iterates_jit as ij
from dpreg.estimators import _dpgd_recent as dr, _dpgd_recent_jit as dj
from dpreg.estimators import ambssgd_kernel as mk, _ambssgd_jit as mj
from dpreg.estimators import _lanes_jit as lj
from dpreg.estimators import ftrl_logistic as fl, _logistic_grad_jit as gj
from dpreg.estimators import _dpgd_fused_step_jit as fj, _dpgd_tiled_jit as tj
from dpreg.estimators.dpgd import ClippedGradientKernel
from dpreg.estimators import _ftrl_numpy_order_jit as oj
from dpreg.data import _pcg64_jit as pj

X = np.random.default_rng(0).standard_normal((20, 300))
ak.clip_block(X, np.ones((20, 1)), 1.0, np.ones(1), np.zeros(1))
nk.normal32_fill(np.random.default_rng(1), np.empty(50, np.float32))
ck.counter_rows(7, np.arange(5), np.ones(300), np.arange(300.0))
ck.counter_sincos(np.array([0.5, 2.0]))
P = it.FtrlIterateBoundsParams.from_cell({"d": 3, "T": 5})
it._simulate(P, it._setup(P, "sgd"), 2, np.random.default_rng(2), kernel="numba")
cert = dr.RecentCertificate(np.eye(3), np.array([0.0, 0.5, 2.0]), np.ones(3), 1.0, "gradient")
cert.corrections(np.full(3, 0.1), np.full(3, -np.inf), np.inf, np.zeros(1, dtype=np.int64),
                 np.zeros((1, 3)), compiled=True)
mk.batch_gradient(np.eye(5), np.ones(5), np.ones(5), np.array([[0, 1, 2, 3, 4]]),
                  np.zeros((1, 5, 1)), np.ones((1, 1)))
lj.bartlett_lanes(np.eye(3), np.ones(3), np.ones(5), np.ones((5, 3)), np.zeros((5, 3)),
                  np.empty((5, 3, 3)))
lj.certified_lanes(np.tile(np.eye(3), (5, 1, 1)), np.zeros(5), np.ones((5, 3)),
                   np.empty((5, 3)), np.empty(5, np.bool_), np.empty(5, np.bool_), 1024.0)
Xg = np.random.default_rng(3).uniform(size=(40, 4))
fl._clipped_gradient_sum_compiled(Xg, np.eye(3)[np.arange(40) % 3], np.ones(40),
                                  np.zeros((2, 5), dtype=np.int64), np.ones((2, 4, 3)), 1.0)
gj.noisy_step(np.ones((2, 4, 3)), np.ones((2, 4, 3)), np.ones((2, 4, 3)), True,
              np.ones((2, 4, 3)), True, 0.9, 32, 0.1)
Xk = np.random.default_rng(3).standard_normal((60, 3))
K = ClippedGradientKernel(Xk, np.ones(60), 1.0, fused=True)  # two columns: compiled bookkeeping
tj.fused_narrow_tiled(np.ones((11, 20)), np.ones((10, 20)), np.ones((2, 11)),
                      np.zeros(2, dtype=np.int64), np.empty((2, 10)),
                      np.empty(2, dtype=np.int64), 8)
K(np.random.default_rng(4).standard_normal((3, 4)))
e3 = np.empty((0, 0, 0))
oj.steps(Xk, np.ones(60), np.ones(60), np.arange(60).reshape(2, 5, 6), np.zeros((2, 3)), 1,
         0.1, 1.0, True, 0.0, e3, e3, np.zeros(2))
pj.geometric_cumsum(np.array([1, 2, 3, 5], dtype=np.uint64), -0.1, 50, np.empty((2, 9), np.int64))
out = {}
for name, f in [("clip_rows", aj.clip_rows), ("fill", nj.fill), ("rows", cj.rows),
                ("uniforms", cj.uniforms), ("sincos_loop", cj.sincos_loop),
                ("iterate_steps", ij.iterate_steps), ("corrections", dj.corrections),
                ("ambssgd_gathered", mj.gathered), ("bartlett_lanes", lj.bartlett_lanes),
                ("certified_lanes", lj.certified_lanes),
                ("shift_by_row_max", gj.shift_by_row_max), ("residual_clip", gj.residual_clip),
                ("noisy_step", gj.noisy_step), ("fused_prologue", fj.prologue),
                ("fused_epilogue", fj.epilogue), ("fused_narrow_tiled", tj.fused_narrow_tiled),
                ("ftrl_numpy_order", oj.steps), ("geometric_cumsum", pj.geometric_cumsum)]:
    out[name] = [sum(f.stats.cache_hits.values()), sum(f.stats.cache_misses.values())]
print(json.dumps(out))
"""


def _run(cache_dir: str) -> dict[str, list[int]]:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_kernels_load_from_the_cache_in_a_new_process(tmp_path):
    first = _run(str(tmp_path))
    assert all(misses >= 1 for _, misses in first.values()), first  # compiled once
    second = _run(str(tmp_path))
    for name, (hits, misses) in second.items():
        assert misses == 0 and hits >= 1, (name, second)
