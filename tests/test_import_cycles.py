"""No import cycles in agent/ and collector/.

Every import of the project's own code is walked: relative and absolute, at the top of a module,
inside functions and under ``if TYPE_CHECKING:`` alike, since an import deferred into a function
still ties the two modules together and only hides the cycle from the interpreter. A module
depends on the module it names: ``from .pkg import name`` on ``pkg/name.py`` when that file
exists, else on ``pkg/__init__.py``. Each strongly connected group of modules is a cycle and
is reported with one loop through it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the walked folders and the dotted packages they install as (pyproject.toml's package-dir)
WALKED = {"ragpulse.agent": ROOT / "agent", "ragpulse.collector": ROOT / "collector"}


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the walked folders."""
    out = {}
    for package, folder in WALKED.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package, *parts])] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The walked modules that module ``name`` (file ``path``) imports, anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            targets = [
                f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules else origin for a in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # `import a.b.c` of a name inside a module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the walked modules it imports."""
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def loop_through(group: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One closed path through ``group``'s first module, for the failure message."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    return [*paths[node], start]
                if child not in paths:
                    paths[child] = [*paths[node], child]
                    nxt.append(child)
        frontier = nxt
    return group


def test_the_walk_sees_imports_of_every_kind() -> None:
    graph = import_graph()
    assert "ragpulse.collector.judge.local.judge" in graph["ragpulse.collector.judge"]  # in a function
    assert "ragpulse.collector.contract" in graph["ragpulse.collector.judge.record"]  # relative
    assert "ragpulse.agent.conventions" in graph["ragpulse.collector.ingest.build"]  # across packages


def test_no_import_cycles() -> None:
    graph = import_graph()
    found = [" -> ".join(loop_through(group, graph)) for group in cycles(graph)]
    assert not found, "import cycles:\n" + "\n".join(found)
