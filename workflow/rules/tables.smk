# Stage "tables": aggregate the trials of a study into a tidy table (csv + markdown).


rule study_table:
    input:
        chunks=study_chunks,
        references=study_reference_paths,
    output:
        csv=report(
            "results/tables/{paper}/{study}.csv",
            caption="../report/study_table.rst",
            category="Tables",
            labels={"paper": "{paper}", "study": "{study}"},
        ),
        md="results/tables/{paper}/{study}.md",
        trials="results/tables/{paper}/{study}.trials.parquet",
    log:
        "logs/tables/{paper}/{study}.log",
    conda:
        "../envs/dpreg.yaml"
    params:
        study=study_params,
        caption=lambda wildcards: study_caption(wildcards.study, config, "table"),
    script:
        "../scripts/study_table.py"


rule study_view:
    input:
        table="results/tables/{paper}/{study}.csv",
    output:
        csv=report(
            "results/tables/{paper}/{study}/{view}.csv",
            caption="../report/study_table.rst",
            category="Tables",
            labels={"paper": "{paper}", "study": "{study}", "view": "{view}"},
        ),
        md="results/tables/{paper}/{study}/{view}.md",
    log:
        "logs/tables/{paper}/{study}/{view}.log",
    conda:
        "../envs/dpreg.yaml"
    params:
        study=study_params,
        caption=lambda wildcards: study_caption(
            wildcards.study, config, "table", view=wildcards.view
        ),
    script:
        "../scripts/study_view.py"
