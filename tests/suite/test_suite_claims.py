"""Claims judge records and say every number when they fail; the cache only matches the same question."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.config import validate_setup
from harness.results import MemoryStats, Metrics, RunRecord, TrainStats, fingerprint, write_record
from harness.suite import claims
from harness.suite.cache import lookup, wants_rerun

GiB = 1024**3


def record(seed: int = 3407, *, base: float = 10.0, em: float = 40.0, train_s: float = 100.0,
           step_s: float | None = None, vram: int | None = None, loss: tuple[float, ...] = (2.0, 1.0), status: str = "ok") -> RunRecord:  # fmt: skip
    return RunRecord(
        run_id=f"r{seed}", status=status, created="2026-01-01T00:00:00+00:00", experiment="exp_x", setup_name="s",
        seed=seed, stack="cpu", host="h", fingerprint="f", setup={}, provenance={},
        baseline=Metrics(exact_match=base, executes=base, n=300), trained=Metrics(exact_match=em, executes=em, n=300),
        train=TrainStats(loss=list(loss), train_s=train_s, step_s=step_s),
        memory=MemoryStats(device="cuda", peak_vram_bytes=vram) if vram is not None else None,
    )  # fmt: skip


def test_gain_fails_naming_the_seed_below_the_bound() -> None:
    assert claims.assert_gain([record(1, em=40.0), record(2, em=35.0)], min_points=20) == [30.0, 25.0]
    with pytest.raises(
        AssertionError, match=r"gain below 20 points: exp_x/s seed 2: 10.0 → 25.0 \(gain \+15.0\)$"
    ):
        claims.assert_gain([record(1, em=40.0), record(2, em=25.0)], min_points=20)


def test_seed_spread_is_max_minus_min() -> None:
    story = [record(1, em=46.0), record(2, em=46.0), record(3, em=50.7)]
    assert claims.assert_seed_spread(story, max_points=7) == pytest.approx(4.7)
    with pytest.raises(
        AssertionError, match=r"seed spread 4.7 points > bound 4: exp_x/s seed 1: 46.0; .*seed 3: 50.7"
    ):
        claims.assert_seed_spread(story, max_points=4)
    with pytest.raises(AssertionError, match="at least 2 seeds"):
        claims.assert_seed_spread(story[:1], max_points=7)


def test_equivalence_within_the_margin_only() -> None:
    bf16 = [record(1, em=46.0), record(2, em=47.0)]
    assert claims.assert_equivalent(
        bf16, [record(1, em=44.0), record(2, em=45.0)], margin=3
    ) == pytest.approx(-2.0)
    with pytest.raises(AssertionError, match=r"not shown equivalent within ±3 points: mean difference -3.5"):
        claims.assert_equivalent(bf16, [record(1, em=43.0), record(2, em=43.0)], margin=3)
    # A mean inside the margin is not enough: seeds that disagree this much prove nothing (TOST).
    noisy = [record(1, em=48.5), record(2, em=44.5), record(3, em=47.0)]
    with pytest.raises(AssertionError, match=r"not shown equivalent .* mean difference \+0\.7, 90% interval \[-4\.0, \+5\.3\]"):
        claims.assert_equivalent([*bf16, record(3, em=45.0)], noisy, margin=3)


def test_speedup_time_ratio_and_memory() -> None:
    one, two = [record(train_s=163.0)], [record(train_s=100.0)]
    assert claims.assert_speedup(one, two, min_ratio=1.5) == pytest.approx(1.63)
    with pytest.raises(AssertionError, match=r"speedup 1.63× per run \(95% interval 1.63–1.63×\) does not reach 1.8×"):
        claims.assert_speedup(one, two, min_ratio=1.8)
    # Per step: the steady step time, so a short run's warm-up does not blur a throughput claim.
    short_one, short_two = [record(train_s=60.0, step_s=0.5)], [record(train_s=40.0, step_s=0.26)]
    assert claims.assert_speedup(short_one, short_two, min_ratio=1.8, per="step") == pytest.approx(1.92)
    with pytest.raises(AssertionError, match=r"per run .* does not reach 1.8×: baseline .*60 s"):
        claims.assert_speedup(short_one, short_two, min_ratio=1.8)
    with pytest.raises(AssertionError, match=r"no steady step time in the record"):
        claims.assert_speedup([record(train_s=60.0)], short_two, min_ratio=1.8, per="step")
    with pytest.raises(AssertionError, match=r"time ratio 1.63× > bound 1.5×"):
        claims.assert_time_ratio(two, one, max_ratio=1.5)
    assert claims.assert_memory([record(vram=10 * GiB)], max_bytes=24 * GiB) == 10 * GiB
    with pytest.raises(AssertionError, match=r"peak VRAM 25.00 GiB over the budget 24.00 GiB"):
        claims.assert_memory([record(vram=25 * GiB)], max_bytes=24 * GiB)
    with pytest.raises(AssertionError, match="no peak VRAM"):
        claims.assert_memory([record()], max_bytes=24 * GiB)
    bf16, q4 = [record(vram=10 * GiB)], [record(vram=7 * GiB)]
    assert claims.assert_memory_saved(bf16, q4, predicted_bytes=4 * GiB, min_share=0.5) == pytest.approx(0.75)
    with pytest.raises(AssertionError, match=r"= 0.75 of the predicted 4.00 GiB, below 0.8"):
        claims.assert_memory_saved(bf16, q4, predicted_bytes=4 * GiB, min_share=0.8)


def test_finite_catches_a_nan_loss() -> None:
    claims.assert_finite([record()])
    with pytest.raises(AssertionError, match=r"non-finite training loss at step\(s\) \[2\]"):
        claims.assert_finite([record(loss=(2.0, math.nan))])


def test_cache_matches_fingerprint_and_timing_only(tmp_path: Path) -> None:
    setup = validate_setup({"name": "s", "experiment": "exp_x", "recipe": {"seed": 42}})
    fp = fingerprint(setup.fingerprint_payload(), "cpu", "h")
    assert lookup(tmp_path, setup, "cpu", "h") is None
    untimed = record(42).model_copy(update={"fingerprint": fp})
    write_record(tmp_path, untimed)
    assert lookup(tmp_path, setup, "cpu", "h") == untimed
    assert lookup(tmp_path, setup, "cpu", "other-host") is None
    assert lookup(tmp_path, setup, "rocm7.2-hf5.17", "h") is None  # another stack writes elsewhere anyway
    changed = validate_setup({"name": "s", "experiment": "exp_x", "recipe": {"seed": 42, "steps": 10}})
    assert lookup(tmp_path, changed, "cpu", "h") is None
    assert (
        lookup(tmp_path, setup, "cpu", "h", timed=True) is None
    )  # an untimed record cannot answer a timed claim
    write_record(tmp_path, untimed.model_copy(update={"guard": {"timed": True}}))
    assert lookup(tmp_path, setup, "cpu", "h", timed=True) is not None


def test_rerun_policy() -> None:
    ok, refused = record(), record(status="refused")
    assert [wants_rerun(ok, r) for r in ("no", "failed", "all")] == [False, False, True]
    assert [wants_rerun(refused, r) for r in ("no", "failed", "all")] == [False, True, True]


def test_staggered_loads_one_after_another() -> None:
    from harness.results import Timings

    staggered = record().model_copy(update={"timings": Timings(load_windows=[[0.0, 4.1], [4.1, 8.3]])})
    assert claims.assert_loads_staggered(staggered) == pytest.approx(4.1)
    together = record().model_copy(update={"timings": Timings(load_windows=[[0.0, 4.1], [0.2, 4.4]])})
    with pytest.raises(AssertionError, match=r"ranks loaded the model at the same time: \[0.00, 4.10\] s and \[0.20, 4.40\] s"):
        claims.assert_loads_staggered(together)
    with pytest.raises(AssertionError, match=r"no per-rank load windows in the record"):
        claims.assert_loads_staggered(record())
