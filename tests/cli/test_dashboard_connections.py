"""``dse dashboard`` serves each connection on its own thread, with a time-out: a client that
opens a connection and never finishes its request headers blocks nobody. Real HTTP against a
real served process."""

from __future__ import annotations

import socket
import time
import urllib.request
from pathlib import Path

from dse.inspect.dashboard import CONNECTION_TIMEOUT_S
from tests.cli.test_dashboard_exposure import _study, dashboard


def test_a_half_open_connection_blocks_no_other_client(tmp_path: Path, studies_dir: Path) -> None:
    name = _study(tmp_path, studies_dir)
    with dashboard(studies_dir, name) as (base, sid, _):
        port = int(base.rsplit(":", 1)[1])
        stalled = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(3)]
        try:
            for s in stalled:  # request lines whose headers never end
                s.sendall(b"GET /api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            time.sleep(0.5)
            t0 = time.monotonic()
            for _ in range(3):  # served while all three are still open
                with urllib.request.urlopen(f"{base}/api/studies/{sid}", timeout=20) as resp:
                    assert resp.status == 200
            if time.monotonic() - t0 > CONNECTION_TIMEOUT_S / 2:
                return  # a very busy machine: the server may have timed the stalled ones out
            for s in stalled:  # still open: the others were not served by closing these
                s.setblocking(False)
                try:
                    assert s.recv(1) != b""
                except BlockingIOError:
                    pass
        finally:
            for s in stalled:
                s.close()
