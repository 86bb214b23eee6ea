"""Eval decoding with one of lorabench's decoding changes off and on, unmerged as a CPU's eval decodes,
alternated round by round: seconds each way and whether the answers are identical. --switch picks it:
  lean-lora          PEFT's LoRA forward against the lean one (harness/backends/lean_lora.py)
  grouped-attention  transformers' eager attention against the grouped one (harness/backends/grouped_attention.py)
  contiguous-head    the head's strided input against a contiguous one (evaluate.contiguous_head_input)

Exp A's model and setup as `lorabench run` resolves them on this machine, the first --limit test questions.
The adapter's B matrices are drawn small (a fresh adapter's are zero, which would leave the LoRA sums out of
the answers and hide a slip); the decoding cost is a trained adapter's. --adapter DIR decodes with a trained
adapter instead (a run's `seed-N.adapter`).

Usage: LORABENCH_DATA=FILE python dev/bench_eval_lean_lora.py [--switch lean-lora] [--limit 64]
       [--rounds 2] [--adapter DIR]
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
from harness.config import load_setup
from harness.models import resolve_model
from harness.run import evaluate
from harness.run.evaluate import answer_questions
from harness.runtime import resolve_setup_runtime
from harness.tasks.sql.data import load_split


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--switch", choices=sorted(SWITCHES), default="lean-lora")
    parser.add_argument(
        "--adapter", type=Path, help="a trained adapter's folder (default: random small B matrices)"
    )
    args = parser.parse_args()
    setup = load_setup(Path("benchmarks/setups/exp_a.toml"), settings.data_source_sets())
    runtime = resolve_setup_runtime(setup)
    model, tokenizer = hf.load(setup, resolve_model(setup.model).path, runtime)
    if args.adapter:
        model = hf.attach_adapter(model, args.adapter)
    else:
        model = hf.wrap_lora(model, setup)
        generator = torch.Generator().manual_seed(0)
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.data.normal_(0, 0.02, generator=generator)
    model.eval()
    off_name, on_name = SWITCHES[args.switch][:2]
    test = load_split(setup.data).test[: args.limit]
    times: dict[bool, list[float]] = {False: [], True: []}
    answers: dict[bool, list[str]] = {}
    print(
        f"runtime: {runtime.device} {runtime.precision} {runtime.attention}, {len(test)} questions, threads {torch.get_num_threads()}"
    )
    for round_ in range(args.rounds):
        for on in (False, True) if round_ % 2 == 0 else (True, False):
            started = time.perf_counter()
            # answer_questions enters the change itself where it applies; off, it is entered disabled.
            with _forced_off(args.switch, not on):
                got = answer_questions(model, tokenizer, test, setup)
            times[on].append(time.perf_counter() - started)
            answers.setdefault(on, got)
            print(f"round {round_} {on_name if on else off_name}: {times[on][-1]:.1f} s", flush=True)
    same = sum(a == b for a, b in zip(answers[False], answers[True], strict=True))
    ratio = statistics.median(times[False]) / statistics.median(times[True])
    print(f"{off_name} / {on_name}, ratio of medians {ratio:.3f}×; answers identical {same} of {len(test)}")


# --switch: (the name of the way off, of the way on, the context manager of harness.run.evaluate that
# answer_questions enters, and what stands in for it when off: the same span, disabled).
SWITCHES = {
    "lean-lora": (
        "PEFT",
        "lean",
        "lean_lora_forward",
        lambda saved: lambda model, enabled=True: saved(model, False),
    ),
    "grouped-attention": (
        "eager",
        "grouped",
        "grouped_eager",
        lambda saved: lambda enabled=True: saved(False),
    ),
    "contiguous-head": (
        "strided head input",
        "contiguous",
        "contiguous_head_input",
        lambda saved: lambda model: contextlib.nullcontext(),
    ),
}


@contextlib.contextmanager
def _forced_off(switch: str, on: bool) -> Generator[None]:
    """While on: answer_questions enters the switch's span disabled (it enables it itself by default)."""
    name, disabled = SWITCHES[switch][2:]
    saved = getattr(evaluate, name)
    if on:
        setattr(evaluate, name, disabled(saved))
    try:
        yield
    finally:
        setattr(evaluate, name, saved)


if __name__ == "__main__":
    main()
