# Stage "figures": seaborn figures drawn from aggregated tables only.


rule study_figure:
    input:
        table="results/tables/{paper}/{study}.csv",
    output:
        png=report(
            "results/figures/{paper}/{study}.png",
            caption="../report/study_figure.rst",
            category="Figures",
            labels={"paper": "{paper}", "study": "{study}"},
        ),
        pdf="results/figures/{paper}/{study}.pdf",
    log:
        "logs/figures/{paper}/{study}.log",
    conda:
        "../envs/dpreg.yaml"
    params:
        study=study_params,
        caption=lambda wildcards: study_caption(wildcards.study, config, "figure"),
    script:
        "../scripts/study_figure.py"


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
        caption=lambda wildcards: study_caption(
            wildcards.study, config, "figure", view=wildcards.view
        ),
    script:
        "../scripts/study_view_figure.py"
