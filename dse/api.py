"""The CLI's operations as functions, for notebooks and scripts: one function per command,
and the CLI a thin layer that parses options, calls these and prints.

from dse import api
model = api.load("spaces/zdt1/spec.yaml")
api.evaluate(model, {"x1": 0.2, ...})
result = api.run("spaces/zdt1/spec.yaml", trials=100)
trials, front = api.load_study("zdt1")

The top-level facade: it may import every layer of ``dse`` (and only ``dse.cli`` imports it).
Optuna, pandas and the result layers are imported by the functions that use them, so
``dse evaluate`` (and ``import dse.api``) does not pay for them. Nothing here changes global
state: no log levels, no allocator settings (``dse.heap`` is an explicit call).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dse.model import load as _load
from dse.model.load import check, evaluate, load, lock_dict
from dse.model.study_model import StudyModel
from dse.results.counts import counts_line, trial_counts
from dse.results.run_result import NothingToRun, RunResult, write_run_records
from dse.spec.errors import DseError, Problem, SpecError

if TYPE_CHECKING:
    import optuna
    import pandas as pd

    from dse.inspect.report import ReportResult
    from dse.results.quality import QualityReport
    from dse.search.runner import Progress
    from dse.search.stored import RecordedStudy
    from dse.search.sweep import SweepResult


def spec_source(spec: str | Path) -> tuple[Path, str | None]:
    """Where a spec comes from: a file (its path, no text), or a preset name an installed
    catalog turns into a minimal spec (its label and YAML text)."""
    path = Path(spec)
    name = str(spec)
    looks_like_file = "/" in name or path.suffix.lower() in (".yaml", ".yml") or path.exists()
    if looks_like_file:
        return path, None
    from dse.model import catalogs

    text = catalogs.spec_for(name)
    if text is None:
        names = [str(r["name"]) for k in catalogs.preset_kinds() for r in catalogs.preset_rows(k)]
        raise DseError(
            f"{name}: no such spec file, nor a preset an installed catalog can evaluate "
            f"({catalogs.closest(name, names)}'dse presets' lists them, 'dse init' writes a spec)"
        )
    return Path(f"<preset {name}>"), text


def load_for_evaluate(spec: str | Path, sets: list[str]) -> tuple[StudyModel, dict[str, Any]]:
    """A compiled spec and its fixed design's full parameters (``dse evaluate``): ``spec`` a
    file or a preset name a catalog knows; ``objectives:`` may be left out."""
    path, text = spec_source(spec)
    return _load.load_for_evaluate(path, sets, text=text)


def validate(spec: str | Path) -> tuple[StudyModel | None, list[Problem]]:
    """Every problem of a spec in one pass, sorted by line (``dse validate``): schema, presets,
    evaluators, metric names, constraints and sampler options. Nothing is created."""
    from dse.search.preflight import preflight

    model, problems = check(spec)
    if model is not None:
        try:  # sampler options and storage: what 'dse run' checks before creating anything
            preflight(model, ready=False)
        except SpecError as exc:
            problems = [*problems, *exc.problems]
    return model, SpecError(problems).problems


def run(
    spec_or_model: str | Path | StudyModel,
    *,
    trials: int | None = None,
    storage: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_begin: Callable[[int, int], None] | None = None,
    **worker: Any,
) -> RunResult:
    """Create or resume the spec's study until it holds ``trials`` finished trials in total.

    ``trials`` is the study's total, not a number to add: a study that already holds that many
    runs nothing, and the result's ``note`` says so (also as a :class:`NothingToRun` warning).
    ``on_begin(finished_before, total)`` runs once the study is open and its spec accepted
    (the CLI starts its progress bar there, so a refused run never shows one). ``worker``
    options go to :func:`dse.search.workers.run_worker`, the one run path of ``dse run``,
    ``--jobs`` and ``dse worker`` (seed_offset, heartbeat_s, should_stop, ...).
    """
    from dse.search import workers
    from dse.search.preflight import preflight

    model = spec_or_model if isinstance(spec_or_model, StudyModel) else load(spec_or_model)
    preflight(model, storage=storage)  # before anything is created
    done = workers.run_worker(
        model,
        storage=storage,
        trials=trials,
        on_progress=on_progress,
        on_begin=on_begin,
        **worker,
    )
    return write_run_records(model, done.study, requested=done.target, before=done.before)


def run_jobs(
    spec: Path,
    *,
    jobs: int,
    trials: int | None = None,
    storage: str | None = None,
    on_progress: Callable[[Any], None] | None = None,
    on_begin: Callable[[int, int], None] | None = None,
    robust: tuple[int, str] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> RunResult:
    """``dse run --jobs N``: N ``dse worker`` processes on this machine, one study, then the
    records. ``trials`` and ``on_begin`` as in :func:`run`; ``robust=(samples, statistic)``
    as in :func:`dse.model.load.load` (the spec's ``robust:`` otherwise); once
    ``should_stop()`` the workers give their trials back and stop, and the records are
    written as the study stands."""
    from dse.search import workers
    from dse.search.preflight import preflight

    model = load(spec, robust=robust)
    preflight(model, storage=storage)
    target = trials if trials is not None else model.spec.search.trials
    before = workers.finished_before(model, storage)
    if on_begin is not None:
        on_begin(before, target)
    study = workers.run_jobs(
        spec,
        model,
        jobs=jobs,
        trials=target,
        storage=storage,
        on_progress=on_progress,
        robust=robust,
        should_stop=should_stop,
    )
    return write_run_records(model, study, requested=target, before=before)


def run_worker(
    spec: str | Path,
    *,
    records: bool = False,
    robust: tuple[int, str] | None = None,
    **options: Any,
) -> tuple[optuna.Study, int]:
    """``dse worker``: join the spec's study and run until its study-wide total; ``options``
    go to ``dse.search.workers.run_worker``. Returns the study and that total."""
    from dse.search import workers
    from dse.search.preflight import preflight

    model = load(spec, robust=robust)
    preflight(model, storage=options.get("storage"))
    done = workers.run_worker(model, **options)
    if records:
        write_run_records(model, done.study, requested=done.target, before=done.before)
    return done.study, done.target


def read_lock(name: str) -> dict[str, Any]:
    """A recorded study's resolved spec (``studies/<name>/spec.lock.yaml``)."""
    from dse.search.stored import read_lock as _read_lock

    return _read_lock(name)


def open_study(name: str, *, storage: str | None = None) -> RecordedStudy:
    """A recorded study opened from the storage in its lock (or ``storage``)."""
    from dse.search.stored import open_study as _open_study

    return _open_study(name, storage=storage)


def load_study(name: str, *, storage: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A recorded study's trials and feasible Pareto front, read live from its storage."""
    from dse.results.records import load_study as _load_study

    return _load_study(name, storage=storage)


def pareto(name: str, *, storage: str | None = None) -> tuple[list[str], pd.DataFrame]:
    """``dse pareto``: the study's objective names and its feasible front."""
    objectives = [o["metric"] for o in read_lock(name)["objectives"]]
    return objectives, load_study(name, storage=storage)[1]


def quality(name: str, *, storage: str | None = None) -> QualityReport:
    """``dse pareto --quality``: hypervolume normalised by the reference point, IGD+."""
    from dse.results.quality import study_quality

    return study_quality(name, storage=storage)[0]


def evaluate_design(
    model: StudyModel, params: Mapping[str, Any], *, metrics: Iterable[str] | None = None
) -> dict[str, Any]:
    """``dse evaluate``: feasibility (violated constraints named), objectives, and the other
    metrics grouped by evaluator; ``metrics`` are ``--metric`` patterns
    (:mod:`dse.inspect.design`)."""
    from dse.inspect.design import design_view

    return design_view(model, params, evaluate(model, params), select=metrics)


def simulate(
    model: StudyModel, params: Mapping[str, Any], *, runs: int, years: float, seed: int
) -> dict[str, dict[str, float]]:
    """``dse evaluate --simulate``: each Monte Carlo quantity's mean, std, p1/p50/p99, range,
    from every evaluator with a ``simulate(design, years=, runs=, seed=)`` attribute."""
    from dse.model.simulation import simulation_summary

    return simulation_summary(model, params, runs=runs, years=years, seed=seed)


def list_evaluators() -> dict[str, dict[str, Any]]:
    """``dse evaluators``: every installed evaluator, its origin and its metrics' units."""
    from dse.model.registry import builtin_evaluators

    return {
        name: {
            "origin": ev.origin,
            "vectorized": ev.vectorized,
            "metrics": {
                k: {"unit": m.unit, "description": m.description}
                for k, m in (ev.metrics or {}).items()
            },
        }
        for name, ev in builtin_evaluators().items()
    }


def json_schema() -> dict[str, Any]:
    """``dse schema``: the JSON Schema of a study spec, with ``fixed`` typed by the installed
    evaluators that describe their keys (their ``fixed_schema`` hook)."""
    from dse.model.spec_json_schema import spec_json_schema

    return spec_json_schema()


def sweep(
    spec: str | Path | StudyModel,
    *,
    samples: int | None = None,
    chunk: int | None = None,
    seed: int = 0,
    jobs: int = 1,
    scheduler: str | None = None,
    resume: bool = True,
    on_progress: Callable[[int, int, int], None] | None = None,
) -> SweepResult:
    """``dse sweep``: the whole grid (or ``samples`` quasi-random designs) in vectorized chunks,
    recording the exact feasible front (:func:`dse.search.sweep.sweep`). A spec path is
    loaded with its nominal assumptions (``load(spec, nominal=True)``)."""
    from dse.search.sweep import DEFAULT_CHUNK
    from dse.search.sweep import sweep as _sweep

    model = spec if isinstance(spec, StudyModel) else load(spec, nominal=True)
    return _sweep(
        model,
        samples=samples,
        chunk=chunk or DEFAULT_CHUNK,
        seed=seed,
        on_progress=on_progress,
        jobs=jobs,
        scheduler=scheduler,
        resume=resume,
    )


def sensitivity(
    spec: str | Path,
    *,
    sets: list[str] | None = None,
    metrics: list[str] | None = None,
    method: str = "tornado",
    samples: int = 512,
    seed: int = 0,
) -> dict[str, Any]:
    """``dse sensitivity``: which assumptions move one design's metrics (default: the
    objectives). ``tornado`` swings each one alone (p10/p90); ``sobol`` and ``morris`` give
    global indices (SALib) and record them in the study folder for ``dse report``. Returns
    the JSON payload the CLI prints."""
    from dataclasses import asdict

    from dse.inspect.sensitivity import assumptions_source
    from dse.inspect.sensitivity import sensitivity as _tornado

    model, params = load_for_evaluate(spec, sets or [])
    evaluate(model, params)  # the nominal design itself must evaluate (finite metrics)
    source = assumptions_source(model)
    units = {m: model.metrics[m].unit for m in model.metrics}
    if method == "tornado":
        table = _tornado(model, params, metrics=metrics)
        return {
            "method": "tornado",
            "params": params,
            "study": model.spec.study,
            "swings_from": f"p10/p90 of {source}" if model.uncertain else source,
            "units": {m: units.get(m, "") for m in table},
            "metrics": {
                m: [{**asdict(s), "swing": s.swing} for s in rows] for m, rows in table.items()
            },
        }
    from dse.inspect.global_sensitivity import global_sensitivity, record_global

    gtable = global_sensitivity(
        model, params, method=method, metrics=metrics, samples=samples, seed=seed
    )
    payload = {
        "method": method,
        "samples": samples,
        "seed": seed,
        "params": params,
        "study": model.spec.study,
        "assumptions_from": source if model.uncertain else f"{source} (triangular)",
        "units": {m: units.get(m, "") for m in gtable},
        "metrics": {m: [r.as_dict() for r in rows] for m, rows in gtable.items()},
    }
    payload["recorded"] = str(record_global(model.spec.study, payload))
    return payload


def compare(
    designs: list[str],
    *,
    labels: list[str] | None = None,
    sets: list[str] | None = None,
    metrics: list[str] | None = None,
) -> tuple[list[Any], list[dict[str, object]]]:
    """``dse compare``: evaluate each design (``SPEC`` or ``SPEC::k=v,k=v``; ``sets`` apply to
    every design) and return them with the rows: feasibility and violated constraints, then
    the objectives, then every other metric (``metrics``: ``--metric`` patterns)."""
    from dse.inspect.compare import compare as _compare

    return _compare(designs, labels=labels, sets=sets, metrics=metrics)


def report(
    name: str, *, storage: str | None = None, on_stage: Callable[[str], None] | None = None
) -> ReportResult:
    """``dse report``: ``studies/<name>/report.html`` (self-contained) and ``figures/*.png``;
    ``on_stage(text)`` is called as each stage starts."""
    from dse.inspect.report import write_report

    return write_report(name, storage=storage, on_stage=on_stage)


def status(name: str, *, storage: str | None = None, recent_s: float = 300.0) -> dict[str, Any]:
    """``dse status``: trials by state, recent workers, feasible count and front size."""
    from dse.inspect.status import study_status

    return study_status(name, storage=storage, recent_s=recent_s)


__all__ = [
    "DseError",
    "NothingToRun",
    "Problem",
    "RunResult",
    "SpecError",
    "StudyModel",
    "check",
    "compare",
    "counts_line",
    "evaluate",
    "evaluate_design",
    "json_schema",
    "list_evaluators",
    "load",
    "load_for_evaluate",
    "load_study",
    "lock_dict",
    "open_study",
    "pareto",
    "quality",
    "read_lock",
    "report",
    "run",
    "run_jobs",
    "run_worker",
    "sensitivity",
    "simulate",
    "status",
    "sweep",
    "trial_counts",
    "validate",
]
