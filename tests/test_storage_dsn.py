"""A chDB directory in ``storage.dsn`` relative to where the command runs.

``chdb://ragpulse-data/mine`` is how a shell user names a directory below the current one;
clickhouse-connect reads it as the directory ``ragpulse-data`` holding a database ``mine``, so
``ragpulse collect --no-kafka`` used to retry "Database mine does not exist" forever. The
config makes the directory absolute against the current directory; a chdb DSN naming no
directory, or the in-memory engine, is refused in one line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ragpulse.collector.config import ConfigError, load_config
from ragpulse.collector.storage.clickhouse import Storage

from tests.services import collect_no_kafka

RELATIVE = "chdb://ragpulse-data/mine"


def _dsn(value: str) -> str:
    return load_config(None, env={"RAGPULSE_STORAGE__DSN": value})["storage"]["dsn"]


def test_a_relative_directory_is_made_absolute_against_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _dsn(RELATIVE) == f"chdb://{tmp_path}/ragpulse-data/mine"
    assert (
        _dsn("chdb://./db/../chdb?config-file=/etc/chdb.xml")
        == f"chdb://{tmp_path}/chdb?config-file=/etc/chdb.xml"
    )
    assert _dsn("chdb://~/ragpulse") == f"chdb://{tmp_path}/home/ragpulse"
    # from a file too, and the same for every command that loads the config
    config = tmp_path / "ragpulse.yaml"
    config.write_text(f"storage:\n  dsn: {RELATIVE}\n")
    assert load_config(config, env={})["storage"]["dsn"] == f"chdb://{tmp_path}/ragpulse-data/mine"
    for unchanged in ("chdb:///var/lib/ragpulse/chdb?config-file=/etc/x.xml", "http://u:p@ch:8123/ragpulse"):
        assert _dsn(unchanged) == unchanged


@pytest.mark.parametrize(
    "dsn", ["chdb://", "chdb://?config-file=/etc/x.xml", "chdb://memory", "chdb://:memory:/db"]
)
def test_a_chdb_dsn_without_a_directory_is_refused_in_one_line(dsn: str) -> None:
    with pytest.raises(ConfigError) as err:
        _dsn(dsn)
    assert "storage.dsn" in str(err.value) and "\n" not in str(err.value)


def test_collect_no_kafka_stores_in_a_relative_directory(tmp_path: Path) -> None:
    """The command a newcomer types: it starts (its first line says where it listens), and the
    tables are in ./ragpulse-data/mine of the directory it ran in."""
    cfg = {"metrics": {"port": 0}, "receiver": {"port": 0}}
    env = {"RAGPULSE_STORAGE__DSN": RELATIVE}
    with collect_no_kafka(cfg, tmp_path / "ragpulse.yaml", cwd=tmp_path, env=env) as (_proc, first):
        assert first.startswith("collecting on http://"), first
    storage = Storage(f"chdb://{tmp_path}/ragpulse-data/mine")
    try:
        assert storage.query("SELECT count() FROM {db}.rag_traces") == [(0,)]
    finally:
        storage.close()
