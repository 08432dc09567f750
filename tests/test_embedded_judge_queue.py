"""The embedded collector's judge queue: storage batches that wait behind a busy judge are
judged and stored together, and a flush or stop marker is never overtaken."""

from __future__ import annotations

from pathlib import Path

from ragpulse.collector.embedded.collector import EmbeddedCollector, _Marker


def _messages(prefix: str, n: int) -> list[dict[str, str]]:
    return [{"trace_id": f"{prefix}{i:031x}"} for i in range(n)]


def test_waiting_storage_batches_are_taken_as_one_judge_batch(tmp_path: Path) -> None:
    collector = EmbeddedCollector(tmp_path / "db", metrics_port=None, judge=None, install_sink=False)
    first, second, third = _messages("a", 30), _messages("b", 30), _messages("c", 30)
    for item in (first, second, third):
        collector._judge_q.put(item)
    messages, marker = collector._next_judge_batch(200)
    assert messages == first + second + third and marker is None
    assert collector._judge_q.empty()


def test_a_marker_ends_the_take_after_what_came_before_it(tmp_path: Path) -> None:
    collector = EmbeddedCollector(tmp_path / "db", metrics_port=None, judge=None, install_sink=False)
    before, after, flush = _messages("a", 10), _messages("b", 10), _Marker()
    for item in (before, flush, after):
        collector._judge_q.put(item)
    assert collector._next_judge_batch(200) == (before, flush)
    assert collector._next_judge_batch(200) == (after, None)
    stop = _Marker(stop=True)
    collector._judge_q.put(stop)
    assert collector._next_judge_batch(200) == ([], stop)


def test_the_take_stops_once_a_judge_batch_is_full(tmp_path: Path) -> None:
    collector = EmbeddedCollector(tmp_path / "db", metrics_port=None, judge=None, install_sink=False)
    items = [_messages(p, 150) for p in "abc"]
    for item in items:
        collector._judge_q.put(item)
    messages, marker = collector._next_judge_batch(200)
    assert messages == items[0] + items[1] and marker is None
    assert collector._next_judge_batch(200) == (items[2], None)
