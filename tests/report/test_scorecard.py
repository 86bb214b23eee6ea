"""Golden files: records written here render to the checked-in Markdown exactly, twice over, and the
charts come out as the same PNG bytes. Regenerate after an intended change with
`LORABENCH_UPDATE_GOLDEN=1 pytest tests/report` and review the diff."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest
from builders import write_story_results

from harness.cli import main
from harness.config import SetupConfig
from harness.report.pipeline import build_reports

GOLDEN = Path(__file__).resolve().parent / "golden"
# The suite's setup files: the claims' bounds come from their [claims] tables.
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
MARKDOWN = (
    "README.md",
    "amd-radeon-rx-7900-xtx/rocm7.2-hf5.5/scorecard.md",
    "cpu-intel-r-xeon-r-platinum-8481c-cpu-2.70ghz-2c/cpu/scorecard.md",
)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("story")
    write_story_results(root / "results")
    build_reports([root / "results"], root / "reports", BENCHMARKS)
    if os.environ.get("LORABENCH_UPDATE_GOLDEN"):
        for name in MARKDOWN:
            (GOLDEN / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / "reports" / name, GOLDEN / name)
    return root


@pytest.mark.parametrize("name", MARKDOWN)
def test_markdown_matches_golden(rendered: Path, name: str) -> None:
    assert (rendered / "reports" / name).read_text(encoding="utf-8") == (GOLDEN / name).read_text(
        encoding="utf-8"
    )


def test_same_records_same_bytes(rendered: Path, tmp_path: Path) -> None:
    # Through the CLI this time, into a fresh folder: Markdown and PNGs must be byte-identical.
    assert (
        main(["report", str(rendered / "results"), "-o", str(tmp_path), "--benchmarks", str(BENCHMARKS)]) == 0
    )
    first = sorted(
        p.relative_to(rendered / "reports") for p in (rendered / "reports").rglob("*") if p.is_file()
    )
    second = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert first == second
    for rel in first:
        assert (rendered / "reports" / rel).read_bytes() == (tmp_path / rel).read_bytes(), rel


def test_charts_are_fixed_size_pngs(rendered: Path) -> None:
    img = rendered / "reports" / "amd-radeon-rx-7900-xtx" / "rocm7.2-hf5.5" / "img"
    assert sorted(p.name for p in img.iterdir()) == [
        f"exp-{e}-{kind}.png" for e in "ab" for kind in ("loss", "memory", "time")
    ]
    header = (img / "exp-a-loss.png").read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", header[16:24]) == (1000, 380)
    assert b"Software" not in (img / "exp-a-loss.png").read_bytes()


def test_every_image_link_resolves(rendered: Path) -> None:
    scorecard = rendered / "reports" / MARKDOWN[1]
    links = [
        line.rsplit("](", 1)[1].rstrip(")")
        for line in scorecard.read_text().splitlines()
        if line.startswith("![")
    ]
    assert len(links) == 6  # exp_a and exp_b: loss, memory, time
    for link in links:
        assert (scorecard.parent / link).is_file()


def test_index_keeps_reports_from_earlier_runs(rendered: Path, tmp_path: Path) -> None:
    # Render the CPU results alone into a folder that already holds the AMD report: both stay listed.
    out = tmp_path / "reports"
    shutil.copytree(rendered / "reports", out)
    build_reports([rendered / "results" / "cpu"], out, BENCHMARKS)
    assert (out / "README.md").read_text() == (GOLDEN / "README.md").read_text()


def test_no_records_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "results").mkdir()
    assert main(["report", str(tmp_path / "results"), "-o", str(tmp_path / "reports")]) == 2
    assert "no run records" in capsys.readouterr().err


def test_other_tasks_compare_without_the_sql_miss_analysis(tmp_path: Path) -> None:
    """Two verdict-task setups: the comparison pairs per-question outcomes (any task writes index and
    exact); the miss analysis, which is the SQL task's, is left out instead of failing the report."""
    from builders import HOST_CPU, STACK_CPU, make_record, write

    from harness.results import Metrics

    for name, skill in (("verdict-a", 0), ("verdict-b", 1)):
        for seed in (3407, 42):
            rows = [{"index": i, "prediction": "fair", "base_prediction": "x", "exact": (i + seed + skill) % 3 != 0,
                     "contract": True, "decision": "fair", "tag": None, "base_exact": False} for i in range(12)]  # fmt: skip
            record = make_record(host=HOST_CPU, stack=STACK_CPU, experiment="exp_g", setup_name=name, seed=seed,
                                 created="2026-11-30T00:00:00+00:00", rows=rows)  # fmt: skip
            scores = {
                "semantic": None,
                "n_scorable": None,
                "n_unscorable": None,
            }  # the SQL task's: not a verdict's
            record = record.model_copy(update={
                "setup": SetupConfig.model_validate({**record.setup.model_dump(exclude={"data"}), "task": "verdict"}),
                "baseline": Metrics(**record.baseline.model_dump(exclude=set(scores))),
                "trained": Metrics(**record.trained.model_dump(exclude=set(scores))),
            })  # fmt: skip
            write(tmp_path / "results", record, rows)
    build_reports([tmp_path / "results"], tmp_path / "reports", BENCHMARKS)
    (scorecard,) = (tmp_path / "reports").glob("*/*/scorecard.md")
    text = scorecard.read_text()
    assert "verdict-b vs verdict-a" in text and "of 24 (seeds 42, 3407)" in text
    assert "### Misses" not in text
    assert "semantic %" not in text  # the SQL task's column: not in a verdict experiment's table


def test_a_semantic_score_the_sql_safety_net_touched_is_marked_and_explained(tmp_path: Path) -> None:
    from builders import HOST_CPU, STACK_CPU, make_record, predictions

    from harness.report.groups import LoadedRecord, SetupRuns
    from harness.report.tables import experiment_table
    from harness.tasks.sql.metrics import COLUMNS

    (semantic,) = COLUMNS
    CLOCK_STOPPED = semantic.mark

    def runs(n_clock_stopped: int) -> SetupRuns:
        record = make_record(host=HOST_CPU, stack=STACK_CPU, experiment="exp_a", setup_name="s", seed=1,
                             created="2026-12-01T00:00:00+00:00", rows=predictions(1, 0))  # fmt: skip
        trained = record.trained.model_copy(update={"n_clock_stopped": n_clock_stopped})
        return SetupRuns(
            "exp_a", "s", (LoadedRecord(record.model_copy(update={"trained": trained}), tmp_path / "r.json"),)
        )

    assert CLOCK_STOPPED not in experiment_table([runs(0)])
    assert CLOCK_STOPPED in experiment_table([runs(2)])
    context = _experiment_context_of([runs(2)], tmp_path / "img")
    assert context["marks_note"].startswith(" ‡ = the semantic score includes")
    # The legend appears only where the mark does (the golden files above have neither).
    results = tmp_path / "results"
    write_story_results(results)
    build_reports([results], tmp_path / "reports", BENCHMARKS)
    assert "‡" not in (tmp_path / "reports" / MARKDOWN[2]).read_text(encoding="utf-8")


def _experiment_context_of(setups: list, img_dir: Path) -> dict:  # type: ignore[type-arg]
    from harness.report.scorecard import _experiment_context

    class Group:
        def setups(self, _experiment: str) -> list:  # type: ignore[type-arg]
            return setups

    return _experiment_context(Group(), "exp_x", img_dir, [])  # type: ignore[arg-type]


def test_a_chart_whose_drawing_failed_in_its_child_is_drawn_again_and_its_error_raised(
    tmp_path: Path,
) -> None:
    """Charts are drawn in forked children; one that failed there (here its path is a folder, as a full disk
    would fail it) is drawn again in the reporting process, whose error then names it; the others are written."""
    from harness.report import charts

    good, bad = tmp_path / "good.png", tmp_path / "bad.png"
    bad.mkdir()
    for path in (bad, good):
        fig, (ax,) = charts._figure(2, 2)
        ax.plot([1, 2], [3, 4])
        charts._save(fig, path)
    with pytest.raises(IsADirectoryError, match=r"bad\.png"):
        charts.finish_drawing()
    assert not charts._drawing
    assert good.read_bytes().startswith(b"\x89PNG")
