"""The scorecard judges the suite's claims from records on disk: a failed claim renders as failed and
is never green, what cannot be judged says why, an errored check is an error, a one-run speedup shows
its n, and a comparison names every setting its two setups differ in."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from builders import EXP_A_SETUP, EXP_B_SETUP, HOST_AMD, SEEDS, STACK_ROCM, make_record, predictions, write

from harness.report.claim_table import evaluate_claims, load_setups
from harness.report.groups import group_records, load_records
from harness.report.pipeline import build_reports
from harness.results import RunRecord
from harness.suite.catalogue import assert_claim

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def amd(
    experiment: str, setup: str, seed: int, rows: list[dict[str, Any]] | None, **kwargs: Any
) -> RunRecord:
    return make_record(host=HOST_AMD, stack=STACK_ROCM, experiment=experiment, setup_name=setup, seed=seed,
                       created=f"2026-11-28T10:00:{seed % 60:02d}+00:00", rows=rows, **kwargs)  # fmt: skip


def wrong_from(rows: list[dict[str, Any]], first: int, last: int) -> list[dict[str, Any]]:
    """The same answers with questions first..last made wrong (a less accurate setup)."""
    return [{**r, "exact": False, "semantic": False} if first <= r["index"] <= last else r for r in rows]


def render(results: Path, benchmarks: Path = BENCHMARKS) -> tuple[str, str]:
    out = results.parent / "reports"
    build_reports([results], out, benchmarks)
    (scorecard,) = out.glob("*/*/scorecard.md")
    return scorecard.read_text(encoding="utf-8"), (out / "README.md").read_text(encoding="utf-8")


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split(" | ")]


def claim_row(text: str, claim: str) -> list[str]:
    (line,) = [line for line in text.splitlines() if line.startswith("| exp_") and f"| {claim} " in line]
    return cells(line)


def verdict(text: str) -> str:
    return text.splitlines()[2].strip("*")


def write_ab(results: Path, wrong: tuple[int, int] | None, seeds: tuple[int, ...] = SEEDS) -> None:
    for seed in seeds:
        rows = predictions(seed, skill=0)
        write(results, amd("exp_a", EXP_A_SETUP, seed, rows), rows)
        rows4 = wrong_from(rows, *wrong) if wrong else rows
        write(results, amd("exp_b", EXP_B_SETUP, seed, rows4, precision="4bit"), rows4)


def test_a_failed_claim_renders_as_failed_and_the_verdict_is_not_green(tmp_path: Path) -> None:
    write_ab(tmp_path / "results", wrong=(6, 12))  # 4-bit loses 7 of 24 questions on every seed
    text, index = render(tmp_path / "results")
    row = claim_row(text, "accuracy equivalent to bf16")
    assert row[2] == "exp_a/smollm2-135m-lora vs exp_b/smollm2-135m-4bit"
    assert row[3] == "within ±3 points (TOST, 90% interval) (`exp_b_4bit.toml`)"
    assert row[4].startswith("not shown equivalent within ±3 points: mean difference -29.2 points")
    assert row[5] == "**FAIL**"
    assert row[6] == "precision: bf16 (auto) vs 4bit"  # exp_a.toml asks precision = "auto"
    assert verdict(text).startswith("FAIL · 5 of 24 claims judged: 1 fail,")
    assert "| FAIL · 5 of 24 claims judged: 1 fail," in index


def test_the_same_records_without_the_loss_pass(tmp_path: Path) -> None:
    # The control for the test above: identical answers are equivalent, and nothing fails.
    write_ab(tmp_path / "results", wrong=None)
    text, _ = render(tmp_path / "results")
    assert claim_row(text, "accuracy equivalent to bf16")[5] == "pass"
    assert not verdict(text).startswith("FAIL")
    assert "**FAIL**" not in text


def test_one_seed_is_not_evaluable_and_a_speedup_shows_n_1(tmp_path: Path) -> None:
    write_ab(tmp_path / "results", wrong=None, seeds=(3407,))
    text, index = render(tmp_path / "results")
    spread = claim_row(text, "seed spread")
    assert spread[4] == "seed spread needs at least 2 seeds, got 1" and spread[5] == "*not evaluable*"
    assert (
        claim_row(text, "accuracy equivalent to bf16")[4]
        == "equivalence needs at least 2 seeds run on both sides, got 1"
    )
    assert verdict(text).startswith("INCOMPLETE · 3 of 24 claims judged: 4 not evaluable, 3 pass")
    assert "| INCOMPLETE ·" in index
    (row,) = [line for line in text.splitlines() if line.startswith(f"| {EXP_B_SETUP} vs {EXP_A_SETUP}")]
    assert "(n = 1)" in row
    assert not re.search(r"\d× \[(\d\.\d\d)–\1\]", text)  # never a zero-width "interval" from one run


def test_a_run_that_did_not_finish_fails_its_claims(tmp_path: Path) -> None:
    write_ab(tmp_path / "results", wrong=None)
    killed = amd(
        "exp_b",
        EXP_B_SETUP,
        42,
        None,
        status="killed",
        reason="stopped by SIGTERM",
        train_s=None,
        precision="4bit",
    )  # the same setup's run (other settings would make it a setup of its own)
    write(tmp_path / "results", killed, None)
    text, _ = render(tmp_path / "results")
    row = claim_row(text, "accuracy equivalent to bf16")
    assert (
        row[4] == "exp_b/smollm2-135m-4bit seed 42: run killed: stopped by SIGTERM" and row[5] == "**FAIL**"
    )


def test_an_errored_check_is_an_error_and_a_skipped_one_is_named(tmp_path: Path) -> None:
    error = {
        "verdict": "error",
        "detail": "AttributeError: 'NoneType' object has no attribute 'max'",
        "evidence": {},
    }
    skipped = {"verdict": "skipped", "detail": "batches have no attention_mask", "evidence": {}}
    passed = {"verdict": "pass", "detail": "", "evidence": {}}
    for seed in SEEDS:
        rows = predictions(seed, skill=0)
        checks = {"cache_parity": passed, "mask_audit": passed}
        write(tmp_path / "results", amd("exp_a", EXP_A_SETUP, seed, rows, checks=checks), rows)
        checks = {"cache_parity": error, "mask_audit": skipped}
        write(
            tmp_path / "results",
            amd("exp_f", "smollm2-135m-unsloth", seed, rows, backend="unsloth", checks=checks),
            rows,
        )
    text, _ = render(tmp_path / "results")
    (cache,) = [line for line in text.splitlines() if "KV sharing breaks" in line]
    assert "**check error**" in cache
    assert (
        "cache_parity errored in 3 of 6 runs (exp_f/smollm2-135m-unsloth seeds 42, 1234, 3407: AttributeError"
        in cache
    )
    (mask,) = [line for line in text.splitlines() if "loss on the prompt" in line]
    assert "**partly tested**" in mask and "mask_audit was skipped in 3 of 6 runs" in mask
    assert "works as-is" not in cache + mask
    assert "checks: 3 errored, 3 skipped" in verdict(text)
    assert not verdict(text).startswith("PASS")


def test_a_time_claim_on_unguarded_runs_is_not_evaluable(tmp_path: Path) -> None:
    for n, seed in enumerate(SEEDS):
        rows = predictions(seed, skill=0)
        write(
            tmp_path / "results", amd("exp_a", EXP_A_SETUP, seed, rows, train_s=100.0 + n, timed=False), rows
        )
        write(tmp_path / "results", amd("exp_f", "smollm2-135m-unsloth", seed, rows, backend="unsloth",
                                        train_s=50.0 + n, timed=False), rows)  # fmt: skip
    text, _ = render(tmp_path / "results")
    row = claim_row(text, "speedup over hf")
    assert row[5] == "*not evaluable*"
    assert "were not timed under the quiet-machine guard" in row[4] and "1.98× per run" in row[4]
    assert claim_row(text, "accuracy equivalent to hf")[5] == "pass"  # accuracy does not need a quiet machine


def test_comparisons_name_what_differs_and_like_for_like_comes_first(tmp_path: Path) -> None:
    for seed in SEEDS:
        rows = predictions(seed, skill=0)
        graphed = amd("exp_a", EXP_A_SETUP, seed, rows)
        graphed = graphed.model_copy(update={
            "setup": graphed.setup.model_copy(update={"recipe": graphed.setup.recipe.model_copy(update={"compile": "auto"})}),
            "train": graphed.train.model_copy(update={"graphs": {"shapes": 4}}),  # type: ignore[union-attr]
        })  # fmt: skip
        write(tmp_path / "results", graphed, rows)
        write(tmp_path / "results", amd("exp_a", "smollm2-135m-lora-eager", seed, rows, steps=300), rows)
        write(tmp_path / "results", amd("exp_f", "smollm2-135m-unsloth", seed, rows, backend="unsloth"), rows)
    text, _ = render(tmp_path / "results")
    section = text[text.index("## Experiment `exp_f`") :]
    rows = [cells(line) for line in section.splitlines() if line.startswith("| smollm2-135m-unsloth vs ")]
    # Against the exp_a setup that differs least (the eager one), like for like: only the backend differs,
    # named in the row's order (unsloth first, as the row names it).
    assert [row[:2] for row in rows] == [
        ["smollm2-135m-unsloth vs smollm2-135m-lora-eager", "backend: unsloth vs hf"]
    ]
    assert "**Unlike**" not in section.split("## ", 2)[1]
    # The claim is judged against the suite's reference (exp_a.toml): a time claim across compile modes
    # is not evaluable, and the claim names every setting the two differ in.
    speedup = claim_row(text, "speedup over hf")
    assert speedup[5] == "*not evaluable*" and "different compile modes" in speedup[4]
    assert speedup[6] == "backend: hf vs unsloth; recipe.compile: graphs (auto) vs none"


def test_without_the_suites_setup_files_the_claims_are_not_judged(tmp_path: Path) -> None:
    write_ab(tmp_path / "results", wrong=None)
    text, _ = render(tmp_path / "results", benchmarks=tmp_path / "nowhere")
    assert "Not judged: the suite's setup files" in text
    assert verdict(text).startswith("INCOMPLETE · claims not judged")


def test_miss_categories_partition_the_questions(tmp_path: Path) -> None:
    write_ab(tmp_path / "results", wrong=(6, 12))
    text, _ = render(tmp_path / "results")
    section = text[text.index("### Misses: `smollm2-135m-4bit`") :]
    assert "The first three rows partition them" in section and "overlap those rows and each other" in section
    counts = {
        line.split("|")[1].strip(): line.split("|")[2].strip()
        for line in section.splitlines()[4:14]
        if line.startswith("|")
    }
    parts = [int(counts[k]) for k in ("always right", "mixed (depends on the seed)", "always wrong")]
    assert sum(parts) == int(counts["all questions"]) == 24
    assert "ceiling" not in section.split("\n\n")[1].replace("no exact-match ceiling is estimated", "")


def test_the_report_and_the_suite_judge_alike(tmp_path: Path) -> None:
    # One judgment, two readers: the scorecard's cell is the suite's assertion message, word for word.
    write_ab(tmp_path / "results", wrong=(6, 12))
    (group,) = group_records(load_records([tmp_path / "results"]))
    catalogue = load_setups(BENCHMARKS)
    assert catalogue is not None
    results = {r.claim.name: r for r in evaluate_claims(group, catalogue) or ()}
    by_setup = {name: sorted((r for r in group.records if r.setup_name == name), key=lambda r: r.seed)
                for name in (EXP_A_SETUP, EXP_B_SETUP)}  # fmt: skip
    with pytest.raises(AssertionError) as raised:
        assert_claim(catalogue.find("exp_b", "accuracy equivalent to bf16"),
                     {"bf16": by_setup[EXP_A_SETUP], "4bit": by_setup[EXP_B_SETUP]}, catalogue.setups)  # fmt: skip
    assert results["accuracy equivalent to bf16"].measured == str(raised.value)


def test_the_memory_claim_takes_the_bf16_run_of_the_4bit_runs_compile_mode(tmp_path: Path) -> None:
    """Exp B's memory claim compares 4-bit with bf16 in the same compile mode: a graphed bf16 run keeps
    CUDA graph pools. Against the graphed runs alone it is not evaluable; with bf16 runs of the same setup
    made with `--set recipe.compile=none`, it is judged on those, and says so."""
    quantizable = {
        "quantizable_fraction": {
            "verdict": "pass",
            "detail": "",
            "evidence": {"max_saving_bytes": int(1.2 * 1024**3)},
        }
    }
    for seed in SEEDS:
        rows = predictions(seed, skill=0)
        graphed = amd("exp_a", EXP_A_SETUP, seed, rows, vram_gib=2.91, checks=quantizable)
        graphed = graphed.model_copy(update={
            "setup": graphed.setup.model_copy(update={"recipe": graphed.setup.recipe.model_copy(update={"compile": "auto"})}),
            "train": graphed.train.model_copy(update={"graphs": {"shapes": 4}}),  # type: ignore[union-attr]
        })  # fmt: skip
        write(tmp_path / "results", graphed, rows)
        write(
            tmp_path / "results", amd("exp_b", EXP_B_SETUP, seed, rows, precision="4bit", vram_gib=2.21), rows
        )
    text, _ = render(tmp_path / "results")
    row = claim_row(text, "memory saved as predicted")
    assert row[5] == "*not evaluable*" and "recipe.compile: graphs (auto) vs none" in row[4]
    for seed in SEEDS:  # the same bf16 setup, eager: another setup by its settings, named by them
        rows = predictions(seed, skill=0)
        eager = amd("exp_a", EXP_A_SETUP, seed, rows, vram_gib=1.44, checks=quantizable)
        eager = eager.model_copy(update={"run_id": eager.run_id + "-eager", "created": "2026-11-29T10:00:00+00:00",
                                         "setup": eager.setup.model_copy(update={"recipe": eager.setup.recipe.model_copy(update={"compile": "none"})})})  # fmt: skip
        write(tmp_path / "more", eager, rows)
    out = tmp_path / "reports2"
    build_reports([tmp_path / "results", tmp_path / "more"], out, BENCHMARKS)
    text = next(out.glob("*/*/scorecard.md")).read_text(encoding="utf-8")
    row = claim_row(text, "memory saved as predicted")
    # 4-bit (2.21 GiB) used more than eager bf16 (1.44 GiB): the claim fails, as it should.
    assert row[5] == "**FAIL**" and "bf16: `smollm2-135m-lora (recipe.compile=none)`" in row[4], row
