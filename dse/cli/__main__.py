"""``python -m dse.cli`` (how ``dse run --jobs`` starts its workers)."""

from __future__ import annotations

from dse.cli.app import main

main()
