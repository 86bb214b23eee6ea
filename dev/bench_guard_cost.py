"""What the guard sampler costs: CPU of its thread (and any vendor-tool calls) at 1 Hz.

Plain script, not collected by pytest: `python dev/bench_guard_cost.py [--seconds 20]`.
Budget: at most 1% of one core. Prints the sampler's own accounting and an independent one
(the process's CPU time while the main thread sleeps).
"""

from __future__ import annotations

import argparse
import os
import shutil
import time

from harness.guard import ALL_CHECKS, GuardConfig, Sampler


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to sample (default 20)")
    parser.add_argument("--interval", type=float, default=1.0, help="sampler period in seconds (default 1)")
    args = parser.parse_args()

    config = GuardConfig(sample_interval_s=args.interval, checks=ALL_CHECKS)
    cpu0, wall0 = time.process_time(), time.monotonic()
    with Sampler(config) as sampler:
        time.sleep(args.seconds)
    cpu_s, wall_s = time.process_time() - cpu0, time.monotonic() - wall0
    report = sampler.report()

    processes = sum(1 for entry in os.listdir("/proc") if entry.isdigit()) if os.path.isdir("/proc") else 0
    tools = [t for t in ("amd-smi", "rocm-smi", "nvidia-smi") if shutil.which(t)] or ["none"]
    print(
        f"samples: {report.n_samples} over {wall_s:.1f} s at {args.interval:g} s; checks: {', '.join(ALL_CHECKS)}"
    )
    print(f"host: {processes} processes visible, GPU tools: {', '.join(tools)}")
    print(f"sampler's own accounting: {report.cost_cpu_percent:.3f}% of one core")
    print(f"process CPU while sampling: {100 * cpu_s / wall_s:.3f}% of one core (includes interpreter idle)")
    budget_ok = report.cost_cpu_percent <= 1.0
    print(f"budget <= 1% of one core: {'met' if budget_ok else 'EXCEEDED'}")
    return 0 if budget_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
