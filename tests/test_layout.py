"""The package's shape holds: no import cycles among harness modules, and no task's types outside it.

Read from the source (every import statement, also those inside functions and TYPE_CHECKING blocks),
so a cycle hidden in a lazy import is caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "harness"


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module → the harness modules it imports (`from pkg import sub` counts as importing `pkg.sub`)."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets.update(
                    f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names
                )
        resolved = set()
        for target in targets:
            while target not in files and "." in target:
                target = target.rpartition(".")[0]
            if target in files and target != name:
                resolved.add(target)
        graph[name] = resolved
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_no_import_cycles_among_harness_modules() -> None:
    cycle = find_cycle(import_graph(HARNESS))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_lazy_cycle(tmp_path: Path) -> None:
    package = tmp_path / "harness"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from harness.b import f\n")
    (package / "b.py").write_text("def f():\n    from harness import a\n")
    assert find_cycle(import_graph(package)) == ["harness.a", "harness.b", "harness.a"]


def classes_defined_in(package: Path) -> set[str]:
    return {
        node.name
        for path in package.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
    }


@pytest.mark.parametrize("task", ["sql", "verdict"])
def test_no_task_type_is_named_outside_its_task(task: str) -> None:
    """Code outside `harness/tasks/<task>/` knows examples and splits through `harness.tasks.registry`."""
    package = HARNESS / "tasks" / task
    names = classes_defined_in(package)
    offenders = []
    for path in HARNESS.rglob("*.py"):
        if package in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Name) and node.id in names) or (
                isinstance(node, ast.alias) and node.name in names
            ):
                offenders.append(f"{path.relative_to(HARNESS.parent)}:{node.lineno}")
    assert not offenders, f"{task} types named outside harness/tasks/{task}/: {offenders}"


# The house, lowest floor first: a module may import from its own floor or a lower one, never a higher one
# (docs/architecture.md draws it). A module's floor is that of the longest prefix listed; a module not
# listed yet (another branch's new file) is not judged until it is.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("harness.__init__", "harness.errors", "harness.settings", "harness.atomic", "harness.cpuinfo",
              "harness.locks", "harness.stats", "harness.catalog", "harness.hub", "harness.gguf_layout",
              "harness.stacks", "harness.stacks_download", "harness.stack_sources",
              "harness.json_types", "harness.yamlsafe", "harness.origin", "harness.stack_name")),
    ("setup and record", ("harness.config", "harness.results", "harness.runtime", "harness.record_schema")),
    ("tasks, models, checks, machine", ("harness.tasks", "harness.models", "harness.testing", "harness.inspect", "harness.gpu",
                                        "harness.guard", "harness.checks", "harness.findings",
                                        "harness.provenance")),
    ("backends", ("harness.backends",)),
    ("run", ("harness.run", "harness.export")),
    ("suite", ("harness.suite",)),
    ("report", ("harness.report",)),
    ("commands", ("harness.doctor", "harness.commands", "harness.cli")),
]  # fmt: skip


def layer_of(module: str) -> int:
    """The floor of `module` (the package itself counts as `harness.__init__`), -1 where none is listed."""
    module = "harness.__init__" if module == "harness" else module
    best, floor = "", -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, floor = prefix, index
    return floor


def arrows_up(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})"
        for a, targets in graph.items()
        for b in targets
        if layer_of(b) > layer_of(a) >= 0
    )


def test_every_module_of_today_has_a_floor() -> None:
    unlisted = [m for m in import_graph(HARNESS) if layer_of(m) < 0]
    assert len(unlisted) <= 3, f"give these a floor in LAYERS: {unlisted}"


def test_no_import_goes_up_a_floor() -> None:
    assert arrows_up(import_graph(HARNESS)) == []


def test_an_arrow_up_is_caught(tmp_path: Path) -> None:
    package = tmp_path / "harness"
    (package / "backends").mkdir(parents=True)
    (package / "run").mkdir()
    for init in (package, package / "backends", package / "run"):
        (init / "__init__.py").write_text("")
    (package / "run" / "checkpoint.py").write_text("")
    (package / "backends" / "hf.py").write_text("def f():\n    from harness.run import checkpoint\n")
    assert arrows_up(import_graph(package)) == [
        "harness.backends.hf (backends) -> harness.run.checkpoint (run)"
    ]
