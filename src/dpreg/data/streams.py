"""Streamed synthetic data: Gaussian (or Laplace) rows in fixed chunks, paired across readers.

The data generator of the Varshney et al. (2022) validation study
(``docs/notes/varshney2022.md`` §5.1), moved here from the estimators: a stream is data,
which :func:`dpreg.estimators.ambssgd_core.ambssgd_pass` and the study's baselines read.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from sys import getrefcount
from typing import Any

import numpy as np

__all__ = ["AUTO_MIN_NORMALS", "COUNTER_KERNELS", "CounterGaussianRows", "GaussianStream"]

COUNTER_KERNELS: tuple[str, ...] = ("auto", "numba", "numpy")
"""Kernels of :meth:`CounterGaussianRows.rows` and of :class:`GaussianStream`'s draws."""

MAX_SPARE_CHUNKS = 2
"""Retired chunks a :class:`GaussianStream` keeps for reuse (each ``(D, chunk_rows, d)``)."""

AUTO_MIN_NORMALS = 1 << 23
"""``kernel="auto"``: normals produced through numpy before switching to the compiled
passes (about 0.4 s of numpy work, against numba's start-up of about 1 s per process)."""


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

    ``observers``: callables given every chunk as it is drawn, ``(X, base, z)`` of shapes
    (D, chunk_rows, d), (D, chunk_rows), (D, chunk_rows) (read-only use), so several
    consumers of the same rows share one draw: the study feeds AdaSSP's statistics and
    DP-SSGD's steps from the chunks DP-AMBSSGD's pass draws, instead of drawing the
    stream three times. :meth:`drain` draws the chunks no consumer took (rows up to n).

    ``kernel``: ``"numba"`` draws the normals with
    :func:`dpreg.data.normal_kernel.standard_normal_fill` (numpy's values and generator
    state, in compiled code, about 2.5x faster), ``"numpy"`` with
    ``Generator.standard_normal`` (the reference: the same rows, bit for bit), ``"auto"``
    (default) as :class:`CounterGaussianRows` chooses (compiled once numba is imported
    or :data:`AUTO_MIN_NORMALS` normals are drawn). Laplace rows are always numpy's.

    Examples
    --------
    >>> import numpy as np
    >>> seen = []
    >>> src = GaussianStream(0, [0, 1], np.ones(2), np.array([1.0, 0.0]), chunk_rows=4,
    ...                      observers=[lambda X, base, z: seen.append(X.shape)])
    >>> X, base, z = src.take(3)
    >>> src.drain(10)
    >>> X.shape, seen
    ((2, 3, 2), [(2, 4, 2), (2, 4, 2), (2, 4, 2)])
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
        observers: Sequence[Callable[[np.ndarray, np.ndarray, np.ndarray], None]] = (),
        kernel: str = "auto",
    ):
        if kernel not in COUNTER_KERNELS:
            raise ValueError(f"kernel must be one of {COUNTER_KERNELS}; got {kernel!r}")
        self.kernel = kernel
        self._normals = 0
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
        self.observers = list(observers)
        self._spare: list[np.ndarray] = []  # retired chunks' X, reused once unreferenced
        self._probe = [np.empty(0)]  # the reference count of an unreferenced pooled array

    @property
    def rows_drawn(self) -> int:
        """Rows of each replicate drawn so far (whole chunks)."""
        return self._next_chunk * self.chunk_rows

    def drain(self, n: int) -> None:
        """Draw (for the observers) the chunks still needed to cover the first n rows.

        The rows drawn here are not kept: :meth:`take` must not be called afterwards.
        """
        self._buffer, self._buffered = [], 0
        while self.rows_drawn < n:
            self._draw_chunk(keep=False)

    def _draw_chunk(self, keep: bool = True) -> None:
        X, base, z = self._chunk_rows(self._next_chunk, self._spare_chunk())
        for observe in self.observers:
            observe(X, base, z)
        if keep:
            self._buffer.append((X, base, z))
            self._buffered += self.chunk_rows
        else:
            self._retire(X)
        self._next_chunk += 1

    def _retire(self, X: np.ndarray) -> None:
        """Keep a consumed chunk's X (its owning array) for reuse by a later chunk."""
        owner = X if X.base is None else X.base
        if isinstance(owner, np.ndarray) and len(self._spare) < MAX_SPARE_CHUNKS:
            self._spare.append(owner)

    def _spare_chunk(self) -> np.ndarray | None:
        """Return a retired chunk's X that nothing refers to any more, or None.

        A fresh (D, G, d) array per chunk (262 MB at D = 10, d = 200) is mapped by
        malloc and its pages faulted in again by every draw, 25-400 ms a chunk at
        d = 200 on the shared host (docs/scaling.md, "Varshney E1/E3, fifth pass"). A
        retired array is reused only when its reference count equals that of an array
        held by a list alone: a view a consumer still holds (its ``base``) or any other
        reference keeps it from being overwritten. The rows drawn are the same either
        way (every element is written).
        """
        free = getrefcount(self._probe[0])
        for i in range(len(self._spare)):
            if getrefcount(self._spare[i]) == free:
                return self._spare.pop(i)
        return None

    def _chunk_rows(
        self, j: int, X: np.ndarray | None = None, z: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Draw chunk j of every replicate into ``X`` (D, G, d), ``z`` (D, G) (new if None).

        ``X[k]`` and ``z[k]`` must be C-contiguous (e.g. row ranges of a larger array).
        The coordinates are scaled by :math:`H^{1/2}` as they are drawn (the compiled
        fill) or right after (numpy): the same products either way.
        """
        D, G, d = self.n_replicates, self.chunk_rows, self.d
        fill, fill_scaled = self._normal_fill(D * G * (d + 1))
        X = np.empty((D, G, d)) if X is None else X
        z = np.empty((D, G)) if z is None else z
        for k, rid in enumerate(self.ids):
            rng = np.random.default_rng([self.seed, rid, j])
            if self.noise == "laplace":
                # unit-variance Laplace coordinates and noise (heavier tails, a = 1)
                X[k] = rng.laplace(0.0, 1.0 / math.sqrt(2.0), (G, d))
                X[k] *= self.sqrt_h
                z[k] = rng.laplace(0.0, 1.0 / math.sqrt(2.0), G)
            else:
                fill_scaled(rng, X[k], self.sqrt_h)
                fill(rng, z[k])
        return X, X @ self.w_star, z

    def materialise(
        self, n: int, out: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return the first n rows of every replicate, ``(X, base, z)``: (D, n, d), (D, n), (D, n).

        The rows :meth:`take` returns for a fresh stream (bit for bit, tested), drawn
        chunk by chunk straight into the output arrays: no list of chunks and no
        concatenated copy (half the memory and one pass fewer for in-memory consumers).
        The observers see every chunk. Only for a stream nothing has been drawn from.

        ``out``: arrays ``(X, base, z)`` of those shapes (C-contiguous float64) to draw
        into, e.g. the previous trial's (every element is overwritten, so the rows are the
        same): a fresh 400 MB X per trial (n = 1e6, d = 50) is mapped and its pages
        faulted in again by every trial (issue 18).
        """
        if self._next_chunk or self._buffer:
            raise ValueError("materialise needs a fresh stream (no rows drawn yet)")
        n = int(n)
        if n < 0:
            raise ValueError(f"n must be a non-negative integer; got {n!r}")
        D, G, d = self.n_replicates, self.chunk_rows, self.d
        if out is None:
            X, base, z = np.empty((D, n, d)), np.empty((D, n)), np.empty((D, n))
        else:
            X, base, z = _checked_out(out, (D, n, d))
        for lo in range(0, n, G):
            hi = lo + G
            if hi <= n:  # a whole chunk: drawn in place (each X[k, lo:hi] is contiguous)
                Xc, bc, zc = self._chunk_rows(self._next_chunk, X[:, lo:hi], z[:, lo:hi])
                base[:, lo:hi] = bc
            else:  # the last, partial chunk: drawn whole, as take() draws it, then cut
                Xc, bc, zc = self._chunk_rows(self._next_chunk)
                X[:, lo:], base[:, lo:], z[:, lo:] = (
                    Xc[:, : n - lo],
                    bc[:, : n - lo],
                    zc[:, : n - lo],
                )
            for observe in self.observers:
                observe(Xc, bc, zc)
            self._next_chunk += 1
        return X, base, z

    def _normal_fill(self, count: int) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """Return the fills of the next ``count`` normals, ``(plain, column-scaled)``.

        Compiled or numpy's (the same values and products).
        """
        kernel = self.kernel
        if kernel == "auto":
            loaded = "numba" in sys.modules  # its start-up already paid in this process
            kernel = "numba" if loaded or self._normals >= AUTO_MIN_NORMALS else "numpy"
            self._normals += count
        if kernel == "numba":
            from dpreg.data.normal_kernel import scaled_normal_fill, standard_normal_fill

            return standard_normal_fill, scaled_normal_fill
        return _numpy_fill, _numpy_scaled_fill

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
                self._retire(X)
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


def _checked_out(
    out: tuple[np.ndarray, np.ndarray, np.ndarray], shape: tuple[int, int, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check :meth:`GaussianStream.materialise`'s ``out`` against the (D, n, d) shape."""
    if not isinstance(out, tuple) or len(out) != 3:
        raise ValueError("out must be a tuple (X, base, z) of arrays")
    wants = (shape, shape[:2], shape[:2])
    for name, arr, want in zip(("X", "base", "z"), out, wants, strict=True):
        if not (
            isinstance(arr, np.ndarray)
            and arr.shape == want
            and arr.dtype == np.float64
            and arr.flags.c_contiguous
            and arr.flags.writeable
        ):
            raise ValueError(
                f"out's {name} must be a writeable C-contiguous float64 array of shape "
                f"{want}; got {getattr(arr, 'shape', type(arr).__name__)}"
            )
    return out


def _numpy_fill(rng: np.random.Generator, out: np.ndarray) -> np.ndarray:
    """Draw as :class:`GaussianStream`'s reference does: ``rng.standard_normal(out=out)``."""
    return rng.standard_normal(out=out)


def _numpy_scaled_fill(rng: np.random.Generator, out: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Draw the scaled rows as the reference does: numpy's draw, then ``out *= scale``."""
    rng.standard_normal(out=out)
    out *= scale
    return out


# ------------------------------------------------------------------------------ runs


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser of ``x + golden`` (uint64, wrapping arithmetic, in place)."""
    z = x + _GOLDEN
    z ^= z >> np.uint64(30)
    z *= _MIX1
    z ^= z >> np.uint64(27)
    z *= _MIX2
    z ^= z >> np.uint64(31)
    return z


def _counter_normal_pairs(key: int, counters: np.ndarray) -> np.ndarray:
    """Two standard normals per counter (Box-Muller on two hashed uniforms): (..., 2).

    Pair i depends on (key, counters[i]) only, so any subset is drawn at random access.
    """
    base = (counters.astype(np.uint64) << np.uint64(1)) ^ np.uint64(key)
    with np.errstate(over="ignore"):
        h1 = _splitmix64(base)
        base ^= np.uint64(1)
        h2 = _splitmix64(base)
    radius = ((h1 >> np.uint64(11)).astype(np.float64) + 1.0) * 2.0**-53  # (0, 1]
    radius = np.sqrt(-2.0 * np.log(radius))
    angle = (h2 >> np.uint64(11)).astype(np.float64) * (2.0**-53 * 2.0 * math.pi)
    out = np.empty((*counters.shape, 2))
    np.multiply(radius, np.cos(angle), out=out[..., 0])
    np.multiply(radius, np.sin(angle), out=out[..., 1])
    return out


class CounterGaussianRows:
    r"""Rows of the Varshney data stream at random access, drawn from a counter-based hash.

    The same data-generating process as :class:`GaussianStream` (docs/notes/varshney2022.md
    §5.1: :math:`x = H^{1/2}u`, :math:`u\sim N(0, I)`, :math:`y = \langle x, w^*\rangle +
    \sigma z`), but row i of replicate ``replicate_id`` is a function of ``(seed,
    replicate_id, i)`` alone: coordinate j of :math:`u_i` is a Box-Muller normal from the
    SplitMix64 hashes of counter :math:`\lceil (d+1)/2\rceil i + \lfloor j/2 \rfloor` (two
    normals per counter, cosine and sine), and :math:`z_i` is normal d of the row. So any
    set of rows is drawn on demand, in any order or block size, with the same values:
    DP-SGD's Poisson subsamples read their rows without the N rows ever being in memory
    (docs/varshney2022.md, E3). The rows are not those of :class:`GaussianStream` (a
    different generator): same law, not paired with it.

    ``kernel``: ``"numba"`` computes the rows in compiled passes
    (:mod:`dpreg.data.counter_kernel`, the same operations but a cosine and sine pair
    within one ulp of libm's: equal to round-off, relative difference below 1e-15),
    ``"numpy"`` is the reference,
    ``"auto"`` (default) uses the compiled passes once numba is imported in the process or
    this object has produced :data:`AUTO_MIN_NORMALS` normals, numpy before (so small
    uses never pay numba's start-up of about 1 s).

    Examples
    --------
    >>> import numpy as np
    >>> src = CounterGaussianRows(0, 3, np.ones(2), np.array([1.0, 0.0]))
    >>> X, base, z = src.rows(np.array([5, 1]))
    >>> X.shape, bool(np.all(src.rows(np.array([1]))[0] == X[1]))
    ((2, 2), True)
    """

    def __init__(
        self,
        seed: int,
        replicate_id: int,
        H_eigenvalues: np.ndarray,
        w_star: np.ndarray,
        *,
        kernel: str = "auto",
    ):
        if kernel not in COUNTER_KERNELS:
            raise ValueError(f"kernel must be one of {COUNTER_KERNELS}; got {kernel!r}")
        self.kernel = kernel
        self._normals = 0
        for name, v in (("seed", seed), ("replicate_id", replicate_id)):
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
                raise ValueError(f"{name} must be a non-negative integer; got {v!r}")
        self.sqrt_h = np.sqrt(np.asarray(H_eigenvalues, dtype=np.float64))
        self.w_star = np.asarray(w_star, dtype=np.float64)
        self.d = self.sqrt_h.size
        if self.w_star.shape != (self.d,):
            raise ValueError(f"w_star must have shape ({self.d},); got {self.w_star.shape}")
        with np.errstate(over="ignore"):
            k = _splitmix64(np.array([int(seed)], dtype=np.uint64))
            k = _splitmix64(k ^ np.uint64(int(replicate_id)))
        self._key = int(k[0])

    def rows(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(X, base, z)`` of the rows at ``positions``: (m, d), (m,), (m,)."""
        pos = np.asarray(positions, dtype=np.int64)
        if pos.ndim != 1 or (pos.size and pos.min() < 0):
            raise ValueError("positions must be a 1-d array of non-negative row indices")
        kernel = self.kernel
        if kernel == "auto":
            loaded = "numba" in sys.modules  # its start-up already paid in this process
            kernel = "numba" if loaded or self._normals >= AUTO_MIN_NORMALS else "numpy"
            self._normals += pos.size * (self.d + 1)
        if kernel == "numba":
            from dpreg.data.counter_kernel import counter_rows

            X, z, base = counter_rows(self._key, pos, self.sqrt_h, self.w_star)
            return X, base, z  # base: the bits of (X * w_star).sum(axis=1), one pass
        pairs = (self.d + 2) // 2  # d + 1 normals per row, rounded up to pairs
        counters = pos[:, None] * pairs + np.arange(pairs)
        g = _counter_normal_pairs(self._key, counters).reshape(pos.size, 2 * pairs)
        X = g[:, : self.d] * self.sqrt_h
        return X, (X * self.w_star).sum(axis=1), g[:, self.d]  # row-wise: any block, same bits
