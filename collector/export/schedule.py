"""``ragpulse export --schedule weekly --state DIR``: one export per completed week, catching up.

Weeks are aligned to Monday 00:00 UTC. The state file (``DIR/export-state.json``)
records the end of the last week exported. Each run exports every completed
week after it, one run per week in order, so a missed week (the CronJob did not
run, the cluster was down) is caught up by the next run, and a run twice in
the same week does nothing new. Without a state file the last completed week
is exported. The documented cron line runs it every Monday at 02:00 UTC:
``0 2 * * 1 ragpulse export --schedule weekly --state /var/lib/ragpulse/export -o /data/evalset.jsonl``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

__all__ = ["WEEK_NS", "week_start", "due_windows", "load_state", "save_state"]

WEEK_NS = 7 * 86_400 * 1_000_000_000
_STATE = "export-state.json"


def week_start(now_ns: int) -> int:
    """Monday 00:00 UTC of the week holding ``now_ns``, in nanoseconds."""
    day = datetime.fromtimestamp(now_ns / 1e9, tz=timezone.utc).date()
    monday = datetime(day.year, day.month, day.day, tzinfo=timezone.utc) - timedelta(days=day.weekday())
    return int(monday.timestamp()) * 1_000_000_000


def load_state(state_dir: Path) -> dict[str, Any]:
    path = state_dir / _STATE
    if not path.exists():
        return {"last_until_ns": None, "runs": []}
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or "last_until_ns" not in data:
        raise ValueError(f"{path}: not an export state file")
    return data


def save_state(state_dir: Path, state: dict[str, Any]) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    tmp = state_dir / f".{_STATE}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, state_dir / _STATE)


def due_windows(last_until_ns: int | None, now_ns: int) -> list[tuple[int, int]]:
    """The completed weeks to export now: after ``last_until_ns`` (or the last one), in order."""
    end = week_start(now_ns)
    start = end - WEEK_NS if last_until_ns is None else last_until_ns
    return [(lo, lo + WEEK_NS) for lo in range(start, end - WEEK_NS + 1, WEEK_NS)]


def run_scheduled(state_dir: Path, now_ns: int, export: Callable[[int, int], str]) -> list[str]:
    """Export each due week with ``export(since_ns, until_ns) -> run id``, saving the state after each."""
    state = load_state(state_dir)
    done = []
    for lo, hi in due_windows(state.get("last_until_ns"), now_ns):
        run_id = export(lo, hi)
        state["last_until_ns"] = hi
        state.setdefault("runs", []).append({"since_ns": lo, "until_ns": hi, "export_run": run_id})
        save_state(state_dir, state)
        done.append(run_id)
    return done
