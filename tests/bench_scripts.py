"""Load a script of benchmarks/ as a module, as its tests need it."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.conftest import ROOT

BENCHMARKS = ROOT / "benchmarks"


def load(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, registered in ``sys.modules`` (dataclasses look their module
    up there); while it loads, benchmarks/ is on the path, so it may import its siblings."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return mod
