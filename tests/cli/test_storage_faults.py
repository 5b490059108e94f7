"""Storage faults: a torn last journal line, a full disk, a read-only folder. Each leaves the
study readable and resumable, and the user gets one line, not a traceback."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import pandas as pd
import pytest

from tests.cli.test_crash_resume import slow_spec
from tests.components import in_ci
from tests.conftest import run_dse


def test_torn_last_journal_line_is_repaired_and_the_study_goes_on(
    tmp_path: Path, studies_dir: Path
) -> None:
    env = {"DSE_STUDIES_DIR": str(studies_dir)}
    spec = slow_spec(tmp_path, study="torn", trials=12, sleep_s=0.0)
    res = run_dse("run", str(spec), "--no-progress", env=env)
    assert res.returncode == 0, res.stderr
    journal = studies_dir / "torn" / "journal.log"
    data = journal.read_bytes()
    # A disk that filled up mid-append: the last line is cut short and has no newline.
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    torn = data[: last + (len(data) - last) // 2]
    assert not torn.endswith(b"\n")
    journal.write_bytes(torn)
    for trials in ("20", "28"):
        res = run_dse("run", str(spec), "--no-progress", "--trials", trials, env=env)
        assert res.returncode == 0, res.stderr
        res = run_dse("status", "torn", "--json", env=env)
        assert res.returncode == 0, res.stderr
        assert f'"finished": {trials}' in res.stdout
    t = pd.read_csv(studies_dir / "torn" / "trials.csv")
    # The torn record was the last trial's result: that trial is retired and its design re-run.
    assert (~t["stale"]).sum() == 28 and t["stale"].sum() <= 1
    assert (t["state"] != "RUNNING").all()
    # Every line is whole JSON again; the cut-off half is kept aside, not replayed.
    lines = journal.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(line.startswith(b"{") for line in lines[:-1])
    assert (studies_dir / "torn" / "journal.log.torn").read_bytes().strip() == torn[last:]


def _is_root() -> bool:
    return os.geteuid() == 0


@contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A small RAM disk at ``path`` (needs root, as in CI), unmounted afterwards."""
    path.mkdir(parents=True, exist_ok=True)
    cmd = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:  # root in a container without CAP_SYS_ADMIN
        message = f"cannot mount a tmpfs here ({res.stderr.strip()})"
        if in_ci():
            pytest.fail(f"{message}; CI must run the disk-full test (run it as root)")
        pytest.skip(message)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _remount(path: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(path)], check=True)


def _whole_lines(journal: Path) -> int:
    """Every journal line is complete JSON; return how many there are."""
    data = journal.read_bytes()
    assert data.endswith(b"\n")
    lines = data[:-1].split(b"\n")
    for line in lines:
        json.loads(line)
    return len(lines)


def _one_error_line(res: subprocess.CompletedProcess[str], words: str) -> None:
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], lines


@pytest.mark.skipif(not _is_root(), reason="mounting a small tmpfs needs root (CI runs as root)")
def test_disk_full_is_one_line_exit_1_and_the_study_resumes(tmp_path: Path) -> None:
    # 600 trials' journal (>= 0.5 KB each) cannot fit in 96 KB.
    spec = slow_spec(tmp_path, study="full", trials=600, sleep_s=0.0)
    with tmpfs(tmp_path / "disk", "96k") as disk:
        env = {"DSE_STUDIES_DIR": str(disk / "studies")}
        res = run_dse("run", str(spec), "--no-progress", env=env)
        _one_error_line(res, "No space left on device")
        journal = disk / "studies" / "full" / "journal.log"
        assert _whole_lines(journal) > 0  # no half-written record left behind
        _remount(disk, "size=64m")
        res = run_dse("run", str(spec), "--no-progress", env=env)
        assert res.returncode == 0, res.stderr
        _whole_lines(journal)
        t = pd.read_csv(disk / "studies" / "full" / "trials.csv")
        assert (~t["stale"]).sum() == 600 and (t["state"] != "RUNNING").all()
        assert not [p for p in (disk / "studies" / "full").iterdir() if p.suffix == ".tmp"]


def test_a_file_size_limit_is_one_line_exit_1_and_the_study_resumes(tmp_path: Path) -> None:
    """A full disk without root: RLIMIT_FSIZE caps every file the run writes at 16 KiB
    (Python ignores SIGXFSZ, so a write past it fails with EFBIG). One line naming the file
    and the limit, no half record left, and the same command without the limit finishes."""
    spec = slow_spec(tmp_path, study="capped", trials=120, sleep_s=0.0)
    env = {**os.environ, "DSE_STUDIES_DIR": str(tmp_path / "studies")}
    exe = str(Path(sys.executable).parent / "dse")
    cap = 16 * 1024

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))

    res = subprocess.run(
        [exe, "run", str(spec), "--no-progress"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limited,
    )
    _one_error_line(res, "File too large")
    assert "file-size limit" in res.stderr, res.stderr
    journal = tmp_path / "studies" / "capped" / "journal.log"
    assert 0 < _whole_lines(journal) and journal.stat().st_size <= cap
    res = run_dse("run", str(spec), "--no-progress", env=env)
    assert res.returncode == 0, res.stderr
    t = pd.read_csv(tmp_path / "studies" / "capped" / "trials.csv")
    assert (~t["stale"]).sum() == 120 and (t["state"] != "RUNNING").all()


def test_read_only_storage_is_one_line_exit_1_and_left_intact(tmp_path: Path) -> None:
    spec = slow_spec(tmp_path, study="ro", trials=6, sleep_s=0.0)
    root = tmp_path / "ro-disk"
    with tmpfs(root, "64m") if _is_root() else nullcontext(root) as disk:
        disk.mkdir(exist_ok=True)
        env = {"DSE_STUDIES_DIR": str(disk / "studies")}
        res = run_dse("run", str(spec), "--no-progress", env=env)
        assert res.returncode == 0, res.stderr
        folder = disk / "studies" / "ro"
        before = {p.name: p.read_bytes() for p in folder.iterdir()}
        if _is_root():  # root writes through permissions: make the file system read-only
            _remount(disk, "ro")
        else:
            for p in folder.iterdir():
                p.chmod(0o444)
            folder.chmod(0o555)
        try:
            res = run_dse("run", str(spec), "--no-progress", "--trials", "10", env=env)
            _one_error_line(res, "Read-only file system" if _is_root() else "Permission denied")
            assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
            res = run_dse("status", "ro", "--json", env=env)  # reading still works
            assert res.returncode == 0 and '"finished": 6' in res.stdout, res.stderr
        finally:
            if _is_root():
                _remount(disk, "rw")
            else:
                folder.chmod(0o755)
                for p in folder.iterdir():
                    p.chmod(0o644)
        res = run_dse("run", str(spec), "--no-progress", "--trials", "10", env=env)
        assert res.returncode == 0, res.stderr
