# Stage "data": verified acquisition (mirror first, sha256 checked) and preprocessing.


rule prepare_dataset:
    output:
        table="resources/data/{dataset}.parquet",
        meta="resources/data/{dataset}.json",
    log:
        "logs/data/{dataset}.log",
    conda:
        "../envs/dpreg.yaml"
    # Only what the dataset is (its config entry and seed) is a parameter. Where its
    # files come from (DPREG_DATA_MIRROR, data.mirror, data.allow_download) is read
    # inside the job: a file's identity is its manifest sha256, so moving or unsetting
    # the mirror must not rebuild anything (tests/workflow: test_mirror_is_not_identity).
    params:
        spec=dataset_spec,
        seed=dataset_seed,
    script:
        "../scripts/prepare_dataset.py"
