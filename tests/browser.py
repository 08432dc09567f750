"""Load a page in real headless Chromium and read it back through the DevTools protocol.

Chromium runs with ``--remote-debugging-pipe``: commands go in on its fd 3 and
replies and events come out on fd 4, as NUL-terminated JSON, so no websocket
client or open port is needed. :func:`load_page` navigates to a file, waits
for the load event, evaluates an expression in the page and returns its value
with every console message, uncaught exception and browser log entry the page
produced. The process is owned by the call and killed by PID when it ends.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PageResult", "load_page"]


@dataclass
class PageResult:
    value: Any
    console: list[dict[str, Any]] = field(default_factory=list)  # Runtime.consoleAPICalled params
    exceptions: list[dict[str, Any]] = field(default_factory=list)  # Runtime.exceptionThrown params
    log: list[dict[str, Any]] = field(default_factory=list)  # Log.entryAdded entries

    def errors(self) -> list[str]:
        """Console errors/warnings, uncaught exceptions and error-level log entries, as text."""
        out = [
            f"console.{c['type']}: "
            + " ".join(str(a.get("value", a.get("description"))) for a in c.get("args", []))
            for c in self.console
            if c.get("type") in ("error", "warning", "assert")
        ]
        out += [
            e["exceptionDetails"].get("exception", {}).get("description", e["exceptionDetails"]["text"])
            for e in self.exceptions
        ]
        out += [
            f"log.{e['level']}: {e.get('text')}" for e in self.log if e.get("level") in ("error", "warning")
        ]
        return out


class _Pipe:
    def __init__(self, write_fd: int, read_fd: int) -> None:
        self.w, self.r = write_fd, read_fd
        self.buf = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> int:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise TimeoutError("no reply from chromium")
            chunk = os.read(self.r, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        want = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read(deadline)
            if msg.get("id") == want:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        for i, ev in enumerate(self.events):
            if ev["method"] == method:
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read(deadline)
            if msg.get("method") == method:
                return msg
            if "method" in msg:
                self.events.append(msg)


def load_page(binary: str, path: Path, expression: str, *, timeout: float = 60.0) -> PageResult:
    """Open ``path`` in the headless Chromium ``binary``, evaluate ``expression`` after the load event,
    and return its value with the page's diagnostics."""
    cmd_r, cmd_w = os.pipe()
    out_r, out_w = os.pipe()

    def _child_fds() -> None:
        # Copies first: a pipe end may itself be fd 3 or 4, and dup2 onto itself keeps close-on-exec.
        a, b = os.dup(cmd_r), os.dup(out_w)
        os.dup2(a, 3)
        os.dup2(b, 4)

    profile = tempfile.mkdtemp(prefix="ragpulse-chromium-")
    proc = subprocess.Popen(  # noqa: S603 - fixed argv
        [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
         f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=False, preexec_fn=_child_fds,
    )  # fmt: skip
    os.close(cmd_r)
    os.close(out_w)
    pipe = _Pipe(cmd_w, out_r)
    try:
        target = pipe.call("Target.createTarget", {"url": "about:blank"}, timeout=timeout)["targetId"]
        session = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
            pipe.call(domain, session=session)
        pipe.call("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
        pipe.wait_event("Page.loadEventFired", timeout=timeout)
        res = pipe.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session=session,
        )
        if "exceptionDetails" in res:
            raise RuntimeError(f"evaluation failed: {res['exceptionDetails']}")
        result = PageResult(value=res["result"].get("value"))
        for ev in pipe.events:
            if ev["method"] == "Runtime.consoleAPICalled":
                result.console.append(ev["params"])
            elif ev["method"] == "Runtime.exceptionThrown":
                result.exceptions.append(ev["params"])
            elif ev["method"] == "Log.entryAdded":
                result.log.append(ev["params"]["entry"])
        try:
            pipe.call("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError):
            pass
        return result
    finally:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        os.close(cmd_w)
        os.close(out_r)
        shutil.rmtree(profile, ignore_errors=True)
