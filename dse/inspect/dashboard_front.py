"""optuna-dashboard's own panels, told the feasible truth (``dse dashboard``).

optuna-dashboard 0.21 reads a trial's constraints only from the list-form system attribute
``constraints`` (Optuna's old format); trials told with ``trial.set_constraint`` show none, so
its Pareto-front plot marks no trial infeasible, and its "Best Trials" card lists the
unconstrained front, infeasible designs included. Writing the list form into the storage as
well would make Optuna itself see every constraint twice (``trial.constraints`` merges both
forms), so instead the dashboard is served through :func:`feasible_front_app`, a WSGI layer
around optuna-dashboard's public ``wsgi()`` app that rewrites one JSON answer, the study
detail (``GET /api/studies/<id>``):

- every trial carries its constraint values in the list form the dashboard reads (spec
  order), so its Pareto plot draws infeasible trials apart and computes its front from the
  feasible ones;
- ``best_trials`` is the project's feasible front (``dse.results.records.front_frame``, the
  trials of ``pareto.csv``), recomputed from the live storage on every request.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs, urlencode

import optuna

from dse.results.records import front_frame, trials_frame
from dse.search.optuna_private import study_id as private_study_id

_STUDY_DETAIL = re.compile(r"/api/studies/(\d+)/?")


def constraint_lists(
    study: optuna.Study, constraints: list[str]
) -> tuple[dict[int, list[float]], list[int]]:
    """Per trial number, its constraint values in spec order; and the feasible front."""
    directions = study.directions
    maximize = [d == optuna.study.StudyDirection.MAXIMIZE for d in directions]
    names = [f"obj{i}" for i in range(len(directions))]
    df = trials_frame(study, objectives=names, maximize=maximize)
    values = {t.number: t.values for t in study.get_trials(deepcopy=False)}
    for i, name in enumerate(names):
        df[name] = [
            (values[n][i] if values.get(n) is not None else math.nan) for n in df["number"]
        ]
    front = front_frame(df, objectives=names, maximize=maximize)
    lists: dict[int, list[float]] = {}
    cols = [f"constraint.{c}" for c in constraints]
    for row in df.to_dict("records"):
        got = [row.get(c) for c in cols if c in row]
        lists[int(row["number"])] = [float(v) for v in got if v is not None and v == v]
    return lists, [int(n) for n in front["number"]]


def feasible_front_app(
    app: Callable[..., Iterable[bytes]],
    study: optuna.Study,
    constraints: list[str],
) -> Callable[..., Iterable[bytes]]:
    """Wrap optuna-dashboard's WSGI ``app`` so its study detail tells the feasible truth."""
    study_id = private_study_id(study)

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        m = _STUDY_DETAIL.fullmatch(str(environ.get("PATH_INFO", "")))
        if environ.get("REQUEST_METHOD", "GET") != "GET" or not m or int(m[1]) != study_id:
            return app(environ, start_response)
        query = parse_qs(str(environ.get("QUERY_STRING", "")))
        after = int((query.pop("after", None) or ["0"])[0] or 0)
        full = dict(environ, QUERY_STRING=urlencode(query, doseq=True))
        captured: dict[str, Any] = {}

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            captured.update(status=status, headers=headers)
            return lambda _data: None

        body = b"".join(app(full, capture))
        status, headers = captured["status"], captured["headers"]
        if status.startswith("200"):
            data = json.loads(body)
            lists, front = constraint_lists(study, constraints)
            by_number = {t["number"]: t for t in data.get("trials", [])}
            for t in by_number.values():
                if not t.get("constraints"):
                    t["constraints"] = lists.get(t["number"], [])
            data["best_trials"] = [by_number[n] for n in sorted(front) if n in by_number]
            data["trials"] = data.get("trials", [])[after:]
            body = json.dumps(data).encode()
            headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
            headers.append(("Content-Length", str(len(body))))
        start_response(status, headers)
        return [body]

    return wrapped
