"""Eval time for one trained run's test questions, decoded several ways side by side, and how often
each way's answers are identical to one-question-at-a-time greedy decoding and to the peer's.

Ways (same model, same adapter, same prompts, greedy, 64 new tokens at most, first line kept):
  peer          ../shared/peers/plain_peft_sql.py's evaluate(): plain `model.generate`, batch 64,
                prompts sorted by length, no stop before 64 tokens or EOS, adapter unmerged
  harness       what a run does: `generate_answers` with eval.batch_size and eval.merge_adapter = auto
  unmerged      the harness's batching, adapter left unmerged (separates the two effects)
  merged        the harness's batching, adapter merged (in fp32 merging changes sums by rounding only;
                H200, fp32: 4.92× the peer with 300/300 answers identical, bench_eval_fp32.txt)
  one-at-a-time `generate_answers` with batch 1, unmerged: the reference for equivalence
  generate      the harness's batching and merging, decoded by `generate` (the GPU's way)
  shrinking     the same, decoded by `greedy_shrinking` (the CPU's way: a stopped row leaves the batch)
--interleave runs the ways in turn, one repeat each, round after round (a shared machine slows all alike).

Usage: python dev/bench_eval.py RECORD [--ways peer,harness,unmerged,merged,one-at-a-time]
       [--repeats 3] [--limit N] [--one-at-a-time-limit N] [--device auto] [--precision P] [--json OUT]
RECORD is a run record `seed-N.json` with its `seed-N.adapter/` beside it; the test rows are read from
the data the record names (or $LORABENCH_DATA). Times are medians over --repeats after one warm-up.
--precision decodes in another precision than the adapter was trained in (default: the same): in bf16
on the H200 batching alone changed ~10% of answers, so identity is best judged in fp32.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from harness.results import load_record
from harness.run.adapter import find_adapter, read_adapter
from harness.run.evaluate import adapter_merged, eval_batch_size, first_line, generate_answers, merges_adapter
from harness.runtime import resolve_runtime
from harness.tasks.encoding import end_of_turn, render_prompt
from harness.tasks.sql.resolve import resolve_test_rows
from harness.tasks.sql.scoring import exact_match

WAYS = ("peer", "harness", "unmerged", "merged", "one-at-a-time", "generate", "shrinking")
PEER_BATCH = 64


@torch.no_grad()
def peer_answers(model: Any, tokenizer: Any, prompts: Sequence[str], max_new_tokens: int) -> list[str]:
    """The peer script's evaluate(), line for line but for the scoring."""
    model.eval()
    device = next(model.parameters()).device
    tokenizer.padding_side = "left"
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    out = [""] * len(prompts)
    for k in range(0, len(order), PEER_BATCH):
        idx = order[k : k + PEER_BATCH]
        enc = tokenizer(
            [prompts[i] for i in idx], return_tensors="pt", padding=True, add_special_tokens=False
        ).to(device)
        g = model.generate(
            **enc, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id
        )
        for j, i in enumerate(idx):
            out[i] = first_line(tokenizer.decode(g[j, enc.input_ids.shape[1] :], skip_special_tokens=True))
    return out


def timed(fn: Callable[[], list[str]], repeats: int, device: str) -> tuple[list[str], list[float]]:
    times, answers = [], []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        answers = fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - started)
    return answers, times


def identical(a: Sequence[str], b: Sequence[str]) -> float:
    n = min(len(a), len(b))
    return 100.0 * sum(x == y for x, y in zip(a[:n], b[:n], strict=True)) / n if n else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("record", type=Path)
    parser.add_argument("--ways", default=",".join(WAYS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, help="only the first N test questions")
    parser.add_argument("--one-at-a-time-limit", type=int, help="one-at-a-time on the first N questions only")
    parser.add_argument("--device", default="auto")
    parser.add_argument(
        "--precision", choices=("fp32", "bf16", "fp16"), help="decode in this precision (default: the run's)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures and answers here")
    parser.add_argument(
        "--interleave", action="store_true", help="the ways in turn, one repeat each per round"
    )
    args = parser.parse_args(argv)
    ways = [w for w in args.ways.split(",") if w]
    if unknown := set(ways) - set(WAYS):
        parser.error(f"--ways: unknown {sorted(unknown)}; choose from {', '.join(WAYS)}")

    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    record = load_record(args.record)
    source = read_adapter(find_adapter(args.record))
    test = resolve_test_rows(record.setup, record.data.split_hash if record.data else None)
    if test is None:
        print(
            f"{args.record}: its test rows are not at hand; set LORABENCH_DATA to a local copy of the data",
            file=sys.stderr,
        )
        return 2
    test = test[: args.limit] if args.limit else test
    runtime = resolve_runtime(args.device, args.precision or source.base_precision)
    tokenizer = AutoTokenizer.from_pretrained(source.base_model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    base = AutoModelForCausalLM.from_pretrained(source.base_model, dtype=runtime.dtype).to(runtime.device)
    model = PeftModel.from_pretrained(base, str(source.adapter_dir))
    prompts = [render_prompt(tokenizer, ex) for ex in test]
    setup = source.setup
    eot = end_of_turn(tokenizer)
    batch = eval_batch_size(setup.eval.batch_size, runtime.device)
    merge = merges_adapter(setup, runtime)

    def ours(
        batch_size: int, merged: bool, subset: Sequence[str], shrink: bool | None = None
    ) -> Callable[[], list[str]]:
        def run() -> list[str]:
            with adapter_merged(model, merged):
                return generate_answers(model, tokenizer, subset, batch_size=batch_size,
                                        max_new_tokens=setup.eval.max_new_tokens, end_of_turn=eot, shrink=shrink)  # fmt: skip

        return run

    one_n = min(args.one_at_a_time_limit or len(prompts), len(prompts))
    plans: dict[str, tuple[Callable[[], list[str]], int]] = {
        "peer": (lambda: peer_answers(model, tokenizer, prompts, setup.eval.max_new_tokens), args.repeats),
        "harness": (ours(batch, merge, prompts), args.repeats),
        "unmerged": (ours(batch, False, prompts), args.repeats),
        "merged": (ours(batch, True, prompts), args.repeats),
        "one-at-a-time": (ours(1, False, prompts[:one_n]), 1),
        "generate": (ours(batch, merge, prompts, shrink=False), args.repeats),
        "shrinking": (ours(batch, merge, prompts, shrink=True), args.repeats),
    }
    # Warm-up (kernels, allocator), not timed.
    ours(8, False, prompts[:8])()
    results: dict[str, dict[str, Any]] = {}
    runs: dict[str, tuple[list[str], list[float]]] = {}
    if args.interleave:
        for _ in range(args.repeats):
            for way in ways:
                answers, times = timed(plans[way][0], 1, runtime.device)
                runs[way] = (answers, runs.get(way, ([], []))[1] + times)
    for way in ways:
        fn, repeats = plans[way]
        answers, times = runs[way] if args.interleave else timed(fn, repeats, runtime.device)
        em = (
            100.0
            * sum(exact_match(a, ex.answer) for a, ex in zip(answers, test, strict=False))
            / len(answers)
        )
        results[way] = {"answers": answers, "times_s": [round(t, 2) for t in times],
                        "median_s": round(statistics.median(times), 2), "n": len(answers), "exact_match": round(em, 1)}  # fmt: skip
        print(
            f"# {way}: {results[way]['median_s']} s for {len(answers)} questions (runs {results[way]['times_s']})",
            flush=True,
        )

    gpu = torch.cuda.get_device_name(0) if runtime.device == "cuda" else "CPU"
    print(f"\n{args.record} — {len(prompts)} questions, {runtime.device} ({gpu}), {runtime.precision}, "
          f"harness batch {batch}, merged {merge}, torch threads {torch.get_num_threads()}")  # fmt: skip
    print(
        f"{'way':<14} {'n':>4} {'median s':>9} {'s/question':>10} {'vs peer':>8} {'EM %':>6} {'= peer %':>9} {'= 1-at-a-time %':>16}"
    )
    for way, r in results.items():
        per_q = r["median_s"] / r["n"]
        speed = ""
        if "peer" in results and way != "peer":
            speed = f"{(results['peer']['median_s'] / results['peer']['n']) / per_q:.2f}×"
        same_peer = f"{identical(r['answers'], results['peer']['answers']):.1f}" if "peer" in results else "–"
        same_one = (
            f"{identical(r['answers'], results['one-at-a-time']['answers']):.1f}"
            if "one-at-a-time" in results
            else "–"
        )
        print(
            f"{way:<14} {r['n']:>4} {r['median_s']:>9.2f} {per_q:>10.4f} {speed:>8} {r['exact_match']:>6.1f} {same_peer:>9} {same_one:>16}"
        )
    if args.json:
        args.json.write_text(json.dumps({"record": str(args.record), "device": runtime.device, "gpu": gpu,
                                         "precision": runtime.precision, "batch": batch, "merged": merge,
                                         "results": results}, indent=1), encoding="utf-8")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
