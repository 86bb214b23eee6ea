"""CPU decoding, generate against greedy_shrinking, interleaved, on the base SmolLM2 (no trained run needed).

    python dev/bench_decode_cpu.py N ROUNDS

The first N test questions of Exp A's split (data: $LORABENCH_DATA, else the setup's own source),
fp32, batch 64, Exp A's max_new_tokens; each round decodes them both ways, one after the other, so a shared
machine slows both alike. Prints each time, the medians' ratio and how many answers are identical.
For a trained adapter: dev/bench_eval.py RECORD --ways generate,shrinking --interleave.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from harness import settings
from harness.config import load_setup
from harness.models import resolve_model
from harness.run.evaluate import generate_answers
from harness.tasks.encoding import end_of_turn, render_prompt
from harness.tasks.registry import task_module

WAYS = ("generate", "shrinking")


def main(n: int, rounds: int) -> None:
    setup = load_setup(Path("benchmarks/setups/exp_a.toml"), settings.data_source_sets())
    split = task_module(setup.task).load_split(setup.data)
    folder = resolve_model(setup.model).path
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    prompts = [render_prompt(tokenizer, ex) for ex in split.test[:n]]
    eot = end_of_turn(tokenizer)
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    answers: dict[str, list[str]] = {}
    for round_ in range(rounds):
        for way in WAYS:
            started = time.perf_counter()
            answers[way] = generate_answers(model, tokenizer, prompts, batch_size=64, end_of_turn=eot,
                                            max_new_tokens=setup.eval.max_new_tokens, shrink=way == "shrinking")  # fmt: skip
            times[way].append(round(time.perf_counter() - started, 2))
            print(way, round_, times[way][-1], flush=True)
    same = sum(a == b for a, b in zip(answers["generate"], answers["shrinking"], strict=True))
    g, k = statistics.median(times["generate"]), statistics.median(times["shrinking"])
    print(f"{n} questions, base SmolLM2 fp32, batch 64, torch threads {torch.get_num_threads()}: generate {g:.1f} s "
          f"{times['generate']}, shrinking {k:.1f} s {times['shrinking']}, ratio {g / k:.2f}x, identical answers {same}/{n}")  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
