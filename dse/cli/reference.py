"""The command-line reference (``docs/cli.md``), generated from the typer app itself.

``python -m dse.cli.reference > docs/cli.md`` writes it; ``tests/test_docs.py`` checks that the
committed page equals this output, so a new option cannot go undocumented.
"""

from __future__ import annotations

from typing import Any

import typer

__all__ = ["HEADER", "reference"]

HEADER = """# Command-line reference

Generated from the `dse` command itself by `python -m dse.cli.reference > docs/cli.md`
(`tests/test_docs.py` fails when this page is out of date). Every command also prints this
with `--help`. Exit codes: 0 ok, 2 bad input (one line per problem), 1 internal error,
130 interrupted (re-run to resume).

"""


def _click_app() -> Any:
    """The app as typer's (vendored) click group; read through click's public attributes."""
    from dse.cli.app import app

    return typer.main.get_command(app)


def _is_argument(p: Any) -> bool:
    return getattr(p, "param_type_name", "") == "argument"


def _context(cmd: Any, name: str, parent: Any = None) -> Any:
    return cmd.context_class(cmd, info_name=name, parent=parent)


def _option_row(o: Any, ctx: Any) -> str:
    record = o.get_help_record(ctx)
    if record is None:
        return ""
    names, help_text = record
    return f"| `{_escape(names)}` | {_escape(help_text)} |"


def _command(name: str, cmd: Any, ctx: Any) -> list[str]:
    usage = " ".join(cmd.collect_usage_pieces(ctx)).replace("{", "").replace("}", "")
    lines = [f"## dse {name}", "", f"`dse {name} {usage}`", ""]
    doc = (cmd.help or "").strip()
    if doc:
        lines += [doc, ""]
    args = [p for p in cmd.params if _is_argument(p)]
    opts = [p for p in cmd.params if not _is_argument(p) and not p.hidden]
    if args:
        lines += ["| argument | meaning |", "|---|---|"]
        for a in args:
            many = " ..." if a.nargs == -1 else ""
            name_ = (a.name or "").upper()
            lines.append(f"| `{name_}{many}` | {_escape(getattr(a, 'help', ''))} |")
        lines.append("")
    if opts:
        lines += ["| option | meaning |", "|---|---|"]
        lines += [row for o in opts if (row := _option_row(o, ctx))]
        lines.append("")
    return lines


def _escape(text: Any) -> str:
    return str(text or "").replace("|", "\\|").replace("\n", " ")


def reference() -> str:
    group = _click_app()
    ctx = _context(group, "dse")
    lines = [HEADER.rstrip("\n"), "", "## dse", "", "`dse [OPTIONS] COMMAND [ARGS]...`", ""]
    lines += ["| option | meaning |", "|---|---|"]
    lines += [row for o in group.params if not o.hidden and (row := _option_row(o, ctx))]
    lines.append("")
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        lines += _command(name, cmd, _context(cmd, name, ctx))
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    print(reference(), end="")
