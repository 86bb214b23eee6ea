"""Miss analysis across runs: which questions every run gets right, gets wrong, or splits on; within them,
which every run fixes, which misses are only style, which golds do not execute, and which wrong answers
the runs agree on. Input: each run's `*.predictions.jsonl` (keys in `REQUIRED_KEYS`) and, when at hand,
the test rows they point at by hash (`harness.tasks.sql.resolve`). Without the rows, wrong answers agree
only when their normalised text is the same, and bad-gold candidates carry no gold text. Right/wrong is
exact match; semantic scores qualify it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.json_types import JsonObject
from harness.tasks.sql.data import SqlExample, row_id
from harness.tasks.sql.scoring import normalize_sql
from harness.tasks.sql.semantic import semantic_match

# One run's predictions: a list of per-question dicts as the run writes them.
RunPredictions = Sequence[Mapping[str, Any]]

REQUIRED_KEYS: Mapping[str, tuple[type, ...]] = {
    "index": (int,),
    "row": (str,),
    "prediction": (str,),
    "base_prediction": (str, type(None)),
    "exact": (bool,),
    "executes": (bool,),
    "semantic": (bool, type(None)),
    "base_exact": (bool, type(None)),
    "base_semantic": (bool, type(None)),
}


def load_predictions(path: str | Path) -> list[JsonObject]:
    """Rows of one `*.predictions.jsonl`; raises UserError naming the line and key that is wrong."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UserError(
            f"predictions file {path}: cannot read it ({exc.strerror}); pass an existing *.predictions.jsonl"
        ) from exc
    rows: list[JsonObject] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(
                f"{path}:{number}: not JSON ({exc.msg}); each line must be one JSON object"
            ) from exc
        if not isinstance(row, dict):
            raise UserError(f"{path}:{number}: a JSON {type(row).__name__}, expected an object per line")
        for key, types in REQUIRED_KEYS.items():
            if key not in row:
                raise UserError(
                    f"{path}:{number}: key {key!r} missing; a predictions line needs {', '.join(REQUIRED_KEYS)}"
                )
            if not isinstance(row[key], types) or (int in types and isinstance(row[key], bool)):
                allowed = " or ".join("null" if t is type(None) else t.__name__ for t in types)
                raise UserError(f"{path}:{number}: {key} = {row[key]!r}, expected {allowed}")
        rows.append(row)
    if not rows:
        raise UserError(f"{path}: no predictions in it (an empty file); pass a run's *.predictions.jsonl")
    return rows


@dataclass(frozen=True)
class BadGoldCandidate:
    index: int
    reason: str
    # None when the test rows were not at hand.
    gold: str | None
    # The answer most runs agree on instead of the gold; None when the gold does not execute.
    agreed_prediction: str | None


@dataclass(frozen=True)
class MissAnalysis:
    """Question indices per category (sorted), over the questions present in every run.

    always_right / always_wrong / mixed (exact in every run / in none / in some) partition the questions;
    the others overlap them: fixed_by_every_run (exact in every run, the base answer in none);
    style_only_fixes (fixed although the base answer was already semantically right); style_misses (wrong
    but semantically right in every run); bad_gold_candidates (the gold does not execute, or more than half
    of the runs, at least two, agree on one meaning other than the gold's: weak evidence, since seeds of one
    setup err alike; no exact-match ceiling is derived from it).
    """

    labels: tuple[str, ...]
    # Whether the test rows were at hand: answers then agree by meaning, not only by text.
    rows_resolved: bool
    n_questions: int
    n_not_in_every_run: int
    always_right: tuple[int, ...]
    always_wrong: tuple[int, ...]
    fixed_by_every_run: tuple[int, ...]
    mixed: tuple[int, ...]
    style_only_fixes: tuple[int, ...]
    style_misses: tuple[int, ...]
    bad_gold_candidates: tuple[BadGoldCandidate, ...]

    def category_rows(self, *, shown: int, empty: str = "–") -> list[CategoryRow]:
        return category_rows(self, shown=shown, empty=empty)

    def to_dict(self) -> JsonObject:
        data = asdict(self)
        data["format_version"] = (
            3  # 2: rows_resolved; gold may be null. 3: estimated_exact_match_ceiling gone
        )
        return data


def _check_same_question(
    index: int, rows: Sequence[Mapping[str, Any]], labels: Sequence[str], example: SqlExample | None
) -> None:
    first = rows[0]
    for row, label in zip(rows[1:], labels[1:], strict=True):
        if row["row"] != first["row"]:
            raise UserError(
                f"question {index}: row differs between {labels[0]} ({first['row']!r}) and {label} "
                f"({row['row']!r}); compare only runs of the same test split"
            )
    if example is not None and row_id(example) != first["row"]:
        raise UserError(
            f"question {index}: the predictions name row {first['row']!r}, the test rows given have "
            f"{row_id(example)!r} there; give the test split the runs were scored on"
        )


def _agreeing_prediction(
    rows: Sequence[Mapping[str, Any]], n_runs: int, context: str | None
) -> tuple[str, int] | None:
    """The meaning most runs' wrong predictions share, when it is held by ≥2 runs and > half.
    Without the question's schema (`context`), only the same normalised text counts as agreement."""
    wrong = [r for r in rows if r["semantic"] is False and not r["exact"] and r["executes"]]
    classes: list[list[str]] = []
    for row in wrong:
        for members in classes:
            rep = members[0]
            same_text = normalize_sql(row["prediction"]) == normalize_sql(rep)
            if same_text or (context is not None and semantic_match(row["prediction"], rep, context)):
                members.append(row["prediction"])
                break
        else:
            classes.append([row["prediction"]])
    best = max(classes, key=len, default=[])
    if len(best) >= 2 and 2 * len(best) > n_runs:
        return best[0], len(best)
    return None


def _categorize(index: int, rows: Sequence[Mapping[str, Any]], cats: dict[str, list[int]]) -> None:
    """Add one question to its categories: right, wrong or mixed across the runs (these partition the
    questions), and the overlapping details fixed, style_miss and style_fix."""
    exact = [bool(r["exact"]) for r in rows]
    if all(exact):
        cats["right"].append(index)
        if all(r["base_exact"] is False for r in rows):
            cats["fixed"].append(index)
    elif not any(exact):
        cats["wrong"].append(index)
        if all(r["semantic"] is True for r in rows):
            cats["style_miss"].append(index)
    else:
        cats["mixed"].append(index)
    if any(r["exact"] and r["base_exact"] is False and r["base_semantic"] is True for r in rows):
        cats["style_fix"].append(index)


def _bad_gold_candidate(
    index: int, rows: Sequence[Mapping[str, Any]], example: SqlExample | None
) -> BadGoldCandidate | None:
    """The question's gold answer is suspect when it does not execute, or when most runs agree on
    one other answer; None otherwise."""
    gold = example.answer if example is not None else None
    if any(r["semantic"] is None for r in rows):
        return BadGoldCandidate(index, "gold does not execute", gold, None)
    agreed = _agreeing_prediction(rows, len(rows), example.context if example is not None else None)
    if agreed is None:
        return None
    prediction, count = agreed
    reason = f"{count} of {len(rows)} runs agree on one answer that differs from the gold"
    return BadGoldCandidate(index, reason, gold, prediction)


def analyze_misses(
    runs: Sequence[RunPredictions],
    *,
    labels: Sequence[str] | None = None,
    test_rows: Sequence[SqlExample] | None = None,
) -> MissAnalysis:
    """Sort every question of the runs into the categories of `MissAnalysis`. `test_rows`: the test
    split the runs were scored on, when at hand. Raises UserError when there is no run, or two runs
    (or the runs and `test_rows`) name different rows for a question (different splits)."""
    if not runs:
        raise UserError("no runs given; pass at least one predictions file")
    labels = tuple(labels) if labels is not None else tuple(f"run {i + 1}" for i in range(len(runs)))
    by_index = [{int(row["index"]): row for row in run} for run in runs]
    common = set(by_index[0]).intersection(*by_index[1:])
    every = set().union(*by_index)
    cats: dict[str, list[int]] = {
        k: [] for k in ("right", "wrong", "fixed", "mixed", "style_fix", "style_miss")
    }
    bad: list[BadGoldCandidate] = []
    for index in sorted(common):
        rows = [run[index] for run in by_index]
        example = test_rows[index] if test_rows is not None and index < len(test_rows) else None
        if test_rows is not None and example is None:
            raise UserError(
                f"question {index}: the test rows given have only {len(test_rows)}; give the split the runs were scored on"
            )
        _check_same_question(index, rows, labels, example)
        _categorize(index, rows, cats)
        candidate = _bad_gold_candidate(index, rows, example)
        if candidate is not None:
            bad.append(candidate)
    n = len(common)
    return MissAnalysis(
        labels=labels,
        rows_resolved=test_rows is not None,
        n_questions=n,
        n_not_in_every_run=len(every) - n,
        always_right=tuple(cats["right"]),
        always_wrong=tuple(cats["wrong"]),
        fixed_by_every_run=tuple(cats["fixed"]),
        mixed=tuple(cats["mixed"]),
        style_only_fixes=tuple(cats["style_fix"]),
        style_misses=tuple(cats["style_miss"]),
        bad_gold_candidates=tuple(bad),
    )


# A row of `category_rows`: name, count, share in %, the first question indices.
CategoryRow = list[object]
ALL_QUESTIONS = "all questions"


def category_rows(analysis: MissAnalysis, *, shown: int, empty: str = "–") -> list[CategoryRow]:
    """One table row per category: name, count, share in %, the first `shown` question indices. The
    first three rows partition the questions and the fourth (`ALL_QUESTIONS`) is their sum; the rest
    are details that overlap them and each other. Shared by `lorabench misses` and the scorecard so both
    name and count the categories alike."""
    n = analysis.n_questions
    agreed = tuple(c.index for c in analysis.bad_gold_candidates if c.agreed_prediction is not None)
    categories: list[tuple[str, tuple[int, ...] | None]] = [
        ("always right", analysis.always_right),
        ("mixed (depends on the seed)", analysis.mixed),
        ("always wrong", analysis.always_wrong),
        (ALL_QUESTIONS, None),
        ("… fixed by every run (always right, base wrong in every run)", analysis.fixed_by_every_run),
        ("… style misses (always wrong, semantically right in every run)", analysis.style_misses),
        (
            "… style-only fixes (right in a run whose base answer was semantically right)",
            analysis.style_only_fixes,
        ),
        # Two kinds of bad-gold evidence, unequal: a gold that does not run is broken; runs agreeing on
        # another answer may share a mistake (runs of one setup differ only by seed).
        (
            "… gold does not execute",
            tuple(c.index for c in analysis.bad_gold_candidates if c.agreed_prediction is None),
        ),
        ("… runs agree on another wrong answer (a shared mistake or a bad gold)", agreed),
    ]
    rows: list[CategoryRow] = []
    for name, indices in categories:
        if indices is None:
            rows.append([name, n, "100.0" if n else empty, ""])
        elif name.startswith("… runs agree") and len(analysis.labels) < 2:
            rows.append([name, empty, empty, "needs 2 or more runs"])
        else:
            listed = ", ".join(map(str, indices[:shown])) + (" …" if len(indices) > shown else "")
            rows.append([name, len(indices), f"{100 * len(indices) / n:.1f}" if n else empty, listed])
    return rows
