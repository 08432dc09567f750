"""Coverage-guided fuzzing of the native OTLP decoder against the Python reference (atheris).

A program, started by bench/fuzz_decoder.py (the long run) and tests/test_fuzz_otlp.py (a
short one): ``python -m tests.fuzz_otlp ARTIFACTS [libFuzzer flags] WORK_CORPUS SEEDS``.
libFuzzer mutates the seeds (tests/data/fuzz/otlp/: real requests the agent's OTel exporter
and the bench traffic wrote), keeping the inputs that reach new code: the Python decoder's
own code (instrumented here) and, when the native module was built with coverage counters
(bench/fuzz_decoder.py --native-coverage), the Rust decoder's. Each input is decoded by the
native decoder alone (no fallback) and by the reference, under the default limits and under
tight ones; the outcomes must be equal (tests/otlp_parity.py: the same rejection reason, or
the same spans and errors). A mismatch is written to ``ARTIFACTS/mismatch-<sha1>`` and the
run goes on; a crash (a native panic, raised as ``NativePanic``, or a signal) ends the run
as libFuzzer ends it, its input in ``ARTIFACTS/crash-<sha1>``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import atheris

__all__ = ["SEEDS", "check"]

SEEDS = Path(__file__).resolve().parent / "data" / "fuzz" / "otlp"


@functools.cache
def _decoders() -> tuple[Any, Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
    """The limits, both decoders and the comparison, imported with the Python decoder's code
    instrumented for coverage. Imported on the first input, once atheris has loaded libFuzzer
    (with its symbols global): a native module built with coverage counters resolves its
    counter hooks there when it loads."""
    with atheris.instrument_imports(include=["ragpulse.collector.ingest.otlp"]):
        from ragpulse.collector.ingest.otlp import Limits, decode_otlp_proto_native, decode_otlp_proto_py

    from tests.otlp_parity import outcome

    return Limits, decode_otlp_proto_native, decode_otlp_proto_py, outcome


def check(data: bytes) -> list[str]:
    """How the native decoder's outcome on ``data`` differs from the reference's, under the
    default limits and under tight ones that real requests cross (attribute length and count);
    empty when they agree."""
    limits_type, native, reference, outcome = _decoders()
    out = []
    for k, limits in enumerate((limits_type(), limits_type(max_attribute_chars=40, max_attributes=6))):
        ref = outcome(reference, data, limits)
        got = outcome(native, data, limits)
        if got != ref:
            out.append(f"limits {k}: native {str(got)[:300]} != python {str(ref)[:300]}")
    return out


def _target(artifacts: Path) -> Callable[[bytes], None]:
    def one_input(data: bytes) -> None:
        differences = check(data)
        if differences:
            name = artifacts / f"mismatch-{hashlib.sha1(data).hexdigest()}"
            name.write_bytes(data)
            print(f"MISMATCH {name.name}: " + "; ".join(differences), file=sys.stderr, flush=True)

    return one_input


def main() -> None:
    artifacts = Path(sys.argv[1])
    artifacts.mkdir(parents=True, exist_ok=True)
    argv = [sys.argv[0], f"-artifact_prefix={artifacts}{os.sep}", *sys.argv[2:]]
    atheris.Setup(argv, _target(artifacts))
    sys.setdlopenflags(sys.getdlopenflags() | os.RTLD_GLOBAL)  # libFuzzer's hooks, for the native module
    atheris.Fuzz()


if __name__ == "__main__":
    main()
