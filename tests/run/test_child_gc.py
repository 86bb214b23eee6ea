"""The trainer child keeps the stack it imported out of the cyclic GC (harness.run.child.keep_imports_out_of_gc):
a full collection then walks only what the run made, not the ~440,000 objects of torch and transformers."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import gc
import torch, transformers  # the stack a trainer imports before it freezes
from harness.run.child import keep_imports_out_of_gc
tracked = len(gc.get_objects())
assert gc.get_freeze_count() == 0
keep_imports_out_of_gc()
print(tracked, gc.get_freeze_count(), len(gc.get_objects()))
"""


def test_the_imports_are_frozen_out_of_the_gc_in_a_fresh_process() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=True
    )
    tracked, frozen, left = map(int, out.stdout.split())
    assert tracked > 100_000  # torch and transformers: hundreds of thousands of objects
    assert frozen >= tracked and left < tracked // 100  # all of them out of the GC's walks
