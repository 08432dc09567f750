"""Whether an OTLP/HTTP traces request holds no span at all.

The OTel Collector answers such a request (a zero-length protobuf body,
``{}``, ``{"resourceSpans": []}``, resources or scopes without spans) with 200
and stores nothing, and exporters send them (a flush with nothing queued);
the decoders treat a record without spans as malformed, which is right for a
Kafka record but not for a request. The intake asks this only after decoding
failed, so accepted requests pay nothing for it.
"""

from __future__ import annotations

from google.protobuf.unknown_fields import UnknownFieldSet
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from ..core.json_depth import loads_bounded

__all__ = ["holds_no_span"]


def holds_no_span(body: bytes, is_json: bool) -> bool:
    """True when ``body`` is a well-formed traces request without a single span."""
    if not body:
        return True
    if is_json:
        try:
            doc = loads_bounded(body)
        except ValueError:  # invalid or too deeply nested JSON (JsonTooDeep is a ValueError)
            return False
        if not isinstance(doc, dict):
            return False
        resources = doc.get("resourceSpans", doc.get("resource_spans", []))
        if not isinstance(resources, list):
            return False
        for rs in resources:
            if not isinstance(rs, dict):
                return False
            scopes = rs.get("scopeSpans", rs.get("scope_spans", []))
            if not isinstance(scopes, list):
                return False
            if any(not isinstance(ss, dict) or ss.get("spans") for ss in scopes):
                return False
        return True
    td = TracesData()
    try:
        td.ParseFromString(body)
    except Exception:  # noqa: BLE001 - any parse failure: not an empty request
        return False
    # Bytes that only parse as unknown fields are garbage, not an empty request.
    messages = [td, *td.resource_spans, *(ss for rs in td.resource_spans for ss in rs.scope_spans)]
    if any(len(UnknownFieldSet(m)) for m in messages):
        return False
    return not any(ss.spans for rs in td.resource_spans for ss in rs.scope_spans)
