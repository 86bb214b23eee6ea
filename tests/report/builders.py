"""Records the report tests write themselves: realistic values from the story's setups (SmolLM2-135M on
an RX 7900 XTX, ROCm stack; a small CPU run), with per-question predictions beside them."""

from __future__ import annotations

import hashlib
import math
import random
from functools import cache
from pathlib import Path
from typing import Any

from harness.atomic import write_lines
from harness.report.claim_table import DEFAULT_BENCHMARKS, load_setups, setup_references
from harness.results import RunRecord, predictions_path, record_path, write_record

GIB = 1024**3
SEEDS = (3407, 42, 1234)
N_QUESTIONS = 24

HOST_AMD: dict[str, Any] = {
    "cpu": {"arch": "x86_64", "logical_cores": 32, "model": "AMD Ryzen 9 7950X 16-Core Processor"},
    "ram_bytes": 64 * GIB, "kernel": "6.8.0-49-generic", "system": "Linux", "python": "3.12.3",
    "runtime": "hip", "runtime_version": "7.2.26015",
    "gpus": [{"index": 0, "name": "AMD Radeon RX 7900 XTX", "arch": "gfx1100", "vram_bytes": 25_753_026_560,
              "multiprocessors": 48}],
    "driver": "6.12.12", "id": "amd-radeon-rx-7900-xtx",
}  # fmt: skip
STACK_ROCM: dict[str, Any] = {
    "name": "rocm7.2-hf5.5",
    "packages": {"torch": "2.9.1+rocm7.2", "transformers": "5.5.0", "peft": "0.18.0", "trl": "1.14.0",
                 "accelerate": "1.12.0", "datasets": "4.4.1", "bitsandbytes": "0.50.0",
                 "pytorch-triton-rocm": "3.5.1", "lorabench": "0.1.0"},
    "lockfile": "lockfiles/rocm7.2-hf5.5.txt",
    "lockfile_sha256": "3f1c9a0d8e2b47a6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2",
    "image": "ghcr.io/lorabench/bench-rocm:rocm7.2-hf5.5",
    "image_digest": "sha256:9b2e4c6a8d0f1e3c5a7b9d1f3e5c7a9b1d3f5e7c9a1b3d5f7e9c1a3b5d7f9e1c",
}  # fmt: skip
HOST_CPU: dict[str, Any] = {
    "cpu": {"arch": "x86_64", "logical_cores": 2, "model": "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz"},
    "ram_bytes": 8 * GIB, "kernel": "6.1.0-27-cloud-amd64", "system": "Linux", "python": "3.11.2",
    "runtime": "cpu", "runtime_version": None, "gpus": [], "id": "cpu-intel-r-xeon-r-platinum-8481c-cpu-2.70ghz-2c",
}  # fmt: skip
STACK_CPU: dict[str, Any] = {
    "name": "cpu",
    "packages": {"torch": "2.9.1+cpu", "transformers": "5.5.0", "peft": "0.18.0", "trl": "1.14.0",
                 "accelerate": "1.12.0", "datasets": "4.4.1", "lorabench": "0.1.0"},
    "lockfile": "lockfiles/cpu.txt",
    "lockfile_sha256": "c0ffee00d1e5e1a7b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071829",
}  # fmt: skip


def losses(seed: int, steps: int, start: float, floor: float) -> list[float]:
    rng = random.Random(seed)
    return [
        round(floor + (start - floor) * math.exp(-t / 18) + rng.uniform(-0.04, 0.04), 5) for t in range(steps)
    ]


def predictions(seed: int, skill: int) -> list[dict[str, Any]]:
    """0–1 always wrong, 2–5 right depending on the seed (and `skill`), 6+ right; base right from 20."""
    rows = []
    for i in range(N_QUESTIONS):
        table = f"table_{i % 5}"
        context = f"CREATE TABLE {table} (name VARCHAR, year VARCHAR)"
        gold = f'SELECT name FROM {table} WHERE year = "{1990 + i}"'
        wrong = f'SELECT year FROM {table} WHERE name = "{1990 + i}"'
        right = i >= 6 or (2 <= i <= 5 and (i + seed + skill) % 3 != 0)
        base_right = i >= 20
        rows.append({
            "index": i, "row": hashlib.sha256(f"{context}|{gold}".encode()).hexdigest()[:12],
            "prediction": gold if right else wrong, "base_prediction": gold if base_right else wrong,
            "exact": right, "executes": True, "semantic": right, "base_exact": base_right,
            "base_semantic": base_right,
        })  # fmt: skip
    return rows


@cache
def _suite_files() -> dict[str, dict[str, str]]:
    return setup_references(load_setups(DEFAULT_BENCHMARKS, []))


def suite_file(experiment: str, setup_name: str) -> dict[str, str]:
    """The suite's setup file's own settings for this setup name (empty for a name the suite lacks)."""
    return _suite_files().get(f"{experiment}/{setup_name}", {})


def make_record(
    *, host: dict[str, Any], stack: dict[str, Any], experiment: str, setup_name: str, seed: int, created: str,
    precision: str = "bf16", backend: str = "hf", status: str = "ok", reason: str | None = None,
    train_s: float | None = 142.0, vram_gib: float | None = 3.1, rows: list[dict[str, Any]] | None = None,
    checks: dict[str, Any] | None = None, timed: bool = True, steps: int | None = None, model: str = "smollm2-135m",
) -> RunRecord:  # fmt: skip
    """A record of `experiment/setup_name`; a suite setup's record asks what its setup file asks (steps,
    precision, device, batch) unless `steps` is given: only then is it a run with an override."""
    device = "cuda" if host["gpus"] else "cpu"
    asked = suite_file(experiment, setup_name)
    steps = int(asked.get("recipe.steps", 60)) if steps is None else steps
    setup = {"name": setup_name, "experiment": experiment, "backend": backend,
             "precision": asked["precision"] if asked.get("precision") in ("auto", precision) else precision,
             "device": asked.get("device", "auto"), "model": {"source": model},
             "recipe": {"steps": steps, "batch_size": int(asked.get("recipe.batch_size", 8)), "seed": seed,
                        "gradient_checkpointing": False}}  # fmt: skip
    base: dict[str, Any] = {
        "run_id": f"{created[:10].replace('-', '')}-{setup_name}-s{seed}", "status": status, "reason": reason,
        "created": created, "experiment": experiment, "setup_name": setup_name, "seed": seed,
        "stack": stack["name"], "host": host["id"], "fingerprint": hashlib.sha256(f"{setup_name}-{seed}".encode()).hexdigest()[:16],
        "setup": setup,
        "provenance": {"host": host, "stack": stack, "git": {"sha": "7665fa1c0ffee1234567890abcdef1234567890a", "dirty": False},
                       "collected": created},
        "guard": {"timed": timed},
        "checks": checks or {},
    }  # fmt: skip
    if status in ("ok", "diverged", "failed") and train_s is not None:
        tokens = steps * 8 * 110
        base["model"] = {"source": model, "resolved": f"/cache/lorabench/models/{model}", "precision": precision,
                         "device": device}  # fmt: skip
        base["data"] = {"source": "b-mc2/sql-create-context", "split_hash": "5d41402abc4b2a76", "n_rows": 78577,
                        "n_train": 5000, "n_test": N_QUESTIONS}  # fmt: skip
        curve = losses(
            seed, steps, 1.9 if precision == "bf16" else 2.05, 0.42 if precision == "bf16" else 0.47
        )
        base["train"] = {"steps_done": steps, "loss": curve, "first_loss": curve[0],
                         "final_loss": round(sum(curve[-6:]) / 6, 5), "train_s": train_s, "tokens": tokens,
                         "tokens_per_s": round(tokens / train_s, 1), "samples_per_s": round(steps * 8 / train_s, 3),
                         "trainable_params": 4_884_480, "total_params": 134_515_008}  # fmt: skip
        base["timings"] = {"load_s": 4.2, "train_s": train_s, "total_s": round(train_s + 40.0, 2)}
        if vram_gib is not None:
            base["memory"] = {"device": device, "peak_vram_bytes": int(vram_gib * GIB)}
    if rows is not None:
        exact = 100 * sum(r["exact"] for r in rows) / len(rows)
        base_exact = 100 * sum(r["base_exact"] for r in rows) / len(rows)
        base["baseline"] = {"exact_match": round(base_exact, 1), "well_formed": 100.0, "semantic": round(base_exact, 1),
                            "n": len(rows), "cached": seed != SEEDS[0]}  # fmt: skip
        base["trained"] = {"exact_match": round(exact, 1), "well_formed": 100.0, "semantic": round(exact, 1),
                           "n": len(rows), "eval_s": 11.5}  # fmt: skip
        base["predictions_file"] = f"seed-{seed}.predictions.jsonl"
    return RunRecord.model_validate(base)


def write(results: Path, record: RunRecord, rows: list[dict[str, Any]] | None) -> Path:
    path = write_record(results, record)
    if rows is not None:
        write_lines(predictions_path(path), rows)
    return path


PASS = {"verdict": "pass", "detail": "2 prompt tokens in the loss of 0", "evidence": {}}


# The suite's setup names (benchmarks/setups/exp_a.toml, exp_b_4bit.toml), so the scorecard judges their claims.
EXP_A_SETUP = "smollm2-135m-lora"
EXP_B_SETUP = "smollm2-135m-4bit"
QUANTIZABLE = {"verdict": "pass", "detail": "linear layers hold 79% of 134.5M params",
               "evidence": {"max_saving_bytes": int(1.2 * GIB)}}  # fmt: skip
CACHE_ERROR = {
    "verdict": "error",
    "detail": "AttributeError: 'NoneType' object has no attribute 'max'",
    "evidence": {},
}


def write_story_results(results: Path) -> None:
    """The AMD host × ROCm stack (two setups × three seeds, one failing setup) and a CPU run."""
    for n, seed in enumerate(SEEDS):
        rows = predictions(seed, skill=0)
        checks = {"mask_audit": {"verdict": "pass", "detail": "no prompt token in the loss", "evidence": {}},
                  "dead_adapters": {"verdict": "pass", "detail": "every LoRA module got a gradient", "evidence": {}}}  # fmt: skip
        write(results, make_record(host=HOST_AMD, stack=STACK_ROCM, experiment="exp_a", setup_name=EXP_A_SETUP,
                                   seed=seed, created=f"2026-11-28T10:0{n}:00+00:00", train_s=140.0 + 3 * n,
                                   vram_gib=3.1 + 0.01 * n, rows=rows,
                                   checks={**checks, "quantizable_fraction": QUANTIZABLE}), rows)  # fmt: skip
        rows4 = predictions(seed, skill=1)
        write(results, make_record(host=HOST_AMD, stack=STACK_ROCM, experiment="exp_b", setup_name=EXP_B_SETUP,
                                   seed=seed, created=f"2026-11-28T11:0{n}:00+00:00", precision="4bit",
                                   train_s=186.0 + 4 * n, vram_gib=2.2 + 0.02 * n, rows=rows4,
                                   checks={**checks, "cache_parity": CACHE_ERROR}), rows4)  # fmt: skip
    write(results, make_record(host=HOST_AMD, stack=STACK_ROCM, experiment="exp_d", setup_name="gemma4-e2b", seed=3407,
                               created="2026-11-29T09:00:00+00:00", status="failed", train_s=None, vram_gib=None,
                               model="google/gemma-4-e2b",
                               reason="model load failed: KeyError: 'gemma4_unified' (transformers 5.5.0)"), None)  # fmt: skip
    rows = predictions(3407, skill=2)
    write(results, make_record(host=HOST_CPU, stack=STACK_CPU, experiment="exp_a", setup_name="smollm2-fp32",
                               seed=3407, created="2026-11-27T18:30:00+00:00", precision="fp32", train_s=1710.0,
                               vram_gib=None, rows=rows, timed=False), rows)  # fmt: skip


__all__ = [
    "EXP_A_SETUP",
    "EXP_B_SETUP",
    "HOST_AMD",
    "HOST_CPU",
    "SEEDS",
    "STACK_CPU",
    "STACK_ROCM",
    "make_record",
    "record_path",
    "write_story_results",
]
