"""Helpers for the suite's tests: a tiny benchmark folder inside `pytester`, and records written by hand.

The tiny setup trains the seeded tiny Llama for 2 steps and scores 4 questions, so a real run takes
seconds; hand-written records (with the real fingerprint) stand in where a test is about the cache.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.results import Metrics, RunRecord, run_fingerprint, write_record
from harness.suite.setups import load_bench_setup

TINY_SETUP = """\
name = "tiny"
experiment = "exp_t"
precision = "fp32"
device = "cpu"

[model]
source = {model}

[data]
source = {data}
test_size = 8
train_size = 40

[recipe]
steps = {steps}
batch_size = 2
warmup_steps = 0

[eval]
limit = 4
batch_size = 4
max_new_tokens = 8

[checks.smoke]
enabled = false   # a random tiny model starts near ln(vocab) ≈ 10.8, outside the smoke band on purpose

[suite]
markers = ["cpu_ok"]

[claims.gain]
kind = "gain"
min_gain = {min_gain}
"""

# The suite's own generic module, as benchmarks/ has it: one case per claim of the setups/ beside it.
CLAIM_MODULE = (Path(__file__).resolve().parents[2] / "benchmarks" / "test_setups.py").read_text(
    encoding="utf-8"
)

STACK = "teststack"
BASE_ARGS = (
    "--lorabench-seeds=3407",
    f"--lorabench-stack={STACK}",
    "--lorabench-results=results",
    "-p",
    "no:cacheprovider",
)


@pytest.fixture(scope="session")
def bench_args() -> tuple[str, ...]:
    """Arguments every suite run in these tests gets: one seed, a test stack, a results folder in the tmp dir."""
    return BASE_ARGS


@pytest.fixture(scope="session")
def _trainer_imported() -> None:
    # In-process pytester runs drop modules first imported inside them; `datasets` then registers its
    # pyarrow extension types a second time on the next inline run and fails. Importing the trainer's
    # stack here, once, keeps it loaded across runs. trl's config module too: `trl.SFTConfig`, cached on
    # the kept `trl`, would otherwise be another class than the re-imported module's, and a checkpoint
    # (which pickles the trainer's arguments) fails to save.
    for name in ("datasets", "peft", "trl", "trl.trainer.sft_config", "trl.trainer.sft_trainer"):
        importlib.import_module(name)


@pytest.fixture
def bench_dir(
    pytester: pytest.Pytester, tiny_model_dir: Path, sql_rows_file: Path, monkeypatch: pytest.MonkeyPatch,
    _trainer_imported: None,
) -> Callable[..., Path]:  # fmt: skip
    """`bench_dir(steps=2, min_gain=20.0, data=None)` writes conftest, setups/tiny.toml and the suite's
    generic module (benchmarks/test_setups.py) as test_claims.py."""
    for name in ("LORABENCH_DATA", "LORABENCH_STACK", "PYTEST_XDIST_WORKER"):
        monkeypatch.delenv(name, raising=False)
    # A cache of the test's own: the baseline cache is keyed by the model's content, so another test's run of
    # the same tiny model (CI shares one LORABENCH_CACHE) would otherwise answer this test's first baseline.
    monkeypatch.setenv("LORABENCH_CACHE", str(pytester.path / "cache"))
    pytester.makeconftest('pytest_plugins = ["harness.suite.plugin"]')
    pytester.makepyfile(test_claims=CLAIM_MODULE)

    def write(steps: int = 2, min_gain: float = 20.0, data: str | None = None) -> Path:
        path = pytester.path / "setups" / "tiny.toml"
        path.parent.mkdir(exist_ok=True)
        text = TINY_SETUP.format(
            model=json.dumps(str(tiny_model_dir)), data=json.dumps(data or str(sql_rows_file)), steps=steps,
            min_gain=min_gain,
        )  # fmt: skip
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="session")
def host_id() -> str:
    from harness.provenance import collect_host

    return str(collect_host()["id"])


@pytest.fixture(scope="session")
def host_kind() -> str:
    from harness.provenance import collect_host

    return str(collect_host()["kind"])


@pytest.fixture
def write_cached(host_id: str, host_kind: str) -> Callable[..., Path]:
    """`write_cached(setup_file, results_dir, status=…, reason=…, baseline=…, trained=…, host=…, kind=…)`:
    a record with the fingerprint the suite will compute for seed 3407 on STACK and this host (or, given
    `host` and `kind`, one made on such a host: a record that may stand in, or may not)."""

    def write(
        setup_file: Path, results_dir: Path, *, status: str = "ok", reason: str | None = None,
        baseline: float = 10.0, trained: float = 40.0, seed: int = 3407, host: str | None = None,
        kind: str | None = None,
    ) -> Path:  # fmt: skip
        setup = load_bench_setup(setup_file).resolve(seed)
        scored = status == "ok"
        made_on, made_kind = host or host_id, kind or host_kind
        record = RunRecord(
            run_id=f"hand-written-{status}", status=status, reason=reason, created="2026-01-01T00:00:00+00:00",
            experiment=setup.experiment, setup_name=setup.name, seed=seed, stack=STACK, host=made_on,
            fingerprint=run_fingerprint(setup, STACK, made_kind),
            setup=setup.model_dump(mode="json"), provenance={"host": {"id": made_on, "kind": made_kind}},
            baseline=Metrics(exact_match=baseline, well_formed=baseline, n=4) if scored else None,
            trained=Metrics(exact_match=trained, well_formed=trained, n=4) if scored else None,
        )  # fmt: skip
        return write_record(results_dir, record)

    return write
