"""Joining a study: the first worker to create it stores its resolved spec there; later
workers must bring the same spec, so nobody mixes two studies' samples."""

from __future__ import annotations

import json
import time
from typing import Any

import optuna

from dse.errors import SpecMismatchError
from dse.search.stored import META_KEY, plain

#: Keys that may differ between workers of one study: how each reaches the storage, the
#: total each is asked to reach (raising it extends the study), and the warm start.
VOLATILE_KEYS = (
    "storage",
    "journal_outside_studies",
    "search.trials",
    "search.trial_timeout_s",
    "search.warm_start",  # seeds a new study only; the creator stores the designs it chose
    "dse_version",
    "description",
)
#: Keys that describe reporting, not the problem: a hypervolume threshold may be set later.
VOLATILE_SUFFIXES = (".threshold",)
#: How long a joining worker waits for the creator to store its spec.
SPEC_WAIT_S = 10.0


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict) and obj:
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    if isinstance(obj, list) and obj:
        out = {}
        for i, v in enumerate(obj):
            out.update(_flatten(v, f"{prefix}{i}."))
        return out
    return {prefix[:-1]: obj}


def _comparable(lock: dict[str, Any]) -> dict[str, Any]:
    flat = _flatten(json.loads(json.dumps(plain(lock))))
    return {
        k: v
        for k, v in flat.items()
        if k not in VOLATILE_KEYS and not k.endswith(VOLATILE_SUFFIXES)
    }


def spec_differences(stored: dict[str, Any], mine: dict[str, Any]) -> list[str]:
    """Dotted keys whose values differ between two resolved specs. A key only one side has
    comes from a newer schema field (filled with its default), not from the user."""
    a, b = _comparable(stored), _comparable(mine)
    return sorted(k for k in a.keys() & b.keys() if a[k] != b[k])


def check_spec(study: optuna.Study, lock: dict[str, Any], *, created: bool) -> None:
    """Store the resolved spec in a study this worker created; otherwise refuse a different one.

    A joiner may arrive between the creator's two writes (study, then spec), so it waits a
    little for the spec; a study that already has trials predates this check and adopts it.
    """
    resolved = json.loads(json.dumps(plain(lock)))
    if created:
        study.set_user_attr(META_KEY, resolved)
        return
    deadline = time.monotonic() + SPEC_WAIT_S
    stored = study.user_attrs.get(META_KEY)
    while stored is None:
        if study.get_trials(deepcopy=False) or time.monotonic() > deadline:
            study.set_user_attr(META_KEY, resolved)
        else:
            time.sleep(0.1)
        stored = study.user_attrs.get(META_KEY)
    diff = spec_differences(stored, resolved)
    if diff:
        shown = ", ".join(diff[:8]) + (f" (and {len(diff) - 8} more)" if len(diff) > 8 else "")
        raise SpecMismatchError(
            f"study {study.study_name!r} was created with a different spec; differing keys: "
            f"{shown} (use the study's own spec, or give this one another 'study:' name)"
        )
