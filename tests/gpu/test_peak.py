"""Peak VRAM in two windows (harness/gpu/peak.py): the counter is read and reset after load and baseline
eval, before training, so a baseline that was not cached no longer lifts one seed's training peak. The GPU
path itself did not run here (no GPU in CI); these check the decision, the order and the record."""

from __future__ import annotations

import inspect
import json

from harness.gpu.peak import counts_peaks, start_training_window
from harness.results import MemoryStats
from harness.run import recipe


def test_only_a_gpu_has_a_peak_counter_to_reset() -> None:
    assert counts_peaks("cuda")
    assert not counts_peaks("cpu")


def test_on_a_cpu_nothing_is_read_or_reset() -> None:
    assert start_training_window("cpu") is None


def test_the_window_starts_after_the_baseline_and_before_training() -> None:
    source = inspect.getsource(recipe.run_phases)
    load, baseline = source.index("load_model("), source.index("score_baseline(")
    reset, training = source.index("start_training_window("), source.index("train_or_attach(")
    assert load < baseline < reset < training


def test_records_without_the_window_read_and_write_as_before() -> None:
    old = MemoryStats(device="cpu", peak_rss_bytes=1)
    assert "before_training_peak_vram_bytes" not in json.loads(old.model_dump_json())
    gpu = MemoryStats(
        device="cuda", peak_vram_bytes=2_090_000_000, before_training_peak_vram_bytes=3_260_000_000
    )
    assert json.loads(gpu.model_dump_json())["before_training_peak_vram_bytes"] == 3_260_000_000
