# Stage "runs": one job per (study, dataset, estimator, grid point, chunk of trials).


rule run_chunk:
    input:
        table="resources/data/{dataset}.parquet",
    output:
        "results/runs/{study}/dataset~{dataset}/estimator~{estimator}/eps~{eps}/chunk~{chunk}.parquet",
    params:
        cell=chunk_params,
        seed=chunk_seed,
    log:
        "logs/runs/{study}/{dataset}/{estimator}/eps~{eps}/chunk~{chunk}.log",
    benchmark:
        "benchmarks/runs/{study}/{dataset}/{estimator}/eps~{eps}/chunk~{chunk}.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/dpreg.yaml"
    script:
        "../scripts/run_chunk.py"
