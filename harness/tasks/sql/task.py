"""The text-to-SQL task through the common task interface (see `harness.tasks`); the code the recipe
ran inline before a second task existed, unchanged."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.tasks.sql.data import SqlExample, load_split, row_id
from harness.tasks.sql.scoring import score_prediction, summarize

__all__ = ["load_split", "prediction_rows", "score"]


def score(answers: Sequence[str], test: Sequence[SqlExample]) -> dict[str, Any]:
    scores = [score_prediction(a, ex.answer, ex.context) for a, ex in zip(answers, test, strict=True)]
    return summarize(scores)


def prediction_rows(
    test: Sequence[SqlExample], answers: Sequence[str], base_answers: Sequence[str] | None
) -> list[dict[str, Any]]:
    rows = []
    for index, (ex, answer) in enumerate(zip(test, answers, strict=True)):
        scored = score_prediction(answer, ex.answer, ex.context)
        base = base_answers[index] if base_answers else None
        base_scored = score_prediction(base, ex.answer, ex.context) if base is not None else None
        rows.append({
            # The row's text stays in the data (never copied into results): `row` names it.
            "index": index, "row": row_id(ex), "prediction": answer, "base_prediction": base,
            "exact": scored.exact, "executes": scored.executes, "semantic": scored.semantic,
            "base_exact": base_scored.exact if base_scored else None,
            "base_semantic": base_scored.semantic if base_scored else None,
        })  # fmt: skip
    return rows
