"""A trained LoRA adapter on disk: saved by the trainer child, kept beside its record by the parent,
found again by `lorabench export` and by `eval.adapter` (scoring an adapter on another base).

On disk: PEFT's adapter files plus `lorabench.json` (the base model's folder, the precision it trained
in, the setup), so an adapter can be rebuilt into base + adapter without its record.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import atomic
from harness.config import SetupConfig
from harness.errors import UserError, os_error_within
from harness.results import beside

ADAPTER_INFO = "lorabench.json"
# The weight files PEFT writes (safetensors by default).
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")


@dataclass(frozen=True)
class AdapterSource:
    adapter_dir: Path
    base_model: str
    precision: str  # trained in
    setup: SetupConfig

    @property
    def base_precision(self) -> str:
        """The precision to load the base in beside this adapter: a 4-bit run's compute precision, bf16
        (merging into 4-bit weights would round the adapter away)."""
        return "bf16" if self.precision == "4bit" else self.precision


def save_adapter(model: Any, target: Path, setup: SetupConfig, precision: str, base_path: Path) -> None:
    """The LoRA weights PEFT saves, plus what rebuilding base + adapter needs, written as one folder."""
    with atomic.building_dir(target) as tmp:
        try:
            model.save_pretrained(str(tmp))
        except Exception as exc:
            # Made an OSError here so the run's reason names the file and the fix like any I/O fault.
            os_error = os_error_within(exc, str(target))
            if isinstance(exc, OSError) or os_error is None:
                raise
            raise os_error from exc
        info = {"base_model": str(base_path), "precision": precision, "setup": setup.model_dump(mode="json")}
        (tmp / ADAPTER_INFO).write_text(json.dumps(info, indent=1), encoding="utf-8")


def adapter_beside(record_file: Path) -> Path:
    """`seed-<n>.adapter/` beside `seed-<n>.json` (and `seed-<n>.prev-<…>.adapter/` beside a kept
    previous record, which `write_record` moves with it): where the parent keeps a run's adapter."""
    return beside(record_file, ".adapter")


def keep_adapter(adapter: Path, record_file: Path) -> None:
    """The trained adapter beside its just-written record, by one rename (the child built it whole:
    `save_adapter`). The previous record's adapter has moved with that record to its `prev-` name."""
    if not adapter.is_dir():
        return
    target = adapter_beside(record_file)
    if target.exists():
        # Left by a run that died between its record and its adapter: not this record's, kept aside.
        os.replace(target, target.with_name(f"{target.name}.unpaired-{uuid.uuid4().hex[:8]}"))
    os.replace(adapter, target)


def find_adapter(run: Path, label: str = "RUN") -> Path:
    """RUN is an adapter folder, or a record `seed-N.json` with `seed-N.adapter/` beside it. `label`
    names the argument or setup field in errors."""
    if (run / "adapter_config.json").is_file():
        return _with_weights(run, label)
    if run.is_dir() and (run / "adapter" / "adapter_config.json").is_file():
        return _with_weights(run / "adapter", label)
    if run.suffix == ".json" and run.is_file():
        kept = adapter_beside(run)
        if (kept / "adapter_config.json").is_file():
            return _with_weights(kept, label)
        raise UserError(
            f"{label} {run}: no adapter folder {kept.name}/ beside the record; pass the adapter folder itself"
        )
    raise UserError(
        f"{label} {run}: not an adapter folder (no adapter_config.json) nor a run record seed-N.json"
    )


def _with_weights(adapter_dir: Path, label: str) -> Path:
    if not any((adapter_dir / name).is_file() for name in ADAPTER_WEIGHTS):
        raise UserError(
            f"{label} {adapter_dir}: adapter_config.json but no weights ({' or '.join(ADAPTER_WEIGHTS)}); "
            "the folder is incomplete: copy it again, or re-run the setup to train it"
        )
    return adapter_dir


def read_adapter(adapter_dir: Path, label: str = "RUN") -> AdapterSource:
    info_file = adapter_dir / ADAPTER_INFO
    if not info_file.is_file():
        raise UserError(
            f"{label} {adapter_dir}: no {ADAPTER_INFO} (base model, precision, setup); was it saved by a lorabench run?"
        )
    try:
        info = json.loads(info_file.read_text(encoding="utf-8"))
        return AdapterSource(
            adapter_dir, info["base_model"], info["precision"], SetupConfig.model_validate(info["setup"])
        )
    except (ValueError, KeyError, TypeError) as exc:  # JSON, a missing key, a setup this version refuses
        raise UserError(
            f"{label} {info_file}: unreadable ({type(exc).__name__}: {str(exc).splitlines()[0][:120]}); "
            "re-run the setup to save the adapter again"
        ) from None


def eval_adapter_source(setup: SetupConfig) -> AdapterSource | None:
    """The adapter `eval.adapter` names, checked against the setup (same model) before anything loads."""
    if setup.eval.adapter is None:
        return None
    label = "eval.adapter:"
    source = read_adapter(find_adapter(Path(setup.eval.adapter).expanduser().resolve(), label), label)
    if source.setup.model.source != setup.model.source:
        raise UserError(
            f"eval.adapter: {setup.eval.adapter!r} was trained on model {source.setup.model.source!r}, this "
            f"setup loads {setup.model.source!r}; set model.source = {source.setup.model.source!r}"
        )
    return source
