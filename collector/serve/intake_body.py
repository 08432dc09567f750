"""Read and inflate an OTLP/HTTP request body within fixed bounds of bytes and time.

The intake faces the network, so every request body is treated as hostile:

* the declared ``Content-Length`` is checked before a byte is read (over the
  record limit: 413 without reading it; missing, negative or not a number:
  411/400), so an oversized body never lands in memory;
* the body is read in chunks against one deadline for the whole body, so a
  client that sends less than it declared (or trickles it) gets 408 instead of
  holding a thread forever, and one that closes early gets 400;
* gzip/deflate bodies are inflated with a bounded output buffer
  (``zlib.decompressobj`` with ``max_length``): inflation stops one byte past
  the record limit and the request gets 413, so a small compressed body can
  never expand to more than ``max_record_bytes`` in memory.

Each refusal is an :class:`IntakeRejected` carrying the HTTP status to answer
with (the gRPC intake maps it to its code); after an unread or partly read body
the connection must be closed (``close`` is set), since the stream no longer
starts at a request line.
"""

from __future__ import annotations

import socket
import time
import zlib
from typing import Any, BinaryIO

__all__ = ["IntakeRejected", "declared_length", "read_body", "discard", "inflate"]

# A refused body up to this size is read and dropped before answering (see discard).
DRAIN_MAX_BYTES = 64 << 20

_CHUNK = 1 << 16


# The result a refusal is counted under by default, by HTTP status (others: rejected).
_RESULTS = {401: "unauthenticated", 503: "throttled"}


class IntakeRejected(Exception):
    """A request refused: ``status`` is the HTTP code, the message its reason, ``result`` the
    label it is counted under in ``ragpulse_intake_requests_total`` (by default from the status:
    unauthenticated, throttled or rejected)."""

    def __init__(
        self,
        status: int,
        message: str,
        close: bool = False,
        unread: int = 0,
        retry_after: int | None = None,
        result: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.close = close
        self.unread = unread  # bytes of body still on the wire (to drain before answering)
        self.retry_after = retry_after  # seconds, sent as Retry-After (503: try again)
        self.result = result or _RESULTS.get(status, "rejected")


def declared_length(content_length: str | None, transfer_encoding: str | None, limit: int) -> int:
    """The body length a request declares, refused when it is absent, malformed or over ``limit``."""
    if transfer_encoding and transfer_encoding.strip().lower() != "identity":
        raise IntakeRejected(411, "Transfer-Encoding is not supported: send a Content-Length", close=True)
    if content_length is None:
        return 0
    try:
        length = int(content_length.strip())
    except ValueError:
        raise IntakeRejected(400, f"Content-Length {content_length[:40]!r} is not a number", True) from None
    if length < 0:
        raise IntakeRejected(400, "Content-Length is negative", close=True)
    if length > limit:
        raise IntakeRejected(
            413, f"body of {length} bytes exceeds max_record_bytes {limit}", close=True, unread=length
        )
    return length


def read_body(rfile: BinaryIO, sock: socket.socket, length: int, timeout_s: float) -> bytes:
    """Exactly ``length`` bytes from ``rfile``, all of them within ``timeout_s`` seconds.

    ``sock`` is the connection under ``rfile``; its timeout is lowered to what is
    left of the deadline before each read, and restored afterwards.
    """
    parts: list[bytes] = []
    _receive(rfile, sock, length, timeout_s, parts.append)
    return b"".join(parts)


def discard(rfile: BinaryIO, sock: socket.socket, length: int, timeout_s: float) -> None:
    """Read and drop up to ``length`` bytes (one chunk in memory at a time) so that the
    answer to a refused body reaches a client still sending it, instead of a reset."""
    try:
        _receive(rfile, sock, length, timeout_s, lambda _chunk: None)
    except (IntakeRejected, OSError):
        pass


def _receive(rfile: BinaryIO, sock: socket.socket, length: int, timeout_s: float, sink: Any) -> None:
    deadline = time.monotonic() + timeout_s
    previous = sock.gettimeout()
    got = 0
    try:
        while got < length:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
            chunk = rfile.read1(min(_CHUNK, length - got))  # type: ignore[attr-defined]
            if not chunk:
                raise IntakeRejected(
                    400, f"body ended after {got} of {length} bytes (Content-Length)", close=True
                )
            sink(chunk)
            got += len(chunk)
    except TimeoutError:
        raise IntakeRejected(
            408, f"body not received within {timeout_s:g} s ({got} of {length} bytes)", close=True
        ) from None
    finally:
        try:
            sock.settimeout(previous)
        except OSError:  # the peer is gone; the caller closes the connection anyway
            pass


def inflate(body: bytes, encoding: str, limit: int) -> bytes:
    """``body`` decoded per ``Content-Encoding`` (gzip, deflate or identity), at most ``limit`` bytes.

    gzip may hold several members (as ``gzip.decompress`` accepts); deflate is
    the zlib format (RFC 9110). A stream that inflates past ``limit`` raises 413
    as soon as the limit is passed; a corrupt or truncated one raises 400.
    """
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise IntakeRejected(415, f"unsupported content encoding {encoding[:40]!r}")
    wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
    out = bytearray()
    data = body
    try:
        while True:
            d = zlib.decompressobj(wbits)
            out += d.decompress(data, limit + 1 - len(out))
            if len(out) > limit:
                raise IntakeRejected(413, f"{encoding} body inflates past max_record_bytes {limit}")
            if not d.eof:
                raise IntakeRejected(400, f"truncated {encoding} body")
            data = d.unused_data
            if encoding != "gzip" or not data.strip(b"\x00"):
                break
    except zlib.error as exc:
        raise IntakeRejected(400, f"corrupt {encoding} body: {exc}") from None
    if data.strip(b"\x00") and encoding == "deflate":
        raise IntakeRejected(400, "trailing bytes after the deflate stream")
    return bytes(out)
