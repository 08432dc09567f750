"""The one native boundary (collector/core/native.py) and what it does with native panics.

The policy on stand-in functions (no module needed): the native function answers, a
contract's rejection passes, any other failure is answered by the reference, a panic is
counted and logged once. With the module: every entry point is wired through the boundary
with its reference, and a panic injected in each (``RAGPULSE_NATIVE_TEST_PANIC``, in a fresh
process: tests/native_panics.py) surfaces as ``NativePanic``, an ordinary ``Exception`` the
fallback handles, and the boundary answers real requests as the reference does; the re-ask
index survives a panic while it holds its lock; an embedded collector whose every entry point
panics stores the same rows as the Python reference.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ragpulse.collector.core import native
from ragpulse.collector.feedback.reask import ReaskDetector
from ragpulse.collector.ingest import build, documents, otlp
from ragpulse.collector.storage import rows

from tests.native_module import require_native

ROOT = Path(__file__).resolve().parent.parent


class Rejected(ValueError):
    """A stand-in for a contract's rejection (the decoder's MalformedRecord)."""


def _reference(x: int) -> str:
    return f"reference {x}"


def _native(x: int) -> str:
    if x < 0:
        raise Rejected("negative")
    if x == 0:
        raise TypeError("no native reading of 0")
    return f"native {x}"


def test_the_policy_native_answers_rejections_pass_failures_go_to_the_reference() -> None:
    call = native.with_fallback("encode_rows", _native, _reference, passes=(Rejected,))
    assert call(3) == "native 3"
    assert call(0) == "reference 0"
    with pytest.raises(Rejected):
        call(-1)
    assert call.native is _native and call.reference is _reference  # type: ignore[attr-defined]
    assert native.with_fallback("encode_rows", None, _reference) is _reference
    with pytest.raises(ValueError, match="not a native entry point"):
        native.with_fallback("encode_everything", _native, _reference)
    with pytest.raises(ValueError, match="not a native entry point"):
        native.native_function("encode_everything")


def test_a_base_exception_is_not_a_failure_the_reference_answers() -> None:
    def interrupted(x: int) -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        native.with_fallback("encode_rows", interrupted, _reference)(1)


def test_a_panic_is_answered_by_the_reference_counted_and_logged_once(caplog, monkeypatch) -> None:
    module = require_native("no native panics without the module")

    def panicking(x: int) -> str:
        raise module.NativePanic(f"ragpulse_native.citation_events panicked: at {x}")

    monkeypatch.setattr(native, "_native", module)
    monkeypatch.setattr(native, "_panics", {})
    call = native.with_fallback("citation_events", panicking, _reference)
    with caplog.at_level(logging.WARNING, logger="ragpulse.native"):
        assert [call(1), call(2)] == ["reference 1", "reference 2"]
    assert native.panics() == {"citation_events": 2}
    assert [r.getMessage() for r in caplog.records] == [
        "ragpulse_native.citation_events panicked: at 1; the Python reference answers (only the first panic is logged)"
    ]
    assert issubclass(module.NativePanic, RuntimeError)


def _entry_points() -> dict[str, Any]:
    """Each entry point as a stage wires it through the boundary."""
    return {
        "decode_traces": otlp.decode_otlp_proto,
        "encode_rows": rows._encoder(),
        "flattened_documents": documents._flattened,
        "citation_events": build._citations,
        "ReaskIndex": ReaskDetector(None, {})._found,  # type: ignore[arg-type]
    }


def test_every_entry_point_goes_through_the_boundary_with_its_reference() -> None:
    module = require_native(
        "no native entry points", disabled="RAGPULSE_NATIVE=0: every entry point is its reference"
    )
    assert module.ABI == native.NATIVE_ABI
    assert {e.split(".")[0] for e in module.ENTRY_POINTS} == set(native.ENTRY_POINTS)
    wired = _entry_points()
    assert sorted(wired) == sorted(native.ENTRY_POINTS)
    for name, call in wired.items():
        assert call.native is not None and call.reference is not None, name
    assert otlp.decode_otlp_proto.native is otlp.decode_otlp_proto_native
    assert otlp.decode_otlp_proto.reference is otlp.decode_otlp_proto_py
    assert documents._flattened.reference is documents._flattened_py
    assert build._citations.reference is build._citations_py


def _scenario(switch: str, *args: str, native_on: bool = True) -> tuple[dict[str, Any], str]:
    """Run a tests/native_panics.py scenario in a fresh process with the panic switch set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_NATIVE")}
    env["RAGPULSE_NATIVE_TEST_PANIC"] = switch
    env["RUST_BACKTRACE"] = "0"
    if not native_on:
        env["RAGPULSE_NATIVE"] = "0"
    done = subprocess.run(
        [sys.executable, "-m", "tests.native_panics", *args], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_a_panic_in_each_entry_point_is_an_exception_the_reference_answers() -> None:
    require_native("no native panics without the module", disabled="RAGPULSE_NATIVE=0: nothing native runs")
    out, stderr = _scenario("*", "entry_points")
    assert out["test_panics"] == list(require_native("").ENTRY_POINTS)
    for name in native.ENTRY_POINTS:
        assert out[name]["raised"] == "NativePanic" and out[name]["exception"], (name, out[name])
    for name in ("decode_traces", "flattened_documents", "citation_events", "encode_rows"):
        assert out[name]["inputs"] >= 1 and out[name]["same"], (name, out[name])
        assert out["panics"][name] >= out[name]["inputs"]
        assert stderr.count(f"ragpulse_native.{name} panicked") == 1  # logged once, at WARNING
    assert out["flattened_documents"]["inputs"] > 50 and out["citation_events"]["inputs"] > 5


def test_the_reask_index_stays_usable_after_a_panic_while_it_holds_its_lock() -> None:
    require_native("no native re-ask index", disabled="RAGPULSE_NATIVE=0: no native re-ask index")
    out, _ = _scenario("ReaskIndex.add_calls", "reask_lock")
    assert out["first"] == out["first_py"] and out["first"], out
    assert out["held_before"] == 4
    assert out["panicked"] == {"raised": "NativePanic", "exception": True}
    assert out["held_after"] == 0  # emptied: what it held may have been half updated
    assert out["after"] == out["after_py"] and len(out["after"]) == 2  # the lock was recovered
    assert out["again"]["raised"] == "NativePanic" and out["held_last"] == 0


def test_a_collector_whose_every_entry_point_panics_stores_what_the_reference_stores(tmp_path) -> None:
    require_native("no native panics without the module", disabled="RAGPULSE_NATIVE=0: nothing native runs")
    start = str(time.time_ns() - 3600 * 1_000_000_000)
    panicking, stderr = _scenario("*", "collector", str(tmp_path / "panics"), start)
    python, _ = _scenario("", "collector", str(tmp_path / "python"), start, native_on=False)
    assert panicking["implementation"] == "native" and python["implementation"] == "python"
    assert sorted(panicking["panics"]) == sorted(native.ENTRY_POINTS), panicking["panics"]
    assert len(python["traces"]) == 15 and python["reasks"] == 1 and len(python["feedback"]) == 4
    assert panicking["traces"] == python["traces"]
    assert panicking["feedback"] == python["feedback"]
    assert "PanicException" not in stderr
