"""Seconds per training step and eval seconds, fp32 against bf16, side by side on this machine.

Runs the real `lorabench run` (Exp A's setup, real model and data) for a few steps in each precision,
alternating the precisions --repeats times so that drift in the machine's load hits both alike, and
prints the medians and their ratio. Preflight and smoke are off (they are not what is timed here); eval
scores the first --eval-limit test questions. Run it alone: two trainings on the same cores slow each
other several-fold.

Usage: python benchmarks/bench_precision_step.py [--steps 12] [--repeats 3] [--eval-limit 32]
       [--precisions fp32,bf16] [--data FILE] [--setup benchmarks/setups/exp_a.toml]
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


def one_run(setup: str, precision: str, steps: int, eval_limit: int, data: str | None, results: Path) -> tuple[float, float]:
    command = [sys.executable, "-m", "harness.cli", "run", setup, "--quiet", "--results", str(results),
               "--set", f"precision={precision}", "--set", f"recipe.steps={steps}", "--set", "recipe.warmup_steps=2",
               "--set", "checks.preflight=false", "--set", "checks.smoke.enabled=false",
               "--set", "eval.baseline=false", "--set", f"eval.limit={eval_limit}"]  # fmt: skip
    if data:
        command += ["--data", data]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    (path,) = find_records([results])
    record = load_record(path)
    if record.status != "ok" or record.train is None:
        raise SystemExit(f"{precision}: run ended {record.status}: {record.reason}")
    return record.train.train_s / record.train.steps_done, record.timings.eval_s or 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--setup", default="benchmarks/setups/exp_a.toml")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--eval-limit", type=int, default=32)
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--data", default=os.environ.get(DATA_ENV))
    args = parser.parse_args()
    precisions = args.precisions.split(",")
    step_s: dict[str, list[float]] = {p: [] for p in precisions}
    eval_s: dict[str, list[float]] = {p: [] for p in precisions}
    for repeat in range(args.repeats):
        for precision in precisions:
            with tempfile.TemporaryDirectory() as tmp:
                s, e = one_run(args.setup, precision, args.steps, args.eval_limit, args.data, Path(tmp))
            step_s[precision].append(s)
            eval_s[precision].append(e)
            print(f"# repeat {repeat + 1}: {precision} {s:.2f} s/step, eval {e:.1f} s", flush=True)
    reference = precisions[0]
    print(f"\n{args.setup}: {args.steps} steps, eval of {args.eval_limit} questions, medians of {args.repeats}")
    print(f"{'precision':<10} {'s/step':>8} {'speedup':>8} {'eval s':>8} {'speedup':>8}")
    for p in precisions:
        s, e = statistics.median(step_s[p]), statistics.median(eval_s[p])
        s0, e0 = statistics.median(step_s[reference]), statistics.median(eval_s[reference])
        print(f"{p:<10} {s:>8.2f} {s0 / s:>7.2f}× {e:>8.1f} {e0 / e:>7.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
