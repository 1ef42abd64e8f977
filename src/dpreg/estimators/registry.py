"""Name -> estimator function registry; the workflow config names estimators by these keys."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ESTIMATORS: dict[str, Callable[..., Any]] = {}


def register(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register an estimator function under ``name`` (decorator)."""

    def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
        if name in ESTIMATORS and ESTIMATORS[name] is not func:
            raise ValueError(f"estimator name {name!r} is registered twice")
        ESTIMATORS[name] = func
        return func

    return decorator


def get_estimator(name: str) -> Callable[..., Any]:
    """Return the estimator registered as ``name``; unknown names list the known ones."""
    try:
        return ESTIMATORS[name]
    except KeyError:
        known = ", ".join(sorted(ESTIMATORS))
        raise ValueError(f"unknown estimator {name!r}; known estimators: {known}") from None
