"""The ``dpreg`` command line: a private regression on your own table.

::

    dpreg fit data.csv --codebook codebook.yaml --method ihm --epsilon 1 [--delta 1e-6]
              [--y col] [--x col1,col2] [--seed 0] [--json out.json]
              [--standardise-share 0.1]
    dpreg fit data.csv --codebook codebook.yaml --method dp_2s_gd --epsilon 1
              [--instruments z1,z2] [--theta-share 0.5] [...]
    dpreg compare data.csv --codebook codebook.yaml --epsilon 1 [--methods ihm,adassp]
              [--trials 20] [--test-fraction 0.2] [--seed 0] [--json out.json]
    dpreg methods

``fit`` reads the table through its codebook (public ranges, ``docs/user-data.md``),
fits one private release with the method's public hyperparameters and prints the
summary in the table's original units; ``compare`` runs every private method (the
benchmark's, ``docs/benchmark.md``) on held-out rows of the table and prints a table
of their test errors beside non-private OLS, with progress on standard error. ``--y``
and ``--x`` choose a response and a subset of the codebook's features (each must be
declared in it). An IV method (``dp_2s_gd``, DP-2S-GD of Liang et al. 2025, Algorithm 1;
``docs/user-data.md``, "Instrumental variables on your table") takes the codebook's
instruments, or the columns of ``--instruments`` (each declared with a range), and
prints the budget's split between its two stages; ``--instruments`` with a method that
is not an IV method, or an IV method without instruments, is a refused input.
``--standardise-share s`` (or a codebook entry ``standardise: {share: s, k: 3}``) spends
the share ``s`` of the budget's zCDP level on private means and standard deviations
that narrow the codebook's ranges before the fit (``docs/user-data.md``, "Private
standardisation (optional)"); the summary and the JSON give the composed budget, the
split and the release. Not for IV methods nor ``compare``. Exit
status: 0 on success, 2 for a usage error (a missing or unknown option), 1 for a
refused input (a missing file, a bad codebook, a column missing or out
of its range under ``refuse``, a budget out of range), with one line ``dpreg: error:
...`` naming it on standard error; nothing is written unless the command succeeds.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

import numpy as np

__all__ = ["main"]


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise ValueError("an empty column list")
    return names


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpreg",
        description="Differentially private linear regression on your own table.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def table_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("data", help="the table: CSV (with a header line) or parquet")
        p.add_argument(
            "--codebook", required=True, help="YAML codebook of public ranges (docs/user-data.md)"
        )
        p.add_argument("--y", help="response column (default: the codebook's)")
        p.add_argument("--x", help="feature columns, comma-separated (default: the codebook's)")
        p.add_argument("--epsilon", type=float, help="epsilon of one release (default 1)")
        p.add_argument("--delta", type=float, help="delta (default 1/n^2)")
        p.add_argument("--rho", type=float, help="a zCDP budget instead of epsilon")
        p.add_argument("--seed", type=int, default=None, help="seed of the noise")
        p.add_argument("--sha256", help="expected sha256 of the table file")
        p.add_argument("--json", type=Path, help="also write the result as JSON to this file")

    fit = sub.add_parser("fit", help="one private fit, printed as a summary")
    table_args(fit)
    fit.add_argument("--method", default="ihm", help="a private method (dpreg methods)")
    fit.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level")
    fit.add_argument(
        "--instruments",
        help="instrument columns of an IV method, comma-separated (default: the codebook's)",
    )
    fit.add_argument(
        "--theta-share",
        type=float,
        help="an IV method's share of the zCDP budget for its first stage (default 0.5)",
    )
    fit.add_argument(
        "--standardise-share",
        type=float,
        help="spend this share of the zCDP budget on private means and scales that narrow"
        " the codebook's ranges (overrides the codebook's standardise.share;"
        " docs/user-data.md)",
    )
    compare = sub.add_parser("compare", help="every private method on held-out rows")
    table_args(compare)
    compare.add_argument("--methods", help="comma-separated methods (default: all private)")
    compare.add_argument("--trials", type=int, default=20, help="repetitions per method")
    compare.add_argument(
        "--test-fraction", type=float, default=0.2, help="share of rows held out for scoring"
    )
    sub.add_parser("methods", help="list the private methods and their public rules")
    return parser


def _codebook(
    path: str, y: str | None, x: list[str] | None, instruments: list[str] | None = None
) -> Any:
    """Read the codebook; choose response, features and instruments (``()``: none)."""
    from dpreg.data.codebook import read_codebook

    codebook = read_codebook(path)
    if y is None and x is None and instruments is None:
        return codebook
    declared = set(codebook.features) | {codebook.response}
    for name in ([y] if y else []) + (x or []):
        if name not in declared:
            raise ValueError(
                f"column {name!r} is not in the codebook {path} (declared: {sorted(declared)})"
            )
    features = tuple(x) if x is not None else tuple(f for f in codebook.features if f != y)
    response = y or codebook.response
    if response in features:
        raise ValueError(f"column {response!r} is both the response and a feature")
    chosen = codebook.instruments if instruments is None else tuple(instruments)
    for name in chosen:
        if name not in codebook.columns or name == response or name in features:
            raise ValueError(
                f"--instruments: column {name!r} is not an instrument declared with a range in"
                f" the codebook {path} (declared instruments: {list(codebook.instruments)})"
            )
    keep = set(features) | {response} | set(chosen)
    columns = {k: v for k, v in codebook.columns.items() if k in keep}
    return replace(
        codebook, response=response, features=features, instruments=chosen, columns=columns
    )


def _load(
    args: argparse.Namespace, test_fraction: float = 0.0, instruments: list[str] | None = None
) -> tuple[Any, Any, Any]:
    from dpreg.data.table import load_table_split, table_scaling

    codebook = _codebook(args.codebook, args.y, _names(args.x), instruments)
    train, test = load_table_split(
        args.data,
        codebook,
        sha256=args.sha256,
        test_fraction=test_fraction,
        seed=0 if args.seed is None else args.seed,
    )
    return train, test, table_scaling(train)


def _budget_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    if args.epsilon is not None and args.rho is not None:
        raise ValueError("give --epsilon or --rho, not both")
    if args.rho is not None:
        return {"rho": args.rho, "delta": args.delta}
    return {"epsilon": 1.0 if args.epsilon is None else args.epsilon, "delta": args.delta}


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    from dpreg.io import write_json

    write_json(payload, path)


def _original_units(what: str, names: Sequence[str], coef: Any, intercept: Any) -> str:
    """Return the line giving a fit in the table's original units."""
    return (
        f"In original units ({what}): intercept {float(intercept):.6g}; "
        + ", ".join(f"{n} {c:.6g}" for n, c in zip(names, np.ravel(coef), strict=True))
        + "\n"
    )


def _fit_payload(
    args: argparse.Namespace, train: Any, model: Any, coef: Any, intercept: Any, **extra: Any
) -> dict[str, Any]:
    """Return the JSON of ``dpreg fit``: what every method reports, plus ``extra``."""
    return {
        "method": args.method,
        "n": int(train.n),
        "features": list(train.feature_names),
        "response": train.target_name,
        "coef": [float(c) for c in np.ravel(coef)],
        "intercept": float(intercept),
        "coef_scaled": [float(c) for c in model.coef_],
        "intercept_scaled": float(model.intercept_),
        "budget_spent": _no_nan(model.budget_spent_),
        "hyperparameters": model.hyperparameters_,
        "seed": args.seed,
        **extra,
    }


def _fit(args: argparse.Namespace, out: TextIO) -> int:
    from dpreg.estimators.iv_methods import IV_METHODS
    from dpreg.estimators.methods import METHODS
    from dpreg.linear_model import DPLinearRegression

    if args.method in IV_METHODS:
        return _fit_iv(args, out)
    if args.method not in METHODS:
        raise ValueError(
            f"unknown method {args.method!r}; known methods: {', '.join(METHODS)};"
            f" IV methods: {', '.join(IV_METHODS)}"
        )
    for option, value in (("--instruments", args.instruments), ("--theta-share", args.theta_share)):
        if value is not None:
            raise ValueError(
                f"{option} is for an IV method ({', '.join(IV_METHODS)}); method"
                f" {args.method!r} takes no instruments"
            )
    codebook = _codebook(args.codebook, args.y, _names(args.x), [])
    if args.standardise_share is not None or codebook.standardise is not None:
        return _fit_standardised(args, codebook, out)
    train, _, scaling = _load(args, instruments=[])
    model = DPLinearRegression(
        args.method,
        random_state=args.seed,
        fit_intercept=bool(scaling.intercept),
        **_budget_kwargs(args),
    )
    model.fit(train.X, train.y)
    coef, intercept = scaling.to_original(model.coef_, model.intercept_)
    text = model.summary(feature_names=list(train.feature_names), alpha=args.alpha)
    out.write(text + "\n")
    out.write(_original_units("the codebook's public map", train.feature_names, coef, intercept))
    if args.json is not None:
        _write_json(args.json, _fit_payload(args, train, model, coef, intercept))
    return 0


def _fit_standardised(args: argparse.Namespace, codebook: Any, out: TextIO) -> int:
    """``dpreg fit`` with the private standardisation (:func:`dpreg.linear_model.fit_table`)."""
    from dpreg.linear_model import fit_table

    share = args.standardise_share
    if share is not None and not 0 < share < 1:
        raise ValueError(f"--standardise-share must lie in (0, 1); got {share!r}")
    result = fit_table(
        args.data,
        codebook,
        method=args.method,
        standardise_share=share,
        random_state=args.seed,
        sha256=args.sha256,
        **_budget_kwargs(args),
    )
    model, train, release = result.model, result.train, result.standardisation
    out.write(model.summary(feature_names=list(train.feature_names), alpha=args.alpha) + "\n")
    out.write(
        "Private standardisation (released, public; docs/user-data.md): "
        + "; ".join(
            f"{name} mean {m:.6g}, sd {sd:.6g}, box [{a:.6g}, {b:.6g}]"
            for name, m, sd, a, b in zip(
                release["columns"], release["mean"], release["sd"], release["low"],
                release["high"], strict=True,
            )
        )
        + f" (k = {release['k']:g}, rho = {release['rho']:.4g}, noise sd {release['sigma']:.4g})\n"
    )  # fmt: skip
    out.write(
        _original_units(
            "the map from the private standardisation", train.feature_names, result.coef,
            result.intercept,
        )
    )  # fmt: skip
    if args.json is not None:
        split = model.budget_split_
        payload = _fit_payload(
            args, train, model, result.coef, result.intercept,
            budget_split={
                k: (_no_nan(v) if isinstance(v, dict) else v) for k, v in split.items()
            },
            standardisation={k: v for k, v in release.items() if k not in ("step", "privacy")},
            scaling=result.scaling.to_dict(),
        )  # fmt: skip
        _write_json(args.json, payload)
    return 0


def _no_nan(values: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in values.items()}


def _fit_iv(args: argparse.Namespace, out: TextIO) -> int:
    from dpreg.iv_model import DPIVRegression
    from dpreg.privacy.conversions import zcdp_to_eps

    if args.standardise_share is not None:
        raise ValueError(
            f"--standardise-share is not available for the IV method {args.method!r}"
            " (its two stages' budget split has no standardisation step)"
        )
    budget = _budget_kwargs(args)
    train, _, scaling = _load(args, instruments=_names(args.instruments))
    if train.Z is None or not train.instrument_names:
        raise ValueError(
            f"method {args.method!r} needs instruments: give --instruments z1,z2 or list"
            f" them under instruments: in the codebook {args.codebook}"
        )
    delta = budget["delta"]
    if "rho" in budget:  # the epsilon whose tight conversion is rho (at delta, default 1/n^2)
        delta = 1.0 / float(train.n) ** 2 if delta is None else delta
        if not (0 < delta < 1):
            raise ValueError(f"--delta must lie in (0, 1); got {delta!r}")
        if not (0 < budget["rho"] < math.inf):
            raise ValueError(f"--rho must be a finite number > 0; got {budget['rho']!r}")
        epsilon = zcdp_to_eps(budget["rho"], delta, method="tight")
    else:
        epsilon = budget["epsilon"]
    model = DPIVRegression(
        args.method,
        epsilon=epsilon,
        delta=delta,
        theta_share=0.5 if args.theta_share is None else args.theta_share,
        fit_intercept=bool(scaling.intercept),
        random_state=args.seed,
    )
    model.fit(train.X, train.y, train.Z)
    coef, intercept = scaling.to_original(model.coef_, model.intercept_)
    text = model.summary(
        feature_names=list(train.feature_names),
        instrument_names=list(train.instrument_names),
        alpha=args.alpha,
    )
    out.write(text + "\n")
    out.write(_original_units("the codebook's public map", train.feature_names, coef, intercept))
    if args.json is not None:
        payload = _fit_payload(
            args, train, model, coef, intercept,
            instruments=list(train.instrument_names),
            budget_split=dict(model.budget_split_),
        )  # fmt: skip
        _write_json(args.json, payload)
    return 0


def _compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from dpreg.estimators.methods import METHODS, PublicInputs, fit_method, get_method

    if not 0 < args.test_fraction < 1:
        raise ValueError(f"--test-fraction must lie in (0, 1); got {args.test_fraction}")
    if args.trials < 1:
        raise ValueError(f"--trials must be >= 1; got {args.trials}")
    train, test, scaling = _load(args, test_fraction=args.test_fraction)
    names = _names(args.methods) or [m for m, spec in METHODS.items() if spec.private]
    for name in names:
        get_method(name)
    budget = _budget_kwargs(args)
    n, d = train.X.shape
    delta = budget["delta"] if budget["delta"] is not None else 1.0 / n**2
    if "rho" in budget:
        from dpreg.privacy.conversions import zcdp_to_eps

        epsilon = zcdp_to_eps(budget["rho"], delta, method="tight")
    else:
        epsilon = budget["epsilon"]
    intercept = bool(scaling.intercept)
    design = np.linalg.lstsq(
        np.column_stack([train.X, np.ones(n)]) if intercept else train.X, train.y, rcond=None
    )[0]
    test_X = np.column_stack([test.X, np.ones(test.n)]) if intercept else test.X
    ols = float(np.mean((test.y - test_X @ design) ** 2))
    rng = np.random.default_rng(args.seed)
    rows = []
    for i, name in enumerate(names, 1):
        public = PublicInputs(
            n=n, d=d + int(intercept), epsilon=epsilon, delta=delta, bound_X=1.0, bound_y=1.0
        )
        reason = get_method(name).reason_not_run(public)
        start = time.perf_counter()
        err.write(f"[{i}/{len(names)}] {name} ...")
        err.flush()
        if reason is None:
            fit = fit_method(
                name,
                train.X,
                train.y,
                epsilon=epsilon,
                delta=delta,
                bound_X=1.0,
                bound_y=1.0,
                rng=rng,
                trials=args.trials,
                intercept=intercept,
            )
            mse = np.mean((test.y[None, :] - fit.predict(test.X)) ** 2, axis=1)
            rows.append(
                (
                    name,
                    float(mse.mean()),
                    float(mse.std(ddof=1) / math.sqrt(mse.size)) if mse.size > 1 else math.nan,
                    "",
                )
            )
        else:
            rows.append((name, math.nan, math.nan, reason))
        err.write(f" {time.perf_counter() - start:.1f} s\n")
    rows.sort(key=lambda r: (math.isnan(r[1]), r[1]))
    out.write(
        f"{n} training rows, {test.n} held out; epsilon = {epsilon:.4g}, delta = {delta:.3g};"
        f" {args.trials} trials per method; test MSE in the codebook's scaled units\n"
    )
    out.write(f"{'method':<24}{'test MSE':>12}{'SE':>11}{'/ OLS':>9}  note\n")
    for name, mse, se, reason in rows:
        if math.isnan(mse):
            out.write(f"{name:<24}{'-':>12}{'-':>11}{'-':>9}  not run: {reason}\n")
        else:
            out.write(f"{name:<24}{mse:>12.5g}{se:>11.2g}{mse / ols:>9.3g}\n")
    out.write(f"{'ols (non-private)':<24}{ols:>12.5g}{'':>11}{1.0:>9.3g}\n")
    if args.json is not None:
        _write_json(
            args.json,
            {
                "epsilon": epsilon,
                "delta": delta,
                "trials": args.trials,
                "ols_test_mse": ols,
                "methods": [
                    {
                        "method": r[0],
                        "test_mse": None if math.isnan(r[1]) else r[1],
                        "se": None if math.isnan(r[2]) else r[2],
                        "not_run": r[3] or None,
                    }
                    for r in rows
                ],
            },
        )
    return 0


def _methods(out: TextIO) -> int:
    from dpreg.estimators.iv_methods import IV_METHODS
    from dpreg.estimators.methods import METHODS

    for name, method in METHODS.items():
        if method.private:
            out.write(f"{name:<24}{method.description}\n")
    for name, iv_method in IV_METHODS.items():
        out.write(f"{name:<24}IV (needs instruments): {iv_method.description}\n")
    return 0


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the command line; return the exit status (module docstring)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse: usage errors exit 2, --help exits 0
        return int(stop.code or 0)
    try:
        if args.command == "methods":
            return _methods(out)
        if args.command == "fit":
            return _fit(args, out)
        return _compare(args, out, err)
    except (OSError, ValueError, TypeError) as problem:
        message = str(problem).splitlines()[0] if str(problem) else type(problem).__name__
        err.write(f"dpreg: error: {message}\n")
        return 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
