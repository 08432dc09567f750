"""Rows of an embedded (chDB) database that another process had open.

chDB allows one database a process, so a test that has run the collector on an embedded
database reads the stored rows back in a Python process of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["stored_rows"]

_SCRIPT = (
    "import json, sys, clickhouse_connect\n"
    "c = clickhouse_connect.get_client(dsn='chdb://' + sys.argv[1])\n"
    "print(json.dumps([list(r) for r in c.query(sys.argv[2]).result_rows], default=str))\n"
    "c.close()\n"
)


def stored_rows(db: Path, sql: str, timeout: float = 120) -> list[list[Any]]:
    """The rows of ``sql`` on the database at ``db``, values JSON-decoded (others as ``str``)."""
    res = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(db), sql], capture_output=True, text=True, timeout=timeout
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])
