"""Exact match as the story defines it, and "executes" against the context's tables."""

from __future__ import annotations

import pytest

from harness.tasks.sql.scoring import exact_match, executes, normalize_sql

CONTEXT = "CREATE TABLE table_name_47 (entrant VARCHAR, year VARCHAR, chassis VARCHAR)"


def test_normaliser_examples_from_the_docstring() -> None:
    assert normalize_sql('SELECT name FROM t WHERE x = "Phrag Dog";') == "select name from t where x = 'phrag dog'"
    # The story's quirk, kept on purpose: a space before the semicolon survives as a trailing space.
    assert normalize_sql("  SELECT\ta\n FROM t ;; ") == "select a from t "
    assert not exact_match("SELECT a FROM t ;", "SELECT a FROM t")


@pytest.mark.parametrize(
    ("pred", "gold", "expected"),
    [
        ("SELECT a FROM t WHERE b = 'x'", 'select a  from t where b = "X"', True),  # case, quotes, spacing
        ('SELECT a FROM t WHERE b = "phrag dog";', "SELECT a FROM t WHERE b = 'phrag dog'", True),
        ('SELECT a FROM t WHERE b = "71"', "SELECT a FROM t WHERE b = 71", False),  # style, not forgiven
        ("SELECT a FROM t WHERE b=1", "SELECT a FROM t WHERE b = 1", False),
        ("SELECT COUNT(*) FROM t", "SELECT COUNT(a) FROM t", False),
        ("SELECT a FROM t", "SELECT b FROM t", False),
    ],
)
def test_exact_match(pred: str, gold: str, expected: bool) -> None:
    assert exact_match(pred, gold) is expected


def test_executes_checks_names_against_the_context() -> None:
    assert executes('SELECT entrant FROM table_name_47 WHERE year < 1958 AND chassis = "cooper t43"', CONTEXT)
    assert not executes("SELECT driver FROM table_name_47", CONTEXT)  # no such column
    assert not executes("SELECT entrant FROM table_name_48", CONTEXT)  # no such table
    assert not executes("SELECT entrant FROM", CONTEXT)  # syntax
    assert not executes("ATTACH 'x.db' AS x", CONTEXT)  # denied
    assert not executes("", CONTEXT)
