"""The engine configuration the collector gives its embedded chDB.

ClickHouse removes outdated data parts on a pool of extra threads once 100 or
more are due at once (the MergeTree setting ``concurrent_part_removal_threshold``),
and chDB removes parts as soon as a merge replaces them (``old_parts_lifetime``
0), so a merge of many small inserts triggers it. The global thread pool then
keeps those ~126 threads idle for the life of the process, each holding three
open ``/proc/PID/task/TID`` files: the 3-minute soak saw 30 -> 156 threads and
the 30-minute one 47 -> 413 descriptors. Removing a part is a few unlinks on a
local disk, so the collector has the cleanup thread remove them itself (a
threshold no batch reaches). Neither ``max_parts_cleaning_thread_pool_size``
nor ``max_thread_pool_free_size`` bounds this in chDB (measured: no effect).

The setting has to be in a configuration file (chDB ignores ``merge_tree.*``
startup options), so the collector writes one into the database directory and
passes it as ``config-file``. A user's own ``config-file`` is copied there with
the default added, unless it sets the value itself (then it is passed unchanged).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

__all__ = ["MERGE_TREE_DEFAULTS", "ENGINE_CONFIG_NAME", "engine_options"]

MERGE_TREE_DEFAULTS: dict[str, str] = {"concurrent_part_removal_threshold": "1000000"}
ENGINE_CONFIG_NAME = "ragpulse-engine.xml"


def _merged(user_config: str | None) -> ET.ElementTree | None:
    """The user's configuration (or an empty one) with the defaults it lacks; None when it lacks none."""
    tree = ET.parse(user_config) if user_config else ET.ElementTree(ET.Element("clickhouse"))
    root = tree.getroot()
    merge_tree = root.find("merge_tree")
    if merge_tree is None:
        merge_tree = ET.SubElement(root, "merge_tree")
    missing = {k: v for k, v in MERGE_TREE_DEFAULTS.items() if merge_tree.find(k) is None}
    if not missing:
        return None
    for key, value in missing.items():
        ET.SubElement(merge_tree, key).text = value
    return tree


def engine_options(path: str, options: dict[str, str]) -> dict[str, str]:
    """chDB startup options for the database at ``path`` given the DSN's ``options``: the same,
    with ``config-file`` pointing at a file that carries :data:`MERGE_TREE_DEFAULTS`."""
    user_config = options.get("config-file")
    tree = _merged(user_config)
    if tree is None:  # the user's file sets every default itself
        return options
    target = Path(path) / ENGINE_CONFIG_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    ET.indent(tree)
    text = ET.tostring(tree.getroot(), encoding="unicode") + "\n"
    if not target.exists() or target.read_text() != text:
        target.write_text(text)
    return {**options, "config-file": str(target)}
