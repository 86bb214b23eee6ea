"""Fixtures for the checks: a few SQL examples, the tiny model loaded fresh per test, a CPU runtime."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.config import RecipeConfig, SetupConfig
from harness.runtime import Runtime
from harness.tasks.sql.data import SqlExample


def make_examples(n: int) -> list[SqlExample]:
    # Answers of different lengths, so micro-batches carry different token counts.
    return [
        SqlExample(
            question=f"What is the name when the year is {1990 + i}?",
            context=f"CREATE TABLE table_{i} (name VARCHAR, year VARCHAR)",
            answer=f'SELECT name FROM table_{i} WHERE year = "{1990 + i}"'
            + " AND name IS NOT NULL" * (i % 3),
        )
        for i in range(n)
    ]


@pytest.fixture
def examples() -> list[SqlExample]:
    return make_examples(8)


@pytest.fixture
def runtime() -> Runtime:
    return Runtime("cpu", "fp32")


def small_setup(**recipe: Any) -> SetupConfig:
    base = {"batch_size": 2, "steps": 2, "warmup_steps": 0, "max_length": 512} | recipe
    return SetupConfig(device="cpu", precision="fp32", recipe=RecipeConfig(**base))


@pytest.fixture(autouse=True)
def _scratch_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The trainer's output_dir is relative to the working directory.
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _seeded_run() -> None:
    # These tests call the backend directly, without the recipe: seed as the recipe's top does
    # (harness/run/seeding.py), so each test's adapter init is the seed's, whatever ran before it.
    from harness.run.seeding import seed_run

    seed_run(3407)


def load_model(path: Path, model_class: Any = None) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = (model_class or AutoModelForCausalLM).from_pretrained(str(path), dtype="float32")
    return model, tokenizer


@pytest.fixture
def tiny(tiny_model_dir: Path) -> tuple[Any, Any]:
    return load_model(tiny_model_dir)


@pytest.fixture(scope="session")
def smollm2(smollm2_dir: Path) -> tuple[Any, Any]:
    """Loaded once: the SmolLM2 tests only read it (checks restore grads, mode and RNG)."""
    return load_model(smollm2_dir)


@pytest.fixture(scope="session")
def shared_examples(shared_sample: Path) -> list[SqlExample]:
    """A few real rows of sql-create-context, read from the shared folder (never copied into the repo)."""
    rows = [json.loads(line) for line in shared_sample.read_text(encoding="utf-8").splitlines()[:8]]
    return [SqlExample(r["question"], r["context"], r["answer"]) for r in rows]
