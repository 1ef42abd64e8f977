# Stage "figures": the extra figures of a study (its kind's views), drawn from its table
# only (the main figure is drawn by study_table, from the table it wrote).


rule study_view_figure:
    input:
        table="results/tables/{paper}/{study}.csv",
    output:
        png=report(
            "results/figures/{paper}/{study}/{view}.png",
            caption="../report/study_figure.rst",
            category="Figures",
            labels={"paper": "{paper}", "study": "{study}", "view": "{view}"},
        ),
        pdf="results/figures/{paper}/{study}/{view}.pdf",
    log:
        "logs/figures/{paper}/{study}/{view}.log",
    conda:
        "../envs/dpreg.yaml"
    params:
        study=study_params,
        figure_caption=lambda wildcards: study_caption(
            wildcards.study, config, "figure", view=wildcards.view
        ),
    script:
        "../scripts/study_view_figure.py"
