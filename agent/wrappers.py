"""One thin adapter per kind of callable around the span lifecycle of :mod:`.spans`.

Each keeps the decorated callable's signature, return value, exceptions and
docstring. Functions and coroutines run as one step inside their span; sync and
async generators run each ``send``/``throw`` as a step, so the span stays open
while the stream is consumed and ends when it ends, raises or is closed. Values
and exceptions the consumer sends or throws in are passed on to the stream.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .spans import UNTRACED, open_call

__all__ = ["wrap"]


def wrap(fn: Callable[..., Any], spec: Any) -> Callable[..., Any]:
    """The traced form of ``fn`` for its kind (async generator, generator, coroutine, function)."""
    import inspect  # decoration time only: keeps `import ragpulse.agent` light

    if inspect.isasyncgenfunction(fn):
        return _wrap_async_gen(fn, spec)
    if inspect.isgeneratorfunction(fn):
        return _wrap_gen(fn, spec)
    if inspect.iscoroutinefunction(fn):
        return _wrap_async(fn, spec)
    return _wrap_sync(fn, spec)


def _wrap_sync(fn: Callable[..., Any], spec: Any) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = open_call(spec, args, kwargs)
        if call is None:
            return fn(*args, **kwargs)
        with call:
            result = fn(*args, **kwargs)
        return call.finish(result)

    return wrapper


def _wrap_async(fn: Callable[..., Any], spec: Any) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = open_call(spec, args, kwargs)
        if call is None:
            return await fn(*args, **kwargs)
        with call:
            result = await fn(*args, **kwargs)
        return call.finish(result)

    return wrapper


def _wrap_gen(fn: Callable[..., Any], spec: Any) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = open_call(spec, args, kwargs)
        if call is None:
            return (yield from fn(*args, **kwargs))
        call.start_stream(StopIteration)
        with call:
            gen = fn(*args, **kwargs)
        value: Any = None
        pending: BaseException | None = None
        while True:
            try:
                with call:
                    item = gen.send(value) if pending is None else gen.throw(pending)
            except StopIteration as stop:
                return stop.value
            pending = None
            try:
                value = yield call.keep(item)
            except GeneratorExit:
                with call.closing():
                    gen.close()
                raise
            except BaseException as exc:  # thrown into the stream by the consumer: pass it on
                pending = exc

    return wrapper


def _wrap_async_gen(fn: Callable[..., Any], spec: Any) -> Callable[..., Any]:
    # An async generator cannot delegate with `yield from`, so the untraced form runs the same
    # loop with a stand-in whose steps do nothing.
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        call: Any = open_call(spec, args, kwargs) or UNTRACED
        call.start_stream(StopAsyncIteration)
        with call:
            agen = fn(*args, **kwargs)
        value: Any = None
        pending: BaseException | None = None
        while True:
            try:
                with call:
                    item = await (agen.asend(value) if pending is None else agen.athrow(pending))
            except StopAsyncIteration:
                return
            pending = None
            try:
                value = yield call.keep(item)
            except GeneratorExit:
                with call.closing():
                    await agen.aclose()
                raise
            except BaseException as exc:  # noqa: BLE001 - thrown in by the consumer: pass it on
                pending = exc

    return wrapper
