"""Seconds of `lorabench bench`'s report step after its suite, with the report's imports made in a thread
while the suite ran (bench.preload_report) and without, each in a fresh interpreter, alternated.

Usage: python dev/bench_report_preload.py RESULTS [RESULTS ...] [--rounds N]
The suite is stood in for by a 4-second sleep (longer than the imports); the report renders RESULTS into a
temporary folder as bench renders its published and your records.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

ONE = """
import argparse, contextlib, io, sys, tempfile, time
from pathlib import Path
from harness.commands import bench
with tempfile.TemporaryDirectory() as out:
    if sys.argv[1] == "preloaded":
        bench.preload_report()
    time.sleep(4)
    args = argparse.Namespace(published=Path(sys.argv[2]), results=Path(sys.argv[3]), reports=Path(out),
                              setups=[], json=False)
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        status = bench.report_step(args)
    print(round(time.perf_counter() - started, 3), status)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("published")
    parser.add_argument("yours")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    seconds: dict[str, list[float]] = {"preloaded": [], "not": []}
    for _ in range(args.rounds):
        for way in seconds:
            out = subprocess.run([sys.executable, "-c", ONE, way, args.published, args.yours],
                                 capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
            seconds[way].append(float(out[0]))
    for way, values in seconds.items():
        print(f"report step, imports {way:9s}: median {statistics.median(values):.2f} s "
              f"(min {min(values):.2f}, max {max(values):.2f}, n = {len(values)}): {values}")  # fmt: skip


if __name__ == "__main__":
    main()
