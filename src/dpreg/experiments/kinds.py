"""The study-kind registry: one explicit table from config ``kind`` names to study kinds.

Adding a kind is one module defining a :class:`~dpreg.experiments.study_kind.StudyKind`
and one entry in :data:`BUILTIN_KINDS` (``CONTRIBUTING.md``, "Add a study kind"). The
kind modules never import this module, so the imports are acyclic
(``docs/architecture.md``, "Layers").
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from dpreg.experiments import (
    benchmark,
    brown2024,
    choquettechoo2023,
    choquettechoo2023_digits,
    choquettechoo2023_epochs,
    ci_coverage,
    dpreg_iv_table,
    lev2026_clipping,
    lev2026_gamma,
    lev2026_table2,
    liang2025_angrist,
    liang2025_bound,
    liang2025_synthetic,
    privacy_audit,
    regression,
    varshney2022,
    varshney2022_diagnostics,
)
from dpreg.experiments.study_kind import StudyKind, dataset_of

__all__ = ["BUILTIN_KINDS", "STUDY_KINDS", "StudyKind", "dataset_of", "get_kind", "register_kind"]

#: Every built-in study kind, in the order of the papers.
BUILTIN_KINDS: Mapping[str, StudyKind] = MappingProxyType(
    {
        kind.name: kind
        for kind in (
            regression.EPS_GRID,
            lev2026_table2.TABLE2,
            lev2026_clipping.CLIPPING,
            lev2026_gamma.GAMMA_SWEEP,
            liang2025_synthetic.IV_SYNTHETIC,
            liang2025_angrist.IV_ANGRIST,
            liang2025_bound.IV_BOUND_CURVE,
            brown2024.ERROR_VS_DIM,
            brown2024.COST_OF_PRIVACY,
            brown2024.CLIP_HEATMAP,
            brown2024.BIAS_VARIANCE,
            brown2024.ERROR_VS_CLIPPING,
            brown2024.CI,
            varshney2022.SIM,
            varshney2022_diagnostics.DIAGNOSTICS,
            choquettechoo2023.MEAN_RATIO,
            choquettechoo2023.THEORY_TABLE,
            choquettechoo2023.LINREG_SIM,
            choquettechoo2023.SOCP_BOUND,
            choquettechoo2023.QUOTED,
            choquettechoo2023_digits.DIGITS,
            choquettechoo2023_epochs.FTRL_EPOCHS,
            privacy_audit.PRIVACY_AUDIT,
            benchmark.BENCHMARK,
            ci_coverage.CI_COVERAGE,
            dpreg_iv_table.IV_TABLE,
        )
    }
)

_KINDS: dict[str, StudyKind] = dict(BUILTIN_KINDS)

#: Read-only view: the built-in kinds plus those added with :func:`register_kind`.
STUDY_KINDS: Mapping[str, StudyKind] = MappingProxyType(_KINDS)


def register_kind(kind: StudyKind) -> StudyKind:
    """Add a user's study kind to :data:`STUDY_KINDS` (its name must be new)."""
    if not isinstance(kind, StudyKind):
        raise TypeError(f"kind must be a StudyKind; got {kind!r}")
    if kind.name in _KINDS and _KINDS[kind.name] is not kind:
        raise ValueError(f"study kind {kind.name!r} is registered twice")
    _KINDS[kind.name] = kind
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
