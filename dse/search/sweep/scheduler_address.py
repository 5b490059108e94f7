"""A ``--scheduler`` address checked before a sweep creates anything.

``tcp://HOST:PORT`` (or tls://, ws://, wss://) must be well formed and something must accept
a connection there within a few seconds; otherwise the sweep says so in one line instead of
making the study folder and failing after Dask's 20 s connect time-out.
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from dse.errors import SchedulerAddressError

SCHEMES = ("tcp", "tls", "ws", "wss")
CONNECT_TIMEOUT_S = 5.0


def check_scheduler(address: str, *, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Raise SchedulerAddressError unless ``address`` is SCHEME://HOST:PORT and accepts a TCP
    connection within ``timeout_s``."""
    form = "expected tcp://HOST:PORT (the address 'dask scheduler' prints)"
    try:
        parts = urlsplit(address)
        port = parts.port
    except ValueError as exc:
        raise SchedulerAddressError(f"--scheduler {address!r}: {exc}; {form}") from None
    if "://" not in address or parts.scheme not in SCHEMES:
        what = f"scheme {parts.scheme!r}" if "://" in address else "no scheme"
        raise SchedulerAddressError(f"--scheduler {address!r}: {what}; {form}")
    if not parts.hostname or port is None or port == 0:
        raise SchedulerAddressError(f"--scheduler {address!r}: needs a host and a port; {form}")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise SchedulerAddressError(f"--scheduler {address!r}: unexpected path or query; {form}")
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout_s):
            pass
    except (OSError, UnicodeError) as exc:  # UnicodeError: a host name IDNA cannot encode
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise SchedulerAddressError(
            f"--scheduler {address}: nothing accepts connections at {parts.hostname}:{port} "
            f"({why}); start one with 'dask scheduler', then 'dask worker {address}'"
        ) from None
