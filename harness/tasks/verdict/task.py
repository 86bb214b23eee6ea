"""The verdict task through the common task interface (see `harness.tasks.registry`)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.json_types import JsonObject
from harness.tasks.registry import AnalyzeRuns
from harness.tasks.verdict.data import VerdictExample, check_source, load_split
from harness.tasks.verdict.metrics import COLUMNS, METRICS
from harness.tasks.verdict.scoring import VerdictScore, score_prediction, summarize

__all__ = ["COLUMNS", "METRICS", "analyze_runs", "check_source", "load_split", "score", "score_with_rows"]

analyze_runs: AnalyzeRuns | None = None  # no miss categories (yet)


def _scores(answers: Sequence[str], test: Sequence[VerdictExample]) -> list[VerdictScore]:
    return [score_prediction(a, ex.answer) for a, ex in zip(answers, test, strict=True)]


def _metrics(scores: Sequence[VerdictScore]) -> JsonObject:
    """The record's metrics: judgment as `exact_match`, contract as `well_formed`, every gate rate in `gate`."""
    gate = summarize(scores)
    return {"exact_match": gate["judgment"], "well_formed": gate["contract"], "n": gate["n"], "gate": gate}


def score(answers: Sequence[str], test: Sequence[VerdictExample]) -> JsonObject:
    return _metrics(_scores(answers, test))


def score_with_rows(
    test: Sequence[VerdictExample], answers: Sequence[str], base_answers: Sequence[str] | None
) -> tuple[JsonObject, list[JsonObject]]:
    """The metrics and one predictions line per question, from one scoring pass."""
    scores = _scores(answers, test)
    base_scores = _scores(base_answers, test) if base_answers else None
    rows = []
    for index, (ex, answer, scored) in enumerate(zip(test, answers, scores, strict=True)):
        base_scored = base_scores[index] if base_scores else None
        rows.append(
            {
                "index": index,
                "question": ex.situation,
                "gold": ex.answer,
                "prediction": answer,
                "base_prediction": base_answers[index] if base_answers else None,
                "exact": scored.is_judgment_match,
                "contract": scored.is_contract,
                "decision": scored.predicted,
                "tag": scored.predicted_tag,
                "base_exact": base_scored.is_judgment_match if base_scored else None,
            }
        )
    return _metrics(scores), rows
