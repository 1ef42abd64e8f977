# Stage "runs": one job per (study, grid cell, chunk of trials).


rule run_chunk:
    input:
        unpack(chunk_input),
    output:
        "results/runs/{study}/{cell}/chunk~{chunk}.parquet",
    log:
        "logs/runs/{study}/{cell}/chunk~{chunk}.log",
    benchmark:
        "benchmarks/runs/{study}/{cell}/chunk~{chunk}.tsv"
    conda:
        "../envs/dpreg.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        run=chunk_params,
    script:
        "../scripts/run_chunk.py"
