"""A stack named for what it is (issue 36): with no stack given, a record names the environment as it is,
never `cpu` on a CUDA or ROCm host. The hosts are the recorded ones (tests/data/gpu/hosts/: the lent
H200 with torch 2.11+cu130, the 7900 XTX box and the Strix Halo with torch 2.9.1+rocm7.2.4, this CPU
machine); their torch is laid out as a real site-packages folder (dist-info and torch/version.py) ahead
of this venv's, and the name is asked of a fresh Python process, as `lorabench run` and `bench` ask it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.provenance import collect_stack
from harness.results import RunRecord, load_record, write_record
from harness.stack_name import unpinned_label

HOSTS = Path(__file__).resolve().parents[1] / "data" / "gpu" / "hosts"
REPO = Path(__file__).resolve().parents[2]


def recorded_torch(host: str) -> dict:
    folder = HOSTS / host
    spec = json.loads((folder / "host.json").read_text())
    return spec.get("torch") or json.loads((folder / spec["torch_file"]).read_text())


def site_with_torch(root: Path, torch: dict) -> Path:
    """A site-packages folder holding only the recorded torch: its metadata and its version file."""
    site = root / "site"
    dist = site / f"torch-{torch['version']}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {torch['version']}\n")
    (dist / "RECORD").write_text("torch/version.py,,\n")
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text(
        f"from typing import Optional\n__version__ = {torch['version']!r}\n"
        f"cuda: Optional[str] = {torch['cuda']!r}\nhip: Optional[str] = {torch['hip']!r}\n"
    )
    return site


def default_name(site: Path | None, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("LORABENCH_STACK", "PYTHONPATH")}
    path = os.pathsep.join(p for p in (str(site) if site else "", str(REPO)) if p)
    done = subprocess.run(
        [sys.executable, "-c", "from harness.provenance import default_stack; print(default_stack())"],
        env={**base, "PYTHONPATH": path, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.mark.parametrize(
    ("host", "label"),
    [
        ("h200", "venv-torch2.11.0-cuda13.0"),
        ("2x7900xtx-igpu", "venv-torch2.9.1-rocm7.2.4"),
        ("strix-halo", "venv-torch2.9.1-rocm7.2.4"),
    ],
)
def test_a_gpu_host_without_a_stack_is_named_by_its_torch_and_runtime(
    host: str, label: str, tmp_path: Path
) -> None:
    torch = recorded_torch(host)
    assert unpinned_label(torch["version"], torch["cuda"], torch["hip"]) == label
    assert default_name(site_with_torch(tmp_path, torch)) == label != "cpu"


def test_the_cpu_venv_that_matches_its_lockfile_is_the_pinned_cpu_stack() -> None:
    """The clean case: `make setup`'s venv (this one) is exactly lockfiles/cpu.txt, so it is `cpu`."""
    assert default_name(None) == "cpu"


def test_a_cpu_torch_no_lockfile_pins_is_an_unpinned_cpu_venv(tmp_path: Path) -> None:
    torch = {**recorded_torch("cpu-only"), "version": "2.12.0+cpu"}
    assert default_name(site_with_torch(tmp_path, torch)) == "venv-torch2.12.0-cpu"


def test_lorabench_stack_wins_whatever_it_names(tmp_path: Path) -> None:
    site = site_with_torch(tmp_path, recorded_torch("h200"))
    assert default_name(site, LORABENCH_STACK="h200-image") == "h200-image"


def test_hip_without_a_rocm_local_version_names_hips_release() -> None:
    assert unpinned_label("2.9.1", None, "6.4.43482") == "venv-torch2.9.1-rocm6.4"


def test_records_say_whether_their_stack_is_pinned() -> None:
    assert collect_stack("cpu")["pinned"] is True
    assert collect_stack("venv-torch2.11.0-cuda13.0")["pinned"] is False


def test_the_scorecard_labels_an_unpinned_stack_beside_the_pinned_ones(tmp_path: Path) -> None:
    committed = REPO / "reports/untimed/cpu/cpu-amd-epyc-2c/exp_a/smollm2-135m-lora/seed-3407.json"
    results = tmp_path / "results"
    pinned = load_record(committed)
    write_record(results, pinned)
    data = pinned.model_dump(mode="json")
    data["stack"] = "venv-torch2.13.0-cpu"
    data["provenance"]["stack"] = {**data["provenance"]["stack"], "name": data["stack"], "pinned": False}
    data["predictions_file"] = None
    write_record(results, RunRecord.model_validate(data))
    reports = tmp_path / "reports"
    assert main(["report", str(results), "-o", str(reports), "--benchmarks", str(REPO / "benchmarks")]) == 0
    venv = (reports / "cpu-amd-epyc-2c/venv-torch2.13.0-cpu/scorecard.md").read_text(encoding="utf-8")
    assert venv.startswith("# lorabench scorecard: cpu-amd-epyc-2c · venv-torch2.13.0-cpu (unpinned)\n")
    cpu = (reports / "cpu-amd-epyc-2c/cpu/scorecard.md").read_text(encoding="utf-8")
    assert cpu.startswith("# lorabench scorecard: cpu-amd-epyc-2c · cpu\n")
    index = (reports / "README.md").read_text(encoding="utf-8")
    assert "| venv-torch2.13.0-cpu (unpinned) " in index and "| cpu " in index


def test_a_real_run_without_a_stack_records_this_venv_as_the_pinned_cpu_stack_and_json_is_alone(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    """The whole path: `lorabench run --json` with no --stack in this venv (exactly lockfiles/cpu.txt)."""
    env = {k: v for k, v in os.environ.items() if k != "LORABENCH_STACK"}
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--model", str(tiny_model_dir), "--data", str(sql_rows_file),
         "--steps", "2", "--quiet", "--set", "data.test_size=4", "--set", "checks.smoke.first_loss_max=20",
         "--set", "checks.smoke.steps=2", "--set", "eval.max_new_tokens=4", "--results", str(tmp_path), "--json"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)  # the JSON alone on stdout
    assert out["record"]["stack"] == "cpu" and out["record"]["provenance"]["stack"]["pinned"] is True
    assert Path(out["path"]).is_file() and "/cpu/" in out["path"]


def stacks_verify(site: Path | None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("LORABENCH_STACK", "PYTHONPATH")}
    path = os.pathsep.join(p for p in (str(site) if site else "", str(REPO)) if p)
    return subprocess.run([sys.executable, "-m", "harness.cli", "stacks", "verify"],
                          env={**base, "PYTHONPATH": path}, capture_output=True, text=True, timeout=120)  # fmt: skip


def test_stacks_verify_without_a_name_verifies_the_stack_a_run_here_is_recorded_under(tmp_path: Path) -> None:
    """As the README says it: after `make setup`, `lorabench stacks verify` alone compares this venv with cpu.txt."""
    done = stacks_verify(None)
    assert done.returncode == 0 and done.stdout.strip().endswith("stack cpu: 0 error(s), 0 warning(s)"), (
        done.stderr
    )
    unpinned = stacks_verify(site_with_torch(tmp_path, recorded_torch("h200")))
    assert unpinned.returncode == 2 and "match no pinned stack exactly; name one" in unpinned.stderr, (
        unpinned.stderr
    )
