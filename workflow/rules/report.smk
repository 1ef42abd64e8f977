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
rule benchmark_cost:
    input:
        table="results/tables/{paper}/{study}.csv",
        tables=benchmark_cost_tables,
    output:
        per_dataset="results/benchmarks/{paper}/{study}_cost.csv",
        summary=report(
            "results/benchmarks/{paper}/{study}_cost_summary.csv",
            caption="../report/benchmark_cost.rst",
            category="Benchmarks",
        ),
        md="results/benchmarks/{paper}/{study}_cost_summary.md",
    log:
        "logs/report/{paper}/{study}_cost.log",
    conda:
        "../envs/dpreg.yaml"
    threads: 1
    params:
        cost=benchmark_cost_params,
    script:
        "../scripts/benchmark_cost.py"
