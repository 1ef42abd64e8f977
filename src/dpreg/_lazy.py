"""Package attributes imported on first use (PEP 562), to keep a job's start-up small.

A workflow job is a fresh Python process: every module its imports pull in is paid for
again by each of the run's jobs (``docs/scaling.md``, "Start-up of a job"). A package
whose ``__init__`` re-exports names from heavy modules (SciPy solvers, the data loaders)
instead lists where each name lives and imports that module when the name is first read.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["LazyTable", "defer_module", "defer_numpy_tool_modules", "lazy_attributes"]


def lazy_attributes(
    package: str, sources: Mapping[str, str], namespace: dict[str, Any], public: list[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return a package's ``__getattr__`` and ``__dir__`` importing names on first use.

    Parameters
    ----------
    package : str
        The package's name (its ``__name__``).
    sources : Mapping[str, str]
        Public name -> the submodule of ``package`` that defines it.
    namespace : dict
        The package's ``globals()``: a name, once imported, is stored there, so later
        reads do not call ``__getattr__`` again.
    public : list of str
        The package's ``__all__``.

    Returns
    -------
    (getattr, dir)
        ``getattr(name)`` imports the module defining ``name`` (or, for a submodule's
        name such as ``dpreg.data.uci``, the submodule itself, as an eager ``__init__``
        would have) and returns the attribute; an unknown name raises
        :class:`AttributeError`.

    Examples
    --------
    >>> getattr_, dir_ = lazy_attributes("json", {"JSONEncoder": "encoder"}, {}, ["JSONEncoder"])
    >>> getattr_("JSONEncoder").__name__
    'JSONEncoder'
    >>> getattr_("nothing")
    Traceback (most recent call last):
    ...
    AttributeError: module 'json' has no attribute 'nothing'
    """

    def __getattr__(name: str) -> Any:
        module = sources.get(name)
        if module is not None:
            value = getattr(importlib.import_module(f"{package}.{module}"), name)
        elif not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}"):
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__


class LazyTable(Mapping[str, Any]):
    """Read-only mapping name -> object, importing the object's module on first lookup.

    The registries of estimators, study kinds and claim checks are such tables: a
    workflow job imports the one module it looks up, not every family's.

    Parameters
    ----------
    package : str
        The package whose submodules define the objects.
    sources : Mapping[str, tuple[str, str]]
        Name -> (submodule of ``package``, attribute).
    check : callable, optional
        ``check(name, value, where)`` called once per name on its first lookup (raise to
        refuse a value); the value is then kept.

    Examples
    --------
    >>> table = LazyTable("json", {"encoder": ("encoder", "JSONEncoder")})
    >>> table["encoder"].__name__, list(table), "nothing" in table
    ('JSONEncoder', ['encoder'], False)
    """

    def __init__(
        self,
        package: str,
        sources: Mapping[str, tuple[str, str]],
        check: Callable[[str, Any, str], None] | None = None,
    ) -> None:
        self._package = package
        self._sources = dict(sources)
        self._check = check
        self._loaded: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            module, attribute = self._sources[name]  # KeyError for an unknown name
            where = f"{self._package}.{module}"
            value = getattr(importlib.import_module(where), attribute)
            if self._check is not None:
                self._check(name, value, f"{where}.{attribute}")
            self._loaded[name] = value
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sources)

    def __len__(self) -> int:
        return len(self._sources)

    def __contains__(self, name: object) -> bool:
        return name in self._sources


def defer_module(name: str) -> bool:
    """Put a lazy module in place of ``name``: its code runs on first attribute access.

    The module object (``importlib.util.LazyLoader``) is entered in ``sys.modules`` and
    bound on its parent package, as ``import a.b`` binds it, so an ``import`` or a
    ``hasattr`` that only asks whether the module exists does not execute it; the first
    read of one of its attributes does, and from then on it is the ordinary module.

    Parameters
    ----------
    name : str
        A submodule's dotted name (``"numpy.f2py"``); its parent package is imported.

    Returns
    -------
    bool
        Whether it was deferred (not when it is already imported or cannot be found).

    Examples
    --------
    >>> import subprocess, sys
    >>> code = (
    ...     "import sys, json; from dpreg._lazy import defer_module;"
    ...     "print(defer_module('json.tool'), hasattr(json, 'tool'),"
    ...     " 'argparse' in sys.modules);"
    ...     "import json.tool; print(callable(json.tool.main), 'argparse' in sys.modules)"
    ... )
    >>> print(subprocess.run([sys.executable, "-c", code], capture_output=True,
    ...                      text=True, check=True).stdout.strip())
    True True False
    True True
    """
    parent, _, child = name.rpartition(".")
    if name in sys.modules or not parent:
        return False
    try:
        spec = importlib.util.find_spec(name)  # imports the parent package
    except ModuleNotFoundError:
        return False
    if spec is None or spec.loader is None:
        return False
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    setattr(sys.modules[parent], child, module)
    return True


#: numpy submodules that only tools and tests use, but that SciPy's array-API layer
#: (``scipy._lib.array_api_compat.numpy``, imported with ``scipy.special``) imports by
#: asking ``hasattr(numpy, name)`` of every name in ``dir(numpy)``.
NUMPY_TOOL_MODULES = ("numpy.f2py", "numpy.testing")


def defer_numpy_tool_modules() -> list[str]:
    """Defer :data:`NUMPY_TOOL_MODULES` for a workflow job (start-up, docs/scaling.md).

    ``import scipy.special`` (and so ``scipy.stats``, ``scipy.optimize``, ...) executes
    ``numpy.f2py`` and ``numpy.testing`` through SciPy's array-API layer, about 0.09 s of
    CPU that no job uses. The workflow's job scripts call this first; the modules stay
    importable and work as before (the first attribute read runs them). A library user's
    process is never changed.

    Returns
    -------
    list of str
        The modules deferred.

    Examples
    --------
    >>> import subprocess, sys
    >>> code = (
    ...     "import sys; from dpreg._lazy import defer_numpy_tool_modules;"
    ...     "deferred = defer_numpy_tool_modules(); import scipy.special;"
    ...     "print(deferred, type(sys.modules['numpy.f2py']).__name__);"
    ...     "from numpy.testing import assert_equal; assert_equal(1, 1);"
    ...     "print(type(sys.modules['numpy.testing']).__name__)"
    ... )
    >>> print(subprocess.run([sys.executable, "-c", code], capture_output=True,
    ...                      text=True, check=True).stdout.strip())
    ['numpy.f2py', 'numpy.testing'] _LazyModule
    module
    """
    return [name for name in NUMPY_TOOL_MODULES if defer_module(name)]
