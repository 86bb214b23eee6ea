"""Backend `hf`: transformers + PEFT + TRL's SFTTrainer. Loss on the answer only.

Same two functions as every backend: `load(setup, model_path, runtime)` and
`train(model, tokenizer, examples, setup, runtime, observers)`. Read top to bottom.
"""

from __future__ import annotations

import contextlib
import inspect
import shutil
import tempfile
import time
import weakref
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import torch

from harness import checks
from harness.autorecipe import auto_kernels
from harness.backends import checkpoint
from harness.backends.common import Model, StepObserver, Tokenizer, TrainOutcome, count_params
from harness.backends.graphed_layers import (
    PAD_MULTIPLE,
    GraphStats,
    compile_mode,
    decoder_layers,
    graphed_layers,
)
from harness.backends.lean_lora import lean_lora_forward
from harness.backends.lean_steps import lean_module_walks
from harness.config import SetupConfig
from harness.errors import UserError
from harness.results import CheckVerdict
from harness.runtime import Runtime
from harness.tasks.encoding import tokenize_examples
from harness.tasks.registry import Example

# A failure of these means the long run would train the wrong thing: stop before the first step.
STOPPING_CHECKS = ("mask_audit", "accumulation_parity", "cache_parity")


def preload(setup: SetupConfig, runtime: Runtime) -> None:
    """The child's start-up, once: the GPU runtime started in a thread (CUDA's context creation waits on
    the driver and lets the interpreter go on) while this thread imports transformers, PEFT, TRL and
    datasets, which every run needs. Only ordering changes: the same work would happen in load/train."""
    import threading

    warm = threading.Thread(target=_start_gpu, daemon=True) if runtime.device == "cuda" else None
    if warm is not None:
        warm.start()
    _skip_sklearn()
    import datasets  # ruff: ignore[unused-import]  (imported for its cost, here)
    import peft  # ruff: ignore[unused-import]
    import transformers  # ruff: ignore[unused-import]
    from transformers import AutoModelForCausalLM, AutoTokenizer  # ruff: ignore[unused-import]
    from trl import SFTConfig, SFTTrainer  # ruff: ignore[unused-import]

    if warm is not None:
        warm.join()


def _start_gpu() -> None:
    # A failure here is load's to report (with the setup's context), not this warm-up's. One small bf16
    # product also creates the cuBLAS handle and workspace, which the first forward would otherwise wait for.
    with contextlib.suppress(Exception):
        torch.cuda.init()
        probe = torch.ones(64, 64, device="cuda", dtype=torch.bfloat16)
        (probe @ probe).sum().item()


def _skip_sklearn() -> None:
    """transformers imports scikit-learn at import time when it is installed (for one metric of assisted
    generation, which lorabench never uses): 2.2 of the trainer's ~14 s of imports on the H200 image
    (reports/benchmarks/h200/importtime.txt). Said unavailable to transformers, it is not imported."""
    import transformers.utils

    transformers.utils.is_sklearn_available = lambda: False


def load(setup: SetupConfig, model_path: Path | str, runtime: Runtime) -> tuple[Model, Tokenizer]:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_path))
    if tokenizer.pad_token is None:
        # Padding positions are masked from attention and loss, so any id serves; EOS is the convention.
        tokenizer.pad_token = tokenizer.eos_token
    if setup.model.random_weights:
        config = AutoConfig.from_pretrained(str(model_path))
        # Its initial weights are the run's seed's first draw (seeded once: harness/run/seeding.py).
        # Initialised where it will run: on the H200, loading 1B random weights initialised on the CPU
        # took 47 s, and DDP ranks load one after another, so two cards would wait ~94 s for the first step.
        with torch.device("cuda" if runtime.device == "cuda" else "cpu"):
            model = AutoModelForCausalLM.from_config(
                config, dtype=runtime.dtype, attn_implementation=runtime.attention
            )
    else:
        quant = _quantization_config(runtime) if runtime.precision == "4bit" else None
        model = AutoModelForCausalLM.from_pretrained(
            str(model_path),
            dtype=runtime.dtype,
            quantization_config=quant,
            revision=setup.model.revision,
            attn_implementation=runtime.attention,
        )
    if runtime.precision != "4bit":
        model.to(runtime.device)
    return model, tokenizer


def _quantization_config(runtime: Runtime) -> Any:
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_compute_dtype=torch.bfloat16,
        bnb_4bit_use_double_quant=True,
    )


def wrap_lora(model: Model, setup: SetupConfig) -> Model:
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    if setup.precision == "4bit":
        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=setup.recipe.gradient_checkpointing
        )
    config = LoraConfig(
        r=setup.lora.rank,
        lora_alpha=setup.lora.alpha,
        lora_dropout=setup.lora.dropout,
        target_modules=setup.lora.targets,  # module-name suffixes, or one regex (validated)
        task_type="CAUSAL_LM",
    )
    # LoRA's A matrices are drawn from torch's RNG, seeded once for the run (harness/run/seeding.py): the
    # model's load and the baseline leave it untouched, so a seed means the same adapter init.
    return get_peft_model(model, config)


def attach_adapter(model: Model, adapter_dir: Path) -> Model:
    """A trained LoRA adapter put onto this base (in whatever precision it loaded), for scoring only."""
    from peft import PeftModel

    return PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=False)


def _step_callback(observers: Sequence[StepObserver], outcome: TrainOutcome) -> Any:
    from transformers import TrainerCallback

    class ObserveSteps(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            outcome.step_ends.append(time.perf_counter())

        def on_log(
            self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any
        ) -> None:
            if not logs or "loss" not in logs:
                return
            # Both already read to the host by the Trainer's logging: observing them costs no device sync.
            loss = float(logs["loss"])
            grad_norm = float(logs["grad_norm"]) if logs.get("grad_norm") is not None else None
            outcome.losses.append(loss)
            for observer in observers:
                reason = observer.on_step(state.global_step, loss, grad_norm)
                if reason:
                    outcome.stopped_reason = outcome.stopped_reason or reason
                    control.should_training_stop = True
                    break  # the first check that stops the run owns the step: one failure, one verdict

    return ObserveSteps()


def resolve_optimizer(name: str, runtime: Runtime) -> str:
    if name != "auto":
        return name
    return "adamw_torch_fused" if runtime.device == "cuda" else "adamw_torch"


def build_trainer(
    model: Model,
    tokenizer: Tokenizer,
    examples: Sequence[Example],
    setup: SetupConfig,
    runtime: Runtime,
    callbacks: list,
    checkpoints: Path | None = None,
) -> Any:
    """The TRL SFTTrainer exactly as `train` uses it (preflight checks are handed it to audit its batches).
    `checkpoints`: the folder it saves resumable checkpoints in (when: `recipe.checkpoint_every`)."""
    from datasets import Dataset
    from transformers.trainer_callback import PrinterCallback

    tokenized = tokenize_examples(tokenizer, examples)
    dataset = Dataset.from_dict(
        {
            "input_ids": [t.input_ids for t in tokenized],
            "completion_mask": [t.completion_mask for t in tokenized],
        }
    )
    # Trainer makes its output_dir although nothing is saved there (save_strategy "no"): a temp folder,
    # removed with the trainer, not `.trainer-scratch/` in whatever folder the user ran from (which a
    # container may mount read-only).
    scratch = tempfile.mkdtemp(prefix="lorabench-trainer-")
    args = training_args(
        setup, runtime, checkpoints if checkpoints is not None else Path(scratch), checkpoints is not None
    )
    trainer = _sync_free_trainer_class()(
        model=model, args=args, train_dataset=dataset, processing_class=tokenizer, callbacks=callbacks
    )
    weakref.finalize(trainer, shutil.rmtree, scratch, ignore_errors=True)
    # The mask audit's expected rows are these very tokens (harness.checks.mask.shared_tokens): tokenizing
    # Exp A's 1,700 examples again took 0.28-0.30 s (medians) of its preflight on the 2-core EPYC.
    trainer.lorabench_tokenized = (examples, tokenized)
    # Trainer prints every log dict to stdout when tqdm is off; lorabench shows its own progress on stderr.
    trainer.remove_callback(PrinterCallback)
    return trainer


def training_args(setup: SetupConfig, runtime: Runtime, output_dir: Path, checkpointed: bool) -> Any:
    """The SFTConfig of a run: the recipe's settings, resolved for this runtime."""
    from trl import SFTConfig

    recipe = setup.recipe
    # Rotation is harness.backends.checkpoint's: the older checkpoint goes only once the newer is complete.
    # "auto" saves by time: the Trainer saves when harness.backends.checkpoint's callback asks (should_save).
    saving = (
        {"save_strategy": "steps", "save_steps": recipe.checkpoint_every, "save_total_limit": None}
        if checkpointed and recipe.checkpoint_every != "auto"
        else {"save_strategy": "no"}
    )
    return SFTConfig(
        output_dir=str(output_dir),
        max_steps=recipe.steps,
        per_device_train_batch_size=recipe.batch_size,
        gradient_accumulation_steps=recipe.grad_accum,
        learning_rate=recipe.lr,
        lr_scheduler_type=recipe.scheduler,
        warmup_steps=recipe.warmup_steps,
        weight_decay=recipe.weight_decay,
        optim=resolve_optimizer(recipe.optimizer, runtime),
        gradient_checkpointing=recipe.gradient_checkpointing,
        max_length=recipe.max_length,
        # Rows of exactly max_length tokens, no padding (a speed shape; see RecipeConfig.packing).
        packing=recipe.packing != "none",
        packing_strategy="wrapped",
        # Graphed layers replay one capture per batch shape: fewer lengths, fewer captures.
        pad_to_multiple_of=PAD_MULTIPLE if compile_mode(setup, runtime) == "graphs" else None,
        completion_only_loss=True,
        # The Trainer seeds data order and dropout itself (transformers' set_seed), from the run's seed.
        seed=recipe.seed,
        data_seed=recipe.seed,
        # bf16 trains under autocast on a CPU too, as on a GPU: the bf16 base's products stay bf16 and the fp32
        # LoRA weights' products run in bf16 instead of fp32 with casts around them (1.185× a step on the 2-core
        # EPYC, reports/benchmarks/cpu/bench_cpu_autocast.txt).
        bf16=runtime.precision in ("bf16", "4bit"),
        fp16=runtime.precision == "fp16",
        use_cpu=runtime.device == "cpu",
        logging_steps=1,
        logging_strategy="steps",
        # The raw loss, NaN included: the filter logs a NaN step as the mean of the steps since the last
        # log, 0.0 when every step is logged, and a diverged run looked healthy. Off, it also spares the
        # host sync its isnan/isinf test costs every micro-step.
        logging_nan_inf_filter=False,
        **saving,
        report_to=[],
        disable_tqdm=True,
        dataloader_num_workers=0,
        include_num_input_tokens_seen="no",  # counted on the device instead (see _sync_free_trainer_class)
        # Every LoRA weight is used in every forward (the dead-adapter check watches it), so DDP need
        # not walk the autograd graph for unused ones each step; on the H200 it warned that it found none.
        ddp_find_unused_parameters=False,
    )


def _sync_free_trainer_class() -> type:
    """TRL's SFTTrainer without the host syncs lorabench has no use for: TRL reads entropy, token accuracy
    and token counts back from the GPU every micro-step, each a stall on a launch-bound step. The loss is
    computed by SFTTrainer's own path; TRL's metrics are not collected; non-padding tokens are summed on the
    device and read once, after training. The loss is still read every step: the checks watch it."""
    from transformers import Trainer
    from trl import SFTTrainer

    from harness.backends import answer_loss
    from harness.backends.lean_steps import LeanSteps

    # The loss TRL's patched forward computes: once over the answer tokens (same sum, same count).
    answer_loss.install()

    # LeanSteps first: its FLOP count and clipping replace Trainer's whole-model walks (same values).
    class SyncFreeSFTTrainer(LeanSteps, SFTTrainer):
        _tokens: Any = None

        def compute_loss(
            self, model: Any, inputs: Any, return_outputs: bool = False, num_items_in_batch: Any = None
        ) -> Any:
            inputs.pop("_prediction_loss_only", None)
            inputs["use_cache"] = False
            if self.model.training and "attention_mask" in inputs:
                count = inputs["attention_mask"].sum()
                self._tokens = count if self._tokens is None else self._tokens + count
            return Trainer.compute_loss(
                self, model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch
            )

        def tokens_seen(self) -> int:
            """Non-padding tokens of every training micro-step, summed over ranks (one read, after training)."""
            if self._tokens is None:
                return 0
            return int(self.accelerator.reduce(self._tokens, reduction="sum"))

    return SyncFreeSFTTrainer


def train(
    model: Model,
    tokenizer: Tokenizer,
    examples: Sequence[Example],
    setup: SetupConfig,
    runtime: Runtime,
    observers: Sequence[StepObserver] = (),
    *,
    checkpoints: Path | None = None,
) -> TrainOutcome:
    started = time.time()
    kernels = fused_kernels(model, setup, runtime)
    model = wrap_lora(model, setup)
    if setup.recipe.gradient_checkpointing:
        model.enable_input_require_grads()
    lora_s = time.time() - started
    outcome = run_sft(model, tokenizer, examples, setup, runtime, observers, checkpoints)
    outcome.phases = {"lora": lora_s, **outcome.phases}
    outcome.kernels = kernels
    return outcome


def fused_kernels(model: Model, setup: SetupConfig, runtime: Runtime) -> list[str] | None:
    """recipe.kernels = "liger" (or "auto" where it means liger, harness.autorecipe): Liger's Triton kernels
    patched into this model before LoRA wraps it (the adapters train through the patched modules); returns the
    kernels patched in, as the record names them. Liger also patches classes process-wide, which is why it runs
    in the trainer child only."""
    asked = setup.recipe.kernels
    if asked == "auto":
        nvidia = torch.version.hip is None
        asked, _ = auto_kernels(setup, runtime.device, compile_mode(setup, runtime), nvidia=nvidia)
    if asked == "none":
        return None
    if runtime.device != "cuda":
        raise UserError(
            f"recipe.kernels: 'liger' runs Triton kernels on a GPU (CUDA or ROCm); this run is on "
            f"{runtime.device!r}; set recipe.kernels = 'none'"
        )
    try:
        from liger_kernel.transformers.monkey_patch import (
            MODEL_TYPE_TO_APPLY_LIGER_FN,
            _apply_liger_kernel_to_instance,
        )
    except ImportError:
        raise UserError(
            "recipe.kernels: 'liger' needs the liger-kernel package, which is not installed; "
            "pip install liger-kernel, or set recipe.kernels = 'none'"
        ) from None
    model_type = getattr(model.config, "model_type", None)
    apply = MODEL_TYPE_TO_APPLY_LIGER_FN.get(model_type)
    if apply is None and setup.recipe.kernels == "auto":
        return None  # "auto" means Liger's kernels where there are some for this model
    if apply is None:
        raise UserError(
            f"recipe.kernels: liger-kernel has no kernels for model type {model_type!r} "
            f"(it has: {', '.join(sorted(MODEL_TYPE_TO_APPLY_LIGER_FN))}); set recipe.kernels = 'none'"
        )
    _apply_liger_kernel_to_instance(model=model)
    # The apply function's switches that default to on are the kernels it patched in.
    switched = [name for name, p in inspect.signature(apply).parameters.items() if p.default is True]
    return [f"liger:{name}" for name in switched]


def run_sft(
    model: Model,
    tokenizer: Tokenizer,
    examples: Sequence[Example],
    setup: SetupConfig,
    runtime: Runtime,
    observers: Sequence[StepObserver],
    checkpoints: Path | None = None,
) -> TrainOutcome:
    """Train an already LoRA-wrapped model with SFTTrainer and time it (shared with the unsloth backend);
    `checkpoints`: the run plan's folder for resumable checkpoints (None: none are saved).

    Preflight checks audit this very trainer before its first step; a failed one stops the run there.
    The dead-adapter tracker rides along every optimizer step."""
    built = time.time()
    model.config.use_cache = False
    outcome = TrainOutcome(model=model)
    outcome.trainable_params, outcome.total_params = count_params(model)
    callbacks = [_step_callback(observers, outcome)]
    tracker = checks.DeadAdapterTracker(model) if setup.checks.dead_adapters else None
    if tracker:
        callbacks.append(tracker.callback())
    # Resumable: checkpoints by recipe.checkpoint_every (a minute of training, or N steps); the newest complete
    # one is resumed from.
    checkpoints = checkpoints if checkpoint.is_resumable(setup) else None
    resume = checkpoint.latest(checkpoints)
    by_time = checkpoint.AUTO_EVERY_S if setup.recipe.checkpoint_every == "auto" else None
    saves = (
        checkpoint.SaveTracker(outcome, resume[1] if resume else None, every_s=by_time)
        if checkpoints
        else None
    )
    if saves:
        callbacks.append(saves.callback())
    trainer = build_trainer(model, tokenizer, examples, setup, runtime, callbacks, checkpoints)
    if saves:
        saves.trainer = trainer
    outcome.phases["trainer"] = time.time() - built
    if setup.checks.preflight and not preflight(trainer, model, tokenizer, examples, setup, outcome):
        return outcome
    trained_here = train_timed(trainer, model, setup, runtime, observers, outcome, resume)

    after = time.time()
    outcome.tokens = (saves.tokens() if saves else trainer.tokens_seen()) or None
    outcome.samples = (
        trainer.state.global_step * setup.recipe.batch_size * setup.recipe.grad_accum * setup.world_size
    )
    if tracker:
        outcome.checks["dead_adapters"] = tracker.verdict(model)
    # A resumed run's train_s adds the stopped attempt's; its phases are this process's wall clock only.
    outcome.train_s = trained_here + (resume[1].train_s if resume else 0.0)
    # Accelerate's mixed precision wraps the model's forward in autocast for training and leaves it so: the
    # eval's "fp32" decode then multiplied in bf16, unlike its adapter scored later (eval.adapter), which
    # decoded without autocast. Unwrapped, eval decodes as eval.precision says (harness.run.evaluate).
    outcome.model = trainer.accelerator.unwrap_model(trainer.model, keep_fp32_wrapper=False)
    outcome.model.config.use_cache = True
    outcome.phases["after_steps"] = time.time() - after
    return outcome


def preflight(
    trainer: Any,
    model: Model,
    tokenizer: Tokenizer,
    examples: Sequence[Example],
    setup: SetupConfig,
    outcome: TrainOutcome,
) -> bool:
    """The preflight checks on this very trainer, before its first step; False: one that must stop the run
    failed (`outcome.stopped_reason` says which)."""
    started = time.perf_counter()
    found = checks.run_preflight(model, tokenizer, examples, setup, trainer)
    outcome.preflight_s = round(time.perf_counter() - started, 2)
    outcome.phases["preflight"] = outcome.preflight_s
    outcome.checks.update(found)
    failed = [
        f"{name}: {v.detail}" for name, v in found.items() if v.verdict == "fail" and name in STOPPING_CHECKS
    ]
    if failed:
        outcome.stopped_reason = "preflight: " + "; ".join(failed)
    return not failed


def train_timed(
    trainer: Any,
    model: Model,
    setup: SetupConfig,
    runtime: Runtime,
    observers: Sequence[StepObserver],
    outcome: TrainOutcome,
    resume: tuple[Path, checkpoint.SavedState] | None,
) -> float:
    """The optimizer steps, timed (from a checkpoint when there is one); returns this process's seconds."""
    if runtime.device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    outcome.step_ends.append(started)
    # Compiled or graphed after preflight (its checks decode with a KV cache, which the training graph
    # never sees) and inside the timed span: a run that compiles or captures pays for it.
    mode = outcome.compile = compile_mode(setup, runtime)
    graphs = mode == "graphs"
    if graphs and runtime.device != "cuda":
        raise UserError(
            f"recipe.compile: 'graphs' needs a CUDA (or ROCm) GPU, this run is on {runtime.device!r}; "
            "set recipe.compile = 'none'"
        )
    if resume:
        checkpoint.replay(resume[1], observers, outcome)
        outcome.checks["resumed"] = CheckVerdict(
            "pass",
            f"resumed from step {resume[1].step} of {setup.recipe.steps} (checkpoint {resume[0].name}); "
            f"steps 1–{resume[1].step} are the stopped attempt's",
            {"from_step": resume[1].step},
        )
    with training_spans(model, trainer, setup, mode) as graph_stats:
        trainer.train(resume_from_checkpoint=str(resume[0]) if resume else None)
    if runtime.device == "cuda":
        torch.cuda.synchronize()
    trained_here = time.perf_counter() - started
    outcome.graphs = graph_stats
    capture_s = graph_stats.capture_s if graph_stats else 0.0
    if graph_stats:
        outcome.phases["graph_capture"] = capture_s
    outcome.phases["steps"] = trained_here - capture_s
    return trained_here


@contextlib.contextmanager
def training_spans(model: Model, trainer: Any, setup: SetupConfig, mode: str) -> Generator[GraphStats | None]:
    """What the run's steps run under: the lean module walks and LoRA forward, and the layers compiled or
    graphed as `mode` (compile_mode's) says. Yields the graphs' stats (None unless graphed). Benchmarks
    that step a trainer themselves enter it too, so they time the run's path rather than PEFT's own."""
    # A batch short of batch_size rows (an epoch's last) runs eager rather than being captured for one step.
    full_rows = setup.recipe.batch_size
    # The lean LoRA forward before the graphs: they capture the forward each layer has then. Not for Unsloth
    # (run_sft is shared), whose patched model is its own.
    lean = lean_module_walks(model, trainer.lean_steps)
    lora = lean_lora_forward(model, trainer.lean_steps and setup.backend == "hf")
    graphed = graphed_layers(model, mode == "graphs", full_rows)
    with lean, lora, compiled_layers(model, mode == "layers"), graphed as graph_stats:
        yield graph_stats


@contextlib.contextmanager
def compiled_layers(model: Model, enabled: bool) -> Generator[None]:
    """`recipe.compile = "layers"`: torch.compile every decoder layer in place for the span (identical layers
    share one graph; dynamic shapes), then the eager forward back, so eval and export decode uncompiled. On
    the H200 it stepped 0.158 against 0.199 s but the compile cost more (153 against 74.5 s to train 300)."""
    if not enabled:
        yield
        return
    layers = decoder_layers(model, "layers")
    for layer in layers:
        layer.compile(dynamic=True)
    try:
        yield
    finally:
        for layer in layers:
            layer._compiled_call_impl = None
