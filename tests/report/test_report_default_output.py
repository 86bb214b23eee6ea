"""`lorabench report` without `-o` writes into the untracked `reports-local/`, never over the committed
`reports/`: run in a real git checkout holding committed records and a committed index, it leaves
`git status` clean and puts the scorecards in `reports-local/`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from builders import HOST_AMD, STACK_ROCM, write_story_results

from harness.cli import main

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"


def git(checkout: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=lorabench test", "-c", "user.email=test@lorabench.invalid", *args],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_report_without_output_leaves_the_checkout_clean(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    write_story_results(checkout / "reports" / "results")
    (checkout / "reports" / "README.md").write_text(
        "# lorabench reports\n\nthe committed index\n", encoding="utf-8"
    )
    shutil.copyfile(REPO / ".gitignore", checkout / ".gitignore")
    git(checkout, "init", "-q")
    git(checkout, "add", ".")
    git(checkout, "commit", "-q", "-m", "committed reports")

    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "report", "reports/results", "--benchmarks", str(BENCHMARKS)],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr

    assert git(checkout, "status", "--porcelain", "--untracked-files=no") == ""
    assert git(checkout, "status", "--porcelain") == "", "reports-local/ is not ignored by .gitignore"
    scorecard = checkout / "reports-local" / HOST_AMD["id"] / STACK_ROCM["name"] / "scorecard.md"
    assert scorecard.is_file()
    assert (checkout / "reports-local" / "README.md").is_file()
    assert f"reports-local/{HOST_AMD['id']}/{STACK_ROCM['name']}/scorecard.md" in done.stdout
    assert not (checkout / "reports" / HOST_AMD["id"]).exists()


def test_report_outside_a_checkout_judges_the_suites_claims(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run from a folder with no benchmarks/ (a user's own), the suite beside lorabench's code is found, as
    bench finds it; a --benchmarks folder without setups/ is refused in a line."""
    write_story_results(tmp_path / "results")
    monkeypatch.chdir(tmp_path)
    assert main(["report", "results", "-o", "out"]) == 0
    scorecard = (tmp_path / "out" / HOST_AMD["id"] / STACK_ROCM["name"] / "scorecard.md").read_text(
        encoding="utf-8"
    )
    assert "claims not judged" not in scorecard and "claims judged" in scorecard
    capsys.readouterr()
    assert main(["report", "results", "-o", "out", "--benchmarks", str(tmp_path)]) == 2
    assert f"--benchmarks {tmp_path}: no setups/ folder in it" in capsys.readouterr().err
