"""Miss analysis across runs, its loader and the `lorabench misses` command, on real files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.errors import UserError
from harness.tasks.sql.misses import analyze_misses, load_predictions
from harness.tasks.sql.scoring import exact_match
from harness.tasks.sql.semantic import semantic_match

CTX = "CREATE TABLE t (name VARCHAR, year VARCHAR, votes VARCHAR)"
# index -> gold, and per run the prediction; the base model's answer is the same in every run.
QUESTIONS: dict[int, tuple[str, list[str], str]] = {
    0: ("SELECT name FROM t WHERE year = '1990'", ["SELECT name FROM t WHERE year = '1990'"] * 3, "SELECT year FROM t"),
    1: ("SELECT name FROM t WHERE year = 71", ["SELECT name FROM t WHERE year = 71"] * 3, 'SELECT name FROM t WHERE year = "71"'),
    2: ("SELECT COUNT(name) FROM t", ["SELECT name FROM t", "SELECT year FROM t", "SELECT votes FROM t"], "SELECT name FROM t"),
    3: ("SELECT name FROM t", ["SELECT name FROM t", "SELECT year FROM t", "SELECT name FROM t"], "SELECT votes FROM t"),
    # Gold counts where the question asks for the maximum; two runs agree, in different words.
    4: ("SELECT COUNT(votes) FROM t WHERE name = 'a'", ["SELECT MAX(votes) FROM t WHERE name = 'a'", 'select max(votes) from t where "a" = name', "SELECT votes FROM t"], "SELECT votes FROM t"),
    5: ("SELECT name FROM t WHERE x = 3 OFFSET 095", ["SELECT name FROM t"] * 3, "SELECT name FROM t"),
}


def _row(index: int, run: int) -> dict[str, Any]:
    gold, preds, base = QUESTIONS[index]
    pred = preds[run]
    return {
        "index": index, "question": f"q{index}", "context": CTX, "gold": gold, "prediction": pred,
        "base_prediction": base, "exact": exact_match(pred, gold), "executes": True,
        "semantic": semantic_match(pred, gold, CTX), "base_exact": exact_match(base, gold),
        "base_semantic": semantic_match(base, gold, CTX),
    }


def _runs() -> list[list[dict[str, Any]]]:
    return [[_row(i, run) for i in QUESTIONS] for run in range(3)]


def test_categories_style_fixes_and_bad_gold() -> None:
    analysis = analyze_misses(_runs())
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
    assert bad[4].reason.startswith("2 of 3 runs agree")
    assert analysis.estimated_exact_match_ceiling == round(100 * 4 / 6, 1)
    json.dumps(analysis.to_dict())


def test_a_single_run_is_no_evidence_against_the_gold() -> None:
    analysis = analyze_misses(_runs()[:1])
    assert [c.index for c in analysis.bad_gold_candidates] == [5]


def test_runs_of_different_splits_are_refused() -> None:
    runs = _runs()
    runs[1][0] = {**runs[1][0], "gold": "SELECT 1"}
    with pytest.raises(UserError, match="question 0: gold differs"):
        analyze_misses(runs)


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_loader_names_the_line_and_key(tmp_path: Path) -> None:
    rows = _runs()[0]
    good = _write(tmp_path / "seed-1.predictions.jsonl", rows)
    assert load_predictions(good) == rows
    broken = _write(tmp_path / "b.predictions.jsonl", [rows[0], {k: v for k, v in rows[1].items() if k != "gold"}])
    with pytest.raises(UserError, match=r"b.predictions.jsonl:2: key 'gold' missing"):
        load_predictions(broken)
    wrong_type = _write(tmp_path / "c.predictions.jsonl", [{**rows[0], "exact": "yes"}])
    with pytest.raises(UserError, match=r"c.predictions.jsonl:1: exact = 'yes', expected bool"):
        load_predictions(wrong_type)


def test_command_accepts_records_and_predictions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = _runs()
    paths = [_write(tmp_path / f"seed-{i}.predictions.jsonl", rows) for i, rows in enumerate(runs)]
    (tmp_path / "seed-0.json").write_text("{}", encoding="utf-8")
    out = tmp_path / "misses.json"
    assert main(["misses", str(tmp_path / "seed-0.json"), str(paths[1]), str(paths[2]), "-o", str(out)]) == 0
    table = capsys.readouterr().out
    assert "3 run(s), 6 questions in every run" in table
    assert "estimated exact-match ceiling: 66.7%" in table
    assert json.loads(out.read_text())["always_wrong"] == [2, 4, 5]
    assert main(["misses", "--json", str(paths[0])]) == 0
    assert json.loads(capsys.readouterr().out)["n_questions"] == 6


def test_command_explains_a_missing_predictions_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "seed-3.json").write_text("{}", encoding="utf-8")
    assert main(["misses", str(tmp_path / "seed-3.json")]) == 2
    assert "no seed-3.predictions.jsonl beside the record" in capsys.readouterr().err
