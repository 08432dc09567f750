"""The agent's request path in instructions counted by valgrind, beside the bare OTel floors.

``bench/sdk_overhead.py`` times the same calls in interleaved rounds; on a shared machine its
request-path ratios swing by ±10 %. This script counts, for each variant, the instructions the
calling thread spends in ``--calls`` calls (``valgrind --tool=callgrind``, collecting only inside
the ``functools.reduce`` that runs them), in a child process per variant that first configures
the variant as ``sdk_overhead.py`` does (export deferred until flushed: the export thread sleeps
while the calls are counted), warms it up on 200 calls and flushes them. The counts are
deterministic (``PYTHONHASHSEED=0``) and include the garbage collections the calls cause, which
grow with the spans left queued: like a round of ``sdk_overhead.py`` (2,000 calls), the calls
are counted one after the other with nothing exported between them. What the export thread
does later is not counted (see ``sdk_overhead.py`` for total CPU). Instructions are not time:
``--cache-sim`` also simulates the caches and prints callgrind's estimate of cycles (10 a
first-level miss, 100 a last-level miss), which counts what more memory touched costs.

Usage: python bench/sdk_instructions.py [--calls 1000] [--variant NAME ...] [--cache-sim]
(prints a note and exits 0 when valgrind is not installed).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

__all__ = ["main", "counts", "estimated_cycles", "VARIANTS"]

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
#: variant -> the floor its ratio divides by (the variants of sdk_overhead.py that the agent runs in).
VARIANTS = {
    "floor": "floor",
    "ragpulse": "floor",
    "ragpulse-app": "floor",
    "agentic-floor": "agentic-floor",
    "agentic-ragpulse": "agentic-floor",
    "agentic-ragpulse-app": "agentic-floor",
}
_EVENTS_RE = re.compile(r"Events\s*:\s*([\w ]+)")
_COLLECTED_RE = re.compile(r"Collected\s*:\s*([\d ]+)")

# valgrind resolves the interpreter's symlink, so a child would not see this virtual
# environment: it adds this interpreter's site-packages itself (.pth files included).
_CHILD = """
import functools, gc, os, site, sys
site.addsitedir({site!r})
sys.path[:0] = [{bench!r}, {root!r}]
import sdk_overhead
name, n = sys.argv[1], int(sys.argv[2])
variant = sdk_overhead.build_variants()[name]
if variant.setup is not None:
    variant.setup()
for _ in range(200):
    variant.call()
variant.flush()
gc.collect()
call = variant.call
functools.reduce(lambda _a, _b: call(), range(n), None)  # the counted calls
os._exit(0)  # no export at exit: only the calls are counted
"""


def counts(name: str, calls: int, cache_sim: bool = False) -> dict[str, int]:
    """Events of the calling thread in ``calls`` calls of variant ``name``: instructions (``Ir``)
    and, with ``cache_sim``, the simulated cache's misses (valgrind's event names)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "child.py"
        script.write_text(_CHILD.format(site=sysconfig.get_path("purelib"), bench=str(BENCH), root=str(ROOT)))
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--toggle-collect=functools_reduce",
             f"--cache-sim={'yes' if cache_sim else 'no'}", f"--callgrind-out-file={tmp}/out",
             sys.executable, str(script), name, str(calls)],
            capture_output=True, text=True, env=env, check=False, cwd=str(ROOT),
        )  # fmt: skip
    events = _EVENTS_RE.findall(proc.stderr)
    found = _COLLECTED_RE.findall(proc.stderr)
    if proc.returncode != 0 or not found or not events:
        raise RuntimeError(f"valgrind run of {name} failed (rc {proc.returncode}):\n{proc.stderr[-2000:]}")
    values = [int(v) for v in found[-1].split()]
    return {event: values[i] if i < len(values) else 0 for i, event in enumerate(events[-1].split())}


def estimated_cycles(events: dict[str, int]) -> int:
    """Instructions plus 10 a first-level miss and 100 a last-level miss (callgrind's estimate)."""
    l1 = events.get("I1mr", 0) + events.get("D1mr", 0) + events.get("D1mw", 0)
    ll = events.get("ILmr", 0) + events.get("DLmr", 0) + events.get("DLmw", 0)
    return events["Ir"] + 10 * l1 + 100 * ll


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--variant", action="append", choices=sorted(VARIANTS), help="default: all")
    ap.add_argument("--cache-sim", action="store_true", help="also simulate the caches: estimated cycles")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: no instruction counts (apt-get install valgrind)")
        return 0
    names = args.variant or list(VARIANTS)
    wanted = list(dict.fromkeys([*names, *(VARIANTS[n] for n in names)]))
    found = {name: counts(name, args.calls, args.cache_sim) for name in wanted}
    figures = {"instructions": {name: e["Ir"] / args.calls for name, e in found.items()}}
    if args.cache_sim:
        figures["est. cycles"] = {name: estimated_cycles(e) / args.calls for name, e in found.items()}
    print(f"request path per call (valgrind callgrind, the calling thread; {args.calls} calls)")
    print(f"{'variant':<22}" + "".join(f"{figure:>14}{'x floor':>9}" for figure in figures))
    for name in names:
        floor = VARIANTS[name]
        row = "".join(f"{per[name]:>14,.0f}{per[name] / per[floor]:>9.3f}" for per in figures.values())
        print(f"{name:<22}{row}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
