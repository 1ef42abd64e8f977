# Stage "references": non-private OLS and 2SLS (statsmodels) with standard errors.


rule reference:
    input:
        table="resources/data/{dataset}.parquet",
        meta="resources/data/{dataset}.json",
    output:
        "results/references/{dataset}.json",
    log:
        "logs/references/{dataset}.log",
    conda:
        "../envs/dpreg.yaml"
    script:
        "../scripts/reference.py"
