"""Seconds per training step across a long run, in windows of steps, with the process's user and system CPU
time and minor page faults per step: whether steps slow down as the run goes on, and where the time goes.

The run's own path (real model, data, LoRA, trainer, `hf.training_spans`) for --steps steps, no checks, no
eval. The allocator is the process's: compare one against another by running this under each, one after the
other, alone on the machine, e.g.

    LORABENCH_DATA=FILE python dev/step_drift.py --steps 180
    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 LORABENCH_DATA=FILE python dev/step_drift.py --steps 180

(jemalloc told never to return memory, MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1, grew to 24 GB and was
OOM-killed within 180 steps on the 2-core Xeon: reports/benchmarks/cpu/step_drift_2026-12-02.txt.)

Usage: LORABENCH_DATA=FILE python dev/step_drift.py [--steps 180] [--window 15] [--set FIELD=VALUE …]
       [--flush-denormal]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

import torch
from exp_a_trainer import exp_a_trainer
from transformers import TrainerCallback

from harness.backends import hf
from harness.backends.graphed_layers import compile_mode


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=180)
    parser.add_argument("--window", type=int, default=15, help="steps per line")
    parser.add_argument("--set", action="append", default=[], dest="sets")
    parser.add_argument("--flush-denormal", action="store_true", help="torch.set_flush_denormal(True) first")
    args = parser.parse_args()
    if args.flush_denormal:
        print(f"flush denormal: {torch.set_flush_denormal(True)}")
    print(f"LD_PRELOAD={os.environ.get('LD_PRELOAD', '')!r} MALLOC_CONF={os.environ.get('MALLOC_CONF', '')!r} "
          f"GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES', '')!r} threads {torch.get_num_threads()}")  # fmt: skip
    seconds: list[float] = []
    usage: list[resource.struct_rusage] = []
    last = [time.perf_counter()]

    class StepClock(TrainerCallback):
        def on_step_end(self, *_: object, **__: object) -> None:
            now = time.perf_counter()
            seconds.append(now - last[0])
            usage.append(resource.getrusage(resource.RUSAGE_SELF))
            last[0] = now

    setup, runtime, model, trainer = exp_a_trainer([f"recipe.steps={args.steps}", *args.sets], [StepClock()])
    first = resource.getrusage(resource.RUSAGE_SELF)
    last[0] = time.perf_counter()
    with hf.training_spans(model, trainer, setup, compile_mode(setup, runtime)):
        trainer.train()
    for start in range(0, len(seconds), args.window):
        end = min(start + args.window, len(seconds))
        before, after, n = usage[start - 1] if start else first, usage[end - 1], end - start
        print(f"steps {start + 1}-{end}: median {statistics.median(seconds[start:end]):.3f} s; per step "
              f"user {(after.ru_utime - before.ru_utime) / n:.3f} s, sys {(after.ru_stime - before.ru_stime) / n:.3f} s, "
              f"minor faults {(after.ru_minflt - before.ru_minflt) // n}")  # fmt: skip
    print(f"{len(seconds)} steps: {sum(seconds):.1f} s")


if __name__ == "__main__":
    main()
