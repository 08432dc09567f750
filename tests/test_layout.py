"""The layout rules: small modules, short functions, and imports that name files by their paths.

Outside tests/, no module is over 500 lines and no function or method over 80. In the packages
(pyproject.toml's ``package-dir``), every import of the project's own code is relative and leads
to its file by the folders alone (docs/architecture.md). Two imports are absolute on purpose:
the collector's demo imports its application, ``ragpulse.policy_rag``, and that application
(examples/policy_rag) uses the public agent API, ``ragpulse.agent``, as a user's code does.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
# importing package -> the project's packages it imports absolutely
ABSOLUTE = {"ragpulse.collector": {"ragpulse.policy_rag"}, "ragpulse.policy_rag": {"ragpulse.agent"}}
_SKIPPED_DIRS = {"tests", "build", "dist", "node_modules", "target"}


def _package_dirs() -> dict[str, Path]:
    """``package-dir`` of pyproject.toml: dotted package -> its folder."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.startswith("package-dir"))
    return {name: ROOT / folder for name, folder in re.findall(r'"([\w.]+)"\s*=\s*"([^"]+)"', line)}


PACKAGES = _package_dirs()


def _sources() -> list[Path]:
    """Every Python file of the project outside tests/ (hidden folders, build output skipped)."""
    return sorted(
        p
        for p in ROOT.rglob("*.py")
        if not any(part.startswith(".") or part in _SKIPPED_DIRS or part.endswith(".egg-info")
                   for part in p.relative_to(ROOT).parts[:-1])
    )  # fmt: skip


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_walk_sees_every_package_and_no_test() -> None:
    sources = _sources()
    for folder in PACKAGES.values():
        assert folder / "__init__.py" in sources
    assert not [p for p in sources if p.relative_to(ROOT).parts[0] == "tests"]


def test_no_module_over_500_lines() -> None:
    long = {
        _rel(p): n
        for p in _sources()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_over_80_lines() -> None:
    long = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{_rel(path)}:{node.lineno} {node.name}"] = n
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def _file_of(module: str) -> Path | None:
    """The file of a dotted ``ragpulse`` module through package-dir, or None when there is none."""
    for package, folder in PACKAGES.items():
        if module == package or module.startswith(package + "."):
            target = folder.joinpath(*module[len(package) :].split(".")[1:])
            for candidate in (target.with_suffix(".py"), target / "__init__.py"):
                if candidate.is_file():
                    return candidate.resolve()
    return None


def _walked(start: Path, parts: list[str]) -> Path | None:
    """The file reached from folder ``start`` by the folders ``parts`` name."""
    target = start.joinpath(*parts)
    for candidate in (target.with_suffix(".py"), target / "__init__.py"):
        if candidate.is_file():
            return candidate.resolve()
    return None


def _import_problems(package: str, folder: Path, path: Path) -> list[str]:
    rel = path.relative_to(folder).with_suffix("")
    parts = list(rel.parts[:-1]) if rel.name == "__init__" else list(rel.parts)
    here = [*package.split("."), *(parts if rel.name == "__init__" else parts[:-1])]  # the module's package
    problems = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            if name == "ragpulse" or name.startswith("ragpulse."):
                if not any(name == a or name.startswith(a + ".") for a in ABSOLUTE.get(package, ())):
                    problems.append(f"{_rel(path)}:{node.lineno} absolute import of {name}")
                elif _file_of(name) is None:
                    problems.append(f"{_rel(path)}:{node.lineno} {name} is no file")
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = here[: len(here) - (node.level - 1)]
        start = path.parent.joinpath(*[".."] * (node.level - 1))
        modules = [node.module.split(".")] if node.module else [[a.name] for a in node.names]
        for module in modules:
            by_package, by_path = _file_of(".".join(base + module)), _walked(start, module)
            if node.module is None and by_package is None:  # `from . import name`: a name, not a module
                by_package, by_path = _file_of(".".join(base)), _walked(start, ["__init__"])
            if by_package is None or by_package != by_path:
                problems.append(
                    f"{_rel(path)}:{node.lineno} {'.' * node.level}{'.'.join(module)} names no file"
                )
    return problems


def test_imports_of_the_project_are_relative_and_name_their_files() -> None:
    problems = []
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            problems += _import_problems(package, folder, path)
    assert not problems, "\n".join(problems)


def test_make_bench_runs_every_benchmark_script() -> None:
    """``make bench`` runs the Makefile's BENCHES: every script in bench/ with a main, except
    the 30-minute soak, which runs alone; and every name listed is such a script."""
    text = (ROOT / "Makefile").read_text()
    block = re.search(r"^BENCHES := ((?:.*\\\n)*.*)$", text, re.M)
    assert block, "Makefile has no BENCHES list"
    listed = block.group(1).replace("\\\n", " ").split()
    scripts = {p.stem for p in (ROOT / "bench").glob("*.py") if '__name__ == "__main__"' in p.read_text()}
    assert sorted(set(listed)) == sorted(listed), "BENCHES names a script twice"
    assert set(listed) == scripts - {"soak"}


def test_the_judge_is_a_package_per_job() -> None:
    """collector/judge/ keeps its public interface at the top (at most 10 modules) and its jobs in
    at least three subpackages (the local judge, its text reading and verdict rules, the LLM
    judge, the tiers, the service), none over 15 modules, so a newcomer finds each in one step."""
    judge = ROOT / "collector" / "judge"
    top = sorted(p.name for p in judge.glob("*.py"))
    assert len(top) <= 10, f"collector/judge/ has {len(top)} modules at its top: {top}"
    subpackages = sorted(p.parent for p in judge.rglob("__init__.py") if p.parent != judge)
    assert len(subpackages) >= 3, subpackages
    crowded = {_rel(d): n for d in subpackages if (n := len(list(d.glob("*.py")))) > 15}
    assert not crowded, f"judge subpackages over 15 modules: {crowded}"


def test_pyproject_declares_every_package_and_data_folder() -> None:
    """Every folder of the packages, code or data (``sql/``, ``weights/``...), is in pyproject's
    ``packages``: one left out is missing from a wheel (the image) though an editable install
    finds it, and setuptools warns about it at install time."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^packages = \[(.*?)\]", text, re.M | re.S)
    assert block, "pyproject.toml has no packages list"
    declared = set(re.findall(r'"([\w.]+)"', block.group(1)))
    folders = set()
    for package, folder in PACKAGES.items():
        for d in (folder, *(p for p in folder.rglob("*") if p.is_dir())):
            parts = d.relative_to(folder).parts
            if any(x.startswith(".") or x == "__pycache__" for x in parts):
                continue
            if any(f.is_file() for f in d.iterdir()):
                folders.add(".".join([package, *parts]))
    assert declared == folders, (
        f"undeclared: {sorted(folders - declared)}; not folders: {sorted(declared - folders)}"
    )
