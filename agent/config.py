"""Settings of the agent SDK: defaults, ``RAGPULSE_*`` environment variables and validation.

Kept free of heavy imports: this module is loaded by ``import ragpulse.agent``.
Explicit ``configure(...)`` arguments win over environment variables, which win
over the defaults below.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

__all__ = ["Limits", "Settings", "settings_from_env", "ENV_PREFIX"]

ENV_PREFIX = "RAGPULSE_"

EXPORTERS = ("kafka", "embedded", "otlp", "none")
OTLP_COMPRESSIONS = ("gzip", "deflate")


@dataclass(frozen=True)
class Limits:
    """Data-hygiene limits applied before a span leaves the process (truncation is flagged)."""

    max_chunks: int = 50
    max_chunk_chars: int = 4000
    max_metadata_chars: int = 2000
    max_query_chars: int = 8000
    max_answer_chars: int = 32000
    max_attribute_chars: int = 16000
    max_stream_parts: int = 100_000
    # The conversation before the current turn (root span): the most recent messages are kept,
    # each message's text under max_query_chars, all of them under max_conversation_chars.
    max_messages: int = 50
    max_conversation_chars: int = 32000
    # Uncompressed size of one Kafka record value; Kafka's default message limit is 1 MB.
    max_record_bytes: int = 900_000


@dataclass(frozen=True)
class Settings:
    """Everything ``configure()`` accepts; see docs/agent.md for each field."""

    service_name: str = "ragpulse-app"
    exporter: Any = "embedded"  # "kafka" | "embedded" | "otlp" | "none" | an OTel SpanExporter instance
    kafka_bootstrap_servers: str = "localhost:9092"
    kafka_topic: str = "ragpulse.spans"
    kafka_compression: str | None = "gzip"
    kafka_options: Mapping[str, Any] = field(default_factory=dict)
    # exporter "otlp": OTLP/HTTP (protobuf) to this base URL (/v1/traces is added) or traces URL.
    otlp_endpoint: str = "http://localhost:4320"
    otlp_headers: Mapping[str, str] = field(default_factory=dict)
    otlp_timeout_s: float = 10.0
    otlp_compression: str | None = "gzip"
    sample_rate: float = 1.0
    limits: Limits = field(default_factory=Limits)
    redact: bool = False
    redactor: Callable[[str], str] | None = None
    capture_content: bool = True
    max_queue_spans: int = 8192
    export_batch_spans: int = 512
    schedule_delay_ms: int = 200
    tracer_provider: Any = None  # exporter "none": the provider to use (default: the global one)
    id_generator: Any = None  # ids of the agent's own provider's spans (an OTel IdGenerator)
    resource_attributes: Mapping[str, Any] = field(default_factory=dict)
    corpus_version: str | None = None
    variant: str | None = None  # default rag.variant of every RAG call (online comparison)
    config: Mapping[str, Any] = field(default_factory=dict)  # default rag.config.<part> attributes
    enabled: bool = True

    def validated(self) -> Settings:
        """Return self after checking values; raises ValueError with a one-line reason."""
        if isinstance(self.exporter, str) and self.exporter not in EXPORTERS:
            raise ValueError(
                f"exporter must be one of {', '.join(EXPORTERS)} or a SpanExporter, got {self.exporter!r}"
            )
        if not isinstance(self.exporter, str) and not hasattr(self.exporter, "export"):
            raise ValueError("exporter object needs an export(spans) method (an OTel SpanExporter)")
        if self.exporter == "otlp":
            self._validate_otlp()
        if not 0.0 <= float(self.sample_rate) <= 1.0:
            raise ValueError(f"sample_rate must be within [0, 1], got {self.sample_rate}")
        if self.max_queue_spans < 1 or self.export_batch_spans < 1:
            raise ValueError("max_queue_spans and export_batch_spans must be positive")
        if self.id_generator is not None and not (
            hasattr(self.id_generator, "generate_trace_id") and hasattr(self.id_generator, "generate_span_id")
        ):
            raise ValueError(
                "id_generator needs generate_trace_id() and generate_span_id() (an OTel IdGenerator)"
            )
        if self.redactor is not None and not callable(self.redactor):
            raise ValueError("redactor must be a callable taking and returning a string")
        for f in fields(self.limits):
            if getattr(self.limits, f.name) < 1:
                raise ValueError(f"limit {f.name} must be positive")
        if self.limits.max_record_bytes > 1_000_000:
            raise ValueError("max_record_bytes must stay under Kafka's 1 MB default message limit")
        return self

    def _validate_otlp(self) -> None:
        if not str(self.otlp_endpoint).startswith(("http://", "https://")):
            raise ValueError(f"otlp_endpoint must be an http:// or https:// URL, got {self.otlp_endpoint!r}")
        if self.otlp_compression is not None and self.otlp_compression not in OTLP_COMPRESSIONS:
            raise ValueError(
                f"otlp_compression must be one of {', '.join(OTLP_COMPRESSIONS)} or none, "
                f"got {self.otlp_compression!r}"
            )
        if not float(self.otlp_timeout_s) > 0:
            raise ValueError(f"otlp_timeout_s must be positive, got {self.otlp_timeout_s}")
        if not isinstance(self.otlp_headers, Mapping):
            raise ValueError("otlp_headers must be a mapping of header names to values")


def _bool(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def _headers(value: str) -> dict[str, str]:
    """``key=value,key2=value2`` (values URL-encoded), the OTEL_EXPORTER_OTLP_HEADERS format."""
    from opentelemetry.util.re import parse_env_headers  # configuration time only

    return parse_env_headers(value, liberal=True)


def _optional(value: str) -> str | None:
    return None if value.strip().lower() in ("", "none") else value.strip().lower()


# settings field -> parser of its variable, RAGPULSE_<FIELD> (the field's name upper-cased)
_ENV_FIELDS: dict[str, Callable[[str], Any]] = {
    "service_name": str,
    "exporter": lambda v: v.strip().lower(),
    "kafka_bootstrap_servers": str,
    "kafka_topic": str,
    "kafka_compression": _optional,
    "otlp_endpoint": str.strip,
    "otlp_headers": _headers,
    "otlp_timeout_s": float,
    "otlp_compression": _optional,
    "sample_rate": float,
    "redact": _bool,
    "capture_content": _bool,
    "max_queue_spans": int,
    "export_batch_spans": int,
    "schedule_delay_ms": int,
    "corpus_version": str,
    "variant": str,
    "enabled": _bool,
}

# Kafka client options passed through to kafka-python's producer (TLS / SASL).
_ENV_KAFKA_OPTIONS: dict[str, str] = {
    "KAFKA_SECURITY_PROTOCOL": "security_protocol",
    "KAFKA_SASL_MECHANISM": "sasl_mechanism",
    "KAFKA_SASL_USERNAME": "sasl_plain_username",
    "KAFKA_SASL_PASSWORD": "sasl_plain_password",
    "KAFKA_SSL_CAFILE": "ssl_cafile",
    "KAFKA_SSL_CERTFILE": "ssl_certfile",
    "KAFKA_SSL_KEYFILE": "ssl_keyfile",
    "KAFKA_SSL_PASSWORD": "ssl_password",
    "KAFKA_CLIENT_ID": "client_id",
}


def settings_from_env(environ: Mapping[str, str] | None = None, base: Settings | None = None) -> Settings:
    """Settings from ``RAGPULSE_*`` variables (``RAGPULSE_LIMIT_MAX_CHUNKS`` etc. for limits)."""
    env = os.environ if environ is None else environ
    base = base or Settings()
    changes: dict[str, Any] = {}
    if "OTEL_SERVICE_NAME" in env:
        changes["service_name"] = env["OTEL_SERVICE_NAME"]
    for name, parse in _ENV_FIELDS.items():
        var = ENV_PREFIX + name.upper()
        raw = env.get(var)
        if raw is not None and raw != "":
            try:
                changes[name] = parse(raw)
            except ValueError as exc:
                raise ValueError(f"{var}={raw!r}: {exc}") from None
    options = dict(base.kafka_options)
    for suffix, option in _ENV_KAFKA_OPTIONS.items():
        raw = env.get(ENV_PREFIX + suffix)
        if raw:
            options[option] = raw
    if options:
        changes["kafka_options"] = options
    limit_changes = {}
    for f in fields(Limits):
        raw = env.get(f"{ENV_PREFIX}LIMIT_{f.name.upper()}")
        if raw:
            limit_changes[f.name] = int(raw)
    if limit_changes:
        changes["limits"] = replace(base.limits, **limit_changes)
    return replace(base, **changes)
