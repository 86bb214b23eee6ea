"""Peak GPU memory in two windows: model load with the baseline eval, then training.

torch's counter (`max_memory_allocated`) holds the highest mark since the process began or since its last
reset. Read once after training, a run's peak held whatever came first: a baseline eval that was not
cached (every test question decoded at once) lifted seed 3407's peak on the H200 to 3.26 GiB against
2.09 GiB for the two seeds whose baseline came from the cache, printed as seed spread (issue 38). So the
counter is read and reset once, after load and baseline, before training: the record's
`memory.peak_vram_bytes` is training's own, `memory.before_training_peak_vram_bytes` the load's and
baseline's. Only the GPU path resets anything; it has not run on a GPU in a test (no GPU in CI).
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
