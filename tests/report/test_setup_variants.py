"""A setup is one set of settings (issue 29): records of one setup name whose settings differ are never
judged or tabulated together. The exact case from the issue: the committed 300-step seeds of Exp A on
the 2-core EPYC, and a new 20-step seed (`make bench PYTEST_ARGS="--lorabench-seeds=3407 --lorabench-set
recipe.steps=20"`) that replaced seed 3407's record: the scorecard read "seed spread 39.6 points
(51.0 / 51.3 / 11.7)" with "settings that differ: –"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.results import RunRecord, load_record, write_record

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
COMMITTED = REPO / "reports/untimed/cpu/cpu-amd-epyc-2c/exp_a/smollm2-135m-lora"


def twenty_step_seed(committed: Path) -> RunRecord:
    """The committed seed-3407 record as the 20-step bf16 run made it: its own settings and scores."""
    data = load_record(committed).model_dump(mode="json")
    data["setup"]["recipe"]["steps"] = 20
    data["run_id"], data["created"] = (
        "20261201T120000.000000Z-aaaaaaaa-s3407-000000",
        "2026-12-01T12:00:00+00:00",
    )
    data["fingerprint"] = "aaaaaaaa00000000"
    data["model"]["precision"] = "bf16"
    data["train"]["steps_done"], data["train"]["loss"] = 20, data["train"]["loss"][:20]
    data["trained"]["exact_match"], data["predictions_file"] = 11.7, None
    return RunRecord.model_validate(data)


@pytest.fixture(scope="module")
def scorecard(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("pooled")
    results = root / "results"
    target = results / "cpu/cpu-amd-epyc-2c/exp_a/smollm2-135m-lora"
    shutil.copytree(COMMITTED, target)
    # As `make bench` wrote it: the new record takes seed-3407's name, the old one is kept as prev-.
    write_record(results, twenty_step_seed(COMMITTED / "seed-3407.json"))
    assert main(["report", str(results), "-o", str(root / "reports"), "--benchmarks", str(BENCHMARKS)]) == 0
    return (root / "reports/cpu-amd-epyc-2c/cpu/scorecard.md").read_text(encoding="utf-8")


def test_seeds_of_different_settings_are_not_judged_as_one(scorecard: str) -> None:
    assert "39.6" not in scorecard
    spread = next(line for line in scorecard.splitlines() if "| seed spread" in line)
    # Judged on the two 300-step seeds only; the 20-step seed's 11.7 is not among them.
    assert "11.7" not in spread and "51.0" in spread and "51.3" in spread


def test_a_run_with_overrides_is_its_own_setup_named_by_them(scorecard: str) -> None:
    rows = [line for line in scorecard.splitlines() if line.startswith("| smollm2-135m-lora")]
    names = [row.split("|")[1].strip() for row in rows]
    assert "smollm2-135m-lora (recipe.steps=20)" in names
    plain = next(row for row in rows if row.split("|")[1].strip() == "smollm2-135m-lora")
    assert "| 2/2 " in plain  # the two 300-step seeds, not 3


def test_compare_does_not_pool_them_either(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    for side in (old, new):
        shutil.copytree(COMMITTED, side / "cpu/cpu-amd-epyc-2c/exp_a/smollm2-135m-lora")
    write_record(new, twenty_step_seed(COMMITTED / "seed-3407.json"))
    assert main(["compare", str(old), str(new), "--fail-on-regression"]) == 0
    out = capsys.readouterr().out
    assert "not compared: exp_a/smollm2-135m-lora (recipe.steps=20) (only in NEW)" in out
    (em,) = [line for line in out.splitlines() if "| trained EM %" in line]
    assert "| 3 / 2 " in em  # n old / new: the 300-step seeds only, 3 old and 2 new
    assert "11.7" not in out


def test_a_shortened_run_reported_alone_is_not_judged_as_the_suite_setup(tmp_path: Path) -> None:
    """Issue 36: a one-seed 20-step run reported by itself showed the 300-step gain claim as FAIL under
    the plain setup name. It is its own setup, named by its override; the suite's claims have no runs."""
    results = tmp_path / "results"
    write_record(results, twenty_step_seed(COMMITTED / "seed-3407.json"))
    assert (
        main(["report", str(results), "-o", str(tmp_path / "reports"), "--benchmarks", str(BENCHMARKS)]) == 0
    )
    scorecard = (tmp_path / "reports/cpu-amd-epyc-2c/cpu/scorecard.md").read_text(encoding="utf-8")
    claims = [line for line in scorecard.splitlines() if line.startswith("| exp_a ")]
    assert claims and all("*not evaluable*" in line for line in claims), claims
    assert "FAIL" not in scorecard
    names = [
        line.split("|")[1].strip()
        for line in scorecard.splitlines()
        if line.startswith("| smollm2-135m-lora")
    ]
    assert names == ["smollm2-135m-lora (recipe.steps=20)"]


def test_the_rule_can_fail_a_run_matching_its_file_keeps_the_plain_name(tmp_path: Path) -> None:
    """The clean case: the committed 300-step seed alone is the suite's setup and is judged."""
    results = tmp_path / "results"
    shutil.copy(COMMITTED / "seed-3407.json", tmp_path / "seed.json")
    write_record(results, load_record(tmp_path / "seed.json"))
    assert (
        main(["report", str(results), "-o", str(tmp_path / "reports"), "--benchmarks", str(BENCHMARKS)]) == 0
    )
    scorecard = (tmp_path / "reports/cpu-amd-epyc-2c/cpu/scorecard.md").read_text(encoding="utf-8")
    gain = next(line for line in scorecard.splitlines() if "| gain on every seed" in line)
    assert "*not evaluable*" not in gain and "pass" in gain.lower()
    names = [
        line.split("|")[1].strip()
        for line in scorecard.splitlines()
        if line.startswith("| smollm2-135m-lora")
    ]
    assert names == ["smollm2-135m-lora"]
