"""The text-to-SQL task through the common task interface (see `harness.tasks.registry`)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from harness.json_types import JsonObject
from harness.results import RunRecord
from harness.tasks.sql.data import SqlExample, load_split, row_id
from harness.tasks.sql.data import check_data_source as check_source
from harness.tasks.sql.metrics import COLUMNS, METRICS
from harness.tasks.sql.misses import MissAnalysis, analyze_misses, load_predictions
from harness.tasks.sql.resolve import record_test_rows
from harness.tasks.sql.scoring import QuestionScore, score_prediction, summarize

__all__ = ["COLUMNS", "METRICS", "analyze_runs", "check_source", "load_split", "score", "score_with_rows"]


def _scores(answers: Sequence[str], test: Sequence[SqlExample]) -> tuple[QuestionScore, ...]:
    if len(answers) != len(test):
        raise ValueError(f"{len(answers)} answers to {len(test)} questions")
    return _scored(tuple(answers), tuple((ex.answer, ex.context) for ex in test))


@functools.lru_cache(maxsize=4)
def _scored(answers: tuple[str, ...], questions: tuple[tuple[str, str], ...]) -> tuple[QuestionScore, ...]:
    """Remembered: a run scores its baseline's answers once for the baseline's metrics and again beside the
    trained answers (`score_with_rows`); the scoring worker (harness/run/aside.py) serves both calls."""
    return tuple(
        score_prediction(a, gold, context) for a, (gold, context) in zip(answers, questions, strict=True)
    )


def _metrics(scores: Sequence[QuestionScore]) -> JsonObject:
    """The record's Metrics fields: a query that executes is the SQL task's well-formed answer."""
    rates = summarize(scores)
    rates["well_formed"] = rates.pop("executes")
    return rates


def score(answers: Sequence[str], test: Sequence[SqlExample]) -> JsonObject:
    return _metrics(_scores(answers, test))


def score_with_rows(
    test: Sequence[SqlExample], answers: Sequence[str], base_answers: Sequence[str] | None
) -> tuple[JsonObject, list[JsonObject]]:
    """The metrics and one predictions line per question, from one scoring pass (semantic match runs
    SQLite several times per question)."""
    scores = _scores(answers, test)
    base_scores = _scores(base_answers, test) if base_answers else None
    rows = []
    for index, (ex, answer, scored) in enumerate(zip(test, answers, scores, strict=True)):
        base_scored = base_scores[index] if base_scores else None
        rows.append(
            {
                # The row's text stays in the data (never copied into results): `row` names it.
                "index": index,
                "row": row_id(ex),
                "prediction": answer,
                "base_prediction": base_answers[index] if base_answers else None,
                "exact": scored.exact,
                "executes": scored.executes,
                "semantic": scored.semantic,
                "base_exact": base_scored.exact if base_scored else None,
                "base_semantic": base_scored.semantic if base_scored else None,
                # Only where the safety net cut scoring short: lines stay as they were everywhere else.
                **(
                    {"clock_stopped": True}
                    if scored.clock_stopped or (base_scored and base_scored.clock_stopped)
                    else {}
                ),
            }
        )
    return _metrics(scores), rows


def analyze_runs(
    prediction_files: Sequence[Path], labels: Sequence[str], record: RunRecord | None, data: str | None = None
) -> MissAnalysis:
    """The miss analysis of several runs' predictions; `record` (one of the runs) finds the test rows
    they were scored on, read back from the data (`data`: a local copy to try first)."""
    runs = [load_predictions(path) for path in prediction_files]
    test_rows = record_test_rows(record, data) if record is not None else None
    return analyze_misses(runs, labels=labels, test_rows=test_rows)
