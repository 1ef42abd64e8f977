# Stage "report": a checksummed list of every artifact, next to `snakemake --report`.


rule artifact_manifest:
    input:
        reference_paths(),
        study_table_paths(),
        study_figure_paths(),
        study_view_paths(),
        claim_paths(),
    output:
        "results/MANIFEST.sha256",
    log:
        "logs/report/artifact_manifest.log",
    conda:
        "../envs/dpreg.yaml"
    script:
        "../scripts/artifact_manifest.py"


rule paper_claims:
    input:
        paper_study_tables,
    output:
        report(
            directory("results/tables/{paper}/claims"),
            patterns=["{name}.csv"],
            caption="../report/claims.rst",
            category="Claims",
            labels={"paper": "{paper}", "table": "{name}"},
        ),
    log:
        "logs/report/claims_{paper}.log",
    conda:
        "../envs/dpreg.yaml"
    params:
        paper="{paper}",
    script:
        "../scripts/paper_claims.py"


rule job_benchmarks:
    input:
        chunks=[path for study in config["studies"] for path in chunk_paths(study)],
    output:
        report(
            "results/benchmarks/jobs.csv",
            caption="../report/job_benchmarks.rst",
            category="Benchmarks",
        ),
    log:
        "logs/report/job_benchmarks.log",
    conda:
        "../envs/dpreg.yaml"
    script:
        "../scripts/job_benchmarks.py"


rule estimator_benchmarks:
    input:
        "benchmarks/results/estimators.csv",
    output:
        report(
            "results/benchmarks/estimators.csv",
            caption="../report/estimator_benchmarks.rst",
            category="Benchmarks",
        ),
    log:
        "logs/report/estimator_benchmarks.log",
    conda:
        "../envs/dpreg.yaml"
    shell:
        "cp {input} {output} 2> {log}"


# Seconds per fit of every method of a benchmark study, one thread: a measurement of this
# machine (like jobs.csv), so outside results/MANIFEST.sha256 and never a result input.
# It reads only the prepared data, so it runs beside the study's run jobs; only the
# summary beside the accuracy waits for the study's table (at the end of the run it
# was 14-21 s on the critical path; docs/scaling.md).
rule benchmark_cost:
    input:
        tables=benchmark_cost_tables,
    output:
        per_dataset="results/benchmarks/{paper}/{study}_cost.csv",
    log:
        "logs/report/{paper}/{study}_cost.log",
    conda:
        "../envs/dpreg.yaml"
    threads: 1
    params:
        cost=benchmark_cost_params,
    script:
        "../scripts/benchmark_cost.py"


rule benchmark_cost_summary:
    input:
        table="results/tables/{paper}/{study}.csv",
        per_dataset="results/benchmarks/{paper}/{study}_cost.csv",
    output:
        summary=report(
            "results/benchmarks/{paper}/{study}_cost_summary.csv",
            caption="../report/benchmark_cost.rst",
            category="Benchmarks",
        ),
        md="results/benchmarks/{paper}/{study}_cost_summary.md",
    log:
        "logs/report/{paper}/{study}_cost_summary.log",
    conda:
        "../envs/dpreg.yaml"
    params:
        cost=benchmark_cost_params,
    script:
        "../scripts/benchmark_cost_summary.py"
