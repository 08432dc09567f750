"""Process-wide agent state: settings, tracer, processor; ``configure``/``flush``/``shutdown``/``stats``.

The decorators read one module global (``STATE.rt``) per call. The OTel SDK is
imported only here and only when the agent is first configured, which keeps
``import ragpulse.agent`` fast. Without an explicit ``configure()`` the first
traced call configures from ``RAGPULSE_*`` environment variables.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import fields, replace
from typing import Any

from .config import Limits, Settings, settings_from_env
from .conventions import (
    SERVICE_NAME,
)
from .stats import Stats

__all__ = ["Runtime", "STATE", "configure", "flush", "shutdown", "stats", "get_runtime", "is_configured"]

_log = logging.getLogger("ragpulse.agent")
_VERSION = "0.1.0"


class Runtime:
    """One configuration's live objects. Replaced as a whole by ``configure()``."""

    __slots__ = (
        "settings",
        "tracer",
        "provider",
        "processor",
        "materializer",
        "own",
        "sample_rate",
        "enabled",
        "ender",
    )

    def __init__(self, settings: Settings, stats_: Stats):
        from opentelemetry import trace as trace_api

        from .materialize import Materializer

        self.settings = settings
        self.enabled = settings.enabled
        self.sample_rate = float(settings.sample_rate)
        self.materializer = Materializer(settings)
        self.processor: Any = None
        self.provider: Any = None
        self.ender: Any = None  # ends the agent's spans off the request path: end(record carrying its span)
        if settings.exporter == "none":
            from .app_provider import AppSpanEnder

            self.own = False
            provider = settings.tracer_provider or trace_api.get_tracer_provider()
            self.tracer = provider.get_tracer("ragpulse.agent", _VERSION)
            if settings.enabled:
                self.ender = AppSpanEnder(self.materializer, settings, stats_)
            return
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON

        from .processor import RagpulseSpanProcessor

        self.own = True
        exporter = _make_exporter(settings, stats_)
        resource = Resource.create(
            {SERVICE_NAME: settings.service_name, **dict(settings.resource_attributes)}
        )
        # ALWAYS_ON, not parent-based: ragpulse samples in its own layer (sample_rate) and in the
        # collector, independently of whether the application's tracing sampled this request.
        self.provider = TracerProvider(
            resource=resource, sampler=ALWAYS_ON, id_generator=settings.id_generator
        )
        self.processor = RagpulseSpanProcessor(exporter, self.materializer, settings, stats_)
        self.ender = self.processor
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer("ragpulse.agent", _VERSION)

    def close(self, timeout_s: float = 10.0) -> None:
        if self.processor is not None:
            try:
                self.processor.force_flush(int(timeout_s * 1000))
            finally:
                self.provider.shutdown()
        elif self.ender is not None:
            self.ender.shutdown()


def _make_exporter(settings: Settings, stats_: Stats) -> Any:
    if settings.exporter == "kafka":
        from .kafka_exporter import KafkaSpanExporter

        return KafkaSpanExporter(
            bootstrap_servers=settings.kafka_bootstrap_servers,
            topic=settings.kafka_topic,
            stats=stats_,
            compression=settings.kafka_compression,
            max_record_bytes=settings.limits.max_record_bytes,
            producer_options=dict(settings.kafka_options),
        )
    if settings.exporter == "otlp":
        from .otlp_http import OtlpHttpSpanExporter

        return OtlpHttpSpanExporter(
            settings.otlp_endpoint,
            settings.otlp_headers,
            settings.otlp_timeout_s,
            settings.otlp_compression,
            settings.limits.max_record_bytes,
            stats_,
        )
    if settings.exporter == "embedded":
        from .embedded import EmbeddedSpanExporter

        return EmbeddedSpanExporter(stats_)
    return settings.exporter  # an OTel SpanExporter instance


class _State:
    __slots__ = ("rt", "stats", "lock")

    def __init__(self) -> None:
        self.rt: Runtime | None = None
        self.stats = Stats()
        self.lock = threading.RLock()


STATE = _State()
if hasattr(os, "register_at_fork"):
    # Counters describe one process: a forked child (gunicorn worker) starts from zero.
    os.register_at_fork(after_in_child=STATE.stats.reset)


def _settings(kwargs: dict[str, Any]) -> Settings:
    base = settings_from_env()
    limit_names = {f.name for f in fields(Limits)}
    limits = kwargs.pop("limits", None)
    limit_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in limit_names}
    if isinstance(limits, dict):
        limit_kwargs = {**limits, **limit_kwargs}
        limits = None
    if limits is not None:
        kwargs["limits"] = limits
    elif limit_kwargs:
        kwargs["limits"] = replace(base.limits, **limit_kwargs)
    known = {f.name for f in fields(Settings)}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise TypeError(f"configure() got unknown option(s): {', '.join(unknown)}")
    if "exporter" in kwargs and isinstance(kwargs["exporter"], str):
        kwargs["exporter"] = kwargs["exporter"].lower()
    return replace(base, **kwargs).validated()


def configure(**options: Any) -> Settings:
    """Configure the agent (replacing any previous configuration) and return the settings.

    Options are the fields of :class:`ragpulse.agent.config.Settings` plus the
    limit names (``max_chunks=...``) directly; unset ones come from ``RAGPULSE_*``
    environment variables, then the defaults. Raises ``ValueError``/``TypeError``
    for bad options: that is the one place ragpulse raises into the application,
    at start-up, on purpose.
    """
    settings = _settings(dict(options))
    with STATE.lock:
        old = STATE.rt
        STATE.rt = Runtime(settings, STATE.stats)
    if old is not None:
        try:
            old.close()
        except Exception:  # noqa: BLE001
            _log.exception("ragpulse: closing the previous configuration failed")
    return settings


def get_runtime() -> Runtime | None:
    """The live runtime, configuring from the environment on first use (None if that fails)."""
    rt = STATE.rt
    if rt is not None:
        return rt
    with STATE.lock:
        if STATE.rt is None:
            try:
                STATE.rt = Runtime(_settings({}), STATE.stats)
            except Exception:  # noqa: BLE001 - a bad environment must not break the app
                _log.exception("ragpulse: configuration from the environment failed; tracing is off")
                STATE.rt = Runtime(replace(Settings(), exporter="none", enabled=False), STATE.stats)
        return STATE.rt


def is_configured() -> bool:
    return STATE.rt is not None


def flush(timeout_s: float = 30.0) -> bool:
    """Export everything finished so far (blocks the caller up to ``timeout_s``); with
    ``exporter="none"`` end the queued spans and flush the application's provider."""
    rt = STATE.rt
    if rt is None or (rt.processor is None and rt.ender is None):
        return True
    try:
        if rt.processor is not None:
            return bool(rt.processor.force_flush(int(timeout_s * 1000)))
        return rt.ender.flush(timeout_s)
    except Exception:  # noqa: BLE001
        _log.exception("ragpulse: flush failed")
        return False


def shutdown(timeout_s: float = 10.0) -> None:
    """Flush and stop the export thread; later calls run untraced until ``configure()`` again."""
    with STATE.lock:
        rt = STATE.rt
        STATE.rt = Runtime(replace(Settings(), exporter="none", enabled=False), STATE.stats)
    if rt is not None:
        try:
            rt.close(timeout_s)
        except Exception:  # noqa: BLE001
            _log.exception("ragpulse: shutdown failed")


def stats() -> dict[str, object]:
    """Counters: spans exported, records sent/acknowledged, drops by reason (see docs/agent.md)."""
    return STATE.stats.snapshot()
