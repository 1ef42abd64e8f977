"""The AngEv98 sample rules and regressor choice on a synthetic raw extract.

The real zip is not mirrored (load_angev98 cannot be tested offline); the rules are a
separate pure function so they are tested here on rows built to hit each rule.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpreg.data.angrist import ANGEV98_COLUMNS, angev98_sample


def _raw():
    base = {c: 0 for c in ANGEV98_COLUMNS}
    base.update(
        AGEM=30,
        KIDCOUNT=3,
        SEXK=1,
        SEX2ND=1,
        AGEQK=40,
        AGEQ2ND=20,
        YOBM=50,
        QTRBTHM=1,
        WEEKSM=20,
    )
    rows = [
        dict(base),  # kept: 3 kids, same sex
        {**base, "KIDCOUNT": 2, "SEX2ND": 0, "WEEKSM": 52},  # kept: 2 kids, mixed
        {**base, "AGEM": 36},  # too old
        {**base, "KIDCOUNT": 1},  # one child
        {**base, "AGEQ2ND": 4},  # second child not older than a year
        {**base, "AGEQK": 60 * 4},  # mother under 15 at first birth
        {**base, "ASEX": 1},  # allocated value
    ]
    frame = pd.DataFrame(rows)
    frame["SEXK"] = frame["SEXK"].map(lambda v: str(v).encode("ascii"))  # SAS byte strings
    return frame


@pytest.mark.parametrize(("x", "expected"), [("kidcount", [3.0, 2.0]), ("morekids", [1.0, 0.0])])
def test_sample_rules_and_regressor(x, expected):
    ds = angev98_sample(_raw(), x=x)
    assert ds.n == 2
    np.testing.assert_array_equal(ds.X[:, 0], expected)
    np.testing.assert_array_equal(ds.Z[:, 0], [1.0, 0.0])
    np.testing.assert_array_equal(ds.y, [20.0, 52.0])
    assert ds.feature_names == (x,)


def test_bad_regressor_and_missing_columns():
    with pytest.raises(ValueError, match="kidcount"):
        angev98_sample(_raw(), x="children")
    with pytest.raises(ValueError, match="WEEKSM"):
        angev98_sample(_raw().drop(columns="WEEKSM"))
