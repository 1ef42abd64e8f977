r"""Codebooks: the public bounds of a user's own table, declared before the data are seen.

A codebook is a small YAML file (format in ``docs/user-data.md``) that says which column
of a table is the response, which are the features and (for IV regression) the
instruments, whether the model has an intercept, each column's public range
``[low, high]`` and, optionally, a public bound on the Euclidean norm of the feature
row. Everything in it is **public**: it is written from the survey design, the
measurement scale or domain knowledge, never from the data themselves. From it alone,
:meth:`Codebook.scaling` builds the :class:`PublicScaling` that maps every row of the
table into the unit ball, so every estimator of dpreg runs with ``bound_X = bound_y = 1``.
An optional entry ``standardise: {share, k, floor, rounds}`` (:class:`StandardiseOptions`)
asks for the private standardisation of :mod:`dpreg.data.private_scaling`, which spends
a share of the budget on noisy means and scales that narrow the ranges.

The map
-------
Write :math:`[l_j, h_j]` for the range of column :math:`j`. Each column gets a centre
:math:`c_j` and a half-width :math:`s_j`:

* without an intercept (``intercept: false``): :math:`c_j = 0`,
  :math:`s_j = \max(|l_j|, |h_j|)` (a linear map: regression through the origin stays
  regression through the origin);
* with an intercept (``intercept: true``): :math:`c_j = (l_j + h_j)/2`,
  :math:`s_j = (h_j - l_j)/2` (the public midpoint and half-width; the intercept of the
  fit absorbs the shift).

Then :math:`u_j = (x_j - c_j)/s_j \in [-1, 1]` and the feature row is divided by a public
bound :math:`K` on :math:`\|u\|`:

.. math::

    \tilde x = \frac{u}{K}, \qquad
    K = \min\Bigl(\sqrt d,\ \frac{R + \|c\|}{\min_j s_j}\Bigr),

where the second term is used only when the codebook gives ``feature_norm: R`` (a public
bound :math:`\|x\| \le R` in original units; a feature without a range then has the
implied range :math:`[-R, R]`). So :math:`\|\tilde x\| \le 1`. The response is mapped the
same way, :math:`\tilde y = (y - c_y)/s_y \in [-1, 1]`, and the instruments as the
features, with :math:`K_Z = \sqrt q`. A fit :math:`\tilde y \approx \tilde x^\top\theta +
\theta_0` on the mapped rows is, in original units,

.. math::

    y \approx x^\top\beta + \beta_0, \qquad
    \beta_j = \frac{s_y\,\theta_j}{K s_j}, \qquad
    \beta_0 = c_y + s_y\theta_0 - \sum_j \beta_j c_j

(:meth:`PublicScaling.to_original`; :meth:`PublicScaling.to_scaled` is its inverse).
This is post-processing of the released :math:`(\theta, \theta_0)`, so it costs no
privacy. Every factor comes from the codebook; nothing is read off the data.

Examples
--------
>>> book = parse_codebook(
...     {
...         "response": "y",
...         "features": ["age", "income"],
...         "intercept": True,
...         "columns": {
...             "y": {"range": [0, 10]},
...             "age": {"range": [18, 90]},
...             "income": {"range": [0, 200000]},
...         },
...     }
... )
>>> scaling = book.scaling()
>>> scaling.feature_center, scaling.feature_scale
((54.0, 100000.0), (36.0, 100000.0))
>>> scaling.feature_norm == 2**0.5, (scaling.response_center, scaling.response_scale)
(True, (5.0, 5.0))
>>> theta, theta0 = np.array([0.5, -0.2]), 0.1  # a fit on the scaled rows
>>> beta, beta0 = scaling.to_original(theta, theta0)
>>> x = np.array([[30.0, 50000.0], [65.0, 120000.0]])  # rows in original units
>>> bool(np.allclose(scaling.inverse_y(scaling.transform_X(x) @ theta + theta0), x @ beta + beta0))
True
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import yaml

from dpreg._yaml import load_unique_keys

__all__ = [
    "CODEBOOK_KEYS",
    "COLUMN_KEYS",
    "MISSING_RULES",
    "OUT_OF_RANGE_RULES",
    "Codebook",
    "CodebookError",
    "ColumnSpec",
    "PublicScaling",
    "STANDARDISE_KEYS",
    "StandardiseOptions",
    "parse_codebook",
    "read_codebook",
]

#: Top-level keys of a codebook file (any other key is refused).
CODEBOOK_KEYS = (
    "description",
    "response",
    "features",
    "instruments",
    "intercept",
    "feature_norm",
    "out_of_range",
    "missing",
    "standardise",
    "columns",
)
#: Keys of the optional ``standardise`` entry (private standardisation,
#: :mod:`dpreg.data.private_scaling`).
STANDARDISE_KEYS = ("share", "k", "floor", "rounds")
#: Keys of one column's entry under ``columns``.
COLUMN_KEYS = ("range", "description")
#: What to do with a value outside its column's range: clip it to the range (default) or
#: refuse the table.
OUT_OF_RANGE_RULES = ("clip", "refuse")
#: What to do with a missing value: refuse the table (default) or drop the row (a
#: data-dependent step outside the privacy guarantee).
MISSING_RULES = ("refuse", "drop")
#: Column names reserved by :class:`dpreg.data.Dataset` (its train-mask column).
_RESERVED = ("is_train",)


class CodebookError(ValueError):
    """A codebook is not valid YAML or breaks the format; the message names file and key."""


# ----------------------------------------------------------------------------- YAML


_NUMBER_TEXT = re.compile(
    r"^\s*[-+]?((\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|\.?inf(inity)?|\.?nan)\s*$", re.IGNORECASE
)
_EXPONENT_WITHOUT_DOT = re.compile(r"^\s*[-+]?\d+[eE][-+]?\d+\s*$")


def _text_hint(value: str) -> str:
    if _EXPONENT_WITHOUT_DOT.match(value):
        mantissa, exponent = re.split("[eE]", value.strip())
        return f" (YAML 1.1 reads {value.strip()} as text: write {mantissa}.0e{exponent})"
    return " (remove the quotes)"


# ----------------------------------------------------------------------------- types


@dataclass(frozen=True)
class ColumnSpec:
    """One column of a codebook: its public range (``None`` when not given) and description."""

    name: str
    low: float | None = None
    high: float | None = None
    description: str = ""

    @property
    def has_range(self) -> bool:
        """Whether the codebook gives this column a range."""
        return self.low is not None


@dataclass(frozen=True)
class StandardiseOptions:
    r"""The opt-in private standardisation of a codebook (``standardise:``).

    Public constants of :mod:`dpreg.data.private_scaling`: the share of the zCDP budget
    spent on the private means and standard deviations, the width ``k`` of the new box
    in private standard deviations, and the floor of the standard deviation as a
    fraction of the codebook's half-width (``docs/user-data.md``, "Private
    standardisation (optional)").

    Attributes
    ----------
    share : float
        Share of the total zCDP level :math:`\rho` spent on the standardisation, in
        (0, 1).
    k : float, default 3
        The new half-width is ``k`` times the private standard deviation (> 0).
    floor : float, default 0.01
        The private standard deviation is floored at ``floor`` times the column's
        public half-width, in (0, 1].
    rounds : int, default 3
        Releases, each within the box the previous one derived (the budget is split
        equally between them), from 1 to 10.

    Examples
    --------
    >>> StandardiseOptions(share=0.1)
    StandardiseOptions(share=0.1, k=3.0, floor=0.01, rounds=3)
    """

    share: float
    k: float = 3.0
    floor: float = 0.01
    rounds: int = 3

    def __post_init__(self) -> None:
        self.check("<standardise>")

    def check(self, src: str) -> None:
        """Validate the values; every message names ``src`` and the key."""
        share = _number(self.share, f"{src}: standardise.share")
        if not 0.0 < share < 1.0:
            raise CodebookError(f"{src}: standardise.share: must lie in (0, 1); got {share!r}")
        k = _number(self.k, f"{src}: standardise.k")
        if not k > 0.0:
            raise CodebookError(f"{src}: standardise.k: must be > 0; got {k!r}")
        floor = _number(self.floor, f"{src}: standardise.floor")
        if not 0.0 < floor <= 1.0:
            raise CodebookError(f"{src}: standardise.floor: must lie in (0, 1]; got {floor!r}")
        rounds = self.rounds
        if isinstance(rounds, bool) or not isinstance(rounds, int | np.integer):
            raise CodebookError(f"{src}: standardise.rounds: must be an integer; got {rounds!r}")
        if not 1 <= rounds <= 10:
            raise CodebookError(f"{src}: standardise.rounds: must lie in 1..10; got {rounds!r}")
        object.__setattr__(self, "rounds", int(rounds))
        object.__setattr__(self, "share", share)
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "floor", floor)


def _standardise(entry: Any, src: str) -> StandardiseOptions | None:
    if entry is None:
        return None
    if not isinstance(entry, Mapping):
        raise CodebookError(
            f"{src}: standardise: must be a mapping with keys {list(STANDARDISE_KEYS)}"
            f" (e.g. {{share: 0.1, k: 3}}); got {entry!r}"
        )
    unknown = sorted(set(map(str, entry)) - set(STANDARDISE_KEYS))
    if unknown:
        raise CodebookError(
            f"{src}: standardise: unknown key(s) {unknown}; allowed: {list(STANDARDISE_KEYS)}"
        )
    if entry.get("share") is None:
        raise CodebookError(f"{src}: standardise.share is required (a number in (0, 1))")
    try:
        return StandardiseOptions(**{key: entry[key] for key in STANDARDISE_KEYS if key in entry})
    except CodebookError as err:  # name the file, not the placeholder
        raise CodebookError(str(err).replace("<standardise>", src, 1)) from None


@dataclass(frozen=True)
class PublicScaling:
    r"""The public map of a codebook's columns into the unit ball, and back.

    Built by :meth:`Codebook.scaling` (module docstring: the exact map). Every number is
    a function of the codebook only.

    Attributes
    ----------
    feature_names : tuple of str
        The ``d`` features, in codebook order.
    feature_center, feature_scale : tuple of float
        :math:`c_j` and :math:`s_j` of each feature.
    feature_norm : float
        :math:`K`, the public bound on :math:`\|(x - c)/s\|`.
    response_name : str
    response_center, response_scale : float
        :math:`c_y`, :math:`s_y`.
    instrument_names : tuple of str
    instrument_center, instrument_scale : tuple of float
    instrument_norm : float
        :math:`\sqrt q` (1 without instruments).
    intercept : bool
        Whether the model has an intercept (then the map centres on the midpoints).
    """

    feature_names: tuple[str, ...]
    feature_center: tuple[float, ...]
    feature_scale: tuple[float, ...]
    feature_norm: float
    response_name: str
    response_center: float
    response_scale: float
    instrument_names: tuple[str, ...] = ()
    instrument_center: tuple[float, ...] = ()
    instrument_scale: tuple[float, ...] = ()
    instrument_norm: float = 1.0
    intercept: bool = False

    @property
    def d(self) -> int:
        """Number of features."""
        return len(self.feature_names)

    def _features(self, X: Any) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.shape[-1] != self.d:
            raise ValueError(f"X must have {self.d} columns ({self.feature_names}); got {X.shape}")
        return X

    def transform_X(self, X: Any) -> np.ndarray:
        r"""Map feature rows to :math:`\tilde x = ((x - c)/s)/K` (no clipping)."""
        X = self._features(X)
        return (
            (X - np.asarray(self.feature_center))
            / np.asarray(self.feature_scale)
            / self.feature_norm
        )

    def inverse_X(self, X_scaled: Any) -> np.ndarray:
        r"""Map :math:`\tilde x` back to original units: :math:`x = c + s K \tilde x`."""
        X_scaled = self._features(X_scaled)
        return np.asarray(self.feature_center) + X_scaled * self.feature_norm * np.asarray(
            self.feature_scale
        )

    def transform_y(self, y: Any) -> np.ndarray:
        r"""Map the response to :math:`\tilde y = (y - c_y)/s_y` (no clipping)."""
        return (np.asarray(y, dtype=np.float64) - self.response_center) / self.response_scale

    def inverse_y(self, y_scaled: Any) -> np.ndarray:
        r"""Map :math:`\tilde y` (or a prediction of it) back: :math:`y = c_y + s_y\tilde y`."""
        return self.response_center + np.asarray(y_scaled, dtype=np.float64) * self.response_scale

    def transform_Z(self, Z: Any) -> np.ndarray:
        r"""Map instrument rows to :math:`((z - c_Z)/s_Z)/\sqrt q` (no clipping)."""
        if not self.instrument_names:
            raise ValueError("the codebook declares no instruments")
        Z = np.asarray(Z, dtype=np.float64)
        if Z.shape[-1] != len(self.instrument_names):
            raise ValueError(
                f"Z must have {len(self.instrument_names)} columns; got shape {Z.shape}"
            )
        return (
            (Z - np.asarray(self.instrument_center))
            / np.asarray(self.instrument_scale)
            / self.instrument_norm
        )

    def to_original(self, coef: Any, intercept: Any = 0.0) -> tuple[np.ndarray, np.ndarray]:
        r"""Map a fit on the scaled rows to original units (module docstring).

        Parameters
        ----------
        coef : array_like, shape (..., d)
            :math:`\theta`, coefficients of the scaled features (e.g. ``Fit.theta``, one
            row per trial).
        intercept : array_like, shape (...), scalar or None, default 0
            :math:`\theta_0`, the intercept on the scaled response (``Fit.intercept``;
            0 or ``None`` for a fit without one).

        Returns
        -------
        coef : ndarray, shape (..., d)
            :math:`\beta_j = s_y\theta_j/(K s_j)`.
        intercept : ndarray, shape (...)
            :math:`\beta_0 = c_y + s_y\theta_0 - \sum_j\beta_j c_j`: with it,
            :math:`x^\top\beta + \beta_0 = c_y + s_y(\tilde x^\top\theta + \theta_0)` for
            every row (the prediction in original units).
        """
        theta = self._features(coef)
        theta0 = np.asarray(0.0 if intercept is None else intercept, dtype=np.float64)
        beta = theta * (self.response_scale / (self.feature_norm * np.asarray(self.feature_scale)))
        beta0 = (
            self.response_center
            + self.response_scale * theta0
            - beta @ np.asarray(self.feature_center)
        )
        return beta, np.asarray(beta0)

    def to_scaled(self, coef: Any, intercept: Any = 0.0) -> tuple[np.ndarray, np.ndarray]:
        r"""Invert :meth:`to_original`: :math:`(\beta, \beta_0) \mapsto (\theta, \theta_0)`."""
        beta = self._features(coef)
        beta0 = np.asarray(0.0 if intercept is None else intercept, dtype=np.float64)
        theta = beta * (self.feature_norm * np.asarray(self.feature_scale) / self.response_scale)
        theta0 = (
            beta0 + beta @ np.asarray(self.feature_center) - self.response_center
        ) / self.response_scale
        return theta, np.asarray(theta0)

    def to_dict(self) -> dict[str, Any]:
        """Return the factors as a JSON-able dict (all public: functions of the codebook).

        Lists keep the column order (JSON writers may sort mapping keys);
        :meth:`from_dict` inverts it.
        """
        return {
            name: list(value) if isinstance(value, tuple) else value
            for name, value in self.__dict__.items()
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PublicScaling:
        """Rebuild the map from :meth:`to_dict` (e.g. a prepared dataset's record)."""
        fields = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ValueError(f"not a PublicScaling record: unknown key(s) {unknown}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


@dataclass(frozen=True)
class Codebook:
    """A validated codebook (module docstring; format in ``docs/user-data.md``).

    Build one with :func:`read_codebook` (a file) or :func:`parse_codebook` (a mapping);
    the constructor validates too, so an instance is always consistent.

    Attributes
    ----------
    response : str
        The response column (must have a range).
    features : tuple of str
        The feature columns (each with a range, unless ``feature_norm`` is given).
    columns : mapping of str to ColumnSpec
        Every column the codebook describes: exactly the response, features and
        instruments.
    instruments : tuple of str
        Excluded instruments for IV regression (each with a range; distinct from the
        features); empty for plain regression.
    intercept : bool
        Whether the model has an intercept: the map then centres on the public
        midpoints, and the fit must add an intercept.
    feature_norm : float or None
        A public bound on the Euclidean norm of the feature row, in original units.
    out_of_range : {"clip", "refuse"}
        Clip a value outside its range to the range (default), or refuse the table.
    missing : {"refuse", "drop"}
        Refuse a table with a missing value (default), or drop the row (data-dependent,
        outside the privacy guarantee).
    standardise : StandardiseOptions or None
        The opt-in private standardisation (``None``: the map uses the ranges only).
    description : str
    source : str
        Where the codebook came from (the file), named in every message.
    sha256 : str or None
        The file's sha256 (``None`` for a codebook built from a mapping).
    """

    response: str
    features: tuple[str, ...]
    columns: Mapping[str, ColumnSpec]
    instruments: tuple[str, ...] = ()
    intercept: bool = False
    feature_norm: float | None = None
    out_of_range: str = "clip"
    missing: str = "refuse"
    description: str = ""
    source: str = "<codebook>"
    standardise: StandardiseOptions | None = None
    sha256: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        src = self.source
        object.__setattr__(self, "features", tuple(self.features))
        object.__setattr__(self, "instruments", tuple(self.instruments))
        object.__setattr__(self, "columns", MappingProxyType(dict(self.columns)))
        for key, value in (("response", self.response),):
            _check_name(value, f"{src}: {key}")
        if not self.features:
            raise CodebookError(f"{src}: features: give at least one feature column")
        for role in ("features", "instruments"):
            for i, name in enumerate(getattr(self, role)):
                _check_name(name, f"{src}: {role}[{i}]")
        for role in ("features", "instruments"):
            names = getattr(self, role)
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise CodebookError(f"{src}: {role}: {dup} listed twice")
        if self.response in self.features or self.response in self.instruments:
            raise CodebookError(
                f"{src}: response {self.response!r} is also listed as a feature or instrument"
            )
        both = sorted(set(self.features) & set(self.instruments))
        if both:
            raise CodebookError(
                f"{src}: {both} listed as both features and instruments; instruments are the"
                " excluded instruments only (exogenous regressors in both blocks are not"
                " supported)"
            )
        if not isinstance(self.intercept, bool):
            raise CodebookError(f"{src}: intercept must be true or false; got {self.intercept!r}")
        if self.out_of_range not in OUT_OF_RANGE_RULES:
            raise CodebookError(
                f"{src}: out_of_range must be one of {OUT_OF_RANGE_RULES};"
                f" got {self.out_of_range!r}"
            )
        if self.missing not in MISSING_RULES:
            raise CodebookError(
                f"{src}: missing must be one of {MISSING_RULES}; got {self.missing!r}"
            )
        if not isinstance(self.description, str):
            raise CodebookError(f"{src}: description must be text; got {self.description!r}")
        if self.standardise is not None:
            if not isinstance(self.standardise, StandardiseOptions):
                raise CodebookError(
                    f"{src}: standardise must be a StandardiseOptions; got {self.standardise!r}"
                )
            self.standardise.check(src)
        if self.feature_norm is not None:
            norm = _number(self.feature_norm, f"{src}: feature_norm")
            if norm <= 0:
                raise CodebookError(f"{src}: feature_norm must be > 0; got {norm!r}")
            object.__setattr__(self, "feature_norm", norm)
        used = (self.response, *self.features, *self.instruments)
        for name, spec in self.columns.items():
            if not isinstance(spec, ColumnSpec) or spec.name != name:
                raise CodebookError(f"{src}: columns.{name}: not a ColumnSpec named {name!r}")
            if name not in used:
                raise CodebookError(
                    f"{src}: columns.{name}: described but neither the response, a feature"
                    " nor an instrument (a typo? remove it or list it under features)"
                )
            if spec.has_range:
                low = _number(spec.low, f"{src}: columns.{name}.range low")
                high = _number(spec.high, f"{src}: columns.{name}.range high")
                if not low < high:
                    raise CodebookError(
                        f"{src}: columns.{name}.range: low {low:g} must be below high {high:g}"
                    )
            elif spec.high is not None:
                raise CodebookError(f"{src}: columns.{name}.range: low is missing")
        for name in (self.response, *self.instruments):
            if name not in self.columns or not self.columns[name].has_range:
                role = "the response" if name == self.response else "an instrument"
                raise CodebookError(
                    f"{src}: columns.{name}: {role} needs a public range [low, high]"
                )
        if self.feature_norm is None:
            lacking = [
                f for f in self.features if f not in self.columns or not self.columns[f].has_range
            ]
            if lacking:
                raise CodebookError(
                    f"{src}: columns: features {lacking} have no public range [low, high];"
                    " give each a range, or give feature_norm (a public bound on the norm"
                    " of the feature row)"
                )

    @property
    def names(self) -> tuple[str, ...]:
        """The columns to read: response, features, instruments (codebook order)."""
        return (self.response, *self.features, *self.instruments)

    def range(self, name: str) -> tuple[float, float]:
        """Return a column's public range ``(low, high)`` (implied by ``feature_norm`` if none)."""
        spec = self.columns.get(name)
        if spec is not None and spec.has_range:
            assert spec.low is not None and spec.high is not None
            return float(spec.low), float(spec.high)
        if name in self.features and self.feature_norm is not None:
            return -float(self.feature_norm), float(self.feature_norm)
        raise KeyError(f"{self.source}: column {name!r} has no range")

    def _centre_scale(self, name: str) -> tuple[float, float]:
        low, high = self.range(name)
        if self.intercept:
            return (low + high) / 2.0, (high - low) / 2.0
        return 0.0, max(abs(low), abs(high))

    def scaling(self) -> PublicScaling:
        """Return the public map into the unit ball and back (module docstring): codebook only."""
        fc, fs = zip(*(self._centre_scale(f) for f in self.features), strict=True)
        K = math.sqrt(len(self.features))
        if self.feature_norm is not None:
            K = min(K, (self.feature_norm + math.hypot(*fc)) / min(fs))
        yc, ys = self._centre_scale(self.response)
        zc: tuple[float, ...] = ()
        zs: tuple[float, ...] = ()
        if self.instruments:
            zc, zs = zip(*(self._centre_scale(z) for z in self.instruments), strict=True)
        return PublicScaling(
            feature_names=self.features,
            feature_center=tuple(float(v) for v in fc),
            feature_scale=tuple(float(v) for v in fs),
            feature_norm=float(K),
            response_name=self.response,
            response_center=float(yc),
            response_scale=float(ys),
            instrument_names=self.instruments,
            instrument_center=tuple(float(v) for v in zc),
            instrument_scale=tuple(float(v) for v in zs),
            instrument_norm=math.sqrt(len(self.instruments)) if self.instruments else 1.0,
            intercept=self.intercept,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the codebook as a JSON-able dict (the format of the file)."""
        extra: dict[str, Any] = {}
        if self.standardise is not None:
            extra["standardise"] = dict(self.standardise.__dict__)
        columns: dict[str, Any] = {}
        for name, spec in self.columns.items():
            entry: dict[str, Any] = {}
            if spec.has_range:
                entry["range"] = [spec.low, spec.high]
            if spec.description:
                entry["description"] = spec.description
            columns[name] = entry
        return {
            "description": self.description,
            "response": self.response,
            "features": list(self.features),
            "instruments": list(self.instruments),
            "intercept": self.intercept,
            "feature_norm": self.feature_norm,
            "out_of_range": self.out_of_range,
            "missing": self.missing,
            **extra,
            "columns": columns,
        }


# ----------------------------------------------------------------------------- parsing


def _check_name(value: Any, where: str) -> None:
    if not isinstance(value, str) or not value.strip():
        hint = " (quote it: YAML read it as a number)" if isinstance(value, int | float) else ""
        raise CodebookError(f"{where}: a column name must be non-empty text; got {value!r}{hint}")
    if value in _RESERVED:
        raise CodebookError(f"{where}: {value!r} is reserved (the train-mask column); rename it")


def _number(value: Any, where: str) -> float:
    """Return a finite real number; text (``"1e-5"``), booleans and ``.inf`` are refused."""
    if isinstance(value, bool):
        raise CodebookError(f"{where}: must be a number; got {value!r}")
    if isinstance(value, str):
        if _NUMBER_TEXT.match(value):
            raise CodebookError(f"{where}: {value!r} is text, not a number{_text_hint(value)}")
        raise CodebookError(f"{where}: must be a number; got the text {value!r}")
    if not isinstance(value, int | float | np.integer | np.floating):
        raise CodebookError(f"{where}: must be a number; got {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise CodebookError(f"{where}: must be a finite number; got {value!r}")
    return out


def _names(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        raise CodebookError(f"{where}: must be a list of column names; got {value!r}")
    return tuple(value)


def _column(name: Any, entry: Any, src: str) -> ColumnSpec:
    where = f"{src}: columns.{name}"
    _check_name(name, f"{src}: columns")
    if entry is None:
        entry = {}
    if not isinstance(entry, Mapping):
        raise CodebookError(
            f"{where}: must be a mapping with keys {list(COLUMN_KEYS)}; got {entry!r}"
        )
    unknown = sorted(set(map(str, entry)) - set(COLUMN_KEYS))
    if unknown:
        raise CodebookError(f"{where}: unknown key(s) {unknown}; allowed: {list(COLUMN_KEYS)}")
    description = entry.get("description", "")
    if not isinstance(description, str):
        raise CodebookError(f"{where}.description: must be text; got {description!r}")
    bounds = entry.get("range")
    if bounds is None:
        return ColumnSpec(name=name, description=description)
    if not isinstance(bounds, list) or len(bounds) != 2:
        raise CodebookError(f"{where}.range: must be a list [low, high]; got {bounds!r}")
    low = _number(bounds[0], f"{where}.range low")
    high = _number(bounds[1], f"{where}.range high")
    return ColumnSpec(name=name, low=low, high=high, description=description)


def parse_codebook(data: Any, *, source: str = "<codebook>", sha256: str | None = None) -> Codebook:
    """Build a :class:`Codebook` from a mapping (the parsed YAML of a codebook file).

    Parameters
    ----------
    data : mapping
        Keys :data:`CODEBOOK_KEYS` (``response``, ``features`` and ``columns`` required).
    source : str
        Named in every error message (the file).
    sha256 : str, optional
        Recorded on the codebook (:func:`read_codebook` passes the file's).

    Returns
    -------
    Codebook

    Raises
    ------
    CodebookError
        An unknown or missing key, a range with low >= high, a bound that is not a
        finite number (or is a number written as text), a column without a range where
        one is needed; the message names the file and the key.
    """
    if not isinstance(data, Mapping):
        raise CodebookError(
            f"{source}: a codebook is a mapping with keys {list(CODEBOOK_KEYS)}; got"
            f" {type(data).__name__}"
        )
    unknown = sorted(set(map(str, data)) - set(CODEBOOK_KEYS))
    if unknown:
        raise CodebookError(f"{source}: unknown key(s) {unknown}; allowed: {list(CODEBOOK_KEYS)}")
    for key in ("response", "features", "columns"):
        if data.get(key) is None:
            raise CodebookError(f"{source}: {key} is required")
    columns = data["columns"]
    if not isinstance(columns, Mapping):
        raise CodebookError(f"{source}: columns must map column names to entries; got {columns!r}")
    specs = {name: _column(name, entry, source) for name, entry in columns.items()}
    intercept = data.get("intercept", False)
    return Codebook(
        response=data["response"],
        features=_names(data["features"], f"{source}: features"),
        instruments=_names(data.get("instruments"), f"{source}: instruments"),
        columns=specs,
        intercept=intercept,
        feature_norm=data.get("feature_norm"),
        out_of_range=data.get("out_of_range", "clip"),
        missing=data.get("missing", "refuse"),
        description=data.get("description") or "",
        source=source,
        sha256=sha256,
        standardise=_standardise(data.get("standardise"), source),
    )


def read_codebook(path: str | os.PathLike[str], *, sha256: str | None = None) -> Codebook:
    """Read and validate a codebook file (YAML; format in ``docs/user-data.md``).

    Parameters
    ----------
    path : path-like
        The codebook file.
    sha256 : str, optional
        Its expected sha256 (hex): a file whose bytes differ is refused before it is
        parsed (:class:`dpreg.data.DataIntegrityError`).

    Returns
    -------
    Codebook
        With ``source`` the path as given and ``sha256`` the file's.

    Raises
    ------
    FileNotFoundError
        No such file.
    DataIntegrityError
        The sha256 differs from ``sha256``.
    CodebookError
        Not valid YAML (the message gives the line), a key repeated in a mapping, or
        any error of :func:`parse_codebook`.
    """
    from dpreg.data.acquire import DataIntegrityError

    source = os.fspath(path)
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(
            f"codebook {source} not found (relative paths start at {Path.cwd()})"
        )
    raw = file.read_bytes()
    actual = hashlib.sha256(raw).hexdigest()
    if sha256 is not None and actual != sha256:
        raise DataIntegrityError(
            f"codebook {source} has sha256 {actual} but {sha256} is expected: it changed"
            " since it was pinned; check the edit and pin the new sha256",
            path=source,
            expected=sha256,
            actual=actual,
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise CodebookError(f"{source}: not UTF-8 text ({err})") from None
    try:
        data = load_unique_keys(text, name=source, error=CodebookError)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise CodebookError(f"{source}: not valid YAML{where}: {problem}") from None
    return parse_codebook(data, source=source, sha256=actual)
