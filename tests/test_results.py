import json
import sys
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.results import RunRecord, find_records, load_record, write_record


def make_record(**changes: object) -> RunRecord:
    base = {
        "run_id": "r1", "status": "ok", "created": "2026-11-30T00:00:00+00:00", "experiment": "exp-a",
        "setup_name": "smollm2", "seed": 3407, "stack": "cpu", "host": "cpu-test-2c", "fingerprint": "abc",
        "setup": {}, "provenance": {},
    }  # fmt: skip
    return RunRecord(**{**base, **changes})


def test_written_record_reads_back(tmp_path: Path) -> None:
    path = write_record(tmp_path, make_record())
    assert path == tmp_path / "cpu" / "cpu-test-2c" / "exp-a" / "smollm2" / "seed-3407.json"
    assert load_record(path) == make_record()
    assert find_records([tmp_path]) == [path]


def test_a_different_record_is_never_overwritten(tmp_path: Path) -> None:
    first = write_record(tmp_path, make_record())
    write_record(tmp_path, make_record(run_id="r2", created="2026-11-30T01:00:00+00:00"))
    kept = list(first.parent.glob("seed-3407.prev-*.json"))
    assert len(kept) == 1 and load_record(kept[0]).run_id == "r1"
    assert load_record(first).run_id == "r2"
    assert find_records([tmp_path]) == [first]


def test_unknown_format_version_is_refused_with_the_supported_range(tmp_path: Path) -> None:
    path = write_record(tmp_path, make_record())
    data = json.loads(path.read_text())
    data["format_version"] = 9
    path.write_text(json.dumps(data))
    with pytest.raises(
        UserError, match="record format version 9 not supported; this lorabench reads 1-2; upgrade lorabench"
    ):
        load_record(path)


def test_a_version_1_record_is_lifted_to_well_formed(tmp_path: Path) -> None:
    committed = sorted(
        (Path(__file__).resolve().parents[1] / "reports" / "untimed" / "cpu").rglob("seed-*.json")
    )
    committed = [p for p in committed if ".prev-" not in p.name]
    assert committed, "the committed CPU records are the version-1 sample"
    raw = json.loads(committed[0].read_text())
    assert raw["format_version"] == 1 and "executes" in raw["trained"]
    record = load_record(committed[0])
    assert record.format_version == 2
    assert record.trained is not None and record.trained.well_formed == raw["trained"]["executes"]
    assert record.baseline is not None and record.baseline.well_formed == raw["baseline"]["executes"]


def test_n_clock_stopped_is_written_only_when_the_sql_safety_net_fired(tmp_path: Path) -> None:
    # Records whose every score is deterministic keep their JSON as before issue #18b.
    from harness.tasks.sql.metrics import SqlMetrics as Metrics

    quiet = Metrics(exact_match=50.0, well_formed=100.0, semantic=50.0, n=2, n_clock_stopped=0)
    assert "n_clock_stopped" not in quiet.model_dump(mode="json")
    touched = Metrics(exact_match=50.0, well_formed=100.0, semantic=50.0, n=2, n_clock_stopped=1)
    path = write_record(tmp_path, make_record(trained=touched))
    assert json.loads(path.read_text())["trained"]["n_clock_stopped"] == 1
    assert load_record(path).trained == touched


def test_a_replaced_record_takes_its_adapter_predictions_and_traceback_along(tmp_path: Path) -> None:
    from harness.run.adapter import adapter_beside, find_adapter

    first = write_record(tmp_path, make_record())
    (adapter_beside(first)).mkdir()
    (adapter_beside(first) / "adapter_config.json").write_text("{}")
    (adapter_beside(first) / "adapter_model.safetensors").write_bytes(b"r1 weights")
    first.with_name("seed-3407.predictions.jsonl").write_text("{}\n")
    first.with_name("seed-3407.traceback.txt").write_text("r1 traceback")
    write_record(tmp_path, make_record(run_id="r2", created="2026-11-30T01:00:00+00:00"))
    (kept,) = first.parent.glob("seed-3407.prev-*.json")
    # Paired by name (before: the adapter was renamed by its mtime, the predictions stayed behind).
    assert (
        find_adapter(kept) == adapter_beside(kept)
        and (adapter_beside(kept) / "adapter_model.safetensors").read_bytes() == b"r1 weights"
    )
    assert kept.with_name(kept.name.removesuffix(".json") + ".predictions.jsonl").is_file()
    assert kept.with_name(kept.name.removesuffix(".json") + ".traceback.txt").read_text() == "r1 traceback"
    assert not adapter_beside(first).exists() and not first.with_name("seed-3407.traceback.txt").exists()


def test_records_of_one_second_are_kept_under_distinct_names(tmp_path: Path) -> None:
    for run_id in ("r1", "r2", "r3"):
        path = write_record(tmp_path, make_record(run_id=run_id))  # all created in the same second
    kept = sorted(load_record(p).run_id for p in path.parent.glob("seed-3407.prev-*.json"))
    assert kept == ["r1", "r2"] and load_record(path).run_id == "r3"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "a JSON list, not a run record"),
        ('{"format_version": 1, "run_id": "x"}', "not a valid run record: status: field required"),
        ("\x00\xff", "not a JSON record"),
    ],
)
def test_a_file_that_is_not_a_record_is_named_in_one_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "seed-1.json"
    path.write_text(content, encoding="latin-1")
    with pytest.raises(UserError, match=message):
        load_record(path)


def test_fingerprint_holds_the_data_by_content_not_by_path(tmp_path: Path) -> None:
    from harness.config import load_setup
    from harness.results import data_identity, run_fingerprint

    rows = '{"question": "q", "context": "CREATE TABLE t (a VARCHAR)", "answer": "SELECT a FROM t"}\n'
    here, there = tmp_path / "a" / "rows.jsonl", tmp_path / "b" / "copy.jsonl"
    for path in (here, there):
        path.parent.mkdir()
        path.write_text(rows)

    def fp(source: Path | str, kind: str = "cpu-x86-64-2c-amx") -> str:
        return run_fingerprint(load_setup(None, [("data.source", str(source))]), "cpu", kind)

    assert fp(here) == fp(there)  # same bytes in two folders: one question
    assert data_identity(str(here)).startswith("sha256:")
    there.write_text(rows + rows)
    assert fp(here) != fp(there)  # changed bytes: another question, although the path is the same as before
    assert fp(here) != fp(here, kind="cpu-x86-64-2c-avx2")  # another kind of host
    # A hub id (no such file) stays itself.
    assert data_identity("b-mc2/sql-create-context") == "b-mc2/sql-create-context"
    assert fp("b-mc2/sql-create-context") != fp(here)


def test_auto_compile_enters_the_fingerprint_only_where_it_now_means_compiled_layers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.config import load_setup
    from harness.results import run_fingerprint, setup_digest

    monkeypatch.setenv("CXX", sys.executable)  # a compiler is there
    auto = load_setup(None, ["recipe.compile=auto"])
    # A bf16 CPU (AMX, AVX512-BF16): "auto" now compiles layers, so eager records of it no longer stand in.
    for kind in ("cpu-x86-64-2c-amx", "cpu-x86-64-32c-avx512bf16"):
        assert run_fingerprint(auto, "cpu", kind) != setup_digest(auto, "cpu", kind)
    # Where "auto" means what it meant (a GPU, an fp32 CPU, fp32 asked for, no compiler): unchanged.
    assert run_fingerprint(auto, "cuda", "nvidia-h200") == setup_digest(auto, "cuda", "nvidia-h200")
    assert run_fingerprint(auto, "cpu", "cpu-x86-64-2c-avx2") == setup_digest(
        auto, "cpu", "cpu-x86-64-2c-avx2"
    )
    fp32 = load_setup(None, ["recipe.compile=auto", "precision=fp32"])
    assert run_fingerprint(fp32, "cpu", "cpu-x86-64-2c-amx") == setup_digest(fp32, "cpu", "cpu-x86-64-2c-amx")
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    assert run_fingerprint(auto, "cpu", "cpu-x86-64-2c-amx") == setup_digest(auto, "cpu", "cpu-x86-64-2c-amx")


def test_a_record_from_before_model_attention_reads_as_sdpa(tmp_path: Path) -> None:
    # The committed CPU records predate the field; today's default ("auto") would misstate what ran.
    committed = (
        Path(__file__).resolve().parents[1]
        / "reports/untimed/cpu/cpu-amd-epyc-2c/exp_a/smollm2-135m-lora/seed-42.json"
    )
    raw = json.loads(committed.read_text())
    assert "attention" not in raw["setup"]["model"]
    assert load_record(committed).setup.model.attention == "sdpa"
    raw["setup"]["model"]["attention"] = "eager"
    (tmp_path / "seed-42.json").write_text(json.dumps(raw))
    assert load_record(tmp_path / "seed-42.json").setup.model.attention == "eager"  # a recorded value stays
