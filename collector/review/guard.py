"""The review app's defences against other web sites: which hosts, which origins, which frames.

A review server on 127.0.0.1 without a token is reachable by any page the reviewer's browser
opens, so it checks, before any handler reads the store or the eval set:

- **Host** (DNS rebinding): a request must name an allowed host (:func:`allowed_hosts`: the
  bound address, ``localhost``, ``127.0.0.1``, ``[::1]`` and the ``--allowed-host`` values);
  any other ``Host`` gets 400 from Starlette's ``TrustedHostMiddleware``. A rebinding page
  names its own domain, so it is refused even though its address resolves to this machine.
- **Origin** (cross-site writes): a request that is not GET, HEAD or OPTIONS must come from the
  server's own origin (:func:`same_origin`); otherwise 403 before its body is read.
- **Frames and scripts**: every response carries ``X-Frame-Options: DENY`` and a
  Content-Security-Policy with ``frame-ancestors 'none'`` (no clickjacking), scripts and styles
  only with the response's nonce (:data:`NONCE_KEY`), forms posting only to this origin.

:func:`local_path` keeps redirects on this server, and :func:`case_url` is the one way a case
id (any non-empty string, ``/`` included) becomes a link.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from collections.abc import Iterable
from urllib.parse import quote, urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "LOCAL_HOSTS",
    "NONCE_KEY",
    "SAFE_METHODS",
    "SameOrigin",
    "SecurityHeaders",
    "allowed_hosts",
    "case_url",
    "content_security_policy",
    "host_pattern",
    "local_path",
    "request_target",
    "same_origin",
]

#: The names of this machine a browser may use for a server bound to loopback.
LOCAL_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "[::1]")
#: Methods that change nothing (RFC 9110 safe methods); every other one is origin-checked.
SAFE_METHODS: frozenset[str] = frozenset({"GET", "HEAD", "OPTIONS"})
#: Where :class:`SecurityHeaders` leaves the response's CSP nonce in the ASGI scope's ``state``.
NONCE_KEY = "csp_nonce"
#: ``Sec-Fetch-Site`` values of a request this origin made (or the user typed).
_SAME_SITE_FETCH = frozenset({"same-origin", "none"})
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_NAME = re.compile(rf"^(?:\*\.)?{_LABEL}(?:\.{_LABEL})*$")
# The URL parts a browser resolves away: dot segments ("." and "..", also percent-encoded).
_DOT_SEGMENTS = frozenset({".", ".."})


def host_pattern(host: str) -> str:
    """``host`` as ``TrustedHostMiddleware`` compares it: lower case, an IPv6 address in brackets,
    a name or ``*.name``. ValueError for anything else (a port, a scheme, ``*`` alone)."""
    text = host.strip().lower()
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        ip = None
    if ip is not None:
        return f"[{ip.compressed}]" if ip.version == 6 else ip.compressed
    if not _NAME.match(text):
        raise ValueError(
            f"not a host name: {host!r} (a name such as review.example.com or *.example.com, "
            "or an IP address; no scheme, port or path)"
        )
    return text


def allowed_hosts(bound: str, extra: Iterable[str] = ()) -> list[str]:
    """The ``Host`` names the server answers: the address it is bound to, :data:`LOCAL_HOSTS`
    and ``extra`` (``--allowed-host``), as :func:`host_pattern` writes them."""
    out = [host_pattern(bound), *LOCAL_HOSTS, *(host_pattern(h) for h in extra)]
    return list(dict.fromkeys(out))


def same_origin(headers: Headers) -> bool:
    """Whether a state-changing request comes from the server's own origin. A browser says so
    in ``Sec-Fetch-Site`` (``same-site`` is refused: another port of localhost is another
    origin of the same site); a browser without it sends ``Origin``, whose host and port must
    be the request's ``Host``. A request with neither header is not from a browser (a page
    cannot send one without them), so no other site can have made it."""
    site = headers.get("sec-fetch-site")
    if site is not None:
        return site.strip().lower() in _SAME_SITE_FETCH
    origin = headers.get("origin")
    if origin is None:
        return True
    parts = urlsplit(origin.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False  # "null" (a sandboxed frame, a file:// page) and the like
    return parts.netloc.lower() == headers.get("host", "").strip().lower()


class SameOrigin:
    """403 for a request outside :data:`SAFE_METHODS` that :func:`same_origin` refuses, before
    the app reads its body or anything else."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS:
            if not same_origin(Headers(scope=scope)):
                response = PlainTextResponse(
                    "403: a request that changes something must come from this review page itself "
                    "(its Origin or Sec-Fetch-Site names another site); nothing was saved\n",
                    status_code=403,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def content_security_policy(nonce: str) -> str:
    """The pages' policy: nothing loads but this response's own inline scripts and styles
    (``nonce``), forms post only here, and no site may frame the pages."""
    return (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; img-src data:; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    )


class SecurityHeaders:
    """Adds ``X-Frame-Options: DENY``, the :func:`content_security_policy` with a fresh nonce
    (left in ``scope["state"][NONCE_KEY]`` for the templates), ``X-Content-Type-Options:
    nosniff`` and ``Referrer-Policy: same-origin`` to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        nonce = secrets.token_urlsafe(18)
        scope.setdefault("state", {})[NONCE_KEY] = nonce

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["X-Frame-Options"] = "DENY"
                headers["Content-Security-Policy"] = content_security_policy(nonce)
                headers["X-Content-Type-Options"] = "nosniff"
                headers["Referrer-Policy"] = "same-origin"
            await send(message)

        await self.app(scope, receive, send_with_headers)


def local_path(value: str, default: str = "/") -> str:
    """``value`` if it is a path on this server, else ``default``. A browser reads ``//host``
    and ``/\\host`` as another host and drops tabs and newlines anywhere in a URL (``/\\t/host``
    is ``//host``), so those, and anything not starting with ``/``, never leave here."""
    if not value.startswith("/") or "\\" in value or value[1:2] == "/":
        return default
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return default
    return value


def case_url(case_id: str) -> str:
    """The page of the case ``case_id``: ``/cases/<id>`` with every reserved character of the id
    (``/`` included) percent-encoded, so it is one path segment; an id a browser would resolve
    away as a dot segment (``.`` or ``..``) goes in the query, ``/cases?id=..``."""
    if case_id in _DOT_SEGMENTS:
        return "/cases?id=" + quote(case_id, safe="")
    return "/cases/" + quote(case_id, safe="")


def request_target(scope: Scope) -> str:
    """The path and query of the request as the browser sent them (still percent-encoded), for a
    form's ``back`` field: re-parsing the decoded path would split an id holding ``?`` or ``#``."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else quote(scope["path"])
    query = scope.get("query_string", b"").decode("latin-1")
    return f"{path}?{query}" if query else path
