"""Miss analysis across runs, its loader and the `lorabench misses` command, on real files."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from harness.atomic import write_lines
from harness.cli import main
from harness.config import SetupConfig
from harness.errors import UserError
from harness.results import RunRecord, predictions_path, write_record
from harness.tasks.sql.data import SqlExample, make_split, row_id
from harness.tasks.sql.misses import ALL_QUESTIONS, analyze_misses, category_rows, load_predictions
from harness.tasks.sql.scoring import exact_match
from harness.tasks.sql.semantic import semantic_match

CTX = "CREATE TABLE t (name VARCHAR, year VARCHAR, votes VARCHAR)"
# index -> gold, and per run the prediction; the base model's answer is the same in every run.
QUESTIONS: dict[int, tuple[str, list[str], str]] = {
    0: (
        "SELECT name FROM t WHERE year = '1990'",
        ["SELECT name FROM t WHERE year = '1990'"] * 3,
        "SELECT year FROM t",
    ),
    1: (
        "SELECT name FROM t WHERE year = 71",
        ["SELECT name FROM t WHERE year = 71"] * 3,
        'SELECT name FROM t WHERE year = "71"',
    ),
    2: (
        "SELECT COUNT(name) FROM t",
        ["SELECT name FROM t", "SELECT year FROM t", "SELECT votes FROM t"],
        "SELECT name FROM t",
    ),
    3: (
        "SELECT name FROM t",
        ["SELECT name FROM t", "SELECT year FROM t", "SELECT name FROM t"],
        "SELECT votes FROM t",
    ),
    # Gold counts where the question asks for the maximum; two runs agree, in different words.
    4: (
        "SELECT COUNT(votes) FROM t WHERE name = 'a'",
        [
            "SELECT MAX(votes) FROM t WHERE name = 'a'",
            'select max(votes) from t where "a" = name',
            "SELECT votes FROM t",
        ],
        "SELECT votes FROM t",
    ),
    5: ("SELECT name FROM t WHERE x = 3 OFFSET 095", ["SELECT name FROM t"] * 3, "SELECT name FROM t"),
}


TEST_ROWS = tuple(SqlExample(f"q{index}", CTX, gold) for index, (gold, _, _) in QUESTIONS.items())


def _row(index: int, run: int) -> dict[str, Any]:
    gold, preds, base = QUESTIONS[index]
    pred = preds[run]
    return {
        "index": index,
        "row": row_id(TEST_ROWS[index]),
        "prediction": pred,
        "base_prediction": base,
        "exact": exact_match(pred, gold),
        "executes": True,
        "semantic": semantic_match(pred, gold, CTX),
        "base_exact": exact_match(base, gold),
        "base_semantic": semantic_match(base, gold, CTX),
    }


def _runs() -> list[list[dict[str, Any]]]:
    return [[_row(i, run) for i in QUESTIONS] for run in range(3)]


def test_categories_style_fixes_and_bad_gold() -> None:
    analysis = analyze_misses(_runs(), test_rows=TEST_ROWS)
    assert analysis.rows_resolved
    assert analysis.n_questions == 6
    assert analysis.always_right == (0, 1)
    assert analysis.fixed_by_every_run == (0, 1)
    assert analysis.style_only_fixes == (1,)  # base wrote "71", already semantically right
    assert analysis.always_wrong == (2, 4, 5)
    assert analysis.mixed == (3,)
    assert analysis.style_misses == ()
    bad = {c.index: c for c in analysis.bad_gold_candidates}
    assert set(bad) == {4, 5}  # question 2: three different wrong answers, no agreement
    assert bad[5].reason == "gold does not execute"
    assert bad[5].gold == QUESTIONS[5][0]
    assert bad[4].reason.startswith("2 of 3 runs agree")
    assert "estimated_exact_match_ceiling" not in json.loads(json.dumps(analysis.to_dict()))
    # The table names the two kinds of evidence apart: a gold that does not run, runs agreeing elsewhere.
    rows = {row[0]: (row[1], row[3]) for row in category_rows(analysis, shown=8)}
    assert rows["… gold does not execute"] == (1, "5")
    assert rows["… runs agree on another wrong answer (a shared mistake or a bad gold)"] == (1, "4")


def test_the_first_rows_partition_the_questions() -> None:
    analysis = analyze_misses(_runs(), test_rows=TEST_ROWS)
    rows = category_rows(analysis, shown=8)
    assert [row[0] for row in rows[:4]] == [
        "always right",
        "mixed (depends on the seed)",
        "always wrong",
        ALL_QUESTIONS,
    ]
    assert rows[0][1] + rows[1][1] + rows[2][1] == rows[3][1] == analysis.n_questions == 6  # type: ignore[operator]
    assert [row[1] for row in rows[:3]] == [2, 1, 3]
    # One run cannot agree with another: that row says so instead of counting zero.
    single = {
        row[0]: row[1:] for row in category_rows(analyze_misses(_runs()[:1], test_rows=TEST_ROWS), shown=8)
    }
    assert single["… runs agree on another wrong answer (a shared mistake or a bad gold)"] == [
        "–",
        "–",
        "needs 2 or more runs",
    ]


def test_without_the_rows_answers_agree_by_text_only() -> None:
    # Question 4: two runs agree by meaning in different words; without the schema that is not seen.
    analysis = analyze_misses(_runs())
    assert not analysis.rows_resolved
    assert [(c.index, c.gold) for c in analysis.bad_gold_candidates] == [(5, None)]
    assert analysis.always_wrong == (2, 4, 5)


def test_a_single_run_is_no_evidence_against_the_gold() -> None:
    analysis = analyze_misses(_runs()[:1], test_rows=TEST_ROWS)
    assert [c.index for c in analysis.bad_gold_candidates] == [5]


def test_runs_of_different_splits_are_refused() -> None:
    runs = _runs()
    runs[1][0] = {**runs[1][0], "row": "0123456789ab"}
    with pytest.raises(UserError, match="question 0: row differs"):
        analyze_misses(runs)
    other_rows = (SqlExample("q0", CTX, "SELECT 1"), *TEST_ROWS[1:])
    with pytest.raises(UserError, match="question 0: the predictions name row"):
        analyze_misses(_runs(), test_rows=other_rows)


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_loader_names_the_line_and_key(tmp_path: Path) -> None:
    rows = _runs()[0]
    good = _write(tmp_path / "seed-1.predictions.jsonl", rows)
    assert load_predictions(good) == rows
    broken = _write(
        tmp_path / "b.predictions.jsonl", [rows[0], {k: v for k, v in rows[1].items() if k != "row"}]
    )
    with pytest.raises(UserError, match=r"b.predictions.jsonl:2: key 'row' missing"):
        load_predictions(broken)
    wrong_type = _write(tmp_path / "c.predictions.jsonl", [{**rows[0], "exact": "yes"}])
    with pytest.raises(UserError, match=r"c.predictions.jsonl:1: exact = 'yes', expected bool"):
        load_predictions(wrong_type)


def test_command_accepts_records_and_predictions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = _runs()
    paths = [_write(tmp_path / f"seed-{i}.predictions.jsonl", rows) for i, rows in enumerate(runs)]
    (tmp_path / "seed-0.json").write_text("{}", encoding="utf-8")
    out = tmp_path / "out" / "misses.json"
    assert (
        main(["misses", str(tmp_path / "seed-0.json"), str(paths[1]), str(paths[2]), "-o", str(out.parent)])
        == 0
    )
    table = capsys.readouterr().out
    assert "3 run(s), 6 questions in every run" in table
    assert "the first three rows partition the questions (all questions)" in table
    assert "ceiling" not in table
    assert "test rows not at hand" in table
    assert json.loads(out.read_text())["always_wrong"] == [2, 4, 5]
    assert main(["misses", "--json", str(paths[0])]) == 0
    assert json.loads(capsys.readouterr().out)["n_questions"] == 6


def test_command_reads_the_rows_back_through_the_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real record and data file: the split is recomputed, its hash checked, the text used for meaning."""
    setup = SetupConfig.model_validate(
        {"name": "m", "data": {"source": str(tmp_path / "data.jsonl"), "test_size": 6}}
    )
    # The split is a seeded shuffle of positions: put the six questions where the test rows land.
    order = list(range(16))
    random.Random(setup.data.split_seed).shuffle(order)
    examples = [SqlExample(f"f{i}", CTX, f"SELECT name FROM t WHERE votes = {i}") for i in range(16)]
    for example, position in zip(TEST_ROWS, order[-6:], strict=True):
        examples[position] = example
    data = _write(
        tmp_path / "data.jsonl",
        [{"question": e.question, "context": e.context, "answer": e.answer} for e in examples],
    )
    split = make_split(examples, setup.data)
    assert split.test == TEST_ROWS
    paths = []
    for run in range(3):
        preds = [_row(index, run) for index in QUESTIONS]
        record = RunRecord.model_validate({
            "run_id": f"r{run}", "status": "ok", "created": "2026-11-30T00:00:00+00:00", "experiment": "exp_a",
            "setup_name": "m", "seed": run, "stack": "cpu", "host": "h", "fingerprint": "f", "provenance": {},
            "setup": setup.model_dump(mode="json"), "predictions_file": f"seed-{run}.predictions.jsonl",
            "data": {"source": str(data), "split_hash": split.hash, "n_rows": 16, "n_train": 10, "n_test": 6},
        })  # fmt: skip
        path = write_record(tmp_path / "results", record)
        write_lines(predictions_path(path), preds)
        paths.append(path)
    assert main(["misses", "--json", *map(str, paths)]) == 0
    analysis = json.loads(capsys.readouterr().out)
    assert analysis["rows_resolved"] is True
    assert (
        len(analysis["bad_gold_candidates"]) == 2
    )  # the gold that fails to run and the one two runs contest
    # Moved data: the record's path is gone, --data points at the copy, the hash still matches.
    moved = data.rename(tmp_path / "moved.jsonl")
    assert main(["misses", "--json", *map(str, paths)]) == 0
    assert json.loads(capsys.readouterr().out)["rows_resolved"] is False
    assert main(["misses", "--json", "--data", str(moved), *map(str, paths)]) == 0
    assert json.loads(capsys.readouterr().out)["rows_resolved"] is True


def test_command_explains_a_missing_predictions_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "seed-3.json").write_text("{}", encoding="utf-8")
    assert main(["misses", str(tmp_path / "seed-3.json")]) == 2
    assert "no seed-3.predictions.jsonl beside the record" in capsys.readouterr().err
