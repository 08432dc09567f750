"""A direct protobuf wire-format writer for OTLP ``TracesData`` (export thread only).

The OTel Python encoder builds one protobuf object per attribute and value,
which costs several times what the span's own materialisation does; writing
the wire format directly keeps the export thread (which shares the GIL with
the application) short. The output follows the reference encoder
(``opentelemetry.exporter.otlp.proto.common``) field for field, so it is the
same bytes; ``tests/test_agent_otlp.py`` checks that on spans of every shape.
Values of unexpected types raise ``TypeError`` and the caller falls back to
the reference encoder.

Where the time goes and what is kept from call to call (measured with valgrind
on the benchmark's RAG call, ``bench/sdk_overhead.py``): most attributes of a
RAG call repeat from one call to the next (span kinds, operation names, chunk
ids, metadata, model names), so a bounded cache holds a short string
attribute's whole encoded ``KeyValue`` under its (key, value); resources and
instrumentation scopes are immutable in the SDK and are encoded once each
(held by identity, beside the object so that its id is never reused while
cached). Spans are encoded once (:func:`encode_span`) and grouped into
``TracesData`` from their bytes (:func:`traces_data`), so a caller that splits
a batch over several records never encodes a span twice.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

__all__ = ["EncodedSpan", "encode_span", "encode_traces_data_fast", "traces_data"]

_pack_q = struct.Struct("<Q").pack
_pack_d = struct.Struct("<d").pack
_pack_i = struct.Struct("<I").pack
_SMALL = [bytes((i,)) for i in range(128)]
# Every varint below _TABLED, looked up instead of built (a chunk's content is a few hundred bytes).
_TABLED = 4096
_VARINTS = _SMALL + [bytes(((n & 0x7F) | 0x80, n >> 7)) for n in range(128, _TABLED)]
_MASK64 = (1 << 64) - 1
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200
_FLAGS_LOCAL = b"\x85\x01" + _pack_i(_HAS_IS_REMOTE)
_FLAGS_REMOTE = b"\x85\x01" + _pack_i(_HAS_IS_REMOTE | _IS_REMOTE)
_KINDS = [b"\x30" + _SMALL[i + 1] for i in range(5)]  # SpanKind.value -> the OTLP enum field
_INTERNAL = SpanKind.INTERNAL
_INTERNAL_FIELD = _KINDS[_INTERNAL.value]
_UNSET = StatusCode.UNSET
_EMPTY_STATUS = b"\x7a\x00"
# Encoded keys, and whole KeyValue fields (tag and length in front) of short string values and
# numbers, one cache per field tag (span, event, link, resource and scope attributes); a cache
# that fills up is emptied and refilled, so values unique to each call cost one insert each.
_KEY_CACHE: dict[str, bytes] = {}
_NAMES: dict[str, bytes] = {}  # span names as their encoded fields
_EVENT_NAMES: dict[str, bytes] = {}  # event names likewise
_KEY_CACHE_MAX = 20_000
_KV_CACHE_MAX = 8_192
_CACHED_CHARS = 64
_FIELD_CACHES: dict[bytes, dict[tuple[Any, ...], bytes]] = {
    tag: {} for tag in (b"\x0a", b"\x1a", b"\x22", b"\x4a")
}
# id(resource or scope) -> (the object, its encoded message): a handful of entries per process.
_ONCE: dict[int, tuple[Any, bytes]] = {}
_ONCE_MAX = 256


def _varint(n: int) -> bytes:
    if n < _TABLED:
        return _VARINTS[n]
    out = bytearray()
    while n >= 128:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _ld(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: tag, length, payload."""
    n = len(payload)
    return tag + (_SMALL[n] if n < 128 else _varint(n)) + payload


def _str(tag: bytes, text: str) -> bytes:
    return _ld(tag, text.encode("utf-8"))


def _any_value(value: Any) -> bytes:
    """An AnyValue message body (the oneof field is always written, even for defaults)."""
    if value is None:
        return b""
    if value is True:
        return b"\x10\x01"
    if value is False:
        return b"\x10\x00"
    if isinstance(value, str):
        return _str(b"\x0a", value)
    if isinstance(value, int):
        if not -(1 << 63) <= value < (1 << 63):
            raise TypeError("integer attribute outside int64")
        return b"\x18" + _varint(value & _MASK64)
    if isinstance(value, float):
        return b"\x21" + _pack_d(value)
    if isinstance(value, bytes):
        return _ld(b"\x3a", value)
    if isinstance(value, Sequence):
        return _ld(b"\x2a", b"".join(_ld(b"\x0a", _any_value(v)) for v in value))
    if isinstance(value, Mapping):
        return _ld(b"\x32", b"".join(_ld(b"\x0a", _key_value(str(k), v)) for k, v in value.items()))
    raise TypeError(f"cannot encode attribute value of type {type(value).__name__}")


def _kept(cache: dict[str, bytes], tag: bytes, text: str) -> bytes:
    """The string field ``tag`` holding ``text``, kept in ``cache``: attribute keys and span and
    event names repeat from call to call (a full cache keeps what it holds)."""
    encoded = _str(tag, text)
    if len(cache) < _KEY_CACHE_MAX:
        cache[text] = encoded
    return encoded


def _key(key: str) -> bytes:
    """A KeyValue's key field (tag 1)."""
    return _KEY_CACHE.get(key) or _kept(_KEY_CACHE, b"\x0a", key)


def _key_value(key: str, value: Any) -> bytes:
    return _key(key) + _ld(b"\x12", _any_value(value))


def _kv_field(key: str, value: Any) -> bytes:
    """A KeyValue message with its length in front (the field's tag is the caller's)."""
    inner = _any_value(value)
    n = len(inner)
    body = _key(key) + b"\x12" + _varint(n) + inner
    return _varint(len(body)) + body


def _attributes(parts: list[bytes], tag: bytes, attributes: Mapping[str, Any]) -> None:
    """Append one ``tag`` KeyValue field per attribute to ``parts``.

    Short strings, ints and non-zero floats come from the field cache. A float's cache key has
    a third item, as 1.0 == 1 (and hashes alike) in Python; bools (another class), 0.0 (equal to
    -0.0) and every other value are never cached. A longer string is written as its pieces (tag,
    three lengths, key, value), not joined here: the caller's one join copies it once.
    """
    cache = _FIELD_CACHES[tag]
    keys = _KEY_CACHE
    varints = _VARINTS
    append = parts.append
    for key, value in attributes.items():
        cls = value.__class__
        if cls is str:
            if len(value) > _CACHED_CHARS:
                data = value.encode("utf-8")
                n = len(data)
                size = varints[n] if n < _TABLED else _varint(n)
                inner = 1 + len(size) + n  # AnyValue: string_value tag, length, bytes
                prefix = varints[inner] if inner < _TABLED else _varint(inner)
                name = keys.get(key) or _key(key)
                body = len(name) + 1 + len(prefix) + inner  # KeyValue: key, value tag, length, AnyValue
                length = varints[body] if body < _TABLED else _varint(body)
                parts.extend((tag, length, name, b"\x12", prefix, b"\x0a", size, data))
                continue
            held: tuple[Any, ...] = (key, value)
        elif cls is int:
            held = (key, value)
        elif cls is float and value:
            held = (key, value, float)
        else:
            append(tag)
            append(_kv_field(key, value))
            continue
        field = cache.get(held)
        if field is None:
            field = tag + _kv_field(key, value)
            if len(cache) >= _KV_CACHE_MAX:
                cache.clear()
            cache[held] = field
        append(field)


def _attribute_bytes(tag: bytes, attributes: Mapping[str, Any] | None) -> bytes:
    if not attributes:
        return b""
    parts: list[bytes] = []
    _attributes(parts, tag, attributes)
    return b"".join(parts)


def _uint(tag: bytes, n: int | None) -> bytes:
    return tag + _varint(n) if n else b""


def _event(event: Any) -> bytes:
    parts = []
    timestamp = event.timestamp
    if timestamp:
        parts.append(b"\x09" + _pack_q(timestamp))
    name = event.name
    if name:
        parts.append(_EVENT_NAMES.get(name) or _kept(_EVENT_NAMES, b"\x12", name))  # tag 2
    attributes = event.attributes
    if attributes:
        _attributes(parts, b"\x1a", attributes)
    if event.dropped_attributes:
        parts.append(b"\x20" + _varint(event.dropped_attributes))
    return _ld(b"\x5a", b"".join(parts))


def _link(link: Any) -> bytes:
    ctx = link.context
    # Like the reference encoder, links carry no trace_state.
    out = b"\x0a\x10" + ctx.trace_id.to_bytes(16, "big") + b"\x12\x08" + ctx.span_id.to_bytes(8, "big")
    out += _attribute_bytes(b"\x22", link.attributes)
    out += _uint(b"\x28", link.dropped_attributes)
    out += b"\x35" + _pack_i(_HAS_IS_REMOTE | (_IS_REMOTE if ctx.is_remote else 0))
    return _ld(b"\x6a", out)


def _status(status: Any) -> bytes:
    code = status.status_code
    description = status.description
    if code is _UNSET and not description:
        return _EMPTY_STATUS
    code = code.value
    body = _str(b"\x12", description) if description else b""
    if code:
        body += b"\x18" + _varint(code)
    return _ld(b"\x7a", body)


def encode_span(
    span: ReadableSpan,
    attributes: Mapping[str, Any] | None = None,
    events: Sequence[Any] | None = None,
) -> bytes:
    """The OTLP ``Span`` message of ``span`` (without its field tag).

    ``attributes`` / ``events`` replace the span's own when given (the agent's export thread
    passes the materialised ones, so no copy of the finished span is made just to encode it).
    """
    ctx = span.context
    parts = [b"\x0a\x10", ctx.trace_id.to_bytes(16, "big"), b"\x12\x08", ctx.span_id.to_bytes(8, "big")]
    state = ctx.trace_state
    if state:
        parts.append(_str(b"\x1a", ",".join(f"{k}={v}" for k, v in state.items())))
    parent = span.parent
    if parent is not None:
        parts.append(b"\x22\x08" + parent.span_id.to_bytes(8, "big"))
    name = span.name
    if name:
        parts.append(_NAMES.get(name) or _kept(_NAMES, b"\x2a", name))  # tag 5
    kind = span.kind
    parts.append(_INTERNAL_FIELD if kind is _INTERNAL else _KINDS[kind.value])
    start, end = span.start_time, span.end_time
    if start:
        parts.append(b"\x39" + _pack_q(start))
    if end:
        parts.append(b"\x41" + _pack_q(end))
    if attributes is None:
        attributes = span.attributes
    if attributes:
        _attributes(parts, b"\x4a", attributes)
    if span.dropped_attributes:
        parts.append(b"\x50" + _varint(span.dropped_attributes))
    for event in span.events if events is None else events:
        parts.append(_event(event))
    if span.dropped_events:
        parts.append(b"\x60" + _varint(span.dropped_events))
    for link in span.links:
        parts.append(_link(link))
    if span.dropped_links:
        parts.append(b"\x70" + _varint(span.dropped_links))
    parts.append(_status(span.status))
    parts.append(_FLAGS_REMOTE if parent is not None and parent.is_remote else _FLAGS_LOCAL)
    return b"".join(parts)


def _once(obj: Any, encode: Any) -> Any:
    """``encode(obj)``, computed once per object (resources and scopes are immutable)."""
    held = _ONCE.get(id(obj))
    if held is not None and held[0] is obj:
        return held[1]
    encoded = encode(obj)
    if len(_ONCE) >= _ONCE_MAX:
        _ONCE.clear()
    _ONCE[id(obj)] = (obj, encoded)
    return encoded


def _resource(resource: Any) -> tuple[bytes, bytes]:
    """What a ResourceSpans holds before its scopes (the resource field, always written as the
    reference does) and after them (the schema URL)."""
    head = _ld(b"\x0a", _attribute_bytes(b"\x0a", resource.attributes))
    return head, _str(b"\x1a", resource.schema_url) if resource.schema_url else b""


def _scope(scope: Any) -> tuple[bytes, bytes]:
    """What a ScopeSpans holds before its spans (the scope field, always written, empty for no
    scope) and after them (the schema URL)."""
    if scope is None:
        return b"\x0a\x00", b""
    out = _str(b"\x0a", scope.name) if scope.name else b""
    if scope.version:
        out += _str(b"\x12", scope.version)
    out += _attribute_bytes(b"\x1a", scope.attributes)
    return _ld(b"\x0a", out), _str(b"\x1a", scope.schema_url) if scope.schema_url else b""


class EncodedSpan:
    """One span's encoded ``Span`` message with what groups it (trace, resource and scope) and,
    when it may have to be shrunk to fit a record, what it was encoded from (``source``)."""

    __slots__ = ("trace_id", "resource", "scope", "data", "source")

    def __init__(self, trace_id: int, resource: Any, scope: Any, data: bytes, source: Any = None):
        self.trace_id = trace_id
        self.resource = resource
        self.scope = scope
        self.data = data
        self.source = source

    @classmethod
    def of(
        cls,
        span: ReadableSpan,
        attributes: Mapping[str, Any] | None = None,
        events: Sequence[Any] | None = None,
    ) -> EncodedSpan:
        data = encode_span(span, attributes, events)
        return cls(span.context.trace_id, span.resource, span.instrumentation_scope or None, data)


def _same_group(groups: dict[int, Any], obj: Any) -> int:
    """The group key of ``obj``: its id, or that of an equal object already grouped (the reference
    encoder groups by equality; equal resources are rare but must share one ResourceSpans)."""
    key = id(obj)
    if key in groups or obj is None:
        return key
    for other_key, (other, _) in groups.items():
        if other is not None and other == obj:
            return other_key
    return key


def _grouped(spans: Sequence[EncodedSpan]) -> list[tuple[Any, list[tuple[Any, list[bytes]]]]]:
    """[(resource, [(scope, [span bytes])])] in first-seen order."""
    resources: dict[int, tuple[Any, dict[int, tuple[Any, list[bytes]]]]] = {}
    for span in spans:
        rkey = _same_group(resources, span.resource)
        if rkey not in resources:
            resources[rkey] = (span.resource, {})
        scopes = resources[rkey][1]
        skey = _same_group(scopes, span.scope)
        if skey not in scopes:
            scopes[skey] = (span.scope, [])
        scopes[skey][1].append(span.data)
    return [(resource, list(scopes.values())) for resource, scopes in resources.values()]


def traces_data(spans: Sequence[EncodedSpan]) -> bytes:
    """OTLP TracesData bytes of encoded spans, grouped by resource then scope in first-seen order.

    The message is laid out as a list of pieces with the nested lengths added up, and joined
    once: the spans' bytes are copied once, not once per level of nesting.
    """
    out: list[bytes] = []
    for resource, scopes in _grouped(spans):
        head, tail = _once(resource, _resource)
        pieces, size = [head], len(head)
        for scope, encoded in scopes:
            scope_head, scope_tail = _once(scope, _scope) if scope is not None else _scope(None)
            inner, inner_size = [scope_head], len(scope_head)
            for data in encoded:
                prefix = b"\x12" + _varint(len(data))
                inner.append(prefix)
                inner.append(data)
                inner_size += len(prefix) + len(data)
            if scope_tail:
                inner.append(scope_tail)
                inner_size += len(scope_tail)
            prefix = b"\x12" + _varint(inner_size)
            pieces.append(prefix)
            pieces.extend(inner)
            size += len(prefix) + inner_size
        if tail:
            pieces.append(tail)
            size += len(tail)
        out.append(b"\x0a" + _varint(size))
        out.extend(pieces)
    return b"".join(out)


def encode_traces_data_fast(spans: Sequence[ReadableSpan]) -> bytes:
    """OTLP TracesData bytes for ``spans``, grouped by resource then instrumentation scope."""
    return traces_data([EncodedSpan.of(span) for span in spans])
