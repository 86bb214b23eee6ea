"""Where Exp A's training step spends its time on this CPU: the real model, data, LoRA and trainer as
`lorabench run` builds them (resolved runtime: precision, attention, micro-batches), a few steps under
torch.profiler, the operators by their own CPU time.

Usage: LORABENCH_DATA=FILE python dev/profile_cpu_step.py [--steps 6] [--set FIELD=VALUE …] [--top 25]
       [--shapes] [--skip 2]
--shapes: also the operators split by their input shapes (which tensors the time goes to).
--skip: steps run before the profiler records (the first touch their new memory pages, several times
slower than a steady step); the step seconds printed are the recorded steps' own.
Run it alone on the machine: the figures are the machine's, shared with nothing else.
"""

from __future__ import annotations

import argparse
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
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--set", action="append", default=[], dest="sets")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--shapes", action="store_true", help="also a table split by input shapes")
    parser.add_argument("--skip", type=int, default=2, help="steps run before the profiler records")
    args = parser.parse_args()
    prof = torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=args.shapes,
        schedule=torch.profiler.schedule(wait=max(args.skip - 1, 0), warmup=min(args.skip, 1), active=args.steps, repeat=1),
    )  # fmt: skip
    step_ends: list[float] = []

    class StepProfiler(TrainerCallback):
        def on_step_end(self, *_: object, **__: object) -> None:
            prof.step()
            step_ends.append(time.perf_counter())

    sets = [f"recipe.steps={args.skip + args.steps}", "recipe.warmup_steps=1", *args.sets]
    setup, runtime, model, trainer = exp_a_trainer(sets, [StepProfiler()])
    print(f"runtime: {runtime}")
    # The spans the run's steps take (lean LoRA forward, module walks, compile mode): the run's path.
    spans = hf.training_spans(model, trainer, setup, compile_mode(setup, runtime))
    started = time.perf_counter()
    with spans, prof:
        trainer.train()
    seconds = step_ends[-1] - (step_ends[args.skip - 1] if args.skip else started)
    print(
        f"{args.steps} steps in {seconds:.1f} s ({seconds / args.steps:.2f} s/step, profiler on), threads {torch.get_num_threads()}"
    )
    print(
        prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top, max_name_column_width=48)
    )
    if args.shapes:
        by_shape = prof.key_averages(group_by_input_shape=True)
        print(
            by_shape.table(
                sort_by="self_cpu_time_total",
                row_limit=args.top,
                max_name_column_width=32,
                max_shapes_column_width=90,
            )
        )


if __name__ == "__main__":
    main()
