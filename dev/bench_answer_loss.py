"""A training step with one of lorabench's step changes off and on, on Exp A's real model, data, LoRA and
trainer as `lorabench run` builds them on this machine: for each of --batches real training batches, one
training step (forward + backward, no optimizer step: the weights stay as they are) each way, in
alternating order, each timed; then the medians, the median of the per-batch ratios, and the largest loss
difference between the two on the same batch. --switch picks the change:
  answer-loss  the answer-token loss (harness/backends/answer_loss.py) against TRL's chunked cross-entropy
  lean-lora    the lean LoRA forward (harness/backends/lean_lora.py) against PEFT's
  compiled-layers  recipe.compile = "layers" (torch.compile of every decoder layer) against eager layers
  grouped-attention  eager attention without repeating the key/value heads (harness/backends/grouped_attention.py)
               against transformers' eager; the lean LoRA forward on both ways
  cpu-autocast  a CPU bf16 step under autocast (bf16 products, as a GPU trains and, since 2026-12-02 (428ad1b), a CPU
               run) against it without (bf16 base weights, fp32 LoRA products: the CPU default before then);
               the lean LoRA forward on both ways

Usage: LORABENCH_DATA=FILE python dev/bench_answer_loss.py [--switch answer-loss] [--batches 10]
       [--warmup 2] [--set FIELD=VALUE …]
Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from pathlib import Path

import torch

from harness import settings
from harness.backends import answer_loss, hf
from harness.backends.grouped_attention import grouped_eager
from harness.backends.lean_lora import lean_lora_forward
from harness.config import load_setup
from harness.models import resolve_model
from harness.runtime import resolve_setup_runtime
from harness.tasks.sql.data import load_split


def _answer_loss(trainer, on: bool) -> contextlib.AbstractContextManager:
    # A budget of 0 bytes sends every batch to TRL's chunked path (the switch itself was removed, issue #37).
    answer_loss.LOGITS_BUDGET_BYTES = 256 * 2**20 if on else 0
    return contextlib.nullcontext()


# --switch: (the name of the way off, of the way on, the step's context for a way).
SWITCHES = {
    "answer-loss": ("TRL chunked", "answer-token", _answer_loss),
    "lean-lora": ("PEFT forward", "lean forward", lambda trainer, on: lean_lora_forward(trainer.model, on)),
    # recipe.compile = "layers" (torch.compile of every decoder layer, dynamic shapes); the first "on" step compiles.
    "compiled-layers": (
        "eager layers",
        "compiled",
        lambda trainer, on: hf.compiled_layers(trainer.model, on),
    ),
    "cpu-autocast": ("fp32 LoRA", "autocast", lambda trainer, on: _cpu_autocast(trainer, on)),
    "grouped-attention": ("repeat_kv", "grouped", lambda trainer, on: _grouped(trainer, on)),
}


@contextlib.contextmanager
def _grouped(trainer, on: bool):
    with lean_lora_forward(trainer.model), grouped_eager(on):
        yield


@contextlib.contextmanager
def _cpu_autocast(trainer, on: bool):
    with lean_lora_forward(trainer.model), torch.autocast("cpu", dtype=torch.bfloat16, enabled=on):
        yield


def one_step(trainer, batch, items, on: bool, switch: str) -> tuple[float, float]:
    trainer.model.zero_grad(set_to_none=True)
    # A run's step runs under the trainer's mixed precision (accelerate wraps the forward inside train(),
    # which this bench never calls): bf16 autocast on a GPU and, since 2026-12-02 (428ad1b), on a CPU.
    with trainer.accelerator.autocast(), SWITCHES[switch][2](trainer, on):
        started = time.perf_counter()
        loss = trainer.training_step(trainer.model, dict(batch), items)
        elapsed = time.perf_counter() - started
    return elapsed, float(loss)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--switch", choices=sorted(SWITCHES), default="answer-loss")
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--set", action="append", default=[], dest="sets")
    args = parser.parse_args()
    setup = load_setup(Path("benchmarks/setups/exp_a.toml"), [*settings.data_source_sets(), *args.sets])
    runtime = resolve_setup_runtime(setup)
    model, tokenizer = hf.load(setup, resolve_model(setup.model).path, runtime)
    trainer = hf.build_trainer(
        hf.wrap_lora(model, setup), tokenizer, load_split(setup.data).train, setup, runtime, []
    )
    trainer.model.train()
    batches = iter(trainer.get_train_dataloader())
    times: dict[bool, list[float]] = {True: [], False: []}
    ratios, differences = [], []
    off_name, on_name, _ = SWITCHES[args.switch]
    print(
        f"runtime: {runtime.device} {runtime.precision} {runtime.attention}, threads {torch.get_num_threads()}, load {os.getloadavg()[0]:.2f}"
    )
    for index in range(args.warmup + args.batches):
        samples, items = trainer.get_batch_samples(batches, 1, trainer.args.device)
        batch = trainer._prepare_inputs(samples[0])
        order = (True, False) if index % 2 else (False, True)
        measured = {on: one_step(trainer, batch, items, on, args.switch) for on in order}
        tokens = int(batch["attention_mask"].sum())
        print(f"batch {index}: {off_name} {measured[False][0]:.3f} s, {on_name} {measured[True][0]:.3f} s; "
              f"{tokens} tokens, {int(items)} answer tokens; loss {measured[False][1]:.6f} vs {measured[True][1]:.6f}")  # fmt: skip
        if index >= args.warmup:
            for on in (True, False):
                times[on].append(measured[on][0])
            ratios.append(measured[False][0] / measured[True][0])
            differences.append(abs(measured[False][1] - measured[True][1]))
    print(
        f"\n{args.batches} batches after {args.warmup} warm-up, alternating, load {os.getloadavg()[0]:.2f} at the end"
    )
    for on, name in ((False, off_name), (True, on_name)):
        print(
            f"{name:13} median {statistics.median(times[on]):.3f} s/step  range {min(times[on]):.3f}–{max(times[on]):.3f}"
        )
    print(f"{off_name} / {on_name}, median of per-batch ratios: {statistics.median(ratios):.3f}×"
          f" (range {min(ratios):.3f}–{max(ratios):.3f}); largest loss difference {max(differences):.2e}")  # fmt: skip


if __name__ == "__main__":
    main()
