"""The loop a whole-step CUDA graph would replay, run eager, against the Trainer's own steps, step for step.

Issue 40's step target (300 steps in ≤ 5 s on one H200) needs the whole training step captured as one
CUDA graph; dev/gpu/profile_step.py --mode whole-step-compiled measured 17.3 ms a step that way, with a
forward written out so nothing in it reads a device value back. Before that loop can replace
`trainer.train()` in a run, it must train exactly what the Trainer trains. This script checks that part
on any machine, CPU included: the same seed, the same batches in the same order (the trainer's own
dataloader, the epoch's short last batch and the next epoch's reshuffle included), the trainer's own
optimizer (its parameter groups: no weight decay on biases and norms) and scheduler, clipping over the
trainable parameters (LeanSteps'), and the loss written out as the graph needs it: a 4-D boolean mask
made from the batch's padding, logits for a fixed number of rows (batch size × the dataset's longest
answer, the answer rows first: a stable sort, no host read; `--loss-rows all`: every position's),
summed cross-entropy over the answer tokens divided by their count. The Trainer side is the harness's (build_trainer, training_spans, the lean
LoRA forward), and its unrounded loss is taken from compute_loss. Prints the largest per-step loss and
gradient-norm differences, the LoRA weights' largest difference at the end, and both loops' seconds.

On a GPU, `--capture` replays the written-out step from one CUDA graph per batch shape (CapturedSteps,
which has not run yet) and `--trainer-layers graphs` times the Trainer as a run trains (graphed layers):
ms per step side by side, with the same parity figures (in bf16 on a GPU: not measured yet). The 17.3 ms
came with compiled layers inside the one graph (eager layers inside it: 30.8 ms, no faster than the run's
path): `--layers compiled` compiles the written-out side's layers as recipe.compile = "layers" does
(then close to the Trainer, not bit for bit: inductor fuses).

Usage: python dev/step_loop_parity.py TOKENIZER_DIR DATA_FILE [--steps N] [--bf16] [--capture]
       [--loss-rows answers|all] [--layers eager|compiled] [--trainer-layers none|graphs]
(a 2-layer, 64-wide model on a CPU, SmolLM2-135M's shape on a GPU, both random weights with its vocabulary;
with the 1,700-row Exp A sample an epoch is 213 steps, so --steps 220 crosses into the second epoch).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent / "gpu"))
from profile_step import Context  # a sibling dev script, on the path above

from harness.backends.hf import training_spans
from harness.runtime import Runtime


def trainer_steps(
    ctx: Context, mode: str
) -> tuple[list[float], list[float], dict[str, torch.Tensor], list[float]]:
    """The harness's trainer, its layers as `mode` says (training_spans'): each step's unrounded loss and
    logged grad norm, the LoRA weights at the end, each step's end."""
    model, trainer, outcome = seeded_trainer(ctx)
    losses: list[float] = []
    norms: list[float] = []
    compute_loss = trainer.compute_loss

    def recorded(*args: Any, **kwargs: Any) -> Any:
        loss = compute_loss(*args, **kwargs)
        losses.append(float(loss.detach()))
        return loss

    trainer.compute_loss = recorded
    logged = trainer.log

    def log(logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        if "grad_norm" in logs:
            norms.append(float(logs["grad_norm"]))
        logged(logs, *args, **kwargs)

    trainer.log = log
    ctx.sync()
    outcome.step_ends.append(time.perf_counter())
    with training_spans(model, trainer, ctx.setup, mode):
        trainer.train()
    ctx.sync()
    return losses, norms, lora_weights(model), outcome.step_ends


def seeded_trainer(ctx: Context) -> tuple[Any, Any, Any]:
    """A fresh model and trainer from the run's seed, as a run seeds before LoRA wraps the model: the LoRA A
    matrices start random, and each side must start from the same ones."""
    from transformers import set_seed

    set_seed(ctx.setup.recipe.seed)
    return ctx.trainer()


def lora_weights(model: Any) -> dict[str, torch.Tensor]:
    return {n: p.detach().float().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


class WrittenOutStep:
    """One optimizer step as a graph would hold it: nothing read back to the host, shapes from the batch."""

    def __init__(self, model: Any, trainer: Any, device: str, autocast: bool, answer_rows: bool) -> None:
        self.inner = model.get_base_model().model
        self.head = model.get_base_model().lm_head
        self.trainer = trainer
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.device = device
        self.autocast = autocast
        # The most answer tokens a batch can hold: batch_size × the longest answer in the prepared dataset.
        # A batch never has more, so taking this many rows, the answer rows first, drops none.
        longest = max(sum(label != -100 for label in row) for row in trainer.train_dataset["labels"])
        self.answer_rows = trainer.args.per_device_train_batch_size * longest if answer_rows else None

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        ids, labels = batch["input_ids"], batch["labels"]
        length = ids.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool, device=ids.device).tril()
        # A key position is seen where it is causal and not padding (TRL's collator pads on the right, so
        # a padded query row still sees its sequence's first token and no row is masked whole).
        mask = causal[None, None] & batch["attention_mask"].bool()[:, None, None, :]
        positions = torch.arange(length, device=ids.device).unsqueeze(0)
        with torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.autocast, cache_enabled=False):
            hidden = self.inner.embed_tokens(ids)
            rotary = self.inner.rotary_emb(hidden, positions)
            for layer in self.inner.layers:
                hidden = layer(
                    hidden, attention_mask=mask, position_ids=positions, position_embeddings=rotary
                )
            hidden = self.inner.norm(hidden)[:, :-1].reshape(-1, hidden.shape[-1])
            targets = labels[:, 1:].reshape(-1)
            answers = targets != -100
            if self.answer_rows is not None:
                # Logits for the answer rows only, as the harness's loss computes them, in a shape the graph
                # keeps: a stable sort puts the answer positions first, and the first `answer_rows` are taken
                # (the rest of those are padding or prompt, whose -100 targets the loss ignores).
                rows = torch.argsort((~answers).to(torch.int8), stable=True)[: self.answer_rows]
                hidden, targets = hidden.index_select(0, rows), targets.index_select(0, rows)
            logits = self.head(hidden).float()
        summed = torch.nn.functional.cross_entropy(logits, targets, ignore_index=-100, reduction="sum")
        return summed / answers.sum().clamp(min=1)

    def body(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Forward, backward, clipping, the optimizer's step: what one graph holds. The gradients are zeroed
        in place first (0 + g is g exactly), not set to None after, so a graph keeps their addresses."""
        for param in self.params:
            if param.grad is not None:
                param.grad.zero_()
        loss = self.loss(batch)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.params, self.trainer.args.max_grad_norm)
        self.trainer.optimizer.step()
        return loss.detach(), norm.detach()

    def __call__(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.body(batch)
        self.trainer.lr_scheduler.step()  # on the host, as the Trainer's: a graph's lr is a tensor it fills
        return out


class CapturedSteps:
    """WrittenOutStep replayed from one CUDA graph per batch shape (not run yet: no GPU was lent when it was
    written; dev/gpu/profile_step.py's whole-step mode, which it follows, was). A shape's first batch steps
    eagerly on a side stream (the optimizer's state and every gradient then exist at fixed addresses), its
    next is captured, and that one and every later one replay. The optimizer is made capturable with a
    tensor learning rate, which the scheduler fills in place (torch's LRScheduler does for a tensor)."""

    def __init__(self, step: WrittenOutStep) -> None:
        self.step = step
        self.graphs: dict[tuple[int, ...], tuple[Any, dict[str, torch.Tensor], tuple[torch.Tensor, ...]]] = {}
        self.eager_shapes: set[tuple[int, ...]] = set()
        self.pool = torch.cuda.graph_pool_handle()
        self.capture_s = 0.0
        for group in step.trainer.optimizer.param_groups:
            group["capturable"] = True
            group["lr"] = torch.tensor(float(group["lr"]), device="cuda")

    def __call__(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        shape = tuple(batch["input_ids"].shape)
        if shape in self.graphs:
            graph, static, out = self.graphs[shape]
            for key, value in batch.items():
                static[key].copy_(value)
            graph.replay()
            self.step.trainer.lr_scheduler.step()
            return out[0].clone(), out[1].clone()
        if shape not in self.eager_shapes:
            self.eager_shapes.add(shape)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                out = self.step(batch)
            torch.cuda.current_stream().wait_stream(side)
            return out
        torch.cuda.synchronize()
        started = time.perf_counter()
        static = {key: value.clone() for key, value in batch.items()}
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            captured = self.step.body(static)
        torch.cuda.synchronize()
        self.capture_s += time.perf_counter() - started
        self.graphs[shape] = (graph, static, captured)
        return self(batch)  # capturing ran nothing: this batch's step is the first replay


def written_out_steps(
    ctx: Context, capture: bool, loss_rows: str, layers: str
) -> tuple[list[float], list[float], dict[str, torch.Tensor], list[float]]:
    """The same run as `trainer_steps`, through WrittenOutStep (or CapturedSteps) over the trainer's
    dataloader, optimizer and scheduler (made as `Trainer.train` makes them). The loss is read every step,
    as a run's observers read it."""
    model, trainer, _ = seeded_trainer(ctx)
    steps = ctx.setup.recipe.steps
    loader = trainer.get_train_dataloader()
    trainer.create_optimizer()
    trainer.create_scheduler(num_training_steps=steps, optimizer=trainer.optimizer)
    written = WrittenOutStep(
        model, trainer, ctx.runtime.device, ctx.runtime.precision == "bf16", loss_rows == "answers"
    )
    step = CapturedSteps(written) if capture else written
    losses: list[float] = []
    norms: list[torch.Tensor] = []
    shapes: Counter[tuple[int, ...]] = Counter()  # (rows, tokens) of each batch: how many
    ctx.sync()
    ends = [time.perf_counter()]
    with training_spans(model, trainer, ctx.setup, "layers" if layers == "compiled" else "none"):
        model.train()
        epoch = 0
        while len(losses) < steps:
            loader.set_epoch(epoch)
            for batch in loader:
                wanted = {
                    key: batch[key].to(ctx.runtime.device)
                    for key in ("input_ids", "attention_mask", "labels")
                }
                shapes[tuple(wanted["input_ids"].shape)] += 1
                loss, norm = step(wanted)
                losses.append(float(loss))
                norms.append(norm)
                ends.append(time.perf_counter())
                if len(losses) == steps:
                    break
            epoch += 1
    ctx.sync()
    print(f"batch shapes (rows, tokens): {dict(sorted(shapes.items()))}; epochs begun: {epoch}")
    if capture:
        print(f"graphs captured: {len(step.graphs)} in {step.capture_s:.2f} s")
    return losses, [float(v) for v in norms], lora_weights(model), ends


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("tokenizer_dir", type=Path)
    parser.add_argument("data", type=Path)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--bf16", action="store_true", help="on a CPU: bf16 weights, trained under autocast")
    parser.add_argument(
        "--capture", action="store_true", help="on a GPU: the written-out steps replayed from CUDA graphs"
    )
    parser.add_argument(
        "--loss-rows",
        choices=("answers", "all"),
        default="answers",
        help="logits for a fixed number of rows, the answer rows first (default), or for every position",
    )
    parser.add_argument(
        "--layers",
        choices=("eager", "compiled"),
        default="eager",
        help="the written-out side's decoder layers: eager, or torch.compile'd as recipe.compile = 'layers' does",
    )
    parser.add_argument(
        "--trainer-layers",
        choices=("none", "graphs"),
        default="none",
        help="the Trainer's decoder layers eager (the same kernels: parity) or graphed (a run's path: speed)",
    )
    args = parser.parse_args()
    ctx = Context(args.tokenizer_dir, args.data, args.steps, steps_on_cpu=args.steps)
    if args.bf16:
        ctx.runtime = Runtime(ctx.runtime.device, "bf16")
    gpu = ctx.runtime.device == "cuda"
    if (args.capture or args.trainer_layers == "graphs") and not gpu:
        parser.error("--capture and --trainer-layers graphs need a CUDA GPU")
    batch = ctx.setup.recipe.batch_size
    print(f"runtime {ctx.runtime.device} {ctx.runtime.precision}, {ctx.steps} steps, batch {batch}")
    theirs = trainer_steps(ctx, args.trainer_layers)
    ours = written_out_steps(ctx, args.capture, args.loss_rows, args.layers)
    ours_name = f"written out, {args.loss_rows}" + (", compiled" if args.layers == "compiled" else "")
    ours_name += ", graphs" if args.capture else ""
    for name, (losses, norms, _, ends) in (
        (f"Trainer, layers {args.trainer_layers}", theirs),
        (ours_name, ours),
    ):
        steps_s = [b - a for a, b in itertools.pairwise(ends)]
        print(f"{name:38s} {len(losses)} losses, {len(norms)} grad norms, {ends[-1] - ends[0]:.2f} s, "
              f"median step {1000 * statistics.median(steps_s[5:] or steps_s):.1f} ms (after the first 5); "
              f"loss first {losses[0]:.6f} last {losses[-1]:.6f}")  # fmt: skip
    loss_diff = [abs(a - b) for a, b in zip(theirs[0], ours[0], strict=True)]
    norm_diff = [abs(a - b) / max(a, 1e-12) for a, b in zip(theirs[1], ours[1], strict=True)]
    weight_diff = max(float((theirs[2][n] - ours[2][n]).abs().max()) for n in theirs[2])
    scale = max(float(w.abs().max()) for w in theirs[2].values())
    worst = max(range(len(loss_diff)), key=loss_diff.__getitem__)
    print(f"largest |Δ loss| {loss_diff[worst]:.3g} (step {worst + 1}); largest relative Δ grad norm "
          f"{max(norm_diff):.3g}; LoRA weights after the last step: largest |Δ| {weight_diff:.3g} "
          f"(largest |weight| {scale:.3g})")  # fmt: skip


if __name__ == "__main__":
    main()
