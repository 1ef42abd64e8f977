r"""Correlated noise of DP-FTRL: the causal convolution :math:`\tilde w = \beta * w`.

Choquette-Choo et al. (2023), Algorithm 1 with a lower-triangular Toeplitz :math:`B`
(Eq. 13): step :math:`t` adds :math:`\tilde w_t = \sum_{\tau=0}^{t}\beta_\tau w_{t-\tau}`.
The noise does not depend on the iterates, so it is computed for all :math:`T` steps
at once:

* :func:`correlated_noise` -- by real FFTs along time, up to 16 columns at a time
  copied into the rows of one zero-padded buffer (each transform along a contiguous
  axis; no full-size transposed copies), or tap by tap in time blocks when :math:`\beta`
  has at most :data:`DIRECT_TAPS` leading non-zero coefficients; optionally in place
  (``out=w``), so that a simulation holds one ``(T, columns)`` array, not three;
* :func:`correlated_noise_rows` -- the same with time along the last axis (each series
  contiguous: whole rows are copied into the FFT buffer; the Fig. 2 simulation's layout);
* :func:`correlated_noise_reference` -- the former implementation (column blocks
  transposed to make time contiguous, a zero-initialised output and full-size
  temporaries on the direct path), kept as the reference the fast path is tested
  against: the two agree bit for bit (tests/unit/test_ftrl_noise.py);
* :class:`NoiseWorkspace` -- one float32 buffer for the noise of successive seed groups
  and simulations (no fresh pages per group).

The FFT path's two outputs per block (spectrum and inverse) are written into buffers
reused across blocks when scipy's pocketfft passes a bit-for-bit check against
:func:`scipy.fft.rfft` / :func:`scipy.fft.irfft` (``_pocketfft``), else by those calls.

Memory: :func:`correlated_noise` needs, besides its input and output, three FFT arrays of
at most 16 columns and about 32 MB each on the FFT path (``n_fft`` about :math:`2T`
rows) plus a (T, 16-column) staging copy of half that size, and ``4096 * columns``
numbers on the direct path, whatever the number of columns.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

from dpreg._validation import check_choice
from dpreg.estimators._bits import same_bits

__all__ = [
    "DIRECT_TAPS",
    "NoiseWorkspace",
    "correlated_noise",
    "correlated_noise_reference",
    "correlated_noise_rows",
    "unit_normals",
]

DIRECT_TAPS = 8
"""Up to this many leading taps the convolution is summed directly instead of by FFT."""
_FFT_COLUMNS = 16
_FFT_BUFFER_BYTES = 32 * 2**20
_TIME_BLOCK = 4096
_FFT_BLOCK_BYTES = 64 * 2**20


def _prepare(
    beta: np.ndarray, w: np.ndarray, precision: str
) -> tuple[type, np.ndarray, np.ndarray, np.ndarray, int]:
    check_choice(precision, "precision", ("double", "single"))
    dtype = np.float64 if precision == "double" else np.float32
    T = w.shape[0]
    b = np.zeros(T)
    beta = np.asarray(beta, dtype=np.float64).ravel()[:T]
    b[: beta.size] = beta
    nonzero = np.flatnonzero(b)
    support = int(nonzero[-1]) + 1 if nonzero.size else 0
    return dtype, b, w.reshape(T, -1), nonzero, support


class NoiseWorkspace:
    r"""One float32 buffer for the noise of successive seed groups and simulations.

    :func:`~dpreg.estimators.ftrl.simulate_streaming_regression` draws each seed group's
    noise into a ``(g d, T)`` float32 array of up to 512 MB. A fresh array per group has
    its pages faulted in and zeroed by the kernel again each time (about 0.5 s of system
    time per GB on the 2-core host, about a tenth of a paper-scale ``cc_fig2_d`` job;
    docs/scaling.md); the groups of one simulation, and the mechanisms of one Fig. 2 cell,
    which need the same size, can share one buffer instead. Every element is written
    before it is read, so the values are those of fresh arrays. The buffer grows to the
    largest request and lives as long as the workspace.

    Examples
    --------
    >>> ws = NoiseWorkspace()
    >>> a = ws.array((2, 3))
    >>> a.shape, a.dtype.name, ws.array((3, 2)).base is a.base
    ((2, 3), 'float32', True)
    """

    def __init__(self) -> None:
        self._buf = np.empty(0, dtype=np.float32)

    def array(self, shape: tuple[int, ...]) -> np.ndarray:
        """Return a C-contiguous float32 array of ``shape`` on the buffer (contents undefined)."""
        size = math.prod(shape)
        if self._buf.size < size:
            self._buf = np.empty(0, dtype=np.float32)  # the smaller buffer freed first
            self._buf = np.empty(size, dtype=np.float32)
        return self._buf[:size].reshape(shape)


def correlated_noise(
    beta: np.ndarray,
    w: np.ndarray,
    *,
    precision: str = "double",
    out: np.ndarray | None = None,
) -> np.ndarray:
    r"""Causal convolution along time, :math:`\tilde w_t = \sum_{\tau=0}^{t}\beta_\tau w_{t-\tau}`.

    Computed by real FFTs of length ``next_fast_len(2T - 1)`` (no circular wrap-around
    reaches the first :math:`T` outputs) along axis 0, up to 16 columns at a time through
    one zero-padded buffer: :math:`O(T\log T)` per column and about 100 MB of working
    memory at most beyond the input and output. A :math:`\beta` with at most :data:`DIRECT_TAPS`
    non-zero leading coefficients (DP-SGD, anti-PGD) is applied directly, tap by tap,
    4096 steps at a time (:math:`O(T)` per tap). The values are those of
    :func:`correlated_noise_reference`, bit for bit.

    Parameters
    ----------
    beta : ndarray, shape (T_beta,)
        Decoder coefficients; only the first ``T`` are used (missing ones are 0).
    w : ndarray, shape (T, ...)
        Independent noise, time along axis 0.
    precision : {"double", "single"}
        Arithmetic and storage of the result. ``"single"`` (float32 FFTs, relative
        error about 1e-6 of the largest output) is faster and halves the memory of long
        simulations, where the noise only needs Monte Carlo accuracy. The input ``w`` is
        used in its own dtype for the direct path.
    out : ndarray, optional
        C-contiguous array of the shape of ``w`` and the result's dtype to write into;
        it may be ``w`` itself (in place: each block of ``w`` is read before its
        outputs are written).

    Returns
    -------
    ndarray, shape of ``w`` (float64, or float32 for ``"single"``)

    Examples
    --------
    >>> import numpy as np
    >>> w = np.arange(1.0, 5.0)
    >>> correlated_noise([1.0, 0.5], w)
    array([1. , 2.5, 4. , 5.5])
    >>> correlated_noise([1.0, 0.5], w, out=w) is w
    True
    """
    w = np.asarray(w)
    dtype, b, flat, nonzero, support = _prepare(beta, w, precision)
    if out is None:
        res = np.empty(flat.shape, dtype=dtype)
    else:
        if not (
            isinstance(out, np.ndarray)
            and out.shape == w.shape
            and out.dtype == dtype
            and out.flags.c_contiguous
        ):
            raise ValueError(
                f"out must be a C-contiguous {np.dtype(dtype).name} array of shape {w.shape}"
            )
        res = out.reshape(flat.shape)
    if support <= DIRECT_TAPS:
        _direct(b, nonzero, flat, res, dtype)
    else:
        _fft(b, flat, res, dtype)
    return res.reshape(w.shape) if out is None else out


def _direct(
    b: np.ndarray, nonzero: np.ndarray, flat: np.ndarray, res: np.ndarray, dtype: type
) -> None:
    T = flat.shape[0]
    if nonzero.size == 1 and nonzero[0] == 0 and b[0] == 1.0 and flat.dtype == dtype:
        # 0 + 1.0 * w, as the reference sums it (-0.0 becomes +0.0 there too)
        np.add(flat, dtype(0.0), out=res)
        return
    # time blocks from the last one backwards: block [s, e) reads w[s - k : e - k],
    # which an in-place call has not overwritten yet (only blocks after e are written)
    for e in range(T, 0, -_TIME_BLOCK):
        s = max(0, e - _TIME_BLOCK)
        acc = np.zeros((e - s, flat.shape[1]), dtype=dtype)
        for k in nonzero:
            lo = max(s, int(k))
            if lo < e:
                acc[lo - s :] += (b[k] * flat[lo - k : e - k]).astype(dtype, copy=False)
        res[s:e] = acc


def _fft(b: np.ndarray, flat: np.ndarray, res: np.ndarray, dtype: type) -> None:
    from scipy import fft as sp_fft  # imported on first use: job start-up (docs/scaling.md)

    T, cols = flat.shape
    n_fft = sp_fft.next_fast_len(2 * T - 1, real=True)
    b_hat = sp_fft.rfft(b.astype(dtype), n=n_fft)
    # at most 16 columns and about 32 MB per FFT array (4 columns at n_fft = 2e6 floats);
    # the columns are copied into the buffer's rows, so every transform runs along a
    # contiguous axis (the reference's layout: the same values), through a contiguous
    # (T, width) copy whose transpose is cheaper than gathering the strided columns
    # directly (issue 18: together 0.41 -> 0.25 s at T = 10^4, 1,280 columns; docs/scaling.md)
    fit = _FFT_BUFFER_BYTES // (n_fft * np.dtype(dtype).itemsize)
    width = max(1, min(_FFT_COLUMNS, fit, cols))
    buf = np.zeros((width, n_fft), dtype=dtype)
    outputs = _Outputs(width, n_fft, dtype)
    columns = np.empty((T, width), dtype=flat.dtype)
    for start in range(0, cols, width):
        stop = min(start + width, cols)
        block = buf[: stop - start]
        part = columns[:, : stop - start]
        np.copyto(part, flat[:, start:stop])
        block[:, :T] = part.T
        res[:, start:stop] = outputs.convolve(block, b_hat)[:, :T].T


def _public_convolve(block: np.ndarray, b_hat: np.ndarray) -> np.ndarray:
    """``irfft(rfft(block) * b_hat)`` along the last axis by scipy.fft's public calls."""
    from scipy import fft as sp_fft

    n_fft = block.shape[-1]
    spec = sp_fft.rfft(block, n=n_fft, axis=-1)
    spec *= b_hat
    return sp_fft.irfft(spec, n=n_fft, axis=-1, overwrite_x=True)


@cache
def _pocketfft() -> Any:
    """Return scipy's pocketfft module if its ``out=`` calls give the public calls' bits.

    :func:`scipy.fft.rfft` and :func:`scipy.fft.irfft` (scipy's default backend) call
    ``scipy.fft._pocketfft.pypocketfft.r2c`` and ``c2r`` with ``out=None``, so every call
    returns fresh arrays (two of about 32 MB per block here, whose pages the kernel
    faults in and zeroes again each time: a tenth or more of the transforms' time at
    :math:`T = 512{,}000`). The same two calls with ``out=`` write into buffers reused
    across blocks. That private module is checked here once per process against the
    public calls (float32 and float64, bit for bit); if it is missing, has another
    signature or differs, None: the public calls are used.
    """
    try:
        from scipy.fft._pocketfft import pypocketfft

        rng = np.random.default_rng(0)
        for dtype, ctype in ((np.float32, np.complex64), (np.float64, np.complex128)):
            block = np.zeros((3, 30), dtype)
            block[:, :15] = rng.standard_normal((3, 15))
            b_hat = np.fft.rfft(rng.standard_normal(30)).astype(ctype)
            spec, out = np.empty((3, 16), ctype), np.empty((3, 30), dtype)
            pypocketfft.r2c(block, (-1,), True, 0, spec, 1)
            spec *= b_hat
            pypocketfft.c2r(spec, (-1,), 30, False, 2, out, 1)
            if not same_bits(_public_convolve(block, b_hat), out):
                return None
    except Exception:  # noqa: BLE001 - any failure: the public calls
        return None
    return pypocketfft


class _Outputs:
    """The spectrum and output buffers of one convolution by FFT, reused across blocks."""

    def __init__(self, width: int, n_fft: int, dtype: type) -> None:
        self.module = _pocketfft()
        if self.module is not None:
            ctype = np.complex64 if dtype is np.float32 else np.complex128
            self.spec = np.empty((width, n_fft // 2 + 1), dtype=ctype)
            self.out = np.empty((width, n_fft), dtype=dtype)

    def convolve(self, block: np.ndarray, b_hat: np.ndarray) -> np.ndarray:
        """Return ``irfft(rfft(block) * b_hat)`` (all ``n_fft`` columns; a buffer's view).

        ``block`` is a C-contiguous (rows, n_fft) array with at most ``width`` rows; the
        result is valid until the next call.
        """
        if self.module is None:
            return _public_convolve(block, b_hat)
        rows, n_fft = block.shape
        spec, out = self.spec[:rows], self.out[:rows]
        # scipy.fft.rfft(block, n_fft, axis=-1) and irfft(spec, n_fft, axis=-1) (norm
        # "backward": inorm 0 forward, 2 inverse; one worker), writing into the buffers
        self.module.r2c(block, (-1,), True, 0, spec, 1)
        spec *= b_hat
        self.module.c2r(spec, (-1,), n_fft, False, 2, out, 1)
        return out


#: Draws by numpy's own ``standard_normal`` until this many in the process (about the
#: draws whose saving, ~6 ns each, pays for numba's one-time start of about 0.5-1 s).
_COMPILED_DRAWS_AFTER = 1 << 26
_drawn = [0]


def unit_normals(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    r"""Return ``rng.standard_normal(shape)`` (float64), bit for bit, faster when large.

    The noise :math:`z` of :func:`~dpreg.estimators.ftrl.stream_noise` and of a matrix
    factorization's ``noise`` (Algorithm 1 of Choquette-Choo et al. 2023). Once the
    process has drawn :data:`_COMPILED_DRAWS_AFTER` numbers this way (or numba is loaded
    already), the draws go through
    :func:`~dpreg.data.normal_kernel.standard_normal_fill` (numpy's ziggurat in compiled
    code: the same values and generator state, about 3.5 instead of 9 ns a draw); below
    that, numpy's method, so a small job does not pay numba's start.

    Examples
    --------
    >>> import numpy as np
    >>> a = unit_normals(np.random.default_rng(2), (3, 2))
    >>> bool(np.array_equal(a, np.random.default_rng(2).standard_normal((3, 2))))
    True
    """
    size = math.prod(shape)
    _drawn[0] += size
    from dpreg.data.normal_kernel import standard_normals

    compiled_from = 0 if _drawn[0] >= _COMPILED_DRAWS_AFTER else math.inf
    return standard_normals(rng, np.empty(shape), compiled_from=compiled_from)


def correlated_noise_rows(
    beta: np.ndarray,
    w_t: np.ndarray,
    *,
    precision: str = "double",
    out: np.ndarray | None = None,
) -> np.ndarray:
    r""":func:`correlated_noise` with time along the **last** axis: ``w_t`` is ``w.T``.

    Each column's series is then contiguous, so the FFT path copies whole rows into
    its zero-padded buffer (up to 16 rows, about 32 MB) instead of gathering a few
    numbers from every row of a ``(T, columns)`` array, which cost about a third of
    the convolution at :math:`T = 512{,}000` (docs/scaling.md). Same transforms of the
    same series: the values are those of ``correlated_noise(beta, w_t.T).T``, bit for
    bit (tested).

    Parameters
    ----------
    beta : ndarray, shape (T_beta,)
        Decoder coefficients; only the first ``T`` are used (missing ones are 0).
    w_t : ndarray, shape (..., T)
        Independent noise, time along the last axis.
    precision : {"double", "single"}
        As in :func:`correlated_noise`.
    out : ndarray, optional
        C-contiguous array of the shape of ``w_t`` and the result's dtype; may be ``w_t``
        itself (in place).

    Returns
    -------
    ndarray, shape of ``w_t``

    Examples
    --------
    >>> import numpy as np
    >>> correlated_noise_rows([1.0, 0.5], np.arange(1.0, 9.0).reshape(2, 4))
    array([[ 1. ,  2.5,  4. ,  5.5],
           [ 5. ,  8.5, 10. , 11.5]])
    """
    w_t = np.asarray(w_t)
    if w_t.ndim == 0:
        raise ValueError("w_t must have a time axis (its last)")
    T = w_t.shape[-1]
    dtype, b, _, nonzero, support = _prepare(beta, w_t.reshape(-1, T).T, precision)
    flat_t = w_t.reshape(-1, T)
    if out is None:
        res_t = np.empty(flat_t.shape, dtype=dtype)
    else:
        if not (
            isinstance(out, np.ndarray)
            and out.shape == w_t.shape
            and out.dtype == dtype
            and out.flags.c_contiguous
        ):
            raise ValueError(
                f"out must be a C-contiguous {np.dtype(dtype).name} array of shape {w_t.shape}"
            )
        res_t = out.reshape(flat_t.shape)
    if support <= DIRECT_TAPS:
        _direct(b, nonzero, flat_t.T, res_t.T, dtype)
    else:
        _fft_rows(b, flat_t, res_t, dtype)
    return res_t.reshape(w_t.shape) if out is None else out


def _fft_rows(b: np.ndarray, flat_t: np.ndarray, res_t: np.ndarray, dtype: type) -> None:
    from scipy import fft as sp_fft  # imported on first use: job start-up (docs/scaling.md)

    rows, T = flat_t.shape
    n_fft = sp_fft.next_fast_len(2 * T - 1, real=True)
    b_hat = sp_fft.rfft(b.astype(dtype), n=n_fft)
    fit = _FFT_BUFFER_BYTES // (n_fft * np.dtype(dtype).itemsize)
    width = max(1, min(_FFT_COLUMNS, fit, rows))
    buf = np.zeros((width, n_fft), dtype=dtype)
    outputs = _Outputs(width, n_fft, dtype)
    for start in range(0, rows, width):
        stop = min(start + width, rows)
        block = buf[: stop - start]
        block[:, :T] = flat_t[start:stop]
        res_t[start:stop] = outputs.convolve(block, b_hat)[:, :T]


def correlated_noise_reference(
    beta: np.ndarray, w: np.ndarray, *, precision: str = "double"
) -> np.ndarray:
    r"""Compute :func:`correlated_noise` the former way (reference path; more memory).

    FFT path: column blocks of about 64 MB, each transposed to make time contiguous,
    transformed along the last axis and transposed back. Direct path: a zero-initialised
    output plus one full ``(T, columns)`` float64 product per tap.

    Examples
    --------
    >>> import numpy as np
    >>> correlated_noise_reference([1.0, 0.5], np.arange(1.0, 5.0))
    array([1. , 2.5, 4. , 5.5])
    """
    from scipy import fft as sp_fft  # imported on first use: job start-up (docs/scaling.md)

    w = np.asarray(w)
    dtype, b, flat, nonzero, support = _prepare(beta, w, precision)
    T = flat.shape[0]
    if support <= DIRECT_TAPS:
        out = np.zeros(flat.shape, dtype=dtype)
        for k in nonzero:
            out[k:] += (b[k] * flat[: T - k]).astype(dtype, copy=False)
        return out.reshape(w.shape)
    n_fft = sp_fft.next_fast_len(2 * T - 1, real=True)
    b_hat = sp_fft.rfft(b.astype(dtype), n=n_fft)
    out = np.empty(flat.shape, dtype=dtype)
    itemsize = 2 * np.dtype(dtype).itemsize
    cols = max(1, _FFT_BLOCK_BYTES // (itemsize * (n_fft // 2 + 1)))
    for start in range(0, flat.shape[1], cols):
        stop = min(start + cols, flat.shape[1])
        block = np.ascontiguousarray(flat[:, start:stop].T, dtype=dtype)
        spec = sp_fft.rfft(block, n=n_fft, axis=-1)
        spec *= b_hat
        out[:, start:stop] = sp_fft.irfft(spec, n=n_fft, axis=-1)[:, :T].T
    return out.reshape(w.shape)
