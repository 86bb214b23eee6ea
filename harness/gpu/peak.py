"""Peak GPU memory in two windows: model load with the baseline eval, then training.

Why: read once after training, torch's `max_memory_allocated` held whatever came first: an uncached
baseline eval lifted seed 3407's peak on the H200 to 3.26 GiB against 2.09 GiB for the cached seeds,
printed as seed spread (issue 38). So the counter is read and reset before training:
`memory.peak_vram_bytes` is training's own, `memory.before_training_peak_vram_bytes` load's and
baseline's. The GPU path has not run in a test (no GPU in CI).
"""

from __future__ import annotations


def counts_peaks(device: str) -> bool:
    """Whether the run's device has a peak counter that can be reset: a GPU through torch's cuda API (ROCm
    answers there too). A CPU's peak is the process's RSS high-water mark, one window for the whole run."""
    return device == "cuda"


def start_training_window(device: str) -> int | None:
    """The peak so far (load, baseline eval) in bytes, then the counter reset so that the peak read after
    training is training's alone; None where the device counts no peak (nothing is touched)."""
    if not counts_peaks(device):
        return None
    import torch

    before = int(torch.cuda.max_memory_allocated())
    torch.cuda.reset_peak_memory_stats()
    return before
