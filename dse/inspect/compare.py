"""``dse compare DESIGN ...``: fixed designs side by side, every metric with its unit and the
ratio to the first design (a baseline design against its alternatives).

A design argument is ``SPEC`` (the spec's fixed design, as ``dse evaluate SPEC``) or
``SPEC::name=value,name=value`` (as ``dse evaluate SPEC --set name=value --set ...``: a
searched parameter or a dotted fixed value such as ``group.field``).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from dse.model.load import evaluate, load_for_evaluate
from dse.spec.errors import DesignError

SEP = "::"


@dataclass
class Design:
    label: str
    spec: Path
    sets: list[str]
    metrics: dict[str, float]
    units: dict[str, str]


def parse_design(arg: str) -> tuple[Path, list[str]]:
    """``SPEC`` or ``SPEC::a=1,b=2`` -> (spec path, ["a=1", "b=2"])."""
    spec, _, rest = arg.partition(SEP)
    sets = [s.strip() for s in rest.split(",") if s.strip()] if rest else []
    bad = [s for s in sets if "=" not in s]
    if not spec or bad or (SEP in arg and not sets):
        raise DesignError(
            f"design {arg!r}: expected SPEC or SPEC::name=value,name=value "
            f"(e.g. spec.yaml::x=0.2,n=64)"
        )
    return Path(spec), sets


def evaluate_design(arg: str) -> Design:
    spec, sets = parse_design(arg)
    model, params = load_for_evaluate(spec, sets)
    metrics = evaluate(model, params)
    units = {k: model.metrics[k].unit for k in metrics if k in model.metrics}
    return Design(label=model.spec.study, spec=spec, sets=sets, metrics=metrics, units=units)


def _unique_labels(designs: list[Design]) -> None:
    seen: dict[str, int] = {}
    for d in designs:
        k = seen.get(d.label, 0)
        seen[d.label] = k + 1
        if k:
            d.label = f"{d.label}#{k + 1}"


def ratio(value: float | None, base: float | None) -> float | None:
    if value is None or base is None or base == 0 or not math.isfinite(base):
        return None
    return value / base


def compare_rows(designs: list[Design]) -> list[dict[str, object]]:
    """One row per metric (union over designs, first design's order first)."""
    names: list[str] = []
    for d in designs:
        names += [m for m in d.metrics if m not in names]
    base = designs[0]
    rows = []
    for m in names:
        row: dict[str, object] = {
            "metric": m,
            "unit": next((d.units[m] for d in designs if m in d.units), ""),
        }
        for i, d in enumerate(designs):
            row[d.label] = d.metrics.get(m)
            if i:
                row[f"{d.label}/{base.label}"] = ratio(d.metrics.get(m), base.metrics.get(m))
        rows.append(row)
    return rows


def compare(
    args: list[str], *, labels: list[str] | None = None
) -> tuple[list[Design], list[dict[str, object]]]:
    """Evaluate each design; ``labels`` name the first designs (default: the study name)."""
    if not args:
        raise DesignError("give at least one design: SPEC or SPEC::name=value,name=value")
    labels = labels or []
    if len(labels) > len(args):
        raise DesignError(f"{len(labels)} --label options for {len(args)} designs")
    designs = [evaluate_design(a) for a in args]
    for d, name in zip(designs, labels, strict=False):
        d.label = name
    _unique_labels(designs)
    return designs, compare_rows(designs)


def to_csv(rows: list[dict[str, object]]) -> str:
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows({k: ("" if v is None else v) for k, v in r.items()} for r in rows)
    return buf.getvalue()
