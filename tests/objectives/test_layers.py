"""The domain's imports (docs/architecture.md): ``objectives/`` never imports Optuna, and of the
engine only the modules meant for it (:data:`ENGINE_FOR_THE_DOMAIN`), which themselves reach
no Optuna and no runner; the engine finds evaluators through the registry. No chain of imports
inside the domain, function-level ones included, comes back to where it started."""

from __future__ import annotations

from pathlib import Path

from tests.dse.test_layers import DSE, ROOT, find_cycle, imports_of, module_name

OBJECTIVES = ROOT / "objectives"
MODULES = sorted(OBJECTIVES.rglob("*.py"))
#: The engine's modules the domain may import: the guarded YAML reader and its error type, the
#: plug-in contract.
ENGINE_FOR_THE_DOMAIN = {"dse.spec.safe_yaml", "dse.errors", "dse.plugin"}
OPTUNA = ("optuna", "optunahub")


def test_objectives_import_no_optuna_and_only_the_engine_modules_meant_for_them() -> None:
    found = {
        module_name(p): [
            f"line {line}: {target}"
            for target, line in imports_of(p, packages=(*OPTUNA, "dse"))
            if target not in ENGINE_FOR_THE_DOMAIN
        ]
        for p in MODULES
    }
    assert len(found) > 20  # the walk found the domain
    assert not {m: v for m, v in found.items() if v}


def test_the_engine_modules_the_domain_imports_reach_no_optuna_and_no_search() -> None:
    graph = {module_name(p): imports_of(p, packages=("dse", *OPTUNA)) for p in DSE.rglob("*.py")}
    reached, todo = set(), [m for m in ENGINE_FOR_THE_DOMAIN if m in graph]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo += [t for t, _ in graph.get(module, [])]
    assert "dse.spec.safe_yaml" in reached
    bad = sorted(m for m in reached if m.split(".")[0] in OPTUNA or m.startswith("dse.search"))
    assert not bad, f"the domain would import {bad} through {sorted(ENGINE_FOR_THE_DOMAIN)}"


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
