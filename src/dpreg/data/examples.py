r"""Example user tables written from data shipped by an installed package.

The smoke configuration runs a study on a "user's own table" without committing a data
file or downloading one: the rule ``export_example_table`` writes the table of an
installed package to ``resources/user/<name>.csv`` with :func:`example_table_csv`, and
the config entry (``loader: table``) pins that file's sha256 beside a committed codebook
(``config/codebooks/<name>.yaml``).

The bytes are deterministic: the columns in a fixed order, one line per row in the
package's row order, ``\n`` line ends, every value written by Python's
``format(value, ".10g")`` (no pandas CSV writer involved). The package's values have at
most 8 significant digits, so the text does not depend on the last bit of the parser
that read them. What could change the bytes is the package changing its data; then the
pinned sha256 stops the run with a message naming the file (``dpreg.data.table``), and
:func:`example_table` checks the shape first.

Examples
--------
>>> text = example_table_csv("fair")
>>> text.splitlines()[0]
'rate_marriage,age,yrs_married,children,religious,educ,occupation,occupation_husb,affairs'
>>> text.splitlines()[1]
'3,32,9,3,3,17,2,5,0.1111111'
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd

__all__ = [
    "EXAMPLE_DIR",
    "EXAMPLE_TABLES",
    "ExampleTable",
    "example_table",
    "example_table_csv",
    "example_table_path",
    "table_csv_text",
]

#: Where the workflow writes the example tables (relative to the working directory).
EXAMPLE_DIR = "resources/user"


def _fair() -> pd.DataFrame:
    from statsmodels.datasets import fair

    return fair.load_pandas().data


#: How :func:`_mroz` reads the data: ``"file"`` reads linearmodels' data file itself,
#: ``"package"`` (the reference) calls ``linearmodels.datasets.mroz.load()``.
_MROZ_LOAD = "file"

#: The file ``linearmodels.datasets.mroz.load()`` reads, inside the linearmodels package.
_MROZ_FILE = ("datasets", "mroz", "mroz.csv.bz2")


def _mroz_file() -> str | None:
    """Return the path of linearmodels' Mroz data file without importing linearmodels.

    ``import linearmodels`` loads SciPy, statsmodels' formula stack and its estimators
    (about 1 s of CPU in the ``export_example_table`` job; docs/scaling.md) only to read a
    CSV file the package ships. ``None`` when the package or the file is not found where
    a regular install puts it (then :func:`_mroz` imports the package).
    """
    spec = importlib.util.find_spec("linearmodels")  # locates, does not execute, it
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(root, *_MROZ_FILE)
        if os.path.isfile(path):
            return path
    return None


def _mroz() -> pd.DataFrame:
    path = _mroz_file() if _MROZ_LOAD == "file" else None
    if path is not None:
        # linearmodels.datasets.load(__file__, "mroz.csv.bz2"): the same call on the same file
        frame = pd.read_csv(path, compression="bz2")
    else:
        from linearmodels.datasets import mroz

        frame = mroz.load()
    # lwage is defined only for the women in the labour force in 1975 (inlf = 1): the
    # wage sample of Mroz (1987), a selection by a published rule, not by the values.
    return frame[frame["inlf"] == 1]


@dataclass(frozen=True)
class ExampleTable:
    """A table shipped by an installed package, exported as a user's CSV file."""

    name: str
    package: str
    load: Callable[[], pd.DataFrame]
    columns: tuple[str, ...]
    n_rows: int
    description: str


#: Every example table by name.
EXAMPLE_TABLES: Mapping[str, ExampleTable] = MappingProxyType(
    {
        "fair": ExampleTable(
            name="fair",
            package="statsmodels (statsmodels.datasets.fair)",
            load=_fair,
            columns=(
                "rate_marriage",
                "age",
                "yrs_married",
                "children",
                "religious",
                "educ",
                "occupation",
                "occupation_husb",
                "affairs",
            ),
            n_rows=6366,
            description=(
                "Fair (1978), 'A Theory of Extramarital Affairs', Journal of Political"
                " Economy 86(1): the 1974 Redbook survey of 6366 married women, as shipped"
                " by statsmodels; every column is coded on a published scale"
            ),
        ),
        "mroz": ExampleTable(
            name="mroz",
            package="linearmodels (linearmodels.datasets.mroz)",
            load=_mroz,
            columns=("lwage", "educ", "fatheduc", "motheduc"),
            n_rows=428,
            description=(
                "Mroz (1987), 'The Sensitivity of an Empirical Model of Married Women's"
                " Hours of Work to Economic and Statistical Assumptions', Econometrica 55:"
                " the 428 married women in the labour force in 1975 (PSID), as shipped by"
                " linearmodels: log wage, years of schooling and the parents' years of"
                " schooling (the textbook instruments for education)"
            ),
        ),
    }
)


def _get(name: str) -> ExampleTable:
    try:
        return EXAMPLE_TABLES[name]
    except KeyError:
        raise ValueError(
            f"unknown example table {name!r}; known: {', '.join(sorted(EXAMPLE_TABLES))}"
        ) from None


def example_table_path(name: str) -> str:
    """Return the path the workflow writes example ``name`` to (``resources/user/<name>.csv``)."""
    return f"{EXAMPLE_DIR}/{_get(name).name}.csv"


def example_table(name: str) -> pd.DataFrame:
    """Return example ``name``'s columns from its package, checked against its known shape."""
    table = _get(name)
    frame = table.load()
    missing = [c for c in table.columns if c not in frame.columns]
    if missing or len(frame) != table.n_rows:
        raise ValueError(
            f"example table {name!r}: {table.package} no longer ships the expected data"
            f" ({len(frame)} rows, missing columns {missing}; expected {table.n_rows} rows)"
        )
    return frame[list(table.columns)].reset_index(drop=True)


def table_csv_text(frame: pd.DataFrame) -> str:
    """Write numeric columns as deterministic CSV text (header, ``.10g`` values, LF line ends)."""
    for name in frame.columns:
        if "," in str(name) or '"' in str(name) or "\n" in str(name):
            raise ValueError(f"column name {name!r} needs quoting; rename it")
    values = frame.to_numpy(dtype=np.float64)
    lines = [",".join(map(str, frame.columns))]
    lines += [",".join(format(v, ".10g") for v in row) for row in values.tolist()]
    return "\n".join(lines) + "\n"


def example_table_csv(name: str) -> str:
    """Return the CSV text of example ``name`` (module docstring: why its bytes are stable)."""
    return table_csv_text(example_table(name))
