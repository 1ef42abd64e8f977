"""The 33 datasets of Lev et al. (2026) (IHM), prepared as in the authors' code.

Reference values: Table 2 of Lev, Shenfeld, Srinivasan, Ligett and Wilson, "Near-Optimal
Private Linear Regression via Iterative Hessian Mixing" (2026), as transcribed in
docs/notes/lev2026.md §5.2 (columns n, d and
``L(theta*)/n``, kept as the printed strings so their rounding is known).
"""

from __future__ import annotations

import functools
from decimal import Decimal

import numpy as np
import pytest

from dpreg.data import dataset_names, fetch, load_dataset
from dpreg.data.lev2026 import (
    LARGE_OFFLINE_UNAVAILABLE,
    LEV2026_DATASETS,
    MASK_DATASETS,
    PERMUTATION_DATASETS,
    held_out_rows,
    lev2026_kind,
)
from dpreg.data.pipeline import prepare_dataset

# Table 2 (docs/notes/lev2026.md §5.2): registry name -> (n, d, "L/n" as printed).
TABLE2: dict[str, tuple[int, int, str]] = {
    "lev_3droad": (391386, 3, "0.026"),
    "lev_airfoil": (1202, 5, "0.048"),
    "lev_autompg": (313, 7, "0.04"),
    "lev_autos": (143, 25, "0.011"),
    "lev_bike": (8708, 18, "0.021"),
    "lev_breastcancer": (155, 33, "0.046"),
    "lev_buzz": (524925, 77, "0.028"),
    "lev_crime": (657, 99, "0.041"),
    "lev_concrete": (824, 8, "0.015"),
    "lev_concreteslump": (92, 7, "0.002"),
    "lev_elevators": (14939, 18, "0.008"),
    "lev_energy": (614, 8, "0.005"),
    "lev_fertility": (90, 9, "0.076"),
    "lev_forest": (466, 12, "0.055"),
    "lev_gas": (2051, 128, "0.006"),
    "lev_housing": (404, 13, "0.01"),
    "lev_keggdirected": (43944, 20, "0.009"),
    "lev_keggundirected": (57247, 27, "0.002"),
    "lev_kin40k": (36000, 8, "0.064"),
    "lev_machine": (188, 7, "0.022"),
    "lev_parkinsons": (4700, 21, "0.004"),
    "lev_pendulum": (567, 9, "0.018"),
    "lev_pol": (13500, 26, "0.183"),
    "lev_protein": (41157, 9, "0.12"),
    "lev_pumadyn32nm": (7372, 32, "0.093"),
    "lev_servo": (150, 4, "0.075"),
    "lev_slice": (48150, 385, "0.026"),
    "lev_sml": (3723, 26, "0.007"),
    "lev_solar": (960, 10, "0.01"),
    "lev_tamielectric": (36624, 3, "0.334"),
    "lev_tecator": (192, 124, "<1e-3"),
    "lev_wine": (1087, 11, "0.007"),
    "lev_yacht": (277, 6, "0.003"),
}

OFFLINE = sorted(set(LEV2026_DATASETS) - set(LARGE_OFFLINE_UNAVAILABLE))
N_DRAWS = 10  # splits (mask datasets: all 10 columns) or seeds (permutation datasets)


@pytest.fixture(scope="module")
def fetcher(data_mirror, tmp_path_factory):
    dest = tmp_path_factory.mktemp("lev2026_downloads")
    return functools.partial(fetch, dest_dir=dest, mirror=data_mirror, allow_download=False)


def _load(name, fetcher, draw=0, **kw):
    # The paper's pipeline (data-derived bounds) unless a test asks for public bounds.
    kw.setdefault("bounds", "data_derived")
    key = "split" if lev2026_kind(name) == "mask" else "seed"
    return load_dataset(name, fetcher=fetcher, **{key: draw}, **kw)


def _ols_loss_per_n(ds) -> float:
    # minimum-norm theta* (docs/notes/lev2026.md §5.2)
    theta, *_ = np.linalg.lstsq(ds.X, ds.y, rcond=None)
    return float(np.sum((ds.y - ds.X @ theta) ** 2) / ds.n)


def _step(ds, name):
    return [s for s in ds.preprocessing if s.get("step") == name]


# --------------------------------------------------------------------------- registry


def test_registry_has_all_33():
    assert len(LEV2026_DATASETS) == 33 == len(TABLE2)
    assert set(TABLE2) == set(LEV2026_DATASETS)
    assert len(MASK_DATASETS) == 20 and len(PERMUTATION_DATASETS) == 13
    assert set(LARGE_OFFLINE_UNAVAILABLE) == {"lev_3droad", "lev_buzz", "lev_slice"}
    assert set(LEV2026_DATASETS) <= set(dataset_names())
    from dpreg.data import DATASET_LOADERS

    for name in LEV2026_DATASETS:
        flag = getattr(DATASET_LOADERS[name], "large_offline_unavailable", None)
        assert flag is (name in LARGE_OFFLINE_UNAVAILABLE)


def test_large_sets_need_download(data_mirror, tmp_path):
    from dpreg.data import DataUnavailableError

    f = functools.partial(fetch, dest_dir=tmp_path, mirror=data_mirror, allow_download=False)
    for name in LARGE_OFFLINE_UNAVAILABLE:
        with pytest.raises(DataUnavailableError):
            load_dataset(name, fetcher=f)


# --------------------------------------------------------------------------- n, d, bounds


@pytest.mark.parametrize("name", OFFLINE)
def test_n_d_bounds_against_table2(name, fetcher):
    ds = _load(name, fetcher)
    n_ref, d_ref, _ = TABLE2[name]
    assert ds.d == d_ref
    step = _step(ds, "lev2026")[-1]
    assert step["n_train"] == ds.n and held_out_rows(ds) == step["n_total"] - ds.n > 0
    if lev2026_kind(name) == "mask":
        # Exact: Table 2's n is the train size of one of the provided mask columns (the
        # code draws the column at random); split 0 is within one row of it.
        (mask_id,) = [i for i, _ in ds.sources if i.endswith("mask")]
        masks = np.loadtxt(fetcher(mask_id), delimiter=",")  # also reads .csv.gz
        per_split = (masks == 0).sum(axis=0)
        assert ds.n == per_split[0]
        assert n_ref in set(per_split.tolist())
        assert abs(ds.n - n_ref) <= 1
    else:
        # 80/20 permutation: n = int(0.8 * m), the code's rounding; equal to Table 2.
        assert ds.n == int(0.8 * step["n_total"])
        assert abs(ds.n - n_ref) <= 1
    # Bounds (data-derived, non-private, flagged).
    assert np.isclose(np.linalg.norm(ds.X, axis=1).max(), 1.0, rtol=0, atol=1e-12)
    assert np.isclose(np.abs(ds.y).max(), 1.0, rtol=0, atol=1e-12)
    scale = _step(ds, "scale")[-1]
    assert scale["data_derived_nonprivate"] is True and scale["stats_from"] == "training rows"
    assert step["data_derived_nonprivate"] is True
    assert ds.train_mask is None and ds.name == name


def test_table2_n_exact_for_some_split(fetcher):
    # Forest (466) and Solar (960) need a split other than 0; check one of each.
    for name in ("lev_forest", "lev_solar", "lev_elevators"):
        ns = {_load(name, fetcher, s).n for s in range(10)}
        assert TABLE2[name][0] in ns


# --------------------------------------------------------------------------- z-scoring


@pytest.mark.parametrize("name", [*[m for m in MASK_DATASETS if m in OFFLINE], "lev_tamielectric"])
def test_zscore_uses_train_statistics(name, fetcher):
    ds = _load(name, fetcher, 3)
    (z,) = _step(ds, "zscore")
    assert z["stats_from"] == "training rows" and z["ddof"] == 0
    X = ds.X * _step(ds, "scale")[-1]["scale_X"]  # undo the row-norm scaling
    std = X.std(axis=0)
    live = std > 0
    # With training statistics the TRAINING rows have mean 0 and std 1 exactly.
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-9)
    np.testing.assert_allclose(std[live], 1.0, rtol=1e-9)


def test_unstandardised_sets_not_zscored(fetcher):
    for name in set(PERMUTATION_DATASETS) - {"lev_tamielectric", "lev_crime"}:
        assert not _step(_load(name, fetcher), "zscore")
    crime = _load("lev_crime", fetcher)
    (z,) = _step(crime, "zscore")  # the code's full-data z-score (ddof=1), kept
    assert z["ddof"] == 1 and z["stats_from"].startswith("all rows")
    alt = _load("lev_crime", fetcher, crime_zscore_on="train")
    assert _step(alt, "zscore")[0]["stats_from"] == "training rows"
    assert (alt.n, alt.d) == (crime.n, crime.d)


# --------------------------------------------------------------------------- seeds


def test_permutation_reproducible_with_seed(fetcher):
    for name in ("lev_housing", "lev_crime", "lev_bike"):
        a, b = _load(name, fetcher, 7), _load(name, fetcher, 7)
        np.testing.assert_array_equal(a.X, b.X)
        np.testing.assert_array_equal(a.y, b.y)
        c = _load(name, fetcher, 8)
        assert c.n == a.n and not np.array_equal(a.y, c.y)
        g = load_dataset(
            name, fetcher=fetcher, seed=np.random.default_rng(7), bounds="data_derived"
        )
        np.testing.assert_array_equal(a.X, g.X)
    with pytest.raises(ValueError, match="seed"):
        load_dataset("lev_housing", fetcher=fetcher, seed=-1)
    with pytest.raises(ValueError, match="split"):
        load_dataset("lev_pol", fetcher=fetcher, split=10)


# --------------------------------------------------------------------------- Energy


def test_energy_deviation(fetcher):
    """docs/notes/lev2026.md §8 item 14: the code keeps the heating load as a feature."""
    ours = _load("lev_energy", fetcher)
    code = _load("lev_energy", fetcher, keep_heating_load=True)
    assert ours.d == 8 == TABLE2["lev_energy"][1]
    assert code.d == 9 and code.feature_names[-1] == "Y1_heating_load"
    assert ours.n == code.n == 614
    # With the heating load as a feature the OLS fit is far better than Table 2's 0.005
    # (docs/notes/lev2026.md §8 item 14: 0.0017); without it, L/n is close to the
    # printed 0.005.
    assert _ols_loss_per_n(code) < 0.0025
    assert 0.0035 < _ols_loss_per_n(ours) < 0.0065


# --------------------------------------------------------------------------- L(theta*)/n


def _rounding(printed: str) -> float:
    # Half a unit in the last printed digit.
    return 0.5 * 10.0 ** Decimal(printed).as_tuple().exponent


# BreastCancer: Table 2 prints 0.046, but over 200 seeds our L/n lies in [0.032, 0.043]
# (||Y||^2/n in [0.195, 0.243] vs 0.233, so y matches): a mismatch we cannot attribute
# from the paper or docs/notes/lev2026.md; n and d match. Reported, not asserted.
KNOWN_MISMATCH = {"lev_breastcancer"}


def test_ols_loss_against_table2(fetcher, capsys):
    """Compare L(theta*)/n with Table 2 (docs/notes/lev2026.md §7: within split noise).

    The paper's split is unknown (a random mask column; an unseeded-in-effect global
    permutation), so the reference must lie in the envelope of our values over 10
    splits (all mask columns) or 10 seeds, widened by the printed rounding and a 10%
    margin for the finite number of seeds. Energy is compared with d = 8 (our choice);
    its code-faithful d = 9 is tested in test_energy_deviation.
    """
    rows, failures = [], []
    for name in OFFLINE:
        printed = TABLE2[name][2]
        values = [_ols_loss_per_n(_load(name, fetcher, s)) for s in range(N_DRAWS)]
        lo, hi = min(values), max(values)
        if printed.startswith("<"):
            ok = hi < float(printed[1:])
        else:
            ref, r = float(printed), _rounding(printed)
            ok = lo * 0.9 - r <= ref <= hi * 1.1 + r
        rows.append(f"{name:20s} paper {printed:>7s}  ours {values[0]:.4g} [{lo:.4g}, {hi:.4g}]")
        if not ok and name not in KNOWN_MISMATCH:
            failures.append(name)
        if ok and name in KNOWN_MISMATCH:
            failures.append(f"{name} now matches: update KNOWN_MISMATCH")
    with capsys.disabled():
        print("\nL(theta*)/n: Table 2 vs ours (draw 0 [min, max over 10 draws])")
        print("\n".join(rows))
    assert not failures, failures


# --------------------------------------------------------------------------- pipeline


def test_pipeline_passes_split_and_seed(data_mirror, tmp_path):
    kw = dict(mirror=data_mirror, allow_download=False, download_dir=tmp_path)
    spec = {"loader": "lev_pol", "split": 2, "preprocessing": "lev2026"}
    frame, meta = prepare_dataset("pol", spec, seed=5, **kw)
    assert meta["n"] == 13500 and meta["held_out_rows"] == 1500
    assert any(s.get("split") == 2 for s in meta["preprocessing"] if s["step"] == "lev2026")
    spec = {"loader": "lev_housing", "split": 0, "preprocessing": "lev2026"}
    f1, m1 = prepare_dataset("housing", spec, seed=5, **kw)
    f2, _ = prepare_dataset("housing", spec, seed=5, **kw)
    f3, _ = prepare_dataset("housing", spec, seed=6, **kw)
    assert m1["n"] == 404 and m1["held_out_rows"] == 102
    assert f1.equals(f2) and not f1.equals(f3)
    assert [s for s in m1["preprocessing"] if s["step"] == "lev2026"][0]["seed"] == 5
    with pytest.raises(ValueError, match="lev2026"):
        prepare_dataset("housing", {**spec, "preprocessing": "liang2025"}, **kw)


# --------------------------------------------------------------------------- public bounds


@pytest.mark.parametrize("name", ["lev_pol", "lev_airfoil", "lev_crime", "lev_tamielectric"])
def test_public_bounds_are_the_default(name, fetcher):
    """Default: public bounds C_X = 2 sqrt(d), C_Y = 3 in standardised units, rows clipped."""
    key = "split" if lev2026_kind(name) == "mask" else "seed"
    ds = load_dataset(name, fetcher=fetcher, **{key: 0})
    paper = _load(name, fetcher)
    assert (ds.n, ds.d) == (paper.n, paper.d)
    assert np.linalg.norm(ds.X, axis=1).max() <= 1 + 1e-12 and np.abs(ds.y).max() <= 1
    (clip,) = _step(ds, "clip_scale")
    assert clip["bounds"] == "public" and clip["data_derived_nonprivate"] is False
    assert clip["scale_X"] == pytest.approx(2.0 * np.sqrt(ds.d)) and clip["scale_y"] == 3.0
    assert not _step(ds, "scale")  # no data-derived scaling anywhere
    step = _step(ds, "lev2026")[-1]
    assert step["bounds"] == "public" and step["bound_X_per_sqrt_d"] == 2.0
    # Rows below the bound are scaled, not clipped: undo the map and compare with the
    # standardised rows (z-scored or root-mean-square scaled, no centring of y).
    norms = np.linalg.norm(ds.X, axis=1)
    inside = norms < 1 - 1e-9
    assert inside.mean() > 0.9  # the default bounds clip few rows on these datasets
    assert clip["clipped_rows_X"] == int((~inside).sum())  # clipped rows land on the sphere
    # Standardised units: before clipping the training rows have E y^2 = 1 exactly.
    y_std = ds.y * 3.0
    if clip["clipped_rows_y"] == 0:
        assert np.mean(y_std**2) == pytest.approx(1.0, rel=1e-12)
    assert 0.3 < np.mean(y_std**2) <= 1.0 + 1e-9


def test_public_bounds_keep_the_problem(fetcher):
    """Without clipping, RMS scaling only rescales columns: same OLS fit as the paper's."""
    # Airfoil is not z-scored by the code; with a bound large enough that nothing clips
    # the public pipeline is a column rescaling of the data-derived one.
    paper = _load("lev_airfoil", fetcher)
    wide = _load("lev_airfoil", fetcher, bounds="public", bound_X_per_sqrt_d=1e3, bound_y=1e3)
    assert _step(wide, "clip_scale")[0]["clipped_rows_X"] == 0
    fit = lambda ds: ds.X @ np.linalg.lstsq(ds.X, ds.y, rcond=None)[0]  # noqa: E731
    # Fitted values are equivariant: they agree up to the y scale factor.
    ratio = fit(paper) / fit(wide)
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-8)
    np.testing.assert_allclose(paper.y / wide.y, paper.y[0] / wide.y[0], rtol=1e-12)


def test_public_bounds_options_rejected(fetcher):
    with pytest.raises(ValueError, match="bounds must be one of"):
        _load("lev_servo", fetcher, bounds="max_norm")
    for bad in (0.0, -1.0, float("nan"), float("inf"), "2"):
        with pytest.raises(ValueError, match="bound_X_per_sqrt_d"):
            _load("lev_servo", fetcher, bounds="public", bound_X_per_sqrt_d=bad)
    with pytest.raises(ValueError, match="bound_y"):
        _load("lev_housing", fetcher, bounds="public", bound_y=0)
