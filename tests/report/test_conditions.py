"""Conditions from records: runs whose spans overlap on one host ran together (the H200's three seeds at
once), a guarded run with no company ran alone, an untimed run with no company is "not known"."""

from __future__ import annotations

import pytest
from builders import HOST_AMD, HOST_CPU, STACK_CPU, STACK_ROCM, make_record

from harness.origin import PlacementFacts
from harness.report.conditions import conditions, start_time, survey
from harness.results import RunRecord


def run(
    seed: int, created: str, *, host: dict = HOST_AMD, timed: bool = False, gpus_on_machine: int | None = 1
) -> RunRecord:  # type: ignore[type-arg]
    stack = STACK_CPU if host is HOST_CPU else STACK_ROCM
    record = make_record(host={**host, "machine_gpus": gpus_on_machine} if host["gpus"] else host, stack=stack,
                         experiment="exp_a", setup_name="s", seed=seed, created=created, train_s=100.0, timed=timed)  # fmt: skip
    return record.model_copy(update={"run_id": f"{created.replace('-', '').replace(':', '')[:15]}Z-{seed}"})


def test_runs_started_together_are_seen_together() -> None:
    together = [run(s, "2026-12-01T04:48:42+00:00") for s in (3407, 42, 1234)]
    later = run(7, "2026-12-01T05:30:00+00:00")  # 140 s runs: long over by then
    found = survey([*together, later])
    assert [found[r.run_id].mark for r in together] == ["×3", "×3", "×3"]
    assert found[later.run_id].mark == "?"  # untimed and alone among the records: not known, never "alone"
    assert conditions([(r, found[r.run_id]) for r in together]).marks == "† ×3"


def test_a_guarded_run_with_no_company_is_alone_and_unmarked() -> None:
    timed = run(3407, "2026-12-01T04:48:42+00:00", timed=True)
    found = survey([timed])
    assert found[timed.run_id].mark == "" and found[timed.run_id].text == "alone (guard)"
    assert conditions([(timed, found[timed.run_id])]).marks == ""


def test_one_gpu_runs_on_a_two_gpu_host_share_the_host_not_known_which_gpu() -> None:
    pair = [run(s, "2026-11-30T03:19:39+00:00", gpus_on_machine=2) for s in (1, 2)]
    found = survey(pair)
    assert found[pair[0].run_id].mark == "×2?"


def test_other_hosts_do_not_count_as_company() -> None:
    a = run(1, "2026-12-01T04:48:42+00:00")
    b = run(2, "2026-12-01T04:48:42+00:00", host=HOST_CPU)
    assert survey([a, b])[a.run_id].mark == "?"


def test_the_run_ids_microseconds_order_runs_within_a_second() -> None:
    record = run(1, "2026-12-01T04:48:42+00:00").model_copy(
        update={"run_id": "20261201T044842.596750Z-ccb15be0-s3407-4ce7d8"}
    )
    assert start_time(record) % 1 == pytest.approx(0.59675)


def placed(record: RunRecord, devices: str, shared_by: int) -> RunRecord:
    """The record as the suite writes it on a host of several GPUs: its devices and how many shared them."""
    facts = PlacementFacts(devices=devices, shared_by=shared_by)
    return record.model_copy(update={"provenance": record.provenance.model_copy(update={"placement": facts})})


def test_placed_runs_share_only_their_own_gpu_on_a_host_of_eight() -> None:
    # Four seeds at once on an 8-GPU host: two on GPU 0, one on GPU 1, one on GPU 5.
    runs = [run(s, "2026-12-03T10:00:00+00:00", gpus_on_machine=8) for s in (1, 2, 3, 4)]
    on = [placed(runs[0], "0", 2), placed(runs[1], "0", 2), placed(runs[2], "1", 3), placed(runs[3], "5", 1)]
    found = survey(on)
    assert [found[r.run_id].mark for r in on] == ["×2", "×2", "?", "?"]
    assert found[on[0].run_id].text == "one of 2 runs at once on the same devices"
    # Unplaced records on that host say nothing of their GPU: sharing "on the host", as before.
    assert {survey(runs)[r.run_id].mark for r in runs} == {"×4?"}
