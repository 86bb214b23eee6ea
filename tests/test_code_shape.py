"""The code stays small and its arrows point one way (issue 25): no function in harness/ over 60 lines, and
no module imports the command line's entry point (`harness.cli`) from below it.

Both are read from the source with `ast`, so a long function or an upward import inside a function body
is caught too. Each rule has a case that builds the defect in a temporary package and watches it caught.
"""

from __future__ import annotations

import ast
from pathlib import Path

from test_layout import import_graph

HARNESS = Path(__file__).resolve().parents[1] / "harness"
MAX_FUNCTION_LINES = 60
ENTRY_POINT = "harness.cli"


def long_functions(root: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """`path:line name (n lines)` for every function or method longer than `limit` lines, decorators
    left out, its docstring and comments counted (a long docstring is a reason to split too)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def upward_imports(root: Path, entry: str = ENTRY_POINT) -> list[str]:
    """Modules that import the entry point: it dispatches to the commands, so a command importing it back
    is an arrow pointing up (and a cycle waiting for its next import)."""
    return sorted(name for name, targets in import_graph(root).items() if entry in targets and name != entry)


def test_no_function_in_harness_is_over_60_lines() -> None:
    assert long_functions(HARNESS) == []


def test_nothing_imports_the_command_line_entry_point() -> None:
    assert upward_imports(HARNESS) == []


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    package = tmp_path / "harness"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    return package


def test_a_61_line_method_is_caught_and_a_60_line_one_is_not(tmp_path: Path) -> None:
    def body(lines: int) -> str:  # the function's lines: its def line and lines - 1 statements
        return "".join(f"        x = {i}\n" for i in range(lines - 1))

    package = _package(
        tmp_path,
        {"long.py": f"class A:\n    @staticmethod\n    def f():\n{body(61)}\n    def g():\n{body(60)}"},
    )
    assert long_functions(package) == ["harness/long.py:3 f (61 lines)"]


def test_an_upward_import_inside_a_function_is_caught(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "cli.py": "from harness.commands import bench\n",
        "commands/__init__.py": "",
        "commands/bench.py": "def run():\n    from harness.cli import main\n    return main\n",
        "commands/report.py": "import json\n",
    })  # fmt: skip
    assert upward_imports(package) == ["harness.commands.bench"]
