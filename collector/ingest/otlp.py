"""Decode OTLP traces (protobuf or JSON) into :class:`~.model.Span` objects.

Kafka records hold an OTLP ``TracesData`` protobuf (what the OTel Collector's
kafkaexporter writes with ``otlp_proto``) or its JSON form (``otlp_json``:
camelCase keys, hex ids, 64-bit integers as strings). Both can carry many
resources and many traces. Decoding is strict about what the collector
depends on and reports every problem as a :class:`MalformedRecord` reason, so
the caller can dead-letter the record instead of guessing.

Protobuf decoding has two implementations with identical results: the
native one (the optional ``ragpulse-native`` distribution built from
``native/``, a Rust wire parser that builds the spans directly, several times
faster) and the pure-Python one (:func:`decode_otlp_proto_py`, upb plus one
pass over the attributes), which is the reference and the fallback.
:func:`decode_otlp_proto` uses the native decoder when the module is in use
(collector/core/native.py: it imports, its ABI matches, ``RAGPULSE_NATIVE=0``
is not set); a malformed record is rejected with the reference's reason, and
any other native failure (a panic) is answered by the reference.
:data:`DECODER` says which one is active.
"""

from __future__ import annotations

import base64
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from ...agent.conventions import SERVICE_NAME
from ..core.json_depth import MAX_VALUE_DEPTH, JsonTooDeep, loads_bounded
from ..core.model import Span
from ..core.native import implementation, installed_module, native_function, native_why, with_fallback

__all__ = [
    "MalformedRecord",
    "DecodeResult",
    "Limits",
    "decode_record",
    "decode_otlp_proto",
    "decode_otlp_proto_py",
    "decode_otlp_proto_native",
    "DECODER",
    "decoder_description",
    "decode_otlp_json",
    "split_by_trace",
]

_ZERO_TRACE = b"\x00" * 16
_ZERO_SPAN = b"\x00" * 8
_INT64 = -(1 << 63)  # the native decoder takes limits in [_INT64, -_INT64)

_native_decode = native_function("decode_traces")
DECODER = implementation()


def decoder_description() -> str:
    """One line saying which protobuf decoder is active and why (for the start-up log)."""
    return f"OTLP protobuf decoder: {native_why()}"


# First bytes with which decode_record reads a record as OTLP/JSON (no protobuf starts so).
_JSON_HEADS = (b"{", b" ", b"\t", b"\r")


class MalformedRecord(ValueError):
    """A record (or a span in it) that cannot be processed; the message is the dead-letter reason."""


class Limits:
    """Input limits; anything beyond them is malformed (dead-lettered), never truncated silently."""

    __slots__ = ("max_record_bytes", "max_attribute_chars", "max_attributes")

    def __init__(
        self,
        max_record_bytes: int = 8 << 20,
        max_attribute_chars: int = 256 << 10,
        max_attributes: int = 1024,
    ) -> None:
        self.max_record_bytes = max_record_bytes
        self.max_attribute_chars = max_attribute_chars
        self.max_attributes = max_attributes


class DecodeResult:
    """Spans decoded from one record plus the reasons for every span that was rejected."""

    __slots__ = ("spans", "errors")

    def __init__(self, spans: list[Span], errors: list[str]) -> None:
        self.spans = spans
        self.errors = errors


def decode_record(data: bytes, limits: Limits) -> DecodeResult:
    """Decode one Kafka record value, choosing JSON when it starts with ``{``.

    Raises :class:`MalformedRecord` when nothing in the record can be used.
    """
    if data is None:
        raise MalformedRecord("empty record (null value)")
    if len(data) > limits.max_record_bytes:
        raise MalformedRecord(
            f"record of {len(data)} bytes exceeds max_record_bytes {limits.max_record_bytes}"
        )
    head = data[:1]
    if head in _JSON_HEADS:
        return decode_otlp_json(data, limits)
    try:
        return decode_otlp_proto(data, limits)
    except MalformedRecord:
        # 0x0A starts every TracesData protobuf, but also JSON that begins with a newline.
        if head == b"\n" and data.lstrip()[:1] == b"{":
            return decode_otlp_json(data, limits)
        raise


# ---------------------------------------------------------------- protobuf


def _pb_value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "string_value":
        return v.string_value
    if kind == "int_value":
        return v.int_value
    if kind == "double_value":
        return v.double_value
    if kind == "bool_value":
        return v.bool_value
    if kind == "array_value":
        return [_pb_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _pb_value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(v.bytes_value).decode()
    return None


def _pb_attrs(kvs: Any, limits: Limits) -> dict[str, Any]:
    if len(kvs) > limits.max_attributes:
        raise MalformedRecord(f"{len(kvs)} attributes exceed max_attributes {limits.max_attributes}")
    out: dict[str, Any] = {}
    cap = limits.max_attribute_chars
    for kv in kvs:
        v = kv.value
        s = v.string_value  # the common case first: one call instead of WhichOneof + getter
        if s:
            if len(s) > cap:
                raise MalformedRecord(
                    f"attribute {kv.key[:80]!r} of {len(s)} chars exceeds max_attribute_chars {cap}"
                )
            out[kv.key] = s
            continue
        kind = v.WhichOneof("value")
        if kind == "double_value":
            out[kv.key] = v.double_value
        elif kind == "int_value":
            out[kv.key] = v.int_value
        elif kind == "bool_value":
            out[kv.key] = v.bool_value
        elif kind is None or kind == "string_value":
            out[kv.key] = "" if kind else None
        else:
            val = _pb_value(v)
            if len(str(val)) > cap:
                raise MalformedRecord(f"attribute {kv.key[:80]!r} exceeds max_attribute_chars {cap}")
            out[kv.key] = val
    return out


def decode_otlp_proto_native(data: bytes, limits: Limits) -> DecodeResult:
    """The native decoder alone, active or not, no fallback (ImportError when ``ragpulse_native``
    is not installed with the expected ABI). Raises :class:`MalformedRecord` as the reference
    does, and whatever else the native code raises (``NativePanic``)."""
    native = _native_decode
    if native is None:
        module, why = installed_module()
        if module is None:
            raise ImportError(f"no native decoder: {why}")
        native = module.decode_traces
    cap = limits.max_attribute_chars
    nmax = limits.max_attributes
    if not (type(cap) is int and type(nmax) is int and _INT64 <= cap < -_INT64 and _INT64 <= nmax < -_INT64):
        return decode_otlp_proto_py(data, limits)  # only the Python path compares other limits exactly
    try:
        spans, errors = native(data if type(data) is bytes else bytes(data), Span, cap, nmax)
    except ValueError as exc:
        raise MalformedRecord(str(exc)) from None
    return DecodeResult(spans, errors)


def decode_otlp_proto_py(data: bytes, limits: Limits) -> DecodeResult:
    """The pure-Python protobuf decoder (upb): the reference for the native one, and its fallback."""
    td = TracesData()
    try:
        td.ParseFromString(data)
    except DecodeError as exc:
        raise MalformedRecord(f"not an OTLP TracesData protobuf: {exc}") from None
    except Exception as exc:  # upb raises a few other types on hostile input
        raise MalformedRecord(f"not an OTLP TracesData protobuf: {type(exc).__name__}: {exc}") from None
    spans: list[Span] = []
    errors: list[str] = []
    nres = 0
    for rs in td.resource_spans:
        nres += 1
        service = ""
        for kv in rs.resource.attributes:
            if kv.key == SERVICE_NAME:
                service = kv.value.string_value
                break
        for ss in rs.scope_spans:
            for s in ss.spans:
                tid = s.trace_id
                sid = s.span_id
                if len(tid) != 16 or tid == _ZERO_TRACE:
                    errors.append(f"span {s.name[:60]!r}: trace_id must be 16 non-zero bytes, got {len(tid)}")
                    continue
                if len(sid) != 8 or sid == _ZERO_SPAN:
                    errors.append(f"span {s.name[:60]!r}: span_id must be 8 non-zero bytes, got {len(sid)}")
                    continue
                pid = s.parent_span_id
                if pid and len(pid) != 8:
                    errors.append(f"span {s.name[:60]!r}: parent_span_id must be 8 bytes, got {len(pid)}")
                    continue
                start = s.start_time_unix_nano
                end = s.end_time_unix_nano
                if not start or not end or end < start:
                    errors.append(f"span {s.name[:60]!r}: missing or inverted start/end time")
                    continue
                try:
                    attrs = _pb_attrs(s.attributes, limits)
                    events = (
                        [(e.name, e.time_unix_nano, _pb_attrs(e.attributes, limits)) for e in s.events]
                        if s.events
                        else []
                    )
                except MalformedRecord as exc:
                    errors.append(f"span {s.name[:60]!r}: {exc}")
                    continue
                spans.append(
                    Span(
                        tid.hex(),
                        sid.hex(),
                        pid.hex() if pid and pid != _ZERO_SPAN else "",
                        s.name,
                        start,
                        end,
                        s.status.code,
                        service,
                        attrs,
                        events,
                    )
                )
    if not spans and not errors:
        # An exporter never sends an empty batch: this is garbage that happened to parse.
        raise MalformedRecord("no spans in record" if nres else "no OTLP resource_spans in record")
    return DecodeResult(spans, errors)


# Decode an OTLP ``TracesData`` / ``ExportTraceServiceRequest`` protobuf: the native decoder
# when it is active (:data:`DECODER`), its results, errors and failures those of
# decode_otlp_proto_py; any other native failure (limits beyond 64 bits: OverflowError, a
# contained panic) is answered by decode_otlp_proto_py (collector/core/native.py).
decode_otlp_proto = with_fallback(
    "decode_traces",
    decode_otlp_proto_native if _native_decode is not None else None,
    decode_otlp_proto_py,
    passes=(MalformedRecord,),
)


def split_by_trace(data: bytes) -> list[tuple[str, bytes]]:
    """Split a ``TracesData`` protobuf into one record per trace id (resource and scope kept).

    Used when OTLP/HTTP input is forwarded to Kafka: keyed by trace id, a
    trace's spans land on one partition, as with kafkaexporter's
    ``partition_traces_by_id``. Raises :class:`MalformedRecord` on bad input.
    """
    td = TracesData()
    try:
        td.ParseFromString(data)
    except Exception as exc:  # noqa: BLE001 - any parse failure is a bad body
        raise MalformedRecord(f"not an OTLP TracesData protobuf: {exc}") from None
    out: dict[bytes, TracesData] = {}
    for rs in td.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                per = out.get(span.trace_id)
                if per is None:
                    per = out[span.trace_id] = TracesData()
                target_rs = per.resource_spans[-1] if per.resource_spans else None
                if (
                    target_rs is None
                    or target_rs.resource != rs.resource
                    or target_rs.schema_url != rs.schema_url
                ):
                    target_rs = per.resource_spans.add()
                    target_rs.resource.CopyFrom(rs.resource)
                    target_rs.schema_url = rs.schema_url
                target_ss = target_rs.scope_spans[-1] if target_rs.scope_spans else None
                if target_ss is None or target_ss.scope != ss.scope:
                    target_ss = target_rs.scope_spans.add()
                    target_ss.scope.CopyFrom(ss.scope)
                    target_ss.schema_url = ss.schema_url
                target_ss.spans.append(span)
    return [(tid.hex(), per.SerializeToString()) for tid, per in out.items()]


# ---------------------------------------------------------------- JSON


def _get(d: dict[str, Any], camel: str, snake: str, default: Any = None) -> Any:
    v = d.get(camel)
    if v is None:
        v = d.get(snake, default)
    return v


def _json_value(v: Any, depth: int = 0) -> Any:
    if depth > MAX_VALUE_DEPTH:
        raise JsonTooDeep(f"attribute value nested deeper than {MAX_VALUE_DEPTH} levels")
    if not isinstance(v, dict):
        raise MalformedRecord(f"attribute value must be an AnyValue object, got {type(v).__name__}")
    if "stringValue" in v or "string_value" in v:
        s = _get(v, "stringValue", "string_value")
        if not isinstance(s, str):
            raise MalformedRecord("stringValue is not a string")
        return s
    if "intValue" in v or "int_value" in v:
        return int(_get(v, "intValue", "int_value"))
    if "doubleValue" in v or "double_value" in v:
        return float(_get(v, "doubleValue", "double_value"))
    if "boolValue" in v or "bool_value" in v:
        return bool(_get(v, "boolValue", "bool_value"))
    if "arrayValue" in v or "array_value" in v:
        values = (_get(v, "arrayValue", "array_value") or {}).get("values", [])
        return [_json_value(x, depth + 1) for x in values]
    if "kvlistValue" in v or "kvlist_value" in v:
        return {
            kv["key"]: _json_value(kv.get("value", {}), depth + 1)
            for kv in (_get(v, "kvlistValue", "kvlist_value") or {}).get("values", [])
        }
    if "bytesValue" in v or "bytes_value" in v:
        return _get(v, "bytesValue", "bytes_value")
    return None


def _json_attrs(kvs: Any, limits: Limits) -> dict[str, Any]:
    if kvs is None:
        return {}
    if not isinstance(kvs, list):
        raise MalformedRecord("attributes must be a list")
    if len(kvs) > limits.max_attributes:
        raise MalformedRecord(f"{len(kvs)} attributes exceed max_attributes {limits.max_attributes}")
    out: dict[str, Any] = {}
    for kv in kvs:
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise MalformedRecord("attribute without a string key")
        val = _json_value(kv.get("value", {}))
        if len(val if isinstance(val, str) else str(val)) > limits.max_attribute_chars:
            raise MalformedRecord(
                f"attribute {kv['key'][:80]!r} exceeds max_attribute_chars {limits.max_attribute_chars}"
            )
        out[kv["key"]] = val
    return out


def _hex_id(value: Any, nbytes: int, what: str) -> str:
    if not isinstance(value, str) or len(value) != 2 * nbytes:
        raise MalformedRecord(f"{what} must be {2 * nbytes} hex characters")
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise MalformedRecord(f"{what} is not hex") from None
    if raw == b"\x00" * nbytes:
        raise MalformedRecord(f"{what} is all zeros")
    return value.lower()


def _status_code(status: Any) -> int:
    if not isinstance(status, dict):
        return 0
    code = status.get("code", 0)
    if isinstance(code, str):
        return {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}.get(code, 0)
    return int(code)


def decode_otlp_json(data: bytes, limits: Limits) -> DecodeResult:
    """Decode the OTLP/JSON encoding of ``TracesData`` (hex ids, camelCase; snake_case accepted too)."""
    try:
        doc = loads_bounded(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedRecord(f"invalid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise MalformedRecord("OTLP JSON must be an object")
    rss = _get(doc, "resourceSpans", "resource_spans")
    if not isinstance(rss, list):
        raise MalformedRecord("OTLP JSON has no resourceSpans list")
    spans: list[Span] = []
    errors: list[str] = []
    for rs in rss:
        if not isinstance(rs, dict):
            errors.append("resourceSpans entry is not an object")
            continue
        try:
            res_attrs = _json_attrs((rs.get("resource") or {}).get("attributes"), limits)
        except (MalformedRecord, ValueError, TypeError, AttributeError) as exc:
            errors.append(f"resource: {exc}")
            continue
        service = res_attrs.get(SERVICE_NAME) or ""
        for ss in _get(rs, "scopeSpans", "scope_spans", []) or []:
            for s in (ss or {}).get("spans", []) or []:
                try:
                    if not isinstance(s, dict):
                        raise MalformedRecord("span is not an object")
                    name = s.get("name", "")
                    if not isinstance(name, str):
                        raise MalformedRecord("span name is not a string")
                    tid = _hex_id(_get(s, "traceId", "trace_id"), 16, "traceId")
                    sid = _hex_id(_get(s, "spanId", "span_id"), 8, "spanId")
                    pid_raw = _get(s, "parentSpanId", "parent_span_id", "")
                    pid = _hex_id(pid_raw, 8, "parentSpanId") if pid_raw else ""
                    start = int(_get(s, "startTimeUnixNano", "start_time_unix_nano", 0))
                    end = int(_get(s, "endTimeUnixNano", "end_time_unix_nano", 0))
                    if not start or not end or end < start:
                        raise MalformedRecord("missing or inverted start/end time")
                    attrs = _json_attrs(s.get("attributes"), limits)
                    events = [
                        (
                            e.get("name", ""),
                            int(_get(e, "timeUnixNano", "time_unix_nano", 0)),
                            _json_attrs(e.get("attributes"), limits),
                        )
                        for e in s.get("events", []) or []
                    ]
                    spans.append(
                        Span(
                            tid,
                            sid,
                            pid,
                            name,
                            start,
                            end,
                            _status_code(s.get("status")),
                            service,
                            attrs,
                            events,
                        )
                    )
                except (MalformedRecord, ValueError, TypeError, AttributeError, KeyError) as exc:
                    label = s.get("name", "?") if isinstance(s, dict) else "?"
                    errors.append(f"span {str(label)[:60]!r}: {exc}")
    if not spans and not errors:
        raise MalformedRecord("no spans in OTLP JSON record")
    return DecodeResult(spans, errors)
