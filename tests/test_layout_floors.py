"""The collector's folders depend downward: at most two pairs of folders import each other.

A folder of ``collector/`` (a stage: ingest, storage, serve, ...) may import the ground floor
(``collector/core``, the top-level contract and config) and stages below it; when two folders
import each other, neither can be read or changed alone. Two pairs are allowed, because in each
the two sides are one feature seen from two ends:

* ``cli`` <-> ``demo``: the demo runs the CLI's own commands (export, eval) as a user would,
  and the ``ragpulse demo`` command is the CLI's entry to it;
* ``feedback`` <-> ``kafka``: the Kafka process runs the feedback sink in its loop, and the
  ``ragpulse feedback`` importer publishes the traces it re-queues to the judge topic.

``core`` itself imports no other folder.
"""

from __future__ import annotations

from tests.test_import_cycles import import_graph

ALLOWED_PAIRS = {("cli", "demo"), ("feedback", "kafka")}
PREFIX = "ragpulse.collector."


def _folder(module: str) -> str | None:
    """The collector folder a module lives in, None for the top-level modules."""
    if not module.startswith(PREFIX):
        return None
    parts = module[len(PREFIX) :].split(".")
    return parts[0] if len(parts) > 1 else None


def folder_edges() -> dict[tuple[str, str], list[str]]:
    """(importing folder, imported folder) -> the module imports that make the edge."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, targets in import_graph().items():
        src = _folder(module)
        for target in targets:
            dst = _folder(target)
            if src and dst and src != dst:
                edges.setdefault((src, dst), []).append(f"{module} -> {target}")
    return edges


def test_at_most_two_folder_pairs_import_each_other() -> None:
    edges = folder_edges()
    mutual = {tuple(sorted(pair)) for pair in edges if pair[::-1] in edges}
    extra = mutual - ALLOWED_PAIRS
    detail = [line for a, b in sorted(extra) for line in edges[(a, b)] + edges[(b, a)]]
    assert not extra, "folders importing each other:\n" + "\n".join(detail)
    assert len(mutual) <= 2


def test_core_imports_no_stage() -> None:
    upward = [line for (src, _), lines in folder_edges().items() if src == "core" for line in lines]
    assert not upward, "collector/core imports a stage:\n" + "\n".join(upward)


def test_the_walk_sees_folder_edges() -> None:
    edges = folder_edges()
    assert ("ingest", "core") in edges and ("storage", "core") in edges
    assert ("kafka", "ingest") in edges
