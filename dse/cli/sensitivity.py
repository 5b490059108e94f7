"""``dse sensitivity SPEC``: the tables of :func:`dse.api.sensitivity`."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from dse.cli.console import note, out
from dse.cli.options import JsonOpt, SensitivityMethod, SetOpt, SpecArg

#: A swing or index below this (relative to the nominal / absolute) is printed as "no effect".
NO_EFFECT = 1e-9

__all__ = ["NO_EFFECT", "sensitivity_command"]


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:.4g}"


def sensitivity_command(
    spec: SpecArg,
    set_: SetOpt = None,
    design: Annotated[
        list[str] | None,
        typer.Option(
            "--design", help="Deprecated: name=value,name=value; use --set name=value", hidden=True
        ),
    ] = None,
    metric: Annotated[
        list[str] | None, typer.Option("--metric", help="Metric to analyse (default: objectives)")
    ] = None,
    top: Annotated[int, typer.Option(help="Rows per table (0: all)", min=0)] = 15,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only",
            help="Swing only these assumptions (a,b or repeated; a dotted name or its last part)",
            metavar="NAMES",
        ),
    ] = None,
    method: Annotated[
        SensitivityMethod,
        typer.Option(
            help="tornado: one at a time, p10/p90; sobol: first-order and total indices; "
            "morris: elementary effects (sobol and morris use SALib)",
            case_sensitive=False,
        ),
    ] = SensitivityMethod.tornado,
    samples: Annotated[
        int,
        typer.Option(help="sobol: base samples N (N x (d+2) runs); morris: trajectories", min=8),
    ] = 512,
    seed: Annotated[int, typer.Option(help="Seed of the sobol/morris samples")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Which assumptions move each objective of one design most: a tornado table, or global
    Sobol / Morris indices over the spec's uncertain assumptions."""
    from dse import api

    sets = list(set_ or [])
    if design:
        note("note: --design is deprecated; give each value as --set name=value")
        sets = [item for group in design for item in group.split(",") if item.strip()] + sets
    if method is not SensitivityMethod.tornado:
        from dse.cli.extras import require

        require("sensitivity", "SALib", f"dse sensitivity --method {method.value}")
    chosen = [n.strip() for group in only or [] for n in group.split(",") if n.strip()]
    payload = api.sensitivity_payload(
        spec,
        sets=sets,
        metrics=metric,
        method=method.value,
        samples=samples,
        seed=seed,
        only=chosen or None,
    )
    if as_json:
        print(json.dumps(payload, indent=2))
        return
    _print_tables(payload, top=top)


#: The tornado table's columns after "assumption": (heading, key of the row).
_TORNADO = (("low", "low"), ("high", "high"), ("{m} @ low", "metric_at_low"),
            ("{m} @ high", "metric_at_high"), ("swing", "swing"))  # fmt: skip


def _print_tables(payload: dict[str, Any], *, top: int) -> None:
    """Per metric, the assumptions that move it (largest effect first), then how many do not."""
    from rich.markup import escape
    from rich.table import Table

    from dse.inspect.global_sensitivity import COLUMNS

    method = payload["method"]
    tornado = method == "tornado"
    columns = _TORNADO if tornado else COLUMNS[method]
    what = {
        "tornado": f"swings from {payload.get('swings_from')}",
        "sobol": "Sobol indices (95 % confidence half-widths)",
        "morris": "Morris elementary effects (mu* in the metric's unit per full range)",
    }[method]
    for m, rows in payload["metrics"].items():
        head = f"{m} [{payload['units'].get(m, '')}]: "
        if tornado:
            nominal = rows[0]["nominal"] if rows else float("nan")
            title = f"{head}nominal {_fmt(nominal)}; {what}"
            floor = NO_EFFECT * max(abs(nominal), 1e-300)
            moving = [r for r in rows if abs(r["swing"]) > floor]
        else:
            title = f"{head}{what}; assumptions from {payload['assumptions_from']}"
            effect = "ST" if method == "sobol" else "mu_star"
            moving = [r for r in rows if abs(r[effect] or 0.0) > NO_EFFECT]
        if not moving:
            out.print(escape(f"{title}: no assumption has an effect"), highlight=False)
            continue
        # escape: a unit such as "[1/J]" would otherwise be read as rich markup and vanish
        t = Table(title=escape(title))
        t.add_column("assumption", no_wrap=True)
        for heading, _ in columns:
            t.add_column(heading.format(m=m), justify="right", no_wrap=True)
        if tornado:
            t.add_column("swing %", justify="right", no_wrap=True)
        for r in moving[: top or None]:
            cells = [_fmt(r[key]) for _, key in columns]
            if tornado:
                cells.append(f"{100 * r['swing'] / abs(nominal):.2f}" if nominal else "inf")
            t.add_row(r["assumption"], *cells)
        out.print(t)
        if len(rows) > len(moving):  # the others as one count (--json names them)
            count = len(rows) - len(moving)
            have = "assumption has" if count == 1 else "assumptions have"
            out.print(escape(f"{count} other {have} no effect on {m} (--json lists them)"),
                      highlight=False)  # fmt: skip
    if not tornado:
        out.print(f"recorded in {payload['recorded']} (shown by dse report)", markup=False,
                  highlight=False)  # fmt: skip
