"""The study-kind registry: one explicit table from config ``kind`` names to study kinds.

Adding a kind is one module defining a :class:`~dpreg.experiments.study_kind.StudyKind`
and one entry in ``_BUILTIN_SOURCES`` (``CONTRIBUTING.md``, "Add a study kind"). The
kind modules never import this module, so the imports are acyclic
(``docs/architecture.md``, "Layers").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from dpreg._lazy import LazyTable
from dpreg.experiments.study_kind import StudyKind, dataset_of

__all__ = ["BUILTIN_KINDS", "STUDY_KINDS", "StudyKind", "dataset_of", "get_kind", "register_kind"]

#: Where every built-in study kind is defined (kind name -> module of
#: ``dpreg.experiments``, attribute), in the order of the papers. A kind's module is
#: imported when the kind is first looked up, so a workflow job that runs one kind does
#: not import the others (and their plotting and statistics stacks); listing the table
#: imports them all.
_BUILTIN_SOURCES: dict[str, tuple[str, str]] = {
    "eps_grid": ("regression", "EPS_GRID"),
    "lev_table2": ("lev2026_table2", "TABLE2"),
    "lev_clipping": ("lev2026_clipping", "CLIPPING"),
    "lev_gamma_sweep": ("lev2026_gamma", "GAMMA_SWEEP"),
    "iv_synthetic": ("liang2025_synthetic", "IV_SYNTHETIC"),
    "iv_angrist": ("liang2025_angrist", "IV_ANGRIST"),
    "iv_bound_curve": ("liang2025_bound", "IV_BOUND_CURVE"),
    "brown_error_vs_dim": ("brown2024", "ERROR_VS_DIM"),
    "brown_cost_of_privacy": ("brown2024", "COST_OF_PRIVACY"),
    "brown_clip_heatmap": ("brown2024", "CLIP_HEATMAP"),
    "brown_bias_variance": ("brown2024", "BIAS_VARIANCE"),
    "brown_error_vs_clipping": ("brown2024", "ERROR_VS_CLIPPING"),
    "brown_ci": ("brown2024", "CI"),
    "varshney_sim": ("varshney2022", "SIM"),
    "varshney_diagnostics": ("varshney2022_diagnostics", "DIAGNOSTICS"),
    "ftrl_mean_ratio": ("choquettechoo2023", "MEAN_RATIO"),
    "ftrl_theory_table": ("choquettechoo2023", "THEORY_TABLE"),
    "ftrl_linreg_sim": ("choquettechoo2023", "LINREG_SIM"),
    "ftrl_socp_bound": ("choquettechoo2023", "SOCP_BOUND"),
    "ftrl_quoted": ("choquettechoo2023", "QUOTED"),
    "ftrl_digits": ("choquettechoo2023_digits", "DIGITS"),
    "ftrl_epochs": ("choquettechoo2023_epochs", "FTRL_EPOCHS"),
    "ftrl_iterate_bounds": ("choquettechoo2023_iterates", "ITERATE_BOUNDS"),
    "privacy_audit": ("privacy_audit", "PRIVACY_AUDIT"),
    "benchmark": ("benchmark", "BENCHMARK"),
    "ci_coverage": ("ci_coverage", "CI_COVERAGE"),
    "iv_table": ("dpreg_iv_table", "IV_TABLE"),
}


def _check_kind(name: str, kind: object, where: str) -> None:
    if not isinstance(kind, StudyKind) or kind.name != name:
        raise RuntimeError(f"{where} is not the study kind {name!r}")


#: Every built-in study kind, in the order of the papers (modules imported on lookup).
BUILTIN_KINDS: Mapping[str, StudyKind] = LazyTable(
    "dpreg.experiments", _BUILTIN_SOURCES, _check_kind
)


class _AllKinds(Mapping[str, StudyKind]):
    """The built-in kinds followed by those added with :func:`register_kind`."""

    def __init__(self, builtin: Mapping[str, StudyKind], added: dict[str, StudyKind]) -> None:
        self._builtin, self._added = builtin, added

    def __getitem__(self, name: str) -> StudyKind:
        if name in self._added:
            return self._added[name]
        return self._builtin[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._builtin
        yield from (name for name in self._added if name not in self._builtin)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, name: object) -> bool:
        return name in self._added or name in self._builtin


_ADDED: dict[str, StudyKind] = {}

#: Read-only view: the built-in kinds plus those added with :func:`register_kind`.
STUDY_KINDS: Mapping[str, StudyKind] = _AllKinds(BUILTIN_KINDS, _ADDED)


def register_kind(kind: StudyKind) -> StudyKind:
    """Add a user's study kind to :data:`STUDY_KINDS` (its name must be new)."""
    if not isinstance(kind, StudyKind):
        raise TypeError(f"kind must be a StudyKind; got {kind!r}")
    if kind.name in STUDY_KINDS and STUDY_KINDS[kind.name] is not kind:
        raise ValueError(f"study kind {kind.name!r} is registered twice")
    if kind.name not in BUILTIN_KINDS:
        _ADDED[kind.name] = kind
    return kind


def get_kind(name: str) -> StudyKind:
    """Return the study kind ``name``; an unknown name lists the known ones.

    Examples
    --------
    >>> get_kind("eps_grid").name
    'eps_grid'
    """
    try:
        return STUDY_KINDS[name]
    except KeyError:
        known = ", ".join(sorted(STUDY_KINDS))
        raise ValueError(f"unknown study kind {name!r}; known kinds: {known}") from None
