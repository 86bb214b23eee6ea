"""Two fixed costs of every run, old way against new way, interleaved in fresh interpreters.

    python dev/bench_fixed_cost.py [--repeats 5]

1. The parent's provenance of GPU facts: `collect_gpus()` in a fresh interpreter as it was (torch imported
   to ask it) against as it is (torch's version file, nvidia-smi where there is one; harness/gpu/facts.py).
2. The trainer child's end: a fresh interpreter that imported what a trainer imports (torch, transformers,
   PEFT, TRL, datasets) ending the usual way (interpreter teardown) against `os._exit` after flushing
   (harness/run/child.py `leave`). Timed from its last line to the parent seeing it gone.
Each pair runs old, new, old, new, ... so a busy shared machine slows both alike; the ratio of medians is
the figure, with each side's spread. Prints one line per cost and a closing table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FACTS_NEW = "import time; t = time.time(); from harness.gpu import facts; facts.collect_gpus(); print(t)"
# The old way's clock starts before `import torch` too: what the parent paid was torch's import.
FACTS_OLD = "import time; t = time.time(); import torch; from harness.gpu import facts; facts.collect_gpus(); print(t)"
EXIT = """
import os, sys, time
import torch, transformers, peft, datasets
from transformers import AutoModelForCausalLM
from trl import SFTTrainer
print(time.time(), flush=True)
{end}
"""


def one(code: str) -> float:
    """Seconds from the stamp the snippet prints to its process being gone (facts: stamp to exit)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)  # fmt: skip
    gone = time.time()
    return gone - float(proc.stdout.strip().splitlines()[-1])


def pair(old: str, new: str, repeats: int) -> tuple[list[float], list[float]]:
    olds, news = [], []
    for _ in range(repeats):
        olds.append(one(old))
        news.append(one(new))
    return olds, news


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    cases = {
        "parent GPU facts (torch imported vs version file)": (FACTS_OLD, FACTS_NEW),
        "child end (interpreter teardown vs os._exit)": (EXIT.format(end="sys.exit(0)"),
                                                          EXIT.format(end="sys.stdout.flush(); os._exit(0)")),
    }  # fmt: skip
    rows = []
    for name, (old, new) in cases.items():
        olds, news = pair(old, new, args.repeats)
        o, n = statistics.median(olds), statistics.median(news)
        rows.append((name, o, min(olds), max(olds), n, min(news), max(news)))
        print(f"{name}: old {o:.2f} s, new {n:.2f} s (medians of {args.repeats}, interleaved)", flush=True)
    print("cost | old median (min-max) s | new median (min-max) s | saved s | old/new")
    for name, o, olo, ohi, n, nlo, nhi in rows:
        print(
            f"{name} | {o:.2f} ({olo:.2f}-{ohi:.2f}) | {n:.2f} ({nlo:.2f}-{nhi:.2f}) | {o - n:.2f} | {o / n:.1f}x"
        )


if __name__ == "__main__":
    main()
