"""The whole run on a tiny real model: records for success and for each way a run can end badly."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from harness.config import load_setup
from harness.results import load_record, predictions_path
from harness.run.parent import RunOptions, run_setup


def tiny_setup(model: Path, data: Path, *extra: str):
    return load_setup(None, [
        f"model.source={model}", f"data.source={data}", "data.test_size=6", "recipe.steps=10",
        "recipe.batch_size=4", "eval.max_new_tokens=6", "checks.smoke.first_loss_max=20", "checks.smoke.steps=10", *extra,
    ])  # fmt: skip


def test_inline_run_writes_a_complete_record(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    record, path = run_setup(
        tiny_setup(tiny_model_dir, sql_rows_file), RunOptions(results_dir=tmp_path, isolate=False)
    )
    assert record.status == "ok", record.reason
    assert load_record(path) == record
    assert record.train.steps_done == 10 and len(record.train.loss) == 10
    assert record.train.tokens and record.train.tokens_per_s
    assert 0 < record.train.step_s < record.train.train_s
    assert record.timings.preflight_s and record.timings.preflight_s < record.timings.total_s
    preflight = [
        record.checks[name].seconds for name in ("mask_audit", "accumulation_parity", "cache_parity")
    ]
    assert (
        all(s is not None and s >= 0 for s in preflight)
        and sum(preflight) <= record.timings.preflight_s + 0.05
    )  # each rounded to 0.01
    assert record.checks["dead_adapters"].seconds is None  # rides along training: no time of its own
    assert record.trained.n == 6 and record.baseline.n == 6
    assert record.data.n_test == 6 and record.data.split_hash
    assert record.checks["smoke"].verdict == "pass"
    assert (
        record.seeding is not None and record.seeding.seed == record.seed == 3407
    )  # seeded once, said where
    assert {"mask_audit", "accumulation_parity", "cache_parity", "dead_adapters", "end_of_turn"} <= set(
        record.checks
    )
    assert record.checks["mask_audit"].verdict == "pass", record.checks["mask_audit"]
    assert (path.parent / "seed-3407.adapter" / "adapter_config.json").is_file()
    assert record.provenance.stack.packages["torch"]
    rows = [json.loads(line) for line in predictions_path(path).read_text().splitlines()]
    assert len(rows) == 6 and {"row", "prediction", "base_prediction", "exact", "semantic"} <= set(rows[0])
    # The data's text is never copied into results: predictions name rows by hash.
    assert not {"question", "context", "gold"} & set(rows[0])


def test_smoke_failure_stops_early_and_says_why(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    # A random-init model starts near ln(vocab) ≈ 10.8: far outside the pretrained band, as a broken mask would be.
    setup = tiny_setup(tiny_model_dir, sql_rows_file, "checks.smoke.first_loss_max=5", "recipe.steps=50")
    record, _ = run_setup(setup, RunOptions(results_dir=tmp_path, isolate=False))
    assert record.status == "failed"
    assert record.reason.startswith("smoke: first loss 10.")
    assert record.train.steps_done == 1
    assert record.checks["smoke"].verdict == "fail"
    assert record.trained is None


def test_child_exception_becomes_a_failed_record(sql_rows_file: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "llama", "vocab_size": "many"}')
    record, path = run_setup(tiny_setup(broken, sql_rows_file), RunOptions(results_dir=tmp_path / "r"))
    assert record.status == "failed"
    assert "traceback:" in record.reason
    assert load_record(path).status == "failed"


def test_killed_trainer_still_leaves_a_record(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    def kill_worker() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for child in psutil.Process().children(recursive=True):
                if "harness.run.child" in " ".join(child.cmdline()):
                    time.sleep(1)
                    child.kill()
                    return
            time.sleep(0.2)

    killer = threading.Thread(target=kill_worker)
    killer.start()
    record, _ = run_setup(
        tiny_setup(tiny_model_dir, sql_rows_file, "recipe.steps=2000"), RunOptions(results_dir=tmp_path)
    )
    killer.join()
    assert record.status == "killed"
    assert "killed by SIGKILL" in record.reason


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_cli_run_in_a_child_process(tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path) -> None:
    result = run_cli(
        "run", "--model", str(tiny_model_dir), "--data", str(sql_rows_file), "--steps", "3", "--quiet",
        "--set", "data.test_size=4", "--set", "checks.smoke.first_loss_max=20", "--set", "checks.smoke.steps=2",
        "--set", "eval.max_new_tokens=4", "--results", str(tmp_path), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("ok | adhoc/adhoc seed 3407 | exact match")
    # --quiet: phase lines only; the libraries' own progress bars (loading weights, TRL's dataset passes) off.
    assert "[lorabench] train" in result.stderr
    assert not re.search(r"\d+/\d+ \[", result.stderr), result.stderr[-2000:]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "lora.rank=0"], "lora.rank: input should be greater than 0, got 0"),
        (["--model", "no-such-model"], "model.source: 'no-such-model' is neither a preset"),
        (["--data", "missing.jsonl"], "data.source: file not found"),
    ],
)
def test_user_mistakes_get_one_clear_line(args: list[str], message: str, tmp_path: Path) -> None:
    result = run_cli("run", *args, "--results", str(tmp_path), cwd=tmp_path)
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_timed_run_refused_on_a_busy_machine_keeps_the_reading(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    from harness.guard import GuardConfig

    # The burner must not be our descendant: the guard leaves its caller's own process tree out, so a
    # plain child passed this test only when the other xdist worker happened to be busy. The shell
    # exits at once and the orphaned burner (which stops by itself after 60 s) is another job's.
    started = subprocess.run(
        ["sh", "-c", f"{sys.executable} -c 'import time\nt = time.time()\nwhile time.time() - t < 60: pass' "
         ">/dev/null 2>&1 & echo $!"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    burner = int(started.stdout.strip())
    try:
        assert burner not in {c.pid for c in psutil.Process().children(recursive=True)}
        guard = GuardConfig(checks=("cpu",), window_s=1, cpu_other_percent_limit=30)
        options = RunOptions(results_dir=tmp_path, isolate=False, timed=True, guard=guard)
        record, path = run_setup(tiny_setup(tiny_model_dir, sql_rows_file), options)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(burner, signal.SIGKILL)
    assert record.status == "refused", record.guard
    assert record.reason.startswith("refused to time:") and "--allow-noisy" in record.reason
    assert record.guard["precheck"]["ok"] is False
    assert load_record(path).status == "refused"
    # The trainer started during the window and stopped at the gate: it never trained.
    assert record.train is None


def test_noise_starting_mid_run_marks_the_timing_invalid(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    from harness.guard import GuardConfig

    downloads = tmp_path / "hub-cache"
    downloads.mkdir()
    guard = GuardConfig(
        checks=("downloads",), window_s=0.5, sample_interval_s=0.2, download_dirs=(str(downloads),)
    )
    stop = threading.Event()

    def download_when_training_starts() -> None:
        partial = downloads / "model.safetensors.incomplete"
        while not stop.is_set():
            events = list(tmp_path.glob("r/.work/*/events.jsonl"))
            if events and '"train", "event": "start"' in events[0].read_text():
                with partial.open("ab") as handle:
                    handle.write(b"x" * 100_000)
            time.sleep(0.05)

    writer = threading.Thread(target=download_when_training_starts)
    writer.start()
    try:
        options = RunOptions(results_dir=tmp_path / "r", isolate=False, timed=True, guard=guard)
        record, _ = run_setup(tiny_setup(tiny_model_dir, sql_rows_file), options)
    finally:
        stop.set()
        writer.join()
    assert record.status == "ok"
    assert record.guard["precheck"]["ok"] is True
    assert record.guard["timing_valid"] is False
    assert ".incomplete" in record.guard["timing_invalid_reason"]
    assert record.guard["sampler"]["noisy_samples"]


def test_quiet_timed_run_is_valid(tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path) -> None:
    from harness.guard import GuardConfig

    guard = GuardConfig(
        checks=("downloads",), window_s=0.5, sample_interval_s=0.2, download_dirs=(str(tmp_path),)
    )
    options = RunOptions(results_dir=tmp_path / "r", isolate=False, timed=True, guard=guard)
    record, _ = run_setup(tiny_setup(tiny_model_dir, sql_rows_file), options)
    assert record.status == "ok"
    assert record.guard["timing_valid"] is True, record.guard
    assert record.guard["sampler"]["n_samples"] >= 1
    # The pre-check's window overlapped the trainer's start (its imports): the trainer waited at the gate
    # for the verdict (its own phase). The seconds saved are a benchmark's: dev/gpu/bench_gpu.sh abab-timed.
    assert "guard" in record.timings.phases, record.timings.phases


def test_a_run_stopped_from_outside_leaves_a_killed_record(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    """`timeout`, `docker stop` and cancelled CI jobs send SIGTERM to `lorabench run`: the trainer's
    process group goes with it, and a `killed` record says why (on the H200 one run left nothing)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", "--model", str(tiny_model_dir), "--data", str(sql_rows_file),
         "--steps", "5000", "--quiet", "--set", "data.test_size=4", "--set", "checks.smoke.enabled=false",
         "--set", "checks.preflight=false", "--results", str(tmp_path)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip

    def trainer_children() -> list[psutil.Process]:
        found = []
        for child in psutil.Process(proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):  # short-lived helpers may be gone or zombies
                if "harness.run.child" in " ".join(child.cmdline()):
                    found.append(child)
        return found

    deadline = time.monotonic() + 120
    workers: list[psutil.Process] = []
    while time.monotonic() < deadline and not workers:
        workers = trainer_children()
        time.sleep(0.2)
    assert workers, "the trainer child never started"
    time.sleep(2)
    proc.terminate()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0, out + err
    (path,) = tmp_path.glob("*/*/*/*/seed-3407.json")
    record = load_record(path)
    assert record.status == "killed"
    assert "stopped from outside by SIGTERM" in record.reason, record.reason
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)


def test_the_command_line_does_not_import_torch_to_start() -> None:
    # `lorabench --help`, report, misses, compare, stacks need no model: 0.4 s to start here instead of
    # 1.8 s with torch. (`run` still imports it in the parent, for the GPUs in the provenance.)
    import subprocess
    import sys

    code = (
        "import sys, harness.cli, harness.run.parent; harness.cli.build_parser(); "
        "print(sorted(m for m in ('torch', 'transformers', 'trl') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
