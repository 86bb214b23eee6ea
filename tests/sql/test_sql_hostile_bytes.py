"""Byte-heavy hostile SQL (issue #38 item 6) ends by its budget or the heap cap, never the CPU-time
net; the charged built-ins keep SQLite's own results. No timings here: which limit ended each
statement is the same on every machine (dev/bench_hostile_sql.py prints the CPU seconds)."""

from __future__ import annotations

import sqlite3

import pytest

from harness.tasks.sql.budget import STATEMENT_INSTRUCTIONS, TICK, Budget
from harness.tasks.sql.charges import BYTES_PER_INSTRUCTION, CALL_INSTRUCTIONS
from harness.tasks.sql.sandbox import Failure, run_sql
from tests.sql.hostile_sql import CONTEXT, HOSTILE_SQL, ROWS


@pytest.mark.parametrize("name", list(HOSTILE_SQL))
def test_byte_heavy_sql_ends_by_its_budget_or_the_heap_cap(name: str) -> None:
    sql, expected = HOSTILE_SQL[name]
    budget = Budget(STATEMENT_INSTRUCTIONS)
    result = run_sql(sql, CONTEXT, ROWS, budget=budget)
    assert result.failure is expected, result
    assert not budget.net_fired


def test_the_charge_is_what_ends_a_byte_heavy_row() -> None:
    """The bug injected: trim with a set of characters counted as one instruction per call. The same
    rows with a one-character set cost a small share of the budget; the 80-character set, charged
    for each character tried against each of the set, costs 80 times more."""
    rows = "WITH RECURSIVE c(n, s) AS (SELECT 1, printf('%.990c', 'a') UNION ALL SELECT n + 1, s FROM c LIMIT 200) "
    cheap, dear = Budget(STATEMENT_INSTRUCTIONS), Budget(STATEMENT_INSTRUCTIONS)
    assert run_sql(rows + "SELECT COUNT(*) FROM c WHERE trim(s, 'a') = ''", CONTEXT, budget=cheap).rows == (
        (200,),
    )
    strip = "printf('%.79c', 'b') || 'a'"
    assert run_sql(
        rows + f"SELECT COUNT(*) FROM c WHERE trim(s, {strip}) = ''", CONTEXT, budget=dear
    ).rows == ((200,),)
    per_call = CALL_INSTRUCTIONS + (990 * 80 + 1) // BYTES_PER_INSTRUCTION
    assert dear.spent >= 200 * per_call
    assert cheap.spent < 200 * per_call // 10


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("trim('  ab  ')", "ab"),
        ("trim('xxabyx', 'xy')", "ab"),
        ("ltrim('xxab', 'x')", "ab"),
        ("rtrim('abéé', 'é')", "ab"),
        ("upper('abé')", "ABé"),  # SQLite folds ASCII only
        ("lower('ABÉ')", "abÉ"),
        ("hex('é')", "C3A9"),
        ("hex(12)", "3132"),
        ("quote('it''s')", "'it''s'"),
        ("quote(x'0102')", "X'0102'"),
        ("quote(NULL)", "NULL"),
        ("substr('héllo', 2, 3)", "éll"),
        ("substr('hello', -3)", "llo"),
        ("substring('hello', 2)", "ello"),
        ("length('héllo')", 5),
        ("length(x'00ff')", 2),
        ("length(1234)", 4),
        ("length(NULL)", None),
        ("soundex('Robert')", "R163"),
        ("strftime('%Y-%m-%d', '2024-02-29')", "2024-02-29"),
        ("strftime('%J', '1970-01-01')", "2440587.5"),
        ("length(zeroblob(5))", 5),
        ("typeof(randomblob(3))", "blob"),
        ("upper(NULL)", None),
    ],
)
def test_charged_builtins_keep_sqlites_own_results(expression: str, expected: object) -> None:
    assert run_sql(f"SELECT {expression}", CONTEXT).rows == ((expected,),), expression
    assert sqlite3.connect(":memory:").execute(f"SELECT {expression}").fetchall() == [(expected,)]


def test_randomblob_is_still_drawn_per_row_and_sizes_over_the_cap_are_refused() -> None:
    rows = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c LIMIT 50) "
    assert run_sql(rows + "SELECT COUNT(DISTINCT randomblob(8)) FROM c", CONTEXT).rows == ((50,),)
    for sql in (
        "SELECT length(zeroblob(1e9))",
        "SELECT length(randomblob(5000))",
        "SELECT upper(hex(zeroblob(600)))",
    ):
        budget = Budget(STATEMENT_INSTRUCTIONS)
        result = run_sql(sql, CONTEXT, budget=budget)
        assert result.failure is Failure.ERROR and "too big" in result.message, (sql, result)
        assert budget.spent < 100 * TICK


def test_json_functions_are_denied_to_untrusted_queries() -> None:
    for sql in ("SELECT json_quote(a) FROM t", "SELECT '[1]' -> '$[0]'", "SELECT json_group_array(a) FROM t"):
        assert run_sql(sql, CONTEXT, ROWS).failure is Failure.DENIED, sql
