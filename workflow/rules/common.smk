# Helpers shared by every rule: config checks, grids, seeds, parameter functions.

import os

from dpreg.config import (
    check_config_references,
    find_job,
    study_jobs,
    reference_datasets,
    study_datasets,
)
from dpreg.data.examples import EXAMPLE_TABLES
from dpreg.data.table import LOADERS as TABLE_LOADERS
from dpreg.experiments.captions import study_caption
from dpreg.experiments.claims import papers_with_claims
from dpreg.experiments.kinds import get_kind
from dpreg.seeds import job_seed

check_config_references(config)  # includes check_hyper_blocks


wildcard_constraints:
    dataset=r"[A-Za-z0-9_]+",
    study=r"[A-Za-z0-9_]+",
    paper=r"[A-Za-z0-9_]+",
    job=r"[0-9]+",
    view=r"[A-Za-z0-9_]+",
    example="|".join(EXAMPLE_TABLES),


def chunk_paths(study):
    """Every run file of a study: one per job (chunks_per_job chunks each)."""
    return [
        f"results/runs/{study}/job~{j:03d}.parquet" for j in range(len(study_jobs(config, study)))
    ]


def study_table_paths():
    return [
        f"results/tables/{spec['paper']}/{name}.csv" for name, spec in config["studies"].items()
    ]


def study_figure_paths():
    return [
        f"results/figures/{spec['paper']}/{name}.png" for name, spec in config["studies"].items()
    ]


def study_view_paths():
    """The extra tables and figures of every study whose kind has views."""
    paths = []
    for name, spec in config["studies"].items():
        kind = get_kind(spec["kind"])
        for view in kind.views:
            paths.append(f"results/tables/{spec['paper']}/{name}/{view}.csv")
        for view in kind.view_figures:
            paths.append(f"results/figures/{spec['paper']}/{name}/{view}.png")
    return paths


def benchmark_cost_paths():
    """The cost table of every study of kind benchmark (a measurement, not a result)."""
    return [
        f"results/benchmarks/{spec['paper']}/{name}_cost_summary.csv"
        for name, spec in config["studies"].items()
        if spec["kind"] == "benchmark"
    ]


def benchmark_cost_datasets(study):
    return study_datasets(config, study)


def benchmark_cost_tables(wildcards):
    return [f"resources/data/{name}.parquet" for name in benchmark_cost_datasets(wildcards.study)]


def benchmark_cost_params(wildcards):
    spec = config["studies"][wildcards.study]
    methods = (spec.get("params") or {}).get("methods") or (spec.get("grid") or {}).get("methods")
    return {
        "study": wildcards.study,
        "title": spec.get("title", wildcards.study),
        "datasets": benchmark_cost_datasets(wildcards.study),
        "methods": methods if isinstance(methods, list) else [methods],
        "epsilon": 1.0,
    }


def claim_paths():
    """The claims folder of every paper that has checks and studies in this config."""
    papers = {spec["paper"] for spec in config["studies"].values()}
    return [f"results/tables/{p}/claims" for p in papers_with_claims() if p in papers]


def paper_study_tables(wildcards):
    return [
        f"results/tables/{wildcards.paper}/{name}.csv"
        for name, spec in config["studies"].items()
        if spec["paper"] == wildcards.paper
    ]


def reference_paths():
    return [f"results/references/{name}.json" for name in reference_datasets(config)]


def all_targets():
    return (
        reference_paths()
        + study_table_paths()
        + study_figure_paths()
        + study_view_paths()
        + ["results/MANIFEST.sha256", "results/benchmarks/jobs.csv"]
        + benchmark_cost_paths()
        + estimator_benchmark_paths()
    )


def estimator_benchmark_paths():
    """The committed estimator benchmark table, copied into the report when present."""
    if os.path.exists("benchmarks/results/estimators.csv"):
        return ["results/benchmarks/estimators.csv"]
    return []


def dataset_spec(wildcards):
    return config["datasets"][wildcards.dataset]


def dataset_files(wildcards):
    """A table dataset's own files (table and codebook; docs/user-data.md), else none.

    Other datasets come from the manifest, fetched inside the job; a table is a local
    file, so it is an input: a rule can make it (export_example_table) and an edit reruns
    the dataset's jobs. Its sha256 is checked before any work in the job (and at the dry
    run when it exists).
    """
    spec = config["datasets"][wildcards.dataset]
    if spec["loader"] not in TABLE_LOADERS:
        return {}
    options = spec.get("options") or {}
    return {"user_table": options["path"], "codebook": options["codebook"]}


def test_row_datasets():
    """The datasets read by a study whose kind has uses_test_rows, sorted."""
    return sorted(
        {
            name
            for study, spec in config["studies"].items()
            if get_kind(spec["kind"]).uses_test_rows
            for name in study_datasets(config, study)
        }
    )


def test_row_dataset_pattern():
    """The dataset wildcard of prepare_dataset_with_test_rows: exactly those datasets."""
    names = test_row_datasets()
    return "|".join(names) if names else "(?!)"  # (?!): no dataset


def dataset_seed(wildcards):
    return job_seed(config["seed"], {"dataset": wildcards.dataset})


def job_chunks(wildcards):
    return find_job(config, wildcards.study, int(wildcards.job))


def _dataset_files(name, study):
    """The prepared table of ``name`` (and its test rows if the study's kind uses them)."""
    files = [f"resources/data/{name}.parquet", f"resources/data/{name}.json"]
    if get_kind(config["studies"][study]["kind"]).uses_test_rows:
        files += [f"resources/data/{name}.test.parquet", f"resources/data/{name}.test.json"]
    return files


def chunk_input(wildcards):
    """The prepared datasets a job's chunks read, if any (and their test rows, if used)."""
    names = dict.fromkeys(cell.params(config).get("dataset") for cell in job_chunks(wildcards))
    return [
        path for name in names if name is not None for path in _dataset_files(name, wildcards.study)
    ]


def chunk_params(wildcards):
    """Everything a job's chunks need, from config only (scripts never read config)."""
    uses_test_rows = get_kind(config["studies"][wildcards.study]["kind"]).uses_test_rows
    chunks = []
    for cell in job_chunks(wildcards):
        params = cell.params(config)
        name = params.get("dataset")
        chunks.append(
            {
                "path": cell.path,
                "cell": params,
                "blocks": cell.seeded_blocks(config["seed"]),
                "table": None if name is None else f"resources/data/{name}.parquet",
                "test_table": (
                    f"resources/data/{name}.test.parquet"
                    if name is not None and uses_test_rows
                    else None
                ),
            }
        )
    return {"kind": config["studies"][wildcards.study]["kind"], "chunks": chunks}


def study_params(wildcards):
    study = config["studies"][wildcards.study]
    return {
        "study": wildcards.study,
        "kind": study["kind"],
        "paper": study["paper"],
        "title": study.get("title", ""),
    }


def study_reference_paths(wildcards):
    return [f"results/references/{name}.json" for name in study_datasets(config, wildcards.study)]


def study_chunks(wildcards):
    return chunk_paths(wildcards.study)
