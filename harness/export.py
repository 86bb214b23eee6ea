"""Merge a run's LoRA adapter into its base model and check the merge changed nothing.

The base loads in the precision the adapter trained in (a 4-bit run merges into a bf16 base: 4-bit
weights would round the adapter away); base + adapter answers the test split, the merged model is saved,
read back, and answers again; every differing answer is named. GGUF conversion runs llama.cpp's
`convert_hf_to_gguf.py` when found (`$LORABENCH_GGUF_CONVERTER`, or on PATH); lorabench ships none.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import atomic, settings
from harness.errors import UserError
from harness.json_types import JsonObject
from harness.run.adapter import find_adapter, read_adapter
from harness.tasks.registry import Example, task_module

if TYPE_CHECKING:
    from harness.config import SetupConfig

GGUF_OUTTYPES = {"fp32": "f32", "fp16": "f16", "bf16": "bf16"}
CONVERTER_NAMES = ("convert_hf_to_gguf.py", "convert_hf_to_gguf", "convert-hf-to-gguf.py")


@dataclass(frozen=True)
class Mismatch:
    index: int
    question: str  # the prompt's last message (the question, with its context)
    adapter_answer: str
    merged_answer: str


@dataclass(frozen=True)
class ExportResult:
    out_dir: Path
    adapter_dir: Path
    base_model: str
    precision: str
    n_compared: int
    mismatches: tuple[Mismatch, ...]
    gguf_file: Path | None
    gguf_note: str
    eval_s: dict[str, float] = field(default_factory=dict)

    @property
    def is_identical(self) -> bool:
        return not self.mismatches

    def to_dict(self) -> JsonObject:
        data = asdict(self)
        data.update(
            out_dir=str(self.out_dir),
            adapter_dir=str(self.adapter_dir),
            gguf_file=str(self.gguf_file) if self.gguf_file else None,
            is_identical=self.is_identical,
        )
        return data


def find_gguf_converter() -> Path | None:
    path = settings.GGUF_CONVERTER.get()
    if path:
        if not path.is_file():
            raise UserError(
                f"$LORABENCH_GGUF_CONVERTER: {path} does not exist; point it at llama.cpp's convert_hf_to_gguf.py"
            )
        return path
    for name in CONVERTER_NAMES:
        found = shutil.which(name)
        if found:
            return Path(found)
    return None


def convert_to_gguf(merged_dir: Path, precision: str) -> tuple[Path | None, str]:
    converter = find_gguf_converter()
    if converter is None:
        return None, (
            "GGUF: not converted — no converter installed. Get llama.cpp's convert_hf_to_gguf.py and set "
            "LORABENCH_GGUF_CONVERTER to it (or put it on PATH), then export again."
        )
    target = merged_dir / "model.gguf"
    command = [sys.executable, str(converter)] if converter.suffix == ".py" else [str(converter)]
    command += [str(merged_dir), "--outfile", str(target), "--outtype", GGUF_OUTTYPES.get(precision, "bf16")]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not target.is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return None, f"GGUF: {converter} failed (exit {done.returncode}): {' | '.join(tail)}"
    return target, f"GGUF: {target} ({GGUF_OUTTYPES.get(precision, 'bf16')}, by {converter})"


def _claim_out_dir(out_dir: Path) -> None:
    """Refuse a folder that holds anything (an export never overwrites); remove an empty one so the
    finished export can be renamed into its place."""
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise UserError(
            f"--out {out_dir}: exists and is not an empty folder; choose a new folder (an export never overwrites)"
        )
    if out_dir.is_dir():
        out_dir.rmdir()  # empty: the finished export is renamed into its place


def _load_tokenizer(base_model: str) -> Any:
    """The base model's tokenizer, padding with end-of-sequence where it has no pad token."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _mismatches(
    test: Sequence[Example], adapter_answers: list[str], merged_answers: list[str]
) -> tuple[Mismatch, ...]:
    """Every question the merged model answers differently from base + adapter."""
    return tuple(
        Mismatch(i, ex.prompt_messages()[-1]["content"], a, m)
        for i, (ex, a, m) in enumerate(zip(test, adapter_answers, merged_answers, strict=True))
        if a != m
    )


def _test_examples(setup: SetupConfig, limit: int | None) -> Sequence[Example]:
    """The test questions both models answer: the setup's test split, cut to `limit`, else to the
    setup's own eval limit."""
    test = task_module(setup.task).load_split(setup.data).test
    return test[: limit or setup.eval.limit or len(test)]


def _timed_answers(
    model: Any, tokenizer: Any, test: Sequence[Example], setup: SetupConfig
) -> tuple[list[str], float]:
    """The model's answers (never merged on the fly: the comparison is what decides) and the seconds
    they took, rounded for the report."""
    from harness.run.evaluate import answer_questions

    started = time.perf_counter()
    answers = answer_questions(model, tokenizer, test, setup, merge=False)
    return answers, round(time.perf_counter() - started, 2)


def export_adapter(
    run: Path, out_dir: Path, *, limit: int | None = None, device: str = "cpu", gguf: bool = True
) -> ExportResult:
    source = read_adapter(find_adapter(run))
    if source.setup.model.random_weights:
        raise UserError(
            f"RUN {run}: its base model's weights were drawn at random from the run's seed "
            f"(model.random_weights, {source.setup.model.source!r}) and never saved: there is no base to merge "
            "into; export a run of a pretrained model"
        )
    _claim_out_dir(out_dir)
    # Imported once the arguments are known good: a wrong path is said in 0.67 s, not after torch's and peft's
    # imports (5.36 s; medians of 5, farm-bench, a 2-core EPYC).
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from harness.runtime import resolve_runtime

    precision = source.base_precision
    runtime = resolve_runtime(device, precision)
    setup = source.setup
    test = _test_examples(setup, limit)

    tokenizer = _load_tokenizer(source.base_model)
    base = AutoModelForCausalLM.from_pretrained(source.base_model, dtype=runtime.dtype).to(runtime.device)
    model = PeftModel.from_pretrained(base, str(source.adapter_dir))
    adapter_answers, adapter_s = _timed_answers(model, tokenizer, test, setup)
    seconds = {"adapter_eval_s": adapter_s}

    merged = model.merge_and_unload()
    with atomic.building_dir(out_dir) as tmp:
        merged.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        del model, merged, base
        # Read back from disk: the check covers what will be served, not the object in memory.
        reloaded = AutoModelForCausalLM.from_pretrained(str(tmp), dtype=runtime.dtype).to(runtime.device)
        merged_answers, seconds["merged_eval_s"] = _timed_answers(reloaded, tokenizer, test, setup)
        del reloaded
    if runtime.device == "cuda":
        torch.cuda.empty_cache()

    mismatches = _mismatches(test, adapter_answers, merged_answers)
    gguf_file, note = (
        convert_to_gguf(out_dir, precision) if gguf else (None, "GGUF: not requested (--no-gguf)")
    )
    result = ExportResult(
        out_dir,
        source.adapter_dir,
        source.base_model,
        precision,
        len(test),
        mismatches,
        gguf_file,
        note,
        seconds,
    )
    atomic.write_json(out_dir / "export.json", result.to_dict())
    return result
