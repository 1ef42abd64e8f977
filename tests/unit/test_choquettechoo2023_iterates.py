"""Kind ``ftrl_iterate_bounds`` (App. D.2-D.3 bounds vs simulation) and its claims."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpreg.experiments import choquettechoo2023_iterates as it
from dpreg.experiments.choquettechoo2023_claims import check
from dpreg.theory import ftrl_high_probability as hp

CELL = {"d": 4, "T": 60, "p": 0.1, "eta_fraction": 0.5, "mechanisms": ["sgd", "nu_ftrl"]}


@pytest.fixture(scope="module")
def runs():
    return it.run_iterate_bounds(CELL, trials=300, first_trial=0, seed=11)


def test_rows_and_step(runs):
    assert len(runs) == 600 and set(runs["mechanism"]) == {"sgd", "nu_ftrl"}
    lam = 1.0 / np.arange(1, 5)
    ev = hp.proposition_d5_events(lam, T=60, p=0.1, sigma_sgd=0.5)
    assert np.allclose(runs["eta"], 0.5 / ev.input_sq)
    sgd = runs[runs["mechanism"] == "sgd"]
    assert np.allclose(sgd["sigma"], math.sqrt(0.5))  # gamma_inf = 1, rho = G = 1
    assert runs["trial"].max() == 299


def test_bounds_hold_and_table(runs):
    table = it.summarise_iterate_bounds(runs)
    assert len(table) == 2 * (len(it.BOUNDS) + 1)
    hp_rows = table[table["type"] == "high_probability"]
    assert np.all(hp_rows["violation_fraction"] <= hp_rows["violation_limit"])
    assert np.all((hp_rows["max_ratio"] > 0) & (hp_rows["max_ratio"] <= 1))
    ex = table[table["type"] == "expectation"]
    assert np.all(np.abs(ex["mean"] - ex["exact"]) <= 4 * ex["se"])
    claims = check({"study": table})["claims"]
    assert len(claims) == 2 * (len(it.BOUNDS) + 2)
    assert set(claims["passed"]) == {"yes"}


def test_claims_fail_on_synthetic_violations(runs):
    table = it.summarise_iterate_bounds(runs)
    bad = table.copy()
    hp_mask = bad["type"] == "high_probability"
    bad.loc[hp_mask, "violation_fraction"] = bad.loc[hp_mask, "violation_limit"] + 0.01
    ex_mask = bad["type"] == "expectation"
    bad.loc[ex_mask, "bound_value"] = bad.loc[ex_mask, "mean"]  # mean + 3 SE > bound
    bad.loc[ex_mask, "exact"] = bad.loc[ex_mask, "mean"] + 5 * bad.loc[ex_mask, "se"]
    claims = check({"study": bad})["claims"]
    assert set(claims["passed"]) == {"NO"}


def test_cell_errors():
    with pytest.raises(ValueError, match="mechanisms"):
        it.check_iterate_cell({**CELL, "mechanisms": ["sgd", "sgd"]})
    with pytest.raises(ValueError, match="T must be >= 2"):
        it.check_iterate_cell({**CELL, "T": 1})
    with pytest.raises(ValueError, match="eta_fraction"):
        it.FtrlIterateBoundsParams.from_cell({**CELL, "eta_fraction": 1.5})


def test_figure_draws(runs):
    fig = it.ITERATE_BOUNDS.figure(it.summarise_iterate_bounds(runs), title="t")
    assert len(fig.axes) == 2
    assert isinstance(fig.axes[0].get_lines()[0].get_xdata(), (np.ndarray, list, pd.Series))
