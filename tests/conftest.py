"""Shared fixtures: the real SmolLM2 (converted once per cache) and a tiny seeded model with its tokenizer."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data" / "sql-create-context"


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the runs the tests start, however the suite itself was started.

    A shell without job control starts a background command (`make test &`, a CI step run with `&`) with
    SIGINT ignored, every process below inherits that, and Python then installs no KeyboardInterrupt
    handler: the tests that stop a run the way a terminal's Ctrl-C does (tests/run/test_late_records.py,
    tests/suite/test_bench_interrupt.py) sent SIGINT into nothing and failed (a CI rehearsal started that
    way here). Those tests play a foreground run, so the suite's processes take SIGINT's default;
    lorabench itself keeps an ignored SIGINT ignored, as a background job should."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _share_the_cores(config)


def _share_the_cores(config: pytest.Config) -> None:
    """Each xdist worker, and every run it starts, computes on its share of the cores, unless the user set
    OMP_NUM_THREADS. Left alone, every worker's torch (and its trainers') starts one OpenMP thread per core,
    and their spinning threads starve each other: two 12-step SmolLM2 runs at once on the 2-core EPYC took
    a median 418 s with two threads each and 64 s with one (40-44 s alone; docs/measurements.md). Set here, in the
    controller, before xdist starts its workers, so they and their children inherit it."""
    from harness.cpuinfo import cores_each

    workers = getattr(config.option, "numprocesses", None)
    if not isinstance(workers, int) or workers < 2 or "OMP_NUM_THREADS" in os.environ:
        return
    os.environ["OMP_NUM_THREADS"] = str(cores_each(workers))


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    from harness.config import ModelConfig
    from harness.errors import UserError
    from harness.models import resolve_model

    try:
        return resolve_model(ModelConfig(source="smollm2-135m")).path
    except UserError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def tiny_model_dir(smollm2_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from harness.testing import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-llama", smollm2_dir, seed=0)


@pytest.fixture(scope="session")
def sql_rows_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small JSONL in sql-create-context format, written by the test (the shared rows stay outside)."""
    import json

    rows = []
    for i in range(60):
        table = f"table_{i % 7}"
        rows.append({
            "question": f"What is the name when the year is {1990 + i}?",
            "context": f"CREATE TABLE {table} (name VARCHAR, year VARCHAR)",
            "answer": f'SELECT name FROM {table} WHERE year = "{1990 + i}"',
        })  # fmt: skip
    path = tmp_path_factory.mktemp("data") / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="session")
def shared_sample() -> Path:
    path = SHARED_DATA / "random-sample.jsonl"
    if not path.is_file():
        pytest.skip(f"shared data not found at {path}")
    return path


@pytest.fixture(autouse=True, scope="session")
def _offline_hub() -> None:
    # Tests never reach a model hub; the real code paths must work from local files.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
