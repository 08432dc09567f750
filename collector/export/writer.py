"""Writing the eval-set file: append new cases, never touch existing lines; the manifest beside it.

An existing file's lines are kept byte for byte (a ``reviewed`` case, edited
by hand, survives every later export unchanged); a new case whose id is
already in the file is skipped. New records are serialised with a fixed key
order and compact separators, so the same data always gives the same bytes.
The file is replaced atomically (written beside it, then renamed), under an
exclusive lock (:func:`evalset_lock`) that ``ragpulse review`` takes too while
it writes a reviewed case back: the file is re-read under the lock, so an
export appending and a reviewer saving never lose each other's writes.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "atomic_write",
    "evalset_lock",
    "read_existing",
    "record_line",
    "write_evalset",
    "write_manifest",
    "manifest_path",
]


def record_line(record: dict[str, Any]) -> bytes:
    """One JSONL line, deterministic for the record."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def read_existing(path: Path) -> tuple[list[bytes], set[str]]:
    """(lines, case ids) of an existing eval set; ValueError names a line that is not a case."""
    if not path.exists():
        return [], set()
    lines, ids = [], set()
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except ValueError as exc:
                raise ValueError(f"{path}:{n}: not JSON ({exc.msg})") from None
            if not isinstance(rec, dict) or not isinstance(rec.get("id"), str):
                raise ValueError(f"{path}:{n}: an eval-set case needs a string 'id'")
            lines.append(raw if raw.endswith(b"\n") else raw + b"\n")
            ids.add(rec["id"])
    return lines, ids


def _target(path: Path) -> Path:
    """The file ``path`` names: a symlinked eval set is written (and locked) at its target, so the
    link stays a link and two links to one file share one lock."""
    return Path(os.path.realpath(path))


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: written beside it, flushed, renamed over it, and the rename
    made durable by syncing the folder. A symlink is followed (its target is replaced, the link
    kept); an existing file keeps its permission bits (a 0600 eval set stays 0600), a new one gets
    the process's default mode."""
    target = _target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = None
    try:
        with tmp.open("wb") as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)


def _sync_folder(folder: Path) -> None:
    """fsync a folder, so a rename inside it survives a crash (POSIX: the entry lives in the folder)."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def evalset_lock(path: Path) -> Iterator[None]:
    """Hold the eval set's exclusive advisory lock (``flock`` on ``.NAME.lock`` beside it, or beside
    its target when it is a symlink) for one read-modify-write of the file."""
    target = _target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.with_name(f".{target.name}.lock").open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def write_evalset(path: Path, records: list[dict[str, Any]]) -> int:
    """Append ``records`` whose id the file does not hold yet, keeping the file's lines as they are
    (re-read under the lock); returns how many records were appended."""
    with evalset_lock(path):
        existing, ids = read_existing(path)
        new = [r for r in records if r["id"] not in ids]
        atomic_write(path, b"".join(existing) + b"".join(record_line(r) for r in new))
    return len(new)


def manifest_path(path: Path) -> Path:
    """``evalset.jsonl`` -> ``evalset.manifest.json`` (beside the file)."""
    return path.with_name(path.stem + ".manifest.json")


def write_manifest(path: Path, manifest: dict[str, Any]) -> Path:
    target = manifest_path(path)
    atomic_write(target, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
    return target
