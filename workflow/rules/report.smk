# Stage "report": a checksummed list of every artifact, next to `snakemake --report`.


rule artifact_manifest:
    input:
        reference_paths(),
        study_table_paths(),
        study_figure_paths(),
    output:
        "results/MANIFEST.sha256",
    log:
        "logs/report/artifact_manifest.log",
    conda:
        "../envs/dpreg.yaml"
    script:
        "../scripts/artifact_manifest.py"
