"""Exact match as the story defines it, and "executes" against the context's tables."""

from __future__ import annotations

import pytest

from harness.tasks.sql import budget as budget_module
from harness.tasks.sql.budget import ANSWER_INSTRUCTIONS
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
    assert (
        normalize_sql('SELECT name FROM t WHERE x = "Phrag Dog";')
        == "select name from t where x = 'phrag dog'"
    )
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
    wrong = score_prediction(
        "SELECT COUNT(entrant) FROM table_name_47", "SELECT entrant FROM table_name_47", CONTEXT
    )
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
        "n_clock_stopped": None,  # none stopped: left out of the record
    }
    assert summarize([])["semantic"] is None


def test_a_literal_too_big_for_sqlite_is_scored_not_raised() -> None:
    # Seen on real SmolLM2 base output on the H200: a 30-digit literal made sqlite3 raise OverflowError.
    context = "CREATE TABLE t (a VARCHAR, b VARCHAR)"
    score = score_prediction(
        "SELECT a FROM t WHERE b = 123456789012345678901234567890", "SELECT a FROM t WHERE b = 1", context
    )
    assert score.semantic is False
    assert score.executes is True


def test_one_answer_costs_one_budget_including_executes() -> None:
    # Before issue #18 the endless query timed out in `executes` and again in `semantic`: 2 s.
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"
    score = score_prediction(endless, "SELECT entrant FROM table_name_47", CONTEXT)
    assert (score.executes, score.semantic, score.clock_stopped) == (False, False, False)
    assert "(budget)" in score.detail
    assert score.instructions == ANSWER_INSTRUCTIONS  # spent once, not once per check
    small = score_prediction(
        endless, "SELECT entrant FROM table_name_47", CONTEXT, budget_instructions=1_000_000
    )
    assert small.instructions == 1_000_000 and "(budget)" in small.detail  # the count ended it, not the net


def _slow(rows: int) -> str:
    """Right for any table_name_47 data, and as slow as `rows` makes it."""
    count = (
        f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT {rows}) SELECT COUNT(*) FROM c"
    )
    return f"SELECT entrant FROM table_name_47 WHERE ({count}) > 0"


def test_a_slow_gold_does_not_eat_the_answers_budget() -> None:
    # The first answer to a gold used to pay for distilling the gold's suite out of its own second,
    # so the same answer could score otherwise when it came first. The suite has its own budget now:
    # an answer needing 4/5 of its budget is right whether or not the suite was distilled for it.
    # 85,000 rows per 50 M instructions: 0.77 of the budget on the databases drawn since issue #38's
    # twin rows (100,000 fitted before them; the share moves with how many tables are drawn empty).
    gold, pred = _slow(5_000), _slow(85_000 * ANSWER_INSTRUCTIONS // 50_000_000)
    first = score_prediction(pred, gold, CONTEXT, seed=11)
    again = score_prediction(pred, gold, CONTEXT, seed=11)  # the suite cached now
    assert first == again
    assert first.semantic is True
    assert 0.7 * ANSWER_INSTRUCTIONS < first.instructions < ANSWER_INSTRUCTIONS
    assert "cut short by its instruction budget" in first.detail


def test_the_safety_net_is_named_in_the_score_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    # A net at a thousandth of its real height fires on the endless query: the score says so.
    monkeypatch.setattr(budget_module, "NET_FACTOR", 0.001)
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"
    score = score_prediction(endless, "SELECT entrant FROM table_name_47", CONTEXT)
    assert (score.executes, score.semantic, score.clock_stopped) == (False, False, True)
    assert "(clock)" in score.detail and "depends on the machine" in score.detail
    assert score.instructions < ANSWER_INSTRUCTIONS
    fine = score_prediction("SELECT entrant FROM table_name_47", "SELECT entrant FROM table_name_47", CONTEXT)
    assert summarize([score, fine])["n_clock_stopped"] == 1


def test_nothing_escapes_scoring(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.tasks.sql.scoring as scoring

    def explode(*_args: object, **_kwargs: object) -> None:
        raise MemoryError("out of memory in the checker")

    monkeypatch.setattr(scoring, "compare_queries", explode)
    score = score_prediction(
        "SELECT entrant FROM table_name_47", "SELECT entrant FROM table_name_47", CONTEXT
    )
    assert (score.exact, score.executes, score.semantic) == (True, True, False)
    assert "MemoryError" in score.detail
    monkeypatch.setattr(scoring, "run_sql", explode)
    score = score_prediction("SELECT year FROM table_name_47", "SELECT entrant FROM table_name_47", CONTEXT)
    assert (score.executes, score.semantic) == (False, False)
