"""The MergeTree defaults the collector gives its embedded chDB (``collector.storage.chdb_engine``):
added to the engine's configuration unless the user's ``config-file`` sets them, seen by the
engine (real chDB)."""

from __future__ import annotations

from pathlib import Path

from ragpulse.collector.storage.chdb_engine import ENGINE_CONFIG_NAME, MERGE_TREE_DEFAULTS, engine_options
from ragpulse.collector.storage.clickhouse import Storage

KEY = "concurrent_part_removal_threshold"


def _merge_tree_setting(st: Storage) -> str:
    return st.query("SELECT value FROM system.merge_tree_settings WHERE name = %(n)s", {"n": KEY})[0][0]


def test_the_user_config_file_is_kept_and_its_own_value_wins(tmp_path: Path) -> None:
    storage_cfg = "<storage_configuration><disks><default><keep_free_space_bytes>7</keep_free_space_bytes>"
    user = tmp_path / "chdb.xml"
    user.write_text(f"<clickhouse>{storage_cfg}</default></disks></storage_configuration></clickhouse>")
    options = engine_options(str(tmp_path / "db"), {"config-file": str(user), "verbose": "1"})
    written = Path(options["config-file"])
    assert written == tmp_path / "db" / ENGINE_CONFIG_NAME and options["verbose"] == "1"
    text = written.read_text()
    assert "<keep_free_space_bytes>7</keep_free_space_bytes>" in text and f"<{KEY}>" in text
    own = tmp_path / "own.xml"
    own.write_text(f"<clickhouse><merge_tree><{KEY}>50</{KEY}></merge_tree></clickhouse>")
    assert engine_options(str(tmp_path / "db2"), {"config-file": str(own)}) == {"config-file": str(own)}


def test_the_embedded_engine_runs_with_the_default_or_the_users_value(tmp_path: Path) -> None:
    """Whether it keeps threads flat is the soak's to show (tests/test_soak.py): chDB removes
    outdated parts tens of seconds after a merge, too slow for a unit test."""
    st = Storage(f"chdb://{tmp_path / 'db'}")
    try:
        assert _merge_tree_setting(st) == MERGE_TREE_DEFAULTS[KEY]
    finally:
        st.close()
    own = tmp_path / "own.xml"
    own.write_text(f"<clickhouse><merge_tree><{KEY}>50</{KEY}></merge_tree></clickhouse>")
    st = Storage(f"chdb://{tmp_path / 'db2'}?config-file={own}")
    try:
        assert _merge_tree_setting(st) == "50"
    finally:
        st.close()
