# Stage "runs": one job per (study, dataset, estimator, grid point, chunk of trials).


rule run_chunk:
    input:
        table="resources/data/{dataset}.parquet",
    output:
        "results/runs/{study}/dataset~{dataset}/estimator~{estimator}/eps~{eps}/chunk~{chunk}.parquet",
    log:
        "logs/runs/{study}/{dataset}/{estimator}/eps~{eps}/chunk~{chunk}.log",
    benchmark:
        "benchmarks/runs/{study}/{dataset}/{estimator}/eps~{eps}/chunk~{chunk}.tsv"
    conda:
        "../envs/dpreg.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        cell=chunk_params,
        seed=chunk_seed,
    script:
        "../scripts/run_chunk.py"
