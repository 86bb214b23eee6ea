"""What the Trainer's per-step whole-model walks cost on the host, against the lean steps' equivalents
(harness/backends/lean_steps.py), on LoRA SmolLM2-135M (r16, all linear) in fp32 on this machine's CPU.

    python dev/bench_module_walks.py [--repeats 30]

The walks are Python over the model's modules and parameters, so their cost is the host's, whatever the
device; each figure is the median of `--repeats` calls, the walk first, then its lean equivalent.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from harness.config import ModelConfig
    from harness.models import resolve_model

    path = resolve_model(ModelConfig(source="smollm2-135m"))
    model = AutoModelForCausalLM.from_pretrained(str(getattr(path, "path", path)), dtype=torch.float32)
    model = get_peft_model(
        model, LoraConfig(r=16, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM")
    )
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    for param in trainable:
        param.grad = torch.zeros_like(param)
    n_params = model.num_parameters(exclude_embeddings=True)
    print(f"modules {sum(1 for _ in model.modules())}, parameters {sum(1 for _ in model.parameters())}, "
          f"trainable {len(trainable)}; median ms of {args.repeats} calls")  # fmt: skip
    rows = [
        ("train() (Trainer, every step)", lambda: model.train(), "lean: returns at once", lambda: model.training),
        ("num_parameters() (FLOP counter)", lambda: model.num_parameters(exclude_embeddings=True),
         "lean: counted once", lambda: n_params),
        ("parameters() listed (clip's input)", lambda: list(model.parameters()),
         "lean: the trainable list", lambda: trainable),
        ("zero_grad() over all", lambda: model.zero_grad(set_to_none=False),
         "lean: trainable only", lambda: [p.grad.zero_() for p in trainable]),
    ]  # fmt: skip
    for name, walk, lean_name, lean in rows:
        walk_ms = median_ms(walk, args.repeats)
        lean_ms = median_ms(lean, args.repeats)
        print(f"{name:<36} {walk_ms:8.2f} ms | {lean_name:<24} {lean_ms:8.3f} ms")


if __name__ == "__main__":
    main()
