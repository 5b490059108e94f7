"""A spec file to a compiled model: load, validate, apply ``--set`` overrides, evaluate, lock.

The operations behind ``dse validate``, ``dse evaluate`` and every run; :mod:`dse.api` is their
public face.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dse.errors import Problem, SpecError
from dse.model.compile import collect_model, select_evaluators
from dse.model.robust import robust_model
from dse.model.study_model import StudyModel, check_params, split_sets
from dse.spec.collect import collect_spec
from dse.spec.schema import LoadedSpec

__all__ = ["blame_overrides", "check", "evaluate", "load", "load_for_evaluate", "lock_dict"]


def check(
    spec_path: str | Path, *, sets: list[str] | None = None
) -> tuple[StudyModel | None, list[Problem]]:
    """Every problem of a spec in one pass (schema, presets, evaluators, metric names,
    constraints), with the compiled model when the spec got far enough to build one."""
    loaded, problems = collect_spec(spec_path)
    if loaded is None:
        return None, problems
    _, fixed = _split(loaded, sets or [])
    model, more = collect_model(loaded, fixed_overrides=fixed)
    return model, blame_overrides([*problems, *more], fixed)


def blame_overrides(problems: list[Problem], fixed: Mapping[str, Any]) -> list[Problem]:
    """A problem with a value that came from ``--set`` names that flag, not the spec line of
    the value it replaced (``--set a=2`` is not the spec's ``a: 1``)."""
    out = []
    for p in problems:
        key = next(
            (k for k in fixed if p.field == f"fixed.{k}" or p.field.startswith(f"fixed.{k}.")),
            None,
        )
        if key is not None:
            p = Problem(f"--set {key}={fixed[key]}", None, p.field, p.message)
        out.append(p)
    return out


def load(
    spec_path: str | Path,
    *,
    sets: list[str] | None = None,
    robust: tuple[int, str] | None = None,
    nominal: bool = False,
) -> StudyModel:
    """Load, validate and compile a spec; ``sets`` are dotted fixed overrides (``a.b=v``).

    A spec with ``robust: {samples, statistic}`` (or ``robust=(samples, statistic)``, which
    takes precedence: ``dse run --robust K``) compiles to its robust model, so every entry
    point, workers included, runs the same robust study; ``nominal`` skips that (sweeps,
    which evaluate batches of designs at the nominal assumptions). Raises SpecError listing
    every problem of the spec, sorted by line."""
    model, problems = check(spec_path, sets=sets)
    if problems or model is None:
        raise SpecError(problems)
    settings = model.spec.robust
    if robust is None and settings is not None:
        robust = (settings.samples, settings.statistic)
    if robust is not None and not nominal:
        model = robust_model(model, k=robust[0], statistic=robust[1])
    return model


def _split(loaded: LoadedSpec, sets: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    evaluators, _ = select_evaluators(loaded)  # their problems are reported by collect_model
    known = set().union(*(e.domain.params for e in evaluators.values()))
    # The spec's own fixed keys (presets, say) can be replaced whole.
    return split_sets(loaded.spec.space, sets, known | set(loaded.spec.fixed))


def load_for_evaluate(
    spec_path: str | Path, sets: list[str], *, text: str | None = None
) -> tuple[StudyModel, dict[str, Any]]:
    """A compiled spec and the full parameter set of its fixed design (``dse evaluate``).

    ``objectives:`` may be left out (every metric is shown, none is an objective); ``text``
    is the spec's YAML when it is not read from ``spec_path`` (a catalog's preset spec). The
    evaluators are probed in this process: the design is evaluated here right after, with no
    child or time limit either."""
    loaded, problems = collect_spec(spec_path, text=text)
    if loaded is not None and "objectives" not in loaded.raw:
        problems = [p for p in problems if p.field != "objectives"]
    if problems or loaded is None:
        raise SpecError(problems)
    params, fixed = _split(loaded, sets)
    model, problems = collect_model(loaded, fixed_overrides=fixed, inline_probe=True)
    if problems or model is None:
        raise SpecError(blame_overrides(problems, fixed))
    check_params(model.spec.space, params)
    return model, params


def evaluate(model: StudyModel, params: Mapping[str, Any]) -> dict[str, float]:
    """Every metric of one design, as plain floats."""
    return {k: float(v) for k, v in model.evaluate(params).items()}


def lock_dict(model: StudyModel, url: str) -> dict[str, Any]:
    """The fully resolved spec: every preset value spelled out."""
    spec = model.spec.model_dump(mode="json")
    spec["fixed"] = model.context
    # The domain's default constraints held beside the spec's own: a study resumed under other
    # defaults would mix trials judged by two rules (dse.search.spec_lock compares them).
    own = set(model.spec.constraints)
    held = [c.source for c in model.constraints if c.source not in own]
    if held:
        spec["default_constraints_held"] = held
    if spec.get("default_constraints") is True:
        spec.pop("default_constraints")  # the default: a lock from before the field reads alike
    spec["storage"] = url
    spec["fixed_overrides"] = model.fixed_overrides
    if spec.get("robust") is None:
        spec.pop("robust", None)  # robust runs say so in lock_extras; nominal locks unchanged
    versions = {n: e.version for n, e in model.evaluators.items() if e.version is not None}
    if versions:  # declared model versions: a resumed study refuses others (spec_lock)
        spec["evaluator_versions"] = versions
    if model.uncertain:  # distributions from fixed (dse.model.uncertain); fixed holds nominals
        spec["uncertain"] = {u.name: u.as_dict() for u in model.uncertain}
    spec.update(getattr(model, "lock_extras", dict)())
    return spec
