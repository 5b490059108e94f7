"""Layer 6: the ``dse`` command line (typer commands only: parse, call the layers below, print).

The console script is ``dse.cli:main``; ``python -m dse.cli`` runs the same app.
"""

from __future__ import annotations

from dse.cli.app import app, main

__all__ = ["app", "main"]
