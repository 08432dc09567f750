"""Bearer-token checks for the collector's intakes (OTLP/HTTP, OTLP/gRPC, the Alertmanager webhook).

A token is optional: without one every request is accepted, which suits a
receiver bound to loopback or reachable only from its own pod. Once the
intake is reachable from other hosts, set one; requests then need
``Authorization: Bearer <token>`` (the gRPC ``authorization`` metadata alike)
and others are refused before their body is read. The scheme is matched
without regard to case (RFC 7235 section 2.1: ``bearer``, ``BEARER``), as
HTTP clients and proxies may write it either way. The comparison is
constant-time (:func:`hmac.compare_digest`) so the answer's timing does not
reveal how much of a guess was right. TLS is not terminated here: put the
intake behind an ingress or a sidecar that does it.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["authorized", "bearer_credentials", "token_from_config"]


def bearer_credentials(header: str | None) -> str | None:
    """The credentials of an ``Authorization`` value of the Bearer scheme, None for any other.

    ``auth-scheme 1*SP token68`` (RFC 7235 section 2.1, RFC 6750 section 2.1): the
    scheme in any case, then whitespace, then the token (surrounding whitespace
    dropped); None for another scheme, a scheme alone or no header."""
    parts = (header or "").split(None, 1)
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return None
    return parts[1].strip()


def authorized(header: str | None, token: str) -> bool:
    """Whether an ``Authorization`` value carries ``token`` by the Bearer scheme (always True
    when no token is set)."""
    if not token:
        return True
    given = bearer_credentials(header)
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def token_from_config(section: Mapping[str, Any], key: str = "auth_token") -> str:
    """The token of a config section: ``<key>`` itself (the config file or the environment,
    e.g. ``RAGPULSE_RECEIVER__AUTH_TOKEN``), else the first line of the file ``<key>_file``
    (a mounted secret). Raises ValueError when the file cannot be read or is empty."""
    token = str(section.get(key) or "")
    path = str(section.get(f"{key}_file") or "")
    if token or not path:
        return token
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ValueError(f"{key}_file {path}: {exc.strerror or exc}") from None
    token = lines[0].strip() if lines else ""
    if not token:
        raise ValueError(f"{key}_file {path} is empty")
    return token
