"""Seconds per training step and eval seconds of setup variants side by side on this machine (by
default fp32 against bf16).

Runs the real `lorabench run` (Exp A's setup, real model and data) for a few steps per variant,
alternating the variants --repeats times so that drift in the machine's load hits all alike, and
prints the medians and their ratios to the first variant. Preflight and smoke are off (they are not what is timed here); eval
scores the first --eval-limit test questions. Run it alone: two trainings on the same cores slow each
other several-fold.

Usage: python benchmarks/bench_step.py [--steps 12] [--repeats 3] [--eval-limit 32] [--data FILE]
       [--setup benchmarks/setups/exp_a.toml] [--variant NAME=FIELD=VALUE[,FIELD=VALUE…] …]
e.g. --variant fp32=precision=fp32 --variant bf16-eager=precision=bf16,model.attention=eager
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.config import DATA_ENV
from harness.results import find_records, load_record

DEFAULT_VARIANTS = ("fp32=precision=fp32", "bf16=precision=bf16")


def one_run(setup: str, overrides: list[str], steps: int, eval_limit: int, data: str | None, results: Path) -> tuple[float, float]:
    sets = [arg for field in overrides for arg in ("--set", field)]
    command = [sys.executable, "-m", "harness.cli", "run", setup, "--quiet", "--results", str(results), *sets,
               "--set", f"recipe.steps={steps}", "--set", "recipe.warmup_steps=2",
               "--set", "checks.preflight=false", "--set", "checks.smoke.enabled=false",
               "--set", "eval.baseline=false", "--set", f"eval.limit={eval_limit}"]  # fmt: skip
    if data:
        command += ["--data", data]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    (path,) = find_records([results])
    record = load_record(path)
    if record.status != "ok" or record.train is None:
        raise SystemExit(f"{' '.join(overrides)}: run ended {record.status}: {record.reason}")
    return record.train.train_s / record.train.steps_done, record.timings.eval_s or 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--setup", default="benchmarks/setups/exp_a.toml")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--eval-limit", type=int, default=32)
    parser.add_argument("--variant", action="append", metavar="NAME=FIELD=VALUE[,FIELD=VALUE…]",
                        help=f"a variant: its name and setup overrides (default: {' '.join(DEFAULT_VARIANTS)})")
    parser.add_argument("--data", default=os.environ.get(DATA_ENV))
    args = parser.parse_args()
    variants: dict[str, list[str]] = {}
    for spec in args.variant or DEFAULT_VARIANTS:
        name, _, fields = spec.partition("=")
        if not name or "=" not in fields:
            parser.error(f"--variant {spec!r}: expected NAME=FIELD=VALUE[,FIELD=VALUE…], e.g. bf16=precision=bf16")
        variants[name] = fields.split(",")
    names = list(variants)
    step_s: dict[str, list[float]] = {p: [] for p in names}
    eval_s: dict[str, list[float]] = {p: [] for p in names}
    for repeat in range(args.repeats):
        for name, overrides in variants.items():
            with tempfile.TemporaryDirectory() as tmp:
                s, e = one_run(args.setup, overrides, args.steps, args.eval_limit, args.data, Path(tmp))
            step_s[name].append(s)
            eval_s[name].append(e)
            print(f"# repeat {repeat + 1}: {name} {s:.2f} s/step, eval {e:.1f} s", flush=True)
    reference = names[0]
    print(f"\n{args.setup}: {args.steps} steps, eval of {args.eval_limit} questions, medians of {args.repeats}")
    print(f"{'variant':<12} {'s/step':>8} {'speedup':>8} {'eval s':>8} {'speedup':>8}")
    for p in names:
        s, e = statistics.median(step_s[p]), statistics.median(eval_s[p])
        s0, e0 = statistics.median(step_s[reference]), statistics.median(eval_s[reference])
        print(f"{p:<12} {s:>8.2f} {s0 / s:>7.2f}× {e:>8.1f} {e0 / e:>7.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
