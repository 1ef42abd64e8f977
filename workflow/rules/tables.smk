# Stage "tables": aggregate the trials of a study into a tidy table (csv + markdown), and
# draw the study's figure from that table as written (one job: a job is mostly start-up).


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
        png=report(
            "results/figures/{paper}/{study}.png",
            caption="../report/study_figure.rst",
            category="Figures",
            labels={"paper": "{paper}", "study": "{study}"},
        ),
        pdf="results/figures/{paper}/{study}.pdf",
    log:
        "logs/tables/{paper}/{study}.log",
    conda:
        "../envs/dpreg.yaml"
    params:
        study=study_params,
        table_caption=lambda wildcards: study_caption(wildcards.study, config, "table"),
        figure_caption=lambda wildcards: study_caption(wildcards.study, config, "figure"),
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
        table_caption=lambda wildcards: study_caption(
            wildcards.study, config, "table", view=wildcards.view
        ),
    script:
        "../scripts/study_view.py"
