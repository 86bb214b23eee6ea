"""A trained LoRA adapter on disk: saved by the trainer child, kept beside its record by the parent,
found again by `lorabench export` and by `eval.adapter` (scoring an adapter on another base).

On disk: PEFT's adapter files plus `lorabench.json` (the base model's folder, the precision it trained
in, the setup), so an adapter can be rebuilt into base + adapter without its record.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import atomic
from harness.config import SetupConfig
from harness.errors import UserError

ADAPTER_INFO = "lorabench.json"


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
        model.save_pretrained(str(tmp))
        info = {"base_model": str(base_path), "precision": precision, "setup": setup.model_dump(mode="json")}
        (tmp / ADAPTER_INFO).write_text(json.dumps(info, indent=1), encoding="utf-8")


def adapter_beside(record_file: Path) -> Path:
    """`seed-<n>.adapter/` beside `seed-<n>.json`: where the parent keeps a run's adapter."""
    return record_file.with_name(record_file.stem + ".adapter")


def keep_adapter(adapter: Path, record_file: Path) -> None:
    """The trained adapter beside its record. One already there belongs to the previous record and is
    kept under a `prev-` name."""
    if not adapter.is_dir():
        return
    target = adapter_beside(record_file)
    if target.exists():
        os.replace(target, target.with_name(f"{target.name}.prev-{int(target.stat().st_mtime)}"))
    shutil.move(str(adapter), target)


def find_adapter(run: Path, label: str = "RUN") -> Path:
    """RUN is an adapter folder, or a record `seed-N.json` with `seed-N.adapter/` beside it. `label`
    names the argument or setup field in errors."""
    if (run / "adapter_config.json").is_file():
        return run
    if run.is_dir() and (run / "adapter" / "adapter_config.json").is_file():
        return run / "adapter"
    if run.suffix == ".json" and run.is_file():
        beside = adapter_beside(run)
        if (beside / "adapter_config.json").is_file():
            return beside
        raise UserError(
            f"{label} {run}: no adapter folder {beside.name}/ beside the record; pass the adapter folder itself"
        )
    raise UserError(f"{label} {run}: not an adapter folder (no adapter_config.json) nor a run record seed-N.json")


def read_adapter(adapter_dir: Path, label: str = "RUN") -> AdapterSource:
    info_file = adapter_dir / ADAPTER_INFO
    if not info_file.is_file():
        raise UserError(
            f"{label} {adapter_dir}: no {ADAPTER_INFO} (base model, precision, setup); was it saved by a lorabench run?"
        )
    info = json.loads(info_file.read_text(encoding="utf-8"))
    return AdapterSource(
        adapter_dir, info["base_model"], info["precision"], SetupConfig.model_validate(info["setup"])
    )


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
