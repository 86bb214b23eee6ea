"""The suite through real pytest (`pytester`): real tiny runs, the run cache, and honest failures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.results import load_record


def only_record(pytester: pytest.Pytester) -> Path:
    found = sorted((pytester.path / "results").rglob("exp_t/tiny/seed-3407.json"))
    assert len(found) == 1, found
    return found[0]


def test_failing_claim_fails_cached_record_is_reused_changed_setup_reruns(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...]
) -> None:
    # 1. A real run in a child process; the tiny model cannot gain 20 points, so the claim fails.
    bench_dir(steps=2, min_gain=20.0)
    result = pytester.runpytest(*bench_args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*AssertionError: gain below 20 points: exp_t/tiny seed 3407: * → * (gain *",
        "trained exp_t/tiny seed 3407: ok → *seed-3407.json [[]yours]",
        "lorabench: 1 trained, 0 re-ran, 0 reused from cache",
    ])  # fmt: skip
    first = load_record(only_record(pytester))
    assert first.status == "ok" and first.train is not None and first.train.steps_done == 2

    # 2. A bound is a claim, not part of the setup: the record is re-asserted, nothing trains.
    bench_dir(steps=2, min_gain=-100.0)
    result = pytester.runpytest(*bench_args, "--lorabench-inline")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["reused  exp_t/tiny seed 3407: ok → *", "lorabench: 0 trained, 0 re-ran, 1 reused from cache"]
    )
    assert load_record(only_record(pytester)).run_id == first.run_id

    # 3. A changed setup has another fingerprint: it trains again, the old record is kept beside it.
    bench_dir(steps=3, min_gain=-100.0)
    result = pytester.runpytest(*bench_args, "--lorabench-inline")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "trained exp_t/tiny seed 3407: ok → * [[]yours; not standing in: this host's record: recipe.steps 2 → 3]",
        "lorabench: 1 trained, 0 re-ran, 0 reused from cache",
    ])  # fmt: skip
    second = load_record(only_record(pytester))
    assert second.run_id != first.run_id and second.train is not None and second.train.steps_done == 3
    # Same model and split: the untrained model's answers come from the cache, and no time is booked for them.
    assert (
        second.baseline is not None
        and second.baseline.cached
        and second.timings.baseline_eval_s == pytest.approx(0)
    )
    assert first.timings.baseline_eval_s and first.timings.baseline_eval_s > 0
    assert list(only_record(pytester).parent.glob("seed-3407.prev-*.json"))

    # 4. --lorabench-rerun forces a run although the record matches.
    result = pytester.runpytest(*bench_args, "--lorabench-inline", "--lorabench-rerun")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["re-ran  exp_t/tiny seed 3407: ok → *", "lorabench: 0 trained, 1 re-ran, 0 reused from cache"]
    )
    assert load_record(only_record(pytester)).run_id != second.run_id


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("refused", "network busy: 3.1 MB/s received on eth0"),
        ("failed", "data.source: file not found"),
        ("killed", "trainer process ended (signal SIGKILL) before reporting an outcome"),
        ("diverged", "loss is NaN at step 4"),
    ],
)
def test_cached_non_ok_record_fails_the_claim_with_its_status(
    pytester: pytest.Pytester,
    bench_dir: Callable[..., Path],
    bench_args: tuple[str, ...],
    write_cached: Callable[..., Path],
    status: str,
    reason: str,
) -> None:
    setup = bench_dir(min_gain=-100.0)  # a claim that would pass on any scored record
    write_cached(setup, pytester.path / "results", status=status, reason=reason)
    result = pytester.runpytest(*bench_args, "--lorabench-rerun=no")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*exp_t/tiny seed 3407: run {status}: {reason} (record: *seed-3407.json; it runs again in the next session unless --lorabench-rerun=no)",
        f"reused  exp_t/tiny seed 3407: {status} ({reason}) → *",
        "lorabench: 0 trained, 0 re-ran, 1 reused from cache",
    ])  # fmt: skip


def test_rerun_failed_reruns_only_records_that_are_not_ok(
    pytester: pytest.Pytester,
    bench_dir: Callable[..., Path],
    bench_args: tuple[str, ...],
    write_cached: Callable[..., Path],
) -> None:
    setup = bench_dir(min_gain=-100.0)
    write_cached(setup, pytester.path / "results", status="ok")
    result = pytester.runpytest(*bench_args, "--lorabench-rerun=failed")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["reused  exp_t/tiny seed 3407: ok → *"])

    write_cached(setup, pytester.path / "results", status="refused", reason="CPU load 3.2 > 0.5")
    result = pytester.runpytest(*bench_args, "--lorabench-rerun=failed", "--lorabench-inline")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["re-ran  exp_t/tiny seed 3407: ok → *"])
    assert load_record(only_record(pytester)).status == "ok"


def test_bad_data_fails_the_case_before_any_run_starts(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...]
) -> None:
    # Rows without the task's fields: refused before the model loads, in one line; nothing started, no record.
    bad_rows = pytester.path / "bad-rows.jsonl"
    bad_rows.write_text('{"question": "q"}\n' * 20)
    bench_dir(min_gain=-100.0, data=str(bad_rows))
    result = pytester.runpytest(*bench_args, "--lorabench-inline")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*exp_t/tiny seed 3407: not started: *row 1 lacks text field(s) context, answer*"]
    )
    assert not list((pytester.path / "results").rglob("seed-*.json"))


def test_failed_run_is_reported_as_failed(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...]
) -> None:
    # A model folder whose config cannot load: the run starts, fails inside, and leaves a failed record.
    broken = pytester.path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "llama", "vocab_size": "many"}')
    bench_dir(min_gain=-100.0)
    result = pytester.runpytest(*bench_args, "--lorabench-inline", f"--lorabench-model={broken}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*exp_t/tiny seed 3407: run failed: *", "trained exp_t/tiny seed 3407: failed (*"]
    )
    assert load_record(only_record(pytester)).status == "failed"


def test_an_interrupted_seed_runs_again_by_default_an_ok_one_is_reused(
    pytester: pytest.Pytester,
    bench_dir: Callable[..., Path],
    bench_args: tuple[str, ...],
    write_cached: Callable[..., Path],
) -> None:
    # What a Ctrl-C leaves: a killed record. Plain `pytest benchmarks` (so `make bench`) resumes it.
    setup = bench_dir(min_gain=-100.0)
    write_cached(setup, pytester.path / "results", status="killed", reason="stopped from outside by SIGINT")
    result = pytester.runpytest(*bench_args, "--lorabench-inline")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["re-ran  exp_t/tiny seed 3407: ok → *", "lorabench: 0 trained, 1 re-ran, 0 reused from cache"]
    )
    # The killed record is kept beside the new one, not lost.
    assert [load_record(p).status for p in only_record(pytester).parent.glob("seed-3407.prev-*.json")] == [
        "killed"
    ]
    result = pytester.runpytest(*bench_args, "--lorabench-inline")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["reused  exp_t/tiny seed 3407: ok → *"])


TIMED_MODULE = """\
import pytest
pytestmark = [pytest.mark.cpu_ok, pytest.mark.timed]

def test_timed(lorabench_run, lorabench_seed):
    record = lorabench_run("setups/tiny.toml", lorabench_seed)
    assert record.guard["timed"] is True and "precheck" in record.guard
"""


def test_a_timed_case_runs_through_the_suite(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    # The suite took the timed lock, then run_setup took the same file again on a second descriptor:
    # the process waited on itself forever. In a subprocess with a timeout, so that hang fails the test.
    # The lock folder is this test's own (LORABENCH_LOCK_DIR; TMPDIR for the older suite runner).
    bench_dir(steps=2, min_gain=-100.0)
    pytester.makepyfile(test_timed=TIMED_MODULE)
    locks = pytester.path / "locks"
    locks.mkdir()
    monkeypatch.setenv("LORABENCH_LOCK_DIR", str(locks))
    monkeypatch.setenv("TMPDIR", str(locks))
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    # --lorabench-allow-noisy: this shared machine is seldom quiet; the run is then recorded, marked untimed.
    result = pytester.runpytest_subprocess(
        *bench_args, "--lorabench-allow-noisy", "-k", "test_timed", timeout=480
    )
    result.assert_outcomes(passed=1)
    record = load_record(only_record(pytester))
    assert record.guard["timed"] is True and record.status == "ok"


RESCORE_MODULE = """\
import pytest
pytestmark = pytest.mark.cpu_ok
def test_adapter_scored_again(lorabench_run, lorabench_record_file, lorabench_seed):
    trained = lorabench_run("setups/tiny.toml", lorabench_seed)
    again = lorabench_run("setups/tiny.toml", lorabench_seed,
                          {"eval.adapter": str(lorabench_record_file(trained)), "name": "tiny-scored-again"})
    assert again.train is None and again.model.adapter["trained_precision"] == "fp32"
    assert again.trained.model_copy(update={"eval_s": 0}) == trained.trained.model_copy(update={"eval_s": 0})
"""


def test_a_setup_scores_another_runs_adapter_through_the_suite(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...]
) -> None:
    # eval.adapter set from the record the suite just made (lorabench_record_file): nothing trains the
    # second time, and the same adapter on the same base answers alike.
    bench_dir(steps=2, min_gain=-100.0)
    pytester.makepyfile(test_claims=RESCORE_MODULE)
    result = pytester.runpytest(*bench_args, "--lorabench-inline")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["lorabench: 2 trained, 0 re-ran, 0 reused from cache"])
