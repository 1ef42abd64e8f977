"""Workflow configuration helpers: cross-reference checks and the grid of study cells.

The JSON schema (``workflow/schemas/config.schema.yaml``) checks types and unknown keys;
this module checks what a schema cannot: that every dataset a study names is
declared, every estimator is registered, every loader exists.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Cell:
    """One job of a study: a grid point and a contiguous chunk of trials."""

    study: str
    dataset: str
    estimator: str
    epsilon: float
    eps_label: str
    chunk: int
    first_trial: int
    trials: int


def eps_label(value: float) -> str:
    """Path label of a grid value: 6 significant digits (``0.251189``)."""
    return f"{float(value):.6g}"


def check_config_references(config: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` naming the offending key when a config refers to nothing."""
    from dpreg.data import DATASET_LOADERS
    from dpreg.estimators import ESTIMATORS

    datasets = config.get("datasets", {})
    for name, spec in datasets.items():
        if spec["loader"] not in DATASET_LOADERS:
            known = ", ".join(sorted(DATASET_LOADERS))
            raise ValueError(
                f"config datasets.{name}.loader: unknown dataset loader {spec['loader']!r};"
                f" known loaders: {known}"
            )
    for name in config.get("references", {}).get("datasets", []):
        if name not in datasets:
            raise ValueError(f"config references.datasets: {name!r} is not declared under datasets")
    for study, spec in config.get("studies", {}).items():
        for name in spec["datasets"]:
            if name not in datasets:
                raise ValueError(
                    f"config studies.{study}.datasets: {name!r} is not declared under datasets"
                )
        for est in spec["estimators"]:
            if est not in ESTIMATORS:
                known = ", ".join(sorted(ESTIMATORS))
                raise ValueError(
                    f"config studies.{study}.estimators: unknown estimator {est!r};"
                    f" known estimators: {known}"
                )
        labels = [eps_label(e) for e in spec["epsilon"]]
        if len(set(labels)) != len(labels):
            raise ValueError(
                f"config studies.{study}.epsilon: values collide at 6 significant digits"
            )
        delta = spec["delta"]
        if delta["rule"] == "fixed" and "value" not in delta:
            raise ValueError(f"config studies.{study}.delta: rule 'fixed' needs a value")


def study_cells(config: Mapping[str, Any], study: str) -> Iterator[Cell]:
    """Yield every cell of ``study``: datasets x estimators x epsilon x chunks."""
    spec = config["studies"][study]
    trials, size = int(spec["trials"]), int(spec["chunk_size"])
    n_chunks = math.ceil(trials / size)
    for dataset in spec["datasets"]:
        for estimator in spec["estimators"]:
            for epsilon in spec["epsilon"]:
                for chunk in range(n_chunks):
                    first = chunk * size
                    yield Cell(
                        study=study,
                        dataset=dataset,
                        estimator=estimator,
                        epsilon=float(epsilon),
                        eps_label=eps_label(epsilon),
                        chunk=chunk,
                        first_trial=first,
                        trials=min(size, trials - first),
                    )
