"""Eval decoding with PEFT's LoRA forward and with the lean one (harness/backends/lean_lora.py), unmerged as a
CPU's eval decodes, alternated round by round: seconds each way and whether the answers are identical.

Exp A's model and setup as `lorabench run` resolves them on this machine, the first --limit test questions.
The adapter's B matrices are drawn small (a fresh adapter's are zero, which would leave the LoRA sums out of
the answers and hide a slip); the decoding cost is a trained adapter's.

Usage: LORABENCH_DATA=FILE python benchmarks/bench_eval_lean_lora.py [--limit 64] [--rounds 2]
Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Generator
from pathlib import Path

import torch

from harness import settings
from harness.backends import hf
from harness.backends.lean_lora import lean_lora_forward
from harness.config import load_setup
from harness.models import resolve_model
from harness.run import evaluate
from harness.run.evaluate import answer_questions
from harness.runtime import resolve_setup_runtime
from harness.tasks.sql.data import load_split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    setup = load_setup(Path("benchmarks/setups/exp_a.toml"), settings.data_source_sets())
    runtime = resolve_setup_runtime(setup)
    model, tokenizer = hf.load(setup, resolve_model(setup.model).path, runtime)
    model = hf.wrap_lora(model, setup)
    generator = torch.Generator().manual_seed(0)
    for name, param in model.named_parameters():
        if "lora_B" in name:
            param.data.normal_(0, 0.02, generator=generator)
    model.eval()
    test = load_split(setup.data).test[: args.limit]
    times: dict[bool, list[float]] = {False: [], True: []}
    answers: dict[bool, list[str]] = {}
    print(f"runtime: {runtime.device} {runtime.precision} {runtime.attention}, {len(test)} questions, threads {torch.get_num_threads()}")
    for round_ in range(args.rounds):
        for lean in (False, True) if round_ % 2 == 0 else (True, False):
            started = time.perf_counter()
            # answer_questions enters the lean forward itself for the hf backend; the outer one decides here.
            with lean_lora_forward(model, lean), _peft_only(not lean):
                got = answer_questions(model, tokenizer, test, setup)
            times[lean].append(time.perf_counter() - started)
            answers.setdefault(lean, got)
            print(f"round {round_} {'lean' if lean else 'PEFT'}: {times[lean][-1]:.1f} s", flush=True)
    same = sum(a == b for a, b in zip(answers[False], answers[True], strict=True))
    ratio = statistics.median(times[False]) / statistics.median(times[True])
    print(f"PEFT / lean, ratio of medians {ratio:.3f}×; answers identical {same} of {len(test)}")


@contextlib.contextmanager
def _peft_only(on: bool) -> Generator[None]:
    """While on: answer_questions's own lean forward stays off (the `hf` backend turns it on by default)."""
    saved = evaluate.lean_lora_forward
    if on:
        evaluate.lean_lora_forward = lambda model, enabled=True: lean_lora_forward(model, False)
    try:
        yield
    finally:
        evaluate.lean_lora_forward = saved


if __name__ == "__main__":
    main()
