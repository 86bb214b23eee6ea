"""One run's work inside the trainer child, top to bottom (design steps 3–9). Read it like a recipe.

Order matters: the data is split before the model loads (a bad data path fails in a second, not after
a minute of loading); the baseline is scored before LoRA wraps the model; preflight checks run before
the first optimizer step; the smoke observer rides along the first steps of the real training, so a
broken run stops there instead of after the long phase. `lorabench checks` runs this same recipe for
the smoke's steps with eval off.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Generator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType  # a task module (harness.tasks.registry)

from harness import atomic
from harness.backends.common import Model, StepObserver, Tokenizer, TrainOutcome, steady_step_seconds
from harness.backends.registry import Backend, backend_for
from harness.checks import DivergenceObserver, SmokeObserver, check_adapter_weights, check_answers
from harness.config import SetupConfig
from harness.errors import RunStopped, UserError
from harness.gpu.facts import visible_gpu_count
from harness.gpu.peak import start_training_window
from harness.json_types import JsonObject
from harness.models import gguf_read_once, model_files, resolve_model
from harness.results import CheckVerdict, DataInfo, MemoryStats, Metrics, ModelInfo, TrainStats
from harness.run.adapter import AdapterSource, eval_adapter_source, save_adapter
from harness.run.aside import Aside, scoring_aside
from harness.run.evaluate import baseline_answers, decoded_in, merges_adapter, timed_answers
from harness.run.inputs import check_model_inputs
from harness.run.mfu import model_flops_utilisation
from harness.run.outcome import Events, Outcome, recordable_losses
from harness.run.plan import RunPlan
from harness.run.progress import Progress
from harness.run.ranks import gathered, is_main_process, load_windows, rank_facts, staggered_load
from harness.run.seeding import rng_untouched, seed_run
from harness.run.timeline import add_phase, phase
from harness.runtime import Runtime, resolve_setup_runtime, runtime_of
from harness.tasks.encoding import end_of_turn
from harness.tasks.registry import Example, Split, task_module


def preload(setup: SetupConfig) -> None:
    """The backend's heavy imports (and, on a GPU, its runtime's start) before the first phase: they are
    the child's start-up cost, not the data's or the model's."""
    backend_for(setup.backend).preload(setup, resolve_setup_runtime(setup))


@dataclass(frozen=True)
class RecipeRun:
    """What every phase of one run reads: the setup as resolved on this host, and where results go."""

    setup: SetupConfig
    runtime: Runtime
    backend: Backend
    work_dir: Path
    outcome: Outcome
    events: Events
    progress: Progress
    main_process: bool
    checkpoints: Path | None = None  # where resumable checkpoints go (the plan's); None: none saved


@dataclass(frozen=True)
class Loaded:
    """The base model as step 4 loaded it: its folder, the model and its tokenizer."""

    path: Path
    model: Model
    tokenizer: Tokenizer


def run_phases(plan: RunPlan, outcome: Outcome, events: Events, progress: Progress) -> None:
    setup = plan.setup
    # The run's one seed, before anything draws from it (harness/run/seeding.py says what it decides).
    outcome.seeding = seed_run(setup.recipe.seed)
    with phase(outcome, "runtime"):
        runtime = resolve_setup_runtime(setup)
        backend = backend_for(setup.backend)
        check_gpus(setup, runtime)
    run = RecipeRun(
        setup,
        runtime,
        backend,
        plan.work_dir,
        outcome,
        events,
        progress,
        main_process=is_main_process(),
        checkpoints=plan.checkpoints,
    )
    # 3. Data: the story's split, hashed so runs compare only on equal splits. The task reads and scores it.
    progress.phase("data")
    with phase(outcome, "data"):
        task = task_module(setup.task)
        split = task.load_split(setup.data)
    test = split.test[: setup.eval.limit] if setup.eval.limit else split.test
    outcome.data = DataInfo(
        source=split.source,
        split_hash=split.hash,
        n_rows=split.n_rows,
        n_train=len(split.train),
        n_test=len(test),
    )
    # Scores are computed beside training where cores are spare (harness/run/aside.py).
    with scoring_aside() as aside:
        # 4. Model through the backend; the untrained model scored the same way as the trained one will be.
        # Neither draws from the run's seed: the adapter's init is the same draw whatever came before.
        with rng_untouched(runtime.device):
            loaded, load_window = load_model(run, split, test)
            baseline = score_baseline(run, task, loaded, split, test, aside)
        # The GPU's peak so far is load's and baseline eval's: read apart, so that training's is its own.
        if (before := start_training_window(runtime.device)) is not None:
            outcome.memory = MemoryStats(device=runtime.device, before_training_peak_vram_bytes=before)
        # 5–8. Train, or (eval.adapter) put a trained adapter onto this base and train nothing. The
        # baseline's scores land in the outcome also when training stops the run.
        source = eval_adapter_source(setup)
        with landing_baseline(run, baseline) as riders:
            scored_model = train_or_attach(run, loaded, split, load_window, source, riders)
        # 9. Evaluate the trained adapter (rank 0 alone under DDP).
        if setup.eval.enabled and run.main_process:
            base_answers = baseline.answers if baseline else None
            evaluate(
                run,
                task,
                scored_model,
                loaded.tokenizer,
                test,
                base_answers,
                aside,
                attached=source is not None,
            )


def train_or_attach(
    run: RecipeRun,
    loaded: Loaded,
    split: Split,
    load_window: tuple[float, float],
    source: AdapterSource | None,
    riders: Sequence[StepObserver],
) -> Model:
    """Steps 5–8 (`riders` ride along the steps), or the trained adapter of `source` put onto the base
    (eval.adapter)."""
    if source is None:
        return train_and_keep(run, loaded, split, load_window, riders)
    with phase(run.outcome, "attach_adapter"):
        scored_model = run.backend.attach_adapter(loaded.model, source.adapter_dir)
    run.outcome.model = run.outcome.model.model_copy(
        update={
            "adapter": {
                "path": str(source.adapter_dir),
                "base_model": source.base_model,
                "trained_precision": source.precision,
            }
        }
    )
    return scored_model


def load_model(run: RecipeRun, split: Split, test: Sequence[Example]) -> tuple[Loaded, tuple[float, float]]:
    """Step 4: the model through the backend. Ranks load one after another: several copies in host RAM
    at once overflowed it in the story. Returns the model and its load's wall-clock window."""
    setup, runtime, outcome = run.setup, run.runtime, run.outcome
    run.progress.phase(f"load {setup.model.source} ({runtime.device}, {runtime.precision})")
    started = time.perf_counter()
    staggered = staggered_load() if setup.gpus > 1 else contextlib.nullcontext()
    with phase(outcome, "load"), run.events.span("load"), staggered:
        load_started = time.time()  # wall clock, comparable across ranks; inside the lock
        # Before any weight loads (a GGUF not yet dequantized either): LoRA's targets and rank against the
        # model, every row against max_length in its tokens (a refusal ends the run as an input error: no record).
        # A GGUF read for them is read once for them and its conversion.
        files = model_files(setup.model)
        with gguf_read_once() if files[1] else contextlib.nullcontext():
            check_model_inputs(setup, *files, split.train, test)
            resolved = resolve_model(setup.model)
        model, tokenizer = run.backend.load(setup, resolved.path, runtime)
        load_window = (load_started, time.time())
    outcome.add_timings(load_s=round(time.perf_counter() - started, 2))
    named = time.time()
    outcome.model = ModelInfo(
        source=setup.model.source,
        resolved=str(resolved.path),
        weights="random" if setup.model.random_weights else "pretrained",
        precision=runtime.precision,
        device=runtime.device,
        attention=runtime.attention,
        auto_settings=runtime.reasons or None,
    )
    outcome.add_checks({"end_of_turn": end_of_turn_check(tokenizer)})
    add_phase(outcome, "end_of_turn", time.time() - named)
    return Loaded(resolved.path, model, tokenizer), load_window


@dataclass
class Baseline:
    """The untrained model's answers, and their scores (computed aside, or already done)."""

    answers: list[str]
    scores: Future[JsonObject]
    seconds: float
    cached: bool
    landed: bool = False


class BaselineLanding:
    """A step observer: the baseline's scores into the outcome at the first step after they are ready, so
    a run killed while training keeps them (the outcome is rewritten to the work folder as it changes)."""

    def __init__(self, run: RecipeRun, baseline: Baseline) -> None:
        self.run, self.baseline = run, baseline

    def on_step(self, step: int, loss: float, grad_norm: float | None = None) -> str | None:
        if not self.baseline.landed and self.baseline.scores.done():
            _land(self.run, self.baseline)
        return None


def score_baseline(
    run: RecipeRun, task: ModuleType, loaded: Loaded, split: Split, test: Sequence[Example], aside: Aside
) -> Baseline | None:
    """The untrained model's answers (cached per model + split + eval settings), handed to be scored the
    same way as the trained model's will be (`landing_baseline` puts the scores into the outcome)."""
    setup, outcome = run.setup, run.outcome
    if not (setup.eval.enabled and setup.eval.baseline and run.main_process):
        return None
    with run.events.span("baseline eval"), phase(outcome, "baseline"):
        base_answers, seconds, cached = baseline_answers(
            setup, run.runtime, loaded.path, split, test, loaded.model, loaded.tokenizer, run.progress
        )
    with phase(outcome, "baseline_score"):
        scores = aside.submit(task.score, base_answers, test)
    # Time spent in this run: none when the answers came from the cache.
    outcome.add_timings(baseline_eval_s=0.0 if cached else seconds)
    baseline = Baseline(base_answers, scores, seconds, cached)
    if scores.done():  # scored here: into the outcome at once
        _land(run, baseline)
    return baseline


@contextlib.contextmanager
def landing_baseline(run: RecipeRun, baseline: Baseline | None) -> Generator[list[StepObserver]]:
    """The baseline's scores in the outcome by the end of the block: the observers it yields land them
    at the first training step after they are ready; on the way out they are waited for (that wait is
    the baseline_score phase). When the block raises, its error is the run's: a scoring error then is not
    raised over it."""
    if baseline is None or baseline.landed:
        yield []
        return
    try:
        yield [BaselineLanding(run, baseline)]
    except BaseException:
        with contextlib.suppress(Exception):
            _land(run, baseline)
        raise
    _land(run, baseline)


def _land(run: RecipeRun, baseline: Baseline) -> None:
    if baseline.landed:
        return
    baseline.landed = True
    with phase(run.outcome, "baseline_score"):
        run.outcome.baseline = Metrics(
            **baseline.scores.result(),
            eval_s=baseline.seconds,
            cached=baseline.cached,
            decoded_in=decoded_in(run.setup, run.runtime),
        )


def train_and_keep(
    run: RecipeRun,
    loaded: Loaded,
    split: Split,
    load_window: tuple[float, float],
    riders: Sequence[StepObserver] = (),
) -> Model:
    """Steps 5–8, then the adapter saved for `lorabench export` (the parent decides whether it is kept
    beside the record)."""
    setup, runtime, outcome = run.setup, run.runtime, run.outcome
    trained = train(run, loaded.model, loaded.tokenizer, split, riders)
    if setup.world_size > 1:  # the process group exists once training has set it up
        outcome.add_timings(load_windows=load_windows(gathered(load_window)))
        outcome.ranks = rank_facts(load_window, *device_facts(runtime))
    if run.main_process:
        with phase(outcome, "save_adapter"):
            save_adapter(trained, run.work_dir / "adapter", setup, runtime.precision, loaded.path)
    return trained


def evaluate(
    run: RecipeRun,
    task: ModuleType,
    model: Model,
    tokenizer: Tokenizer,
    test: Sequence[Example],
    base_answers: list[str] | None,
    aside: Aside,
    *,
    attached: bool,
) -> None:
    """Step 9: the trained adapter's answers, scored, its predictions kept; empty answers stop the run."""
    setup, outcome = run.setup, run.outcome
    with run.events.span("eval"), phase(outcome, "eval"):
        ways: set[str] = set()
        answers, seconds = timed_answers(model, tokenizer, test, setup, run.progress, "eval", ways)
    outcome.add_timings(eval_s=seconds)
    with phase(outcome, "score"):
        # Where the baseline was scored: a task that remembers its scores does not score those answers again.
        metrics, rows = aside.submit(task.score_with_rows, test, answers, base_answers).result()
        outcome.trained = Metrics(
            **metrics,
            eval_s=seconds,
            decoded_in=decoded_in(setup, runtime_of(model)),
            merged=merges_adapter(setup, runtime_of(model)),
            decoded_by="+".join(sorted(ways)) or None,
        )
        atomic.write_lines(run.work_dir / "predictions.jsonl", rows)
        if attached:
            outcome.memory = memory_stats(run.runtime, outcome.memory)
        # Scored and kept first: the record shows the empty answers it was judged on.
        answered = check_answers(answers, base_answers) if setup.checks.divergence.enabled else None
    if answered is not None:
        outcome.add_checks({"answers": answered})
        if answered.verdict == "fail":
            raise RunStopped("diverged", f"answers: {answered.detail}")


def train(
    run: RecipeRun, model: Model, tokenizer: Tokenizer, split: Split, riders: Sequence[StepObserver] = ()
) -> Model:
    """Steps 5–8: preflight checks, training with the smoke and divergence observers riding along (and
    `riders`, which never stop it), post checks. Returns the trained model; a failed check, smoke or
    divergence stops the run (RunStopped)."""
    setup, runtime, outcome, progress, events = run.setup, run.runtime, run.outcome, run.progress, run.events
    smoke = SmokeObserver(setup.checks.smoke) if setup.checks.smoke.enabled else None
    divergence = DivergenceObserver(setup.checks.divergence) if setup.checks.divergence.enabled else None
    progress.phase("train", total=setup.recipe.steps)
    # Divergence before the smoke: a NaN step is its to name (the smoke, which never sees that step then,
    # calls a NaN `diverged` too when the divergence check is off). Progress and the step journal first:
    # they never stop a run, and the journal keeps each step's loss, so a killed or stopped trainer's
    # record keeps its progress (the diverged step included).
    observers = [o for o in (ProgressObserver(progress), events, *riders, divergence, smoke) if o]
    with events.span("train"):
        trained = run.backend.train(
            model, tokenizer, split.train, setup, runtime, observers, checkpoints=run.checkpoints
        )
    # The backend's spans (lora, trainer, preflight, graph_capture, steps), then what follows here.
    for name, seconds in trained.phases.items():
        add_phase(outcome, name, seconds)
    post = time.time()
    try:
        return _after_training(setup, runtime, trained, outcome, smoke, divergence)
    finally:
        add_phase(outcome, "post_checks", time.time() - post)


def _after_training(
    setup: SetupConfig,
    runtime: Runtime,
    trained: TrainOutcome,
    outcome: Outcome,
    smoke: SmokeObserver | None,
    divergence: DivergenceObserver | None,
) -> Model:
    """The trained run's stats, memory and post checks (step 8); a failed check stops the run."""
    if trained.preflight_s is not None:
        outcome.add_timings(preflight_s=trained.preflight_s)
    outcome.add_timings(train_s=round(trained.train_s, 2))
    outcome.train = train_stats(trained, runtime, setup)
    outcome.memory = memory_stats(runtime, outcome.memory)
    outcome.add_checks(trained.checks)
    if smoke:
        outcome.add_checks({"smoke": smoke.final_verdict()})
    if divergence:
        outcome.add_checks({"divergence": divergence.final_verdict()})
    if trained.stopped_reason:
        raise RunStopped(stop_status(trained.stopped_reason, smoke), trained.stopped_reason)
    if divergence:
        # The last step's update can break the weights after its loss was read.
        weights = check_adapter_weights(trained.model)
        outcome.add_checks({"adapter_weights": weights})
        if weights.verdict == "fail":
            raise RunStopped("diverged", f"adapter_weights: {weights.detail}")
    return trained.model


def stop_status(reason: str, smoke: SmokeObserver | None) -> str:
    """The record's status for a run an observer or a preflight check stopped."""
    if reason.startswith(DivergenceObserver.REASON_PREFIX):
        return DivergenceObserver.status
    if smoke is not None and reason.startswith("smoke:"):
        return smoke.status
    return "failed"


class ProgressObserver:
    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def on_step(self, step: int, loss: float, grad_norm: float | None = None) -> str | None:
        self.progress.advance(loss=loss)
        return None


def end_of_turn_check(tokenizer: Tokenizer) -> CheckVerdict:
    """What ends an answer in training and generation, next to what the tokenizer calls EOS."""
    eot = end_of_turn(tokenizer)
    evidence = {"eos_token": tokenizer.eos_token, "end_of_turn": eot}
    if eot == tokenizer.eos_token:
        return CheckVerdict("pass", f"answers end with EOS {eot!r}", evidence)
    return CheckVerdict(
        "pass",
        f"answers end with the chat template's {eot!r}, not the tokenizer's EOS {tokenizer.eos_token!r}",
        evidence,
    )


def train_stats(trained: TrainOutcome, runtime: Runtime, setup: SetupConfig) -> TrainStats:
    losses = recordable_losses(trained.losses)
    tail = losses[-max(1, len(losses) // 10) :] if losses else []
    seconds = trained.train_s or None
    return TrainStats(
        steps_done=len(trained.losses),
        loss=losses,
        first_loss=losses[0] if losses else None,
        final_loss=round(sum(tail) / len(tail), 5) if tail else None,
        train_s=round(trained.train_s, 2),
        step_s=steady_step_seconds(trained.step_ends),
        tokens=trained.tokens,
        tokens_per_s=round(trained.tokens / seconds, 1) if trained.tokens and seconds else None,
        samples_per_s=round(trained.samples / seconds, 3) if seconds else None,
        mfu=model_flops_utilisation(trained, runtime, setup),
        trainable_params=trained.trainable_params,
        total_params=trained.total_params,
        compile=trained.compile,
        graphs=trained.graphs.to_record() if trained.graphs else None,
        kernels=trained.kernels,
    )


def check_gpus(setup: SetupConfig, runtime: Runtime) -> None:
    available = visible_gpu_count()
    if setup.gpus > 1 and (runtime.device != "cuda" or available < setup.gpus):
        raise UserError(
            f"gpus: {setup.gpus} data-parallel processes need {setup.gpus} GPUs, this host has "
            f"{available}; lower gpus or run on a bigger host"
        )


def device_facts(runtime: Runtime) -> tuple[int | None, str]:
    """This process's peak VRAM and the device it drove ('cuda:0 NVIDIA H200'), for the per-rank facts."""
    if runtime.device != "cuda":
        return None, runtime.device
    import torch

    index = torch.cuda.current_device()
    # The PCI bus tells the physical card apart where each node sees its one GPU as cuda:0.
    bus = getattr(torch.cuda.get_device_properties(index), "pci_bus_id", None)
    where = f" (PCI bus {bus:02x})" if isinstance(bus, int) else ""
    return int(torch.cuda.max_memory_allocated()), f"cuda:{index} {torch.cuda.get_device_name(index)}{where}"


def memory_stats(runtime: Runtime, before: MemoryStats | None = None) -> MemoryStats:
    """Peak VRAM of this process's GPU since training started (`before`: what was read then); under DDP
    every rank's, gathered (memory per card)."""
    import torch

    if runtime.device != "cuda":
        return MemoryStats(device=runtime.device)
    peak = int(torch.cuda.max_memory_allocated())
    peaks = gathered(peak)
    return MemoryStats(
        device=runtime.device,
        peak_vram_bytes=peak,
        peak_vram_per_gpu_bytes=peaks if len(peaks) > 1 else None,
        before_training_peak_vram_bytes=before.before_training_peak_vram_bytes if before else None,
    )
