"""The sandbox against hostile model output: bounded time, nothing written to disk, named failures."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from harness.tasks.sql.sandbox import Failure, build_database, parse_schema, run_query, run_sql

CONTEXT = "CREATE TABLE pets (name VARCHAR, age INTEGER)"
ROWS = {"pets": [(f"p{i}", i) for i in range(30)]}


def _files(*dirs: Path) -> set[Path]:
    return {p for d in dirs for p in d.rglob("*")}


@pytest.fixture
def in_tmp_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_plain_query_returns_rows() -> None:
    result = run_sql("SELECT name FROM pets WHERE age < 2 ORDER BY age", CONTEXT, ROWS)
    assert result.is_ok
    assert result.rows == (("p0",), ("p1",))


@pytest.mark.parametrize(
    "sql",
    [
        "ATTACH 'x.db' AS x",
        "ATTACH DATABASE 'file:x.db?mode=rwc' AS x",
        "VACUUM INTO 'x.db'",
        "DETACH main",
        "PRAGMA query_only = 0",
        "PRAGMA journal_mode = WAL",
        "SELECT load_extension('x')",
        "INSERT INTO pets VALUES ('a', 1)",
        "DELETE FROM pets",
        "DROP TABLE pets",
        "CREATE TABLE t (a)",
        "CREATE TEMP TABLE t (a)",
    ],
)
def test_hostile_statements_are_denied_and_touch_no_file(sql: str, in_tmp_cwd: Path) -> None:
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    before = _files(in_tmp_cwd), set(tmp.iterdir())
    conn = build_database(CONTEXT, ROWS)
    result = run_query(conn, sql)
    assert result.failure in (Failure.DENIED, Failure.ERROR), result
    # The database is untouched: the 30 rows are still there.
    assert run_query(conn, "SELECT COUNT(*) FROM pets").rows == ((30,),)
    conn.close()
    assert (_files(in_tmp_cwd), set(tmp.iterdir())) == before


def test_attach_is_denied_by_the_authorizer_not_by_luck(in_tmp_cwd: Path) -> None:
    # The same ATTACH on an unguarded in-memory connection creates the file: the check can fail.
    import sqlite3

    plain = sqlite3.connect(":memory:")
    plain.execute("ATTACH 'x.db' AS x")
    plain.close()
    assert (in_tmp_cwd / "x.db").exists()
    (in_tmp_cwd / "x.db").unlink()
    assert run_sql("ATTACH 'x.db' AS x", CONTEXT).failure is Failure.DENIED
    assert not (in_tmp_cwd / "x.db").exists()


def test_read_only_pragma_is_allowed() -> None:
    assert run_sql("PRAGMA table_info(pets)", CONTEXT).is_ok


def test_endless_recursive_query_stops_within_budget() -> None:
    sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"
    start = time.monotonic()
    result = run_sql(sql, CONTEXT, budget_s=0.3)
    assert result.failure is Failure.TIMEOUT
    assert time.monotonic() - start < 0.8


def test_default_budget_is_one_second() -> None:
    sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT MAX(x) FROM c"
    start = time.monotonic()
    assert run_sql(sql, CONTEXT).failure is Failure.TIMEOUT
    assert 0.9 < time.monotonic() - start < 1.5


def test_endless_row_stream_hits_the_row_cap() -> None:
    sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c"
    result = run_sql(sql, CONTEXT, max_rows=500)
    assert result.failure is Failure.TOO_MANY_ROWS


def test_huge_sorted_cross_join_is_bounded_and_spills_nothing(in_tmp_cwd: Path) -> None:
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    before = set(tmp.iterdir())
    sql = "SELECT a.name FROM pets a, pets b, pets c, pets d, pets e ORDER BY a.name || b.name || e.name"
    start = time.monotonic()
    result = run_sql(sql, CONTEXT, ROWS, budget_s=0.3)
    assert result.failure is Failure.TIMEOUT
    assert time.monotonic() - start < 0.8
    assert set(tmp.iterdir()) == before
    assert not any(in_tmp_cwd.iterdir())


def test_huge_values_are_refused() -> None:
    assert run_sql("SELECT randomblob(100000000)", CONTEXT).failure is Failure.ERROR


@pytest.mark.parametrize("sql", ["", "-- nothing", "SELECT 1; SELECT 2", "SELEC name FROM pets", "SELECT x FROM pets"])
def test_non_queries_and_broken_queries_are_errors(sql: str) -> None:
    assert run_sql(sql, CONTEXT).failure is Failure.ERROR


def test_trailing_semicolon_is_fine() -> None:
    assert run_sql("SELECT name FROM pets;", CONTEXT).is_ok


def test_dataset_quirks_build_repeated_tables_and_keyword_names() -> None:
    schema = parse_schema("CREATE TABLE Person (name VARCHAR, age INTEGER); CREATE TABLE person (job VARCHAR)")
    assert [(t.name, [c.name for c in t.columns]) for t in schema.tables] == [("Person", ["name", "age", "job"])]
    assert run_sql('SELECT h FROM "table" WHERE c = 99', "CREATE TABLE table (h VARCHAR, c VARCHAR)").is_ok


def test_a_broken_context_is_an_error_not_an_exception() -> None:
    assert run_sql("SELECT 1", "CREATE TABLE t (a VARCHAR").failure is Failure.ERROR
