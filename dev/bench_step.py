"""Seconds per training step and eval seconds of setup variants side by side on this machine (by default
the CPU settings before issue #20 against today's defaults).

Runs the real `lorabench run` (Exp A's setup, real model and data) for a few steps per variant,
alternating the variants --repeats times (ABAB…) so that drift in the machine's load hits all alike, and
prints per variant the median over the repeats of each run's steady seconds per step (the record's
`train.step_s`: the median step, the first tenth left out), their range, the ratio to the first variant,
and the eval seconds; the load average is printed beside every run. Preflight and smoke are off (they
are not what is timed here); eval scores the first --eval-limit test questions. Run it alone: two
trainings on the same cores slow each other several-fold.

--interleave steps: one process holds every variant's model and trainer and runs one training step of
each in turn on the same batch (the run's own `training_step`, then the optimizer): load drift on a
shared machine then hits the variants within seconds of each other, where whole runs are minutes apart.
It prints each variant's median step, its range, and the median over steps of the per-step ratio to the
first variant. No eval in this mode; the first --warmup steps are left out.

Usage: python dev/bench_step.py [--steps 12] [--repeats 3] [--eval-limit 32] [--data FILE]
       [--setup benchmarks/setups/exp_a.toml] [--variant NAME=FIELD=VALUE[,FIELD=VALUE…] …]
       [--interleave runs|steps] [--warmup 2]
e.g. --variant fp32=precision=fp32 --variant bf16-eager=precision=bf16,model.attention=eager
A variant with no fields (`--variant defaults=`) runs the setup as it is.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness import settings
from harness.results import find_records, load_record

# Before: the CPU defaults until issue #20 (fp32, SDPA, one padded batch); after: the defaults now.
DEFAULT_VARIANTS = ("before=precision=fp32,model.attention=sdpa", "defaults=")


@dataclass(frozen=True)
class Measured:
    step_s: float  # steady median of the run
    eval_s: float
    load: float  # 1-minute load average when the run started
    resolved: str  # what the run's precision and attention resolved to


def one_run(
    setup: str, overrides: list[str], steps: int, eval_limit: int, data: str | None, results: Path
) -> Measured:
    sets = [arg for field in overrides for arg in ("--set", field)]
    command = [sys.executable, "-m", "harness.cli", "run", setup, "--quiet", "--results", str(results), *sets,
               "--set", f"recipe.steps={steps}", "--set", "recipe.warmup_steps=2",
               "--set", "checks.preflight=false", "--set", "checks.smoke.enabled=false",
               "--set", "eval.baseline=false", "--set", f"eval.limit={eval_limit}"]  # fmt: skip
    if data:
        command += ["--data", data]
    load = os.getloadavg()[0]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    (path,) = find_records([results])
    record = load_record(path)
    if record.status != "ok" or record.train is None or record.model is None:
        raise SystemExit(f"{' '.join(overrides)}: run ended {record.status}: {record.reason}")
    step = record.train.step_s or record.train.train_s / record.train.steps_done  # type: ignore[operator]
    resolved = f"{record.model.precision}/{record.model.attention}"
    return Measured(step, record.timings.eval_s or 0.0, load, resolved)


def interleaved_steps(
    setup_file: str, variants: dict[str, list[str]], steps: int, warmup: int, data: str | None
) -> int:
    """One step of each variant in turn, on the same batches, in this process (see the module's doc)."""
    import time

    import torch

    from harness.backends import hf
    from harness.config import load_setup
    from harness.models import resolve_model
    from harness.runtime import resolve_setup_runtime
    from harness.tasks.registry import task_module

    built = {}
    for name, fields in variants.items():
        overrides = [*([("data.source", data)] if data else []), *fields]
        setup = load_setup(Path(setup_file), overrides)
        runtime = resolve_setup_runtime(setup)
        model, tokenizer = hf.load(setup, resolve_model(setup.model).path, runtime)
        split = task_module(setup.task).load_split(setup.data)
        trainer = hf.build_trainer(hf.wrap_lora(model, setup), tokenizer, split.train, setup, runtime, [])
        trainer.create_optimizer()
        built[name] = (trainer, runtime)
    names = list(built)
    first_trainer = built[names[0]][0]
    batches = iter(first_trainer.get_train_dataloader())
    times: dict[str, list[float]] = {n: [] for n in names}
    for step in range(warmup + steps):
        batch = next(batches)
        num_items = (batch["labels"][:, 1:] != -100).sum()
        line = []
        for name in names:
            trainer, _ = built[name]
            started = time.perf_counter()
            with trainer.accelerator.autocast():  # the run's mixed precision (train() would wrap the forward)
                trainer.training_step(trainer.model, {k: v for k, v in batch.items()}, num_items)
            trainer.optimizer.step()
            trainer.optimizer.zero_grad(set_to_none=True)
            seconds = time.perf_counter() - started
            if step >= warmup:
                times[name].append(seconds)
            line.append(f"{name} {seconds:.3f}")
        tokens = int(batch["attention_mask"].sum()) if "attention_mask" in batch else 0
        print(f"# step {step + 1}{' (warm-up)' if step < warmup else ''}: {', '.join(line)} s; "
              f"{tokens} tokens, padded {batch['input_ids'].numel()}; load {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
    ref = times[names[0]]
    print(f"\n{setup_file}: {steps} steps per variant after {warmup} warm-up, interleaved step by step on the same "
          f"batches, torch threads {torch.get_num_threads()}")  # fmt: skip
    print(f"{'variant':<12} {'ran as':<20} {'s/step':>7} {'range':>15} {'speedup':>8}")
    for name in names:
        runtime = built[name][1]
        ran_as = f"{runtime.precision}/{runtime.attention}"
        ratio = statistics.median(r / t for r, t in zip(ref, times[name], strict=True))
        t = times[name]
        print(
            f"{name:<12} {ran_as:<20} {statistics.median(t):>7.3f} {min(t):>7.3f}–{max(t):<7.3f} {ratio:>7.2f}×"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--setup", default="benchmarks/setups/exp_a.toml")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--eval-limit", type=int, default=32)
    parser.add_argument(
        "--variant",
        action="append",
        metavar="NAME=FIELD=VALUE[,FIELD=VALUE…]",
        help=f"a variant: its name and setup overrides (default: {' '.join(DEFAULT_VARIANTS)})",
    )
    parser.add_argument("--data", default=settings.DATA.get())
    parser.add_argument(
        "--interleave",
        choices=("runs", "steps"),
        default="runs",
        help="alternate whole runs (default) or single training steps in one process",
    )
    parser.add_argument(
        "--warmup", type=int, default=2, help="steps left out per variant (--interleave steps)"
    )
    args = parser.parse_args()
    variants: dict[str, list[str]] = {}
    for spec in args.variant or DEFAULT_VARIANTS:
        name, sep, fields = spec.partition("=")
        if not name or not sep or (fields and "=" not in fields):
            parser.error(
                f"--variant {spec!r}: expected NAME=FIELD=VALUE[,FIELD=VALUE…] or NAME=, e.g. bf16=precision=bf16"
            )
        variants[name] = fields.split(",") if fields else []
    if args.interleave == "steps":
        return interleaved_steps(args.setup, variants, args.steps, args.warmup, args.data)
    names = list(variants)
    runs: dict[str, list[Measured]] = {p: [] for p in names}
    for repeat in range(args.repeats):
        for name, overrides in variants.items():
            with tempfile.TemporaryDirectory() as tmp:
                m = one_run(args.setup, overrides, args.steps, args.eval_limit, args.data, Path(tmp))
            runs[name].append(m)
            print(f"# repeat {repeat + 1}: {name} ({m.resolved}) {m.step_s:.3f} s/step, eval {m.eval_s:.1f} s, "
                  f"load {m.load:.2f}", flush=True)  # fmt: skip
    reference = names[0]
    loads = [m.load for ms in runs.values() for m in ms]
    print(f"\n{args.setup}: {args.steps} steps, eval of {args.eval_limit} questions, medians of {args.repeats} "
          f"runs per variant (ABAB), load average at run starts {min(loads):.2f}–{max(loads):.2f}")  # fmt: skip
    print(
        f"{'variant':<12} {'ran as':<11} {'s/step':>7} {'range':>13} {'speedup':>8} {'eval s':>7} {'range':>13} {'speedup':>8}"
    )
    s0 = statistics.median(m.step_s for m in runs[reference])
    e0 = statistics.median(m.eval_s for m in runs[reference])
    for p in names:
        steps, evals = [m.step_s for m in runs[p]], [m.eval_s for m in runs[p]]
        s, e = statistics.median(steps), statistics.median(evals)
        print(f"{p:<12} {runs[p][0].resolved:<11} {s:>7.3f} {min(steps):>6.3f}–{max(steps):<6.3f} {s0 / s:>7.2f}× "
              f"{e:>7.1f} {min(evals):>6.1f}–{max(evals):<6.1f} {e0 / e:>7.2f}×")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
