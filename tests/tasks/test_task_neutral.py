"""The record and the report are task-neutral: no SQL name in harness/ outside harness/tasks/sql/, each
task's scores validated by its own metrics model, and the record of every task written as before.

What counts as a SQL name: the SQL task's vocabulary (`SQL_NAMES`, case-insensitive, as a part of a
name: `SqlMetrics`, `sqlite3`, `n_clock_stopped`, "b-mc2/sql-create-context") in any identifier (names,
attributes, definitions, arguments, keywords, imports and their module paths) or string constant (also
inside f-strings) of a harness module. Docstrings and comments are not scanned: the rule is about
coupling — code or data outside the task that depends on one of its names — and prose that names SQL
as an example (`for SQL, queries that execute`) couples nothing while it helps a reader. `executes`,
the SQL task's word for well-formed until record format 2, is not in the list: lifting version-1 records
(`harness.results.upgrade_record`) must name it.
"""

from __future__ import annotations

import ast
import json
import types
from pathlib import Path

import pytest

from harness import catalog
from harness.results import Metrics, RunRecord, load_record
from harness.tasks.registry import Task, task_module

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "harness"
SQL_TASK = HARNESS / "tasks" / "sql"
SQL_NAMES = ("sql", "semantic", "clock_stopped", "scorable")


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of a module, its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found.add(id(first.value))
    return found


def names_in(node: ast.AST) -> list[str]:
    """The identifiers and string constants one AST node holds."""
    match node:
        case ast.Name(id=name) | ast.Attribute(attr=name) | ast.arg(arg=name):
            return [name]
        case ast.FunctionDef(name=name) | ast.AsyncFunctionDef(name=name) | ast.ClassDef(name=name):
            return [name]
        case ast.keyword(arg=str(name)):
            return [name]
        case ast.alias(name=name, asname=asname):
            return [name] + ([asname] if asname else [])
        case ast.ImportFrom(module=str(module)):
            return [module]
        case ast.Constant(value=str(text)):
            return [text]
    return []


def sql_names(path: Path) -> list[str]:
    """`line: name` for each SQL name in a Python file (docstrings and comments aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        for name in names_in(node):
            if any(word in name.lower() for word in SQL_NAMES):
                found.append(f"{getattr(node, 'lineno', '?')}: {name!r}")
    return found


def test_no_sql_name_outside_the_sql_task() -> None:
    offenders = {
        str(path.relative_to(REPO)): found
        for path in sorted(HARNESS.rglob("*.py"))
        if SQL_TASK not in path.parents and (found := sql_names(path))
    }
    assert not offenders, f"SQL names outside harness/tasks/sql/: {json.dumps(offenders, indent=1)}"


def test_the_scan_finds_sql_names_in_code_and_not_in_prose(tmp_path: Path) -> None:
    coupled = tmp_path / "coupled.py"
    coupled.write_text(
        '"""Scores; for SQL, queries that execute."""\n'
        "import sqlite3  # a SQL engine\n"
        "def f(r):\n"
        '    """The semantic score."""\n'
        '    return r.trained.semantic, r.setup.get("task", "sql"), f"{r}-sql-create-context"\n'
    )
    assert sql_names(coupled) == ["2: 'sqlite3'", "5: 'semantic'", "5: 'sql'", "5: '-sql-create-context'"]
    prose = tmp_path / "prose.py"
    prose.write_text('"""For SQL, queries that execute."""\n# the semantic score\nx = "exact"\n')
    assert sql_names(prose) == []


def missing_members(module: object) -> list[str]:
    """The names of the Task protocol a task module lacks."""
    members = set(Task.__annotations__) | {
        n for n, v in vars(Task).items() if callable(v) and not n.startswith("_")
    }
    return sorted(m for m in members if not hasattr(module, m))


def test_every_task_keeps_the_contract() -> None:
    assert catalog.task_names() == ("sql", "verdict")
    assert catalog.default_task() == "sql"
    lacking = types.ModuleType("lacking")
    lacking.METRICS, lacking.COLUMNS = Metrics, ()  # type: ignore[attr-defined]
    assert missing_members(lacking) == [
        "analyze_runs",
        "check_source",
        "load_split",
        "score",
        "score_with_rows",
    ]
    for name in catalog.task_names():
        task = task_module(name)
        assert missing_members(task) == []
        assert issubclass(task.METRICS, Metrics) and task.METRICS is catalog.metrics_model(name)
        assert task.METRICS.model_config.get("extra") == "forbid"  # a task's scores: its fields, no others
        for column in task.COLUMNS:
            assert column.label and callable(column.value)
        assert callable(task.check_source) and callable(task.load_split) and callable(task.score)
        assert task.analyze_runs is None or callable(task.analyze_runs)


def test_a_record_of_an_unknown_task_is_refused(tmp_path: Path) -> None:
    from harness.errors import UserError

    committed = next((REPO / "reports/results").rglob("seed-42.json"))
    raw = json.loads(committed.read_text(encoding="utf-8"))
    raw["setup"]["task"] = "poetry"
    path = tmp_path / "seed-42.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(UserError, match="task 'poetry' is not a task of this lorabench"):
        load_record(path)


def test_committed_records_read_and_write_byte_for_byte() -> None:
    # Every committed record written by today's format reads back to the same bytes (the record JSON did
    # not change when the tasks took their fields), also when its scores come as plain Metrics (as the
    # trainer's outcome hands them to the parent).
    same = 0
    for path in sorted((REPO / "reports/results").rglob("seed-*.json")):
        text = path.read_text(encoding="utf-8")
        record = load_record(path)
        written = record.model_dump_json(indent=2) + "\n"
        fields = record.model_dump()
        plain = {phase: Metrics(**fields[phase]) for phase in ("baseline", "trained") if fields[phase]}
        assert RunRecord(**{**fields, **plain}).model_dump_json(indent=2) + "\n" == written
        same += written == text
    assert same >= 10  # the committed records of format 2 (older ones are lifted on load, so they differ)


def test_a_task_field_is_checked_by_the_task_of_the_record() -> None:
    committed = next((REPO / "reports/results").rglob("seed-42.json"))
    raw = json.loads(committed.read_text(encoding="utf-8"))
    sql = load_record(committed)
    assert type(sql.trained).__name__ == "SqlMetrics" and sql.task == "sql"
    as_verdict = {**raw, "setup": {**raw["setup"], "task": "verdict"}}
    with pytest.raises(
        ValueError, match=r"baseline\.semantic: extra inputs are not permitted \(task 'verdict'\)"
    ):
        RunRecord.model_validate(as_verdict)
    # A verdict record written before the tasks owned their fields carries the SQL task's as null: it loads.
    old_verdict = {"exact_match": 50.0, "well_formed": 90.0, "semantic": None, "n": 16, "n_scorable": None,
                   "n_unscorable": None, "eval_s": 2.0, "cached": False, "gate": {"judgment": 50.0, "n": 16}}  # fmt: skip
    record = RunRecord.model_validate({**as_verdict, "baseline": old_verdict, "trained": old_verdict})
    assert json.loads(record.model_dump_json())["trained"] == {
        "exact_match": 50.0, "well_formed": 90.0, "n": 16, "eval_s": 2.0, "cached": False, "gate": {"judgment": 50.0, "n": 16}
    }  # fmt: skip


def test_a_sql_record_keeps_its_key_order() -> None:
    metrics = Metrics(exact_match=1.0, well_formed=2.0, n=3, eval_s=4.0, decoded_in="fp32", semantic=5.0,
                      n_scorable=3, n_unscorable=0, n_clock_stopped=1)  # fmt: skip
    committed = next((REPO / "reports/results").rglob("seed-42.json"))
    raw = json.loads(committed.read_text(encoding="utf-8"))
    keys = list(
        json.loads(RunRecord.model_validate({**raw, "trained": metrics}).model_dump_json())["trained"]
    )
    assert keys == ["exact_match", "well_formed", "semantic", "n", "n_scorable", "n_unscorable", "n_clock_stopped",
                    "eval_s", "cached", "decoded_in"]  # fmt: skip


def long_functions(root: Path, limit: int = 60) -> list[str]:
    """`path:line name (n lines)` for each function under `root` longer than `limit` lines."""
    return [
        f"{path.relative_to(root)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in sorted(root.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (node.end_lineno or 0) - node.lineno + 1 > limit
    ]


def test_no_function_of_the_tasks_is_over_60_lines(tmp_path: Path) -> None:
    assert long_functions(HARNESS / "tasks") == []
    (tmp_path / "long.py").write_text("def f():\n" + "    x = 1\n" * 60)
    assert long_functions(tmp_path) == ["long.py:1 f (61 lines)"]


def test_a_real_run_writes_its_tasks_scores_in_the_records_key_order(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    # The scores cross from the trainer process to the parent as plain Metrics with the task's fields as
    # extras (harness.run.outcome); the record the parent writes holds them in the SQL record's order.
    from harness.config import load_setup
    from harness.run.parent import RunOptions, run_setup

    setup = load_setup(None, [
        f"model.source={tiny_model_dir}", f"data.source={sql_rows_file}", "data.test_size=4", "recipe.steps=2",
        "recipe.batch_size=2", "eval.max_new_tokens=4", "checks.smoke.enabled=false", "checks.preflight=false",
    ])  # fmt: skip
    record, path = run_setup(setup, RunOptions(results_dir=tmp_path, isolate=True))
    assert record.status == "ok", record.reason
    written = json.loads(path.read_text(encoding="utf-8"))
    for phase in ("baseline", "trained"):
        assert list(written[phase])[:6] == [
            "exact_match",
            "well_formed",
            "semantic",
            "n",
            "n_scorable",
            "n_unscorable",
        ]
    assert type(load_record(path).trained).__name__ == "SqlMetrics"
