"""Load a page in real headless Chromium and read it back through the DevTools protocol.

Chromium runs with ``--remote-debugging-pipe``: commands go in on its fd 3 and
replies and events come out on fd 4, as NUL-terminated JSON, so no websocket
client or open port is needed. :func:`load_page` navigates to a file, waits
for the load event, evaluates an expression in the page and returns its value
with every console message, uncaught exception and browser log entry the page
produced. The process is owned by the call and killed by PID when it ends.
:class:`Browser` keeps one page open for a session of navigations, key presses
(``Input.dispatchKeyEvent``, so the page's own keyboard handlers run), typing
and screenshots.
"""

from __future__ import annotations

import base64
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

__all__ = ["Browser", "PageResult", "load_page"]


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

    def _readable(self, timeout: float) -> bool:
        # poll, not select: a long test session holds descriptors above select()'s 1024 limit.
        poller = select.poll()
        poller.register(self.r, select.POLLIN)
        return bool(poller.poll(timeout * 1000))

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not self._readable(left):
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


class Browser:
    """One headless Chromium with one page, driven over the DevTools pipe: navigate, evaluate,
    press keys, type, take screenshots. A context manager; the process is killed by PID on exit.
    ``args`` are more Chromium switches (e.g. ``--host-resolver-rules`` to give a test domain an
    address)."""

    _KEYS = {  # key -> (code, Windows virtual key code, text)
        "Enter": ("Enter", 13, "\r"), "Tab": ("Tab", 9, ""), "Escape": ("Escape", 27, ""),
        "ArrowDown": ("ArrowDown", 40, ""), "ArrowUp": ("ArrowUp", 38, ""),
    }  # fmt: skip

    def __init__(
        self,
        binary: str,
        *,
        timeout: float = 60.0,
        size: tuple[int, int] = (1400, 1000),
        args: tuple[str, ...] = (),
    ) -> None:
        """``size``: the window's (width, height) in CSS pixels."""
        self.binary, self.timeout, self.size, self.args = binary, timeout, size, args

    def __enter__(self) -> Browser:
        cmd_r, cmd_w = os.pipe()
        out_r, out_w = os.pipe()

        def _child_fds() -> None:
            # Copies first: a pipe end may itself be fd 3 or 4, and dup2 onto itself keeps close-on-exec.
            a, b = os.dup(cmd_r), os.dup(out_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.profile = tempfile.mkdtemp(prefix="ragpulse-chromium-")
        w, h = self.size
        self.proc = subprocess.Popen(  # noqa: S603 - fixed argv
            [self.binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", f"--window-size={w},{h}", f"--user-data-dir={self.profile}",
             "--remote-debugging-pipe", *self.args, "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=False, preexec_fn=_child_fds,
        )  # fmt: skip
        os.close(cmd_r)
        os.close(out_w)
        self.fds = (cmd_w, out_r)
        self.pipe = _Pipe(cmd_w, out_r)
        try:
            target = self.pipe.call("Target.createTarget", {"url": "about:blank"}, timeout=self.timeout)
            self.session = self.pipe.call(
                "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
            )["sessionId"]
            for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
                self.call(domain)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.pipe.call("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for fd in self.fds:
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.pipe.call(method, params, session=self.session, timeout=self.timeout)

    def _drop_loads(self) -> None:
        self.pipe.events = [e for e in self.pipe.events if e["method"] != "Page.loadEventFired"]

    def navigate(self, url: str) -> None:
        """Open ``url`` and wait for its load event."""
        self._drop_loads()
        self.call("Page.navigate", {"url": url})
        self.pipe.wait_event("Page.loadEventFired", timeout=self.timeout)

    def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` in the page (promises awaited)."""
        res = self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if "exceptionDetails" in res:
            raise RuntimeError(f"evaluation failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def press(self, key: str, *, ctrl: bool = False, navigates: bool = False) -> None:
        """Press and release ``key`` as the keyboard does (a printable character or a name in _KEYS);
        with ``navigates``, wait for the page the key leads to."""
        if key in self._KEYS:
            code, vk, text = self._KEYS[key]
        else:
            code, vk, text = f"Key{key.upper()}", ord(key.upper()), key
        if ctrl:
            text = ""
        base = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": 2 if ctrl else 0}
        if navigates:
            self._drop_loads()
        self.call(
            "Input.dispatchKeyEvent", {**base, "type": "keyDown" if text else "rawKeyDown", "text": text}
        )
        self.call("Input.dispatchKeyEvent", {**base, "type": "keyUp"})
        if navigates:
            self.pipe.wait_event("Page.loadEventFired", timeout=self.timeout)

    def type_text(self, text: str) -> None:
        """Type ``text`` into the focused field (replacing its selection)."""
        self.call("Input.insertText", {"text": text})

    def screenshot(self, path: Path) -> None:
        """A PNG of the page as it is now."""
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        path.write_bytes(base64.b64decode(data))

    def diagnostics(self) -> PageResult:
        """Console messages, uncaught exceptions and log entries seen so far."""
        result = PageResult(value=None)
        for ev in self.pipe.events:
            if ev["method"] == "Runtime.consoleAPICalled":
                result.console.append(ev["params"])
            elif ev["method"] == "Runtime.exceptionThrown":
                result.exceptions.append(ev["params"])
            elif ev["method"] == "Log.entryAdded":
                result.log.append(ev["params"]["entry"])
        return result


def load_page(binary: str, path: Path, expression: str, *, timeout: float = 60.0) -> PageResult:
    """Open ``path`` in the headless Chromium ``binary``, evaluate ``expression`` after the load event,
    and return its value with the page's diagnostics."""
    with Browser(binary, timeout=timeout) as browser:
        browser.navigate(path.resolve().as_uri())
        value = browser.evaluate(expression)
        result = browser.diagnostics()
        result.value = value
        return result
