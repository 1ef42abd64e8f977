"""Streamed synthetic data: Gaussian (or Laplace) rows in fixed chunks, paired across readers.

The data generator of the Varshney et al. (2022) validation study
(``docs/notes/varshney2022.md`` §5.1), moved here from the estimators: a stream is data,
which :func:`dpreg.estimators.ambssgd_core.ambssgd_pass` and the study's baselines read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["GaussianStream"]


class GaussianStream:
    r"""Synthetic Gaussian rows streamed in fixed chunks.

    The data generator of docs/notes/varshney2022.md §5.1.

    :math:`x = H^{1/2}u`, :math:`u\sim N(0, I)`, :math:`y = \langle x, w^*\rangle +
    \sigma z`.

    Replicate k's rows come in chunks of ``chunk_rows`` rows, chunk j drawn from
    ``default_rng([seed, replicate_ids[k], j])``: any consumer that reads the same
    replicate gets the same rows whatever its read sizes, so methods are paired. Rows
    are i.i.d., so reading them in order *is* reading a uniformly random permutation of
    the sample (the shuffle of Algorithms 1-2 is implicit).

    ``H`` is diagonal with eigenvalues ``H_eigenvalues`` (SGD with norm clipping is
    rotation-equivariant and the metric is :math:`\|w - w^*\|_H`, so a diagonal H loses
    no generality). The noise :math:`z\sim N(0,1)` is returned separately; runs scale it.
    """

    def __init__(
        self,
        seed: int,
        replicate_ids: Sequence[int],
        H_eigenvalues: np.ndarray,
        w_star: np.ndarray,
        *,
        chunk_rows: int = 2**14,
        noise: str = "gaussian",
    ):
        self.seed = int(seed)
        self.ids = [int(i) for i in replicate_ids]
        self.n_replicates = len(self.ids)
        self.sqrt_h = np.sqrt(np.asarray(H_eigenvalues, dtype=np.float64))
        self.w_star = np.asarray(w_star, dtype=np.float64)
        self.d = self.sqrt_h.size
        self.chunk_rows = int(chunk_rows)
        self.noise = noise
        self._buffer: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._buffered = 0
        self._next_chunk = 0

    def _draw_chunk(self) -> None:
        D, G, d = self.n_replicates, self.chunk_rows, self.d
        X = np.empty((D, G, d))
        z = np.empty((D, G))
        for k, rid in enumerate(self.ids):
            rng = np.random.default_rng([self.seed, rid, self._next_chunk])
            if self.noise == "laplace":
                # unit-variance Laplace coordinates and noise (heavier tails, a = 1)
                X[k] = rng.laplace(0.0, 1.0 / math.sqrt(2.0), (G, d))
                z[k] = rng.laplace(0.0, 1.0 / math.sqrt(2.0), G)
            else:
                rng.standard_normal((G, d), out=X[k])
                rng.standard_normal(G, out=z[k])
        X *= self.sqrt_h
        base = X @ self.w_star
        self._buffer.append((X, base, z))
        self._buffered += G
        self._next_chunk += 1

    def take(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return the next k rows of every replicate (see RowSource)."""
        while self._buffered < k:
            self._draw_chunk()
        parts, got = [], 0
        while got < k:
            X, base, z = self._buffer[0]
            need = k - got
            if X.shape[1] <= need:
                parts.append((X, base, z))
                self._buffer.pop(0)
                got += X.shape[1]
            else:
                parts.append((X[:, :need], base[:, :need], z[:, :need]))
                self._buffer[0] = (X[:, need:], base[:, need:], z[:, need:])
                got += need
        self._buffered -= k
        if len(parts) == 1:
            return parts[0]
        return (
            np.concatenate([p[0] for p in parts], axis=1),
            np.concatenate([p[1] for p in parts], axis=1),
            np.concatenate([p[2] for p in parts], axis=1),
        )


# ------------------------------------------------------------------------------ runs
