# Two commands on a fresh machine: `make run` (the whole paper-scale workflow) and
# `make test` (the test suite, including an end-to-end smoke run). Both bootstrap .venv.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Jobs at once: the machine's CPUs, at most 8. Each job is single-threaded, so more jobs
# than CPUs only share them: on 2 CPUs, eight jobs at once cost each about 7% more CPU than
# two (cache contention; docs/scaling.md, "Threads of a job"). `make run CORES=16`
# overrides it.
CORES ?= $(shell n=$$(nproc 2>/dev/null || echo 8); if [ "$$n" -lt 8 ]; then echo "$$n"; else echo 8; fi)

.PHONY: install run smoke slurm-smoke report test lint docs clean

$(BIN)/.dpreg-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -e ".[dev]"
	touch $@

# pip byte-compiles what it installs, but not an editable install's sources: without this
# every workflow job compiles the dpreg modules it imports whenever .pyc files cannot be
# written (PYTHONDONTWRITEBYTECODE, common in containers); about 2.5 ms per module, 0.1-0.2 s
# per job (docs/scaling.md, "Byte-compiled sources"). `compileall` skips what is up to date.
install: $(BIN)/.dpreg-installed
	$(BIN)/python -m compileall -q src

run: install
	$(BIN)/snakemake --cores $(CORES)
	$(BIN)/snakemake --report report.html

smoke: install
	$(BIN)/snakemake --cores $(CORES) --configfile config/smoke.yaml
	$(BIN)/snakemake --configfile config/smoke.yaml --report report.html

# The smoke config through a throw-away one-node SLURM on 127.0.0.1 (root, Debian/Ubuntu):
# what tests/workflow/test_workflow.py::test_slurm_run_equals_local_run does for a subset.
slurm-smoke: install
	bash .ci/slurm-cluster.sh install
	bash .ci/slurm-cluster.sh start || { bash .ci/slurm-cluster.sh stop; exit 1; }
	$(BIN)/snakemake --configfile config/smoke.yaml --executor slurm \
	  --workflow-profile workflow/profiles/slurm --default-resources slurm_partition=dpreg \
	  --slurm-status-command squeue --seconds-between-status-checks 2 \
	  --slurm-init-seconds-before-status-checks 2 --latency-wait 5 --jobs 4; \
	  status=$$?; bash .ci/slurm-cluster.sh stop; exit $$status

test: install
	$(BIN)/pytest --durations=20

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakefmt --check Snakefile workflow/
	$(BIN)/snakemake --lint
	$(BIN)/lint-imports
	$(BIN)/sphinx-build -W --keep-going -q -b html docs/api build/api

# The API reference (docs/api/*.rst, from the docstrings) into build/api/index.html.
docs: install
	$(BIN)/sphinx-build -W --keep-going -q -b html docs/api build/api

clean:
	rm -rf results resources logs benchmarks/runs .snakemake report.html
