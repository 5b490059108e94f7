"""The ``dse`` command line (typer). Exit codes: 0 ok, 2 bad input, 1 internal error.

Start-up matters (every worker, every shell completion runs it): this module imports typer and
rich's console only; each command imports what it needs (``tests/cli/test_conventions.py``
checks that ``dse --help`` imports no numpy, pandas, pyarrow or optuna).
"""

from __future__ import annotations

import errno
import json
import sys
from typing import Annotated, Any, NoReturn

import typer

from dse import __version__
from dse.cli.console import INTERRUPTED, err, out, verbosity
from dse.cli.front_table import print_bound_notes, print_front
from dse.cli.inspect import StudyArg, study_name
from dse.cli.options import (
    JsonOpt,
    OutputFormat,
    SpecArg,
    StorageOpt,
)
from dse.errors import DseError, SpecError
from dse.spec.messages import shorten

__all__ = [
    "GLOBAL_FLAGS",
    "app",
    "evaluators",
    "global_options_first",
    "main",
    "os_error_line",
    "pareto",
    "schema",
    "usage_line",
    "validate",
]

app = typer.Typer(
    help="Declarative design-space explorer for AI clusters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Plain help text (click's): typer's rich panels import rich.markdown and markdown-it,
    # which alone cost more CPU than typer and rich themselves (benchmarks/RESULTS.md).
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        print(f"dse (litegpu-dse) {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit"
        ),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("-q", "--quiet", help="Results and errors only: no progress, no notes")
    ] = False,
    verbose: Annotated[
        int,
        typer.Option(
            "-v",
            "--verbose",
            count=True,
            help="Also Optuna's INFO log (each trial as it finishes)",
        ),
    ] = 0,
) -> None:
    """Declarative design-space explorer for AI clusters."""
    verbosity.level = -1 if quiet else verbose


def _lazy(module: str, name: str) -> Any:
    """A command whose module (and its imports) loads only when typer needs its signature.

    typer reads a command's signature to build ``--help``; these modules import only typer and
    dse.cli.options at the top, so registering them costs little."""
    import importlib

    return getattr(importlib.import_module(f"dse.cli.{module}"), name)


@app.command()
def validate(spec: SpecArg, as_json: JsonOpt = False) -> None:
    """Check a spec without running anything; every problem is listed, sorted by line."""
    from dse import api

    model, problems = api.validate(spec)
    if as_json:
        payload: dict[str, Any] = {
            "spec": str(spec),
            "ok": not problems and model is not None,
            "problems": [
                {"line": p.line, "field": p.field, "message": p.message} for p in problems
            ],  # fmt: skip
        }
        if model is not None and not problems:
            payload.update(
                study=model.spec.study,
                parameters=list(model.spec.space),
                objectives=model.objective_names,
                constraints=[c.source for c in model.constraints],
                metrics=len(model.metrics),
            )
        print(json.dumps(payload, indent=2))
        if problems or model is None:
            raise typer.Exit(2)
        return
    if problems or model is None:
        raise SpecError(problems)
    from dse.cli.catalog import plausibility_notes

    plausibility_notes(model)
    added = len(model.constraints) - len(model.spec.constraints)
    defaults = f" ({added} held by default)" if added else ""
    out.print(
        f"[green]ok[/green] {spec}: study {model.spec.study!r}, {len(model.spec.space)} "
        f"parameters, {len(model.spec.objectives)} objectives, {len(model.constraints)} "
        f"constraints{defaults}, {len(model.metrics)} metrics available"
    )


app.command("run")(_lazy("run", "run_command"))
app.command("evaluate")(_lazy("evaluate", "evaluate_command"))


@app.command()
def pareto(
    study: StudyArg,
    format_: Annotated[
        OutputFormat, typer.Option("--format", help="Output format", case_sensitive=False)
    ] = OutputFormat.table,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json")] = False,
    storage: StorageOpt = None,
    quality: Annotated[
        bool,
        typer.Option(
            "--quality",
            help="Also print the hypervolume (normalised by the reference point) and IGD+",
        ),
    ] = False,
) -> None:
    """Print a study's feasible Pareto front."""
    from dse import api
    from dse.results.quality import print_quality

    fmt = OutputFormat.json if as_json else format_
    study = study_name(study)
    lock = api.read_lock(study)
    objectives = [o["metric"] for o in lock["objectives"]]
    _, front = api.load_study(study, storage=storage)
    if fmt is OutputFormat.csv:
        sys.stdout.write(front.to_csv(index=False))
    elif fmt is OutputFormat.json:
        sys.stdout.write(front.to_json(orient="records", indent=2) + "\n")
    else:
        print_front(front, objectives, title=f"Pareto front of {study} ({len(front)} trials)")
        print_bound_notes(front, lock.get("space") or {})
        from dse.cli.catalog import print_headlines

        print_headlines(lock.get("fixed") or {})  # as `dse run` printed them
    if quality:
        print_quality(study, storage=storage, console=out if fmt is OutputFormat.table else err)


@app.command()
def evaluators(as_json: JsonOpt = False) -> None:
    """List every installed evaluator with its metrics, units and meanings."""
    from dse import api

    listing = api.list_evaluators()
    if as_json:
        print(json.dumps(listing, indent=2))
        return
    from rich.table import Table

    for name, ev in listing.items():
        needs = f"; needs {', '.join(ev['needs'])}" if ev["needs"] else ""
        table = Table(title=f"{name}  ({ev['origin']}; vectorized={ev['vectorized']}{needs})")
        for c in ("metric", "unit", "meaning"):
            table.add_column(c)
        for k, m in ev["metrics"].items():
            table.add_row(f"{name}.{k}", m["unit"], m["description"])
        out.print(table)


@app.command()
def schema() -> None:
    """Print the JSON Schema of a study spec (for editor completion and checks)."""
    from dse import api

    print(json.dumps(api.json_schema(), indent=2))


app.command("sweep")(_lazy("sweep", "sweep_command"))
app.command("worker")(_lazy("worker", "worker_command"))
app.command("status")(_lazy("status", "status_command"))
app.command("sensitivity")(_lazy("sensitivity", "sensitivity_command"))
app.command("report")(_lazy("inspect", "report_command"))
app.command("dashboard")(_lazy("inspect", "dashboard_command"))
app.command("compare")(_lazy("compare", "compare_command"))
app.command("init")(_lazy("catalog", "init_command"))
app.command("presets")(_lazy("catalog", "presets_command"))
app.command("params")(_lazy("catalog", "params_command"))


def main() -> None:
    """Entry point: user errors print one line each and exit 2, never a traceback."""
    from dse.heap import keep_freed_arrays

    keep_freed_arrays()  # this process only: the CLI owns its allocator (dse/heap.py)
    try:
        # a usage error is ours to print, in one line
        code = app(args=global_options_first(sys.argv[1:]), standalone_mode=False)
    except typer.TyperException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare 'dse': the help, as before
            exc.show()  # type: ignore[attr-defined]
            sys.exit(getattr(exc, "exit_code", 2))
        _fail(f"error: {usage_line(exc)}", getattr(exc, "exit_code", 2))
    except (typer.Abort, KeyboardInterrupt):
        _fail(INTERRUPTED, 130)
    except SpecError as exc:
        _fail("\n".join(str(p) for p in exc.problems), 2)
    except DseError as exc:
        _fail(f"error: {shorten(str(exc))}", 2)
    except OSError as exc:  # a full or read-only disk: the storage is left as it was
        _fail(f"error: {os_error_line(exc)}", 1)
    except RuntimeError as exc:
        if not str(exc).startswith("Symlink loop from"):  # Path.resolve (Python < 3.13)
            raise
        _fail(f"error: {exc}: a path points back to itself", 2)
    except Exception as exc:
        if _is_evaluation_error(exc):  # a user's design failed to evaluate (dse evaluate)
            _fail(f"error: {shorten(str(exc))}", 2)
        raise
    if code == 130:  # typer turns a KeyboardInterrupt in any command into a silent Exit(130)
        err.print(INTERRUPTED)
    sys.exit(code if type(code) is int else 0)  # typer.Exit(n) comes back as n


def _fail(text: str, code: int) -> NoReturn:
    """Print a user-facing error (never a traceback) on stderr and exit with ``code``."""
    err.print(text, markup=False, highlight=False)
    sys.exit(code)


#: Options of ``dse`` itself, which a user also writes after the command (``dse run SPEC -q``).
GLOBAL_FLAGS = frozenset({"-q", "--quiet", "-v", "--verbose", "-vv", "-vvv"})


def global_options_first(args: list[str]) -> list[str]:
    """``args`` with the global flags written after the command moved before it, so that
    ``dse run SPEC -q`` means ``dse -q run SPEC`` (nothing after ``--`` is touched)."""
    end = args.index("--") if "--" in args else len(args)
    flags = [a for a in args[:end] if a in GLOBAL_FLAGS]
    rest = [a for a in args[:end] if a not in GLOBAL_FLAGS]
    return [*flags, *rest, *args[end:]]


def usage_line(exc: Exception) -> str:
    """A command-line usage error (an unknown option, a value out of range) as one line, with
    where to read more."""
    fmt = getattr(exc, "format_message", None)
    text = " ".join((fmt() if fmt else str(exc)).split())
    ctx = getattr(exc, "ctx", None)
    more = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    return f"{shorten(text)}{more}"


def _is_evaluation_error(exc: Exception) -> bool:
    """Without importing the model layer: if it was never imported, nothing raised from it."""
    mod = sys.modules.get("dse.model.study_model")
    return mod is not None and isinstance(exc, mod.EvaluationError)


def os_error_line(exc: OSError) -> str:
    """One line for a file-system error, saying what to do about it."""
    where = f" {exc.filename}" if exc.filename else ""
    what = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = "free some space, then run the same command again to resume"
    elif exc.errno == errno.EFBIG:
        hint = "raise the file-size limit (ulimit -f), then run the same command again to resume"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        hint = "make it writable (or set DSE_STUDIES_DIR / --storage elsewhere), then run again"
    else:
        hint = "fix it, then run the same command again"
    return f"cannot use{where}: {what}; finished trials are kept in the storage; {hint}"


if __name__ == "__main__":
    main()
