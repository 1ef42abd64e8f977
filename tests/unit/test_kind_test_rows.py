"""Study kinds opt in to the held-out rows with ``uses_test_rows`` (``run(..., test=)``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpreg.data.datasets import Dataset
from dpreg.experiments import kinds
from dpreg.experiments.kinds import BUILTIN_KINDS, register_kind
from dpreg.experiments.studies import run_cell, run_chunk
from dpreg.experiments.study_kind import StudyKind

SEEN: list[dict] = []


def _rows(trials: int, first_trial: int, seed: int, **extra) -> pd.DataFrame:
    return pd.DataFrame(
        {"trial": np.arange(first_trial, first_trial + trials), "seed": seed, **extra}
    )


def _run_with_test(cell, *, trials, first_trial, seed, data, test):
    SEEN.append({"data": data, "test": test})
    n_test = 0 if test is None else test.n
    return _rows(trials, first_trial, seed, n_test=n_test)


def _run_without_test(cell, *, trials, first_trial, seed, data):
    # No `test` parameter: passing one would raise TypeError.
    SEEN.append({"data": data})
    return _rows(trials, first_trial, seed)


def _run_kwargs(cell, **kwargs):
    SEEN.append(dict(kwargs))
    return _rows(kwargs["trials"], kwargs["first_trial"], kwargs["seed"])


def _summarise(runs, references):
    return runs


def _figure(table, *, title=None):  # pragma: no cover - never drawn here
    raise NotImplementedError


TOY_KINDS = (
    StudyKind("toy_with_test_rows", _run_with_test, _summarise, _figure, uses_test_rows=True),
    StudyKind("toy_without_test_rows", _run_without_test, _summarise, _figure),
    StudyKind("toy_kwargs_no_test_rows", _run_kwargs, _summarise, _figure),
)


def _frame(n: int, offset: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(n)
    ds = Dataset(name="toy", X=rng.normal(size=(n, 2)) + offset, y=rng.normal(size=n))
    return ds.to_frame()


@pytest.fixture(autouse=True)
def _toy_kinds():
    """Register the toy kinds for one test only (other tests check the registry's kinds)."""
    SEEN.clear()
    for kind in TOY_KINDS:
        register_kind(kind)
    yield
    for kind in TOY_KINDS:
        kinds._ADDED.pop(kind.name, None)


def test_the_flag_defaults_to_false_and_only_the_held_out_kinds_set_it():
    assert StudyKind("x", _run_kwargs, _summarise, _figure).uses_test_rows is False
    users = {k.name for k in BUILTIN_KINDS.values() if k.uses_test_rows}
    assert users == {"benchmark", "ftrl_epochs"}  # both score test MSE on held-out rows


def test_a_kind_with_the_flag_gets_the_test_rows():
    train, test = _frame(20), _frame(7, offset=5.0)
    runs = run_cell(
        "toy_with_test_rows", {}, trials=3, first_trial=6, seed=1, frame=train, test_frame=test
    )
    assert list(runs["n_test"]) == [7, 7, 7] and list(runs["trial"]) == [6, 7, 8]
    (seen,) = SEEN
    assert isinstance(seen["test"], Dataset) and isinstance(seen["data"], Dataset)
    np.testing.assert_array_equal(seen["test"].X, test[["x0", "x1"]].to_numpy())
    np.testing.assert_array_equal(seen["data"].y, train["y"].to_numpy())


@pytest.mark.parametrize("test_frame", [None, "empty"])
def test_no_or_empty_test_table_gives_none(test_frame):
    train = _frame(20)
    empty = train.iloc[:0].copy() if test_frame == "empty" else None
    runs = run_cell(
        "toy_with_test_rows", {}, trials=2, first_trial=0, seed=1, frame=train, test_frame=empty
    )
    assert list(runs["n_test"]) == [0, 0] and SEEN[0]["test"] is None
    run_cell("toy_with_test_rows", {}, trials=1, first_trial=0, seed=1)  # no dataset at all
    assert SEEN[1] == {"data": None, "test": None}


def test_a_kind_without_the_flag_is_called_as_before():
    run_cell("toy_without_test_rows", {}, trials=2, first_trial=0, seed=3, frame=_frame(5))
    run_cell("toy_kwargs_no_test_rows", {}, trials=2, first_trial=0, seed=3, frame=_frame(5))
    assert set(SEEN[1]) == {"trials", "first_trial", "seed", "data"}  # no `test` keyword
    with pytest.raises(ValueError, match="does not use test rows"):
        run_cell(
            "toy_without_test_rows", {}, trials=2, first_trial=0, seed=3,
            frame=_frame(5), test_frame=_frame(3),
        )  # fmt: skip


def test_run_chunk_passes_the_test_rows_to_every_block():
    blocks = [
        {"first_trial": 0, "trials": 2, "seed": 10},
        {"first_trial": 2, "trials": 2, "seed": 11},
    ]
    runs = run_chunk("toy_with_test_rows", {}, blocks=blocks, frame=_frame(9), test_frame=_frame(4))
    assert list(runs["trial"]) == [0, 1, 2, 3] and list(runs["seed"]) == [10, 10, 11, 11]
    assert [s["test"].n for s in SEEN] == [4, 4]
