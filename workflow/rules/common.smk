# Helpers shared by every rule: config checks, grids, seeds, parameter functions.

import os

from dpreg.config import check_config_references, eps_label, study_cells
from dpreg.seeds import job_seed

check_config_references(config)


wildcard_constraints:
    dataset=r"[A-Za-z0-9_]+",
    study=r"[A-Za-z0-9_]+",
    estimator=r"[A-Za-z0-9_]+",
    paper=r"[A-Za-z0-9_]+",
    eps=r"[0-9.e+-]+",
    chunk=r"[0-9]+",


def chunk_paths(study):
    """Every chunk file of a study."""
    return [
        f"results/runs/{study}/dataset~{cell.dataset}/estimator~{cell.estimator}/"
        f"eps~{cell.eps_label}/chunk~{cell.chunk:03d}.parquet"
        for cell in study_cells(config, study)
    ]


def study_table_paths():
    return [
        f"results/tables/{spec['paper']}/{name}.csv" for name, spec in config["studies"].items()
    ]


def study_figure_paths():
    return [
        f"results/figures/{spec['paper']}/{name}.png" for name, spec in config["studies"].items()
    ]


def reference_paths():
    return [f"results/references/{name}.json" for name in config["references"]["datasets"]]


def all_targets():
    return (
        reference_paths() + study_table_paths() + study_figure_paths() + ["results/MANIFEST.sha256"]
    )


def data_mirror():
    return os.environ.get("DPREG_DATA_MIRROR") or config["data"].get("mirror")


def dataset_spec(wildcards):
    return config["datasets"][wildcards.dataset]


def chunk_params(wildcards):
    """Everything a run chunk needs, from config only (scripts never read config)."""
    study = config["studies"][wildcards.study]
    cell = next(
        c
        for c in study_cells(config, wildcards.study)
        if c.dataset == wildcards.dataset
        and c.estimator == wildcards.estimator
        and c.eps_label == wildcards.eps
        and c.chunk == int(wildcards.chunk)
    )
    return {
        "study": wildcards.study,
        "kind": study["kind"],
        "dataset": cell.dataset,
        "estimator": cell.estimator,
        "hyper": study["estimators"][cell.estimator] or {},
        "epsilon": cell.epsilon,
        "delta": study["delta"],
        "trials": cell.trials,
        "first_trial": cell.first_trial,
        "bound_X": study.get("bound_X", 1.0),
        "bound_y": study.get("bound_y", 1.0),
        "conversion": config["conversion"],
    }


def chunk_seed(wildcards):
    return job_seed(config["seed"], dict(wildcards.items()))


def study_params(wildcards):
    study = config["studies"][wildcards.study]
    return {"study": wildcards.study, "paper": study["paper"], "title": study.get("title", "")}


def study_reference_paths(wildcards):
    study = config["studies"][wildcards.study]
    return [f"results/references/{name}.json" for name in study["datasets"]]


def study_chunks(wildcards):
    return chunk_paths(wildcards.study)
