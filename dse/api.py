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

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from annotated_types import Ge, Interval
from pydantic import ConfigDict, TypeAdapter, ValidationError

from dse.errors import ArgumentError, DesignError, DseError, Problem, SpecError
from dse.model import load as _load
from dse.model.study_model import StudyModel
from dse.results.counts import counts_line, trial_counts
from dse.results.run_result import NothingToRun, RunResult, write_run_records
from dse.spec.messages import short_repr

if TYPE_CHECKING:
    import optuna
    import pandas as pd

    from dse.inspect.report import ReportResult
    from dse.results.quality import QualityReport
    from dse.search.stored import RecordedStudy
    from dse.search.study.runner import Progress
    from dse.search.sweep.sweep import SweepResult


# -- argument checks: pydantic's strict ones, each failure one ArgumentError line ----------

#: Most Monte Carlo runs and years of :func:`simulate` (``dse evaluate --simulate``'s bounds).
MAX_RUNS = 1_000_000
MAX_YEARS = 1000.0

#: Argument kinds, checked strictly: a bool, a float or "5" is no count.
SpecPath = str | Path
Count = Annotated[int, Ge(1)]
Natural = Annotated[int, Ge(0)]


@functools.cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind, config=ConfigDict(strict=True))


def _arg(name: str, value: object, kind: Any) -> Any:
    """``value`` as pydantic's strict check against ``kind`` returns it, else an ArgumentError
    naming the argument."""
    try:
        return _adapter(kind).validate_python(value)
    except ValidationError as exc:
        msg = exc.errors()[0]["msg"]
        raise ArgumentError(f"{name}: {msg} (got {short_repr(value)})") from None


def _names(value: object, name: str) -> list[str] | None:
    """None, or a list of str (one str is refused: it would be read letter by letter)."""
    names = _arg(name, value, Sequence[str] | None)
    return None if names is None else list(names)


def _model(value: object) -> StudyModel:
    if isinstance(value, StudyModel):
        return value
    raise ArgumentError(
        f"model: expected a StudyModel (from api.load or api.load_for_evaluate), "
        f"got {type(value).__name__}"
    )


def _study(name: object) -> str:
    """A study name from a name, its folder or the spec that runs it (as the CLI takes)."""
    from dse.inspect.study_arg import study_name

    return study_name(str(_arg("name", name, SpecPath)))


def as_sets(sets: object, name: str = "sets") -> list[str]:
    """``sets`` as the CLI's ``--set`` items: a mapping ``{"group.field": 1.2}`` (values
    written as YAML, so numbers, text, lists and mappings keep their type) or a list of
    ``"name=value"`` strings."""
    import json

    if isinstance(sets, Mapping):
        items = []
        for key, value in sets.items():
            if not isinstance(key, str) or not key:
                raise ArgumentError(f"{name}: keys are parameter names (str), got {key!r}")
            try:
                text = json.dumps(value, allow_nan=False)
            except (TypeError, ValueError):
                raise ArgumentError(
                    f"{name}[{key!r}]: expected a number, str, bool, list or dict, got "
                    f"{type(value).__name__} {value!r}"
                ) from None
            items.append(f"{key}={text}")
        return items
    return _names(sets, name) or []


def check_design(model: StudyModel, params: object) -> dict[str, Any]:
    """A design for ``model``: a mapping that sets every searched parameter within its range
    and nothing else (a fixed value is changed with ``sets=`` when the spec is loaded), so a
    misspelt name is never silently ignored."""
    from dse.model.study_model import value_problem
    from dse.spec.messages import choices_text, did_you_mean

    if not isinstance(params, Mapping):
        raise ArgumentError(
            f"params: expected a mapping of parameter name -> value, got {type(params).__name__}"
        )
    space = model.spec.space
    for key in params:
        if key not in space:
            where = (
                f"the spec searches {choices_text(space)}"
                if space
                else "the spec searches nothing"
            )
            raise DesignError(
                f"params: unknown parameter {key!r} ({did_you_mean(str(key), space)}{where}; "
                "a fixed value is changed with sets= when the spec is loaded)"
            )
    missing = [n for n in space if n not in params]
    if missing:
        raise DesignError(f"params: the spec searches {', '.join(missing)}; give each a value")
    for key, p in space.items():
        problem = value_problem(p, params[key])
        if problem:
            raise DesignError(f"params[{key!r}]: {problem}")
    return dict(params)


class Evaluation(dict[str, float]):
    """Every metric of one design (``{name: value}``, as plain floats), with its verdict:
    ``feasible``, the ``violated`` constraints and the ``objectives``' values."""

    feasible: bool
    violated: list[str]
    objectives: dict[str, float]

    def __repr__(self) -> str:
        verdict = "feasible" if self.feasible else f"infeasible: {'; '.join(self.violated)}"
        return f"Evaluation({verdict}, {len(self)} metrics, objectives={self.objectives})"


def load(
    spec: str | Path,
    *,
    sets: Mapping[str, Any] | Sequence[str] | None = None,
    robust: tuple[int, str] | None = None,
    nominal: bool = False,
) -> StudyModel:
    """Load, validate and compile a spec (:func:`dse.model.load.load`); ``sets`` change fixed
    values, as ``--set`` does (a mapping, or ``"name=value"`` strings). Raises SpecError
    listing every problem of the spec."""
    return _load.load(
        _arg("spec", spec, SpecPath), sets=as_sets(sets), robust=robust, nominal=nominal
    )


def evaluate(model: StudyModel, params: Mapping[str, Any] | None = None) -> Evaluation:
    """Every metric of one design, with its feasibility and violated constraints. ``params``
    sets each searched parameter of the spec (none for a spec without a space); anything
    else, a value outside the space, or a missing one, is a :class:`DesignError`."""
    from dse.inspect.design import constraint_rows

    model = _model(model)
    design = check_design(model, {} if params is None else params)
    result = Evaluation(_load.evaluate(model, design))
    rows = constraint_rows(model, design, result)
    result.violated = [r["constraint"] for r in rows if not r["satisfied"]]
    result.feasible = not result.violated
    result.objectives = {o: result[o] for o in model.objective_names if o in result}
    return result


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


def load_for_evaluate(
    spec: str | Path, sets: Mapping[str, Any] | Sequence[str] | None = None
) -> tuple[StudyModel, dict[str, Any]]:
    """A compiled spec and its fixed design's full parameters (``dse evaluate``): ``spec`` a
    file or a preset name a catalog knows; ``objectives:`` may be left out; ``sets`` set
    searched parameters and change fixed values, as ``--set`` does."""
    path, text = spec_source(_arg("spec", spec, SpecPath))
    return _load.load_for_evaluate(path, as_sets(sets), text=text)


def check(
    spec: str | Path, *, sets: Mapping[str, Any] | Sequence[str] | None = None
) -> tuple[StudyModel | None, list[Problem]]:
    """Every problem of a spec in one pass (schema, presets, evaluators, metric names,
    constraints), with the compiled model when the spec got far enough to build one."""
    return _load.check(_arg("spec", spec, SpecPath), sets=as_sets(sets))


def lock_dict(model: StudyModel, url: str) -> dict[str, Any]:
    """The fully resolved spec of ``model`` recorded with storage ``url``."""
    return _load.lock_dict(_model(model), _arg("url", url, str))


def trial_design(
    study: str | Path, number: int, *, storage: str | None = None
) -> tuple[StudyModel, dict[str, Any]]:
    """A recorded trial as a fixed design (``dse evaluate STUDY --trial N``): the study's
    resolved spec from its lock and the trial's parameters, ready for :func:`evaluate`, so
    a front design is re-examined without copying its values by hand."""
    import json

    import yaml

    from dse.search.stored import open_study as _open_study
    from dse.spec.schema import StudySpec

    name = _study(study)
    number = _arg("trial", number, Natural)
    storage = _arg("storage", storage, str | None)
    lock = read_lock(name)
    spec = {k: v for k, v in lock.items() if k in StudySpec.model_fields}
    spec.update(storage=None, journal_outside_studies=False)
    trials = {t.number: t for t in _open_study(name, storage=storage).study.get_trials()}
    if number not in trials:
        last = max(trials, default=-1)
        raise DseError(f"--trial {number}: study {name!r} has trials 0 to {last}")
    state = trials[number].state.name
    if state != "COMPLETE":
        raise DseError(f"--trial {number} of {name!r} is {state}, not COMPLETE")
    # Optuna's own values: an int parameter or choice comes back an int, as sampled.
    params = {key: trials[number].params.get(key) for key in lock.get("space", {})}
    text = yaml.safe_dump(spec, sort_keys=False)
    model, _ = _load.load_for_evaluate(
        Path(f"studies/{name}/spec.lock.yaml"),
        [f"{k}={json.dumps(v)}" for k, v in params.items()],
        text=text,
    )
    return model, params


def validate(spec: str | Path) -> tuple[StudyModel | None, list[Problem]]:
    """Every problem of a spec in one pass, sorted by line (``dse validate``): schema, presets,
    evaluators, metric names, constraints and sampler options. Nothing is created."""
    from dse.search.study.preflight import preflight

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
    jobs: int = 1,
    log: bool | None = False,
    **worker: Any,
) -> RunResult:
    """Create or resume the spec's study until it holds ``trials`` finished trials in total.

    ``trials`` is the study's total, not a number to add: a study that already holds that many
    runs nothing, and the result's ``note`` says so (also as a :class:`NothingToRun` warning).
    ``on_begin(finished_before, total)`` runs once the study is open and its spec accepted
    (the CLI starts its progress bar there, so a refused run never shows one). ``worker``
    options go to :func:`dse.search.study.workers.run_worker`, the one run path of ``dse run``,
    ``--jobs`` and ``dse worker`` (seed_offset, heartbeat_s, should_stop, ...). ``jobs`` > 1
    runs that many worker processes (a spec path only, as ``dse run --jobs``). Optuna's log
    is silenced during the run unless ``log=True`` (``None``: left as the process has it).
    Every argument is checked before anything is created (:class:`ArgumentError`).
    """
    import inspect

    from dse.search.study import workers
    from dse.search.study.preflight import preflight

    if not isinstance(spec_or_model, StudyModel):
        _arg("spec_or_model", spec_or_model, SpecPath)
    trials = _arg("trials", trials, Count | None)
    jobs = _arg("jobs", jobs, Count)
    _arg("storage", storage, str | None)
    _arg("on_progress", on_progress, Callable | None)
    _arg("on_begin", on_begin, Callable | None)
    known = [n for n in inspect.signature(workers.run_worker).parameters if n != "model"]
    for key in worker:
        if key not in known:
            from dse.spec.messages import did_you_mean

            raise ArgumentError(
                f"run() got an unknown option {key!r} ({did_you_mean(key, known)}valid: "
                f"{', '.join(sorted(known))})"
            )
    if jobs > 1:
        if isinstance(spec_or_model, StudyModel):
            raise ArgumentError("jobs > 1 runs worker processes, which need a spec path")
        with _optuna_log(log):
            return run_jobs(
                Path(spec_or_model),
                jobs=jobs,
                trials=trials,
                storage=storage,
                on_progress=on_progress,
                on_begin=on_begin,
                should_stop=worker.get("should_stop"),
            )
    model = spec_or_model if isinstance(spec_or_model, StudyModel) else load(spec_or_model)
    preflight(model, storage=storage)  # before anything is created
    with _optuna_log(log):
        done = workers.run_worker(
            model,
            storage=storage,
            trials=trials,
            on_progress=on_progress,
            on_begin=on_begin,
            **worker,
        )
    return write_run_records(model, done.study, requested=done.target, before=done.before)


@contextlib.contextmanager
def _optuna_log(log: bool | None) -> Iterator[None]:
    """Optuna's log at WARNING (``False``) or INFO (``True``) for one call, then as before."""
    if log is None:
        yield
        return
    import optuna

    before = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.INFO if log else optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(before)


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
    from dse.search.study import workers
    from dse.search.study.preflight import preflight

    jobs = _arg("jobs", jobs, Count)
    trials = _arg("trials", trials, Count | None)
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
    go to ``dse.search.study.workers.run_worker``. Returns the study and that total."""
    from dse.search.study import workers
    from dse.search.study.preflight import preflight

    _arg("trials", options.get("trials"), Count | None)
    model = load(spec, robust=robust)
    preflight(model, storage=options.get("storage"))
    done = workers.run_worker(model, **options)
    if records:
        write_run_records(model, done.study, requested=done.target, before=done.before)
    return done.study, done.target


def read_lock(name: str | Path) -> dict[str, Any]:
    """A recorded study's resolved spec (``studies/<name>/spec.lock.yaml``)."""
    from dse.search.spec_lock import read_lock as _read_lock

    return _read_lock(_study(name))


def open_study(name: str | Path, *, storage: str | None = None) -> RecordedStudy:
    """A recorded study opened from the storage in its lock (or ``storage``)."""
    from dse.search.stored import open_study as _open_study

    return _open_study(_study(name), storage=_arg("storage", storage, str | None))


def load_study(
    name: str | Path, *, storage: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A recorded study's trials and feasible Pareto front, read live from its storage."""
    from dse.results.records import load_study as _load_study

    return _load_study(_study(name), storage=_arg("storage", storage, str | None))


def pareto(name: str | Path, *, storage: str | None = None) -> pd.DataFrame:
    """``dse pareto``: the study's feasible front, one row per trial (its objective names in
    ``front.attrs["objectives"]``). ``name``: a study name, its folder or its spec."""
    name = _study(name)
    front = load_study(name, storage=storage)[1]
    front.attrs["objectives"] = [o["metric"] for o in read_lock(name)["objectives"]]
    return front


def quality(name: str | Path, *, storage: str | None = None) -> QualityReport:
    """``dse pareto --quality``: hypervolume normalised by the reference point, IGD+."""
    from dse.results.quality import study_quality

    return study_quality(_study(name), storage=_arg("storage", storage, str | None))[0]


def evaluate_design(
    model: StudyModel, params: Mapping[str, Any], *, metrics: Iterable[str] | None = None
) -> dict[str, Any]:
    """``dse evaluate``: feasibility (violated constraints named), objectives, and the other
    metrics grouped by evaluator; ``metrics`` are ``--metric`` patterns
    (:mod:`dse.inspect.design`)."""
    from dse.inspect.design import design_view

    return design_view(model, params, evaluate(model, params), select=_names(metrics, "metrics"))


def simulate(
    model: StudyModel, params: Mapping[str, Any], *, runs: int, years: float, seed: int
) -> dict[str, dict[str, float]]:
    """``dse evaluate --simulate``: each Monte Carlo quantity's mean, std, p1/p50/p99, range,
    from every evaluator with a ``simulate(design, years=, runs=, seed=)`` attribute."""
    from dse.model.simulation import simulation_summary

    model = _model(model)
    design = check_design(model, params)
    runs = _arg("runs", runs, Annotated[int, Interval(ge=1, le=MAX_RUNS)])
    seed = _arg("seed", seed, Natural)
    years = _arg("years", years, Annotated[float, Interval(gt=0, le=MAX_YEARS)])
    return simulation_summary(model, design, runs=runs, years=years, seed=seed)


def list_evaluators() -> dict[str, dict[str, Any]]:
    """``dse evaluators``: every installed evaluator, its origin and its metrics' units."""
    from dse.model.registry import builtin_evaluators

    return {
        name: {
            "origin": ev.origin,
            "vectorized": ev.vectorized,
            "needs": list(ev.needs),
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
    recording the exact feasible front (:func:`dse.search.sweep.sweep.sweep`). A spec path is
    loaded with its nominal assumptions (``load(spec, nominal=True)``)."""
    from dse.search.sweep.sweep import DEFAULT_CHUNK
    from dse.search.sweep.sweep import sweep as _sweep

    if not isinstance(spec, StudyModel):
        _arg("spec", spec, SpecPath)
    samples = _arg("samples", samples, Count | None)
    chunk = _arg("chunk", chunk, Count | None)
    seed = _arg("seed", seed, Natural)
    jobs = _arg("jobs", jobs, Count)
    _arg("scheduler", scheduler, str | None)
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


def sensitivity_payload(
    spec: str | Path,
    *,
    sets: Mapping[str, Any] | Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    method: str = "tornado",
    samples: int = 512,
    seed: int = 0,
    only: Sequence[str] | None = None,
) -> dict[str, Any]:
    """``dse sensitivity``'s JSON payload: see :func:`sensitivity` for the arguments."""
    from dataclasses import asdict

    from dse.inspect.sensitivity import METHODS, assumptions_source
    from dse.inspect.sensitivity import sensitivity as _tornado

    spec = _arg("spec", spec, SpecPath)
    metrics = _names(metrics, "metrics")
    only = _names(only, "only")
    if method not in METHODS:
        raise ArgumentError(f"method={method!r}: valid choices: {', '.join(METHODS)}")
    samples = _arg("samples", samples, Annotated[int, Ge(2)])
    seed = _arg("seed", seed, Natural)
    model, params = load_for_evaluate(spec, sets)
    evaluate(model, params)  # the nominal design itself must evaluate (finite metrics)
    source = assumptions_source(model)
    units = {m: model.metrics[m].unit for m in model.metrics}
    if method == "tornado":
        table = _tornado(model, params, metrics=metrics, only=only)
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


def sensitivity(
    spec: str | Path,
    *,
    sets: Mapping[str, Any] | Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    method: str = "tornado",
    samples: int = 512,
    seed: int = 0,
    only: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Which assumptions move one design's metrics (default: the objectives), one row per
    metric and assumption, largest effect first. ``tornado`` swings each assumption alone
    (the p10/p90 of a robust spec's distributions, else a relative swing kept inside each
    field's valid range); ``sobol`` and ``morris`` give global indices (SALib) and record
    them in the study folder for ``dse report``. ``sets`` as in :func:`load_for_evaluate`;
    ``only`` keeps the named assumptions."""
    import pandas as pd

    payload = sensitivity_payload(
        spec, sets=sets, metrics=metrics, method=method, samples=samples, seed=seed, only=only
    )
    rows = [
        {"metric": m, "unit": payload["units"].get(m, ""), **r}
        for m, rs in payload["metrics"].items()
        for r in rs
    ]
    frame = pd.DataFrame(rows)
    frame.attrs.update({k: v for k, v in payload.items() if k not in ("metrics", "units")})
    return frame


def compare(
    designs: Sequence[str | Path | tuple[str | Path, Mapping[str, Any]]],
    *,
    labels: Sequence[str] | None = None,
    sets: Mapping[str, Any] | Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
) -> pd.DataFrame:
    """``dse compare``: evaluate each design and return one row per metric (``feasible`` and
    ``violated constraints`` first, then the objectives, then the rest) with a column per
    design and its ratio to the first. A design is a spec (``SPEC`` or ``SPEC::k=v,k=v``) or
    ``(spec, {name: value})``; ``sets`` apply to every design; ``metrics`` select rows by
    name, evaluator prefix or glob."""
    import pandas as pd

    from dse.inspect.compare import compare as _compare

    if isinstance(designs, str | Path) or not isinstance(designs, Sequence) or not designs:
        raise ArgumentError("designs: expected a non-empty list of specs or (spec, sets) pairs")
    parsed: list[str | tuple[Path, list[str]]] = [
        (Path(_arg(f"designs[{i}][0]", d[0], SpecPath)), as_sets(d[1], f"designs[{i}][1]"))
        if isinstance(d, tuple) and len(d) == 2
        else str(_arg(f"designs[{i}]", d, SpecPath))
        for i, d in enumerate(designs)
    ]
    labels_, metrics_ = _names(labels, "labels"), _names(metrics, "metrics")
    _, rows = _compare(parsed, labels=labels_, sets=as_sets(sets), metrics=metrics_)
    return pd.DataFrame(rows).set_index("metric")


def report(
    name: str | Path, *, storage: str | None = None, on_stage: Callable[[str], None] | None = None
) -> ReportResult:
    """``dse report``: ``studies/<name>/report.html`` (self-contained) and ``figures/*.png``;
    ``on_stage(text)`` is called as each stage starts."""
    from dse.inspect.report import write_report

    return write_report(
        _study(name), storage=_arg("storage", storage, str | None), on_stage=on_stage
    )


def status(
    name: str | Path, *, storage: str | None = None, recent_s: float = 300.0
) -> dict[str, Any]:
    """``dse status``: trials by state, recent workers, feasible count and front size."""
    from dse.inspect.status import study_status

    recent_s = _arg("recent_s", recent_s, Annotated[float, Ge(0)])
    storage = _arg("storage", storage, str | None)
    return study_status(_study(name), storage=storage, recent_s=recent_s)


__all__ = [
    "MAX_RUNS",
    "MAX_YEARS",
    "ArgumentError",
    "DesignError",
    "DseError",
    "Evaluation",
    "NothingToRun",
    "Problem",
    "RunResult",
    "SpecError",
    "StudyModel",
    "as_sets",
    "check",
    "check_design",
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
    "sensitivity_payload",
    "simulate",
    "spec_source",
    "status",
    "sweep",
    "trial_design",
    "trial_counts",
    "validate",
]


def __dir__() -> list[str]:
    """``dir(api)`` is the public surface, not the typing names this module imports."""
    return sorted(__all__)
