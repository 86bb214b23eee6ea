"""The committed reports are the committed records rendered by today's code (golden files: `reports/`
itself), and each way they used to mislead (issue 27) is gone: no comparison of unlike runs outside a
table labelled unlike, the H200 three-seeds-at-once row marked, n in the order the row names the sides,
MFU from the steady steps with its convention, no absolute path, coverage and the platforms without a
record in the index, no chart left that no report shows.

Re-render after an intended change (as `lorabench report --help` says) and review the diff:
`export LORABENCH_DATA=../shared/data/sql-create-context/random-sample.jsonl; lorabench report reports/results -o /tmp/r &&
cp -r /tmp/r/. reports/ && lorabench report reports/results -o reports`."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from builders import HOST_AMD, STACK_ROCM, make_record, write

from harness.cli import main
from harness.config import DataConfig
from harness.report.settings import machine_paths, public, public_json
from harness.results import load_record

REPO = Path(__file__).resolve().parents[2]
REPORTS = REPO / "reports"
BENCHMARKS = REPO / "benchmarks"


def rendered_files(root: Path) -> list[Path]:
    """What `lorabench report` writes: the index, each scorecard and its summary (charts aside)."""
    return sorted([root / "README.md", *root.glob("*/*/scorecard.md"), *root.glob("*/*/summary.json")])


# The committed reports are rendered with the data at hand (as `make` sets it), so the miss analysis
# judges agreeing wrong answers by meaning; published records name their data file by its name only.
SHARED_DATA = REPO.parent / "shared" / "data" / "sql-create-context" / "random-sample.jsonl"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not SHARED_DATA.is_file():
        pytest.skip(
            f"the committed reports were rendered with LORABENCH_DATA={SHARED_DATA.relative_to(REPO.parent)}, absent here"
        )
    out = tmp_path_factory.mktemp("committed") / "reports"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)  # the index names its sources as given: relative, as the committed one was made
        patch.setenv("LORABENCH_DATA", str(SHARED_DATA))
        assert main(["report", "reports/results", "-o", str(out), "--benchmarks", str(BENCHMARKS)]) == 0
    return out


def test_committed_reports_are_todays_render_of_the_committed_records(fresh: Path) -> None:
    committed = [p.relative_to(REPORTS) for p in rendered_files(REPORTS)]
    assert committed == [p.relative_to(fresh) for p in rendered_files(fresh)]
    for rel in committed:
        assert (REPORTS / rel).read_text(encoding="utf-8") == (fresh / rel).read_text(encoding="utf-8"), rel


def test_every_committed_chart_is_shown_and_every_shown_chart_exists() -> None:
    for scorecard in REPORTS.glob("*/*/scorecard.md"):
        shown = set(re.findall(r"\]\((img/[^)]+\.png)\)", scorecard.read_text(encoding="utf-8")))
        on_disk = {f"img/{p.name}" for p in (scorecard.parent / "img").glob("*.png")}
        assert shown == on_disk, scorecard


def test_no_absolute_path_in_what_the_report_writes() -> None:
    for path in rendered_files(REPORTS):
        found = machine_paths(path.read_text(encoding="utf-8"))
        assert not found, (path, found[:3])


def _json_strings(path: Path) -> list[str]:
    """Every string inside a JSON (or JSON lines) file, decoded."""

    def walk(value: object) -> list[str]:
        if isinstance(value, str):
            return [value]
        if isinstance(value, dict):
            return [s for v in value.values() for s in walk(v)]
        if isinstance(value, list):
            return [s for v in value for s in walk(v)]
        return []

    lines = (
        path.read_text(encoding="utf-8").splitlines()
        if path.suffix == ".jsonl"
        else [path.read_text(encoding="utf-8")]
    )
    return [s for line in lines if line.strip() for s in walk(json.loads(line))]


def test_every_published_record_was_timed_under_the_guard() -> None:
    # Issue 38: a published figure went through the quiet-machine guard; what did not is in reports/untimed.
    records = sorted((REPORTS / "results").rglob("seed-*.json"))
    assert records
    untimed = [
        str(path.relative_to(REPORTS))
        for path in records
        if not (
            (guard := load_record(path).guard).get("timed") and guard.get("timing_valid", True) is not False
        )
    ]
    assert untimed == []


def test_no_machine_path_in_the_published_records() -> None:
    # Published records are public (`lorabench publish` cuts paths: harness.report.settings.public_json);
    # so are the untimed ones kept aside in the repository.
    files = [*REPORTS.glob("*/**/*.json"), *REPORTS.glob("*/**/*.jsonl")]
    files = [f for f in files if f.relative_to(REPORTS).parts[0] in ("results", "untimed")]
    assert len(files) > 20
    for path in files:
        found = [m for text in _json_strings(path) for m in machine_paths(text)]
        assert not found, (path, found[:3])


def test_no_machine_path_in_the_benchmark_logs() -> None:
    # Tracked reports name data by content and files by relative paths: no absolute path of the machine a
    # log was made on (home, checkout, scratch or system folders), as published records (`public`).
    for path in REPORTS.glob("benchmarks/**/*"):
        if path.is_file() and path.suffix != ".png":
            found = machine_paths(path.read_text(encoding="utf-8"))
            assert not found, (path, found[:3])


def test_publish_cuts_machine_paths_and_keeps_the_json_intact() -> None:
    text = '{"a": "/root/lbdata/x.jsonl", "tb": "File \\"/tmp/site/pkg/m.py\\", line 3\\nnext", "dev": "/dev/kfd"}'
    cut = json.loads(public_json(text))
    assert cut == {"a": "…/x.jsonl", "tb": 'File "…/m.py", line 3\nnext', "dev": "/dev/kfd"}
    assert (
        public_json('{"n": 1.5e-05, "s": "plain"}') == '{"n": 1.5e-05, "s": "plain"}'
    )  # other bytes as they were


def test_an_absolute_path_in_a_record_never_reaches_the_report(tmp_path: Path) -> None:
    # The injected case: model and data named by machine paths; the report shows their last part only.
    record = make_record(host=HOST_AMD, stack=STACK_ROCM, experiment="exp_x", setup_name="local", seed=3407,
                         created="2026-11-28T10:00:00+00:00", model="/home/someone/models/smollm2-135m", rows=None)  # fmt: skip
    record = record.model_copy(
        update={"setup": record.setup.model_copy(update={"data": DataConfig(source="/srv/data/sql.jsonl")})}
    )
    write(tmp_path / "results", record, None)
    assert main(["report", str(tmp_path / "results"), "-o", str(tmp_path / "reports")]) == 0
    text = "".join(p.read_text(encoding="utf-8") for p in rendered_files(tmp_path / "reports"))
    assert "/home/someone" not in text and "/srv/data" not in text and str(tmp_path) not in text
    assert "…/smollm2-135m" in text
    assert not machine_paths(text)


def test_public_cuts_machine_paths_and_keeps_the_rest() -> None:
    assert (
        public("data /root/lbdata/random-sample.jsonl vs C:\\data\\x.jsonl")
        == "data …/random-sample.jsonl vs …/x.jsonl"
    )
    assert public("~/models/m and ~bob/m/x") == "…/m and …/x"
    kept = "https://www.nvidia.com/en-us/data-center/h200/ img/exp-a.png <results>/cpu/x/ 51.0 / 51.3 no /dev/kfd"
    assert public(kept) == kept


UNTIMED = REPORTS / "untimed"


@pytest.fixture(scope="module")
def with_untimed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The published records and the untimed ones kept beside them (`reports/untimed/`: the two-card H200
    and the EPYC records, not timed under the guard, so not published) rendered together: the four hosts
    these report features were written against."""
    out = tmp_path_factory.mktemp("with-untimed")
    argv = ["report", str(REPORTS / "results"), str(UNTIMED), "-o", str(out), "--benchmarks", str(BENCHMARKS)]
    assert main(argv) == 0
    return out


def _section(text: str, start: str) -> str:
    return text.split(start, 1)[1].split("\n### ", 1)[0]


def test_cross_host_comparisons_are_only_in_the_unlike_table(with_untimed: Path) -> None:
    index = (with_untimed / "README.md").read_text(encoding="utf-8")
    section = _section(index, "### `exp_a/smollm2-135m-lora` on 4 hosts × stacks")
    before, unlike = section.split("**Unlike**", 1)
    assert " vs " not in before  # no pair drawn before the unlike label
    pairs = [line for line in unlike.splitlines() if " vs " in line and line.startswith("| ")]
    assert len(pairs) == 3
    for row in pairs:
        assert "lorabench commit:" in row  # each names what else differs
    assert "/root/" not in index and "/work/" not in index and "data.source" not in index


def test_seeds_run_in_turn_are_not_marked_and_three_at_once_are(tmp_path: Path, with_untimed: Path) -> None:
    """The published H200 Exp A records (the 2026-12-01 run (606e6e1)) ran one after another: no ×k. The 2026-12-01 run (259c3ca)'s, kept in
    reports/benchmarks, started together: rendered, their row says ×3."""
    index = (with_untimed / "README.md").read_text(encoding="utf-8")
    rows = [line for line in index.splitlines() if " vs " not in line]
    (h200,) = [line for line in rows if line.startswith("| nvidia-h200 · h200-image")]
    (h200x2,) = [line for line in rows if line.startswith("| nvidia-h200x2 · h200-image")]
    assert "×" not in h200 and "×" not in h200x2 and "alone or not: not known" in h200x2
    scorecard = (REPORTS / "nvidia-h200/h200-image/scorecard.md").read_text(encoding="utf-8")
    assert scorecard.count("Marks on time, speed, memory and MFU figures") == 1
    together = REPORTS / "benchmarks/h200/logs-2026-12-01-overhead-cuts/three-at-once"
    target = tmp_path / "results/h200-image/nvidia-h200/exp_a/smollm2-135m-lora"
    target.mkdir(parents=True)
    for record in together.glob("seed-*"):
        target.joinpath(record.name).write_bytes(record.read_bytes())
    assert main(["report", str(tmp_path / "results"), "-o", str(tmp_path / "reports")]) == 0
    rendered = (tmp_path / "reports/nvidia-h200/h200-image/scorecard.md").read_text(encoding="utf-8")
    (row,) = [line for line in rendered.splitlines() if line.startswith("| smollm2-135m-lora ")]
    assert "32 [31–33] † ×3" in row and "one of 3 runs at once on the same devices" in row
    assert "×k = one of k recorded runs that ran at the same time" in rendered  # the legend, once


def test_n_is_in_the_order_the_row_names_the_sides(tmp_path: Path) -> None:
    # One Intel seed against three H200 seeds: the index's row compares sides of different n, and each n must
    # stand on its side's place, whichever side the row names first.
    shutil.copytree(REPORTS / "results", tmp_path / "results")
    for extra in (tmp_path / "results/cpu/cpu-intel-r-xeon-r-processor-2c").rglob("seed-[14]*"):
        extra.unlink()  # seeds 42 and 1234: Intel keeps 3407 alone
    assert main(["report", str(tmp_path / "results"), "-o", str(tmp_path / "reports")]) == 0
    index = (tmp_path / "reports/README.md").read_text(encoding="utf-8")
    (row,) = [
        line
        for line in index.splitlines()
        if line.startswith("| ") and " vs " in line and "nvidia-h200 ·" in line and "cpu-intel" in line
    ]
    intel_first = row.startswith("| cpu-intel")
    assert ("(n = 1 vs n = 3)" if intel_first else "(n = 3 vs n = 1)") in row


def test_mfu_is_from_the_steady_steps_with_its_convention() -> None:
    scorecard = (REPORTS / "nvidia-h200/h200-image/scorecard.md").read_text(encoding="utf-8")
    (row,) = [line for line in scorecard.splitlines() if line.startswith("| packed-8x2048-ckpt-false ")]
    # 22.1% at the steady 1.116 s/step (the whole run's 17.7% counted warm-up), its window named.
    assert "| 22.11 " in row and "| 14355 " in row and "steps 3–20" in row and "17.7" not in row
    assert "4·N + 2·N_trainable FLOPs per token" in scorecard and "`harness/run/mfu.py`" in scorecard
    assert "harness/mfu.py" not in scorecard


def test_the_memory_claim_is_not_judged_across_compile_modes(with_untimed: Path) -> None:
    scorecard = (with_untimed / "nvidia-h200x2/h200-image/scorecard.md").read_text(encoding="utf-8")
    (row,) = [line for line in scorecard.splitlines() if "| memory saved as predicted " in line]
    assert "*not evaluable*" in row and "recipe.compile: graphs (auto) vs none" in row


def test_the_index_shows_coverage_and_the_platforms_without_a_record() -> None:
    index = (REPORTS / "README.md").read_text(encoding="utf-8")
    header = next(line for line in index.splitlines() if line.startswith("| "))
    assert (
        header.startswith("| verdict ") and "claims judged / in the suite" in header
    )  # the verdict word first
    rows = [line for line in index.splitlines() if line.startswith(("| PASS", "| FAIL", "| INCOMPLETE"))]
    # Published: the H200 (one card) and the Intel Xeon, each timed under the guard.
    assert len(rows) == 2 and all(re.search(r"\| \d+ / 24 ", row) for row in rows)
    assert "- No AMD GPU record yet (ROCm)" in index


def test_a_chart_no_report_shows_is_removed(tmp_path: Path) -> None:
    from builders import write_story_results

    write_story_results(tmp_path / "results")
    argv = [
        "report",
        str(tmp_path / "results"),
        "-o",
        str(tmp_path / "reports"),
        "--benchmarks",
        str(BENCHMARKS),
    ]
    assert main(argv) == 0
    img = tmp_path / "reports/amd-radeon-rx-7900-xtx/rocm7.2-hf5.5/img"
    kept = sorted(p.name for p in img.glob("*.png"))
    (img / "exp-old-time.png").write_bytes((img / kept[0]).read_bytes())  # a chart of a setup gone since
    assert main(argv) == 0
    assert sorted(p.name for p in img.glob("*.png")) == kept
