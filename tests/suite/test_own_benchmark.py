"""Your own benchmark, no Python: the README's setup file (its fenced block, read here, so the two cannot
drift) in a folder of its own, run for real through `lorabench bench --setups`; the scorecard shows its
claims' verdicts beside the built-in catalogue. A mistake in such a file is one line and exit 2."""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main
from harness.report.claim_table import load_setups
from harness.results import load_record
from harness.suite.catalogue import load_catalogue

REPO = Path(__file__).resolve().parents[2]
SECTION = "## Add your own benchmark"


def readme_example() -> str:
    section = (REPO / "README.md").read_text(encoding="utf-8").split(SECTION, 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```toml\n(.*?)```", section, flags=re.DOTALL)
    return block


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split(" | ")]


def test_the_readme_example_runs_through_bench_setups_and_the_scorecard_shows_it(
    pytester: pytest.Pytester, sql_rows_file: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the child imports this worktree's harness
    for name in ("LORABENCH_DATA", "LORABENCH_STACK", "PYTEST_XDIST_WORKER"):
        monkeypatch.delenv(name, raising=False)
    mine = pytester.path / "my-setups"
    mine.mkdir()
    (mine / "tiny.toml").write_text(readme_example(), encoding="utf-8")
    # The example's data is the default, offline here as for a user without the hub: $LORABENCH_DATA.
    monkeypatch.setenv("LORABENCH_DATA", str(sql_rows_file))
    result = pytester.run(sys.executable, "-m", "harness.cli", "bench", "--setups", "my-setups", "--results", "results",
                          "--reports", "reports-local", "--", "--lorabench-seeds=3407", "--lorabench-stack=teststack",
                          "--lorabench-progress=off", "-p", "no:cacheprovider", "-rs", timeout=600)  # fmt: skip
    assert result.ret == 0, result.stdout.str()[-3000:] + result.stderr.str()[-2000:]
    result.stdout.fnmatch_lines([
        "trained my_tiny/tiny-lora seed 3407: ok → results/teststack/*/my_tiny/tiny-lora/seed-3407.json [[]yours]",
        "SKIPPED [[]1] *not evaluable: seed spread needs at least 2 seeds, got 1",
        "*= 2 passed, 1 skipped in *",
        "lorabench bench: scorecards from results (yours)",
    ])  # fmt: skip
    (scorecard,) = (pytester.path / "reports-local").glob("*/teststack/scorecard.md")
    text = scorecard.read_text(encoding="utf-8")
    rows = {cells(line)[1]: cells(line) for line in text.splitlines() if line.startswith("| my_tiny ")}
    assert set(rows) == {"no NaN", "gain on every seed", "seed spread"}
    assert rows["no NaN"][2] == "my_tiny/tiny-lora" and rows["no NaN"][5] == "pass"
    assert rows["gain on every seed"][3] == "≥ 0 points exact match over the untrained model (`tiny.toml`)"
    assert rows["gain on every seed"][5] == "pass"
    assert rows["seed spread"][5] == "*not evaluable*"
    assert (
        "## Experiment `my_tiny`" in text and "### Misses: `tiny-lora` (seeds 3407)" in text
    )  # the setup's own table
    # Beside the built-in experiments: the suite's claims count in the scorecard's total with yours.
    summary = json.loads(scorecard.with_name("summary.json").read_text(encoding="utf-8"))
    assert summary["claims_total"] == len(load_catalogue([REPO / "benchmarks" / "setups"]).claims) + 3


BAD = {
    "unknown kind": ('kind = "gainz"\nmin_gain = 1.0',
                     'claims."my claim".kind: \'gainz\' is not a claim kind; use one of gain, seed_spread, '),
    "missing bound": ('kind = "gain"', 'claims."my claim".min_gain: missing; kind \'gain\' needs it, e.g. min_gain = 1.0'),
    "setup not found": ('kind = "equivalent"\nequivalence_margin = 3.0\nsetups = { base = "nowhere.toml", mine = "mine.toml" }',
                        'claims."my claim".setups.base: \'nowhere.toml\' not found in '),
    "bound not a number": ('kind = "gain"\nmin_gain = "twenty"',
                           'claims."my claim".min_gain: \'twenty\' is not a number; give e.g. min_gain = 1.5'),
    "unknown key": ('kind = "gain"\nmin_gian = 1.0', 'claims."my claim".min_gian: neither a key of a claim (kind, setups, '
                    "experiment, across_stacks) nor a bound of kind 'gain' (min_gain)"),
    "unknown marker": ('kind = "finite"', "suite.markers: 'gpus' is not a marker of the suite; use gpu, "),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_mistake_in_a_setup_file_is_one_line_and_exit_2(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claim, message = BAD[case]
    markers = '["gpus"]' if case == "unknown marker" else '["cpu_ok"]'
    (tmp_path / "mine.toml").write_text(
        f'name = "mine"\nexperiment = "mine"\n\n[suite]\nmarkers = {markers}\n\n[claims."my claim"]\n{claim}\n', encoding="utf-8"
    )  # fmt: skip
    for command in (
        ["bench", "--setups", str(tmp_path)],
        ["report", str(tmp_path), "--setups", str(tmp_path)],
    ):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert f"{tmp_path / 'mine.toml'}: {message}" in err, err
    # The control: the same file without the mistake loads.
    (tmp_path / "mine.toml").write_text(
        'name = "mine"\nexperiment = "mine"\n\n[claims."my claim"]\nkind = "finite"\n'
    )
    assert [c.name for c in load_catalogue([tmp_path]).claims] == ["my claim"]


def test_a_setups_folder_without_a_setup_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("a setup file ends in .toml", encoding="utf-8")
    for command in (
        ["bench", "--setups", str(tmp_path)],
        ["report", str(tmp_path), "--setups", str(tmp_path)],
    ):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert (
            err.strip()
            == f"lorabench {command[0]}: error: setups folder {tmp_path}: no *.toml file in it; put your setup files there"
        )


def test_the_built_in_folder_mounted_again_counts_once(tmp_path: Path) -> None:
    # `docker compose run bench-setups` without a folder of yours mounts the built-in setups a second time.
    copy = tmp_path / "setups-local"
    shutil.copytree(REPO / "benchmarks" / "setups", copy)
    catalogue = load_setups(REPO / "benchmarks", [copy])
    assert catalogue is not None and len(catalogue.claims) == len(
        load_catalogue([REPO / "benchmarks" / "setups"]).claims
    )
    # A changed copy is a setup of its own under the same name: said, not merged.
    (copy / "exp_a.toml").write_text((copy / "exp_a.toml").read_text() + "\n# changed\n")
    with pytest.raises(
        Exception, match=r"name: 'exp_a/smollm2-135m-lora' is also .*exp_a.toml's experiment/name"
    ):
        load_setups(REPO / "benchmarks", [copy])


def test_compose_runs_your_setups_folder_mounted_read_only() -> None:
    import yaml

    services = yaml.safe_load((REPO / "compose.yaml").read_text(encoding="utf-8"))["services"]
    mine = services["bench-setups"]
    assert mine["extends"] == "bench"
    assert mine["volumes"] == ["${LORABENCH_SETUPS_DIR:-./benchmarks/setups}:/opt/lorabench/setups-local:ro"]
    assert mine["command"][:4] == ["lorabench", "bench", "--setups", "setups-local"]


def test_a_setup_that_scores_another_setups_adapter_runs_after_it(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...]
) -> None:
    # [suite] adapter_from: the suite runs that setup first, for the same seed, and scores its adapter
    # (eval.adapter = its record); nothing trains the second time.
    tiny = bench_dir(min_gain=-100.0)
    text = tiny.read_text().replace('name = "tiny"', 'name = "tiny-rescored"').split("[suite]", 1)[0]
    (tiny.parent / "rescored.toml").write_text(text + (
        '[suite]\nmarkers = ["cpu_ok"]\nadapter_from = "tiny.toml"\n\n'
        '[claims."no NaN"]\nkind = "finite"\nsetups = { trained = "tiny.toml" }\n\n'
        '[claims."rescored gain"]\nkind = "gain"\nmin_gain = -100.0\n'
    ))  # fmt: skip
    result = pytester.runpytest(*bench_args, "--lorabench-inline", "-k", "rescored", "-rs")
    result.stdout.fnmatch_lines(
        ["trained exp_t/tiny seed 3407: ok → *", "trained exp_t/tiny-rescored seed 3407: ok → *"]
    )
    assert result.ret == 0, result.stdout.str()[-2000:]
    (trained,) = (pytester.path / "results").rglob("exp_t/tiny/seed-3407.json")
    (rescored,) = (pytester.path / "results").rglob("exp_t/tiny-rescored/seed-3407.json")
    again = load_record(rescored)
    assert again.train is None and again.setup.eval.adapter == str(trained)
