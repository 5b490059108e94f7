"""Bounded work for any input: YAML bombs, deep nesting, huge constraints and Monte Carlo
requests get one clear line and exit 2, fast and in little memory, with nothing created."""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

import pytest

from dse.errors import ExprError
from dse.spec.expr import parse_expr
from tests.conftest import SPACES, run_dse


def _one_line_exit_2(res: subprocess.CompletedProcess[str], fragment: str) -> str:
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert "Traceback" not in res.stderr, res.stderr[-2000:]
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], res.stderr[-2000:]
    return lines[0]


def _billion_laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + f"\nstudy: *a{levels}\n"


def test_billion_laughs_answers_fast_in_small_memory(tmp_path: Path, studies_dir: Path) -> None:
    spec = tmp_path / "bomb.yaml"
    spec.write_text(_billion_laughs())
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu_before = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    for command in ("validate", "run"):
        line = _one_line_exit_2(run_dse(command, str(spec)), "once aliases are expanded")
        assert line.startswith(f"{spec}:") and len(line) < 500
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds, which a busy machine does not stretch: two start-ups (~1.5 s each) and a
    # bounded walk; expanding the bomb would take minutes.
    assert usage.ru_utime + usage.ru_stime - cpu_before < 30
    peak_kib = usage.ru_maxrss
    assert max(before, peak_kib) < 1_000_000  # < 1 GiB (the import alone is ~150 MiB)
    assert list(studies_dir.iterdir()) == []


def test_a_large_expanded_value_is_not_echoed(tmp_path: Path) -> None:
    lines = ['a0: &a0 "' + "x" * 1000 + '"']
    for i in range(1, 4):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 30) + "]")
    spec = tmp_path / "echo.yaml"
    spec.write_text("\n".join(lines) + "\nstudy: *a3\n")
    res = run_dse("validate", str(spec))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert len(res.stderr) < 5_000, len(res.stderr)  # the value is 27 MB once expanded


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("9 ** 9 ** 9 ** 9 <= 1", "exponent '9 ** 9 ** 9' must be a name or a number"),
        (" + ".join(["x"] * 3000) + " <= 1", "characters long (at most 2,000)"),
        (" + ".join(["x"] * 400) + " <= 1", "more than 500 terms"),
        ("-" * 150 + "x <= 1", "nested too deeply"),
        ("(" * 300 + "x" + ")" * 300 + " <= 1", "cannot parse"),
    ],
)
def test_constraint_size_and_exponent_are_capped(text: str, fragment: str) -> None:
    with pytest.raises(ExprError, match=None) as info:
        parse_expr(text)
    assert fragment in str(info.value)


def test_powers_evaluate_in_floating_point() -> None:
    # A name in the exponent is allowed: float arithmetic overflows to inf, never hangs.
    v = parse_expr("x ** y <= 1").violation({"x": 9.0, "y": 9.0**9})
    assert v == float("inf")


def test_simulate_runs_are_capped_with_one_clear_line() -> None:
    h100 = str(SPACES / "h100.yaml")
    _one_line_exit_2(
        run_dse("evaluate", h100, "--simulate", "--runs", "1e8"), "from 1 to 1,000,000"
    )
    _one_line_exit_2(
        run_dse("evaluate", h100, "--simulate", "--runs", "1000000", "--years", "1000"),
        "fit in memory",
    )
    res = run_dse("evaluate", h100, "--simulate", "--runs", "1e3", "--json")
    assert res.returncode == 0, res.stderr
    assert '"runs": 1000' in res.stdout
