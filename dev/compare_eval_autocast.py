"""A bf16 model with a LoRA adapter decoded three ways (issue 40's autocast finding): as a trained model decoded
before 446cdfe (accelerate's autocast wrapper left on its forward by the Trainer), as `answer_questions` decodes it
now (`harness.run.evaluate.adapter_autocast`, no wrapper), and with no autocast at all (how an adapter scored with
`eval.adapter` decoded before). SmolLM2-135M in bf16 on the CPU, every LoRA B drawn at random (as after training),
the first N questions of a JSONL in sql-create-context's format. Prints each way's seconds and how many answers
agree.

Usage: python dev/compare_eval_autocast.py ../shared/data/sql-create-context/random-sample.jsonl [N]
"""

from __future__ import annotations

import contextlib
import json
import sys
import time

import torch
from accelerate import Accelerator

from harness.backends import hf
from harness.config import ModelConfig, load_setup
from harness.models import resolve_model
from harness.run import evaluate
from harness.runtime import Runtime
from harness.tasks.sql.data import SqlExample


def main() -> None:
    source, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 24
    path = resolve_model(ModelConfig(source="smollm2-135m")).path
    setup = load_setup(
        None, [f"model.source={path}", "device=cpu", "precision=bf16", "eval.max_new_tokens=48"]
    )
    model, tokenizer = hf.load(setup, path, Runtime("cpu", "bf16", "eager"))
    model = hf.wrap_lora(model, setup)
    for name, param in model.named_parameters():
        if "lora_B" in name:
            param.data.normal_(0, 0.02, generator=torch.Generator().manual_seed(len(name)))
    model.eval()
    with open(source, encoding="utf-8") as rows:
        examples = [SqlExample(**{k: row[k] for k in ("question", "context", "answer")})
                    for row in map(json.loads, list(rows)[:n])]  # fmt: skip

    def decoded(name: str, decoding: object) -> list[str]:
        started = time.perf_counter()
        answers = evaluate.answer_questions(decoding, tokenizer, examples, setup)
        print(f"{name:34s} {time.perf_counter() - started:6.1f} s", flush=True)
        return answers

    now = decoded("now (adapter_autocast)", model)
    explicit = evaluate.adapter_autocast
    evaluate.adapter_autocast = lambda *args: contextlib.nullcontext()
    accelerator = Accelerator(mixed_precision="bf16", cpu=True)
    before = decoded("before (the Trainer's wrapper)", accelerator.prepare_model(model))
    accelerator.unwrap_model(model, keep_fp32_wrapper=False)
    plain = decoded("no autocast (eval.adapter before)", model)
    evaluate.adapter_autocast = explicit

    def agree(a: list[str], b: list[str]) -> int:
        return sum(x == y for x, y in zip(a, b, strict=True))

    print(f"{len(now)} questions, {len(set(now))} distinct answers now; now = before: {agree(now, before)}; "
          f"now = no autocast: {agree(now, plain)}")  # fmt: skip


if __name__ == "__main__":
    main()
