"""Typed parameter specs of study kinds: each kind's cell keys declared once.

A kind's parameters are a frozen dataclass deriving from :class:`KindParams`, one field
per key with its type, default and documentation (:func:`param`). From it come the
allowed keys (required = no default), the defaults, the validation messages (naming the
key and the kind) and the documentation table in ``config/README.md``
(:meth:`KindParams.markdown_table`; a test fails when the README is stale). A kind's run
function reads ``Params.from_cell(cell)`` instead of ``cell.get(key, default)``.

Examples
--------
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class ToyParams(KindParams):
...     kind = "toy"
...     epsilon: float = param(doc="the claim's epsilon", check=positive)
...     alpha: float = param(0.05, doc="level", check=open_interval(0, 0.5))
>>> ToyParams.from_cell({"epsilon": 1.0})
ToyParams(epsilon=1.0, alpha=0.05)
>>> ToyParams.from_cell({"epsilon": -1})
Traceback (most recent call last):
...
ValueError: toy: epsilon must be > 0; got -1
>>> sorted(ToyParams.required_keys()), sorted(ToyParams.optional_keys())
(['epsilon'], ['alpha'])
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

__all__ = [
    "DEFAULT_CONVERSION",
    "REQUIRED",
    "KindParams",
    "at_least",
    "cell_conversion",
    "choice",
    "finite",
    "half_open_interval",
    "nonnegative",
    "open_interval",
    "param",
    "positive",
    "positive_finite",
    "positive_integer",
]

REQUIRED: Any = dataclasses.MISSING
"""Marker: the key has no default and must be in the study's ``params`` or ``grid``."""

Check = Callable[[Any], str | None]
"""``check(value) -> None`` when fine, else the reason (``"must be > 0"``)."""


def param(default: Any = REQUIRED, *, doc: str, check: Check | None = None) -> Any:
    """Declare one cell key of a kind: its default (none: required), documentation, check."""
    metadata = {"doc": doc, "check": check}
    if isinstance(default, list | dict | set):
        frozen = default

        return dataclasses.field(default_factory=lambda: type(frozen)(frozen), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def positive(value: Any) -> str | None:
    """Check: a number > 0 (infinity allowed)."""
    return None if value > 0 else "must be > 0"


positive.text = "> 0"  # type: ignore[attr-defined]


def positive_finite(value: Any) -> str | None:
    """Check: a finite number > 0."""
    return None if 0 < value < math.inf else "must be > 0 and finite"


positive_finite.text = "> 0, finite"  # type: ignore[attr-defined]


def nonnegative(value: Any) -> str | None:
    """Check: a number >= 0."""
    return None if value >= 0 else "must be >= 0"


nonnegative.text = ">= 0"  # type: ignore[attr-defined]


def at_least(low: float) -> Check:
    """Check: a number >= ``low``."""

    def check(value: Any) -> str | None:
        return None if value >= low else f"must be >= {low:g}"

    check.text = f">= {low:g}"  # type: ignore[attr-defined]
    return check


def positive_integer(value: Any) -> str | None:
    """Check: an integer >= 1."""
    return None if value >= 1 else "must be an integer >= 1"


positive_integer.text = ">= 1"  # type: ignore[attr-defined]


def open_interval(low: float, high: float) -> Check:
    """Check: a number strictly between ``low`` and ``high``."""

    def check(value: Any) -> str | None:
        return None if low < value < high else f"must lie in ({low:g}, {high:g})"

    check.text = f"in ({low:g}, {high:g})"  # type: ignore[attr-defined]
    return check


def half_open_interval(low: float, high: float) -> Check:
    """Check: a number in ``(low, high]``."""

    def check(value: Any) -> str | None:
        return None if low < value <= high else f"must lie in ({low:g}, {high:g}]"

    check.text = f"in ({low:g}, {high:g}]"  # type: ignore[attr-defined]
    return check


def finite(inner: Check | None = None) -> Check:
    """Check: a finite number (not infinity) that ``inner``, if given, accepts too."""

    def check(value: Any) -> str | None:
        if not math.isfinite(value):
            return "must be finite"
        return None if inner is None else inner(value)

    text = getattr(inner, "text", "") if inner is not None else ""
    check.text = f"{text}, finite" if text else "finite"  # type: ignore[attr-defined]
    return check


def choice(*options: str) -> Check:
    """Check: one of ``options``."""

    def check(value: Any) -> str | None:
        return None if value in options else f"must be one of {list(options)}"

    check.text = "one of " + ", ".join(f"`{o}`" for o in options)  # type: ignore[attr-defined]
    return check


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "").replace(" | ", " or ")


def _accepts(annotation: Any, value: Any) -> bool:
    """Whether ``value`` fits the annotation (booleans are never numbers; ints are floats)."""
    if annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(a, value) for a in typing.get_args(annotation))
    if origin in (list, tuple):
        (inner, *_) = typing.get_args(annotation) or (Any,)
        return isinstance(value, list | tuple) and all(_accepts(inner, v) for v in value)
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if annotation is float:
        return isinstance(value, numbers.Real) and not (
            isinstance(value, float) and math.isnan(value)
        )
    if annotation is int:
        return isinstance(value, numbers.Integral)
    return isinstance(value, annotation)


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    """Return ``typing.get_type_hints(cls)``, resolved once per class.

    A config check validates every cell of every study (~0.6 ms per call otherwise).
    """
    return typing.get_type_hints(cls)


@dataclasses.dataclass(frozen=True)
class KindParams:
    """Base of a kind's parameter spec (subclass as a frozen dataclass; set ``kind``)."""

    kind: ClassVar[str] = ""

    @classmethod
    def _fields(cls) -> tuple[dataclasses.Field, ...]:
        return dataclasses.fields(cls)

    @classmethod
    def required_keys(cls) -> frozenset[str]:
        """Keys without a default."""
        return frozenset(
            f.name
            for f in cls._fields()
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        )

    @classmethod
    def optional_keys(cls) -> frozenset[str]:
        """Keys with a default."""
        return frozenset(f.name for f in cls._fields()) - cls.required_keys()

    @classmethod
    def from_cell(cls, cell: Mapping[str, Any]) -> KindParams:
        """Validate a cell's keys and values and return the typed parameters.

        Keys the workflow adds to every cell (``conversion``) are ignored here. Raises
        ``ValueError`` naming the kind and the key for a missing key, a value of the
        wrong type (text or a boolean for a number) or one its check refuses.
        """
        hints = _type_hints(cls)
        values = {}
        missing = sorted(k for k in cls.required_keys() if k not in cell)
        if missing:
            raise ValueError(f"{cls.kind}: missing key(s) {missing} in params or grid")
        for f in cls._fields():
            if f.name not in cell:
                continue
            value = cell[f.name]
            if not _accepts(hints[f.name], value):
                raise ValueError(
                    f"{cls.kind}: {f.name} must be {_type_name(hints[f.name])}; got {value!r}"
                )
            check = f.metadata.get("check")
            values_to_check = value if isinstance(value, list | tuple) else [value]
            for v in values_to_check:
                reason = check(v) if check is not None and v is not None else None
                if reason:
                    raise ValueError(f"{cls.kind}: {f.name} {reason}; got {value!r}")
            values[f.name] = value
        return cls(**values)

    @classmethod
    def markdown_table(cls) -> str:
        """Return the markdown table of the keys (key, type, default, meaning) for the docs."""
        hints = typing.get_type_hints(cls)
        rows = ["| key | type | values | default | meaning |", "|---|---|---|---|---|"]
        for f in cls._fields():
            if f.default is not dataclasses.MISSING:
                default = f"`{f.default!r}`"
            elif f.default_factory is not dataclasses.MISSING:
                default = f"`{f.default_factory()!r}`"
            else:
                default = "required"
            check = f.metadata.get("check")
            values = getattr(check, "text", "") if check is not None else ""
            rows.append(
                f"| `{f.name}` | {_type_name(hints[f.name])} | {values} | {default}"
                f" | {f.metadata['doc']} |"
            )
        return "\n".join(rows)


#: The conversion between zCDP and (epsilon, delta) when a cell carries none (a cell
#: built outside the workflow); the workflow adds the config's ``conversion`` to every
#: cell (``dpreg.config.GLOBAL_CELL_KEYS``).
DEFAULT_CONVERSION = "tight"


def cell_conversion(cell: Mapping[str, Any]) -> str:
    """Return the cell's zCDP <-> (epsilon, delta) conversion (a workflow-wide key).

    Examples
    --------
    >>> cell_conversion({"conversion": "simple"}), cell_conversion({})
    ('simple', 'tight')
    """
    return str(cell.get("conversion", DEFAULT_CONVERSION))
