"""The coverage-guided fuzzer of the OTLP decoder: a short run, and that it can fail.

A short run of bench/fuzz_decoder.py (atheris/libFuzzer, a fixed seed, the installed module)
mutates the real requests of tests/data/fuzz/otlp/ for a few thousand inputs: no crash, no
mismatch between the native decoder and the Python reference, and the run grows its corpus
(it is guided by coverage). A native panic injected in the decoder is reported as a crash
with its input; a decoder that differs from the reference is reported as a mismatch.
The ten-minute run is bench/fuzz_decoder.py's default.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.native_module import require_native

pytest.importorskip("atheris", reason="atheris (the dev extra) is not installed")
require_native("no native decoder to fuzz")

from tests import fuzz_otlp  # noqa: E402 - imports atheris

ROOT = Path(__file__).resolve().parent.parent
RUNS = 4000


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_NATIVE")}
    return dict(env, RUST_BACKTRACE="0", **extra)


def test_a_short_run_finds_no_crash_and_no_mismatch(tmp_path: Path) -> None:
    cmd = [sys.executable, "bench/fuzz_decoder.py", "--runs", str(RUNS), "--seed", "7", "--no-native-coverage",
           "--work", str(tmp_path)]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    figures = dict(re.findall(r"^  (\w+): (\S+)", done.stdout, re.M))
    assert int(figures["executions"]) == RUNS, figures
    assert figures["crashes"] == "0" and figures["mismatches"] == "0", figures
    assert int(figures["cov"]) > 50 and int(figures["new_units"]) > 0, figures  # coverage guides it
    assert len(list((tmp_path / "corpus").iterdir())) > 0
    assert not [p for p in fuzz_otlp.SEEDS.iterdir() if p.suffix != ".bin"]  # the seeds stay as they are


def test_a_native_panic_is_a_crash_with_its_input(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    cmd = [sys.executable, "-m", "tests.fuzz_otlp", str(tmp_path / "artifacts"), "-runs=50", str(corpus),
           str(fuzz_otlp.SEEDS)]  # fmt: skip
    env = _env(RAGPULSE_NATIVE_TEST_PANIC="decode_traces")
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "NativePanic: ragpulse_native.decode_traces panicked" in done.stdout + done.stderr
    crashes = list((tmp_path / "artifacts").glob("crash-*"))
    assert len(crashes) == 1 and crashes[0].read_bytes() in [
        p.read_bytes() for p in fuzz_otlp.SEEDS.iterdir()
    ]


def test_the_real_requests_decode_alike_and_a_difference_is_written_as_a_mismatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeds = sorted(fuzz_otlp.SEEDS.glob("*.bin"))
    assert len(seeds) == 8
    assert all(fuzz_otlp.check(p.read_bytes()) == [] for p in seeds)
    limits, native, reference, outcome = fuzz_otlp._decoders()

    def with_an_extra_error(data: bytes, lim: object) -> object:
        result = native(data, lim)
        result.errors = result.errors + ["a span the reference does not reject"]
        return result

    monkeypatch.setattr(fuzz_otlp, "_decoders", lambda: (limits, with_an_extra_error, reference, outcome))
    data = seeds[0].read_bytes()
    fuzz_otlp._target(tmp_path)(data)
    written = list(tmp_path.glob("mismatch-*"))
    assert len(written) == 1 and written[0].read_bytes() == data
