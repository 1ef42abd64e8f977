"""The dataset-loader registry: one explicit table from dataset names to loaders.

The loader modules (:mod:`dpreg.data.uci`, :mod:`dpreg.data.lev2026`,
:mod:`dpreg.data.angrist`, :mod:`dpreg.data.regimes`, :mod:`dpreg.data.table`) each
expose a ``LOADERS`` table and never import this module, so the imports are acyclic. A
user's own loader is added with :func:`register_dataset`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from dpreg.data import angrist, lev2026, regimes, table, uci
from dpreg.data.datasets import Dataset

__all__ = [
    "BUILTIN_LOADERS",
    "DATASET_LOADERS",
    "Loader",
    "dataset_names",
    "load_dataset",
    "register_dataset",
]


Loader = Callable[..., Dataset]

#: Every built-in loader by dataset name: the uci_datasets sets, the Lev et al. (2026)
#: sets (``lev_*``), the Angrist-Evans samples, the synthetic benchmark designs
#: (``regime``) and a user's own table with its codebook (``table``, docs/user-data.md).
BUILTIN_LOADERS: Mapping[str, Loader] = MappingProxyType(
    {**uci.LOADERS, **lev2026.LOADERS, **angrist.LOADERS, **regimes.LOADERS, **table.LOADERS}
)

_REGISTRY: dict[str, Loader] = dict(BUILTIN_LOADERS)

#: Read-only live view of the registry: name -> ``loader(**options) -> Dataset``. Every
#: built-in loader accepts ``fetcher=`` (a callable ``entry_id -> Path``, e.g.
#: ``functools.partial(fetch, mirror=..., dest_dir=...)``); UCI loaders also ``split=``.
DATASET_LOADERS: Mapping[str, Loader] = MappingProxyType(_REGISTRY)


def register_dataset(name: str, loader: Loader, *, replace_existing: bool = False) -> None:
    """Register ``loader(**options) -> Dataset`` under ``name``.

    Parameters
    ----------
    name : str
        Registry key (lower case).
    loader : callable
        Called as ``loader(**options)``; must return a :class:`Dataset`.
    replace_existing : bool, default False
        Allow overriding an existing name.
    """
    if not replace_existing and name in _REGISTRY:
        raise ValueError(f"dataset {name!r} is already registered")
    _REGISTRY[name] = loader


def dataset_names() -> list[str]:
    """Return the registered dataset names, sorted."""
    return sorted(_REGISTRY)


def load_dataset(name: str, **options: Any) -> Dataset:
    """Load a registered dataset by name.

    Parameters
    ----------
    name : str
        One of :func:`dataset_names`: every ``uci_datasets`` set with data in the
        manifest (``"airfoil"``, ``"autompg"``, ...), ``"angrist_fertility"`` and
        ``"angev98"``, ``"regime"`` and ``"table"`` (a user's table with its codebook,
        :func:`dpreg.data.table.load_table`).
    **options
        Passed to the loader, e.g. ``fetcher=``, ``split=`` (UCI) or ``controls=``
        (Angrist).

    Returns
    -------
    Dataset

    Raises
    ------
    ValueError
        Unknown name (the message lists the known ones).
    """
    loader = _REGISTRY.get(name)
    if loader is None:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {', '.join(dataset_names())}")
    return loader(**options)
