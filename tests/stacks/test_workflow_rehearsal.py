"""The workflows rehearsed (scripts/rehearse_workflow.py): every action they use is one the rehearsal plays, its
own rules (a failed step skips the rest but `if: always()`; an upload path with `..` fails as the action
refuses it) are checked on small workflows written here, and with LORABENCH_REHEARSE=1 and a Docker engine
with lorabench:cpu built, each real job runs here on the CPU profile (minutes each: bench-hosts' cpu bench
and its report job, bench-rocm on the CPU image through tests/containers/compose.rehearsal-cpu.yaml).
The last run's output: reports/benchmarks/workflow_rehearsal.txt. exp-e.yml is not rehearsed for real: it
trains Exp E on two ROCm stacks' images, which no CPU profile stands in for (its steps are the same
scripts/exp_e.sh the containers' tests drive)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
PLAYED = {"actions/checkout", "actions/setup-python", "actions/upload-artifact", "actions/download-artifact"}
SHORT_SUITE = (
    "benchmarks/test_setups.py -k exp_a/gain --lorabench-seeds=3407 --lorabench-set=recipe.steps=10 "
    "--lorabench-set=recipe.batch_size=4 --lorabench-set=recipe.warmup_steps=0 --lorabench-set=checks.smoke.steps=10 "
    "--lorabench-set=eval.limit=10 --lorabench-set=checks.preflight=false"
)


def rehearse(
    workflow: Path, job: str, work: Path, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "rehearse_workflow.py"), str(workflow), job,
                           "--work", str(work), *args], capture_output=True, text=True, timeout=timeout, check=False)  # fmt: skip


def test_every_action_the_workflows_use_is_played_and_no_upload_path_climbs_out() -> None:
    for workflow in WORKFLOWS:
        for job in yaml.safe_load(workflow.read_text())["jobs"].values():
            for step in job["steps"]:
                if "uses" in step:
                    assert step["uses"].split("@")[0] in PLAYED, (workflow.name, step["uses"])
                if step.get("uses", "").startswith("actions/upload-artifact"):
                    assert ".." not in step["with"]["path"], (workflow.name, step["with"]["path"])
            assert ".." not in str(job.get("env", {})), (workflow.name, job.get("env"))


def write_workflow(tmp_path: Path, steps: list[dict]) -> Path:
    path = tmp_path / "wf.yml"
    path.write_text(
        yaml.safe_dump({"name": "t", "on": "push", "jobs": {"j": {"runs-on": "x", "steps": steps}}})
    )
    return path


def test_a_failed_step_skips_the_rest_but_always_steps_and_fails_the_job(tmp_path: Path) -> None:
    wf = write_workflow(tmp_path, [
        {"run": "echo A=1 >> \"$GITHUB_ENV\""},
        {"name": "fails", "run": "test \"$A\" = 1 && false"},
        {"name": "skipped", "run": "touch skipped"},
        {"name": "always", "if": "always()", "run": "touch \"$GITHUB_WORKSPACE/../always\""},
    ])  # fmt: skip
    done = rehearse(wf, "j", tmp_path / "work")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED at step 2 'fails': exit 1" in done.stdout
    assert "'skipped': skipped (an earlier step failed)" in done.stdout
    assert (tmp_path / "work" / "lorabench" / "always").is_file()


def test_an_upload_path_with_dotdot_fails_as_upload_artifact_refuses_it(tmp_path: Path) -> None:
    up = {
        "uses": "actions/upload-artifact@v6",
        "with": {"name": "r", "path": "${{ github.workspace }}/../out"},
    }
    wf = write_workflow(tmp_path, [{"run": "mkdir -p ../out && touch ../out/x"}, up])
    done = rehearse(wf, "j", tmp_path / "work")
    assert done.returncode == 1 and "has a `..` segment" in done.stdout
    fixed = {**up, "with": {"name": "r", "path": "${{ env.OUT }}"}}
    ok = write_workflow(
        tmp_path,
        [
            {"run": 'mkdir -p ../out && touch ../out/x && echo "OUT=$(cd .. && pwd)/out" >> "$GITHUB_ENV"'},
            fixed,
        ],
    )
    done = rehearse(ok, "j", tmp_path / "work2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "work2" / "artifacts" / "r" / "x").is_file()


def test_an_action_the_rehearsal_cannot_play_fails_it(tmp_path: Path) -> None:
    done = rehearse(write_workflow(tmp_path, [{"uses": "actions/cache@v4"}]), "j", tmp_path / "work")
    assert done.returncode == 1 and "cannot play actions/cache@v4" in done.stdout


REAL = os.environ.get("LORABENCH_REHEARSE") == "1"


@pytest.fixture(scope="module")
def cpu_image() -> None:
    if not REAL:
        pytest.skip("real workflow rehearsals take minutes: LORABENCH_REHEARSE=1 runs them")
    if shutil.which("docker") is None or subprocess.run(["docker", "image", "inspect", "lorabench:cpu"],
                                                        capture_output=True, check=False).returncode != 0:  # fmt: skip
        pytest.skip("needs a Docker engine and lorabench:cpu (bash scripts/ci_containers.sh builds it)")


# What stands in here for a runner's registry, PyTorch's CPU index and the hub (as scripts/ci_containers.sh).
HERE = [
    "--env", "BASE_IMAGE=lorabench-base:bookworm-py3.11", "--env", "LORABENCH_WHEELS=/opt/wheels",
    "--env", "HF_HUB_OFFLINE=1", "--env", "HF_DATASETS_OFFLINE=1",
    "--env", f"LORABENCH_DATA={ROOT.parent / 'shared' / 'data' / 'sql-create-context' / 'random-sample.jsonl'}",
]  # fmt: skip


def test_bench_hosts_cpu_job_then_the_report_job(cpu_image: None, tmp_path: Path) -> None:
    wf = ROOT / ".github" / "workflows" / "bench-hosts.yml"
    bench = rehearse(wf, "bench", tmp_path, "--matrix", "host=cpu", "--input", f"suite_args={SHORT_SUITE}", *HERE,
                     timeout=1800)  # fmt: skip
    # The short suite cannot learn in 10 steps: the suite step fails its claim (exit 1), as in CI's bench-cpu;
    # the records are still collected and uploaded (`if: always()`).
    assert (
        "'Upload the records': " in bench.stdout
        and "FAILED: exit" not in bench.stdout.split("Run the suite")[0]
    )
    assert list((tmp_path / "artifacts" / "results-cpu-cpu").rglob("seed-3407.json")), (
        bench.stdout + bench.stderr
    )
    # PyTorch's CPU index is not reachable here: the machine's /opt/wheels (pip's find-links) serves torch+cpu.
    report = rehearse(
        wf, "report", tmp_path, "--env", "PIP_EXTRA_INDEX_URL=https://pypi.org/simple", timeout=1800
    )
    assert report.returncode == 0, report.stdout + report.stderr
    assert (tmp_path / "artifacts" / "reports-rehearsal" / "README.md").is_file()


def test_bench_rocm_on_the_cpu_image(cpu_image: None, tmp_path: Path) -> None:
    wf = ROOT / ".github" / "workflows" / "bench-rocm.yml"
    done = rehearse(wf, "bench", tmp_path, "--matrix", "stack=cpu", "--input", f"suite_args={SHORT_SUITE}",
                    "--env", "COMPOSE_FILE=compose.yaml:tests/containers/compose.rehearsal-cpu.yaml", *HERE,
                    timeout=1800)  # fmt: skip
    assert "'Verify the stack inside the image': ok" in done.stdout, done.stdout + done.stderr
    assert list((tmp_path / "artifacts" / "bench-cpu-rehearsal").rglob("seed-3407.json")), done.stdout
