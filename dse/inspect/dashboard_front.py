"""optuna-dashboard's own panels, told the feasible truth (``dse dashboard``).

optuna-dashboard 0.21 reads a trial's constraints only in Optuna's old list form, so on its own
its Pareto plot and "Best Trials" ignore feasibility (docs/dashboard.md). Writing the list form
into the storage would make Optuna itself count every constraint twice, so instead
:func:`feasible_front_app` wraps the dashboard's public ``wsgi()`` app and rewrites one answer,
the study detail (``GET /api/studies/<id>``): each trial carries its constraint values in that
list form, and ``best_trials`` is the feasible front of ``pareto.csv``, recomputed from the live
storage on every request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs, urlencode

import optuna

from dse.results.records import front_frame, trials_frame
from dse.search.optuna_private import study_id as private_study_id

_STUDY_DETAIL = re.compile(r"/api/studies/(\d+)/?")


def constraint_lists(
    study: optuna.Study, constraints: list[str], *, objectives: list[str], maximize: list[bool]
) -> tuple[dict[int, list[float]], list[int]]:
    """Per trial number, its constraint values in spec order; and the feasible front (the
    trials of ``pareto.csv``: :func:`dse.results.records.front_frame`)."""
    lists = {
        t.number: [
            float(v) for c in constraints if (v := t.constraints.get(c)) is not None and v == v
        ]
        for t in study.get_trials(deepcopy=False)
    }
    df = trials_frame(study, objectives=objectives, maximize=maximize)
    front = front_frame(df, objectives=objectives, maximize=maximize)
    return lists, [int(n) for n in front["number"]]


def feasible_front_app(
    app: Callable[..., Iterable[bytes]],
    study: optuna.Study,
    constraints: list[str],
    *,
    objectives: list[str],
    maximize: list[bool],
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
            lists, front = constraint_lists(
                study, constraints, objectives=objectives, maximize=maximize
            )
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
