"""A first run's load on a fresh cache, as the trainer does it (harness.run.recipe.load_model): the input checks
(config and tokenizer read from the GGUF), then the GGUF dequantized into the cache. Prints the seconds of each.

    LORABENCH_CACHE=$(mktemp -d) LORABENCH_DATA=FILE python dev/bench_cold_load.py

Run it in two checkouts, each with an empty cache, to compare them (farm-bench pairs the two commands).
"""

from __future__ import annotations

import contextlib
import os
import time

import harness.models as models
from harness.config import load_setup
from harness.run.inputs import check_model_inputs
from harness.tasks.sql.data import load_split

setup = load_setup(None, [f"data.source={os.environ['LORABENCH_DATA']}"])
split = load_split(setup.data)
started = time.perf_counter()
files = models.model_files(setup.model)
shared = getattr(models, "gguf_read_once", None)  # absent in checkouts before it
with shared() if shared and files[1] else contextlib.nullcontext():
    check_model_inputs(setup, *files, split.train, split.test)
    checked = time.perf_counter()
    models.resolve_model(setup.model)
done = time.perf_counter()
print(
    f"input checks {checked - started:.1f} s, conversion {done - checked:.1f} s, both {done - started:.1f} s"
)
