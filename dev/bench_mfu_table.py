"""MFU of speed records at steady steps, with and without attention's FLOPs, and how their loss curves agree.

    python dev/bench_mfu_table.py RECORD.json [RECORD.json ...] [--reference NAME]

Per record: steady s/step (the record's train.step_s: median after the first tenth), tokens per step, MFU in
lorabench's convention (harness/run/mfu.py: 4·N + 2·N_trainable model FLOPs per token against the GPU's
dense bf16 peak, 989 TF/s on an H200), the same at steady steps, and at steady steps with attention's
score and value products counted (causal: each token attends to (S+1)/2 positions on average; forward
4·layers·heads·head_dim·(S+1)/2 per token, training 3× that; the model's shape is read from its config).
Then each record's loss curve against the reference's (the first record, or --reference by setup name):
the largest step-wise difference, relative to the reference's loss, and the mean difference.
The record holds every step's loss (train.loss), so nothing is read from logs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.models import ARCH_PRESETS
from harness.results import load_record
from harness.run.mfu import find_peak, training_flops


def attention_flops_per_token(config: dict, seq: int) -> float:
    """Training FLOPs of attention's two products per token for causal rows of `seq` tokens (see module doc)."""
    layers, heads = config["num_hidden_layers"], config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    return 3.0 * 4 * layers * heads * head_dim * (seq + 1) / 2


def row(path: Path) -> dict:
    record = load_record(path)
    train = record.train
    tokens_per_step = train.tokens / train.steps_done
    recipe = record.setup.recipe
    seq = recipe.max_length if recipe.packing != "none" else None
    per_token = training_flops(train.total_params, train.trainable_params, 1, False)
    gpus = record.provenance.host.gpus
    gpu = gpus[0].name if gpus else ""
    peak = find_peak(gpu)
    config_file = Path(record.model.resolved) / "config.json"
    config = (
        json.loads(config_file.read_text())
        if config_file.is_file()
        else ARCH_PRESETS.get(record.model.source)
    )
    attention = attention_flops_per_token(config, seq) if seq and config else None
    steady = tokens_per_step / train.step_s
    peak_flops = peak.bf16_dense_tflops * 1e12 if peak else float("nan")
    return {
        "name": record.setup_name, "kernels": ",".join(train.kernels or []) or "none", "step_s": train.step_s,
        "tokens_per_step": tokens_per_step, "tokens_per_s": steady, "mfu_run": train.mfu,
        "mfu_steady": steady * per_token / peak_flops,
        "mfu_steady_attn": steady * (per_token + attention) / peak_flops if attention else None,
        "peak_vram_gib": (record.memory.peak_vram_bytes or 0) / 2**30, "loss": train.loss,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="+", type=Path)
    parser.add_argument("--reference", help="setup name of the record the loss curves are compared with")
    args = parser.parse_args()
    rows = [row(p) for p in args.records]
    print("setup | kernels | steady s/step | tokens/step | tokens/s | MFU whole run | MFU steady | "
          "MFU steady + attention | peak VRAM GiB")  # fmt: skip
    for r in rows:
        attn = f"{100 * r['mfu_steady_attn']:.1f}%" if r["mfu_steady_attn"] is not None else "n/a"
        run = f"{100 * r['mfu_run']:.1f}%" if r["mfu_run"] is not None else "n/a"
        print(f"{r['name']} | {r['kernels']} | {r['step_s']:.3f} | {r['tokens_per_step']:.0f} | {r['tokens_per_s']:.0f} | "
              f"{run} | {100 * r['mfu_steady']:.1f}% | {attn} | {r['peak_vram_gib']:.1f}")  # fmt: skip
    reference = next((r for r in rows if r["name"] == args.reference), rows[0])
    print(f"\nloss curves against {reference['name']} (step: reference / other):")
    for r in rows:
        if r is reference:
            continue
        pairs = list(zip(reference["loss"], r["loss"], strict=False))
        diffs = [abs(a - b) for a, b in pairs]
        relative = max(d / abs(a) for d, (a, _) in zip(diffs, pairs, strict=True))
        print(f"{r['name']}: {len(pairs)} steps, max |Δ| {max(diffs):.4f} (relative {100 * relative:.2f}%), "
              f"mean |Δ| {sum(diffs) / len(diffs):.4f}")  # fmt: skip
        print("  " + "  ".join(f"{i + 1}:{a:.3f}/{b:.3f}" for i, (a, b) in enumerate(pairs)))


if __name__ == "__main__":
    main()
