"""The application provider's own ``force_flush()`` and ``shutdown()`` end the spans the agent deferred.

Under the application's provider (``exporter="none"``) the request path queues a
span and :class:`~ragpulse.agent.app_provider.AppSpanEnder` ends it later, on its
thread. Code that flushes the provider itself (a serverless layer at the end of
each invocation, a framework's shutdown hook, a test with an in-memory exporter)
would otherwise find none of those spans at its processors.

So the agent wraps that provider's public ``force_flush`` and ``shutdown`` on the
instance: the wrapper ends everything queued, in the caller's thread, and then
calls the provider's own method. Every span is therefore at the provider's
processors before any of them flushes or shuts down, whatever their layout: one
or several processors, simple or batching, run in turn
(``SynchronousMultiSpanProcessor``) or at once (``ConcurrentMultiSpanProcessor``),
or a provider of another class that takes span processors. Nothing of the SDK's
private state is read or changed, and no processor is added (the request path
pays nothing for the hook).

At interpreter exit the provider shuts itself down through the bound method it
registered with :mod:`atexit` when it was made, which the wrapper does not see;
the hook registers its own exit handler when it is made, after the provider, so
it runs first (``atexit`` runs handlers in reverse order) and ends the queued
spans before the provider's processors stop.

Where the methods cannot be wrapped (a provider class that refuses instance
attributes or defines them as read-only properties), deferring would leave the
provider's flush and shutdown blind to queued spans, so the agent falls back to
ending its spans on the request path under that provider, which costs each call
the writing of its attributes, and logs once at WARNING that it did.

One hook per provider, re-pointed at the current configuration's ender (a weak
reference: a replaced configuration is not kept alive).
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from typing import Any

__all__ = ["hook_provider"]

_log = logging.getLogger("ragpulse.agent")
_HOOKS: weakref.WeakKeyDictionary[Any, ProviderHook] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


class ProviderHook:
    """Ends the agent's queued spans before the application's provider flushes or shuts down."""

    def __init__(self, provider: Any) -> None:
        self._ender: Any = None
        self.wrapped = _wrap(provider, self)
        ref = weakref.ref(self)
        atexit.register(lambda: (hook := ref()) is not None and hook.end_queued())

    def point_at(self, ender: Any) -> None:
        self._ender = weakref.ref(ender)

    def end_queued(self) -> None:
        """End every span queued so far (after a batch the ender's thread is ending now)."""
        ender = self._ender() if self._ender is not None else None
        if ender is None:
            return
        try:
            ender.end_queued()
        except Exception:  # noqa: BLE001 - the application's flush must go on
            _log.exception("ragpulse: ending queued spans at the provider's flush failed")


class _Shutdown:
    """A provider's ``shutdown``, run after the hook ended the queued spans."""

    def __init__(self, original: Any, hook: ProviderHook) -> None:
        self.__wrapped__ = original
        self._hook = weakref.ref(hook)

    def _end_queued(self) -> None:
        hook = self._hook()
        if hook is not None:
            hook.end_queued()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._end_queued()
        return self.__wrapped__(*args, **kwargs)


class _ForceFlush(_Shutdown):
    """A provider's ``force_flush``: the queued spans ended first, within the same timeout."""

    def __call__(self, timeout_millis: int = 30000, *args: Any, **kwargs: Any) -> Any:
        start = time.monotonic()
        self._end_queued()
        left = max(0, int(timeout_millis - (time.monotonic() - start) * 1000))
        return self.__wrapped__(left, *args, **kwargs)


def _wrap(provider: Any, hook: ProviderHook) -> bool:
    """Wrap ``provider``'s ``force_flush`` and ``shutdown`` on the instance; False (and a
    WARNING) when it cannot be done, leaving the provider as it was."""
    originals = {name: getattr(provider, name, None) for name in ("force_flush", "shutdown")}
    missing = [name for name, method in originals.items() if not callable(method)]
    if missing:
        return _cannot_wrap(provider, f"it has no {' or '.join(missing)}() method")
    wrappers = {"force_flush": _ForceFlush(originals["force_flush"], hook),
                "shutdown": _Shutdown(originals["shutdown"], hook)}  # fmt: skip
    try:
        for name, wrapper in wrappers.items():
            setattr(provider, name, wrapper)
        if all(getattr(provider, name) is wrapper for name, wrapper in wrappers.items()):
            return True
        reason = "its methods do not take instance attributes"
    except (AttributeError, TypeError) as exc:
        reason = f"{type(exc).__name__}: {exc}"
    for name in wrappers:  # leave the provider as it was
        try:
            if vars(provider).get(name) is wrappers[name]:
                delattr(provider, name)
        except (AttributeError, TypeError):
            pass
    return _cannot_wrap(provider, reason)


def _cannot_wrap(provider: Any, reason: str) -> bool:
    _log.warning(
        "ragpulse: cannot wrap force_flush() and shutdown() of the application's tracer provider "
        "(%s.%s: %s), so they could not end the spans ragpulse defers off the request path; under "
        "this provider ragpulse ends its spans on the request path instead (each call pays for "
        "writing their attributes), so its flush and shutdown find every span",
        type(provider).__module__,
        type(provider).__qualname__,
        reason,
    )
    return False


def hook_provider(provider: Any, ender: Any) -> bool | None:
    """Make ``provider``'s flush and shutdown end ``ender``'s queued spans first: True when
    they do, False when they cannot (the ender must end its spans on the request path; logged
    once per provider), None when ``provider`` takes no span processors (an API-only or proxy
    provider: try again later)."""
    if not callable(getattr(provider, "add_span_processor", None)):
        return None
    with _LOCK:
        try:
            hook = _HOOKS.get(provider)
        except TypeError:  # not weakly referenceable: one hook per provider cannot be kept
            return _cannot_wrap(provider, "it cannot be weakly referenced")
        if hook is None:
            hook = ProviderHook(provider)
            _HOOKS[provider] = hook
        hook.point_at(ender)
    return hook.wrapped
