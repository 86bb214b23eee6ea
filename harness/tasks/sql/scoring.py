"""Scores for one predicted query against the gold: exact match (the story's metric), executes, and
semantic match (see `semantic`); `summarize` turns per-question scores into the run's rates.

Exact match is the story's definition, unchanged, so its numbers mean what the story's mean: strip, drop
trailing semicolons, double quotes become single quotes, lower-case, runs of whitespace become one space.
Nothing else is forgiven ('71' vs 71, `b=1` vs `b = 1`, aliases, column order): that is what the semantic
score is for.

    exact_match("SELECT a FROM t WHERE b = 'x'", 'select a  from t where b = "X"')  -> True
    exact_match("SELECT a FROM t ;", "SELECT a FROM t")  -> False (the space before ';' survives)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness.tasks.sql.budget import ANSWER_INSTRUCTIONS, Budget
from harness.tasks.sql.sandbox import Failure, QueryResult, run_sql
from harness.tasks.sql.semantic import SemanticVerdict, compare_queries, gold_failure

# Scoring one answer is bounded by `budget.ANSWER_INSTRUCTIONS` SQLite VM instructions, everything
# included (its run on the empty database for `executes`, its runs for `semantic`, the gold's runs on
# databases drawn for it), never by the clock: the same answer gets the same scores on a busy
# machine. Distilling the gold's suite has a budget of its own (`budget.DISTIL_INSTRUCTIONS`), not
# taken out of the answer's: otherwise an answer's score would depend on whether an earlier answer to
# the same gold had already paid for the suite.

_WHITESPACE = re.compile(r"\s+")


def normalize_sql(s: str) -> str:
    """The story's exact-match normaliser (see the module docstring for examples)."""
    return _WHITESPACE.sub(" ", s.strip().rstrip(";").replace('"', "'").lower())


def exact_match(pred: str, gold: str) -> bool:
    return normalize_sql(pred) == normalize_sql(gold)


def executes(sql: str, context: str, *, budget: Budget | None = None) -> bool:
    """True when `sql` runs without error, through the sandbox, on an empty in-memory database built
    from `context` (so it checks names and syntax, not results)."""
    return run_sql(sql, context, budget=budget).is_ok


@dataclass(frozen=True)
class QuestionScore:
    """One question's scores. `semantic` is None when the gold does not execute (unscorable);
    `detail` says why a score is False or None ("" when the prediction is exactly right).
    `clock_stopped`: the CPU-time safety net cut some of this answer's scoring short, so its scores
    may differ on another machine (every other score is the same on any machine, busy or not).
    `instructions`: SQLite VM instructions the answer's scoring ran (its suite's not included)."""

    exact: bool
    executes: bool
    semantic: bool | None
    detail: str
    clock_stopped: bool = False
    instructions: int = 0


def score_prediction(
    pred: str, gold: str, context: str, *, seed: int = 0, budget_instructions: int = ANSWER_INSTRUCTIONS
) -> QuestionScore:
    """Exact match, executes and semantic match within `budget_instructions` SQLite VM instructions.
    The prediction runs once on the empty database for both `executes` and semantic's first check.
    Nothing raises: a failure of the checker itself (it runs untrusted SQL) is a named miss."""
    budget = Budget(budget_instructions)
    try:
        gold_failure(gold, context, seed=seed)  # distilled (and cached) first, on its own budget
        ran = run_sql(pred, context, budget=budget)
    except Exception as exc:  # untrusted output must never stop a run's scoring; the miss is named
        ran = QueryResult(failure=Failure.ERROR, message=f"{type(exc).__name__}: {exc}")
    try:
        verdict = compare_queries(pred, gold, context, seed=seed, budget=budget, pred_on_empty=ran)
    except Exception as exc:
        verdict = SemanticVerdict(
            False, f"semantic check failed on this prediction: {type(exc).__name__}: {exc}"
        )
    is_exact = exact_match(pred, gold)
    return QuestionScore(
        exact=is_exact,
        executes=ran.is_ok,
        semantic=verdict.match,
        detail="" if is_exact and verdict.match else verdict.detail,
        clock_stopped=verdict.clock_stopped or budget.net_fired,
        instructions=budget.spent,
    )


def _percent(count: int, total: int) -> float | None:
    return round(100.0 * count / total, 1) if total else None


def summarize(scores: Sequence[QuestionScore]) -> dict[str, float | int | None]:
    """Rates in percent with one decimal (None when there is nothing to divide by) and the counts.
    Semantic match is over scorable questions only: a gold that does not execute scores nobody.
    `n_clock_stopped` counts the answers whose scores may differ on another machine (see QuestionScore)."""
    n = len(scores)
    scorable = [s for s in scores if s.semantic is not None]
    return {
        "exact_match": _percent(sum(s.exact for s in scores), n),
        "executes": _percent(sum(s.executes for s in scores), n),
        "semantic": _percent(sum(bool(s.semantic) for s in scorable), len(scorable)),
        "n": n,
        "n_scorable": len(scorable),
        "n_unscorable": n - len(scorable),
        "n_clock_stopped": sum(s.clock_stopped for s in scores)
        or None,  # None: left out of the record, reads back equal
    }
