"""`lorabench compare`: a slower stack and a less accurate one are flagged; an unchanged one is not;
unlike sides are refused unless asked; a metric missing on one side is named and fails the check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import HOST_AMD, HOST_CPU, SEEDS, STACK_CPU, STACK_ROCM, make_record, predictions, write

from harness.cli import main
from harness.report.compare import MetricChange, compare_records
from harness.report.groups import load_records


def write_side(results: Path, train_s: tuple[float, ...], skill: int, broken: int = 0) -> Path:
    for n, seed in enumerate(SEEDS):
        rows = predictions(seed, skill)
        for row in rows[6 : 6 + broken]:  # questions every seed got right, now wrong
            row.update(exact=False, semantic=False, prediction=row["prediction"] + " LIMIT 0")
        record = make_record(host=HOST_AMD, stack=STACK_ROCM, experiment="exp-a", setup_name="smollm2-bf16",
                             seed=seed, created=f"2026-11-28T10:0{n}:00+00:00", train_s=train_s[n], rows=rows)  # fmt: skip
        write(results, record, rows)
    return results


def by_metric(old: Path, new: Path) -> dict[str, MetricChange]:
    changes, _ = compare_records(load_records([old]), load_records([new]))
    return {c.metric: c for c in changes}


def test_slower_is_a_regression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_side(tmp_path / "old", (140.0, 143.0, 146.0), skill=0)
    new = write_side(tmp_path / "new", (170.0, 172.0, 175.0), skill=0)
    time = by_metric(old, new)["train_time_s"]
    assert time.is_significant and time.is_regression
    assert time.ratio == pytest.approx(517 / 429)
    accuracy = by_metric(old, new)["exact_match_pct"]
    assert not accuracy.is_significant and accuracy.method == "exact McNemar"
    assert main(["compare", str(old), str(new)]) == 0
    assert main(["compare", str(old), str(new), "--fail-on-regression"]) == 1
    assert "REGRESSION" in capsys.readouterr().out


def test_faster_is_not_a_regression(tmp_path: Path) -> None:
    old = write_side(tmp_path / "old", (170.0, 172.0, 175.0), skill=0)
    new = write_side(tmp_path / "new", (140.0, 143.0, 146.0), skill=0)
    assert main(["compare", str(old), str(new), "--fail-on-regression"]) == 0


def test_accuracy_drop_is_a_regression(tmp_path: Path) -> None:
    old = write_side(tmp_path / "old", (140.0, 143.0, 146.0), skill=0)
    new = write_side(tmp_path / "new", (140.0, 143.0, 146.0), skill=0, broken=6)
    accuracy = by_metric(old, new)["exact_match_pct"]
    # 18 questions (6 per seed) flip right → wrong, none the other way: p = 2 · 0.5^18.
    assert accuracy.p_value == pytest.approx(2 * 0.5**18)
    assert accuracy.is_regression
    assert main(["compare", str(old), str(new), "--fail-on-regression"]) == 1


def test_nothing_in_common_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_side(tmp_path / "old", (140.0, 143.0, 146.0), skill=0)
    (tmp_path / "empty").mkdir()
    assert main(["compare", str(old), str(tmp_path / "empty")]) == 2
    assert "no run records" in capsys.readouterr().err


def test_unlike_sides_are_refused_naming_each_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write_side(tmp_path / "old", (140.0, 143.0, 146.0), skill=0)
    new = tmp_path / "new"
    for n, seed in enumerate(SEEDS):  # the same setup on a CPU host and stack, in fp32
        rows = predictions(seed, 0)
        write(new, make_record(host=HOST_CPU, stack=STACK_CPU, experiment="exp-a", setup_name="smollm2-bf16", seed=seed,
                               created=f"2026-11-28T10:0{n}:00+00:00", precision="fp32", train_s=900.0 + n, rows=rows), rows)  # fmt: skip
    assert main(["compare", str(old), str(new)]) == 2
    err = capsys.readouterr().err
    assert "OLD and NEW are unlike" in err and "--allow-unlike" in err
    assert f"host kind: {HOST_AMD['id']} vs {HOST_CPU['id']}" in err and "stack: rocm7.2-hf5.5 vs cpu" in err
    assert "precision: bf16 vs fp32" in err
    # Asked for, it compares and says so on every row.
    assert main(["compare", str(old), str(new), "--allow-unlike"]) == 0
    out = capsys.readouterr().out
    assert "setup (unlike sides)" in out and "unlike sides, compared as asked (--allow-unlike)" in out


def test_a_metric_missing_on_one_side_is_named_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write_side(tmp_path / "old", (140.0, 143.0, 146.0), skill=0)
    new = tmp_path / "new"
    for n, seed in enumerate(SEEDS):  # trained and timed, but never scored (no metrics in the records)
        write(new, make_record(host=HOST_AMD, stack=STACK_ROCM, experiment="exp-a", setup_name="smollm2-bf16",
                               seed=seed, created=f"2026-11-28T10:0{n}:00+00:00", train_s=140.0 + 3 * n, rows=None), None)  # fmt: skip
    assert main(["compare", str(old), str(new), "--fail-on-regression"]) == 1
    out = capsys.readouterr().out
    assert "missing: exp-a/smollm2-bf16: trained EM % on NEW" in out
    assert "0 regression(s)" in out and "1 metric(s) missing on one side" in out
    assert main(["compare", str(old), str(new)]) == 0  # without the flag it reports, as for a regression


def test_output_folder_gets_markdown_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_side(tmp_path / "old", (140.0, 143.0, 146.0), skill=0)
    new = write_side(tmp_path / "new", (141.0, 142.0, 147.0), skill=0)
    assert main(["compare", str(old), str(new), "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out/compare.md").read_text(
        encoding="utf-8"
    ).strip() == capsys.readouterr().out.strip()
    assert (
        json.loads((tmp_path / "out/compare.json").read_text(encoding="utf-8"))["format"]
        == "lorabench-compare/2"
    )
    (tmp_path / "file").write_text("x")
    assert main(["compare", str(old), str(new), "-o", str(tmp_path / "file")]) == 2


def test_untimed_against_timed_is_unlike(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_side(tmp_path / "old", (140.0, 143.0, 146.0), skill=0)
    new = tmp_path / "new"
    for n, seed in enumerate(SEEDS):  # the same setup and host, but not timed under the guard
        rows = predictions(seed, 0)
        write(new, make_record(host=HOST_AMD, stack=STACK_ROCM, experiment="exp-a", setup_name="smollm2-bf16", seed=seed,
                               created=f"2026-11-28T10:0{n}:00+00:00", train_s=140.0 + n, rows=rows, timed=False), rows)  # fmt: skip
    assert main(["compare", str(old), str(new)]) == 2
    assert "timing: timed (guard) vs not timed" in capsys.readouterr().err


def steady_side(results: Path, step_s: float | None) -> Path:
    """The story's side, its records given a steady step time (None: left without, as before they had one)."""
    write_side(results, (140.0, 143.0, 146.0), skill=0)
    for path in results.rglob("seed-*[0-9].json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        if step_s is not None:
            data["train"]["step_s"] = step_s
        path.write_text(json.dumps(data), encoding="utf-8")
    return results


def test_steady_against_whole_run_is_flagged_and_never_a_regression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = (
        steady_side(tmp_path / "old", 1.5),
        steady_side(tmp_path / "new", None),
    )  # NEW lacks train.step_s
    assert main(["compare", str(old), str(new), "--fail-on-regression"]) == 0
    out = capsys.readouterr().out
    assert (
        "window: exp-a/smollm2-bf16: tokens/s is read over the steady steps on OLD and the whole run on NEW"
        in out
    )
    assert main(["compare", str(old), str(new), "--json"]) == 0
    changes = {c["metric"]: c for c in json.loads(capsys.readouterr().out)["changes"]}
    assert changes["mfu_pct"]["windows_differ"] and changes["tokens_per_s"]["window_new"] == "whole"
    assert changes["tokens_per_s"]["p_value"] is None and not changes["tokens_per_s"]["regression"]
    assert not changes["train_time_s"]["windows_differ"]


def test_the_same_window_on_both_sides_is_not_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = steady_side(tmp_path / "old", 1.5), steady_side(tmp_path / "new", 1.5)
    assert main(["compare", str(old), str(new), "--json"]) == 0
    changes = {c["metric"]: c for c in json.loads(capsys.readouterr().out)["changes"]}
    assert changes["tokens_per_s"]["window_old"] == changes["tokens_per_s"]["window_new"] == "steady"
    assert not any(c["windows_differ"] for c in changes.values())


def test_a_killed_side_is_refused_for_that_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_side(tmp_path / "old", (140.0, 143.0, 146.0), skill=0)
    new = tmp_path / "new"
    write(new, make_record(host=HOST_AMD, stack=STACK_ROCM, experiment="exp-a", setup_name="smollm2-bf16", seed=42,
                           created="2026-11-28T10:00:00+00:00", status="killed", reason="stopped by SIGTERM",
                           train_s=None, rows=None), None)  # fmt: skip
    assert main(["compare", str(old), str(new), "--json"]) == 2
    captured = capsys.readouterr()
    refusal = json.loads(captured.out)
    assert refusal["exit_code"] == 2 and "unlike" not in refusal["error"]
    assert (
        "NEW exp-a/smollm2-bf16: no run finished (seed 42: killed (stopped by SIGTERM))" in refusal["error"]
    )
    assert refusal["error"] in captured.err  # the same line on stderr
