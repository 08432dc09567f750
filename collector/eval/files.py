"""Reading eval sets and run files, validated against docs/evalset.schema.json.

The schema is the contract between ``ragpulse export`` (which writes eval sets)
and ``ragpulse eval`` (which reads them); this module ships it as package data
(a link to the docs/ copy, so there is one definition) and validates every
line, naming the file and line of the first problem.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

__all__ = [
    "EvalInputError",
    "load_schema",
    "read_jsonl",
    "load_evalset",
    "load_run",
    "write_jsonl",
    "without_rejected",
]

SCHEMA_FILE = "evalset.schema.json"
SCHEMA_ID = "urn:ragpulse:evalset"


class EvalInputError(ValueError):
    """An eval set, run or gate file that cannot be used (the message names file and line)."""


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    """The eval-set JSON Schema (case at the top level, ``$defs/run_record`` for run lines)."""
    return json.loads(resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))


@lru_cache(maxsize=2)
def _validator(kind: str) -> Draft202012Validator:
    schema = load_schema()
    if kind == "case":
        return Draft202012Validator(schema)
    registry = Registry().with_resource(SCHEMA_ID, Resource.from_contents(schema))
    return Draft202012Validator({"$ref": f"{SCHEMA_ID}#/$defs/{kind}"}, registry=registry)


def read_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object) for each non-blank line; a bad line raises EvalInputError."""
    try:
        fh = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise EvalInputError(f"cannot read {path}: {exc.strerror}") from exc
    with fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except ValueError as exc:
                raise EvalInputError(f"{path}:{n}: not JSON ({exc.msg})") from exc


def _check(path: str | Path, n: int, obj: Any, kind: str) -> None:
    error = next(iter(sorted(_validator(kind).iter_errors(obj), key=lambda e: list(e.path))), None)
    if error is not None:
        where = "/".join(str(p) for p in error.path) or "(line)"
        raise EvalInputError(f"{path}:{n}: {where}: {error.message}")


def load_evalset(path: str | Path) -> list[dict[str, Any]]:
    """The cases of an eval-set JSONL file, validated; case ids must be unique."""
    cases: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n, obj in read_jsonl(path):
        _check(path, n, obj, "case")
        if obj["id"] in seen:
            raise EvalInputError(f"{path}:{n}: duplicate case id {obj['id']!r}")
        seen.add(obj["id"])
        cases.append(obj)
    if not cases:
        raise EvalInputError(f"{path}: no cases")
    return cases


def without_rejected(cases: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """(cases a reviewer did not reject, how many were rejected): ``ragpulse review`` marks a case
    ``review.status: rejected`` when it is no test at all, and the eval skips it."""
    kept = [c for c in cases if (c.get("review") or {}).get("status") != "rejected"]
    if not kept:
        raise EvalInputError("every case of the eval set is rejected: nothing to evaluate")
    return kept, len(cases) - len(kept)


def load_run(path: str | Path, case_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """A run file's records by case id, validated; every record must name a case of the eval set."""
    known = set(case_ids)
    out: dict[str, dict[str, Any]] = {}
    for n, obj in read_jsonl(path):
        _check(path, n, obj, "run_record")
        cid = obj["case_id"]
        if cid not in known:
            raise EvalInputError(f"{path}:{n}: case_id {cid!r} is not in the eval set")
        if cid in out:
            raise EvalInputError(f"{path}:{n}: a second record for case {cid!r}")
        out[cid] = obj
    return out


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> None:
    """Write one JSON object per line (UTF-8)."""
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
