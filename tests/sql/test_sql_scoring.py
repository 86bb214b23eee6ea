"""Exact match as the story defines it, and "executes" against the context's tables."""

from __future__ import annotations

import time

import pytest

from harness.tasks.sql.scoring import (
    QuestionScore,
    exact_match,
    executes,
    normalize_sql,
    score_prediction,
    summarize,
)

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


def test_score_prediction_style_only_miss() -> None:
    gold = 'SELECT entrant FROM table_name_47 WHERE year = "1958"'
    score = score_prediction("SELECT entrant FROM table_name_47 WHERE year = 1958", gold, CONTEXT)
    assert (score.exact, score.executes, score.semantic) == (False, True, True)


def test_score_prediction_wrong_and_unscorable() -> None:
    wrong = score_prediction("SELECT COUNT(entrant) FROM table_name_47", "SELECT entrant FROM table_name_47", CONTEXT)
    assert (wrong.exact, wrong.executes, wrong.semantic) == (False, True, False)
    assert "differ" in wrong.detail
    broken_gold = "SELECT entrant FROM table_name_47 WHERE year = 3 OFFSET 095"
    unscorable = score_prediction(broken_gold, broken_gold, CONTEXT)
    assert (unscorable.exact, unscorable.executes, unscorable.semantic) == (True, False, None)
    assert "gold does not execute" in unscorable.detail


def test_summarize_rates_over_all_and_semantic_over_scorable() -> None:
    scores = [
        QuestionScore(exact=True, executes=True, semantic=True, detail=""),
        QuestionScore(exact=False, executes=True, semantic=True, detail=""),
        QuestionScore(exact=False, executes=False, semantic=False, detail=""),
        QuestionScore(exact=False, executes=True, semantic=None, detail=""),
    ]
    assert summarize(scores) == {
        "exact_match": 25.0,
        "executes": 75.0,
        "semantic": 66.7,
        "n": 4,
        "n_scorable": 3,
        "n_unscorable": 1,
    }
    assert summarize([])["semantic"] is None


def test_a_literal_too_big_for_sqlite_is_scored_not_raised() -> None:
    # Seen on real SmolLM2 base output on the H200: a 30-digit literal made sqlite3 raise OverflowError.
    context = "CREATE TABLE t (a VARCHAR, b VARCHAR)"
    score = score_prediction("SELECT a FROM t WHERE b = 123456789012345678901234567890", "SELECT a FROM t WHERE b = 1", context)
    assert score.semantic is False
    assert score.executes is True


def test_one_answer_costs_one_budget_including_executes() -> None:
    # Before issue #18 the endless query timed out in `executes` and again in `semantic`: 2 s.
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"
    start = time.monotonic()
    score = score_prediction(endless, "SELECT entrant FROM table_name_47", CONTEXT)
    assert time.monotonic() - start < 1.3
    assert (score.executes, score.semantic) == (False, False)
    assert "timeout" in score.detail
    start = time.monotonic()
    score_prediction(endless, "SELECT entrant FROM table_name_47", CONTEXT, budget_s=0.2)
    assert time.monotonic() - start < 0.5


def test_nothing_escapes_scoring(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.tasks.sql.scoring as scoring

    def explode(*_args: object, **_kwargs: object) -> None:
        raise MemoryError("out of memory in the checker")

    monkeypatch.setattr(scoring, "compare_queries", explode)
    score = score_prediction("SELECT entrant FROM table_name_47", "SELECT entrant FROM table_name_47", CONTEXT)
    assert (score.exact, score.executes, score.semantic) == (True, True, False)
    assert "MemoryError" in score.detail
    monkeypatch.setattr(scoring, "run_sql", explode)
    score = score_prediction("SELECT year FROM table_name_47", "SELECT entrant FROM table_name_47", CONTEXT)
    assert (score.executes, score.semantic) == (False, False)
