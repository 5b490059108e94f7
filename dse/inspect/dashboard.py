"""``dse dashboard STUDY``: optuna-dashboard on the study's storage, carrying the true front.

Its own panels are served with the feasible front put right (:mod:`dse.inspect.dashboard_front`);
before serving, our front figures, a study note and a note per trial are stored through the
dashboard's own API for user figures and notes, derived from the records ``dse pareto`` prints
and rewritten only when they changed (docs/dashboard.md lists what each shows).
"""

from __future__ import annotations

import ipaddress
import json
import socket
import sys
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import yaml
from optuna_dashboard import save_note, save_plotly_graph_object, wsgi

from dse.errors import DseError
from dse.inspect.dashboard_front import feasible_front_app
from dse.inspect.formatting import fmt
from dse.inspect.study_view import (
    StudyView,
    category,
    front_table,
    ideal_point,
    knee_index,
    load_view,
    normalised_hypervolume_history,
    view_reference_point,
)
from dse.model.outcome import satisfied
from dse.search import optuna_private
from dse.search.optuna_private import storage_of
from dse.search.optuna_private import study_id as private_study_id
from dse.search.optuna_private import trial_id as private_trial_id

FRONT_FIGURE_ID = "dse-feasible-pareto-front"
PARAMETER_FIGURE_ID = "dse-objectives-by-parameter"
NOTE_MARKER = "dse: feasible Pareto front"


@dataclass
class Annotation:
    """What ``annotate`` stored: the front's trial numbers and how much was (re)written."""

    front_numbers: list[int]
    figure_written: bool
    note_written: bool
    trial_notes_written: int


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def study_note(view: StudyView) -> str:
    """Markdown for the study page: summary, objectives, front, hypervolume, spec."""
    cats = category(view).value_counts().to_dict()
    ref, ref_src = view_reference_point(view)
    ideal = ideal_point(view)
    hist = normalised_hypervolume_history(view)
    knee = knee_index(view)
    table = front_table(view)
    knee_no = int(table["number"].iloc[knee]) if knee is not None else None
    lock_body = {k: v for k, v in view.lock.items() if k != "dse_version"}
    parts = [
        f"## {NOTE_MARKER} — {view.name}",
        "",
        "Written by `dse dashboard`, which serves optuna-dashboard with each trial's "
        "constraint values and the **feasible** Pareto front: its Pareto-front plot draws "
        'infeasible trials apart (grey) and its "Best Trials" are the feasible front. The '
        f"figure `{FRONT_FIGURE_ID}` and this note show the same trials as `dse pareto` and "
        "`pareto.csv`. Each trial's note says whether it is feasible and lists its constraint "
        "values. The dashboard's own Pareto-front plot has no axis titles: its axes are the "
        '"Objective X" and "Objective Y" chosen beside it; the figures '
        f"`{FRONT_FIGURE_ID}` and `{PARAMETER_FIGURE_ID}` below carry titles and units, the "
        "front filled by (or drawn against) a searched parameter picked in their drop-down.",
        "",
        f"{view.lock.get('description', '')}",
        "",
        f"**{len(view.trials)} trials**: "
        + ", ".join(f"{k} {v}" for k, v in sorted(cats.items()))
        + f". Storage: `{view.url}`.",
        "",
        "### Objectives",
        "",
        _md_table(
            ["metric", "direction", "unit", "best feasible", "HV reference", "reference from"],
            [
                [o, "max" if mx else "min", view.units.get(o, ""), fmt(i), fmt(r), s]
                for o, mx, i, r, s in zip(
                    view.objectives, view.maximize, ideal, ref, ref_src, strict=True
                )
            ],
        ),
        "",
        f"### Feasible Pareto front: {len(table)} trials",
        "",
        "Trial numbers: " + ", ".join(str(int(n)) for n in table["number"]) + ".",
        "",
    ]
    if knee_no is not None:
        parts += [
            f"Knee: **trial {knee_no}** (closest to the ideal point after min-max normalising "
            "each objective over the front).",
            "",
        ]
    parts += [
        _md_table(
            [str(c).removeprefix("params.") for c in table.columns],
            [[fmt(v) for v in row] for row in table.itertuples(index=False)],
        ),
        "",
    ]
    if len(hist):
        parts += [
            f"**Hypervolume** (normalised: ideal = 0, reference = 1 on each axis): "
            f"{hist['hypervolume'].iloc[-1]:.4f}",
            "",
        ]
    constraints = view.lock.get("constraints") or []
    if constraints:
        parts += ["### Constraints", ""] + [f"- `{c}`" for c in constraints] + [""]
    parts += [
        "### Spec (resolved, spec.lock.yaml)",
        "",
        "```yaml",
        yaml.safe_dump(lock_body, sort_keys=False).rstrip(),
        "```",
    ]
    return "\n".join(parts) + "\n"


def trial_note(view: StudyView, row: Mapping[Hashable, Any], cat: str, knee_no: int | None) -> str:
    """Markdown for one trial: feasibility, constraint values, front membership."""
    n = int(row["number"])
    state = row["state"]
    raw = [(c.removeprefix("constraint."), row.get(c)) for c in view.constraint_columns]
    cons = [(c, float(v)) for c, v in raw if v is not None and v == v]
    if state != "COMPLETE":
        reason = row.get("fail_reason") or ""
        head = f"**dse: {state.lower()}**" + (f": {reason}" if reason else "")
    elif row["feasible"]:
        head = "**dse: feasible** — every constraint holds"
    else:
        bad = [f"`{c}` (violation {fmt(float(v))})" for c, v in cons if not satisfied(v)]
        head = "**dse: INFEASIBLE** — violated: " + ", ".join(bad)
    front = {
        "front": "yes" + (" (the knee)" if n == knee_no else ""),
        "duplicate": "same design as a front trial (listed once, by its first trial)",
    }.get(cat, "no")
    parts = [head, "", f"On the feasible Pareto front: **{front}**", ""]
    if cons:
        parts += [
            "Constraint values (≤ 0 means satisfied):",
            "",
            _md_table(
                ["constraint", "value", "ok"],
                [[f"`{c}`", fmt(float(v)), "✓" if satisfied(v) else "✗"] for c, v in cons],
            ),
        ]
    return "\n".join(parts) + "\n"


def annotate(view: StudyView) -> Annotation:
    """Store the front figure, the study note and per-trial notes in the study's storage."""
    from dse.inspect.param_figures import parameter_figure
    from dse.inspect.report import front_figure

    study = view.study
    storage, study_id = storage_of(study), private_study_id(study)
    attrs = storage.get_study_system_attrs(study_id)

    stored = optuna_private.dashboard_figures(attrs)
    fig_written = False
    figures = {
        FRONT_FIGURE_ID: front_figure(view, height=440),  # the dashboard's card is 450 px high
        PARAMETER_FIGURE_ID: parameter_figure(view, height=440),
    }
    for figure_id, fig in figures.items():
        if fig is not None and stored.get(figure_id) != fig.to_json():
            save_plotly_graph_object(study, fig, graph_object_id=figure_id)
            fig_written = True

    note = study_note(view)
    note_written = optuna_private.dashboard_note(attrs, None)["body"] != note
    if note_written:
        save_note(study, note)

    knee = knee_index(view)
    knee_no = int(view.front["number"].iloc[knee]) if knee is not None else None
    ids = {t.number: private_trial_id(t) for t in study.get_trials(deepcopy=False)}
    written = 0
    for row, cat in zip(view.trials.to_dict("records"), category(view), strict=True):
        trial_id = ids[int(row["number"])]
        body = trial_note(view, row, cat, knee_no)
        old = optuna_private.dashboard_note(attrs, trial_id)
        if old["body"] != body:
            optuna_private.dashboard_save_note_version(
                storage, study_id, trial_id, int(old["version"]) + 1, body
            )
            written += 1
    return Annotation(
        front_numbers=[int(n) for n in view.front["number"]],
        figure_written=fig_written,
        note_written=note_written,
        trial_notes_written=written,
    )


def _addresses(host: str, port: int | None) -> list[Any]:
    """``socket.getaddrinfo`` of ``host``, or one line saying it does not resolve."""
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise DseError(f"--host {host!r}: cannot resolve it ({exc})") from None


def _check_port(host: str, port: int) -> None:
    family, _, _, _, addr = _addresses(host, port)[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as exc:
            raise DseError(
                f"cannot listen on {host}:{port} ({exc.strerror}); choose another --port"
            ) from None


def study_url(view: StudyView, *, host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/dashboard/studies/{private_study_id(view.study)}"


#: HTTP methods that change a study (optuna-dashboard reads with GET only).
MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def read_only_app(app: Callable[..., Any]) -> Callable[..., Any]:
    """A WSGI app that answers 405 to every method that could change the study (optuna-
    dashboard's API deletes or renames studies, tells trials and edits notes on request)."""

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if str(environ.get("REQUEST_METHOD", "GET")).upper() in MUTATING_METHODS:
            body = json.dumps(
                {"reason": "read-only dashboard (dse dashboard --allow-writes allows changes)"}
            ).encode()
            start_response(
                "405 Method Not Allowed",
                [
                    ("Content-Type", "application/json"),
                    ("Content-Length", str(len(body))),
                    ("Allow", "GET, HEAD"),
                ],
            )
            return [body]
        return app(environ, start_response)

    return guarded


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` resolves to is a loopback one (reachable only here)."""
    infos = _addresses(host, None)
    try:
        return all(ipaddress.ip_address(str(i[4][0]).split("%")[0]).is_loopback for i in infos)
    except ValueError:
        return False


#: A connection that sends nothing for this long is closed (a client that never finishes its
#: request headers must not hold a thread, or the port, forever).
CONNECTION_TIMEOUT_S = 30.0


class _Handler(WSGIRequestHandler):
    timeout = CONNECTION_TIMEOUT_S  # applied to each connection's socket


def _serve_wsgi(app: Callable[..., Any], host: str, port: int) -> None:
    """Serve ``app`` with one thread per connection, each with a time-out, so one slow or
    half-open client never blocks the others."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]

    class Server(ThreadingMixIn, WSGIServer):
        address_family = family
        daemon_threads = True  # Ctrl-C ends the server without waiting for idle clients

    with make_server(host, port, app, server_class=Server, handler_class=_Handler) as server:
        server.serve_forever()


def serve(
    name: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    storage: str | None = None,
    expose: bool = False,
    allow_writes: bool = False,
    read_only: bool = False,
) -> None:
    """Annotate the study, print its dashboard URL, and serve until interrupted.

    A host other than loopback needs ``expose`` (anyone who reaches the port sees the study)
    and is then served read-only unless ``allow_writes``; ``read_only`` makes any host read-only.
    """
    local = is_loopback(host)
    if not local and not expose:
        raise DseError(
            f"--host {host}: anyone on the network could open this study's dashboard; add "
            "--expose to serve it there (read-only unless --allow-writes), or use --host "
            "127.0.0.1"
        )
    # On this machine only, notes and renames work as in optuna-dashboard unless refused.
    writable = not read_only and (local or allow_writes)
    view = load_view(name, storage=storage)
    _check_port(host, port)
    if not local:
        print(
            f"warning: serving study {name!r} to the network on {host}:{port} without "
            "authentication; "
            + (
                "anyone who reaches it can change or delete the study (--allow-writes)"
                if writable
                else "read-only (POST/PUT/PATCH/DELETE refused)"
            ),
            file=sys.stderr,
            flush=True,
        )
    result = annotate(view)
    print(startup_line(name, result), flush=True)
    url = study_url(view, host=host, port=port)
    print(f"optuna-dashboard: {url}  (study note: {url}/note)", flush=True)
    # Its Pareto plot and "Best Trials" see each trial's constraints and the feasible front.
    app = feasible_front_app(
        wsgi(storage_of(view.study)),
        view.study,
        list(view.lock.get("constraints") or []),
        objectives=view.objectives,
        maximize=view.maximize,
    )
    if not writable:
        print("read-only: POST/PUT/PATCH/DELETE are refused (405)", flush=True)
        app = read_only_app(app)
    _serve_wsgi(app, host, port)


def startup_line(name: str, result: Annotation) -> str:
    """One short line: the front's size and knee, not every trial number (those are in
    pareto.csv, the study note and the dashboard's "Best Trials")."""
    n = len(result.front_numbers)
    shown = ", ".join(map(str, result.front_numbers[:5])) + (", ..." if n > 5 else "")
    return (
        f"feasible front of {name}: {n} trials ({shown or 'none'}; all in pareto.csv and the "
        f"study note); figure {'updated' if result.figure_written else 'unchanged'}, note "
        f"{'updated' if result.note_written else 'unchanged'}, "
        f"{result.trial_notes_written} trial notes updated"
    )
