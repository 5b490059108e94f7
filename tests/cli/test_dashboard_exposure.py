"""``dse dashboard`` exposure: a non-loopback host needs --expose, prints a warning and serves
read-only (optuna-dashboard's API would otherwise let anyone delete the study). Real HTTP
against a real served process, reached on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.cli.test_crash_resume import slow_spec
from tests.conftest import ROOT, run_dse


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def request(method: str, url: str, body: bytes | None = None) -> int:
    req = urllib.request.Request(url, data=body, method=method)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@contextmanager
def dashboard(studies: Path, *args: str) -> Iterator[tuple[str, int, subprocess.Popen[str]]]:
    """A served ``dse dashboard``: the base URL (on 127.0.0.1), the study id, the process."""
    port = free_port()
    exe = Path(sys.executable).parent / "dse"
    proc = subprocess.Popen(
        [str(exe), "dashboard", *args, "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "DSE_STUDIES_DIR": str(studies)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        study_id = -1
        for line in proc.stdout:
            if line.startswith("optuna-dashboard: "):
                study_id = int(line.split()[1].rstrip("/").rsplit("/", 1)[1])
                break
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                with urllib.request.urlopen(f"{base}/api/studies", timeout=5):
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.1)
        yield base, study_id, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _study(tmp_path: Path, studies: Path) -> str:
    spec = slow_spec(tmp_path, study="shown", trials=6, sleep_s=0.0)
    res = run_dse("run", str(spec), "--no-progress", env={"DSE_STUDIES_DIR": str(studies)})
    assert res.returncode == 0, res.stderr
    return "shown"


def _assert_read_only(base: str, study_id: int) -> None:
    assert request("GET", f"{base}/api/studies") == 200
    assert request("GET", f"{base}/api/studies/{study_id}") == 200
    assert request("DELETE", f"{base}/api/studies/{study_id}") == 405
    assert request("POST", f"{base}/api/studies/{study_id}/rename", b'{"study_name":"x"}') == 405
    assert (
        request("PUT", f"{base}/api/studies/{study_id}/note", b'{"version":1,"body":"x"}') == 405
    )
    assert request("PATCH", f"{base}/api/studies/{study_id}") == 405
    assert request("GET", f"{base}/api/studies/{study_id}") == 200  # still there


def test_non_loopback_host_needs_expose(tmp_path: Path, studies_dir: Path) -> None:
    name = _study(tmp_path, studies_dir)
    env = {"DSE_STUDIES_DIR": str(studies_dir)}
    res = run_dse(
        "dashboard", name, "--host", "0.0.0.0", "--port", str(free_port()), env=env, timeout=60
    )
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "--expose" in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_exposed_dashboard_warns_and_is_read_only(tmp_path: Path, studies_dir: Path) -> None:
    name = _study(tmp_path, studies_dir)
    with dashboard(studies_dir, name, "--host", "0.0.0.0", "--expose") as (base, sid, proc):
        _assert_read_only(base, sid)
    assert proc.stderr is not None
    assert "warning: serving study 'shown' to the network" in proc.stderr.read()
    res = run_dse("status", name, "--json", env={"DSE_STUDIES_DIR": str(studies_dir)})
    assert res.returncode == 0 and '"finished": 6' in res.stdout


def test_read_only_on_loopback_and_writes_only_when_asked(
    tmp_path: Path, studies_dir: Path
) -> None:
    name = _study(tmp_path, studies_dir)
    with dashboard(studies_dir, name, "--read-only") as (base, sid, _):
        _assert_read_only(base, sid)
    # Loopback without --read-only behaves as optuna-dashboard: a note edit reaches the app
    # (204 saved, or 409 for a stale note version), it is not refused.
    with dashboard(studies_dir, name) as (base, sid, _):
        note = b'{"version":1,"body":"x"}'
        assert request("PUT", f"{base}/api/studies/{sid}/note", note) in (200, 204, 409)
