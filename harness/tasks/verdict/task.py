"""The verdict task through the common task interface (see `harness.tasks`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.tasks.verdict.data import VerdictExample, load_split
from harness.tasks.verdict.scoring import score_prediction, summarize

__all__ = ["load_split", "prediction_rows", "score"]


def score(answers: Sequence[str], test: Sequence[VerdictExample]) -> dict[str, Any]:
    """The record's metrics: judgment as `exact_match`, contract as `executes`, every gate rate in `gate`."""
    gate = summarize([score_prediction(a, ex.answer) for a, ex in zip(answers, test, strict=True)])
    return {"exact_match": gate["judgment"], "executes": gate["contract"], "n": gate["n"], "gate": gate}


def prediction_rows(
    test: Sequence[VerdictExample], answers: Sequence[str], base_answers: Sequence[str] | None
) -> list[dict[str, Any]]:
    rows = []
    for index, (ex, answer) in enumerate(zip(test, answers, strict=True)):
        scored = score_prediction(answer, ex.answer)
        base = base_answers[index] if base_answers else None
        base_scored = score_prediction(base, ex.answer) if base is not None else None
        rows.append({
            "index": index, "question": ex.situation, "gold": ex.answer, "prediction": answer,
            "base_prediction": base, "exact": scored.is_judgment_match, "contract": scored.is_contract,
            "decision": scored.predicted, "tag": scored.predicted_tag,
            "base_exact": base_scored.is_judgment_match if base_scored else None,
        })  # fmt: skip
    return rows
