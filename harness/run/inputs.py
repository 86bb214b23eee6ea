"""Everything about a run that can be checked before any model loads, checked there.

A mistake found after the model has loaded (and the baseline was scored, and 300 steps trained) costs
minutes to hours; found here it costs a second. `check_inputs` runs in the parent before the run
starts (no record: nothing started), `check_model_inputs` in the trainer once the model's files are
at hand and before any weight loads (its config, its module tree built on the meta device, its
tokenizer); the trainer's refusals are `InputRefused`, answered like the parent's (exit 2, no record).
Validation of the setup's own fields is `harness.config`'s.

Not covered: a hub dataset's rows are checked by the trainer when it loads them (the same checks, in
the task's `load_split`), not here, so that the parent never downloads.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness import settings
from harness.atomic import check_writable_dir
from harness.config import SetupConfig
from harness.errors import InputRefused, UserError
from harness.locks import lock_dir
from harness.models import cache_dir, check_model_source
from harness.run.adapter import eval_adapter_source
from harness.tasks.registry import Example, Split, task_module
from harness.tasks.verdict.about import DEFAULT_SOURCE as VERDICT_CORPUS

MIB = 2**20
# A run writes its adapter (SmolLM2, rank 16: about 20 MB), predictions and record; larger models more.
MIN_FREE_ENV = settings.MIN_FREE.name
# No tokenizer lorabench runs has a token longer than this many characters (SmolLM2's longest: 81), so
# a row of more characters than max_length × this is certainly longer than max_length tokens.
MAX_CHARS_PER_TOKEN = 128


def check_inputs(setup: SetupConfig, results_dir: Path, min_free_bytes: int | None) -> None:
    """Raise UserError naming the field, the value and the fix for the first input that cannot work."""
    check_results_dir(results_dir, min_free_bytes)
    check_writable_dir(
        cache_dir(), "$LORABENCH_CACHE", "set LORABENCH_CACHE to a folder you may write, or unset it"
    )
    check_lock_dir(lock_dir())
    check_gpu_devices(setup)
    check_host_can_run(setup)
    check_model_source(setup.model)
    task = task_module(setup.task)
    task.check_source(setup.data)
    eval_adapter_source(setup)  # a wrong eval.adapter fails here, not after the model has loaded
    if is_local_file(setup.data.source):
        # The whole split, as the trainer will make it: every line decodes, every row has its fields,
        # no test question is also a training row.
        split = task.load_split(setup.data)
        check_row_sizes(split, setup)
        check_train_rows(split, setup)


MIN_TRAIN_ROWS = 2


def check_train_rows(split: Split, setup: SetupConfig) -> None:
    """A run on one training row (or none) trains nothing worth a record: refused, not run (issue 39)."""
    if len(split.train) < MIN_TRAIN_ROWS:
        raise UserError(
            f"data.source: {split.source} leaves {len(split.train)} training row(s) once data.test_size = "
            f"{setup.data.test_size} rows are held out; a run needs at least {MIN_TRAIN_ROWS}: give more rows "
            "or lower data.test_size"
        )


def check_lock_dir(folder: Path) -> None:
    """$LORABENCH_LOCK_DIR is made if missing, but only inside a folder that exists: a typo must not
    create `/nonexistent/locks` (it did before issue 39), and locks in a folder no other run uses lock nothing."""
    fix = "set LORABENCH_LOCK_DIR to a folder, or unset it"
    if settings.LOCK_DIR.get() is not None and not folder.exists() and not folder.absolute().parent.is_dir():
        raise UserError(
            f"$LORABENCH_LOCK_DIR: {folder} does not exist and neither does its parent {folder.absolute().parent}; {fix}"
        )
    check_writable_dir(folder, "$LORABENCH_LOCK_DIR", fix)


def check_gpu_devices(setup: SetupConfig) -> None:
    """A setup that needs GPUs on a host with no GPU device node at all (the parent never imports torch;
    the trainer counts the GPUs it can use, precisely, before it loads anything)."""
    wanted = setup.gpus if setup.gpus > 1 else (1 if setup.device == "cuda" else 0)
    if wanted and not has_gpu_device():
        field, value = ("gpus", setup.gpus) if setup.gpus > 1 else ("device", setup.device)
        raise UserError(
            f"{field}: {value!r} needs {wanted} GPU(s), this host has none (no /dev/nvidia* nor /dev/kfd); "
            f"run on a GPU host, or set gpus = 1 and device = 'auto'"
        )


def has_gpu_device() -> bool:
    return any(Path("/dev").glob("nvidia[0-9]*")) or Path("/dev/kfd").exists()


def check_host_can_run(setup: SetupConfig) -> None:
    """Settings that need a GPU, refused on a host without one (or a setup pinned to the CPU) before
    anything loads: each used to load the model, then fail after 6-40 s."""
    if has_gpu_device() and setup.device != "cpu":
        return
    where = (
        "device = 'cpu'" if setup.device == "cpu" else "this host has no GPU (no /dev/nvidia* nor /dev/kfd)"
    )
    needs_gpu = [
        (
            "precision",
            setup.precision,
            setup.precision == "4bit",
            "4-bit needs bitsandbytes on a GPU; set precision = 'auto'",
        ),
        (
            "backend",
            setup.backend,
            setup.backend == "unsloth",
            "Unsloth runs on a GPU only; set backend = 'hf'",
        ),
        (
            "recipe.compile",
            setup.recipe.compile,
            setup.recipe.compile == "graphs",
            "CUDA graphs need a GPU; set recipe.compile = 'none' (or 'auto')",
        ),
        (
            "recipe.optimizer",
            setup.recipe.optimizer,
            setup.recipe.optimizer == "adamw_8bit",
            "the 8-bit optimizer is bitsandbytes' GPU kernel; set recipe.optimizer = 'auto'",
        ),
    ]
    for name, value, wrong, fix in needs_gpu:
        if wrong:
            raise UserError(f"{name}: {value!r} cannot run here: {where}; {fix}, or run on a GPU host")


def is_local_file(source: str) -> bool:
    return source != VERDICT_CORPUS and Path(source).expanduser().is_file()


def check_results_dir(results_dir: Path, min_free_bytes: int | None) -> None:
    """The results folder can take a run: a folder (or creatable), writable, with room for its files."""
    label = f"results folder {results_dir}"
    existing = check_writable_dir(
        results_dir, "results folder", "give a folder you may write (--results DIR)"
    )
    stats = os.statvfs(existing)
    free = stats.f_bavail * stats.f_frsize
    if min_free_bytes is not None and free < min_free_bytes:
        raise UserError(
            f"{label} has {free / MIB:.0f} MiB free, a run needs {min_free_bytes / MIB:.0f} MiB (adapter, "
            f"predictions, record); free space or give another folder (${MIN_FREE_ENV} sets the floor)"
        )


def _row_chars(example: Example) -> int:
    return sum(len(m["content"]) for m in example.prompt_messages()) + len(example.answer)


def _is_text(example: Example) -> bool:
    """Every character is encodable: JSON's "\\ud800" decodes to a lone surrogate, which no tokenizer,
    file or terminal can take."""
    try:
        for message in example.prompt_messages():
            message["content"].encode("utf-8")
        example.answer.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_row_sizes(split: Split, setup: SetupConfig) -> None:
    """Refuse a row that cannot fit in `recipe.max_length` tokens whatever the tokenizer: trained, its
    answer would be cut off; asked, a 50 MB question tries to allocate tens of GB in the eval."""
    limit = setup.recipe.max_length * MAX_CHARS_PER_TOKEN
    for part, rows in (("test", split.test), ("train", split.train)):
        for index, example in enumerate(rows):
            if not _is_text(example):
                raise UserError(
                    f"data.source: {split.source}: {part} row {index} holds a lone UTF-16 surrogate (an escape "
                    "such as \\ud800 without its pair), which is not text; fix or remove the row"
                )
            if (chars := _row_chars(example)) > limit:
                raise UserError(
                    f"data.source: {split.source}: {part} row {index} holds {chars:,} characters, more than "
                    f"recipe.max_length = {setup.recipe.max_length} tokens can hold; remove the row or raise "
                    "recipe.max_length"
                )


def check_token_lengths(
    tokenizer: Any, train: Sequence[Example], test: Sequence[Example], max_length: int
) -> None:
    """With the tokenizer: a test prompt longer than `recipe.max_length` tokens, or a training row whose
    answer would be cut off at `max_length`, stops the run before the baseline and training."""
    from harness.tasks.encoding import render_prompt, tokenize_examples, training_text

    for index, example in enumerate(test):
        length = len(tokenizer(render_prompt(tokenizer, example), add_special_tokens=False).input_ids)
        if length > max_length:
            raise InputRefused(
                f"data.source: test question {index} is {length} tokens, over recipe.max_length = {max_length}; "
                "remove it from the data or raise recipe.max_length"
            )
    # Only rows that could be too long are tokenized: a byte-level token covers at least one byte.
    long_rows = [
        (i, ex) for i, ex in enumerate(train) if len(training_text(tokenizer, ex).encode()) > max_length
    ]
    for (index, _), tokens in zip(
        long_rows, tokenize_examples(tokenizer, [ex for _, ex in long_rows]), strict=True
    ):
        if len(tokens.input_ids) > max_length:
            raise InputRefused(
                f"data.source: training row {index} is {len(tokens.input_ids)} tokens with its answer, over "
                f"recipe.max_length = {max_length}: its answer would be cut off; remove it or raise recipe.max_length"
            )


def check_model_inputs(
    setup: SetupConfig,
    model_path: Path | str,
    gguf_file: str | None,
    train: Sequence[Example],
    test: Sequence[Example],
) -> None:
    """In the trainer, before any weight loads: what only the model's own files can tell. LoRA's
    targets matched against the module names of the model built on the meta device (by PEFT's own
    rule), its rank against the model's width, and every row against `recipe.max_length` in this
    tokenizer's tokens. Each refusal is an `InputRefused`: one line, exit 2, no record."""
    from transformers import AutoConfig, AutoTokenizer

    from harness.inspect import build_on_meta, is_wrappable, target_matcher

    from_gguf = {"gguf_file": gguf_file} if gguf_file else {}  # the GGUF's metadata, nothing dequantized
    config = AutoConfig.from_pretrained(str(model_path), **from_gguf)
    width = getattr(config, "hidden_size", None) or getattr(
        getattr(config, "text_config", None), "hidden_size", None
    )
    if isinstance(width, int) and setup.lora.rank > width:
        raise InputRefused(
            f"lora.rank: {setup.lora.rank} is above the model's hidden size ({width}, {setup.model.source}): a LoRA "
            f"update cannot have a higher rank than the layer it adapts; set lora.rank to at most {width} (e.g. 16)"
        )
    if setup.backend == "hf":  # Unsloth picks its own modules from the names it is given
        check_lora_targets(setup, build_on_meta(config), target_matcher(setup.lora.targets), is_wrappable)
    tokenizer = AutoTokenizer.from_pretrained(str(model_path), **from_gguf)
    check_token_lengths(tokenizer, train, test, setup.recipe.max_length)


def check_lora_targets(setup: SetupConfig, model: Any, matches: Any, is_wrappable: Any) -> None:
    targets = setup.lora.targets
    hits = [(name, module) for name, module in model.named_modules() if name and matches(name)]
    if not hits:
        names = sorted(
            {name.rsplit(".", 1)[-1] for name, m in model.named_modules() if name and is_wrappable(m)}
        )
        example = next(
            (n for n, m in model.named_modules() if name_ends(n, "q_proj") and is_wrappable(m)), None
        )
        if isinstance(targets, str):
            hint = (
                f"a string is one regex matched against whole module paths (such as {example!r}); "
                if example
                else "a string is one regex matched against whole module paths; "
            )
            fix = f"for module names write a list, e.g. lora.targets = [{targets!r}]"
        else:
            hint, fix = "", "name some of them"
        raise InputRefused(
            f"lora.targets: {targets!r} matches no module of {setup.model.source}; {hint}its adaptable modules are "
            f"{', '.join(names[:12])}{' …' if len(names) > 12 else ''}; {fix}"
        )
    unwrappable = sorted({type(m).__name__ for _, m in hits if not is_wrappable(m)})
    if unwrappable:
        first = next(name for name, m in hits if not is_wrappable(m))
        raise InputRefused(
            f"lora.targets: {targets!r} matches {first} ({unwrappable[0]}), a module LoRA cannot adapt; "
            "target linear layers only (`lorabench inspect MODEL` lists them)"
        )
    if not isinstance(targets, str):
        # PEFT adapts what matches and says nothing of the rest: `[q_proj, nope_proj]` trained q_proj only.
        unmatched = [t for t in targets if not any(name_ends(name, t) for name, _ in hits)]
        if unmatched:
            raise InputRefused(
                f"lora.targets: {', '.join(map(repr, unmatched))} of {targets!r} match no module of "
                f"{setup.model.source}; remove them or fix their names (`lorabench inspect MODEL` lists them)"
            )


def name_ends(name: str, suffix: str) -> bool:
    return name == suffix or name.endswith("." + suffix)
