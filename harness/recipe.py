"""One run's work inside the trainer child, top to bottom (design steps 3–9). Read it like a recipe.

Order matters: the data is split before the model loads (a bad data path fails in a second, not after
a minute of loading); the baseline is scored before LoRA wraps the model; preflight checks run before
the first optimizer step; the smoke observer rides along the first steps of the real training, so a
broken run stops there instead of after the long phase.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness import checks
from harness.config import SetupConfig
from harness.errors import UserError
from harness.export import eval_adapter_source
from harness.generation import adapter_merged, decoding_precision, generate_answers
from harness.loadlock import staggered_load
from harness.mfu import mfu, training_flops
from harness.models import cache_dir, resolve_model
from harness.progress import Progress
from harness.tasks.registry import render_prompt, task_module
from harness.training import (
    Runtime,
    end_of_turn,
    eval_batch_size,
    merges_adapter,
    resolve_runtime,
    steady_step_seconds,
)
from harness.worker import is_main_process


def backend_module(name: str) -> Any:
    """Backends share function signatures (`load`, `train`), not a class tree."""
    return importlib.import_module(f"harness.backends.{name}")


def run_phases(setup: SetupConfig, work_dir: Path, outcome: Any, events: Any, progress: Progress) -> None:
    runtime = resolve_runtime(setup.device, setup.precision)
    backend = backend_module(setup.backend)
    main_process = is_main_process()
    check_gpus(setup, runtime)

    # 3. Data: the story's split, hashed so runs compare only on equal splits. The task reads and scores it.
    progress.phase("data")
    task = task_module(setup.task)
    split = task.load_split(setup.data)
    test = split.test[: setup.eval.limit] if setup.eval.limit else split.test
    outcome.data = {
        "source": split.source, "split_hash": split.hash, "n_rows": split.n_rows,
        "n_train": len(split.train), "n_test": len(test),
    }  # fmt: skip

    # 4. Model through the backend.
    progress.phase(f"load {setup.model.source} ({runtime.device}, {runtime.precision})")
    events.mark("load", "start")
    started = time.perf_counter()
    # Ranks load one after another: several copies in host RAM at once overflowed it in the story.
    with staggered_load() if setup.gpus > 1 else contextlib.nullcontext():
        load_started = time.time()  # wall clock, comparable across ranks; inside the lock
        resolved = resolve_model(setup.model)
        model, tokenizer = backend.load(setup, resolved.path, runtime)
        load_window = (load_started, time.time())
    outcome.timings["load_s"] = round(time.perf_counter() - started, 2)
    events.mark("load", "end")
    outcome.model = {
        "source": setup.model.source, "resolved": str(resolved.path),
        "weights": "random" if setup.model.random_weights else "pretrained",
        "precision": runtime.precision, "device": runtime.device,
    }  # fmt: skip

    outcome.checks["end_of_turn"] = end_of_turn_check(tokenizer).to_dict()

    # The untrained model, scored the same way (cached per model + split + eval settings).
    base_answers: list[str] | None = None
    if setup.eval.enabled and setup.eval.baseline and main_process:
        base_answers, outcome.baseline = baseline(setup, runtime, resolved.path, split, test, model, tokenizer,
                                                  progress, events, task)  # fmt: skip
        # Time spent in this run: none when the answers came from the cache (the baseline keeps their original time).
        outcome.timings["baseline_eval_s"] = 0.0 if outcome.baseline.get("cached") else outcome.baseline["eval_s"]

    # 5–8. Train, or (eval.adapter) put a trained adapter onto this base and train nothing.
    source = eval_adapter_source(setup)
    if source is not None:
        scored_model = backend.attach_adapter(model, source.adapter_dir)
        outcome.model["adapter"] = {
            "path": str(source.adapter_dir), "base_model": source.base_model, "trained_precision": source.precision,
        }  # fmt: skip
    else:
        scored_model = _train(setup, runtime, model, tokenizer, split, backend, outcome, progress, events)
        if setup.gpus > 1:  # the process group exists once training has set it up
            outcome.timings["load_windows"] = load_windows(gathered(load_window))
        # The adapter, for `lorabench export` (the parent decides whether it is kept beside the record).
        if main_process:
            save_adapter(scored_model, work_dir / "adapter", setup, runtime, resolved.path)

    # 9. Evaluate the trained adapter (rank 0 alone under DDP).
    if setup.eval.enabled and main_process:
        answers, seconds = evaluate(scored_model, tokenizer, test, setup, progress, events, "eval")
        outcome.timings["eval_s"] = seconds
        metrics, rows = task.score_with_rows(test, answers, base_answers)
        outcome.trained = {**metrics, "eval_s": seconds}
        write_predictions(work_dir / "predictions.jsonl", rows)
        if source is not None:
            outcome.memory = memory_stats(runtime)


def _train(
    setup: SetupConfig, runtime: Runtime, model: Any, tokenizer: Any, split: Any, backend: Any, outcome: Any,
    progress: Progress, events: Any,
) -> Any:  # fmt: skip
    """Steps 5–8: preflight checks, training with the smoke observer riding along, post checks. Returns
    the trained model; a failed check or smoke stops the run (RunStopped)."""
    smoke = checks.SmokeObserver(setup.checks.smoke) if setup.checks.smoke.enabled else None
    progress.phase("train", total=setup.recipe.steps)
    step_progress = _ProgressObserver(progress)
    events.mark("train", "start")
    trained = backend.train(model, tokenizer, split.train, setup, runtime, [o for o in (smoke, step_progress) if o])
    events.mark("train", "end")
    if trained.preflight_s is not None:
        outcome.timings["preflight_s"] = trained.preflight_s
    outcome.timings["train_s"] = round(trained.train_s, 2)
    outcome.train = train_stats(trained, runtime, setup)
    outcome.memory = memory_stats(runtime)
    outcome.checks.update({name: verdict.to_dict() for name, verdict in trained.checks.items()})
    if smoke:
        outcome.checks["smoke"] = smoke.final_verdict().to_dict()
    if trained.stopped_reason:
        stopped_by_smoke = smoke is not None and trained.stopped_reason.startswith("smoke:")
        raise checks.RunStopped(smoke.status if stopped_by_smoke else "failed", trained.stopped_reason)
    return trained.model


class _ProgressObserver:
    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def on_step(self, step: int, loss: float) -> str | None:
        self.progress.advance(loss=loss)
        return None


def evaluate(
    model: Any, tokenizer: Any, test: tuple[Any, ...], setup: SetupConfig, progress: Progress, events: Any,
    phase: str,
) -> tuple[list[str], float]:  # fmt: skip
    progress.phase(phase, total=len(test))
    events.mark(phase, "start")
    started = time.perf_counter()
    answers = answer_questions(model, tokenizer, test, setup, on_batch=lambda n: progress.advance(n))
    events.mark(phase, "end")
    return answers, round(time.perf_counter() - started, 2)


def answer_questions(
    model: Any, tokenizer: Any, examples: Sequence[Any], setup: SetupConfig, *, merge: bool | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> list[str]:  # fmt: skip
    """The model's greedy answers to any task's examples, decoded as the setup's eval says. `merge`
    overrides `eval.merge_adapter` (an export compares unmerged with merged answers)."""
    device = next(model.parameters()).device.type
    prompts = [render_prompt(tokenizer, ex) for ex in examples]
    merged = merges_adapter(setup, device) if merge is None else merge
    # Lifted first, merged after: the LoRA sums are folded in fp32 too.
    with decoding_precision(model, setup.eval.precision), adapter_merged(model, merged):
        return generate_answers(
            model, tokenizer, prompts, batch_size=eval_batch_size(setup.eval.batch_size, device),
            max_new_tokens=setup.eval.max_new_tokens, end_of_turn=end_of_turn(tokenizer), on_batch=on_batch,
        )  # fmt: skip


def baseline(
    setup: SetupConfig, runtime: Runtime, model_path: Path, split: Any, test: tuple[Any, ...],
    model: Any, tokenizer: Any, progress: Progress, events: Any, task: Any,
) -> tuple[list[str], dict[str, Any]]:  # fmt: skip
    decoded_in = "fp32" if setup.eval.precision == "fp32" else runtime.precision  # what the answers depend on
    key_payload = json.dumps(
        [str(model_path), setup.model.model_dump(mode="json"), decoded_in, split.hash, len(test),
         setup.eval.max_new_tokens],
    )  # fmt: skip
    key = hashlib.sha256(key_payload.encode()).hexdigest()[:16]
    path = cache_dir() / "baseline" / f"{key}.json"
    # The answers are cached, not their scores: scoring is cheap and may improve between runs.
    if path.is_file():
        cached = json.loads(path.read_text(encoding="utf-8"))
        return cached["answers"], {**task.score(cached["answers"], test), "eval_s": cached["eval_s"], "cached": True}
    answers, seconds = evaluate(model, tokenizer, test, setup, progress, events, "baseline eval")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"answers": answers, "eval_s": seconds}), encoding="utf-8")
    tmp.replace(path)
    return answers, {**task.score(answers, test), "eval_s": seconds}


def end_of_turn_check(tokenizer: Any) -> checks.Verdict:
    """What ends an answer in training and generation, next to what the tokenizer calls EOS."""
    eot = end_of_turn(tokenizer)
    evidence = {"eos_token": tokenizer.eos_token, "end_of_turn": eot}
    if eot == tokenizer.eos_token:
        return checks.Verdict("pass", f"answers end with EOS {eot!r}", evidence)
    return checks.Verdict(
        "pass", f"answers end with the chat template's {eot!r}, not the tokenizer's EOS {tokenizer.eos_token!r}", evidence
    )


def model_flops_utilisation(trained: Any, runtime: Runtime, setup: SetupConfig) -> float | None:
    """Model FLOPs per second against the GPUs' bf16 dense peak (None on CPU or an unknown GPU)."""
    if runtime.device != "cuda" or not trained.tokens or not trained.train_s:
        return None
    import torch

    flops = training_flops(trained.total_params, trained.trainable_params, trained.tokens,
                           setup.recipe.gradient_checkpointing)  # fmt: skip
    value = mfu(flops / trained.train_s, torch.cuda.get_device_name(0), setup.gpus)
    return round(value, 4) if value is not None else None


def train_stats(trained: Any, runtime: Runtime, setup: SetupConfig) -> dict[str, Any]:
    losses = [round(x, 5) for x in trained.losses]
    tail = losses[-max(1, len(losses) // 10) :] if losses else []
    seconds = trained.train_s or None
    return {
        "steps_done": len(losses),
        "loss": losses,
        "first_loss": losses[0] if losses else None,
        "final_loss": round(sum(tail) / len(tail), 5) if tail else None,
        "train_s": round(trained.train_s, 2),
        "step_s": steady_step_seconds(trained.step_ends),
        "tokens": trained.tokens,
        "tokens_per_s": round(trained.tokens / seconds, 1) if trained.tokens and seconds else None,
        "samples_per_s": round(trained.samples / seconds, 3) if seconds else None,
        "mfu": model_flops_utilisation(trained, runtime, setup),
        "trainable_params": trained.trainable_params,
        "total_params": trained.total_params,
        "graphs": trained.graphs.to_record() if trained.graphs else None,
    }


def check_gpus(setup: SetupConfig, runtime: Runtime) -> None:
    import torch

    if setup.gpus > 1 and (runtime.device != "cuda" or torch.cuda.device_count() < setup.gpus):
        raise UserError(
            f"gpus: {setup.gpus} data-parallel processes need {setup.gpus} GPUs, this host has "
            f"{torch.cuda.device_count()}; lower gpus or run on a bigger host"
        )


def gathered(value: Any) -> list[Any]:
    """`value` from every rank, in rank order, under DDP (every rank must call this); else `[value]`."""
    import torch

    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return [value]
    values: list[Any] = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(values, value)
    return values


def load_windows(windows: Sequence[tuple[float, float]]) -> list[list[float]]:
    """Each rank's [start, end] of loading the model, in seconds from the first start."""
    first = min(start for start, _ in windows)
    return [[round(start - first, 2), round(end - first, 2)] for start, end in windows]


def memory_stats(runtime: Runtime) -> dict[str, Any]:
    """Peak VRAM of this process's GPU; under DDP every rank's, gathered (memory per card)."""
    import torch

    stats: dict[str, Any] = {"device": runtime.device}
    if runtime.device == "cuda":
        peak = int(torch.cuda.max_memory_allocated())
        stats["peak_vram_bytes"] = peak
        peaks = gathered(peak)
        if len(peaks) > 1:
            stats["peak_vram_per_gpu_bytes"] = peaks
    return stats


def write_predictions(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def save_adapter(model: Any, target: Path, setup: SetupConfig, runtime: Runtime, base_path: Path) -> None:
    """The LoRA weights PEFT saves, plus what an export needs to rebuild base + adapter: the base model's
    folder, the precision it was trained in, and the setup (for the test split)."""
    model.save_pretrained(str(target))
    info = {"base_model": str(base_path), "precision": runtime.precision, "setup": setup.model_dump(mode="json")}
    (target / "lorabench.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
