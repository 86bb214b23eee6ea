"""Memory reading: a real allocation that leaves too little available is refused."""

from __future__ import annotations

import subprocess
import sys

import psutil

from harness.guard import GuardConfig, precheck

GB = 10**9
# Writes every page (bytearray(...) * n uses memset), so the memory is really taken.
HOG = "import sys, time\nb = bytearray(b'\\x01') * int(sys.argv[1])\nprint('ready', flush=True)\ntime.sleep(30)\n"


def test_allocation_that_drops_available_memory_is_refused() -> None:
    available = psutil.virtual_memory().available
    # Limit 1 GB below what is free now; the hog takes 2 GB, so only the hog can cross it.
    config = GuardConfig(
        checks=("memory",),
        window_s=0.01,
        memory_min_available_bytes=available - GB,
        memory_min_available_fraction=0,
    )
    assert precheck(config).ok
    hog = subprocess.Popen([sys.executable, "-c", HOG, str(2 * GB)], stdout=subprocess.PIPE, text=True)
    try:
        assert hog.stdout is not None and hog.stdout.readline().strip() == "ready"
        verdict = precheck(config)
    finally:
        hog.kill()
        hog.wait()
    assert not verdict.ok
    assert "memory available" in (verdict.reason or "") and "need" in (verdict.reason or "")


def test_default_limit_is_the_larger_of_bytes_and_fraction() -> None:
    (reading,) = precheck(GuardConfig(checks=("memory",), window_s=0.01)).readings
    total = psutil.virtual_memory().total
    assert reading.limit == max(2 * 2**30, 0.10 * total)
