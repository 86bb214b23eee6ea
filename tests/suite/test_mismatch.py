"""Why a record does not stand in: the fingerprint's inputs diffed, field by field (no training here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.config import load_setup
from harness.results import RunRecord, run_fingerprint, setup_digest
from harness.suite.mismatch import fingerprint_changes, setup_changes

KIND = "cpu-x86-64-2c-avx512bf16"


def record_of(*overrides: str, kind: str | None = KIND, stack: str = "cpu") -> RunRecord:
    setup = load_setup(None, ["data.source=some/hub-id", *overrides])
    return RunRecord(
        run_id="r", status="ok", created="2026-01-01T00:00:00+00:00", experiment=setup.experiment,
        setup_name=setup.name, seed=setup.recipe.seed, stack=stack, host="h",
        fingerprint=run_fingerprint(setup, stack, kind or "?"), setup=setup.model_dump(mode="json"),
        provenance={"host": {"id": "h", **({"kind": kind} if kind else {})}},
    )  # fmt: skip


def test_the_changed_fields_are_named_with_both_values() -> None:
    now = load_setup(None, ["data.source=some/hub-id", "recipe.steps=20", "lora.rank=8"])
    assert setup_changes(record_of(), now) == ["lora.rank 16 → 8", "recipe.steps 300 → 20"]
    assert fingerprint_changes(record_of(), now, "cpu", KIND) == "lora.rank 16 → 8, recipe.steps 300 → 20"
    # A field at its default on one side only is named with the default's value; when progress is saved
    # is not a change.
    assert setup_changes(
        record_of("recipe.warmup_steps=0"), load_setup(None, ["data.source=some/hub-id"])
    ) == ["recipe.warmup_steps 0 → 10"]
    saving = load_setup(None, ["data.source=some/hub-id", "recipe.checkpoint_every=5"])
    assert setup_changes(record_of(), saving) == []
    assert run_fingerprint(saving, "cpu", KIND) == record_of().fingerprint


def test_host_kind_stack_and_old_records_are_named() -> None:
    same = load_setup(None, ["data.source=some/hub-id"])
    assert fingerprint_changes(record_of(), same, "cpu", "cpu-x86-64-2c-amx") == (
        f"host kind {KIND}, this host is cpu-x86-64-2c-amx"
    )
    assert fingerprint_changes(record_of(stack="rocm"), same, "cpu", KIND) == "stack rocm → cpu"
    old = record_of("recipe.steps=20", kind=None)
    assert fingerprint_changes(old, same, "cpu", KIND) == (
        "made before fingerprint version 3 (no host kind recorded), recipe.steps 20 → 300"
    )
    # Nothing differs that the record shows: said so, not left blank.
    assert "fingerprint version differs" in fingerprint_changes(record_of(), same, "cpu", KIND)


def test_a_record_from_before_auto_compiled_on_a_cpu_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A published record of Exp A made while "auto" was eager on a bf16 CPU (before 2026-12-04), its data path
    cut by `lorabench publish`, against the same setup now: named by that meaning, not by the cut path."""
    monkeypatch.setenv("CXX", sys.executable)  # a compiler is there
    data = tmp_path / "rows.jsonl"
    data.write_text(
        '{"question": "q", "context": "CREATE TABLE t (a VARCHAR)", "answer": "SELECT a FROM t"}\n'
    )
    now = load_setup(None, [f"data.source={data}", "recipe.compile=auto"])
    published = now.model_copy(update={"data": now.data.model_copy(update={"source": "…/rows.jsonl"})})
    kind = "cpu-x86-64-2c-amx"
    record = record_of().model_copy(
        update={
            "setup": published,
            "fingerprint": setup_digest(now, "cpu", kind),  # as run_fingerprint made it then
            "provenance": record_of(kind=kind).provenance,
        }
    )
    assert (
        fingerprint_changes(record, now, "cpu", kind) == "recipe.compile auto=layers now (not when recorded)"
    )
    monkeypatch.setenv("CXX", "no-such-compiler-here")  # eager again: the record stands in
    assert run_fingerprint(now, "cpu", kind) == record.fingerprint
