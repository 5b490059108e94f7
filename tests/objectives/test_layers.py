"""The domain's imports (DESIGN, "The dependency rule"): ``objectives/`` never imports Optuna or
``dse`` (the engine finds evaluators through the registry, never the other way round), and no
chain of imports inside it, function-level ones included, comes back to where it started."""

from __future__ import annotations

from pathlib import Path

from tests.dse.test_layers import ROOT, find_cycle, imports_of, module_name

OBJECTIVES = ROOT / "objectives"
MODULES = sorted(OBJECTIVES.rglob("*.py"))


def test_objectives_never_import_optuna_or_dse() -> None:
    found = {
        module_name(p): [
            f"line {line}: {target}"
            for target, line in imports_of(p, packages=("optuna", "optunahub", "dse"))
        ]
        for p in MODULES
    }
    assert len(found) > 20  # the walk found the domain
    assert not {m: v for m, v in found.items() if v}


def test_no_import_cycles_in_objectives() -> None:
    graph = {module_name(p): imports_of(p, packages=("objectives",)) for p in MODULES}
    edges = {m: sorted({t for t, _ in imps if t in graph and t != m}) for m, imps in graph.items()}
    assert find_cycle(edges) is None, " -> ".join(find_cycle(edges) or [])


def test_the_walk_sees_objectives_imports(tmp_path: Path) -> None:
    # The checker itself on a probe: function-level, relative and forbidden imports all seen.
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import optuna\ndef f():\n"
        "    from dse.search.study import runner\n    from ..units import u\n"
    )
    found = imports_of(probe, "objectives.perf.probe", packages=("optuna", "dse", "objectives"))
    assert found == [("optuna", 1), ("dse.search.study.runner", 3), ("objectives.units", 4)]
