"""Your runs are yours: published (committed) records stand in where their fingerprint matches and are
never written; a record that does not stand in says which field changed; `lorabench publish` is the one
way into the published folder, and it keeps a record of another fingerprint unless told to replace it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main
from harness.report.settings import public_json
from harness.results import load_record

LABEL = "exp_t/tiny seed 3407"
SPREAD_MODULE = """\
import pytest
from harness.suite.claims import check_seed_spread, require

pytestmark = pytest.mark.cpu_ok

def test_spread(lorabench_run, lorabench_seeds):
    records = [lorabench_run("setups/tiny.toml", seed) for seed in lorabench_seeds]
    require(check_seed_spread(records, 5.0))
"""


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_published_record_of_this_host_stands_in_and_is_never_written(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...],
    write_cached: Callable[..., Path],
) -> None:  # fmt: skip
    setup = bench_dir(steps=2, min_gain=-100.0)
    published = pytester.path / "reports" / "results"
    write_cached(setup, published)
    before = snapshot(published)
    result = pytester.runpytest(*bench_args, "--lorabench-inline")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        f"reused  {LABEL}: ok → reports/results/*/seed-3407.json [[]published]",
        "lorabench: 0 trained, 0 re-ran, 1 reused from cache (1 of them published records)",
    ])  # fmt: skip
    assert not (pytester.path / "results").exists()

    # Another setting: the published record says why it does not stand in, the run lands in results/.
    result = pytester.runpytest(*bench_args, "--lorabench-inline", "--lorabench-set=recipe.steps=3")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        f"trained {LABEL}: ok → results/*/seed-3407.json [[]yours; not standing in: "
        "this host's record (published): recipe.steps 2 → 3]",
    ])  # fmt: skip
    assert snapshot(published) == before
    (mine,) = (pytester.path / "results").rglob("seed-3407.json")
    assert load_record(mine).train.steps_done == 3

    # An empty --lorabench-published reads none: the published setup trains (the control).
    result = pytester.runpytest(
        *bench_args, "--lorabench-inline", "--lorabench-published=", "--lorabench-progress=off"
    )
    result.stdout.fnmatch_lines([f"trained {LABEL}: ok → results/* [[]yours; not standing in: this host's record: "
                                 "recipe.steps 3 → 2]"])  # fmt: skip
    assert snapshot(published) == before


def test_a_claim_one_seed_cannot_judge_is_a_skip_not_a_failure(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...],
    write_cached: Callable[..., Path],
) -> None:  # fmt: skip
    setup = bench_dir(min_gain=-100.0)
    write_cached(setup, pytester.path / "results")
    pytester.makepyfile(test_spread=SPREAD_MODULE)
    result = pytester.runpytest(*bench_args, "-rs", "test_spread.py")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1] *not evaluable: seed spread needs at least 2 seeds, got 1"])

    # The control: two seeds whose answers differ by 30 points fail the claim.
    write_cached(setup, pytester.path / "results", seed=42, trained=10.0)
    args = [a for a in bench_args if not a.startswith("--lorabench-seeds")]
    result = pytester.runpytest(*args, "--lorabench-seeds=3407,42", "test_spread.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*seed spread 30.0 points > bound 5*"])


def test_publish_refuses_another_fingerprint_unless_told(
    bench_dir: Callable[..., Path], write_cached: Callable[..., Path], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    mine, published = tmp_path / "results", tmp_path / "published"
    setup = bench_dir(steps=2)
    old = write_cached(setup, published, trained=40.0)
    old_bytes = old.read_bytes()
    bench_dir(steps=3)
    new = write_cached(setup, mine, trained=45.0)
    new.with_name("seed-3407.predictions.jsonl").write_text('{"index": 0, "exact": true}\n')
    record = json.loads(new.read_text())  # the run's data file named by a machine path, as a real record does
    record["setup"]["data"] = {**record["setup"].get("data", {}), "source": str(tmp_path / "rows.jsonl")}
    new.write_text(json.dumps(record, indent=2))

    assert main(["publish", str(mine), "--to", str(published)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "recipe.steps 2 → 3" in err and "--replace" in err
    assert old.read_bytes() == old_bytes  # kept

    assert main(["publish", str(mine), "--to", str(published), "--replace"]) == 0
    out = capsys.readouterr().out
    assert "replaces another fingerprint: " in out and "recipe.steps 2 → 3" in out
    # The published copy is the record with machine paths cut (its data file lies in tmp_path here).
    assert old.read_text() == public_json(new.read_text())
    assert str(tmp_path) in new.read_text() and str(tmp_path) not in old.read_text()
    assert old.with_name("seed-3407.predictions.jsonl").is_file()

    # Again: nothing to do; a record of the same fingerprint replaces its older copy without --replace.
    assert main(["publish", str(new), "--to", str(published)]) == 0
    assert "already published" in capsys.readouterr().out
    data = json.loads(new.read_text())
    data["run_id"] = "a-newer-run"
    new.write_text(json.dumps(data))
    assert main(["publish", str(new), "--to", str(published)]) == 0
    assert "[same fingerprint]" in capsys.readouterr().out and load_record(old).run_id == "a-newer-run"
