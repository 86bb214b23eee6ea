"""Evaluation (design step 9): the model's answers to the test questions, the untrained baseline, and
how they are decoded.

Batched greedy decoding: prompts sorted by length so each batch pads little, left-padded; a sequence
stops at its first newline or end-of-turn token, and a batch ends when all its sequences have stopped.
Greedy decoding is deterministic, so the answers match one-question-at-a-time decoding except where
padding changes floating-point sums (measured, not assumed: see tests and benchmarks). The eval policy
(batch size, merging the adapter, decoding precision) is resolved here from the setup's `eval` table.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
import time
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import StoppingCriteria, StoppingCriteriaList

from harness import atomic
from harness.backends.grouped_attention import grouped_eager
from harness.backends.lean_lora import lean_lora_forward
from harness.config import SetupConfig
from harness.locks import exclusive_lock
from harness.models import cache_dir
from harness.run import graphed_decode
from harness.run.progress import Progress
from harness.runtime import Runtime, runtime_of
from harness.tasks.encoding import end_of_turn, render_prompt
from harness.tasks.registry import Example, Split

# Every test question decoded in one batch on a GPU, up to this many (SmolLM2's KV cache for 300
# questions of ~170 tokens: about 1 GB in bf16, by arithmetic, not measured).
GPU_EVAL_BATCH = 512
CPU_EVAL_BATCH = 64


def eval_batch_size(configured: int | str, device: str) -> int:
    """`eval.batch_size`, with auto resolved for the device (see EvalConfig)."""
    if configured != "auto":
        return int(configured)
    return GPU_EVAL_BATCH if device == "cuda" else CPU_EVAL_BATCH


def plain_base(setup: SetupConfig) -> bool:
    """Backend hf over a base that is not 4-bit: one eval may lift to fp32, fold an adapter into, and decode
    from a CUDA graph. A 4-bit base's weights are packed (a merge would re-quantize them; its kernels were
    never graphed); Unsloth decodes through its own patched model. The setup says it, not the loaded model:
    its first parameter reads bf16 over a 4-bit base."""
    return setup.backend == "hf" and setup.precision != "4bit"


def decoded_in(setup: SetupConfig, runtime: Runtime) -> str:
    """The precision eval decodes in: `eval.precision`, auto resolved (see EvalConfig)."""
    if setup.eval.precision == "fp32":
        return "fp32"
    liftable = plain_base(setup) and runtime.precision in ("bf16", "fp16")
    if setup.eval.precision == "auto" and runtime.device == "cuda" and liftable:
        return "fp32"
    return runtime.precision


def carries_adapter(model: Any) -> bool:
    """A PEFT model (a LoRA adapter on its base), as opposed to a bare base model."""
    return hasattr(model, "merge_adapter")


def adapter_autocast(model: Any, device_type: str, precision: str) -> contextlib.AbstractContextManager:
    """Decoding in half precision with an adapter on: its fp32 LoRA weights multiply in that precision, under
    autocast, as they did in training (the Trainer's own autocast is taken off the model when training ends,
    harness.backends.hf.train), so a run's answers are its adapter's scored later (eval.adapter). Not for the
    baseline (no adapter), nor in fp32."""
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    if dtype is None or not carries_adapter(model):
        return contextlib.nullcontext()
    return torch.autocast(device_type, dtype=dtype)


def merges_adapter(setup: SetupConfig, runtime: Runtime) -> bool:
    """Whether eval decodes with the LoRA weights folded in: `eval.merge_adapter`, auto resolved (see
    EvalConfig); only over a plain base (`plain_base`)."""
    configured = setup.eval.merge_adapter
    if configured == "auto":
        wanted = runtime.device == "cuda" and decoded_in(setup, runtime) == "fp32"
    else:
        wanted = bool(configured)
    return wanted and plain_base(setup)


class StopAtTokens(StoppingCriteria):
    """Per-sequence stop: a generated token is in `stop_ids` (any token whose text holds a newline, EOS…)."""

    def __init__(self, stop_ids: set[int], prompt_length: int) -> None:
        self.stop_ids = torch.tensor(sorted(stop_ids))
        self.prompt_length = prompt_length

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        # The newest token only: generate keeps a stopped sequence stopped (it ANDs these flags into its
        # own). The ids move to the device once, not by a host-to-device copy every token.
        if self.stop_ids.device != input_ids.device:
            self.stop_ids = self.stop_ids.to(input_ids.device)
        if input_ids.shape[1] <= self.prompt_length:
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        return torch.isin(input_ids[:, -1], self.stop_ids)


def stop_token_ids(tokenizer: Any, end_of_turn: str | None) -> set[int]:
    ids: set[int] = set()
    for token, index in tokenizer.get_vocab().items():
        if "\n" in tokenizer.convert_tokens_to_string([token]):
            ids.add(index)
    for special in (tokenizer.eos_token, end_of_turn):
        if special:
            ids.update(tokenizer.convert_tokens_to_ids([special]) if special in tokenizer.get_vocab() else [])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return ids


@contextlib.contextmanager
def adapter_merged(model: Any, enabled: bool) -> Generator[None]:
    """The LoRA weights folded into the base weights for the block, unfolded after.

    Unmerged, every adapted projection costs three extra small kernels per token; on a GPU, where a
    decode step of a 135M model is bound by kernel launches, folding them in is faster (H200, 300
    questions: 3.5 s against 4.5 s, medians of two).
    The sums differ in rounding only; how often that changes an answer is measured, not assumed
    (dev/bench_eval.py). Unfolding leaves the base weights equal up to rounding only, so a run
    merges after it has saved the adapter and uses the model no further. Never for a quantized base:
    merging would re-quantize its weights."""
    if not enabled or not carries_adapter(model):
        yield
        return
    model.merge_adapter()
    try:
        yield
    finally:
        model.unmerge_adapter()


@contextlib.contextmanager
def decoding_precision(model: Any, precision: str) -> Generator[None]:
    """`eval.precision = "fp32"`: every parameter and buffer lifted to fp32 for the block, each put back
    in its own dtype after (bf16 → fp32 → bf16 is exact; LoRA weights kept in fp32 stay fp32)."""
    if precision != "fp32":
        yield
        return
    tensors = [*model.parameters(), *model.buffers()]
    dtypes = [t.dtype for t in tensors]
    for tensor in tensors:
        if tensor.is_floating_point():
            tensor.data = tensor.data.float()
    try:
        yield
    finally:
        for tensor, dtype in zip(tensors, dtypes, strict=True):
            tensor.data = tensor.data.to(dtype)


def first_line(text: str) -> str:
    return text.strip().split("\n")[0].strip()


@torch.no_grad()
def generate_answers(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    *,
    batch_size: int,
    max_new_tokens: int,
    end_of_turn: str | None = None,
    on_batch: Callable[[int], None] | None = None,
    shrink: bool | None = None,
    graphed: bool = True,
    ways: set[str] | None = None,
) -> list[str]:
    """Greedy answers (first line, stripped) in the order of `prompts`. `shrink`: decode with
    greedy_shrinking (default: where shrinks_batch says), else on a GPU with the step replayed from a
    CUDA graph where harness.run.graphed_decode applies (and `graphed`), else with generate. `ways` gets
    the name of each way a batch was decoded ("shrinking", "graphed", "generate"), for the record."""
    model.eval()
    device = next(model.parameters()).device
    tokenizer.padding_side = "left"
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    stops = stop_token_ids(tokenizer, end_of_turn)
    encoded = [tokenizer(p, add_special_tokens=False).input_ids for p in prompts]
    cleanup = spaces_cleanup(tokenizer)
    order = sorted(range(len(prompts)), key=lambda i: len(encoded[i]))
    answers: list[str] = [""] * len(prompts)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        input_ids, attention = _left_padded([encoded[i] for i in idx], pad_id)
        way = decoding_way(model, shrink, graphed, input_ids.shape, max_new_tokens)
        generated, way = _decoded(
            way, model, input_ids.to(device), attention.to(device), max_new_tokens, stops, pad_id
        )
        if ways is not None:
            ways.add(way)
        for row, i in enumerate(idx):
            text = tokenizer.decode(
                generated[row], skip_special_tokens=True, clean_up_tokenization_spaces=cleanup
            )
            answers[i] = first_line(text)
        if on_batch:
            on_batch(len(idx))
    return answers


def _left_padded(encoded: Sequence[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch's token ids left-padded to its longest, and its attention mask."""
    width = max(len(ids) for ids in encoded)
    input_ids = torch.full((len(encoded), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(encoded), width), dtype=torch.long)
    for row, ids in enumerate(encoded):
        input_ids[row, width - len(ids) :] = torch.tensor(ids)
        attention[row, width - len(ids) :] = 1
    return input_ids, attention


def decoding_way(
    model: Any, shrink: bool | None, graphed: bool, shape: tuple[int, ...], max_new_tokens: int
) -> str:
    """How a batch of `shape` (rows, width) is decoded: "shrinking", "graphed" or "generate"."""
    parameter = next(model.parameters())
    device = parameter.device.type
    if shrinks_batch(device) if shrink is None else shrink:
        return "shrinking"
    rows, width = shape
    if (
        graphed
        and not torch.is_autocast_enabled(device)  # its static cache takes one dtype for keys and values
        and graphed_decode.applies(model, device)
        and graphed_decode.cache_fits(model, rows, width + max_new_tokens, parameter.dtype)
    ):
        return "graphed"
    return "generate"


def _decoded(
    way: str,
    model: Any,
    input_ids: torch.Tensor,
    attention: torch.Tensor,
    max_new_tokens: int,
    stops: set[int],
    pad_id: int,
) -> tuple[list[list[int]], str]:
    """Each row's new tokens, decoded the `way` given (decoding_way's), and the way they were decoded: a
    graphed decode this model's forward refuses to capture (it reads a device value back, say) is said on
    stderr and decoded with generate instead, so the eval ends and its record says how it decoded."""
    if way == "shrinking":
        return greedy_shrinking(model, input_ids, attention, max_new_tokens, stops), way
    if way == "graphed":
        try:
            with graphed_decode.eager_attention(model):
                return graphed_decode.greedy_graphed(model, input_ids, attention, max_new_tokens, stops), way
        except RuntimeError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            print(
                f"lorabench: eval: the CUDA-graph decode failed ({first}); decoding with generate",
                file=sys.stderr,
            )
    width = input_ids.shape[1]
    output = model.generate(
        input_ids=input_ids,
        attention_mask=attention,
        max_new_tokens=max_new_tokens,
        do_sample=False,
        pad_token_id=pad_id,
        stopping_criteria=StoppingCriteriaList([StopAtTokens(stops, width)]),
    )
    return [output[row, width:].tolist() for row in range(input_ids.shape[0])], "generate"


def spaces_cleanup(tokenizer: Any) -> bool:
    """Whether decoding applies the tokenizer's spaces cleanup: as its setting says, except for a BPE
    tokenizer, where transformers ignores the setting anyway and warned so on every run (SmolLM2's says True).
    Said False there: the same answers, no warning."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and type(backend.model).__name__ == "BPE":
        return False
    return bool(getattr(tokenizer, "clean_up_tokenization_spaces", False))


def shrinks_batch(device_type: str) -> bool:
    """Where decoding drops a row from the batch once it has stopped (greedy_shrinking): on a CPU, whose
    decode step costs what its rows cost. A GPU's step is bound by launches, not rows: generate there."""
    return device_type == "cpu"


@torch.no_grad()
def greedy_shrinking(
    model: Any, input_ids: torch.Tensor, attention: torch.Tensor, max_new_tokens: int, stops: set[int]
) -> list[list[int]]:
    """Greedy decoding with a KV cache, as `generate(do_sample=False)` does it, except that a row stops
    costing anything once it has produced a stop token: its cache rows and its place in the batch go.
    `generate` keeps every row to the batch's longest answer. Returns each row's new tokens, the stop
    token included (as generate's output holds it before its padding). Left-padded input, as here."""
    from transformers import DynamicCache

    stop_ids = graphed_decode.stop_id_tensor(model, stops, input_ids.device)
    rows = input_ids.shape[0]
    generated: list[list[int]] = [[] for _ in range(rows)]
    alive = list(range(rows))
    cache = DynamicCache()
    positions = graphed_decode.left_padded_positions(attention)
    with contiguous_head_input(model):
        logits = model(
            input_ids=input_ids,
            attention_mask=attention,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        ).logits[:, -1, :]
    last = positions[:, -1]
    for step in range(max_new_tokens):
        chosen = logits.argmax(-1)
        for row, token in zip(alive, chosen.tolist(), strict=True):
            generated[row].append(token)
        done = torch.isin(chosen, stop_ids)
        if step == max_new_tokens - 1 or bool(done.all()):
            break
        if bool(done.any()):
            keep = (~done).nonzero().squeeze(1)
            cache.batch_select_indices(keep)
            alive = [alive[i] for i in keep.tolist()]
            chosen, attention, last = chosen[keep], attention[keep], last[keep]
        attention = torch.cat([attention, attention.new_ones(attention.shape[0], 1)], dim=1)
        last = last + 1
        logits = model(
            input_ids=chosen[:, None],
            attention_mask=attention,
            position_ids=last[:, None],
            past_key_values=cache,
            use_cache=True,
        ).logits[:, -1, :]
    return generated


@contextlib.contextmanager
def contiguous_head_input(model: Any) -> Generator[None]:
    """For the span: the output head (lm_head) gets its input contiguous where its weights are half precision.

    `logits_to_keep=1` hands the head each row's last position as a strided view (batch, 1, width). With a
    trained adapter on (PEFT's model, as a run's eval decodes) PyTorch's CPU matmul (2.13) then did not fold
    the batch into one product: it multiplied row by row against the head's weights expanded to every row,
    copying them first (64 rows × 576 × 49,152 in bf16: 3.6 GB, 9.7 s of a 22 s prefill under the
    profiler); a plain tensor sliced the same way does the same (3.56 s against 16 ms contiguous, bit for bit
    the same logits). The base model's head (the baseline's decode) got the same strided view and was folded
    into one product: why the two differ is not known. Contiguous, every case is one product: 64 questions
    with Exp A's trained adapter decoded 1.351× faster, the same answers
    (reports/benchmarks/cpu/bench_eval_contiguous_head.txt), and a whole seed's eval took 109.8 s against
    140.9 s with identical predictions (reports/benchmarks/cpu/seed-2026-12-02-epyc-bf16-autocast/). In fp32 the two products
    differ in the last bits, so an fp32 head is left as it was. On an H200 the strided input costs ~8 ms and
    no copy (reports/benchmarks/h200/2026-12-02-head-input.txt); this runs in the CPU's decode only."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is None or getattr(head, "weight", None) is None or head.weight.dtype == torch.float32:
        yield
        return
    hook = head.register_forward_pre_hook(lambda module, args: (args[0].contiguous(), *args[1:]))
    try:
        yield
    finally:
        hook.remove()


def answer_questions(
    model: Any,
    tokenizer: Any,
    examples: Sequence[Example],
    setup: SetupConfig,
    *,
    merge: bool | None = None,
    on_batch: Callable[[int], None] | None = None,
    ways: set[str] | None = None,
) -> list[str]:
    """The model's greedy answers to any task's examples, decoded as the setup's eval says. `merge`
    overrides `eval.merge_adapter` (an export compares unmerged with merged answers); `ways`: see
    generate_answers."""
    runtime = runtime_of(model)
    prompts = [render_prompt(tokenizer, ex) for ex in examples]
    merged = merges_adapter(setup, runtime) if merge is None else merge
    # Lifted first, merged after: the LoRA sums are folded in fp32 too. Unmerged (a CPU's eval), the lean
    # LoRA forward: the same bits, without the multiplication by a scaling of 1.0 (64 questions on the
    # EPYC: 1.070×, answers identical); PEFT's own forward for a merged adapter and for Unsloth.
    lean = lean_lora_forward(model, setup.backend == "hf")
    # Eager attention on a CPU without copying the KV cache's heads for every new token (64 questions on the
    # EPYC: 1.05–1.08×, answers identical; harness/backends/grouped_attention.py).
    grouped = grouped_eager(runtime.device == "cpu" and runtime.attention == "eager")
    precision = decoded_in(setup, runtime)
    autocast = adapter_autocast(model, runtime.device, precision)
    with decoding_precision(model, precision), adapter_merged(model, merged), lean, grouped, autocast:
        return generate_answers(
            model,
            tokenizer,
            prompts,
            batch_size=eval_batch_size(setup.eval.batch_size, runtime.device),
            max_new_tokens=setup.eval.max_new_tokens,
            end_of_turn=end_of_turn(tokenizer),
            on_batch=on_batch,
            graphed=plain_base(setup),
            ways=ways,
        )


def timed_answers(
    model: Any,
    tokenizer: Any,
    test: Sequence[Example],
    setup: SetupConfig,
    progress: Progress,
    phase: str,
    ways: set[str] | None = None,
) -> tuple[list[str], float]:
    """`answer_questions` as a run's phase: progress shown, wall time returned; `ways`: see generate_answers."""
    progress.phase(phase, total=len(test))
    started = time.perf_counter()
    answers = answer_questions(
        model, tokenizer, test, setup, on_batch=lambda n: progress.advance(n), ways=ways
    )
    return answers, round(time.perf_counter() - started, 2)


def baseline_key(setup: SetupConfig, runtime: Runtime, model_path: Path, split_hash: str, n_test: int) -> str:
    """The baseline cache's key: what the untrained answers depend on, resolved (never "auto"): the
    weights, the decoding precision and attention, the questions, and the batch (in half precision,
    which questions share a batch moves some answers). Not the seed or the recipe: every seed of a
    setup shares one baseline."""
    model_fields = {**setup.model.model_dump(mode="json"), "attention": runtime.attention}
    payload = json.dumps(
        [
            str(model_path),
            model_fields,
            decoded_in(setup, runtime),
            split_hash,
            n_test,
            setup.eval.max_new_tokens,
            eval_batch_size(setup.eval.batch_size, runtime.device),
            # Answers decoded by greedy_shrinking (CPU) are keyed apart from generate's, and a GPU's since
            # its decode step may replay from a CUDA graph (harness/run/graphed_decode.py).
            *(["shrinking"] if shrinks_batch(runtime.device) else []),
            *(["graphed"] if runtime.device == "cuda" else []),
        ],
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def baseline_answers(
    setup: SetupConfig,
    runtime: Runtime,
    model_path: Path,
    split: Split,
    test: Sequence[Example],
    model: Any,
    tokenizer: Any,
    progress: Progress,
) -> tuple[list[str], float, bool]:
    """The untrained model's answers, the seconds they took when decoded, and whether they came from the
    cache. Cached per model + split + decoding precision + eval settings: the answers, not their scores
    (scoring is cheap and may improve between runs)."""
    key = baseline_key(setup, runtime, model_path, split.hash, len(test))
    path = cache_dir() / "baseline" / f"{key}.json"
    # Runs started together (seeds on one GPU, suite workers) wait for the first one's answers instead
    # of decoding the same questions side by side.
    with exclusive_lock(path.with_suffix(".lock"), what="baseline cache lock"):
        if path.is_file():
            cached = json.loads(path.read_text(encoding="utf-8"))
            return cached["answers"], cached["eval_s"], True
        answers, seconds = timed_answers(model, tokenizer, test, setup, progress, "baseline eval")
        atomic.write_json(path, {"answers": answers, "eval_s": seconds}, indent=None)
    return answers, seconds, False
