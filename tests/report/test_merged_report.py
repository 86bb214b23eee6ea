"""Many runners, one report: `lorabench report` over several artifact folders (one per CI runner) renders
one index sorted platform / stack / host, compares the same setup across hosts without pooling their
records, and judges Exp E's cross-stack claims on two stacks' records from two folders."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from builders import HOST_AMD, SEEDS, STACK_ROCM, make_record, predictions, write

from harness.cli import main
from harness.results import load_record

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
GOLDEN = Path(__file__).resolve().parent / "golden" / "merged" / "README.md"
# Committed records of one setup from two hosts: the 2-core CPU machine and the lent H200s.
CPU_RUNS = REPO / "reports/untimed/cpu/cpu-amd-epyc-2c/exp_a/smollm2-135m-lora"
H200_RUNS = REPO / "reports/untimed/h200-image/nvidia-h200x2/exp_a/smollm2-135m-lora"


def artifact(root: Path, runs: Path) -> Path:
    """An artifact folder as a CI runner uploads it: results/<stack>/<host>/<experiment>/<setup>/…"""
    target = root / runs.relative_to(REPO / "reports")
    shutil.copytree(runs, target)
    return root


@pytest.fixture
def merged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # relative folder names, so the index names them the same every time
    artifact(tmp_path / "artifact-h200", H200_RUNS)
    artifact(tmp_path / "artifact-cpu", CPU_RUNS)
    assert (
        main(["report", "artifact-h200", "artifact-cpu", "-o", "reports", "--benchmarks", str(BENCHMARKS)])
        == 0
    )
    if os.environ.get("LORABENCH_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp_path / "reports" / "README.md", GOLDEN)
    return tmp_path / "reports"


def test_two_artifact_folders_make_one_index(merged: Path) -> None:
    index = (merged / "README.md").read_text(encoding="utf-8")
    assert index == GOLDEN.read_text(encoding="utf-8")
    rows = [
        line
        for line in index.splitlines()
        if line.startswith(("| PASS", "| FAIL", "| INCOMPLETE", "| NO CLAIMS"))
    ]
    # The verdict word first, then claims judged out of the suite's; sorted platform / stack / host,
    # whatever order the folders came in.
    assert [row.split("|")[3].strip() for row in rows] == ["CPU", "CUDA 13.0"]
    assert [row.split("|")[2].strip() for row in rows] == ["2 / 24", "2 / 24"]
    assert "- No AMD GPU record yet (ROCm)" in index
    for scorecard in ("cpu-amd-epyc-2c/cpu/scorecard.md", "nvidia-h200x2/h200-image/scorecard.md"):
        # Each scorecard holds its own host's three runs, never the other's.
        assert "3 of 3 runs ok" in (merged / scorecard).read_text(encoding="utf-8")


def test_the_same_setup_on_two_hosts_is_compared_never_pooled(merged: Path) -> None:
    index = (merged / "README.md").read_text(encoding="utf-8")
    section = index.split("### `exp_a/smollm2-135m-lora` on 2 hosts × stacks", 1)[1]
    assert (
        "| cpu-amd-epyc-2c · cpu (CPU)" in section and "| nvidia-h200x2 · h200-image (CUDA 13.0)" in section
    )
    # Compared only in the table labelled unlike: the sides differ in more than the host (precision,
    # compile mode, commit), each named in the row's order (H200 first, as the row names it).
    unlike = section.split("**Unlike**", 1)[1]
    assert "| nvidia-h200x2 · h200-image (CUDA 13.0) vs cpu-amd-epyc-2c · cpu (CPU)" in unlike
    assert "device: cuda (auto) vs cpu (auto)" in unlike and "precision: bf16 (auto) vs fp32 (auto)" in unlike
    assert "Like for like:" not in section
    # Same setup and seed, different host: different fingerprints, so neither record stands in for the other.
    cpu = load_record(CPU_RUNS / "seed-3407.json")
    h200 = load_record(H200_RUNS / "seed-3407.json")
    assert (cpu.experiment, cpu.setup_name, cpu.seed) == (h200.experiment, h200.setup_name, h200.seed)
    assert cpu.fingerprint != h200.fingerprint


EXP_E = "smollm2-135m-lora"  # benchmarks/setups/exp_e.toml's name, experiment exp_e


def test_exp_e_is_judged_across_two_stacks_artifacts(tmp_path: Path) -> None:
    """Two runners of one host, one stack each: the index judges the cross-stack claims on both."""
    other_stack = {
        **STACK_ROCM,
        "name": "rocm7.2-hf5.17",
        "packages": {**STACK_ROCM["packages"], "transformers": "5.17.0"},
    }
    for folder, stack, skill, train_s in (("a", STACK_ROCM, 0, 140.0), ("b", other_stack, 1, 150.0)):
        for n, seed in enumerate(SEEDS):
            rows = predictions(seed, skill=skill)
            write(tmp_path / folder, make_record(host=HOST_AMD, stack=stack, experiment="exp_e", setup_name=EXP_E, seed=seed,
                                                 created=f"2026-11-28T1{n}:00:00+00:00", train_s=train_s + n, rows=rows), rows)  # fmt: skip
    out = tmp_path / "reports"
    assert (
        main(
            [
                "report",
                str(tmp_path / "b"),
                str(tmp_path / "a"),
                "-o",
                str(out),
                "--benchmarks",
                str(BENCHMARKS),
            ]
        )
        == 0
    )
    index = (out / "README.md").read_text(encoding="utf-8")
    section = index.split("## Across stacks of one host", 1)[1]
    assert "### amd-radeon-rx-7900-xtx: rocm7.2-hf5.17 → rocm7.2-hf5.5" in section
    lines = {line.split("|")[2].strip(): line for line in section.splitlines() if line.startswith("| exp_e")}
    assert set(lines) == {
        "accuracy equivalent across stacks",
        "time ratio across stacks",
        "the stacks differ",
    }
    assert (
        "| pass " in lines["the stacks differ"]
        and "transformers 5.17.0 → 5.5.0" in lines["the stacks differ"]
    )
    assert "| pass " in lines["time ratio across stacks"]
    # 24 questions a seed cannot show ±3 points: judged, and failed for want of evidence, with its numbers.
    assert "| **FAIL** " in lines["accuracy equivalent across stacks"]
    assert (
        "90% interval [-7.1, +7.1] (TOST p = 0.171, n = 3 seeds" in lines["accuracy equivalent across stacks"]
    )
    # A scorecard holds one stack: there the same claims say where they are judged.
    scorecard = (out / "amd-radeon-rx-7900-xtx" / "rocm7.2-hf5.5" / "scorecard.md").read_text(
        encoding="utf-8"
    )
    assert "the index judges it when `lorabench report` is given both stacks' records" in scorecard


def test_a_record_in_two_artifacts_counts_once(tmp_path: Path) -> None:
    """Two runners' artifacts may both carry a record (a results folder kept between runs on one box)."""
    for name in ("one", "two"):
        artifact(tmp_path / name, H200_RUNS)
    out = tmp_path / "reports"
    both = [
        "report",
        str(tmp_path / "one"),
        str(tmp_path / "two"),
        "-o",
        str(out),
        "--benchmarks",
        str(BENCHMARKS),
    ]
    assert main(both) == 0
    assert "3 of 3 runs ok" in (out / "nvidia-h200x2" / "h200-image" / "scorecard.md").read_text(
        encoding="utf-8"
    )
    # A different record under the same name is another run and is counted: edit one copy's score.
    copy = tmp_path / "two" / H200_RUNS.relative_to(REPO / "reports") / "seed-42.json"
    copy.write_text(
        copy.read_text(encoding="utf-8").replace('"run_id": "', '"run_id": "other-', 1), encoding="utf-8"
    )
    assert main(both) == 0
    assert "4 of 4 runs ok" in (out / "nvidia-h200x2" / "h200-image" / "scorecard.md").read_text(
        encoding="utf-8"
    )
