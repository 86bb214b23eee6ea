"""The expected time a run's first line gives before it starts (harness/suite/expected.py): projected from
an earlier run of the same setup on this host, scaled in steps and questions, and silent on a run whose
costly settings changed."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from harness.config import SetupConfig
from harness.report.settings import public_json
from harness.results import RunRecord, load_record, record_path, run_fingerprint, write_record
from harness.suite.cache import HostKey
from harness.suite.expected import earlier_runs, expected_note, projected_s
from harness.suite.placement import Spread
from harness.suite.runner import SuiteRunner, SuiteSettings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
from builders import HOST_CPU, STACK_CPU, make_record, predictions

REPO = Path(__file__).resolve().parents[2]
# A real record of Exp A made on a 2-core EPYC (bf16, eager), 300 steps, before the timeline existed.
EPYC = REPO / "reports/untimed/cpu/cpu-amd-epyc-2c/exp_a/smollm2-135m-lora-bf16-eager/seed-3407.json"


def _setup_like(record: RunRecord, **recipe: object) -> SetupConfig:
    return record.setup.model_copy(update={"recipe": record.setup.recipe.model_copy(update=recipe)})


def _host(record: RunRecord) -> HostKey:
    return HostKey(record.host, record.provenance.host.kind or record.host)


@pytest.fixture
def built(tmp_path: Path) -> tuple[RunRecord, Path]:
    rows = predictions(3407, 0)  # 24 questions
    record = make_record(host=HOST_CPU, stack=STACK_CPU, experiment="exp_a", setup_name="smollm2-135m-lora",
                         seed=3407, created="2026-12-01T10:00:00+00:00", train_s=120.0, steps=60, rows=rows)  # fmt: skip
    path = write_record(tmp_path, record)
    return load_record(path), path  # as read back: an upgraded old record says what its defaults were


def test_coarse_timings_scale_steps_and_repeat_the_rest(
    built: tuple[RunRecord, Path], tmp_path: Path
) -> None:
    record, _ = built
    # total 160 s = 120 s of 60 steps + 11.5 s eval + 28.5 s the rest: 120 steps → 240 + 11.5 + 28.5.
    assert projected_s(record, _setup_like(record, steps=120)) == pytest.approx(280.0)
    # Three seeds: the per-run part three times (the builder's record has no baseline eval time).
    assert projected_s(record, _setup_like(record, steps=120), runs=3) == pytest.approx(3 * 280.0)


def test_a_real_record_of_this_host_tells_a_shorter_run_before_it_starts(tmp_path: Path) -> None:
    record = load_record(EPYC)
    folder = tmp_path / "published"
    target = folder / EPYC.relative_to(REPO / "reports/untimed")
    target.parent.mkdir(parents=True)
    shutil.copy(EPYC, target)
    whole = projected_s(record, _setup_like(record, seed=42))
    assert whole == pytest.approx(record.timings.total_s, rel=1e-6)  # same steps, same questions: as measured
    short = projected_s(record, _setup_like(record, seed=42, steps=30))
    per_step = record.timings.train_s / record.train.steps_done
    assert short == pytest.approx(whole - 270 * per_step, rel=1e-6)
    note = expected_note(
        [folder], _setup_like(record, seed=42, steps=30), record.stack, _host(record), more_runs=2
    )
    assert note.startswith("expected ~") and "with the 2 seed(s) after it" in note and "300 steps" in note


def test_a_run_with_other_costly_settings_is_not_told_a_time(
    built: tuple[RunRecord, Path], tmp_path: Path
) -> None:
    record, _ = built
    host = _host(record)
    assert earlier_runs([tmp_path], _setup_like(record, steps=10), record.stack, host)
    for changed in (_setup_like(record, batch_size=16), _setup_like(record, gradient_checkpointing=True)):
        assert earlier_runs([tmp_path], changed, record.stack, host) == []
        assert "no earlier run of this setup on this host" in expected_note(
            [tmp_path], changed, record.stack, host
        )
    assert earlier_runs([tmp_path], _setup_like(record), "rocm7.2-hf5.5", host) == []  # another stack
    assert earlier_runs([tmp_path], _setup_like(record), record.stack, HostKey("other-host", host.kind)) == []


def test_a_published_record_of_local_data_tells_the_time_despite_its_cut_path(
    built: tuple[RunRecord, Path], tmp_path: Path
) -> None:
    """`lorabench publish` cuts a data path to `…/<name>`, which names no file to hash: the record's own
    fingerprint, rebuilt with this run's data, says whether it read the same data. Before, no published
    record of a local data file counted, so the suite's seeds never shared a GPU on a fresh host."""
    record, _ = built
    data = tmp_path / "data" / "rows.jsonl"
    data.parent.mkdir()
    data.write_text('{"question": "q", "context": "c", "answer": "a"}\n')
    other = data.with_name("other.jsonl")
    other.write_text('{"question": "q2", "context": "c", "answer": "a"}\n')

    def on(source: Path, **recipe: object) -> SetupConfig:
        setup = _setup_like(record, **recipe)
        return setup.model_copy(update={"data": setup.data.model_copy(update={"source": str(source)})})

    host = HostKey(record.host, "cpu-test-kind")
    made = on(data)
    provenance = record.provenance.model_copy(
        update={"host": record.provenance.host.model_copy(update={"kind": host.kind})}
    )
    fingerprint = run_fingerprint(made, record.stack, host.kind)
    published = record.model_copy(
        update={"setup": made, "fingerprint": fingerprint, "provenance": provenance}
    )
    folder = tmp_path / "published"
    path = record_path(folder, published)
    path.parent.mkdir(parents=True)
    path.write_text(public_json(published.model_dump_json(indent=2)))
    assert load_record(path).setup.data.source == "…/rows.jsonl"  # as publish leaves it
    assert [p for _, p in earlier_runs([folder], on(data, seed=42), record.stack, host)] == [path]
    assert earlier_runs([folder], on(other, seed=42), record.stack, host) == []
    assert earlier_runs([folder], on(data, batch_size=16), record.stack, host) == []


def test_a_record_holding_a_default_since_changed_counts_when_its_fingerprint_says_same_setup(
    shared_sample: Path,
) -> None:
    """The published H200 records of Exp A hold `recipe.kernels = "none"`, the default until 2026-12-04; "auto"
    means none there (graphed layers), so their fingerprints are this setup's. Field by field they differed,
    and a fresh H200's first suite knew no earlier run: its three seeds ran one at a time (101.8 s)."""
    from harness.config import load_setup

    published = REPO / "reports/results"
    setup = load_setup(REPO / "benchmarks/setups/exp_a.toml", [f"data.source={shared_sample}"])
    assert setup.recipe.kernels == "auto"
    found = earlier_runs([published], setup, "h200-image", HostKey("nvidia-h200", "nvidia-h200"))
    assert sorted(record.seed for record, _ in found) == [42, 1234, 3407]
    assert all(record.setup.recipe.kernels == "none" for record, _ in found)
    # A change the fingerprint sees still rules them out.
    bigger = load_setup(
        REPO / "benchmarks/setups/exp_a.toml", [f"data.source={shared_sample}", "recipe.batch_size=16"]
    )
    assert earlier_runs([published], bigger, "h200-image", HostKey("nvidia-h200", "nvidia-h200")) == []


@pytest.mark.parametrize(
    ("workers", "after"),
    [(1, {3407: 2, 42: 1, 1234: 0}), (3, {3407: 0, 42: 0, 1234: 0}), (2, {3407: 1, 42: 1, 1234: 0})],
)
def test_the_seeds_after_a_run_are_the_rounds_its_workers_have_left(
    tmp_path: Path, workers: int, after: dict[int, int]
) -> None:
    """One process runs the seeds one after another; xdist's workers take them `workers` at a time, so a
    seed run beside the others has none after it (the suite's line once projected 1:57 for a 53 s suite)."""
    runner = SuiteRunner(SuiteSettings(stack="s", seeds=(3407, 42, 1234), results_dir=tmp_path))
    runner.__dict__["spread"] = Spread(0, workers, ("0",), "CUDA_VISIBLE_DEVICES")
    for seed, expected in after.items():
        setup = SetupConfig(name="t", experiment="exp_t", model={"source": "m"}, recipe={"seed": seed})
        assert runner._seeds_after(setup) == expected


def test_the_seconds_before_a_run_started_are_not_the_runs() -> None:
    """A suite worker's first run counts pytest's start and its wait for the device in `startup`: a later
    run of the setup is told the run's own time, however long the first waited."""
    published = REPO / "reports/results/h200-image/nvidia-h200/exp_a/smollm2-135m-lora/seed-3407.json"
    record = load_record(published)
    assert record.timings.phases and "startup" in record.timings.phases
    waited = record.model_copy(
        update={
            "timings": record.timings.model_copy(
                update={"phases": {**record.timings.phases, "startup": 30.0}}
            )
        }
    )
    setup = _setup_like(record, seed=42)
    assert projected_s(waited, setup) == pytest.approx(projected_s(record, setup))
    own = sum(s for name, s in record.timings.phases.items() if name != "startup")
    assert projected_s(record, setup) == pytest.approx(own)
