r"""The fused narrow pass over row tiles, where it has the reference's bits.

:func:`dpreg.estimators.dpgd_kernel.clipped_rows_fused`'s narrow pass (d <= 10; Brown et
al. 2024, Figs. 5/6 and 10/11: 100 or 1,000 chains on :math:`n = 10^4` rows, p = 10)
streams its two row arrays once per chain; at :math:`n = 10^4` they exceed the L2 cache.
:func:`dpreg.estimators._dpgd_tiled_jit.fused_narrow_tiled` visits the rows in tiles
shared by all chains (two chains at the same row together) and performs, lane by lane,
the operations LLVM compiles the reference's loop into on an AVX-512 machine (eight
lanes, fused multiply-adds, the lanes' reduction, the remainder rows), so the results
are the reference's bit for bit where the reference was compiled that way. That
depends on the CPU and LLVM, so :func:`tiled_pass` compares the two on test problems
(remainders of every length, clipped and unclipped residuals, zero padding, certified
prefixes, chains at the same row) and returns the tiled pass only if every bit and
count agrees; otherwise None, and the caller runs the reference
(``tests/unit/test_dpgd_tiled.py``). Nothing but the order in which chains
advance through the rows changes: the same certificate, rows, sums and counts.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from dpreg.estimators._bits import same_bits
from dpreg.estimators.dpgd_kernel import FUSED_NARROW_D, _fused_kernel

__all__ = ["tiled_pass"]

#: "tiled": :func:`tiled_pass` offers the tiled pass where it passes its check;
#: "reference": never (the caller runs ``fused_narrow``; tests compare the two)
_TILED_PATH = "tiled"


def _check_problem(seed: int = 20241) -> list[tuple[np.ndarray, ...]]:
    """Test problems: n = 0 .. 40 and 1,000 .. 1,031 rows, chains starting anywhere or together."""
    rng = np.random.default_rng(seed)
    problems = []
    for n in [*range(41), *range(1000, 1032)]:
        width = 5
        k = FUSED_NARROW_D + 1
        AT = rng.normal(size=(k, n)) * 0.4
        XBT = rng.normal(size=(k - 1, n))
        if n % 3 == 0:  # zero padding (d < 10) and its signed zeros
            AT[7:] = 0.0
            XBT[6:] = 0.0
        E = rng.normal(size=(width, k))
        E[:, k - 1] = -1.0
        if n % 3 == 0:
            E[:, 7 : k - 1] = 0.0
        row_start = rng.integers(-1, n + 2, size=width)
        row_start[:2] = 0  # neighbours at the same row run together
        row_start[3] = row_start[2]
        problems.append((AT, XBT, E, row_start))
    return problems


@cache
def _checked() -> Any:
    """Return the tiled pass if it equals the reference bit for bit on the test problems."""
    from dpreg.estimators._dpgd_tiled_jit import TILE, fused_narrow_tiled

    _, narrow = _fused_kernel()
    for tile in (8, 24, TILE):
        for AT, XBT, E, row_start in _check_problem():
            width = E.shape[0]
            G_ref, c_ref = np.empty((width, AT.shape[0] - 1)), np.empty(width, dtype=np.int64)
            G, c = np.empty_like(G_ref), np.empty_like(c_ref)
            narrow(AT, XBT, E, row_start, G_ref, c_ref)
            fused_narrow_tiled(AT, XBT, E, row_start, G, c, tile)
            if not (same_bits(G, G_ref) and same_bits(c, c_ref)):
                return None

    def run(AT, XBT, E, row_start, G, count):
        fused_narrow_tiled(AT, XBT, E, row_start, G, count, TILE)

    return run


def tiled_pass() -> Any:
    """Return the tiled narrow pass (the reference's arguments), or None to run the reference.

    Examples
    --------
    >>> import numpy as np
    >>> from dpreg.estimators.dpgd_kernel import _fused_kernel
    >>> run = tiled_pass()
    >>> rng = np.random.default_rng(0)
    >>> AT, XBT, E = rng.normal(size=(11, 50)), rng.normal(size=(10, 50)), rng.normal(size=(3, 11))
    >>> G, c = np.empty((3, 10)), np.empty(3, dtype=np.int64)
    >>> G_ref, c_ref = np.empty((3, 10)), np.empty(3, dtype=np.int64)
    >>> _fused_kernel()[1](AT, XBT, E, np.array([0, 7, 50]), G_ref, c_ref)
    >>> if run is not None:
    ...     run(AT, XBT, E, np.array([0, 7, 50]), G, c)
    ... else:
    ...     G, c = G_ref, c_ref
    >>> bool(np.array_equal(G, G_ref)), bool(np.array_equal(c, c_ref))
    (True, True)
    """
    if _TILED_PATH != "tiled":
        return None
    return _checked()
