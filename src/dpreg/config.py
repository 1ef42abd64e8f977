"""Workflow configuration helpers: cross-reference checks and the grid of study cells.

The JSON schema (``workflow/schemas/config.schema.yaml``) checks types and unknown
top-level keys; this module checks what a schema cannot: that every dataset a study
names is declared, that each study's keys are the ones its kind accepts, that every
estimator is registered and every loader exists.

A study's cells are the cartesian product of its ``grid`` axes (in config order), each
split into chunks of ``chunk_size`` trials. A workflow *job* runs ``chunks_per_job``
consecutive chunks of one study (cells in grid order, chunks within a cell in order) in
one process and writes one parquet file ``results/runs/<study>/job~NNN.parquet``
(:func:`study_jobs`): fewer, larger jobs where a job would be mostly start-up, the
chunks themselves (and so every number) unchanged.

Seeds belong to *seed blocks* of trials, not to chunks: block ``b`` of a cell holds the
global trials ``[b B, (b + 1) B)`` (``B`` = the study's ``seed_block``) and draws from the
seed of ``(study, cell, block)`` (:func:`dpreg.seeds.block_seed`). A chunk is a union of
whole blocks (``chunk_size`` must be a multiple of ``seed_block`` unless one chunk holds
every trial), so changing ``chunk_size`` never changes a result, and raising ``trials``
keeps the draws of the trials already run (except those of a partial last block).
"""

from __future__ import annotations

import inspect
import itertools
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dpreg._yaml import load_unique_keys

LABEL_PATTERN = re.compile(r"^[A-Za-z0-9_.+-]+$")
GLOBAL_CELL_KEYS = frozenset({"conversion"})
"""Keys the workflow adds to every cell from the top level of the config."""
DEFAULT_SEED_BLOCK = 100
"""Trials per seed block when a study sets no ``seed_block``."""


@dataclass(frozen=True)
class Cell:
    """One grid point of a study and one contiguous chunk of its trials."""

    study: str
    path: str
    values: tuple[tuple[str, Any], ...]
    chunk: int
    first_trial: int
    trials: int
    seed_block: int = DEFAULT_SEED_BLOCK

    def blocks(self) -> list[tuple[int, int, int]]:
        """Return the chunk's seed blocks as ``(block, first_trial, trials)``.

        Blocks are aligned on global trial indices (block ``b`` starts at trial
        ``b * seed_block``), so they do not depend on the chunk size.
        """
        out = []
        first, end = self.first_trial, self.first_trial + self.trials
        while first < end:
            block = first // self.seed_block
            stop = min((block + 1) * self.seed_block, end)
            out.append((block, first, stop - first))
            first = stop
        return out

    def seeded_blocks(self, master_seed: int) -> list[dict[str, int]]:
        """Return ``{"first_trial", "trials", "seed"}`` per seed block of this chunk."""
        from dpreg.seeds import block_seed

        return [
            {
                "first_trial": first,
                "trials": trials,
                "seed": block_seed(master_seed, self.study, self.seed_key, block),
            }
            for block, first, trials in self.blocks()
        ]

    @property
    def seed_key(self) -> str:
        """Return the cell's path with its ``axis~label`` parts sorted.

        Seeds use this key, so they do not depend on the order in which a config lists
        the grid axes (the folder path does).
        """
        return "/".join(sorted(self.path.split("/")))

    def params(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Return the cell's full parameters: study params, grid values, global keys."""
        spec = config["studies"][self.study]
        cell = dict(spec.get("params") or {})
        cell.update(dict(self.values))
        cell["conversion"] = config["conversion"]
        return cell


def value_label(value: Any) -> str:
    """Path label of a grid value: numbers with 6 significant digits, lists joined by ``_``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        if isinstance(value, float) and math.isinf(value):
            return "inf"
        return f"{float(value):.6g}" if isinstance(value, float) else str(value)
    if isinstance(value, list | tuple):
        return "_".join(value_label(v) for v in value)
    label = str(value)
    if not LABEL_PATTERN.match(label):
        raise ValueError(f"grid value {value!r} cannot be a path label (use [A-Za-z0-9_.+-])")
    return label


def eps_label(value: float) -> str:
    """Path label of a numeric grid value (kept for callers that format one number)."""
    return value_label(float(value))


def disabled_datasets(config: Mapping[str, Any]) -> frozenset[str]:
    """Datasets switched off with ``enabled: false`` (e.g. those that need a download)."""
    return frozenset(
        name for name, spec in config.get("datasets", {}).items() if not spec.get("enabled", True)
    )


def grid_points(
    spec: Mapping[str, Any], skip: frozenset[str] = frozenset()
) -> Iterator[tuple[str, tuple[tuple[str, Any], ...]]]:
    """Yield ``(path, ((axis, value), ...))`` for every point of a study's grid.

    Values of the ``dataset`` axis listed in ``skip`` (disabled datasets) are left out.
    """
    grid = dict(spec.get("grid") or {})
    if "dataset" in grid:
        grid["dataset"] = [d for d in grid["dataset"] if d not in skip]
    axes = list(grid)
    for combo in itertools.product(*(grid[a] for a in axes)):
        values = tuple(zip(axes, combo, strict=True))
        path = "/".join(f"{a}~{value_label(v)}" for a, v in values) or "all"
        yield path, values


def study_seed_block(spec: Mapping[str, Any]) -> int:
    """Return the study's ``seed_block`` (default :data:`DEFAULT_SEED_BLOCK`)."""
    return int(spec.get("seed_block", DEFAULT_SEED_BLOCK))


def check_chunking(study: str, spec: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` unless every chunk of ``study`` is a union of whole seed blocks."""
    trials, size, block = int(spec["trials"]), int(spec["chunk_size"]), study_seed_block(spec)
    if block < 1:
        raise ValueError(f"config studies.{study}.seed_block: must be >= 1; got {block}")
    if size < trials and size % block:
        raise ValueError(
            f"config studies.{study}: chunk_size {size} is not a multiple of seed_block {block};"
            " a chunk must hold whole seed blocks so that results do not depend on chunking"
            " (use a multiple, or one chunk of all trials)"
        )


def study_cells(config: Mapping[str, Any], study: str) -> Iterator[Cell]:
    """Yield every cell x chunk of ``study``."""
    spec = config["studies"][study]
    trials, size = int(spec["trials"]), int(spec["chunk_size"])
    block = study_seed_block(spec)
    n_chunks = math.ceil(trials / size)
    for path, values in grid_points(spec, disabled_datasets(config)):
        for chunk in range(n_chunks):
            first = chunk * size
            yield Cell(study, path, values, chunk, first, min(size, trials - first), block)


def find_cell(config: Mapping[str, Any], study: str, path: str, chunk: int) -> Cell:
    """Return the cell of ``study`` at ``path`` and ``chunk`` (ValueError if none)."""
    for cell in study_cells(config, study):
        if cell.path == path and cell.chunk == chunk:
            return cell
    raise ValueError(f"study {study!r} has no cell {path!r} chunk {chunk}")


DEFAULT_CHUNKS_PER_JOB = 1
"""Chunks per workflow job when neither the study nor the config sets ``chunks_per_job``."""


def study_chunks_per_job(config: Mapping[str, Any], study: str) -> int:
    """Return how many chunks one job of ``study`` runs.

    The study's ``chunks_per_job``, else the config's top-level ``chunks_per_job``, else
    :data:`DEFAULT_CHUNKS_PER_JOB`; a positive integer (``ValueError`` naming the key).
    """
    spec = config["studies"][study]
    if "chunks_per_job" in spec:
        value, key = spec["chunks_per_job"], f"config studies.{study}.chunks_per_job"
    else:
        value = config.get("chunks_per_job", DEFAULT_CHUNKS_PER_JOB)
        key = "config chunks_per_job"
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{key}: must be a positive integer; got {value!r}")
    return value


def study_jobs(config: Mapping[str, Any], study: str) -> list[tuple[Cell, ...]]:
    """Return the jobs of ``study``: runs of :func:`study_chunks_per_job` consecutive chunks.

    The chunks are those of :func:`study_cells`, in its order; the last job may hold
    fewer. Grouping chunks into jobs changes no draw (seeds belong to seed blocks).

    Examples
    --------
    >>> config = {"conversion": "exact", "chunks_per_job": 2, "studies": {"s": {
    ...     "paper": "dpreg", "kind": "k", "trials": 4, "chunk_size": 2,
    ...     "grid": {"eps": [1.0, 2.0, 4.0]}}}}
    >>> [[(c.path, c.chunk) for c in job] for job in study_jobs(config, "s")]
    [[('eps~1', 0), ('eps~1', 1)], [('eps~2', 0), ('eps~2', 1)], [('eps~4', 0), ('eps~4', 1)]]
    """
    size = study_chunks_per_job(config, study)
    cells = list(study_cells(config, study))
    return [tuple(cells[i : i + size]) for i in range(0, len(cells), size)]


def find_job(config: Mapping[str, Any], study: str, job: int) -> tuple[Cell, ...]:
    """Return the chunks of job ``job`` of ``study`` (``ValueError`` if there is none)."""
    jobs = study_jobs(config, study)
    if not 0 <= job < len(jobs):
        raise ValueError(f"study {study!r} has no job {job} (it has {len(jobs)})")
    return jobs[job]


def study_datasets(config: Mapping[str, Any], study: str) -> list[str]:
    """Datasets a study reads (its ``dataset`` key in params or grid), in order."""
    spec = config["studies"][study]
    names: list[str] = []
    fixed = (spec.get("params") or {}).get("dataset")
    if fixed is not None:
        names.append(str(fixed))
    names.extend(str(n) for n in (spec.get("grid") or {}).get("dataset", []))
    skip = disabled_datasets(config)
    return [n for n in dict.fromkeys(names) if n not in skip]


def reference_datasets(config: Mapping[str, Any]) -> list[str]:
    """Return the datasets that get a non-private reference (enabled ones only).

    Every dataset a study reads, in study order, then the config's
    ``references.extra`` (datasets no study reads whose reference is still wanted):
    the list is derived from the studies, never written out by hand.
    """
    skip = disabled_datasets(config)
    names = [n for study in config.get("studies", {}) for n in study_datasets(config, study)]
    names += [n for n in (config.get("references") or {}).get("extra", []) if n not in skip]
    return list(dict.fromkeys(names))


def check_config_references(config: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` naming the offending key when a config refers to nothing.

    Also runs :func:`check_no_numbers_as_text`, :func:`check_hyper_blocks` and each study
    kind's own cell checks, so everything a dry run can catch stops it.
    """
    from dpreg.data import dataset_names
    from dpreg.experiments.kinds import get_kind

    check_no_numbers_as_text(config)
    loaders = dataset_names()
    datasets = config.get("datasets", {})
    for name, spec in datasets.items():
        if spec["loader"] not in loaders:
            known = ", ".join(loaders)
            raise ValueError(
                f"config datasets.{name}.loader: unknown dataset loader {spec['loader']!r};"
                f" known loaders: {known}"
            )
    from dpreg.data import DATASET_LOADERS

    for name, spec in datasets.items():
        options = spec.get("options") or {}
        try:
            params = inspect.signature(DATASET_LOADERS[spec["loader"]]).parameters
        except (TypeError, ValueError):  # pragma: no cover - a loader without a signature
            continue
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            continue
        unknown = sorted(set(options) - set(params))
        if unknown:
            allowed = ", ".join(sorted(k for k in params if k != "fetcher"))
            raise ValueError(
                f"config datasets.{name}.options: unknown option(s) {unknown} for loader"
                f" {spec['loader']!r}; allowed: {allowed}"
            )
        _check_typed_values(params, options, f"config datasets.{name}.options")
        _check_lev2026_bounds(name, spec["loader"], options)
    intercept_tables = _check_tables(datasets)
    for name in (config.get("references") or {}).get("extra", []):
        if name not in datasets:
            raise ValueError(f"config references.extra: {name!r} is not declared under datasets")
    check_hyper_blocks(config)
    for study, spec in config.get("studies", {}).items():
        kind = get_kind(spec["kind"])
        check_chunking(study, spec)
        study_chunks_per_job(config, study)
        grid, params = spec.get("grid") or {}, spec.get("params") or {}
        both = set(grid) & set(params)
        if both:
            raise ValueError(
                f"config studies.{study}: {sorted(both)} given in both grid and params"
            )
        kind.check_keys(study, set(grid) | set(params))
        for name in study_datasets(config, study):
            if name not in datasets:
                raise ValueError(
                    f"config studies.{study}: dataset {name!r} is not declared under datasets"
                )
        skip = disabled_datasets(config)
        fixed = params.get("dataset")
        if fixed is not None and fixed in skip:
            raise ValueError(
                f"config studies.{study}: its dataset {fixed!r} is disabled (enabled: false)"
            )
        paths = [path for path, _ in grid_points(spec, skip)]
        if not paths:
            raise ValueError(
                f"config studies.{study}.grid: no cells left (every dataset is disabled)"
            )
        if len(set(paths)) != len(paths):
            raise ValueError(f"config studies.{study}.grid: values collide as path labels")
        for _, values in grid_points(spec, skip):
            cell = {**params, **dict(values), "conversion": config["conversion"]}
            try:
                kind.validate_cell(cell)
            except ValueError as err:
                raise ValueError(f"config studies.{study}: {err}") from None
            if cell.get("dataset") in intercept_tables and cell.get("intercept") is not True:
                keys = kind.required | kind.optional
                how = (
                    "set intercept: true in the study"
                    if "intercept" in keys
                    else f"kind {kind.name!r} fits no intercept: use intercept: false in the"
                    " codebook (then the map does not centre the columns)"
                )
                raise ValueError(
                    f"config studies.{study}: dataset {cell['dataset']!r} is a table whose"
                    " codebook declares an intercept (its columns are centred on the public"
                    f" midpoints), but this study fits none; {how}"
                )


def check_no_duplicate_keys(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Raise ``ValueError`` naming the file, key and lines if a YAML file repeats a key.

    Snakemake (like every YAML loader) keeps the last of two equal keys, so a study name
    written twice would silently replace the first; the workflow calls this on every
    config file before it reads any study.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "c.yaml"
    >>> _ = path.write_text(chr(10).join(["studies:", "  a: 1", "  a: 2"]))
    >>> check_no_duplicate_keys([path])
    Traceback (most recent call last):
    ...
    ValueError: ...: key 'a' appears twice (lines 2 and 3); YAML would silently keep only the second
    """
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            load_unique_keys(fh)


def check_hyper_blocks(config: Mapping[str, Any]) -> None:
    """Refuse a ``hyper`` block that would be ignored or would fail in a job.

    * A block for an estimator that its study does not run (a typo such as ``adasp``)
      would be ignored and the study would run with the defaults; the message names the
      study, the key and the estimators the study runs.
    * Each block is checked against its estimator's signature
      (:func:`check_hyperparameters`): unknown names, arguments the study passes itself,
      and values of the wrong type or sign stop the dry run instead of a job.

    Examples
    --------
    >>> study = {"kind": "eps_grid", "params": {"estimator": "adassp"}}
    >>> study["params"]["hyper"] = {"adasp": {"mechanism": "classic"}}
    >>> check_hyper_blocks({"studies": {"s": study}})
    Traceback (most recent call last):
    ...
    ValueError: config studies.s.params.hyper: ['adasp'] not run by this study (it runs ...
    """
    for study, spec in config.get("studies", {}).items():
        params = spec.get("params") or {}
        hyper = params.get("hyper")
        if not isinstance(hyper, Mapping):
            continue
        grid = spec.get("grid") or {}
        named = grid.get("estimator", params.get("estimator"))
        if named is not None:
            runs: set[str] = set()
            for value in named if isinstance(named, list | tuple) else [named]:
                # a grid value may itself list several estimators run in one job
                runs.update(map(str, value) if isinstance(value, list | tuple) else [str(value)])
            stray = sorted(set(hyper) - runs)
            if stray:
                raise ValueError(
                    f"config studies.{study}.params.hyper: {stray} not run by this study"
                    f" (it runs {sorted(runs)}); fix the name or remove the block"
                )
        # eps_grid's `variants` map a label (a key of `hyper`) to the estimator it runs
        variants = params.get("variants") or {}
        for name, values in hyper.items():
            registry = variants.get(name, name) if isinstance(variants, Mapping) else name
            check_hyperparameters(str(registry), values, where=f"studies.{study}.params.hyper")


HYPER_PASSED_BY_STUDY = frozenset({"budget", "rng", "trials", "bound_X", "bound_y"})
"""Estimator arguments a study passes itself (from its own keys), never from ``hyper``."""


def _annotation_names(annotation: Any) -> set[str] | None:
    """Return the type names of a ``float | None``-style annotation (``None`` if not plain)."""
    if annotation is inspect.Parameter.empty:
        return None
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    names = {part.strip() for part in str(text).split("|")}
    return names if names <= {"int", "float", "bool", "str", "None"} else None


def check_hyperparameters(estimator: str, values: Any, *, where: str = "hyper") -> None:
    """Check one estimator's ``hyper`` block against the estimator's signature.

    Refuses, naming ``where.estimator.key``: an unregistered estimator; a name the
    estimator does not take; an argument the study passes itself
    (:data:`HYPER_PASSED_BY_STUDY`, and the data ``X``, ``y``, ``Z``); and, for an
    argument annotated ``int`` / ``float`` (``| None``), ``bool`` or ``str``, a value of
    another type -- a boolean or text where a number belongs, a fraction where an integer
    belongs -- or a negative or NaN number (every numeric hyperparameter of dpreg's
    estimators is a count, step, scale, bound or probability). Finer ranges (``T >= 1``,
    a probability below 1) are the estimator's own checks, run in the job.

    Examples
    --------
    >>> check_hyperparameters("dp_gd", {"T": 5, "clip": 0.5})
    >>> check_hyperparameters("dp_gd", {"T": -5})
    Traceback (most recent call last):
    ...
    ValueError: config hyper.dp_gd.T: must be >= 0; got -5
    """
    from dpreg.estimators import get_estimator

    prefix = f"config {where}.{estimator}"
    try:
        params = inspect.signature(get_estimator(estimator)).parameters
    except ValueError as err:
        raise ValueError(f"{prefix}: {err}") from None
    if not isinstance(values, Mapping):
        raise ValueError(f"{prefix}: must map hyperparameter names to values; got {values!r}")
    data = {name for name, p in params.items() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD}
    taken = sorted(set(map(str, values)) & (HYPER_PASSED_BY_STUDY | data))
    if taken:
        raise ValueError(
            f"{prefix}: {taken} set by the study itself (its budget, seed, trials and bounds"
            " keys), not in hyper"
        )
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unknown = sorted(set(map(str, values)) - set(params))
    if unknown and not open_ended:
        allowed = sorted(set(params) - HYPER_PASSED_BY_STUDY - data)
        raise ValueError(
            f"{prefix}: unknown hyperparameter(s) {unknown} for estimator {estimator!r};"
            f" it takes {allowed}"
        )
    _check_typed_values(params, values, prefix)


def _check_tables(datasets: Mapping[str, Any]) -> frozenset[str]:
    """Check every ``table`` dataset's options and files; return those with an intercept.

    The codebook is read and verified against its sha256, the table (unless the workflow
    writes it, e.g. an example table) against its own and its header against the
    codebook (``dpreg.data.table.check_table_options``). Paths are relative to the working
    directory (where snakemake runs). Disabled datasets are not read.
    """
    from dpreg.data.examples import EXAMPLE_TABLES, example_table_path
    from dpreg.data.table import LOADERS as TABLE_LOADERS
    from dpreg.data.table import check_table_options

    produced = [example_table_path(name) for name in EXAMPLE_TABLES]
    with_intercept = set()
    for name, spec in datasets.items():
        if spec["loader"] not in TABLE_LOADERS or not spec.get("enabled", True):
            continue
        where = f"config datasets.{name}"
        if spec.get("preprocessing", "none") != "none":
            raise ValueError(
                f"{where}.preprocessing: a table is prepared by its codebook; use none,"
                f" not {spec['preprocessing']!r}"
            )
        book = check_table_options(
            spec.get("options") or {}, where=f"{where}.options", produced=produced
        )
        if book.intercept:
            with_intercept.add(name)
    return frozenset(with_intercept)


def _check_lev2026_bounds(name: str, loader: str, options: Mapping[str, Any]) -> None:
    """Check a ``lev_*`` loader's ``bounds`` options as the loader will (no data needed)."""
    from dpreg.data.lev2026 import BoundsSpec, is_lev2026

    if not is_lev2026(loader):
        return
    keys = ("bounds", "bound_X_per_sqrt_d", "bound_y")
    try:
        BoundsSpec(**{k: options[k] for k in keys if k in options})
    except (TypeError, ValueError) as err:
        raise ValueError(f"config datasets.{name}.options: {err}") from None


def _check_typed_values(
    params: Mapping[str, inspect.Parameter], values: Mapping[str, Any], prefix: str
) -> None:
    """Check values against plain ``int``/``float``/``bool``/``str`` annotations."""
    for key, value in values.items():
        if key not in params:
            continue
        names = _annotation_names(params[key].annotation)
        if names is None or (value is None and "None" in names):
            continue
        numeric = names & {"int", "float"}
        if numeric and not ({"bool", "str"} & names):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{prefix}.{key}: must be a number; got {value!r}")
            if "float" not in names and not isinstance(value, int):
                raise ValueError(f"{prefix}.{key}: must be an integer; got {value!r}")
            if math.isnan(value) or value < 0:
                raise ValueError(f"{prefix}.{key}: must be >= 0; got {value!r}")
        elif names - {"None"} == {"bool"} and not isinstance(value, bool):
            raise ValueError(f"{prefix}.{key}: must be true or false; got {value!r}")
        elif names - {"None"} == {"str"} and not isinstance(value, str):
            raise ValueError(f"{prefix}.{key}: must be text; got {value!r}")


_NUMBER_TEXT = re.compile(
    r"^\s*[-+]?((\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|\.?inf(inity)?|\.?nan)\s*$", re.IGNORECASE
)
_EXPONENT_WITHOUT_DOT = re.compile(r"^\s*[-+]?\d+[eE][-+]?\d+\s*$")


def _number_text_hint(value: str) -> str:
    if _EXPONENT_WITHOUT_DOT.match(value):
        mantissa, exponent = re.split("[eE]", value.strip())
        return f" (YAML reads {value.strip()} as text: write {mantissa}.0e{exponent})"
    word = value.strip().lstrip("+-").lower().lstrip(".")
    if word in ("inf", "infinity"):
        return " (YAML's infinity is .inf)"
    if word == "nan":
        return " (NaN is no setting)"
    return " (remove the quotes)"


def _walk(value: Any, where: str) -> Iterator[tuple[str, Any]]:
    yield where, value
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _walk(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _walk(item, f"{where}[{i}]")


def check_no_numbers_as_text(config: Mapping[str, Any]) -> None:
    """Refuse a number written as text anywhere in a study or a dataset's options.

    No key of any study kind, estimator or loader takes text that reads as a number, so
    ``epsilon: ['1.0']`` or ``delta: 1e-5`` (which YAML 1.1, hence Snakemake, reads as the
    *string* ``'1e-5'``) is a mistake that some code would otherwise convert silently.
    Booleans where numbers belong are refused by each kind's and estimator's own checks
    (:func:`check_hyper_blocks` for ``hyper``).

    Examples
    --------
    >>> check_no_numbers_as_text({"studies": {"s": {"params": {"delta": 1e-5}}}})
    >>> check_no_numbers_as_text({"studies": {"s": {"params": {"delta": "1e-5"}}}})
    Traceback (most recent call last):
    ...
    ValueError: config studies.s.params.delta: '1e-5' is text, not a number (YAML reads 1e-5 ...
    """
    roots: list[tuple[str, Any]] = []
    for name, spec in (config.get("studies") or {}).items():
        for section in ("params", "grid"):
            roots.append((f"studies.{name}.{section}", (spec or {}).get(section) or {}))
    for name, spec in (config.get("datasets") or {}).items():
        for section in ("options", "preprocessing_options"):
            roots.append((f"datasets.{name}.{section}", (spec or {}).get(section) or {}))
    for root, tree in roots:
        for where, value in _walk(tree, root):
            if where.endswith("sha256"):
                continue  # a hash is text, even when its hex digits happen to be digits
            if isinstance(value, str) and _NUMBER_TEXT.match(value):
                raise ValueError(
                    f"config {where}: {value!r} is text, not a number{_number_text_hint(value)}"
                )
