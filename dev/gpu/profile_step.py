"""Where a SmolLM2-135M-shaped LoRA training step spends its time: trainer variants and a plain loop,
ms per step side by side, or a cProfile + torch.profiler look at the harness's own trainer.

Random weights in SmolLM2's shape (30 layers, 576 wide) with any SmolLM2 tokenizer folder: the step's
cost does not depend on the weights, and no model has to be carried. Runs Exp A's setup on the
first GPU (on a CPU-only machine: a 2-layer model, to try the script itself).

Usage: python dev/gpu/profile_step.py TOKENIZER_DIR DATA_FILE [--mode variants|profile|graphs]
--mode graphs: the harness's trainer eager against recipe.compile = "graphs", ABAB, each from the same
seed: ms per step, the captures, and the largest per-step loss difference from the first eager pass.
On the H200 (2026-11-30, reports/benchmarks/h200/step_profile.txt): the harness's trainer 192–413 ms
per step over passes and two machines, a plain loop (model loss, fused AdamW) 174–232 ms, the peer's
loop with gradient checkpointing 417 ms, while the GPU's kernels took ~21 ms per step: the step is
bound by the host.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import itertools
import pstats
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from harness.backends import hf
from harness.backends.common import TrainOutcome
from harness.config import load_setup
from harness.runtime import Runtime
from harness.tasks.sql.data import load_split
from harness.testing import build_tiny_model

SMOLLM2_SHAPE = {
    "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
    "num_key_value_heads": 3, "max_position_embeddings": 8192, "rope_theta": 100000.0, "rms_norm_eps": 1e-5,
    "head_dim": 64,
}  # fmt: skip
TRY_SHAPE = {"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
             "num_key_value_heads": 2, "head_dim": 16}  # fmt: skip
WARM_UP = 5


class Context:
    def __init__(
        self,
        tokenizer_dir: Path,
        data: Path,
        steps: int,
        overrides: tuple[str, ...] = (),
        *,
        steps_on_cpu: int = 8,
    ) -> None:
        gpu = torch.cuda.is_available()
        shape = SMOLLM2_SHAPE if gpu else {**SMOLLM2_SHAPE, **TRY_SHAPE}
        target = Path("/tmp/lorabench-profile-model" + ("" if gpu else "-try"))
        self.model_dir = build_tiny_model(target, tokenizer_dir, **shape)
        self.steps = steps if gpu else steps_on_cpu
        self.setup = load_setup(Path("benchmarks/setups/exp_a.toml"), [
            f"recipe.steps={self.steps}", f"data.source={data}", f"model.source={self.model_dir}", *overrides,
        ])  # fmt: skip
        self.split = load_split(self.setup.data)
        self.runtime = Runtime("cuda", "bf16") if gpu else Runtime("cpu", "fp32")
        self.sync = torch.cuda.synchronize if gpu else (lambda: None)

    def trainer(self, overrides: dict[str, Any] | None = None) -> tuple[Any, Any, TrainOutcome]:
        """The harness's trainer (build_trainer) on a fresh LoRA model; `overrides` replace SFTConfig fields."""
        import trl

        model, tokenizer = hf.load(self.setup, self.model_dir, self.runtime)
        model = hf.wrap_lora(model, self.setup)
        model.config.use_cache = False
        outcome = TrainOutcome(model=model)
        original = trl.SFTConfig
        if overrides:
            trl.SFTConfig = lambda **kw: original(**{**kw, **overrides})
        try:
            trainer = hf.build_trainer(model, tokenizer, self.split.train, self.setup, self.runtime,
                                       [hf._step_callback([], outcome)])  # fmt: skip
        finally:
            trl.SFTConfig = original
        return model, trainer, outcome


def report(name: str, ends: list[float]) -> None:
    durations = [b - a for a, b in itertools.pairwise(ends)][WARM_UP:]
    print(f"{name:44s} median {1000 * statistics.median(durations):7.1f} ms/step", flush=True)


def timed_trainer(ctx: Context, name: str, overrides: dict[str, Any] | None = None) -> None:
    _, trainer, outcome = ctx.trainer(overrides)
    ctx.sync()
    outcome.step_ends.append(time.perf_counter())
    trainer.train()
    report(name, outcome.step_ends)


def plain_loop(ctx: Context, name: str, checkpointing: bool = False) -> None:
    """The peer's loop shape on the trainer's own batches: forward with labels, backward, fused AdamW."""
    model, trainer, _ = ctx.trainer()
    batches = iter(trainer.get_train_dataloader())
    if checkpointing:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    gpu = ctx.runtime.device == "cuda"
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-4, fused=gpu)
    model.train()
    ctx.sync()
    ends = [time.perf_counter()]
    for _ in range(ctx.steps):
        batch = {
            k: v.to(ctx.runtime.device)
            for k, v in next(batches).items()
            if k in ("input_ids", "attention_mask", "labels")
        }
        with torch.autocast(ctx.runtime.device, dtype=torch.bfloat16, enabled=gpu):
            loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        float(loss)  # the peer reads the loss every step too
        ends.append(time.perf_counter())
    report(name, ends)


def profiled_trainer(ctx: Context, graphs: bool = False) -> None:
    """cProfile and torch.profiler over a few steps; `graphs`: as a run trains (graphed layers, lean walks)."""
    from torch.profiler import ProfilerActivity, profile, schedule
    from transformers import TrainerCallback

    from harness.backends.graphed_layers import graphed_layers
    from harness.backends.lean_steps import lean_module_walks

    model, trainer, outcome = ctx.trainer()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if ctx.runtime.device == "cuda" else [])
    wait, warmup = (10, 3) if ctx.steps >= 20 else (2, 1)
    active = max(1, min(5, ctx.steps - wait - warmup - 1))
    prof = profile(
        activities=activities, schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1)
    )

    class Step(TrainerCallback):
        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            prof.step()

    trainer.add_callback(Step())
    python = cProfile.Profile()
    ctx.sync()
    outcome.step_ends.append(time.perf_counter())
    walks = lean_module_walks(model, graphs)
    with prof, walks, graphed_layers(model, graphs, ctx.setup.recipe.batch_size) as stats:
        python.enable()
        trainer.train()
        python.disable()
    report(f"profiled trainer (graphs {graphs}: {stats})", outcome.step_ends)
    text = io.StringIO()
    pstats.Stats(python, stream=text).sort_stats("cumulative").print_stats(40)
    print(text.getvalue())
    averages = prof.key_averages()
    print(averages.table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=60))
    print(averages.table(sort_by="self_device_time_total", row_limit=15, max_name_column_width=60))
    # The host waits: every read of a device value (.item(), nonzero's size) shows up as one of these.
    for event in averages:
        if any(
            word in event.key for word in ("Synchronize", "MemcpyAsync", "nonzero", "item", "_local_scalar")
        ):
            print(f"{event.key:60s} calls {event.count:6d}  cpu total {event.cpu_time_total / 1e3:9.1f} ms")


def graphs_against_eager(tokenizer_dir: Path, data: Path, steps: int) -> None:
    from harness.backends.graphed_layers import graphed_layers

    reference: list[float] = []
    for name in ("eager", "graphs", "eager", "graphs"):
        ctx = Context(
            tokenizer_dir, data, steps, (f"recipe.compile={'graphs' if name == 'graphs' else 'none'}",)
        )
        model, trainer, outcome = ctx.trainer()
        ctx.sync()
        outcome.step_ends.append(time.perf_counter())
        with graphed_layers(model, name == "graphs") as stats:
            trainer.train()
        ctx.sync()
        report(name, outcome.step_ends)
        reference = reference or outcome.losses
        worst = max(abs(a - b) for a, b in zip(reference, outcome.losses, strict=True))
        print(f"    loss first/last {outcome.losses[0]:.4f}/{outcome.losses[-1]:.4f}, largest step difference "
              f"from the first eager pass {worst:.2e}; graphs {stats}", flush=True)  # fmt: skip


def lean_lora_against_peft(tokenizer_dir: Path, data: Path, steps: int) -> None:
    """The step as a run trains it (graphed layers, lean walks) with PEFT's LoRA forward and with the lean
    one (harness/backends/lean_lora.py), ABAB, each from the same seed: ms per step and the largest per-step
    loss difference from the first pass (0 when the two compute the same bits)."""
    from harness.backends.graphed_layers import graphed_layers
    from harness.backends.lean_lora import lean_lora_forward
    from harness.backends.lean_steps import lean_module_walks

    reference: list[float] = []
    for name in ("peft", "lean", "peft", "lean"):
        ctx = Context(tokenizer_dir, data, steps)
        model, trainer, outcome = ctx.trainer()
        ctx.sync()
        outcome.step_ends.append(time.perf_counter())
        graphs = ctx.runtime.device == "cuda"
        with (
            lean_module_walks(model),
            lean_lora_forward(model, name == "lean") as lean,
            graphed_layers(model, graphs, 8),
        ):
            trainer.train()
        ctx.sync()
        report(f"{name} LoRA forward ({lean} layers lean)", outcome.step_ends)
        reference = reference or outcome.losses
        worst = max(abs(a - b) for a, b in zip(reference, outcome.losses, strict=True))
        print(f"    loss first/last {outcome.losses[0]:.4f}/{outcome.losses[-1]:.4f}, largest step difference "
              f"from the first pass {worst:.2e}", flush=True)  # fmt: skip


def whole_step_graph(tokenizer_dir: Path, data: Path, steps: int, *, compiled: bool = False) -> None:
    """The whole training step (forward, loss, backward, clipping, fused AdamW) captured as ONE CUDA graph,
    against the step as a run trains it (graphed decoder layers, lean walks, the Trainer), each from the
    same seed on the same batches: ms per step, and the losses side by side. A measurement of what a
    whole-step graph would buy (issue 40 item 3), not the harness's path: the forward is written out here
    (embedding, rotary, the decoder layers with a precomputed 4-D mask, norm, head, summed cross-entropy
    over answer tokens / their count) so nothing in it reads a device value back; only full batches of
    `batch_size` rows padded to the graphs' multiple (one shape), the epoch's short batch skipped.
    `compiled`: every decoder layer torch.compile'd (fused kernels) inside the one graph."""
    from harness.backends.hf import training_spans

    ctx = Context(tokenizer_dir, data, steps, ("recipe.compile=graphs",))
    model, trainer, outcome = ctx.trainer()
    ctx.sync()
    outcome.step_ends.append(time.perf_counter())
    with training_spans(model, trainer, ctx.setup, "graphs" if ctx.runtime.device == "cuda" else "none"):
        trainer.train()
    ctx.sync()
    report("the run's path (graphed layers, Trainer)", outcome.step_ends)
    reference = outcome.losses

    ctx = Context(tokenizer_dir, data, steps, ("recipe.compile=graphs",))
    model, trainer, _ = ctx.trainer()
    steps = ctx.steps
    device = ctx.runtime.device
    recipe = ctx.setup.recipe
    batches = []
    for batch in itertools.islice(itertools.cycle(trainer.get_train_dataloader()), 4 * steps):
        if batch["input_ids"].shape[0] == recipe.batch_size:
            batches.append({k: batch[k].to(device) for k in ("input_ids", "attention_mask", "labels")})
        if len(batches) == steps:
            break
    shapes = {tuple(b["input_ids"].shape) for b in batches}
    print(f"    batch shapes {sorted(shapes)}", flush=True)
    shape = max(shapes)
    batches = [b for b in batches if tuple(b["input_ids"].shape) == shape]
    inner = model.get_base_model().model
    head = model.get_base_model().lm_head
    if compiled:
        for layer in inner.layers:
            layer.compile(dynamic=False)
    params = [p for p in model.parameters() if p.requires_grad]
    lr = torch.tensor(recipe.lr, device=device)
    gpu = device == "cuda"
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=recipe.weight_decay, fused=gpu, capturable=gpu)
    static = {k: torch.zeros_like(v) for k, v in batches[0].items()}
    rows, length = shape
    causal = torch.ones(length, length, dtype=torch.bool, device=device).tril()
    mask4d = torch.zeros(rows, 1, length, length, dtype=torch.bool, device=device)
    position_ids = torch.arange(length, device=device).unsqueeze(0)
    clip = trainer.args.max_grad_norm

    def forward_loss() -> torch.Tensor:
        with torch.autocast(device, dtype=torch.bfloat16, cache_enabled=False):
            hidden = inner.embed_tokens(static["input_ids"])
            rotary = inner.rotary_emb(hidden, position_ids)
            for layer in inner.layers:
                hidden = layer(
                    hidden, attention_mask=mask4d, position_ids=position_ids, position_embeddings=rotary
                )
            logits = head(inner.norm(hidden)).float()
        labels = static["labels"][:, 1:]
        summed = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, logits.shape[-1]),
            labels.reshape(-1),
            ignore_index=-100,
            reduction="sum",
        )
        return summed / (labels != -100).sum()

    def step() -> torch.Tensor:
        loss = forward_loss()
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(params, clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)
        return loss.detach()

    def scheduled(
        index: int,
    ) -> float:  # transformers' linear schedule with warm-up, at optimizer step `index`
        if index < recipe.warmup_steps:
            return recipe.lr * index / max(1, recipe.warmup_steps)
        return recipe.lr * max(0.0, (steps - index) / max(1, steps - recipe.warmup_steps))

    def load(index: int) -> None:
        batch = batches[index % len(batches)]
        for k, v in batch.items():
            static[k].copy_(v)
        mask4d.copy_(causal[None, None] & static["attention_mask"].bool()[:, None, None, :])
        lr.fill_(scheduled(index))

    model.train()
    losses: list[torch.Tensor] = []
    warm = (
        3 + 2 * compiled
    )  # compiling happens in the first eager steps  # eager steps: the optimizer's state and the grads exist before the capture (static addresses)
    stream = torch.cuda.Stream() if gpu else None
    ctx.sync()
    started = time.perf_counter()
    ends = [started]
    with torch.cuda.stream(stream) if gpu else contextlib.nullcontext():
        for index in range(warm):
            load(index)
            losses.append(step())
            ends.append(time.perf_counter())
    if gpu:
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        load(warm)
        captured = time.perf_counter()
        with torch.cuda.graph(graph):
            static_loss = step()
        print(f"    capture {time.perf_counter() - captured:.2f} s", flush=True)
    for index in range(warm, len(batches)):
        load(index)
        if gpu:
            graph.replay()
            losses.append(static_loss.clone())
        else:
            losses.append(step())
        ends.append(time.perf_counter())
    ctx.sync()
    whole = time.perf_counter() - started
    report(f"whole step in one graph{', compiled layers' if compiled else ''} ({len(batches)} steps)", ends)
    print(
        f"    {len(batches)} steps in {whole:.2f} s (capture and the {warm} eager steps included)", flush=True
    )
    values = [float(v) for v in losses]
    for name, curve in (("run's path", reference), ("whole step", values)):
        tail = curve[-50:]
        print(f"    {name:11s} loss first {' '.join(f'{v:.4f}' for v in curve[:4])} … mean of last "
              f"{len(tail)} {statistics.fmean(tail):.4f}", flush=True)  # fmt: skip


def graphs_of_compiled_layers(tokenizer_dir: Path, data: Path, steps: int) -> None:
    """The run's path (graphed decoder layers, lean walks, the Trainer) with each layer's forward
    torch.compile'd before its capture (fused kernels replayed from the graphs) against the path as it is,
    ABAB, each from the same seed: ms per step, the whole span (compile and captures included), losses."""
    from harness.backends.graphed_layers import GraphedLayers, decoder_layers
    from harness.backends.lean_lora import lean_lora_forward
    from harness.backends.lean_steps import lean_module_walks

    for name in ("graphs", "compiled graphs", "graphs", "compiled graphs"):
        ctx = Context(tokenizer_dir, data, steps, ("recipe.compile=graphs",))
        model, trainer, outcome = ctx.trainer()
        ctx.sync()
        started = time.perf_counter()
        outcome.step_ends.append(started)
        with lean_module_walks(model, trainer.lean_steps), lean_lora_forward(model, trainer.lean_steps):
            graphed = GraphedLayers(decoder_layers(model, "graphs"), full_rows=ctx.setup.recipe.batch_size)
            if name.startswith("compiled"):
                graphed.eager = [torch.compile(forward, dynamic=False) for forward in graphed.eager]
            graphed.install()
            try:
                trainer.train()
            finally:
                graphed.remove()
        ctx.sync()
        span = time.perf_counter() - started
        report(f"{name}", outcome.step_ends)
        tail = outcome.losses[-50:]
        print(f"    {steps} steps in {span:.2f} s (compile and captures included: {graphed.stats}); loss first "
              f"{outcome.losses[0]:.4f}, mean of last {len(tail)} {statistics.fmean(tail):.4f}", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("tokenizer_dir", type=Path)
    parser.add_argument("data", type=Path)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument(
        "--mode",
        choices=(
            "variants",
            "profile",
            "profile-graphs",
            "graphs",
            "lean-lora",
            "whole-step",
            "whole-step-compiled",
            "graphs-compiled",
        ),
        default="variants",
    )
    args = parser.parse_args()
    if args.mode == "graphs":
        graphs_against_eager(args.tokenizer_dir, args.data, args.steps)
        return
    if args.mode == "lean-lora":
        lean_lora_against_peft(args.tokenizer_dir, args.data, args.steps)
        return
    if args.mode == "graphs-compiled":
        graphs_of_compiled_layers(args.tokenizer_dir, args.data, args.steps)
        return
    if args.mode.startswith("whole-step"):
        if args.mode == "whole-step":
            whole_step_graph(args.tokenizer_dir, args.data, args.steps)
        whole_step_graph(args.tokenizer_dir, args.data, args.steps, compiled=True)
        return
    ctx = Context(args.tokenizer_dir, args.data, args.steps)
    if args.mode in ("profile", "profile-graphs"):
        profiled_trainer(ctx, graphs=args.mode == "profile-graphs")
        return
    timed_trainer(ctx, "harness trainer (build_trainer)")
    timed_trainer(ctx, "  with logging_steps=1000", {"logging_steps": 1000})
    timed_trainer(ctx, "  with loss_type=nll (no chunked CE)", {"loss_type": "nll"})
    plain_loop(ctx, "plain loop (model loss, fused AdamW)")
    plain_loop(ctx, "plain loop + gradient checkpointing (the peer's)", checkpointing=True)


if __name__ == "__main__":
    main()
