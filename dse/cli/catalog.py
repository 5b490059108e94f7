"""``dse init``, ``dse presets`` and ``dse params``: what the installed package offers, for a
user with no repository at hand (the installed catalogs, :mod:`dse.model.catalogs`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer

from dse.cli.console import note, out
from dse.cli.options import JsonOpt
from dse.errors import DseError

__all__ = [
    "init_command",
    "params_command",
    "plausibility_notes",
    "presets_command",
    "print_headlines",
]

_STUDY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # dse.spec.schema's pattern


def init_command(
    name: Annotated[
        str | None,
        typer.Argument(
            help="Study name: writes NAME.yaml (default: the starter example's name)",
            show_default=False,
        ),
    ] = None,
    example: Annotated[
        str | None,
        typer.Option("--from", help="Start from this shipped example (default: the starter)"),
    ] = None,
    examples: Annotated[
        bool, typer.Option("--examples", help="Also write every shipped example spec")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite files that exist")] = False,
) -> None:
    """Write a starter spec (and, with --examples, the shipped examples) into this folder."""
    from dse.model import catalogs

    shipped = catalogs.examples()
    if not shipped:
        raise DseError("no installed package ships example specs (entry points 'dse.catalogs')")
    base = example or catalogs.starter() or next(iter(shipped))
    if base not in shipped:
        raise DseError(
            f"--from {base!r}: no such example ({catalogs.closest(base, list(shipped))}"
            f"valid: {', '.join(sorted(shipped))})"
        )
    study = name or base
    if not _STUDY_NAME.match(study):
        raise DseError(
            f"NAME {study!r}: a study name is letters, digits, '.', '_' or '-' (at most 100, "
            "starting with a letter or digit)"
        )
    text = re.sub(r"(?m)^study: .*$", f"study: {study}", shipped[base], count=1)
    files = {Path(f"{study}.yaml"): text}
    if examples:
        for ex, body in shipped.items():
            files.setdefault(Path(f"{ex}.yaml"), body)
    existing = [str(p) for p in files if p.exists()]
    if existing and not force:  # nothing is written unless everything can be
        raise DseError(f"{', '.join(existing)} already exist(s); use --force to overwrite")
    for path, body in files.items():
        path.write_text(body, encoding="utf-8")
        out.print(f"wrote {path}", highlight=False)
    spec = f"{study}.yaml"
    note(
        f"next: dse validate {spec} · dse evaluate {spec} · dse run {spec} --trials 50 · "
        f"dse pareto {spec} · dse report {spec}"
    )


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _table(rows: list[dict[str, Any]], *, title: str, wrap: tuple[str, ...] = ()) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    cols = list(dict.fromkeys(k for r in rows for k in r))
    for c in cols:
        narrow = {"value": 24, "unit": 14}.get(c)
        table.add_column(
            c, no_wrap=c not in wrap and not narrow, overflow="fold", max_width=narrow
        )
    for r in rows:
        table.add_row(*(_cell(r.get(c)) for c in cols))
    return table


def presets_command(
    kind: Annotated[
        str | None,
        typer.Argument(
            help="A kind of preset, as the listing names it (default: every kind)",
            show_default=False,
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Argument(
            help="One preset: every field with its unit and source", show_default=False
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the presets a spec can name, by kind, or one preset in full."""
    from dse.model import catalogs

    if name is not None:
        rows = catalogs.preset_detail(kind or "", name)
        if as_json:
            print(json.dumps(rows, indent=2, default=str))
            return
        out.print(_table(rows, title=f"{kind} preset {name}", wrap=("source",)))
        return
    kinds = catalogs.preset_kinds()
    chosen = [kind] if kind is not None else list(kinds)
    listing = {k: catalogs.preset_rows(k) for k in chosen}
    if as_json:
        print(json.dumps(listing, indent=2, default=str))
        return
    if not kinds:
        raise DseError("no installed package offers presets (entry points 'dse.catalogs')")
    for k, rows in listing.items():
        where = kinds.get(k, "")
        out.print(_table(rows, title=f"{k}: {where}", wrap=("description",)))
    note("dse presets KIND NAME: every field of one preset, with its unit and source")


def params_command(as_json: JsonOpt = False) -> None:
    """List the design parameters a spec may fix or search, with units and defaults."""
    from dse.model import catalogs

    rows = catalogs.params()
    if as_json:
        print(json.dumps(rows, indent=2, default=str))
        return
    out.print(_table(rows, title="Design parameters (fixed: or space:)", wrap=("meaning",)))
    note("a preset's own constants: dse presets KIND NAME (each with its unit and source)")


def plausibility_notes(model: Any) -> None:
    """Warn (a note, never an error) about fixed values outside their plausible range."""
    from dse.cli.console import err, verbosity
    from dse.model import catalogs

    if verbosity.quiet:
        return
    for text in catalogs.plausibility(model.context):
        err.print(f"warning: {text}", markup=False, highlight=False)


def print_headlines(context: Any) -> None:
    """The catalogs' headline assumptions of a result (the price basis) in its resolved
    ``fixed`` context, above the numbers."""
    from dse.model import catalogs

    for text in catalogs.headlines(context):
        out.print(text, markup=False, highlight=False)
