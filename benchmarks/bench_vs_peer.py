"""The harness's `hf` Exp A against the peer script (../shared/peers/plain_peft_sql.py), side by side.

Same recipe (300 steps, batch 8, lr 2e-4, r16/alpha16 on all linear projections), same data and split,
same seeds. Each side gets its own GPU at the same time, one seed after another; the figure is the
wall-clock of each whole command (load, baseline eval, training, eval), and the exact match each reports.
Usage: python benchmarks/bench_vs_peer.py PEER_SCRIPT GGUF_DIR DATA RESULTS [SEED ...]
$PEER_SEEDS (comma-separated) limits the peer to some of the seeds when time is short.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.results import find_records, load_record


def timed(cmd: list[str], gpu: str, log: Path) -> float:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu}
    started = time.perf_counter()
    with log.open("w") as out:
        subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    return time.perf_counter() - started


def peer_exact_match(log: Path) -> tuple[float | None, float | None]:
    phases = {}
    for line in log.read_text().splitlines():
        if line.startswith("{"):
            data = json.loads(line)
            phases[data.get("phase")] = data
    return phases.get("eval-base", {}).get("em"), phases.get("eval-lora", {}).get("em")


def main(peer: str, gguf_dir: str, data: str, results: str, seeds: list[int]) -> None:
    out = Path(results)
    out.mkdir(parents=True, exist_ok=True)
    harness_s: dict[int, float] = {}
    peer_s: dict[int, float] = {}

    def run_harness() -> None:
        for seed in seeds:
            cmd = [sys.executable, "-m", "harness.cli", "run", "benchmarks/setups/exp_a.toml", "--seed", str(seed),
                   "--data", data, "--results", results, "--quiet"]  # fmt: skip
            harness_s[seed] = timed(cmd, "0", out / f"harness-{seed}.log")

    peer_seeds = [int(s) for s in os.environ.get("PEER_SEEDS", "").split(",") if s] or seeds

    def run_peer() -> None:
        for seed in peer_seeds:
            cmd = [sys.executable, peer, gguf_dir, "SmolLM2-135M-Instruct.Q4_1.gguf", data, "300", str(seed)]
            peer_s[seed] = timed(cmd, "1", out / f"peer-{seed}.log")

    threads = [threading.Thread(target=run_harness), threading.Thread(target=run_peer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = {r.seed: r for r in map(load_record, find_records([out])) if r.experiment == "exp_a"}
    print("seed | harness s | peer s | speedup | harness EM base→trained | peer EM base→trained")
    for seed in seeds:
        rec = records.get(seed)
        ours = f"{rec.baseline.exact_match}→{rec.trained.exact_match}" if rec and rec.trained and rec.baseline else "n/a"
        if seed not in peer_s:
            print(f"{seed} | {harness_s[seed]:.0f} | not run | | {ours} |")
            continue
        base, lora = peer_exact_match(out / f"peer-{seed}.log")
        ratio = peer_s[seed] / harness_s[seed]
        print(f"{seed} | {harness_s[seed]:.0f} | {peer_s[seed]:.0f} | {ratio:.2f}× | {ours} | {base}→{lora}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], [int(s) for s in sys.argv[5:]] or [3407, 42, 1234])
