"""Built-in redaction patterns, the pluggable redactor, and where redaction applies."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragpulse.agent import configure, flush, generation, retrieval, shutdown, trace_rag
from ragpulse.agent.redaction import Redactor, luhn_valid, redact_builtin


@pytest.mark.parametrize(
    "text, kind",
    [
        ("write to jane.doe+rag@corp.example.org today", "EMAIL"),
        ("call +44 20 7946 0958 now", "PHONE"),
        ("call (415) 555-0132 now", "PHONE"),
        ("call 415.555.0132 now", "PHONE"),
        ("card 4111 1111 1111 1111 exp", "CARD_NUMBER"),
        ("card 5500-0000-0000-0004 exp", "CARD_NUMBER"),
        ("card 378282246310005 amex", "CARD_NUMBER"),
        ("key sk-proj-Abcdef1234567890XYZabc ok", "API_KEY"),
        ("key sk-ant-api03-abcdefghijklmnop1234 ok", "API_KEY"),
        ("aws AKIAIOSFODNN7EXAMPLE id", "AWS_ACCESS_KEY"),
        ("gh ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 tok", "GITHUB_TOKEN"),
        ("slack xoxb-123456789012-abcdefghijkl tok", "SLACK_TOKEN"),
        ("slack xoxp-123456789012-abcdefghijkl tok", "SLACK_TOKEN"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "BEARER_TOKEN"),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "JWT",
        ),
    ],
)
def test_builtin_patterns(text, kind):
    out = redact_builtin(text)
    assert f"[REDACTED:{kind}]" in out
    # The surrounding words survive.
    assert out.split()[0] == text.split()[0]


@pytest.mark.parametrize(
    "text",
    [
        "order 1234567890123 shipped",  # 13 digits, not Luhn-valid
        "released on 2024-01-02 at 10:30",
        "retained for 5 years, section 4.2.1",
        "version 1.45.2 of the SDK",
        "costs 1,250.00 EUR",
        "skeleton key sk-short",
    ],
)
def test_innocent_text_survives(text):
    assert redact_builtin(text) == text


def test_luhn():
    assert luhn_valid("4111111111111111")
    assert not luhn_valid("4111111111111112")


def test_custom_redactor_runs_after_builtins_and_fails_closed():
    r = Redactor(builtin=True, custom=lambda s: s.replace("ACME", "[CUSTOMER]"))
    assert r("ACME mail bob@acme.io") == "[CUSTOMER] mail [REDACTED:EMAIL]"

    def broken(_s):
        raise RuntimeError("bug")

    assert Redactor(builtin=False, custom=broken)("anything") == "[REDACTED]"


def test_redaction_covers_every_span_field_and_keeps_citation_offsets_true():
    exporter = InMemorySpanExporter()
    configure(exporter=exporter, redact=True, redactor=lambda s: s.replace("Project Falcon", "[PROJECT]"))
    try:

        @retrieval(name="search")
        def search(query):
            return [
                {
                    "id": "C1",
                    "content": "Project Falcon lead: eve@corp.example",
                    "metadata": {"owner": "eve@corp.example"},
                }
            ]

        @generation(name="complete", model="m")
        def complete(prompt):
            return "Mail eve@corp.example about it [1]. Also call +1 415 555 0132 [1]."

        @trace_rag(name="answer")
        def rag(query):
            search(query)
            from ragpulse.agent import cite, current_rag

            current_rag().set_attribute("app.caller", "eve@corp.example")
            answer = complete(query)
            cite("C1", 0, answer.index(" [1]"))
            return answer

        @trace_rag(name="failing")
        def failing(query):
            raise RuntimeError("lookup for eve@corp.example failed")

        rag("who leads Project Falcon? eve@corp.example")
        with pytest.raises(RuntimeError):
            failing("x")
        flush()
        spans = {s.name: s for s in exporter.get_finished_spans()}
    finally:
        shutdown()
    for span in spans.values():
        values = [str(v) for v in span.attributes.values()]
        values += [str(v) for e in span.events for v in e.attributes.values()]
        assert not any("eve@corp.example" in v or "Project Falcon" in v or "555 0132" in v for v in values), (
            span.name
        )
    root = spans["answer"]
    answer = root.attributes["output.value"]
    assert answer == "Mail [REDACTED:EMAIL] about it [1]. Also call [REDACTED:PHONE] [1]."
    cits = [
        (e.attributes["rag.citation.answer.start"], e.attributes["rag.citation.answer.end"])
        for e in root.events
    ]
    # Offsets index the redacted answer that is exported (parsed markers and the explicit cite alike).
    assert [answer[s:e] for s, e in cits] == [
        "Mail [REDACTED:EMAIL] about it",
        "Also call [REDACTED:PHONE]",
        "Mail [REDACTED:EMAIL] about it",
    ]
    assert (
        spans["search"].attributes["retrieval.documents.0.document.content"]
        == "[PROJECT] lead: [REDACTED:EMAIL]"
    )
    exc = next(e for e in spans["failing"].events if e.name == "exception")
    assert exc.attributes["exception.message"] == "lookup for [REDACTED:EMAIL] failed"
