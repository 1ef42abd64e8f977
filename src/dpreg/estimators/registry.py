"""The estimator registry: one explicit table from config names to estimator functions.

The workflow config, the audit and the benchmarks name estimators by these keys. Adding
an estimator is one line in ``_BUILTIN_SOURCES``, the table behind
:data:`BUILTIN_ESTIMATORS` (``CONTRIBUTING.md``, "Add an estimator");
``tests/unit/test_registries.py`` fails if an estimator module defines a public ``fit_*``
function that the table lacks. Estimator modules never import this module, so the table
sits at the top of the estimators layer and the imports are
acyclic (``docs/architecture.md``, "Layers").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from dpreg._lazy import LazyTable

__all__ = ["BUILTIN_ESTIMATORS", "ESTIMATORS", "get_estimator", "register"]

#: Where every built-in estimator is defined (config name -> module of
#: ``dpreg.estimators``, function), non-private references included. A module is imported
#: when one of its estimators is first looked up, so a workflow job imports the estimators
#: it runs, not every family and its SciPy solvers (``docs/scaling.md``, "Start-up of a
#: job"); listing the table's values imports them all.
_BUILTIN_SOURCES: dict[str, tuple[str, str]] = {
    # Non-private references
    "ols": ("ols", "fit_ols"),
    "2s_gd": ("iv", "fit_two_stage_gd"),
    "ambssgd_sgd": ("ambssgd", "fit_ambssgd_sgd"),
    # Lev et al. (2026) and its baselines
    "adassp": ("adassp", "fit_adassp"),
    "ihm": ("ihm", "fit_ihm"),
    "linear_mixing": ("sketch", "fit_linear_mixing"),
    "sheffet_sketch": ("sketch", "fit_sheffet_sketch"),
    # Brown et al. (2024)
    "dp_gd": ("dpgd", "fit_dp_gd"),
    # Varshney et al. (2022)
    "dp_ssgd": ("dp_ssgd", "fit_dp_ssgd"),
    "dp_ambssgd": ("ambssgd", "fit_dp_ambssgd"),
    "dp_ambssgd_fixedclip": ("ambssgd", "fit_dp_ambssgd_fixedclip"),
    "dp_ambssgd_oracleclip": ("ambssgd", "fit_dp_ambssgd_oracleclip"),
    "dp_sgd_poisson": ("dpsgd_poisson", "fit_dp_sgd_poisson"),
    # Choquette-Choo et al. (2023)
    "dp_ftrl": ("ftrl", "fit_dp_ftrl"),
    "dp_sgd_stream": ("ftrl", "fit_dp_sgd_stream"),
    # Liang et al. (2025)
    "dp_2s_gd": ("iv", "fit_dp_two_stage_gd"),
    "dp_2s_gd_beta": ("iv", "fit_dp_two_stage_gd_beta"),
}


#: Every built-in estimator by its config name (non-private references included),
#: read-only; each module is imported on first lookup.
BUILTIN_ESTIMATORS: Mapping[str, Callable[..., Any]] = LazyTable(
    "dpreg.estimators", _BUILTIN_SOURCES
)

#: Estimators added with :func:`register` (the built-in ones are never copied here).
_ADDED: dict[str, Callable[..., Any]] = {}


class _AllEstimators(Mapping[str, Callable[..., Any]]):
    """The built-in estimators followed by those added with :func:`register`."""

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name in _ADDED:
            return _ADDED[name]
        return BUILTIN_ESTIMATORS[name]

    def __iter__(self) -> Iterator[str]:
        yield from BUILTIN_ESTIMATORS
        yield from (name for name in _ADDED if name not in BUILTIN_ESTIMATORS)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, name: object) -> bool:
        return name in _ADDED or name in BUILTIN_ESTIMATORS


#: Read-only view of the registry: the built-in table plus estimators added with
#: :func:`register`.
ESTIMATORS: Mapping[str, Callable[..., Any]] = _AllEstimators()


def register(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """Add a user's estimator under ``name`` (for the workflow config and the audit).

    Parameters
    ----------
    name : str
        The config name; must not be taken.
    func : callable
        An estimator keeping the contract of ``docs/architecture.md``.

    Returns
    -------
    callable
        ``func``, unchanged.

    Examples
    --------
    >>> from dpreg.estimators.registry import ESTIMATORS, register
    >>> "ols" in ESTIMATORS
    True
    >>> register("ols", ESTIMATORS["adassp"])
    Traceback (most recent call last):
    ...
    ValueError: estimator name 'ols' is registered twice
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string; got {name!r}")
    if not callable(func):
        raise TypeError(f"func must be callable; got {func!r}")
    if name in ESTIMATORS and ESTIMATORS[name] is not func:
        raise ValueError(f"estimator name {name!r} is registered twice")
    if name not in BUILTIN_ESTIMATORS:
        _ADDED[name] = func
    return func


def get_estimator(name: str) -> Callable[..., Any]:
    """Return the estimator registered as ``name``; unknown names list the known ones.

    Examples
    --------
    >>> get_estimator("ols").__name__
    'fit_ols'
    """
    try:
        return ESTIMATORS[name]
    except KeyError:
        known = ", ".join(sorted(ESTIMATORS))
        raise ValueError(f"unknown estimator {name!r}; known estimators: {known}") from None
