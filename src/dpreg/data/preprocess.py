"""Preprocessing: splits, standardisation, centring and scaling to unit bounds.

Every function takes a :class:`~dpreg.data.Dataset` and returns a new one with the
step appended to ``Dataset.preprocessing``. Statistics are computed on the **training
rows** (``train_mask``; all rows when it is ``None``) and applied to all rows, so a
pipeline is ``zscore -> scale_by_data_derived_bounds -> split_by_mask``, as in the
Iterative Hessian Mixing code (docs/notes/lev2026.md §5.1):

1. split by a predefined test mask (or an 80/20 permutation, dataset-specific);
2. z-score the features with the training mean and standard deviation (``ddof=0``;
   a zero standard deviation is replaced by 1) -- mask datasets and TamiElectric only;
3. divide ``X`` by ``max_i ||x_i||`` and ``y`` by ``max_i |y_i|`` over the training
   rows, so that ``C_X = C_Y = 1`` on the training set; test rows use the same factors.

Step 3 reads the bounds off the private data **non-privately**. The papers' experiments
do this; it is offered here as the explicitly named
:func:`scale_by_data_derived_bounds`. The DP-respecting alternatives take the bounds as
public inputs: :func:`scale_by_public_bounds` divides by them and checks that they hold
(never clipping silently); :func:`clip_to_public_bounds` divides by them and projects
each row that exceeds them onto the bound (a per-row map, so the estimators' guarantee
with ``C_X = C_Y = 1`` holds for the clipped rows). :func:`rms_scale` expresses
non-standardised columns in units of their root mean square so that bounds such as
``C_X = c sqrt(d)`` can be stated without looking at the data values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpreg._validation import check_positive, check_row_norm_bound
from dpreg.data.datasets import Dataset

__all__ = [
    "center",
    "clip_to_public_bounds",
    "preprocess_lev2026",
    "preprocess_liang2025",
    "rms_scale",
    "scale_by_data_derived_bounds",
    "scale_by_public_bounds",
    "split_by_mask",
    "zscore",
]


def _train_rows(ds: Dataset) -> tuple[np.ndarray, str]:
    if ds.train_mask is None:
        return np.ones(ds.n, dtype=bool), "all rows"
    if not ds.train_mask.any():
        raise ValueError(f"{ds.name}: train_mask selects no rows")
    return ds.train_mask, "training rows"


def _shared(ds: Dataset) -> list[str]:
    return sorted(set(ds.feature_names) & set(ds.instrument_names))


def split_by_mask(ds: Dataset) -> tuple[Dataset, Dataset]:
    """Split a dataset into (train, test) by its ``train_mask``.

    Parameters
    ----------
    ds : Dataset
        Must have a ``train_mask`` (e.g. ``load_uci(name, split=k)``).

    Returns
    -------
    train, test : Dataset
        Row subsets; their ``train_mask`` is ``None`` and ``split`` is kept.
    """
    if ds.train_mask is None:
        raise ValueError(
            f"{ds.name} has no train_mask; load it with a split (e.g. load_uci(name, split=0))"
        )
    mask = ds.train_mask
    if mask.all() or not mask.any():
        raise ValueError(f"{ds.name}: the split leaves an empty train or test set")
    parts = []
    for part, rows in (("train", mask), ("test", ~mask)):
        sub = ds.subset(rows, step={"step": "split", "part": part, "split": ds.split})
        parts.append(sub.with_(train_mask=None))
    return parts[0], parts[1]


def zscore(ds: Dataset, *, instruments: bool = True) -> Dataset:
    """Standardise features (and instruments) with training-row statistics.

    ``(x - mean) / std`` with ``ddof=0``; columns with zero standard deviation are
    divided by 1 (as in the lev2026 code). Note that this zeroes a constant
    (intercept) column.

    Parameters
    ----------
    ds : Dataset
        Statistics come from the rows with ``train_mask`` (all rows if ``None``) and
        are applied to all rows.
    instruments : bool, default True
        Also standardise ``Z`` (ignored without ``Z``).

    Returns
    -------
    Dataset
    """
    rows, stats_from = _train_rows(ds)

    def standardise(A: np.ndarray) -> tuple[np.ndarray, int]:
        mean = A[rows].mean(axis=0)
        std = A[rows].std(axis=0, ddof=0)
        const = std == 0
        return (A - mean) / np.where(const, 1.0, std), int(const.sum())

    X, n_const = standardise(ds.X)
    Z = ds.Z
    if Z is not None and instruments:
        Z, _ = standardise(Z)
    step = {
        "step": "zscore",
        "stats_from": stats_from,
        "ddof": 0,
        "zero_std_columns": n_const,
        "instruments": bool(instruments and ds.Z is not None),
        "data_derived_nonprivate": True,
    }
    return ds.with_(X=X, Z=Z, preprocessing=ds.preprocessing + (step,))


def center(ds: Dataset, *, instruments: bool = True) -> Dataset:
    """Subtract training-row means from ``X``, ``y`` (and ``Z``).

    Used by the liang2025 Angrist-Evans experiment ("we center all variables"). The
    means are data-derived and not private.
    """
    rows, stats_from = _train_rows(ds)
    Z = ds.Z
    if Z is not None and instruments:
        Z = Z - Z[rows].mean(axis=0)
    step = {
        "step": "center",
        "stats_from": stats_from,
        "instruments": bool(instruments and ds.Z is not None),
        "data_derived_nonprivate": True,
    }
    return ds.with_(
        X=ds.X - ds.X[rows].mean(axis=0),
        y=ds.y - ds.y[rows].mean(),
        Z=Z,
        preprocessing=ds.preprocessing + (step,),
    )


def scale_by_data_derived_bounds(ds: Dataset, *, instruments: bool = True) -> Dataset:
    """Scale so that the training rows have ``max ||x_i|| = 1`` and ``max |y_i| = 1``.

    **Non-private:** the scale factors ``C_X = max_i ||x_i||_2`` and
    ``C_Y = max_i |y_i|`` are read off the (training) data, as in the lev2026
    experiments (and code). The factors are recorded in ``preprocessing``. Test rows
    are divided by the same factors and may exceed 1.

    Parameters
    ----------
    ds : Dataset
        Factors come from the rows with ``train_mask`` (all rows if ``None``).
    instruments : bool, default True
        Also scale ``Z`` rows by ``max_i ||z_i||``. When ``X`` and ``Z`` share
        exogenous columns, both are divided by the larger of the two factors so the
        shared columns stay identical (then only one of the two maxima equals 1).

    Returns
    -------
    Dataset
    """
    rows, stats_from = _train_rows(ds)
    scale_X = float(np.linalg.norm(ds.X[rows], axis=1).max())
    scale_y = float(np.abs(ds.y[rows]).max())
    if scale_X == 0 or scale_y == 0:
        raise ValueError(f"{ds.name}: all-zero X or y on the {stats_from}; cannot scale")
    step: dict[str, Any] = {
        "step": "scale",
        "bounds": "data_derived",
        "data_derived_nonprivate": True,
        "stats_from": stats_from,
        "scale_X": scale_X,
        "scale_y": scale_y,
    }
    Z = ds.Z
    if Z is not None and _shared(ds) and not instruments:
        raise ValueError(
            f"X and Z share columns {_shared(ds)}; scaling X alone would make them differ; "
            "use instruments=True (joint factor)"
        )
    if Z is not None and instruments:
        scale_Z = float(np.linalg.norm(Z[rows], axis=1).max())
        if scale_Z == 0:
            raise ValueError(f"{ds.name}: all-zero Z on the {stats_from}; cannot scale")
        if _shared(ds):
            # Shared exogenous columns must stay identical: one joint factor.
            scale_X = scale_Z = max(scale_X, scale_Z)
            step["scale_X"] = scale_X
            step["joint_XZ"] = True
        Z = Z / scale_Z
        step["scale_Z"] = scale_Z
    return ds.with_(
        X=ds.X / scale_X, y=ds.y / scale_y, Z=Z, preprocessing=ds.preprocessing + (step,)
    )


def rms_scale(ds: Dataset, *, columns: bool = True, target: bool = True) -> Dataset:
    r"""Divide columns of ``X`` (and ``y``) by their training root mean square.

    No centring, so the regression problem (the column space of ``X`` and the fit
    without intercept) is unchanged; only the units change: every scaled column has
    :math:`\frac1n\sum_i x_{ij}^2 = 1` on the training rows (an all-zero column is left
    as is), hence :math:`\frac1n\sum_i\|x_i\|^2 = d`. Used by the lev2026 public-bounds
    pipeline to state bounds in these units. The root mean squares are aggregate
    training statistics, recorded as ``data_derived_nonprivate`` (like z-scoring).

    Parameters
    ----------
    ds : Dataset
        Statistics from the rows with ``train_mask`` (all rows if ``None``).
    columns, target : bool, default True
        Scale the columns of ``X`` / the target ``y``.

    Returns
    -------
    Dataset
    """
    rows, stats_from = _train_rows(ds)
    X, y = ds.X, ds.y
    step: dict[str, Any] = {
        "step": "rms_scale",
        "stats_from": stats_from,
        "columns": bool(columns),
        "target": bool(target),
        "data_derived_nonprivate": True,
    }
    if columns:
        rms = np.sqrt(np.mean(X[rows] ** 2, axis=0))
        X = X / np.where(rms == 0, 1.0, rms)
        step["zero_columns"] = int((rms == 0).sum())
    if target:
        rms_y = float(np.sqrt(np.mean(y[rows] ** 2)))
        if rms_y == 0:
            raise ValueError(f"{ds.name}: y is all zero on the {stats_from}; cannot scale")
        y = y / rms_y
    return ds.with_(X=X, y=y, preprocessing=ds.preprocessing + (step,))


def clip_to_public_bounds(ds: Dataset, *, bound_X: float, bound_y: float) -> Dataset:
    r"""Divide by public bounds and project the rows that exceed them onto the bound.

    :math:`x_i \mapsto x_i / \max(C_X, \|x_i\|_2)`, :math:`y_i \mapsto
    \operatorname{clip}(y_i / C_Y, -1, 1)`. Each output row depends on its own input row
    only, so a DP estimator run on the result with :math:`C_X = C_Y = 1` is DP with
    respect to the rows given here (the bounds are public inputs, never read off the
    data). Unlike :func:`scale_by_public_bounds` this clips; the number of clipped
    training rows is recorded in the step for the analyst's diagnostics (it is a data
    statistic, not a released one).

    Parameters
    ----------
    ds : Dataset
        Without instruments (``Z``); all rows (train and test) are mapped.
    bound_X : float
        Public bound :math:`C_X` on :math:`\|x_i\|_2`.
    bound_y : float
        Public bound :math:`C_Y` on :math:`|y_i|`.

    Returns
    -------
    Dataset
        Rows satisfy ``||x_i|| <= 1`` and ``|y_i| <= 1``.
    """
    bound_X = check_positive(bound_X, "bound_X")
    bound_y = check_positive(bound_y, "bound_y")
    if ds.Z is not None:
        raise ValueError(f"{ds.name}: clip_to_public_bounds does not handle instruments Z")
    norms = np.linalg.norm(ds.X, axis=1)
    X = ds.X / np.maximum(bound_X, norms)[:, None]
    y = np.clip(ds.y / bound_y, -1.0, 1.0)
    rows, stats_from = _train_rows(ds)
    step: dict[str, Any] = {
        "step": "clip_scale",
        "bounds": "public",
        "data_derived_nonprivate": False,
        "scale_X": bound_X,
        "scale_y": bound_y,
        "clipped_rows_X": int((norms[rows] > bound_X).sum()),
        "clipped_rows_y": int((np.abs(ds.y[rows]) > bound_y).sum()),
        "clip_counts_from": stats_from,
    }
    return ds.with_(X=X, y=y, preprocessing=ds.preprocessing + (step,))


def scale_by_public_bounds(
    ds: Dataset,
    *,
    bound_X: float,
    bound_y: float,
    bound_Z: float | None = None,
) -> Dataset:
    """Divide by public bounds after checking that every row satisfies them.

    Parameters
    ----------
    ds : Dataset
        All rows (train and test) are checked.
    bound_X : float
        Public bound on ``||x_i||_2``; ``X`` is divided by it.
    bound_y : float
        Public bound on ``|y_i|``; ``y`` is divided by it.
    bound_Z : float, optional
        Public bound on ``||z_i||_2``; ``Z`` is divided by it (required to scale ``Z``).

    Returns
    -------
    Dataset
        Rows satisfy ``||x_i|| <= 1``, ``|y_i| <= 1`` (and ``||z_i|| <= 1``).

    Raises
    ------
    ValueError
        If a bound is not positive or is violated (nothing is clipped).
    """
    bound_X = check_positive(bound_X, "bound_X")
    bound_y = check_positive(bound_y, "bound_y")
    check_row_norm_bound(ds.X, bound_X, "X", "bound_X")
    check_row_norm_bound(ds.y, bound_y, "y", "bound_y")
    step: dict[str, Any] = {
        "step": "scale",
        "bounds": "public",
        "data_derived_nonprivate": False,
        "scale_X": bound_X,
        "scale_y": bound_y,
    }
    Z = ds.Z
    if bound_Z is not None:
        if Z is None:
            raise ValueError("bound_Z given but the dataset has no instruments Z")
        if _shared(ds) and bound_Z != bound_X:
            raise ValueError(
                f"X and Z share columns {_shared(ds)}; use bound_Z == bound_X or no bound_Z"
            )
        bound_Z = check_positive(bound_Z, "bound_Z")
        check_row_norm_bound(Z, bound_Z, "Z", "bound_Z")
        Z = Z / bound_Z
        step["scale_Z"] = bound_Z
    elif Z is not None and _shared(ds) and bound_X != 1.0:
        raise ValueError(
            f"X and Z share columns {_shared(ds)}; give bound_Z (equal to bound_X) so they "
            "stay identical"
        )
    return ds.with_(
        X=ds.X / bound_X, y=ds.y / bound_y, Z=Z, preprocessing=ds.preprocessing + (step,)
    )


def preprocess_lev2026(ds: Dataset, *, standardise: bool) -> tuple[Dataset, Dataset]:
    """Apply the lev2026 experiment pipeline (code-faithful) and split.

    ``zscore`` (if ``standardise``; the code does it for mask datasets and
    TamiElectric) -> :func:`scale_by_data_derived_bounds` (non-private bounds, as in the
    paper's experiments) -> :func:`split_by_mask`.

    Parameters
    ----------
    ds : Dataset
        Must have a ``train_mask``.
    standardise : bool
        Whether to z-score the features with the training statistics.

    Returns
    -------
    train, test : Dataset
        The training rows satisfy ``max ||x_i|| = 1`` and ``max |y_i| = 1``.
    """
    if ds.train_mask is None:
        raise ValueError(f"{ds.name} has no train_mask; lev2026 preprocessing needs a split")
    if standardise:
        ds = zscore(ds)
    ds = scale_by_data_derived_bounds(ds)
    return split_by_mask(ds)


def preprocess_liang2025(ds: Dataset, *, n_subsample: int, rng: np.random.Generator) -> Dataset:
    """Apply the liang2025 real-data preparation: random subsample, then centre.

    Liang et al. (2025), Section 4.2: "we randomly draw a subset of 20,000 samples and
    keep n = 8065 effective observations [...] We center all variables z, x, y."
    ``AER::Fertility`` already holds only mothers of at least two children, so the
    subsample is drawn directly at the effective size (``n_subsample=8065``;
    docs/notes/liang2025.md §5.8 and P10).

    Parameters
    ----------
    ds : Dataset
        An IV dataset (``Z`` required), without an intercept column (centring would
        zero it).
    n_subsample : int
        Rows drawn uniformly **without replacement** (kept in their original order).
    rng : numpy.random.Generator
        Source of the subsample (the workflow derives it from the master seed).

    Returns
    -------
    Dataset
        ``n_subsample`` rows with ``X``, ``Z`` and ``y`` centred on their subsample
        means. ``preprocessing`` records both steps as non-private.

    Notes
    -----
    The subsample and the means are data-dependent and **outside the DP guarantee**
    (docs/notes/liang2025.md P17): the guarantee of Algorithm 1 covers only its run on the prepared
    rows, with ``n`` treated as public.
    """
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
    if ds.Z is None:
        raise ValueError(f"{ds.name} has no instruments Z; liang2025 preprocessing needs an IV set")
    if isinstance(n_subsample, bool) or int(n_subsample) != n_subsample or n_subsample < 2:
        raise ValueError(f"n_subsample must be an integer >= 2; got {n_subsample!r}")
    n_subsample = int(n_subsample)
    if n_subsample > ds.n:
        raise ValueError(
            f"n_subsample={n_subsample} exceeds the {ds.n} rows of {ds.name}; "
            "lower it or use a larger source"
        )
    rows = np.sort(rng.choice(ds.n, size=n_subsample, replace=False))
    sub = ds.subset(
        rows,
        step={
            "step": "subsample",
            "n_before": ds.n,
            "n_subsample": n_subsample,
            "replace": False,
            "data_derived_nonprivate": True,
            "privacy": "not private: outside the DP guarantee (docs/notes/liang2025.md P17)",
        },
    )
    out = center(sub)
    last = dict(out.preprocessing[-1])
    last["privacy"] = "not private: outside the DP guarantee (docs/notes/liang2025.md P17)"
    return out.with_(preprocessing=out.preprocessing[:-1] + (last,))
