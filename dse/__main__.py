"""``python -m dse``: the ``dse`` command."""

from __future__ import annotations

from dse.cli.app import main

main()
