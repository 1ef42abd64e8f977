# Stage "data": verified acquisition (mirror first, sha256 checked), preprocessing, and
# the non-private reference of each dataset.


# One job per dataset: the prepared table, and the non-private OLS (and 2SLS, where the
# dataset has instruments) reference with standard errors (statsmodels), computed from the
# table as written. They were separate jobs (and the test rows a third), each mostly Python
# start-up (docs/scaling.md, "Fewer, larger jobs").
rule prepare_dataset:
    input:
        unpack(dataset_files),
    output:
        table="resources/data/{dataset}.parquet",
        meta="resources/data/{dataset}.json",
        reference="results/references/{dataset}.json",
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


# The same job for a dataset read by a study whose kind has uses_test_rows
# (test_row_datasets in common.smk): it also writes the rows held out of the prepared table
# (same spec and seed, so the same split), transformed with the training rows' statistics.
# A dataset that holds no rows out gets an empty table (0 rows, n_test: 0 in the json).
# Other datasets never get test rows, so a study without them changes no job.
use rule prepare_dataset as prepare_dataset_with_test_rows with:
    output:
        table="resources/data/{dataset}.parquet",
        meta="resources/data/{dataset}.json",
        reference="results/references/{dataset}.json",
        test_table="resources/data/{dataset}.test.parquet",
        test_meta="resources/data/{dataset}.test.json",
    wildcard_constraints:
        dataset=test_row_dataset_pattern(),


ruleorder: prepare_dataset_with_test_rows > prepare_dataset


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
