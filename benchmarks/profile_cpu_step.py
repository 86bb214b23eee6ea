"""Where Exp A's training step spends its time on this CPU: the real model, data, LoRA and trainer as
`lorabench run` builds them (resolved runtime: precision, attention, micro-batches), a few steps under
torch.profiler, the operators by their own CPU time.

Usage: LORABENCH_DATA=FILE python benchmarks/profile_cpu_step.py [--steps 6] [--set FIELD=VALUE …] [--top 25]
Run it alone on the machine: the figures are the machine's, shared with nothing else.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from harness import settings
from harness.backends import hf
from harness.config import load_setup
from harness.models import resolve_model
from harness.runtime import resolve_setup_runtime
from harness.tasks.sql.data import load_split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--set", action="append", default=[], dest="sets")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    setup = load_setup(Path("benchmarks/setups/exp_a.toml"), [f"recipe.steps={args.steps}", "recipe.warmup_steps=1", *settings.data_source_sets(), *args.sets])
    runtime = resolve_setup_runtime(setup)
    print(f"runtime: {runtime}")
    split = load_split(setup.data)
    model, tokenizer = hf.load(setup, resolve_model(setup.model).path, runtime)
    model = hf.wrap_lora(model, setup)
    trainer = hf.build_trainer(model, tokenizer, split.train, setup, runtime, callbacks=[])
    started = time.perf_counter()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        trainer.train()
    seconds = time.perf_counter() - started
    print(f"{args.steps} steps in {seconds:.1f} s ({seconds / args.steps:.2f} s/step, profiler on), threads {torch.get_num_threads()}")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top, max_name_column_width=48))


if __name__ == "__main__":
    main()
