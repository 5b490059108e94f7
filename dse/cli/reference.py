"""The command-line reference (``docs/cli.md``), generated from the typer app itself by typer's
own Markdown generator (what ``typer dse.cli.app utils docs`` writes).

``python -m dse.cli.reference > docs/cli.md`` writes it; ``tests/test_docs.py`` checks that the
committed page equals this output, so a new option cannot go undocumented.
"""

from __future__ import annotations

import typer

__all__ = ["HEADER", "reference"]

HEADER = """# Command-line reference

Generated from the `dse` command itself by `python -m dse.cli.reference > docs/cli.md`
(`tests/test_docs.py` fails when this page is out of date). Every command also prints this
with `--help`. Exit codes: 0 ok, 2 bad input (one line per problem), 1 internal error,
130 interrupted (re-run to resume).

"""


def reference() -> str:
    from typer.cli import get_docs_for_click

    from dse.cli.app import app

    group = typer.main.get_command(app)
    ctx = typer.Context(group, info_name="dse")
    page = get_docs_for_click(obj=group, ctx=ctx, name="dse", indent=1)
    return HEADER + page.strip() + "\n"


if __name__ == "__main__":
    print(reference(), end="")
