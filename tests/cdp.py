"""A minimal Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (no extra
package): open a page in headless Chromium and evaluate JavaScript in it, so a test can read
what the page's own scripts computed (a plotly figure's data, a rendered list)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.components import chromium_path


class Browser:
    """One headless Chromium driven through fds 3 (commands in) and 4 (replies out)."""

    def __init__(self, profile: Path) -> None:
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        # Keep the pipe ends clear of 3 and 4 so dup2 in the child cannot clobber them.
        ends = [os.dup(fd) for fd in (to_chrome_r, to_chrome_w, from_chrome_r, from_chrome_w)]
        ends = [fd if fd > 4 else os.dup(fd) for fd in ends]
        for fd in (to_chrome_r, to_chrome_w, from_chrome_r, from_chrome_w):
            os.close(fd)
        child_in, self._w, self._r, child_out = ends

        def pipes() -> None:
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        self.proc = subprocess.Popen(
            [
                str(chromium_path()),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "--window-size=1400,1800",
                "about:blank",
            ],
            preexec_fn=pipes,  # noqa: PLW1509 - only dup2, before exec
            pass_fds=(3, 4),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(child_in)
        os.close(child_out)
        self._buf = b""
        self._id = 0
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]

    def call(self, method: str, *, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self._buf:
                chunk = os.read(self._r, 1 << 16)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self._buf += chunk
            raw, self._buf = self._buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def open(self, url: str) -> None:
        self.call("Page.navigate", session=self.session, url=url)

    def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` in the page (promises awaited)."""
        res = self.call(
            "Runtime.evaluate",
            session=self.session,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in res:
            raise RuntimeError(str(res["exceptionDetails"]))
        return res["result"].get("value")

    def wait_for(self, expression: str, *, timeout_s: float = 60) -> Any:
        """Poll ``expression`` until it is truthy; return its value."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"page never satisfied: {expression}")
            time.sleep(0.25)

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)
