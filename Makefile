# Two commands on a fresh machine: `make run` (the whole paper-scale workflow) and
# `make test` (the test suite, including an end-to-end smoke run). Both bootstrap .venv.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORES ?= 8

.PHONY: install run smoke report test lint clean

$(BIN)/.dpreg-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -e ".[dev]"
	touch $@

install: $(BIN)/.dpreg-installed

run: install
	$(BIN)/snakemake --cores $(CORES)
	$(BIN)/snakemake --report report.html

smoke: install
	$(BIN)/snakemake --cores $(CORES) --configfile config/smoke.yaml
	$(BIN)/snakemake --configfile config/smoke.yaml --report report.html

test: install
	$(BIN)/pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakefmt --check Snakefile workflow/
	$(BIN)/snakemake --lint

clean:
	rm -rf results resources logs benchmarks/runs .snakemake report.html
