"""`lorabench doctor` run for real on this machine (a CPU-only host), and the gate `lorabench bench` passes
before its runs: a host that cannot run them is refused with exit 2 before any run trains."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def lorabench(
    *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip


def test_doctor_json_on_this_machine_judges_the_installed_cpu_stack(tmp_path: Path) -> None:
    done = lorabench("doctor", "--json", "--no-guard", "--stack", "cpu", "--results", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ok"] is True and report["accelerator"] == "cpu"
    assert checks["stack vs lockfile"]["status"] == "ok", checks["stack vs lockfile"]
    assert checks["quiet machine (guard)"]["status"] == "skip"
    assert report["facts"]["torch"]["version"].startswith("2.13.0")


def test_doctor_screen_names_the_first_blocking_check_and_exits_2(tmp_path: Path) -> None:
    # A ROCm container's demand on a host without /dev/kfd (this machine has none).
    done = lorabench(
        "doctor", "--no-guard", "--results", str(tmp_path), env={"LORABENCH_REQUIRE_GPU": "rocm"}
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "lorabench doctor: checks for a rocm run"
    assert any(line.startswith(" ✗ GPU runtime") for line in lines)
    assert lines[-1].startswith(
        "lorabench doctor: blocked by GPU runtime: torch 2.13.0+cpu (CPU build), but this run needs ROCm"
    )


def test_doctor_with_an_unknown_stack_is_one_line_exit_2(tmp_path: Path) -> None:
    done = lorabench("doctor", "--stack", "rocm9", "--no-guard", "--results", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().startswith(
        "lorabench doctor: error: doctor --stack: unknown stack 'rocm9'; known:"
    )
    assert "Traceback" not in done.stderr


def test_bench_refuses_when_the_doctor_blocks(tmp_path: Path) -> None:
    # The checks run while pytest starts (its runs wait for them: tests/suite/test_bench_command.py).
    done = lorabench("bench", "--results", str(tmp_path / "results"), "--", "-k", "nothing",
                     env={"LORABENCH_REQUIRE_GPU": "rocm"})  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "lorabench doctor: blocked by GPU runtime" in done.stderr
    assert "lorabench bench: stopped: the host checks found it blocked by GPU runtime" in done.stderr
    assert "scorecards from" not in done.stdout  # no report for a host that cannot run the suite
    assert not (tmp_path / "results").exists()


def test_an_unpinned_environment_named_in_lorabench_stack_is_checked_not_refused(tmp_path: Path) -> None:
    # A maintainer's own venv or a lent machine's image, named through $LORABENCH_STACK (as
    # dev/gpu/env.sh does with h200-image): the doctor says there is no lockfile and goes on.
    done = lorabench("doctor", "--no-guard", "--results", str(tmp_path), env={"LORABENCH_STACK": "my-venv"})
    assert "unknown stack" not in done.stderr
    assert "my-venv: an unpinned environment, no lockfile to compare against" in done.stdout
