"""Where Exp A's eval decode spends its time on a GPU, and what a decode step replayed from a CUDA graph would
buy (issue 40: the eval is 3.7 s of a warm seed's 29.8 s alone and 4.4 s of each seed's span in the suite).

SmolLM2-135M's shape with random weights, in fp32 (what the eval decodes in on a GPU), 300 left-padded prompts
of 120-220 random tokens, NEW tokens forced for every row (random weights never stop), one batch, as
harness.run.evaluate decodes the test questions on a GPU. Variants, each timed after one untimed pass:

  generate   model.generate(do_sample=False), a DynamicCache (the eval's path on a GPU)
  loop       the same greedy steps in a plain loop over a DynamicCache (generate's own overhead apart)
  graph      a static cache, the prefill eager, then one decode step (forward, argmax, the next step's
             inputs written on the device) captured as a CUDA graph and replayed NEW - 1 times, no host read
             until the end

Prints the prefill and per-step milliseconds, the whole decode, and how many rows' tokens equal generate's
(fp32 on another kernel path: last-bit differences can flip a greedy choice).

Usage (on the GPU machine; needs torch and transformers only): python3 dev/gpu/profile_decode.py [--new 64]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

SMOLLM2_SHAPE = {
    "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
    "num_key_value_heads": 3, "max_position_embeddings": 8192, "rope_theta": 100000.0, "rms_norm_eps": 1e-5,
    "head_dim": 64, "vocab_size": 49152, "tie_word_embeddings": True,
}  # fmt: skip


def model_and_prompts(rows: int, device: str) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    from transformers import AutoModelForCausalLM, LlamaConfig

    torch.manual_seed(0)
    config = LlamaConfig(**SMOLLM2_SHAPE)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32, attn_implementation="sdpa")
    model.eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    lengths = torch.randint(120, 221, (rows,))
    width = int(lengths.max())
    ids = torch.zeros(rows, width, dtype=torch.long)
    mask = torch.zeros(rows, width, dtype=torch.long)
    for row, length in enumerate(lengths.tolist()):
        ids[row, width - length :] = torch.randint(1, SMOLLM2_SHAPE["vocab_size"], (length,))
        mask[row, width - length :] = 1
    return model, ids.to(device), mask.to(device)


def sync() -> None:
    torch.cuda.synchronize()


@torch.no_grad()
def by_generate(model, ids, mask, new: int) -> tuple[torch.Tensor, dict]:
    sync()
    started = time.perf_counter()
    out = model.generate(
        input_ids=ids, attention_mask=mask, max_new_tokens=new, min_new_tokens=new, do_sample=False
    )
    sync()
    return out[:, ids.shape[1] :], {"whole_s": time.perf_counter() - started}


@torch.no_grad()
def by_loop(model, ids, mask, new: int) -> tuple[torch.Tensor, dict]:
    from transformers import DynamicCache

    sync()
    started = time.perf_counter()
    cache = DynamicCache()
    positions = (mask.cumsum(-1) - 1).clamp_min(0)
    logits = model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                   use_cache=True, logits_to_keep=1).logits[:, -1]  # fmt: skip
    sync()
    prefilled = time.perf_counter()
    last = positions[:, -1:]
    tokens = []
    for _ in range(new):
        chosen = logits.argmax(-1)
        tokens.append(chosen)
        mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=1)
        last = last + 1
        logits = model(input_ids=chosen[:, None], attention_mask=mask, position_ids=last, past_key_values=cache,
                       use_cache=True).logits[:, -1]  # fmt: skip
    sync()
    ended = time.perf_counter()
    return torch.stack(tokens, 1), {"prefill_s": prefilled - started, "step_ms": (ended - prefilled) / new * 1e3,
                                    "whole_s": ended - started}  # fmt: skip


@torch.no_grad()
def by_graph(model, ids, mask, new: int) -> tuple[torch.Tensor, dict]:
    from transformers import StaticCache

    rows, width = ids.shape
    length = width + new
    device = ids.device
    sync()
    started = time.perf_counter()
    cache = StaticCache(config=model.config, max_cache_len=length)
    allowed = torch.zeros(rows, length, dtype=torch.bool, device=device)
    allowed[:, :width] = mask.bool()
    causal = torch.ones(width, length, dtype=torch.bool, device=device).tril()
    # An additive mask: a row of padding attends to nothing, and finfo.min (not -inf) keeps its softmax finite.
    low = torch.finfo(torch.float32).min
    prefill_mask = torch.zeros(rows, 1, width, length, device=device).masked_fill(
        ~(causal[None, None] & allowed[:, None, None, :]), low
    )
    positions = (mask.cumsum(-1) - 1).clamp_min(0)
    logits = model(input_ids=ids, attention_mask=prefill_mask, position_ids=positions, past_key_values=cache,
                   cache_position=torch.arange(width, device=device), use_cache=True, logits_to_keep=1).logits[:, -1]  # fmt: skip
    sync()
    prefilled = time.perf_counter()
    # The step's inputs, at fixed addresses; the step writes the next step's itself.
    token = logits.argmax(-1)[:, None].clone()
    position = positions[:, -1:] + 1
    where = torch.tensor([width], device=device)
    step_index = torch.zeros(1, dtype=torch.long, device=device)
    out = torch.zeros(rows, new, dtype=torch.long, device=device)
    out[:, 0] = token[:, 0]
    step_index += 1
    decode_mask = torch.zeros(rows, 1, 1, length, device=device).masked_fill(~allowed[:, None, None, :], low)

    def step() -> None:
        decode_mask.index_fill_(3, where, 0.0)  # this step's own position is attended from now on
        logits = model(input_ids=token, attention_mask=decode_mask, position_ids=position, past_key_values=cache,
                       cache_position=where, use_cache=True).logits[:, -1]  # fmt: skip
        chosen = logits.argmax(-1)
        out.index_copy_(1, step_index, chosen[:, None])
        token.copy_(chosen[:, None])
        position.add_(1)
        where.add_(1)
        step_index.add_(1)

    warm = 2
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(warm):  # real steps: kernels chosen and loaded before the capture
            step()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    captured = time.perf_counter()
    with torch.cuda.graph(graph):
        step()
    capture_s = time.perf_counter() - captured
    for _ in range(new - 1 - warm):
        graph.replay()
    sync()
    ended = time.perf_counter()
    return out, {"prefill_s": prefilled - started, "capture_s": capture_s,
                 "step_ms": (ended - prefilled - capture_s) / (new - 1) * 1e3, "whole_s": ended - started}  # fmt: skip


def kernels(model, ids, mask, new: int) -> None:
    """torch.profiler over the plain loop's decode steps: CUDA time a step by kernel, the top 15."""
    from torch.profiler import ProfilerActivity, profile

    by_loop(model, ids, mask, 4)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        by_loop(model, ids, mask, new)
    events = [e for e in prof.key_averages() if e.device_time_total > 0]
    total = sum(e.self_device_time_total for e in events)
    print(f"CUDA time of prefill + {new} steps: {total / 1e3:.1f} ms")
    for e in sorted(events, key=lambda e: -e.self_device_time_total)[:15]:
        print(f"  {e.self_device_time_total / 1e3:8.1f} ms {e.count:6d} calls  {e.key[:110]}")


def attention_variants(model, ids, mask, new: int, reference: torch.Tensor) -> None:
    """The plain loop under each attention path transformers offers a Llama: ms a step, rows equal."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    for name, implementation, backends in (
        ("sdpa math", "sdpa", [SDPBackend.MATH]),
        ("sdpa efficient", "sdpa", [SDPBackend.EFFICIENT_ATTENTION]),
        ("sdpa cudnn", "sdpa", [SDPBackend.CUDNN_ATTENTION]),
        ("eager", "eager", None),
        ("grouped eager", "eager", "grouped"),
        ("graph, grouped", "eager", "grouped graph"),
    ):
        from harness.backends.grouped_attention import grouped_eager

        model.set_attn_implementation(implementation)
        decode = by_graph if backends == "grouped graph" else by_loop
        context = sdpa_kernel(backends) if isinstance(backends, list) else grouped_eager(backends is not None)
        try:
            with context:
                decode(model, ids, mask, 4)
                runs = [decode(model, ids, mask, new) for _ in range(2)]
        except RuntimeError as exc:
            print(f"{name:15s} failed: {str(exc)[:120]}", flush=True)
            continue
        same = int((runs[0][0] == reference).all(1).sum())
        steps = " / ".join(f"{r[1]['step_ms']:.2f}" for r in runs)
        print(f"{name:15s} step {steps} ms, prefill {runs[0][1]['prefill_s']:.3f} s, rows equal to "
              f"generate's {same}/{len(reference)}", flush=True)  # fmt: skip
    model.set_attn_implementation("sdpa")


def harness_against_generate(model, ids, mask, new: int) -> None:
    """harness.run.graphed_decode.greedy_graphed, captured, as a run's eval calls it (eager_attention around
    it), against generate's tokens cut after the first stop: the base model, then PEFT's with an adapter that
    moves the answers, unmerged and merged. Stops: tokens generate chose first at varied steps of some rows,
    so rows stop at different steps and the cut is exercised."""
    from peft import LoraConfig, get_peft_model

    from harness.run import graphed_decode

    def cut(tokens: list[list[int]], stops: set[int]) -> list[list[int]]:
        return [graphed_decode._through_first_stop(row, sorted(stops)) for row in tokens]

    def compare(name: str, decoding) -> None:
        reference = by_generate(decoding, ids, mask, new)[0]
        rows = reference.tolist()
        # A token first met at step 5 + r % 40 of row r: rows stop at different steps where tokens vary.
        # Random weights mostly repeat one token a row, so every third row's first token stops it too.
        stops = {
            row[5 + r % 40] for r, row in enumerate(rows[:60]) if row[5 + r % 40] not in row[: 5 + r % 40]
        } | {row[0] for row in rows[::3]}
        expected = cut(reference.tolist(), stops)
        for _ in range(3):
            sync()
            started = time.perf_counter()
            with graphed_decode.eager_attention(decoding):
                answers = graphed_decode.greedy_graphed(decoding, ids, mask, new, stops)
            sync()
            seconds = time.perf_counter() - started
        same = sum(a == e for a, e in zip(answers, expected, strict=True))
        lengths = sorted(len(a) for a in answers)
        print(f"harness {name:16s} {seconds:.3f} s (third of 3), rows equal to generate's {same}/{len(answers)}, "
              f"answer lengths {lengths[0]}-{lengths[-1]}, {len(stops)} stop tokens", flush=True)  # fmt: skip

    compare("base", model)
    torch.manual_seed(0)
    peft = get_peft_model(model, LoraConfig(r=16, target_modules="all-linear", init_lora_weights=False))
    peft.eval()
    compare("peft unmerged", peft)
    peft.merge_adapter()
    compare("peft merged", peft)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mode", choices=("variants", "attention", "harness"), default="variants")
    args = parser.parse_args()
    model, ids, mask = model_and_prompts(args.rows, "cuda")
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; {args.rows} rows, prompt width "
          f"{ids.shape[1]}, {args.new} new tokens, fp32, random weights", flush=True)  # fmt: skip
    if args.mode == "harness":
        harness_against_generate(model, ids, mask, args.new)
        return
    if args.mode == "attention":
        reference = by_generate(model, ids, mask, args.new)[0]
        kernels(model, ids, mask, 16)
        attention_variants(model, ids, mask, args.new, reference)
        return
    reference = None
    for name, decode in (("generate", by_generate), ("loop", by_loop), ("graph", by_graph)):
        decode(model, ids, mask, args.new)  # untimed: kernels loaded, autotuned
        runs = [decode(model, ids, mask, args.new) for _ in range(args.repeats)]
        tokens = runs[0][0]
        if reference is None:
            reference = tokens
        same = int((tokens == reference).all(1).sum())
        wholes = [r[1]["whole_s"] for r in runs]
        rest = {k: round(statistics.median(r[1][k] for r in runs), 4) for k in runs[0][1] if k != "whole_s"}
        print(f"{name:9s} whole {' / '.join(f'{w:.3f}' for w in wholes)} s  {rest}  rows equal to generate's "
              f"{same}/{args.rows}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
