"""How soon `lorabench bench` starts its warm trainer pool: seconds from the process's creation until it calls
harness.run.launch.start_trainer_pool (the pool's import of the trainer stack is a suite's critical path on a
GPU host). Pretends the host seats 3 workers and stops there: nothing is started, no suite runs.

Usage: LORABENCH_DATA=… python dev/bench_pool_start.py [ROUNDS]   (each round a fresh interpreter)
"""

from __future__ import annotations

import statistics
import subprocess
import sys

ONE = """
import sys, time, psutil
began = psutil.Process().create_time()
import harness.run.launch as launch
def pool_here(*args, **kwargs):
    print(round(time.time() - began, 3), flush=True)
    raise SystemExit(0)
launch.start_trainer_pool = pool_here
from harness import cli
import harness.commands.bench as bench
bench.workers_for_host = lambda gpus: 3
sys.argv = ["lorabench", "bench", "--", "-k", "exp_a"]
cli.main()
"""


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    values = []
    for _ in range(rounds):
        done = subprocess.run([sys.executable, "-c", ONE], capture_output=True, text=True, check=True)
        values.append(float(done.stdout.split()[-1]))
    print(f"pool started {statistics.median(values):.3f} s after the process began (median; min {min(values):.3f}, "
          f"max {max(values):.3f}, n = {len(values)}): {values}")  # fmt: skip


if __name__ == "__main__":
    main()
