"""Lev et al. (2026) Figure 7: the MLP-feature generator and the ``lev_clipping`` kind."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpreg.data.synthetic import LevClippingMLPDGP, dgp_names, make_dgp
from dpreg.experiments.kinds import get_kind
from dpreg.experiments.lev2026_clipping import clipping_data


def test_generator_code_variant_shapes_and_reproducible():
    dgp = make_dgp("lev_clipping_mlp", rng=np.random.default_rng(0))
    assert "lev_clipping_mlp" in dgp_names()
    assert isinstance(dgp, LevClippingMLPDGP)
    assert len(dgp.weights) == 3 and dgp.weights[0].shape == (1, 128)
    assert dgp.weights[1].shape == (128, 128) and dgp.d == 128
    assert dgp.latent == "lognormal" and dgp.noise_std == 0.2 and not dgp.clip_y
    assert np.hypot(np.linalg.norm(dgp.theta), dgp.intercept) == pytest.approx(1.0)
    a = dgp.sample(500, rng=np.random.default_rng(1))
    b = make_dgp("lev_clipping_mlp", rng=np.random.default_rng(0)).sample(
        500, rng=np.random.default_rng(1)
    )
    assert a.X.shape == (500, 128) and a.y.shape == (500,)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert np.all((a.X >= 0) & (a.X <= 1))  # sigmoid features
    c = dgp.sample(500, rng=np.random.default_rng(2))
    assert not np.array_equal(a.y, c.y)


def test_generator_paper_variant_and_clip_y():
    dgp = LevClippingMLPDGP.draw(rng=np.random.default_rng(0), variant="paper")
    assert len(dgp.weights) == 2 and dgp.latent == "gaussian" and dgp.noise_std == 0.1
    big = LevClippingMLPDGP.draw(rng=np.random.default_rng(0), noise_std=5.0, clip_y=True)
    y = big.sample(300, rng=np.random.default_rng(3)).y
    assert np.abs(y).max() <= 1.0 and np.isclose(np.abs(y).max(), 1.0)
    with pytest.raises(ValueError, match="variant"):
        LevClippingMLPDGP.draw(rng=np.random.default_rng(0), variant="nope")


def test_clipping_data_split_and_bounds():
    train, test, _ = clipping_data(1000, data_seed=4, net_seed=0)
    assert train.n == 800 and test.n == 200
    assert np.linalg.norm(train.X, axis=1).max() == pytest.approx(1.0)
    assert np.abs(train.y).max() == pytest.approx(1.0)
    again, _, _ = clipping_data(1000, data_seed=4, net_seed=0)
    np.testing.assert_array_equal(train.X, again.X)
    other, _, _ = clipping_data(1000, data_seed=5, net_seed=0)
    assert not np.array_equal(train.y, other.y)


def test_kind_runs_summarises_and_draws():
    kind = get_kind("lev_clipping")
    cell = {"epsilon": [0.1, 10.0], "n_rows": 2**10, "conversion": "tight"}
    kind.check_cell(cell)
    kind.check_keys("t", set(cell))
    runs = kind.run(cell, trials=3, first_trial=3, seed=11, data=None)
    assert len(runs) == 3 * 2 * 3
    assert set(runs["estimator"]) == {"ihm", "linear_mixing", "adassp"}
    assert set(runs["trial"]) == {3, 4, 5}
    assert {"seed", "mse", "epsilon", "delta"} <= set(runs.columns)
    assert runs["delta"].iloc[0] == pytest.approx(1.0 / int(0.8 * 2**10) ** 2)
    ihm = runs[runs["estimator"] == "ihm"]
    cols = [f"clip_frac_t{t}" for t in range(4)]
    fr = ihm[cols].to_numpy()
    assert np.all((fr >= 0) & (fr <= 1))
    assert np.all(fr[:, 0] == 0)  # theta_0 = 0 and |y| <= 1 = C
    assert runs.loc[runs["estimator"] != "ihm", cols].isna().all().all()
    assert (runs["mse"] > 0).all()
    # reproducible
    pd.testing.assert_frame_equal(runs, kind.run(cell, trials=3, first_trial=3, seed=11, data=None))
    table = kind.summarise(runs, [])
    mse = table[table["quantity"] == "mse"]
    assert len(mse) == 6 and (mse["trials"] == 3).all()
    clip = table[table["quantity"] == "clip_fraction"]
    assert len(clip) == 2 * 4
    assert clip["mean"].between(0, 1).all() and clip["clipped_share"].between(0, 1).all()
    assert list(clip["in_algorithm"]) == [True, True, True, False] * 2
    fig = kind.figure(table, title="test")
    assert len(fig.axes) == 2
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_check_cell_rejects_bad_values():
    kind = get_kind("lev_clipping")
    with pytest.raises(ValueError, match="epsilon"):
        kind.check_cell({"epsilon": [0.0]})
    with pytest.raises(ValueError, match="n_rows"):
        kind.check_cell({"epsilon": 1.0, "n_rows": 5})
    with pytest.raises(ValueError, match="variant"):
        kind.check_cell({"epsilon": 1.0, "generator": {"variant": "x"}})
    with pytest.raises(ValueError, match="unknown key"):
        kind.check_keys("t", {"epsilon", "dataset"})
