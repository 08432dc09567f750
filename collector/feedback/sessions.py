"""The re-ask detector's memory: each session's recent calls, bounded in time, per session and in all.

Re-ask detection compares a new call with the latest earlier calls of its
session inside the window. Reading those from ClickHouse on every batch costs
the ingest path a query per batch (and more as the table grows), so the
detector keeps them here instead (or in ``ragpulse_native.ReaskIndex``, which
has the same interface, :meth:`SessionIndex.add_calls` and
:meth:`SessionIndex.detect`, and the same results). What it holds, and why it
stays small:

* per session at most ``lookback`` calls, the latest by time (a busy session
  costs a bounded number of comparisons per new call);
* a session whose newest call is older than the newest call seen minus the
  window can no longer be matched by new traffic, and is forgotten;
* at most ``max_calls`` calls in all: beyond that the least recently active
  session is dropped first and its calls are counted in :attr:`evicted`
  (``ragpulse_reask_index_evicted_total``), since a re-ask against them is
  then missed.

A call is kept as its time, trace id, service, normalised query and a
signature of its character shingles (a few hundred bytes in all). Most pairs
of calls in a session are different questions, and comparing shingle sets is
what detection spends its time on, so :func:`may_match` first bounds the
similarity from the two signatures (each shingle hashed to one of
``_SIGNATURE_BITS`` bits): a bit set in one signature and not the other stands
for at least one shingle the other call lacks, so ``|a ∩ b| <= |a| - popcount(A
& ~B)`` and ``<= |b| - popcount(B & ~A)``, hence ``|a ∩ b| <= (|a| + |b| -
popcount(A ^ B)) / 2``; a pair whose bound is below the threshold cannot match.
Only the pairs left are compared exactly.

Most calls have no earlier call that comes near, so :meth:`SessionIndex.could_match`
first applies the bound to a whole batch at once (numpy): each call against every
call the index holds for its session and every earlier call of the batch in it, a
superset of what :meth:`SessionIndex.earlier` will read for it. It reads each
signature folded to 128 bits (:func:`sketches`: bit ``k`` of every other 64-bit word
OR-ed together), which only loosens the bound: a folded bit set in one call and not
the other still stands for a shingle of the first alone, and distinct folded bits
for distinct shingles. A call none of those may match needs no look at all.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..core.text import jaccard, normalize_query, shingles

__all__ = ["Earlier", "SessionIndex", "feature_of", "features", "may_match", "records", "sketches"]

_SIGNATURE_LOG2 = 10
_SIGNATURE_BITS = 1 << _SIGNATURE_LOG2  # 65 shingles (a 60-character question) share a bit in ~2 pairs
_SIGNATURE_BYTES = _SIGNATURE_BITS // 8
_MULTIPLIER = 0x9E3779B97F4A7C15  # Fibonacci hashing
_MASK64 = (1 << 64) - 1


class Earlier(NamedTuple):
    """One call the index holds: ``size`` distinct shingles, hashed into ``signature``."""

    time: int
    trace_id: str
    service: str
    normalized: str
    size: int
    signature: int
    sketch: bytes  # the signature folded to 128 bits (see sketches())


def _code(gram: str) -> int:
    """A shingle as a number: its characters' code points, 21 bits each."""
    code = 0
    for ch in gram:
        code = code << 21 | ord(ch)
    return code


def _bit(code: int) -> int:
    """The signature bit of a shingle code (the top bits of a multiplicative hash)."""
    return ((code * _MULTIPLIER) & _MASK64) >> (64 - _SIGNATURE_LOG2)


def feature_of(normalized: str) -> tuple[int, int]:
    """(distinct shingles, signature) of one normalised text, in Python."""
    grams = shingles(normalized)
    return len(grams), sum(1 << b for b in {_bit(_code(g)) for g in grams})


def features(normalized: Sequence[str]) -> list[tuple[int, int]]:
    """(distinct shingles, signature) of each normalised text, as :func:`~..export.text.shingles`
    makes them. ASCII texts of a batch are done together with numpy (the per-shingle work in
    C); the others one by one, with the same codes and bits."""
    texts = [f" {n} " for n in normalized]
    out: list[tuple[int, int]] = [(0, 0)] * len(texts)
    bulk = [k for k, t in enumerate(texts) if len(t) > 3 and t.isascii()]
    for k in set(range(len(texts))).difference(bulk):
        out[k] = feature_of(normalized[k])
    if bulk:
        for k, feature in zip(bulk, _ascii_features([texts[k] for k in bulk]), strict=True):
            out[k] = feature
    return out


def _ascii_features(texts: list[str]) -> list[tuple[int, int]]:
    import numpy as np

    n = len(texts)
    owner = np.repeat(np.arange(n, dtype=np.uint64), [len(t) for t in texts])
    chars = np.frombuffer("".join(texts).encode("ascii"), np.uint8).astype(np.uint64)
    inside = owner[:-2] == owner[2:]  # the three characters belong to one text
    owner, first, second, third = (
        owner[:-2][inside],
        chars[:-2][inside],
        chars[1:-1][inside],
        chars[2:][inside],
    )
    codes = first << np.uint64(42) | second << np.uint64(21) | third  # as _code()
    bits = (codes * np.uint64(_MULTIPLIER)) >> np.uint64(64 - _SIGNATURE_LOG2)  # as _bit()
    # distinct (text, shingle) pairs count the shingles (ASCII: 7 bits a character)
    distinct = _distinct(owner << np.uint64(21) | first << np.uint64(14) | second << np.uint64(7) | third)
    sizes = np.bincount((distinct >> np.uint64(21)).astype(np.intp), minlength=n)
    # the signatures: one row of bits per text, set where its shingles hash (repeats set a bit
    # again), packed little-endian as _bit() numbers them
    mask = np.zeros((n, _SIGNATURE_BITS), np.bool_)
    mask[owner.astype(np.intp), bits.astype(np.intp)] = True
    raw, step = np.packbits(mask, axis=1, bitorder="little").tobytes(), _SIGNATURE_BITS // 8
    counts = sizes.tolist()
    return [(counts[k], int.from_bytes(raw[k * step : (k + 1) * step], "little")) for k in range(n)]


def _popcount(words: Any) -> Any:
    """The set bits of each uint64 (numpy 2's bitwise_count; a byte table before it)."""
    import numpy as np

    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words)
    table = np.array([bin(b).count("1") for b in range(256)], np.uint8)
    return table[words.view(np.uint8)].reshape(*words.shape, 8).sum(axis=-1)


def sketches(signatures: Sequence[int]) -> list[bytes]:
    """Each signature folded to 128 bits: its 64-bit words at even places OR-ed into the first
    word, those at odd places into the second (16 bytes, little-endian)."""
    import numpy as np

    if not signatures:
        return []
    words = np.frombuffer(
        b"".join(s.to_bytes(_SIGNATURE_BYTES, "little") for s in signatures), np.uint64
    ).reshape(len(signatures), -1, 2)
    raw = np.bitwise_or.reduce(words, axis=1).tobytes()
    return [raw[16 * k : 16 * k + 16] for k in range(len(signatures))]


def records(calls: Sequence[Any]) -> list[Earlier]:
    """The index's records of ``Call`` tuples (trace_id, session_id, time, query, service)."""
    normalized = [normalize_query(c.query) for c in calls]
    found = features(normalized)
    return [
        Earlier(c.time, c.trace_id, c.service, norm, size, sig, sketch)
        for c, norm, (size, sig), sketch in zip(
            calls, normalized, found, sketches([sig for _, sig in found]), strict=True
        )
    ]


def _distinct(values: Any) -> Any:
    """The distinct values of a numpy array, sorted (a sort: faster here than np.unique's hash)."""
    import numpy as np

    values = np.sort(values)
    keep = np.empty(len(values), bool)
    keep[:1] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def may_match(a: Earlier, b: Earlier, threshold: float) -> bool:
    """False when the two calls' shingle sets cannot reach Jaccard ``threshold`` (see above)."""
    total = a.size + b.size
    common = (total - (a.signature ^ b.signature).bit_count()) / 2
    return common >= threshold * (total - common) - 1e-9


class SessionIndex:
    """See the module docstring. Used by one thread at a time (the batch's storage step)."""

    def __init__(self, window_ns: int, lookback: int, max_calls: int) -> None:
        if lookback < 1 or max_calls < 1:
            raise ValueError("lookback and max_calls must be at least 1")
        self.window_ns = window_ns
        self.lookback = lookback
        self.max_calls = max_calls
        self._sessions: OrderedDict[str, list[Earlier]] = OrderedDict()  # least recently active first
        self.calls = 0  # calls held (ragpulse_reask_index_calls)
        self.evicted = 0  # calls dropped for the cap before their window ended
        self.newest = 0  # the newest call time seen (ns)

    def __len__(self) -> int:
        return self.calls

    def add_calls(self, calls: Sequence[Any]) -> None:
        """Hold each of ``calls`` (``Call`` tuples), in order."""
        for c, call in zip(calls, records(calls), strict=True):
            self.add(c.session_id, call)

    def detect(self, calls: Sequence[Any], threshold: float) -> list[tuple[int, str, str]]:
        """For each of ``calls`` (``Call`` tuples, in time order): the latest earlier call it
        re-asks, then hold it. Returns ``(position in calls, earlier trace id, earlier service)``
        of each re-ask found."""
        held = records(calls)
        near = self.could_match([(c.session_id, e) for c, e in zip(calls, held, strict=True)], threshold)
        found = []
        for k, (c, call, possible) in enumerate(zip(calls, held, near, strict=True)):
            earlier = self._match(c.session_id, call, threshold) if possible else None
            if earlier is not None:
                found.append((k, earlier.trace_id, earlier.service))
            self.add(c.session_id, call)
        return found

    def _match(self, session_id: str, call: Earlier, threshold: float) -> Earlier | None:
        """The latest earlier call of the session (in the window) that ``call`` re-asks, or None."""
        grams = None
        for e in self.earlier(session_id, call, threshold):
            grams = grams or shingles(call.normalized)
            if e.trace_id != call.trace_id and jaccard(grams, shingles(e.normalized)) >= threshold:
                return e
        return None

    def earlier(self, session_id: str, call: Earlier, threshold: float = 0.0) -> list[Earlier]:
        """The session's calls before ``call`` and at most the window before it, newest first,
        that :func:`may_match` it at ``threshold`` (0: all of them)."""
        entries = self._sessions.get(session_id)
        if not entries:
            return []
        end = bisect.bisect_left(entries, (call.time,))
        low = call.time - self.window_ns
        size, sig = call.size, call.signature
        out = []
        for e in reversed(entries[max(0, end - self.lookback) : end]):
            if e.time < low:
                break
            total = size + e.size  # may_match() inlined: up to ``lookback`` times per new call
            common = (total - (sig ^ e.signature).bit_count()) / 2
            if common >= threshold * (total - common) - 1e-9:
                out.append(e)
        return out

    def could_match(self, batch: Sequence[tuple[str, Earlier]], threshold: float) -> list[bool]:
        """For each call of ``batch`` (``(session id, call)`` in the order they will be added), False
        when no call the index holds for its session and no earlier call of the batch in it can
        :func:`may_match` it at ``threshold``. :meth:`earlier` reads a subset of those calls (the
        index only gains the batch's calls meanwhile), so it would find nothing for such a call."""
        import numpy as np

        if not batch:
            return []
        members: dict[str, list[int]] = {}
        for k, (sid, _) in enumerate(batch):
            members.setdefault(sid, []).append(k)
        # Nodes grouped by session: its held calls, then its batch calls in batch order. The i-th
        # batch call of a session is compared with the nodes of its group before it.
        nodes: list[Earlier] = []
        node_of = [0] * len(batch)
        first = [0] * len(batch)
        for sid, ks in members.items():
            start = len(nodes)
            nodes.extend(self._sessions.get(sid) or ())
            for k in ks:
                first[k], node_of[k] = start, len(nodes)
                nodes.append(batch[k][1])
        counts = np.asarray(node_of, np.intp) - np.asarray(first, np.intp)
        if not counts.any():
            return [False] * len(batch)
        owner = np.repeat(np.arange(len(batch)), counts)
        offset = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
        later = np.asarray(node_of, np.intp)[owner]
        before = np.asarray(first, np.intp)[owner] + offset
        signatures = np.frombuffer(b"".join(e.sketch for e in nodes), np.uint64).reshape(len(nodes), 2)
        sizes = np.fromiter((e.size for e in nodes), np.float64, len(nodes))
        differ = _popcount(signatures[later] ^ signatures[before]).sum(axis=1)
        total = sizes[later] + sizes[before]
        common = (total - differ) / 2  # as may_match(), in the same float64 operations
        near = common >= threshold * (total - common) - 1e-9
        return (np.bincount(owner[near], minlength=len(batch)) > 0).tolist()

    def add(self, session_id: str, call: Earlier) -> None:
        """Hold ``call`` (once per trace id: replays and stored copies of a held call are no-ops)."""
        entries = self._sessions.get(session_id)
        if entries is None:
            entries = self._sessions[session_id] = []
        else:
            self._sessions.move_to_end(session_id)
        at = bisect.bisect_left(entries, (call.time, call.trace_id))
        if at < len(entries) and entries[at].trace_id == call.trace_id:
            return
        entries.insert(at, call)
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
