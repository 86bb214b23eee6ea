"""Claims judge records and say every number when they fail; the cache only matches the same question."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.config import validate_setup
from harness.results import MemoryStats, Metrics, RunRecord, TrainStats, run_fingerprint, write_record
from harness.suite import catalogue, claims
from harness.suite.cache import HostKey, lookup, wants_rerun
from harness.suite.cases import collect_cases

GiB = 1024**3


def record(seed: int = 3407, *, base: float = 10.0, em: float = 40.0, train_s: float = 100.0,
           step_s: float | None = None, vram: int | None = None, loss: tuple[float, ...] = (2.0, 1.0), status: str = "ok") -> RunRecord:  # fmt: skip
    return RunRecord(
        run_id=f"r{seed}", status=status, created="2026-01-01T00:00:00+00:00", experiment="exp_x", setup_name="s",
        seed=seed, stack="cpu", host="h", fingerprint="f", setup={}, provenance={},
        baseline=Metrics(exact_match=base, well_formed=base, n=300), trained=Metrics(exact_match=em, well_formed=em, n=300),
        train=TrainStats(loss=list(loss), train_s=train_s, step_s=step_s),
        memory=MemoryStats(device="cuda", peak_vram_bytes=vram) if vram is not None else None,
    )  # fmt: skip


def fails(outcome: claims.Outcome, pattern: str) -> None:
    """The outcome is a fail, and the suite's `require` raises it with every number shown."""
    assert outcome.status == "fail", outcome
    with pytest.raises(AssertionError, match=pattern) as raised:
        claims.require(outcome)
    assert not isinstance(raised.value, claims.NotEvaluable)


def not_evaluable(outcome: claims.Outcome, pattern: str) -> None:
    assert outcome.status == "not evaluable", outcome
    with pytest.raises(claims.NotEvaluable, match=pattern):
        claims.require(outcome)


def test_gain_fails_naming_the_seed_below_the_bound() -> None:
    assert claims.require(claims.check_gain([record(1, em=40.0), record(2, em=35.0)], min_points=20)) == [
        30.0,
        25.0,
    ]
    fails(claims.check_gain([record(1, em=40.0), record(2, em=25.0)], min_points=20),
          r"gain below 20 points: exp_x/s seed 1: 10.0 → 40.0 \(gain \+30.0\); exp_x/s seed 2: 10.0 → 25.0 \(gain \+15.0\)$")  # fmt: skip
    not_evaluable(claims.check_gain([record(1).model_copy(update={"baseline": None})], 20), "no baseline")
    # A record whose exact match is not a number (corrupt, or edited by hand) proves nothing: never a pass.
    nan = record(2, em=float("nan"))
    not_evaluable(claims.check_gain([record(1), nan], 20), "seed 2: its trained exact match is not a number")
    not_evaluable(claims.check_gain([record(1, base=float("nan"))], 20), r"not a number.*seed 1: nan → 40.0")
    not_evaluable(claims.check_seed_spread([record(1), nan], max_points=7), "not a number")


def test_seed_spread_is_max_minus_min() -> None:
    story = [record(1, em=46.0), record(2, em=46.0), record(3, em=50.7)]
    assert claims.require(claims.check_seed_spread(story, max_points=7)) == pytest.approx(4.7)
    fails(claims.check_seed_spread(story, max_points=4),
          r"seed spread 4.7 points > bound 4: spread 4.7 points \(46.0 / 46.0 / 50.7; seeds 1, 2, 3\)")  # fmt: skip
    not_evaluable(claims.check_seed_spread(story[:1], max_points=7), "at least 2 seeds")


def test_equivalence_within_the_margin_only() -> None:
    bf16 = [record(1, em=46.0), record(2, em=47.0)]
    assert claims.require(
        claims.check_equivalent(bf16, [record(1, em=44.0), record(2, em=45.0)], margin=3)
    ) == pytest.approx(-2.0)
    fails(claims.check_equivalent(bf16, [record(1, em=43.0), record(2, em=43.0)], margin=3),
          r"not shown equivalent within ±3 points: mean difference -3.5")  # fmt: skip
    # A mean inside the margin is not enough: seeds that disagree this much prove nothing (TOST).
    noisy = [record(1, em=48.5), record(2, em=44.5), record(3, em=47.0)]
    fails(claims.check_equivalent([*bf16, record(3, em=45.0)], noisy, margin=3),
          r"not shown equivalent .* mean difference \+0\.7 points, 90% interval \[-4\.0, \+5\.3\]")  # fmt: skip
    # One seed in common is no evidence either way: not evaluable, not a pass and not a measured failure.
    not_evaluable(claims.check_equivalent(bf16, [record(2, em=47.0), record(9, em=47.0)], margin=3),
                  "at least 2 seeds run on both sides, got 1")  # fmt: skip


def test_speedup_needs_an_interval() -> None:
    one = [record(1, train_s=163.0), record(2, train_s=165.0)]
    two = [record(1, train_s=100.0), record(2, train_s=101.0)]
    assert claims.require(claims.check_speedup(one, two, min_ratio=1.5)) == pytest.approx(1.63)
    fails(claims.check_speedup(one, two, min_ratio=1.8),
          r"speedup does not reach 1.8×: 1.63× per run, 95% interval 1.6.–1.6.× \(n = 2 / 2")  # fmt: skip
    # One run a side: a lucky run alone must not pass, and there is nothing to resample.
    not_evaluable(claims.check_speedup(one[:1], two[:1], min_ratio=1.5),
                  r"1.63× per run from n = 1 and n = 1 runs; the 95% interval .* needs at least 2 seeds a side")  # fmt: skip
    # Per step: the steady step time, so a short run's warm-up does not blur a throughput claim.
    short_one = [record(1, train_s=60.0, step_s=0.5), record(2, train_s=61.0, step_s=0.5)]
    short_two = [record(1, train_s=40.0, step_s=0.26), record(2, train_s=41.0, step_s=0.26)]
    assert claims.require(claims.check_speedup(short_one, short_two, 1.8, per="step")) == pytest.approx(1.92)
    fails(claims.check_speedup(short_one, short_two, min_ratio=1.8), r"per run, .*baseline 60; 61 s")
    not_evaluable(claims.check_speedup([record(train_s=60.0)], short_two, 1.8, per="step"),
                  r"no steady step time in the record")  # fmt: skip


def test_time_ratio_and_memory() -> None:
    one, two = [record(train_s=163.0)], [record(train_s=100.0)]
    fails(claims.check_time_ratio(two, one, max_ratio=1.5), r"time ratio 1.63× \(n = 1 / 1\) > bound 1.5×")
    assert claims.require(claims.check_memory([record(vram=10 * GiB)], max_bytes=24 * GiB)) == 10 * GiB
    fails(
        claims.check_memory([record(vram=25 * GiB)], max_bytes=24 * GiB),
        r"peak VRAM 25.00 GiB over the budget 24.00 GiB",
    )
    not_evaluable(claims.check_memory([record()], max_bytes=24 * GiB), "no peak VRAM")
    bf16, q4 = [record(vram=10 * GiB)], [record(vram=7 * GiB)]
    assert claims.require(claims.check_memory_saved(bf16, q4, 4 * GiB, min_share=0.5)) == pytest.approx(0.75)
    fails(
        claims.check_memory_saved(bf16, q4, 4 * GiB, min_share=0.8),
        r"= 0.75 of the predicted 4.00 GiB, below 0.8",
    )
    assert claims.require(
        claims.check_vram_ratio(record(vram=10 * GiB), record(vram=12 * GiB), 1.25)
    ) == pytest.approx(1.2)
    fails(claims.check_vram_ratio(record(vram=10 * GiB), record(vram=13 * GiB), 1.25), r"1.30×, bound 1.25×")


def test_the_predicted_saving_comes_from_the_record() -> None:
    from harness.results import CheckVerdict

    check = CheckVerdict(verdict="pass", evidence={"max_saving_bytes": 3 * GiB})
    assert (
        claims.predicted_4bit_saving(record().model_copy(update={"checks": {"quantizable_fraction": check}}))
        == 3 * GiB
    )
    with pytest.raises(claims.NotEvaluable, match="no quantizable_fraction check"):
        claims.predicted_4bit_saving(record())


def test_a_cost_claim_across_compile_modes_is_not_evaluable() -> None:
    # The bug of issue #27: Exp B's memory claim compared 4-bit (eager) against a graphed bf16 run, whose
    # CUDA graph pools took more memory than 4-bit saved. The same claim, like for like, is judged.
    from harness.results import CheckVerdict

    claim = BUILT_IN.find("exp_b", "memory saved as predicted")
    saving = {"quantizable_fraction": CheckVerdict(verdict="pass", evidence={"max_saving_bytes": 2 * GiB})}

    def run(compile_mode: str, vram: int, graphs: bool = False, **extra: object) -> RunRecord:
        base = record(vram=vram).model_copy(
            update={"setup": validate_setup({"recipe": {"compile": compile_mode}}), **extra}
        )
        return base.model_copy(
            update={"train": base.train.model_copy(update={"graphs": {"shapes": 2} if graphs else None})}
        )

    assert claim.bounds == {"min_saving_share": 0.5}
    q4 = [run("none", 2 * GiB)]
    graphed = [run("auto", 3 * GiB, graphs=True, checks=saving)]
    not_evaluable(
        catalogue.judge(claim, {"bf16": graphed, "4bit": q4}),
        r"bf16: recipe.compile graphs; 4bit: recipe.compile none",
    )
    eager = [run("auto", 3 * GiB, checks=saving)]  # "auto" that ran eager (a CPU, ROCm, or graphs ruled out)
    assert catalogue.judge(claim, {"bf16": eager, "4bit": q4}).status == "pass"
    # An accuracy claim over the same records is judged whatever the compile modes.
    accuracy = BUILT_IN.find("exp_b", "accuracy equivalent to bf16")
    assert catalogue.compile_mismatch(accuracy, {"bf16": graphed, "4bit": q4}) is None


def test_finite_catches_a_nan_loss() -> None:
    assert claims.check_finite([record()]).status == "pass"
    fails(claims.check_finite([record(loss=(2.0, math.nan))]), r"non-finite training loss at step\(s\) \[2\]")


def test_a_run_that_did_not_finish_fails_the_claim() -> None:
    killed = record(2, status="killed").model_copy(update={"reason": "SIGTERM"})
    assert claims.runs_not_ok([record(1)]) is None
    fails(claims.runs_not_ok([record(1), killed]), r"exp_x/s seed 2: run killed: SIGTERM")  # type: ignore[arg-type]


def test_cache_matches_fingerprint_and_timing_only(tmp_path: Path) -> None:
    setup = validate_setup({"name": "s", "experiment": "exp_x", "recipe": {"seed": 42}})
    here = HostKey("h", "cpu-x86-64-2c-amx")
    fp = run_fingerprint(setup, "cpu", here.kind)
    assert lookup(tmp_path, setup, "cpu", here) is None
    untimed = record(42).model_copy(update={"fingerprint": fp})
    write_record(tmp_path, untimed)
    assert lookup(tmp_path, setup, "cpu", here) == untimed
    assert lookup(tmp_path, setup, "cpu", HostKey("other-host", here.kind)) is None  # its own folder is empty
    assert (
        lookup(tmp_path, setup, "cpu", HostKey("h", "cpu-x86-64-2c-avx2")) is None
    )  # another kind, another fingerprint
    assert lookup(tmp_path, setup, "rocm7.2-hf5.17", here) is None  # another stack writes elsewhere anyway
    changed = validate_setup({"name": "s", "experiment": "exp_x", "recipe": {"seed": 42, "steps": 10}})
    assert lookup(tmp_path, changed, "cpu", here) is None
    assert (
        lookup(tmp_path, setup, "cpu", here, timed=True) is None
    )  # an untimed record cannot answer a timed claim
    write_record(tmp_path, untimed.model_copy(update={"guard": {"timed": True}}))
    assert lookup(tmp_path, setup, "cpu", here, timed=True) is not None


def test_rerun_policy() -> None:
    ok, refused = record(), record(status="refused")
    assert [wants_rerun(ok, r) for r in ("no", "failed", "all")] == [False, False, True]
    assert [wants_rerun(refused, r) for r in ("no", "failed", "all")] == [False, True, True]


def test_staggered_loads_one_after_another() -> None:
    from harness.results import Timings

    staggered = record().model_copy(update={"timings": Timings(load_windows=[[0.0, 4.1], [4.1, 8.3]])})
    assert claims.require(claims.check_loads_staggered(staggered)) == pytest.approx(4.1)
    together = record().model_copy(update={"timings": Timings(load_windows=[[0.0, 4.1], [0.2, 4.4]])})
    fails(claims.check_loads_staggered(together),
          r"ranks loaded the model at the same time: \[0.00, 4.10\] s and \[0.20, 4.40\] s")  # fmt: skip
    not_evaluable(claims.check_loads_staggered(record()), r"no per-rank load windows in the record")


# --- the catalogue: each claim written once, in the setup file that declares it ---

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
BUILT_IN = catalogue.load_catalogue([BENCHMARKS / "setups"])
# The claims the committed scorecards show (reports/*/*/scorecard.md), by experiment: their names and
# bound files are part of the reports, so moving a claim to a TOML must not rename it.
REPORTED = {
    "exp_a": ["gain on every seed", "seed spread"],
    "exp_b": ["no NaN (bf16 reference)", "no NaN (4-bit)", "accuracy equivalent to bf16", "memory saved as predicted",
              "adapter scored on a bf16 base"],
    "exp_c": ["speedup over one card", "accuracy equivalent to one card", "memory per card", "ranks load one after another"],
    "exp_f": ["accuracy equivalent to hf", "speedup over hf"],
}  # fmt: skip


def test_every_claim_names_real_setups_and_its_bounds() -> None:
    assert len(BUILT_IN.claims) == 24  # the index's "claims judged / in the suite"
    for claim in BUILT_IN.claims:
        for path in claim.setups.values():
            assert path.is_file() and path in BUILT_IN.setups, (claim.name, path)
        assert set(claim.kind.required) <= set(claim.bounds), claim.name
        assert claim.bound_text()  # every placeholder has a bound or a default
    for experiment, names in REPORTED.items():
        assert [c.name for c in BUILT_IN.claims if c.experiment == experiment] == names
    # A claim without bounds names the setup it reads; the others the file that holds their bounds.
    assert BUILT_IN.find("exp_b", "no NaN (bf16 reference)").bound_file.name == "exp_a.toml"
    assert BUILT_IN.find("exp_c", "speedup over one card").bound_file.name == "exp_c_speed_one_card.toml"
    # A time claim is timed where its file's cases are (Exp D is not a timed experiment).
    assert [c.name for c in BUILT_IN.claims if c.timed] == [
        "speedup over one card",
        "speedup over one card",
        "time ratio across stacks",
        "speedup over hf",
    ]


# The suite's markers are registered by its plugin, which this test process does not load.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")
def test_the_suite_has_one_case_per_claim_and_seed_of_a_per_seed_claim() -> None:
    cases = collect_cases(BUILT_IN, (3407, 42))
    per_seed = [c for c in BUILT_IN.claims if c.per_seed]
    assert len(cases) == len(BUILT_IN.claims) + len(per_seed)
    ids = [case.id for case in cases]
    assert len(set(ids)) == len(ids)
    assert "exp_a/gain-on-every-seed/seed42" in ids and "exp_a/seed-spread" in ids
    (gain,) = [c for c in cases if c.id == "exp_a/gain-on-every-seed/seed3407"]
    assert [m.name for m in gain.marks()] == ["cpu_ok", "slow"]
    (speedup,) = [c for c in cases if c.id == "exp_c_speed_one_card/speedup-over-one-card"]
    assert [(m.name, m.kwargs) for m in speedup.marks()] == [
        ("multi_gpu", {"n": 2}),
        ("timed", {}),
        ("slow", {}),
    ]


def test_assert_claim_checks_the_records_are_the_claims_setups() -> None:
    def named(r: RunRecord, experiment: str, setup: str) -> RunRecord:
        return r.model_copy(update={"experiment": experiment, "setup_name": setup})

    claim = BUILT_IN.find("exp_b", "accuracy equivalent to bf16")
    bf16 = [named(record(s, em=50.0), "exp_a", "smollm2-135m-lora") for s in (1, 2)]
    qlora = [named(record(s, em=49.0 + s / 5), "exp_b", "smollm2-135m-4bit") for s in (1, 2)]
    figure = catalogue.assert_claim(claim, {"bf16": bf16, "4bit": qlora}, BUILT_IN.setups)
    assert figure == pytest.approx(-0.7)
    with pytest.raises(
        AssertionError, match=r"role '4bit' is exp_b/smollm2-135m-4bit .*got exp_a/smollm2-135m-lora seed 1"
    ):
        catalogue.assert_claim(claim, {"bf16": bf16, "4bit": bf16}, BUILT_IN.setups)
    with pytest.raises(ValueError, match="takes records for"):
        catalogue.assert_claim(claim, {"bf16": bf16}, BUILT_IN.setups)
    low = [named(record(s, em=40.0), "exp_b", "smollm2-135m-4bit") for s in (1, 2)]
    with pytest.raises(AssertionError, match=r"not shown equivalent within ±3 points: mean difference -10.0"):
        catalogue.assert_claim(claim, {"bf16": bf16, "4bit": low}, BUILT_IN.setups)
    with pytest.raises(KeyError, match="no claim 'made up'"):
        BUILT_IN.find("exp_b", "made up")


def test_every_kind_has_a_judge_and_the_bounds_its_text_names() -> None:
    # A reader follows kind → judge in one registry; a bound the text formats is one the kind takes.
    for kind in claims.KINDS.values():
        assert kind.setups in (1, 2) and callable(kind.judge)
        assert kind.bound.format(**{k: 1.0 for k in kind.required}, **kind.defaults)
