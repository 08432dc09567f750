"""The re-ask detector's memory: each session's recent calls, bounded in time, per session and in all.

Re-ask detection compares a new call with the latest earlier calls of its
session inside the window. Reading those from ClickHouse on every batch costs
the ingest path a query per batch (and more as the table grows), so the
detector keeps them here instead. What it holds, and why it stays small:

* per session at most ``lookback`` calls, the latest by time (a busy session
  costs a bounded number of comparisons per new call);
* a session whose newest call is older than the newest call seen minus the
  window can no longer be matched by new traffic, and is forgotten;
* at most ``max_calls`` calls in all: beyond that the least recently active
  session is dropped first and its calls are counted in :attr:`evicted`
  (``ragpulse_reask_index_evicted_total``), since a re-ask against them is
  then missed.

A call is kept as its time, trace id, service and normalised query (a few
hundred bytes); the character shingles a comparison needs are made on demand
and cached for the most recently compared calls only.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from typing import NamedTuple

from ..export.text import shingles

__all__ = ["Earlier", "SessionIndex"]

_SHINGLE_CACHE = 4096  # shingle sets kept (a few KB each): the calls compared most recently


class Earlier(NamedTuple):
    """One call the index holds."""

    time: int
    trace_id: str
    service: str
    normalized: str


class SessionIndex:
    """See the module docstring. Used by one thread at a time (the batch's storage step)."""

    def __init__(self, window_ns: int, lookback: int, max_calls: int) -> None:
        if lookback < 1 or max_calls < 1:
            raise ValueError("lookback and max_calls must be at least 1")
        self.window_ns = window_ns
        self.lookback = lookback
        self.max_calls = max_calls
        self._sessions: OrderedDict[str, list[Earlier]] = OrderedDict()  # least recently active first
        self._shingles: OrderedDict[str, frozenset[str]] = OrderedDict()
        self.calls = 0  # calls held (ragpulse_reask_index_calls)
        self.evicted = 0  # calls dropped for the cap before their window ended
        self.newest = 0  # the newest call time seen (ns)

    def __len__(self) -> int:
        return self.calls

    def earlier(self, session_id: str, time_ns: int) -> list[Earlier]:
        """The session's calls before ``time_ns`` and at most the window before it, newest first."""
        entries = self._sessions.get(session_id)
        if not entries:
            return []
        end = bisect.bisect_left(entries, (time_ns,))
        low = time_ns - self.window_ns
        out = []
        for e in reversed(entries[max(0, end - self.lookback) : end]):
            if e.time < low:
                break
            out.append(e)
        return out

    def shingles_of(self, call: Earlier) -> frozenset[str]:
        """The call's character shingles (cached for the most recently compared calls)."""
        cache = self._shingles
        grams = cache.get(call.trace_id)
        if grams is None:
            grams = cache[call.trace_id] = frozenset(shingles(call.normalized))
            if len(cache) > _SHINGLE_CACHE:
                cache.popitem(last=False)
        else:
            cache.move_to_end(call.trace_id)
        return grams

    def add(self, session_id: str, call: Earlier) -> None:
        """Hold ``call`` (once per trace id: replays and stored copies of a held call are no-ops)."""
        entries = self._sessions.get(session_id)
        if entries is None:
            entries = self._sessions[session_id] = []
        else:
            self._sessions.move_to_end(session_id)
        if any(e.trace_id == call.trace_id for e in entries):
            return
        bisect.insort(entries, call)
        self.calls += 1
        if len(entries) > self.lookback:
            del entries[0]
            self.calls -= 1
        if call.time > self.newest:
            self.newest = call.time
        self._forget_expired()
        while self.calls > self.max_calls:
            _, dropped = self._sessions.popitem(last=False)
            self.calls -= len(dropped)
            self.evicted += len(dropped)

    def _forget_expired(self) -> None:
        """Drop the least recently active sessions while their newest call is out of the window."""
        sessions = self._sessions
        low = self.newest - self.window_ns
        while sessions:
            sid, entries = next(iter(sessions.items()))
            if entries[-1].time >= low:
                return
            del sessions[sid]
            self.calls -= len(entries)
