# Stage "data": verified acquisition (mirror first, sha256 checked) and preprocessing.


rule prepare_dataset:
    output:
        table="resources/data/{dataset}.parquet",
        meta="resources/data/{dataset}.json",
    log:
        "logs/data/{dataset}.log",
    conda:
        "../envs/dpreg.yaml"
    params:
        spec=dataset_spec,
        seed=dataset_seed,
        mirror=data_mirror(),
        allow_download=config["data"].get("allow_download", True),
        download_dir="resources/downloads",
    script:
        "../scripts/prepare_dataset.py"
