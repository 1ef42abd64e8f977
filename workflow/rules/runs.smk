# Stage "runs": one job per chunks_per_job consecutive chunks (grid cell x trials) of a
# study, run in one process (dpreg.config.study_jobs); one parquet file per job.


rule run_chunk:
    input:
        chunk_input,
    output:
        rows="results/runs/{study}/job~{job}.parquet",
        # Snakemake's benchmark format, measured by the job itself at its end
        # (dpreg.benchmarks.write_process_benchmark): the benchmark: directive samples
        # the job, misses what happens between samples, and costs the main process CPU.
        usage="benchmarks/runs/{study}/job~{job}.tsv",
    log:
        "logs/runs/{study}/job~{job}.log",
    conda:
        "../envs/dpreg.yaml"
    threads: 1
    resources:
        mem_mb=2000,  # largest paper-scale job: 1,406 MB (workflow/profiles/slurm)
        runtime=30,
    params:
        run=chunk_params,
    script:
        "../scripts/run_chunk.py"
