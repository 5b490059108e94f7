"""CLI entry points of ``dse report`` and ``dse dashboard``.

Kept apart from their modules so that plotly, matplotlib and optuna-dashboard are imported
only when these commands run, not on every ``dse`` invocation.
"""

from __future__ import annotations

from typing import Annotated

import typer

from dse.cli.options import JsonOpt, StorageOpt
from dse.inspect.study_arg import study_name

__all__ = ["StudyArg", "dashboard_command", "report_command", "study_name"]

StudyArg = Annotated[
    str,
    typer.Argument(
        help="Study name, its folder (studies/NAME, as tab completion gives) or its spec (YAML)"
    ),
]


def report_command(study: StudyArg, storage: StorageOpt = None, as_json: JsonOpt = False) -> None:
    """Write studies/<study>/report.html (self-contained, offline) and figures/*.png."""
    import json
    import time

    from dse import api
    from dse.cli.console import note, optuna_logging, progress_line
    from dse.cli.extras import require

    require("dashboard", "plotly", "dse report")
    require("dashboard", "matplotlib", "dse report")
    optuna_logging()  # the importances' in-memory study logs at INFO; shown with -v only
    name = study_name(study)
    api.open_study(name, storage=storage)  # a damaged or missing study: its one line alone
    note(f"report {name}: figures, tables and importances (about a minute for a large study)")
    t0 = time.monotonic()
    result = api.report(
        name,
        storage=storage,
        on_stage=lambda text: progress_line(
            f"report {name}: {text} ({time.monotonic() - t0:.0f} s)"
        ),
    )
    if as_json:
        trials, front = api.load_study(name, storage=storage)
        payload = {
            "study": name,
            "html": str(result.html),
            "figures": [str(p) for p in result.figures],
            "counts": api.trial_counts(trials),
            "front_size": len(front),
        }
        print(json.dumps(payload, indent=2))
        return
    progress_line(f"report {name}: done in {time.monotonic() - t0:.0f} s")
    print(f"wrote {result.html}")
    for p in result.figures:
        print(f"wrote {p}")


def dashboard_command(
    study: StudyArg,
    port: Annotated[int, typer.Option(help="Port to listen on", min=1, max=65535)] = 8080,
    host: Annotated[
        str, typer.Option(help="Address to bind; anything but localhost exposes the study")
    ] = "127.0.0.1",
    storage: StorageOpt = None,
    expose: Annotated[
        bool,
        typer.Option(
            "--expose",
            help="Allow a --host other than loopback (anyone who reaches it sees the study); "
            "served read-only",
        ),
    ] = False,
    allow_writes: Annotated[
        bool,
        typer.Option(
            "--allow-writes", help="With --expose: let visitors change or delete the study"
        ),
    ] = False,
    read_only: Annotated[
        bool,
        typer.Option(
            "--read-only",
            help="Refuse (405) every POST/PUT/PATCH/DELETE, on any host (always so when "
            "exposed without --allow-writes)",
        ),
    ] = False,
) -> None:
    """Serve optuna-dashboard on the study, with our feasible front as a figure and notes."""
    from dse.cli.console import optuna_logging
    from dse.cli.extras import require

    require("dashboard", "optuna_dashboard", "dse dashboard")
    require("dashboard", "plotly", "dse dashboard")
    optuna_logging()
    from dse.inspect.dashboard import serve

    serve(
        study_name(study),
        host=host,
        port=port,
        storage=storage,
        expose=expose,
        allow_writes=allow_writes,
        read_only=read_only,
    )
