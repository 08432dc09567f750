"""The application provider's own ``force_flush()`` and ``shutdown()`` end the spans the agent deferred.

Under the application's provider (``exporter="none"``) the request path queues a
span and :class:`~ragpulse.agent.app_provider.AppSpanEnder` ends it later, on its
thread. Code that flushes the provider itself (a serverless layer at the end of
each invocation, a framework's shutdown hook, a test with an in-memory exporter)
would otherwise find none of those spans at its processors. So the agent
registers a :class:`ProviderFlushHook` span processor on that provider: its
``force_flush`` and ``shutdown`` end everything queued, in the caller's thread,
before the provider's other processors flush or shut down.

Order matters: the SDK's ``SynchronousMultiSpanProcessor`` calls processors in
the order they were added, and the application added its exporters before
configuring ragpulse. The hook is therefore put first in that list (the SDK has
no public way to do so, so this reads its ``_span_processors`` tuple, under its
own lock, and falls back to ``add_span_processor`` for any other provider). When
the hook is not first, its ``force_flush`` flushes the provider once more after
ending the queued spans, so the processors before it see them too.

One hook per provider, re-pointed at the current configuration's ender (a
weak reference: a replaced configuration is not kept alive). Its ``on_start`` /
``on_end`` are the SDK's no-ops; it costs the request path nothing else.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor

__all__ = ["hook_provider"]

_log = logging.getLogger("ragpulse.agent")
_HOOKS: weakref.WeakKeyDictionary[Any, ProviderFlushHook] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


class ProviderFlushHook(SpanProcessor):
    """Ends the agent's queued spans when the application's provider flushes or shuts down."""

    def __init__(self, provider: Any) -> None:
        self._provider = weakref.ref(provider)
        self._ender: Any = None
        self.first = False
        self._reflushing = False

    def point_at(self, ender: Any) -> None:
        self._ender = weakref.ref(ender)

    def _end_queued(self) -> int:
        """End every span queued so far (waiting for a batch the ender's thread is ending); how many."""
        ender = self._ender() if self._ender is not None else None
        if ender is None:
            return 0
        try:
            return ender.end_queued()
        except Exception:  # noqa: BLE001 - processors never raise
            _log.exception("ragpulse: ending queued spans at the provider's flush failed")
            return 0

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        if self._reflushing:
            return True
        start = time.monotonic()
        ended = self._end_queued()
        provider = self._provider()
        if not ended or self.first or provider is None:
            return True
        # Processors before this one flushed already: flush them again for what was just ended.
        left = max(0, int(timeout_millis - (time.monotonic() - start) * 1000))
        self._reflushing = True
        try:
            return bool(provider.force_flush(left))
        except Exception:  # noqa: BLE001
            _log.exception("ragpulse: flushing the application's provider again failed")
            return False
        finally:
            self._reflushing = False

    def shutdown(self) -> None:
        self._end_queued()


def hook_provider(provider: Any, ender: Any) -> bool:
    """Make ``provider``'s flush and shutdown end ``ender``'s queued spans first; False when
    ``provider`` takes no span processors (an API-only or proxy provider: try again later)."""
    if not callable(getattr(provider, "add_span_processor", None)):
        return False
    with _LOCK:
        hook = _HOOKS.get(provider)
        if hook is None:
            hook = ProviderFlushHook(provider)
            hook.first = _put_first(provider, hook)
            if not hook.first:
                provider.add_span_processor(hook)
            _HOOKS[provider] = hook
        hook.point_at(ender)
    return True


def _put_first(provider: Any, hook: ProviderFlushHook) -> bool:
    """Insert ``hook`` before the processors already on an SDK provider; False if its layout differs."""
    from opentelemetry.sdk.trace import SynchronousMultiSpanProcessor

    multi = getattr(provider, "_active_span_processor", None)
    if type(multi) is not SynchronousMultiSpanProcessor:
        return False
    lock = getattr(multi, "_lock", None)
    current = getattr(multi, "_span_processors", None)
    if lock is None or not isinstance(current, tuple):
        return False
    with lock:
        multi._span_processors = (hook, *multi._span_processors)
    return True
