"""The LoRA gradients of one Exp A batch, eager and with every decoder layer torch.compiled (recipe.compile =
"layers"), each in bf16 and fp32, against the eager fp32 ones: norm ratio and cosine per run.

Why: on a 2-core EPYC a CPU seed with compiled layers in bf16 trained on a visibly different loss curve from
the eager one (step 3: 0.815 against 0.944; eager bf16, eager fp32 and compiled fp32 agree), so this looks
at the gradients batch by batch, the same weights for every batch or (--step) an AdamW step at the recipe's lr
after each, to see which path departs from the fp32 reference.

Usage: LORABENCH_DATA=FILE python dev/compare_compiled_grads.py [--batches 2] [--step]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from harness import settings
from harness.backends import hf
from harness.config import load_setup
from harness.models import resolve_model
from harness.runtime import resolve_setup_runtime
from harness.tasks.sql.data import load_split


def lora_grads(precision: str, compiled: bool, batches: int, step: bool) -> list[dict[str, torch.Tensor]]:
    setup = load_setup(
        Path("benchmarks/setups/exp_a.toml"), [*settings.data_source_sets(), f"precision={precision}"]
    )
    runtime = resolve_setup_runtime(setup)
    model, tokenizer = hf.load(setup, resolve_model(setup.model).path, runtime)
    torch.manual_seed(setup.recipe.seed)  # the same LoRA initialisation in every run
    trainer = hf.build_trainer(
        hf.wrap_lora(model, setup), tokenizer, load_split(setup.data).train, setup, runtime, []
    )
    trainer.model.train()
    trainer.create_optimizer()  # AdamW at the recipe's lr, no warm-up: a step moves the weights at once
    loader = iter(trainer.get_train_dataloader())
    out = []
    with hf.compiled_layers(trainer.model, compiled):
        for _ in range(batches):
            samples, items = trainer.get_batch_samples(loader, 1, trainer.args.device)
            trainer.model.zero_grad(set_to_none=True)
            with trainer.accelerator.autocast():  # the run's mixed precision (train() would wrap the forward)
                loss = trainer.training_step(trainer.model, trainer._prepare_inputs(samples[0]), items)
            grads = {
                n: p.grad.detach().float().clone()
                for n, p in trainer.model.named_parameters()
                if p.grad is not None
            }
            print(
                f"{precision:5} {'compiled' if compiled else 'eager':8} loss {float(loss):.6f}, {len(grads)} tensors with a gradient",
                flush=True,
            )
            out.append(grads)
            if step:
                trainer.optimizer.step()
    return out


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.nn.functional.cosine_similarity(a.flatten(), b.flatten(), dim=0))


def compare(name: str, grads: list[dict[str, torch.Tensor]], ref: list[dict[str, torch.Tensor]]) -> None:
    for index, (g, r) in enumerate(zip(grads, ref, strict=True)):
        keys = sorted(r)
        flat_g = torch.cat([g[k].flatten() for k in keys])
        flat_r = torch.cat([r[k].flatten() for k in keys])
        ratio = float(flat_g.norm() / flat_r.norm())
        worst_cos, worst = min((cosine(g[k], r[k]), k) for k in keys)
        print(f"batch {index}: {name:15} vs eager fp32: norm ratio {ratio:.4f}, cosine {cosine(flat_g, flat_r):.4f}; "
              f"lowest tensor cosine {worst_cos:.4f} ({worst})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batches", type=int, default=2)
    parser.add_argument(
        "--step",
        action="store_true",
        help="an optimizer step after each batch (the next batch sees new weights)",
    )
    args = parser.parse_args()
    ref = lora_grads("fp32", False, args.batches, args.step)
    ways = (("bf16", False), ("bf16", True), ("fp32", True))
    runs = {f"{p} {'compiled' if c else 'eager'}": lora_grads(p, c, args.batches, args.step) for p, c in ways}
    print(f"\ntorch {torch.__version__}, threads {torch.get_num_threads()}")
    for name, grads in runs.items():
        compare(name, grads, ref)


if __name__ == "__main__":
    main()
