"""docs/validation.md is one file written by several validation scripts, each owning one section
that starts at its marker line (``<!-- section: NAME (benchmarks/SCRIPT.py) -->``)."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "validation.md"
SECTION_MARK = "\n<!-- section: "


def write_section(mark: str, text: str, doc: Path = DOC) -> None:
    """Replace (or append) the section that starts at ``mark`` with ``text``, keeping the rest
    of ``doc`` (up to the next section's marker) as it is."""
    old = doc.read_text(encoding="utf-8") if doc.exists() else ""
    at = old.find(mark)
    if at < 0:
        doc.write_text(old.rstrip("\n") + "\n\n" + text, encoding="utf-8")
        return
    nxt = old.find(SECTION_MARK, at + len(mark))
    tail = "" if nxt < 0 else old[nxt:]
    doc.write_text(old[:at].rstrip("\n") + "\n\n" + text + tail, encoding="utf-8")
