"""Writing the eval set back (``ragpulse export`` appending, ``ragpulse review`` saving a case):
the file keeps its permission bits, a symlinked eval set stays a link to the file it names, and
the atomic rename is made durable by syncing the folder it happened in."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from ragpulse.collector.export.writer import write_evalset
from ragpulse.collector.review.cases import apply_decision, case_digest, read_cases, save_case


def _case(cid: str) -> dict[str, Any]:
    return {"id": cid, "query": f"question {cid}", "gold_claims": ["a claim"], "split": "dev",
            "review": {"status": "proposed", "reviewer": None, "reviewed_at": None}}  # fmt: skip


def _review_first(path: Path) -> None:
    case = read_cases(path)[0]
    save_case(path, apply_decision(case, "accept", {}, "ann"), case_digest(case))


def test_a_0600_eval_set_stays_0600(tmp_path: Path) -> None:
    path = tmp_path / "evalset.jsonl"
    write_evalset(path, [_case("c1"), _case("c2")])
    path.chmod(0o600)
    _review_first(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_cases(path)[0]["review"]["reviewer"] == "ann"
    write_evalset(path, [_case("c3")])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [c["id"] for c in read_cases(path)] == ["c1", "c2", "c3"]
    path.chmod(0o640)
    write_evalset(path, [_case("c4")])
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_symlinked_eval_set_is_written_through_the_link(tmp_path: Path) -> None:
    data, work = tmp_path / "data", tmp_path / "work"
    data.mkdir()
    work.mkdir()
    target = data / "evalset.jsonl"
    write_evalset(target, [_case("c1")])
    link = work / "evalset.jsonl"
    link.symlink_to(target)
    _review_first(link)
    write_evalset(link, [_case("c2")])
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert [c["id"] for c in read_cases(target)] == ["c1", "c2"]
    assert read_cases(target)[0]["review"]["status"] == "reviewed"
    # Nothing beside the link: the temporary file and the lock live beside the file written.
    assert sorted(p.name for p in work.iterdir()) == ["evalset.jsonl"]
    assert not [p for p in data.iterdir() if ".tmp-" in p.name]


def test_the_rename_is_followed_by_an_fsync_of_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real os.replace and os.fsync run; a spy records what each touched, in order."""
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        kind = "dir" if stat.S_ISDIR(st.st_mode) else "file"
        events.append((f"fsync {kind}", f"{st.st_dev}:{st.st_ino}"))
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        real_replace(src, dst)
        events.append(("replace", str(dst)))

    path = tmp_path / "sets" / "evalset.jsonl"
    write_evalset(path, [_case("c1")])
    folder = path.parent.stat()
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    _review_first(path)
    kinds = [e[0] for e in events]
    assert kinds == ["fsync file", "replace", "fsync dir"], events
    assert events[-1][1] == f"{folder.st_dev}:{folder.st_ino}"
    assert json.loads(path.read_text().splitlines()[0])["review"]["reviewer"] == "ann"
