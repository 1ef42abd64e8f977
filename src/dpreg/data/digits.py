r"""The handwritten digits shipped with scikit-learn, with public preprocessing only.

``sklearn.datasets.load_digits`` (the UCI optical recognition of handwritten digits test
set: 1797 images of 8 x 8 pixels with integer grey levels 0-16, ten classes) is installed
with scikit-learn, so nothing is downloaded. It serves the scaled-down analogue of
Choquette-Choo et al. (2023) Fig. 4 (docs/choquettechoo2023.md): multinomial logistic
regression trained privately on it.

Preprocessing uses public quantities only: every pixel is divided by the public maximum
grey level 16 (into [0, 1]) and the row by the public factor :math:`\sqrt{64} = 8`, so
:math:`\|x\|_2 \le 1` for every possible image (an image of 64 pixels at 16 has norm
exactly 1); nothing is read off the data. The train/test split is a permutation drawn
from a public seed (``split_seed``), independent of the data.

It is a classification set (integer labels), so it is not a regression
:class:`~dpreg.data.datasets.Dataset` and not in :data:`~dpreg.data.DATASET_LOADERS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["DIGITS_CLASSES", "DIGITS_MAX_PIXEL", "DigitsSplit", "load_digits_split"]

DIGITS_MAX_PIXEL = 16.0
"""Public maximum grey level of a pixel (the data's documented range is 0-16)."""
DIGITS_CLASSES = 10
"""Number of classes (the digits 0-9)."""
_N_ROWS = 1797
_N_PIXELS = 64


@dataclass(frozen=True)
class DigitsSplit:
    """A public train/test split of the digits.

    Attributes
    ----------
    X_train, X_test : ndarray, shape (n, 64)
        Pixels / 16 / 8: every row has norm at most 1.
    y_train, y_test : ndarray of int64, shape (n,)
        Labels 0-9.
    split_seed : int
    test_fraction : float
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    split_seed: int
    test_fraction: float

    @property
    def n_classes(self) -> int:
        """Number of classes (10)."""
        return DIGITS_CLASSES


def load_digits_split(split_seed: int = 0, test_fraction: float = 0.2) -> DigitsSplit:
    r"""Load the digits, scale them by public constants and split them by a public seed.

    Parameters
    ----------
    split_seed : int
        Seed of the permutation (``numpy.random.default_rng(split_seed)``); the first
        ``round(test_fraction * 1797)`` rows of the permuted order are the test rows.
    test_fraction : float
        In (0, 1).

    Returns
    -------
    DigitsSplit

    Raises
    ------
    ValueError
        For a bad ``split_seed`` or ``test_fraction``, or if the installed package ships
        a table of another shape.

    Examples
    --------
    >>> split = load_digits_split(0, 0.2)
    >>> split.X_train.shape, split.X_test.shape
    ((1438, 64), (359, 64))
    >>> bool(np.linalg.norm(split.X_train, axis=1).max() <= 1.0)
    True
    """
    if isinstance(split_seed, bool) or not isinstance(split_seed, int | np.integer):
        raise ValueError(f"split_seed must be an integer >= 0; got {split_seed!r}")
    if split_seed < 0:
        raise ValueError(f"split_seed must be an integer >= 0; got {split_seed!r}")
    if isinstance(test_fraction, bool) or not (0.0 < float(test_fraction) < 1.0):
        raise ValueError(f"test_fraction must lie in (0, 1); got {test_fraction!r}")
    from sklearn.datasets import load_digits

    bunch = load_digits()
    pixels = np.asarray(bunch.data, dtype=np.float64)
    labels = np.asarray(bunch.target, dtype=np.int64)
    if pixels.shape != (_N_ROWS, _N_PIXELS) or labels.shape != (_N_ROWS,):
        raise ValueError(
            f"scikit-learn's digits have shape {pixels.shape}, expected ({_N_ROWS}, {_N_PIXELS})"
        )
    X = pixels / DIGITS_MAX_PIXEL / math.sqrt(_N_PIXELS)
    order = np.random.default_rng(int(split_seed)).permutation(_N_ROWS)
    n_test = int(round(float(test_fraction) * _N_ROWS))
    if not 0 < n_test < _N_ROWS:
        raise ValueError(f"test_fraction={test_fraction!r} leaves no train or no test rows")
    test, train = order[:n_test], order[n_test:]
    return DigitsSplit(
        X_train=X[train],
        y_train=labels[train],
        X_test=X[test],
        y_test=labels[test],
        split_seed=int(split_seed),
        test_fraction=float(test_fraction),
    )
