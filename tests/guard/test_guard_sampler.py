"""The sampler: noise that starts mid-run marks the timing invalid, with the readings kept."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from guardlib import PYTHON, burner_code, child_env

from harness.guard import GuardConfig, Sampler

WRITER = """
import sys, time
end = time.time() + float(sys.argv[2])
with open(sys.argv[1], "ab") as f:
    while time.time() < end:
        f.write(b"x" * 65536); f.flush(); time.sleep(0.05)
"""


def config(hub: Path) -> GuardConfig:
    return GuardConfig(checks=("downloads",), sample_interval_s=0.25, download_dirs=(hub,))


def test_download_starting_mid_run_invalidates_only_its_window(tmp_path: Path) -> None:
    blob = tmp_path / "hub" / "blobs"
    blob.mkdir(parents=True)
    with Sampler(config(tmp_path / "hub")) as sampler:
        time.sleep(0.8)
        quiet_until = time.time()
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(blob / "x.incomplete"), "1.0"])
        writer.wait()
    full = sampler.report()
    assert not full.valid and full.noisy_samples
    assert full.reason is not None and full.reason.startswith("timing invalid:")
    assert "download in progress" in full.reason and "re-run the timing on a quiet machine" in full.reason
    assert all(s.end > quiet_until for s in full.noisy_samples)  # kept with their times
    assert full.noisy_samples[0].readings[0].name == "downloads"
    before_noise = sampler.report(window=(full.noisy_samples[0].start - 0.7, quiet_until - 0.3))
    assert before_noise.valid and before_noise.n_samples >= 1
    assert json.dumps(full.to_dict())  # the record can carry it


def test_quiet_run_is_valid_and_covers_the_tail(tmp_path: Path) -> None:
    with Sampler(config(tmp_path)) as sampler:
        time.sleep(0.6)
    report = sampler.report()
    assert report.valid and report.reason is None
    assert report.n_samples >= 3  # two ticks, plus the final one on exit
    ends = [t for t, _ in sampler.samples]
    assert ends == sorted(ends)
    assert 0 <= report.cost_cpu_percent < 50


def test_window_with_no_sample_is_not_silently_valid(tmp_path: Path) -> None:
    with Sampler(config(tmp_path)) as sampler:
        time.sleep(0.3)
    report = sampler.report(window=(time.time() + 100, time.time() + 200))
    assert not report.valid and "no sample" in (report.reason or "")


# The trainer is the caller's child: its CPU is the work being timed, never noise.
TRAINER = """
import json, subprocess, sys, time
from harness.guard import GuardConfig, Sampler
config = GuardConfig(checks=("cpu",), sample_interval_s=0.25, cpu_other_percent_limit=10)
with Sampler(config) as sampler:
    subprocess.run([sys.executable, "-c", sys.argv[1]])
print(json.dumps(sampler.report().to_dict()))
"""


def test_trainer_child_cpu_is_not_noise(hermetic: list[str]) -> None:
    done = subprocess.run(
        [*hermetic, PYTHON, "-c", TRAINER, burner_code(1.0)],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
    )
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["valid"], report["reason"]
    assert report["n_samples"] >= 4


FOREIGN_MID_RUN = """
{py} -c '{trainer}' '{own}' > out.json &
sleep 1
{py} -c '{foreign}' & echo foreign=$!
wait
cat out.json
"""


def test_foreign_burner_starting_mid_run_invalidates(hermetic: list[str], tmp_path: Path) -> None:
    trainer = TRAINER.replace('subprocess.run([sys.executable, "-c", sys.argv[1]])', "time.sleep(2.5)")
    script = FOREIGN_MID_RUN.format(py=PYTHON, trainer=trainer, own="", foreign=burner_code(1.0))
    done = subprocess.run(
        [*hermetic, "sh", "-c", script],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=tmp_path,
        timeout=60,
    )
    foreign = done.stdout.split("foreign=")[1].split()[0]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert not report["valid"]
    assert f"pid {foreign} " in report["reason"]
    assert report["noisy_samples"] and report["noisy_samples"][0]["readings"][0]["name"] == "cpu_other"
