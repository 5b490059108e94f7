"""``dse sensitivity SPEC``: the tables of :func:`dse.api.sensitivity`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from dse.cli.console import note, out
from dse.cli.options import JsonOpt, SensitivityMethod, SetOpt

#: A swing or index below this (relative to the nominal / absolute) is printed as "no effect".
NO_EFFECT = 1e-9

__all__ = ["NO_EFFECT", "sensitivity_command"]


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:.4g}"


def sensitivity_command(
    spec: Annotated[Path, typer.Argument(help="Study spec (YAML)", show_default=False)],
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
    if method is SensitivityMethod.tornado:
        _print_tornado(payload, top=top)
    else:
        _print_global(payload, top=top)


def _print_tornado(payload: dict[str, Any], *, top: int) -> None:
    from rich.markup import escape
    from rich.table import Table

    source = payload["swings_from"]
    for m, rows in payload["metrics"].items():
        unit = payload["units"].get(m, "")
        nominal = rows[0]["nominal"] if rows else float("nan")
        title = f"{m} [{unit}]: nominal {_fmt(nominal)}; swings from {source}"
        moving = [r for r in rows if abs(r["swing"]) > NO_EFFECT * max(abs(nominal), 1e-300)]
        if not moving:
            out.print(escape(f"{title}: no assumption has an effect"), highlight=False)
            continue
        # escape: a unit such as "[1/J]" would otherwise be read as rich markup and vanish
        t = Table(title=escape(title))
        for c in ("assumption", "low", "high", f"{m} @ low", f"{m} @ high", "swing", "swing %"):
            t.add_column(c, justify="left" if c == "assumption" else "right", no_wrap=True)
        for s in moving[: top or None]:
            t.add_row(
                s["assumption"],
                _fmt(s["low"]),
                _fmt(s["high"]),
                _fmt(s["metric_at_low"]),
                _fmt(s["metric_at_high"]),
                _fmt(s["swing"]),
                f"{100 * s['swing'] / abs(nominal):.2f}" if nominal else "inf",
            )
        out.print(t)
        _no_effect_line(m, len(rows) - len(moving))


def _no_effect_line(metric: str, count: int) -> None:
    """The assumptions that do not move a metric, as one count (--json names them)."""
    from rich.markup import escape

    if count:
        what = "assumption has" if count == 1 else "assumptions have"
        out.print(escape(f"{count} other {what} no effect on {metric} (--json lists them)"),
                  highlight=False)  # fmt: skip


def _print_global(payload: dict[str, Any], *, top: int) -> None:
    from rich.markup import escape
    from rich.table import Table

    method, source = payload["method"], payload["assumptions_from"]
    sobol = method == "sobol"
    what = (
        "Sobol indices (95 % confidence half-widths)"
        if sobol
        else "Morris elementary effects (mu* in the metric's unit per full range)"
    )
    keys = ("S1", "S1_conf", "ST", "ST_conf") if sobol else ("mu_star", "mu_star_conf", "sigma")
    effect = "ST" if sobol else "mu_star"
    for m, rows in payload["metrics"].items():
        unit = payload["units"].get(m, "")
        title = f"{m} [{unit}]: {what}; assumptions from {source}"
        moving = [r for r in rows if abs(r[effect] or 0.0) > NO_EFFECT]
        if not moving:
            out.print(escape(f"{title}: no assumption has an effect"), highlight=False)
            continue
        t = Table(title=escape(title))
        t.add_column("assumption", no_wrap=True)
        for c in ("S1", "S1 ±", "ST", "ST ±") if sobol else ("mu*", "mu* ±", "sigma"):
            t.add_column(c, justify="right", no_wrap=True)
        for r in moving[: top or None]:
            t.add_row(r["assumption"], *(_fmt(r[k]) for k in keys))
        out.print(t)
        _no_effect_line(m, len(rows) - len(moving))
    out.print(f"recorded in {payload['recorded']} (shown by dse report)", markup=False,
              highlight=False)  # fmt: skip
