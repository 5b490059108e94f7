"""The engine's layering (spec -> model -> search -> results -> inspect -> cli, as
docs/architecture.md draws it): every import in ``dse/``, function-level ones included, points
down or sideways within a layer, none reaches the domain (``objectives/``), and no chain of
imports, through the engine or the domain, comes back to where it started."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DSE = ROOT / "dse"
#: Layer rank per top-level part of ``dse``; a module may import only ranks <= its own.
#: ``dse`` itself (the package, holding ``__version__``) is importable from anywhere; ``api``
#: is the public facade over every layer, imported only by the CLI; ``testing`` re-exports
#: ``dse.model.testing`` and ``dse.search.samplers.testing``.
LAYERS = {"spec": 0, "model": 1, "search": 2, "testing": 2, "results": 3, "inspect": 4}
LAYERS |= {"api": 5, "cli": 6, "__main__": 7}
#: ``heap`` is process set-up (the allocator), importing no other dse module.
LAYERS |= {"heap": 0}
#: ``errors`` holds every exception type; it imports only ``dse.spec.messages``.
LAYERS |= {"errors": 0}
#: ``plugin`` is the public plug-in contract, beside the model layer that consumes it.
LAYERS |= {"plugin": 1}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(
    path: Path, me: str | None = None, *, packages: tuple[str, ...] = ("dse",)
) -> list[tuple[str, int]]:
    """Every module of ``packages`` that ``path`` (module ``me``) imports, anywhere in the
    file, with its line."""
    me = me or module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.append((sub if is_module(sub) else base, node.lineno))
    return [(m, line) for m, line in found if m.split(".")[0] in packages]


def rank(module: str) -> int:
    parts = module.split(".")
    return -1 if len(parts) == 1 else LAYERS[parts[1]]


MODULES = sorted(DSE.rglob("*.py"))
GRAPH = {module_name(p): imports_of(p) for p in MODULES}


def test_every_module_sits_in_a_layer() -> None:
    loose = [m for m in GRAPH if m != "dse" and m.split(".")[1] not in LAYERS]
    assert not loose, f"modules outside the layers {sorted(LAYERS)}: {loose}"
    assert len(GRAPH) > 30  # the walk found the engine


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_point_down(module: str) -> None:
    up = [
        f"line {line}: {target}" for target, line in GRAPH[module] if rank(target) > rank(module)
    ]
    assert not up, f"{module} imports a higher layer: {up}"


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """A cycle of the directed graph as a list of nodes, or None (iterative DFS)."""
    colour = dict.fromkeys(graph, 0)  # 0 new, 1 on the stack, 2 done
    for start in graph:
        if colour[start]:
            continue
        stack = [(start, iter(graph[start]))]
        path = [start]
        colour[start] = 1
        while stack:
            node, children = stack[-1]
            for child in children:
                if colour.get(child, 2) == 1:
                    return path[path.index(child) :] + [child]
                if colour.get(child) == 0:
                    colour[child] = 1
                    stack.append((child, iter(graph[child])))
                    path.append(child)
                    break
            else:
                colour[node] = 2
                stack.pop()
                path.pop()
    return None


def test_no_import_cycles() -> None:
    edges = {m: sorted({t for t, _ in imps if t in GRAPH and t != m}) for m, imps in GRAPH.items()}
    assert find_cycle(edges) is None, " -> ".join(find_cycle(edges) or [])


def test_checker_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    # The checker itself: a two-module cycle through a function-level import is caught.
    assert find_cycle({"a": ["b"], "b": ["a"], "c": []}) in (["a", "b", "a"], ["b", "a", "b"])
    assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) is None
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f():\n    from dse.search.study import runner\n    from ..results import records\n"
    )
    found = imports_of(probe, "dse.model.probe")
    assert found == [("dse.search.study.runner", 2), ("dse.results.records", 3)]
    assert all(rank(t) > rank("dse.model.probe") for t, _ in found)


def test_the_engine_never_imports_the_domain() -> None:
    # Function-level imports count: a lazy ``from objectives import x`` is still a dependency.
    found = {
        module_name(p): [
            f"line {line}: {t}" for t, line in imports_of(p, packages=("objectives",))
        ]
        for p in MODULES
    }
    assert not {m: v for m, v in found.items() if v}


def test_no_import_cycle_through_engine_and_domain() -> None:
    domain = sorted((ROOT / "objectives").rglob("*.py"))
    both = {
        module_name(p): imports_of(p, packages=("dse", "objectives")) for p in MODULES + domain
    }
    edges = {m: sorted({t for t, _ in imps if t in both and t != m}) for m, imps in both.items()}
    assert len(both) > len(GRAPH) + 20  # the domain is in the walk
    assert find_cycle(edges) is None, " -> ".join(find_cycle(edges) or [])


def test_checker_sees_a_lazy_import_of_the_domain(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import yaml\ndef f():\n    from objectives.cost import evaluate_cost\n")
    assert imports_of(probe, "dse.spec.probe", packages=("objectives",)) == [
        ("objectives.cost", 3)
    ]


def test_private_modules_are_imported_only_from_their_own_folder() -> None:
    # ``dse/search/sweep/_dask.py`` is the sweep folder's detail; its neighbours may use it.
    # A package's ``__init__`` (``dse.search.storage``) is in its own folder: it may re-export.
    private = {m for m in GRAPH if m.rpartition(".")[2].startswith("_") and "__" not in m}

    def folder(m: str) -> str:
        return m if any(k.startswith(m + ".") for k in GRAPH) else m.rpartition(".")[0]

    outside = [
        f"{m} line {line}: {t}"
        for m, imps in GRAPH.items()
        for t, line in imps
        if t in private and t.rpartition(".")[0] != folder(m)
    ]
    assert private and not outside


def test_every_exception_type_is_defined_and_imported_from_dse_errors() -> None:
    # Private control-flow exceptions of the guards around user code stay with the guards.
    errors = ast.parse((DSE / "errors.py").read_text(encoding="utf-8"))
    public = {n.name for n in errors.body if isinstance(n, ast.ClassDef)} - {"Problem"}
    elsewhere = []
    for path in [*MODULES, *sorted((ROOT / "objectives").rglob("*.py"))]:
        me = module_name(path)
        if me == "dse.errors":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name in public:
                elsewhere.append(f"{me}: defines {node.name}")
            elif isinstance(node, ast.ImportFrom) and node.module != "dse.errors":
                names = [a.name for a in node.names if a.name in public]
                elsewhere += [f"{me}: imports {n} from {node.module}" for n in names]
    assert len(public) >= 15
    assert not elsewhere
