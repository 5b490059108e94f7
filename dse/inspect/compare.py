"""``dse compare DESIGN ...``: fixed designs side by side, every metric with its unit and the
ratio to the first design (a baseline design against its alternatives).

A design argument is ``SPEC`` (the spec's fixed design, as ``dse evaluate SPEC``) or
``SPEC::name=value,name=value`` (as ``dse evaluate SPEC --set name=value --set ...``: a
searched parameter or a dotted fixed value such as ``group.field``). ``sets`` (the CLI's
repeatable ``--set name=value``) apply to every design, before each design's own values.

The rows lead with what decides a comparison: whether each design is feasible and which
constraints it violates, then the objectives, then the other metrics grouped by evaluator.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dse.errors import DesignError
from dse.inspect.design import design_view, select_metrics
from dse.model import catalogs
from dse.model.load import evaluate, load_for_evaluate

SEP = "::"


@dataclass
class Design:
    label: str
    spec: Path
    sets: list[str]
    metrics: dict[str, float]
    units: dict[str, str]
    feasible: bool = True
    violated: list[str] = field(default_factory=list)
    objectives: list[str] = field(default_factory=list)
    headlines: list[str] = field(default_factory=list)


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


def evaluate_design(arg: str | tuple[Path, list[str]], *, sets: list[str] | None = None) -> Design:
    """One design: ``SPEC::name=value,...``, or (spec, its own ``name=value`` items)."""
    spec, own = parse_design(arg) if isinstance(arg, str) else arg
    sets = [*(sets or []), *own]
    model, params = load_for_evaluate(spec, sets)
    metrics = evaluate(model, params)
    view = design_view(model, params, metrics)
    return Design(
        headlines=catalogs.headlines(model.context),
        label=model.spec.study,
        spec=spec,
        sets=sets,
        metrics=metrics,
        units=view["units"],
        feasible=view["feasible"],
        violated=view["violated"],
        objectives=list(view["objectives"]),
    )


def headline_lines(designs: list[Design]) -> list[str]:
    """The assumptions a comparison rests on (the catalogs' headlines: the price basis), said
    once when every design shares them, else per design, since a design priced at cost and
    one at market are not compared like for like."""
    if all(d.headlines == designs[0].headlines for d in designs):
        return list(designs[0].headlines)
    return [f"{d.label}: {h}" for d in designs for h in d.headlines]


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


def _ordered_names(designs: list[Design]) -> list[str]:
    """Objectives first (the first design's, then others'), then the rest grouped by
    evaluator in first-seen order."""
    names: list[str] = []
    for d in designs:
        names += [m for m in d.objectives if m not in names]
    rest: list[str] = []
    for d in designs:
        rest += [m for m in d.metrics if m not in names and m not in rest]
    groups = list(dict.fromkeys(m.split(".", 1)[0] for m in rest))
    return names + sorted(rest, key=lambda m: groups.index(m.split(".", 1)[0]))


def compare_rows(
    designs: list[Design], *, metrics: list[str] | None = None
) -> list[dict[str, object]]:
    """A ``feasible`` row and a ``violated`` row, then one row per metric (objectives first);
    ``metrics`` are ``--metric`` patterns (:func:`dse.inspect.design.select_metrics`)."""
    names = select_metrics(_ordered_names(designs), metrics)
    base = designs[0]
    rows: list[dict[str, object]] = []
    verdict: dict[str, object] = {"metric": "feasible", "unit": ""}
    violated: dict[str, object] = {"metric": "violated constraints", "unit": ""}
    for i, d in enumerate(designs):
        verdict[d.label] = "yes" if d.feasible else "NO"
        violated[d.label] = "; ".join(d.violated) or "none"
        if i:
            verdict[f"{d.label}/{base.label}"] = None
            violated[f"{d.label}/{base.label}"] = None
    rows += [verdict, violated]
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
    args: Sequence[str | tuple[Path, list[str]]],
    *,
    labels: list[str] | None = None,
    sets: list[str] | None = None,
    metrics: list[str] | None = None,
) -> tuple[list[Design], list[dict[str, object]]]:
    """Evaluate each design; ``labels`` name the first designs (default: the study name),
    ``sets`` apply to all of them, ``metrics`` select rows."""
    if not args:
        raise DesignError("give at least one design: SPEC or SPEC::name=value,name=value")
    labels = labels or []
    if len(labels) > len(args):
        raise DesignError(f"{len(labels)} --label options for {len(args)} designs")
    designs = [evaluate_design(a, sets=sets) for a in args]
    for d, name in zip(designs, labels, strict=False):
        d.label = name
    _unique_labels(designs)
    return designs, compare_rows(designs, metrics=metrics)


def to_csv(rows: list[dict[str, object]]) -> str:
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows({k: ("" if v is None else v) for k, v in r.items()} for r in rows)
    return buf.getvalue()
