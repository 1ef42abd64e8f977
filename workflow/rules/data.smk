# Stage "data": verified acquisition (mirror first, sha256 checked) and preprocessing.


rule prepare_dataset:
    input:
        unpack(dataset_files),
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


# The rows held out of the prepared table (same spec and seed, so the same split),
# transformed with the training rows' statistics; requested only by the chunks of a study
# whose kind has uses_test_rows (chunk_input in common.smk). A dataset that holds no rows
# out gets an empty table (0 rows, n_test: 0 in the json). prepare_dataset is unchanged.
rule prepare_test_rows:
    input:
        unpack(dataset_files),
    output:
        table="resources/data/{dataset}.test.parquet",
        meta="resources/data/{dataset}.test.json",
    log:
        "logs/data/{dataset}.test.log",
    conda:
        "../envs/dpreg.yaml"
    # As prepare_dataset: the dataset's identity only, never where its files come from.
    params:
        spec=dataset_spec,
        seed=dataset_seed,
    script:
        "../scripts/prepare_test_rows.py"


# An example user table (docs/user-data.md): the data of an installed package written as a
# CSV with deterministic bytes (dpreg.data.examples), so that the smoke config can pin its
# sha256 beside a committed codebook without committing or downloading a data file.
rule export_example_table:
    output:
        "resources/user/{example}.csv",
    log:
        "logs/user/{example}.log",
    conda:
        "../envs/dpreg.yaml"
    script:
        "../scripts/export_example_table.py"
