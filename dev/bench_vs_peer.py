"""The harness's `hf` Exp A against the peer script (../shared/peers/plain_peft_sql.py), side by side.

Same recipe (300 steps, batch 8, lr 2e-4, r16/alpha16 on all linear projections), same data and split,
same seeds. The harness runs on GPU 0 and the peer on GPU 1 at the same time, one seed after another
(with `--one-gpu`: both on GPU 0, one command after the other, harness then peer per seed, so neither
shares the card); the figure is the wall-clock of each whole command (process start, load, baseline eval, training,
eval), and the exact match each reports. Harness variants (setup overrides, e.g. a compiled step) run
one after another per seed on GPU 0, each under its own setup name.

Usage: python dev/bench_vs_peer.py PEER_SCRIPT GGUF_DIR DATA RESULTS [SEED ...]
       [--peer-seeds 3407,42] [--variant NAME=FIELD=VALUE[,FIELD=VALUE…] …]
The default variant is Exp A as its setup file says; `--variant compiled=recipe.compile=layers` adds one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.results import find_records, load_record

SETUP = "benchmarks/setups/exp_a.toml"
EXP_A_NAME = "smollm2-135m-lora"


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


def parse_variants(specs: list[str]) -> dict[str, list[str]]:
    """NAME=FIELD=VALUE[,…] → {NAME: overrides}; each variant but the default gets its own setup name."""
    variants: dict[str, list[str]] = {"default": []}
    for spec in specs:
        name, _, fields = spec.partition("=")
        if not name or "=" not in fields:
            raise SystemExit(f"--variant {spec!r}: expected NAME=FIELD=VALUE[,FIELD=VALUE…]")
        variants[name] = [*fields.split(","), f"name={EXP_A_NAME}-{name}"]
    return variants


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("peer")
    parser.add_argument("gguf_dir")
    parser.add_argument("data")
    parser.add_argument("results")
    parser.add_argument("seeds", nargs="*", type=int, default=[3407, 42, 1234])
    parser.add_argument(
        "--peer-seeds",
        default=os.environ.get("PEER_SEEDS", ""),
        help="comma-separated: run the peer for these seeds only (default: all)",
    )
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=FIELD=VALUE[,FIELD=VALUE…]")
    parser.add_argument(
        "--one-gpu", action="store_true", help="a one-GPU machine: harness and peer in turn on GPU 0"
    )
    args = parser.parse_args()
    variants = parse_variants(args.variant)
    out = Path(args.results)
    out.mkdir(parents=True, exist_ok=True)
    harness_s: dict[tuple[int, str], float] = {}
    peer_s: dict[int, float] = {}

    def run_harness(seeds: list[int]) -> None:
        for seed in seeds:
            for name, overrides in variants.items():
                sets = [a for field in overrides for a in ("--set", field)]
                cmd = [sys.executable, "-m", "harness.cli", "run", SETUP, "--seed", str(seed), "--data", args.data,
                       "--results", args.results, "--quiet", *sets]  # fmt: skip
                harness_s[seed, name] = timed(cmd, "0", out / f"harness-{name}-{seed}.log")
                # Each figure as soon as it exists: a timeout that cuts the run short keeps what was measured.
                print(f"# harness {name} seed {seed}: {harness_s[seed, name]:.1f} s wall", flush=True)

    peer_seeds = [int(s) for s in args.peer_seeds.split(",") if s] or args.seeds

    peer_gpu = "0" if args.one_gpu else "1"

    def run_peer(seeds: list[int]) -> None:
        for seed in seeds:
            cmd = [
                sys.executable,
                args.peer,
                args.gguf_dir,
                "SmolLM2-135M-Instruct.Q4_1.gguf",
                args.data,
                "300",
                str(seed),
            ]
            peer_s[seed] = timed(cmd, peer_gpu, out / f"peer-{seed}.log")
            print(f"# peer seed {seed}: {peer_s[seed]:.1f} s wall", flush=True)

    if args.one_gpu:
        for seed in args.seeds:
            run_harness([seed])
            if seed in peer_seeds:
                run_peer([seed])
    else:
        threads = [threading.Thread(target=run_harness, args=(args.seeds,)),
                   threading.Thread(target=run_peer, args=(peer_seeds,))]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    names = {name: EXP_A_NAME if name == "default" else f"{EXP_A_NAME}-{name}" for name in variants}
    records = {
        (r.seed, r.setup_name): r for r in map(load_record, find_records([out])) if r.experiment == "exp_a"
    }
    print(
        "seed | harness variant | harness s (train s) | peer s | speedup | harness EM base→trained | peer EM base→trained"
    )
    for seed in args.seeds:
        base, lora = peer_exact_match(out / f"peer-{seed}.log") if seed in peer_s else (None, None)
        for name in variants:
            rec = records.get((seed, names[name]))
            ok = (
                rec is not None
                and rec.trained is not None
                and rec.baseline is not None
                and rec.train is not None
            )
            ours = f"{rec.baseline.exact_match}→{rec.trained.exact_match}" if ok else "n/a (see the log)"  # type: ignore[union-attr]
            train = f" ({rec.train.train_s:.0f})" if ok else ""  # type: ignore[union-attr]
            seconds = f"{harness_s[seed, name]:.0f}{train}"
            if seed not in peer_s:
                print(f"{seed} | {name} | {seconds} | not run | | {ours} |")
                continue
            ratio = peer_s[seed] / harness_s[seed, name]
            print(f"{seed} | {name} | {seconds} | {peer_s[seed]:.0f} | {ratio:.2f}× | {ours} | {base}→{lora}")


if __name__ == "__main__":
    main()
