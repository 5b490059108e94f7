"""Global, variance-based sensitivity of a design's metrics to the spec's uncertain
assumptions (``dse sensitivity --method sobol|morris``), with SALib.

Every assumption is sampled in probability space (a uniform q in (0, 1) per assumption, mapped
through the assumption's own quantile function ``Uncertain.ppf``), so the indices describe the
metric's variance under the distributions the spec declares; without distributions the
evaluators' default assumptions swing over a triangular +/-20 % (as the tornado table). What
``S1``/``ST`` and ``mu_star``/``sigma`` mean: docs/robust.md.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dse.errors import DseError
from dse.model.robust import Uncertain, evaluate_under, vectorizable
from dse.model.study_model import StudyModel
from dse.spec.atomic import write_text_atomic
from dse.spec.messages import choices_text

__all__ = [
    "COLUMNS",
    "METHODS",
    "Index",
    "global_html",
    "global_sensitivity",
    "indices",
    "record_global",
]

METHODS = ("sobol", "morris")
#: Each method's indices as tables show them: (heading, key of :class:`Index`).
COLUMNS = {
    "sobol": (("S1", "S1"), ("S1 ±", "S1_conf"), ("ST", "ST"), ("ST ±", "ST_conf")),
    "morris": (("mu*", "mu_star"), ("mu* ±", "mu_star_conf"), ("sigma", "sigma")),
}
#: Quantiles are kept this far inside (0, 1): the normal and lognormal tails are unbounded.
_Q_EPS = 1e-6
_CONF = 0.95


@dataclass(frozen=True)
class Index:
    """One assumption's indices for one metric (``S1``/``ST`` for Sobol, ``mu_star``/``sigma``
    for Morris; the other pair is NaN)."""

    assumption: str
    S1: float = float("nan")
    S1_conf: float = float("nan")
    ST: float = float("nan")
    ST_conf: float = float("nan")
    mu_star: float = float("nan")
    mu_star_conf: float = float("nan")
    sigma: float = float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {
            k: (None if isinstance(v, float) and v != v else v) for k, v in asdict(self).items()
        }


def _problem(names: list[str]) -> dict[str, Any]:
    return {"num_vars": len(names), "names": names, "bounds": [[0.0, 1.0]] * len(names)}


def indices(
    fn: Callable[[dict[str, np.ndarray]], Mapping[str, np.ndarray]],
    assumptions: list[Uncertain],
    *,
    method: str = "sobol",
    samples: int = 512,
    seed: int = 0,
) -> dict[str, list[Index]]:
    """Indices of every metric ``fn`` returns, per assumption, largest first.

    ``fn`` takes ``{assumption name: values}`` (one array per assumption, all of one length)
    and returns ``{metric: values}`` of that length: one vectorized call for all samples.
    """
    if method not in METHODS:
        raise DseError(
            f"--method {method!r}: valid choices: {choices_text((*METHODS, 'tornado'))}"
        )
    if not assumptions:
        raise DseError("no uncertain assumption to analyse")
    names = [u.name for u in assumptions]
    problem = _problem(names)
    if method == "sobol":
        from SALib.sample import sobol as sampler

        q = sampler.sample(problem, samples, calc_second_order=False, seed=seed)
    else:
        from SALib.sample import morris as sampler

        q = sampler.sample(problem, samples, num_levels=4, seed=seed)
    q = np.clip(q, _Q_EPS, 1 - _Q_EPS)
    values = {u.name: u.ppf(q[:, j]) for j, u in enumerate(assumptions)}
    out = fn(values)
    table: dict[str, list[Index]] = {}
    for metric, y in out.items():
        y = np.asarray(y, dtype=float).reshape(-1)
        bad = int((~np.isfinite(y)).sum())
        if bad:
            raise DseError(
                f"{metric}: {bad} of {len(y)} samples gave a non-finite value; narrow the "
                "distributions or analyse another --metric"
            )
        if method == "sobol":
            from SALib.analyze import sobol as analyzer

            if np.ptp(y) == 0:  # a metric the assumptions do not move: no variance to split
                rows = [Index(n, 0.0, 0.0, 0.0, 0.0) for n in names]
            else:
                si = analyzer.analyze(
                    problem, y, calc_second_order=False, conf_level=_CONF, seed=seed
                )
                rows = [
                    Index(n, *(float(si[k][j]) for k in ("S1", "S1_conf", "ST", "ST_conf")))
                    for j, n in enumerate(names)
                ]
            rows.sort(key=lambda r: (-r.ST, r.assumption))
        else:
            from SALib.analyze import morris as analyzer

            si = analyzer.analyze(problem, q, y, num_levels=4, conf_level=_CONF, seed=seed)
            rows = [
                Index(
                    n,
                    mu_star=float(si["mu_star"][j]),
                    mu_star_conf=float(si["mu_star_conf"][j]),
                    sigma=float(si["sigma"][j]),
                )
                for j, n in enumerate(names)
            ]
            rows.sort(key=lambda r: (-r.mu_star, r.assumption))
        table[metric] = rows
    return table


def global_sensitivity(
    model: StudyModel,
    params: dict[str, Any],
    *,
    method: str = "sobol",
    metrics: list[str] | None = None,
    samples: int = 512,
    seed: int = 0,
) -> dict[str, list[Index]]:
    """Sobol or Morris indices of one design's metrics (default: the objectives) over the
    spec's uncertain assumptions (the evaluators' default assumptions +/-20 % when it
    declares none)."""
    from dse.inspect.sensitivity import assumptions_of, checked_metrics, scenario_model_of

    metrics = checked_metrics(model, metrics)
    assumptions = [u for u, _, _ in assumptions_of(model)]
    scenario_model = scenario_model_of(model, assumptions)
    fast: list[bool] = []

    def fn(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if not fast:
            fast.append(vectorizable(scenario_model, params, values))
        out = evaluate_under(scenario_model, params, values, vectorized=fast[0], strict=False)
        return {m: out[m] for m in metrics}

    return indices(fn, assumptions, method=method, samples=samples, seed=seed)


def _record_path(study: str, method: str) -> Path:
    from dse.search.storage import study_dir

    return study_dir(study, create=True) / f"sensitivity_{method}.json"


def record_global(study: str, payload: dict[str, Any]) -> Path:
    """Keep the last Sobol/Morris result in the study folder (``dse report`` shows it)."""
    path = _record_path(study, payload["method"])
    write_text_atomic(path, json.dumps(payload, indent=2) + "\n")
    return path


def global_html(study: str) -> list[str]:
    """Report sections for the recorded Sobol/Morris results of a study (none: nothing)."""
    import pandas as pd

    from dse.inspect.formatting import html_table

    parts: list[str] = []
    for method in METHODS:
        path = _record_path(study, method)
        if not path.is_file():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        sobol = method == "sobol"
        columns = COLUMNS[method]
        title = "Sobol indices" if sobol else "Morris elementary effects"
        parts.append(
            f"<h2>Global sensitivity: {title}</h2><p>Design "
            f"<code>{html.escape(json.dumps(data['params']))}</code>; "
            f"{data['samples']} base samples, seed {data['seed']}; assumptions from "
            f"{html.escape(data['assumptions_from'])}. "
            + (
                "S1: share of the metric's variance due to the assumption alone; ST: including "
                "its interactions; ± is the 95 % bootstrap confidence half-width."
                if sobol
                else "mu*: mean absolute change of the metric when the assumption moves "
                "across its range; sigma: interactions and non-linearity."
            )
            + f" Recorded by <code>dse sensitivity --method {method}</code>.</p>"
        )
        for metric, rows in data["metrics"].items():
            cells = [
                [r["assumption"], *("" if r[c] is None else f"{r[c]:.3f}" for _, c in columns)]
                for r in rows
            ]
            frame = pd.DataFrame(cells, columns=["assumption", *(h for h, _ in columns)])
            parts.append(f"<h3>{html.escape(metric)}</h3>{html_table(frame)}")
    return parts
